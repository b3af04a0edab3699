//! The client topology of the fault suite: the half of the contract the
//! caller keeps. Payer processes built on the client `idemgen gen
//! --client` generates from the ledger's spec (`ledger.yaml`; the program
//! is `tests/support/ledger_payer.rs`) pay transfers through a load
//! balancer that misbehaves, into three instances of the ledger service
//! with their database's connections killed now and then. The payers are
//! SIGKILLed mid-call and restarted, some only after their keys' windows
//! have closed, and resume from their durable key stores.
//!
//! The balancer resets a connection after forwarding the request (the
//! service runs it, the client hears nothing), drops answers, holds
//! requests past the client's timeout before forwarding them (a late
//! attempt), and answers 503 bursts itself.
//!
//! The checker proves on each history: every transfer was booked at most
//! once, with the key its payer stored before the first send; every call
//! that returned success has exactly one booking, whose receipt it got;
//! every call that gave up, found its window closed or was killed is
//! reconciled to one booking or to none, and none was booked after the
//! window; no attempt reached the balancer after its key's latest start
//! (`window - max-processing` after its first send); no key was sent with
//! two bodies; every payer finished.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::rng::Rng;
use super::system::{Database, Dialect, Instance, Sink};
use crate::support::build::{DirLock, root, target_dir};
use crate::support::client::build_program;

/// The ledger's `window` and `server.max-processing` (`ledger.yaml`), which
/// the instances are started with.
pub const WINDOW_MS: u64 = 7_000;
pub const LEASE_MS: u64 = 1_500;
/// `client.timeout`.
const TIMEOUT_MS: u64 = 1_000;
/// The latest an attempt may start after its key's first send.
const LATEST_START_MS: u64 = WINDOW_MS - LEASE_MS;
/// How late (ms) a request may reach the balancer past the payer's bound:
/// the time between the client's check and the bytes arriving.
const SLACK_MS: u64 = 300;
const INSTANCES: usize = 3;
const PAYERS: usize = 4;
const TRANSFERS_PER_PAYER: usize = 12;
/// A history that has not finished by then has a payer stuck.
const HISTORY_LIMIT: Duration = Duration::from_secs(90);

/// The payer program, built once per process (under a lock between
/// processes) against the client generated from `ledger.yaml`.
pub fn payer() -> PathBuf {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut built = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(path) = &*built {
        return path.clone();
    }
    let dir = target_dir().join("ledger-client");
    std::fs::create_dir_all(&dir).unwrap();
    let _lock = DirLock::acquire(&dir.join(".build.lock"));
    let spec = root().join("tests/it/nemesis/ledger.yaml");
    let client = dir.join("ledger-client");
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(["gen", spec.to_str().unwrap(), "--client", "-o"])
        .arg(&client)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "idemgen gen --client ledger.yaml: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let path = build_program(
        &dir.join("payer"),
        "[package]\nname = \"ledger-payer\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
         [workspace]\n\n[dependencies]\n\
         ledger-client = { path = \"../ledger-client\", default-features = false }\n\
         serde_json = \"1\"\n\
         tokio = { version = \"1\", features = [\"rt\", \"time\"] }\n",
        include_str!("../../support/ledger_payer.rs"),
        "ledger-payer",
    );
    *built = Some(path.clone());
    path
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

/// What the balancer does with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    None,
    /// Forwarded; the client's connection closed before any answer.
    ResetAfterSend,
    /// Forwarded and answered; the answer never reaches the client.
    DropAnswer,
    /// Held past the client's timeout, then forwarded.
    Delay,
    /// Answered 503 with `Retry-After: 1` by the balancer.
    Unavailable,
}

impl Fault {
    pub fn name(self) -> &'static str {
        match self {
            Fault::None => "none",
            Fault::ResetAfterSend => "reset after send",
            Fault::DropAnswer => "answer dropped",
            Fault::Delay => "held past the timeout",
            Fault::Unavailable => "503 burst",
        }
    }
}

/// One request the balancer saw.
#[derive(Debug, Clone)]
struct Seen {
    unix_ms: u64,
    key: String,
    body: String,
    fault: Fault,
}

/// A load balancer on loopback in front of the instances, misbehaving as
/// its seeded dice say.
struct Balancer {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Until when (Unix ms) every request is answered 503.
    unavailable_until: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    port: u16,
}

