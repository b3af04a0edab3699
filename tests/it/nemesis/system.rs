//! The system under test: the ledger service built per dialect, a
//! database of its own per history (SQL through the dialect's
//! command-line client), service processes, the downstream sink, and the
//! HTTP client the workload uses.

pub use crate::support::build::Dialect;
use crate::support::build::copy_aside;
use crate::support::exactly_once::{
    Answer, agent_within, answer_of, output_if_ok, run_client, start_healthy,
};
pub use crate::support::root;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Where Debian's `faketime` package puts the library.
pub const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// Builds the ledger example for `dialect` into `target/nemesis` (one
/// target directory for every dialect, so their common dependencies are
/// built once) and copies the binary aside, since the next dialect's
/// build writes the same path.
pub fn ledger_binary(dialect: Dialect) -> PathBuf {
    static BUILD: Mutex<()> = Mutex::new(());
    let _one_build_at_a_time = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    let target = root().join("target/nemesis");
    let out = target.join("bin");
    std::fs::create_dir_all(&out).unwrap();
    let started = Instant::now();
    let output = Command::new(env!("CARGO"))
        .args(["build", "--example", "ledger", "-p", "idemgen-runtime"])
        .args(["--no-default-features", "--features", dialect.feature()])
        .current_dir(root())
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("DATABASE_URL")
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "building the ledger example for {dialect:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!(
        "nemesis: ledger service for {dialect:?} built in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    copy_aside(
        &target.join("debug/examples/ledger"),
        &out,
        &format!("ledger-{}", dialect.feature()),
    )
}

use crate::support::server_url;
use server_url::ServerUrl;

/// The record table is the one `idemgen ddl` writes, as the example's
/// migrations; the ledger is this service's business table.
const SQLITE_RECORDS: &str = concat!(
    include_str!(
        "../../../examples/payment-callback/migrations/sqlite/0001_idempotency_records.sql"
    ),
    include_str!(
        "../../../examples/payment-callback/migrations/sqlite/20261204000000_record_response_headers.sql"
    ),
    include_str!(
        "../../../examples/payment-callback/migrations/sqlite/20261205000000_record_in_progress.sql"
    ),
);
const MYSQL_RECORDS: &str = concat!(
    include_str!(
        "../../../examples/payment-callback/migrations/mysql/0001_idempotency_records.sql"
    ),
    include_str!(
        "../../../examples/payment-callback/migrations/mysql/20261204000000_record_response_headers.sql"
    ),
    include_str!(
        "../../../examples/payment-callback/migrations/mysql/20261205000000_record_in_progress.sql"
    ),
);
const POSTGRES_RECORDS: &str = concat!(
    include_str!(
        "../../../examples/payment-callback/migrations/postgres/0001_idempotency_records.sql"
    ),
    include_str!(
        "../../../examples/payment-callback/migrations/postgres/20261204000000_record_response_headers.sql"
    ),
    include_str!(
        "../../../examples/payment-callback/migrations/postgres/20261205000000_record_in_progress.sql"
    ),
);

const SQLITE_LEDGER: &str = "
CREATE TABLE ledger (
    id INTEGER PRIMARY KEY,
    idem_key TEXT NOT NULL,
    nonce TEXT NOT NULL,
    amount INTEGER NOT NULL,
    receipt TEXT NOT NULL,
    instance TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    body TEXT NOT NULL
);";

