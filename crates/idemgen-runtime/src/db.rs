//! The database of this build: one driver, chosen by a Cargo feature
//! (`sqlite`, `mysql` or `postgres`), and the pool every request uses.

use std::fmt;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::pool::PoolOptions;

mod kept;
// Parsed (and unit-tested) in every build; followed in PostgreSQL builds.
#[cfg(any(feature = "postgres", test))]
mod primary;
mod unanswered;

pub(crate) use kept::Kept;
pub(crate) use unanswered::within;

#[cfg(not(any(feature = "sqlite", feature = "mysql", feature = "postgres")))]
compile_error!("enable one database feature: sqlite, mysql or postgres");

#[cfg(any(
    all(feature = "sqlite", feature = "mysql"),
    all(feature = "sqlite", feature = "postgres"),
    all(feature = "mysql", feature = "postgres"),
))]
compile_error!(
    "enable only one database feature (use --no-default-features --features mysql, for example)"
);

#[cfg(feature = "sqlite")]
pub type Db = sqlx::Sqlite;
#[cfg(feature = "mysql")]
pub type Db = sqlx::MySql;
#[cfg(feature = "postgres")]
pub type Db = sqlx::Postgres;

pub type Pool = sqlx::Pool<Db>;
/// A connection taken from the [`Pool`].
pub(crate) type PoolConnection = sqlx::pool::PoolConnection<Db>;
/// The transaction a business function writes in.
pub type Tx = sqlx::Transaction<'static, Db>;

/// The SQL dialects, one per Cargo feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Mysql,
    Postgres,
}

impl Dialect {
    /// The dialect this build is for.
    #[cfg(feature = "sqlite")]
    pub const BUILT: Dialect = Dialect::Sqlite;
    #[cfg(feature = "mysql")]
    pub const BUILT: Dialect = Dialect::Mysql;
    #[cfg(feature = "postgres")]
    pub const BUILT: Dialect = Dialect::Postgres;

    /// The Cargo feature that builds for this dialect.
    pub fn feature(self) -> &'static str {
        match self {
            Dialect::Sqlite => "sqlite",
            Dialect::Mysql => "mysql",
            Dialect::Postgres => "postgres",
        }
    }

    /// The largest answer body the record table's `response_body` column
    /// holds: MySQL/MariaDB's `MEDIUMBLOB` 16 MiB − 1 byte, PostgreSQL's
    /// `BYTEA` 1 GiB − 1 byte (its largest field), SQLite's `BLOB` its
    /// default `SQLITE_MAX_LENGTH`, 10⁹ bytes. A server's own settings
    /// (MySQL's `max_allowed_packet`) may allow less.
    pub fn largest_stored_answer(self) -> usize {
        match self {
            Dialect::Sqlite => 1_000_000_000,
            Dialect::Mysql => 16 * 1024 * 1024 - 1,
            Dialect::Postgres => 1024 * 1024 * 1024 - 1,
        }
    }

    pub(crate) fn title(self) -> &'static str {
        match self {
            Dialect::Sqlite => "SQLite",
            Dialect::Mysql => "MySQL/MariaDB",
            Dialect::Postgres => "PostgreSQL",
        }
    }

    /// The dialect a database URL is for, by its scheme.
    pub fn of_url(url: &str) -> Option<Dialect> {
        let scheme = url.split_once(':')?.0.to_ascii_lowercase();
        match scheme.as_str() {
            "sqlite" => Some(Dialect::Sqlite),
            "mysql" | "mariadb" => Some(Dialect::Mysql),
            "postgres" | "postgresql" => Some(Dialect::Postgres),
            _ => None,
        }
    }
}

