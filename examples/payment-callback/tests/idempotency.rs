//! Tests of the generated idempotency layer on `onPayCallback`, against
//! `TEST_DATABASE_URL` (default: a fresh SQLite file when built for SQLite;
//! skipped otherwise). They drive the layer directly, so they hold whatever
//! the business functions do.
#![cfg_attr(rustfmt, rustfmt::skip)]

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use idemgen_runtime::Dialect;
use idemgen_runtime::{Call, Principal};
use serde_json::{Value, json};
use tower::ServiceExt;

use payment_callback::App;
use payment_callback::Reply;
use payment_callback::operations::ON_PAY_CALLBACK as OPERATION;

/// The header that marks a replayed answer (`responses.replayed-header`).
const REPLAYED_HEADER: &str = "idempotent-replayed";

/// The app under test, and the SQLite file it removes when dropped.
struct TestApp {
    app: App,
    file: Option<std::path::PathBuf>,
}

impl std::ops::Deref for TestApp {
    type Target = App;

    fn deref(&self) -> &App {
        &self.app
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(file) = &self.file {
            for suffix in ["", "-wal", "-shm"] {
                let mut path = file.clone().into_os_string();
                path.push(suffix);
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

async fn app() -> Option<TestApp> {
    let (url, file) = match std::env::var("TEST_DATABASE_URL") {
        Ok(url) => (url, None),
        Err(_) if Dialect::BUILT == Dialect::Sqlite => {
            let file = std::env::temp_dir()
                .join(format!("payment-callback-test-{}.db", uuid::Uuid::new_v4()));
            (format!("sqlite://{}", file.display()), Some(file))
        }
        Err(_) => {
            // Written past the test harness's capture, so the skip shows.
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                b"SKIPPED: set TEST_DATABASE_URL to run\n",
            );
            return None;
        }
    };
    let app = App::connect(&url).await.expect("connect and migrate");
    Some(TestApp { app, file })
}

#[tokio::test]
async fn health_and_metrics_are_served() {
    let Some(app) = app().await else { return };
    let health = app
        .router()
        .oneshot(Request::get("/healthz").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let metrics = app
        .router()
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(metrics.status(), StatusCode::OK);
    let text = body_text(metrics.into_body()).await;
    assert!(text.contains("# TYPE idempotency_replays_total counter"), "{text}");
    assert!(text.contains("# TYPE idempotency_takeovers_total counter"), "{text}");
}

/// A path no operation serves and a method a path does not take are
/// problem answers too (404, and 405 with `Allow`), not empty bodies.
#[tokio::test]
async fn unknown_paths_and_methods_are_problem_answers() {
    let Some(app) = app().await else { return };
    let unknown = app
        .router()
        .oneshot(Request::get("/idemgen-no-such-path").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    assert_eq!(unknown.headers() ["content-type"], "application/problem+json");
    let problem = body_text(unknown.into_body()).await;
    assert!(problem.contains("\"type\":\"urn:idemgen:problem:not-found\""), "{problem}");
    let wrong_method = app
        .router()
        .oneshot(Request::delete("/healthz").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(wrong_method.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(wrong_method.headers() ["content-type"], "application/problem+json");
    assert!(wrong_method.headers() ["allow"].to_str().unwrap().contains("GET"));
    let problem = body_text(wrong_method.into_body()).await;
    assert!(
        problem.contains("\"type\":\"urn:idemgen:problem:method-not-allowed\""),
        "{problem}"
    );
}

async fn body_text(body: Body) -> String {
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// One valid request of the operation under test: a fresh key that matches
/// `pay:{date}:{uuid}`, and a body that carries what the key needs.
#[derive(Clone)]
struct Case {
    key: String,
    body: Value,
}

impl Case {
    fn new() -> Case {
        let body = json!({});
        let mut key = String::new();
        key.push_str("pay:");
        key.push_str("20240615");
        key.push(':');
        key.push_str(&uuid::Uuid::new_v4().to_string());
        Case { key, body }
    }

    /// The same key with a different body.
    fn changed(&self) -> Case {
        let mut case = self.clone();
        case.body["idemgen_test_change"] = json!(true);
        case
    }

    fn request(&self) -> axum::extract::Request {
        self.request_with_key(Some(&self.key))
    }

    fn request_with_key(&self, key: Option<&str>) -> axum::extract::Request {
        let body = self.body.clone();
        let uri = "/callbacks/pay".to_string();
        let builder = Request::builder()
            .method("POST")
            .header("content-type", "application/json");
        let builder = builder.extension(Principal::new("tenant-a", "test"));
        let builder = match key {
            Some(key) => builder.header("Idempotency-Key", key),
            None => builder,
        };
        builder.uri(uri).body(Body::from(serde_json::to_vec(&body).unwrap())).unwrap()
    }
}

/// How many records the case's key has.
async fn records(app: &App, case: &Case) -> i64 {
    let placeholder = if Dialect::BUILT == Dialect::Postgres { "$1" } else { "?" };
    let sql = format!(
        "SELECT COUNT(*) FROM idempotent_record WHERE idem_key = {placeholder}"
    );
    sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql))
        .bind(&case.key)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// Through the router, whose security check runs first: a request
/// `src/auth.rs` refuses is answered before its key is read.
#[tokio::test]
async fn a_request_without_credentials_is_refused_before_its_key_is_read() {
    let Some(app) = app().await else { return };
    let case = Case::new();
    let mut request = case.request();
    request.extensions_mut().remove::<Principal>();
    let refused = app.router().oneshot(request).await.unwrap();
    if ![StatusCode::UNAUTHORIZED, StatusCode::FORBIDDEN].contains(&refused.status()) {
        // Written past the test harness's capture, so the skip shows.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"SKIPPED: src/auth.rs admits requests without credentials\n",
        );
        return;
    }
    assert_eq!(refused.headers() ["content-type"], "application/problem+json");
    assert_eq!(records(& app, & case). await, 0);

    // The key was not consumed.
    let call = claim(&app, case.request()).await;
    assert_eq!(call.answer(created("first")). await .status(), StatusCode::CREATED);
}

async fn claim(app: &App, request: axum::extract::Request) -> Call {
    match app.idempotency.begin(&OPERATION, request).await {
        Ok(call) => call,
        Err(answer) => panic!("expected to claim the key, got {}", answer.status()),
    }
}

async fn answer(app: &App, request: axum::extract::Request) -> Response {
    match app.idempotency.begin(&OPERATION, request).await {
        Ok(_) => panic!("expected an answer, but the key was claimed"),
        Err(answer) => answer,
    }
}

fn created(marker: &str) -> Reply {
    Reply::json(StatusCode::CREATED, &json!({ "marker" : marker }))
}

/// Sets a time column of the case's record, as if time had passed.
async fn age(app: &App, case: &Case, column: &str) {
    let placeholder = if Dialect::BUILT == Dialect::Postgres { "$1" } else { "?" };

    // Only test-chosen column names are formatted in; the key is bound.
    let sql = format!(
        "UPDATE idempotent_record SET {column} = 0 WHERE idem_key = {placeholder}"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(&case.key)
        .execute(&app.pool)
        .await
        .unwrap();
}

#[tokio::test]
async fn success_is_stored_and_replayed_faithfully() {
    let Some(app) = app().await else { return };
    let case = Case::new();
    let call = claim(&app, case.request()).await;
    let first = call.answer(created("first")).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    assert!(first.headers().get(REPLAYED_HEADER).is_none());
    let first_body = body_text(first.into_body()).await;
    let replay = answer(&app, case.request()).await;
    assert_eq!(replay.status(), StatusCode::CREATED);
    assert_eq!(replay.headers() [REPLAYED_HEADER], "true");
    assert_eq!(replay.headers() ["content-type"], "application/json");
    assert_eq!(replay.headers().len(), 2, "{:?}", replay.headers());
    assert_eq!(body_text(replay.into_body()). await, first_body);
    assert!(OPERATION.counters.replays.get() >= 1);
}

#[tokio::test]
async fn a_duplicate_while_in_progress_is_told_to_retry() {
    let Some(app) = app().await else { return };
    let case = Case::new();
    let call = claim(&app, case.request()).await;
    let duplicate = answer(&app, case.request()).await;
    assert_eq!(duplicate.status().as_u16(), 429);
    assert_eq!(duplicate.headers() ["retry-after"], "1");
    call.answer(created("done")).await;
}

#[tokio::test]
async fn concurrent_claims_have_exactly_one_winner() {
    let Some(app) = app().await else { return };
    let case = Case::new();
    let answers = race(&app, &case, 8, "one").await;
    let winners = answers.iter().filter(|(won, _)| *won).count();
    assert_eq!(winners, 1);
    for (won, status) in answers {
        // A duplicate is told to retry, or (when it waited for the
        // winner's commit, as SQLite's single writer makes it) replayed.
        if !won && status != StatusCode::CREATED.as_u16() {
            assert_eq!(status, 429);
        }
    }
}

/// `count` concurrent attempts with one request; each winner answers at
/// once (on SQLite its transaction holds the only write lock). Whether each
/// claimed the key, and its status.
async fn race(
    app: &App,
    case: &Case,
    count: usize,
    marker: &'static str,
) -> Vec<(bool, u16)> {
    let attempts: Vec<_> = (0..count)
        .map(|_| {
            let app = app.clone();
            let request = case.request();
            tokio::spawn(async move {
                match app.idempotency.begin(&OPERATION, request).await {
                    Ok(call) => {
                        (true, call.answer(created(marker)).await.status().as_u16())
                    }
                    Err(answer) => (false, answer.status().as_u16()),
                }
            })
        })
        .collect();
    let mut answers = Vec::new();
    for attempt in attempts {
        answers.push(attempt.await.unwrap());
    }
    answers
}

#[tokio::test]
async fn the_same_key_with_another_body_is_a_conflict() {
    let Some(app) = app().await else { return };
    let case = Case::new();
    claim(&app, case.request()).await.answer(created("first")).await;
    let conflict = answer(&app, case.changed().request()).await;
    assert_eq!(conflict.status().as_u16(), 409);
    let replay = answer(&app, case.request()).await;
    assert_eq!(replay.status(), StatusCode::CREATED);
}

#[tokio::test]
async fn a_recorded_failure_is_claimed_again_by_one_retry() {
    let Some(app) = app().await else { return };
    let case = Case::new();
    let failed = claim(&app, case.request())
        .await
        .answer(Reply::problem(StatusCode::NOT_FOUND, "no such thing", ""))
        .await;
    assert_eq!(failed.status(), StatusCode::NOT_FOUND);
    let answers = race(&app, &case, 6, "retried").await;
    let winners = answers.iter().filter(|(won, _)| *won).count();
    assert_eq!(winners, 1);
    for (won, status) in answers {
        if won {
            assert_eq!(status, StatusCode::CREATED.as_u16());
        } else if status != StatusCode::CREATED.as_u16() {
            assert_eq!(status, 429);
        }
    }
}

#[tokio::test]
async fn an_abandoned_claim_is_taken_over_and_the_old_worker_is_fenced() {
    let Some(app) = app().await else { return };
    let case = Case::new();
    let stale = claim(&app, case.request()).await;
    if Dialect::BUILT == Dialect::Sqlite {
        // One writer at a time: the stale worker's open transaction holds
        // the takeover off until its lease's deadline rolls it back.
        drop(stale);
        age(&app, &case, "lease_expires_at").await;
        let fresh = claim(&app, case.request()).await;
        assert!(OPERATION.counters.takeovers.get() >= 1);
        let done = fresh.answer(created("fresh")).await;
        assert_eq!(done.status(), StatusCode::CREATED);
        return;
    }
    age(&app, &case, "lease_expires_at").await;
    let fresh = claim(&app, case.request()).await;
    assert!(OPERATION.counters.takeovers.get() >= 1);
    let late = stale.answer(created("stale")).await;
    assert_eq!(late.status().as_u16(), 429);
    let done = fresh.answer(created("fresh")).await;
    assert_eq!(done.status(), StatusCode::CREATED);
    let replay = answer(&app, case.request()).await;
    assert!(body_text(replay.into_body()). await .contains("fresh"));
}

#[tokio::test]
async fn a_key_past_its_window_is_new() {
    let Some(app) = app().await else { return };
    let case = Case::new();
    claim(&app, case.request()).await.answer(created("old")).await;
    age(&app, &case, "expires_at").await;
    let call = claim(&app, case.changed().request()).await;
    let done = call.answer(created("new")).await;
    assert_eq!(done.status(), StatusCode::CREATED);
}

#[tokio::test]
async fn the_purge_deletes_expired_records_only() {
    let Some(app) = app().await else { return };
    let (expired, live) = (Case::new(), Case::new());
    for case in [&expired, &live] {
        claim(&app, case.request()).await.answer(created("done")).await;
    }
    age(&app, &expired, "expires_at").await;
    age(&app, &expired, "lease_expires_at").await;
    assert!(app.idempotency.purge_expired(500). await .unwrap() >= 1);

    // The expired key is new again; the live one still replays.
    claim(&app, expired.request()).await;
    let replay = answer(&app, live.request()).await;
    assert_eq!(replay.headers() [REPLAYED_HEADER], "true");
}

/// The IETF draft sends the key as a Structured Field String (`"…"`);
/// quoted or bare, it is one key.
#[tokio::test]
async fn a_quoted_key_is_the_same_key_as_the_bare_one() {
    let Some(app) = app().await else { return };
    let case = Case::new();
    let call = claim(&app, case.request_with_key(Some(&format!("\"{}\"", case.key))))
        .await;
    let first = call.answer(created("first")).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let replay = answer(&app, case.request()).await;
    assert_eq!(replay.headers() [REPLAYED_HEADER], "true");
    let unclosed = answer(&app, case.request_with_key(Some(&format!("\"{}", case.key))))
        .await;
    assert_eq!(unclosed.status().as_u16(), 400);
    assert_eq!(unclosed.headers() ["content-type"], "application/problem+json");
}

#[tokio::test]
async fn missing_malformed_and_overlong_keys_are_refused() {
    let Some(app) = app().await else { return };
    let case = Case::new();
    for key in [
        None,
        Some("x".to_string()),
        Some(format!("{}{}", case.key, "0".repeat(128))),
    ] {
        let refused = answer(&app, case.request_with_key(key.as_deref())).await;
        assert_eq!(refused.status().as_u16(), 400, "{key:?}");
    }
}

#[tokio::test]
async fn an_oversized_body_is_413() {
    let Some(app) = app().await else { return };
    let case = Case::new();
    let mut request = case.request();
    *request.body_mut() = Body::from(vec![b' '; 1024 * 1024 + 1]);
    request.headers_mut().remove("content-length");
    let refused = answer(&app, request).await;
    assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE);
}
