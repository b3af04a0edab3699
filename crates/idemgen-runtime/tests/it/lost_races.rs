//! Every lost race, provoked against the real server of this build and
//! answered from the record: the error class is recognised per dialect,
//! the client is told "in progress, retry" (429 + `Retry-After`), nothing
//! is recorded as failed and the retry with the same key runs once.
//!
//! - MariaDB: 1205 lock-wait timeout, 1213 deadlock, 1020 "record has
//!   changed since last read" (`innodb_snapshot_isolation`);
//! - PostgreSQL: 55P03 `lock_timeout` and `NOWAIT`, 40P01 deadlock, 40001
//!   serialization failure under `REPEATABLE READ`;
//! - SQLite: SQLITE_BUSY, and a business step that reads before it writes
//!   while another connection writes (`BEGIN IMMEDIATE` makes it wait, not
//!   fail).
//!
//! Server settings are changed per session or transaction only, so tests
//! running beside these are unaffected.

use std::time::Duration;

use crate::support::{self, Table, key, pay};
use axum::http::StatusCode;
use idemgen_runtime::{Call, Contract, Dialect, Idempotency, Operation, Reply};
use serde_json::json;

static PAY: Operation = Operation::idempotent(
    "onPay",
    "on_pay",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 5_000),
);

async fn claim(engine: &Idempotency, key: &str) -> Call {
    support::claim(&PAY, engine, pay(key)).await
}

/// A record table, a table of two rows (`{t}_rows`) for the races to
/// fight over, and an engine; `None` when this build's server is not
/// configured.
async fn arena() -> Option<(Table, Idempotency)> {
    let table = Table::new().await?;
    rows(&table).await;
    let engine = table.engine().await;
    Some((table, engine))
}

async fn rows(table: &Table) {
    table
        .sql("CREATE TABLE {t}_rows (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
        .await;
    table
        .sql("INSERT INTO {t}_rows (id, n) VALUES (1, 0), (2, 0)")
        .await;
}

fn sql(table: &Table, text: &str) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(text.replace("{t}", &table.name))
}

/// The business step of `call` met `error`: the answer is "in progress,
/// retry", nothing is recorded as failed, and a retry with the same key
/// claims it and completes.
async fn the_race_is_answered_and_retryable(
    table: &Table,
    engine: &Idempotency,
    key: &str,
    call: Call,
    error: sqlx::Error,
) {
    // A lost race is "in progress" (an error taken for anything else
    // would be a 500, or a 503 for the database gone).
    let what = error.to_string();
    let answer = call.finish(Err::<Reply, _>(error)).await;
    assert_eq!(answer.status(), StatusCode::TOO_MANY_REQUESTS, "{what}");
    assert!(answer.headers().contains_key("retry-after"));
    let failed: i64 = sqlx::query_scalar(sql(
        table,
        "SELECT COUNT(*) FROM {t} WHERE status = 'failed'",
    ))
    .fetch_one(&table.pool)
    .await
    .unwrap();
    assert_eq!(failed, 0, "a lost race was recorded as a failure");
    let retry = claim(engine, key).await;
    let done = retry
        .finish(Ok::<_, sqlx::Error>(Reply::json(
            StatusCode::CREATED,
            &json!({"paid": true}),
        )))
        .await;
    assert_eq!(done.status(), StatusCode::CREATED);
}

/// The server's code for `error`: MariaDB's error number, else the
/// SQLSTATE (SQLite's result code).
fn error_code(error: &sqlx::Error) -> Option<String> {
    let sqlx::Error::Database(error) = error else {
        return None;
    };
    #[cfg(feature = "mysql")]
    if let Some(error) = error.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
        return Some(error.number().to_string());
    }
    error.code().map(|code| code.into_owned())
}

/// A deadlock between two other transactions, met by a claimed request:
/// the server reports `expected`, and the request is answered from the
/// record.
#[cfg(any(feature = "mysql", feature = "postgres"))]
async fn a_deadlock_is_answered(expected: &str) {
    let Some((table, engine)) = arena().await else {
        return;
    };
    let error = deadlock(&table).await;
    assert_eq!(error_code(&error).as_deref(), Some(expected), "{error}");
    let key = key();
    let call = claim(&engine, &key).await;
    the_race_is_answered_and_retryable(&table, &engine, &key, call, error).await;
    table.sql("DROP TABLE {t}_rows").await;
}

