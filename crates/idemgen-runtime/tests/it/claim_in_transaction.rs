//! The one-commit claim (`store.claim: in-transaction`) on the real server
//! of this build: the claim is written in the business transaction, so a
//! duplicate waits on the key's unique index and then replays the first
//! answer, claims the key if the first rolled back, or is told "in
//! progress"; a rollback or a crash takes the claim away with the work.
//! Every business run writes one row to `{t}_effects` in its transaction,
//! so a count of rows is the count of committed business effects.
//!
//! No answer here may be a 5xx: lock waits that run out and deadlocks
//! between concurrent claims (InnoDB's gap and next-key locks on the
//! unique index) are "in progress" or a replay.

use std::time::Duration;

use crate::support::{self, Table, key, pay, post_json};
use axum::http::StatusCode;
use axum::response::Response;
use idemgen_runtime::{Call, ClaimMode, Contract, Dialect, Idempotency, Operation, Reply};
use serde_json::json;

const ONE_COMMIT: Contract = Contract {
    claim: ClaimMode::InTransaction,
    ..Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 5_000)
};

static PAY: Operation = Operation::idempotent("onPay", "on_pay", ONE_COMMIT);

/// `failed: reject`: a recorded failure is final for its key.
static PAY_ONCE: Operation = Operation::idempotent(
    "onPayOnce",
    "on_pay_once",
    Contract {
        retry_failed: false,
        ..ONE_COMMIT
    },
);

/// A window of one second (and a lease as long), to reuse a key after it.
static PAY_BRIEFLY: Operation = Operation::idempotent(
    "onPayBriefly",
    "on_pay_briefly",
    Contract {
        window_ms: 1_000,
        lease_ms: 1_000,
        ..ONE_COMMIT
    },
);

/// A record table, a table of business effects and an engine; `None`
/// when this build's server is not configured.
async fn arena() -> Option<(Table, Idempotency)> {
    let table = Table::new().await?;
    table
        .sql(
            "CREATE TABLE {t}_effects (idem_key VARCHAR(100) NOT NULL, body VARCHAR(100) NOT NULL)",
        )
        .await;
    let engine = table.engine().await;
    Some((table, engine))
}

async fn drop_effects(table: &Table) {
    table.sql("DROP TABLE {t}_effects").await;
}

/// The business step: one effect row for `key`, written in the call's
/// transaction.
async fn effect(table: &Table, call: &mut Call, key: &str) {
    let (tx, request) = call.parts();
    let body = String::from_utf8_lossy(&request.body).into_owned();
    let insert = format!(
        "INSERT INTO {}_effects (idem_key, body) VALUES ('{key}', '{}')",
        table.name,
        body.replace('\'', "''")
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(insert))
        .execute(&mut **tx)
        .await
        .expect("the business write");
}

/// The first attempt of `key`: claimed, its effect written, not finished.
async fn first_attempt(
    operation: &'static Operation,
    table: &Table,
    engine: &Idempotency,
    key: &str,
) -> Call {
    let mut call = support::claim(operation, engine, pay(key)).await;
    effect(table, &mut call, key).await;
    call
}

/// A duplicate of `key` from another instance, on a pool of one
/// connection: begun once the first attempt holds the key, and returned
/// once it waits on the key in the database, with that pool and its
/// connection's id (`None` on SQLite).
async fn waiting_duplicate(
    operation: &'static Operation,
    table: &Table,
    key: &str,
) -> (
    idemgen_runtime::Pool,
    Option<i64>,
    tokio::task::JoinHandle<Result<Call, Response>>,
) {
    let (pool, other) = table.engine_on_one_connection().await;
    let connection = support::connection_to_watch(&pool).await;
    let duplicate = tokio::spawn({
        let key = key.to_string();
        async move { other.begin(operation, pay(&key)).await }
    });
    support::until_waiting_on_a_lock(&table.pool, connection).await;
    (pool, connection, duplicate)
}

async fn effects(table: &Table, key: &str) -> i64 {
    let sql = format!(
        "SELECT COUNT(*) FROM {}_effects WHERE idem_key = '{key}'",
        table.name
    );
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(&table.pool)
        .await
        .unwrap()
}

