//! A hand-written axum service with one exactly-once endpoint, no
//! generator involved: `POST /orders/{order}/pay` adds a payment to an
//! order. The payment row and the order's new total are written in the
//! transaction that also completes the idempotency record, so they commit
//! together with the stored answer or not at all; a duplicate never pays
//! twice, however it races the first attempt.
//!
//! ```sh
//! cargo run -p idemgen-runtime --example hand_written      # SQLite, ./hand-written.db
//! curl -si -X POST localhost:8080/orders/A1/pay \
//!   -H 'Idempotency-Key: pay:6f1c9a52-4c1e-4f7e-9a53-0d5a6b7c8d9e' -d '{"amount": 250}'
//! ```
//!
//! The SQL here is SQLite's (on MySQL the same `?` placeholders work, on
//! PostgreSQL write `$1`, `$2`); the record table is what
//! `idemgen ddl --db sqlite` prints.

use std::fmt;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use idemgen_runtime::{Contract, Idempotency, Operation, Reply, Request, Tx, service};
use serde::{Deserialize, Serialize};

/// The endpoint's contract: a required `Idempotency-Key: pay:{uuid}`
/// header, remembered for a day; an attempt holds its key for 5 s before a
/// retry may take it over.
pub static PAY: Operation = Operation::idempotent(
    "payOrder",
    "pay_order",
    Contract::header(
        "pay:{uuid}",
        "^pay:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
        86_400_000,
        5_000,
    ),
);

/// The record table (as `idemgen ddl --db sqlite` prints it, its
/// `ALTER TABLE` folded into the `CREATE TABLE`) and the business tables.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS idempotent_record (
    id INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    idem_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed')),
    claim_token TEXT NOT NULL,
    lease_expires_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    response_status INTEGER,
    response_content_type TEXT,
    response_body BLOB,
    response_headers BLOB,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CONSTRAINT uq_idempotent_record_scope_key UNIQUE (scope, idem_key)
);
CREATE INDEX IF NOT EXISTS ix_idempotent_record_expires_at ON idempotent_record (expires_at);
CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, paid INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS payments (
    id INTEGER PRIMARY KEY,
    order_id TEXT NOT NULL REFERENCES orders (id),
    amount INTEGER NOT NULL CHECK (amount > 0),
    paid_at INTEGER NOT NULL
);
";

/// The request body.
#[derive(Deserialize)]
struct Payment {
    amount: i64,
}

/// The answer, stored with the key and replayed to every retry.
#[derive(Serialize)]
struct Receipt {
    order: String,
    amount: i64,
    order_total: i64,
    paid_at: String,
}

/// What can go wrong inside the business step. Any error rolls the
/// business write back and a retry with the same key runs again: a value
/// the database refuses is answered 400 and recorded as the attempt's
/// failure, any other error 500 with the claim released.
#[derive(Debug)]
pub enum PayError {
    Database(sqlx::Error),
}

impl fmt::Display for PayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PayError::Database(error) => write!(f, "payment not written: {error}"),
        }
    }
}

/// The engine looks for a `sqlx::Error` along `source()`: a lost race or
/// an outage inside the business step is then answered "retry" and never
/// recorded as the key's failure.
impl std::error::Error for PayError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PayError::Database(error) => Some(error),
        }
    }
}

impl From<sqlx::Error> for PayError {
    fn from(error: sqlx::Error) -> Self {
        PayError::Database(error)
    }
}

/// The operations whose counters `GET /metrics` shows.
static OPERATIONS: &[&Operation] = &[&PAY];

/// The service: the endpoint, `GET /healthz` and `GET /metrics`.
pub fn router(engine: Idempotency) -> Router {
    Router::new()
        .route("/orders/{order}/pay", post(pay))
        .with_state(engine.clone())
        .merge(service::health_and_metrics(engine, OPERATIONS))
}

/// Claim the key (or answer a duplicate), run the business step in the
/// transaction, store its answer in that transaction and commit.
async fn pay(State(engine): State<Idempotency>, request: axum::extract::Request) -> Response {
    let mut call = match engine.begin(&PAY, request).await {
        Ok(call) => call,
        Err(answer) => return answer,
    };
    let (tx, request) = call.parts();
    let outcome = pay_order(tx, request).await;
    call.finish(outcome).await
}

/// The business step. Only a 2xx answer commits; any other is stored as a
/// failure after the write is rolled back.
async fn pay_order(tx: &mut Tx, request: &Request) -> Result<Reply, PayError> {
    let payment: Payment = match request.json() {
        Ok(payment) => payment,
        Err(bad_request) => return Ok(bad_request),
    };
    let order = request.path_param("order").unwrap_or_default().to_string();
    let updated = sqlx::query("UPDATE orders SET paid = paid + ? WHERE id = ?")
        .bind(payment.amount)
        .bind(&order)
        .execute(&mut **tx)
        .await?;
    if updated.rows_affected() == 0 {
        return Ok(Reply::problem(
            StatusCode::NOT_FOUND,
            "unknown order",
            &format!("no order `{order}`"),
        ));
    }
    let paid_at = idemgen_runtime::now_ms();
    // A non-positive amount fails the CHECK here, after the UPDATE above:
    // the error rolls both back, and the database's refusal of the value
    // is answered 400 (`value-refused`) and recorded as the key's failure.
    sqlx::query("INSERT INTO payments (order_id, amount, paid_at) VALUES (?, ?, ?)")
        .bind(&order)
        .bind(payment.amount)
        .bind(paid_at)
        .execute(&mut **tx)
        .await?;
    let order_total: i64 = sqlx::query_scalar("SELECT paid FROM orders WHERE id = ?")
        .bind(&order)
        .fetch_one(&mut **tx)
        .await?;
    Ok(Reply::json(
        StatusCode::OK,
        &Receipt {
            order,
            amount: payment.amount,
            order_total,
            paid_at: idemgen_runtime::rfc3339(paid_at),
        },
    ))
}

/// Opens the database, creates the tables and checks the record table.
pub async fn engine(database_url: &str) -> Result<Idempotency, Box<dyn std::error::Error>> {
    static NO_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate::Migrator::DEFAULT;
    let pool = idemgen_runtime::connect(database_url, &NO_MIGRATIONS).await?;
    sqlx::raw_sql(SCHEMA).execute(&pool).await?;
    Ok(Idempotency::new(pool, "idempotent_record").await?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    service::init_logging();
    let url =
        std::env::var("DATABASE_URL").unwrap_or_else(|_| "sqlite://hand-written.db".to_string());
    let engine = engine(&url).await?;
    sqlx::query("INSERT OR IGNORE INTO orders (id) VALUES ('A1')")
        .execute(engine.pool())
        .await?;
    service::spawn_purge(engine.clone(), std::time::Duration::from_secs(60));
    service::serve("127.0.0.1:8080", router(engine)).await?;
    Ok(())
}