/// The business step reads row 1 (its snapshot starts there), another
/// request changes the row and commits, then the step writes it: the
/// step's error.
#[cfg(any(feature = "mysql", feature = "postgres"))]
async fn a_write_after_a_concurrent_change(
    table: &Table,
    tx: &mut idemgen_runtime::Tx,
) -> sqlx::Error {
    sqlx::query(sql(table, "SELECT n FROM {t}_rows WHERE id = 1"))
        .fetch_one(&mut **tx)
        .await
        .unwrap();
    sqlx::query(sql(table, "UPDATE {t}_rows SET n = 5 WHERE id = 1"))
        .execute(&table.pool)
        .await
        .unwrap();
    sqlx::query(sql(table, "UPDATE {t}_rows SET n = n + 1 WHERE id = 1"))
        .execute(&mut **tx)
        .await
        .expect_err("the row changed since the step read it")
}

/// Two transactions lock rows 1 and 2, then each asks for the other's:
/// the server picks a victim; its error.
#[cfg(any(feature = "mysql", feature = "postgres"))]
async fn deadlock(table: &Table) -> sqlx::Error {
    let mut first = table.pool.begin().await.unwrap();
    let mut second = table.pool.begin().await.unwrap();
    let update = |id: u8| {
        sql(
            table,
            &format!("UPDATE {{t}}_rows SET n = n + 1 WHERE id = {id}"),
        )
    };
    sqlx::query(update(1)).execute(&mut *first).await.unwrap();
    sqlx::query(update(2)).execute(&mut *second).await.unwrap();
    let (waits, closes) = tokio::join!(sqlx::query(update(2)).execute(&mut *first), async {
        // The first one waits on row 2 before the second asks for row 1.
        tokio::time::sleep(Duration::from_millis(300)).await;
        sqlx::query(update(1)).execute(&mut *second).await
    });
    let error = match (waits, closes) {
        (Err(error), _) | (_, Err(error)) => error,
        (Ok(_), Ok(_)) => panic!("no deadlock"),
    };
    let _ = first.rollback().await;
    let _ = second.rollback().await;
    error
}

#[cfg(feature = "mysql")]
mod mysql {
    use super::*;

    #[tokio::test]
    async fn a_lock_wait_timeout_in_the_business_step_is_in_progress() {
        let Some((table, engine)) = arena().await else {
            return;
        };
        let key = key();
        // Another session holds row 1 (a stale worker, a long report).
        let mut holder = table.pool.begin().await.unwrap();
        sqlx::query(sql(
            &table,
            "SELECT n FROM {t}_rows WHERE id = 1 FOR UPDATE",
        ))
        .fetch_one(&mut *holder)
        .await
        .unwrap();
        let mut call = claim(&engine, &key).await;
        let (tx, _) = call.parts();
        sqlx::query("SET SESSION innodb_lock_wait_timeout = 1")
            .execute(&mut **tx)
            .await
            .unwrap();
        let error = sqlx::query(sql(&table, "UPDATE {t}_rows SET n = n + 1 WHERE id = 1"))
            .execute(&mut **tx)
            .await
            .expect_err("the row is locked");
        assert_eq!(error_code(&error).as_deref(), Some("1205"), "{error}");
        holder.rollback().await.unwrap();
        the_race_is_answered_and_retryable(&table, &engine, &key, call, error).await;
        table.sql("DROP TABLE {t}_rows").await;
    }

    #[tokio::test]
    async fn a_deadlock_is_in_progress() {
        a_deadlock_is_answered("1213").await;
    }

    /// MariaDB 10.6.18+ reports a row changed after the transaction's
    /// snapshot as 1020 when `innodb_snapshot_isolation` is on.
    #[tokio::test]
    async fn a_row_changed_since_the_snapshot_is_in_progress() {
        let Some((table, engine)) = arena().await else {
            return;
        };
        let key = key();
        let mut call = claim(&engine, &key).await;
        let (tx, _) = call.parts();
        if let Err(error) = sqlx::query("SET SESSION innodb_snapshot_isolation = ON")
            .execute(&mut **tx)
            .await
        {
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("SKIPPED: this server has no innodb_snapshot_isolation ({error})\n")
                    .as_bytes(),
            );
            table.sql("DROP TABLE {t}_rows").await;
            return;
        }
        let error = a_write_after_a_concurrent_change(&table, tx).await;
        assert_eq!(error_code(&error).as_deref(), Some("1020"), "{error}");
        the_race_is_answered_and_retryable(&table, &engine, &key, call, error).await;
        table.sql("DROP TABLE {t}_rows").await;
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;

