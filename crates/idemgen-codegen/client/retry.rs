//! How this client sends one request: for an operation with an
//! `x-idempotency` contract, the key and the retry loop; for any other,
//! one attempt (a few for a safe method). `idemgen gen --client` writes
//! this file as it is, the same for every spec; the numbers come from
//! `src/lib.rs`.
//!
//! What the loop does, and why:
//! - One key for every attempt. A key minted per attempt would make each
//!   retry a new request, and a retry of a payment a second payment. The
//!   key and the time of the first send can be made before anything is
//!   sent ([`Contract::prepare`]) and stored by the caller, so a crash, a
//!   dropped future or a timeout around the call never loses them.
//! - Nothing is sent once the key's window may have closed: an attempt
//!   starts no later than `window - server.max-processing` after the first
//!   send (the wall clock, across restarts), which is the bound the
//!   window was checked against ([`Contract::latest_start_ms`]). Within a
//!   call, no attempt starts after the schedule's last latest start or is
//!   waited for past its deadline (the monotonic clock).
//! - Each attempt gets `client.timeout`. After a failed attempt the wait
//!   is a random part of its slot (the `client.retries` delay plus
//!   `client.jitter`): sending earlier than the worst case is always
//!   inside the window, and clients that failed together do not retry
//!   together. A `Retry-After` is a floor: when it would push the next
//!   attempt past the schedule, the call stops instead.
//! - "In progress" answers are polled after their `Retry-After` (plus
//!   jitter) without using up an attempt: the first request is running,
//!   and its answer is what the call is waiting for.
//! - Retried: no answer, a dropped connection, 408, 425, a 429 that is not
//!   "in progress", 500, 502, 503, 504 (and other 5xx but 501 and 505).
//!   Not retried: the conflict (recognised by its problem type, not the
//!   status alone), any other 4xx, 501, 505.
//! - Every retry takes tokens from the client's [`RetryBudget`]; when it is
//!   empty, calls stop retrying, so an outage does not multiply the load.
//! - An operation without a contract is sent once (a safe method up to
//!   three times, on connection errors, timeouts and 503): without a key,
//!   the server cannot tell a retry from a new request.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};

/// The headers other implementations mark a replayed answer with, read
/// for an operation without a contract: `Idempotent-Replayed` (idemgen's
/// default), `Idempotency-Replayed`, and either with an `X-` prefix. An
/// operation with a contract reads the one its `responses.replayed-header`
/// names. The value is `true`, or `?1` (an RFC 9651 boolean).
pub const REPLAYED_HEADERS: [&str; 4] = [
    "idempotent-replayed",
    "idempotency-replayed",
    "x-idempotent-replayed",
    "x-idempotency-replayed",
];

/// The RFC 9457 problem type of a key used with a different request.
pub const KEY_REUSED_TYPE: &str = "urn:idemgen:problem:key-reused";

/// The RFC 9457 problem type of "a request with this key is in progress".
pub const IN_PROGRESS_TYPE: &str = "urn:idemgen:problem:request-in-progress";

/// How long an attempt of an operation without a contract may take, unless
/// [`Transport::timeout`] says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest response body read, unless [`Transport::max_response_bytes`]
/// says otherwise.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// The waits between the attempts of a safe method (GET, HEAD, OPTIONS)
/// without a contract, before jitter.
pub const SAFE_METHOD_RETRIES_MS: [u64; 2] = [200, 1_000];

/// The wait before polling an "in progress" answer that names none, when
/// the contract declares no `retry-after` either.
const DEFAULT_POLL_MS: u64 = 1_000;

/// One operation's `x-idempotency` contract, as the client follows it.
#[derive(Debug, Clone, Copy)]
pub struct Contract {
    /// Where the key travels (`key.in`) and under which name (`key.name`;
    /// a JSON pointer for `body`).
    pub key_in: KeyIn,
    pub key_name: &'static str,
    /// `key.format`, part by part.
    pub key_format: &'static [KeyPart],
    /// `key.max-length`.
    pub max_key_len: usize,
    /// `key.scope` values the request carries; one in the query or the
    /// body must be present.
    pub scope: &'static [Scope],
    /// `client.timeout`.
    pub timeout_ms: u64,
    /// `client.jitter`.
    pub jitter_ms: u64,
    /// The worst-case schedule, first attempt included.
    pub attempts: &'static [Attempt],
    /// `window`: how long the server keeps the key, from its first claim.
    pub window_ms: Option<u64>,
    /// `server.max-processing`: the server's lease on a request.
    pub max_processing_ms: Option<u64>,
    /// `responses.in-progress.status`.
    pub in_progress_status: u16,
    /// `responses.in-progress.retry-after`: the poll interval when an
    /// "in progress" answer names none.
    pub in_progress_retry_after_ms: Option<u64>,
    /// `responses.conflict`.
    pub conflict_status: u16,
    /// `responses.replayed-header`: the header that marks a replayed
    /// answer; `None` when the server's replays carry no mark.
    pub replayed_header: Option<&'static str>,
}

impl Contract {
    /// The latest an attempt may start, in milliseconds after the first
    /// send of its key: `window - server.max-processing`. A record claimed
    /// at the first send or later lives `window`; an attempt started by
    /// then is processed, at the latest, by the end of the window (the
    /// retry span the window was checked against ends there too). Without
    /// a window, the schedule's last latest start.
    pub fn latest_start_ms(&self) -> u64 {
        let last = self.attempts.last().map_or(0, |attempt| attempt.start_ms);
        match (self.window_ms, self.max_processing_ms) {
            (Some(window), Some(processing)) => window.saturating_sub(processing),
            _ => last,
        }
    }

    /// A key made from `key.format` and the first send fixed at now,
    /// before anything is sent: store both, then call with
    /// [`Key::Prepared`]. `body` is the request body as JSON, which
    /// `{field:…}` parts read.
    pub fn prepare(&self, body: Option<&serde_json::Value>) -> Result<Prepared, KeyError> {
        let key = mint(self.key_format, body).map_err(KeyError)?;
        check_length(&key, self.max_key_len).map_err(KeyError)?;
        Ok(Prepared {
            key,
            first_send_unix_ms: unix_ms(SystemTime::now()),
        })
    }
}

/// Where the key travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyIn {
    Header,
    Query,
    Body,
}

/// A part of the key format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPart {
    Literal(&'static str),
    /// A random UUID v4.
    Uuid,
    /// A ULID: the time in milliseconds and 80 random bits.
    Ulid,
    /// This many random bytes, base64url without padding.
    Random(usize),
    /// Today's date (UTC), `yyyyMMdd`.
    Date,
    /// The time in milliseconds since 1970.
    Timestamp,
    /// The time in nanoseconds since 1970, or one more than the last one
    /// this process made if that is larger: it only grows within a process.
    Seq,
    /// The request body's field at this JSON pointer.
    Field(&'static str),
}

/// A `key.scope` value the request must carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Header(&'static str),
    Query(&'static str),
    /// A JSON pointer into the body.
    Body(&'static str),
    /// The caller's verified identity: the credentials the client sends.
    Principal,
}

/// One attempt of the schedule; times in milliseconds from the first
/// attempt's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    /// The latest it starts.
    pub start_ms: u64,
    /// The latest the client waits for its answer.
    pub deadline_ms: u64,
    /// The `client.retries` delay after it; `None` for the last attempt.
    pub backoff_ms: Option<u64>,
}

/// A key and when it was first sent, at the earliest: what a caller stores
/// (beside the order it pays, say) before the first attempt, to resume
/// the request after a crash with [`Key::Prepared`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Prepared {
    pub key: String,
    /// Milliseconds since 1970 (the wall clock) when it was prepared, no
    /// later than its first send: the server's window for the key starts
    /// at or after it.
    pub first_send_unix_ms: u64,
}

impl Prepared {
    /// A key stored earlier, with the time of its first send.
    pub fn new(key: impl Into<String>, first_send_unix_ms: u64) -> Prepared {
        Prepared {
            key: key.into(),
            first_send_unix_ms,
        }
    }
}

/// Which key an idempotent request is sent with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// A new key, made from `key.format` when the call starts. It is in
    /// every outcome, but a call whose future is dropped loses it: prepare
    /// the key first where that matters.
    New,
    /// A key made with `prepare_…` (or stored from an earlier call's
    /// [`Call::key`]): the first call with it, or a resumption after a
    /// restart. Sent only while its window lasts; after that the call ends
    /// with [`Error::WindowClosed`].
    Prepared(Prepared),
}

/// A part of an operation's path: text, or a path parameter by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathPart {
    Literal(&'static str),
    Param(&'static str),
}

/// Where a parameter travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamIn {
    Path,
    Query,
    Header,
}

/// How a parameter's value is written, as OpenAPI's `style` names it
/// (the service reads each the same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Query: `id=1&id=2` exploded, `id=1,2` not; an exploded object's
    /// properties are parameters of their own (`gt=1&lt=9`).
    Form,
    /// Query arrays `id=1%202` (exploded: as `Form`).
    SpaceDelimited,
    /// Query arrays `id=1|2` (exploded: as `Form`).
    PipeDelimited,
    /// Query objects `created[gt]=1&created[lt]=9`, arrays `expand[]=a`,
    /// nested values `items[0][price]=p`.
    DeepObject,
    /// Path and header: `1,2`; objects `gt,1,lt,9`, exploded `gt=1,lt=9`.
    Simple,
    /// Path: `.1.2` exploded, `.1,2` not.
    Label,
    /// Path: `;id=1;id=2` exploded, `;id=1,2` not.
    Matrix,
}

/// One declared parameter: where it goes, its name on the wire and how
/// its value is written there (OpenAPI's defaults, `form` exploded in the
/// query and `simple` elsewhere, unless set with [`Param::style`] and
/// [`Param::explode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    pub location: ParamIn,
    pub name: &'static str,
    pub style: Style,
    pub explode: bool,
}

impl Param {
    const fn at(location: ParamIn, name: &'static str, style: Style) -> Param {
        Param {
            location,
            name,
            style,
            explode: matches!(style, Style::Form),
        }
    }

    pub const fn path(name: &'static str) -> Param {
        Param::at(ParamIn::Path, name, Style::Simple)
    }

    pub const fn query(name: &'static str) -> Param {
        Param::at(ParamIn::Query, name, Style::Form)
    }

    pub const fn header(name: &'static str) -> Param {
        Param::at(ParamIn::Header, name, Style::Simple)
    }

    /// OpenAPI's `style`; `explode` becomes that style's default (true
    /// for `form` only).
    pub const fn style(self, style: Style) -> Param {
        Param {
            style,
            explode: matches!(style, Style::Form),
            ..self
        }
    }

    /// OpenAPI's `explode`.
    pub const fn explode(self, explode: bool) -> Param {
        Param { explode, ..self }
    }

