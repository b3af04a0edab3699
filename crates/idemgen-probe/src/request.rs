//! A valid request per operation, built from the spec: the operation's
//! example body (or one generated from its schema), path, query and header
//! parameters, and fresh keys that fit `key.format` and the body.

use serde_json::Value;

use idemgen_spec::analysis::{ContractState, OperationContext};
use idemgen_spec::contract::Contract;
use idemgen_spec::contract::key_template::{KeyTemplate, Segment};
use idemgen_spec::contract::model::{
    FailedPolicy, FingerprintPart, KeyLocation, RequestScope, ScopeSource,
};
use idemgen_spec::operations::Operation;
use idemgen_spec::{Node, Workspace};

use super::http::Outgoing;
use super::key::{self, Rng};
use super::principal::Principal;
use super::sample::Sampler;

/// What the user chose about the request (`--body-file`, `--example`,
/// `--set`, `--param`, `--header`, `--scope`, `--as`).
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    pub body: Option<Value>,
    pub example: Option<String>,
    /// JSON pointer → value, applied to the body (`--set`).
    pub sets: Vec<(String, SetValue)>,
    /// Path or query parameter name → value.
    pub params: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    /// `--scope NAME=VALUE`: the `key.scope` values to send, in order
    /// (the first for every check, the second for the scope check's other
    /// tenant).
    pub scopes: Vec<(String, String)>,
    /// `--as`: the first sends every request but those of the
    /// `principals` and `unauthenticated` checks.
    pub principals: Vec<Principal>,
}

/// The value of one `--set`: fixed, or a text with `{uuid}`, `{ulid}` or
/// `{seq}` in it that takes fresh values for every new key the probe sends
/// (the copies of one request, a burst's or a replay's, carry the same).
#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    Fixed(Value),
    Fresh(String),
}

/// The placeholders a `--set` value may hold.
pub const FRESH_PLACEHOLDERS: [&str; 3] = ["{uuid}", "{ulid}", "{seq}"];

impl SetValue {
    /// `VALUE` of `--set POINTER=VALUE`: JSON (`5`, `true`, `{"a":1}`) as
    /// such, a text with a placeholder as a fresh value, anything else as
    /// a string. A `{word}` that is no placeholder is refused, naming them.
    pub fn parse(text: &str) -> Result<SetValue, String> {
        match serde_json::from_str::<Value>(text) {
            Ok(value) if !value.is_string() => return Ok(SetValue::Fixed(value)),
            _ => {}
        }
        let mut fresh = false;
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            let tail = &rest[open..];
            let Some(close) = tail.find('}') else { break };
            let word = &tail[..=close];
            if word[1..close]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
                && close > 1
            {
                if !FRESH_PLACEHOLDERS.contains(&word) {
                    return Err(format!(
                        "`{word}` is not a placeholder --set knows; use {} (a fresh value for every new key)",
                        FRESH_PLACEHOLDERS.join(", ")
                    ));
                }
                fresh = true;
            }
            rest = &tail[close + 1..];
        }
        Ok(if fresh {
            SetValue::Fresh(text.to_string())
        } else {
            SetValue::Fixed(
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string())),
            )
        })
    }

    /// The value to send: a fresh one from `rng` and the sequence number
    /// `seq` for a [`SetValue::Fresh`] (`{seq}` alone is a number).
    pub fn value(&self, rng: &mut Rng, seq: u64) -> Value {
        match self {
            SetValue::Fixed(value) => value.clone(),
            SetValue::Fresh(text) if text == "{seq}" => Value::from(seq),
            SetValue::Fresh(text) => {
                let mut out = String::new();
                let mut rest = text.as_str();
                while let Some(at) = rest.find('{') {
                    out.push_str(&rest[..at]);
                    let tail = &rest[at..];
                    let placeholder = FRESH_PLACEHOLDERS
                        .iter()
                        .find(|placeholder| tail.starts_with(**placeholder));
                    match placeholder {
                        Some(&"{uuid}") => out.push_str(&rng.uuid()),
                        Some(&"{ulid}") => out.push_str(&rng.ulid()),
                        Some(_) => out.push_str(&seq.to_string()),
                        None => {
                            out.push('{');
                            rest = &tail[1..];
                            continue;
                        }
                    }
                    rest = &tail[placeholder.map_or(1, |p| p.len())..];
                }
                out.push_str(rest);
                Value::String(out)
            }
        }
    }
}

