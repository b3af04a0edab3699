//! What the templates see: typed contexts, one struct per kind of thing a
//! template renders (the project, an operation and its contract, the
//! operation the generated tests exercise, a SQL dialect). A field a
//! template names that is not here fails the render with its line.

use std::collections::BTreeMap;

use serde::Serialize;

use super::constraints::{AnswerContext, AnswerTable, ConstraintContext, OperationConstraints};
use super::routing::{self, PathAffix, split_segment};
use super::types::{
    OperationTypes, ParamField, ParamKind, ParamLocation, PartField, PartReading, Scalar, Shape,
    StatusPattern,
};
use super::{Store, dialect};
use idemgen_spec::contract::key_template::{Part, Segment};
use idemgen_spec::contract::model::{
    Canonical, ClaimMode, Contract, DEFAULT_MAX_KEY_LENGTH, Dialect, FailedPolicy, FingerprintPart,
    ScopeSource,
};
use idemgen_spec::security;

/// Every template's context: the project as a whole.
#[derive(Debug, Clone, Serialize)]
pub struct Project {
    /// idemgen's version, for the generated comments.
    pub version: &'static str,
    /// The spec's file name.
    pub spec: String,
    /// The spec's `info.title`, else the package name.
    pub title: String,
    pub package: String,
    /// The package name as a Rust crate name.
    pub lib: String,
    /// The dialect of the default build.
    pub dialect: &'static str,
    pub table: String,
    /// The contracts' `store.database`, which the default URLs name.
    pub database: Option<String>,
    /// The sqlx version the project pins (and sqlx-cli must match).
    pub sqlx_version: &'static str,
    /// Whether the project declares its own `[workspace]`.
    pub standalone: bool,
    /// Whether the models hold `date-time` or `date` values (chrono types).
    pub uses_time: bool,
    pub operations: Vec<Operation>,
    pub routes: Vec<Route>,
    /// The idempotent operation the generated tests exercise, if any.
    pub t: Option<TestTarget>,
    pub any_idempotent: bool,
    /// Whether any operation has parameters (the routes then name
    /// `Param` and `Scalar`).
    pub any_params: bool,
    /// Whether a parameter nests, or a multipart part is also read from
    /// brackets (the routes then name `Shape`).
    pub any_nested_params: bool,
    /// Whether an operation's path has a segment with text around its
    /// parameter (`PathAffix` tables).
    pub any_path_affixes: bool,
    /// Whether any operation reads a multipart body (`Part`), and whether
    /// one of its parts names a scalar (`Scalar`: a text part, or a leaf of
    /// one read from brackets).
    pub any_multipart: bool,
    pub any_multipart_text: bool,
    /// Whether an operation checks validation keywords (`Constraint` tables).
    pub any_constraints: bool,
    /// Whether a table checks a branch of a union chosen by a property
    /// (`Chosen`).
    pub any_chosen: bool,
    /// Whether an operation holds its answers to keywords
    /// (`AnswerConstraints` tables).
    pub any_answers: bool,
    /// The keyword tables those answers share.
    pub answer_tables: Vec<AnswerTable>,
    /// The lowest `replay-rate-alert` of the contracts (percent).
    pub replay_rate_alert: f64,
    /// The dialects the project is built for.
    pub dialects: Vec<DialectContext>,
    /// The runtime crate's path, when not vendored.
    pub runtime_path: Option<String>,
    /// Where the project publishes `ops/prometheus/runbook.md`
    /// (`--runbook-url`); the alerts link to its sections.
    pub runbook_url: Option<String>,
    /// The `job` label every alert rule selects (`--job`, else the
    /// package name).
    pub job: String,
    /// Every security scheme an operation requires, each once.
    pub schemes: Vec<SchemeContext>,
    /// Whether any operation requires credentials.
    pub any_secured: bool,
    /// Whether a required scheme is an API key (`ApiKeyIn` is named).
    pub any_api_key: bool,
}

/// One security scheme, as `src/operations.rs` declares it and
/// `src/auth.rs` verifies it.
#[derive(Debug, Clone, Serialize)]
pub struct SchemeContext {
    /// Its name in `components.securitySchemes`.
    pub name: String,
    /// Its constant in `operations::schemes`.
    pub const_name: String,
    /// How the engine reads its credential (the template spells the
    /// `SchemeKind` and the `Credential` the verifier receives).
    pub kind: SchemeKindContext,
    /// What it is and where its credential travels, for comments.
    pub describe: String,
}