    #[tokio::test]
    async fn a_lock_timeout_and_nowait_in_the_business_step_are_in_progress() {
        let Some((table, engine)) = arena().await else {
            return;
        };
        let mut holder = table.pool.begin().await.unwrap();
        sqlx::query(sql(
            &table,
            "SELECT n FROM {t}_rows WHERE id = 1 FOR UPDATE",
        ))
        .fetch_one(&mut *holder)
        .await
        .unwrap();
        for statement in [
            "UPDATE {t}_rows SET n = n + 1 WHERE id = 1",
            "SELECT n FROM {t}_rows WHERE id = 1 FOR UPDATE NOWAIT",
        ] {
            let key = key();
            let mut call = claim(&engine, &key).await;
            let (tx, _) = call.parts();
            sqlx::query("SET LOCAL lock_timeout = '300ms'")
                .execute(&mut **tx)
                .await
                .unwrap();
            let error = sqlx::query(sql(&table, statement))
                .execute(&mut **tx)
                .await
                .expect_err("the row is locked");
            assert_eq!(error_code(&error).as_deref(), Some("55P03"), "{error}");
            the_race_is_answered_and_retryable(&table, &engine, &key, call, error).await;
        }
        holder.rollback().await.unwrap();
        table.sql("DROP TABLE {t}_rows").await;
    }

    #[tokio::test]
    async fn a_deadlock_is_in_progress() {
        a_deadlock_is_answered("40P01").await;
    }

    #[tokio::test]
    async fn a_serialization_failure_is_in_progress() {
        let Some((table, engine)) = arena().await else {
            return;
        };
        let key = key();
        let mut call = claim(&engine, &key).await;
        let (tx, _) = call.parts();
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .execute(&mut **tx)
            .await
            .unwrap();
        let error = a_write_after_a_concurrent_change(&table, tx).await;
        assert_eq!(error_code(&error).as_deref(), Some("40001"), "{error}");
        the_race_is_answered_and_retryable(&table, &engine, &key, call, error).await;
        table.sql("DROP TABLE {t}_rows").await;
    }
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;

    /// A connection that does not wait for the write lock meets
    /// SQLITE_BUSY while another holds it.
    #[tokio::test]
    async fn a_busy_database_is_in_progress() {
        let Some((table, engine)) = arena().await else {
            return;
        };
        let key = key();
        let call = claim(&engine, &key).await;
        // The call's transaction (BEGIN IMMEDIATE) holds the write lock.
        let mut impatient = table.pool.acquire().await.unwrap();
        sqlx::query("PRAGMA busy_timeout = 0")
            .execute(&mut *impatient)
            .await
            .unwrap();
        let error = sqlx::query(sql(&table, "UPDATE {t}_rows SET n = n + 1 WHERE id = 1"))
            .execute(&mut *impatient)
            .await
            .expect_err("the database is locked");
        impatient.close().await.unwrap();
        // SQLITE_BUSY, possibly with an extended code.
        let code = error_code(&error).and_then(|code| code.parse::<i32>().ok());
        assert_eq!(code.map(|code| code & 0xff), Some(5), "{error}");
        the_race_is_answered_and_retryable(&table, &engine, &key, call, error).await;
        table.sql("DROP TABLE {t}_rows").await;
    }

    /// Under a deferred `BEGIN` this step failed at once with "database is
    /// locked": it read, another connection committed, then it wrote.
    /// `BEGIN IMMEDIATE` holds the write lock from the start, so the other
    /// writer waits (within its busy timeout) and both succeed.
    #[tokio::test]
    async fn a_step_that_reads_before_it_writes_is_not_failed_by_another_writer() {
        let Some((table, engine)) = arena().await else {
            return;
        };
        let key = key();
        let mut call = claim(&engine, &key).await;
        let (tx, _) = call.parts();
        let n: i64 = sqlx::query_scalar(sql(&table, "SELECT n FROM {t}_rows WHERE id = 1"))
            .fetch_one(&mut **tx)
            .await
            .unwrap();
        let other = {
            let pool = table.pool.clone();
            let statement = sql(&table, "UPDATE {t}_rows SET n = n + 100 WHERE id = 2");
            tokio::spawn(async move { sqlx::query(statement).execute(&pool).await })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!other.is_finished(), "the other writer did not wait");
        sqlx::query(sql(&table, "UPDATE {t}_rows SET n = ?1 WHERE id = 1"))
            .bind(n + 1)
            .execute(&mut **tx)
            .await
            .expect("the step's write");
        let done = call
            .finish(Ok::<_, sqlx::Error>(Reply::json(
                StatusCode::CREATED,
                &json!({"paid": true}),
            )))
            .await;
        assert_eq!(done.status(), StatusCode::CREATED);
        other
            .await
            .unwrap()
            .expect("the other writer, after the step");
        let total: i64 = sqlx::query_scalar(sql(&table, "SELECT SUM(n) FROM {t}_rows"))
            .fetch_one(&table.pool)
            .await
            .unwrap();
        assert_eq!(total, 101);
        table.sql("DROP TABLE {t}_rows").await;
    }
}

