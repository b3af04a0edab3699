//! A record table for one test on this build's database: a temporary SQLite
//! file (removed afterwards), or a uniquely named table in the database of
//! `IDEMGEN_TEST_MYSQL_URL` / `IDEMGEN_TEST_PG_URL` (dropped afterwards).
//! The DDL is the one idemgen generates (the payment-callback example's
//! migrations), under the test's own table name.

use std::path::PathBuf;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use axum::response::Response;
use idemgen_runtime::{Call, Dialect, Idempotency, Operation, Pool};

/// The migrations of this build's dialect, in order: the table as first
/// created, then each change since.
macro_rules! migrations {
    ($dialect:literal) => {
        [
            include_str!(concat!(
                "../../../../examples/payment-callback/migrations/",
                $dialect,
                "/0001_idempotency_records.sql"
            )),
            include_str!(concat!(
                "../../../../examples/payment-callback/migrations/",
                $dialect,
                "/20261204000000_record_response_headers.sql"
            )),
            include_str!(concat!(
                "../../../../examples/payment-callback/migrations/",
                $dialect,
                "/20261205000000_record_in_progress.sql"
            )),
        ]
    };
}
#[cfg(feature = "sqlite")]
pub const MIGRATIONS: [&str; 3] = migrations!("sqlite");
#[cfg(feature = "mysql")]
pub const MIGRATIONS: [&str; 3] = migrations!("mysql");
#[cfg(feature = "postgres")]
pub const MIGRATIONS: [&str; 3] = migrations!("postgres");

/// Says why a test did not run. Written past the test harness's capture,
/// so the skip shows.
pub fn skipped(why: &str) {
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("SKIPPED: {why}\n").as_bytes(),
    );
}

/// A fresh key in the `pay:{uuid}` form the tests' contracts declare.
pub fn key() -> String {
    format!("pay:{}", uuid::Uuid::new_v4())
}

