//! On PostgreSQL a completing update changes no indexed column, so it is a
//! heap-only (HOT) update: no new entry in any index of the record table.
//! An index whose rows depend on `status` (a partial index on the records
//! in progress, say) would make every completion write an entry in every
//! index and, under SERIALIZABLE, land in the index pages concurrent
//! completions read, so that first writes of different keys abort each
//! other. PostgreSQL counts HOT updates itself (`pg_stat_user_tables`).

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use idemgen_runtime::{Contract, Dialect, Operation, Pool, Reply};
use serde_json::json;

use crate::support::{self, Table, key, pay};

const KEY_PATTERN: &str =
    "^pay:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$";

static PAY: Operation = Operation::idempotent(
    "onPay",
    "on_pay",
    Contract::header("pay:{uuid}", KEY_PATTERN, 60_000, 3_000),
);

/// First writes run to completion.
const FIRST_WRITES: i64 = 60;

#[tokio::test]
async fn a_completion_is_a_heap_only_update_on_postgres() {
    if Dialect::BUILT != Dialect::Postgres {
        support::skipped("PostgreSQL's HOT counters: build with --features postgres");
        return;
    }
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    for _ in 0..FIRST_WRITES {
        let answer = support::claim(&PAY, &engine, pay(&key()))
            .await
            .finish(Ok::<_, sqlx::Error>(Reply::json(
                StatusCode::CREATED,
                &json!({"paid": true}),
            )))
            .await;
        assert_eq!(answer.status(), StatusCode::CREATED);
    }
    drop(engine);
    // A backend hands its counts over when it exits.
    table.pool.close().await;

    let reader = Pool::connect(&table.url).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let (updated, hot) = loop {
        let (updated, hot): (i64, i64) = sqlx::query_as(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = $1",
        )
        .bind(&table.name)
        .fetch_one(&reader)
        .await
        .unwrap();
        if updated >= FIRST_WRITES || Instant::now() > deadline {
            break (updated, hot);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    eprintln!("{FIRST_WRITES} first writes: {updated} updates, {hot} of them heap-only");
    assert_eq!(
        updated, FIRST_WRITES,
        "one completing update per first write"
    );
    // A completion finds no room in a full page now and then (pruning it
    // waits on every older snapshot): most, not all, stay heap-only.
    assert!(
        hot * 10 >= updated * 9,
        "{hot} of {updated} completing updates were heap-only"
    );
}