/// The answers the contract promises.
#[derive(Debug, Clone)]
pub struct Expect {
    pub profile: &'static str,
    pub in_progress: u16,
    pub retry_after_ms: u64,
    /// `server.max-processing`: the longest a first attempt may run.
    pub max_processing_ms: Option<u64>,
    /// `window`: how long a finished key is remembered.
    pub window_ms: Option<u64>,
    pub conflict: u16,
    /// `None`: the profile makes the key optional.
    pub missing_key: Option<u16>,
    pub failed: FailedPolicy,
    pub fingerprint_body: bool,
}

pub struct Plan {
    pub method: String,
    /// The path with its parameters filled in and percent-encoded.
    pub path: String,
    pub query: Vec<(String, String)>,
    /// Each path and query parameter's value as sent (not encoded), and
    /// each `--param`: what fills `--observe`'s placeholders.
    pub params: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Option<Value>,
    pub content_type: String,
    /// Where the body came from, for the report.
    pub body_source: String,
    pub key_in: KeyLocation,
    pub key_name: String,
    pub template: KeyTemplate,
    pub max_length: usize,
    /// `{field:…}` pointers and their `maxLength`, which fresh events give
    /// fresh values unless the user pinned them with `--set`.
    fields: Vec<(String, Option<usize>)>,
    pinned: Vec<String>,
    /// `--set` values with `{uuid}`, `{ulid}` or `{seq}`: new for every event.
    fresh: Vec<(String, SetValue)>,
    /// The `{seq}` of the next event (the first is 1).
    seq: std::sync::atomic::AtomicU64,
    /// Each `key.scope` source with the two values the probe sends: the
    /// first on every request, the second as the scope check's other tenant.
    pub scopes: Vec<(RequestScope, [String; 2])>,
    /// `key.scope` names `principal`: the verified principal's id.
    pub principal_scoped: bool,
    /// `--as`, without any header that carries the key.
    pub principals: Vec<Principal>,
    pub expect: Expect,
    /// Each declared response (`201`, `2XX`, `default`) and the names of
    /// the headers the spec declares on it.
    pub response_headers: Vec<(String, Vec<String>)>,
}

/// Whose credentials a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// The `--as` principal at this index.
    Principal(usize),
    /// None: every header any `--as` gives is left out.
    Nobody,
}

/// Which `key.scope` values a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeUse {
    First,
    Second,
    Missing,
}

/// One business event: a key and the body that goes with it.
#[derive(Debug, Clone)]
pub struct Event {
    pub key: String,
    pub body: Option<Value>,
}

/// Which key a request carries.
#[derive(Debug, Clone, Copy)]
pub enum KeyUse<'a> {
    Valid,
    Missing,
    Given(&'a str),
}

