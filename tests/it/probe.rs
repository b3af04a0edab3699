//! `idemgen probe` against servers written here with std::net: one that
//! keeps every promise, and others that each break one (check-then-write,
//! an empty 200 while in progress, an ignored fingerprint, an ignored
//! tenant or principal, an unauthenticated request processed, a replay
//! that is not the first answer whole). Then against the real
//! payment-callback example when it is in the tree.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::skip;

use crate::support::build;

use build::{Binaries, Dialect, Profile};

const SPEC: &str = r#"openapi: 3.0.3
info: {title: probe test, version: "1"}
x-idempotency:
  client: {timeout: 5s, retries: [200ms, 800ms]}
  server: {max-processing: 3s}
paths:
  /pay:
    post:
      operationId: pay
      parameters:
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [order_no, amount, date]
              properties:
                order_no: {type: string, maxLength: 32, example: ORD-1}
                amount: {type: integer, minimum: 1}
                date: {type: string, pattern: "^[0-9]{8}$"}
      x-idempotency:
        key: {in: header, name: Idempotency-Key, format: "pay:{date}:{uuid}"}
        window: 18s
        responses:
          in-progress: {status: 429, retry-after: 1s}
      responses:
        "200": {description: paid}
        "400": {description: bad key}
        "409": {description: conflict}
        "429":
          description: in progress
          headers: {Retry-After: {required: true, schema: {type: integer}}}
  /refunds:
    post:
      operationId: refund
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [refund_id, refund_key, amount]
              properties:
                refund_id: {type: string, maxLength: 12}
                refund_key: {type: string}
                amount: {type: integer, minimum: 1}
            examples:
              small: {value: {refund_id: RF-7, refund_key: "", amount: 5}}
      x-idempotency:
        key: {in: body, name: /refund_key, format: "refund:{field:/refund_id}:{random:16}"}
        window: 18s
      responses:
        "200": {description: refunded}
        "400": {description: bad key}
        "409": {description: conflict}
        "429":
          description: in progress
          headers: {Retry-After: {required: true, schema: {type: integer}}}
"#;

/// What a test server gets wrong.
#[derive(Clone, Copy, PartialEq)]
enum Flaw {
    None,
    /// Looks for a finished record, works, then writes: no claim.
    CheckThenWrite,
    /// Answers an empty 200 while the first attempt runs.
    EmptyWhileInProgress,
    /// Replays for the same key whatever the body.
    IgnoresFingerprint,
    /// Answers 429 while in progress but without `Retry-After`.
    NoRetryAfter,
    /// Answers the first attempt but never marks its record done, so it
    /// says "in progress, retry in 1 s" long past `server.max-processing`
    /// (an attempt whose claim is never released).
    StaysInProgress,
    /// As `StaysInProgress`, and the first request for a key is read 40 ms
    /// late, so the duplicate sent after it claims the key and runs (as a
    /// busy scheduler may order them).
    StaysInProgressFirstReadLate,
    /// Keeps every promise, but every execution answers the same bytes
    /// (no payment id), so a second execution does not show in the body.
    SameAnswerEachTime,
    /// Check-then-write whose every execution answers the same bytes, and
    /// whose replays say `Idempotent-Replayed: true`: the double charge
    /// shows only in answers that are not marked.
    CheckThenWriteSameAnswer,
    /// As `CheckThenWriteSameAnswer`, with first answers that say
    /// `Idempotent-Replayed: false`.
    CheckThenWriteMarkedFalse,
    /// Every request: 503 with `Retry-After` (a service that is down).
    AlwaysUnavailable,
    /// Every request: 401 (the probe's credential is wrong), before any
    /// work.
    RefusesEveryone,
    /// Claims the key, runs the step, answers 500 and never releases the
    /// claim: every retry is told "in progress" until the key's window
    /// ends.
    FailsAndKeepsItsClaim,
    /// No claim: every request runs the step, and the ones that finish
    /// after the first meet its row (a unique index) and answer 500; the
    /// step ran for each.
    RunsThenMeetsAUniqueIndex,
    /// Keys its store by the key alone, not by (tenant, key).
    IgnoresTenant,
    /// Processes a request that carries no tenant.
    ProcessesWithoutTenant,
    /// Authenticates, but keys its store by the key alone, not by
    /// (principal, key).
    IgnoresPrincipal,
    /// Processes a request without credentials (as nobody).
    ProcessesUnauthenticated,
    /// Keys its store by the key alone and claims the key before it
    /// authenticates: a request without credentials is refused, but its
    /// claim is never released.
    ClaimsBeforeAuthenticating,
    /// A per-process idempotency layer that keeps every promise, whose
    /// every execution answers the same bytes, and whose replays carry
    /// this header with `true` (none: its replays are unmarked).
    SameAnswerMarkedAs(Option<&'static str>),
    /// Reads a quoted key (`"k"`) as an sf-string to check it, but keeps
    /// its record under the header's text: `k` and `"k"` are two keys.
    QuotedKeyIsAnotherKey,
    /// Refuses a key sent as an sf-string (`"k"`), the IETF draft's form.
    RefusesQuotedKey,
    /// Check-then-write whose every execution answers the same bytes, and
    /// whose replays carry no mark: its answers look like one payment
    /// however many it made.
    CheckThenWriteUnmarked,
    /// Takes any header text for a key, well-formed or not.
    AcceptsAnyKey,
    /// Keeps every promise, and has a business rule of its own: one
    /// payment per `order_no`. A new key for an order already paid (or
    /// being paid) is refused with 422 before it is claimed.
    OnePaymentPerOrder,
}

impl Flaw {
    /// The header its replays carry with `true`, if any.
    fn replay_mark(self) -> Option<&'static str> {
        match self {
            Flaw::SameAnswerMarkedAs(mark) => mark,
            Flaw::CheckThenWriteUnmarked => None,
            _ => Some("Idempotent-Replayed"),
        }
    }
}

/// The bearer tokens `/principal-pay` accepts, and whose they are.
const TOKENS: [(&str, &str); 2] = [
    ("Bearer alice-secret-1", "alice"),
    ("Bearer bob-secret-2", "bob"),
];

/// `--as` for both principals of [`TOKENS`].
const AS_ALICE_AND_BOB: [&str; 4] = [
    "--as",
    "alice=Authorization: Bearer alice-secret-1",
    "--as",
    "bob=Authorization: Bearer bob-secret-2",
];

enum Record {
    InProgress { body: Vec<u8> },
    Done { body: Vec<u8>, answer: Vec<u8> },
}

struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

fn reply(status: u16, body: &str) -> Reply {
    Reply {
        status,
        headers: Vec::new(),
        body: body.as_bytes().to_vec(),
    }
}

fn valid_key(key: &str) -> bool {
    let Some(rest) = key.strip_prefix("pay:") else {
        return false;
    };
    let Some((date, uuid)) = rest.split_once(':') else {
        return false;
    };
    key.len() <= 128
        && date.len() == 8
        && date.bytes().all(|b| b.is_ascii_digit())
        && uuid.len() == 36
        && uuid.bytes().enumerate().all(|(at, b)| {
            matches!(at, 8 | 13 | 18 | 23) == (b == b'-') && (b == b'-' || b.is_ascii_hexdigit())
        })
}

