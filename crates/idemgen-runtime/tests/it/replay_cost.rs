//! What a replay costs the database, counted by the database itself: a
//! completed record inside its window is answered from one read, with no
//! INSERT, no write, no statement rolled back and no write transaction;
//! so is the same key sent with another body (the conflict), and on
//! MariaDB a duplicate of a key still in progress (the in-progress answer).
//!
//! MariaDB counts per session (`SHOW SESSION STATUS`), so the engine runs
//! on a pool of one connection and the counters are read on it. PostgreSQL
//! counts per database (`pg_stat_database`), so the engine runs in a
//! database of its own, and a backend's counts are read once it has
//! exited (which flushes them). SQLite keeps no such counters.

use std::collections::HashMap;

use axum::http::StatusCode;
use idemgen_runtime::{Contract, Dialect, Idempotency, Operation, Pool};
use serde_json::json;

use crate::support::{self, NO_MIGRATIONS, Table, key, pay};

const KEY_PATTERN: &str =
    "^pay:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$";

static PAY: Operation = Operation::idempotent(
    "onPay",
    "on_pay",
    Contract::header("pay:{uuid}", KEY_PATTERN, 60_000, 3_000),
);

/// An operation whose lease outlasts the test: its claimed key stays in
/// progress throughout.
static HELD: Operation = Operation::idempotent(
    "onPay",
    "on_pay",
    Contract::header("pay:{uuid}", KEY_PATTERN, 600_000, 300_000),
);

/// A request sent again with a key already used.
#[derive(Debug, Clone, Copy)]
enum Repeat {
    /// The same request, its key completed: the replay.
    Same,
    /// Another body, its key completed: the conflict.
    OtherBody,
    /// The same request while its first attempt holds the key: the
    /// in-progress answer (a duplicate in a burst).
    WhileInProgress,
}

/// Sends `key` again as `repeat` says and checks the answer.
async fn repeat(engine: &Idempotency, key: &str, repeat: Repeat) {
    let request = match repeat {
        Repeat::Same | Repeat::WhileInProgress => pay(key),
        Repeat::OtherBody => support::post_json("/pay", Some(key), &json!({"order": "B-2"})),
    };
    let operation = match repeat {
        Repeat::WhileInProgress => &HELD,
        Repeat::Same | Repeat::OtherBody => &PAY,
    };
    match engine.begin(operation, request).await {
        Ok(_) => panic!("a key already used was claimed again"),
        Err(answer) => match repeat {
            Repeat::Same => {
                assert_eq!(answer.status(), StatusCode::CREATED);
                assert_eq!(answer.headers()[idemgen_runtime::REPLAYED_HEADER], "true");
            }
            Repeat::OtherBody => assert_eq!(answer.status(), StatusCode::CONFLICT),
            Repeat::WhileInProgress => {
                assert_eq!(answer.status(), StatusCode::TOO_MANY_REQUESTS);
            }
        },
    }
}

/// Each counter's change from `before` to `after`.
fn delta(before: &HashMap<String, i64>, after: &HashMap<String, i64>) -> HashMap<String, i64> {
    after
        .iter()
        .map(|(name, value)| (name.clone(), value - before.get(name).copied().unwrap_or(0)))
        .collect()
}