/// The fenced finish of a claimed request loses a race (a lock wait that
/// times out on its own record row, held by another session): the
/// attempt rolls back, is answered "in progress, retry", and releases its
/// claim at once, so its retry runs without waiting out the lease.
#[cfg(any(feature = "mysql", feature = "postgres"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_race_at_the_fenced_finish_releases_the_claim_at_once() {
    let Some((table, engine)) = arena().await else {
        return;
    };
    let key = key();
    let mut call = claim(&engine, &key).await;
    let (tx, _) = call.parts();
    #[cfg(feature = "mysql")]
    let (set_timeout, lock_timeout) = (
        "SET SESSION innodb_lock_wait_timeout = 1",
        Duration::from_secs(1),
    );
    #[cfg(feature = "postgres")]
    let (set_timeout, lock_timeout) = (
        "SET LOCAL lock_timeout = '300ms'",
        Duration::from_millis(300),
    );
    sqlx::query(set_timeout).execute(&mut **tx).await.unwrap();
    sqlx::query(sql(&table, "UPDATE {t}_rows SET n = n + 1 WHERE id = 1"))
        .execute(&mut **tx)
        .await
        .unwrap();
    // Another session holds the record's row (a purge, an operator's
    // query) a little past the finish's lock timeout.
    let mut holder = table.pool.begin().await.unwrap();
    #[cfg(feature = "mysql")]
    let lock_record = "SELECT status FROM {t} WHERE idem_key = ? FOR UPDATE";
    #[cfg(feature = "postgres")]
    let lock_record = "SELECT status FROM {t} WHERE idem_key = $1 FOR UPDATE";
    sqlx::query(sql(&table, lock_record))
        .bind(&key)
        .fetch_one(&mut *holder)
        .await
        .unwrap();
    let holder = tokio::spawn(async move {
        tokio::time::sleep(lock_timeout + Duration::from_millis(400)).await;
        holder.rollback().await.unwrap();
    });
    let answer = call
        .finish(Ok::<_, sqlx::Error>(Reply::json(
            StatusCode::CREATED,
            &json!({"paid": true}),
        )))
        .await;
    holder.await.unwrap();
    assert_eq!(answer.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(answer.headers().contains_key("retry-after"));
    let n: i32 = sqlx::query_scalar(sql(&table, "SELECT n FROM {t}_rows WHERE id = 1"))
        .fetch_one(&table.pool)
        .await
        .unwrap();
    assert_eq!(n, 0, "the losing attempt's business write was rolled back");
    // The lease is 5 s: only a released claim lets the retry run now.
    let retry = claim(&engine, &key).await;
    let done = retry
        .finish(Ok::<_, sqlx::Error>(Reply::json(
            StatusCode::CREATED,
            &json!({"paid": true}),
        )))
        .await;
    assert_eq!(done.status(), StatusCode::CREATED);
    table.sql("DROP TABLE {t}_rows").await;
}

/// A committed claim that finds its key taken by a record committed while
/// it waited begins nothing: on a pool of one connection, the request is
/// answered "in progress" and that connection is outside any transaction
/// after it.
#[tokio::test]
async fn a_claim_that_finds_its_key_taken_begins_nothing() {
    if Dialect::BUILT == Dialect::Sqlite {
        support::skipped("SQLite: no query tells whether a connection is inside a transaction");
        return;
    }
    let Some(table) = Table::new().await else {
        return;
    };
    let (pool, engine) = table.engine_on_one_connection().await;
    let connection = support::connection_id(&pool).await;
    // A record of this operation, for its scope.
    let paid = key();
    let call = claim(&engine, &paid).await;
    let created = Ok::<_, sqlx::Error>(Reply::json(StatusCode::CREATED, &json!({"paid": true})));
    assert_eq!(call.finish(created).await.status(), StatusCode::CREATED);
    // Another transaction inserts the key the request will claim, with a
    // lease that has not ended, and commits it while the claim waits on
    // its lock.
    let held = key();
    let mut holder = table.pool.begin().await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {t} (scope, idem_key, fingerprint, status, claim_token, \
         lease_expires_at, expires_at, created_at, updated_at) \
         SELECT scope, '{held}', fingerprint, 'in_progress', 'held', \
         4000000000000, 4000000000000, 0, 0 FROM {t} WHERE idem_key = '{paid}'",
        t = table.name
    )))
    .execute(&mut *holder)
    .await
    .unwrap();
    let waiting = tokio::spawn({
        let (engine, held) = (engine.clone(), held.clone());
        async move { engine.begin(&PAY, pay(&held)).await.err() }
    });
    support::until_waiting_on_a_lock(&table.pool, Some(connection)).await;
    holder.commit().await.unwrap();
    let answer = waiting.await.unwrap().expect("the key is taken");
    assert_eq!(answer.status(), StatusCode::TOO_MANY_REQUESTS);

    support::assert_outside_transaction(&pool, connection).await;
    pool.close().await;
}
