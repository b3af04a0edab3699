//! One operation's types: its request body, a struct of its parameters
//! and an enum of its responses.

use super::convert::{Converter, Hint, docs_of, operation_words};
use super::model::{Field, Kind, MediaCase, ResponseCase, Struct, Ty, TypeDef};
use super::naming::{FieldNames, VariantNames};
use super::param_shape;
use super::{
    EngineAnswers, OperationTypes, ParamField, ParamKind, ParamLocation, Params, RequestBody,
    Response, ResponseHeader, ResponseVariant, Scalar, StatusPattern,
};
use crate::names::comment_lines;
use idemgen_spec::node::Node;
use idemgen_spec::operations::Operation;
use std::collections::BTreeMap;

/// The names an operation's types get, reserved before any schema is
/// converted so that they do not depend on what the schemas are called.
pub struct Reserved {
    words: String,
    params: String,
    request: String,
    response: String,
}

pub fn reserve(converter: &mut Converter<'_>, operation: &Operation<'_>) -> Reserved {
    let words = operation_words(
        operation.operation_id.as_deref(),
        &operation.method,
        &operation.path,
    );
    let mut name = |role: &str| {
        let place = format!("{} ({role})", operation.pointer);
        converter.names.assign(&place, &format!("{words} {role}"))
    };
    Reserved {
        params: name("params"),
        request: name("request"),
        response: name("response"),
        words,
    }
}

/// `idempotent`: the statuses of the engine's answers, when the operation
/// is idempotent.
pub fn build<'w>(
    converter: &mut Converter<'w>,
    operation: &Operation<'w>,
    names: Reserved,
    idempotent: Option<EngineAnswers>,
) -> OperationTypes {
    let request_body = request_body(converter, operation, &names);
    let params = params(converter, operation, &names);
    let engine = EngineSends {
        params: params.is_some(),
        body: request_body
            .as_ref()
            .map(|body| body.is_json || body.is_form || body.multipart.is_some()),
        secured: idemgen_spec::security::of_operation(converter.workspace, operation)
            .is_ok_and(|security| !security.is_open()),
        idempotent,
    };
    OperationTypes {
        response: responses(converter, operation, &names, &engine),
        request_body,
        params,
    }
}

/// What decides the answers the engine sends itself, before or instead of
/// the business function.
struct EngineSends {
    params: bool,
    /// A request body, and whether it is read into its type (JSON, a
    /// form or multipart), so may not fit its schema.
    body: Option<bool>,
    secured: bool,
    idempotent: Option<EngineAnswers>,
}

impl EngineSends {
    /// Each status the engine may send for the operation, with when;
    /// `declares_422`: whether the operation declares a 422, which the
    /// engine then uses for a typed body that does not fit its schema.
    fn answers(&self, declares_422: bool) -> Vec<(u16, String)> {
        let mut answers = Vec::new();
        if self.params || self.body.is_some() {
            let what = match (self.params, self.body.is_some()) {
                (true, true) => "the parameters or the body",
                (true, false) => "the parameters",
                _ => "the body",
            };
            answers.push((400, format!("when {what} cannot be read or break the spec")));
        }
        if let Some(typed) = self.body {
            answers.push((
                413,
                "when the body is larger than the service accepts".into(),
            ));
            if typed && declares_422 {
                answers.push((422, "when the body does not fit its schema".into()));
            }
        }
        if self.secured {
            answers.push((
                401,
                "when the request carries no credential `src/auth.rs` accepts".into(),
            ));
        }
        if let Some(contract) = self.idempotent {
            let key = if contract.key_required {
                "when the idempotency key is missing or malformed"
            } else {
                "when the idempotency key is malformed"
            };
            answers.push((contract.missing_key, key.into()));
            answers.push((
                contract.conflict,
                "when the key was used with a different request, or by a first request \
                 that failed and may not be retried"
                    .into(),
            ));
            answers.push((
                contract.in_progress,
                "with `Retry-After`, while another request with the same key is in progress".into(),
            ));
            answers.push((
                429,
                "with `Retry-After`, when the database is too busy to claim the key".into(),
            ));
            answers.push((
                503,
                "with `Retry-After`, when the database is unavailable".into(),
            ));
        }
        answers
    }
}