/// `POST /pay` with `key` and one order as its JSON body.
pub fn pay(key: &str) -> axum::extract::Request {
    Request::post("/pay")
        .header("content-type", "application/json")
        .header("Idempotency-Key", key)
        .body(Body::from(r#"{"order":"A-1"}"#))
        .unwrap()
}

/// `POST path` with `body` as JSON and, when given, `key` as its
/// `Idempotency-Key` header.
pub fn post_json(
    path: &str,
    key: Option<&str>,
    body: &serde_json::Value,
) -> axum::extract::Request {
    let builder = Request::post(path).header("content-type", "application/json");
    let builder = match key {
        Some(key) => builder.header("Idempotency-Key", key),
        None => builder,
    };
    builder
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap()
}

/// Claims the key of `request` for `operation`, or fails the test.
pub async fn claim(
    operation: &'static Operation,
    engine: &Idempotency,
    request: axum::extract::Request,
) -> Call {
    match engine.begin(operation, request).await {
        Ok(call) => call,
        Err(answer) => panic!("expected to claim the key, got {}", answer.status()),
    }
}

/// Runs `key`'s first request for `operation` ([`pay`]) to completion:
/// 201 `{"paid": true}`.
pub async fn complete(operation: &'static Operation, engine: &Idempotency, key: &str) {
    let first = claim(operation, engine, pay(key))
        .await
        .finish(Ok::<_, sqlx::Error>(idemgen_runtime::Reply::json(
            axum::http::StatusCode::CREATED,
            &serde_json::json!({"paid": true}),
        )))
        .await;
    assert_eq!(first.status(), axum::http::StatusCode::CREATED);
}

/// Which connection `pool` lends next, and whether it is outside any
/// transaction: `(outside, connection id)`.
async fn transaction_state(pool: &Pool) -> (bool, i64) {
    let sql = match Dialect::BUILT {
        Dialect::Mysql => "SELECT @@in_transaction = 0, CAST(CONNECTION_ID() AS SIGNED)",
        // A simple query outside a transaction is its own, begun when the
        // query came; an aborted transaction would refuse it.
        Dialect::Postgres => {
            "SELECT transaction_timestamp() = statement_timestamp(), pg_backend_pid()::bigint"
        }
        Dialect::Sqlite => unreachable!("no query tells an SQLite connection's transaction"),
    };
    let row = sqlx::raw_sql(sql)
        .fetch_one(pool)
        .await
        .expect("the connection takes a query (an aborted transaction refuses it)");
    (sqlx::Row::get(&row, 0), sqlx::Row::get(&row, 1))
}

/// The id of the one connection of `pool` ([`Table::engine_on_one_connection`]),
/// for [`assert_outside_transaction`].
pub async fn connection_id(pool: &Pool) -> i64 {
    transaction_state(pool).await.1
}

/// Asserts that the one connection of `pool`, the one with id
/// `connection`, is outside any transaction. On failure the pool is closed
/// first, which ends the transaction left open: the table's drop would
/// otherwise wait on its locks.
pub async fn assert_outside_transaction(pool: &Pool, connection: i64) {
    let (outside, id) = transaction_state(pool).await;
    if !outside {
        pool.close().await;
        panic!("the connection was given back inside a transaction");
    }
    assert_eq!(
        id, connection,
        "the pool's connection was replaced: nothing was checked"
    );
}

/// Returns once the connection with id `connection` waits on a lock, as
/// `observer` (another pool) sees it. PostgreSQL: its wait event is a
/// `Lock`. MySQL: it is inside an `INSERT` (state `Update`), which here
/// is only the claim, just before or in its wait (`INNODB_TRX` would say
/// `LOCK WAIT`, but InnoDB refreshes it only once unread for 100 ms, so
/// a poll sees the past). Panics after 5 s. `None` (SQLite, where no
/// query tells): waits 300 ms, time enough here for a duplicate to reach
/// its `BEGIN IMMEDIATE`.
pub async fn until_waiting_on_a_lock(observer: &Pool, connection: Option<i64>) {
    let Some(connection) = connection else {
        tokio::time::sleep(Duration::from_millis(300)).await;
        return;
    };
    let sql = match Dialect::BUILT {
        Dialect::Mysql => {
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE id = ? AND state = 'Update'"
        }
        Dialect::Postgres => {
            "SELECT COUNT(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'"
        }
        Dialect::Sqlite => unreachable!("no query tells an SQLite connection's waits"),
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let waiting: i64 = sqlx::query_scalar(sql)
            .bind(connection)
            .fetch_one(observer)
            .await
            .expect("the lock waits can be read");
        if waiting > 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "connection {connection} never waited on a lock"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The id of `pool`'s one connection, `None` on SQLite (no query tells
/// its transaction or its waits).
pub async fn connection_to_watch(pool: &Pool) -> Option<i64> {
    match Dialect::BUILT {
        Dialect::Sqlite => None,
        Dialect::Mysql | Dialect::Postgres => Some(connection_id(pool).await),
    }
}

/// The body of an answer, as text.
pub async fn body_text(response: Response) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The counter `family` of `operation` as `GET /metrics` serves it.
pub async fn metric(engine: &Idempotency, operation: &'static Operation, family: &str) -> u64 {
    use tower::ServiceExt;

    let operations: &'static [&'static Operation] = Box::leak(Box::new([operation]));
    let router = idemgen_runtime::service::health_and_metrics(engine.clone(), operations);
    let response = router
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let text = body_text(response).await;
    let sample = format!("{family}{{operation=\"{}\"}} ", operation.label);
    text.lines()
        .find_map(|line| line.strip_prefix(&sample))
        .unwrap_or_else(|| panic!("no {sample}in\n{text}"))
        .parse()
        .unwrap()
}

/// Runs `sql` on the server at `url` from a runtime and connection of its
/// own, for a `Drop` while the test's runtime is blocked in it. Errors are
/// ignored: this cleans up after a test that has already passed or failed.
pub fn run_detached(url: &str, sql: String) {
    let url = url.to_string();
    let _ = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                if let Ok(pool) = Pool::connect(&url).await {
                    let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&pool).await;
                }
            })
    })
    .join();
}

/// The variable naming the server for this build, if it needs one.
pub fn server_variable() -> Option<&'static str> {
    match Dialect::BUILT {
        Dialect::Sqlite => None,
        Dialect::Mysql => Some("IDEMGEN_TEST_MYSQL_URL"),
        Dialect::Postgres => Some("IDEMGEN_TEST_PG_URL"),
    }
}

/// The tests create their tables themselves.
pub static NO_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate::Migrator::DEFAULT;

pub struct Table {
    pub pool: Pool,
    pub name: String,
    /// The server's URL (the SQLite file's for SQLite).
    pub url: String,
    file: Option<PathBuf>,
}

