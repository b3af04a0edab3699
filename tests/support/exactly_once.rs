//! What `tests/it/exactly_once.rs` and `benches/load.rs` share: the example
//! binaries (built by `support/build.rs`), a fresh database per run, server processes that die
//! with their guard, and a blocking HTTP client.

// Each of the two targets that include this file uses only part of it.
#![allow(dead_code)]

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[path = "build.rs"]
pub mod build;

// Not every target that includes this file names all of them.
#[allow(unused_imports)]
pub use build::{Binaries, Dialect, Profile, root};

#[path = "skip.rs"]
pub mod skip;

#[path = "server_url.rs"]
pub mod server_url;
use server_url::ServerUrl;

/// A database of its own for one run, dropped with it; SQL through the
/// command-line client of its dialect.
pub struct Database {
    pub dialect: Dialect,
    /// What the servers get as `DATABASE_URL`.
    pub url: String,
    name: String,
    server: Option<ServerUrl>,
    /// The base URL the database was created from.
    server_url: Option<String>,
    sqlite_file: PathBuf,
    /// Server logs, and the SQLite file.
    pub dir: tempfile::TempDir,
}

impl Database {
    /// `None` when the dialect's server is not configured.
    pub fn create(dialect: Dialect) -> Option<Database> {
        let server_url = match dialect {
            Dialect::Sqlite => None,
            _ => Some(
                std::env::var(dialect.env_var())
                    .ok()
                    .filter(|url| !url.is_empty())?,
            ),
        };
        Some(Database::create_at(dialect, server_url.as_deref()))
    }

    /// A database of its own on the server at `server_url` (the dialect's
    /// base URL; `None` for SQLite).
    pub fn create_at(dialect: Dialect, server_url: Option<&str>) -> Database {
        let dir = tempfile::Builder::new()
            .prefix("idemgen-exactly-once-")
            .tempdir()
            .unwrap();
        let name = format!("idem_{}_{:x}", std::process::id(), now_nanos() % (1 << 40));
        let sqlite_file = dir.path().join("payments.db");
        let (server, url) = server_url::locate(server_url, &name, &sqlite_file);
        let database = Database {
            dialect,
            url,
            name,
            server,
            server_url: server_url.map(str::to_string),
            sqlite_file,
            dir,
        };
        if database.server.is_some() {
            database.admin(&format!("CREATE DATABASE {}", database.name));
        }
        database
    }

    /// This database on another server of the same cluster (a Galera
    /// node), whose base URL is `server_url`.
    pub fn url_on(&self, server_url: &str) -> String {
        ServerUrl::parse(server_url).with_database(&self.name)
    }

    /// Runs `sql` against the run's database; its output, trimmed.
    /// The record of `key` as the database holds it, one line, for a
    /// violation's message: what a retry found.
    pub fn record_of(&self, key: &str) -> String {
        self.query(&format!(
            "SELECT status, claim_token, response_status, created_at, updated_at, \
             lease_expires_at, expires_at FROM idempotent_record WHERE idem_key = '{key}'"
        ))
        .replace('\n', "; ")
    }

    pub fn query(&self, sql: &str) -> String {
        let mut command = self.client(Some(&self.name));
        match self.dialect {
            Dialect::Sqlite => command.arg(sql),
            Dialect::Mysql => command.args(["-e", sql]),
            Dialect::Postgres => command.args(["-c", sql]),
        };
        run_client(command, sql)
    }

    pub fn exec(&self, sql: &str) {
        self.query(sql);
    }

