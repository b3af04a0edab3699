//! A COMMIT whose answer never arrives: the connection breaks while the
//! business transaction commits. Whether it committed is unknown to the
//! service, so the client is told exactly that (503, `Retry-After`, "retry
//! with the same key, never a new one"), never "not processed": a client
//! that believed that and retried with a new key would pay twice. Both
//! sides of the unknown are provoked through a TCP proxy in front of the
//! real server: the COMMIT lost on its way (nothing committed: the retry
//! runs) and the COMMIT executed with its answer lost (committed: the
//! retry gets the stored answer and the business step does not run again).
//! A COMMIT that gets no answer at all (a frozen server, a primary cut off
//! from its synchronous standby) is given up after the commit timeout and
//! answered the same way, and its connection does not keep a place in the
//! pool.

#![cfg(any(feature = "mysql", feature = "postgres"))]

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use crate::support::{NO_MIGRATIONS, Table, body_text, key, pay};
use axum::http::StatusCode;
use idemgen_runtime::{Contract, Idempotency, Operation, REPLAYED_HEADER, Rejection, Reply};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

static PAY: Operation = Operation::idempotent(
    "onPay",
    "on_pay",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 5_000),
);

/// What the proxy does with the next client packet that carries `COMMIT`.
const PASS: u8 = 0;
const DROP_BEFORE: u8 = 1;
const DROP_AFTER: u8 = 2;
/// Send the COMMIT on, relay nothing back, keep the connection open.
const HOLD_ANSWER: u8 = 3;
/// Keep the COMMIT, and the connection open.
const HOLD_COMMIT: u8 = 4;

/// A TCP proxy to `upstream`; `mode` arms it for one COMMIT.
async fn proxy(upstream: String, mode: Arc<AtomicU8>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            let (upstream, mode) = (upstream.clone(), mode.clone());
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    return;
                };
                relay(client, server, mode).await;
            });
        }
    });
    port
}

async fn relay(client: TcpStream, server: TcpStream, mode: Arc<AtomicU8>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let answers = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
    });
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = match client_read.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let packet = &buffer[..read];
        let commit = packet.windows(6).any(|window| window == b"COMMIT");
        match commit.then(|| mode.swap(PASS, Ordering::SeqCst)) {
            Some(DROP_BEFORE) => break,
            Some(DROP_AFTER) => {
                answers.abort();
                let _ = server_write.write_all(packet).await;
                // Let the server execute it; its answer is never relayed.
                tokio::time::sleep(Duration::from_millis(300)).await;
                break;
            }
            Some(HOLD_ANSWER) => {
                answers.abort();
                let _ = server_write.write_all(packet).await;
                until_closed(&mut client_read, &mut buffer).await;
                break;
            }
            Some(HOLD_COMMIT) => {
                until_closed(&mut client_read, &mut buffer).await;
                break;
            }
            _ => {
                if server_write.write_all(packet).await.is_err() {
                    break;
                }
            }
        }
    }
    answers.abort();
}

/// Reads and drops what the client sends until it closes the connection,
/// as a server that stopped answering would.
async fn until_closed(client: &mut tokio::net::tcp::OwnedReadHalf, buffer: &mut [u8]) {
    while let Ok(read) = client.read(buffer).await {
        if read == 0 {
            return;
        }
    }
}

/// The server's `host:port` and the URL with the proxy's port instead.
fn through_proxy(url: &str, port: u16) -> (String, String) {
    let after_at = url
        .rfind('@')
        .map_or(url.find("//").unwrap() + 2, |at| at + 1);
    let rest = &url[after_at..];
    let end = rest.find('/').unwrap_or(rest.len());
    let upstream = rest[..end].to_string();
    let proxied = format!("{}127.0.0.1:{port}{}", &url[..after_at], &rest[end..]);
    (upstream, proxied)
}

async fn payments(table: &Table) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM {}_payments",
        table.name
    )))
    .fetch_one(&table.pool)
    .await
    .unwrap()
}