/// Why [`connect`] failed.
#[derive(Debug)]
pub enum ConnectError {
    /// The URL is for another database than this build's driver.
    WrongDriver {
        url: Dialect,
    },
    Database(sqlx::Error),
    Migrate(sqlx::migrate::MigrateError),
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::WrongDriver { url } => write!(
                f,
                "DATABASE_URL is a {} URL, but this build is for {}: build with \
                 `--no-default-features --features {}`",
                url.title(),
                Dialect::BUILT.title(),
                url.feature()
            ),
            ConnectError::Database(error) => write!(f, "cannot connect: {error}"),
            ConnectError::Migrate(error) => write!(f, "cannot apply the migrations: {error}"),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConnectError::WrongDriver { .. } => None,
            ConnectError::Database(error) => Some(error),
            ConnectError::Migrate(error) => Some(error),
        }
    }
}

impl From<sqlx::Error> for ConnectError {
    fn from(error: sqlx::Error) -> Self {
        ConnectError::Database(error)
    }
}

/// Connects to `url` and applies `migrations` (instances starting together
/// may race to migrate: the losers retry).
///
/// A SQLite file is created if missing, in WAL mode with a 5 s busy
/// timeout. MySQL connections set `wsrep_sync_wait = 1`, so that on a
/// Galera cluster reading a record back sees a claim committed on another
/// node. A URL for another driver than this build's is refused with the
/// Cargo feature to build with:
///
/// ```
/// # #[cfg(feature = "sqlite")]
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// static MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate::Migrator::DEFAULT;
/// let error = idemgen_runtime::connect("mysql://root@127.0.0.1/shop", &MIGRATIONS)
///     .await
///     .unwrap_err();
/// assert_eq!(
///     error.to_string(),
///     "DATABASE_URL is a MySQL/MariaDB URL, but this build is for SQLite: \
///      build with `--no-default-features --features mysql`"
/// );
/// # });
/// ```
pub async fn connect(url: &str, migrations: &Migrator) -> Result<Pool, ConnectError> {
    connect_with_pool_size(url, migrations, None).await
}

/// How long a pooled connection may sit idle before it is pinged (one round
/// trip) when taken from the pool again.
pub(crate) const PING_AFTER_IDLE: Duration = Duration::from_secs(1);

/// [`connect`] with at most `max_connections` open connections (sqlx's
/// default, 10, when `None`). A request that finds none free waits for one
/// within its lease, then is answered 429 with `Retry-After`.
pub async fn connect_with_pool_size(
    url: &str,
    migrations: &Migrator,
    max_connections: Option<u32>,
) -> Result<Pool, ConnectError> {
    if let Some(dialect) = Dialect::of_url(url)
        && dialect != Dialect::BUILT
    {
        return Err(ConnectError::WrongDriver { url: dialect });
    }
    let mut options = sqlx::pool::PoolOptions::<Db>::new()
        // sqlx would ping every idle connection before handing it out: a
        // round trip per request. One that was in use less than
        // `PING_AFTER_IDLE` ago is handed out as it is; if the database
        // went away since, its first statement fails and the request is
        // answered 503 with `Retry-After` (and the broken connection is
        // dropped), as for any request caught by an outage.
        .test_before_acquire(false)
        .before_acquire(|connection, meta| Box::pin(ping_if_idle(connection, meta)))
        .after_release(|connection, _| Box::pin(unanswered::after_release(connection)));
    if let Some(max) = max_connections {
        options = options.max_connections(max.max(1));
    }
    let pool = open(url, options).await?;
    migrate(pool, migrations).await
}

/// The check a connection taken from the pool gets: a ping after
/// [`PING_AFTER_IDLE`] idle.
async fn ping_if_idle(
    connection: &mut <Db as sqlx::Database>::Connection,
    meta: sqlx::pool::PoolConnectionMetadata,
) -> Result<bool, sqlx::Error> {
    if meta.idle_for >= PING_AFTER_IDLE {
        unanswered::ping(connection).await?;
    }
    Ok(true)
}

async fn migrate(pool: Pool, migrations: &Migrator) -> Result<Pool, ConnectError> {
    let mut attempt = 0;
    loop {
        match migrations.run(&pool).await {
            Ok(()) => return Ok(pool),
            Err(error) if attempt < 10 => {
                attempt += 1;
                tracing::warn!(%error, attempt, "migrating failed; retrying");
                tokio::time::sleep(Duration::from_millis(100 * attempt)).await;
            }
            Err(error) => return Err(ConnectError::Migrate(error)),
        }
    }
}

