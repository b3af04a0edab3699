//! Every shape a lost race takes on a multi-primary MariaDB Galera cluster,
//! provoked against the engine on two nodes and answered from the record
//! (in progress, `429` + `Retry-After`, or a replay), never a 500:
//!
//! - **1062**: a key claimed twice on the same node;
//! - **1213 at COMMIT**: business transactions on two nodes that wrote the
//!   same row commit at once; the one certified second fails (or is aborted
//!   by the winner's write set just before its commit);
//! - **1213 on an autocommit statement**: claims of one key on two nodes at
//!   once, with `wsrep_retry_autocommit = 0` so the server does not retry
//!   the loser's INSERT;
//! - **a stale read**: right after a claim completes on node 1 (other
//!   writes keeping node 2's applier busy), a read on node 2 without
//!   `wsrep_sync_wait` may miss it; the engine's sessions wait
//!   (`wsrep_sync_wait = 1`), so node 2 replays it every time.
//!
//! Runs with `--no-default-features --features mysql` when
//! `IDEMGEN_TEST_GALERA_URLS` lists the cluster's nodes (comma-separated,
//! as `scripts/galera.sh urls` prints them); creates and drops tables of
//! its own. The server counters `wsrep_local_cert_failures` and
//! `wsrep_local_bf_aborts` show which shape each race took.

#[cfg(feature = "mysql")]
mod galera {
    use std::sync::Arc;

    use axum::http::StatusCode;
    use axum::response::Response;
    use idemgen_runtime::{Call, Contract, Idempotency, Operation, Pool, Reply};
    use serde_json::json;
    use sqlx::{Connection, Executor};

    use crate::support::{MIGRATIONS, key, pay, run_detached, skipped};