/// A payments table and an engine whose connections go through the proxy,
/// which `mode` arms for one COMMIT.
struct Payments {
    table: Table,
    mode: Arc<AtomicU8>,
    engine: Idempotency,
    key: String,
}

impl Payments {
    /// `pool_size` connections at most (sqlx's default when `None`).
    async fn new(pool_size: Option<u32>) -> Option<Payments> {
        let table = Table::new().await?;
        table
            .sql("CREATE TABLE {t}_payments (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL)")
            .await;
        let mode = Arc::new(AtomicU8::new(PASS));
        let (upstream, _) = through_proxy(&table.url, 0);
        let port = proxy(upstream, mode.clone()).await;
        let (_, proxied) = through_proxy(&table.url, port);
        let pool = idemgen_runtime::connect_with_pool_size(&proxied, &NO_MIGRATIONS, pool_size)
            .await
            .expect("connect through the proxy");
        let engine = Idempotency::new(pool, &table.name).await.unwrap();
        Some(Payments {
            table,
            mode,
            engine,
            key: key(),
        })
    }

    /// One attempt of the payment, writing payment `id`.
    async fn attempt(&self, id: i64) -> axum::response::Response {
        let mut call = match self.engine.begin(&PAY, pay(&self.key)).await {
            Ok(call) => call,
            Err(answer) => return answer,
        };
        let (tx, _) = call.parts();
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO {}_payments (id, amount) VALUES ({id}, 100)",
            self.table.name
        )))
        .execute(&mut **tx)
        .await
        .unwrap();
        call.finish(Ok::<_, sqlx::Error>(Reply::json(
            StatusCode::CREATED,
            &json!({"paid": 100}),
        )))
        .await
    }

    /// The payments made; drops the table.
    async fn made(self) -> i64 {
        let paid = payments(&self.table).await;
        self.table.sql("DROP TABLE {t}_payments").await;
        paid
    }
}

/// One payment through the proxy armed with `fault` for its COMMIT; then
/// the retry with the same key. Returns the first answer, the retry's
/// answer and the payments made.
async fn pay_through(
    fault: u8,
) -> Option<(axum::response::Response, axum::response::Response, i64)> {
    let payments = Payments::new(None).await?;
    payments.mode.store(fault, Ordering::SeqCst);
    let first = payments.attempt(1).await;
    assert_eq!(
        payments.mode.load(Ordering::SeqCst),
        PASS,
        "the COMMIT went through the proxy"
    );
    let retry = payments.attempt(2).await;
    Some((first, retry, payments.made().await))
}

