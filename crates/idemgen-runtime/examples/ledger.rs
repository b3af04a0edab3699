//! A ledger service on the runtime, written by hand: the service the
//! randomized fault suite (`tests/it/nemesis.rs` at the workspace root) runs
//! several instances of. `POST /transfers` with `Idempotency-Key: tx:{id}`
//! and `{"nonce": "…", "amount": n}` writes one ledger row in the business
//! transaction, calls a downstream sink with the request's stable
//! downstream key, and answers `201` with a receipt that is also stored in
//! the ledger row, so a checker can compare every answer byte for byte
//! with what was committed.
//!
//! Configured by the environment (the suite sets all of it):
//! `DATABASE_URL`, `LISTEN_ADDR`, `SINK_ADDR` (`host:port` of the sink),
//! `INSTANCE` (a name written into receipts), `WINDOW_MS`, `LEASE_MS`,
//! `PURGE_INTERVAL_SECS`, `ISOLATION` (`read-committed`,
//! `repeatable-read`, `serializable`; MySQL and PostgreSQL),
//! `LOCK_TIMEOUT_MS`, `DATABASE_POOL_SIZE` and `CLAIM` (`committed`, the
//! default, or `in-transaction`: the contract's `store.claim`). The tables
//! are created by whoever starts it. The downstream key is [`idemgen_runtime::Call::downstream_key`],
//! the same for every attempt of one key.
//!
//! With `CLAIM=in-transaction` the downstream call is still made, inside
//! the business transaction: the docs advise `committed` for such a step
//! (nothing visible holds the key while the call runs), and the fault
//! suite runs it anyway to prove what the downstream key still guarantees.

use std::error::Error;
use std::fmt;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use idemgen_runtime::{
    ClaimMode, Contract, Dialect, Idempotency, Operation, Pool, Reply, Request, Tx, service,
    within_lease,
};
use serde::Deserialize;

#[derive(Clone)]
struct App {
    engine: Idempotency,
    operation: &'static Operation,
    sink: String,
    instance: String,
    /// `DOWNSTREAM=claim-token`: the mistake of giving downstream the
    /// attempt's claim token, which changes on every attempt, instead of
    /// the downstream key; only for the fault suite to prove that its
    /// checker catches the double charge that follows.
    claim_token_downstream: bool,
}

#[derive(Deserialize)]
struct Transfer {
    nonce: String,
    amount: i64,
}

/// What stops a booking without an answer of its own: the engine rolls
/// back and releases the claim (a database error is answered "retry").
#[derive(Debug)]
enum BookError {
    Database(sqlx::Error),
    Downstream(String),
}

impl fmt::Display for BookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BookError::Database(error) => write!(f, "ledger not written: {error}"),
            BookError::Downstream(why) => write!(f, "downstream call failed: {why}"),
        }
    }
}

/// The engine finds the `sqlx::Error` along `source()` and answers a lost
/// race or an outage with "retry", not 500.
impl Error for BookError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            BookError::Database(error) => Some(error),
            BookError::Downstream(_) => None,
        }
    }
}

impl From<sqlx::Error> for BookError {
    fn from(error: sqlx::Error) -> Self {
        BookError::Database(error)
    }
}

async fn transfer(State(app): State<App>, request: axum::extract::Request) -> Response {
    let mut call = match app.engine.begin(app.operation, request).await {
        Ok(call) => call,
        Err(answer) => return answer,
    };
    let deadline = call.deadline();
    let downstream = match app.claim_token_downstream {
        true => call.claim_token(),
        false => call.downstream_key(),
    }
    .unwrap_or_default()
    .to_string();
    let (tx, request) = call.parts();
    // A stalled downstream call must not outlive the lease: past it a
    // retry may take the key over, and only one of them may commit.
    match within_lease(deadline, book(&app, tx, request, &downstream)).await {
        Some(outcome) => call.finish(outcome).await,
        None => call.lease_expired().await,
    }
}