/// `refund:{field:/refund_id}:{random:16}`, the key inside the body.
fn refund_key(body: &[u8]) -> Option<String> {
    let body: Value = serde_json::from_slice(body).ok()?;
    let key = body.get("refund_key")?.as_str()?;
    let refund_id = body.get("refund_id")?.as_str()?;
    let random = key.strip_prefix(&format!("refund:{refund_id}:"))?;
    (random.len() == 22
        && random
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
    .then(|| key.to_string())
}

/// The payment (and refund) handler, with one promise broken by `flaw`.
fn handle(
    flaw: Flaw,
    records: &Mutex<HashMap<String, Record>>,
    ledger: &Mutex<HashMap<String, Vec<u64>>>,
    request: Request,
) -> Reply {
    if request.method == "GET" {
        return read_ledger(ledger, &request.path);
    }
    let order_no = serde_json::from_slice::<Value>(&request.body)
        .ok()
        .and_then(|body| body.get("order_no")?.as_str().map(str::to_string))
        .unwrap_or_default();
    // `/principal-pay` declares `key.scope: [principal]` and a bearer
    // token; it authenticates first, and its answers echo the token (as a
    // careless service might), which the report must not show.
    let authorization = request
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        .map(|(_, value)| value.clone());
    let mut refuse_after_claim = false;
    let principal = if request.path == "/principal-pay" {
        let known = TOKENS
            .iter()
            .find(|(token, _)| Some(*token) == authorization.as_deref())
            .map(|(_, principal)| *principal);
        match (known, flaw) {
            (None, Flaw::ProcessesUnauthenticated) => Some(""),
            (None, Flaw::ClaimsBeforeAuthenticating) => {
                refuse_after_claim = true;
                Some("")
            }
            (None, _) => return reply(401, r#"{"title":"unauthenticated"}"#),
            (Some(_), Flaw::IgnoresPrincipal | Flaw::ClaimsBeforeAuthenticating) => Some(""),
            (Some(principal), _) => Some(principal),
        }
    } else {
        None
    };
    let key = if request.path == "/refunds" {
        refund_key(&request.body)
    } else {
        request
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("idempotency-key"))
            .and_then(|(_, value)| {
                // The draft's sf-string form and the bare key are one key.
                let key = header_key(value)?;
                match flaw {
                    Flaw::RefusesQuotedKey if value.starts_with('"') => None,
                    Flaw::AcceptsAnyKey => Some(key),
                    _ if !valid_key(&key) => None,
                    Flaw::QuotedKeyIsAnotherKey => Some(value.clone()),
                    _ => Some(key),
                }
            })
    };
    let Some(key) = key else {
        return reply(400, r#"{"title":"missing or malformed key"}"#);
    };
    // `/tenant-pay` declares `key.scope: [header:X-Tenant]`.
    let key = if request.path == "/tenant-pay" {
        let tenant = request
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("x-tenant"))
            .map(|(_, value)| value.clone());
        match (tenant, flaw) {
            (None, Flaw::ProcessesWithoutTenant) => key,
            (None, _) => return reply(400, r#"{"title":"missing tenant"}"#),
            (Some(_), Flaw::IgnoresTenant) => key,
            (Some(tenant), _) => format!("{tenant}\n{key}"),
        }
    } else {
        key
    };
    let key = match principal {
        Some(principal) => format!("{principal}\n{key}"),
        None => key,
    };
    let echo = match principal {
        Some(_) => format!(r#","by":"{}""#, authorization.unwrap_or_default()),
        None => String::new(),
    };
    let work = || {
        // Long enough that scheduling noise on a busy machine does not
        // decide which request overlaps which.
        std::thread::sleep(Duration::from_millis(150));
        let id = PAYMENT_IDS.fetch_add(1, Ordering::SeqCst);
        ledger
            .lock()
            .unwrap()
            .entry(order_no.clone())
            .or_default()
            .push(id);
        if matches!(
            flaw,
            Flaw::SameAnswerEachTime
                | Flaw::CheckThenWriteSameAnswer
                | Flaw::CheckThenWriteMarkedFalse
                | Flaw::CheckThenWriteUnmarked
                | Flaw::SameAnswerMarkedAs(_)
        ) {
            return br#"{"status":"paid"}"#.to_vec();
        }
        format!(r#"{{"payment_id":{id},"status":"paid"{echo}}}"#).into_bytes()
    };
    if flaw == Flaw::AlwaysUnavailable {
        let mut down = reply(503, r#"{"title":"unavailable"}"#);
        down.headers.push(("Retry-After", "1".into()));
        return down;
    }
    if flaw == Flaw::RefusesEveryone {
        return reply(401, r#"{"title":"unauthenticated"}"#);
    }
    if flaw == Flaw::RunsThenMeetsAUniqueIndex {
        if let Some(Record::Done { answer, .. }) = records.lock().unwrap().get(&key) {
            return replayed(flaw, answer.clone());
        }
        let answer = work();
        if records.lock().unwrap().contains_key(&key) {
            // The insert waited on the first attempt's row lock, so this
            // answer comes last and took longest.
            std::thread::sleep(Duration::from_millis(100));
            return reply(
                500,
                r#"{"title":"duplicate key value violates unique constraint"}"#,
            );
        }
        records.lock().unwrap().insert(
            key,
            Record::Done {
                body: request.body,
                answer: answer.clone(),
            },
        );
        return Reply {
            status: 200,
            headers: Vec::new(),
            body: answer,
        };
    }
    if matches!(
        flaw,
        Flaw::CheckThenWrite
            | Flaw::CheckThenWriteSameAnswer
            | Flaw::CheckThenWriteMarkedFalse
            | Flaw::CheckThenWriteUnmarked
    ) {
        if let Some(Record::Done { answer, .. }) = records.lock().unwrap().get(&key) {
            return replayed(flaw, answer.clone());
        }
        let answer = work();
        records.lock().unwrap().insert(
            key,
            Record::Done {
                body: request.body,
                answer: answer.clone(),
            },
        );
        let headers = match flaw {
            Flaw::CheckThenWriteMarkedFalse => vec![("Idempotent-Replayed", "false".into())],
            _ => Vec::new(),
        };
        return Reply {
            status: 200,
            headers,
            body: answer,
        };
    }
    if flaw == Flaw::StaysInProgressFirstReadLate
        && FIRST_ARRIVALS.lock().unwrap().insert(key.clone())
    {
        std::thread::sleep(Duration::from_millis(40));
    }
    {
        let mut records = records.lock().unwrap();
        match records.get(&key) {
            Some(Record::InProgress { body } | Record::Done { body, .. })
                if *body != request.body && flaw != Flaw::IgnoresFingerprint =>
            {
                return reply(409, r#"{"title":"key reused with another body"}"#);
            }
            Some(Record::InProgress { .. }) if flaw == Flaw::EmptyWhileInProgress => {
                return reply(200, "");
            }
            Some(Record::InProgress { .. }) => {
                let mut busy = reply(429, r#"{"title":"in progress"}"#);
                if flaw != Flaw::NoRetryAfter {
                    busy.headers.push(("Retry-After", "1".into()));
                }
                return busy;
            }
            Some(Record::Done { answer, .. }) => return replayed(flaw, answer.clone()),
            None if flaw == Flaw::OnePaymentPerOrder && {
                let order = |body: &[u8]| {
                    serde_json::from_slice::<Value>(body)
                        .ok()
                        .and_then(|body| body.get("order_no").cloned())
                };
                let wanted = order(&request.body);
                wanted.is_some()
                    && records.values().any(|record| match record {
                        Record::InProgress { body } | Record::Done { body, .. } => {
                            order(body) == wanted
                        }
                    })
            } =>
            {
                return reply(422, r#"{"title":"this order is already paid"}"#);
            }
            None => {
                records.insert(
                    key.clone(),
                    Record::InProgress {
                        body: request.body.clone(),
                    },
                );
            }
        }
    }
    if refuse_after_claim {
        return reply(401, r#"{"title":"unauthenticated"}"#);
    }
    let answer = work();
    if flaw == Flaw::FailsAndKeepsItsClaim {
        return reply(500, r#"{"title":"the payment provider failed"}"#);
    }
    if !matches!(
        flaw,
        Flaw::StaysInProgress | Flaw::StaysInProgressFirstReadLate
    ) {
        records.lock().unwrap().insert(
            key,
            Record::Done {
                body: request.body,
                answer: answer.clone(),
            },
        );
    }
    Reply {
        status: 200,
        headers: Vec::new(),
        body: answer,
    }
}

fn replayed(flaw: Flaw, answer: Vec<u8>) -> Reply {
    Reply {
        status: 200,
        headers: flaw
            .replay_mark()
            .map(|mark| (mark, "true".to_string()))
            .into_iter()
            .collect(),
        body: answer,
    }
}

/// The key a header value carries: the value bare, or the text of a whole
/// sf-string (`"k"`, `\"` and `\\` escaped); `None` for a broken one.
fn header_key(value: &str) -> Option<String> {
    let Some(quoted) = value.strip_prefix('"') else {
        return Some(value.to_string());
    };
    let mut key = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ ('"' | '\\')) => key.push(escaped),
                _ => return None,
            },
            '"' => return chars.next().is_none().then_some(key),
            ' '..='~' => key.push(c),
            _ => return None,
        }
    }
    None
}

/// Keys some request has already carried, for
/// [`Flaw::StaysInProgressFirstReadLate`].
static FIRST_ARRIVALS: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Mutex::default);

/// Payment ids come from one business database, whichever instance and
/// idempotency store served the request.
static PAYMENT_IDS: AtomicU64 = AtomicU64::new(1000);

/// An idempotency store: key → record.
type Store = Arc<Mutex<HashMap<String, Record>>>;

/// Serves `flaw`'s handler with a store of its own; returns the base URL.
fn serve(flaw: Flaw) -> String {
    serve_with(flaw, Store::default())
}

/// Serves `flaw`'s handler on `store` on a free loopback port, one thread
/// per connection, one request per connection; returns the base URL.
/// Instances given one store stand for a deployment that shares it.
fn serve_with(flaw: Flaw, store: Store) -> String {
    serve_on(flaw, store, Ledger::default())
}

/// As [`serve_with`], its payments recorded in `ledger`: instances given
/// one ledger share one business database, whatever their stores.
fn serve_on(flaw: Flaw, store: Store, ledger: Ledger) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let store = Arc::clone(&store);
            let ledger = Arc::clone(&ledger);
            std::thread::spawn(move || {
                let _ = answer(stream, |request| handle(flaw, &store, &ledger, request));
            });
        }
    });
    format!("http://{address}")
}

/// The business database: each order's payments (their ids), whichever
/// instance and idempotency store made them.
type Ledger = Arc<Mutex<HashMap<String, Vec<u64>>>>;

/// The reads the payment servers answer: `GET /orders/{order_no}/payments`
/// (`{"order_no": …, "payments": [ids], "state": …}`), the same as a page
/// (`…/page`, HTML), and `/hang-up`, which answers nothing; anything else
/// is 404.
fn read_ledger(ledger: &Mutex<HashMap<String, Vec<u64>>>, path: &str) -> Reply {
    if path == "/hang-up" {
        return reply(0, "");
    }
    let Some(rest) = path.strip_prefix("/orders/") else {
        return reply(404, r#"{"title":"no such read"}"#);
    };
    let (order_no, view) = rest.split_once('/').unwrap_or((rest, ""));
    let payments = ledger
        .lock()
        .unwrap()
        .get(order_no)
        .cloned()
        .unwrap_or_default();
    match view {
        "payments" => reply(
            200,
            &serde_json::json!({
                "order_no": order_no,
                "payments": payments,
                "state": if payments.is_empty() { "open" } else { "paid" },
            })
            .to_string(),
        ),
        "page" => reply(200, "<html><body>paid</body></html>"),
        _ => reply(404, r#"{"title":"no such order view"}"#),
    }
}

/// Minimal HTTP/1.1: request line, headers, a Content-Length body.
fn answer(stream: TcpStream, handler: impl FnOnce(Request) -> Reply) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let method = line.split(' ').next().unwrap_or("").to_string();
    let path = line.split(' ').nth(1).unwrap_or("/").to_string();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    let length = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let reply = handler(Request {
        method,
        path,
        headers,
        body,
    });
    if reply.status == 0 {
        // Hang up without an answer.
        return Ok(());
    }
    let mut out = format!(
        "HTTP/1.1 {} X\r\nContent-Length: {}\r\nContent-Type: application/json\r\nConnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (name, value) in reply.headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    let mut stream = stream;
    stream.write_all(out.as_bytes())?;
    stream.write_all(&reply.body)?;
    stream.flush()
}

/// One operation whose keys are namespaced by the `X-Tenant` header.
const SCOPED_SPEC: &str = r#"openapi: 3.0.3
info: {title: probe scope test, version: "1"}
x-idempotency:
  client: {timeout: 5s, retries: [200ms, 800ms]}
  server: {max-processing: 3s}
paths:
  /tenant-pay:
    post:
      operationId: tenantPay
      parameters:
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [order_no, amount, date]
              properties:
                order_no: {type: string, maxLength: 32, example: ORD-1}
                amount: {type: integer, minimum: 1}
                date: {type: string, pattern: "^[0-9]{8}$"}
      x-idempotency:
        key:
          in: header
          name: Idempotency-Key
          format: "pay:{date}:{uuid}"
          scope: ["header:X-Tenant"]
        window: 18s
        responses:
          in-progress: {status: 429, retry-after: 1s}
      responses:
        "200": {description: paid}
        "400": {description: bad key or no tenant}
        "409": {description: conflict}
        "429":
          description: in progress
          headers: {Retry-After: {required: true, schema: {type: integer}}}
"#;

fn scoped_spec_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.yaml");
    std::fs::write(&path, SCOPED_SPEC).unwrap();
    (dir, path)
}

/// One operation behind a bearer token whose keys are namespaced by the
/// verified principal.
fn principal_spec_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.yaml");
    let spec = SCOPED_SPEC
        .replace("/tenant-pay", "/principal-pay")
        .replace("tenantPay", "principalPay")
        .replace(r#"["header:X-Tenant"]"#, "[principal]")
        .replace(
            "      x-idempotency:\n        key:",
            "      security: [{bearer: []}]\n      x-idempotency:\n        key:",
        )
        .replace(
            r#""400": {description: bad key or no tenant}"#,
            r#""400": {description: bad key}
        "401": {description: no or unknown token}"#,
        )
        + "components:\n  securitySchemes:\n    bearer: {type: http, scheme: bearer}\n";
    assert!(spec.contains("[principal]") && spec.contains("security: [{bearer"));
    std::fs::write(&path, spec).unwrap();
    (dir, path)
}

fn spec_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.yaml");
    std::fs::write(&path, SPEC).unwrap();
    (dir, path)
}

/// The spec of [`spec_file`] whose `pay` contract declares its replay
/// mark: `responses.replayed-header: {mark}`.
fn spec_file_replayed_header(mark: &str) -> (tempfile::TempDir, PathBuf) {
    let (dir, path) = spec_file();
    let in_progress = "          in-progress: {status: 429, retry-after: 1s}\n";
    assert!(SPEC.contains(in_progress));
    let spec = SPEC.replacen(
        in_progress,
        &format!("{in_progress}          replayed-header: {mark}\n"),
        1,
    );
    std::fs::write(&path, spec).unwrap();
    (dir, path)
}

fn probe(spec: &Path, base_url: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .arg("probe")
        .arg(spec)
        .args(["--base-url", base_url])
        .args(extra)
        .output()
        .unwrap()
}

/// Runs the probe of `pay` with `--format json`: exit code, check id →
/// check, and the whole report.
fn probe_json(spec: &Path, base_url: &str) -> (i32, HashMap<String, Value>, Value) {
    probe_op_json(spec, base_url, "pay")
}

fn probe_op_json(spec: &Path, base_url: &str, op: &str) -> (i32, HashMap<String, Value>, Value) {
    probe_op_json_with(spec, base_url, op, &[])
}

/// As [`probe_op_json`] with more arguments; no `--as` credential may
/// appear in its output.
fn probe_op_json_with(
    spec: &Path,
    base_url: &str,
    op: &str,
    extra: &[&str],
) -> (i32, HashMap<String, Value>, Value) {
    let mut args = vec!["--format", "json", "--op", op];
    args.extend(extra);
    let output = probe(spec, base_url, &args);
    for (token, _) in TOKENS {
        let secret = token.trim_start_matches("Bearer ");
        for stream in [&output.stdout, &output.stderr] {
            assert!(
                !String::from_utf8_lossy(stream).contains(secret),
                "a credential in the output: {}",
                String::from_utf8_lossy(stream)
            );
        }
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|error| {
        panic!(
            "not JSON ({error}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let checks = report["operations"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|check| (check["check"].as_str().unwrap().to_string(), check.clone()))
        .collect();
    (output.status.code().unwrap(), checks, report)
}

fn outcome(checks: &HashMap<String, Value>, id: &str) -> String {
    checks[id]["outcome"].as_str().unwrap().to_string()
}

fn evidence(checks: &HashMap<String, Value>, id: &str) -> String {
    checks[id]["evidence"].to_string()
}

const ALL: [&str; 9] = [
    "burst",
    "replay",
    "replay-fidelity",
    "conflict",
    "missing-key",
    "malformed-key",
    "long-key",
    "in-progress",
    "retry-after",
];

#[test]
fn a_correct_server_keeps_every_promise() {
    let (_dir, spec) = spec_file();
    let base = serve(Flaw::None);
    let (code, checks, report) = probe_json(&spec, &base);
    for id in ALL.iter().chain(&["sf-string"]) {
        assert_eq!(outcome(&checks, id), "pass", "{id}: {report:#}");
    }
    // One instance, and no --window-wait.
    for id in ["shared-store", "window-end"] {
        assert_eq!(outcome(&checks, id), "not-applicable", "{id}: {report:#}");
    }
    assert_eq!(code, 0);
    assert_eq!(report["summary"]["failed"], 0);
    assert!(
        checks["burst"]["summary"]
            .as_str()
            .unwrap()
            .contains("429 with Retry-After"),
        "{report:#}"
    );

    let table = probe(&spec, &base, &[]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("PASS  burst"), "{text}");
    // `pay` and `refunds` (whose key travels in the body: no sf-string).
    assert!(text.contains("19 passed, 0 failed"), "{text}");
    assert_eq!(table.status.code(), Some(0));
}

/// A business rule (one payment per order) refuses every new key after
/// the first for the same order, so the checks that need a fresh request
/// meet a refusal; `--set /order_no=ORD-{seq}` (or `{ulid}`) gives every
/// new key a new order and every check passes again.
#[test]
fn fresh_set_values_get_past_a_one_payment_per_order_rule() {
    let (_dir, spec) = spec_file();
    let base = serve(Flaw::OnePaymentPerOrder);
    let (_, checks, report) = probe_json(&spec, &base);
    let refused: Vec<&str> = ALL
        .iter()
        .chain(&["sf-string"])
        .copied()
        .filter(|id| outcome(&checks, id) != "pass")
        .collect();
    assert!(
        refused.contains(&"sf-string"),
        "the rule should stop the checks that need a fresh request: {report:#}"
    );
    for set in ["/order_no=ORD-{seq}", "/order_no={ulid}"] {
        // A service that has paid no order yet.
        let base = serve(Flaw::OnePaymentPerOrder);
        let (code, checks, report) = probe_op_json_with(&spec, &base, "pay", &["--set", set]);
        for id in ALL.iter().chain(&["sf-string"]) {
            assert_eq!(
                outcome(&checks, id),
                "pass",
                "--set {set}: {id}: {report:#}"
            );
        }
        assert_eq!(code, 0, "--set {set}: {report:#}");
        // The report shows the first value the template took.
        let request: Vec<&str> = report["operations"][0]["request"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let request = request.join("\n");
        match set {
            "/order_no=ORD-{seq}" => {
                assert!(request.contains(r#""order_no":"ORD-1""#), "{request}")
            }
            _ => assert!(!request.contains("{ulid}"), "{request}"),
        }
    }
}

#[test]
fn a_set_value_with_an_unknown_placeholder_is_refused() {
    let (_dir, spec) = spec_file();
    let output = probe(&spec, "http://127.0.0.1:9", &["--set", "/order_no={uuid4}"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`{uuid4}` is not a placeholder --set knows; use {uuid}, {ulid}, {seq}"),
        "{stderr}"
    );
}

/// `POST /orders` under the IETF draft's profile, with keys the client
/// chooses: its `201` declares `Location` and `ETag`.
const ORDERS_SPEC: &str = r#"openapi: 3.0.3
info: {title: probe replay fidelity, version: "1"}
x-idempotency:
  client: {timeout: 5s, retries: [200ms, 800ms]}
  server: {max-processing: 3s}
paths:
  /orders:
    post:
      operationId: createOrder
      parameters:
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string, maxLength: 255, pattern: "^[!-~]+$"}}
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [item]
              properties:
                item: {type: string, example: book}
      x-idempotency:
        profile: ietf-draft
        key: {in: header, name: Idempotency-Key, format: "{opaque}", max-length: 255}
        window: 18s
      responses:
        "201":
          description: created
          headers:
            Location: {required: true, schema: {type: string}}
            ETag: {schema: {type: string}}
        "400": {description: bad key}
        "409":
          description: in progress
          headers: {Retry-After: {required: true, schema: {type: integer}}}
        "422": {description: key reused}
"#;

/// How the orders server's replay differs from its first answer.
#[derive(Clone, Copy, PartialEq, Debug)]
enum ReplayFlaw {
    None,
    /// Replays `201 Created` as `200 OK`.
    CreatedAsOk,
    /// Replays status and body, but not `Location` and `ETag`.
    DropsHeaders,
    /// Replays the first answer's `Set-Cookie` too.
    ReplaysCookie,
    /// Checks no key, and keeps its record under the header's first word
    /// (up to a space or a tab): `not valid 1a2b` and `not valid 3c4d` are
    /// both `not`.
    FirstWordOfKey,
}

/// An order: the request body it was made for, and its answer once done.
type Orders = Mutex<HashMap<String, (Vec<u8>, Option<Reply>)>>;

/// The orders handler: a claim per key, 409 with `Retry-After` while the
/// first attempt runs, 422 for another body, and a replay that `flaw`
/// may spoil.
fn create_order(flaw: ReplayFlaw, orders: &Orders, request: Request) -> Reply {
    let key = request
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("idempotency-key"))
        .map(|(_, value)| value.trim_matches('"').to_string())
        .map(|key| match flaw {
            ReplayFlaw::FirstWordOfKey => key
                .split(|c: char| c.is_ascii_whitespace())
                .next()
                .unwrap_or("")
                .to_string(),
            _ => key,
        })
        .filter(|key| (1..=255).contains(&key.len()))
        .filter(|key| key.bytes().all(|b| (b'!'..=b'~').contains(&b)));
    let Some(key) = key else {
        return reply(400, r#"{"title":"missing or malformed key"}"#);
    };
    {
        let mut orders = orders.lock().unwrap();
        match orders.get(&key) {
            Some((body, _)) if *body != request.body => {
                return reply(422, r#"{"title":"key reused"}"#);
            }
            Some((_, None)) => {
                let mut busy = reply(409, r#"{"title":"in progress"}"#);
                busy.headers.push(("Retry-After", "1".into()));
                return busy;
            }
            Some((_, Some(first))) => {
                let mut replay = Reply {
                    status: first.status,
                    headers: first.headers.clone(),
                    body: first.body.clone(),
                };
                match flaw {
                    ReplayFlaw::None | ReplayFlaw::FirstWordOfKey => {
                        replay.headers.retain(|(name, _)| *name != "Set-Cookie")
                    }
                    ReplayFlaw::CreatedAsOk => replay.status = 200,
                    ReplayFlaw::DropsHeaders => replay.headers.clear(),
                    ReplayFlaw::ReplaysCookie => {}
                }
                replay.headers.push(("Idempotent-Replayed", "true".into()));
                return replay;
            }
            None => {
                orders.insert(key.clone(), (request.body.clone(), None));
            }
        }
    }
    std::thread::sleep(Duration::from_millis(150));
    let id = PAYMENT_IDS.fetch_add(1, Ordering::SeqCst);
    let created = Reply {
        status: 201,
        headers: vec![
            ("Location", format!("/orders/{id}")),
            ("ETag", format!("\"v1-{id}\"")),
            ("Set-Cookie", format!("session={id}; HttpOnly")),
        ],
        body: format!(r#"{{"order_id":{id}}}"#).into_bytes(),
    };
    let answer = Reply {
        status: created.status,
        headers: created.headers.clone(),
        body: created.body.clone(),
    };
    orders
        .lock()
        .unwrap()
        .insert(key, (request.body, Some(created)));
    answer
}

/// Serves the orders handler with `flaw`; returns the base URL.
fn serve_orders(flaw: ReplayFlaw) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let orders: Arc<Orders> = Arc::default();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let orders = Arc::clone(&orders);
            std::thread::spawn(move || {
                let _ = answer(stream, |request| create_order(flaw, &orders, request));
            });
        }
    });
    format!("http://{address}")
}

#[test]
fn replay_fidelity_passes_a_whole_replay_and_fails_a_spoilt_one() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("openapi.yaml");
    std::fs::write(&spec, ORDERS_SPEC).unwrap();
    let (code, checks, report) =
        probe_op_json(&spec, &serve_orders(ReplayFlaw::None), "createOrder");
    assert_eq!(outcome(&checks, "replay-fidelity"), "pass", "{report:#}");
    let summary = checks["replay-fidelity"]["summary"].as_str().unwrap();
    assert!(summary.contains("Location, ETag"), "{summary}");
    assert_eq!(code, 0, "{report:#}");
    for (flaw, expected) in [
        (
            ReplayFlaw::CreatedAsOk,
            "status: first 201 Created, replay 200 OK",
        ),
        (ReplayFlaw::DropsHeaders, "declared header `Location`"),
        (
            ReplayFlaw::ReplaysCookie,
            "repeats the first answer's Set-Cookie",
        ),
    ] {
        let (code, checks, report) = probe_op_json(&spec, &serve_orders(flaw), "createOrder");
        assert_eq!(
            outcome(&checks, "replay-fidelity"),
            "fail",
            "{flaw:?}: {report:#}"
        );
        assert!(
            evidence(&checks, "replay-fidelity").contains(expected),
            "{flaw:?}: {report:#}"
        );
        assert_eq!(code, 1, "{flaw:?}");
    }
}

#[test]
fn a_contract_without_scope_has_no_scope_check() {
    let (_dir, spec) = spec_file();
    let (_, checks, report) = probe_json(&spec, &serve(Flaw::None));
    assert_eq!(outcome(&checks, "scope"), "not-applicable", "{report:#}");
}

#[test]
fn a_server_that_keys_by_tenant_and_key_passes_the_scope_check() {
    let (_dir, spec) = scoped_spec_file();
    let (code, checks, report) = probe_op_json(&spec, &serve(Flaw::None), "tenantPay");
    for id in ALL.iter().chain(&["scope"]) {
        assert_eq!(outcome(&checks, id), "pass", "{id}: {report:#}");
    }
    assert_eq!(code, 0, "{report:#}");
    let summary = checks["scope"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("`X-Tenant` header `probe-tenant-a`"),
        "{summary}"
    );
    assert!(
        summary.contains("`X-Tenant` header `probe-tenant-b`"),
        "{summary}"
    );
    assert!(
        summary.contains("without the scope value: 400"),
        "{summary}"
    );
}

#[test]
fn scope_values_come_from_the_command_line() {
    let (_dir, spec) = scoped_spec_file();
    let output = probe(
        &spec,
        &serve(Flaw::None),
        &[
            "--format",
            "json",
            "--scope",
            "X-Tenant=acme",
            "--scope",
            "X-Tenant=globex",
        ],
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let scope = report["operations"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|check| check["check"] == "scope")
        .unwrap();
    assert_eq!(scope["outcome"], "pass", "{report:#}");
    let summary = scope["summary"].as_str().unwrap();
    assert!(summary.contains("`X-Tenant` header `acme`"), "{summary}");
    assert!(summary.contains("`X-Tenant` header `globex`"), "{summary}");
    assert_eq!(output.status.code(), Some(0), "{report:#}");
}

#[test]
fn a_server_that_ignores_the_tenant_fails_the_scope_check() {
    let (_dir, spec) = scoped_spec_file();
    let (code, checks, report) = probe_op_json(&spec, &serve(Flaw::IgnoresTenant), "tenantPay");
    assert_eq!(outcome(&checks, "scope"), "fail", "{report:#}");
    assert_eq!(outcome(&checks, "burst"), "pass", "{report:#}");
    let evidence = evidence(&checks, "scope");
    assert!(
        evidence.contains(
            "the second scope got the first scope's stored answer (Idempotent-Replayed: true)"
        ),
        "{evidence}"
    );
    assert!(evidence.contains("second scope: {"), "{evidence}");
    assert_eq!(code, 1);
}

#[test]
fn a_server_that_processes_a_request_without_the_tenant_fails_the_scope_check() {
    let (_dir, spec) = scoped_spec_file();
    let (code, checks, report) =
        probe_op_json(&spec, &serve(Flaw::ProcessesWithoutTenant), "tenantPay");
    assert_eq!(outcome(&checks, "scope"), "fail", "{report:#}");
    let evidence = evidence(&checks, "scope");
    assert!(
        evidence
            .contains("without the scope value: the request was processed, expected a 4xx refusal"),
        "{evidence}"
    );
    assert!(!evidence.contains("stored answer"), "{evidence}");
    assert_eq!(code, 1);
}

#[test]
fn a_server_that_keys_by_principal_and_key_passes_the_principal_checks() {
    let (_dir, spec) = principal_spec_file();
    let (code, checks, report) =
        probe_op_json_with(&spec, &serve(Flaw::None), "principalPay", &AS_ALICE_AND_BOB);
    // Every other check runs as alice, so it meets the service itself,
    // not its 401.
    for id in ALL.iter().chain(&["principals", "unauthenticated"]) {
        assert_eq!(outcome(&checks, id), "pass", "{id}: {report:#}");
    }
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(outcome(&checks, "scope"), "not-applicable", "{report:#}");
    assert_eq!(
        checks["scope"]["summary"],
        "`key.scope` is `principal` only, which the `principals` check covers"
    );
    let summary = checks["principals"]["summary"].as_str().unwrap();
    assert!(
        summary
            .starts_with("one key and body as `alice`: 200 OK; as `bob`: 200 OK, a fresh answer"),
        "{summary}"
    );
    let summary = checks["unauthenticated"]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("without `Authorization`: 401 Unauthorized; then as `alice` with the same key and body: 200 OK"),
        "{summary}"
    );
    let request = report["operations"][0]["request"].to_string();
    assert!(
        request.contains("as `alice` (`Authorization` header, values not shown); the principals check also sends as `bob` (`Authorization` header)"),
        "{request}"
    );
}

#[test]
fn a_server_that_ignores_the_principal_fails_the_principals_check() {
    let (_dir, spec) = principal_spec_file();
    let (code, checks, report) = probe_op_json_with(
        &spec,
        &serve(Flaw::IgnoresPrincipal),
        "principalPay",
        &AS_ALICE_AND_BOB,
    );
    assert_eq!(outcome(&checks, "principals"), "fail", "{report:#}");
    assert_eq!(outcome(&checks, "burst"), "pass", "{report:#}");
    assert_eq!(outcome(&checks, "unauthenticated"), "pass", "{report:#}");
    let evidence = evidence(&checks, "principals");
    assert!(
        evidence.contains(
            "`bob` got `alice`'s stored answer (Idempotent-Replayed: true): one principal sees another's response"
        ),
        "{evidence}"
    );
    // Bob's answer carries alice's token, echoed by the service: the
    // report shows where, not what.
    assert!(
        evidence.contains(r#"`bob`: {\"payment_id\":"#) && evidence.contains("[redacted]"),
        "{evidence}"
    );
    assert_eq!(code, 1);
}

#[test]
fn a_server_that_processes_unauthenticated_requests_fails_the_unauthenticated_check() {
    let (_dir, spec) = principal_spec_file();
    let (code, checks, report) = probe_op_json_with(
        &spec,
        &serve(Flaw::ProcessesUnauthenticated),
        "principalPay",
        &AS_ALICE_AND_BOB,
    );
    assert_eq!(outcome(&checks, "unauthenticated"), "fail", "{report:#}");
    assert_eq!(outcome(&checks, "principals"), "pass", "{report:#}");
    let evidence = evidence(&checks, "unauthenticated");
    assert!(
        evidence
            .contains("200 OK without credentials: the request was processed, expected 401 or 403"),
        "{evidence}"
    );
    assert_eq!(code, 1);
}

#[test]
fn a_server_that_claims_the_key_before_authenticating_fails_the_unauthenticated_check() {
    let (_dir, spec) = principal_spec_file();
    let (code, checks, report) = probe_op_json_with(
        &spec,
        &serve(Flaw::ClaimsBeforeAuthenticating),
        "principalPay",
        &AS_ALICE_AND_BOB,
    );
    assert_eq!(outcome(&checks, "unauthenticated"), "fail", "{report:#}");
    let evidence = evidence(&checks, "unauthenticated");
    // The refusal itself is right; what it left behind is not.
    assert!(!evidence.contains("expected 401 or 403"), "{evidence}");
    assert!(
        evidence.contains(
            "`alice`'s request with the key got 429 Too Many Requests (Retry-After: 1): the request without credentials left a record under the key"
        ),
        "{evidence}"
    );
    assert_eq!(code, 1);
}

#[test]
fn a_key_scoped_by_principal_needs_two_principals() {
    let (_dir, spec) = principal_spec_file();
    let base = serve(Flaw::None);
    let none = probe(&spec, &base, &[]);
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert_eq!(none.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: `principalPay` scopes its keys by `principal` (`key.scope`)")
            && stderr.contains("none was given: pass --as NAME='Header: value' for each"),
        "{stderr}"
    );
    let one = probe(
        &spec,
        &base,
        &["--as", "alice=Authorization: Bearer alice-secret-1"],
    );
    let stderr = String::from_utf8_lossy(&one.stderr);
    assert_eq!(one.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("only `alice` was given"), "{stderr}");
    assert!(!stderr.contains("alice-secret-1"), "{stderr}");
    assert!(one.stdout.is_empty());
}

#[test]
fn without_as_the_principal_checks_do_not_apply() {
    let (_dir, spec) = spec_file();
    let (code, checks, report) = probe_json(&spec, &serve(Flaw::None));
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(outcome(&checks, "principals"), "not-applicable");
    assert_eq!(outcome(&checks, "unauthenticated"), "not-applicable");
    assert!(
        checks["principals"]["summary"]
            .as_str()
            .unwrap()
            .starts_with("no --as principals given; pass two, e.g. --as alice="),
        "{report:#}"
    );
    assert!(
        checks["unauthenticated"]["summary"]
            .as_str()
            .unwrap()
            .starts_with("no --as credentials given"),
        "{report:#}"
    );
}

#[test]
fn bad_as_values_are_refused_without_quoting_them() {
    let (_dir, spec) = spec_file();
    let base = serve(Flaw::None);
    for (given, expected) in [
        (
            "Authorization: Basic YWxpY2U6czNjcjN0=",
            "error: --as (#1): the part before `=` is not a principal name",
        ),
        (
            "alice=Bearer s3cr3t",
            "error: --as alice: write the credential as a header",
        ),
    ] {
        let output = probe(&spec, &base, &["--as", given]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert!(
            !stderr.contains("s3cr3t") && !stderr.contains("YWxp"),
            "{stderr}"
        );
    }
}

#[test]
fn a_scope_name_the_contract_does_not_declare_is_an_error() {
    let (_dir, spec) = scoped_spec_file();
    let base = serve(Flaw::None);
    let output = probe(&spec, &base, &["--scope", "X-Tenent=acme"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        "error: --scope X-Tenent=…: no `key.scope` of the probed operations names `X-Tenent`; the declared names: `X-Tenant` (header)\n"
    );
    // A header name is case-insensitive, as the service reads it.
    let output = probe(
        &spec,
        &base,
        &["--scope", "x-tenant=acme", "--max-requests", "1"],
    );
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("--scope"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let (_dir, spec) = spec_file();
    let output = probe(&spec, &base, &["--scope", "principal=alice"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "names `principal`; the probed operations declare no `key.scope` value a request carries; `principal` is the verified principal"
        ),
        "{stderr}"
    );
}

/// Runs the probe of `pay` in `dir` (where an `idemgen.toml` may be) with
/// `--format json`: the profile the report names, and check id → outcome.
fn probe_in(
    dir: &Path,
    spec: &Path,
    base_url: &str,
    extra: &[&str],
) -> (String, HashMap<String, Value>) {
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .current_dir(dir)
        .arg("probe")
        .arg(spec)
        .args(["--base-url", base_url, "--format", "json", "--op", "pay"])
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|error| {
        panic!(
            "not JSON ({error}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let operation = &report["operations"][0];
    let checks = operation["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|check| (check["check"].as_str().unwrap().to_string(), check.clone()))
        .collect();
    (operation["profile"].as_str().unwrap().to_string(), checks)
}

#[test]
fn the_profile_of_idemgen_toml_sets_what_the_probe_expects() {
    // The server answers a reused key with another body 409, as the
    // retry-after profile says; the IETF draft's profile, which lint then
    // also applies, wants 422.
    let (dir, spec) = spec_file();
    std::fs::write(
        dir.path().join("idemgen.toml"),
        "profile = \"ietf-draft\"\n",
    )
    .unwrap();
    let base = serve(Flaw::None);
    let (profile, checks) = probe_in(dir.path(), &spec, &base, &[]);
    assert_eq!(profile, "ietf-draft");
    assert_eq!(outcome(&checks, "conflict"), "fail");
    assert!(
        evidence(&checks, "conflict").contains("expected 422"),
        "{checks:#?}"
    );
    assert_eq!(outcome(&checks, "missing-key"), "pass");

    // --profile wins over the file, and --no-config ignores it.
    for flags in [&["--profile", "retry-after"][..], &["--no-config"]] {
        let (profile, checks) = probe_in(dir.path(), &spec, &base, flags);
        assert_eq!(profile, "retry-after", "{flags:?}");
        for id in ALL {
            assert_eq!(outcome(&checks, id), "pass", "{flags:?} {id}: {checks:#?}");
        }
    }

    // lint demands of the spec what the probe expects of the service.
    let lint = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .current_dir(dir.path())
        .args(["lint", "--format", "json"])
        .arg(&spec)
        .output()
        .unwrap();
    let lint = String::from_utf8_lossy(&lint.stdout);
    assert!(lint.contains("conflict-undeclared"), "{lint}");
    assert!(lint.contains("422"), "{lint}");
}

#[test]
fn keys_in_the_body_follow_their_field_segments() {
    let (_dir, spec) = spec_file();
    let (code, checks, report) = probe_op_json(&spec, &serve(Flaw::None), "refund");
    for id in ALL {
        assert_eq!(outcome(&checks, id), "pass", "{id}: {report:#}");
    }
    assert_eq!(code, 0);
    // The named example's refund_id, made unique per event, is in the key.
    let request = report["operations"][0]["request"].to_string();
    assert!(request.contains("example `small`"), "{request}");
    assert!(request.contains("refund:RF-7-"), "{request}");
}

#[test]
fn check_then_write_runs_the_business_step_twice() {
    let (_dir, spec) = spec_file();
    let (code, checks, report) = probe_json(&spec, &serve(Flaw::CheckThenWrite));
    assert_eq!(code, 1);
    assert_eq!(outcome(&checks, "burst"), "fail", "{report:#}");
    assert!(
        evidence(&checks, "burst").contains("the business step ran more than once"),
        "{report:#}"
    );
    assert_eq!(outcome(&checks, "in-progress"), "fail", "{report:#}");
    assert_eq!(outcome(&checks, "missing-key"), "pass");

    // The table names the broken promise (`--nocapture` shows it whole).
    let table = probe(&spec, &serve(Flaw::CheckThenWrite), &[]);
    let text = String::from_utf8_lossy(&table.stdout);
    eprintln!("{text}");
    assert_eq!(table.status.code(), Some(1));
    assert!(text.contains("FAIL  burst"), "{text}");
}

/// Every execution answers the same bytes, so the double charge shows
/// only in the answers: several without `Idempotent-Replayed: true` from a
/// service whose replays carry it are several first answers.
#[test]
fn check_then_write_with_one_answer_each_time_still_shows_in_unmarked_answers() {
    let (_dir, spec) = spec_file();
    for flaw in [
        Flaw::CheckThenWriteSameAnswer,
        Flaw::CheckThenWriteMarkedFalse,
    ] {
        let (code, checks, report) = probe_json(&spec, &serve(flaw));
        assert_eq!(code, 1, "{report:#}");
        assert_eq!(outcome(&checks, "burst"), "fail", "{report:#}");
        assert!(
            evidence(&checks, "burst").contains("the business step ran"),
            "{report:#}"
        );
        // `Idempotent-Replayed: false` is no replay.
        assert!(
            !checks["burst"]["summary"]
                .as_str()
                .unwrap()
                .contains("replayed"),
            "{report:#}"
        );
        assert_eq!(outcome(&checks, "in-progress"), "fail", "{report:#}");
        assert!(
            evidence(&checks, "in-progress").contains("the business step ran again"),
            "{report:#}"
        );
        assert_eq!(outcome(&checks, "replay"), "pass", "{report:#}");
    }
}

/// A service that answers nothing but 503 has nothing to show of its
/// honesty while a request runs, nor of its `Retry-After`: those checks do
/// not apply, they do not pass.
#[test]
fn checks_of_a_running_attempt_do_not_apply_when_nothing_succeeds() {
    let (_dir, spec) = spec_file();
    let (_, checks, report) = probe_json(&spec, &serve(Flaw::AlwaysUnavailable));
    for id in ["burst", "in-progress", "retry-after"] {
        assert_eq!(outcome(&checks, id), "not-applicable", "{id}: {report:#}");
    }
}

#[test]
fn an_empty_200_while_in_progress_is_caught() {
    let (_dir, spec) = spec_file();
    let (code, checks, report) = probe_json(&spec, &serve(Flaw::EmptyWhileInProgress));
    assert_eq!(code, 1);
    assert_eq!(outcome(&checks, "in-progress"), "fail", "{report:#}");
    assert!(
        evidence(&checks, "in-progress")
            .contains("empty body while the first attempt was still running"),
        "{report:#}"
    );
    assert_eq!(outcome(&checks, "burst"), "fail", "{report:#}");
    assert_eq!(outcome(&checks, "conflict"), "pass");
}

#[test]
fn an_ignored_fingerprint_is_caught() {
    let (_dir, spec) = spec_file();
    let (code, checks, report) = probe_json(&spec, &serve(Flaw::IgnoresFingerprint));
    assert_eq!(code, 1);
    assert_eq!(outcome(&checks, "conflict"), "fail", "{report:#}");
    assert!(
        evidence(&checks, "conflict").contains("fingerprint is ignored"),
        "{report:#}"
    );
    for id in ["burst", "replay", "missing-key", "in-progress"] {
        assert_eq!(outcome(&checks, id), "pass", "{id}: {report:#}");
    }

    let table = probe(&spec, &serve(Flaw::IgnoresFingerprint), &[]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("FAIL  conflict"), "{text}");
}

#[test]
fn an_in_progress_answer_without_retry_after_is_caught() {
    let (_dir, spec) = spec_file();
    let (code, checks, report) = probe_json(&spec, &serve(Flaw::NoRetryAfter));
    assert_eq!(code, 1);
    assert_eq!(outcome(&checks, "burst"), "fail", "{report:#}");
    assert!(
        evidence(&checks, "burst").contains("without Retry-After"),
        "{report:#}"
    );
    assert_eq!(outcome(&checks, "conflict"), "pass");
}

/// A service that refuses the probe's credential ran nothing: a pass
/// would say its duplicates were handled when none was.
#[test]
fn checks_of_a_running_attempt_do_not_apply_when_every_request_is_refused() {
    let (_dir, spec) = spec_file();
    let (_, checks, report) = probe_json(&spec, &serve(Flaw::RefusesEveryone));
    for id in ["burst", "in-progress", "retry-after"] {
        assert_eq!(outcome(&checks, id), "not-applicable", "{id}: {report:#}");
    }
}

/// The first attempt failed after its claim and the claim was never
/// released: its duplicates are told "in progress" long past
/// max-processing, the stale lease `retry-after` exists for, whatever the
/// first attempt answered.
#[test]
fn a_claim_kept_after_a_failed_attempt_fails_retry_after() {
    let (_dir, spec) = spec_file();
    let (code, checks, report) = probe_json(&spec, &serve(Flaw::FailsAndKeepsItsClaim));
    assert_eq!(code, 1);
    assert_eq!(outcome(&checks, "retry-after"), "fail", "{report:#}");
    assert!(
        evidence(&checks, "retry-after").contains("no final answer within"),
        "{report:#}"
    );
}

/// Duplicates that ran the step and then failed on a unique index answer
/// 500 after the first attempt's 200: the 200 is the attempt that ran,
/// and the duplicates' answers show the step ran again.
#[test]
fn duplicates_that_ran_and_then_failed_fail_in_progress() {
    let (_dir, spec) = spec_file();
    let (code, checks, report) = probe_json(&spec, &serve(Flaw::RunsThenMeetsAUniqueIndex));
    assert_eq!(code, 1);
    assert_eq!(outcome(&checks, "in-progress"), "fail", "{report:#}");
    let summary = checks["in-progress"]["summary"].as_str().unwrap();
    assert!(summary.contains("answered 200 OK"), "{summary}");
    assert!(
        evidence(&checks, "in-progress").contains("500 Internal Server Error"),
        "{report:#}"
    );
}

#[test]
fn in_progress_long_past_max_processing_is_caught() {
    let (_dir, spec) = spec_file();
    let started = Instant::now();
    let (code, checks, report) = probe_json(&spec, &serve(Flaw::StaysInProgress));
    assert_eq!(code, 1);
    assert_eq!(outcome(&checks, "retry-after"), "fail", "{report:#}");
    // The spec: max-processing 3s, retry-after 1s.
    assert!(
        evidence(&checks, "retry-after")
            .contains("no final answer within max-processing 3 s + 3 × Retry-After 1 s = 6.0 s"),
        "{report:#}"
    );
    let summary = checks["retry-after"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("Retry-After: 1") && summary.contains("still 429"),
        "{summary}"
    );
    // Within the budget the duplicates were honest; the burst passes.
    assert_eq!(outcome(&checks, "burst"), "pass", "{report:#}");
    assert!(started.elapsed() < Duration::from_secs(30), "{report:#}");
}

/// The probe's two requests reach the service in the other order: the
/// duplicate runs and the first is told to wait, so the first is the
/// client that waits, and it waits past the budget.
#[test]
fn a_client_kept_waiting_is_caught_whichever_request_arrived_first() {
    let (_dir, spec) = spec_file();
    let (code, checks, report) = probe_json(&spec, &serve(Flaw::StaysInProgressFirstReadLate));
    assert_eq!(code, 1);
    assert_eq!(outcome(&checks, "retry-after"), "fail", "{report:#}");
    let summary = checks["retry-after"]["summary"].as_str().unwrap();
    assert!(summary.contains("still 429"), "{summary}");
}

#[test]
fn a_retry_after_the_advertised_wait_gets_the_final_answer() {
    let (_dir, spec) = spec_file();
    let (_, checks, report) = probe_json(&spec, &serve(Flaw::None));
    assert_eq!(outcome(&checks, "retry-after"), "pass", "{report:#}");
    let summary = checks["retry-after"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("in progress (Retry-After: 1), then 200 OK after"),
        "{summary}"
    );
    // Without server.max-processing there is no promise to hold it to.
    let (dir, _) = spec_file();
    let loose = dir.path().join("loose.yaml");
    std::fs::write(&loose, SPEC.replace("  server: {max-processing: 3s}\n", "")).unwrap();
    let (_, checks, report) = probe_json(&loose, &serve(Flaw::None));
    assert_eq!(
        outcome(&checks, "retry-after"),
        "not-applicable",
        "{report:#}"
    );
}

#[test]
fn junit_has_one_testcase_per_check() {
    let (_dir, spec) = spec_file();
    let output = probe(
        &spec,
        &serve(Flaw::IgnoresFingerprint),
        &["--format", "junit", "--op", "pay"],
    );
    assert_eq!(output.status.code(), Some(1));
    let xml = String::from_utf8(output.stdout).unwrap();
    let document = roxmltree::Document::parse(&xml).unwrap();
    let cases: Vec<_> = document
        .descendants()
        .filter(|node| node.has_tag_name("testcase"))
        .collect();
    // Every check of ALL, `sf-string`, and `scope`, `principals`,
    // `unauthenticated`, `shared-store` and `window-end`, not applicable
    // (skipped) here.
    assert_eq!(cases.len(), 15, "{xml}");
    let failed: Vec<_> = cases
        .iter()
        .filter(|case| case.children().any(|child| child.has_tag_name("failure")))
        .map(|case| case.attribute("name").unwrap())
        .collect();
    assert_eq!(failed, ["conflict"], "{xml}");
}

#[test]
fn refuses_remote_hosts_and_reports_unreachable_services() {
    let (_dir, spec) = spec_file();
    let remote = probe(&spec, "http://192.0.2.10:8080", &[]);
    assert_eq!(remote.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&remote.stderr);
    assert!(stderr.contains("--allow-remote"), "{stderr}");

    // A port that was free a moment ago.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = probe(&spec, &format!("http://127.0.0.1:{port}"), &[]);
    assert_eq!(down.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&down.stderr);
    assert!(stderr.contains("cannot connect"), "{stderr}");

    let unknown = probe(&spec, &serve(Flaw::None), &["--op", "nope"]);
    assert_eq!(unknown.status.code(), Some(2));
}

#[test]
fn redirects_are_answers_never_followed() {
    let (_dir, spec) = spec_file();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = answer(stream, |_| Reply {
                    status: 307,
                    // TEST-NET-1: following this would hang until the timeout.
                    headers: vec![("Location", "http://192.0.2.1/pay".into())],
                    body: Vec::new(),
                });
            });
        }
    });
    let started = Instant::now();
    let (code, checks, report) = probe_json(&spec, &base);
    assert!(started.elapsed() < Duration::from_secs(8), "{report:#}");
    assert_eq!(code, 1);
    assert_eq!(outcome(&checks, "burst"), "not-applicable", "{report:#}");
    assert!(
        checks["missing-key"]["summary"]
            .as_str()
            .unwrap()
            .contains("307"),
        "{report:#}"
    );
}

#[test]
fn the_request_budget_bounds_the_probe() {
    let (_dir, spec) = spec_file();
    let output = probe(
        &spec,
        &serve(Flaw::None),
        &["--max-requests", "3", "--format", "json"],
    );
    assert_eq!(output.status.code(), Some(2));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["summary"]["requests"], 3, "{report:#}");
    assert!(
        report.to_string().contains("--max-requests 3"),
        "{report:#}"
    );
}

#[test]
fn instances_that_share_one_store_keep_every_promise() {
    let (_dir, spec) = spec_file();
    let store = Store::default();
    let first = serve_with(Flaw::None, Arc::clone(&store));
    let second = serve_with(Flaw::None, store);
    let output = probe(
        &spec,
        &first,
        &["--base-url", &second, "--format", "json", "--op", "pay"],
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    assert_eq!(report["base_urls"], serde_json::json!([first, second]));
    let checks = report["operations"][0]["checks"].as_array().unwrap();
    for check in checks {
        let expected = if ["scope", "principals", "unauthenticated", "window-end"]
            .iter()
            .any(|id| check["check"] == *id)
        {
            "not-applicable" // `pay` declares no key.scope; no --as, no --window-wait
        } else {
            "pass"
        };
        assert_eq!(check["outcome"], expected, "{report:#}");
    }
    // The burst went to both, and the tally says which answered what.
    let burst = checks[0]["summary"].as_str().unwrap();
    assert!(
        burst.contains(&format!("from {first}")) && burst.contains(&format!("from {second}")),
        "{burst}"
    );

    let table = probe(&spec, &first, &["--base-url", &second, "--op", "pay"]);
    let text = String::from_utf8_lossy(&table.stdout);
    eprintln!("{text}");
    assert!(
        text.starts_with(&format!(
            "idemgen probe {} against 2 instances: {first}, {second}\n",
            spec.display()
        )),
        "{text}"
    );
}

#[test]
fn instances_with_a_store_each_fail_the_burst() {
    let (_dir, spec) = spec_file();
    let first = serve(Flaw::None);
    let second = serve(Flaw::None);
    let output = probe(
        &spec,
        &first,
        &["--base-url", &second, "--format", "json", "--op", "pay"],
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(1), "{report:#}");
    let burst = &report["operations"][0]["checks"][0];
    assert_eq!(burst["check"], "burst");
    assert_eq!(burst["outcome"], "fail", "{report:#}");
    let evidence = burst["evidence"].to_string();
    assert!(
        evidence.contains("the business step ran more than once"),
        "{evidence}"
    );
    assert!(
        evidence.contains(&format!(
            "each of {first} and {second} ran the step for the same key: the instances do not share one idempotency store"
        )),
        "{evidence}"
    );
    assert!(
        evidence.contains(&format!("2xx body from {first}"))
            && evidence.contains(&format!("2xx body from {second}")),
        "{evidence}"
    );
}

#[test]
fn instances_with_a_store_each_fail_even_with_identical_answers() {
    let (_dir, spec) = spec_file();
    let burst_of = |first: &str, second: &str| {
        let output = probe(
            &spec,
            first,
            &["--base-url", second, "--format", "json", "--op", "pay"],
        );
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        report["operations"][0]["checks"][0].clone()
    };
    let first = serve(Flaw::SameAnswerEachTime);
    let second = serve(Flaw::SameAnswerEachTime);
    let burst = burst_of(&first, &second);
    assert_eq!(burst["outcome"], "fail", "{burst:#}");
    let evidence = burst["evidence"].to_string();
    assert!(
        evidence.contains(&format!(
            "from {first} and {second}: each ran the step for the same key"
        )),
        "{evidence}"
    );

    // Sharing a store, the same servers pass.
    let store = Store::default();
    let first = serve_with(Flaw::SameAnswerEachTime, Arc::clone(&store));
    let second = serve_with(Flaw::SameAnswerEachTime, store);
    let burst = burst_of(&first, &second);
    assert_eq!(burst["outcome"], "pass", "{burst:#}");
}

#[test]
fn every_instance_must_be_loopback_and_reachable() {
    let (_dir, spec) = spec_file();
    let up = serve(Flaw::None);
    let remote = probe(&spec, &up, &["--base-url", "http://192.0.2.10:8080"]);
    assert_eq!(remote.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&remote.stderr);
    assert!(
        stderr.contains("http://192.0.2.10:8080") && stderr.contains("--allow-remote"),
        "{stderr}"
    );

    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down_url = format!("http://127.0.0.1:{port}");
    let down = probe(&spec, &up, &["--base-url", &down_url]);
    assert_eq!(down.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&down.stderr);
    assert!(
        stderr.contains(&down_url) && stderr.contains("cannot connect"),
        "{stderr}"
    );
    assert!(down.stdout.is_empty(), "nothing is probed");
}

// The payment-callback example: a real generated service on a database.

/// The running example; killed when dropped.
struct Service {
    child: Child,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn example_dir() -> PathBuf {
    build::root().join("examples/payment-callback")
}

/// Starts the example built for `dialect` (the build the exactly-once
/// suite runs, in the shared target directory; a private copy of the
/// binary, so another dialect's build cannot replace it while it runs) on
/// a free port; `None` (with a note) when the example is not in the tree.
fn start_example(dialect: Dialect, database_url: &str) -> Option<(Service, String)> {
    if !example_dir().join("Cargo.toml").is_file() {
        skip::skipped("examples/payment-callback is not in the tree");
        return None;
    }
    if skip::generated_builds_skipped() {
        return None;
    }
    let copy = Binaries::build(dialect, Profile::Debug).generated;
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(&copy)
        .env("DATABASE_URL", database_url)
        .env("LISTEN_ADDR", format!("127.0.0.1:{port}"))
        .env("DOWNSTREAM_DELAY_MS", "300")
        // The probe sends unsigned callbacks.
        .env("PAYMENT_CALLBACK_INSECURE", "1")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let service = Service { child };
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the payment-callback example did not start listening"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Some((service, format!("http://127.0.0.1:{port}")))
}

/// Probes the running example with a freshly seeded unpaid order.
fn probe_example(base: &str, order_no: &str) {
    let spec = example_dir().join("openapi.yaml");
    let output = probe(
        &spec,
        base,
        &[
            "--set",
            &format!("/order_no={order_no}"),
            "--set",
            "/amount=1999",
        ],
    );
    let text = String::from_utf8_lossy(&output.stdout);
    eprintln!("{text}{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{text}");
    for id in ALL {
        assert!(text.contains(&format!("PASS  {id}")), "{id}: {text}");
    }
}

fn order_no() -> String {
    format!(
        "ORD-PROBE-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros()
    )
}

fn seed_sql(order_no: &str) -> String {
    format!("INSERT INTO orders (order_no, amount) VALUES ('{order_no}', 1999)")
}

/// Payments applied to the order: 1 however often the probe called.
fn paid_count_sql(order_no: &str) -> String {
    format!("SELECT count(*) FROM paid_log WHERE order_no = '{order_no}'")
}

#[test]
fn the_payment_callback_example_keeps_its_promises_on_sqlite() {
    if Command::new("sqlite3").arg("-version").output().is_err() {
        skip::skipped("the sqlite3 command is needed to seed an order");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("payments.db");
    let Some((_service, base)) =
        start_example(Dialect::Sqlite, &format!("sqlite://{}", db.display()))
    else {
        return;
    };
    let sqlite = |sql: &str| {
        let output = Command::new("sqlite3").arg(&db).arg(sql).output().unwrap();
        assert!(output.status.success(), "sqlite3: {sql}");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    };
    let order = order_no();
    sqlite(&seed_sql(&order));
    probe_example(&base, &order);
    assert_eq!(sqlite(&paid_count_sql(&order)), "1");
}

/// A MariaDB/MySQL or PostgreSQL server from a URL
/// (`scheme://user[:password]@host[:port]/database`), driven through its
/// command-line client.
struct Server {
    postgres: bool,
    user: String,
    password: Option<String>,
    host: String,
    port: Option<String>,
    database: String,
}

impl Server {
    fn parse(url: &str) -> Server {
        let (scheme, rest) = url.split_once("://").expect("a database URL");
        let (credentials, location) = rest.rsplit_once('@').unwrap_or(("root", rest));
        let (user, password) = match credentials.split_once(':') {
            Some((user, password)) => (user, Some(password.to_string())),
            None => (credentials, None),
        };
        let (host_port, database) = location.split_once('/').unwrap_or((location, ""));
        let (host, port) = match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port.to_string())),
            None => (host_port, None),
        };
        Server {
            postgres: scheme.starts_with("postgres"),
            user: user.into(),
            password,
            host: host.into(),
            port,
            database: database.split('?').next().unwrap_or("").into(),
        }
    }

    fn url(&self, database: &str) -> String {
        format!(
            "{}://{}{}@{}{}/{database}",
            if self.postgres { "postgres" } else { "mysql" },
            self.user,
            self.password
                .as_ref()
                .map_or(String::new(), |password| format!(":{password}")),
            self.host,
            self.port
                .as_ref()
                .map_or(String::new(), |port| format!(":{port}")),
        )
    }

    /// Runs `sql` in `database` (the URL's when `None`); its output.
    fn sql(&self, database: Option<&str>, sql: &str) -> String {
        let database = database.unwrap_or(&self.database);
        let mut command;
        if self.postgres {
            command = Command::new("psql");
            command.args(["-v", "ON_ERROR_STOP=1", "-tA", "-h", &self.host]);
            command.args(["-U", &self.user, "-d", database, "-c", sql]);
            if let Some(port) = &self.port {
                command.args(["-p", port]);
            }
            if let Some(password) = &self.password {
                command.env("PGPASSWORD", password);
            }
        } else {
            command = Command::new("mysql");
            command.args(["--protocol=tcp", "-N", "-h", &self.host, "-u", &self.user]);
            if let Some(port) = &self.port {
                command.args(["-P", port]);
            }
            if let Some(password) = &self.password {
                command.env("MYSQL_PWD", password);
            }
            command.args([database, "-e", sql]);
        }
        let output = command.output().expect("the mysql/psql client");
        assert!(
            output.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }
}

/// A database created for one test and dropped after it.
struct FreshDatabase<'a> {
    server: &'a Server,
    name: String,
}

impl Drop for FreshDatabase<'_> {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.server
                .sql(None, &format!("DROP DATABASE IF EXISTS {}", self.name))
        }));
    }
}

fn probe_example_on(dialect: Dialect) {
    let Some(url) = skip::database_url(dialect.env_var()) else {
        return;
    };
    let server = Server::parse(&url);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let database = FreshDatabase {
        server: &server,
        name: format!("idemgen_probe_{}_{nanos}", std::process::id()),
    };
    server.sql(None, &format!("CREATE DATABASE {}", database.name));
    // Declared after the database, so the service stops before it goes.
    let Some((_service, base)) = start_example(dialect, &server.url(&database.name)) else {
        return;
    };
    let order = order_no();
    server.sql(Some(&database.name), &seed_sql(&order));
    probe_example(&base, &order);
    assert_eq!(
        server.sql(Some(&database.name), &paid_count_sql(&order)),
        "1"
    );
}

#[test]
fn the_payment_callback_example_keeps_its_promises_on_mariadb() {
    probe_example_on(Dialect::Mysql);
}

#[test]
fn the_payment_callback_example_keeps_its_promises_on_postgres() {
    probe_example_on(Dialect::Postgres);
}

// The report formats, on a fixed report (live runs differ in keys and
// timings).

fn fixed_report() -> idemgen_probe::Report {
    use idemgen_probe::{CheckResult, OperationReport, Outcome, Report};
    let check = |id, outcome, summary: &str, evidence: &[&str], warnings: &[&str]| CheckResult {
        id,
        outcome,
        summary: summary.into(),
        evidence: evidence.iter().map(|line| line.to_string()).collect(),
        warnings: warnings.iter().map(|line| line.to_string()).collect(),
        stopped_early: false,
        effects: Vec::new(),
    };
    Report {
        spec: "openapi.yaml".into(),
        base_urls: vec!["http://127.0.0.1:8080".into()],
        operations: vec![
            OperationReport {
                name: "onPayCallback".into(),
                method: "POST".into(),
                path: "/callbacks/pay".into(),
                profile: "retry-after".into(),
                request: vec![
                    "POST /callbacks/pay".into(),
                    "key `Idempotency-Key` header: `pay:20240615:0f8fad5b-d9cb-469f-a165-70867728950e` (format `pay:{date}:{uuid}`)".into(),
                    "as `alice` (`Authorization` header, values not shown); the principals check also sends as `bob` (`Authorization` header)".into(),
                ],
                skipped: None,
                checks: vec![
                    check(
                        "burst",
                        Outcome::Fail,
                        "8 identical requests at once: 8 × 200",
                        &[
                            "2 different 2xx bodies for one key: the business step ran more than once",
                            "2xx body: {\"payment_id\":1}",
                            "2xx body: {\"payment_id\":2}",
                        ],
                        &[],
                    ),
                    check(
                        "replay",
                        Outcome::Pass,
                        "200 OK with the first answer's 16 bytes",
                        &[],
                        &["the replay has no `Idempotent-Replayed: true` header"],
                    ),
                    check(
                        "in-progress",
                        Outcome::NotApplicable,
                        "the first attempt answered in 2 ms, before a duplicate could be sent",
                        &[],
                        &[],
                    ),
                    check(
                        "principals",
                        Outcome::Fail,
                        "one key and body as `alice`: 200 OK; as `bob`: 200 OK, `alice`'s stored answer",
                        &[
                            "`bob` got `alice`'s stored answer (Idempotent-Replayed: true): one principal sees another's response; keys are not namespaced by the principal",
                            "`alice`: {\"payment_id\":1}",
                            "`bob`: {\"payment_id\":1}",
                        ],
                        &[],
                    ),
                    check(
                        "unauthenticated",
                        Outcome::Pass,
                        "without `Authorization`: 401 Unauthorized; then as `alice` with the same key and body: 200 OK",
                        &[],
                        &[],
                    ),
                ],
            },
            OperationReport {
                name: "upload".into(),
                method: "POST".into(),
                path: "/files".into(),
                profile: "stripe".into(),
                request: Vec::new(),
                skipped: Some("its request body is `multipart/form-data`".into()),
                checks: Vec::new(),
            },
        ],
        requests: 21,
        elapsed: Duration::from_millis(1234),
    }
}

#[test]
fn report_formats() {
    use idemgen_probe::report;
    let fixed = fixed_report();
    insta::assert_snapshot!("table", report::table(&fixed));
    insta::assert_json_snapshot!("json", report::json(&fixed));
    insta::assert_snapshot!("junit", report::junit(&fixed));
}

/// Runs the probe of `pay` with `--format json` against one `--base-url`
/// per instance, plus `extra`: exit code, check id → check, the report.
fn probe_instances(
    spec: &Path,
    bases: &[&str],
    extra: &[&str],
) -> (i32, HashMap<String, Value>, Value) {
    let mut args: Vec<&str> = Vec::new();
    for base in &bases[1..] {
        args.extend(["--base-url", base]);
    }
    args.extend(extra);
    probe_op_json_with(spec, bases[0], "pay", &args)
}

/// A service that marks its replays under another common name
/// (`Idempotency-Replayed`, as the IETF draft's adopters do) keeps every
/// promise: its replays are replays, with no warning that they are not
/// marked; a name of its own counts once `--replay-header` gives it.
#[test]
fn replays_marked_under_any_common_name_are_replays() {
    let (_dir, spec) = spec_file();
    for mark in ["Idempotency-Replayed", "X-Idempotent-Replayed"] {
        let (code, checks, report) =
            probe_json(&spec, &serve(Flaw::SameAnswerMarkedAs(Some(mark))));
        for id in ALL.iter().chain(&["sf-string"]) {
            assert_eq!(outcome(&checks, id), "pass", "{mark}, {id}: {report:#}");
        }
        assert_eq!(
            checks["replay"]["warnings"],
            serde_json::json!([]),
            "{report:#}"
        );
        let summary = checks["replay"]["summary"].as_str().unwrap();
        assert!(summary.contains(&format!("{mark}: true")), "{summary}");
        assert_eq!(code, 0, "{report:#}");
    }

    let own = serve(Flaw::SameAnswerMarkedAs(Some("Replayed-From-Store")));
    let (_, checks, report) = probe_json(&spec, &own);
    let warnings = checks["replay"]["warnings"].to_string();
    assert!(warnings.contains("carries no replay mark"), "{report:#}");
    let (code, checks, report) = probe_op_json_with(
        &spec,
        &own,
        "pay",
        &["--replay-header", "Replayed-From-Store"],
    );
    assert_eq!(
        checks["replay"]["warnings"],
        serde_json::json!([]),
        "{report:#}"
    );
    assert_eq!(code, 0, "{report:#}");

    // The contract says it (`responses.replayed-header`), and the probe
    // reads it there without a flag.
    let (_dir, declared) = spec_file_replayed_header("Replayed-From-Store");
    let (code, checks, report) = probe_json(&declared, &own);
    assert_eq!(
        checks["replay"]["warnings"],
        serde_json::json!([]),
        "{report:#}"
    );
    let summary = checks["replay"]["summary"].as_str().unwrap();
    assert!(summary.contains("Replayed-From-Store: true"), "{summary}");
    assert_eq!(code, 0, "{report:#}");
}

/// Two instances of a per-process idempotency layer, each with a store of
/// its own: each pays the key once, and both answer the same bytes. However
/// their replays are marked (idemgen's name, the draft adopters' name, or
/// not at all), the checks of a running attempt fail, and so does
/// `shared-store`, which sends the key one answered to the other with a
/// changed body.
#[test]
fn instances_with_a_store_each_fail_however_their_replays_are_marked() {
    let (_dir, spec) = spec_file();
    for mark in [
        Some("Idempotent-Replayed"),
        Some("Idempotency-Replayed"),
        None,
    ] {
        let first = serve(Flaw::SameAnswerMarkedAs(mark));
        let second = serve(Flaw::SameAnswerMarkedAs(mark));
        let (code, checks, report) = probe_instances(&spec, &[&first, &second], &[]);
        for id in ["burst", "in-progress", "retry-after", "shared-store"] {
            assert_eq!(outcome(&checks, id), "fail", "{mark:?}, {id}: {report:#}");
        }
        assert!(
            evidence(&checks, "burst").contains("the instances do not share one idempotency store"),
            "{mark:?}: {report:#}"
        );
        assert!(
            evidence(&checks, "shared-store").contains(&format!(
                "{second} answered 200 OK where {first} answered 409: it took it as a new request and ran the step"
            )),
            "{mark:?}: {report:#}"
        );
        assert_eq!(code, 1, "{mark:?}: {report:#}");
    }
}

/// Replays declared unmarked (`--replay-header none`): identical first
/// answers from two instances cannot be told from replays by the answers,
/// so the verdict rests on whether the instances share a store. A store
/// each fails; one shared store is "cannot tell", never a pass.
#[test]
fn declared_unmarked_replays_are_judged_by_the_store() {
    let (_dir, spec) = spec_file();
    let unmarked = Flaw::SameAnswerMarkedAs(None);
    let first = serve(unmarked);
    let second = serve(unmarked);
    let (code, checks, report) =
        probe_instances(&spec, &[&first, &second], &["--replay-header", "none"]);
    for id in ["burst", "in-progress", "retry-after", "shared-store"] {
        assert_eq!(outcome(&checks, id), "fail", "{id}: {report:#}");
    }
    assert!(
        evidence(&checks, "burst").contains("took it as a new request"),
        "{report:#}"
    );
    assert_eq!(code, 1, "{report:#}");
    // The contract declares it (`replayed-header: none`): the same verdict.
    let (_declared_dir, declared) = spec_file_replayed_header("none");
    let first = serve(unmarked);
    let second = serve(unmarked);
    let (code, checks, report) = probe_instances(&declared, &[&first, &second], &[]);
    assert!(
        evidence(&checks, "burst").contains("took it as a new request"),
        "{report:#}"
    );
    assert_eq!(code, 1, "{report:#}");

    // One request of the burst at a time: the first runs, and each
    // instance then answers the same unmarked bytes. On one shared store
    // those are replays, on a store each a second payment; the answers
    // cannot tell, so the verdict is the store's, never a pass.
    let one_at_a_time = ["--replay-header", "none", "--concurrency", "1"];
    let first = serve(unmarked);
    let second = serve(unmarked);
    let (_, checks, report) = probe_instances(&spec, &[&first, &second], &one_at_a_time);
    assert_eq!(outcome(&checks, "burst"), "fail", "{report:#}");

    let store = Store::default();
    let first = serve_with(unmarked, Arc::clone(&store));
    let second = serve_with(unmarked, store);
    let (_, checks, report) = probe_instances(&spec, &[&first, &second], &one_at_a_time);
    assert_eq!(outcome(&checks, "shared-store"), "pass", "{report:#}");
    assert_eq!(outcome(&checks, "replay"), "pass", "{report:#}");
    assert_eq!(
        checks["replay"]["warnings"],
        serde_json::json!([]),
        "{report:#}"
    );
    assert_eq!(outcome(&checks, "burst"), "not-applicable", "{report:#}");
    assert!(
        evidence(&checks, "burst").contains("cannot be told"),
        "{report:#}"
    );

    // Marked replays on one shared store: every check passes.
    let marked = Flaw::SameAnswerMarkedAs(Some("Idempotency-Replayed"));
    let store = Store::default();
    let first = serve_with(marked, Arc::clone(&store));
    let second = serve_with(marked, store);
    let (code, checks, report) = probe_instances(&spec, &[&first, &second], &[]);
    for id in ALL.iter().chain(&["sf-string", "shared-store"]) {
        assert_eq!(outcome(&checks, id), "pass", "{id}: {report:#}");
    }
    assert_eq!(code, 0, "{report:#}");
}

/// The draft's sf-string form and the bare key are one key: a service that
/// keeps them apart pays twice, one that refuses the quoted form refuses
/// the draft's clients.
#[test]
fn a_key_and_its_sf_string_form_are_one_key() {
    let (_dir, spec) = spec_file();
    let (_, checks, report) = probe_json(&spec, &serve(Flaw::None));
    assert_eq!(outcome(&checks, "sf-string"), "pass", "{report:#}");
    let summary = checks["sf-string"]["summary"].as_str().unwrap();
    assert!(summary.contains("` then `\"pay:"), "{summary}");
    assert!(summary.contains("\"` then `pay:"), "{summary}");

    let (code, checks, report) = probe_json(&spec, &serve(Flaw::QuotedKeyIsAnotherKey));
    assert_eq!(outcome(&checks, "sf-string"), "fail", "{report:#}");
    assert!(
        evidence(&checks, "sf-string").contains("are two keys"),
        "{report:#}"
    );
    assert_eq!(code, 1);

    let (_, checks, report) = probe_json(&spec, &serve(Flaw::RefusesQuotedKey));
    assert_eq!(outcome(&checks, "sf-string"), "fail", "{report:#}");
    assert!(evidence(&checks, "sf-string").contains("400"), "{report:#}");

    // A key in the body is taken as sent.
    let (_, checks, report) = probe_op_json(&spec, &serve(Flaw::None), "refund");
    assert_eq!(
        outcome(&checks, "sf-string"),
        "not-applicable",
        "{report:#}"
    );
}

/// The malformed key is fresh each run, and the evidence says what the
/// answer was: a service that keeps its records under a key's first word
/// answers the second run's malformed key (`not valid …`, its first word
/// `not`) from the first run's record, and that is a stored answer, not a
/// request processed.
#[test]
fn malformed_key_evidence_says_what_was_observed() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("openapi.yaml");
    std::fs::write(&spec, ORDERS_SPEC).unwrap();
    let base = serve_orders(ReplayFlaw::FirstWordOfKey);
    let (_, first, report) = probe_op_json(&spec, &base, "createOrder");
    assert_eq!(outcome(&first, "malformed-key"), "fail", "{report:#}");
    assert!(
        evidence(&first, "malformed-key").contains("the request was processed without a valid key"),
        "{report:#}"
    );
    let (_, second, report) = probe_op_json(&spec, &base, "createOrder");
    assert_eq!(outcome(&second, "malformed-key"), "fail", "{report:#}");
    assert_ne!(
        first["malformed-key"]["summary"], second["malformed-key"]["summary"],
        "a fresh malformed key each run"
    );
    let said = evidence(&second, "malformed-key");
    assert!(
        said.contains("the answer is a stored one (`Idempotent-Replayed: true`)"),
        "{report:#}"
    );
    assert!(!said.contains("processed"), "{report:#}");
}