/// `Op (POST /path)`: how an operation is named in doc comments.
fn title(operation: &Operation<'_>) -> String {
    let text = match &operation.operation_id {
        Some(id) => format!("`{id}` ({} {})", operation.method, operation.path),
        None => format!("{} {}", operation.method, operation.path),
    };
    comment_lines(&text).join(" ")
}

fn request_body<'w>(
    converter: &mut Converter<'w>,
    operation: &Operation<'w>,
    names: &Reserved,
) -> Option<RequestBody> {
    let workspace = converter.workspace;
    let body = workspace.deref(operation.node.get("requestBody")?)?;
    let (media_type, media) = pick_media(body.get("content")?)?;
    let is_json = is_json(&media_type);
    // A form or multipart body with a schema is read into its type like
    // JSON; the other media types stay bytes.
    let essence = media_essence(&media_type);
    let schema = media.get("schema");
    let is_form = !is_json && essence == "application/x-www-form-urlencoded" && schema.is_some();
    let form_layout = match schema {
        Some(schema) if is_form => super::form_layout::plan(workspace, schema, media),
        _ => super::FormLayout::default(),
    };
    let multipart = match schema {
        Some(schema) if !is_json && essence == "multipart/form-data" => Some(
            super::multipart::plan(converter, schema, media, &names.request),
        ),
        _ => None,
    };
    let ty = match (is_json || is_form || multipart.is_some(), schema) {
        (true, Some(schema)) => converter.ty(schema, &Hint::Exact(names.request.clone())),
        (true, None) => Ty::Json,
        (false, _) => Ty::Bytes,
    };
    let type_name = match ty {
        Ty::Named(name) => name,
        other => {
            let mut docs = vec![format!("The request body of {}.", title(operation))];
            if let Some(text) = body.get("description").and_then(Node::as_str) {
                docs.push(String::new());
                docs.extend(comment_lines(text.trim()));
            }
            if let Some(reason) = converter.take_fallback() {
                docs.push(String::new());
                docs.push(reason);
            }
            converter.insert(TypeDef {
                name: names.request.clone(),
                docs,
                kind: Kind::Alias(other),
            });
            names.request.clone()
        }
    };
    converter.take_fallback();
    Some(RequestBody {
        type_name,
        media_type,
        is_json,
        is_form,
        form_layout,
        multipart,
        required: body.get("required").and_then(Node::as_bool) == Some(true),
    })
}

/// The operation's parameters, the path item's included (the
/// operation's win on the same name and location). Cookies are left out.
fn params<'w>(
    converter: &mut Converter<'w>,
    operation: &Operation<'w>,
    names: &Reserved,
) -> Option<Params> {
    let workspace = converter.workspace;
    let mut declared: Vec<(&'w Node, &'w str, ParamLocation)> = Vec::new();
    // The path item's (shared) parameters first; an operation's parameter
    // of the same name and location replaces one in place.
    for holder in [operation.path_item, operation.node] {
        for parameter in holder
            .get("parameters")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            let Some(parameter) = workspace.deref(parameter) else {
                continue;
            };
            let (Some(name), Some(location)) = (
                parameter.get("name").and_then(Node::as_str),
                parameter.get("in").and_then(Node::as_str),
            ) else {
                continue;
            };
            let location_kind = match location {
                "path" => ParamLocation::Path,
                "query" => ParamLocation::Query,
                "header" => ParamLocation::Header,
                _ => continue,
            };
            // Header names are case-insensitive.
            let same = |(_, other, at): &(&Node, &str, ParamLocation)| {
                *at == location_kind
                    && match location_kind {
                        ParamLocation::Header => other.eq_ignore_ascii_case(name),
                        _ => *other == name,
                    }
            };
            match declared.iter().position(same) {
                Some(at) => declared[at] = (parameter, name, location_kind),
                None => declared.push((parameter, name, location_kind)),
            }
        }
    }
    if declared.is_empty() {
        return None;
    }
    let mut field_names = FieldNames::default();
    let mut fields = Vec::new();
    let mut params = Vec::new();
    for (parameter, wire, location) in declared {
        let schema = parameter.get("schema").or_else(|| {
            parameter
                .get("content")
                .and_then(pick_media)
                .and_then(|(_, media)| media.get("schema"))
        });
        let hint = Hint::Derived(format!("{} {wire}", names.params));
        let ty = match schema {
            Some(schema) => converter.ty(schema, &hint),
            None => Ty::String,
        };
        let required = location == ParamLocation::Path
            || parameter.get("required").and_then(Node::as_bool) == Some(true);
        let mut docs = docs_of(parameter);
        if docs.is_empty() {
            if let Some(schema) = schema {
                docs = docs_of(schema);
            }
        }
        if !docs.is_empty() {
            docs.push(String::new());
        }
        docs.push(match location {
            ParamLocation::Path => format!("Path parameter `{wire}`."),
            ParamLocation::Query => format!("Query parameter `{wire}`."),
            ParamLocation::Header => format!("Header `{wire}`."),
        });
        if let Some(reason) = converter.take_fallback() {
            docs.push(reason);
        }
        let field = Field {
            name: field_names.assign(wire),
            wire: wire.to_string(),
            ty,
            required,
            docs,
            default: None,
        };
        params.push(ParamField {
            field: field.name.clone(),
            wire_name: wire.to_string(),
            location,
            required,
            rust_type: field.declared().rust(),
            // Known once every referenced schema is defined: see
            // `fill_param_kinds`.
            kind: ParamKind::Other,
            style: parameter
                .get("style")
                .and_then(Node::as_str)
                .map(str::to_string),
            explode: parameter.get("explode").and_then(Node::as_bool),
            unread_nesting: false,
        });
        fields.push(field);
    }
    converter.insert(TypeDef {
        name: names.params.clone(),
        docs: vec![format!(
            "The path, query and header parameters of {}.",
            title(operation)
        )],
        kind: Kind::Struct(Struct {
            fields,
            additional: None,
            deny_unknown: false,
        }),
    });
    Some(Params {
        type_name: names.params.clone(),
        fields: params,
    })
}