/// A scheme's `SchemeKind`, as data: `{"variant": "ApiKey", "location":
/// "header", "name": "X-Api-Key"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "variant")]
pub enum SchemeKindContext {
    Bearer,
    Basic,
    ApiKey {
        /// `header`, `query` or `cookie`.
        location: &'static str,
        name: String,
    },
    /// Read from the request by the user's own check.
    Request,
}

impl SchemeContext {
    pub fn new(scheme: &security::Scheme, const_name: String) -> SchemeContext {
        use security::SchemeKind as Kind;
        let (kind, describe) = match &scheme.kind {
            Kind::Bearer => (
                SchemeKindContext::Bearer,
                "http bearer: `Authorization: Bearer <token>`".to_string(),
            ),
            Kind::Basic => (
                SchemeKindContext::Basic,
                "http basic: `Authorization: Basic <base64 of user:password>`".to_string(),
            ),
            Kind::OAuth2 | Kind::OpenIdConnect => (
                SchemeKindContext::Bearer,
                format!(
                    "{}: its token as `Authorization: Bearer <token>`",
                    if scheme.kind == Kind::OAuth2 {
                        "oauth2"
                    } else {
                        "openIdConnect"
                    }
                ),
            ),
            Kind::ApiKey { location, name } => (
                SchemeKindContext::ApiKey {
                    location: location.name(),
                    name: name.clone(),
                },
                format!("apiKey in the {} `{name}`", location.name()),
            ),
            Kind::OtherHttp(other) => (
                SchemeKindContext::Request,
                format!("http {other}: read from the request"),
            ),
            Kind::MutualTls => (
                SchemeKindContext::Request,
                "mutualTLS: read from the request (what your TLS terminator forwards)".to_string(),
            ),
        };
        SchemeContext {
            name: scheme.name.clone(),
            const_name,
            kind,
            describe,
        }
    }
}

/// An operation's security, as its table entry spells it.
#[derive(Debug, Clone, Serialize)]
pub struct SecurityContext {
    /// Alternatives, each a list of scheme constants (`SchemeContext::const_name`).
    pub alternatives: Vec<Vec<String>>,
    /// A human summary: `bearerAuth or (signature and session)`.
    pub summary: String,
}

/// The project with one dialect, for the per-dialect templates.
#[derive(Serialize)]
pub struct WithDialect<'a> {
    #[serde(flatten)]
    pub project: &'a Project,
    pub d: &'a DialectContext,
}

/// The project with one operation, for its business file.
#[derive(Serialize)]
pub struct WithOperation<'a> {
    #[serde(flatten)]
    pub project: &'a Project,
    pub op: &'a Operation,
}

/// One served operation.
#[derive(Debug, Clone, Serialize)]
pub struct Operation {
    /// operationId, else `METHOD /path`.
    pub name: String,
    /// Its Rust identifier (function and module name).
    pub ident: String,
    pub const_name: String,
    /// Upper-case HTTP method.
    pub method: String,
    pub path: String,
    /// The route it is served at, each segment literal or `{name}`.
    pub route: String,
    /// The text around a parameter in its segment (`{Sid}.json`), cut off
    /// when the request is read.
    pub path_affixes: Vec<PathAffix>,
    /// The comment over its operation table entry: name, summary, description.
    pub comment: Vec<String>,
    /// The comment over its handler: name and summary.
    pub heading: Vec<String>,
    pub business_file: String,
    pub idempotent: bool,
    pub contract: Option<ContractContext>,
    /// Who may call it; `None`: anyone (`security: []` or none declared).
    pub security: Option<SecurityContext>,
    /// What its business function receives and returns, as types of the
    /// generated `models` module.
    pub input: TypedInput,
}

