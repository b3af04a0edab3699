//! `POST /callbacks/pay` behind `axum-idempotent`, configured as its README
//! shows: `use_idempotency_key_header(Some("Idempotency-Key"), true)`,
//! `expire_after(300)`, a `MokaStore` session store, and the layer order
//! `CookieManagerLayer` → `SessionLayer` → `IdempotentLayer`.
//!
//! The business step records one payment per run (so a double payment is
//! a second row for one key) after `DOWNSTREAM_DELAY_MS` (default 300) of
//! "calling the bank". `POST /login` opens the session the middleware needs
//! (it caches nothing for a request without one); `GET /stats` counts
//! payments and the keys they were made under.
//!
//! `LISTEN_ADDR` (default `127.0.0.1:8080`) is where it serves.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use axum_idempotent::{IdempotentLayer, IdempotentOptions};
use ruts::store::Ttl;
use ruts::store::moka::MokaStore;
use ruts::{CookieOptions, Session, SessionLayer};
use serde::Deserialize;
use serde_json::{Value, json};
use tower_cookies::CookieManagerLayer;

#[derive(Deserialize)]
struct PayCallback {
    txn_id: String,
    order_no: String,
    amount: i64,
    date: String,
}

/// One row per payment made: the idempotency key it was made under.
#[derive(Default)]
struct Ledger {
    payments: Vec<String>,
}

#[derive(Clone)]
struct App {
    ledger: Arc<Mutex<Ledger>>,
    delay: Duration,
}

async fn pay(
    State(app): State<App>,
    headers: HeaderMap,
    Json(callback): Json<PayCallback>,
) -> (StatusCode, Json<Value>) {
    tokio::time::sleep(app.delay).await;
    let key = headers
        .get("idempotency-key")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let payment_id = {
        let mut ledger = app.ledger.lock().unwrap();
        ledger.payments.push(key);
        ledger.payments.len()
    };
    let paid_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    (
        StatusCode::OK,
        Json(json!({
            "payment_id": payment_id,
            "order_no": callback.order_no,
            "txn_id": callback.txn_id,
            "amount": callback.amount,
            "date": callback.date,
            "status": "paid",
            "paid_at": paid_at,
        })),
    )
}

/// Opens a session: the middleware caches answers only within one.
async fn login(session: Session<MokaStore>) -> StatusCode {
    let ttl = Ttl::new(3600).unwrap();
    match session.set("user", &"probe", ttl, None).await {
        Ok(()) => StatusCode::NO_CONTENT,
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

async fn stats(State(app): State<App>) -> Json<Value> {
    let ledger = app.ledger.lock().unwrap();
    let mut keys = ledger.payments.clone();
    keys.sort();
    keys.dedup();
    Json(json!({"payments": ledger.payments.len(), "keys": keys.len()}))
}

#[tokio::main]
async fn main() {
    let delay = std::env::var("DOWNSTREAM_DELAY_MS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(300);
    let app = App {
        ledger: Arc::default(),
        delay: Duration::from_millis(delay),
    };
    let store = Arc::new(MokaStore::builder().build());
    let idempotent_options = IdempotentOptions::default()
        .use_idempotency_key_header(Some("Idempotency-Key"), true)
        .expire_after(60 * 5);
    // The layer sits on the payment route only: with a required key, it
    // refuses every request without one, `/login` and `/stats` included.
    let payments = Router::new()
        .route("/callbacks/pay", post(pay))
        .layer(IdempotentLayer::<MokaStore>::new(idempotent_options));
    let router = Router::new()
        .merge(payments)
        .route("/login", post(login))
        .route("/stats", get(stats))
        .with_state(app)
        .layer(SessionLayer::new(store).with_cookie_options(CookieOptions::build().name("session")))
        .layer(CookieManagerLayer::new());
    let addr = std::env::var("LISTEN_ADDR").unwrap_or_else(|_| "127.0.0.1:8080".into());
    let listener = tokio::net::TcpListener::bind(&addr).await.unwrap();
    axum::serve(listener, router).await.unwrap();
}
