//! The IETF Idempotency-Key draft's wire form and answers, against a real
//! database (SQLite always, MariaDB or PostgreSQL with `--features
//! mysql|postgres` and `IDEMGEN_TEST_MYSQL_URL` / `IDEMGEN_TEST_PG_URL`):
//! a key sent as a Structured Field String (`"…"`) and bare is one key, a
//! malformed sf-string is refused with the missing-key status, and every
//! refusal is `application/problem+json` with a stable `type` per kind, a
//! `title`, a `detail` and the status the `ietf-draft` profile names.

use crate::support::{self, Table, body_text};
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use axum::response::Response;
use idemgen_runtime::{
    Contract, Credential, Idempotency, MAX_BODY_BYTES, Operation, Principal, ProblemKind,
    REPLAYED_HEADER, Refusal, Reply, Scheme, SchemeKind, Security, Verify, authenticate,
};
use serde_json::{Value, json};

/// What `idemgen gen` writes for `profile: ietf-draft` and
/// `key.format: "{opaque}"`: 400 for a missing or malformed key, 409 in
/// progress, 422 for a key reused with another payload.
const DRAFT: Contract = Contract {
    max_key_len: 255,
    missing_key_status: 400,
    in_progress_status: 409,
    conflict_status: 422,
    ..Contract::header("{opaque}", "^([!-~]+)$", 60_000, 3_000)
};

static CREATE: Operation = Operation::idempotent("createOrder", "create_order", DRAFT);

const BEARER: Scheme = Scheme {
    name: "bearerAuth",
    kind: SchemeKind::Bearer,
    realm: "",
};
static SECURITY: Security = Security {
    alternatives: &[&[BEARER]],
};
static SECURED: Operation =
    Operation::idempotent("createSecured", "create_secured", DRAFT).secured(SECURITY);

/// `alice` may call; `mallory` is known and not allowed (403); anything
/// else is unauthenticated (401).
struct Callers;

impl Verify for Callers {
    async fn verify(
        &self,
        scheme: &'static Scheme,
        credential: &Credential,
        _request: &idemgen_runtime::Request,
    ) -> Result<Principal, Refusal> {
        match credential {
            Credential::Bearer(token) if token == "alice" => Ok(Principal::new("alice", "bearer")),
            Credential::Bearer(token) if token == "mallory" => {
                Err(Refusal::forbidden("mallory may not create orders"))
            }
            Credential::Missing => Err(Refusal::missing(scheme)),
            _ => Err(Refusal::unauthenticated("unknown token")),
        }
    }
}

fn create(key: Option<&str>, body: &Value) -> axum::extract::Request {
    support::post_json("/orders", key, body)
}

fn fresh_key() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Runs `request` through `CREATE` to a 201 that echoes `marker`.
async fn created(engine: &Idempotency, request: axum::extract::Request, marker: &str) -> Response {
    match engine.begin(&CREATE, request).await {
        Ok(call) => {
            call.finish(Ok::<_, sqlx::Error>(Reply::json(
                StatusCode::CREATED,
                &json!({ "marker": marker }),
            )))
            .await
        }
        Err(answer) => answer,
    }
}

async fn refused(engine: &Idempotency, request: axum::extract::Request) -> Response {
    match engine.begin(&CREATE, request).await {
        Ok(_) => panic!("expected a refusal, but the key was claimed"),
        Err(answer) => answer,
    }
}

/// Checks that `response` is the problem `kind` with `status`, and
/// returns its `detail`.
async fn assert_problem(response: Response, status: u16, kind: ProblemKind) -> String {
    assert_eq!(response.status().as_u16(), status, "{kind:?}");
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "application/problem+json",
        "{kind:?}"
    );
    let body: Value = serde_json::from_str(&body_text(response).await).unwrap();
    assert_eq!(body["type"], kind.type_uri(), "{body}");
    assert!(kind.type_uri().starts_with("urn:idemgen:problem:"));
    assert_eq!(body["title"], kind.title(), "{body}");
    assert_eq!(body["status"], status, "{body}");
    let detail = body["detail"].as_str().unwrap_or_default().to_string();
    assert!(!detail.is_empty(), "{body}");
    detail
}