/// An operation's typed input and output.
#[derive(Debug, Clone, Serialize)]
pub struct TypedInput {
    pub body: Option<BodyInput>,
    pub params: Option<ParamsInput>,
    /// The response enum.
    pub response: String,
    /// The keywords of the JSON bodies it answers with, by response;
    /// empty when no response has any.
    pub answers: Vec<AnswerContext>,
    /// Whether a response declares headers (the enum has `headers()`).
    pub response_headers: bool,
    /// The statuses a request whose input does not fit the spec is
    /// answered with, for comments: `400`, or `400 or 422` when a body
    /// read into its type (JSON, form or multipart) that does not fit its
    /// schema gets a declared 422.
    pub refused_with: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct BodyInput {
    pub type_name: String,
    /// An optional body arrives as an `Option`.
    pub required: bool,
    /// Deserialised from JSON; otherwise the raw bytes.
    pub is_json: bool,
    /// A form read into its type (`Request::form_as`).
    pub is_form: bool,
    /// The form's lists declared joined in one text (a multipart body's in
    /// one part), split when read and for the fingerprint:
    /// `JoinedList { name: "tags", delimiter: ',' }` each.
    pub joined_lists: Vec<String>,
    /// The form's properties that are lists of scalars, as Rust string
    /// literals: the fingerprint reads one item sent as its key as a list.
    pub list_fields: Vec<String>,
    /// The form's properties sent as JSON text, as Rust string literals.
    pub json_fields: Vec<String>,
    /// A multipart body read into its type (`Request::multipart_as`): the
    /// table of its parts, each a `Part::…` expression.
    pub parts: Option<Vec<String>>,
    /// The status a body that does not fit the schema (JSON, form or
    /// multipart) is answered with instead of the engine's 422, when the
    /// operation's responses do not declare 422: 400, so that the answer
    /// is one the spec declares.
    pub unfit_status: Option<u16>,
    /// The validation keywords serde's types do not hold, checked before
    /// any key is claimed (a body read into its type: JSON, form or
    /// multipart; bytes have no value to check).
    pub constraints: Vec<ConstraintContext>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ParamsInput {
    pub type_name: String,
    /// Each parameter, as the `idemgen_runtime::Param` table lists it.
    pub table: Vec<ParamContext>,
    /// The parameters' validation keywords serde's types do not hold.
    pub constraints: Vec<ConstraintContext>,
}

/// One parameter: `Param::query("limit", Scalar::Integer)`, `.many()` for
/// arrays.
#[derive(Debug, Clone, Serialize)]
pub struct ParamContext {
    /// `path`, `query` or `header`.
    pub location: &'static str,
    /// Its name on the wire.
    pub name: String,
    /// `string`, `integer`, `number` or `boolean`.
    pub scalar: &'static str,
    /// An array: every occurrence is read.
    pub many: bool,
    /// A `deepObject` value that nests, read as its `Shape`.
    pub nested: bool,
    /// What follows `Param::query(…)`: `.many()`, `.object(…)`, the
    /// declared `style` and `explode` where they are not the defaults.
    pub chain: String,
}

impl TypedInput {
    pub fn new(types: &OperationTypes, checked: OperationConstraints) -> TypedInput {
        let typed_body = types
            .request_body
            .as_ref()
            .is_some_and(|body| body.is_json || body.is_form || body.multipart.is_some());
        TypedInput {
            refused_with: if typed_body && declares(types, 422) {
                "400 or 422"
            } else {
                "400"
            },
            body: types.request_body.as_ref().map(|body| BodyInput {
                type_name: body.type_name.clone(),
                required: body.required,
                is_json: body.is_json,
                is_form: body.is_form,
                // A form's lists joined in one text, or a multipart
                // body's joined in one part.
                joined_lists: body
                    .form_layout
                    .joined
                    .iter()
                    .filter_map(|joined| Some((&joined.name, joined.delimiter?)))
                    .chain(body.multipart.iter().flat_map(|multipart| {
                        multipart
                            .parts
                            .iter()
                            .filter_map(|part| Some((&part.wire_name, part.delimiter?)))
                    }))
                    .map(|(name, delimiter)| {
                        format!(
                            "JoinedList {{ name: {}, delimiter: {} }}",
                            crate::names::rust_string(name),
                            crate::names::rust_char(&delimiter.to_string())
                        )
                    })
                    .collect(),
                list_fields: body
                    .form_layout
                    .lists
                    .iter()
                    .map(|name| crate::names::rust_string(name))
                    .collect(),
                json_fields: body
                    .form_layout
                    .json
                    .iter()
                    .map(|name| crate::names::rust_string(name))
                    .collect(),
                parts: body
                    .multipart
                    .as_ref()
                    .map(|multipart| multipart.parts.iter().map(part_expression).collect()),
                unfit_status: (!declares(types, 422)).then_some(400),
                constraints: if typed_body {
                    checked.body.clone()
                } else {
                    Vec::new()
                },
            }),
            params: types.params.as_ref().map(|params| ParamsInput {
                type_name: params.type_name.clone(),
                table: params.fields.iter().map(param_context).collect(),
                constraints: checked.params.clone(),
            }),
            response: types.response.type_name.clone(),
            answers: checked.answers.clone(),
            response_headers: types
                .response
                .variants
                .iter()
                .any(|variant| !variant.headers.is_empty()),
        }
    }
}

/// Whether `status` is among the operation's declared responses (as
/// itself, its class or `default`).
fn declares(types: &OperationTypes, status: u16) -> bool {
    types
        .response
        .variants
        .iter()
        .any(|variant| match variant.status {
            StatusPattern::Exact(code) => code == status,
            StatusPattern::Range(class) => u16::from(class) == status / 100,
            StatusPattern::Default => true,
        })
}

fn param_context(field: &ParamField) -> ParamContext {
    let location = match field.location {
        ParamLocation::Path => "path",
        ParamLocation::Query => "query",
        ParamLocation::Header => "header",
    };
    let mut chain = String::new();
    let scalar = match &field.kind {
        ParamKind::Scalar(scalar) => *scalar,
        ParamKind::ScalarOrString(scalar) => {
            chain.push_str(".or_string()");
            *scalar
        }
        ParamKind::Array(scalar) => {
            chain.push_str(".many()");
            *scalar
        }
        ParamKind::Object {
            properties,
            or_scalar,
        } => {
            let listed: Vec<String> = properties
                .iter()
                .map(|(name, one)| format!("({name:?}, Scalar::{})", scalar_variant(*one)))
                .collect();
            chain.push_str(&format!(".object(&[{}])", listed.join(", ")));
            if or_scalar.is_some() {
                chain.push_str(".or_scalar()");
            }
            or_scalar.unwrap_or(Scalar::String)
        }
        ParamKind::Nested(shape) => {
            chain.push_str(&format!(".nested(&{})", shape_expression(shape)));
            Scalar::String
        }
        // Any other JSON value: its text, as a string.
        ParamKind::Other => Scalar::String,
    };
    chain.push_str(&style_chain(field, "idemgen_runtime"));
    ParamContext {
        location,
        name: field.wire_name.clone(),
        scalar: match scalar {
            Scalar::String => "string",
            Scalar::Integer => "integer",
            Scalar::Number => "number",
            Scalar::Boolean => "boolean",
        },
        many: matches!(field.kind, ParamKind::Array(_)),
        nested: matches!(field.kind, ParamKind::Nested(_)),
        chain,
    }
}

/// `Shape::Items(&Shape::Members(&[("price", Shape::Scalar(Scalar::String))]))`.
fn shape_expression(shape: &Shape) -> String {
    match shape {
        Shape::Scalar(one) => format!("Shape::Scalar(Scalar::{})", scalar_variant(*one)),
        Shape::ScalarOrString(one) => {
            format!("Shape::ScalarOrString(Scalar::{})", scalar_variant(*one))
        }
        Shape::Items(item) => format!("Shape::Items(&{})", shape_expression(item)),
        Shape::Members(members) => {
            let listed: Vec<String> = members
                .iter()
                .map(|(name, member)| format!("({name:?}, {})", shape_expression(member)))
                .collect();
            format!("Shape::Members(&[{}])", listed.join(", "))
        }
        Shape::OrScalar(shape, one) => format!(
            "Shape::OrScalar(&{}, Scalar::{})",
            shape_expression(shape),
            scalar_variant(*one)
        ),
    }
}

/// `.style({module}::Style::Label).explode(true)`: the declared `style`
/// and `explode` where they are not the defaults of where the parameter
/// is sent; `module` names the `Style` enum (the runtime's or the
/// client's).
pub(crate) fn style_chain(field: &ParamField, module: &str) -> String {
    let mut chain = String::new();
    let (default_style, allowed): (&str, &[&str]) = match field.location {
        ParamLocation::Path => ("simple", &["simple", "label", "matrix"]),
        ParamLocation::Query => (
            "form",
            &["form", "spaceDelimited", "pipeDelimited", "deepObject"],
        ),
        ParamLocation::Header => ("simple", &["simple"]),
    };
    // A style OpenAPI does not allow where the parameter is sent is read
    // as that location's default.
    let style = field
        .style
        .as_deref()
        .filter(|style| allowed.contains(style))
        .unwrap_or(default_style);
    if style != default_style {
        let mut variant = style.to_string();
        variant[..1].make_ascii_uppercase();
        chain.push_str(&format!(".style({module}::Style::{variant})"));
    }
    if let Some(explode) = field
        .explode
        .filter(|explode| *explode != (style == "form"))
    {
        chain.push_str(&format!(".explode({explode})"));
    }
    chain
}

/// `Part::text("purpose", Scalar::String)`, `Part::file("scans").many()`.
fn part_expression(part: &PartField) -> String {
    let name = crate::names::rust_string(&part.wire_name);
    let read = match part.reading {
        PartReading::Text(one) => format!("Part::text({name}, Scalar::{})", scalar_variant(one)),
        PartReading::Json => format!("Part::json({name})"),
        PartReading::File => format!("Part::file({name})"),
    };
    let read = match (part.many, part.delimiter) {
        (true, Some(delimiter)) => format!(
            "{read}.joined({})",
            crate::names::rust_char(&delimiter.to_string())
        ),
        (true, None) => format!("{read}.many()"),
        (false, _) => read,
    };
    match &part.brackets {
        Some(shape) => format!("{read}.brackets(&{})", shape_expression(shape)),
        None => read,
    }
}

fn scalar_variant(scalar: Scalar) -> &'static str {
    match scalar {
        Scalar::String => "String",
        Scalar::Integer => "Integer",
        Scalar::Number => "Number",
        Scalar::Boolean => "Boolean",
    }
}

/// Operations that share a path shape are one axum route.
#[derive(Debug, Clone, Serialize)]
pub struct Route {
    pub path: String,
    /// The path with parameter names erased: two paths of one shape collide.
    #[serde(skip)]
    pub shape: String,
    pub handlers: Vec<Handler>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Handler {
    pub method: String,
    pub ident: String,
    /// The operation's path as the spec spells it, for warnings.
    #[serde(skip)]
    pub path: String,
}

/// An operation's merged contract, as the operation table spells it.
#[derive(Debug, Clone, Serialize)]
pub struct ContractContext {
    /// Where the key comes from: `header`, `query` or `body`.
    pub key_in: &'static str,
    pub key_name: String,
    pub key_format: String,
    pub key_pattern: String,
    pub key_parts: Vec<KeyPart>,
    pub key_fields: Vec<KeyField>,
    pub max_key_len: u64,
    pub key_required: bool,
    pub missing_key_status: u16,
    /// The scope's sources.
    pub scope_sources: Vec<ScopeSourceContext>,
    pub window_ms: u64,
    pub lease_ms: u64,
    /// `client.timeout` (0: none).
    pub client_timeout_ms: u64,
    pub retry_after_secs: u64,
    pub in_progress_status: u16,
    pub conflict_status: u16,
    pub retry_failed: bool,
    /// The header that marks a replay (`responses.replayed-header`);
    /// `None` when replays are declared unmarked.
    pub replayed_header: Option<String>,
    /// The runtime's `ClaimMode` variant for `store.claim`.
    pub claim_mode: &'static str,
    pub fp_method: bool,
    pub fp_path: bool,
    pub fp_query: bool,
    /// The declared header parameters the fingerprint hashes (lowercase,
    /// sorted; the key's header and credentials left out): empty unless
    /// `fingerprint.include` lists `headers`.
    pub fp_headers: Vec<String>,
    pub fp_body: bool,
    pub canonical_json: bool,
    /// `monitoring.replay-rate-alert`, in percent.
    pub replay_rate_alert: f64,
}

/// One part of the key format: literal text or a segment.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum KeyPart {
    Literal {
        literal: String,
    },
    Segment {
        /// `uuid`, `ulid`, `random`, `date`, `timestamp`, `seq`, `field`,
        /// `opaque`.
        segment: &'static str,
        /// Characters of a `random` segment.
        #[serde(skip_serializing_if = "Option::is_none")]
        len: Option<usize>,
        /// The body field of a `field` segment.
        #[serde(skip_serializing_if = "Option::is_none")]
        pointer: Option<String>,
    },
}

/// A `{field:/pointer}` segment: its capture group in the key pattern.
#[derive(Debug, Clone, Serialize)]
pub struct KeyField {
    pub group: usize,
    pub pointer: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScopeSourceContext {
    #[serde(rename = "in")]
    pub location: &'static str,
    pub name: String,
}

/// What the generated tests need about the operation they exercise.
#[derive(Debug, Clone, Serialize)]
pub struct TestTarget {
    pub needs_set: bool,
    pub needs_encode: bool,
    pub needs_random: bool,
    pub body_in_key: bool,
    pub body_in_request: bool,
    pub uri_mut: bool,
    pub name: String,
    pub const_name: String,
    pub method: String,
    /// The path with every parameter filled in.
    pub uri: String,
    pub table: String,
    pub key_in: &'static str,
    pub key_name: String,
    pub key_format: String,
    /// What a valid key is made of, in order.
    pub key_parts: Vec<TestKeyPart>,
    /// What each request carries for the key's scope, in order.
    pub scope: Vec<TestScope>,
    pub key_required: bool,
    /// A key of the wrong form: `x`, or for a format with an `{opaque}`
    /// part (any visible ASCII), one with a space in it.
    pub malformed_key: &'static str,
    pub missing_key_status: u16,
    pub max_key_len: u64,
    pub in_progress_status: u16,
    pub conflict_status: u16,
    pub retry_after_secs: u64,
    pub retry_failed: bool,
    /// Whether the claim is written in the business transaction
    /// (`store.claim: in-transaction`), where a duplicate cannot see it.
    pub claim_in_transaction: bool,
    /// The replay mark's header name in lower case (as `HeaderMap` shows
    /// it); `None` when replays are declared unmarked.
    pub replayed_header: Option<String>,
    pub fp_body: bool,
    /// Whether requests need a verified principal (the tests add one, as
    /// the security check would).
    pub needs_principal: bool,
    /// Whether the operation requires credentials: the tests check that a
    /// request without them is refused and leaves no record.
    pub secured: bool,
}

/// How the tests make one part of a valid key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "variant")]
pub enum TestKeyPart {
    /// Fixed text; `one_char` when it is a single character.
    Text { text: String, one_char: bool },
    /// A fresh UUID v4.
    Uuid,
    /// `len` characters drawn from `alphabet`.
    Random { alphabet: &'static str, len: usize },
    /// A random value set at `pointer` in the body and appended to the key.
    Field { pointer: String },
}

impl TestKeyPart {
    fn text(text: &str) -> TestKeyPart {
        TestKeyPart::Text {
            text: text.to_string(),
            one_char: text.chars().count() == 1,
        }
    }