    /// The query pairs `value` is sent as.
    fn query_pairs(&self, value: &serde_json::Value) -> Vec<(String, String)> {
        let name = self.name.to_string();
        let delimiter = match self.style {
            Style::SpaceDelimited => " ",
            Style::PipeDelimited => "|",
            _ => ",",
        };
        match value {
            serde_json::Value::Array(items) => match (self.style, self.explode) {
                (Style::DeepObject, _) => deep_pairs(name, value),
                (_, true) => items
                    .iter()
                    .map(|item| (name.clone(), wire_text(item)))
                    .collect(),
                (_, false) => vec![(name, joined(items.iter(), delimiter))],
            },
            serde_json::Value::Object(members) => match (self.style, self.explode) {
                (Style::DeepObject, _) => deep_pairs(name, value),
                (Style::Form, true) => members
                    .iter()
                    .filter(|(_, value)| !value.is_null())
                    .map(|(property, value)| (property.clone(), wire_text(value)))
                    .collect(),
                _ => vec![(name, alternating(members, delimiter))],
            },
            scalar => vec![(name, wire_text(scalar))],
        }
    }

    /// The text `value` is sent as in the path (before percent-encoding)
    /// or in a header.
    fn text(&self, value: &serde_json::Value) -> String {
        let (prefix, separator) = match self.style {
            Style::Label => (".", if self.explode { "." } else { "," }),
            Style::Matrix => (";", if self.explode { ";" } else { "," }),
            _ => ("", ","),
        };
        let named = |text: String| match self.style {
            Style::Matrix => format!(";{}={text}", self.name),
            _ => format!("{prefix}{text}"),
        };
        match value {
            serde_json::Value::Array(items) if self.explode && self.style == Style::Matrix => items
                .iter()
                .map(|item| format!(";{}={}", self.name, wire_text(item)))
                .collect(),
            serde_json::Value::Array(items) => named(joined(items.iter(), separator)),
            serde_json::Value::Object(members) if self.explode => {
                let pairs: Vec<String> = members
                    .iter()
                    .filter(|(_, value)| !value.is_null())
                    .map(|(property, value)| format!("{property}={}", wire_text(value)))
                    .collect();
                format!("{prefix}{}", pairs.join(separator))
            }
            serde_json::Value::Object(members) => named(alternating(members, ",")),
            scalar => named(wire_text(scalar)),
        }
    }
}

/// Items' texts joined by `delimiter`.
fn joined<'a>(items: impl Iterator<Item = &'a serde_json::Value>, delimiter: &str) -> String {
    items.map(wire_text).collect::<Vec<_>>().join(delimiter)
}

/// An object's present members as alternating names and values
/// (`gt,1,lt,9`).
fn alternating(members: &serde_json::Map<String, serde_json::Value>, delimiter: &str) -> String {
    members
        .iter()
        .filter(|(_, value)| !value.is_null())
        .flat_map(|(property, value)| [property.clone(), wire_text(value)])
        .collect::<Vec<_>>()
        .join(delimiter)
}

/// What a call returns.
pub type Reply<R> = Result<Answer<R>, Error<R>>;

/// `value` as JSON, for a request body or the parameters.
pub fn to_json<T: serde::Serialize, R>(value: &T) -> Result<serde_json::Value, Error<R>> {
    serde_json::to_value(value).map_err(|error| Error::Request(error.to_string()))
}

/// [`Contract::prepare`] for a request with `body`, which `{field:…}`
/// parts of the key read.
pub fn prepare_from<T: serde::Serialize>(
    contract: &Contract,
    body: &T,
) -> Result<Prepared, KeyError> {
    let body = serde_json::to_value(body).map_err(|error| KeyError(error.to_string()))?;
    contract.prepare(Some(&body))
}

/// Why no key could be made: a `{field:…}` part whose field the body
/// lacks, a key longer than `key.max-length`, a body that does not
/// serialise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError(pub String);

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no idempotency key could be made: {}", self.0)
    }
}

impl std::error::Error for KeyError {}

/// A request as built from the operation's typed input.
#[derive(Debug)]
pub struct Request {
    pub method: reqwest::Method,
    pub url: reqwest::Url,
    pub headers: HeaderMap,
    pub body: Option<Body>,
}

impl Request {
    /// The request for `path` under `base`. `params` is the operation's
    /// parameter struct as JSON (its members are the wire names); each
    /// member `table` declares goes where it says.
    pub fn new(
        base: &reqwest::Url,
        method: reqwest::Method,
        path: &[PathPart],
        table: &[Param],
        params: Option<serde_json::Value>,
        body: Option<Body>,
    ) -> Result<Request, String> {
        let params = params.unwrap_or(serde_json::Value::Null);
        let value_of = |name: &str| params.get(name).filter(|value| !value.is_null());
        let mut rendered = base.path().trim_end_matches('/').to_string();
        for part in path {
            match part {
                PathPart::Literal(text) => rendered.push_str(text),
                PathPart::Param(name) => {
                    let Some(value) = value_of(name) else {
                        return Err(format!("the path parameter `{name}` has no value"));
                    };
                    let declared = table
                        .iter()
                        .find(|param| param.location == ParamIn::Path && param.name == *name)
                        .copied()
                        .unwrap_or(Param::path(name));
                    rendered.push_str(&percent_encode(&declared.text(value)));
                }
            }
        }
        let mut url = base.clone();
        url.set_path(&rendered);
        let mut headers = HeaderMap::new();
        for param in table {
            let Some(value) = value_of(param.name) else {
                continue;
            };
            match param.location {
                ParamIn::Path => {}
                ParamIn::Query => {
                    for (name, text) in param.query_pairs(value) {
                        url.query_pairs_mut().append_pair(&name, &text);
                    }
                }
                ParamIn::Header => {
                    let name = HeaderName::from_bytes(param.name.as_bytes())
                        .map_err(|_| format!("`{}` is not a valid header name", param.name))?;
                    let value = HeaderValue::from_str(&param.text(value)).map_err(|_| {
                        format!(
                            "the value of header `{}` is not valid in a header",
                            param.name
                        )
                    })?;
                    headers.insert(name, value);
                }
            }
        }
        Ok(Request {
            method,
            url,
            headers,
            body,
        })
    }
}

/// A `deepObject` value as bracketed pairs, nested as the service's form
/// reader takes them: `expand[]=a`, `created[gt]=1`,
/// `items[0][price]=p`, `tax[liability][type]=self`.
fn deep_pairs(name: String, value: &serde_json::Value) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    push_deep(&mut pairs, name, value);
    pairs
}

fn push_deep(pairs: &mut Vec<(String, String)>, name: String, value: &serde_json::Value) {
    match value {
        serde_json::Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                // A list of scalars is sent `[]`; an object in a list needs
                // its index, for its members to stay together.
                let item_name = match item {
                    serde_json::Value::Array(_) | serde_json::Value::Object(_) => {
                        format!("{name}[{index}]")
                    }
                    _ => format!("{name}[]"),
                };
                push_deep(pairs, item_name, item);
            }
        }
        serde_json::Value::Object(members) => {
            for (member, value) in members.iter().filter(|(_, value)| !value.is_null()) {
                push_deep(pairs, format!("{name}[{member}]"), value);
            }
        }
        scalar => pairs.push((name, wire_text(scalar))),
    }
}

/// A parameter value as text: strings as they are, anything else as JSON.
fn wire_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Everything but RFC 3986's unreserved characters, percent-encoded.
fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// A request body: JSON (a key may be read from it or put into it) or bytes.
#[derive(Debug)]
pub enum Body {
    Json {
        content_type: &'static str,
        value: serde_json::Value,
    },
    Bytes {
        content_type: &'static str,
        bytes: bytes::Bytes,
    },
    /// `multipart/form-data` with its boundary, the same on every attempt.
    Multipart {
        boundary: String,
        bytes: bytes::Bytes,
    },
}

/// How a part of a multipart body is written, as the service reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartIs {
    /// A string, number or boolean as its text.
    Text,
    /// A JSON document (`application/json`).
    Json,
    /// The models' file struct: its bytes, with its file name and content
    /// type.
    File,
    /// An object or list as text parts in brackets, one a leaf
    /// (`file_link_data[create]=true`, `expand[]=data`), as the spec's
    /// `style: deepObject` declares.
    Brackets,
    /// A list of scalars as one text part, its items joined by this
    /// delimiter (`explode: false`: `tags=a,b`; `pipeDelimited`: `a|b`).
    Joined(char),
}

/// A declared part of a multipart body; a property not declared is text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub name: &'static str,
    pub is: PartIs,
}

impl Part {
    pub const fn text(name: &'static str) -> Part {
        Part {
            name,
            is: PartIs::Text,
        }
    }

    pub const fn json(name: &'static str) -> Part {
        Part {
            name,
            is: PartIs::Json,
        }
    }

    pub const fn file(name: &'static str) -> Part {
        Part {
            name,
            is: PartIs::File,
        }
    }

    pub const fn joined(name: &'static str, delimiter: char) -> Part {
        Part {
            name,
            is: PartIs::Joined(delimiter),
        }
    }

    pub const fn brackets(name: &'static str) -> Part {
        Part {
            name,
            is: PartIs::Brackets,
        }
    }
}

/// `body` as a `multipart/form-data` body: one part per property (an
/// array's text or file items one part each, under the property's name),
/// absent and `null` properties left out.
pub fn multipart<T: serde::Serialize, R>(body: &T, parts: &[Part]) -> Result<Body, Error<R>> {
    let refused = |why: String| Error::Request(format!("the multipart body: {why}"));
    let serde_json::Value::Object(members) = to_json(body)? else {
        return Err(refused("the body is not an object".into()));
    };
    let mut random = [0u8; 16];
    getrandom::fill(&mut random).expect("the operating system's random source works");
    let boundary: String = random.iter().map(|byte| format!("{byte:02x}")).collect();
    let boundary = format!("idemgen-{boundary}");
    let mut bytes = Vec::new();
    for (name, value) in &members {
        let is = parts
            .iter()
            .find(|part| part.name == name)
            .map_or(PartIs::Text, |part| part.is);
        let items = match (is, value) {
            (_, serde_json::Value::Null) => continue,
            // No item: no part, as the service reads no part as no list.
            (PartIs::Joined(_), serde_json::Value::Array(items)) if items.is_empty() => continue,
            (PartIs::Joined(delimiter), serde_json::Value::Array(items)) => {
                let texts: Vec<String> = items.iter().map(wire_text).collect();
                let text = texts.join(&delimiter.to_string());
                write_part(&mut bytes, &boundary, name, None, None, text.as_bytes());
                continue;
            }
            // Each leaf a text part, as a `deepObject` parameter's pairs.
            (PartIs::Brackets, _) => {
                for (name, text) in deep_pairs(name.clone(), value) {
                    write_part(&mut bytes, &boundary, &name, None, None, text.as_bytes());
                }
                continue;
            }
            (PartIs::Text | PartIs::File, serde_json::Value::Array(items)) => {
                items.iter().collect()
            }
            _ => vec![value],
        };
        for item in items {
            let (file_name, content_type, content) = match is {
                PartIs::Brackets => unreachable!("written above"),
                // Not an array: its one value as text.
                PartIs::Joined(_) => (None, None, wire_text(item).into_bytes()),
                PartIs::File => {
                    file_part(item).map_err(|why| refused(format!("`{name}`: {why}")))?
                }
                PartIs::Json => (
                    None,
                    Some("application/json".to_string()),
                    item.to_string().into_bytes(),
                ),
                PartIs::Text => match item {
                    serde_json::Value::String(text) => (None, None, text.clone().into_bytes()),
                    serde_json::Value::Object(_) | serde_json::Value::Array(_) => (
                        None,
                        Some("application/json".to_string()),
                        item.to_string().into_bytes(),
                    ),
                    other => (None, None, other.to_string().into_bytes()),
                },
            };
            write_part(
                &mut bytes,
                &boundary,
                name,
                file_name.as_deref(),
                content_type.as_deref(),
                &content,
            );
        }
    }
    bytes.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    Ok(Body::Multipart {
        boundary,
        bytes: bytes.into(),
    })
}