const MYSQL_LEDGER: &str = "
CREATE TABLE ledger (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    idem_key VARCHAR(128) NOT NULL,
    nonce VARCHAR(64) NOT NULL,
    amount BIGINT NOT NULL,
    receipt CHAR(36) NOT NULL,
    instance VARCHAR(32) NOT NULL,
    at_ms BIGINT NOT NULL,
    body TEXT NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;";

const POSTGRES_LEDGER: &str = "
CREATE TABLE ledger (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    idem_key VARCHAR(128) NOT NULL,
    nonce VARCHAR(64) NOT NULL,
    amount BIGINT NOT NULL,
    receipt VARCHAR(36) NOT NULL,
    instance VARCHAR(32) NOT NULL,
    at_ms BIGINT NOT NULL,
    body TEXT NOT NULL
);";

/// A database of its own for one history, with the record table and the
/// ledger; dropped with it unless [`Database::keep`] was called.
pub struct Database {
    pub dialect: Dialect,
    /// What the service gets as `DATABASE_URL`.
    pub url: String,
    pub name: String,
    server_url: Option<String>,
    server: Option<ServerUrl>,
    sqlite_file: PathBuf,
    /// The SQLite file, service logs and client errors.
    pub dir: tempfile::TempDir,
    keep: AtomicBool,
}

impl Database {
    /// `server_url`: the dialect's base URL (`None` for SQLite).
    pub fn create(dialect: Dialect, server_url: Option<&str>, seed: u64) -> Database {
        let dir = tempfile::Builder::new()
            .prefix("idemgen-nemesis-")
            .tempdir()
            .unwrap();
        let name = format!("nemesis_{}_{seed}", std::process::id());
        let sqlite_file = dir.path().join("ledger.db");
        let (server, url) = server_url::locate(server_url, &name, &sqlite_file);
        let database = Database {
            dialect,
            url,
            name,
            server_url: server_url.map(str::to_string),
            server,
            sqlite_file,
            dir,
            keep: AtomicBool::new(false),
        };
        match dialect {
            Dialect::Sqlite => database.exec(&format!(
                "PRAGMA journal_mode = WAL;\n{SQLITE_RECORDS}{SQLITE_LEDGER}"
            )),
            Dialect::Mysql => {
                database.admin(&format!("CREATE DATABASE {}", database.name));
                database.exec(&format!("{MYSQL_RECORDS}{MYSQL_LEDGER}"));
            }
            Dialect::Postgres => {
                database.admin(&format!("CREATE DATABASE {}", database.name));
                database.exec(&format!("{POSTGRES_RECORDS}{POSTGRES_LEDGER}"));
            }
        }
        database
    }

    /// Leaves the database in place for a look at a failing history.
    pub fn keep(&self) {
        self.keep.store(true, Ordering::Relaxed);
    }

    /// Runs `sql` in the history's database; its output (tab-separated
    /// rows), trimmed.
    pub fn query(&self, sql: &str) -> String {
        run_client(self.sql_command(true, sql), sql)
    }

    pub fn exec(&self, sql: &str) {
        self.query(sql);
    }

    /// Runs `sql` on the server outside the history's database.
    pub fn admin(&self, sql: &str) -> String {
        run_client(self.sql_command(false, sql), sql)
    }

    fn sql_command(&self, in_database: bool, sql: &str) -> Command {
        let mut command = self.client(in_database);
        match self.dialect {
            // SQL after the file name.
            Dialect::Sqlite => command.arg(sql),
            Dialect::Mysql => command.args(["-e", sql]),
            Dialect::Postgres => command.args(["-c", sql]),
        };
        command
    }

    /// A session of its own fed `script` on standard input, left running
    /// (it holds a lock while it sleeps); kill it to end it early.
    pub fn spawn_session(&self, script: &str) -> Child {
        let errors = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("sessions.log"))
            .unwrap();
        let mut child = self
            .client(true)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(errors)
            .spawn()
            .expect("the database client runs");
        let mut stdin = child.stdin.take().unwrap();
        let script = script.to_string();
        // Written from a thread: the client reads it while it runs.
        thread::spawn(move || {
            let _ = stdin.write_all(script.as_bytes());
        });
        child
    }

    fn client(&self, in_database: bool) -> Command {
        match (self.dialect, &self.server) {
            (Dialect::Mysql, Some(server)) => {
                let mut command = server.mysql_command();
                if in_database {
                    command.arg(&self.name);
                }
                command
            }
            (Dialect::Postgres, Some(server)) => {
                let mut command = Command::new("psql");
                let url = if in_database {
                    server.with_database(&self.name)
                } else {
                    self.server_url.clone().unwrap()
                };
                command.arg(url).args([
                    "-X",
                    "-A",
                    "-t",
                    "-q",
                    "-F",
                    "\t",
                    "-v",
                    "ON_ERROR_STOP=1",
                ]);
                command
            }
            _ => {
                let mut command = Command::new("sqlite3");
                command
                    .args(["-bail", "-batch", "-separator", "\t", "-cmd"])
                    .arg(".timeout 10000")
                    .arg(&self.sqlite_file);
                command
            }
        }
    }

    /// The server's `host:port`, for a proxy in front of it (`None` for
    /// SQLite).
    pub fn server_addr(&self) -> Option<String> {
        let server = self.server.as_ref()?;
        let default = match self.dialect {
            Dialect::Postgres => "5432",
            _ => "3306",
        };
        Some(format!(
            "{}:{}",
            server.host,
            server.port.as_deref().unwrap_or(default)
        ))
    }

    /// This database through a proxy on `port` of loopback.
    pub fn url_via(&self, port: u16) -> String {
        let mut server = self.server.clone().expect("a database server");
        server.host = "127.0.0.1".into();
        server.port = Some(port.to_string());
        server.with_database(&self.name)
    }

    /// This database on another node of the same cluster (Galera), whose
    /// base URL is `server_url`.
    pub fn url_on(&self, server_url: &str) -> String {
        ServerUrl::parse(server_url).with_database(&self.name)
    }

    /// Ends every connection of the service to the history's database
    /// (`KILL CONNECTION`, `pg_terminate_backend`); how many. `nodes`:
    /// the base URLs of a cluster's nodes, each with its own connections.
    pub fn kill_connections(&self, nodes: &[String]) -> usize {
        match self.dialect {
            Dialect::Mysql if !nodes.is_empty() => nodes
                .iter()
                .map(|node| self.kill_mysql_connections(&mysql_client(&ServerUrl::parse(node))))
                .sum(),
            Dialect::Mysql => {
                let server = self.server.as_ref().expect("a MariaDB server");
                self.kill_mysql_connections(&mysql_client(server))
            }
            Dialect::Postgres => {
                let killed = self.admin(&format!(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE datname = '{}' AND pid <> pg_backend_pid()",
                    self.name
                ));
                killed.parse().unwrap_or(0)
            }
            Dialect::Sqlite => 0,
        }
    }

    fn kill_mysql_connections(&self, client: &dyn Fn() -> Command) -> usize {
        let listed = client()
            .arg("-e")
            .arg(format!(
                "SELECT id FROM information_schema.processlist \
                 WHERE db = '{}' AND id <> CONNECTION_ID()",
                self.name
            ))
            .output();
        // A node that is down or cut off has no connection to kill.
        let Ok(listed) = listed else { return 0 };
        let ids = String::from_utf8_lossy(&listed.stdout).to_string();
        let ids: Vec<&str> = ids.split_whitespace().collect();
        if ids.is_empty() {
            return 0;
        }
        let kills: String = ids
            .iter()
            .map(|id| format!("KILL CONNECTION {id};"))
            .collect();
        // One may have ended by itself meanwhile: the others still go.
        let _ = client().args(["--force", "-e", &kills]).output();
        ids.len()
    }
}