fn responses<'w>(
    converter: &mut Converter<'w>,
    operation: &Operation<'w>,
    names: &Reserved,
    engine: &EngineSends,
) -> Response {
    let workspace = converter.workspace;
    let mut declared: Vec<(StatusPattern, &'w Node)> = operation
        .node
        .get("responses")
        .and_then(Node::as_map)
        .unwrap_or_default()
        .iter()
        .filter_map(|entry| {
            let status = StatusPattern::parse(&entry.key)?;
            Some((status, workspace.deref(&entry.value)?))
        })
        .collect();
    declared.sort_by_key(|(status, _)| *status);
    declared.dedup_by_key(|(status, _)| *status);
    // The response an answer of the engine's stands for: its code, else
    // its class, else `default` (the patterns sort in that order).
    let stands_for = |code: u16| {
        declared
            .iter()
            .map(|(status, _)| *status)
            .find(|status| status.matches(code))
    };
    let in_progress = engine
        .idempotent
        .and_then(|contract| stands_for(contract.in_progress));
    let declares_422 = stands_for(422).is_some();
    let engine_answers: Vec<(StatusPattern, u16, String)> = engine
        .answers(declares_422)
        .into_iter()
        .filter_map(|(code, when)| Some((stands_for(code)?, code, when)))
        .collect();
    let mut variant_names = VariantNames::default();
    let mut cases = Vec::new();
    for (status, response) in declared {
        let variant = variant_names.reserve(&status.variant_name());
        let choices = media_choices(response);
        let content = response.get("content").and_then(pick_media);
        let chooses_media = content.is_some() && choices.len() > 1;
        let (body, media_type) = match content {
            None => (None, None),
            Some(_) if chooses_media => {
                let body = media_enum(converter, operation, names, &variant, status, &choices);
                (Some(Ty::Named(body)), None)
            }
            Some((media_type, media)) => {
                let ty = match (is_json(&media_type), media.get("schema")) {
                    (true, Some(schema)) => converter.ty(
                        schema,
                        &Hint::Derived(format!("{} {variant} body", names.words)),
                    ),
                    (true, None) => Ty::Json,
                    (false, _) => Ty::Bytes,
                };
                (Some(ty), Some(media_type))
            }
        };
        let mut docs = vec![format!("`{}`", status.label())];
        if let Some(text) = response.get("description").and_then(Node::as_str) {
            let lines = comment_lines(text.trim());
            if let Some((first, rest)) = lines.split_first() {
                docs[0] = format!("`{}`: {first}", status.label());
                docs.extend(rest.iter().cloned());
            }
        }
        if let Some(reason) = converter.take_fallback() {
            docs.push(String::new());
            docs.push(reason);
        }
        let engines_retry_after = in_progress == Some(status);
        let sent_by_engine: Vec<String> = engine_answers
            .iter()
            .filter(|(pattern, _, _)| *pattern == status)
            .map(|(_, code, when)| format!("`{code}` {when}"))
            .collect();
        if !sent_by_engine.is_empty() {
            docs.push(String::new());
            docs.push(
                "The engine sends this status itself (return this variant only for reasons \
                 of your own):"
                    .into(),
            );
            docs.extend(sent_by_engine.iter().map(|answer| format!("- {answer}.")));
        }
        let headers = response_headers(
            converter,
            response,
            &format!("{} {variant}", names.words),
            status,
            engines_retry_after,
        );
        cases.push(ResponseCase {
            variant,
            status,
            body,
            media_type,
            chooses_media,
            docs,
            headers,
        });
    }
    let variants = cases
        .iter()
        .map(|case| ResponseVariant {
            variant: case.variant.clone(),
            status: case.status,
            body: case.body.as_ref().map(Ty::rust),
            media_type: case.media_type.clone(),
            media_enum: match &case.body {
                Some(Ty::Named(name)) if case.chooses_media => Some(name.clone()),
                _ => None,
            },
            headers: case
                .headers
                .iter()
                .map(|field| ResponseHeader {
                    field: field.name.clone(),
                    wire_name: field.wire.clone(),
                    required: field.required,
                    rust_type: field.declared().rust(),
                })
                .collect(),
        })
        .collect();
    converter.insert(TypeDef {
        name: names.response.clone(),
        docs: vec![format!("The responses of {}.", title(operation))],
        kind: Kind::Response(cases),
    });
    Response {
        type_name: names.response.clone(),
        variants,
    }
}

/// Headers the server or the engine sets: no response declares them into a
/// field. OpenAPI ignores a declared `Content-Type` (the body's media type
/// is sent); the others frame the message or mark a replay.
const NOT_THE_BUSINESS_CODES: &[&str] = &[
    "connection",
    "content-length",
    "content-type",
    "idempotent-replayed",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The fields of the headers `response` declares, in the spec's order,
/// named apart from the variant's `status` and `body`. `Retry-After` is
/// left out when `engines_retry_after` (the engine's in-progress answer).
fn response_headers<'w>(
    converter: &mut Converter<'w>,
    response: &'w Node,
    words: &str,
    status: StatusPattern,
    engines_retry_after: bool,
) -> Vec<Field> {
    let workspace = converter.workspace;
    let mut field_names = FieldNames::default();
    if status.carries_status() {
        field_names.assign("status");
    }
    field_names.assign("body");
    let mut fields: Vec<Field> = Vec::new();
    for entry in response
        .get("headers")
        .and_then(Node::as_map)
        .unwrap_or_default()
    {
        let wire: &str = &entry.key;
        let lower = wire.to_ascii_lowercase();
        if NOT_THE_BUSINESS_CODES.contains(&lower.as_str())
            || (engines_retry_after && lower == "retry-after")
            || fields
                .iter()
                .any(|field| field.wire.eq_ignore_ascii_case(wire))
        {
            continue;
        }
        let Some(header) = workspace.deref(&entry.value) else {
            continue;
        };
        let schema = header.get("schema").or_else(|| {
            header
                .get("content")
                .and_then(pick_media)
                .and_then(|(_, media)| media.get("schema"))
        });
        let ty = match schema {
            Some(schema) => converter.ty(schema, &Hint::Derived(format!("{words} {wire}"))),
            None => Ty::String,
        };
        let mut docs = docs_of(header);
        if docs.is_empty() {
            if let Some(schema) = schema {
                docs = docs_of(schema);
            }
        }
        if !docs.is_empty() {
            docs.push(String::new());
        }
        docs.push(format!("Header `{wire}`."));
        if let Some(reason) = converter.take_fallback() {
            docs.push(reason);
        }
        fields.push(Field {
            name: field_names.assign(wire),
            wire: wire.to_string(),
            ty,
            required: header.get("required").and_then(Node::as_bool) == Some(true),
            docs,
            default: None,
        });
    }
    fields
}

/// `application/json` and every `+json` type (`application/problem+json`).
pub(crate) fn is_json(media_type: &str) -> bool {
    let essence = media_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json")
}

/// The media types a response's body may be sent as, in the spec's order:
/// each concrete type once (a second spelling of the same type, say with
/// a charset, is the first's), media ranges (`text/*`, `*/*`) left out,
/// since a `Content-Type` names one type.
pub(crate) fn media_choices(response: &Node) -> Vec<(String, &Node)> {
    let mut choices: Vec<(String, &Node)> = Vec::new();
    for entry in response
        .get("content")
        .and_then(Node::as_map)
        .unwrap_or_default()
    {
        let essence = media_essence(&entry.key);
        let Some((kind, subtype)) = essence.split_once('/') else {
            continue;
        };
        if kind.is_empty() || subtype.is_empty() || kind == "*" || subtype == "*" {
            continue;
        }
        if choices
            .iter()
            .all(|(chosen, _)| media_essence(chosen) != essence)
        {
            choices.push((entry.key.to_string(), &entry.value));
        }
    }
    choices
}

/// A media type without its parameters, lowercased: what a
/// `Content-Type` is matched on.
pub(crate) fn media_essence(media_type: &str) -> String {
    media_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The enum of the bodies a response with several media types may send,
/// one variant per type; returns its name.
fn media_enum<'w>(
    converter: &mut Converter<'w>,
    operation: &Operation<'w>,
    names: &Reserved,
    variant: &str,
    status: super::StatusPattern,
    choices: &[(String, &'w Node)],
) -> String {
    let place = format!("{} ({variant} body)", operation.pointer);
    let name = converter
        .names
        .assign(&place, &format!("{} {variant} body", names.words));
    let mut variant_names = VariantNames::default();
    let mut cases = Vec::new();
    for (media_type, media) in choices {
        let essence = media_essence(media_type);
        let case = variant_names.assign(&essence);
        let body = match (is_json(media_type), media.get("schema")) {
            (true, Some(schema)) => converter.ty(
                schema,
                &Hint::Derived(format!("{} {variant} {essence} body", names.words)),
            ),
            (true, None) => Ty::Json,
            (false, _) => Ty::Bytes,
        };
        let mut docs = vec![format!("`{media_type}`")];
        if let Some(reason) = converter.take_fallback() {
            docs.push(String::new());
            docs.push(reason);
        }
        cases.push(MediaCase {
            variant: case,
            media_type: media_type.clone(),
            body,
            docs,
        });
    }
    converter.insert(TypeDef {
        name: name.clone(),
        docs: vec![
            format!(
                "The body of {}'s `{}` response, as one of the media types it declares.",
                title(operation),
                status.label()
            ),
            String::new(),
            "The variant built is the `Content-Type` sent, and the one stored and".into(),
            "replayed with an idempotent answer.".into(),
        ],
        kind: Kind::Media(cases),
    });
    name
}

/// The media type a body is read or written as: the first JSON one,
/// else the first declared.
fn pick_media(content: &Node) -> Option<(String, &Node)> {
    let entries = content.as_map()?;
    let chosen = entries
        .iter()
        .find(|entry| is_json(&entry.key))
        .or_else(|| entries.first())?;
    Some((chosen.key.to_string(), &chosen.value))
}

/// Sets each parameter's [`ParamKind`] from the field types of its
/// struct, now that the types they name are all defined.
pub fn fill_param_kinds(types: &mut OperationTypes, defs: &BTreeMap<String, TypeDef>) {
    let Some(params) = &mut types.params else {
        return;
    };
    let Some(Kind::Struct(shape)) = defs.get(&params.type_name).map(|def| &def.kind) else {
        return;
    };
    for (param, field) in params.fields.iter_mut().zip(&shape.fields) {
        param.kind = match (
            scalar(&field.ty, defs, 0),
            scalar_or_string(&field.ty, defs, 0),
        ) {
            (Some(one), _) => ParamKind::Scalar(one),
            (None, Some(one)) => ParamKind::ScalarOrString(one),
            (None, None) => match strip_option(&field.ty) {
                Ty::Vec(item) => scalar(item, defs, 0).map_or(ParamKind::Other, ParamKind::Array),
                other => object_kind(other, defs, 0).unwrap_or(ParamKind::Other),
            },
        };
        let deep =
            param.location == ParamLocation::Query && param.style.as_deref() == Some("deepObject");
        // A `deepObject` the flat readers above would read as text, or
        // whose members nest, is read from its brackets as its shape;
        // one no shape describes is reported.
        if deep {
            match param_shape::of(&field.ty, defs) {
                Some(nested) if nested.nests() || param.kind == ParamKind::Other => {
                    param.kind = ParamKind::Nested(nested);
                }
                Some(_) => {}
                None => param.unread_nesting = true,
            }
        }
    }
}

/// An object parameter: a struct of scalars, a map, or a union of one
/// such object and one scalar (Stripe's `created`: a time or a range).
fn object_kind(ty: &Ty, defs: &BTreeMap<String, TypeDef>, depth: usize) -> Option<ParamKind> {
    if depth > 16 {
        return None;
    }
    match strip_option(ty) {
        Ty::Map(value) if scalar(value, defs, 0) == Some(Scalar::String) => {
            Some(ParamKind::Object {
                properties: Vec::new(),
                or_scalar: None,
            })
        }
        Ty::Named(name) => match &defs.get(name)?.kind {
            Kind::Struct(shape) => Some(ParamKind::Object {
                properties: shape
                    .fields
                    .iter()
                    .map(|field| {
                        let one = scalar(&field.ty, defs, 0).unwrap_or(Scalar::String);
                        (field.wire.clone(), one)
                    })
                    .collect(),
                or_scalar: None,
            }),
            Kind::Alias(inner) | Kind::Newtype(inner) => object_kind(inner, defs, depth + 1),
            Kind::Untagged(alternatives) if alternatives.len() == 2 => {
                let scalars: Vec<Scalar> = alternatives
                    .iter()
                    .filter_map(|alternative| scalar(&alternative.ty, defs, 0))
                    .collect();
                let objects: Vec<ParamKind> = alternatives
                    .iter()
                    .filter_map(|alternative| object_kind(&alternative.ty, defs, depth + 1))
                    .collect();
                match (scalars.as_slice(), objects.as_slice()) {
                    ([one], [ParamKind::Object { properties, .. }]) => Some(ParamKind::Object {
                        properties: properties.clone(),
                        or_scalar: Some(*one),
                    }),
                    _ => None,
                }
            }
            _ => None,
        },
        _ => None,
    }
}

/// The scalar of a union of two alternatives, one of them a string (or a
/// string enum) and the other that scalar: the text of such a parameter
/// is read as the scalar where it reads as one, else as the string.
pub(super) fn scalar_or_string(
    ty: &Ty,
    defs: &BTreeMap<String, TypeDef>,
    depth: usize,
) -> Option<Scalar> {
    let Ty::Named(name) = strip_option(ty) else {
        return None;
    };
    match &defs.get(name)?.kind {
        Kind::Alias(inner) if depth < 16 => scalar_or_string(inner, defs, depth + 1),
        Kind::Untagged(alternatives) => {
            let scalars: Option<Vec<Scalar>> = alternatives
                .iter()
                .map(|alternative| scalar(&alternative.ty, defs, 0))
                .collect();
            match scalars?.as_slice() {
                [Scalar::String, other] | [other, Scalar::String] if *other != Scalar::String => {
                    Some(*other)
                }
                _ => None,
            }
        }
        _ => None,
    }
}

pub(super) fn strip_option(ty: &Ty) -> &Ty {
    match ty {
        Ty::Option(inner) => strip_option(inner),
        other => other,
    }
}

/// The scalar a type is, looking through options and aliases.
pub(super) fn scalar(ty: &Ty, defs: &BTreeMap<String, TypeDef>, depth: usize) -> Option<Scalar> {
    match strip_option(ty) {
        // A date's text is parsed by its serde type, as a string's is taken.
        Ty::String | Ty::DateTime | Ty::Date => Some(Scalar::String),
        Ty::Bool => Some(Scalar::Boolean),
        Ty::Integer(_) => Some(Scalar::Integer),
        Ty::Number(_) => Some(Scalar::Number),
        Ty::Named(name) if depth < 16 => match &defs.get(name)?.kind {
            Kind::StringEnum(_) => Some(Scalar::String),
            Kind::Alias(inner) => scalar(inner, defs, depth + 1),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::is_json;

    #[test]
    fn json_media_types() {
        assert!(is_json("application/json"));
        assert!(is_json("application/problem+json"));
        assert!(is_json("application/json; charset=utf-8"));
        assert!(is_json("Application/JSON"));
        assert!(!is_json("text/plain"));
        assert!(!is_json("application/x-ndjson"));
    }
}