fn paid() -> Result<Reply, sqlx::Error> {
    Ok(Reply::json(StatusCode::CREATED, &json!({"paid": true})))
}

fn declined() -> Result<Reply, sqlx::Error> {
    Ok(Reply::json(
        StatusCode::PAYMENT_REQUIRED,
        &json!({"declined": true}),
    ))
}

fn is_replay(answer: &Response) -> bool {
    answer.status() == StatusCode::CREATED
        && answer
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|value| value == "true")
}

fn is_in_progress(answer: &Response) -> bool {
    answer.status() == StatusCode::TOO_MANY_REQUESTS && answer.headers().contains_key("retry-after")
}

/// One request of `key` from claim to answer, holding its transaction
/// open for `hold` in the business step; `(answer, whether it ran the
/// business step)`.
async fn request(
    operation: &'static Operation,
    table: &Table,
    engine: &Idempotency,
    key: &str,
    hold: Duration,
) -> (Response, bool) {
    match engine.begin(operation, pay(key)).await {
        Ok(mut call) => {
            effect(table, &mut call, key).await;
            tokio::time::sleep(hold).await;
            (call.finish(paid()).await, true)
        }
        Err(answer) => (answer, false),
    }
}

#[tokio::test]
async fn concurrent_first_writes_of_one_key_run_it_once() {
    let Some((table, engine)) = arena().await else {
        return;
    };
    // Two instances: duplicates on one wait for its first attempt in
    // memory, the other's wait on the key in the database.
    let other = table.engine().await;
    let table = std::sync::Arc::new(table);
    let key = key();
    let requests: Vec<_> = (0..6)
        .map(|i| {
            let engine = if i % 2 == 0 { &engine } else { &other }.clone();
            let (table, key) = (table.clone(), key.clone());
            tokio::spawn(async move {
                request(&PAY, &table, &engine, &key, Duration::from_millis(200)).await
            })
        })
        .collect();
    let mut ran = 0;
    for request in requests {
        let (answer, did_run) = request.await.unwrap();
        if did_run {
            ran += 1;
            assert_eq!(answer.status(), StatusCode::CREATED);
            assert!(!is_replay(&answer), "the first answer is not a replay");
        } else {
            assert!(
                is_replay(&answer) || is_in_progress(&answer),
                "a duplicate is answered in progress or replayed, got {}",
                answer.status()
            );
        }
    }
    assert_eq!(ran, 1, "exactly one request ran the business step");
    assert_eq!(effects(&table, &key).await, 1);
    drop_effects(&table).await;
}

/// A duplicate waits on the first attempt's uncommitted claim: it gets the
/// first's answer once that commits within its wait. Its connection (the
/// only one of its pool) is outside any transaction after it: a claim that
/// found the key taken left none open, which would otherwise go back to
/// the pool holding the locks the claim took. (The engine reads the record
/// on that connection after the failed claim, so the look comes after
/// statements of its own.)
#[tokio::test]
async fn a_duplicate_waiting_on_the_claim_replays_the_first_answer() {
    let Some((table, engine)) = arena().await else {
        return;
    };
    let key = key();
    let first = first_attempt(&PAY, &table, &engine, &key).await;
    let (pool, connection, duplicate) = waiting_duplicate(&PAY, &table, &key).await;
    assert_eq!(first.finish(paid()).await.status(), StatusCode::CREATED);
    let answer = duplicate
        .await
        .unwrap()
        .err()
        .expect("the duplicate must not claim the key");
    assert!(is_replay(&answer), "got {}", answer.status());
    if let Some(connection) = connection {
        support::assert_outside_transaction(&pool, connection).await;
    }
    assert_eq!(effects(&table, &key).await, 1);
    pool.close().await;
    drop_effects(&table).await;
}

