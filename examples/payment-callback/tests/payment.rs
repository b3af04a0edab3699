//! The article's scenario end to end, over HTTP through the router: a
//! payment callback retried and duplicated marks the order paid once and
//! logs exactly one payment. Runs against `TEST_DATABASE_URL` (default: a
//! fresh SQLite file when built for SQLite; skipped otherwise).

use axum::body::Body;
use axum::http::{Request, StatusCode};
use payment_callback::App;
use serde_json::{Value, json};
use tower::ServiceExt;

async fn app() -> Option<App> {
    let url = match std::env::var("TEST_DATABASE_URL") {
        Ok(url) => url,
        Err(_) if cfg!(feature = "sqlite") => {
            let file = std::env::temp_dir()
                .join(format!("payment-callback-test-{}.db", uuid::Uuid::new_v4()));
            format!("sqlite://{}", file.display())
        }
        Err(_) => {
            eprintln!("skipped: set TEST_DATABASE_URL to run these tests on this database");
            return None;
        }
    };
    Some(App::connect(&url).await.expect("connect and migrate"))
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
