//! The idempotency layer. Every idempotent operation runs as
//!
//! 1. [`App::begin`]: validate the key, fingerprint the request, and claim
//!    the key with one atomic statement that commits on its own, so that a
//!    duplicate sees the claim at once (in progress → `Retry-After`);
//! 2. the business function, inside a transaction;
//! 3. [`Call::finish`]: store the answer with an UPDATE fenced on this
//!    attempt's claim token, in the business transaction, then commit.
//!
//! Who owns a key is decided by the claim statement itself (its claim token
//! returned, or on MySQL no unique violation) or by reading the claim token
//! back, never by an affected-row count (MySQL reports 1 for a duplicate
//! too). Retrying
//! after a recorded failure, taking over an in-progress record whose lease
//! (`server.max-processing`) ran out, and reusing a key whose window ended
//! are conditional UPDATEs fenced on the claim token and status that were
//! read, so one of many concurrent requests wins. Losing a race on the
//! database (unique violation, serialization failure, deadlock) is an
//! answer (in progress or replay), never a 500.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{FromRequestParts, Path, Query};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use regex::Regex;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::App;
use crate::http::{MAX_BODY_BYTES, Reply, Request};
use crate::metrics::Counters;
use crate::store::{self, Finish, NewClaim, Reclaim, Record, Tx};

/// Record states, as stored.
pub const IN_PROGRESS: &str = "in_progress";
pub const COMPLETED: &str = "completed";
pub const FAILED: &str = "failed";

/// Marks an answer replayed from the record.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// How often one request tries to claim before answering "in progress".
const CLAIM_ATTEMPTS: usize = 3;

/// One operation of the spec.
pub struct Operation {
    /// The operationId (or `METHOD /path`).
    pub name: &'static str,
    /// Its identifier in this crate (metrics label, module name).
    pub ident: &'static str,
    pub method: &'static str,
    pub path: &'static str,
    /// The file that holds its business function.
    pub business_file: &'static str,
    /// `None`: not idempotent, served in a plain transaction.
    pub contract: Option<Contract>,
    pub counters: Counters,
    pub key_regex: OnceLock<Regex>,
}

/// An operation's `x-idempotency` contract, resolved by idemgen.
pub struct Contract {
    pub key: Source,
    /// `key.format`, for messages.
    pub key_format: &'static str,
    /// The anchored regular expression `key.format` describes.
    pub key_pattern: &'static str,
    /// Capture groups of `key_pattern` that must equal a body field.
    pub key_fields: &'static [(usize, &'static str)],
    pub max_key_len: usize,
    /// `false` when the profile makes the key optional (no key: no record).
    pub key_required: bool,
    pub missing_key_status: u16,
    /// Values that namespace the key (tenant, principal).
    pub scope: &'static [Source],
    pub window_ms: i64,
    /// How long an in-progress claim is held before another request may
    /// take it over (`server.max-processing`).
    pub lease_ms: i64,
    pub retry_after_secs: u64,
    pub in_progress_status: u16,
    pub conflict_status: u16,
    /// `responses.failed: retry`: a recorded failure may be claimed again.
    pub retry_failed: bool,
    pub fingerprint: Fingerprint,
}