/// The `mysql` client for `server`, outside any database.
fn mysql_client(server: &ServerUrl) -> impl Fn() -> Command + use<> {
    let server = server.clone();
    move || server.mysql_command()
}

/// Runs `sql` on the MariaDB server at `server_url` (a Galera node);
/// its output, or `None` if the node refused or is down.
pub fn mysql_on(server_url: &str, sql: &str) -> Option<String> {
    output_if_ok(
        ServerUrl::parse(server_url)
            .mysql_command()
            .args(["-e", sql]),
    )
}

impl Drop for Database {
    fn drop(&mut self) {
        if self.keep.load(Ordering::Relaxed) {
            eprintln!(
                "nemesis: kept the database {} ({})",
                self.name,
                self.dir.path().display()
            );
            self.dir.disable_cleanup(true);
            return;
        }
        let drop = match self.dialect {
            Dialect::Sqlite => return,
            Dialect::Mysql => format!("DROP DATABASE IF EXISTS {}", self.name),
            Dialect::Postgres => format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        };
        let _ = self.sql_command(false, &drop).output();
    }
}

/// One instance of the service: a process on a free loopback port,
/// SIGKILLed when dropped.
pub struct Instance {
    child: Child,
    pub base: String,
    pub name: String,
    log: PathBuf,
}