impl Balancer {
    fn start(upstreams: Vec<String>, seed: u64) -> Balancer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let unavailable_until = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let dice = Arc::new(Mutex::new(Rng::new(seed)));
        let next = Arc::new(AtomicUsize::new(0));
        {
            let (seen, until, stop) = (seen.clone(), unavailable_until.clone(), stop.clone());
            let upstreams = Arc::new(upstreams);
            thread::spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let Ok(client) = client else { continue };
                    let (seen, until, dice, next, upstreams) = (
                        seen.clone(),
                        until.clone(),
                        dice.clone(),
                        next.clone(),
                        upstreams.clone(),
                    );
                    thread::Builder::new()
                        .stack_size(256 * 1024)
                        .spawn(move || {
                            let upstream =
                                &upstreams[next.fetch_add(1, Ordering::Relaxed) % upstreams.len()];
                            serve(client, upstream, &seen, &until, &dice);
                        })
                        .unwrap();
                }
            });
        }
        Balancer {
            base: format!("http://127.0.0.1:{port}"),
            seen,
            unavailable_until,
            stop,
            port,
        }
    }

    fn unavailable_for(&self, millis: u64) {
        self.unavailable_until
            .store(now_ms() + millis, Ordering::Relaxed);
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Reads one request (head and `content-length` body); `None` when the
/// client closed the connection.
fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let length = header(&head, "content-length")
        .and_then(|value| value.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).ok()?;
    Some((head, body))
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (found, value) = line.split_once(':')?;
        found.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// Serves one client connection: one request, whose answer (the
/// upstream's, which says `connection: close`) ends it.
fn serve(
    mut client: TcpStream,
    upstream: &str,
    seen: &Mutex<Vec<Seen>>,
    unavailable_until: &AtomicU64,
    dice: &Mutex<Rng>,
) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(30)));
    let Some((head, body)) = read_request(&mut client) else {
        return;
    };
    let arrived = now_ms();
    let fault = if arrived < unavailable_until.load(Ordering::Relaxed) {
        Fault::Unavailable
    } else {
        let roll = dice.lock().unwrap().range(0, 100);
        match roll {
            0..=7 => Fault::ResetAfterSend,
            8..=15 => Fault::DropAnswer,
            16..=21 => Fault::Delay,
            _ => Fault::None,
        }
    };
    seen.lock().unwrap().push(Seen {
        unix_ms: arrived,
        key: header(&head, "idempotency-key").unwrap_or("").to_string(),
        body: String::from_utf8_lossy(&body).into_owned(),
        fault,
    });
    if fault == Fault::Unavailable {
        let _ = client.write_all(
            b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        );
        let _ = client.shutdown(Shutdown::Both);
        return;
    }
    if fault == Fault::Delay {
        let hold = TIMEOUT_MS + dice.lock().unwrap().range(100, 400);
        thread::sleep(Duration::from_millis(hold));
    }
    // One upstream connection a request, closed after the answer.
    let forwarded = {
        let mut lines: Vec<&str> = head
            .trim_end()
            .lines()
            .filter(|line| {
                !line
                    .split_once(':')
                    .is_some_and(|(name, _)| name.trim().eq_ignore_ascii_case("connection"))
            })
            .collect();
        lines.push("connection: close");
        let mut bytes = (lines.join("\r\n") + "\r\n\r\n").into_bytes();
        bytes.extend_from_slice(&body);
        bytes
    };
    let Ok(mut server) = TcpStream::connect(upstream) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    if server.write_all(&forwarded).is_err() {
        let _ = client.shutdown(Shutdown::Both);
        return;
    }
    if fault == Fault::ResetAfterSend {
        // The request is on its way; the client hears nothing. The
        // service goes on (it finishes requests whose client left).
        thread::sleep(Duration::from_millis(20));
        let _ = client.shutdown(Shutdown::Both);
        let mut answer = Vec::new();
        let _ = server.read_to_end(&mut answer);
        return;
    }
    let _ = server.set_read_timeout(Some(Duration::from_secs(30)));
    let mut answer = Vec::new();
    let _ = server.read_to_end(&mut answer);
    if fault == Fault::DropAnswer || answer.is_empty() {
        let _ = client.shutdown(Shutdown::Both);
        return;
    }
    if client.write_all(&answer).is_err() {
        return;
    }
    // The upstream said `connection: close`; so does this answer.
    let _ = client.shutdown(Shutdown::Both);
}

/// A payer process: its plan, its store, and the process while it runs.
struct Payer {
    plan: PathBuf,
    store: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    /// When a killed payer starts again.
    restart_at: Option<Instant>,
    done: bool,
    starts: usize,
}

