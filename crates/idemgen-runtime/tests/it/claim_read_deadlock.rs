//! The one-commit claim (`store.claim: in-transaction`) losing a deadlock
//! on its read of the record, on the real MariaDB server, deterministically.
//!
//! Under SERIALIZABLE, InnoDB turns the claim's read of an existing record
//! (inside the business transaction) into a shared-lock read. A second
//! session holding the record's row locks can then make that read wait and
//! close a lock cycle: InnoDB picks the lighter transaction, the engine's,
//! as the deadlock victim and rolls the whole transaction back. Every
//! statement after that, on MySQL, commits on its own; so the attempt must
//! end there, answered "in progress", with nothing of its work committed
//! and the key free for the next request.
//!
//! Runs with `--no-default-features --features mysql` and
//! `IDEMGEN_TEST_MYSQL_URL`; creates and drops tables of its own.

#[cfg(feature = "mysql")]
mod mariadb {
    use std::time::Duration;

    use axum::http::StatusCode;
    use axum::response::Response;
    use idemgen_runtime::{Call, ClaimMode, Contract, Idempotency, Operation, Pool, Reply};
    use serde_json::json;
    use sqlx::{Connection, Executor};

    use crate::support::{self, Table, key, pay};

    /// A window of three seconds, so a completed key is claimable again
    /// (and read inside the claim, not answered from the first read) soon
    /// after; a lease as long, which bounds the attempt that waits in the
    /// read (a loaded machine needs more than a second to get it there).
    const WINDOW: Duration = Duration::from_secs(3);