    /// A short lease, so a loser's retry can take over inside the test.
    static PAY: Operation = Operation::idempotent(
        "onPay",
        "on_pay",
        Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 2_000),
    );

    static NO_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate::Migrator::DEFAULT;

    /// One case at a time: the conflict counters are the server's, shared
    /// by every session.
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    fn created() -> Result<Reply, sqlx::Error> {
        Ok(Reply::json(StatusCode::CREATED, &json!({"paid": true})))
    }

    /// The answer is "in progress, retry" (or a replay), never a 5xx.
    fn assert_answered(answer: &Response, what: &str) {
        match answer.status() {
            StatusCode::TOO_MANY_REQUESTS => assert!(
                answer.headers().contains_key("retry-after"),
                "{what}: 429 without Retry-After"
            ),
            StatusCode::CREATED => assert!(
                answer.headers().contains_key("idempotent-replayed"),
                "{what}: 201 that is not a replay"
            ),
            other => panic!("{what}: answered {other}"),
        }
    }

    /// A record table (and a table of rows to fight over) on the cluster,
    /// and the nodes' URLs.
    struct Cluster {
        urls: Vec<String>,
        table: String,
    }

    impl Cluster {
        async fn create() -> Option<Cluster> {
            let Ok(urls) = std::env::var("IDEMGEN_TEST_GALERA_URLS") else {
                skipped(
                    "set IDEMGEN_TEST_GALERA_URLS to run (scripts/galera.sh start, then \
                     IDEMGEN_TEST_GALERA_URLS=$(scripts/galera.sh urls | paste -sd,))",
                );
                return None;
            };
            let urls: Vec<String> = urls
                .split(',')
                .map(|url| url.trim().to_string())
                .filter(|url| !url.is_empty())
                .collect();
            assert!(
                urls.len() >= 2,
                "IDEMGEN_TEST_GALERA_URLS names at least two nodes: {urls:?}"
            );
            let table = format!("idem_galera_{}", uuid::Uuid::new_v4().simple());
            let cluster = Cluster { urls, table };
            let mut admin = cluster.session(0, 1).await;
            for migration in MIGRATIONS {
                let ddl = migration.replace("idempotent_record", &cluster.table);
                admin
                    .execute(sqlx::AssertSqlSafe(ddl.as_str()))
                    .await
                    .expect("create the record table");
            }
            admin
                .execute(sqlx::AssertSqlSafe(cluster.sql(
                    "CREATE TABLE {t}_rows (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); \
                     INSERT INTO {t}_rows (id, n) VALUES (1, 0)",
                )))
                .await
                .expect("create the rows table");
            Some(cluster)
        }

        fn sql(&self, text: &str) -> String {
            text.replace("{t}", &self.table)
        }

        /// One connection to `node` (0-based) with `wsrep_sync_wait` set.
        async fn session(&self, node: usize, sync_wait: u8) -> sqlx::MySqlConnection {
            let mut connection = sqlx::MySqlConnection::connect(&self.urls[node])
                .await
                .expect("connect to the node");
            connection
                .execute(sqlx::AssertSqlSafe(format!(
                    "SET SESSION wsrep_sync_wait = {sync_wait}"
                )))
                .await
                .unwrap();
            connection
        }

        /// The engine on `node`, connected as a generated service connects.
        async fn engine(&self, node: usize) -> Idempotency {
            let pool = idemgen_runtime::connect(&self.urls[node], &NO_MIGRATIONS)
                .await
                .expect("connect");
            Idempotency::new(pool, &self.table).await.unwrap()
        }

        /// The engine on `node`, its sessions not retrying a conflicting
        /// autocommit statement (`wsrep_retry_autocommit = 0`).
        async fn engine_without_autocommit_retry(&self, node: usize) -> Idempotency {
            let pool: Pool = sqlx::mysql::MySqlPoolOptions::new()
                .after_connect(|connection, _| {
                    Box::pin(async move {
                        connection
                            .execute("SET SESSION wsrep_sync_wait = 1, wsrep_retry_autocommit = 0")
                            .await?;
                        Ok(())
                    })
                })
                .connect(&self.urls[node])
                .await
                .expect("connect");
            Idempotency::new(pool, &self.table).await.unwrap()
        }

        /// `wsrep_local_cert_failures` and `wsrep_local_bf_aborts`, summed
        /// over the nodes.
        async fn conflicts(&self) -> (i64, i64) {
            let mut total = (0, 0);
            for node in 0..self.urls.len() {
                let mut session = self.session(node, 0).await;
                let rows: Vec<(String, String)> = sqlx::query_as(
                    "SHOW GLOBAL STATUS WHERE Variable_name IN \
                     ('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')",
                )
                .fetch_all(&mut session)
                .await
                .unwrap();
                for (name, value) in rows {
                    let value: i64 = value.parse().unwrap();
                    if name.eq_ignore_ascii_case("wsrep_local_cert_failures") {
                        total.0 += value;
                    } else {
                        total.1 += value;
                    }
                }
            }
            total
        }

        async fn scalar(&self, node: usize, text: &str) -> i64 {
            let mut session = self.session(node, 1).await;
            sqlx::query_scalar(sqlx::AssertSqlSafe(self.sql(text)))
                .fetch_one(&mut session)
                .await
                .unwrap()
        }
    }

    impl Drop for Cluster {
        fn drop(&mut self) {
            run_detached(
                &self.urls[0],
                self.sql("DROP TABLE IF EXISTS {t}, {t}_rows"),
            );
        }
    }

    async fn claim(engine: &Idempotency, key: &str) -> Call {
        crate::support::claim(&PAY, engine, pay(key)).await
    }

    /// Each node keeps its own clock: an engine on a Galera node starts
    /// with a clock margin.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn an_engine_on_a_galera_node_has_a_clock_margin() {
        let _serial = SERIAL.lock().await;
        let Some(cluster) = Cluster::create().await else {
            return;
        };
        let engine = cluster.engine(0).await;
        assert_eq!(engine.clock_margin(), idemgen_runtime::GALERA_CLOCK_MARGIN);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_key_claimed_twice_on_one_node_is_1062_and_in_progress() {
        let _serial = SERIAL.lock().await;
        let Some(cluster) = Cluster::create().await else {
            return;
        };
        let engine = cluster.engine(0).await;
        let key = key();
        let call = claim(&engine, &key).await;
        // The claim statement's duplicate, as the second request sends it.
        let mut session = cluster.session(0, 1).await;
        let error = sqlx::query(sqlx::AssertSqlSafe(cluster.sql(
            "INSERT INTO {t} (scope, idem_key, fingerprint, status, claim_token, \
             lease_expires_at, expires_at, created_at, updated_at) \
             SELECT scope, idem_key, 'x', 'in_progress', 'y', 0, 0, 0, 0 FROM {t} \
             WHERE idem_key = ?",
        )))
        .bind(&key)
        .execute(&mut session)
        .await
        .expect_err("a duplicate key");
        let number = error
            .as_database_error()
            .and_then(|error| error.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>())
            .map(|error| error.number());
        assert_eq!(number, Some(1062), "{error}");

        let second = engine
            .begin(&PAY, pay(&key))
            .await
            .err()
            .expect("in progress");
        assert_eq!(second.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_answered(&second, "the duplicate on node 1");
        assert_eq!(call.finish(created()).await.status(), StatusCode::CREATED);
        let replay = engine.begin(&PAY, pay(&key)).await.err().expect("a replay");
        assert_eq!(replay.status(), StatusCode::CREATED);
        assert_answered(&replay, "the replay on node 1");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn business_commits_on_two_nodes_that_wrote_one_row_lose_at_commit_and_are_in_progress() {
        const ROUNDS: usize = 30;
        let _serial = SERIAL.lock().await;
        let Some(cluster) = Cluster::create().await else {
            return;
        };
        let engines = [cluster.engine(0).await, cluster.engine(1).await];
        let before = cluster.conflicts().await;
        let mut lost = Vec::new();
        for _ in 0..ROUNDS {
            let barrier = Arc::new(tokio::sync::Barrier::new(2));
            let attempt = |node: usize| {
                let (engine, barrier) = (engines[node].clone(), barrier.clone());
                let table = cluster.table.clone();
                async move {
                    let key = key();
                    let mut call = claim(&engine, &key).await;
                    let (tx, _) = call.parts();
                    sqlx::query(sqlx::AssertSqlSafe(format!(
                        "UPDATE {table}_rows SET n = n + 1 WHERE id = 1"
                    )))
                    .execute(&mut **tx)
                    .await
                    .expect("no conflict on the node itself");
                    // Both wrote row 1 on their own node; now both commit.
                    barrier.wait().await;
                    (key, call.finish(created()).await)
                }
            };
            let (first, second) = tokio::join!(tokio::spawn(attempt(0)), tokio::spawn(attempt(1)));
            let mut answers = [first.unwrap(), second.unwrap()];
            answers.sort_by_key(|(_, answer)| answer.status());
            let statuses = [answers[0].1.status(), answers[1].1.status()];
            assert_eq!(
                statuses,
                [StatusCode::CREATED, StatusCode::TOO_MANY_REQUESTS],
                "one commit wins, the other is answered in progress"
            );
            assert_answered(&answers[1].1, "the transaction that lost");
            lost.push(answers[1].0.clone());
        }
        let after = cluster.conflicts().await;
        let n = cluster
            .scalar(0, "SELECT n FROM {t}_rows WHERE id = 1")
            .await;
        assert_eq!(n, ROUNDS as i64, "one business write per round");
        let failed = cluster
            .scalar(0, "SELECT COUNT(*) FROM {t} WHERE status = 'failed'")
            .await;
        assert_eq!(failed, 0, "a lost race was recorded as a failure");
        let (certification, aborts) = (after.0 - before.0, after.1 - before.1);
        eprintln!(
            "galera: {ROUNDS} pairs of business transactions on nodes 1 and 2 writing one row: \
             {ROUNDS} × 201 and {ROUNDS} × 429; server counters: {certification} certification \
             failures (1213 at COMMIT), {aborts} brute-force aborts"
        );
        assert!(
            certification > 0,
            "no loser failed certification at COMMIT ({aborts} were aborted before it)"
        );
        // The loser released its claim when it lost: its retry runs at
        // once, without waiting for the lease to end.
        let retry = claim(&engines[1], &lost[0]).await;
        assert_eq!(retry.finish(created()).await.status(), StatusCode::CREATED);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn claims_of_one_key_on_two_nodes_surface_1213_on_autocommit_and_one_wins() {
        const ROUNDS: usize = 100;
        let _serial = SERIAL.lock().await;
        let Some(cluster) = Cluster::create().await else {
            return;
        };
        let engines = [
            cluster.engine_without_autocommit_retry(0).await,
            cluster.engine_without_autocommit_retry(1).await,
        ];
        let before = cluster.conflicts().await;
        for _ in 0..ROUNDS {
            let key = key();
            let barrier = Arc::new(tokio::sync::Barrier::new(2));
            let attempt = |node: usize| {
                let (engine, barrier, key) = (engines[node].clone(), barrier.clone(), key.clone());
                async move {
                    barrier.wait().await;
                    engine.begin(&PAY, pay(&key)).await
                }
            };
            let (first, second) = tokio::join!(tokio::spawn(attempt(0)), tokio::spawn(attempt(1)));
            let (winner, loser) = match (first.unwrap(), second.unwrap()) {
                (Ok(call), Err(answer)) | (Err(answer), Ok(call)) => (call, answer),
                (Ok(_), Ok(_)) => panic!("both nodes claimed {key}"),
                (Err(a), Err(b)) => {
                    panic!("nobody claimed {key}: {} and {}", a.status(), b.status())
                }
            };
            assert_eq!(loser.status(), StatusCode::TOO_MANY_REQUESTS);
            assert_answered(&loser, "the claim that lost");
            assert_eq!(winner.finish(created()).await.status(), StatusCode::CREATED);
        }
        let after = cluster.conflicts().await;
        let (certification, aborts) = (after.0 - before.0, after.1 - before.1);
        eprintln!(
            "galera: {ROUNDS} rounds of one key claimed on nodes 1 and 2 at once \
             (wsrep_retry_autocommit = 0): one winner each, {ROUNDS} × 429; server counters: \
             {certification} certification failures (1213 on the autocommit INSERT), {aborts} \
             brute-force aborts"
        );
        assert!(
            certification > 0,
            "no claim failed certification; every loser saw 1062"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_claim_completed_on_one_node_is_replayed_on_another_at_once() {
        // Rounds until a few reads were stale (at least `ROUNDS`, at most
        // `MAX_ROUNDS`): how often one is depends on the machine's load.
        const ROUNDS: usize = 200;
        const MAX_ROUNDS: usize = 2_000;
        let _serial = SERIAL.lock().await;
        let Some(cluster) = Cluster::create().await else {
            return;
        };
        let (first, second) = (cluster.engine(0).await, cluster.engine(1).await);
        let sync_wait: u64 = sqlx::query_scalar("SELECT @@SESSION.wsrep_sync_wait")
            .fetch_one(second.pool())
            .await
            .unwrap();
        assert_eq!(sync_wait, 1, "the engine's sessions wait for causality");
        let mut unsynced = cluster.session(1, 0).await;
        // Other writes on node 1 keep node 2's applier busy, as traffic
        // does, so that it lags behind the commits of the rounds.
        let mut writer = cluster.session(0, 0).await;
        let traffic =
            cluster.sql("INSERT INTO {t}_rows (id, n) SELECT NULL, 0 FROM {t}_rows LIMIT 200");
        writer
            .execute(sqlx::AssertSqlSafe(cluster.sql(
                "ALTER TABLE {t}_rows MODIFY id INTEGER NOT NULL AUTO_INCREMENT",
            )))
            .await
            .unwrap();
        let busy = tokio::spawn(async move {
            loop {
                if writer
                    .execute(sqlx::AssertSqlSafe(traffic.as_str()))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        });
        let (mut stale, mut rounds) = (0, 0);
        while rounds < ROUNDS || (stale < 3 && rounds < MAX_ROUNDS) {
            rounds += 1;
            let key = key();
            let call = claim(&first, &key).await;
            assert_eq!(call.finish(created()).await.status(), StatusCode::CREATED);
            // At once on node 2: a session that does not wait may not see it yet …
            let seen: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(
                cluster.sql("SELECT COUNT(*) FROM {t} WHERE idem_key = ?"),
            ))
            .bind(&key)
            .fetch_one(&mut unsynced)
            .await
            .unwrap();
            if seen == 0 {
                stale += 1;
            }
            // … the engine there replays it.
            let replay = second.begin(&PAY, pay(&key)).await.err().expect("a replay");
            assert_eq!(replay.status(), StatusCode::CREATED, "key {key}");
            assert_answered(&replay, "the request on node 2");
        }
        busy.abort();
        eprintln!(
            "galera: {rounds} claims completed on node 1 under other writes: a read on node 2 \
             with wsrep_sync_wait = 0 right after missed {stale}; the engine on node 2 replayed \
             all {rounds}"
        );
        assert!(
            stale > 0,
            "no read on node 2 was stale: the shape was not provoked"
        );
    }
}

#[cfg(not(feature = "mysql"))]
#[test]
fn galera_lost_races() {
    crate::support::skipped(
        "the Galera cases run in the mysql build (cargo test -p idemgen-runtime \
         --no-default-features --features mysql galera_lost_races)",
    );
}