/// A duplicate whose wait runs out while the first attempt still runs is
/// answered "in progress", leaves no transaction open on its connection,
/// and is replayed once the first commits.
#[tokio::test]
async fn a_duplicate_past_its_wait_is_in_progress() {
    if Dialect::BUILT == Dialect::Sqlite {
        // `BEGIN IMMEDIATE` waits for the writer lock as long as the busy
        // timeout (5 s) or the duplicate's lease allow, which end after the
        // first attempt's own lease: no first attempt outlives that wait.
        support::skipped("SQLite: a duplicate waits for the writer lock until its lease ends");
        return;
    }
    let Some((table, engine)) = arena().await else {
        return;
    };
    let key = key();
    // From another instance: it waits on the key in the database.
    let (pool, other) = table.engine_on_one_connection().await;
    let connection = support::connection_id(&pool).await;
    let first = first_attempt(&PAY, &table, &engine, &key).await;
    let answer = other
        .begin(&PAY, pay(&key))
        .await
        .err()
        .expect("the duplicate must not claim the key");
    assert!(is_in_progress(&answer), "got {}", answer.status());
    assert_eq!(first.finish(paid()).await.status(), StatusCode::CREATED);
    // The claim whose wait ran out left no transaction open on its
    // connection (the pool's only one), the last to use it.
    support::assert_outside_transaction(&pool, connection).await;
    pool.close().await;
    let again = engine.begin(&PAY, pay(&key)).await.err().unwrap();
    assert!(is_replay(&again), "got {}", again.status());
    assert_eq!(effects(&table, &key).await, 1);
    drop_effects(&table).await;
}

/// A crash (the call dropped before it answers) rolls the claim back with
/// the work: the retry claims the key at once, with no lease to wait out.
#[tokio::test]
async fn a_crash_takes_the_claim_away_with_the_work() {
    let Some((table, engine)) = arena().await else {
        return;
    };
    let key = key();
    let first = first_attempt(&PAY, &table, &engine, &key).await;
    drop(first);
    let (answer, ran) = request(&PAY, &table, &engine, &key, Duration::ZERO).await;
    assert!(ran, "the retry claims the key, got {}", answer.status());
    assert_eq!(answer.status(), StatusCode::CREATED);
    assert_eq!(effects(&table, &key).await, 1);
    drop_effects(&table).await;
}

/// `failed: retry`: a business failure rolls the claim back with its work,
/// and a duplicate waiting on the key then runs it.
#[tokio::test]
async fn a_failure_rolled_back_lets_the_waiting_duplicate_run() {
    let Some((table, engine)) = arena().await else {
        return;
    };
    let key = key();
    let first = first_attempt(&PAY, &table, &engine, &key).await;
    let (pool, _, duplicate) = waiting_duplicate(&PAY, &table, &key).await;
    let failure = first.finish(declined()).await;
    assert_eq!(failure.status(), StatusCode::PAYMENT_REQUIRED);
    let mut retry = match duplicate.await.unwrap() {
        Ok(call) => call,
        Err(answer) => panic!(
            "the waiting duplicate claims the key, got {}",
            answer.status()
        ),
    };
    effect(&table, &mut retry, &key).await;
    assert_eq!(retry.finish(paid()).await.status(), StatusCode::CREATED);
    assert_eq!(
        effects(&table, &key).await,
        1,
        "the failure's write rolled back"
    );
    let replay = engine.begin(&PAY, pay(&key)).await.err().unwrap();
    assert!(is_replay(&replay), "got {}", replay.status());
    pool.close().await;
    drop_effects(&table).await;
}

/// `failed: reject`: the failure is recorded in the claim's transaction
/// (its work rolled back to the savepoint after the claim), so the
/// duplicate that waited on it, and any later retry, get the conflict.
#[tokio::test]
async fn a_rejected_failure_is_recorded_with_the_claim() {
    let Some((table, engine)) = arena().await else {
        return;
    };
    let key = key();
    let first = first_attempt(&PAY_ONCE, &table, &engine, &key).await;
    let (pool, _, duplicate) = waiting_duplicate(&PAY_ONCE, &table, &key).await;
    let failure = first.finish(declined()).await;
    assert_eq!(failure.status(), StatusCode::PAYMENT_REQUIRED);
    let answer = duplicate
        .await
        .unwrap()
        .err()
        .expect("the duplicate must not claim a rejected key");
    assert_eq!(answer.status(), StatusCode::CONFLICT);
    let later = engine.begin(&PAY_ONCE, pay(&key)).await.err().unwrap();
    assert_eq!(later.status(), StatusCode::CONFLICT);
    assert_eq!(
        effects(&table, &key).await,
        0,
        "the failure's write rolled back"
    );
    let status: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT status FROM {} WHERE idem_key = '{key}'",
        table.name
    )))
    .fetch_one(&table.pool)
    .await
    .unwrap();
    assert_eq!(status, "failed");
    pool.close().await;
    drop_effects(&table).await;
}

