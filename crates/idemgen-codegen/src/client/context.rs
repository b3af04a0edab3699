//! What the client templates see: the crate, and per operation the data
//! its method is written from (path, parameters, body, responses, and the
//! contract with its retry schedule). Data only: the templates spell it.

use serde::Serialize;

use crate::types::{OperationTypes, ParamLocation, PartReading, StatusPattern};
use idemgen_spec::contract::key_template::{Part, Segment};
use idemgen_spec::contract::model::{Contract, ScopeSource};
use idemgen_spec::window::Schedule;

/// The client crate.
#[derive(Debug, Clone, Serialize)]
pub struct Client {
    pub version: &'static str,
    pub spec: String,
    pub title: String,
    pub package: String,
    pub lib: String,
    pub standalone: bool,
    /// Whether the models hold `date-time` or `date` values (chrono types).
    pub uses_time: bool,
    pub operations: Vec<Operation>,
    /// Whether any operation has a contract (and so retries).
    pub any_idempotent: bool,
    /// Whether any response body is JSON (the decoder's `json` is used).
    pub any_json_response: bool,
    /// Whether any response declares headers (the decoder's `header` is used).
    pub any_response_header: bool,
    /// Whether any declared response header is `required` (the decoder's
    /// `required` is used).
    pub any_required_response_header: bool,
    /// Whether any request body is a form (the client needs `serde_qs`).
    pub any_form_body: bool,
    /// The first idempotent operation, for the README's example.
    pub example: Option<Operation>,
}

/// One operation, one method.
#[derive(Debug, Clone, Serialize)]
pub struct Operation {
    /// operationId, else `METHOD /path`.
    pub name: String,
    /// The method's name.
    pub ident: String,
    /// The name of its contract constant.
    pub const_name: String,
    /// Upper-case HTTP method.
    pub method: String,
    pub path: String,
    /// Its doc comment: name and summary.
    pub heading: Vec<String>,
    pub path_parts: Vec<PathPart>,
    pub params: Option<Params>,
    pub body: Option<Body>,
    pub response: Response,
    pub contract: Option<ClientContract>,
}

/// Text of the path, or a path parameter by its wire name.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind")]
pub enum PathPart {
    Literal { text: String },
    Param { name: String },
}

