//! The article's scenario end to end, over HTTP through the router: a
//! payment callback retried and duplicated marks the order paid once and
//! logs exactly one payment. Runs against `TEST_DATABASE_URL` (default: a
//! fresh SQLite file when built for SQLite; skipped otherwise), without
//! signature checks (`tests/signatures.rs` has those).

use axum::body::Body;
use axum::http::{Request, StatusCode};
use payment_callback::App;
use payment_callback::auth::Auth;
use serde_json::{Value, json};
use tower::ServiceExt;

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
        Err(_) if cfg!(feature = "sqlite") => {
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
    let app = App::connect(&url)
        .await
        .expect("connect and migrate")
        .with_auth(Auth::unauthenticated());
    Some(TestApp { app, file })
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

async fn create_order(app: &App, order_no: &str, amount: i64) {
    // Test data only: the order number is generated above, not user input.
    let sql = format!("INSERT INTO orders (order_no, amount) VALUES ('{order_no}', {amount})");
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(&app.pool)
        .await
        .unwrap();
}

async fn paid_log_rows(app: &App, order_no: &str) -> i64 {
    let sql = format!("SELECT COUNT(*) FROM paid_log WHERE order_no = '{order_no}'");
    sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql))
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

fn callback(key: &str, order_no: &str, txn_id: &str, amount: i64) -> Request<Body> {
    let body =
        json!({"txn_id": txn_id, "order_no": order_no, "amount": amount, "date": "20240615"});
    Request::post("/callbacks/pay")
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .body(Body::from(serde_json::to_vec(&body).unwrap()))
        .unwrap()
}

fn new_key() -> String {
    format!("pay:20240615:{}", uuid::Uuid::new_v4())
}

async fn send(app: &App, request: Request<Body>) -> (StatusCode, Option<String>, Value) {
    let response = app.router().oneshot(request).await.unwrap();
    let status = response.status();
    let replayed = response
        .headers()
        .get("idempotent-replayed")
        .map(|value| value.to_str().unwrap().to_string());
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (
        status,
        replayed,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// The spec's `amount: {minimum: 1}` and `date: {pattern: "^[0-9]{8}$"}`
/// are checked before the key is claimed: a payment of -5 is a problem
/// naming the field and the keyword, and the same key then pays the
/// valid callback (it was never claimed, so it is no conflict).
#[tokio::test]
async fn values_the_spec_forbids_are_refused_before_the_claim() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    create_order(&app, &order_no, 1999).await;
    let key = new_key();

    let (status, _, problem) = send(&app, callback(&key, &order_no, "TXN-1", -5)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{problem}");
    assert_eq!(problem["type"], "urn:idemgen:problem:schema-mismatch");
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains("/amount breaks `minimum`"), "{detail}");

    let mut undated = callback(&key, &order_no, "TXN-1", 1999);
    let body =
        json!({"txn_id": "TXN-1", "order_no": order_no, "amount": 1999, "date": "2024-06-15"});
    *undated.body_mut() = Body::from(serde_json::to_vec(&body).unwrap());
    let (status, _, problem) = send(&app, undated).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{problem}");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("/date breaks `pattern`"),
        "{problem}"
    );
    assert_eq!(paid_log_rows(&app, &order_no).await, 0);

    let (status, replayed, paid) = send(&app, callback(&key, &order_no, "TXN-1", 1999)).await;
    assert_eq!(status, StatusCode::OK, "{paid}");
    assert_eq!(replayed, None);
    assert_eq!(paid_log_rows(&app, &order_no).await, 1);
}