/// The business step: the ledger row, then the downstream call, in the
/// transaction the engine commits with the stored answer.
async fn book(
    app: &App,
    tx: &mut Tx,
    request: &Request,
    downstream: &str,
) -> Result<Reply, BookError> {
    let transfer: Transfer = match request.json() {
        Ok(transfer) => transfer,
        Err(bad_request) => return Ok(bad_request),
    };
    let key = request
        .headers
        .get("idempotency-key")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let receipt = uuid::Uuid::new_v4().to_string();
    let body = serde_json::json!({
        "receipt": receipt,
        "key": key,
        "nonce": transfer.nonce,
        "amount": transfer.amount,
        "instance": app.instance,
    })
    .to_string();
    // The row's time comes from the database's clock, like the record's,
    // so the checker can compare it with the window whatever this
    // instance's clock says.
    let insert = match Dialect::BUILT {
        Dialect::Postgres => {
            "INSERT INTO ledger (idem_key, nonce, amount, receipt, instance, at_ms, body) \
             VALUES ($1, $2, $3, $4, $5, CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT), $6)"
        }
        Dialect::Mysql => {
            "INSERT INTO ledger (idem_key, nonce, amount, receipt, instance, at_ms, body) \
             VALUES (?, ?, ?, ?, ?, (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000), ?)"
        }
        Dialect::Sqlite => {
            "INSERT INTO ledger (idem_key, nonce, amount, receipt, instance, at_ms, body) \
             VALUES (?, ?, ?, ?, ?, CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER), ?)"
        }
    };
    sqlx::query(insert)
        .bind(&key)
        .bind(&transfer.nonce)
        .bind(transfer.amount)
        .bind(&receipt)
        .bind(&app.instance)
        .bind(&body)
        .execute(&mut **tx)
        .await?;
    let payload = serde_json::json!({
        "key": key,
        "nonce": transfer.nonce,
        "instance": app.instance,
    })
    .to_string();
    match charge(&app.sink, downstream, &payload).await {
        Ok(200) => {}
        Ok(status) => return Err(BookError::Downstream(format!("sink answered {status}"))),
        Err(error) => return Err(BookError::Downstream(error.to_string())),
    }
    Ok(Reply::from_parts(
        StatusCode::CREATED,
        Some("application/json"),
        body.into_bytes(),
    ))
}