impl Instance {
    pub fn start(binary: &Path, db: &Database, name: &str, env: &[(String, String)]) -> Instance {
        let (child, base, log) = start_healthy(binary, db.dir.path(), name, |command| {
            command
                .env("DATABASE_URL", &db.url)
                .env("INSTANCE", name)
                .env("RUST_LOG", "warn");
            for (variable, value) in env {
                command.env(variable, value);
            }
        });
        Instance {
            child,
            base,
            name: name.to_string(),
            log,
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().is_ok_and(|status| status.is_none())
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn healthy(base: &str) -> bool {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .timeout_global(Some(Duration::from_secs(2)))
        .build()
        .into();
    agent
        .get(format!("{base}/healthz"))
        .call()
        .is_ok_and(|response| response.status().as_u16() == 200)
}

/// One call the sink received.
#[derive(Debug, Clone)]
pub struct SinkCall {
    pub at: Instant,
    /// When the call stopped being outstanding for its caller: the sink
    /// answered, or the caller hung up first (an attempt cut off at its
    /// lease, or dropped with its request).
    pub ended: Instant,
    pub downstream: String,
    pub key: String,
    pub nonce: String,
    pub instance: String,
}

/// The downstream service: records every `POST /charge` with the
/// downstream key it was given, and while stalled answers each call only
/// after `stall_ms` (a slow provider, past the service's lease).
pub struct Sink {
    pub addr: String,
    calls: Arc<Mutex<Vec<SinkCall>>>,
    stall_ms: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Sink {
    pub fn start() -> Sink {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let stall_ms = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        {
            let (calls, stall_ms, stop) = (calls.clone(), stall_ms.clone(), stop.clone());
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let (calls, stall_ms) = (calls.clone(), stall_ms.clone());
                    thread::Builder::new()
                        .stack_size(128 * 1024)
                        .spawn(move || serve_charge(stream, &calls, &stall_ms))
                        .unwrap();
                }
            });
        }
        Sink {
            addr,
            calls,
            stall_ms,
            stop,
        }
    }

    pub fn stall(&self, millis: u64) {
        self.stall_ms.store(millis, Ordering::Relaxed);
    }

    pub fn calls(&self) -> Vec<SinkCall> {
        self.calls.lock().unwrap().clone()
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(&self.addr);
    }
}

fn serve_charge(stream: TcpStream, calls: &Mutex<Vec<SinkCall>>, stall_ms: &AtomicU64) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(stream) => stream,
        Err(_) => return,
    });
    let mut length = 0;
    let mut downstream = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "idempotency-key" => downstream = value.trim().to_string(),
                _ => {}
            }
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let payload: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let field = |name: &str| payload[name].as_str().unwrap_or_default().to_string();
    // Recorded on arrival: a real provider may have charged even if its
    // answer never arrives.
    let at = Instant::now();
    let index = {
        let mut calls = calls.lock().unwrap();
        calls.push(SinkCall {
            at,
            ended: at,
            downstream,
            key: field("key"),
            nonce: field("nonce"),
            instance: field("instance"),
        });
        calls.len() - 1
    };
    let stall = Duration::from_millis(stall_ms.load(Ordering::Relaxed));
    let mut hung_up = None;
    if !stall.is_zero() {
        // The stall, cut short by the caller hanging up: it sends nothing
        // more, so the read returns early only at its end of the stream.
        let _ = stream.set_read_timeout(Some(stall));
        let mut rest = [0u8; 1];
        match reader.get_mut().read(&mut rest) {
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                thread::sleep(stall.saturating_sub(at.elapsed()));
            }
            Ok(0) | Err(_) => hung_up = Some(Instant::now()),
            Ok(_) => thread::sleep(stall.saturating_sub(at.elapsed())),
        }
    }
    // Before the answer leaves: its caller cannot see it any earlier.
    calls.lock().unwrap()[index].ended = hung_up.unwrap_or_else(Instant::now);
    let mut stream = stream;
    let _ =
        stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
}