#[cfg(feature = "sqlite")]
async fn open(url: &str, pool: PoolOptions<Db>) -> Result<Pool, sqlx::Error> {
    use std::str::FromStr;
    let options = sqlx::sqlite::SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(5));
    pool.connect_with(options).await
}

#[cfg(feature = "mysql")]
async fn open(url: &str, pool: PoolOptions<Db>) -> Result<Pool, sqlx::Error> {
    pool.after_connect(|connection, _| {
        Box::pin(async move {
            // Other servers do not know the variable, and need not.
            if let Err(error) = sqlx::query("SET SESSION wsrep_sync_wait = 1")
                .execute(&mut *connection)
                .await
            {
                tracing::debug!(%error, "wsrep_sync_wait not set");
            }
            Ok(())
        })
    })
    .connect(url)
    .await
}

/// A libpq multi-host URL (`postgres://h1:5432,h2:5432/db?target_session_attrs=read-write`)
/// gets a pool that follows the writable host (see `primary.rs`); any other
/// URL goes to sqlx as it is.
#[cfg(feature = "postgres")]
async fn open(url: &str, pool: PoolOptions<Db>) -> Result<Pool, sqlx::Error> {
    match primary::parse(url).map_err(|error| sqlx::Error::Configuration(error.into()))? {
        Some(hosts) => primary::open(hosts, pool).await,
        None => pool.connect(url).await,
    }
}

/// Whether the database accepts a new connection (outside the pool) within
/// `timeout`. A server that answers at all, even with an error such as too
/// many connections, is reachable; a refused, reset or silent one is not,
/// nor, on PostgreSQL, one whose sessions are read-only (a standby or a
/// demoted primary: for a service that writes, as good as down).
pub(crate) async fn reachable(pool: &Pool, timeout: Duration) -> bool {
    use sqlx::{ConnectOptions, Connection};
    let options = pool.connect_options();
    match tokio::time::timeout(timeout, options.connect()).await {
        Ok(Ok(mut connection)) => {
            let writable = takes_writes(&mut connection, timeout).await;
            let _ = tokio::time::timeout(timeout, connection.close()).await;
            writable
        }
        Ok(Err(sqlx::Error::Database(_))) => true,
        Ok(Err(_)) | Err(_) => false,
    }
}

/// Whether the server `connection` is on takes writes: on PostgreSQL, not
/// a standby or a demoted primary (`transaction_read_only` off), which for
/// a service that writes is as good as down. A server that does not say in
/// time is taken at its word of having connected.
async fn takes_writes(
    connection: &mut <Db as sqlx::Database>::Connection,
    timeout: Duration,
) -> bool {
    if Dialect::BUILT != Dialect::Postgres {
        return true;
    }
    let asked = sqlx::query_scalar::<_, String>("SHOW transaction_read_only").fetch_one(connection);
    !matches!(tokio::time::timeout(timeout, asked).await, Ok(Ok(read_only)) if read_only == "on")
}

/// Whether `pool` is a node of a MariaDB Galera cluster (`wsrep_on`);
/// never for another dialect, or a server without the variable.
pub(crate) async fn is_galera(pool: &Pool) -> bool {
    if Dialect::BUILT != Dialect::Mysql {
        return false;
    }
    sqlx::query_scalar::<_, i64>("SELECT CAST(@@wsrep_on AS SIGNED)")
        .fetch_one(pool)
        .await
        .is_ok_and(|on| on == 1)
}