/// `pay` with a one-second window (and a contract short enough to allow
/// it), for the `window-end` check.
const WINDOW_SPEC: &str = r#"openapi: 3.0.3
info: {title: probe window test, version: "1"}
paths:
  /pay:
    post:
      operationId: pay
      parameters:
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [order_no, amount]
              properties:
                order_no: {type: string, maxLength: 32, example: ORD-1}
                amount: {type: integer, minimum: 1}
      x-idempotency:
        key: {in: header, name: Idempotency-Key, format: "pay:{date}:{uuid}"}
        window: 1s
        client: {timeout: 200ms}
        server: {max-processing: 300ms}
        responses:
          in-progress: {status: 429, retry-after: 1s}
      responses:
        "200": {description: paid}
        "400": {description: bad key}
        "409": {description: conflict}
        "429":
          description: in progress
          headers: {Retry-After: {required: true, schema: {type: integer}}}
"#;

/// The window of [`WINDOW_SPEC`].
const WINDOW: Duration = Duration::from_secs(1);

/// How a store treats a record whose window has ended.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Expiry {
    /// As new: one request claims it again, atomically.
    New,
    /// As if it had not ended: its answer is replayed.
    Ignored,
    /// Each request that finds it expired drops it and claims the key in a
    /// second step: every request of a burst that reads it before the
    /// first claim runs the step.
    TakenByEach,
    /// Its answer is gone, but the key's claim is kept: every request is
    /// told it is in progress, forever.
    KeepsItsClaim,
}

