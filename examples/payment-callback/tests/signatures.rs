//! Signed callbacks over HTTP through the router: with a shared secret, a
//! callback pays only when `X-Signature` is `t=<unix seconds>,v1=<hex
//! HMAC-SHA256 of "<t>.<body>">` with a fresh timestamp; an unsigned,
//! stale or badly signed one is 401, records nothing, pays nothing and
//! leaves its key unused; reading an order needs a signature too. Without
//! a secret the service does not start. Runs against `TEST_DATABASE_URL` (default: a
//! fresh SQLite file when built for SQLite; skipped otherwise).

use axum::body::Body;
use axum::http::{Request, StatusCode};
use payment_callback::App;
use payment_callback::auth::{Auth, sign, unix_now};
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
    let signed = sign(SECRET, unix_now(), &body(&order_no));
    for _ in 0..3 {
        let (status, answer) = send(&app, callback(&key, body(&order_no), Some(&signed))).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["status"], "paid");
    }
    assert_eq!(payments(&app, &order_no).await, (1, 1));
    assert_eq!(records(&app, &key).await, 1);
}

/// Order numbers are guessable: reading an order is signed like a
/// callback (over `<t>.` and the empty body).
#[tokio::test]
async fn only_a_signed_request_reads_an_order() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    create_order(&app, &order_no).await;
    let read = |signature: Option<String>| {
        let builder = Request::get(format!("/orders/{order_no}"));
        let builder = match signature {
            Some(signature) => builder.header("x-signature", signature),
            None => builder,
        };
        builder.body(Body::empty()).unwrap()
    };
    let (status, problem) = send(&app, read(None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{problem}");
    assert_eq!(problem["type"], "urn:idemgen:problem:unauthenticated");
    let (status, _) = send(&app, read(Some(sign(b"another-secret", unix_now(), b"")))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, order) = send(&app, read(Some(sign(SECRET, unix_now(), b"")))).await;
    assert_eq!(status, StatusCode::OK, "{order}");
    assert_eq!(order["order_no"], order_no.as_str());
}

#[tokio::test]
async fn unsigned_and_badly_signed_callbacks_pay_nothing_and_leave_no_record() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    create_order(&app, &order_no).await;
    let key = new_key();
    let now = unix_now();
    let other_body = sign(SECRET, now, &body("ORD-OTHER"));
    let other_secret = sign(b"not-the-secret", now, &body(&order_no));
    let stale = sign(SECRET, now - 301, &body(&order_no));
    let future = sign(SECRET, now + 301, &body(&order_no));
    let signed = sign(SECRET, now, &body(&order_no));
    let hex = &signed[signed.find("v1=").unwrap() + 3..];
    let upper = format!("t={now},v1={}", hex.to_uppercase());
    let body_only = hex_hmac_of_body_only(&body(&order_no));
    let no_timestamp = format!("v1={hex}");
    let word_timestamp = format!("t=now,v1={hex}");
    let truncated = &upper[..upper.len() - 32];
    for (why, signature) in [
        ("unsigned", None),
        ("signed for another body", Some(other_body.as_str())),
        ("signed with another secret", Some(other_secret.as_str())),
        ("signed 301 s ago", Some(stale.as_str())),
        ("signed 301 s ahead", Some(future.as_str())),
        ("the old body-only form", Some(body_only.as_str())),
        ("no timestamp", Some(no_timestamp.as_str())),
        (
            "a timestamp that is not a number",
            Some(word_timestamp.as_str()),
        ),
        ("not hex", Some("t=1,v1=zz")),
        ("empty", Some("")),
        ("truncated", Some(truncated)),
    ] {
        let (status, answer) = send(&app, callback(&key, body(&order_no), signature)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{why}: {answer}");
        assert_eq!(answer["status"], 401, "{why}: {answer}");
    }
    assert_eq!(payments(&app, &order_no).await, (0, 0));
    assert_eq!(records(&app, &key).await, 0);

    // The key was not consumed: the genuine callback pays with it. Hex
    // digits are read in either case.
    assert_eq!(upper.len(), signed.len());
    let (status, answer) = send(&app, callback(&key, body(&order_no), Some(&upper))).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(payments(&app, &order_no).await, (1, 1));
}

#[tokio::test]
async fn a_signed_callback_with_a_bad_key_is_told_about_the_key() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    let signed = sign(SECRET, unix_now(), &body(&order_no));
    let (status, answer) = send(&app, callback("not-a-key", body(&order_no), Some(&signed))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    // Without a signature, the key is not even looked at.
    let (status, _) = send(&app, callback("not-a-key", body(&order_no), None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// The signature the service accepted before timestamps were signed: the
/// hex HMAC of the body alone, which a captured callback kept valid forever.
fn hex_hmac_of_body_only(body: &[u8]) -> String {
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(SECRET).unwrap();
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// A captured signed callback, replayed with a new key once its timestamp
/// is past the tolerance, pays nothing.
#[tokio::test]
async fn a_captured_callback_is_refused_once_its_timestamp_is_stale() {
    let Some(app) = app().await else { return };
    let order_no = unique("ORD");
    create_order(&app, &order_no).await;
    let captured = sign(SECRET, unix_now() - 3_600, &body(&order_no));
    let (status, answer) = send(&app, callback(&new_key(), body(&order_no), Some(&captured))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{answer}");
    assert!(
        answer["detail"].as_str().unwrap().contains("s old"),
        "{answer}"
    );
    assert_eq!(payments(&app, &order_no).await, (0, 0));
}

/// The service's own start: without `PAYMENT_CALLBACK_SECRET` it exits 2
/// naming the variable, and `PAYMENT_CALLBACK_INSECURE=1` runs it open
/// with a warning.
#[test]
fn the_service_does_not_start_without_its_secret() {
    if !cfg!(feature = "sqlite") {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"SKIPPED: the start-up check runs on the SQLite build\n",
        );
        return;
    }
    let dir = tempfile_dir();
    let database = format!("sqlite://{}/start.db?mode=rwc", dir.display());
    let service = || {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_payment-callback"));
        command
            .env_remove("PAYMENT_CALLBACK_SECRET")
            .env_remove("PAYMENT_CALLBACK_INSECURE")
            .env("DATABASE_URL", &database)
            .env("LISTEN_ADDR", "127.0.0.1:0")
            .env("RUST_LOG", "warn");
        command
    };
    let refused = service().output().unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("PAYMENT_CALLBACK_SECRET is not set"),
        "{stderr}"
    );
    assert!(stderr.contains("PAYMENT_CALLBACK_INSECURE=1"), "{stderr}");

    let mut open = service()
        .env("PAYMENT_CALLBACK_INSECURE", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // It starts and warns; its logs go to stdout or stderr.
    let warned = wait_for_output(&mut open, "NOT authenticated");
    let _ = open.kill();
    let _ = open.wait();
    assert!(
        warned,
        "no start-up warning in PAYMENT_CALLBACK_INSECURE mode"
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("payment-callback-start-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether `needle` shows in the child's stdout or stderr within 30 s.
fn wait_for_output(child: &mut std::process::Child, needle: &str) -> bool {
    use std::io::Read;
    let (sender, receiver) = std::sync::mpsc::channel();
    for mut stream in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let sender = sender.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(read) = stream.read(&mut buffer) {
                if read == 0 || sender.send(buffer[..read].to_vec()).is_err() {
                    break;
                }
            }
        });
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match receiver.recv_timeout(left) {
            Ok(bytes) => {
                seen.extend(bytes);
                if String::from_utf8_lossy(&seen).contains(needle) {
                    return true;
                }
            }
            Err(_) => return false,
        }
    }
    false
}