/// One part of a multipart body, its boundary line first.
fn write_part(
    bytes: &mut Vec<u8>,
    boundary: &str,
    name: &str,
    file_name: Option<&str>,
    content_type: Option<&str>,
    content: &[u8],
) {
    bytes.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
    let mut disposition = format!("Content-Disposition: form-data; name=\"{}\"", quoted(name));
    if let Some(file_name) = file_name {
        disposition.push_str(&format!("; filename=\"{}\"", quoted(file_name)));
    }
    bytes.extend_from_slice(disposition.as_bytes());
    bytes.extend_from_slice(b"\r\n");
    if let Some(content_type) = content_type {
        bytes.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
    }
    bytes.extend_from_slice(b"\r\n");
    bytes.extend_from_slice(content);
    bytes.extend_from_slice(b"\r\n");
}

/// A form as `serde_qs` wrote it from the typed body, each field of
/// `fields` (whose `encoding` declares JSON) sent instead as the JSON text
/// of its value in `body` (`details=%7B%22order%22%3A7%7D`; a required
/// nullable field without a value as `details=null`); a field the body
/// leaves out stays out.
pub fn json_form_fields(form: &str, body: &serde_json::Value, fields: &[&str]) -> String {
    let of_field = |pair: &str| {
        let name = decoded(pair.split_once('=').map_or(pair, |(name, _)| name));
        fields.iter().any(|field| {
            name.strip_prefix(field)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('['))
        })
    };
    let mut pairs: Vec<String> = form
        .split('&')
        .filter(|pair| !pair.is_empty() && !of_field(pair))
        .map(str::to_string)
        .collect();
    for field in fields {
        if let Some(value) = body.get(*field) {
            let text = value.to_string();
            pairs.push(format!(
                "{}={}",
                percent_encode(field),
                percent_encode(&text)
            ));
        }
    }
    pairs.join("&")
}

/// A form as `serde_qs` wrote it, with each list of `joined` (its name and
/// delimiter) sent as one text, its items joined (OpenAPI's `explode:
/// false`: `tags=a%2Cb`; `spaceDelimited`: `tags=a+b`; `pipeDelimited`:
/// `tags=a%7Cb`) where `serde_qs` repeated its key (`tags=a&tags=b`) or
/// indexed it (`tags[0]=a`). The delimiter is encoded as the query's is;
/// the service splits the decoded text, so an item holding the delimiter
/// is read as two: a joined list cannot say otherwise.
pub fn join_form_lists(form: &str, joined: &[(&str, char)]) -> String {
    // Each pair as written, or a list's items gathered at its first pair
    // (under its name as written, without an index), by the list's place
    // in `joined`.
    let mut pairs: Vec<(&str, Vec<&str>, Option<usize>)> = Vec::new();
    for pair in form.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let list = joined
            .iter()
            .enumerate()
            .find_map(|(at, (list, _))| Some((at, list_name(name, list)?)));
        match list {
            Some((at, name)) => match pairs.iter_mut().find(|(_, _, list)| *list == Some(at)) {
                Some((_, items, _)) => items.push(value),
                None => pairs.push((name, vec![value], Some(at))),
            },
            None => pairs.push((pair, Vec::new(), None)),
        }
    }
    let written: Vec<String> = pairs
        .into_iter()
        .map(|(name, items, list)| match list {
            Some(at) => {
                let delimiter = match joined[at].1 {
                    ' ' => "+",
                    '|' => "%7C",
                    _ => "%2C",
                };
                format!("{name}={}", items.join(delimiter))
            }
            None => name.to_string(),
        })
        .collect();
    written.join("&")
}

/// The name of the list `list` in `name`, a form name as `serde_qs` writes
/// it (encoded): `name` itself, or without the index of one of its items
/// (`list[0]`, `list%5B0%5D`, `list[]`); `None` for any other name.
fn list_name<'a>(name: &'a str, list: &str) -> Option<&'a str> {
    let indexed = |open: &str, close: &str| {
        let inner = name.strip_suffix(close)?;
        let at = inner.rfind(open)?;
        let index = &inner[at + open.len()..];
        index
            .bytes()
            .all(|byte| byte.is_ascii_digit())
            .then(|| &name[..at])
    };
    let base = indexed("[", "]")
        .or_else(|| indexed("%5B", "%5D"))
        .unwrap_or(name);
    (decoded(base) == list).then_some(base)
}

/// Form text decoded: `+` is a space, `%XX` its byte.
fn decoded(text: &str) -> String {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        let escaped = after
            .get(..2)
            .filter(|_| byte == b'%')
            .and_then(|digits| std::str::from_utf8(digits).ok())
            .and_then(|digits| u8::from_str_radix(digits, 16).ok());
        match escaped {
            Some(escaped) => {
                bytes.push(escaped);
                rest = &after[2..];
            }
            None => {
                bytes.push(if byte == b'+' { b' ' } else { byte });
                rest = after;
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A file struct's file name, content type and bytes.
type FileParts = (Option<String>, Option<String>, Vec<u8>);

fn file_part(value: &serde_json::Value) -> Result<FileParts, String> {
    let text = |field: &str| {
        value
            .get(field)
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    let bytes = value
        .get("bytes")
        .and_then(serde_json::Value::as_array)
        .ok_or("a file without `bytes`")?
        .iter()
        .map(|byte| byte.as_u64().and_then(|byte| u8::try_from(byte).ok()))
        .collect::<Option<Vec<u8>>>()
        .ok_or("`bytes` that are not bytes")?;
    let content_type = text("content_type").or_else(|| Some("application/octet-stream".into()));
    Ok((text("file_name"), content_type, bytes))
}

/// A name in a `Content-Disposition`, its quote and line breaks
/// percent-encoded as browsers write them.
fn quoted(name: &str) -> String {
    name.replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// How one attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// An answer the loop stops at.
    Answered { status: u16 },
    /// The contract's "in progress": the first request is still running.
    /// Polled again without using up an attempt.
    InProgress { retry_after: Option<Duration> },
    /// An answer worth another attempt: 408, 425, 429, or a 5xx but 501
    /// and 505.
    Retryable {
        status: u16,
        retry_after: Option<Duration>,
    },
    /// No answer within the attempt's time: the request may have arrived.
    TimedOut,
    /// No connection was made (refused, a name that does not resolve, a
    /// failed TLS handshake): nothing of the request left the client.
    NotSent(String),
    /// The connection failed after it was made, before a whole answer
    /// came: the request may have arrived.
    Connection(String),
}

impl Outcome {
    /// Whether the server may have received the request.
    pub fn maybe_sent(&self) -> bool {
        !matches!(self, Outcome::NotSent(_))
    }

    /// A TLS handshake that failed (a certificate refused, no protocol in
    /// common): another attempt would fail the same way.
    fn is_tls_failure(&self) -> bool {
        let Outcome::NotSent(why) = self else {
            return false;
        };
        let why = why.to_ascii_lowercase();
        ["certificate", "tls", "handshake", "ssl"]
            .iter()
            .any(|word| why.contains(word))
    }
}

/// One attempt made: when, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tried {
    /// From the start of this call (the monotonic clock).
    pub at: Duration,
    /// Milliseconds since 1970 (the wall clock) when it started.
    pub unix_ms: u64,
    pub outcome: Outcome,
}

/// What a call did, in every outcome: its key and every attempt.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Call {
    /// The key and its first send; `None` for an operation without a
    /// contract.
    pub key: Option<Prepared>,
    /// Every attempt of this call, in order.
    pub attempts: Vec<Tried>,
}

impl Call {
    /// Whether any attempt of this call may have reached the server (an
    /// earlier call with the same key may have, too).
    pub fn maybe_carried_out(&self) -> bool {
        self.attempts.iter().any(|tried| tried.outcome.maybe_sent())
    }
}

/// A successful (2xx or 3xx) answer.
#[derive(Debug, Clone)]
pub struct Answer<R> {
    /// The typed response.
    pub response: R,
    /// Every response header.
    pub headers: HeaderMap,
    /// Whether the server replayed the answer it stored for the first
    /// request with this key instead of running the operation now: the
    /// contract's `responses.replayed-header` says so (always `false` when
    /// the contract declares replays unmarked; one of [`REPLAYED_HEADERS`]
    /// for an operation without a contract).
    pub replayed: bool,
    /// The key and every attempt.
    pub call: Call,
}

impl<R> Answer<R> {
    /// The key sent; `None` for an operation without a contract.
    pub fn key(&self) -> Option<&str> {
        self.call.key.as_ref().map(|prepared| prepared.key.as_str())
    }
}

/// An answer as it came, for the errors that could not type it. Its
/// `Debug` shows the body as text (an RFC 9457 problem as its fields), not
/// as bytes.
#[derive(Clone)]
pub struct RawAnswer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// The fields of an RFC 9457 problem (`application/problem+json`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Problem {
    pub problem_type: Option<String>,
    pub title: Option<String>,
    pub status: Option<u16>,
    pub detail: Option<String>,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(title) = &self.title {
            parts.push(title.clone());
        }
        if let Some(detail) = &self.detail {
            parts.push(detail.clone());
        }
        if let Some(problem_type) = &self.problem_type {
            parts.push(format!("type {problem_type}"));
        }
        f.write_str(&parts.join(": "))
    }
}

/// Most characters of a body an error's text shows.
const SHOWN_BODY_CHARS: usize = 500;