/// Where a value travels.
pub enum Source {
    Header(&'static str),
    Query(&'static str),
    /// A JSON pointer into the request body.
    Body(&'static str),
}

/// What the request fingerprint covers.
pub struct Fingerprint {
    pub method: bool,
    pub path: bool,
    pub query: bool,
    pub body: bool,
    /// Hash the body as canonical JSON (sorted keys, no whitespace).
    pub canonical_json: bool,
}

/// A request that owns its key (or needs none) and may run its business
/// function; [`Call::finish`] ends it.
pub struct Call {
    app: App,
    operation: &'static Operation,
    tx: Tx,
    request: Request,
    claim: Option<Claim>,
}

struct Claim {
    scope: String,
    key: String,
    fingerprint: String,
    token: String,
}

enum Decision {
    Answer(Response),
    Reclaim(Reason),
}

#[derive(Debug, Clone, Copy)]
enum Reason {
    Expired,
    RetryAfterFailure,
    Takeover,
}

impl App {
    /// Reads the request and, for an idempotent operation, claims its key.
    /// `Err` is the answer to send instead of running the business function.
    pub async fn begin(
        &self,
        operation: &'static Operation,
        request: axum::extract::Request,
    ) -> Result<Call, Response> {
        let request = read_request(request).await?;
        let claim = match &operation.contract {
            Some(contract) => self.claim(operation, contract, &request).await?,
            None => None,
        };
        match store::begin(&self.pool).await {
            Ok(tx) => Ok(Call {
                app: self.clone(),
                operation,
                tx,
                request,
                claim,
            }),
            Err(error) => {
                if let Some(claim) = &claim {
                    // Give the key back at once rather than after the lease.
                    let reply = Reply::problem(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "database unavailable",
                        "the request was not processed; retry it with the same key",
                    );
                    self.record_failure(operation, claim, &reply).await;
                }
                Err(internal(operation, &error))
            }
        }
    }

    async fn claim(
        &self,
        operation: &'static Operation,
        contract: &Contract,
        request: &Request,
    ) -> Result<Option<Claim>, Response> {
        let Some(key) = contract.key.value(request) else {
            if !contract.key_required {
                return Ok(None);
            }
            return Err(problem(
                contract.missing_key_status,
                "missing idempotency key",
                &format!("send a key of the form `{}`", contract.key_format),
            ));
        };
        if let Err(why) = validate_key(operation, contract, &key, request) {
            return Err(problem(
                contract.missing_key_status,
                "invalid idempotency key",
                &why,
            ));
        }
        let scope = scope_of(contract, request);
        let fingerprint = fingerprint(contract, request);
        let counters = &operation.counters;
        // Every token this request wrote: a claim whose read-back failed is
        // still recognised as ours on the next attempt.
        let mut written: Vec<String> = Vec::new();

        for _ in 0..CLAIM_ATTEMPTS {
            let now = now_ms();
            let token = new_token();
            written.push(token.clone());
            let claim = NewClaim {
                scope: &scope,
                key: &key,
                fingerprint: &fingerprint,
                token: &token,
                lease_expires_at: now + contract.lease_ms,
                expires_at: now + contract.window_ms,
                now,
            };
            match store::claim(&self.pool, &claim).await {
                Ok(true) => {
                    counters.first_attempts.inc();
                    return Ok(Some(Claim {
                        scope,
                        key,
                        fingerprint,
                        token,
                    }));
                }
                // Someone else holds the key: read it back below.
                Ok(false) => {}
                Err(error) => {
                    if !store::is_lost_race(&error) {
                        return Err(internal(operation, &error));
                    }
                    tracing::debug!(operation = operation.name, %error, "claim lost a race");
                }
            }
            let record = match self.read(operation, &scope, &key).await? {
                Some(record) => record,
                None => continue,
            };
            if written.contains(&record.claim_token) {
                counters.first_attempts.inc();
                return Ok(Some(Claim {
                    scope,
                    key,
                    fingerprint,
                    token: record.claim_token,
                }));
            }
            let reason = match decide(operation, contract, &record, &fingerprint, now) {
                Decision::Answer(answer) => return Err(answer),
                Decision::Reclaim(reason) => reason,
            };
            let token = new_token();
            written.push(token.clone());
            let reclaim = Reclaim {
                claim: NewClaim {
                    token: &token,
                    ..claim
                },
                old_token: &record.claim_token,
                old_status: &record.status,
            };
            if let Err(error) = store::reclaim(&self.pool, &reclaim).await
                && !store::is_lost_race(&error)
            {
                return Err(internal(operation, &error));
            }
            let won = self
                .read(operation, &scope, &key)
                .await?
                .is_some_and(|record| record.claim_token == token);
            if won {
                match reason {
                    Reason::Takeover => counters.takeovers.inc(),
                    Reason::Expired | Reason::RetryAfterFailure => counters.first_attempts.inc(),
                }
                tracing::info!(
                    operation = operation.name,
                    ?reason,
                    "claimed an existing key"
                );
                return Ok(Some(Claim {
                    scope,
                    key,
                    fingerprint,
                    token,
                }));
            }
        }
        counters.in_progress.inc();
        Err(in_progress(contract))
    }

    /// Reads a record; a lost race reads as "no record yet".
    async fn read(
        &self,
        operation: &Operation,
        scope: &str,
        key: &str,
    ) -> Result<Option<Record>, Response> {
        match store::read(&self.pool, scope, key).await {
            Ok(record) => Ok(record),
            Err(error) if store::is_lost_race(&error) => Ok(None),
            Err(error) => Err(internal(operation, &error)),
        }
    }

    /// The answer for a key someone else holds now.
    async fn answer_from_record(&self, operation: &Operation, claim: &Claim) -> Response {
        let contract = operation
            .contract
            .as_ref()
            .expect("only idempotent operations hold claims");
        match self.read(operation, &claim.scope, &claim.key).await {
            Ok(Some(record)) => {
                match decide(operation, contract, &record, &claim.fingerprint, now_ms()) {
                    Decision::Answer(answer) => answer,
                    Decision::Reclaim(_) => {
                        operation.counters.in_progress.inc();
                        in_progress(contract)
                    }
                }
            }
            Ok(None) => {
                operation.counters.in_progress.inc();
                in_progress(contract)
            }
            Err(answer) => answer,
        }
    }

    async fn record_failure(&self, operation: &Operation, claim: &Claim, reply: &Reply) {
        operation.counters.failures.inc();
        let finish = Finish {
            status: FAILED,
            reply,
            scope: &claim.scope,
            key: &claim.key,
            token: &claim.token,
            now: now_ms(),
        };
        match store::finish(&self.pool, &finish).await {
            Ok(true) => {}
            Ok(false) => tracing::warn!(
                operation = operation.name,
                "failure not recorded: the claim was taken over"
            ),
            Err(error) => tracing::warn!(
                operation = operation.name,
                %error,
                "failure not recorded; the key becomes claimable when its lease ends"
            ),
        }
    }
}

impl Call {
    /// The open transaction and the request, for the business function.
    pub fn parts(&mut self) -> (&mut Tx, &Request) {
        (&mut self.tx, &self.request)
    }

    /// Ends the request with the business function's outcome: a success is
    /// stored (fenced on the claim token) and committed with the business
    /// write; anything else rolls the business write back and is recorded
    /// as a failure.
    pub async fn finish(self, outcome: Result<Reply, sqlx::Error>) -> Response {
        let Call {
            app,
            operation,
            mut tx,
            request: _,
            claim,
        } = self;
        let reply = match outcome {
            Ok(reply) if reply.body.len() > MAX_BODY_BYTES => {
                tracing::error!(
                    operation = operation.name,
                    bytes = reply.body.len(),
                    "response too large to store"
                );
                Reply::problem(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "response too large",
                    "the answer exceeded the storable size; nothing was committed",
                )
            }
            Ok(reply) => reply,
            Err(error) => {
                tracing::error!(operation = operation.name, %error, "business function failed");
                Reply::problem(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal error",
                    "the request failed and nothing was committed; it may be retried",
                )
            }
        };

        let Some(claim) = claim else {
            let done = if reply.is_success() {
                tx.commit().await
            } else {
                tx.rollback().await
            };
            return match done {
                Ok(()) => reply.into_response(),
                Err(error) => internal(operation, &error),
            };
        };

        if !reply.is_success() {
            if let Err(error) = tx.rollback().await {
                tracing::warn!(operation = operation.name, %error, "rollback failed");
            }
            app.record_failure(operation, &claim, &reply).await;
            return reply.into_response();
        }

        let finish = Finish {
            status: COMPLETED,
            reply: &reply,
            scope: &claim.scope,
            key: &claim.key,
            token: &claim.token,
            now: now_ms(),
        };
        match store::finish(&mut *tx, &finish).await {
            Ok(true) => {}
            Ok(false) => {
                let _ = tx.rollback().await;
                tracing::warn!(
                    operation = operation.name,
                    "the claim was taken over after its lease ran out; rolled back"
                );
                return app.answer_from_record(operation, &claim).await;
            }
            Err(error) => {
                let _ = tx.rollback().await;
                if store::is_lost_race(&error) {
                    return app.answer_from_record(operation, &claim).await;
                }
                let failed = Reply::problem(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal error",
                    "the answer could not be stored; nothing was committed",
                );
                app.record_failure(operation, &claim, &failed).await;
                return internal(operation, &error);
            }
        }
        match tx.commit().await {
            Ok(()) => reply.into_response(),
            Err(error) if store::is_lost_race(&error) => {
                app.answer_from_record(operation, &claim).await
            }
            Err(error) => internal(operation, &error),
        }
    }
}

fn decide(
    operation: &Operation,
    contract: &Contract,
    record: &Record,
    fingerprint: &str,
    now: i64,
) -> Decision {
    let counters = &operation.counters;
    if record.expires_at <= now {
        // Past the window the key is new, whatever it was used for.
        return Decision::Reclaim(Reason::Expired);
    }
    if record.fingerprint != fingerprint {
        counters.conflicts.inc();
        return Decision::Answer(problem(
            contract.conflict_status,
            "idempotency key reused",
            "this key was used with a different request; the first request's result stands",
        ));
    }
    match record.status.as_str() {
        COMPLETED => {
            counters.replays.inc();
            Decision::Answer(replay(record))
        }
        FAILED if contract.retry_failed => Decision::Reclaim(Reason::RetryAfterFailure),
        FAILED => {
            counters.conflicts.inc();
            Decision::Answer(problem(
                contract.conflict_status,
                "earlier attempt failed",
                "the first request with this key failed; send a new key to try again",
            ))
        }
        _ if record.lease_expires_at <= now => Decision::Reclaim(Reason::Takeover),
        _ => {
            counters.in_progress.inc();
            Decision::Answer(in_progress(contract))
        }
    }
}

/// The stored answer: status, content type and body, marked as a replay.
fn replay(record: &Record) -> Response {
    let status = record
        .response_status
        .and_then(|status| StatusCode::from_u16(status).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, record.response_body.clone().unwrap_or_default()).into_response();
    let headers = response.headers_mut();
    if let Some(value) = record
        .response_content_type
        .as_deref()
        .and_then(|value| HeaderValue::from_str(value).ok())
    {
        headers.insert(header::CONTENT_TYPE, value);
    }
    headers.insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
    response
}

fn in_progress(contract: &Contract) -> Response {
    let mut response = problem(
        contract.in_progress_status,
        "request in progress",
        "a request with this key is still being processed; retry after the Retry-After delay",
    );
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(contract.retry_after_secs),
    );
    response
}

fn problem(status: u16, title: &str, detail: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    Reply::problem(status, title, detail).into_response()
}

fn internal(operation: &Operation, error: &sqlx::Error) -> Response {
    tracing::error!(operation = operation.name, %error, "database error");
    problem(500, "internal error", "the request could not be processed")
}

fn too_large() -> Response {
    problem(
        413,
        "request body too large",
        &format!("the body exceeds {MAX_BODY_BYTES} bytes; it was neither processed nor recorded"),
    )
}

async fn read_request(request: axum::extract::Request) -> Result<Request, Response> {
    let (mut parts, body) = request.into_parts();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok());
    if declared.is_some_and(|length| length > MAX_BODY_BYTES) {
        return Err(too_large());
    }
    // The only error left for a bounded read is a body over the limit (or
    // a client that went away, who will not see the answer anyway).
    let body = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| too_large())?;
    let path_params = Path::<HashMap<String, String>>::from_request_parts(&mut parts, &())
        .await
        .map(|Path(params)| params)
        .unwrap_or_default();
    let query = Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
        .map(|Query(query)| query)
        .unwrap_or_default();
    Ok(Request {
        method: parts.method,
        path: parts.uri.path().to_string(),
        path_params,
        query,
        headers: parts.headers,
        body,
    })
}