/// A warning when this session's `synchronous_commit` (PostgreSQL) lets an
/// acknowledged answer be lost: `off` returns before the commit is flushed
/// even on this server, so a crash loses completed records (and a retry
/// with the same key runs again); `local` does not wait for a synchronous
/// standby, so a failover can. `None` when commits wait for both, or on
/// another database. [`crate::Idempotency::new`] logs it at start.
pub async fn commit_durability_warning(pool: &Pool) -> Option<String> {
    if Dialect::BUILT != Dialect::Postgres {
        return None;
    }
    let setting = sqlx::query_scalar::<_, String>("SHOW synchronous_commit")
        .fetch_one(pool)
        .await
        .ok()?;
    let consequence = match setting.as_str() {
        "off" => {
            "a completed record, and the business write with it, is acknowledged before it is \
             flushed: a crash of the database server can lose it after the client got its \
             answer, and a retry with the same key then runs again"
        }
        "local" => {
            "commits do not wait for a synchronous standby: a failover can lose a completed \
             record after the client got its answer, and a retry with the same key then runs \
             again"
        }
        _ => return None,
    };
    Some(format!(
        "synchronous_commit is `{setting}` for the service's sessions: {consequence}. Set it to \
         `on` (the default) for the service's role or database, e.g. ALTER ROLE … SET \
         synchronous_commit = on"
    ))
}

/// What a database error means for the request that met it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Another transaction got there first (a unique violation, a
    /// serialization failure, a deadlock or certification conflict, a lock
    /// wait that timed out, a busy database): the answer comes from the
    /// record, never a 500 and never a recorded failure.
    LostRace,
    /// The database could not be reached or went away (connection refused
    /// or reset, server shutting down, no free connection in time): the
    /// request was not processed and may be retried with the same key.
    Unavailable,
    /// The database refused a value the request carried: a string with a
    /// byte its encoding cannot hold (PostgreSQL refuses NUL), one too long
    /// for its column, a number out of its column's range, a CHECK
    /// constraint. The same request would be refused again: the client's
    /// to fix, answered `400`, never a 500.
    Refused,
    /// Anything else: a bug or a schema problem.
    Other,
}

/// What `error` means, per dialect.
pub(crate) fn classify(error: &sqlx::Error) -> Failure {
    match error {
        sqlx::Error::Database(error) if error.is_unique_violation() => Failure::LostRace,
        sqlx::Error::Database(error) => classify_code(error.as_ref()),
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Tls(_) => Failure::Unavailable,
        _ => Failure::Other,
    }
}

/// The transaction a business function runs in. SQLite starts it with
/// `BEGIN IMMEDIATE`, taking the write lock at once (waiting up to the
/// busy timeout), so that a function that reads before it writes cannot
/// fail at its first write because another connection committed in
/// between; the other databases lock rows as they go.
///
/// Waiting for a connection may be abandoned (the caller's lease ran out);
/// `BEGIN` itself runs in a task of its own and is never cut off halfway.
/// sqlx counts a transaction as begun only once `BEGIN` has answered, so a
/// `BEGIN` cancelled in flight (one waiting on `wsrep_sync_wait` while a
/// Galera cluster evicts a dead node, say) would put the connection back
/// in the pool inside a transaction sqlx does not know of: the next claim
/// on it, meant to commit on its own, would hold its row lock until that
/// connection happened to begin again, and every other claim of the key
/// would wait on it. A transaction begun after the caller stopped waiting
/// is dropped, which rolls it back.
pub(crate) async fn begin(pool: &Pool) -> Result<Tx, sqlx::Error> {
    begin_on(acquire(pool).await?).await
}

/// A connection from `pool`. sqlx's future for it holds the connect path
/// (about 8.7 KB), so it is boxed ([`crate::in_place`]).
pub(crate) fn acquire(
    pool: &Pool,
) -> std::pin::Pin<Box<dyn Future<Output = Result<PoolConnection, sqlx::Error>> + Send + 'static>>
{
    crate::in_place::in_place(|| pool.acquire())
}

/// [`begin`] on a connection already taken from the pool (the one the key
/// was claimed on), so that a request takes one connection, not two: each
/// acquire and release costs a round trip (sqlx pings the connection).
pub(crate) async fn begin_on(connection: PoolConnection) -> Result<Tx, sqlx::Error> {
    use sqlx::SqlSafeStr;
    let statement = match Dialect::BUILT {
        Dialect::Sqlite => Some("BEGIN IMMEDIATE".into_sql_str()),
        Dialect::Mysql | Dialect::Postgres => None,
    };
    tokio::spawn(sqlx::Transaction::begin(connection, statement))
        .await
        .unwrap_or_else(|_| Err(sqlx::Error::WorkerCrashed))
}