impl RawAnswer {
    /// The body read as an RFC 9457 problem, when its `Content-Type` says
    /// it is one (`application/problem+json`) and it parses.
    pub fn problem(&self) -> Option<Problem> {
        let content_type = self.headers.get(CONTENT_TYPE)?.to_str().ok()?;
        let media = content_type.split(';').next()?.trim();
        if !media.eq_ignore_ascii_case("application/problem+json") {
            return None;
        }
        let value: serde_json::Value = serde_json::from_slice(&self.body).ok()?;
        let text = |name: &str| value.get(name)?.as_str().map(str::to_string);
        Some(Problem {
            problem_type: text("type"),
            title: text("title"),
            status: value
                .get("status")
                .and_then(serde_json::Value::as_u64)
                .and_then(|status| u16::try_from(status).ok()),
            detail: text("detail"),
        })
    }

    /// The body as text: UTF-8 as it is (cut at
    /// [`SHOWN_BODY_CHARS`] characters, `…` marking the cut), else its size.
    pub fn text(&self) -> String {
        match std::str::from_utf8(&self.body) {
            Ok(text) if text.chars().count() > SHOWN_BODY_CHARS => {
                let mut cut: String = text.chars().take(SHOWN_BODY_CHARS).collect();
                cut.push('…');
                cut
            }
            Ok(text) => text.to_string(),
            Err(_) => format!("<{} bytes, not UTF-8>", self.body.len()),
        }
    }

    /// The status with its reason phrase: `401 Unauthorized`.
    fn status_line(&self) -> String {
        match reqwest::StatusCode::from_u16(self.status)
            .ok()
            .and_then(|status| status.canonical_reason())
        {
            Some(reason) => format!("{} {reason}", self.status),
            None => self.status.to_string(),
        }
    }
}

impl fmt::Debug for RawAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("RawAnswer");
        debug
            .field("status", &self.status)
            .field("headers", &self.headers);
        match self.problem() {
            Some(problem) => debug.field("problem", &problem),
            None => debug.field("body", &self.text()),
        };
        debug.finish()
    }
}

/// Why a call stopped retrying without an answer to stop at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaveUp {
    /// Every attempt the schedule allows was made, or the next could not
    /// start in time (a `Retry-After` past the schedule).
    Schedule,
    /// The call's deadline ([`Transport::deadline`]) passed.
    Deadline,
    /// The client's retry budget is spent: the server has failed many
    /// requests lately.
    Budget,
    /// The TLS handshake failed: a certificate the client refuses, or no
    /// protocol in common. Retrying would fail the same way; nothing was
    /// sent.
    Tls,
}

/// Why a call ended without a successful answer. Each but `Request`
/// carries the [`Call`]: the key to store and every attempt.
#[derive(Debug)]
pub enum Error<R> {
    /// The key was used before with a different request (the conflict
    /// status with the `key-reused` problem type); that request's result
    /// stands and nothing was changed. Use a new key for a new request.
    Conflict { response: R, call: Call },
    /// The server refused the request (a 4xx other than the conflict and
    /// "in progress", a 501 or a 505): sending it again would be refused
    /// again.
    Refused { response: R, call: Call },
    /// The call stopped without an answer to stop at (in progress, a 5xx,
    /// no answer); [`Call::maybe_carried_out`] says whether the request
    /// may have run. Sending it again with `Key::Prepared(call.key)` is
    /// safe: it is refused locally once the window closes.
    GaveUp { why: GaveUp, call: Call },
    /// The key's window has closed (or would before another attempt could
    /// be processed): nothing more is sent with it. Whether the request
    /// ran must be reconciled (look the payment up), not retried: with a
    /// new key it could run twice.
    WindowClosed { call: Call },
    /// A successful (2xx) answer the client could not read: its body does
    /// not fit the spec or is over the size limit. The operation ran: do
    /// not send it again with a new key.
    Unreadable {
        answer: Box<RawAnswer>,
        why: String,
        call: Call,
    },
    /// An answer whose status or body the spec does not declare.
    Undeclared {
        answer: Box<RawAnswer>,
        why: String,
        call: Call,
    },
    /// The request could not be built: no key could be made from it, a
    /// value is not valid in a header, the body does not serialise.
    /// Nothing was sent.
    Request(String),
}

impl<R> Error<R> {
    /// What the call did: its key (to store for a later retry) and its
    /// attempts; `None` when nothing was sent.
    pub fn call(&self) -> Option<&Call> {
        match self {
            Error::Conflict { call, .. }
            | Error::Refused { call, .. }
            | Error::GaveUp { call, .. }
            | Error::WindowClosed { call }
            | Error::Unreadable { call, .. }
            | Error::Undeclared { call, .. } => Some(call),
            Error::Request(_) => None,
        }
    }

    /// The key the request was sent with.
    pub fn key(&self) -> Option<&str> {
        self.call()?
            .key
            .as_ref()
            .map(|prepared| prepared.key.as_str())
    }
}

impl<R: fmt::Debug> fmt::Display for Error<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Conflict { response, call } => write!(
                f,
                "key {} was already used with a different request (that request's result stands): {response:?}",
                call.key
                    .as_ref()
                    .map_or("", |prepared| prepared.key.as_str())
            ),
            Error::Refused { response, .. } => {
                write!(f, "the server refused the request: {response:?}")
            }
            Error::GaveUp { why, call } => {
                let why = match why {
                    GaveUp::Schedule => "the retry schedule is spent",
                    GaveUp::Deadline => "the call's deadline passed",
                    GaveUp::Budget => "the client's retry budget is spent",
                    GaveUp::Tls => "the TLS handshake failed, and would again",
                };
                write!(
                    f,
                    "no answer after {} attempt(s): {why}",
                    call.attempts.len()
                )?;
                if let Some(last) = call.attempts.last() {
                    write!(f, "; the last: {:?}", last.outcome)?;
                }
                if call.maybe_carried_out() {
                    write!(f, "; the request may have been carried out")
                } else {
                    write!(f, "; the request was never sent")
                }
            }
            Error::WindowClosed { call } => write!(
                f,
                "the idempotency window of key {} has closed: find out whether the request ran and reconcile; do not retry it",
                call.key
                    .as_ref()
                    .map_or("", |prepared| prepared.key.as_str())
            ),
            Error::Unreadable { answer, why, .. } => write!(
                f,
                "the operation ran (status {}), but its answer could not be read: {why}",
                answer.status
            ),
            Error::Undeclared { answer, why, .. } => {
                write!(
                    f,
                    "the server answered {}, which the spec does not declare ({why})",
                    answer.status_line()
                )?;
                match answer.problem() {
                    Some(problem) => write!(f, ": {problem}"),
                    None if answer.body.is_empty() => write!(f, ", with no body"),
                    None => write!(f, ": {}", answer.text()),
                }
            }
            Error::Request(why) => write!(f, "the request was not sent: {why}"),
        }
    }
}

impl<R: fmt::Debug> std::error::Error for Error<R> {}

/// Turns a status, headers and body into the operation's response enum.
pub type Decode<R> = fn(u16, &HeaderMap, &[u8]) -> Result<R, String>;

/// Headers made for each attempt from what it sends (method, URL, body):
/// a request signature with a fresh timestamp, such as an HMAC of the body.
pub type Sign = Arc<dyn Fn(&reqwest::Method, &reqwest::Url, &[u8]) -> HeaderMap + Send + Sync>;

/// A token bucket shared by every call of a client (the AWS SDKs'
/// standard retry mode): a retry takes 5 tokens, a retry after a timeout
/// 10, an answer gives back what its call took (1 if it took none). When
/// too few are left, calls stop retrying until answers refill it.
#[derive(Debug)]
pub struct RetryBudget {
    capacity: u64,
    tokens: AtomicU64,
}

impl RetryBudget {
    /// The AWS SDKs' default: 500 tokens, 100 retries in a row.
    pub const DEFAULT_CAPACITY: u64 = 500;
    const RETRY_COST: u64 = 5;
    const TIMEOUT_COST: u64 = 10;

    /// A full bucket of `capacity` tokens.
    pub fn new(capacity: u64) -> RetryBudget {
        RetryBudget {
            capacity,
            tokens: AtomicU64::new(capacity),
        }
    }

    /// The tokens left.
    pub fn tokens(&self) -> u64 {
        self.tokens.load(Ordering::Relaxed)
    }

    /// Takes the cost of a retry after `outcome`; false when too few are left.
    fn take(&self, outcome: &Outcome) -> Option<u64> {
        let cost = match outcome {
            Outcome::TimedOut => Self::TIMEOUT_COST,
            _ => Self::RETRY_COST,
        };
        self.tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |tokens| {
                tokens.checked_sub(cost)
            })
            .ok()
            .map(|_| cost)
    }

    /// Gives back `tokens` after an answer, up to the capacity.
    fn refund(&self, tokens: u64) {
        let _ = self
            .tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                Some(held.saturating_add(tokens.max(1)).min(self.capacity))
            });
    }
}

impl Default for RetryBudget {
    fn default() -> RetryBudget {
        RetryBudget::new(RetryBudget::DEFAULT_CAPACITY)
    }
}

/// What requests go through, and the limits every call of a client shares.
#[derive(Clone)]
pub struct Transport {
    pub http: reqwest::Client,
    pub sign: Option<Sign>,
    pub budget: Arc<RetryBudget>,
    /// The time of an attempt of an operation without a contract.
    pub timeout: Duration,
    /// The longest a call may take, attempts and waits included; `None`:
    /// only the schedule bounds it.
    pub deadline: Option<Duration>,
    /// The largest response body read; a larger one ends the call.
    pub max_response_bytes: usize,
}