#[tokio::test]
async fn a_replay_is_one_read_on_mariadb() {
    if Dialect::BUILT != Dialect::Mysql {
        support::skipped("MariaDB's session counters: build with --features mysql");
        return;
    }
    let Some(table) = Table::new().await else {
        return;
    };
    // One connection: the engine's statements and the counters' session.
    let (pool, engine) = table.engine_on_one_connection().await;
    let key = key();
    support::complete(&PAY, &engine, &key).await;
    // A first attempt that holds its key (on a pool of its own) while a
    // duplicate arrives; its lease lasts longer than the test.
    let holder = table.engine().await;
    let held = support::key();
    let _holding = support::claim(&HELD, &holder, pay(&held)).await;

    let counters = [
        "Com_select",
        "Com_insert",
        "Com_update",
        "Com_delete",
        "Com_commit",
        "Com_rollback",
        "Handler_write",
        "Handler_update",
        "Handler_delete",
        "Handler_rollback",
        "Handler_commit",
    ];
    let status = || async {
        let sql = format!(
            "SHOW SESSION STATUS WHERE Variable_name IN ({})",
            counters.map(|name| format!("'{name}'")).join(", ")
        );
        let rows: Vec<(String, String)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .fetch_all(&pool)
            .await
            .unwrap();
        rows.into_iter()
            .map(|(name, value)| (name, value.parse::<i64>().unwrap()))
            .collect::<HashMap<_, _>>()
    };
    for kind in [Repeat::Same, Repeat::OtherBody, Repeat::WhileInProgress] {
        // What reading the counters costs by itself, taken off the request's.
        let start = status().await;
        let idle = status().await;
        let repeated = match kind {
            Repeat::WhileInProgress => &held,
            Repeat::Same | Repeat::OtherBody => &key,
        };
        repeat(&engine, repeated, kind).await;
        let end = status().await;
        let reading = delta(&start, &idle);
        let sent = delta(&idle, &end);
        let cost: HashMap<&str, i64> = counters
            .iter()
            .map(|&name| (name, sent[name] - reading[name]))
            .collect();
        eprintln!("{kind:?} on MariaDB, per request: {cost:?}");

        for name in [
            "Com_insert",
            "Com_update",
            "Com_delete",
            "Com_commit",
            "Com_rollback",
            "Handler_write",
            "Handler_update",
            "Handler_delete",
            "Handler_rollback",
        ] {
            assert_eq!(cost[name], 0, "{name} for {kind:?}: {cost:?}");
        }
        assert_eq!(cost["Com_select"], 1, "one read for {kind:?}: {cost:?}");
    }
    pool.close().await;
}

/// A replay's connection is kept for the next keyed request rather than
/// given back to the pool, where sqlx pings every connection that comes
/// back: a round trip as long as the replay's one read.
#[tokio::test]
async fn a_replays_connection_is_kept_out_of_the_pool_for_the_next_request() {
    let Some(table) = Table::new().await else {
        return;
    };
    let pool = idemgen_runtime::connect_with_pool_size(&table.url, &NO_MIGRATIONS, Some(4))
        .await
        .unwrap();
    let engine = Idempotency::new(pool.clone(), &table.name).await.unwrap();
    let key = key();
    support::complete(&PAY, &engine, &key).await;
    // The completed request's connection goes back to the pool in a task
    // of its own.
    let settled = || async {
        for _ in 0..100 {
            if pool.num_idle() as u32 == pool.size() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the pool's connections did not come back");
    };
    settled().await;
    let open = pool.size();
    for _ in 0..20 {
        repeat(&engine, &key, Repeat::Same).await;
        // Time enough for a connection given back to reach the pool.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert_eq!(pool.size(), open, "no connection opened for a replay");
        assert_eq!(
            pool.num_idle() as u32,
            open - 1,
            "one connection kept, the same one each time"
        );
    }
}

/// `url` with its database replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    let (address, query) = url
        .split_once('?')
        .map_or((url, None), |(a, q)| (a, Some(q)));
    let (server, _) = address
        .rsplit_once('/')
        .filter(|(server, _)| !server.ends_with('/'))
        .unwrap_or((address, ""));
    match query {
        Some(query) => format!("{server}/{database}?{query}"),
        None => format!("{server}/{database}"),
    }
}

/// A database of the test's own on PostgreSQL, dropped afterwards, so its
/// `pg_stat_database` row counts only what the test runs in it.
struct OwnDatabase {
    admin: Pool,
    name: String,
    url: String,
    admin_url: String,
}

impl OwnDatabase {
    async fn new(admin_url: &str) -> OwnDatabase {
        let admin = Pool::connect(admin_url).await.unwrap();
        let name = format!("idem_cost_{}", uuid::Uuid::new_v4().simple());
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&admin)
            .await
            .unwrap();
        OwnDatabase {
            url: with_database(admin_url, &name),
            admin,
            name,
            admin_url: admin_url.to_string(),
        }
    }

    /// The database's counters once every backend connected to it has
    /// exited and flushed them.
    async fn counters(&self) -> HashMap<String, i64> {
        for _ in 0..200 {
            let connected: i64 =
                sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = $1")
                    .bind(&self.name)
                    .fetch_one(&self.admin)
                    .await
                    .unwrap();
            if connected == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        // An exiting backend flushes its counts as it goes: read until
        // they hold still.
        let mut last = self.read_counters().await;
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            let now = self.read_counters().await;
            if now == last {
                return now;
            }
            last = now;
        }
    }

    async fn read_counters(&self) -> HashMap<String, i64> {
        let row: (i64, i64, i64, i64, i64) = sqlx::query_as(
            "SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted \
             FROM pg_stat_database WHERE datname = $1",
        )
        .bind(&self.name)
        .fetch_one(&self.admin)
        .await
        .unwrap();
        HashMap::from([
            ("xact_commit".to_string(), row.0),
            ("xact_rollback".to_string(), row.1),
            ("tup_inserted".to_string(), row.2),
            ("tup_updated".to_string(), row.3),
            ("tup_deleted".to_string(), row.4),
        ])
    }
}