/// Past its window a key is new: another request claims it, in the
/// business transaction, and runs.
#[tokio::test]
async fn a_key_is_reused_after_its_window() {
    let Some((table, engine)) = arena().await else {
        return;
    };
    let key = key();
    let (first, ran) = request(&PAY_BRIEFLY, &table, &engine, &key, Duration::ZERO).await;
    assert!(ran && first.status() == StatusCode::CREATED);
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let other = post_json("/pay", Some(&key), &json!({"order": "B-2"}));
    let mut reuse = match engine.begin(&PAY_BRIEFLY, other).await {
        Ok(call) => call,
        Err(answer) => panic!("an expired key is claimable, got {}", answer.status()),
    };
    effect(&table, &mut reuse, &key).await;
    assert_eq!(reuse.finish(paid()).await.status(), StatusCode::CREATED);
    assert_eq!(effects(&table, &key).await, 2);
    drop_effects(&table).await;
}

/// Concurrent first writes of different keys, three copies of each, as
/// InnoDB's gap locks on the unique index make them contend: every answer
/// is a first answer, a replay or "in progress", and retrying until each
/// key is answered leaves exactly one effect per key.
#[tokio::test]
async fn concurrent_first_writes_of_different_keys_are_answered() {
    let Some((table, engine)) = arena().await else {
        return;
    };
    let table = std::sync::Arc::new(table);
    let keys: Vec<String> = (0..8).map(|_| key()).collect();
    let requests: Vec<_> = keys
        .iter()
        .flat_map(|key| std::iter::repeat_n(key.clone(), 3))
        .map(|key| {
            let (table, engine) = (table.clone(), engine.clone());
            tokio::spawn(async move {
                for _ in 0..20 {
                    let (answer, _) =
                        request(&PAY, &table, &engine, &key, Duration::from_millis(20)).await;
                    let status = answer.status();
                    assert!(
                        status == StatusCode::CREATED || is_in_progress(&answer),
                        "an answer is a success, a replay or in progress, got {status}: {}",
                        support::body_text(answer).await
                    );
                    if status == StatusCode::CREATED {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                panic!("no answer for {key} after 20 tries");
            })
        })
        .collect();
    for request in requests {
        request.await.unwrap();
    }
    for key in &keys {
        assert_eq!(effects(&table, key).await, 1, "{key}");
    }
    drop_effects(&table).await;
}

/// PostgreSQL bounds the claim's wait with `lock_timeout`; the business
/// step then waits for locks as long as the session would, whether the
/// claim inserted its record (the statement sets the bound back itself)
/// or reclaimed one past its window (a statement of its own does).
#[tokio::test]
async fn the_business_step_waits_for_locks_as_the_session_does() {
    if Dialect::BUILT != Dialect::Postgres {
        support::skipped("PostgreSQL's lock_timeout: build with --features postgres");
        return;
    }
    let Some((table, engine)) = arena().await else {
        return;
    };
    let session: String = sqlx::query_scalar("SHOW lock_timeout")
        .fetch_one(&table.pool)
        .await
        .unwrap();
    let in_business_step = |mut call: Call| async move {
        let (tx, _) = call.parts();
        let timeout: String = sqlx::query_scalar("SHOW lock_timeout")
            .fetch_one(&mut **tx)
            .await
            .unwrap();
        assert_eq!(call.finish(paid()).await.status(), StatusCode::CREATED);
        timeout
    };
    let key = key();
    let fresh = support::claim(&PAY_BRIEFLY, &engine, pay(&key)).await;
    assert_eq!(
        in_business_step(fresh).await,
        session,
        "after a fresh claim"
    );
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let reclaimed = support::claim(&PAY_BRIEFLY, &engine, pay(&key)).await;
    assert_eq!(
        in_business_step(reclaimed).await,
        session,
        "after a reclaim"
    );
    drop_effects(&table).await;
}