    /// Starts `sql` in the background in a session of its own (to hold a
    /// lock while the service runs into it); kill the child to end it. Its
    /// errors go to [`Database::client_errors`].
    pub fn spawn_query(&self, sql: &str) -> std::process::Child {
        let mut command = self.client(Some(&self.name));
        match self.dialect {
            Dialect::Sqlite => command.arg(sql),
            Dialect::Mysql => command.args(["-e", sql]),
            Dialect::Postgres => command.args(["-c", sql]),
        };
        let errors = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.client_errors())
            .unwrap();
        command
            .stdout(Stdio::null())
            .stderr(errors)
            .spawn()
            .expect("the database client runs")
    }

    /// Where the clients started by [`Database::spawn_query`] write their
    /// errors.
    pub fn client_errors(&self) -> PathBuf {
        self.dir.path().join("client-errors.log")
    }

    /// Runs `sql` on the server, outside the run's database (settings).
    pub fn server_query(&self, sql: &str) -> String {
        let mut command = self.client(None);
        match self.dialect {
            Dialect::Sqlite => return String::new(),
            Dialect::Mysql => command.args(["-e", sql]),
            Dialect::Postgres => command.args(["-c", sql]),
        };
        run_client(command, sql)
    }

    /// [`Database::server_query`] that answers `None` where the server
    /// refuses `sql` (a view or extension it does not have).
    pub fn try_server_query(&self, sql: &str) -> Option<String> {
        let mut command = self.client(None);
        match self.dialect {
            Dialect::Sqlite => return None,
            Dialect::Mysql => command.args(["-e", sql]),
            Dialect::Postgres => command.args(["-c", sql]),
        };
        output_if_ok(&mut command)
    }

    /// The run's database name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn count(&self, sql: &str) -> i64 {
        let text = self.query(sql);
        text.parse()
            .unwrap_or_else(|_| panic!("`{sql}` answered {text:?}, not a number"))
    }

    /// Statements on the server, outside the run's database.
    fn admin(&self, sql: &str) {
        let mut command = self.client(None);
        match self.dialect {
            Dialect::Sqlite => return,
            Dialect::Mysql => command.args(["-e", sql]),
            Dialect::Postgres => command.args(["-c", sql]),
        };
        run_client(command, sql);
    }

    fn client(&self, database: Option<&str>) -> Command {
        match (self.dialect, &self.server) {
            (Dialect::Mysql, Some(server)) => {
                let mut command = server.mysql_command();
                if let Some(database) = database {
                    command.arg(database);
                }
                command
            }
            (Dialect::Postgres, Some(server)) => {
                let mut command = Command::new("psql");
                // The base URL's own database for admin statements.
                let url = match database {
                    Some(database) => server.with_database(database),
                    None => self.server_url.clone().unwrap(),
                };
                command
                    .arg(url)
                    .args(["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1"]);
                command
            }
            _ => {
                let mut command = Command::new("sqlite3");
                command
                    .args(["-bail", "-cmd", ".timeout 10000"])
                    .arg(&self.sqlite_file);
                command
            }
        }
    }

    /// A new unpaid order; its number.
    pub fn seed_order(&self, amount: i64) -> String {
        let order = unique_order_no();
        self.insert_order(&order, amount);
        order
    }

    pub fn insert_order(&self, order: &str, amount: i64) {
        self.exec(&format!(
            "INSERT INTO orders (order_no, amount) VALUES ('{order}', {amount})"
        ));
    }

    pub fn paid_rows(&self, order: &str) -> i64 {
        self.count(&format!(
            "SELECT COUNT(*) FROM paid_log WHERE order_no = '{order}'"
        ))
    }

    pub fn order_status(&self, order: &str) -> String {
        self.query(&format!(
            "SELECT status FROM orders WHERE order_no = '{order}'"
        ))
    }

    pub fn record_status(&self, key: &str) -> String {
        self.query(&format!(
            "SELECT status FROM idempotent_record WHERE idem_key = '{key}'"
        ))
    }

    pub fn record_lease_end(&self, key: &str) -> i64 {
        self.count(&format!(
            "SELECT lease_expires_at FROM idempotent_record WHERE idem_key = '{key}'"
        ))
    }

    /// Waits (at most 20 s) until the record of `key` has `status`.
    pub fn wait_for_record(&self, key: &str, status: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.record_status(key) != status {
            assert!(
                Instant::now() < deadline,
                "the record of {key} never became {status}"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        match self.dialect {
            Dialect::Sqlite => {}
            Dialect::Mysql => self.admin(&format!("DROP DATABASE IF EXISTS {}", self.name)),
            Dialect::Postgres => self.admin(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            )),
        }
    }
}