#[tokio::test]
async fn a_retried_callback_pays_once_and_replays_the_answer() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    create_order(&app, &order_no, 1999).await;
    let key = new_key();

    let (status, replayed, first) = send(&app, callback(&key, &order_no, "TXN-1", 1999)).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(replayed, None);
    assert_eq!(first["status"], "paid");

    let (status, replayed, again) = send(&app, callback(&key, &order_no, "TXN-1", 1999)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(replayed.as_deref(), Some("true"));
    assert_eq!(again, first);
    assert_eq!(paid_log_rows(&app, &order_no).await, 1);

    let (status, _, order) = send(
        &app,
        Request::get(format!("/orders/{order_no}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(order["status"], "paid");
    assert_eq!(order["txn_id"], "TXN-1");
}

#[tokio::test]
async fn concurrent_copies_of_one_callback_pay_once() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    create_order(&app, &order_no, 500).await;
    let key = new_key();
    let copies: Vec<_> = (0..8)
        .map(|_| {
            let app = app.clone();
            let request = callback(&key, &order_no, "TXN-2", 500);
            tokio::spawn(async move { send(&app, request).await })
        })
        .collect();
    for copy in copies {
        let (status, _, body) = copy.await.unwrap();
        assert!(
            status == StatusCode::OK || status == StatusCode::TOO_MANY_REQUESTS,
            "{status} {body}"
        );
    }
    assert_eq!(paid_log_rows(&app, &order_no).await, 1);
}

#[tokio::test]
async fn the_same_key_with_another_body_is_409_and_changes_nothing() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    create_order(&app, &order_no, 700).await;
    let key = new_key();
    let (status, _, _) = send(&app, callback(&key, &order_no, "TXN-3", 700)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = send(&app, callback(&key, &order_no, "TXN-OTHER", 700)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(paid_log_rows(&app, &order_no).await, 1);
}

#[tokio::test]
async fn an_unknown_order_fails_and_a_retry_succeeds_once_it_exists() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    let key = new_key();
    let (status, _, _) = send(&app, callback(&key, &order_no, "TXN-4", 300)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(paid_log_rows(&app, &order_no).await, 0);

    create_order(&app, &order_no, 300).await;
    let (status, replayed, body) = send(&app, callback(&key, &order_no, "TXN-4", 300)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(replayed, None);
    assert_eq!(paid_log_rows(&app, &order_no).await, 1);
}

#[tokio::test]
async fn a_malformed_key_is_400_and_records_nothing() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    create_order(&app, &order_no, 100).await;
    let (status, _, _) = send(
        &app,
        callback("pay:2024:not-a-uuid", &order_no, "TXN-5", 100),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(paid_log_rows(&app, &order_no).await, 0);
}

/// JSON Schema's `integer` is a value, not a spelling: `1999.0` is the
/// amount 1999 (schema-driven clients and fuzzers send it), while `1999.5`
/// is no amount at all.
#[tokio::test]
async fn a_whole_number_written_with_a_fraction_is_the_same_amount() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    create_order(&app, &order_no, 1999).await;
    let request = |amount: f64| {
        let body =
            json!({"txn_id": "TXN-F", "order_no": order_no, "amount": amount, "date": "20240615"});
        Request::post("/callbacks/pay")
            .header("content-type", "application/json")
            .header("idempotency-key", new_key())
            .body(Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap()
    };
    let (status, _, answer) = send(&app, request(1999.5)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    let (status, _, answer) = send(&app, request(1999.0)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["amount"], 1999);
    assert_eq!(paid_log_rows(&app, &order_no).await, 1);
}

/// `99.99999999999999` and `100.0000000000000001`, whose nearest floats
/// are 100, once paid an order due 100. An amount is read by its exact
/// decimal value: these are refused naming the field, as is a number past
/// any float, and pay nothing; `1e2` is the amount 100.
#[tokio::test]
async fn an_amount_that_is_not_whole_is_refused_whatever_its_nearest_float() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    create_order(&app, &order_no, 100).await;
    let request = |amount: &str| {
        let body = format!(
            r#"{{"txn_id": "TXN-E", "order_no": "{order_no}", "amount": {amount}, "date": "20240615"}}"#
        );
        Request::post("/callbacks/pay")
            .header("content-type", "application/json")
            .header("idempotency-key", new_key())
            .body(Body::from(body))
            .unwrap()
    };
    for amount in ["99.99999999999999", "100.0000000000000001", "1e400"] {
        let (status, _, answer) = send(&app, request(amount)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{amount}: {answer}");
        let detail = answer["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("`amount`"), "{amount}: {answer}");
        assert_eq!(paid_log_rows(&app, &order_no).await, 0, "{amount}");
    }
    let (status, _, answer) = send(&app, request("1e2")).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["amount"], 100);
    assert_eq!(paid_log_rows(&app, &order_no).await, 1);
}

/// `GET /orders/%00` is answered, never 500: PostgreSQL refuses NUL in
/// text (400, naming the refusal), the other databases find no such order
/// (404).
#[tokio::test]
async fn an_order_number_holding_nul_is_not_a_500() {
    let Some(app) = app().await else { return };
    let (status, _, answer) = send(
        &app,
        Request::get("/orders/%00").body(Body::empty()).unwrap(),
    )
    .await;
    if cfg!(feature = "postgres") {
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert_eq!(
            answer["type"], "urn:idemgen:problem:value-refused",
            "{answer}"
        );
    } else {
        assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    }
}

/// A body that does not match `PayCallback` is refused before the key is
/// claimed: no record, no payment, and the key is still unused, so the
/// provider's corrected callback with the same key pays.
#[tokio::test]
async fn a_body_that_does_not_match_its_schema_is_refused_before_the_claim() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    create_order(&app, &order_no, 800).await;
    let key = new_key();
    let send_body = |body: Value| {
        Request::post("/callbacks/pay")
            .header("content-type", "application/json")
            .header("idempotency-key", &key)
            .body(Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap()
    };
    let wrong_type =
        json!({"txn_id": "TXN-T", "order_no": order_no, "amount": "800", "date": "20240615"});
    let missing_field = json!({"txn_id": "TXN-T", "order_no": order_no, "date": "20240615"});
    for invalid in [wrong_type, missing_field] {
        let (status, replayed, problem) = send(&app, send_body(invalid)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{problem}");
        assert_eq!(replayed, None);
        assert_eq!(problem["title"], "request does not match its schema");
    }
    let records = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM {} WHERE idem_key = '{key}'",
        payment_callback::RECORD_TABLE
    )))
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(records, 0, "a refused request leaves no record");
    assert_eq!(paid_log_rows(&app, &order_no).await, 0);

    let valid = json!({"txn_id": "TXN-T", "order_no": order_no, "amount": 800, "date": "20240615"});
    let (status, replayed, answer) = send(&app, send_body(valid)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        replayed, None,
        "the key was not consumed by the refused requests"
    );
    assert_eq!(paid_log_rows(&app, &order_no).await, 1);
}

/// A path parameter reaches the business function typed.
#[tokio::test]
async fn an_unknown_order_is_404_as_a_problem() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    let (status, _, problem) = send(
        &app,
        Request::get(format!("/orders/{order_no}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(problem["status"], 404);
    assert_eq!(problem["detail"], format!("no order `{order_no}` exists"));
}