/// A key's record: its answer and when it was finished, or none yet.
type Expiring = Mutex<HashMap<String, Option<(Instant, Vec<u8>)>>>;

fn pay_with_expiry(
    expiry: Expiry,
    records: &Expiring,
    ledger: &Mutex<HashMap<String, Vec<u64>>>,
    request: Request,
) -> Reply {
    if request.method == "GET" {
        return read_ledger(ledger, &request.path);
    }
    let Some(key) = request
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("idempotency-key"))
        .map(|(_, value)| value.clone())
        .filter(|key| valid_key(key))
    else {
        return reply(400, r#"{"title":"missing or malformed key"}"#);
    };
    let mut guard = records.lock().unwrap();
    match guard.get(&key) {
        Some(None) => {
            let mut busy = reply(429, r#"{"title":"in progress"}"#);
            busy.headers.push(("Retry-After", "1".into()));
            return busy;
        }
        Some(Some((done, answer))) if expiry == Expiry::Ignored || done.elapsed() < WINDOW => {
            return Reply {
                status: 200,
                headers: vec![("Idempotency-Replayed", "true".into())],
                body: answer.clone(),
            };
        }
        Some(Some(_)) if expiry == Expiry::KeepsItsClaim => {
            let mut busy = reply(429, r#"{"title":"in progress"}"#);
            busy.headers.push(("Retry-After", "1".into()));
            return busy;
        }
        Some(Some(_)) if expiry == Expiry::TakenByEach => {
            drop(guard);
            std::thread::sleep(Duration::from_millis(30));
            guard = records.lock().unwrap();
            guard.insert(key.clone(), None);
        }
        _ => {
            guard.insert(key.clone(), None);
        }
    }
    drop(guard);
    std::thread::sleep(Duration::from_millis(150));
    let id = PAYMENT_IDS.fetch_add(1, Ordering::SeqCst);
    let order_no = serde_json::from_slice::<Value>(&request.body)
        .ok()
        .and_then(|body| body.get("order_no")?.as_str().map(str::to_string))
        .unwrap_or_default();
    ledger.lock().unwrap().entry(order_no).or_default().push(id);
    let answer = format!(r#"{{"payment_id":{id},"status":"paid"}}"#).into_bytes();
    records
        .lock()
        .unwrap()
        .insert(key, Some((Instant::now(), answer.clone())));
    Reply {
        status: 200,
        headers: Vec::new(),
        body: answer,
    }
}

fn serve_expiring(expiry: Expiry) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let records: Arc<Expiring> = Arc::default();
    let ledger = Ledger::default();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let records = Arc::clone(&records);
            let ledger = Arc::clone(&ledger);
            std::thread::spawn(move || {
                let _ = answer(stream, |request| {
                    pay_with_expiry(expiry, &records, &ledger, request)
                });
            });
        }
    });
    format!("http://{address}")
}