impl Source {
    fn value(&self, request: &Request) -> Option<String> {
        match self {
            Source::Header(name) => request
                .headers
                .get(*name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_string),
            Source::Query(name) => request.query.get(*name).cloned(),
            Source::Body(pointer) => body_text(&request.body, pointer),
        }
    }
}

/// The text of the body's field at `pointer` (a string, or a number as
/// written).
fn body_text(body: &[u8], pointer: &str) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    match value.pointer(pointer)? {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

fn validate_key(
    operation: &Operation,
    contract: &Contract,
    key: &str,
    request: &Request,
) -> Result<(), String> {
    if key.len() > contract.max_key_len {
        return Err(format!(
            "the key is longer than {} bytes",
            contract.max_key_len
        ));
    }
    let regex = operation
        .key_regex
        .get_or_init(|| Regex::new(contract.key_pattern).expect("idemgen emits valid patterns"));
    let Some(captures) = regex.captures(key) else {
        return Err(format!(
            "the key does not have the form `{}`",
            contract.key_format
        ));
    };
    for (group, pointer) in contract.key_fields {
        let part = captures.get(*group).map(|part| part.as_str());
        if part != body_text(&request.body, pointer).as_deref() {
            return Err(format!(
                "the key's `{{field:{pointer}}}` part must equal the request body's `{pointer}`"
            ));
        }
    }
    Ok(())
}

/// The key's namespace: a hash of the `key.scope` values, or empty.
fn scope_of(contract: &Contract, request: &Request) -> String {
    if contract.scope.is_empty() {
        return String::new();
    }
    let mut hasher = Sha256::new();
    for source in contract.scope {
        hash_part(
            &mut hasher,
            source.value(request).unwrap_or_default().as_bytes(),
        );
    }
    hex(&hasher.finalize())
}

/// SHA-256 over the parts the contract names, each length-prefixed so that
/// parts cannot run into each other.
fn fingerprint(contract: &Contract, request: &Request) -> String {
    let include = &contract.fingerprint;
    let mut hasher = Sha256::new();
    if include.method {
        hash_part(&mut hasher, request.method.as_str().as_bytes());
    }
    if include.path {
        hash_part(&mut hasher, request.path.as_bytes());
    }
    if include.query {
        let mut pairs: Vec<_> = request.query.iter().collect();
        pairs.sort();
        let mut text = Vec::new();
        for (name, value) in pairs {
            write_canonical(&Value::String(name.clone()), &mut text);
            write_canonical(&Value::String(value.clone()), &mut text);
        }
        hash_part(&mut hasher, &text);
    }
    if include.body {
        match serde_json::from_slice::<Value>(&request.body) {
            Ok(value) if include.canonical_json => {
                let mut text = Vec::new();
                write_canonical(&value, &mut text);
                hash_part(&mut hasher, &text);
            }
            _ => hash_part(&mut hasher, &request.body),
        }
    }
    hex(&hasher.finalize())
}

fn hash_part(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_be_bytes());
    hasher.update(bytes);
}

/// Canonical JSON: object keys sorted, no insignificant whitespace.
pub fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (name, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(&Value::String(name.clone()), out);
                out.push(b':');
                write_canonical(value, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => out.extend(serde_json::to_vec(scalar).expect("scalars serialise")),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn new_token() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Unix time in milliseconds, the unit of every time in the record table.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A record time (Unix milliseconds) as RFC 3339 UTC, e.g.
/// `2024-06-15T08:30:00.123Z`.
pub fn rfc3339(unix_ms: i64) -> String {
    let days = unix_ms.div_euclid(86_400_000);
    let ms_of_day = unix_ms.rem_euclid(86_400_000);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1000 % 60,
        ms_of_day % 1000
    )
}