impl Plan {
    pub fn build(
        workspace: &Workspace,
        operation: &Operation<'_>,
        contract: &Contract,
        options: &RequestOptions,
        rng: &mut Rng,
    ) -> Result<Plan, String> {
        let key = contract.key.as_ref().ok_or(
            "its x-idempotency block has no complete `key` (in, name, format); run `idemgen lint`",
        )?;
        let state = ContractState::Absent;
        let context = OperationContext {
            workspace,
            operation,
            state: &state,
            contract_errors: &[],
        };
        let mut sampler = Sampler { workspace, rng };
        let (body, content_type, body_source) = choose_body(&context, options, &mut sampler)?;
        let mut body = body;
        for (pointer, value) in &options.sets {
            let target = body.get_or_insert_with(|| Value::Object(Default::default()));
            // A fresh value is shown as the first event's would be.
            set_pointer(target, pointer, value.value(sampler.rng, 1))
                .map_err(|why| format!("--set {pointer}: {why}"))?;
        }

        let mut path = String::new();
        let mut query = Vec::new();
        let mut headers = Vec::new();
        let given = |name: &str| {
            options
                .params
                .iter()
                .find(|(given, _)| given == name)
                .map(|(_, value)| value.clone())
        };
        let mut path_values = Vec::new();
        for parameter in context.parameters() {
            let name = parameter.get("name").and_then(Node::as_str).unwrap_or("");
            let location = parameter.get("in").and_then(Node::as_str).unwrap_or("");
            let required = parameter.get("required").and_then(Node::as_bool) == Some(true);
            let is_key = match key.location.value {
                KeyLocation::Header => {
                    location == "header" && name.eq_ignore_ascii_case(&key.name.value)
                }
                KeyLocation::Query => location == "query" && name == key.name.value,
                KeyLocation::Body => false,
            };
            if is_key || !(required || location == "path" || given(name).is_some()) {
                continue;
            }
            let value = given(name).unwrap_or_else(|| parameter_value(parameter, &mut sampler));
            match location {
                "path" => path_values.push((name.to_string(), value)),
                "query" => query.push((name.to_string(), value)),
                "header" if !is_reserved_header(name) => headers.push((name.to_string(), value)),
                _ => {}
            }
        }
        for (position, piece) in operation.path.split('{').enumerate() {
            if position == 0 {
                path.push_str(piece);
                continue;
            }
            let (name, rest) = piece.split_once('}').unwrap_or((piece, ""));
            let value = path_values
                .iter()
                .find(|(declared, _)| declared == name)
                .map(|(_, value)| value.clone())
                .or_else(|| given(name))
                .unwrap_or_else(|| "probe".into());
            path.push_str(&percent_encode(&value));
            path.push_str(rest);
        }
        let mut params: Vec<(String, String)> = path_values.clone();
        params.extend(query.iter().cloned());
        for (name, value) in &options.params {
            if !params.iter().any(|(known, _)| known == name) {
                params.push((name.clone(), value.clone()));
            }
        }
        for (name, value) in &options.headers {
            // The probe chooses the key itself, check by check.
            if key.location.value == KeyLocation::Header
                && name.eq_ignore_ascii_case(&key.name.value)
            {
                continue;
            }
            headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(name));
            headers.push((name.clone(), value.clone()));
        }
        // The probe chooses the key itself here too.
        let principals: Vec<Principal> = options
            .principals
            .iter()
            .map(|principal| Principal {
                name: principal.name.clone(),
                headers: principal
                    .headers
                    .iter()
                    .filter(|(name, _)| {
                        !(key.location.value == KeyLocation::Header
                            && name.eq_ignore_ascii_case(&key.name.value))
                    })
                    .cloned()
                    .collect(),
            })
            .collect();
        if let Some(first) = principals.first() {
            for (name, value) in &first.headers {
                headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(name));
                headers.push((name.clone(), value.clone()));
            }
        }

        let template = key.format.value.clone();
        let fields = template
            .segments()
            .filter_map(|segment| match segment {
                Segment::Field(pointer) => Some((
                    pointer.clone(),
                    context
                        .request_field(pointer)
                        .and_then(|field| field.get("maxLength"))
                        .and_then(|node| match node.value {
                            idemgen_spec::Value::Int(length) => usize::try_from(length).ok(),
                            _ => None,
                        }),
                )),
                _ => None,
            })
            .collect();
        let scopes = key
            .scope
            .iter()
            .filter_map(|source| source.value.request())
            .map(|source| {
                let source = source.clone();
                let values = scope_values(&source, options, &headers, &query, body.as_ref());
                (source, values)
            })
            .collect();
        let pinned = options
            .sets
            .iter()
            .map(|(pointer, _)| pointer.clone())
            .collect();
        let response_headers = declared_response_headers(workspace, operation);
        Ok(Plan {
            method: operation.method.clone(),
            path,
            query,
            params,
            headers,
            body,
            content_type,
            body_source,
            key_in: key.location.value,
            key_name: key.name.value.clone(),
            template,
            max_length: usize::try_from(key.max_length.value).unwrap_or(usize::MAX),
            fields,
            pinned,
            fresh: options
                .sets
                .iter()
                .filter(|(_, value)| matches!(value, SetValue::Fresh(_)))
                .cloned()
                .collect(),
            seq: std::sync::atomic::AtomicU64::new(1),
            scopes,
            principal_scoped: key
                .scope
                .iter()
                .any(|source| source.value == ScopeSource::Principal),
            principals,
            expect: Expect {
                profile: contract.profile.value.name(),
                in_progress: contract.in_progress_status.value,
                retry_after_ms: contract.retry_after_ms.value,
                max_processing_ms: contract.max_processing_ms.as_ref().map(|max| max.value),
                window_ms: contract.window_ms.as_ref().map(|window| window.value),
                conflict: contract.conflict_status.value,
                missing_key: contract
                    .missing_key_status
                    .as_ref()
                    .map(|status| status.value),
                failed: contract.failed.value,
                fingerprint_body: contract.fingerprint.value.contains(&FingerprintPart::Body),
            },
            response_headers,
        })
    }

    /// The headers the spec declares on the answer with `status`: those
    /// of its exact code, else of its range (`2XX`), else of `default`.
    pub fn declared_headers(&self, status: u16) -> &[String] {
        let exact = status.to_string();
        let range = format!("{}XX", status / 100);
        [exact.as_str(), range.as_str(), "default"]
            .iter()
            .find_map(|wanted| {
                self.response_headers
                    .iter()
                    .find(|(code, _)| code.eq_ignore_ascii_case(wanted))
            })
            .map_or(&[], |(_, names)| names.as_slice())
    }

    /// A fresh business event: `{field:…}` values made unique (so the key
    /// is new too) and a new key that matches the template.
    pub fn event(&self, rng: &mut Rng) -> Result<Event, String> {
        let mut body = self.body.clone();
        if !self.fresh.is_empty() {
            let seq = self.seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let target = body.get_or_insert_with(|| Value::Object(Default::default()));
            for (pointer, value) in &self.fresh {
                set_pointer(target, pointer, value.value(rng, seq))?;
            }
        }
        if let Some(body) = body.as_mut() {
            for (pointer, max_length) in &self.fields {
                if self.pinned.contains(pointer) {
                    continue;
                }
                let fresh = match body.pointer(pointer) {
                    Some(Value::Number(_)) => Value::from(rng.next_u64() % 1_000_000_000 + 1),
                    Some(Value::String(text)) => {
                        let suffix = format!("-{}", rng.hex(3));
                        let room = max_length
                            .unwrap_or(usize::MAX)
                            .saturating_sub(suffix.len());
                        let base: String = text.chars().filter(|c| *c != ':').take(room).collect();
                        Value::String(format!("{base}{suffix}"))
                    }
                    _ => Value::String(format!("probe-{}", rng.hex(4))),
                };
                set_pointer(body, pointer, fresh)?;
            }
        }
        let empty = Value::Null;
        let key = key::generate(&self.template, body.as_ref().unwrap_or(&empty), rng)?;
        if self.key_in == KeyLocation::Body {
            let target = body.get_or_insert_with(|| Value::Object(Default::default()));
            set_pointer(target, &self.key_name, Value::String(key.clone()))?;
        }
        Ok(Event { key, body })
    }

    /// The same event with one body value changed (not the key or a
    /// `{field:…}` value, which would make the key malformed instead), and
    /// the pointer that changed.
    pub fn changed(&self, event: &Event) -> Option<(Event, String)> {
        let mut body = event.body.clone()?;
        let mut keep: Vec<&str> = self.fields.iter().map(|(p, _)| p.as_str()).collect();
        if self.key_in == KeyLocation::Body {
            keep.push(&self.key_name);
        }
        let pointer = change_leaf(&mut body, "", &keep)?;
        Some((
            Event {
                key: event.key.clone(),
                body: Some(body),
            },
            pointer,
        ))
    }

    /// The HTTP request for `event` with the key `key`.
    pub fn request(&self, event: &Event, key: KeyUse<'_>) -> Outgoing {
        self.scoped_request(event, key, ScopeUse::First)
    }

    /// The HTTP request for `event` with the key `key` and the scope
    /// values `scope`.
    pub fn scoped_request(&self, event: &Event, key: KeyUse<'_>, scope: ScopeUse) -> Outgoing {
        let key_text = match key {
            KeyUse::Valid => Some(event.key.as_str()),
            KeyUse::Missing => None,
            KeyUse::Given(text) => Some(text),
        };
        let mut query = self.query.clone();
        let mut headers = self.headers.clone();
        let mut body = event.body.clone();
        match (self.key_in, key_text) {
            (KeyLocation::Header, Some(text)) => headers.push((self.key_name.clone(), text.into())),
            (KeyLocation::Query, Some(text)) => query.push((self.key_name.clone(), text.into())),
            (KeyLocation::Body, text) => {
                if let Some(body) = body.as_mut() {
                    let _ = match text {
                        Some(text) => set_pointer(body, &self.key_name, Value::String(text.into())),
                        None => remove_pointer(body, &self.key_name),
                    };
                }
            }
            (_, None) => {}
        }
        for (source, values) in &self.scopes {
            let value = match scope {
                ScopeUse::First => Some(values[0].as_str()),
                ScopeUse::Second => Some(values[1].as_str()),
                ScopeUse::Missing => None,
            };
            match source.location {
                KeyLocation::Header => {
                    headers.retain(|(name, _)| !name.eq_ignore_ascii_case(&source.name));
                    if let Some(value) = value {
                        headers.push((source.name.clone(), value.into()));
                    }
                }
                KeyLocation::Query => {
                    query.retain(|(name, _)| *name != source.name);
                    if let Some(value) = value {
                        query.push((source.name.clone(), value.into()));
                    }
                }
                KeyLocation::Body => {
                    let target = body.get_or_insert_with(|| Value::Object(Default::default()));
                    let _ = match value {
                        Some(value) => set_pointer(target, &source.name, scope_json(value)),
                        None => remove_pointer(target, &source.name),
                    };
                }
            }
        }
        let mut target = self.path.clone();
        for (index, (name, value)) in query.iter().enumerate() {
            target.push(if index == 0 { '?' } else { '&' });
            target.push_str(&percent_encode(name));
            target.push('=');
            target.push_str(&percent_encode(value));
        }
        let body = body.map(|body| serde_json::to_vec(&body).unwrap_or_default());
        if body.is_some() {
            headers.push(("Content-Type".into(), self.content_type.clone()));
        }
        Outgoing {
            method: self.method.clone(),
            target,
            headers,
            body,
        }
    }

    /// `outgoing` as `caller` sends it: without any `--as` header, then
    /// with the caller's.
    pub fn as_caller(&self, mut outgoing: Outgoing, caller: Caller) -> Outgoing {
        outgoing.headers.retain(|(name, _)| {
            !self.principals.iter().any(|principal| {
                principal
                    .headers
                    .iter()
                    .any(|(credential, _)| credential.eq_ignore_ascii_case(name))
            })
        });
        if let Caller::Principal(index) = caller {
            if let Some(principal) = self.principals.get(index) {
                outgoing.headers.extend(principal.headers.iter().cloned());
            }
        }
        outgoing
    }

    /// `X-Tenant` header, `tenant` query parameter, body field `/account`.
    pub fn scope_label(source: &RequestScope) -> String {
        match source.location {
            KeyLocation::Header => format!("`{}` header", source.name),
            KeyLocation::Query => format!("`{}` query parameter", source.name),
            KeyLocation::Body => format!("body field `{}`", source.name),
        }
    }

    /// How the key travels, for messages: `Idempotency-Key` header.
    pub fn key_label(&self) -> String {
        match self.key_in {
            KeyLocation::Header => format!("`{}` header", self.key_name),
            KeyLocation::Query => format!("`{}` query parameter", self.key_name),
            KeyLocation::Body => format!("body field `{}`", self.key_name),
        }
    }
}

