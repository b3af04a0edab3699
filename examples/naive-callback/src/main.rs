//! The payment callback as the article's team first wrote it, kept as a
//! foil for `examples/payment-callback` (same HTTP contract, same tables):
//!
//! ```text
//! if (dedupDao.existsByBizNo(cb.getBizNo())) return;   // 1. check
//! orderDao.markPaid(cb);                                // 2. business write
//! dedupDao.insert(cb.getBizNo(), cb);                   // 3. record
//! ```
//!
//! `POST /callbacks/pay` does exactly that, so two instances that both see
//! "absent" both pay: the duplicate-payment bug the generated code fixes.
//! `POST /plain/pay` is the generated example's business step alone (one
//! transaction: a guarded UPDATE of `orders` and one `paid_log` row) with no
//! idempotency at all, the baseline of `benches/load.rs`.
//!
//! Settings: `DATABASE_URL`, `LISTEN_ADDR` (default `127.0.0.1:8081`),
//! `DOWNSTREAM_DELAY_MS` (sleeps inside the business step). The tables are
//! created if missing; on a database the generated service also uses, start
//! that one first so its migrations create them.

use std::borrow::Cow;
use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sqlx::AssertSqlSafe;

#[cfg(feature = "mysql")]
type Db = sqlx::MySql;
#[cfg(feature = "postgres")]
type Db = sqlx::Postgres;
#[cfg(all(feature = "sqlite", not(any(feature = "mysql", feature = "postgres"))))]
type Db = sqlx::Sqlite;

type Pool = sqlx::Pool<Db>;

/// A recorded answer: status, content type, body.
type StoredAnswer = (Option<i16>, Option<String>, Option<Vec<u8>>);

/// The generated example's `window` (18 s), so its records look alike.
const WINDOW_MS: i64 = 18_000;
const MAX_KEY_LEN: usize = 128;

#[derive(Debug, Deserialize)]
struct PayCallback {
    txn_id: String,
    order_no: String,
    amount: i64,
    /// `yyyyMMdd`.
    date: String,
}

#[derive(Debug, Serialize)]
struct PaymentResult<'a> {
    order_no: &'a str,
    txn_id: &'a str,
    amount: i64,
    status: &'static str,
    paid_at: String,
}

static DOWNSTREAM_DELAY: LazyLock<Duration> = LazyLock::new(|| {
    let millis = std::env::var("DOWNSTREAM_DELAY_MS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    Duration::from_millis(millis)
});

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match serve().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    let database_url = std::env::var("DATABASE_URL")?;
    let listen_addr = std::env::var("LISTEN_ADDR").unwrap_or_else(|_| "127.0.0.1:8081".into());
    let pool = connect(&database_url).await?;
    sqlx::raw_sql(SCHEMA).execute(&pool).await?;
    let app = Router::new()
        .route("/callbacks/pay", post(check_then_write))
        .route("/plain/pay", post(plain_write))
        .route("/healthz", get(|| async { "ok\n" }))
        .with_state(pool);
    let listener = tokio::net::TcpListener::bind(&listen_addr).await?;
    eprintln!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

/// The same pool settings as the generated service (sqlx defaults), so the
/// benchmark compares the flows, not the pools.
async fn connect(url: &str) -> Result<Pool, sqlx::Error> {
    #[cfg(all(feature = "sqlite", not(any(feature = "mysql", feature = "postgres"))))]
    {
        use std::str::FromStr;
        let options = sqlx::sqlite::SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(5));
        sqlx::pool::PoolOptions::new().connect_with(options).await
    }
    #[cfg(any(feature = "mysql", feature = "postgres"))]
    {
        sqlx::pool::PoolOptions::new().connect(url).await
    }
}