    fn random(alphabet: &'static str, len: usize) -> TestKeyPart {
        TestKeyPart::Random { alphabet, len }
    }
}

/// A source of the key's scope, as the tests fill it in (`tenant-a`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "variant")]
pub enum TestScope {
    /// The verified caller, as the security check would add it.
    Principal,
    Header {
        name: String,
    },
    Query {
        name: String,
    },
    Body {
        pointer: String,
    },
}

/// One SQL dialect: its migration and its build settings.
#[derive(Debug, Clone, Serialize)]
pub struct DialectContext {
    pub name: &'static str,
    pub title: &'static str,
    pub default_url: String,
    /// The first bind placeholder (`?1`, `?`, `$1`), for examples.
    pub placeholder: &'static str,
    /// The record table as first created (migration `0001`, never edited).
    pub ddl: String,
    /// The record table's later changes (`20261204000000_record_response_headers`),
    /// by their migration's file stem.
    pub alterations: BTreeMap<&'static str, String>,
}

impl ContractContext {
    /// `declared_headers`: the operation's header parameters the
    /// fingerprint may hash ([`OperationContext::fingerprinted_headers`]),
    /// hashed when the contract includes `headers`.
    ///
    /// [`OperationContext::fingerprinted_headers`]: idemgen_spec::analysis::OperationContext::fingerprinted_headers
    pub fn new(contract: &Contract, declared_headers: Vec<String>) -> ContractContext {
        let key = contract.key.as_ref();
        let (format, pattern, fields, max_len) = match key {
            Some(key) => {
                let fields = key
                    .format
                    .value
                    .segments()
                    .enumerate()
                    .filter_map(|(i, segment)| match segment {
                        Segment::Field(pointer) => Some(KeyField {
                            group: i + 1,
                            pointer: pointer.clone(),
                        }),
                        _ => None,
                    })
                    .collect();
                (
                    key.format.value.source.clone(),
                    key.format.value.regex(),
                    fields,
                    key.max_length.value,
                )
            }
            None => (
                "{uuid}".to_string(),
                ".+".to_string(),
                Vec::new(),
                DEFAULT_MAX_KEY_LENGTH,
            ),
        };
        let scope_sources = key
            .map(|key| {
                key.scope
                    .iter()
                    .map(|source| match &source.value {
                        ScopeSource::Request(source) => ScopeSourceContext {
                            location: source.location.name(),
                            name: source.name.clone(),
                        },
                        ScopeSource::Principal => ScopeSourceContext {
                            location: "principal",
                            name: "principal".to_string(),
                        },
                    })
                    .collect()
            })
            .unwrap_or_default();
        let parts = &contract.fingerprint.value;
        ContractContext {
            key_in: key.map_or("header", |key| key.location.value.name()),
            key_name: key.map_or("Idempotency-Key".to_string(), |key| key.name.value.clone()),
            key_format: format,
            key_pattern: pattern,
            key_parts: key
                .map(|key| key_parts(&key.format.value.parts))
                .unwrap_or_default(),
            key_fields: fields,
            max_key_len: max_len,
            key_required: contract.missing_key_status.is_some(),
            missing_key_status: contract
                .missing_key_status
                .as_ref()
                .map_or(400, |status| status.value),
            scope_sources,
            window_ms: contract
                .window_ms
                .as_ref()
                .map_or(86_400_000, |window| window.value),
            lease_ms: contract
                .max_processing_ms
                .as_ref()
                .map_or(30_000, |lease| lease.value),
            client_timeout_ms: contract
                .timeout_ms
                .as_ref()
                .map_or(0, |timeout| timeout.value),
            retry_after_secs: idemgen_spec::contract::duration::retry_after_header_secs(
                contract.retry_after_ms.value,
            ),
            in_progress_status: contract.in_progress_status.value,
            conflict_status: contract.conflict_status.value,
            retry_failed: contract.failed.value == FailedPolicy::Retry,
            replayed_header: contract.replayed_header.value.header().map(str::to_string),
            claim_mode: match contract.claim.value {
                ClaimMode::Committed => "Committed",
                ClaimMode::InTransaction => "InTransaction",
            },
            fp_method: parts.contains(&FingerprintPart::Method),
            fp_path: parts.contains(&FingerprintPart::Path),
            fp_query: parts.contains(&FingerprintPart::Query),
            fp_headers: if parts.contains(&FingerprintPart::Headers) {
                declared_headers
            } else {
                Vec::new()
            },
            fp_body: parts.contains(&FingerprintPart::Body),
            canonical_json: contract.canonical.value == Canonical::Json,
            replay_rate_alert: contract.replay_rate_alert.value,
        }
    }
}

fn key_parts(parts: &[Part]) -> Vec<KeyPart> {
    let segment = |segment: &'static str| KeyPart::Segment {
        segment,
        len: None,
        pointer: None,
    };
    parts
        .iter()
        .map(|part| match part {
            Part::Literal(text) => KeyPart::Literal {
                literal: text.clone(),
            },
            Part::Segment(found) => match found {
                Segment::Uuid => segment("uuid"),
                Segment::Ulid => segment("ulid"),
                Segment::Random(bytes) => KeyPart::Segment {
                    segment: "random",
                    len: Some((*bytes as usize * 4).div_ceil(3)),
                    pointer: None,
                },
                Segment::Date => segment("date"),
                Segment::Timestamp => segment("timestamp"),
                Segment::Seq => segment("seq"),
                Segment::Opaque => segment("opaque"),
                Segment::SfString => segment("sf-string"),
                Segment::Field(pointer) => KeyPart::Segment {
                    segment: "field",
                    len: None,
                    pointer: Some(pointer.clone()),
                },
            },
        })
        .collect()
}

impl TestTarget {
    /// The tests' view of `op`, which has a contract.
    pub fn new(op: &Operation, contract: &ContractContext, table: &str) -> TestTarget {
        let key_parts: Vec<TestKeyPart> =
            contract.key_parts.iter().flat_map(test_key_parts).collect();
        let has_principal = contract
            .scope_sources
            .iter()
            .any(|s| s.location == "principal");
        let secured = op.security.is_some();
        let needs_principal = secured || has_principal;
        // A secured operation's requests carry a principal even when the
        // scope does not name it.
        let scope = (needs_principal && !has_principal)
            .then_some(TestScope::Principal)
            .into_iter()
            .chain(contract.scope_sources.iter().map(|source| {
                let name = source.name.clone();
                match source.location {
                    "principal" => TestScope::Principal,
                    "header" => TestScope::Header { name },
                    "query" => TestScope::Query { name },
                    _ => TestScope::Body { pointer: name },
                }
            }))
            .collect();
        let in_sources = |location: &str| {
            contract
                .scope_sources
                .iter()
                .any(|source| source.location == location)
        };
        let key_in = contract.key_in;
        let has_field = contract.key_parts.iter().any(|part| {
            matches!(
                part,
                KeyPart::Segment {
                    segment: "field",
                    ..
                }
            )
        });
        let needs_random = key_parts
            .iter()
            .any(|part| matches!(part, TestKeyPart::Random { .. } | TestKeyPart::Field { .. }));
        TestTarget {
            needs_set: has_field || key_in == "body" || in_sources("body"),
            needs_encode: key_in == "query" || in_sources("query"),
            needs_random,
            body_in_key: has_field,
            body_in_request: key_in == "body" || in_sources("body"),
            uri_mut: key_in == "query" || in_sources("query"),
            name: op.name.clone(),
            const_name: op.const_name.clone(),
            method: op.method.clone(),
            uri: example_uri(&op.path),
            table: table.to_string(),
            key_in,
            key_name: contract.key_name.clone(),
            key_format: contract.key_format.clone(),
            key_parts,
            scope,
            key_required: contract.key_required,
            malformed_key: if contract.key_parts.iter().any(|part| {
                matches!(
                    part,
                    KeyPart::Segment {
                        segment: "opaque",
                        ..
                    }
                )
            }) {
                "not a key"
            } else if contract.key_parts.iter().any(|part| {
                matches!(
                    part,
                    KeyPart::Segment {
                        segment: "sf-string",
                        ..
                    }
                )
            }) {
                // A tab: the one character a header carries that an
                // sf-string does not.
                "not\ta key"
            } else {
                "x"
            },
            missing_key_status: contract.missing_key_status,
            max_key_len: contract.max_key_len,
            in_progress_status: contract.in_progress_status,
            conflict_status: contract.conflict_status,
            retry_after_secs: contract.retry_after_secs,
            retry_failed: contract.retry_failed,
            claim_in_transaction: contract.claim_mode == "InTransaction",
            replayed_header: contract
                .replayed_header
                .as_deref()
                .map(str::to_ascii_lowercase),
            fp_body: contract.fp_body,
            needs_principal,
            secured,
        }
    }
}

/// How the tests make a valid value of `part`.
fn test_key_parts(part: &KeyPart) -> Vec<TestKeyPart> {
    const DIGITS: &str = "0123456789";
    match part {
        KeyPart::Literal { literal } => vec![TestKeyPart::text(literal)],
        KeyPart::Segment {
            segment,
            len,
            pointer,
        } => match *segment {
            // A client-chosen key: what most clients choose.
            "uuid" | "opaque" | "sf-string" => vec![TestKeyPart::Uuid],
            // A ULID's first character is at most 7; 0 keeps it in range.
            "ulid" => vec![
                TestKeyPart::text("0"),
                TestKeyPart::random("0123456789ABCDEFGHJKMNPQRSTVWXYZ", 25),
            ],
            "random" => vec![TestKeyPart::random(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                len.unwrap_or_default(),
            )],
            "date" => vec![TestKeyPart::text("20240615")],
            "timestamp" => vec![TestKeyPart::random(DIGITS, 13)],
            "seq" => vec![TestKeyPart::random(DIGITS, 12)],
            _ => vec![TestKeyPart::Field {
                pointer: pointer.clone().unwrap_or_else(|| "/field".to_string()),
            }],
        },
    }
}

/// `path` with each parameter replaced by `p1` (the text around one in
/// its segment, as in `{Sid}.json`, kept) and everything else
/// percent-encoded as a URI needs.
fn example_uri(path: &str) -> String {
    let encode = |text: &str| -> String {
        text.bytes()
            .map(|byte| match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (byte as char).to_string()
                }
                _ => format!("%{byte:02X}"),
            })
            .collect()
    };
    path.split('/')
        .map(|segment| match split_segment(segment) {
            Ok(routing::Segment::Param { prefix, suffix, .. }) => {
                format!("{}p1{}", encode(prefix), encode(suffix))
            }
            _ => encode(segment),
        })
        .collect::<Vec<_>>()
        .join("/")
}

impl DialectContext {
    /// The dialect's settings; its default `DATABASE_URL` names the
    /// contracts' `store.database`, else the package (`lib`).
    pub fn new(d: Dialect, store: &Store, lib: &str) -> DialectContext {
        let (title, default_url, placeholder) = match (d, store.database.as_deref()) {
            (Dialect::Sqlite, database) => (
                "SQLite",
                format!("sqlite://{}.db", database.unwrap_or(&lib.replace('_', "-"))),
                "?1",
            ),
            (Dialect::Mysql, database) => (
                "MySQL / MariaDB",
                format!("mysql://root@127.0.0.1:3306/{}", database.unwrap_or(lib)),
                "?",
            ),
            (Dialect::Postgres, database) => (
                "PostgreSQL",
                format!(
                    "postgres://postgres@127.0.0.1:5432/{}",
                    database.unwrap_or(lib)
                ),
                "$1",
            ),
        };
        DialectContext {
            name: d.name(),
            title,
            default_url,
            placeholder,
            ddl: dialect::create_table(d, &store.table, store.key_width),
            alterations: dialect::alterations(d, &store.table)
                .into_iter()
                .map(|alteration| (alteration.stem, alteration.sql))
                .collect(),
        }
    }
}