impl Transport {
    /// Sends through `http`, with the default limits.
    pub fn new(http: reqwest::Client) -> Transport {
        Transport {
            http,
            sign: None,
            budget: Arc::new(RetryBudget::default()),
            timeout: DEFAULT_TIMEOUT,
            deadline: None,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("http", &self.http)
            .field("sign", &self.sign.as_ref().map(|_| "…"))
            .field("budget", &self.budget)
            .field("timeout", &self.timeout)
            .field("deadline", &self.deadline)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

/// A `reqwest::Client` that follows no redirect: a 303 would turn a POST
/// into a GET still carrying its key, and a 307 would send a signed body
/// to another host. A 3xx is returned as the answer.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_default()
}

/// The attempts a call may make, and when each may start at the latest.
struct Plan {
    attempts: &'static [Attempt],
    timeout: Duration,
    jitter_ms: u64,
    /// Which answers are retried: all of a contract's, or a safe method's.
    retries: Retries,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Retries {
    /// An idempotent operation: its contract's statuses.
    Contract,
    /// A safe method without a contract: connection errors, timeouts, 503.
    Safe,
    /// An unsafe method without a contract: sent once.
    Never,
}

/// The schedule of a safe method without a contract (its latest starts
/// assume every attempt took [`DEFAULT_TIMEOUT`]; the transport's timeout
/// is applied to each).
const SAFE_METHOD_SCHEDULE: [Attempt; 3] = [
    Attempt {
        start_ms: 0,
        deadline_ms: u64::MAX,
        backoff_ms: Some(SAFE_METHOD_RETRIES_MS[0]),
    },
    Attempt {
        start_ms: u64::MAX,
        deadline_ms: u64::MAX,
        backoff_ms: Some(SAFE_METHOD_RETRIES_MS[1]),
    },
    Attempt {
        start_ms: u64::MAX,
        deadline_ms: u64::MAX,
        backoff_ms: None,
    },
];

const ONCE: [Attempt; 1] = [Attempt {
    start_ms: 0,
    deadline_ms: u64::MAX,
    backoff_ms: None,
}];

impl Plan {
    fn of(contract: Option<&Contract>, method: &reqwest::Method, transport: &Transport) -> Plan {
        match contract {
            Some(contract) => Plan {
                attempts: contract.attempts,
                timeout: Duration::from_millis(contract.timeout_ms),
                jitter_ms: contract.jitter_ms,
                retries: Retries::Contract,
            },
            None if matches!(
                *method,
                reqwest::Method::GET | reqwest::Method::HEAD | reqwest::Method::OPTIONS
            ) =>
            {
                Plan {
                    attempts: &SAFE_METHOD_SCHEDULE,
                    timeout: transport.timeout,
                    jitter_ms: 0,
                    retries: Retries::Safe,
                }
            }
            None => Plan {
                attempts: &ONCE,
                timeout: transport.timeout,
                jitter_ms: 0,
                retries: Retries::Never,
            },
        }
    }

    /// The latest any attempt of the call starts, from its start.
    fn last_start(&self) -> Duration {
        Duration::from_millis(self.attempts.last().map_or(0, |attempt| attempt.start_ms))
    }

    /// When the client stops waiting for any attempt, from the call's start.
    fn last_deadline(&self) -> Duration {
        Duration::from_millis(
            self.attempts
                .last()
                .map_or(0, |attempt| attempt.deadline_ms),
        )
    }
}

/// Sends `request`: under `contract` with its key and retries, else once
/// (a safe method up to three times).
pub async fn send<R>(
    transport: &Transport,
    mut request: Request,
    contract: Option<&Contract>,
    key: Key,
    decode: Decode<R>,
) -> Reply<R> {
    let started = Instant::now();
    let plan = Plan::of(contract, &request.method, transport);
    let mut call = Call {
        key: match contract {
            Some(contract) => Some(place_key(&mut request, contract, key)?),
            None => None,
        },
        attempts: Vec::with_capacity(plan.attempts.len()),
    };
    // How long from now the key's window allows an attempt to start.
    let window_left = match (contract, &call.key) {
        (Some(contract), Some(prepared)) => {
            let latest = prepared
                .first_send_unix_ms
                .saturating_add(contract.latest_start_ms());
            let now = unix_ms(SystemTime::now());
            if now > latest {
                return Err(Error::WindowClosed { call });
            }
            Some(Duration::from_millis(latest - now))
        }
        _ => None,
    };
    let (content_type, body) = match request.body.take() {
        None => (None, None),
        Some(Body::Json {
            content_type,
            value,
        }) => (
            Some(content_type.to_string()),
            Some(bytes::Bytes::from(
                serde_json::to_vec(&value).map_err(|error| Error::Request(error.to_string()))?,
            )),
        ),
        Some(Body::Bytes {
            content_type,
            bytes,
        }) => (Some(content_type.to_string()), Some(bytes)),
        Some(Body::Multipart { boundary, bytes }) => (
            Some(format!("multipart/form-data; boundary={boundary}")),
            Some(bytes),
        ),
    };
    let mut used = 0usize;
    let mut spent_tokens = 0u64;
    loop {
        let elapsed = started.elapsed();
        let time = [
            Some(plan.timeout),
            Some(plan.last_deadline().saturating_sub(elapsed)),
            transport
                .deadline
                .map(|deadline| deadline.saturating_sub(elapsed)),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(plan.timeout);
        let (at, sent_unix_ms) = (started.elapsed(), unix_ms(SystemTime::now()));
        let result = attempt(
            transport,
            &request,
            content_type.as_deref(),
            body.clone(),
            time,
        )
        .await;
        let (outcome, raw) = classify(result, contract, plan.retries);
        call.attempts.push(Tried {
            at,
            unix_ms: sent_unix_ms,
            outcome: outcome.clone(),
        });
        if let Some(raw) = raw {
            transport.budget.refund(spent_tokens);
            return finish(raw, call, contract, decode);
        }
        // The wait before the next attempt, and whether it uses one up.
        let wait = match &outcome {
            Outcome::InProgress { retry_after } => {
                let floor = retry_after.unwrap_or(Duration::from_millis(
                    contract
                        .and_then(|contract| contract.in_progress_retry_after_ms)
                        .unwrap_or(DEFAULT_POLL_MS),
                ));
                Wait::AtLeast(floor, jitter(floor / 2))
            }
            failed => {
                if failed.is_tls_failure() {
                    return Err(Error::GaveUp {
                        why: GaveUp::Tls,
                        call,
                    });
                }
                used += 1;
                if used >= plan.attempts.len() {
                    return Err(Error::GaveUp {
                        why: GaveUp::Schedule,
                        call,
                    });
                }
                match transport.budget.take(failed) {
                    Some(cost) => spent_tokens += cost,
                    None => {
                        return Err(Error::GaveUp {
                            why: GaveUp::Budget,
                            call,
                        });
                    }
                }
                let previous = &plan.attempts[used - 1];
                let slot = Duration::from_millis(
                    previous
                        .backoff_ms
                        .unwrap_or(0)
                        .saturating_add(plan.jitter_ms),
                );
                match failed {
                    Outcome::Retryable {
                        retry_after: Some(retry_after),
                        ..
                    } => Wait::AtLeast(*retry_after, jitter(*retry_after / 2)),
                    _ => Wait::AtMost(jitter(slot)),
                }
            }
        };
        // The latest the next attempt may start, from the call's start: the
        // schedule's last start, or the end of the key's window if sooner.
        let (latest, window_ends_first) = match window_left {
            Some(left) if left < plan.last_start() => (left, true),
            _ => (plan.last_start(), false),
        };
        let stop = |call: Call| match window_ends_first {
            true => Error::WindowClosed { call },
            false => Error::GaveUp {
                why: GaveUp::Schedule,
                call,
            },
        };
        let elapsed = started.elapsed();
        let sleep = match wait {
            // A `Retry-After` is a floor: never send earlier.
            Wait::AtLeast(floor, _) if elapsed + floor > latest => {
                return Err(stop(call));
            }
            Wait::AtLeast(floor, extra) => (floor + extra).min(latest.saturating_sub(elapsed)),
            Wait::AtMost(most) => most.min(latest.saturating_sub(elapsed)),
        };
        if let Some(deadline) = transport.deadline
            && elapsed + sleep >= deadline
        {
            return Err(Error::GaveUp {
                why: GaveUp::Deadline,
                call,
            });
        }
        tokio::time::sleep(sleep).await;
        // The clock after the sleep, whatever was planned: a suspended
        // process may wake up late.
        if started.elapsed() > latest {
            return Err(stop(call));
        }
    }
}

/// How long to wait before the next attempt.
enum Wait {
    /// A `Retry-After` (never send earlier), and jitter on top of it.
    AtLeast(Duration, Duration),
    /// A backoff: any part of it, cut at the schedule's latest start.
    AtMost(Duration),
}

/// A whole answer: status, headers and body.
struct Raw {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
    /// Why the body is not whole (it was over the size limit).
    cut: Option<String>,
}

/// One attempt, given `time` for the whole answer, body included.
async fn attempt(
    transport: &Transport,
    request: &Request,
    content_type: Option<&str>,
    body: Option<bytes::Bytes>,
    time: Duration,
) -> Result<Raw, Outcome> {
    let mut builder = transport
        .http
        .request(request.method.clone(), request.url.clone())
        .headers(request.headers.clone());
    if let Some(sign) = &transport.sign {
        builder = builder.headers(sign(
            &request.method,
            &request.url,
            body.as_deref().unwrap_or_default(),
        ));
    }
    if let (Some(content_type), Some(body)) = (content_type, body) {
        builder = builder.header(CONTENT_TYPE, content_type).body(body);
    }
    let limit = transport.max_response_bytes;
    let exchange = async {
        let mut response = builder.send().await?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        let mut cut = None;
        while let Some(chunk) = response.chunk().await? {
            if body.len() + chunk.len() > limit {
                cut = Some(format!("the body is over {limit} bytes"));
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok::<Raw, reqwest::Error>(Raw {
            status,
            headers,
            body,
            cut,
        })
    };
    tokio::time::timeout(time, exchange)
        .await
        .map_err(|_| Outcome::TimedOut)?
        .map_err(|error| {
            if error.is_connect() {
                Outcome::NotSent(error_chain(&error))
            } else if error.is_timeout() {
                Outcome::TimedOut
            } else {
                Outcome::Connection(error_chain(&error))
            }
        })
}

/// The `type` of an RFC 9457 problem body, if the body is one.
fn problem_type(raw: &Raw) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(&raw.body).ok()?;
    value.get("type")?.as_str().map(str::to_string)
}

/// How an attempt ended, and the answer when the loop stops at it.
fn classify(
    result: Result<Raw, Outcome>,
    contract: Option<&Contract>,
    retries: Retries,
) -> (Outcome, Option<Raw>) {
    let raw = match result {
        Ok(raw) => raw,
        Err(outcome) => return (outcome, None),
    };
    let status = raw.status;
    let retry_after = raw.headers.get(RETRY_AFTER).and_then(retry_after);
    let kind = problem_type(&raw);
    if let Some(contract) = contract
        && status == contract.in_progress_status
    {
        // A 429 or 503 from a gateway says "busy", not "in progress".
        let in_progress = match kind.as_deref() {
            Some(kind) => kind == IN_PROGRESS_TYPE,
            None => !matches!(status, 429 | 503),
        };
        if in_progress {
            return (Outcome::InProgress { retry_after }, None);
        }
    }
    let retryable = match retries {
        Retries::Contract => {
            matches!(status, 408 | 425 | 429 | 500 | 502..=504 | 506..=599)
        }
        Retries::Safe => status == 503,
        Retries::Never => false,
    };
    if retryable {
        return (
            Outcome::Retryable {
                status,
                retry_after,
            },
            None,
        );
    }
    (Outcome::Answered { status }, Some(raw))
}

/// The answer the loop stopped at, typed.
fn finish<R>(
    raw: Raw,
    call: Call,
    contract: Option<&Contract>,
    decode: Decode<R>,
) -> Result<Answer<R>, Error<R>> {
    let success = (200..300).contains(&raw.status);
    let decoded = match &raw.cut {
        Some(why) => Err(why.clone()),
        None => decode(raw.status, &raw.headers, &raw.body),
    };
    let response = match decoded {
        Ok(response) => response,
        Err(why) => {
            let answer = Box::new(RawAnswer {
                status: raw.status,
                headers: raw.headers,
                body: raw.body,
            });
            return Err(match success {
                true => Error::Unreadable { answer, why, call },
                false => Error::Undeclared { answer, why, call },
            });
        }
    };
    let conflict = contract.is_some_and(|contract| {
        raw.status == contract.conflict_status
            && problem_type(&raw).as_deref() == Some(KEY_REUSED_TYPE)
    });
    if conflict {
        return Err(Error::Conflict { response, call });
    }
    if (400..=599).contains(&raw.status) {
        return Err(Error::Refused { response, call });
    }
    Ok(Answer {
        replayed: is_replayed(&raw.headers, contract),
        response,
        headers: raw.headers,
        call,
    })
}

/// Whether `headers` mark an answer replayed, as `contract` names the mark.
fn is_replayed(headers: &HeaderMap, contract: Option<&Contract>) -> bool {
    let names: &[&str] = match contract {
        Some(contract) => contract.replayed_header.as_slice(),
        None => &REPLAYED_HEADERS,
    };
    names.iter().any(|name| {
        headers.get(*name).is_some_and(|value| {
            value.as_bytes().eq_ignore_ascii_case(b"true") || value.as_bytes() == b"?1"
        })
    })
}

/// `Retry-After` as delta-seconds or an HTTP-date.
fn retry_after(value: &HeaderValue) -> Option<Duration> {
    let text = value.to_str().ok()?.trim();
    if let Ok(seconds) = text.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = httpdate::parse_http_date(text).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

fn check_length(key: &str, max: usize) -> Result<(), String> {
    if key.is_empty() || key.len() > max {
        return Err(format!(
            "the key must be 1 to {max} bytes long, not {}",
            key.len()
        ));
    }
    Ok(())
}

/// Makes or takes the key, checks it and the scope, and puts the key
/// where the contract says.
fn place_key<R>(
    request: &mut Request,
    contract: &Contract,
    key: Key,
) -> Result<Prepared, Error<R>> {
    let prepared = match key {
        Key::Prepared(prepared) => prepared,
        Key::New => {
            let body = match &request.body {
                Some(Body::Json { value, .. }) => Some(value),
                _ => None,
            };
            contract
                .prepare(body)
                .map_err(|error| Error::Request(error.0))?
        }
    };
    let key = prepared.key.as_str();
    check_length(key, contract.max_key_len).map_err(Error::Request)?;
    match contract.key_in {
        KeyIn::Header => {
            let name = header_name(contract.key_name)?;
            let value = HeaderValue::from_str(key).map_err(|_| {
                Error::Request(format!("the key `{key}` is not a valid header value"))
            })?;
            request.headers.insert(name, value);
        }
        KeyIn::Query => {
            // The key replaces a value the parameters gave it.
            let others: Vec<(String, String)> = request
                .url
                .query_pairs()
                .filter(|(name, _)| name != contract.key_name)
                .map(|(name, value)| (name.into_owned(), value.into_owned()))
                .collect();
            request
                .url
                .query_pairs_mut()
                .clear()
                .extend_pairs(others)
                .append_pair(contract.key_name, key);
        }
        KeyIn::Body => match &mut request.body {
            Some(Body::Json { value, .. }) => set_pointer(value, contract.key_name, key)?,
            _ => {
                return Err(Error::Request(format!(
                    "the key goes in the JSON body at `{}`, and this request has none",
                    contract.key_name
                )));
            }
        },
    }
    for scope in contract.scope {
        let present = match scope {
            // A header may also come from the reqwest client's default
            // headers or the signer, which this cannot see.
            Scope::Header(_) => true,
            Scope::Query(name) => request.url.query_pairs().any(|(found, _)| found == *name),
            Scope::Body(pointer) => matches!(
                &request.body,
                Some(Body::Json { value, .. }) if value.pointer(pointer).is_some_and(|v| !v.is_null())
            ),
            Scope::Principal => true,
        };
        if !present {
            return Err(Error::Request(format!(
                "the key's scope needs {scope:?}, which the request does not carry"
            )));
        }
    }
    Ok(prepared)
}

/// A header name as the spec writes it (any case).
fn header_name<R>(name: &'static str) -> Result<HeaderName, Error<R>> {
    HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| Error::Request(format!("`{name}` is not a valid header name")))
}

/// Sets the string at `pointer`, creating the last member.
fn set_pointer<R>(value: &mut serde_json::Value, pointer: &str, key: &str) -> Result<(), Error<R>> {
    let (parent, last) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    let member = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(serde_json::Value::Object(object)) => {
            object.insert(member, serde_json::Value::String(key.to_string()));
            Ok(())
        }
        _ => Err(Error::Request(format!(
            "the key goes in the body at `{pointer}`, whose parent is not an object"
        ))),
    }
}

/// Milliseconds since 1970.
fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as u64
}

/// The last `{seq}` this process made.
static LAST_SEQ: AtomicU64 = AtomicU64::new(0);

/// A key made from `format`; `body` is the request body as JSON.
fn mint(format: &[KeyPart], body: Option<&serde_json::Value>) -> Result<String, String> {
    let mut key = String::new();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    for part in format {
        match part {
            KeyPart::Literal(text) => key.push_str(text),
            KeyPart::Uuid => key.push_str(&uuid_v4()),
            KeyPart::Ulid => key.push_str(&ulid(now)),
            KeyPart::Random(bytes) => key.push_str(&base64url(&random_bytes(*bytes))),
            KeyPart::Date => key.push_str(&date(now.as_secs())),
            KeyPart::Timestamp => key.push_str(&now.as_millis().to_string()),
            KeyPart::Seq => {
                let clock = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX);
                let previous = LAST_SEQ
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
                        Some(clock.max(last.saturating_add(1)))
                    })
                    .unwrap_or(0);
                key.push_str(&clock.max(previous.saturating_add(1)).to_string());
            }
            KeyPart::Field(pointer) => match body.and_then(|value| value.pointer(pointer)) {
                Some(serde_json::Value::String(text)) if !text.is_empty() => key.push_str(text),
                Some(value @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => {
                    key.push_str(&value.to_string())
                }
                _ => {
                    return Err(format!(
                        "the key is made from the body field `{pointer}`, which is missing or empty"
                    ));
                }
            },
        }
    }
    Ok(key)
}

/// `count` bytes from the operating system's CSPRNG.
fn random_bytes(count: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; count];
    // Without a working CSPRNG no key can be unguessable: stop rather than
    // send a predictable one.
    getrandom::fill(&mut bytes).expect("the operating system's random source works");
    bytes
}