#[cfg(feature = "sqlite")]
fn classify_code(error: &dyn sqlx::error::DatabaseError) -> Failure {
    // SQLITE_BUSY and SQLITE_LOCKED, with their extended codes.
    let code = error.code().and_then(|code| code.parse::<i32>().ok());
    // SQLITE_CONSTRAINT_CHECK, SQLITE_CONSTRAINT_DATATYPE (a STRICT
    // table's column), SQLITE_TOOBIG, SQLITE_MISMATCH
    if matches!(code, Some(275 | 3091 | 18 | 20)) {
        return Failure::Refused;
    }
    match code.map(|code| code & 0xff) {
        Some(5 | 6) => Failure::LostRace,
        // SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_FULL
        Some(10 | 13 | 14) => Failure::Unavailable,
        _ => Failure::Other,
    }
}

#[cfg(feature = "mysql")]
fn classify_code(error: &dyn sqlx::error::DatabaseError) -> Failure {
    let number = error
        .try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
        .map(|error| error.number());
    match number {
        // 1213 deadlock (also a Galera certification failure), 1205 lock
        // wait timeout (a takeover waiting on a stale worker's row), 1020
        // "record has changed since last read" (innodb_snapshot_isolation).
        Some(1213 | 1205 | 1020) => Failure::LostRace,
        // 1040 too many connections, 1053 server shutdown, 1047 and 1180
        // a Galera node outside the primary component, 1927 connection
        // killed, 1317 query interrupted, 2006/2013 server gone away.
        Some(1040 | 1047 | 1053 | 1180 | 1317 | 1927 | 2006 | 2013) => Failure::Unavailable,
        // 1264 out of range, 1265 data truncated, 1292 truncated incorrect
        // value, 1366 incorrect string (or integer) value, 1367 illegal
        // value, 1406 data too long, 1690 value out of range, 3819 (MySQL)
        // and 4025 (MariaDB) CHECK constraint violated.
        Some(1264 | 1265 | 1292 | 1366 | 1367 | 1406 | 1690 | 3819 | 4025) => Failure::Refused,
        _ if error.code().as_deref() == Some("40001") => Failure::LostRace,
        // data exception
        _ if error.code().is_some_and(|code| code.starts_with("22")) => Failure::Refused,
        _ if error.code().is_some_and(|code| code.starts_with("08")) => Failure::Unavailable,
        _ => Failure::Other,
    }
}

#[cfg(feature = "postgres")]
fn classify_code(error: &dyn sqlx::error::DatabaseError) -> Failure {
    match error.code().as_deref() {
        // serialization_failure, deadlock_detected, lock_not_available
        // (lock_timeout / NOWAIT)
        Some("40001" | "40P01" | "55P03") => Failure::LostRace,
        // connection exceptions, admin/crash shutdown, cannot connect now,
        // too many connections, read-only standby after a failover
        Some(code)
            if code.starts_with("08")
                || matches!(code, "57P01" | "57P02" | "57P03" | "53300" | "25006") =>
        {
            Failure::Unavailable
        }
        // data exception (22001 too long, 22003 out of range, 22021 a byte
        // sequence the encoding cannot hold, NUL included, 22P02 invalid
        // text for the type, …), check_violation
        Some(code) if code.starts_with("22") || code == "23514" => Failure::Refused,
        _ => Failure::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::{Failure, classify};

    #[test]
    fn errors_without_a_server_code_are_classified_by_kind() {
        assert_eq!(classify(&sqlx::Error::PoolTimedOut), Failure::Unavailable);
        assert_eq!(classify(&sqlx::Error::PoolClosed), Failure::Unavailable);
        assert_eq!(classify(&sqlx::Error::RowNotFound), Failure::Other);
    }
}