impl Payer {
    fn spawn(&mut self, program: &Path, base: &str) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        self.child = Some(
            Command::new(program)
                .arg(base)
                .arg(&self.plan)
                .arg(&self.store)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap(),
        );
        self.starts += 1;
    }
}

impl Drop for Payer {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What one history did, for the summary.
#[derive(Debug, Default)]
pub struct Tally {
    pub histories: usize,
    pub calls: usize,
    pub attempts: usize,
    pub kills: usize,
    pub resumes: usize,
    pub faults: BTreeMap<&'static str, usize>,
    pub outcomes: BTreeMap<String, usize>,
    /// Calls that gave up, found the window closed or were cut short,
    /// reconciled against the ledger: booked once, or not at all.
    pub reconciled_booked: usize,
    pub reconciled_none: usize,
    pub database_kills: usize,
    pub violations: usize,
}

/// Runs one history; its violations (empty when it kept every promise).
pub fn run(
    seed: u64,
    dialect: Dialect,
    server_url: Option<&str>,
    ledger: &Path,
    program: &Path,
    tally: &mut Tally,
) -> Vec<String> {
    let started = Instant::now();
    let mut rng = Rng::new(seed);
    let db = Database::create(dialect, server_url, seed);
    let sink = Sink::start();
    let instances: Vec<Instance> = (0..INSTANCES)
        .map(|i| {
            let env: Vec<(String, String)> = vec![
                ("SINK_ADDR".into(), sink.addr.clone()),
                ("WINDOW_MS".into(), WINDOW_MS.to_string()),
                ("LEASE_MS".into(), LEASE_MS.to_string()),
                // Expired records go: a late attempt would be booked again.
                ("PURGE_INTERVAL_SECS".into(), "1".into()),
                ("LOCK_TIMEOUT_MS".into(), "1000".into()),
            ];
            Instance::start(ledger, &db, &format!("c{i}"), &env)
        })
        .collect();
    let balancer = Balancer::start(
        instances
            .iter()
            .map(|instance| instance.base.trim_start_matches("http://").to_string())
            .collect(),
        seed,
    );
    let mut payers: Vec<Payer> = (0..PAYERS)
        .map(|p| {
            let plan = db.dir.path().join(format!("payer{p}.plan"));
            let lines: Vec<String> = (0..TRANSFERS_PER_PAYER)
                .map(|t| {
                    format!(
                        "s{seed}-p{p}-t{t} {} {}",
                        rng.range(1, 1_000),
                        rng.range(0, 700)
                    )
                })
                .collect();
            std::fs::write(&plan, lines.join("\n") + "\n").unwrap();
            Payer {
                plan,
                store: db.dir.path().join(format!("payer{p}.store")),
                log: db.dir.path().join(format!("payer{p}.log")),
                child: None,
                restart_at: None,
                done: false,
                starts: 0,
            }
        })
        .collect();
    for payer in &mut payers {
        payer.spawn(program, &balancer.base);
    }
    // The nemesis's plan: payer kills (a third of them paused past the
    // window), 503 bursts, database connections killed.
    let mut kills: Vec<(Duration, usize, Duration)> = (0..rng.range(4, 9))
        .map(|_| {
            let at = Duration::from_millis(rng.range(200, 8_000));
            let pause = match rng.range(0, 3) {
                0 => Duration::from_millis(rng.range(WINDOW_MS, WINDOW_MS + 1_000)),
                _ => Duration::from_millis(rng.range(0, 1_000)),
            };
            (at, rng.range(0, PAYERS as u64) as usize, pause)
        })
        .collect();
    kills.sort();
    let mut bursts: Vec<(Duration, u64)> = (0..rng.range(1, 3))
        .map(|_| {
            (
                Duration::from_millis(rng.range(500, 5_000)),
                rng.range(300, 1_500),
            )
        })
        .collect();
    bursts.sort();
    let mut database_kills: Vec<Duration> = (0..rng.range(2, 5))
        .map(|_| Duration::from_millis(rng.range(300, 8_000)))
        .collect();
    database_kills.sort();
    let mut violations = Vec::new();
    let clock = Instant::now();
    loop {
        let now = clock.elapsed();
        if let Some((at, p, pause)) = kills.first().copied()
            && now >= at
        {
            kills.remove(0);
            let payer = &mut payers[p];
            if let Some(child) = &mut payer.child
                && child.try_wait().is_ok_and(|status| status.is_none())
            {
                let _ = child.kill();
                let _ = child.wait();
                payer.child = None;
                payer.restart_at = Some(Instant::now() + pause);
                tally.kills += 1;
            }
        }
        if let Some((at, millis)) = bursts.first().copied()
            && now >= at
        {
            bursts.remove(0);
            balancer.unavailable_for(millis);
        }
        if let Some(at) = database_kills.first().copied()
            && now >= at
        {
            database_kills.remove(0);
            tally.database_kills += db.kill_connections(&[]);
        }
        for payer in &mut payers {
            if payer.done {
                continue;
            }
            match &mut payer.child {
                Some(child) => {
                    if let Ok(Some(status)) = child.try_wait() {
                        payer.child = None;
                        payer.done = true;
                        if !status.success() {
                            violations.push(format!(
                                "payer {} exited with {status}:\n{}",
                                payer.plan.display(),
                                std::fs::read_to_string(&payer.log).unwrap_or_default()
                            ));
                        }
                    }
                }
                None => {
                    if payer.restart_at.is_some_and(|at| Instant::now() >= at) {
                        payer.restart_at = None;
                        payer.spawn(program, &balancer.base);
                    }
                }
            }
        }
        if payers.iter().all(|payer| payer.done) {
            break;
        }
        if started.elapsed() > HISTORY_LIMIT {
            violations.push(format!(
                "payers still running after {} s",
                HISTORY_LIMIT.as_secs()
            ));
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    // Late attempts still in the balancer or the service get their time
    // before the ledger is read.
    thread::sleep(Duration::from_millis(TIMEOUT_MS + LEASE_MS + 500));
    let ledger_rows = db.query("SELECT idem_key, nonce, receipt, at_ms FROM ledger ORDER BY id");
    let seen = balancer.seen();
    let stores: Vec<String> = payers
        .iter()
        .map(|payer| std::fs::read_to_string(&payer.store).unwrap_or_default())
        .collect();
    violations.extend(check(&stores, &ledger_rows, &seen, tally));
    tally.histories += 1;
    tally.resumes += payers
        .iter()
        .map(|payer| payer.starts.saturating_sub(1))
        .sum::<usize>();
    tally.violations += violations.len();
    if !violations.is_empty() {
        db.keep();
        for instance in &instances {
            let log = instance.log_text();
            let tail: Vec<&str> = log.lines().rev().take(10).collect();
            violations.push(format!(
                "--- log of {} (last lines) ---\n{}",
                instance.name,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
    }
    drop(balancer);
    drop(instances);
    violations
}

/// A transfer's stored key and its outcome, from the payers' stores.
#[derive(Debug, Default, Clone)]
struct Transfer {
    key: Option<String>,
    first_send_unix_ms: u64,
    /// The last outcome line (a payer killed after writing it and before
    /// moving on writes none twice: it skips a transfer with an outcome).
    outcome: Option<serde_json::Value>,
    outcomes: usize,
}

/// The invariants, on what the payers stored, the ledger and the requests
/// the balancer saw.
fn check(stores: &[String], ledger_rows: &str, seen: &[Seen], tally: &mut Tally) -> Vec<String> {
    let mut violations = Vec::new();
    let mut transfers: BTreeMap<String, Transfer> = BTreeMap::new();
    for store in stores {
        for line in store.lines() {
            let Ok(line) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let nonce = line["nonce"].as_str().unwrap_or_default().to_string();
            let transfer = transfers.entry(nonce.clone()).or_default();
            match line["kind"].as_str() {
                Some("prepared") => {
                    if transfer.key.is_some() {
                        violations.push(format!("{nonce}: a second key was prepared"));
                    }
                    transfer.key = line["key"].as_str().map(str::to_string);
                    transfer.first_send_unix_ms = line["first_send_unix_ms"].as_u64().unwrap_or(0);
                }
                _ => {
                    transfer.outcomes += 1;
                    transfer.outcome = Some(line);
                }
            }
        }
    }
    let mut booked: BTreeMap<String, Vec<(String, String, u64)>> = BTreeMap::new();
    for row in ledger_rows.lines().filter(|line| !line.is_empty()) {
        let fields: Vec<&str> = row.split('\t').collect();
        if fields.len() < 4 {
            continue;
        }
        booked.entry(fields[1].to_string()).or_default().push((
            fields[0].to_string(),
            fields[2].to_string(),
            fields[3].parse().unwrap_or(0),
        ));
    }
    let mut keys: BTreeMap<&str, &Transfer> = BTreeMap::new();
    for (nonce, transfer) in &transfers {
        tally.calls += 1;
        let rows = booked.get(nonce).cloned().unwrap_or_default();
        if rows.len() > 1 {
            violations.push(format!("{nonce}: booked {} times: {rows:?}", rows.len()));
        }
        let Some(key) = &transfer.key else {
            violations.push(format!("{nonce}: an outcome without a stored key"));
            continue;
        };
        keys.insert(key, transfer);
        for (row_key, _, _) in &rows {
            if row_key != key {
                violations.push(format!(
                    "{nonce}: booked with key {row_key}, not the stored {key}"
                ));
            }
        }
        let window_end = transfer.first_send_unix_ms + WINDOW_MS;
        for (_, _, at_ms) in &rows {
            if *at_ms > window_end + SLACK_MS {
                violations.push(format!(
                    "{nonce}: booked at {at_ms}, {} ms after its key's window ended",
                    at_ms - window_end
                ));
            }
        }
        let Some(outcome) = &transfer.outcome else {
            violations.push(format!("{nonce}: the payer never finished the transfer"));
            continue;
        };
        if transfer.outcomes > 1 {
            violations.push(format!("{nonce}: {} outcomes", transfer.outcomes));
        }
        let kind = outcome["outcome"].as_str().unwrap_or("?").to_string();
        *tally.outcomes.entry(kind.clone()).or_default() += 1;
        let attempts = outcome["attempts"].as_array().cloned().unwrap_or_default();
        tally.attempts += attempts.len();
        for attempt in &attempts {
            let at = attempt["unix_ms"].as_u64().unwrap_or(0);
            if at > transfer.first_send_unix_ms + LATEST_START_MS + SLACK_MS {
                violations.push(format!(
                    "{nonce}: an attempt started {} ms after the first send, past the latest start {LATEST_START_MS} ms",
                    at - transfer.first_send_unix_ms
                ));
            }
        }
        match kind.as_str() {
            "ok" => {
                if rows.len() != 1 {
                    violations.push(format!(
                        "{nonce}: the call succeeded, and the ledger has {} bookings",
                        rows.len()
                    ));
                } else if outcome["receipt"].as_str() != Some(rows[0].1.as_str()) {
                    violations.push(format!(
                        "{nonce}: the call got receipt {}, the ledger holds {}",
                        outcome["receipt"], rows[0].1
                    ));
                }
            }
            "gave-up" | "window-closed" => {
                match rows.len() {
                    0 => tally.reconciled_none += 1,
                    _ => tally.reconciled_booked += 1,
                }
                let declared = outcome["at_unix_ms"].as_u64().unwrap_or(0);
                for (_, _, at_ms) in &rows {
                    if *at_ms > declared + LEASE_MS + SLACK_MS {
                        violations.push(format!(
                            "{nonce}: booked at {at_ms}, {} ms after the call ended ({kind})",
                            at_ms - declared
                        ));
                    }
                }
                if kind == "gave-up"
                    && outcome["maybe_carried_out"] == false
                    && !rows.is_empty()
                    && !outcome["resumed"].as_bool().unwrap_or(false)
                {
                    violations.push(format!(
                        "{nonce}: the call said nothing was sent, and the ledger has a booking"
                    ));
                }
            }
            other => violations.push(format!("{nonce}: unexpected outcome {other}: {outcome}")),
        }
    }
    let mut bodies: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for request in seen {
        *tally.faults.entry(request.fault.name()).or_default() += 1;
        bodies
            .entry(request.key.as_str())
            .or_default()
            .insert(request.body.as_str());
        let Some(transfer) = keys.get(request.key.as_str()) else {
            violations.push(format!(
                "a request with key {:?}, which no payer stored",
                request.key
            ));
            continue;
        };
        let latest = transfer.first_send_unix_ms + LATEST_START_MS + SLACK_MS;
        if request.unix_ms > latest {
            violations.push(format!(
                "key {}: a request reached the balancer {} ms after the first send, past the latest start {LATEST_START_MS} ms",
                request.key,
                request.unix_ms - transfer.first_send_unix_ms
            ));
        }
    }
    for (key, sent) in bodies {
        if sent.len() > 1 {
            violations.push(format!("key {key} was sent with {} bodies", sent.len()));
        }
    }
    violations
}

/// The checker on hand-made histories: a clean one passes, and each
/// planted fault is found by the invariant it breaks. (No service: runs in
/// every `cargo test`.)
#[test]
fn the_client_checker_finds_each_kind_of_violation() {
    let first = 1_000_000u64;
    let prepared = |nonce: &str, key: &str| {
        format!(
            r#"{{"kind":"prepared","nonce":"{nonce}","key":"{key}","first_send_unix_ms":{first}}}"#
        )
    };
    let outcome = |nonce: &str, outcome: &str, receipt: &str, at: u64, attempts: &[u64]| {
        let attempts: Vec<String> = attempts
            .iter()
            .map(|at| format!(r#"{{"unix_ms":{at},"outcome":"answered 201"}}"#))
            .collect();
        format!(
            r#"{{"kind":"outcome","nonce":"{nonce}","outcome":"{outcome}","receipt":"{receipt}","at_unix_ms":{at},"resumed":false,"maybe_carried_out":true,"attempts":[{}]}}"#,
            attempts.join(",")
        )
    };
    let seen = |key: &str, at: u64, body: &str| Seen {
        unix_ms: at,
        key: key.to_string(),
        body: body.to_string(),
        fault: Fault::None,
    };
    let clean_store = [
        prepared("n1", "tx:1"),
        outcome("n1", "ok", "r1", first + 100, &[first + 10]),
        prepared("n2", "tx:2"),
        outcome("n2", "window-closed", "", first + 6_000, &[]),
    ]
    .join("\n");
    let clean_ledger = format!("tx:1\tn1\tr1\t{}\n", first + 50);
    let clean_seen = vec![seen("tx:1", first + 10, "a")];
    let mut tally = Tally::default();
    assert_eq!(
        check(
            std::slice::from_ref(&clean_store),
            &clean_ledger,
            &clean_seen,
            &mut tally
        ),
        Vec::<String>::new()
    );
    assert_eq!((tally.reconciled_booked, tally.reconciled_none), (0, 1));

    let found = |store: &str, ledger: &str, seen: &[Seen], needle: &str| {
        let violations = check(&[store.to_string()], ledger, seen, &mut Tally::default());
        assert!(
            violations
                .iter()
                .any(|violation| violation.contains(needle)),
            "{needle:?} not among {violations:?}"
        );
    };
    // Booked twice: a payer that lost its key and paid with a new one.
    found(
        &clean_store,
        &format!("{clean_ledger}tx:9\tn1\tr9\t{}\n", first + 900),
        &clean_seen,
        "booked 2 times",
    );
    found(
        &clean_store,
        &format!("{clean_ledger}tx:9\tn2\tr9\t{}\n", first + 900),
        &clean_seen,
        "not the stored tx:2",
    );
    // Booked after the key's window: a late attempt ran it again.
    found(
        &clean_store,
        &format!("tx:1\tn1\tr1\t{}\n", first + WINDOW_MS + 5_000),
        &clean_seen,
        "after its key's window ended",
    );
    // A success the ledger does not hold, or holds with another receipt.
    found(&clean_store, "", &clean_seen, "the ledger has 0 bookings");
    found(
        &clean_store,
        &format!("tx:1\tn1\tr7\t{}\n", first + 50),
        &clean_seen,
        "the ledger holds r7",
    );
    // An attempt past its latest start, seen by the client and the wire.
    let late = first + LATEST_START_MS + 2_000;
    found(
        &[
            prepared("n1", "tx:1"),
            outcome("n1", "ok", "r1", late, &[late]),
        ]
        .join("\n"),
        &clean_ledger,
        &clean_seen,
        "past the latest start",
    );
    found(
        &clean_store,
        &clean_ledger,
        &[seen("tx:1", late, "a")],
        "past the latest start",
    );
    // One key, two bodies; a key no payer stored.
    found(
        &clean_store,
        &clean_ledger,
        &[seen("tx:1", first + 10, "a"), seen("tx:1", first + 20, "b")],
        "sent with 2 bodies",
    );
    found(
        &clean_store,
        &clean_ledger,
        &[seen("tx:x", first, "a")],
        "which no payer stored",
    );
    // A payer that never finished a transfer it prepared.
    found(
        &format!("{clean_store}\n{}", prepared("n3", "tx:3")),
        &clean_ledger,
        &clean_seen,
        "never finished",
    );
    // Booked after the call gave up, past what the lease allows.
    found(
        &[
            prepared("n1", "tx:1"),
            outcome("n1", "gave-up", "", first + 1_000, &[first + 10]),
        ]
        .join("\n"),
        &format!("tx:1\tn1\tr1\t{}\n", first + 1_000 + LEASE_MS + 1_000),
        &clean_seen,
        "after the call ended",
    );
}