/// A random duration in `0..=most`, to the millisecond.
fn jitter(most: Duration) -> Duration {
    let most = most.as_millis() as u64;
    if most == 0 {
        return Duration::ZERO;
    }
    let bytes: [u8; 8] = random_bytes(8).try_into().unwrap_or([0; 8]);
    Duration::from_millis(u64::from_le_bytes(bytes) % most.saturating_add(1))
}

fn uuid_v4() -> String {
    let mut bytes = random_bytes(16);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// 48 bits of milliseconds, then 80 random bits, in Crockford base32.
fn ulid(now: Duration) -> String {
    const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let millis = now.as_millis() & ((1 << 48) - 1);
    let random = random_bytes(10)
        .iter()
        .fold(0u128, |value, byte| (value << 8) | u128::from(*byte));
    let value = (millis << 80) | random;
    (0..26)
        .rev()
        .map(|index| ALPHABET[((value >> (index * 5)) & 31) as usize] as char)
        .collect()
}

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let block = chunk.iter().enumerate().fold(0u32, |block, (i, byte)| {
            block | (u32::from(*byte) << (16 - 8 * i))
        });
        for i in 0..=chunk.len() {
            text.push(ALPHABET[((block >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    text
}

/// `yyyyMMdd` of the UTC day `unix_secs` falls in.
fn date(unix_secs: u64) -> String {
    // Howard Hinnant's days-to-civil algorithm.
    let days = (unix_secs / 86_400) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}{month:02}{day:02}")
}

/// An error with its causes, for [`Outcome::Connection`].
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::sync::mpsc::Receiver;

    #[test]
    fn a_joined_form_list_is_sent_as_one_text() {
        let lists = &[("tags", ','), ("codes", '|'), ("words", ' ')];
        assert_eq!(
            join_form_lists("amount=5&tags=a&tags=b%20c&codes=1&words=x&words=y", lists),
            "amount=5&tags=a%2Cb%20c&codes=1&words=x+y"
        );
        // Indexed or not (`[]`), in brackets written or encoded, among
        // other fields.
        assert_eq!(
            join_form_lists("tags[0]=a&note=n&tags%5B1%5D=b&codes[]=2", lists),
            "tags=a%2Cb&note=n&codes=2"
        );
        // Not items of a list: another name, a member, another form.
        assert_eq!(
            join_form_lists("tagsx=1&tags[a]=2", lists),
            "tagsx=1&tags[a]=2"
        );
        // A name `serde_qs` encodes is compared decoded, written as sent.
        assert_eq!(
            join_form_lists("my+list=a&other=c&my%20list=b", &[("my list", ',')]),
            "my+list=a%2Cb&other=c"
        );
        assert_eq!(
            join_form_lists("x%5B0%5D=a&x%5B1%5D=b%2Bc", &[("x", '|')]),
            "x=a%7Cb%2Bc"
        );
        assert_eq!(join_form_lists("note=n", &[]), "note=n");
        assert_eq!(join_form_lists("", lists), "");
    }

    #[test]
    fn undeclared_answers_show_as_text_with_status_and_headers() {
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        headers.insert("www-authenticate", HeaderValue::from_static("Bearer"));
        let answer = RawAnswer {
            status: 401,
            headers,
            body: br#"{"type":"about:blank","title":"Unauthorized","status":401,"detail":"unknown API key"}"#.to_vec(),
        };
        let error: Error<()> = Error::Undeclared {
            answer: Box::new(answer.clone()),
            why: "status 401 is not declared".into(),
            call: Call {
                key: None,
                attempts: Vec::new(),
            },
        };
        assert_eq!(
            error.to_string(),
            "the server answered 401 Unauthorized, which the spec does not declare \
             (status 401 is not declared): Unauthorized: unknown API key: type about:blank"
        );
        let debug = format!("{error:?}");
        assert!(debug.contains("status: 401"), "{debug}");
        assert!(
            debug.contains("\"www-authenticate\": \"Bearer\""),
            "{debug}"
        );
        assert!(
            debug.contains("detail: Some(\"unknown API key\")"),
            "{debug}"
        );
        assert!(!debug.contains("[123, 34"), "{debug}");
        // Not a problem: the body as text; not UTF-8: its size.
        let text = RawAnswer {
            status: 418,
            headers: HeaderMap::new(),
            body: b"short and stout".to_vec(),
        };
        assert!(format!("{text:?}").contains("body: \"short and stout\""));
        let bytes = RawAnswer {
            status: 418,
            headers: HeaderMap::new(),
            body: vec![0xff, 0xfe],
        };
        assert_eq!(bytes.text(), "<2 bytes, not UTF-8>");
    }

    #[test]
    fn dates_are_utc_days() {
        assert_eq!(date(0), "19700101");
        assert_eq!(date(1_718_409_600), "20240615");
        assert_eq!(date(951_782_400), "20000229");
    }

    #[test]
    fn random_segments_have_their_length() {
        assert_eq!(base64url(&[0xff; 16]).len(), 22);
        assert_eq!(base64url(&[0; 3]), "AAAA");
        assert_eq!(base64url(&[0xfb]), "-w");
        let ulid = ulid(Duration::from_millis(1_718_409_600_000));
        assert_eq!(ulid.len(), 26);
        assert!(ulid.as_bytes()[0] <= b'7');
        let uuid = uuid_v4();
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4");
    }

    #[test]
    fn seq_only_grows() {
        let keys: Vec<u64> = (0..1_000)
            .map(|_| mint(&[KeyPart::Seq], None).unwrap().parse().unwrap())
            .collect();
        assert!(keys.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn retry_after_takes_seconds_and_dates() {
        let seconds = HeaderValue::from_static("2");
        assert_eq!(retry_after(&seconds), Some(Duration::from_secs(2)));
        let past = HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(retry_after(&past), Some(Duration::ZERO));
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        let wait = retry_after(&HeaderValue::from_str(&later).unwrap()).unwrap();
        assert!(wait > Duration::from_secs(28) && wait <= Duration::from_secs(30));
        assert_eq!(retry_after(&HeaderValue::from_static("soon")), None);
    }

    #[test]
    fn keys_follow_the_format() {
        let body = serde_json::json!({"order": "A-1", "n": 7});
        let format = [
            KeyPart::Literal("pay:"),
            KeyPart::Field("/order"),
            KeyPart::Literal(":"),
            KeyPart::Field("/n"),
            KeyPart::Literal(":"),
            KeyPart::Random(16),
        ];
        let key = mint(&format, Some(&body)).unwrap();
        assert!(key.starts_with("pay:A-1:7:"), "{key}");
        assert_eq!(key.len(), "pay:A-1:7:".len() + 22);
        assert!(mint(&[KeyPart::Field("/missing")], Some(&body)).is_err());
    }

    /// A server that answers the `n`th connection with `answers[n]` (the
    /// last one again after that) and closes it; the requests it got
    /// (head and body), lower-cased.
    fn server(answers: &[&'static str]) -> (String, Receiver<String>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (requests, received) = std::sync::mpsc::channel();
        let answers = answers.to_vec();
        std::thread::spawn(move || {
            for (index, stream) in listener.incoming().enumerate() {
                let mut stream = stream.unwrap();
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
                let length = text
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length: "))
                    .and_then(|value| value.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                let mut body = vec![0u8; length];
                let _ = stream.read_exact(&mut body);
                let _ = requests.send(format!("{text}{}", String::from_utf8_lossy(&body)));
                let answer = answers[index.min(answers.len() - 1)];
                let _ = stream.write_all(answer.as_bytes());
                let _ = stream.shutdown(std::net::Shutdown::Write);
            }
        });
        (base, received)
    }

    const UNAVAILABLE: &str =
        "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    const OK: &str = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";
    const IN_PROGRESS: &str = "HTTP/1.1 409 Conflict\r\nretry-after: 0\r\ncontent-type: application/problem+json\r\ncontent-length: 56\r\nconnection: close\r\n\r\n{\"type\":\"urn:idemgen:problem:request-in-progress\",\"a\":1}";

    fn request(base: &str, method: reqwest::Method) -> Request {
        Request::new(
            &reqwest::Url::parse(base).unwrap(),
            method,
            &[PathPart::Literal("/pay")],
            &[],
            None,
            Some(Body::Json {
                content_type: "application/json",
                value: serde_json::json!({"amount": 1}),
            }),
        )
        .unwrap()
    }

    fn post(base: &str) -> Request {
        request(base, reqwest::Method::POST)
    }

    fn any_status(_: u16, _: &HeaderMap, _: &[u8]) -> Result<u16, String> {
        Ok(0)
    }

    fn json_status(status: u16, _: &HeaderMap, body: &[u8]) -> Result<u16, String> {
        serde_json::from_slice::<serde_json::Value>(body)
            .map(|_| status)
            .map_err(|error| error.to_string())
    }

    fn transport() -> Transport {
        Transport::new(http_client())
    }

    const RETRIED: Contract = Contract {
        key_in: KeyIn::Header,
        key_name: "Idempotency-Key",
        key_format: &[KeyPart::Literal("t:"), KeyPart::Uuid],
        max_key_len: 64,
        scope: &[],
        timeout_ms: 1_000,
        jitter_ms: 20,
        attempts: &[
            Attempt {
                start_ms: 0,
                deadline_ms: 1_000,
                backoff_ms: Some(30),
            },
            Attempt {
                start_ms: 1_050,
                deadline_ms: 2_050,
                backoff_ms: Some(60),
            },
            Attempt {
                start_ms: 2_130,
                deadline_ms: 3_000,
                backoff_ms: None,
            },
        ],
        window_ms: Some(60_000),
        max_processing_ms: Some(1_000),
        in_progress_status: 409,
        in_progress_retry_after_ms: Some(50),
        conflict_status: 422,
        replayed_header: Some("Idempotent-Replayed"),
    };

    fn keys_sent(requests: &[String]) -> Vec<String> {
        requests
            .iter()
            .filter_map(|request| {
                request
                    .lines()
                    .find_map(|line| line.strip_prefix("idempotency-key: "))
                    .map(str::to_string)
            })
            .collect()
    }

    #[tokio::test]
    async fn every_attempt_carries_the_same_key_within_its_slot() {
        let (base, requests) = server(&[UNAVAILABLE]);
        let error = send(
            &transport(),
            post(&base),
            Some(&RETRIED),
            Key::New,
            any_status,
        )
        .await
        .unwrap_err();
        let Error::GaveUp {
            why: GaveUp::Schedule,
            call,
        } = error
        else {
            panic!("{error:?}");
        };
        let key = call.key.clone().unwrap().key;
        assert!(key.starts_with("t:"), "{key}");
        let requests: Vec<String> = requests.try_iter().collect();
        assert_eq!(keys_sent(&requests), vec![key.to_ascii_lowercase(); 3]);
        assert!(call.maybe_carried_out());
        for (index, pair) in call.attempts.windows(2).enumerate() {
            let slot = RETRIED.attempts[index].backoff_ms.unwrap() + RETRIED.jitter_ms;
            let gap = pair[1].at - pair[0].at;
            assert!(gap < Duration::from_millis(slot + 500), "{gap:?}");
            assert_eq!(
                pair[0].outcome,
                Outcome::Retryable {
                    status: 503,
                    retry_after: None
                }
            );
        }
    }

    #[tokio::test]
    async fn in_progress_is_polled_without_using_up_attempts() {
        // Five "in progress" answers, then the answer: more than the
        // schedule's three attempts, all inside its last start.
        let (base, requests) = server(&[
            IN_PROGRESS,
            IN_PROGRESS,
            IN_PROGRESS,
            IN_PROGRESS,
            IN_PROGRESS,
            OK,
        ]);
        let answer = send(
            &transport(),
            post(&base),
            Some(&RETRIED),
            Key::New,
            any_status,
        )
        .await
        .unwrap();
        assert_eq!(answer.call.attempts.len(), 6, "{:?}", answer.call);
        assert_eq!(requests.try_iter().count(), 6);
    }

    #[tokio::test]
    async fn a_gateway_429_is_not_in_progress_its_retry_after_a_floor() {
        const BUSY: &str = "HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        const BUSY_IS_IN_PROGRESS: Contract = Contract {
            in_progress_status: 429,
            ..RETRIED
        };
        let (base, _) = server(&[BUSY, OK]);
        let answer = send(
            &transport(),
            post(&base),
            Some(&BUSY_IS_IN_PROGRESS),
            Key::New,
            any_status,
        )
        .await
        .unwrap();
        let attempts = &answer.call.attempts;
        assert_eq!(
            attempts[0].outcome,
            Outcome::Retryable {
                status: 429,
                retry_after: Some(Duration::from_secs(1))
            }
        );
        assert!(attempts[1].at - attempts[0].at >= Duration::from_secs(1));
    }

    #[tokio::test]
    async fn a_replay_is_read_from_the_header_the_contract_names() {
        const REPLAY: &str = "HTTP/1.1 200 OK\r\nidempotency-replayed: ?1\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";
        const ITS_OWN_MARK: Contract = Contract {
            replayed_header: Some("Idempotency-Replayed"),
            ..RETRIED
        };
        const UNMARKED: Contract = Contract {
            replayed_header: None,
            ..RETRIED
        };
        for (contract, replayed) in [
            (Some(&ITS_OWN_MARK), true),
            (Some(&RETRIED), false),
            (Some(&UNMARKED), false),
            (None, true),
        ] {
            let (base, _) = server(&[REPLAY]);
            let answer = send(&transport(), post(&base), contract, Key::New, any_status)
                .await
                .unwrap();
            assert_eq!(
                answer.replayed,
                replayed,
                "{:?}",
                contract.map(|c| c.replayed_header)
            );
        }
    }

    #[tokio::test]
    async fn a_retry_after_past_the_schedule_ends_the_call() {
        const LATER: &str = "HTTP/1.1 503 Service Unavailable\r\nretry-after: 30\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        let (base, requests) = server(&[LATER]);
        let started = Instant::now();
        let error = send(
            &transport(),
            post(&base),
            Some(&RETRIED),
            Key::New,
            any_status,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(
                error,
                Error::GaveUp {
                    why: GaveUp::Schedule,
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(requests.try_iter().count(), 1);
    }

    #[tokio::test]
    async fn a_conflict_is_known_by_its_problem_type() {
        const REUSED: &str = "HTTP/1.1 422 Unprocessable Content\r\ncontent-type: application/problem+json\r\ncontent-length: 41\r\nconnection: close\r\n\r\n{\"type\":\"urn:idemgen:problem:key-reused\"}";
        const INVALID: &str = "HTTP/1.1 422 Unprocessable Content\r\ncontent-type: application/problem+json\r\ncontent-length: 46\r\nconnection: close\r\n\r\n{\"type\":\"urn:idemgen:problem:schema-mismatch\"}";
        let (base, _) = server(&[REUSED]);
        let error = send(
            &transport(),
            post(&base),
            Some(&RETRIED),
            Key::New,
            json_status,
        )
        .await
        .unwrap_err();
        assert!(matches!(error, Error::Conflict { .. }), "{error:?}");
        let (base, requests) = server(&[INVALID]);
        let error = send(
            &transport(),
            post(&base),
            Some(&RETRIED),
            Key::New,
            json_status,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(error, Error::Refused { response: 422, .. }),
            "{error:?}"
        );
        assert_eq!(requests.try_iter().count(), 1, "a refusal is not retried");
    }

    #[tokio::test]
    async fn not_implemented_is_not_retried() {
        const NOT_IMPLEMENTED: &str =
            "HTTP/1.1 501 Not Implemented\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        let (base, requests) = server(&[NOT_IMPLEMENTED]);
        let error = send(
            &transport(),
            post(&base),
            Some(&RETRIED),
            Key::New,
            any_status,
        )
        .await
        .unwrap_err();
        assert!(matches!(error, Error::Refused { .. }), "{error:?}");
        assert_eq!(requests.try_iter().count(), 1);
    }

    #[tokio::test]
    async fn a_key_whose_window_has_closed_is_not_sent() {
        let (base, requests) = server(&[OK]);
        let long_ago = unix_ms(SystemTime::now()) - RETRIED.latest_start_ms() - 1;
        let prepared = Prepared::new("t:old", long_ago);
        let error = send(
            &transport(),
            post(&base),
            Some(&RETRIED),
            Key::Prepared(prepared.clone()),
            any_status,
        )
        .await
        .unwrap_err();
        let Error::WindowClosed { call } = &error else {
            panic!("{error:?}");
        };
        assert_eq!(call.key.as_ref(), Some(&prepared));
        assert!(call.attempts.is_empty());
        assert!(error.to_string().contains("reconcile"), "{error}");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(requests.try_iter().count(), 0);
    }

    #[tokio::test]
    async fn a_resumed_call_stops_where_the_window_does() {
        // 1.5 s of the key's window are left, and the request stays "in
        // progress" (polled every 50 ms or so, as the contract's
        // `retry-after` says): the polls stop at the window's bound, well
        // before the schedule's last start (4 s).
        const POLLED: &str = "HTTP/1.1 409 Conflict\r\ncontent-type: application/problem+json\r\ncontent-length: 56\r\nconnection: close\r\n\r\n{\"type\":\"urn:idemgen:problem:request-in-progress\",\"a\":1}";
        const LONG_SCHEDULE: Contract = Contract {
            attempts: &[
                Attempt {
                    start_ms: 0,
                    deadline_ms: 1_000,
                    backoff_ms: Some(1_000),
                },
                Attempt {
                    start_ms: 4_000,
                    deadline_ms: 5_000,
                    backoff_ms: None,
                },
            ],
            ..RETRIED
        };
        let (base, requests) = server(&[POLLED]);
        let first_send = unix_ms(SystemTime::now()) + 1_500 - RETRIED.latest_start_ms();
        let error = send(
            &transport(),
            post(&base),
            Some(&LONG_SCHEDULE),
            Key::Prepared(Prepared::new("t:resumed", first_send)),
            any_status,
        )
        .await
        .unwrap_err();
        let Error::WindowClosed { call } = &error else {
            panic!("{error:?}");
        };
        let bound = first_send + LONG_SCHEDULE.latest_start_ms();
        assert!(call.attempts.len() > 3, "{call:?}");
        assert!(
            call.attempts
                .iter()
                .all(|tried| tried.unix_ms <= bound + 50),
            "{call:?}"
        );
        let finished = unix_ms(SystemTime::now());
        assert!(
            finished < bound + 500,
            "{} ms past the bound",
            finished - bound
        );
        let requests: Vec<String> = requests.try_iter().collect();
        assert_eq!(requests.len(), call.attempts.len());
        assert!(keys_sent(&requests).iter().all(|key| key == "t:resumed"));
    }

    #[test]
    fn a_failed_tls_handshake_is_not_retried() {
        let refused = Outcome::NotSent(
            "error sending request: client error (Connect): invalid peer certificate: UnknownIssuer"
                .to_string(),
        );
        assert!(refused.is_tls_failure());
        assert!(!refused.maybe_sent());
        let down = Outcome::NotSent(
            "error sending request: client error (Connect): tcp connect error: Connection refused (os error 111)"
                .to_string(),
        );
        assert!(!down.is_tls_failure());
    }

    #[tokio::test]
    async fn a_refused_connection_was_never_sent() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let base = format!("http://127.0.0.1:{port}");
        let error = send(
            &transport(),
            post(&base),
            Some(&RETRIED),
            Key::New,
            any_status,
        )
        .await
        .unwrap_err();
        let Error::GaveUp { call, .. } = &error else {
            panic!("{error:?}");
        };
        assert!(
            call.attempts
                .iter()
                .all(|tried| matches!(tried.outcome, Outcome::NotSent(_))),
            "{call:?}"
        );
        assert!(!call.maybe_carried_out());
        assert!(error.to_string().contains("never sent"), "{error}");
    }

    #[tokio::test]
    async fn a_success_that_does_not_decode_says_the_operation_ran() {
        const GARBLED: &str = "HTTP/1.1 200 OK\r\nx-receipt: 7\r\ncontent-length: 5\r\nconnection: close\r\n\r\n{\"a\":";
        let (base, requests) = server(&[GARBLED]);
        let error = send(
            &transport(),
            post(&base),
            Some(&RETRIED),
            Key::New,
            json_status,
        )
        .await
        .unwrap_err();
        let Error::Unreadable { answer, call, .. } = &error else {
            panic!("{error:?}");
        };
        assert_eq!(answer.status, 200);
        assert_eq!(answer.headers.get("x-receipt").unwrap(), "7");
        assert_eq!(answer.body, b"{\"a\":");
        assert!(call.key.is_some());
        assert_eq!(call.attempts.len(), 1);
        assert!(error.to_string().contains("the operation ran"), "{error}");
        assert_eq!(requests.try_iter().count(), 1);
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_not_read() {
        const LARGE: &str = "HTTP/1.1 200 OK\r\ncontent-length: 64\r\nconnection: close\r\n\r\n\"0123456789012345678901234567890123456789012345678901234567890\"";
        let (base, _) = server(&[LARGE]);
        let transport = Transport {
            max_response_bytes: 16,
            ..transport()
        };
        let error = send(
            &transport,
            post(&base),
            Some(&RETRIED),
            Key::New,
            json_status,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&error, Error::Unreadable { why, .. } if why.contains("over 16 bytes")),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn an_empty_budget_stops_retries() {
        let (base, requests) = server(&[UNAVAILABLE]);
        let transport = Transport {
            budget: Arc::new(RetryBudget::new(5)),
            ..transport()
        };
        let error = send(
            &transport,
            post(&base),
            Some(&RETRIED),
            Key::New,
            any_status,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(
                error,
                Error::GaveUp {
                    why: GaveUp::Budget,
                    ..
                }
            ),
            "{error:?}"
        );
        assert_eq!(requests.try_iter().count(), 2, "one retry, then none");
        assert_eq!(transport.budget.tokens(), 0);
    }

    #[tokio::test]
    async fn a_deadline_ends_the_call() {
        const SLOW: Contract = Contract {
            attempts: &[
                Attempt {
                    start_ms: 0,
                    deadline_ms: 1_000,
                    backoff_ms: Some(5_000),
                },
                Attempt {
                    start_ms: 6_000,
                    deadline_ms: 7_000,
                    backoff_ms: None,
                },
            ],
            jitter_ms: 0,
            ..RETRIED
        };
        let (base, requests) = server(&[UNAVAILABLE]);
        let transport = Transport {
            deadline: Some(Duration::from_millis(1)),
            ..transport()
        };
        let started = Instant::now();
        let error = send(&transport, post(&base), Some(&SLOW), Key::New, any_status)
            .await
            .unwrap_err();
        // The attempt made, then no wait the deadline could not cover
        // (the backoff is random: it may be short enough to fit once).
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(
            matches!(
                error,
                Error::GaveUp {
                    why: GaveUp::Deadline | GaveUp::Schedule,
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(requests.try_iter().count() <= 2);
    }

    #[tokio::test]
    async fn a_redirect_is_the_answer_not_followed() {
        const SEE_OTHER: &str = "HTTP/1.1 303 See Other\r\nlocation: /elsewhere\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        let (base, requests) = server(&[SEE_OTHER, OK]);
        let answer = send(
            &transport(),
            post(&base),
            Some(&RETRIED),
            Key::New,
            any_status,
        )
        .await
        .unwrap();
        assert_eq!(
            answer.call.attempts[0].outcome,
            Outcome::Answered { status: 303 }
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(requests.try_iter().count(), 1);
    }

    #[tokio::test]
    async fn without_a_contract_a_post_is_sent_once_and_a_get_retried() {
        let (base, requests) = server(&[UNAVAILABLE]);
        let error = send(&transport(), post(&base), None, Key::New, any_status)
            .await
            .unwrap_err();
        assert!(matches!(error, Error::Refused { .. }), "{error:?}");
        assert_eq!(error.key(), None);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(requests.try_iter().count(), 1);

        let (base, requests) = server(&[UNAVAILABLE, UNAVAILABLE, OK]);
        let answer = send(
            &transport(),
            request(&base, reqwest::Method::GET),
            None,
            Key::New,
            any_status,
        )
        .await
        .unwrap();
        assert_eq!(answer.call.attempts.len(), 3);
        assert_eq!(requests.try_iter().count(), 3);
    }

    #[tokio::test]
    async fn a_prepared_key_is_sent_as_prepared() {
        let (base, requests) = server(&[UNAVAILABLE, OK]);
        let prepared = RETRIED.prepare(None).unwrap();
        let answer = send(
            &transport(),
            post(&base),
            Some(&RETRIED),
            Key::Prepared(prepared.clone()),
            any_status,
        )
        .await
        .unwrap();
        assert_eq!(answer.call.key.as_ref(), Some(&prepared));
        let requests: Vec<String> = requests.try_iter().collect();
        assert_eq!(
            keys_sent(&requests),
            vec![prepared.key.to_ascii_lowercase(); 2]
        );
    }

    #[tokio::test]
    async fn a_request_without_its_scope_value_is_not_sent() {
        const SCOPED: Contract = Contract {
            scope: &[Scope::Query("tenant")],
            ..RETRIED
        };
        let (base, requests) = server(&[UNAVAILABLE]);
        let error = send(
            &transport(),
            post(&base),
            Some(&SCOPED),
            Key::New,
            any_status,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&error, Error::Request(why) if why.contains("tenant")),
            "{error:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(requests.try_iter().count(), 0);
    }
}