/// Runs a database client's `command` for `sql`, which must succeed; its
/// output, trimmed.
pub fn run_client(mut command: Command, sql: &str) -> String {
    let output = command.output().expect("the database client runs");
    assert!(
        output.status.success(),
        "`{sql}` failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// What a started service logs: warnings and errors, but not the
/// example's warnings about accepting unsigned callbacks, at start and on
/// each one (these tests and the load bench send them all unsigned, and
/// the plain write the bench compares with writes no line per request),
/// in the example and in its one-commit build.
pub const SERVICE_LOG: &str =
    "warn,payment_callback::auth=error,payment_callback_one_commit::auth=error";

/// A server process on a free loopback port, SIGKILLed when dropped.
pub struct Server {
    child: Child,
    pub base: String,
    log: PathBuf,
}

impl Server {
    pub fn start(binary: &Path, db: &Database, delay_ms: u64) -> Server {
        Server::start_with(binary, db, delay_ms, &[])
    }

    pub fn start_with(binary: &Path, db: &Database, delay_ms: u64, env: &[(&str, &str)]) -> Server {
        Server::start_at(binary, &db.url, db.dir.path(), delay_ms, env)
    }

    /// Starts `binary` on `database_url`, logging into `log_dir`, and waits
    /// (at most 60 s) until it answers `/healthz`.
    pub fn start_at(
        binary: &Path,
        database_url: &str,
        log_dir: &Path,
        delay_ms: u64,
        env: &[(&str, &str)],
    ) -> Server {
        let name = binary.file_name().unwrap().to_string_lossy();
        let (child, base, log) = start_healthy(binary, log_dir, &name, |command| {
            command
                .env("DATABASE_URL", database_url)
                .env("DOWNSTREAM_DELAY_MS", delay_ms.to_string())
                // These tests send unsigned callbacks (signatures are
                // tested in the example's own tests/signatures.rs).
                .env("PAYMENT_CALLBACK_INSECURE", "1")
                // Purging is tested on its own, on a server started for it.
                .env("PURGE_INTERVAL_SECS", "3600")
                .env("RUST_LOG", SERVICE_LOG);
            for (name, value) in env {
                command.env(name, value);
            }
        });
        Server { child, base, log }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGKILL: a crash, not a graceful shutdown.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `binary`, set up by `configure`, on a free loopback port
/// (`LISTEN_ADDR`), its output in `log_dir/{name}-{port}.log`, and waits
/// (at most 60 s) until it answers `/healthz`: the process, its base URL
/// and its log.
pub fn start_healthy(
    binary: &Path,
    log_dir: &Path,
    name: &str,
    configure: impl Fn(&mut Command),
) -> (Child, String, PathBuf) {
    let mut last_log = String::new();
    // The port is free when picked, but another process may take it
    // before the server binds it: try a few.
    for _ in 0..3 {
        let port = free_port();
        let log = log_dir.join(format!("{name}-{port}.log"));
        let log_file = File::create(&log).unwrap();
        let mut command = Command::new(binary);
        configure(&mut command);
        command
            .env("LISTEN_ADDR", format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file);
        let mut child = command.spawn().unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if get(&base, "/healthz").is_ok_and(|(status, _)| status == 200) {
                return (child, base, log);
            }
            thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        last_log = std::fs::read_to_string(&log).unwrap_or_default();
    }
    panic!("{} did not start:\n{last_log}", binary.display());
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP answer, as the tests look at it.
#[derive(Clone)]
pub struct Answer {
    pub status: u16,
    pub retry_after: Option<String>,
    pub replayed: bool,
    pub body: Vec<u8>,
}

impl Answer {
    /// The wait its `Retry-After` header asks for (whole seconds), if any.
    pub fn retry_after_delay(&self) -> Option<Duration> {
        let seconds = self.retry_after.as_deref()?.parse().ok()?;
        Some(Duration::from_secs(seconds))
    }
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} retry-after={:?} replayed={} {}",
            self.status,
            self.retry_after,
            self.replayed,
            String::from_utf8_lossy(&self.body)
        )
    }
}

pub fn agent() -> ureq::Agent {
    agent_within(Duration::from_secs(30))
}

/// A client that takes any status as an answer, follows no redirect and
/// gives up on a request after `timeout`.
pub fn agent_within(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .timeout_global(Some(timeout))
        .build()
        .into()
}

/// `POST /callbacks/pay`.
pub fn send(
    agent: &ureq::Agent,
    base: &str,
    key: Option<&str>,
    body: &str,
) -> Result<Answer, String> {
    let mut request = agent
        .post(format!("{base}/callbacks/pay"))
        .header("content-type", "application/json");
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    let response = request.send(body).map_err(|error| error.to_string())?;
    answer_of(response)
}

/// What the tests look at in `response`: status, `Retry-After`,
/// `Idempotent-Replayed` and the body.
pub fn answer_of(response: ureq::http::Response<ureq::Body>) -> Result<Answer, String> {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_string)
    };
    let status = response.status().as_u16();
    let retry_after = header("retry-after");
    let replayed = header("idempotent-replayed").as_deref() == Some("true");
    let body = response
        .into_body()
        .read_to_vec()
        .map_err(|error| error.to_string())?;
    Ok(Answer {
        status,
        retry_after,
        replayed,
        body,
    })
}

pub fn try_post(base: &str, key: Option<&str>, body: &str) -> Result<Answer, String> {
    send(&agent(), base, key, body)
}

pub fn post(server: &Server, key: Option<&str>, body: &str) -> Answer {
    try_post(&server.base, key, body).unwrap_or_else(|error| {
        panic!(
            "POST {}/callbacks/pay: {error}\n{}",
            server.base,
            server.log_text()
        )
    })
}