impl Table {
    /// A fresh record table, or `None` (with a note) when this build's
    /// server is not configured.
    pub async fn new() -> Option<Table> {
        Table::migrated_to(MIGRATIONS.len()).await
    }

    /// A record table as the first `migrations` of [`MIGRATIONS`] leave it
    /// (1: as created before records kept response headers).
    pub async fn migrated_to(migrations: usize) -> Option<Table> {
        let name = format!("idem_rt_{}", uuid::Uuid::new_v4().simple());
        let (url, file) = match server_variable() {
            None => {
                let file = std::env::temp_dir().join(format!("{name}.db"));
                (format!("sqlite://{}", file.display()), Some(file))
            }
            Some(variable) => match std::env::var(variable) {
                Ok(url) => (url, None),
                Err(_) => {
                    skipped(&format!("set {variable} to run"));
                    return None;
                }
            },
        };
        let pool = idemgen_runtime::connect(&url, &NO_MIGRATIONS)
            .await
            .expect("connect");
        let table = Table {
            pool,
            name,
            url,
            file,
        };
        for migration in &MIGRATIONS[..migrations] {
            table.migrate(migration).await;
        }
        Some(table)
    }

    /// Runs one of [`MIGRATIONS`] on this table.
    pub async fn migrate(&self, migration: &str) {
        sqlx::raw_sql(sqlx::AssertSqlSafe(
            migration.replace("idempotent_record", &self.name),
        ))
        .execute(&self.pool)
        .await
        .expect("migrate the record table");
    }

    pub async fn engine(&self) -> Idempotency {
        Idempotency::new(self.pool.clone(), &self.name)
            .await
            .expect("the table fits the statements")
    }

    /// A pool of its own with one connection, and an engine on it: every
    /// statement of the engine's requests runs on the pool's only
    /// connection.
    pub async fn engine_on_one_connection(&self) -> (Pool, Idempotency) {
        let pool = idemgen_runtime::connect_with_pool_size(&self.url, &NO_MIGRATIONS, Some(1))
            .await
            .expect("a pool of one connection");
        let engine = Idempotency::new(pool.clone(), &self.name)
            .await
            .expect("the table fits the statements");
        (pool, engine)
    }

    /// `count` engines on this table, as on as many instances: duplicates
    /// sent through one engine would wait in its memory for its first
    /// attempt of their key, never racing on the database.
    pub async fn engines(&self, count: usize) -> Vec<Idempotency> {
        let mut engines = Vec::with_capacity(count);
        for _ in 0..count {
            engines.push(self.engine().await);
        }
        engines
    }

    /// Runs SQL with `{t}` standing for the table.
    pub async fn sql(&self, sql: &str) {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.replace("{t}", &self.name)))
            .execute(&self.pool)
            .await
            .unwrap();
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        match &self.file {
            Some(file) => {
                for suffix in ["", "-wal", "-shm", "-journal"] {
                    let mut path = file.clone().into_os_string();
                    path.push(suffix);
                    let _ = std::fs::remove_file(path);
                }
            }
            // The wait for the table's locks is bounded: a test that
            // failed with a transaction open on it would otherwise hang
            // here, as the runtime that would roll it back is blocked in
            // this drop. A table left behind has a unique name, so it
            // harms no later run.
            None => {
                let timeout = match Dialect::BUILT {
                    Dialect::Mysql => "SET SESSION lock_wait_timeout = 10",
                    _ => "SET lock_timeout = '10s'",
                };
                run_detached(
                    &self.url,
                    format!("{timeout}; DROP TABLE IF EXISTS {}", self.name),
                );
            }
        }
    }
}

/// `router` served by `idemgen_runtime::service` on a free port of
/// 127.0.0.1: its address, and the server's task (abort it when done).
pub fn serve_on_a_free_port(
    router: axum::Router,
    header_timeout: std::time::Duration,
) -> (String, tokio::task::JoinHandle<std::io::Result<()>>) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("127.0.0.1:{port}");
    let server = tokio::spawn({
        let address = address.clone();
        async move {
            idemgen_runtime::service::serve_with_header_timeout(&address, router, header_timeout)
                .await
        }
    });
    (address, server)
}

/// A connection to `address`, once the server listens there.
pub fn connect(address: &str) -> std::net::TcpStream {
    for _ in 0..100 {
        if let Ok(stream) = std::net::TcpStream::connect(address) {
            return stream;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("the server did not start on {address}");
}