/// `POST /charge` on the sink with the downstream key; its status. A
/// plain HTTP/1.1 exchange on tokio's socket (readiness + `try_*`, which
/// need no extra tokio feature nor an HTTP client crate for one call).
async fn charge(sink: &str, downstream: &str, payload: &str) -> std::io::Result<u16> {
    let stream = tokio::net::TcpStream::connect(sink).await?;
    let request = format!(
        "POST /charge HTTP/1.1\r\nHost: {sink}\r\nIdempotency-Key: {downstream}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
        payload.len()
    );
    let mut written = 0;
    while written < request.len() {
        stream.writable().await?;
        match stream.try_write(&request.as_bytes()[written..]) {
            Ok(n) => written += n,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(error) => return Err(error),
        }
    }
    let mut response = Vec::new();
    let mut buffer = [0u8; 1024];
    loop {
        stream.readable().await?;
        match stream.try_read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => response.extend_from_slice(&buffer[..n]),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(error) => return Err(error),
        }
    }
    let text = String::from_utf8_lossy(&response);
    text.split_whitespace()
        .nth(1)
        .and_then(|status| status.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP answer: {text:?}")))
}

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn env_number(name: &str, default: i64) -> i64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// The pool: the runtime's own for SQLite; for MySQL and PostgreSQL the
/// same options plus the isolation level and lock timeout of every
/// connection (the runtime has no setting for either).
async fn open(url: &str) -> Result<Pool, Box<dyn Error>> {
    let size = u32::try_from(env_number("DATABASE_POOL_SIZE", 5)).unwrap_or(5);
    if Dialect::BUILT == Dialect::Sqlite {
        static NO_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate::Migrator::DEFAULT;
        return Ok(idemgen_runtime::connect_with_pool_size(url, &NO_MIGRATIONS, Some(size)).await?);
    }
    let level = match env("ISOLATION", "read-committed").as_str() {
        "repeatable-read" => "REPEATABLE READ",
        "serializable" => "SERIALIZABLE",
        _ => "READ COMMITTED",
    };
    let lock_timeout_ms = env_number("LOCK_TIMEOUT_MS", 1_000);
    let setup: Vec<String> = match Dialect::BUILT {
        Dialect::Mysql => vec![
            format!("SET SESSION TRANSACTION ISOLATION LEVEL {level}"),
            // Whole seconds only.
            format!(
                "SET SESSION innodb_lock_wait_timeout = {}",
                (lock_timeout_ms / 1000).max(1)
            ),
        ],
        _ => vec![
            format!("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL {level}"),
            format!("SET lock_timeout = {lock_timeout_ms}"),
        ],
    };
    let options = sqlx::pool::PoolOptions::<idemgen_runtime::Db>::new()
        .max_connections(size.max(1))
        // As the runtime's `connect`: no ping per request, one after a
        // second idle.
        .test_before_acquire(false)
        .before_acquire(|connection, meta| {
            Box::pin(async move {
                if meta.idle_for >= Duration::from_secs(1) {
                    sqlx::Connection::ping(connection).await?;
                }
                Ok(true)
            })
        })
        .after_connect(move |connection, _| {
            let setup = setup.clone();
            Box::pin(async move {
                for statement in setup {
                    sqlx::query(sqlx::AssertSqlSafe(statement))
                        .execute(&mut *connection)
                        .await?;
                }
                if Dialect::BUILT == Dialect::Mysql {
                    // As the runtime's `connect`: a Galera node reads what
                    // another committed; other servers refuse the variable.
                    let _ = sqlx::query("SET SESSION wsrep_sync_wait = 1")
                        .execute(&mut *connection)
                        .await;
                }
                Ok(())
            })
        });
    Ok(options.connect(url).await?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    service::init_logging();
    let url = env("DATABASE_URL", "sqlite://ledger.db");
    let window_ms = env_number("WINDOW_MS", 4_000);
    let lease_ms = env_number("LEASE_MS", 1_500);
    let claim = match env("CLAIM", "committed").as_str() {
        "committed" => ClaimMode::Committed,
        "in-transaction" => ClaimMode::InTransaction,
        other => {
            return Err(format!(
                "CLAIM={other}: the claim mode is `committed` or `in-transaction`"
            )
            .into());
        }
    };
    // The contract comes from the environment, so it is made once and
    // leaked: the engine wants a `&'static Operation`.
    let operation: &'static Operation = Box::leak(Box::new(Operation::idempotent(
        "transfer",
        "transfer",
        Contract {
            claim,
            ..Contract::header(
                "tx:{id}",
                "^tx:[0-9a-z-]{1,64}$",
                window_ms.max(lease_ms),
                lease_ms,
            )
        },
    )));
    let operations: &'static [&'static Operation] = Box::leak(Box::new([operation]));
    let engine = Idempotency::new(open(&url).await?, "idempotent_record").await?;
    let purge_every = u64::try_from(env_number("PURGE_INTERVAL_SECS", 60)).unwrap_or(60);
    service::spawn_purge(engine.clone(), Duration::from_secs(purge_every));
    let app = App {
        engine: engine.clone(),
        operation,
        sink: env("SINK_ADDR", "127.0.0.1:9"),
        instance: env("INSTANCE", "ledger"),
        claim_token_downstream: env("DOWNSTREAM", "downstream-key") == "claim-token",
    };
    let router = Router::new()
        .route("/transfers", post(transfer))
        .with_state(app)
        .merge(service::health_and_metrics(engine, operations));
    service::serve(&env("LISTEN_ADDR", "127.0.0.1:8080"), router).await?;
    Ok(())
}
