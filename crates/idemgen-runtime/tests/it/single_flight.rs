//! Duplicates that reach the process running their key's first attempt
//! wait for it and get its committed answer, with no statement of their
//! own; anything short of a committed answer sends them to the database.

use std::collections::HashMap;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::Response;
use idemgen_runtime::{ClaimMode, Contract, Dialect, Idempotency, Operation, Reply};
use serde_json::json;

use crate::support::{self, Table, key, pay};

const KEY_PATTERN: &str =
    "^pay:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$";

/// A contract whose duplicates wait up to 5 s, in `claim` mode; one
/// operation a test, since an operation's counters are its own.
const fn contract(claim: ClaimMode) -> Contract {
    Contract {
        retry_after_secs: 5,
        claim,
        ..Contract::header("pay:{uuid}", KEY_PATTERN, 60_000, 10_000)
    }
}

static BURST: Operation = Operation::idempotent("onPay", "on_pay", contract(ClaimMode::Committed));
static BURST_IN_TRANSACTION: Operation =
    Operation::idempotent("onPay", "on_pay", contract(ClaimMode::InTransaction));
static OTHER_BODY: Operation =
    Operation::idempotent("onPay", "on_pay", contract(ClaimMode::Committed));
static STOPPED: Operation =
    Operation::idempotent("onPay", "on_pay", contract(ClaimMode::Committed));
static COUNTED: Operation =
    Operation::idempotent("onPay", "on_pay", contract(ClaimMode::Committed));

const DUPLICATES: usize = 20;

/// Long enough for spawned duplicates to reach the wait on a loaded
/// machine; far shorter than their wait (`retry_after_secs`).
const ARRIVAL: Duration = Duration::from_millis(300);

/// `DUPLICATES` requests of `key`, sent at once, each answered.
fn duplicates(
    operation: &'static Operation,
    engine: &Idempotency,
    request: fn(&str) -> axum::extract::Request,
    key: &str,
) -> Vec<tokio::task::JoinHandle<Result<Response, &'static str>>> {
    (0..DUPLICATES)
        .map(|_| {
            let (engine, key) = (engine.clone(), key.to_string());
            tokio::spawn(async move {
                match engine.begin(operation, request(&key)).await {
                    Err(answer) => Ok(answer),
                    Ok(_) => Err("a duplicate claimed the key"),
                }
            })
        })
        .collect()
}

fn paid() -> Reply {
    let mut reply = Reply::json(StatusCode::CREATED, &json!({"paid": 100}));
    reply.headers.push((
        axum::http::header::LOCATION,
        axum::http::HeaderValue::from_static("/payments/1"),
    ));
    reply
}

async fn a_burst_gets_the_first_answer(operation: &'static Operation) {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let key = key();
    let first = support::claim(operation, &engine, pay(&key)).await;
    let waiting = duplicates(operation, &engine, pay, &key);
    tokio::time::sleep(ARRIVAL).await;
    let answer = first.finish(Ok::<_, sqlx::Error>(paid())).await;
    assert_eq!(answer.status(), StatusCode::CREATED);
    let first_body = support::body_text(answer).await;

    for duplicate in waiting {
        let answer = tokio::time::timeout(Duration::from_secs(10), duplicate)
            .await
            .expect("every duplicate answered")
            .unwrap()
            .unwrap();
        assert_eq!(
            answer.status(),
            StatusCode::CREATED,
            "the first attempt's answer"
        );
        assert_eq!(answer.headers()["idempotent-replayed"], "true");
        assert_eq!(answer.headers()["location"], "/payments/1");
        assert_eq!(answer.headers()["content-type"], "application/json");
        assert_eq!(support::body_text(answer).await, first_body);
    }
    let metric = |family| support::metric(&engine, operation, family);
    assert_eq!(
        metric("idempotency_duplicates_joined_total").await,
        DUPLICATES as u64
    );
    assert_eq!(metric("idempotency_replays_total").await, DUPLICATES as u64);
    assert_eq!(metric("idempotency_first_attempts_total").await, 1);
    assert_eq!(metric("idempotency_in_progress_total").await, 0);
}

#[tokio::test]
async fn a_burst_of_duplicates_gets_the_committed_claims_answer() {
    a_burst_gets_the_first_answer(&BURST).await;
}