/// What one request got.
#[derive(Debug, Clone)]
pub enum Outcome {
    Answer {
        status: u16,
        retry_after: Option<String>,
        replayed: bool,
        body: Vec<u8>,
    },
    /// The client hung up on purpose before an answer.
    Disconnected,
    /// No answer and no intent to hang up: a transport error.
    Failed(String),
}

/// `POST /transfers` with `key` and `body`, given up after `timeout`.
pub fn send(base: &str, key: &str, body: &str, timeout: Duration) -> Result<Outcome, String> {
    let response = agent_within(timeout)
        .post(format!("{base}/transfers"))
        .header("content-type", "application/json")
        .header("Idempotency-Key", key)
        .send(body)
        .map_err(|error| error.to_string())?;
    let Answer {
        status,
        retry_after,
        replayed,
        body,
    } = answer_of(response)?;
    Ok(Outcome::Answer {
        status,
        retry_after,
        replayed,
        body,
    })
}

/// A TCP proxy on loopback between one instance and its database server.
/// Cut, it resets every connection through it and closes new ones at
/// once: the instance is partitioned away from its database, which the
/// others still reach. Healed, it forwards again, each new connection
/// after [`Proxy::slow_connects`] (a network that is slow to connect).
pub struct Proxy {
    pub port: u16,
    cut: Arc<AtomicBool>,
    connect_delay_ms: Arc<AtomicU64>,
    open: Arc<Mutex<Vec<TcpStream>>>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    /// Forwards to `upstream` (`host:port`).
    pub fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let connect_delay_ms = Arc::new(AtomicU64::new(0));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let upstream = upstream.to_string();
        {
            let (cut, delay, open, stop) = (
                cut.clone(),
                connect_delay_ms.clone(),
                open.clone(),
                stop.clone(),
            );
            thread::spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let Ok(client) = client else { continue };
                    let (cut, open, upstream) = (cut.clone(), open.clone(), upstream.clone());
                    let delay = Duration::from_millis(delay.load(Ordering::Relaxed));
                    thread::Builder::new()
                        .stack_size(64 * 1024)
                        .spawn(move || {
                            thread::sleep(delay);
                            if !cut.load(Ordering::Relaxed) {
                                forward(client, &upstream, &open);
                            }
                        })
                        .unwrap();
                }
            });
        }
        Proxy {
            port,
            cut,
            connect_delay_ms,
            open,
            stop,
        }
    }

    pub fn cut(&self) {
        self.cut.store(true, Ordering::Relaxed);
        for stream in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    pub fn heal(&self) {
        self.cut.store(false, Ordering::Relaxed);
    }

    /// New connections are forwarded only after `millis`.
    pub fn slow_connects(&self, millis: u64) {
        self.connect_delay_ms.store(millis, Ordering::Relaxed);
    }
}

/// Connects `client` to `upstream` and copies both ways until either
/// side closes (or a cut shuts both down).
fn forward(client: TcpStream, upstream: &str, open: &Mutex<Vec<TcpStream>>) {
    let Ok(server) = TcpStream::connect(upstream) else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let mut open = open.lock().unwrap();
    // Connections that ended are dropped from the list.
    open.retain(|stream| stream.peer_addr().is_ok());
    for (from, to) in [(&client, &server), (&server, &client)] {
        let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else {
            continue;
        };
        thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                let _ = std::io::copy(&mut from, &mut to);
                let _ = to.shutdown(std::net::Shutdown::Both);
                let _ = from.shutdown(std::net::Shutdown::Both);
            })
            .unwrap();
    }
    open.push(client);
    open.push(server);
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.cut();
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}