#[derive(Debug, Clone, Serialize)]
pub struct Params {
    pub type_name: String,
    pub table: Vec<Param>,
    /// The field the key replaces, when the key is a declared parameter.
    pub key_field: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Param {
    /// `Path`, `Query` or `Header`.
    pub location: &'static str,
    pub name: String,
    /// The declared `style` and `explode` where they are not the
    /// defaults: `.style(retry::Style::Label).explode(true)`.
    pub chain: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Body {
    pub type_name: String,
    pub required: bool,
    pub is_json: bool,
    /// A form read into its type: sent as `serde_qs` writes it.
    pub is_form: bool,
    /// A flat form, its arrays sent as the key repeated (`tags=a&tags=b`)
    /// rather than indexed in brackets.
    pub form_repeats_keys: bool,
    /// The form's lists sent joined in one text, as
    /// `retry::join_form_lists` takes them: `("tags", ',')` each.
    pub form_joined: Vec<String>,
    /// The form's properties sent as JSON text, as Rust string literals
    /// (`retry::json_form_fields`).
    pub form_json: Vec<String>,
    /// A multipart body: its file and JSON parts (`retry::Part::…`
    /// expressions); every other property is sent as text.
    pub parts: Option<Vec<String>>,
    pub media_type: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Response {
    pub type_name: String,
    pub variants: Vec<Variant>,
    /// Whether a `default` response covers every undeclared status.
    pub has_default: bool,
    /// Whether any response has a body.
    pub any_body: bool,
    /// Whether any response declares headers the decoder reads.
    pub any_header: bool,
    /// Whether the decoder reads the answer's headers at all: declared
    /// ones, or the `Content-Type` a body with several media types is
    /// read by.
    pub reads_headers: bool,
}

/// One declared response, as the decoder matches it.
#[derive(Debug, Clone, Serialize)]
pub struct Variant {
    pub name: String,
    /// `exact`, `range` or `default`.
    pub kind: &'static str,
    /// The code of an exact status.
    pub code: Option<u16>,
    /// The first digit of a range.
    pub class: Option<u8>,
    pub has_body: bool,
    pub is_json: bool,
    /// The models enum of a body declared with several media types, read
    /// by the answer's `Content-Type`.
    pub media_enum: Option<String>,
    /// The headers the response declares, read into the variant's fields.
    pub headers: Vec<VariantHeader>,
}

/// A declared response header: its field and the expression that reads
/// it from the answer's headers.
#[derive(Debug, Clone, Serialize)]
pub struct VariantHeader {
    pub field: String,
    pub required: bool,
    /// `required(headers, "Location")?`: a required header's absence
    /// makes the answer undeclared; an optional one is `None` (or `null`
    /// for a field of any JSON value) when absent.
    pub read: String,
}

/// An operation's contract, as the client follows it.
#[derive(Debug, Clone, Serialize)]
pub struct ClientContract {
    /// `Header`, `Query` or `Body`.
    pub key_in: &'static str,
    pub key_name: String,
    pub key_format: String,
    pub key_parts: Vec<KeyPart>,
    pub max_key_len: u64,
    pub scope: Vec<ScopePart>,
    pub timeout_ms: u64,
    pub jitter_ms: u64,
    pub attempts: Vec<Attempt>,
    /// Retries after the first attempt.
    pub retries: usize,
    pub retry_span_ms: Option<u64>,
    pub window_ms: Option<u64>,
    pub max_processing_ms: Option<u64>,
    /// `window - server.max-processing`: the latest an attempt may start
    /// after the key's first send.
    pub latest_start_ms: Option<u64>,
    pub in_progress_status: u16,
    pub in_progress_retry_after_ms: u64,
    pub conflict_status: u16,
    /// `responses.replayed-header`; `None` when replays are unmarked.
    pub replayed_header: Option<String>,
}

/// A part of the key format, as `retry::KeyPart` names it.
#[derive(Debug, Clone, Serialize)]
pub struct KeyPart {
    /// The variant: `Literal`, `Uuid`, `Ulid`, `Random`, `Date`,
    /// `Timestamp`, `Seq` or `Field`.
    pub kind: &'static str,
    /// The text of a literal, the pointer of a field.
    pub text: Option<String>,
    /// The bytes of a random segment.
    pub bytes: Option<u32>,
}

/// A `key.scope` source, as `retry::Scope` names it.
#[derive(Debug, Clone, Serialize)]
pub struct ScopePart {
    /// `Header`, `Query`, `Body` or `Principal`.
    pub kind: &'static str,
    pub name: Option<String>,
}

/// One attempt of the schedule (`idemgen_spec::window::Schedule`).
#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    pub start_ms: u64,
    pub deadline_ms: u64,
    pub backoff_ms: Option<u64>,
}

/// How long the client waits for an attempt of a contract that names no
/// `client.timeout` (lint reports it); such an operation is not retried.
pub const TIMEOUT_WITHOUT_SCHEDULE_MS: u64 = 30_000;

impl ClientContract {
    pub fn new(contract: &Contract, schedule: Option<&Schedule>) -> Option<ClientContract> {
        let key = contract.key.as_ref()?;
        let (timeout_ms, attempts, retry_span_ms) = match schedule {
            Some(schedule) => (
                schedule.timeout_ms,
                schedule
                    .attempts
                    .iter()
                    .map(|attempt| Attempt {
                        start_ms: attempt.start_ms,
                        deadline_ms: attempt.deadline_ms,
                        backoff_ms: attempt.backoff.map(|backoff| backoff.delay_ms),
                    })
                    .collect::<Vec<_>>(),
                schedule.retry_span_ms,
            ),
            None => (
                TIMEOUT_WITHOUT_SCHEDULE_MS,
                vec![Attempt {
                    start_ms: 0,
                    deadline_ms: TIMEOUT_WITHOUT_SCHEDULE_MS,
                    backoff_ms: None,
                }],
                None,
            ),
        };
        Some(ClientContract {
            key_in: match key.location.value.name() {
                "query" => "Query",
                "body" => "Body",
                _ => "Header",
            },
            key_name: key.name.value.clone(),
            key_format: key.format.value.source.clone(),
            key_parts: key.format.value.parts.iter().map(key_part).collect(),
            max_key_len: key.max_length.value,
            scope: key
                .scope
                .iter()
                .map(|source| match &source.value {
                    ScopeSource::Principal => ScopePart {
                        kind: "Principal",
                        name: None,
                    },
                    ScopeSource::Request(request) => ScopePart {
                        kind: match request.location.name() {
                            "query" => "Query",
                            "body" => "Body",
                            _ => "Header",
                        },
                        name: Some(request.name.clone()),
                    },
                })
                .collect(),
            timeout_ms,
            jitter_ms: contract.jitter_ms.value,
            retries: attempts.len() - 1,
            attempts,
            retry_span_ms,
            window_ms: contract.window_ms.as_ref().map(|window| window.value),
            max_processing_ms: contract
                .max_processing_ms
                .as_ref()
                .map(|processing| processing.value),
            latest_start_ms: match (&contract.window_ms, &contract.max_processing_ms) {
                (Some(window), Some(processing)) => {
                    Some(window.value.saturating_sub(processing.value))
                }
                _ => None,
            },
            in_progress_status: contract.in_progress_status.value,
            in_progress_retry_after_ms: contract.retry_after_ms.value,
            conflict_status: contract.conflict_status.value,
            replayed_header: contract.replayed_header.value.header().map(str::to_string),
        })
    }
}

fn key_part(part: &Part) -> KeyPart {
    let plain = |kind| KeyPart {
        kind,
        text: None,
        bytes: None,
    };
    match part {
        Part::Literal(text) => KeyPart {
            kind: "Literal",
            text: Some(text.clone()),
            bytes: None,
        },
        Part::Segment(segment) => match segment {
            // A key the client chooses: a UUID v4, as the IETF draft and
            // Stripe recommend.
            Segment::Uuid | Segment::Opaque | Segment::SfString => plain("Uuid"),
            Segment::Ulid => plain("Ulid"),
            Segment::Random(bytes) => KeyPart {
                kind: "Random",
                text: None,
                bytes: Some(*bytes),
            },
            Segment::Date => plain("Date"),
            Segment::Timestamp => plain("Timestamp"),
            Segment::Seq => plain("Seq"),
            Segment::Field(pointer) => KeyPart {
                kind: "Field",
                text: Some(pointer.clone()),
                bytes: None,
            },
        },
    }
}

/// `/orders/{order_no}/pay` as text and parameters.
pub fn path_parts(path: &str) -> Vec<PathPart> {
    let mut parts = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        if open > 0 {
            parts.push(PathPart::Literal {
                text: rest[..open].to_string(),
            });
        }
        parts.push(PathPart::Param {
            name: rest[open + 1..open + close].to_string(),
        });
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(PathPart::Literal {
            text: rest.to_string(),
        });
    }
    parts
}

/// The parameters, body and responses of an operation's types.
pub fn typed(
    types: &OperationTypes,
    contract: Option<&ClientContract>,
) -> (Option<Params>, Option<Body>, Response) {
    let key_param = contract.and_then(|contract| match contract.key_in {
        "Header" => Some((ParamLocation::Header, contract.key_name.as_str())),
        "Query" => Some((ParamLocation::Query, contract.key_name.as_str())),
        _ => None,
    });
    let params = types.params.as_ref().map(|params| Params {
        type_name: params.type_name.clone(),
        table: params
            .fields
            .iter()
            .map(|field| Param {
                location: match field.location {
                    ParamLocation::Path => "Path",
                    ParamLocation::Query => "Query",
                    ParamLocation::Header => "Header",
                },
                name: field.wire_name.clone(),
                chain: crate::context::style_chain(field, "retry"),
            })
            .collect(),
        key_field: params
            .fields
            .iter()
            .find(|field| {
                key_param.is_some_and(|(location, name)| {
                    field.location == location
                        && match location {
                            ParamLocation::Header => field.wire_name.eq_ignore_ascii_case(name),
                            _ => field.wire_name == name,
                        }
                })
            })
            .map(|field| field.field.clone()),
    });
    let body = types.request_body.as_ref().map(|body| Body {
        type_name: body.type_name.clone(),
        required: body.required,
        is_json: body.is_json,
        is_form: body.is_form,
        form_repeats_keys: body.form_layout.repeats_keys,
        form_json: body
            .form_layout
            .json
            .iter()
            .map(|name| crate::names::rust_string(name))
            .collect(),
        form_joined: body
            .form_layout
            .joined
            .iter()
            .filter_map(|joined| {
                Some(format!(
                    "({}, {})",
                    crate::names::rust_string(&joined.name),
                    crate::names::rust_char(&joined.delimiter?.to_string())
                ))
            })
            .collect(),
        parts: body.multipart.as_ref().map(|multipart| {
            multipart
                .parts
                .iter()
                .filter_map(|part| {
                    let name = crate::names::rust_string(&part.wire_name);
                    if part.sent_in_brackets {
                        return Some(format!("retry::Part::brackets({name})"));
                    }
                    if let Some(delimiter) = part.delimiter {
                        let delimiter = crate::names::rust_char(&delimiter.to_string());
                        return Some(format!("retry::Part::joined({name}, {delimiter})"));
                    }
                    match part.reading {
                        PartReading::File => Some(format!("retry::Part::file({name})")),
                        PartReading::Json => Some(format!("retry::Part::json({name})")),
                        PartReading::Text(_) => None,
                    }
                })
                .collect()
        }),
        media_type: body.media_type.clone(),
    });
    let variants: Vec<Variant> = types
        .response
        .variants
        .iter()
        .map(|variant| {
            let (kind, code, class) = match variant.status {
                StatusPattern::Exact(code) => ("exact", Some(code), None),
                StatusPattern::Range(class) => ("range", None, Some(class)),
                StatusPattern::Default => ("default", None, None),
            };
            Variant {
                name: variant.variant.clone(),
                kind,
                code,
                class,
                has_body: variant.body.is_some(),
                is_json: variant
                    .media_type
                    .as_deref()
                    .is_some_and(crate::types::is_json),
                media_enum: variant.media_enum.clone(),
                headers: variant
                    .headers
                    .iter()
                    .map(|header| {
                        let name = crate::names::rust_string(&header.wire_name);
                        VariantHeader {
                            field: header.field.clone(),
                            required: header.required,
                            read: if header.required {
                                format!("required(headers, {name})?")
                            } else if header.rust_type.starts_with("Option<") {
                                format!("header(headers, {name})?")
                            } else {
                                format!("header(headers, {name})?.unwrap_or_default()")
                            },
                        }
                    })
                    .collect(),
            }
        })
        .collect();
    let response = Response {
        type_name: types.response.type_name.clone(),
        has_default: variants.iter().any(|variant| variant.kind == "default"),
        any_body: variants.iter().any(|variant| variant.has_body),
        any_header: variants.iter().any(|variant| !variant.headers.is_empty()),
        reads_headers: variants
            .iter()
            .any(|variant| !variant.headers.is_empty() || variant.media_enum.is_some()),
        variants,
    };
    (params, body, response)
}