/// `GET path`: status and body.
pub fn get(base: &str, path: &str) -> Result<(u16, String), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .timeout_global(Some(Duration::from_secs(5)))
        .build()
        .into();
    let response = agent
        .get(format!("{base}{path}"))
        .call()
        .map_err(|error| error.to_string())?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .read_to_string()
        .map_err(|error| error.to_string())?;
    Ok((status, body))
}

/// `count` copies of one request, spread over `servers`, released together
/// from one barrier; their answers.
pub fn burst(servers: &[Server], count: usize, key: &str, body: &str) -> Vec<Answer> {
    let barrier = Arc::new(Barrier::new(count));
    let clients: Vec<_> = (0..count)
        .map(|i| {
            let base = servers[i % servers.len()].base.clone();
            let (barrier, key, body) = (barrier.clone(), key.to_string(), body.to_string());
            thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    let agent = agent();
                    barrier.wait();
                    send(&agent, &base, Some(&key), &body)
                })
                .unwrap()
        })
        .collect();
    clients
        .into_iter()
        .map(|client| {
            client
                .join()
                .expect("client thread")
                .unwrap_or_else(|error| panic!("a burst request failed: {error}"))
        })
        .collect()
}

/// `idempotency_first_attempts_total` summed over `servers`: how often the
/// business step ran.
pub fn first_attempts(servers: &[Server]) -> i64 {
    servers
        .iter()
        .map(|server| {
            let (_, text) = get(&server.base, "/metrics").expect("metrics");
            text.lines()
                .filter(|line| line.starts_with("idempotency_first_attempts_total{"))
                .filter_map(|line| line.rsplit(' ').next()?.parse::<i64>().ok())
                .sum::<i64>()
        })
        .sum()
}

/// `count` unpaid orders of 100, `{prefix}-0` to `{prefix}-{count - 1}`, in
/// one PostgreSQL statement; for each a fresh key and its callback body.
pub fn seed_pg_payments(db: &Database, prefix: &str, count: usize) -> (Vec<String>, Vec<String>) {
    db.exec(&format!(
        "INSERT INTO orders (order_no, amount) SELECT '{prefix}-' || n, 100 FROM generate_series(0, {}) AS n",
        count - 1
    ));
    let keys = new_keys(count);
    let bodies = (0..count)
        .map(|payment| callback_body(&format!("{prefix}-{payment}"), 100))
        .collect();
    (keys, bodies)
}

/// Waits until `answered` reaches `count`: a third of a burst in, when the
/// fault lands. Two minutes after `started` the burst counts as stalled.
pub fn wait_for_answers(answered: &std::sync::atomic::AtomicUsize, count: usize, started: Instant) {
    while answered.load(Ordering::Relaxed) < count {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the burst stalled"
        );
        thread::sleep(Duration::from_millis(5));
    }
}

/// `order_no|count` rows (psql's unaligned output) by order.
pub fn paid_counts(rows: &str) -> std::collections::BTreeMap<String, i64> {
    rows.lines()
        .filter_map(|line| {
            let (order, count) = line.split_once('|')?;
            Some((order.to_string(), count.parse().ok()?))
        })
        .collect()
}

/// What `command` printed, trimmed; `None` when it could not run or
/// failed.
pub fn output_if_ok(command: &mut Command) -> Option<String> {
    let output = command.output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// A callback for `order` and a fresh key for it.
pub fn callback(order: &str, amount: i64) -> (String, String) {
    (new_key(), callback_body(order, amount))
}

pub fn callback_body(order: &str, amount: i64) -> String {
    format!(
        r#"{{"txn_id":"TXN-{order}","order_no":"{order}","amount":{amount},"date":"20240615"}}"#
    )
}

/// `pay:{date}:{uuid}` with a random UUID v4.
pub fn new_key() -> String {
    new_keys(1).remove(0)
}

/// `count` keys from one read of the system's CSPRNG.
pub fn new_keys(count: usize) -> Vec<String> {
    let mut random = vec![0u8; 16 * count];
    File::open("/dev/urandom")
        .and_then(|mut source| source.read_exact(&mut random))
        .expect("/dev/urandom");
    random
        .chunks_exact(16)
        .map(|chunk| key_from(chunk.try_into().unwrap()))
        .collect()
}

fn key_from(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "pay:20240615:{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

pub fn unique_order_no() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("ORD-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

pub fn now_ms() -> i64 {
    i64::try_from(now_nanos() / 1_000_000).unwrap()
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// Sleeps until the wall clock (the servers' clock too) reads `unix_ms`.
pub fn sleep_until(unix_ms: i64) {
    let wait = unix_ms - now_ms();
    if wait > 0 {
        thread::sleep(Duration::from_millis(wait.unsigned_abs()));
    }
}
