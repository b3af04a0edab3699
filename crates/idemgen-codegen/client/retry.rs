//! How this client sends one request: for an operation with an
//! `x-idempotency` contract, the key and the retry loop; for any other, one
//! attempt. `idemgen gen --client` writes this file as it is, the same for
//! every spec; the numbers come from `src/lib.rs`.
//!
//! What the loop does, and why:
//! - One key for every attempt. A key minted per attempt would make each
//!   retry a new request, and a retry of a payment a second payment.
//! - Each attempt gets `client.timeout`; after it, the wait is the next
//!   `client.retries` delay plus up to `client.jitter`, or the server's
//!   `Retry-After` on an "in progress" answer. No attempt starts later, or
//!   is waited for longer, than the schedule the spec's window was checked
//!   against allows, so every attempt lands while the server still
//!   remembers the key.
//! - Retried: no answer (timeout, refused or dropped connection), a 5xx,
//!   the contract's in-progress status. Not retried: a conflict, a refusal
//!   or any other 4xx: the same request would get the same answer.
//! - An operation without a contract is sent once: without a key, the
//!   server cannot tell a retry from a new request.

use std::fmt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};

/// The response header a server sets on an answer replayed from its
/// idempotency record.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// One operation's `x-idempotency` contract, as the client follows it.
#[derive(Debug)]
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
    /// `responses.in-progress.status`.
    pub in_progress_status: u16,
    /// `responses.conflict`.
    pub conflict_status: u16,
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
    /// The time in nanoseconds since 1970: a number that only grows.
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

/// Which key an idempotent request is sent with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// A new key, made from `key.format`.
    New,
    /// This key: one stored from an earlier call (see [`Error::key`]),
    /// to resume a request after a restart. Within the window, the server
    /// answers it with the first request's result.
    Given(String),
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