async fn the_outcome_is_unknown(first: axum::response::Response) {
    assert_eq!(first.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(first.headers().contains_key("retry-after"));
    let text = body_text(first).await;
    assert!(text.contains("outcome unknown"), "{text}");
    assert!(text.contains("same key"), "{text}");
    assert!(!text.contains("not processed"), "{text}");
    // Counted under its own reason (the other tests here have none).
    assert!(PAY.metrics.rejections(Rejection::OutcomeUnknown) >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_lost_on_its_way_is_unknown_and_the_retry_runs_once() {
    let Some((first, retry, paid)) = pay_through(DROP_BEFORE).await else {
        return;
    };
    the_outcome_is_unknown(first).await;
    assert_eq!(retry.status(), StatusCode::CREATED);
    assert!(retry.headers().get(REPLAYED_HEADER).is_none());
    assert_eq!(paid, 1, "one payment: the lost commit wrote nothing");
    // The first attempt released its claim: the retry reclaimed it, which
    // is no takeover (no test of this module lets a lease run out).
    assert!(PAY.counters.reclaims_after_release.get() >= 1);
    assert_eq!(PAY.counters.takeovers.get(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_answer_is_lost_is_unknown_and_the_retry_is_a_replay() {
    let Some((first, retry, paid)) = pay_through(DROP_AFTER).await else {
        return;
    };
    the_outcome_is_unknown(first).await;
    let status = retry.status();
    let replayed = retry.headers().get(REPLAYED_HEADER).cloned();
    assert_eq!(status, StatusCode::CREATED, "{}", body_text(retry).await);
    assert_eq!(replayed.unwrap(), "true");
    assert_eq!(paid, 1, "one payment: the retry replayed the committed one");
}

/// A COMMIT the server refuses with an error of its own (a deferred
/// constraint) certainly rolled back: that is a 500 saying nothing was
/// committed, never "outcome unknown", and the claim is released.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_commit_refused_by_a_deferred_constraint_is_a_definite_failure() {
    let Some(table) = Table::new().await else {
        return;
    };
    table
        .sql(
            "CREATE TABLE {t}_parent (id INTEGER PRIMARY KEY); \
             CREATE TABLE {t}_child (id INTEGER PRIMARY KEY, parent INTEGER \
             REFERENCES {t}_parent (id) DEFERRABLE INITIALLY DEFERRED)",
        )
        .await;
    let engine = table.engine().await;
    let key = key();
    let Ok(mut call) = engine.begin(&PAY, pay(&key)).await else {
        panic!("a fresh key is claimed");
    };
    let (tx, _) = call.parts();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {}_child (id, parent) VALUES (1, 42)",
        table.name
    )))
    .execute(&mut **tx)
    .await
    .expect("deferred: checked at COMMIT");
    let answer = call
        .finish(Ok::<_, sqlx::Error>(Reply::json(
            StatusCode::CREATED,
            &json!({"paid": 100}),
        )))
        .await;
    assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let text = body_text(answer).await;
    assert!(text.contains("nothing was committed"), "{text}");
    // Released: the retry claims the key at once.
    assert!(engine.begin(&PAY, pay(&key)).await.is_ok());
    table
        .sql("DROP TABLE {t}_child; DROP TABLE {t}_parent")
        .await;
}

/// A payment whose COMMIT gets no answer (`fault`: held before or after
/// the server ran it), on a pool of one connection with a 300 ms commit
/// timeout. Returns how long the first answer took, the first answer, the
/// answer to a retry made at once, and the payments made after a retry
/// past the lease.
async fn pay_with_an_unanswered_commit(
    fault: u8,
) -> Option<(
    Duration,
    axum::response::Response,
    axum::response::Response,
    i64,
)> {
    let mut payments = Payments::new(Some(1)).await?;
    payments.engine = payments
        .engine
        .clone()
        .with_commit_timeout(Duration::from_millis(300));
    payments.mode.store(fault, Ordering::SeqCst);
    let started = std::time::Instant::now();
    let first = payments.attempt(1).await;
    let took = started.elapsed();
    // The only connection of the pool was given up on: the retry gets one.
    let retry = tokio::time::timeout(Duration::from_secs(10), payments.attempt(2))
        .await
        .expect("the pool gave the retry a connection");
    // Past the lease (5 s), a claim whose COMMIT never happened is taken
    // over; a completed one is replayed again.
    tokio::time::sleep(Duration::from_millis(5_500)).await;
    let last = payments.attempt(3).await;
    assert!(
        last.status() == StatusCode::CREATED,
        "after the lease: {}",
        body_text(last).await
    );
    Some((took, first, retry, payments.made().await))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_run_but_never_answered_is_given_up_and_the_retry_is_a_replay() {
    let Some((took, first, retry, paid)) = pay_with_an_unanswered_commit(HOLD_ANSWER).await else {
        return;
    };
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    the_outcome_is_unknown(first).await;
    assert_eq!(retry.status(), StatusCode::CREATED);
    assert_eq!(retry.headers().get(REPLAYED_HEADER).unwrap(), "true");
    assert_eq!(
        paid, 1,
        "one payment: the retries replayed the committed one"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_never_delivered_is_given_up_and_runs_once_after_the_lease() {
    let Some((took, first, retry, paid)) = pay_with_an_unanswered_commit(HOLD_COMMIT).await else {
        return;
    };
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    the_outcome_is_unknown(first).await;
    // The claim stands (the COMMIT might still have happened): in progress.
    let text = body_text(retry).await;
    assert!(
        text.contains("urn:idemgen:problem:request-in-progress"),
        "{text}"
    );
    assert_eq!(paid, 1, "one payment: the held COMMIT never ran");
}