#[tokio::test]
async fn a_quoted_and_a_bare_key_are_one_key() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let order = json!({"item": "book"});
    for (first, second) in [(true, false), (false, true)] {
        let key = fresh_key();
        let form = |quoted: bool| {
            if quoted {
                format!("\"{key}\"")
            } else {
                key.clone()
            }
        };
        let answer = created(&engine, create(Some(&form(first)), &order), "first").await;
        assert_eq!(answer.status(), StatusCode::CREATED);
        let first_body = body_text(answer).await;
        let replay = created(&engine, create(Some(&form(second)), &order), "second").await;
        assert_eq!(replay.status(), StatusCode::CREATED);
        assert_eq!(replay.headers()[REPLAYED_HEADER], "true");
        assert_eq!(body_text(replay).await, first_body);
        // The key is stored unquoted: one record, whatever the form.
        let records: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM {} WHERE idem_key = '{key}'",
            table.name
        )))
        .fetch_one(&table.pool)
        .await
        .unwrap();
        assert_eq!(records, 1);
    }
    // Escapes are the draft's: `\"` and `\\` stand for `"` and `\`.
    let escaped = created(&engine, create(Some(r#""k\"1\\""#), &order), "escaped").await;
    assert_eq!(escaped.status(), StatusCode::CREATED);
    let bare = created(&engine, create(Some(r#"k"1\"#), &order), "bare").await;
    assert_eq!(bare.headers()[REPLAYED_HEADER], "true");
}

#[tokio::test]
async fn a_malformed_sf_string_is_refused_with_the_missing_key_status() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    for malformed in [
        "\"unterminated",
        "\"a\\nb\"",
        "\"abc\";p=1",
        "\"abc\" \"def\"",
        // Well formed, but an opaque key is visible ASCII: no spaces.
        "\"a b\"",
        "\"\"",
    ] {
        let answer = refused(&engine, create(Some(malformed), &json!({}))).await;
        let detail = assert_problem(answer, 400, ProblemKind::InvalidKey).await;
        assert!(!detail.is_empty(), "{malformed}");
    }
    let records: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM {}",
        table.name
    )))
    .fetch_one(&table.pool)
    .await
    .unwrap();
    assert_eq!(records, 0, "a refused key claims nothing");
}

#[tokio::test]
async fn every_refusal_is_a_problem_with_its_own_type() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let order = json!({"item": "book"});

    let missing = refused(&engine, create(None, &order)).await;
    assert_problem(missing, 400, ProblemKind::MissingKey).await;
    let too_long = refused(&engine, create(Some(&"k".repeat(256)), &order)).await;
    assert_problem(too_long, 400, ProblemKind::InvalidKey).await;

    // The same key with another payload.
    let key = fresh_key();
    let first = created(&engine, create(Some(&key), &order), "first").await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let reused = refused(&engine, create(Some(&key), &json!({"item": "pen"}))).await;
    assert_problem(reused, 422, ProblemKind::KeyReused).await;

    // In progress: the record is put back in flight, its lease live (a
    // first attempt holding SQLite's one write lock would make the
    // duplicate wait instead).
    table
        .sql(&format!(
            "UPDATE {{t}} SET status = 'in_progress', lease_expires_at = expires_at \
             WHERE idem_key = '{key}'"
        ))
        .await;
    let busy = refused(&engine, create(Some(&format!("\"{key}\"")), &order)).await;
    assert_eq!(busy.headers()[header::RETRY_AFTER], "1");
    assert_problem(busy, 409, ProblemKind::InProgress).await;

    // Security before the key: 401 without credentials, 403 for a caller
    // who may not call, and the engine's own 401 for a handler that
    // skipped the check.
    for (token, status, kind) in [
        (None, 401, ProblemKind::Unauthenticated),
        (Some("nobody"), 401, ProblemKind::Unauthenticated),
        (Some("mallory"), 403, ProblemKind::Forbidden),
    ] {
        let mut request = idemgen_runtime::Request::new(axum::http::Method::POST, "/orders");
        if let Some(token) = token {
            request.headers.insert(
                header::AUTHORIZATION,
                format!("Bearer {token}").parse().unwrap(),
            );
        }
        let Err(answer) = authenticate(&SECURITY, &Callers, &request).await else {
            panic!("{token:?} is refused");
        };
        assert_problem(answer, status, kind).await;
    }
    let Err(unchecked) = engine
        .begin(&SECURED, create(Some(&fresh_key()), &order))
        .await
    else {
        panic!("an unauthenticated request reaching the engine is refused");
    };
    assert_problem(unchecked, 401, ProblemKind::Unauthenticated).await;

    // Typed input: not JSON (400), JSON that does not fit (422).
    #[derive(Debug, serde::Deserialize)]
    struct Order {
        #[allow(dead_code)]
        item: String,
    }
    for (body, status, kind) in [
        ("{", 400, ProblemKind::InvalidBody),
        (r#"{"item": 5}"#, 422, ProblemKind::SchemaMismatch),
    ] {
        let request = Request::post("/orders")
            .header("content-type", "application/json")
            .header("Idempotency-Key", fresh_key())
            .body(Body::from(body))
            .unwrap();
        let Err(answer) = engine
            .begin_typed(&CREATE, request, |request| request.body_as::<Order>())
            .await
        else {
            panic!("{body} is refused");
        };
        assert_problem(answer, status, kind).await;
    }

    // A body over the limit: 413 before anything is read into memory.
    let oversized = Request::post("/orders")
        .header("Idempotency-Key", fresh_key())
        .header(header::CONTENT_LENGTH, MAX_BODY_BYTES + 1)
        .body(Body::from(vec![b' '; MAX_BODY_BYTES + 1]))
        .unwrap();
    let too_large = refused(&engine, oversized).await;
    assert_problem(too_large, 413, ProblemKind::BodyTooLarge).await;
}