/// One declared parameter: where it goes and its name on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    pub location: ParamIn,
    pub name: &'static str,
}

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
        let value_of = |name: &str| -> Vec<String> {
            match params.get(name) {
                None | Some(serde_json::Value::Null) => Vec::new(),
                Some(serde_json::Value::Array(items)) => items.iter().map(wire_text).collect(),
                Some(value) => vec![wire_text(value)],
            }
        };
        let mut rendered = base.path().trim_end_matches('/').to_string();
        for part in path {
            match part {
                PathPart::Literal(text) => rendered.push_str(text),
                PathPart::Param(name) => {
                    let values = value_of(name);
                    if values.is_empty() {
                        return Err(format!("the path parameter `{name}` has no value"));
                    }
                    rendered.push_str(&percent_encode(&values.join(",")));
                }
            }
        }
        let mut url = base.clone();
        url.set_path(&rendered);
        let mut headers = HeaderMap::new();
        for param in table {
            match param.location {
                ParamIn::Path => {}
                ParamIn::Query => {
                    for value in value_of(param.name) {
                        url.query_pairs_mut().append_pair(param.name, &value);
                    }
                }
                ParamIn::Header => {
                    let values = value_of(param.name);
                    if values.is_empty() {
                        continue;
                    }
                    let name = HeaderName::from_bytes(param.name.as_bytes())
                        .map_err(|_| format!("`{}` is not a valid header name", param.name))?;
                    let value = HeaderValue::from_str(&values.join(",")).map_err(|_| {
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
        bytes: Vec<u8>,
    },
}

/// How one attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// An answer the loop stops at.
    Answered { status: u16 },
    /// The contract's in-progress status: the first request is still running.
    InProgress { retry_after: Option<Duration> },
    /// A 5xx.
    ServerError { status: u16 },
    /// No answer within the attempt's time.
    TimedOut,
    /// The connection failed or was dropped before a whole answer came.
    Connection(String),
}

/// One attempt made: when, from the first attempt's start, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tried {
    pub at: Duration,
    pub outcome: Outcome,
}

/// A successful (2xx or 3xx) answer.
#[derive(Debug, Clone)]
pub struct Answer<R> {
    /// The typed response.
    pub response: R,
    /// Every response header.
    pub headers: HeaderMap,
    /// Whether the server replayed the answer it stored for the first
    /// request with this key (`Idempotent-Replayed: true`) instead of
    /// running the operation now.
    pub replayed: bool,
    /// The key sent; `None` for an operation without a contract.
    pub key: Option<String>,
    /// Every attempt, the answered one last.
    pub attempts: Vec<Tried>,
}

/// Why a call ended without a successful answer.
#[derive(Debug)]
pub enum Error<R> {
    /// The key was used before with a different request; that request's
    /// result stands and nothing was changed. Use a new key for a new
    /// request.
    Conflict {
        key: String,
        response: R,
        attempts: Vec<Tried>,
    },
    /// The server refused the request (a 4xx other than the conflict and
    /// in-progress statuses): sending it again would be refused again.
    Refused {
        key: Option<String>,
        response: R,
        attempts: Vec<Tried>,
    },
    /// Every attempt the schedule allows ended without an answer to stop
    /// at (in progress, a 5xx, no answer). The outcome is unknown: the
    /// request may have been carried out. Sending it again with
    /// `Key::Given(key)` while the window lasts is safe.
    GaveUp {
        key: Option<String>,
        attempts: Vec<Tried>,
    },
    /// An answer whose status or body the spec does not declare.
    Undeclared {
        key: Option<String>,
        status: u16,
        body: Vec<u8>,
        why: String,
    },
    /// The request could not be built or sent: no key could be made from
    /// it, a value is not valid in a header, the body does not serialise.
    /// Nothing was sent.
    Request(String),
}

impl<R> Error<R> {
    /// The key the request was sent with, to store for a later retry.
    pub fn key(&self) -> Option<&str> {
        match self {
            Error::Conflict { key, .. } => Some(key),
            Error::Refused { key, .. }
            | Error::GaveUp { key, .. }
            | Error::Undeclared { key, .. } => key.as_deref(),
            Error::Request(_) => None,
        }
    }
}

impl<R: fmt::Debug> fmt::Display for Error<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Conflict { key, response, .. } => write!(
                f,
                "key {key} was already used with a different request (that request's result stands): {response:?}"
            ),
            Error::Refused { response, .. } => {
                write!(f, "the server refused the request: {response:?}")
            }
            Error::GaveUp { attempts, .. } => {
                write!(f, "no answer after {} attempt(s)", attempts.len())?;
                if let Some(last) = attempts.last() {
                    write!(f, "; the last: {:?}", last.outcome)?;
                }
                Ok(())
            }
            Error::Undeclared { status, why, .. } => {
                write!(
                    f,
                    "the server answered {status}, which the spec does not declare: {why}"
                )
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
pub type Sign =
    std::sync::Arc<dyn Fn(&reqwest::Method, &reqwest::Url, &[u8]) -> HeaderMap + Send + Sync>;

/// What requests go through: the HTTP client, and what signs each attempt.
#[derive(Clone, Default)]
pub struct Transport {
    pub http: reqwest::Client,
    pub sign: Option<Sign>,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("http", &self.http)
            .field("sign", &self.sign.as_ref().map(|_| "…"))
            .finish()
    }
}

/// Sends `request`: under `contract` with its key and retries, else once.
pub async fn send<R>(
    transport: &Transport,
    mut request: Request,
    contract: Option<&Contract>,
    key: Key,
    decode: Decode<R>,
) -> Result<Answer<R>, Error<R>> {
    let key = match contract {
        Some(contract) => Some(place_key(&mut request, contract, key)?),
        None => None,
    };
    let (content_type, body) = match request.body.take() {
        None => (None, None),
        Some(Body::Json {
            content_type,
            value,
        }) => (
            Some(content_type),
            Some(serde_json::to_vec(&value).map_err(|error| Error::Request(error.to_string()))?),
        ),
        Some(Body::Bytes {
            content_type,
            bytes,
        }) => (Some(content_type), Some(bytes)),
    };
    let once = [Attempt {
        start_ms: 0,
        deadline_ms: u64::MAX,
        backoff_ms: None,
    }];
    let schedule = contract.map_or(&once[..], |contract| contract.attempts);
    let started = Instant::now();
    let mut attempts: Vec<Tried> = Vec::with_capacity(schedule.len());
    for (index, planned) in schedule.iter().enumerate() {
        if let (Some(before), Some(last)) = (index.checked_sub(1), attempts.last()) {
            let wait = match &last.outcome {
                Outcome::InProgress {
                    retry_after: Some(retry_after),
                } => *retry_after,
                _ => {
                    let jitter = contract.map_or(0, |contract| random_below(contract.jitter_ms));
                    Duration::from_millis(
                        schedule[before]
                            .backoff_ms
                            .unwrap_or(0)
                            .saturating_add(jitter),
                    )
                }
            };
            // Never later than the schedule's latest start.
            let latest = Duration::from_millis(planned.start_ms).saturating_sub(started.elapsed());
            tokio::time::sleep(wait.min(latest)).await;
        }
        let at = started.elapsed();
        let time = contract.map(|contract| {
            let left = Duration::from_millis(planned.deadline_ms).saturating_sub(started.elapsed());
            Duration::from_millis(contract.timeout_ms).min(left)
        });
        let result = attempt(transport, &request, content_type, body.as_deref(), time).await;
        let (outcome, answer) = classify(result, contract);
        attempts.push(Tried { at, outcome });
        if let Some(raw) = answer {
            return finish(raw, key, attempts, contract, decode);
        }
    }
    Err(Error::GaveUp { key, attempts })
}

/// A whole answer: status, headers and body.
struct Raw {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
}

/// One attempt, given `time` (none without a contract) for the whole
/// answer, body included.
async fn attempt(
    transport: &Transport,
    request: &Request,
    content_type: Option<&'static str>,
    body: Option<&[u8]>,
    time: Option<Duration>,
) -> Result<Raw, Outcome> {
    let mut builder = transport
        .http
        .request(request.method.clone(), request.url.clone())
        .headers(request.headers.clone());
    if let Some(sign) = &transport.sign {
        builder = builder.headers(sign(
            &request.method,
            &request.url,
            body.unwrap_or_default(),
        ));
    }
    if let (Some(content_type), Some(body)) = (content_type, body) {
        builder = builder
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(body.to_vec());
    }
    let exchange = async {
        let response = builder.send().await?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.bytes().await?.to_vec();
        Ok::<Raw, reqwest::Error>(Raw {
            status,
            headers,
            body,
        })
    };
    let result = match time {
        Some(time) => tokio::time::timeout(time, exchange)
            .await
            .map_err(|_| Outcome::TimedOut)?,
        None => exchange.await,
    };
    result.map_err(|error| {
        if error.is_timeout() {
            Outcome::TimedOut
        } else {
            Outcome::Connection(error_chain(&error))
        }
    })
}

/// How an attempt ended, and the answer when the loop stops at it.
fn classify(result: Result<Raw, Outcome>, contract: Option<&Contract>) -> (Outcome, Option<Raw>) {
    let raw = match result {
        Ok(raw) => raw,
        Err(outcome) => return (outcome, None),
    };
    let status = raw.status;
    if contract.is_some_and(|contract| status == contract.in_progress_status) {
        let retry_after = raw.headers.get(RETRY_AFTER).and_then(retry_after);
        return (Outcome::InProgress { retry_after }, None);
    }
    if status >= 500 {
        return (Outcome::ServerError { status }, None);
    }
    (Outcome::Answered { status }, Some(raw))
}

/// The answer the loop stopped at, typed.
fn finish<R>(
    raw: Raw,
    key: Option<String>,
    attempts: Vec<Tried>,
    contract: Option<&Contract>,
    decode: Decode<R>,
) -> Result<Answer<R>, Error<R>> {
    let response = match decode(raw.status, &raw.headers, &raw.body) {
        Ok(response) => response,
        Err(why) => {
            return Err(Error::Undeclared {
                key,
                status: raw.status,
                body: raw.body,
                why,
            });
        }
    };
    match (raw.status, contract, key) {
        (status, Some(contract), Some(key)) if status == contract.conflict_status => {
            Err(Error::Conflict {
                key,
                response,
                attempts,
            })
        }
        (400..=499, _, key) => Err(Error::Refused {
            key,
            response,
            attempts,
        }),
        (_, _, key) => Ok(Answer {
            replayed: raw
                .headers
                .get(REPLAYED_HEADER)
                .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"true")),
            response,
            headers: raw.headers,
            key,
            attempts,
        }),
    }
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