/// The two values a scope source takes: `--scope NAME=VALUE` in order,
/// else the value the request already carries (a `--header`, `--param`,
/// `--set` or the spec's example) for the first, else `probe-tenant-a`
/// and `probe-tenant-b`.
fn scope_values(
    source: &RequestScope,
    options: &RequestOptions,
    headers: &[(String, String)],
    query: &[(String, String)],
    body: Option<&Value>,
) -> [String; 2] {
    let same_name = |name: &str| match source.location {
        KeyLocation::Header => name.eq_ignore_ascii_case(&source.name),
        _ => name == source.name,
    };
    let mut given = options
        .scopes
        .iter()
        .filter(|(name, _)| same_name(name))
        .map(|(_, value)| value.clone());
    let present = || match source.location {
        KeyLocation::Header => headers
            .iter()
            .find(|(name, _)| same_name(name))
            .map(|(_, value)| value.clone()),
        KeyLocation::Query => query
            .iter()
            .find(|(name, _)| same_name(name))
            .map(|(_, value)| value.clone()),
        KeyLocation::Body => body
            .and_then(|body| body.pointer(&source.name))
            .map(|value| match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            }),
    };
    let first = given
        .next()
        .or_else(present)
        .unwrap_or_else(|| "probe-tenant-a".into());
    let second = given.next().unwrap_or_else(|| "probe-tenant-b".into());
    let second = if second == first {
        format!("{first}-other")
    } else {
        second
    };
    [first, second]
}