/// The article's handler: check, business write, record; no atomic claim,
/// and each statement commits on its own like the article's DAO calls.
async fn check_then_write(State(pool): State<Pool>, headers: HeaderMap, body: Bytes) -> Response {
    let key = match headers
        .get("idempotency-key")
        .and_then(|value| value.to_str().ok())
    {
        Some(key) if key.starts_with("pay:") && key.len() <= MAX_KEY_LEN => key.to_string(),
        _ => {
            return problem(
                StatusCode::BAD_REQUEST,
                "missing or malformed idempotency key",
            );
        }
    };
    let Ok(callback) = serde_json::from_slice::<PayCallback>(&body) else {
        return problem(StatusCode::BAD_REQUEST, "invalid callback");
    };
    match run_check_then_write(&pool, &key, &callback, &body).await {
        Ok(response) => response,
        Err(error) => {
            eprintln!("database error: {error}");
            problem(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
        }
    }
}

async fn run_check_then_write(
    pool: &Pool,
    key: &str,
    callback: &PayCallback,
    body: &[u8],
) -> Result<Response, sqlx::Error> {
    // 1. Check. Two requests that both get here before either reaches step
    // 3 both see "absent": that gap is the bug.
    let stored: Option<StoredAnswer> = sqlx::query_as(sql(
        "SELECT response_status, response_content_type, response_body \
         FROM idempotent_record WHERE scope = '' AND idem_key = ?",
    ))
    .bind(key)
    .fetch_optional(pool)
    .await?;
    if let Some(stored) = stored {
        return Ok(replay(stored));
    }

    // 2. Business write: the article's markPaid, no status guard.
    if !DOWNSTREAM_DELAY.is_zero() {
        tokio::time::sleep(*DOWNSTREAM_DELAY).await;
    }
    let paid_at = now_ms();
    let marked = sqlx::query(sql(
        "UPDATE orders SET status = 'PAID', txn_id = ?, paid_at = ? WHERE order_no = ? AND amount = ?",
    ))
    .bind(&callback.txn_id)
    .bind(paid_at)
    .bind(&callback.order_no)
    .bind(callback.amount)
    .execute(pool)
    .await?
    .rows_affected();
    if marked == 0 {
        return Ok(problem(StatusCode::NOT_FOUND, "unknown order"));
    }
    insert_paid_log(pool, callback, paid_at).await?;
    let answer = payment_result(callback, paid_at);

    // 3. Record. A concurrent twin already recorded the key: the article's
    // code catches the duplicate-key error and moves on.
    let now = now_ms();
    let recorded = sqlx::query(sql(
        "INSERT INTO idempotent_record (scope, idem_key, fingerprint, status, claim_token, \
         lease_expires_at, expires_at, response_status, response_content_type, response_body, \
         created_at, updated_at) VALUES ('', ?, ?, 'completed', ?, ?, ?, 200, 'application/json', ?, ?, ?)",
    ))
    .bind(key)
    .bind(hex(&Sha256::digest(body)))
    .bind(uuid::Uuid::new_v4().to_string())
    .bind(now)
    .bind(now + WINDOW_MS)
    .bind(&answer)
    .bind(now)
    .bind(now)
    .execute(pool)
    .await;
    match recorded {
        Err(sqlx::Error::Database(error)) if error.is_unique_violation() => {}
        other => {
            other?;
        }
    }
    Ok(json(answer))
}

/// The generated example's business step with no idempotency around it:
/// one transaction, the order marked paid only if unpaid, one log row.
async fn plain_write(State(pool): State<Pool>, body: Bytes) -> Response {
    let Ok(callback) = serde_json::from_slice::<PayCallback>(&body) else {
        return problem(StatusCode::BAD_REQUEST, "invalid callback");
    };
    if callback.amount < 1
        || callback.date.len() != 8
        || !callback.date.bytes().all(|byte| byte.is_ascii_digit())
    {
        return problem(StatusCode::BAD_REQUEST, "invalid callback");
    }
    match run_plain_write(&pool, &callback).await {
        Ok(response) => response,
        Err(error) => {
            eprintln!("database error: {error}");
            problem(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
        }
    }
}

async fn run_plain_write(pool: &Pool, callback: &PayCallback) -> Result<Response, sqlx::Error> {
    let mut tx = pool.begin().await?;
    if !DOWNSTREAM_DELAY.is_zero() {
        tokio::time::sleep(*DOWNSTREAM_DELAY).await;
    }
    let paid_at = now_ms();
    let paid = sqlx::query(sql(
        "UPDATE orders SET status = 'PAID', txn_id = ?, paid_at = ? \
         WHERE order_no = ? AND amount = ? AND status = 'UNPAID'",
    ))
    .bind(&callback.txn_id)
    .bind(paid_at)
    .bind(&callback.order_no)
    .bind(callback.amount)
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1;
    if !paid {
        tx.rollback().await?;
        return Ok(problem(
            StatusCode::CONFLICT,
            "unknown or already paid order",
        ));
    }
    insert_paid_log(&mut *tx, callback, paid_at).await?;
    tx.commit().await?;
    Ok(json(payment_result(callback, paid_at)))
}

async fn insert_paid_log<'e>(
    executor: impl sqlx::Executor<'e, Database = Db>,
    callback: &PayCallback,
    paid_at: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(sql(
        "INSERT INTO paid_log (order_no, txn_id, amount, paid_at) VALUES (?, ?, ?, ?)",
    ))
    .bind(&callback.order_no)
    .bind(&callback.txn_id)
    .bind(callback.amount)
    .bind(paid_at)
    .execute(executor)
    .await?;
    Ok(())
}

/// `?` placeholders as this build's database writes them. Every statement
/// is a constant of this file; only the placeholder syntax changes.
fn sql(text: &'static str) -> AssertSqlSafe<Cow<'static, str>> {
    if cfg!(feature = "postgres") {
        let mut numbered = String::with_capacity(text.len() + 8);
        for (index, part) in text.split('?').enumerate() {
            if index > 0 {
                numbered.push_str(&format!("${index}"));
            }
            numbered.push_str(part);
        }
        AssertSqlSafe(Cow::Owned(numbered))
    } else {
        AssertSqlSafe(Cow::Borrowed(text))
    }
}

fn payment_result(callback: &PayCallback, paid_at: i64) -> Vec<u8> {
    serde_json::to_vec(&PaymentResult {
        order_no: &callback.order_no,
        txn_id: &callback.txn_id,
        amount: callback.amount,
        status: "paid",
        paid_at: rfc3339(paid_at),
    })
    .expect("serialising to memory cannot fail")
}

fn json(body: Vec<u8>) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

fn replay((status, content_type, body): StoredAnswer) -> Response {
    let status = status
        .and_then(|status| u16::try_from(status).ok())
        .and_then(|status| StatusCode::from_u16(status).ok())
        .unwrap_or(StatusCode::OK);
    let mut response = (status, body.unwrap_or_default()).into_response();
    if let Some(value) = content_type.and_then(|value| HeaderValue::from_str(&value).ok()) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
        .headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    response
}

fn problem(status: StatusCode, title: &str) -> Response {
    let body =
        serde_json::json!({"type": "about:blank", "title": title, "status": status.as_u16()});
    (
        status,
        [(header::CONTENT_TYPE, "application/problem+json")],
        body.to_string(),
    )
        .into_response()
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Unix milliseconds as RFC 3339 UTC, as the generated example answers.
fn rfc3339(unix_ms: i64) -> String {
    let days = unix_ms.div_euclid(86_400_000);
    let ms_of_day = unix_ms.rem_euclid(86_400_000);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1000 % 60,
        ms_of_day % 1000
    )
}

/// The generated example's tables (`migrations/<dialect>/`), created only
/// when missing.
#[cfg(feature = "mysql")]
const SCHEMA: &str = include_str!("schema/mysql.sql");
#[cfg(feature = "postgres")]
const SCHEMA: &str = include_str!("schema/postgres.sql");
#[cfg(all(feature = "sqlite", not(any(feature = "mysql", feature = "postgres"))))]
const SCHEMA: &str = include_str!("schema/sqlite.sql");