/// Makes or takes the key, checks it and the scope, and puts the key
/// where the contract says.
fn place_key<R>(request: &mut Request, contract: &Contract, key: Key) -> Result<String, Error<R>> {
    let key = match key {
        Key::Given(key) => key,
        Key::New => mint(contract.key_format, request.body.as_ref()).map_err(Error::Request)?,
    };
    if key.is_empty() || key.len() > contract.max_key_len {
        return Err(Error::Request(format!(
            "the key must be 1 to {} bytes long, not {}",
            contract.max_key_len,
            key.len()
        )));
    }
    match contract.key_in {
        KeyIn::Header => {
            let name = header_name(contract.key_name)?;
            let value = HeaderValue::from_str(&key).map_err(|_| {
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
                .append_pair(contract.key_name, &key);
        }
        KeyIn::Body => match &mut request.body {
            Some(Body::Json { value, .. }) => set_pointer(value, contract.key_name, &key)?,
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
    Ok(key)
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

/// A key made from `format`.
fn mint(format: &[KeyPart], body: Option<&Body>) -> Result<String, String> {
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
            KeyPart::Seq => key.push_str(&now.as_nanos().to_string()),
            KeyPart::Field(pointer) => {
                let field = match body {
                    Some(Body::Json { value, .. }) => value.pointer(pointer),
                    _ => None,
                };
                match field {
                    Some(serde_json::Value::String(text)) if !text.is_empty() => key.push_str(text),
                    Some(value @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => {
                        key.push_str(&value.to_string())
                    }
                    _ => {
                        return Err(format!(
                            "the key is made from the body field `{pointer}`, which is missing or empty"
                        ));
                    }
                }
            }
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

/// A number in `0..=most`, for jitter.
fn random_below(most: u64) -> u64 {
    if most == 0 {
        return 0;
    }
    let bytes: [u8; 8] = random_bytes(8).try_into().unwrap_or([0; 8]);
    u64::from_le_bytes(bytes) % most.saturating_add(1)
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
        let body = Body::Json {
            content_type: "application/json",
            value: serde_json::json!({"order": "A-1", "n": 7}),
        };
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

    /// A server that answers every request 503 and closes; the request
    /// heads it got, lower-cased.
    fn unavailable_server() -> (String, std::sync::mpsc::Receiver<String>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (heads, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let _ = heads.send(String::from_utf8_lossy(&head).to_ascii_lowercase());
                let _ = stream.write_all(
                    b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
            }
        });
        (base, received)
    }

    fn get(base: &str) -> Request {
        Request::new(
            &reqwest::Url::parse(base).unwrap(),
            reqwest::Method::GET,
            &[PathPart::Literal("/pay")],
            &[],
            None,
            None,
        )
        .unwrap()
    }

    fn no_body(_: u16, _: &HeaderMap, _: &[u8]) -> Result<(), String> {
        Ok(())
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
        in_progress_status: 409,
        conflict_status: 422,
    };

    #[tokio::test]
    async fn every_attempt_carries_the_same_key_and_waits_its_backoff() {
        let (base, heads) = unavailable_server();
        let error = send(
            &Transport::default(),
            get(&base),
            Some(&RETRIED),
            Key::New,
            no_body,
        )
        .await
        .unwrap_err();
        let Error::GaveUp {
            key: Some(key),
            attempts,
        } = error
        else {
            panic!("{error:?}");
        };
        assert!(key.starts_with("t:"), "{key}");
        let heads: Vec<String> = heads.try_iter().collect();
        assert_eq!(heads.len(), 3, "{heads:?}");
        for head in &heads {
            assert!(
                head.contains(&format!(
                    "idempotency-key: {}\r\n",
                    key.to_ascii_lowercase()
                )),
                "{head}"
            );
        }
        assert_eq!(attempts.len(), 3);
        for (index, pair) in attempts.windows(2).enumerate() {
            let backoff = Duration::from_millis(RETRIED.attempts[index].backoff_ms.unwrap());
            let gap = pair[1].at - pair[0].at;
            assert!(gap >= backoff, "{gap:?} < {backoff:?}");
            assert!(
                gap < backoff + Duration::from_millis(RETRIED.jitter_ms + 500),
                "{gap:?}"
            );
            assert_eq!(pair[0].outcome, Outcome::ServerError { status: 503 });
        }
    }

    #[tokio::test]
    async fn a_request_without_its_scope_value_is_not_sent() {
        const SCOPED: Contract = Contract {
            scope: &[Scope::Query("tenant")],
            ..RETRIED
        };
        let (base, heads) = unavailable_server();
        let error = send(
            &Transport::default(),
            get(&base),
            Some(&SCOPED),
            Key::New,
            no_body,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&error, Error::Request(why) if why.contains("tenant")),
            "{error:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(heads.try_iter().count(), 0);
    }

    #[tokio::test]
    async fn without_a_contract_a_request_is_sent_once() {
        let (base, heads) = unavailable_server();
        let error = send(&Transport::default(), get(&base), None, Key::New, no_body)
            .await
            .unwrap_err();
        let Error::GaveUp {
            key: None,
            attempts,
        } = error
        else {
            panic!("{error:?}");
        };
        assert_eq!(attempts.len(), 1);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(heads.try_iter().count(), 1);
    }

    #[tokio::test]
    async fn a_given_key_is_sent_as_given() {
        let (base, heads) = unavailable_server();
        let given = Key::Given("t:resumed".to_string());
        let error = send(
            &Transport::default(),
            get(&base),
            Some(&RETRIED),
            given,
            no_body,
        )
        .await
        .unwrap_err();
        assert_eq!(error.key(), Some("t:resumed"));
        let heads: Vec<String> = heads.try_iter().collect();
        assert_eq!(heads.len(), 3, "{heads:?}");
        assert!(
            heads
                .iter()
                .all(|head| head.contains("idempotency-key: t:resumed\r\n")),
            "{heads:?}"
        );
    }
}