/// A key reused after its window is new: one burst of it runs the step
/// exactly once. Only with `--window-wait`, and one long enough.
#[test]
fn a_key_reused_after_its_window_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("openapi.yaml");
    std::fs::write(&spec, WINDOW_SPEC).unwrap();
    let window_end = |expiry: Expiry, extra: &[&str]| {
        let (_, checks, report) = probe_op_json_with(&spec, &serve_expiring(expiry), "pay", extra);
        (
            outcome(&checks, "window-end"),
            checks["window-end"].clone(),
            report,
        )
    };

    let (verdict, check, report) = window_end(Expiry::New, &[]);
    assert_eq!(verdict, "not-applicable", "{report:#}");
    assert!(
        check["summary"]
            .as_str()
            .unwrap()
            .contains("--window-wait 3s"),
        "{check:#}"
    );
    let (verdict, _, report) = window_end(Expiry::New, &["--window-wait", "2s"]);
    assert_eq!(verdict, "not-applicable", "{report:#}");

    let (verdict, _, report) = window_end(Expiry::New, &["--window-wait", "5s"]);
    assert_eq!(verdict, "pass", "{report:#}");

    let (verdict, check, report) = window_end(Expiry::TakenByEach, &["--window-wait", "5s"]);
    assert_eq!(verdict, "fail", "{report:#}");
    assert!(
        check["evidence"].to_string().contains("the step ran"),
        "{check:#}"
    );

    let (verdict, check, report) = window_end(Expiry::KeepsItsClaim, &["--window-wait", "5s"]);
    assert_eq!(verdict, "fail", "{report:#}");
    assert!(
        check["evidence"]
            .to_string()
            .contains("the key stays blocked past its window"),
        "{check:#}"
    );

    let (verdict, check, report) = window_end(Expiry::Ignored, &["--window-wait", "5s"]);
    assert_eq!(verdict, "fail", "{report:#}");
    assert!(
        check["evidence"]
            .to_string()
            .contains("the record outlived its window"),
        "{check:#}"
    );

    // With a count of the order's payments: one new payment, or the
    // counts that show several.
    let counted = |expiry| {
        let mut args = vec!["--window-wait", "5s"];
        args.extend(OBSERVE_PAYMENTS);
        window_end(expiry, &args)
    };
    let (verdict, check, report) = counted(Expiry::New);
    assert_eq!(verdict, "pass", "{report:#}");
    let effects = &check["effects"][0];
    assert_eq!(
        effects["after"].as_u64().unwrap(),
        effects["before"].as_u64().unwrap() + 1,
        "{check:#}"
    );
    assert!(
        check["evidence"].to_string().contains("one effect:"),
        "{check:#}"
    );
    let (verdict, check, report) = counted(Expiry::TakenByEach);
    assert_eq!(verdict, "fail", "{report:#}");
    assert!(
        check["evidence"]
            .to_string()
            .contains("of GET /orders/ORD-1/payments went from"),
        "{check:#}"
    );
}