impl Drop for OwnDatabase {
    fn drop(&mut self) {
        support::run_detached(
            &self.admin_url,
            format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

/// The counters a session of one connection adds to `database` while it
/// opens the engine and, if given, sends a completed key again.
async fn session(
    database: &OwnDatabase,
    table: &str,
    sent: Option<(&str, Repeat)>,
) -> HashMap<String, i64> {
    let before = database.counters().await;
    let pool = idemgen_runtime::connect_with_pool_size(&database.url, &NO_MIGRATIONS, Some(1))
        .await
        .unwrap();
    let engine = Idempotency::new(pool.clone(), table).await.unwrap();
    if let Some((key, kind)) = sent {
        repeat(&engine, key, kind).await;
    }
    pool.close().await;
    drop(engine);
    delta(&before, &database.counters().await)
}

#[tokio::test]
async fn a_replay_is_one_read_on_postgres() {
    if Dialect::BUILT != Dialect::Postgres {
        support::skipped("PostgreSQL's database counters: build with --features postgres");
        return;
    }
    let Ok(admin_url) = std::env::var("IDEMGEN_TEST_PG_URL") else {
        support::skipped("set IDEMGEN_TEST_PG_URL to run");
        return;
    };
    let database = OwnDatabase::new(&admin_url).await;
    let table = "idempotent_record";
    let setup = Pool::connect(&database.url).await.unwrap();
    for migration in support::MIGRATIONS {
        sqlx::raw_sql(sqlx::AssertSqlSafe(migration))
            .execute(&setup)
            .await
            .unwrap();
    }
    let engine = Idempotency::new(setup.clone(), table).await.unwrap();
    let key = key();
    support::complete(&PAY, &engine, &key).await;
    setup.close().await;
    drop(engine);

    // A session that only opens the engine, and one that also sends the
    // key again: the difference is the request's. Another backend
    // (autovacuum) may add to a session's counts, never take away: the
    // least of three sessions of each kind is its own.
    for kind in [Repeat::Same, Repeat::OtherBody] {
        let mut opened = Vec::new();
        let mut sent = Vec::new();
        for _ in 0..3 {
            opened.push(session(&database, table, None).await);
            sent.push(session(&database, table, Some((&key, kind))).await);
        }
        let least = |sessions: &[HashMap<String, i64>], name: &str| {
            sessions.iter().map(|counts| counts[name]).min().unwrap()
        };
        let cost: HashMap<&str, i64> = [
            "xact_commit",
            "xact_rollback",
            "tup_inserted",
            "tup_updated",
            "tup_deleted",
        ]
        .into_iter()
        .map(|name| (name, least(&sent, name) - least(&opened, name)))
        .collect();
        eprintln!("{kind:?} on PostgreSQL, per request: {cost:?}");

        for name in [
            "xact_rollback",
            "tup_inserted",
            "tup_updated",
            "tup_deleted",
        ] {
            assert_eq!(cost[name], 0, "{name} for {kind:?}: {cost:?}");
        }
        // PostgreSQL counts every statement outside a transaction block as
        // a transaction of its own: the one read, which writes nothing.
        assert_eq!(
            cost["xact_commit"], 1,
            "one statement for {kind:?}: {cost:?}"
        );
    }
}

#[test]
fn the_database_is_replaced_in_a_url() {
    assert_eq!(
        with_database("postgres://u@h:5432/test", "other"),
        "postgres://u@h:5432/other"
    );
    assert_eq!(
        with_database("postgres://u@h/test?sslmode=disable", "other"),
        "postgres://u@h/other?sslmode=disable"
    );
}