/// A scope value in the body: a number or boolean stays one, as `--set`.
fn scope_json(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(value @ (Value::Number(_) | Value::Bool(_))) => value,
        _ => Value::String(text.into()),
    }
}

/// The body: `--body-file`, else the named or first media-type example,
/// else one generated from the schema; with its content type and source.
fn choose_body(
    context: &OperationContext<'_>,
    options: &RequestOptions,
    sampler: &mut Sampler<'_>,
) -> Result<(Option<Value>, String, String), String> {
    let workspace = context.workspace;
    let media = context.request_media();
    let content_type = media.map_or("application/json".to_string(), |m| m.key.to_string());
    if let Some(body) = &options.body {
        return Ok((Some(body.clone()), content_type, "--body-file".into()));
    }
    let Some(media) = media else {
        return Ok((None, content_type, "no request body".into()));
    };
    if !media.key.contains("json") {
        return Err(format!(
            "its request body is `{}`; only JSON bodies are built from the spec, so pass one with --body-file",
            media.key
        ));
    }
    let examples: Vec<(String, Value)> = media
        .value
        .get("examples")
        .and_then(Node::as_map)
        .unwrap_or_default()
        .iter()
        .filter_map(|entry| {
            let example = workspace.deref(&entry.value)?;
            Some((entry.key.to_string(), example.get("value")?.to_json()))
        })
        .collect();
    if let Some(wanted) = &options.example {
        return match examples.iter().find(|(name, _)| name == wanted) {
            Some((name, value)) => Ok((
                Some(value.clone()),
                content_type,
                format!("example `{name}`"),
            )),
            None => Err(format!(
                "it has no request example named `{wanted}` (it has: {})",
                if examples.is_empty() {
                    "none".to_string()
                } else {
                    examples
                        .iter()
                        .map(|(name, _)| format!("`{name}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )),
        };
    }
    if let Some(example) = media.value.get("example") {
        return Ok((
            Some(example.to_json()),
            content_type,
            "the media example".into(),
        ));
    }
    if let Some((name, value)) = examples.first() {
        return Ok((
            Some(value.clone()),
            content_type,
            format!("example `{name}`"),
        ));
    }
    let Some(schema) = context.request_schema() else {
        return Ok((
            Some(Value::Object(Default::default())),
            content_type,
            "an empty object (the request body has no schema)".into(),
        ));
    };
    Ok((
        Some(sampler.sample(schema)),
        content_type,
        "generated from the request schema".into(),
    ))
}

/// A parameter's value: its example, else one generated from its schema.
fn parameter_value(parameter: &Node, sampler: &mut Sampler<'_>) -> String {
    let value = parameter
        .get("example")
        .map(Node::to_json)
        .or_else(|| {
            parameter
                .get("examples")
                .and_then(Node::as_map)
                .and_then(|examples| examples.first())
                .and_then(|entry| sampler.workspace.deref(&entry.value))
                .and_then(|example| example.get("value"))
                .map(Node::to_json)
        })
        .or_else(|| parameter.get("schema").map(|schema| sampler.sample(schema)))
        .unwrap_or(Value::Null);
    match value {
        Value::String(text) => text,
        Value::Null => "probe".into(),
        other => other.to_string(),
    }
}

/// Headers the probe sets itself or that the user must give.
fn is_reserved_header(name: &str) -> bool {
    ["content-type", "content-length", "host", "authorization"]
        .iter()
        .any(|reserved| name.eq_ignore_ascii_case(reserved))
}

/// Sets the value at a JSON pointer, creating objects on the way.
pub fn set_pointer(target: &mut Value, pointer: &str, value: Value) -> Result<(), String> {
    let Some(path) = pointer.strip_prefix('/') else {
        return Err(format!(
            "`{pointer}` is not a JSON pointer (it must start with `/`)"
        ));
    };
    let mut current = target;
    let segments: Vec<String> = path
        .split('/')
        .map(|raw| raw.replace("~1", "/").replace("~0", "~"))
        .collect();
    for (index, segment) in segments.iter().enumerate() {
        let last = index + 1 == segments.len();
        if current.is_null() {
            *current = Value::Object(Default::default());
        }
        current = match current {
            Value::Object(map) if last => {
                map.insert(segment.clone(), value);
                return Ok(());
            }
            Value::Object(map) => map.entry(segment.clone()).or_insert(Value::Null),
            Value::Array(items) => {
                let at: usize = segment
                    .parse()
                    .map_err(|_| format!("`{segment}` indexes a list"))?;
                let slot = items
                    .get_mut(at)
                    .ok_or_else(|| format!("the list has no item {at}"))?;
                if last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            _ => {
                return Err(format!(
                    "`{segment}` is inside a value that is not an object"
                ));
            }
        };
    }
    Ok(())
}

fn remove_pointer(target: &mut Value, pointer: &str) -> Result<(), String> {
    let (parent, last) = pointer.rsplit_once('/').ok_or("not a JSON pointer")?;
    let holder = if parent.is_empty() {
        Some(target)
    } else {
        target.pointer_mut(parent)
    };
    if let Some(Value::Object(map)) = holder {
        map.remove(&last.replace("~1", "/").replace("~0", "~"));
    }
    Ok(())
}

/// Changes the first number, string or boolean leaf not under `keep`:
/// numbers +1, strings get a suffix, booleans flip. Returns its pointer.
fn change_leaf(value: &mut Value, pointer: &str, keep: &[&str]) -> Option<String> {
    if keep.contains(&pointer) {
        return None;
    }
    match value {
        Value::Number(number) => {
            *value = match number.as_i64() {
                Some(int) => Value::from(int.saturating_add(1)),
                None => Value::from(number.as_f64()? + 1.0),
            };
            Some(pointer.to_string())
        }
        Value::String(text) => {
            text.push('2');
            Some(pointer.to_string())
        }
        Value::Bool(flag) => {
            *flag = !*flag;
            Some(pointer.to_string())
        }
        Value::Object(map) => {
            // Numbers first: a changed amount is the classic conflict and
            // stays valid where a longer string might not.
            let mut order: Vec<String> = map.keys().cloned().collect();
            order.sort_by_key(|name| !map[name].is_number());
            order.into_iter().find_map(|name| {
                let child = format!("{pointer}/{}", name.replace('~', "~0").replace('/', "~1"));
                change_leaf(map.get_mut(&name)?, &child, keep)
            })
        }
        Value::Array(items) => items
            .iter_mut()
            .enumerate()
            .find_map(|(at, item)| change_leaf(item, &format!("{pointer}/{at}"), keep)),
        Value::Null => None,
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Every response `operation` declares, with the names of its headers.
fn declared_response_headers(
    workspace: &Workspace,
    operation: &Operation<'_>,
) -> Vec<(String, Vec<String>)> {
    let Some(responses) = operation
        .node
        .get("responses")
        .and_then(|node| workspace.deref(node))
        .and_then(|node| node.as_map())
    else {
        return Vec::new();
    };
    responses
        .iter()
        .map(|entry| {
            let names = workspace
                .deref(&entry.value)
                .and_then(|response| response.get("headers"))
                .and_then(|headers| workspace.deref(headers))
                .and_then(|headers| headers.as_map())
                .map(|headers| {
                    headers
                        .iter()
                        .map(|header| header.key.to_string())
                        .collect()
                })
                .unwrap_or_default();
            (entry.key.to_string(), names)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_values_with_placeholders_are_fresh_each_time() {
        assert_eq!(SetValue::parse("5").unwrap(), SetValue::Fixed(json!(5)));
        assert_eq!(
            SetValue::parse("ORD-1").unwrap(),
            SetValue::Fixed(json!("ORD-1"))
        );
        assert_eq!(
            SetValue::parse(r#"{"a":1}"#).unwrap(),
            SetValue::Fixed(json!({"a": 1}))
        );
        let mut rng = Rng::new();
        let seq = SetValue::parse("{seq}").unwrap();
        assert_eq!(seq.value(&mut rng, 7), json!(7));
        let order = SetValue::parse("ORD-{seq}").unwrap();
        assert_eq!(order.value(&mut rng, 2), json!("ORD-2"));
        let uuid = SetValue::parse("{uuid}").unwrap();
        let (a, b) = (uuid.value(&mut rng, 1), uuid.value(&mut rng, 1));
        assert_ne!(a, b);
        assert_eq!(a.as_str().unwrap().len(), 36);
        let ulid = SetValue::parse("r-{ulid}").unwrap().value(&mut rng, 1);
        assert!(ulid.as_str().unwrap().starts_with("r-") && ulid.as_str().unwrap().len() == 28);
        // Braces that are no placeholder stay text.
        assert_eq!(
            SetValue::parse("{ not one }").unwrap(),
            SetValue::Fixed(json!("{ not one }"))
        );
        assert!(
            SetValue::parse("{date}")
                .unwrap_err()
                .contains("use {uuid}, {ulid}, {seq}")
        );
    }

    #[test]
    fn pointers() {
        let mut body = json!({"a": {"b": 1}, "list": [1, 2]});
        set_pointer(&mut body, "/a/c", json!("x")).unwrap();
        set_pointer(&mut body, "/new/deep", json!(true)).unwrap();
        set_pointer(&mut body, "/list/1", json!(5)).unwrap();
        assert_eq!(
            body,
            json!({"a": {"b": 1, "c": "x"}, "new": {"deep": true}, "list": [1, 5]})
        );
        remove_pointer(&mut body, "/a/c").unwrap();
        assert!(body.pointer("/a/c").is_none());
        assert!(set_pointer(&mut body, "a", json!(1)).is_err());
    }

    #[test]
    fn conflicts_change_a_number_first_and_spare_key_fields() {
        let mut body = json!({"txn_id": "T", "amount": 5});
        assert_eq!(change_leaf(&mut body, "", &[]).as_deref(), Some("/amount"));
        assert_eq!(body["amount"], 6);
        let mut body = json!({"txn_id": "T", "note": "n"});
        assert_eq!(
            change_leaf(&mut body, "", &["/txn_id"]).as_deref(),
            Some("/note")
        );
        assert_eq!(change_leaf(&mut json!({"k": "x"}), "", &["/k"]), None);
    }

    #[test]
    fn encoding() {
        assert_eq!(percent_encode("a b/ç"), "a%20b%2F%C3%A7");
    }
}
