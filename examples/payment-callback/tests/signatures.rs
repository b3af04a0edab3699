//! Signed callbacks over HTTP through the router: with a shared secret, a
//! callback pays only when `X-Signature` is the HMAC-SHA256 of its body;
//! an unsigned or badly signed one is 401, records nothing, pays nothing
//! and leaves its key unused. Runs against `TEST_DATABASE_URL` (default: a
//! fresh SQLite file when built for SQLite; skipped otherwise).

use axum::body::Body;
use axum::http::{Request, StatusCode};
use payment_callback::App;
use payment_callback::auth::{Auth, signature};
use serde_json::{Value, json};
use tower::ServiceExt;

const SECRET: &[u8] = b"test-shared-secret";

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

/// The app with callbacks signed by [`SECRET`].
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
        .with_auth(Auth::with_secret(SECRET));
    Some(TestApp { app, file })
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

async fn create_order(app: &App, order_no: &str) {
    // Test data only: the order number is generated above, not user input.
    let sql = format!("INSERT INTO orders (order_no, amount) VALUES ('{order_no}', 1999)");
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(&app.pool)
        .await
        .unwrap();
}

async fn count(app: &App, sql: String) -> i64 {
    sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql))
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// Payments logged for the order, and whether it is paid.
async fn payments(app: &App, order_no: &str) -> (i64, i64) {
    (
        count(
            app,
            format!("SELECT COUNT(*) FROM paid_log WHERE order_no = '{order_no}'"),
        )
        .await,
        count(
            app,
            format!(
                "SELECT COUNT(*) FROM orders WHERE order_no = '{order_no}' AND status = 'PAID'"
            ),
        )
        .await,
    )
}

/// Records of the key (its text is generated here, not user input).
async fn records(app: &App, key: &str) -> i64 {
    count(
        app,
        format!("SELECT COUNT(*) FROM idempotent_record WHERE idem_key = '{key}'"),
    )
    .await
}

fn body(order_no: &str) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"txn_id": "TXN-1", "order_no": order_no, "amount": 1999, "date": "20240615"}),
    )
    .unwrap()
}

fn callback(key: &str, body: Vec<u8>, signature: Option<&str>) -> Request<Body> {
    let builder = Request::post("/callbacks/pay")
        .header("content-type", "application/json")
        .header("idempotency-key", key);
    let builder = match signature {
        Some(signature) => builder.header("x-signature", signature),
        None => builder,
    };
    builder.body(Body::from(body)).unwrap()
}

fn new_key() -> String {
    format!("pay:20240615:{}", uuid::Uuid::new_v4())
}

async fn send(app: &App, request: Request<Body>) -> (StatusCode, Value) {
    let response = app.router().oneshot(request).await.unwrap();
    let status = response.status();
    if status == StatusCode::UNAUTHORIZED {
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json"
        );
    }
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn a_signed_callback_pays_once() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    create_order(&app, &order_no).await;
    let key = new_key();
    let signed = signature(SECRET, &body(&order_no));
    for _ in 0..3 {
        let (status, answer) = send(&app, callback(&key, body(&order_no), Some(&signed))).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["status"], "paid");
    }
    assert_eq!(payments(&app, &order_no).await, (1, 1));
    assert_eq!(records(&app, &key).await, 1);
}

#[tokio::test]
async fn unsigned_and_badly_signed_callbacks_pay_nothing_and_leave_no_record() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    create_order(&app, &order_no).await;
    let key = new_key();
    let other_body = signature(SECRET, &body("ORD-OTHER"));
    let other_secret = signature(b"not-the-secret", &body(&order_no));
    let upper = signature(SECRET, &body(&order_no)).to_uppercase();
    for (why, signature) in [
        ("unsigned", None),
        ("signed for another body", Some(other_body.as_str())),
        ("signed with another secret", Some(other_secret.as_str())),
        ("not hex", Some("zz")),
        ("empty", Some("")),
        ("truncated", Some(&upper[..32])),
    ] {
        let (status, answer) = send(&app, callback(&key, body(&order_no), signature)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{why}: {answer}");
        assert_eq!(answer["status"], 401, "{why}: {answer}");
    }
    assert_eq!(payments(&app, &order_no).await, (0, 0));
    assert_eq!(records(&app, &key).await, 0);

    // The key was not consumed: the genuine callback pays with it. Hex
    // digits are read in either case.
    let (status, answer) = send(&app, callback(&key, body(&order_no), Some(&upper))).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(payments(&app, &order_no).await, (1, 1));
}

#[tokio::test]
async fn a_signed_callback_with_a_bad_key_is_told_about_the_key() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    let signed = signature(SECRET, &body(&order_no));
    let (status, answer) = send(&app, callback("not-a-key", body(&order_no), Some(&signed))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    // Without a signature, the key is not even looked at.
    let (status, _) = send(&app, callback("not-a-key", body(&order_no), None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