    static PAY: Operation = Operation::idempotent(
        "onPay",
        "on_pay",
        Contract {
            claim: ClaimMode::InTransaction,
            window_ms: WINDOW.as_millis() as i64,
            lease_ms: WINDOW.as_millis() as i64,
            ..Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 5_000)
        },
    );

    /// Rows the blocking session writes so that its transaction outweighs
    /// the engine's, whatever locks the engine's holds: InnoDB rolls back
    /// the transaction with fewer changed rows and locks.
    const BALLAST_ROWS: usize = 200;

    fn paid() -> Result<Reply, sqlx::Error> {
        Ok(Reply::json(StatusCode::CREATED, &json!({"paid": true})))
    }

    /// A pool of this server's connections with every session
    /// SERIALIZABLE, as a server configured with that default gives them
    /// (the runtime sets no isolation level of its own).
    async fn serializable_pool(url: &str) -> Pool {
        sqlx::mysql::MySqlPoolOptions::new()
            .max_connections(4)
            .after_connect(|connection, _| {
                Box::pin(async move {
                    connection
                        .execute("SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE")
                        .await?;
                    Ok(())
                })
            })
            .connect(url)
            .await
            .expect("connect")
    }

    /// The business step: one effect row for `key`, in the call's
    /// transaction.
    async fn effect(table: &Table, call: &mut Call, key: &str) {
        let (tx, _) = call.parts();
        let insert = format!(
            "INSERT INTO {}_effects (idem_key) VALUES ('{key}')",
            table.name
        );
        sqlx::raw_sql(sqlx::AssertSqlSafe(insert))
            .execute(&mut **tx)
            .await
            .expect("the business write");
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

    /// `idempotency_lost_races_total{class}` of [`PAY`].
    async fn lost_races(engine: &Idempotency, class: &str) -> u64 {
        use tower::ServiceExt;

        let operations: &'static [&'static Operation] = Box::leak(Box::new([&PAY]));
        let router = idemgen_runtime::service::health_and_metrics(engine.clone(), operations);
        let scrape = router
            .oneshot(
                axum::http::Request::get("/metrics")
                    .body(axum::body::Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        let text = support::body_text(scrape).await;
        let class = format!("class=\"{class}\"");
        text.lines()
            .filter(|line| line.starts_with("idempotency_lost_races_total{"))
            .find(|line| {
                line.contains(&class) && line.contains(&format!("operation=\"{}\"", PAY.label))
            })
            .and_then(|line| line.rsplit(' ').next())
            .map_or(0, |value| value.parse().unwrap())
    }

    /// The statement on `table` of a transaction waiting for a lock, once
    /// there is one (the engine's read, blocked by the other session's row
    /// lock), from the server's own list of transactions (the
    /// `information_schema` tables are a cache that may lag for seconds).
    async fn waiting_statement(watcher: &mut sqlx::MySqlConnection, table: &str) -> Option<String> {
        let on_table = format!("FROM {table} ");
        for _ in 0..500 {
            let (_, _, status): (String, String, String) =
                sqlx::query_as("SHOW ENGINE INNODB STATUS")
                    .fetch_one(&mut *watcher)
                    .await
                    .unwrap();
            let waiting = status
                .split("---TRANSACTION ")
                .filter(|transaction| transaction.contains("LOCK WAIT"))
                .flat_map(str::lines)
                .find(|line| line.contains(&on_table));
            if let Some(statement) = waiting {
                return Some(statement.to_string());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }

    #[tokio::test]
    async fn a_deadlock_on_the_claims_read_ends_the_attempt_in_progress() {
        let Some(table) = Table::new().await else {
            return;
        };
        table
            .sql("CREATE TABLE {t}_effects (idem_key VARCHAR(100) NOT NULL)")
            .await;
        table
            .sql("CREATE TABLE {t}_ballast (n INTEGER NOT NULL)")
            .await;
        let engine = Idempotency::new(serializable_pool(&table.url).await, &table.name)
            .await
            .expect("the table fits the statements");
        let key = key();

        // A completed record whose window has closed: the next request
        // goes past the first read to the claim, whose INSERT finds the
        // record and reads it, in the business transaction.
        let mut first = support::claim(&PAY, &engine, pay(&key)).await;
        effect(&table, &mut first, &key).await;
        assert_eq!(first.finish(paid()).await.status(), StatusCode::CREATED);
        tokio::time::sleep(WINDOW + Duration::from_millis(200)).await;

        // The other session: the record's row locked (its clustered index
        // entry only, by primary key), and a heavier transaction.
        let (id, scope): (i64, Vec<u8>) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT id, scope FROM {} WHERE idem_key = '{key}'",
            table.name
        )))
        .fetch_one(&table.pool)
        .await
        .unwrap();
        let scope = String::from_utf8(scope).unwrap();
        let mut other = sqlx::MySqlConnection::connect(&table.url).await.unwrap();
        other.execute("BEGIN").await.unwrap();
        let ballast = format!(
            "INSERT INTO {}_ballast (n) SELECT seq FROM seq_1_to_{BALLAST_ROWS}",
            table.name
        );
        other
            .execute(sqlx::AssertSqlSafe(ballast.as_str()))
            .await
            .unwrap();
        let lock_row = format!("SELECT id FROM {} WHERE id = {id} FOR UPDATE", table.name);
        other
            .execute(sqlx::AssertSqlSafe(lock_row.as_str()))
            .await
            .unwrap();

        let retry = tokio::spawn({
            let (engine, key) = (engine.clone(), key.clone());
            async move { engine.begin(&PAY, pay(&key)).await }
        });
        // The claim's INSERT found the record (a shared lock on its unique
        // index entry) and its read now waits for the row lock.
        let mut watcher = sqlx::MySqlConnection::connect(&table.url).await.unwrap();
        let Some(waiting) = waiting_statement(&mut watcher, &table.name).await else {
            let answer = match retry.await.unwrap() {
                Ok(_) => "the key claimed".to_string(),
                Err(answer) => {
                    let head = format!("{} {:?}", answer.status(), answer.headers());
                    format!("{head} {}", support::body_text(answer).await)
                }
            };
            panic!("the engine never waited for the held row lock; its answer: {answer}");
        };
        assert!(
            waiting.starts_with("SELECT fingerprint, status, claim_token"),
            "the engine waits in its read of the record, not in {waiting}"
        );
        // The other session asks for the unique index entry the engine's
        // INSERT holds: a lock cycle, whose victim InnoDB rolls back.
        let close_cycle = format!(
            "SELECT id FROM {} WHERE scope = '{scope}' AND idem_key = '{key}' FOR UPDATE",
            table.name
        );
        other
            .execute(sqlx::AssertSqlSafe(close_cycle.as_str()))
            .await
            .expect("the engine's transaction, not this one, is the deadlock victim");
        other.execute("ROLLBACK").await.unwrap();

        let answer: Response = match retry.await.unwrap() {
            Err(answer) => answer,
            Ok(mut call) => {
                // The attempt went on past the deadlock: its work, as a
                // business step would write it, then a crash before the
                // answer, which a live transaction would take away.
                effect(&table, &mut call, &key).await;
                drop(call);
                assert_eq!(
                    effects(&table, &key).await,
                    1,
                    "only the first request's work is committed"
                );
                panic!("the attempt went on after its transaction was rolled back");
            }
        };
        assert_eq!(answer.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(answer.headers().contains_key("retry-after"));
        let body = support::body_text(answer).await;
        assert!(body.contains("request-in-progress"), "{body}");
        assert_eq!(
            lost_races(&engine, "read").await,
            1,
            "the read lost the race"
        );
        assert_eq!(
            effects(&table, &key).await,
            1,
            "only the first request's work is committed"
        );

        // The key is free: the next request claims it and runs.
        let mut next = match engine.begin(&PAY, pay(&key)).await {
            Ok(call) => call,
            Err(answer) => panic!(
                "the key is claimable after the deadlock, got {}: {}",
                answer.status(),
                support::body_text(answer).await
            ),
        };
        effect(&table, &mut next, &key).await;
        assert_eq!(next.finish(paid()).await.status(), StatusCode::CREATED);
        assert_eq!(effects(&table, &key).await, 2);
        table.sql("DROP TABLE {t}_effects, {t}_ballast").await;
    }
}