#[tokio::test]
async fn a_burst_of_duplicates_gets_the_answer_of_a_claim_in_the_transaction() {
    a_burst_gets_the_first_answer(&BURST_IN_TRANSACTION).await;
}

/// The same key with another body: the database's conflict answer, at
/// once, not the first attempt's answer after it.
#[tokio::test]
async fn a_duplicate_with_another_body_does_not_wait_for_the_first_answer() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let key = key();
    let first = support::claim(&OTHER_BODY, &engine, pay(&key)).await;
    let other = support::post_json("/pay", Some(&key), &json!({"order": "B-2"}));
    let answer = tokio::time::timeout(Duration::from_secs(2), engine.begin(&OTHER_BODY, other))
        .await
        .expect("answered without waiting for the first attempt");
    let answer = answer.err().expect("not claimed");
    assert_eq!(answer.status(), StatusCode::CONFLICT);
    drop(first);
}

/// A first attempt that stops without a stored answer (its business
/// function failed): its duplicates go to the database, where one of them
/// claims the released key and runs; none is answered from memory.
#[tokio::test]
async fn duplicates_of_an_attempt_that_stopped_go_to_the_database() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let key = key();
    let first = support::claim(&STOPPED, &engine, pay(&key)).await;
    let waiting: Vec<_> = (0..DUPLICATES)
        .map(|_| {
            let (engine, key) = (engine.clone(), key.clone());
            tokio::spawn(async move {
                match engine.begin(&STOPPED, pay(&key)).await {
                    Ok(call) => call.finish(Ok::<_, sqlx::Error>(paid())).await.status(),
                    Err(answer) => answer.status(),
                }
            })
        })
        .collect();
    tokio::time::sleep(ARRIVAL).await;
    let stopped = first
        .finish(Err::<Reply, _>(std::io::Error::other(
            "the provider hung up",
        )))
        .await;
    assert_eq!(stopped.status(), StatusCode::INTERNAL_SERVER_ERROR);

    let mut statuses: HashMap<u16, usize> = HashMap::new();
    for duplicate in waiting {
        let status = tokio::time::timeout(Duration::from_secs(20), duplicate)
            .await
            .expect("every duplicate answered")
            .unwrap();
        *statuses.entry(status.as_u16()).or_default() += 1;
    }
    let metric = |family| support::metric(&engine, &STOPPED, family);
    assert_eq!(
        metric("idempotency_duplicates_joined_total").await,
        0,
        "{statuses:?}"
    );
    // One retry ran (201); every other duplicate was answered by the
    // database: in progress while it ran, or its stored answer.
    assert_eq!(
        metric("idempotency_first_attempts_total").await,
        2,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.get(&201).copied().unwrap_or(0) + statuses.get(&429).copied().unwrap_or(0),
        DUPLICATES,
        "{statuses:?}"
    );
}

/// Counted by MariaDB itself on the engine's one connection: twenty
/// duplicates that waited on the first attempt sent no statement; the
/// whole burst read the record once (the first attempt's read).
#[tokio::test]
async fn a_joined_burst_reads_the_record_once_on_mariadb() {
    if Dialect::BUILT != Dialect::Mysql {
        support::skipped("MariaDB's session counters: build with --features mysql");
        return;
    }
    let Some(table) = Table::new().await else {
        return;
    };
    let (pool, engine) = table.engine_on_one_connection().await;
    let selects = || async {
        let (_, value): (String, String) =
            sqlx::query_as("SHOW SESSION STATUS WHERE Variable_name = 'Com_select'")
                .fetch_one(&pool)
                .await
                .unwrap();
        value.parse::<i64>().unwrap()
    };
    let before = selects().await;
    let start = selects().await;
    let reading = start - before;
    let key = key();
    let first = support::claim(&COUNTED, &engine, pay(&key)).await;
    let waiting = duplicates(&COUNTED, &engine, pay, &key);
    tokio::time::sleep(ARRIVAL).await;
    let answer = first.finish(Ok::<_, sqlx::Error>(paid())).await;
    assert_eq!(answer.status(), StatusCode::CREATED);
    for duplicate in waiting {
        let answer = duplicate.await.unwrap().unwrap();
        assert_eq!(answer.status(), StatusCode::CREATED);
    }
    let read = selects().await - start - reading;
    eprintln!("a first attempt and {DUPLICATES} duplicates on MariaDB: {read} SELECT");
    assert_eq!(read, 1, "the first attempt's read only");
    pool.close().await;
}