/// A contract whose keys are any the IETF draft's header allows
/// (`{sf-string}`, spaces included): `malformed-key` sends only what that
/// refuses (a tab), so a service that keeps any draft key passes it, and
/// one that keeps any header text does not.
#[test]
fn sf_string_keys_are_refused_only_outside_the_drafts_string() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("openapi.yaml");
    let any_key = ORDERS_SPEC
        .replace(r#"format: "{opaque}""#, r#"format: "{sf-string}""#)
        .replace(r#"pattern: "^[!-~]+$""#, r#"pattern: "^[ -~]+$""#);
    assert!(any_key.contains("{sf-string}"));
    std::fs::write(&spec, any_key).unwrap();
    let (_, checks, report) = probe_op_json(&spec, &serve_orders(ReplayFlaw::None), "createOrder");
    assert_eq!(outcome(&checks, "malformed-key"), "pass", "{report:#}");
    let summary = checks["malformed-key"]["summary"].as_str().unwrap();
    assert!(summary.contains("valid"), "{summary}");
    // Keeping its records under the header's first word, it serves the
    // tab's key too.
    let (_, checks, report) = probe_op_json(
        &spec,
        &serve_orders(ReplayFlaw::FirstWordOfKey),
        "createOrder",
    );
    assert_eq!(outcome(&checks, "malformed-key"), "fail", "{report:#}");
}

/// `--observe` for the payment servers: the order's payments, whose
/// number is the count.
const OBSERVE_PAYMENTS: [&str; 2] = ["--observe", "GET /orders/{order_no}/payments=/payments"];

/// The `--observe` counts a check reported: (before, after) per key.
fn counts(checks: &HashMap<String, Value>, id: &str) -> Vec<(u64, u64)> {
    checks[id]["effects"]
        .as_array()
        .map(|effects| {
            effects
                .iter()
                .map(|count| {
                    assert_eq!(count["read"], "GET /orders/ORD-1/payments", "{count}");
                    assert_eq!(count["pointer"], "/payments", "{count}");
                    (
                        count["before"].as_u64().unwrap(),
                        count["after"].as_u64().unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A service that keeps every promise, with a read that counts its
/// payments: every check that sends one key several times counts one
/// payment for it (none for the replay), says so, and passes.
#[test]
fn an_effect_count_shows_one_effect_per_key() {
    let (_dir, spec) = spec_file();
    let base = serve(Flaw::None);
    let (code, checks, report) = probe_op_json_with(&spec, &base, "pay", &OBSERVE_PAYMENTS);
    for id in ALL.iter().chain(&["sf-string"]) {
        assert_eq!(outcome(&checks, id), "pass", "{id}: {report:#}");
    }
    assert_eq!(code, 0, "{report:#}");
    let request = report["operations"][0]["request"].to_string();
    assert!(
        request.contains("effects counted by --observe: GET /orders/ORD-1/payments → /payments = 0 before the first key"),
        "{request}"
    );
    for id in ["burst", "in-progress", "retry-after"] {
        let [(before, after)] = counts(&checks, id)[..] else {
            panic!("{id}: one count expected: {report:#}");
        };
        assert_eq!(after, before + 1, "{id}: {report:#}");
        assert!(
            evidence(&checks, id).contains(&format!(
                "one effect: `/payments` of GET /orders/ORD-1/payments went from {before} to {after}"
            )),
            "{id}: {report:#}"
        );
    }
    // The burst paid ORD-1 first.
    assert_eq!(counts(&checks, "burst"), [(0, 1)], "{report:#}");
    let [(before, after)] = counts(&checks, "replay")[..] else {
        panic!("{report:#}");
    };
    assert_eq!(before, after, "{report:#}");
    assert!(
        evidence(&checks, "replay").contains("no new effect"),
        "{report:#}"
    );
    // Two keys, one payment each.
    let sf = counts(&checks, "sf-string");
    assert_eq!(sf.len(), 2, "{report:#}");
    assert!(
        sf.iter().all(|(before, after)| after - before == 1),
        "{report:#}"
    );
    // The changed body under a used key: no payment.
    let [(before, after)] = counts(&checks, "conflict")[..] else {
        panic!("{report:#}");
    };
    assert_eq!(before, after, "{report:#}");
    // The checks that send no key of their own count nothing.
    assert!(checks["scope"].get("effects").is_none(), "{report:#}");

    // `{/pointer}` fills from the body as `{NAME}` does, and `GET` may be
    // left out.
    let (code, checks, report) = probe_op_json_with(
        &spec,
        &base,
        "pay",
        &["--observe", "/orders/{/order_no}/payments=/payments"],
    );
    assert_eq!(counts(&checks, "burst").len(), 1, "{report:#}");
    assert_eq!(code, 0, "{report:#}");

    // Without --observe the report has no counts at all.
    let (_, checks, report) = probe_json(&spec, &base);
    assert!(
        checks.values().all(|check| check.get("effects").is_none()),
        "{report:#}"
    );
}

/// Check-then-write on one instance whose every execution answers the
/// same bytes and whose replays carry no mark: the answers look like one
/// payment, and only the count shows the others. It fails the burst and
/// the in-progress duplicates whatever `--replay-header` says.
#[test]
fn a_count_that_rose_by_more_than_one_fails_whatever_the_answers_say() {
    let (_dir, spec) = spec_file();
    // What the answers alone say of it.
    let (_, checks, report) = probe_op_json_with(
        &spec,
        &serve(Flaw::CheckThenWriteUnmarked),
        "pay",
        &["--replay-header", "none"],
    );
    assert_eq!(outcome(&checks, "burst"), "pass", "{report:#}");
    // It ignores the fingerprint, and its unmarked answer to a changed
    // body may be a replay or a second payment: the evidence says both.
    assert_eq!(outcome(&checks, "conflict"), "fail", "{report:#}");
    assert!(
        evidence(&checks, "conflict").contains("--observe would tell which"),
        "{report:#}"
    );

    for replay_header in ["none", "Idempotent-Replayed"] {
        let mut args = vec!["--replay-header", replay_header];
        args.extend(OBSERVE_PAYMENTS);
        let (code, checks, report) =
            probe_op_json_with(&spec, &serve(Flaw::CheckThenWriteUnmarked), "pay", &args);
        for id in ["burst", "in-progress"] {
            assert_eq!(
                outcome(&checks, id),
                "fail",
                "{replay_header}, {id}: {report:#}"
            );
            let [(before, after)] = counts(&checks, id)[..] else {
                panic!("{id}: {report:#}");
            };
            assert!(after > before + 1, "{id}: {report:#}");
            assert!(
                evidence(&checks, id).contains(&format!(
                    "`/payments` of GET /orders/ORD-1/payments went from {before} to {after}: the step took effect {} times for one key",
                    after - before
                )),
                "{replay_header}, {id}: {report:#}"
            );
        }
        // The count tells: no payment for the changed body, a replay.
        let said = evidence(&checks, "conflict");
        assert!(
            said.contains("it is the first answer replayed") && said.contains("no new effect"),
            "{report:#}"
        );
        assert_eq!(code, 1, "{report:#}");
    }
}

/// Two instances with a store each, paying into one business database,
/// their replays unmarked and declared so: the count fails them, with
/// the endpoint and the counts as evidence. The same instances sharing
/// one store pass, the count their evidence, where without it the answers
/// cannot tell.
#[test]
fn instances_are_judged_by_the_count_of_effects() {
    let (_dir, spec) = spec_file();
    let unmarked = Flaw::SameAnswerMarkedAs(None);
    let mut args = vec!["--replay-header", "none"];
    args.extend(OBSERVE_PAYMENTS);

    let ledger = Ledger::default();
    let first = serve_on(unmarked, Store::default(), Arc::clone(&ledger));
    let second = serve_on(unmarked, Store::default(), ledger);
    let (code, checks, report) = probe_instances(&spec, &[&first, &second], &args);
    for id in ["burst", "in-progress", "retry-after", "shared-store"] {
        assert_eq!(outcome(&checks, id), "fail", "{id}: {report:#}");
    }
    // Each form of a key paid once per instance: the count, not a
    // warning that the answers cannot tell.
    assert_eq!(outcome(&checks, "sf-string"), "fail", "{report:#}");
    assert!(
        !checks["sf-string"]["warnings"]
            .to_string()
            .contains("cannot be told"),
        "{report:#}"
    );
    for id in ["burst", "shared-store", "sf-string"] {
        let said = evidence(&checks, id);
        assert!(
            said.contains("of GET /orders/ORD-1/payments went from")
                && said.contains("the step took effect 2 times for one key"),
            "{id}: {report:#}"
        );
    }
    assert_eq!(code, 1, "{report:#}");

    // One store: one request of the burst at a time, so each instance
    // answers the same unmarked bytes; the store test passes, and the
    // count, not the answers, passes the burst.
    let one_at_a_time = ["--replay-header", "none", "--concurrency", "1"];
    let counted: Vec<&str> = one_at_a_time
        .iter()
        .chain(&OBSERVE_PAYMENTS)
        .copied()
        .collect();
    let store = Store::default();
    let ledger = Ledger::default();
    let first = serve_on(unmarked, Arc::clone(&store), Arc::clone(&ledger));
    let second = serve_on(unmarked, store, ledger);
    let (_, checks, report) = probe_instances(&spec, &[&first, &second], &one_at_a_time);
    assert_eq!(outcome(&checks, "burst"), "not-applicable", "{report:#}");
    assert!(
        evidence(&checks, "burst").contains("--observe"),
        "the verdict says what would tell: {report:#}"
    );
    let (code, checks, report) = probe_instances(&spec, &[&first, &second], &counted);
    for id in ALL.iter().chain(&["sf-string", "shared-store"]) {
        assert_eq!(outcome(&checks, id), "pass", "{id}: {report:#}");
    }
    for id in ["burst", "in-progress", "retry-after", "shared-store"] {
        assert!(
            evidence(&checks, id)
                .contains("one effect: `/payments` of GET /orders/ORD-1/payments went from"),
            "{id}: {report:#}"
        );
    }
    assert!(
        !evidence(&checks, "burst").contains("cannot be told"),
        "{report:#}"
    );
    assert_eq!(code, 0, "{report:#}");
}

/// A count that cannot be read stops the probe before any check runs
/// (exit 2), naming --observe, what it got and the fix; never a panic.
#[test]
fn an_observe_read_that_does_not_count_is_a_usage_error() {
    let (_dir, spec) = spec_file();
    let ledger = Ledger::default();
    let base = serve_on(Flaw::None, Store::default(), Arc::clone(&ledger));
    for (observe, says) in [
        ("GET /orders/{order_no}/page=/payments", "not JSON"),
        (
            "GET /orders/{order_no}/payments=/total",
            "without `/total` (its top-level names: /order_no, /payments, /state)",
        ),
        (
            "GET /orders/{order_no}/payments=/state",
            "a string at `/state`, not a count",
        ),
        (
            "GET /orders/{order_no}/payments=",
            "an object at the document, not a count",
        ),
        ("GET /nowhere/{order_no}=/n", "answered 404 Not Found"),
        ("GET /hang-up=/n", "GET /hang-up: no answer"),
        (
            "GET /orders/{order}/payments=/payments",
            "`{order}` names no path or query parameter",
        ),
        (
            "GET /orders/{/order}/payments=/payments",
            "--set /order=VALUE",
        ),
        (
            "POST /orders/{order_no}/payments=/payments",
            "read with GET",
        ),
        ("GET /orders/{order_no}/payments", "no `=`"),
    ] {
        let output = probe(&spec, &base, &["--op", "pay", "--observe", observe]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{observe}: {stderr}");
        assert!(stderr.contains("--observe"), "{observe}: {stderr}");
        assert!(stderr.contains(says), "{observe}: {stderr}");
        assert!(!stderr.contains("panicked"), "{observe}: {stderr}");
        assert!(output.stdout.is_empty(), "{observe}: no check ran");
    }
    // Read for every probed operation: `refund` has no order number.
    let output = probe(
        &spec,
        &base,
        &["--observe", "GET /orders/{order_no}/payments=/payments"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("(refund): `{order_no}` names no path or query parameter")
            && stderr.contains("with --op"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "no check ran");
    assert!(ledger.lock().unwrap().is_empty(), "nothing was paid");
}

/// A key the contract refuses, answered 2xx: the evidence says what the
/// answers and the count show, never more. The count shows the payment;
/// without it, and with replays declared unmarked, the answer cannot tell
/// a processed request from a stored answer.
#[test]
fn a_refused_key_answered_2xx_is_described_by_what_was_observed() {
    let (_dir, spec) = spec_file();
    let base = serve(Flaw::AcceptsAnyKey);
    let (_, checks, report) = probe_op_json_with(&spec, &base, "pay", &OBSERVE_PAYMENTS);
    assert_eq!(outcome(&checks, "malformed-key"), "fail", "{report:#}");
    assert!(
        evidence(&checks, "malformed-key")
            .contains("the request was processed without a valid key (the effect count rose)"),
        "{report:#}"
    );
    let [(before, after)] = counts(&checks, "malformed-key")[..] else {
        panic!("{report:#}");
    };
    assert_eq!(after, before + 1, "{report:#}");

    let (_, checks, report) = probe_op_json_with(&spec, &base, "pay", &["--replay-header", "none"]);
    let said = evidence(&checks, "malformed-key");
    assert!(said.contains("cannot tell which"), "{report:#}");
    assert!(!said.contains("was processed"), "{report:#}");
}
