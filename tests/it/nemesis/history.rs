//! One history: a plan drawn from a seed (the workload, the faults and the
//! standing conditions), run against three instances of the ledger
//! service, every request and answer recorded with its timings.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::rng::Rng;
use super::system::{
    Database, Dialect, Instance, LIBFAKETIME, Outcome, Proxy, Sink, SinkCall, mysql_on, root, send,
};
use crate::support::restart::restart_database_server;

/// The service's contract and timings in every history.
pub const WINDOW_MS: u64 = 3_500;
pub const LEASE_MS: u64 = 1_500;
/// `Retry-After` of the contract (`Contract::header`'s default).
pub const RETRY_AFTER_MS: u64 = 1_000;
/// The lock-wait timeout of the service's connections (below the lease,
/// so a held lock times out inside an attempt).
const LOCK_TIMEOUT_MS: u64 = 1_000;
const INSTANCES: usize = 3;
/// First requests are spread over this long.
const WORK_MS: u64 = 5_000;
/// Faults and clients stop here (past the last reuse after the window).
pub const QUIESCE_MS: u64 = WORK_MS + WINDOW_MS + LEASE_MS + 1_000;
/// After the faults stop, before the resolving requests: a pooled
/// connection idle this long is pinged before use (the runtime's
/// `PING_AFTER_IDLE`, 1 s), so one a fault killed is replaced, not used.
pub const SETTLE_MS: u64 = 1_200;
/// Allowance for a loaded machine on top of lease + retry delay.
pub const RESOLVE_SLACK_MS: u64 = 1_500;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    First,
    Duplicate,
    Retry,
    Disconnect,
    Changed,
    Reuse,
    /// A follow-up after `Retry-After` (429/503).
    FollowUp,
    /// After the faults stopped: the key's latest request until it
    /// resolves.
    Resolve,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultKind {
    KillConnections,
    LockRecords,
    SinkStall,
    RestartServer,
    /// One instance cut off from its database server (a proxy on
    /// loopback resets its connections and refuses new ones), then let
    /// back.
    PartitionInstance,
    /// A Galera node SIGKILLed, then started again.
    KillNode,
    /// A Galera node cut off from the others (`gmcast.isolate`), then let
    /// back.
    PartitionNode,
}

impl FaultKind {
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::KillConnections => "connections killed",
            FaultKind::LockRecords => "record rows locked past the lock timeout",
            FaultKind::SinkStall => "downstream stalled past the lease",
            FaultKind::RestartServer => "database server restarted",
            FaultKind::PartitionInstance => "instance partitioned from its database",
            FaultKind::KillNode => "Galera node killed",
            FaultKind::PartitionNode => "Galera node partitioned away",
        }
    }
}

/// One planned client: a request and, unless it hangs up, its follow-ups.
#[derive(Debug, Clone)]
pub struct ClientPlan {
    pub at_ms: u64,
    pub key: usize,
    pub nonce: String,
    pub body: String,
    pub instance: usize,
    pub kind: Kind,
    /// Hangs up after this long (a client that disconnects mid-request).
    pub hang_up_ms: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct FaultPlan {
    pub at_ms: u64,
    pub kind: FaultKind,
    pub duration_ms: u64,
    pub keys: Vec<usize>,
    /// The Galera node (an index into the nodes) of a node fault, the
    /// instance of a partition.
    pub node: usize,
}

/// When the service's claim commits (`store.claim`, the ledger's
/// `CLAIM`): on its own before the business step, or with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    Committed,
    InTransaction,
}

impl Claim {
    /// By the seed: an even seed runs the committed claim, an odd one the
    /// in-transaction claim, so consecutive histories (seed + n) alternate
    /// and any budget of two histories or more runs both.
    /// `IDEMGEN_NEMESIS_CLAIM` (`committed`, `in-transaction`) fixes it.
    pub fn for_seed(seed: u64) -> Claim {
        match std::env::var("IDEMGEN_NEMESIS_CLAIM").as_deref() {
            Ok("committed") => Claim::Committed,
            Ok("in-transaction") => Claim::InTransaction,
            _ if seed % 2 == 0 => Claim::Committed,
            _ => Claim::InTransaction,
        }
    }

    /// The ledger's `CLAIM`.
    pub fn env_value(self) -> &'static str {
        match self {
            Claim::Committed => "committed",
            Claim::InTransaction => "in-transaction",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub seed: u64,
    pub dialect: Dialect,
    pub keys: Vec<String>,
    pub isolation: Option<&'static str>,
    /// `(instance, FAKETIME offset)`.
    pub skew: Option<(usize, String)>,
    pub pool_size: u64,
    pub claim: Claim,
    pub clients: Vec<ClientPlan>,
    pub faults: Vec<FaultPlan>,
    /// More environment for every instance.
    pub env: Vec<(String, String)>,
}

impl Plan {
    /// `nodes`: how many Galera nodes the instances spread over (0: one
    /// server).
    pub fn draw(seed: u64, dialect: Dialect, restart: bool, nodes: usize) -> Plan {
        let mut rng = Rng::new(seed ^ dialect as u64);
        let mut conditions = rng.fork();
        let mut workload = rng.fork();
        let mut nemesis = rng.fork();
        let isolation = dialect
            .has_server()
            .then(|| *conditions.pick(&["read-committed", "repeatable-read", "serializable"]));
        // SQLite's clock is the service's own (it runs in the process):
        // skewing it is skewing the database, a different claim.
        let skew =
            (dialect.has_server() && Path::new(LIBFAKETIME).exists() && conditions.chance(0.6))
                .then(|| {
                    let offset = *conditions.pick(&["+3600", "-3600", "+30", "-30", "+3", "-3"]);
                    (
                        conditions.range(0, INSTANCES as u64) as usize,
                        offset.to_string(),
                    )
                });
        let pool_size = conditions.range(2, 7);

        let key_count = workload.range(14, 22) as usize;
        let keys: Vec<String> = (0..key_count).map(|i| format!("tx:{seed:x}-{i}")).collect();
        let mut clients = Vec::new();
        for key in 0..key_count {
            let w = &mut workload;
            let t0 = w.range(0, WORK_MS);
            let first = format!("k{key}-0");
            let amount = |w: &mut Rng| w.range(1, 10_000);
            let body =
                |nonce: &str, amount: u64| format!(r#"{{"nonce":"{nonce}","amount":{amount}}}"#);
            let body0 = body(&first, amount(w));
            let mut client = |at_ms, nonce: &str, body: &str, kind, hang_up_ms, w: &mut Rng| {
                clients.push(ClientPlan {
                    at_ms,
                    key,
                    nonce: nonce.to_string(),
                    body: body.to_string(),
                    instance: w.range(0, INSTANCES as u64) as usize,
                    kind,
                    hang_up_ms,
                })
            };
            client(t0, &first, &body0, Kind::First, None, w);
            for _ in 0..w.range(0, 4) {
                let at = t0 + w.range(0, 15);
                client(at, &first, &body0, Kind::Duplicate, None, w);
            }
            for _ in 0..w.range(0, 3) {
                let at = t0 + w.range(50, 2_500);
                client(at, &first, &body0, Kind::Retry, None, w);
            }
            if w.chance(0.25) {
                let at = t0 + w.range(0, 400);
                let hang_up = w.range(2, 300);
                client(at, &first, &body0, Kind::Disconnect, Some(hang_up), w);
            }
            if w.chance(0.2) {
                let nonce = format!("k{key}-c");
                let changed = body(&nonce, amount(w));
                let at = t0 + w.range(100, WINDOW_MS - 500);
                client(at, &nonce, &changed, Kind::Changed, None, w);
            }
            if w.chance(0.3) {
                let nonce = format!("k{key}-1");
                let reused = body(&nonce, amount(w));
                let at = t0 + WINDOW_MS + LEASE_MS + w.range(100, 800);
                client(at, &nonce, &reused, Kind::Reuse, None, w);
                if w.chance(0.5) {
                    let at = at + w.range(0, 15);
                    client(at, &nonce, &reused, Kind::Duplicate, None, w);
                }
            }
        }
        clients.sort_by_key(|client| client.at_ms);

        let mut faults = Vec::new();
        let mut at = nemesis.range(100, 800);
        while at + 300 < QUIESCE_MS {
            // SQLite's "row lock" is its one write lock, the whole
            // database's: held less often there.
            // Instances reach a single server through proxies that can
            // cut them off; on Galera a node fault does that instead.
            let proxied = dialect.has_server() && nodes == 0;
            let kind = match (dialect.has_server(), nemesis.range(0, 100)) {
                (true, 0..30) => FaultKind::KillConnections,
                (true, 30..50) | (false, 0..25) => FaultKind::LockRecords,
                (true, 50..70) if proxied => FaultKind::PartitionInstance,
                _ => FaultKind::SinkStall,
            };
            let duration_ms = match kind {
                FaultKind::KillConnections => 0,
                FaultKind::LockRecords => LEASE_MS + nemesis.range(300, 2_000),
                FaultKind::PartitionInstance => nemesis.range(1_000, 3_000),
                _ => nemesis.range(500, 2_500),
            };
            let instance = nemesis.range(0, INSTANCES as u64) as usize;
            // Keys whose first request is planned by now have records.
            let started: Vec<usize> = clients
                .iter()
                .filter(|client| client.at_ms <= at)
                .map(|client| client.key)
                .collect();
            let keys = if started.is_empty() {
                vec![0]
            } else {
                (0..nemesis.range(1, 4))
                    .map(|_| *nemesis.pick(&started))
                    .collect()
            };
            faults.push(FaultPlan {
                at_ms: at,
                kind,
                duration_ms,
                keys,
                node: instance,
            });
            at += nemesis.range(500, 2_000);
        }
        if restart && dialect.has_server() {
            faults.push(FaultPlan {
                at_ms: nemesis.range(1_000, WORK_MS),
                kind: FaultKind::RestartServer,
                duration_ms: 0,
                keys: Vec::new(),
                node: 0,
            });
            faults.sort_by_key(|fault| fault.at_ms);
        }
        // One node fault per history, never on the first node (the one
        // the checker reads): a cut-off node is noticed after the
        // cluster's suspect timeout (5 s), so a partition lasts longer.
        if nodes > 1 {
            let partition = nemesis.chance(0.5);
            faults.push(FaultPlan {
                at_ms: nemesis.range(1_000, 4_000),
                kind: if partition {
                    FaultKind::PartitionNode
                } else {
                    FaultKind::KillNode
                },
                duration_ms: if partition {
                    nemesis.range(6_000, 8_000)
                } else {
                    nemesis.range(2_000, 4_000)
                },
                keys: Vec::new(),
                node: nemesis.range(1, nodes as u64) as usize,
            });
            faults.sort_by_key(|fault| fault.at_ms);
        }
        Plan {
            seed,
            dialect,
            keys,
            isolation,
            skew,
            pool_size,
            claim: Claim::for_seed(seed),
            clients,
            faults,
            env: Vec::new(),
        }
    }
}

/// One request as sent and answered.
#[derive(Debug, Clone)]
pub struct Event {
    pub client: usize,
    pub key: usize,
    pub nonce: String,
    pub instance: usize,
    pub kind: Kind,
    /// Since the history's start.
    pub sent: Duration,
    pub done: Duration,
    pub outcome: Outcome,
}

/// A fault as injected.
#[derive(Debug, Clone)]
pub struct Fault {
    pub kind: FaultKind,
    pub start: Duration,
    pub end: Duration,
    pub detail: String,
}

/// A ledger row at the end of the history.
#[derive(Debug, Clone)]
pub struct LedgerRow {
    pub key: String,
    pub nonce: String,
    pub receipt: String,
    pub instance: String,
    pub at_ms: i64,
    pub body: String,
}

/// Everything the checker looks at.
pub struct History {
    pub plan: Plan,
    pub events: Vec<Event>,
    pub faults: Vec<Fault>,
    pub sink: Vec<SinkCall>,
    pub ledger: Vec<LedgerRow>,
    /// Record statuses and how many.
    pub records: BTreeMap<String, usize>,
    /// When the last fault ended.
    pub quiet: Duration,
    /// When the resolving requests started.
    pub resolve_from: Duration,
    pub wall: Duration,
    /// The instant the plan's times count from.
    pub started: Instant,
    pub logs: Vec<(String, String)>,
}

type Events = Arc<Mutex<Vec<Event>>>;

/// Runs `plan` on a fresh database of `server_url`'s server; with
/// `nodes` (a Galera cluster's base URLs, `server_url` the first), each
/// instance on its own node.
pub fn run(
    plan: Plan,
    binary: &Path,
    server_url: Option<&str>,
    nodes: &[String],
) -> (History, Database) {
    let wall = Instant::now();
    let db = Database::create(plan.dialect, server_url, plan.seed);
    let proxies: Vec<Arc<Proxy>> = match db.server_addr() {
        Some(addr) if nodes.is_empty() => (0..INSTANCES)
            .map(|_| Arc::new(Proxy::start(&addr)))
            .collect(),
        _ => Vec::new(),
    };
    let sink = Sink::start();
    let mut instances: Vec<Instance> = (0..INSTANCES)
        .map(|i| {
            let mut env: Vec<(String, String)> = vec![
                ("SINK_ADDR".into(), sink.addr.clone()),
                ("WINDOW_MS".into(), WINDOW_MS.to_string()),
                ("LEASE_MS".into(), LEASE_MS.to_string()),
                // The purge runs continuously with a window this short.
                ("PURGE_INTERVAL_SECS".into(), "1".into()),
                ("LOCK_TIMEOUT_MS".into(), LOCK_TIMEOUT_MS.to_string()),
                ("DATABASE_POOL_SIZE".into(), plan.pool_size.to_string()),
                ("CLAIM".into(), plan.claim.env_value().into()),
            ];
            env.extend(plan.env.iter().cloned());
            if !nodes.is_empty() {
                env.push(("DATABASE_URL".into(), db.url_on(&nodes[i % nodes.len()])));
            } else if let Some(proxy) = proxies.get(i) {
                env.push(("DATABASE_URL".into(), db.url_via(proxy.port)));
            }
            if let Some(isolation) = plan.isolation {
                env.push(("ISOLATION".into(), isolation.into()));
            }
            if let Some((skewed, offset)) = &plan.skew
                && *skewed == i
            {
                env.push(("LD_PRELOAD".into(), LIBFAKETIME.into()));
                env.push(("FAKETIME".into(), offset.clone()));
                // tokio's timers (the lease deadline) stay on real time.
                env.push(("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into()));
            }
            Instance::start(binary, &db, &format!("i{i}"), &env)
        })
        .collect();
    let bases: Arc<Vec<String>> = Arc::new(instances.iter().map(|i| i.base.clone()).collect());
    let keys = Arc::new(plan.keys.clone());
    let events: Events = Arc::default();
    // The history's clock restarts here: plans are relative to it.
    let started = Instant::now();
    let quiesce = started + Duration::from_millis(QUIESCE_MS);

    let clients: Vec<_> = plan
        .clients
        .iter()
        .cloned()
        .enumerate()
        .map(|(id, client)| {
            let (bases, keys, events) = (bases.clone(), keys.clone(), events.clone());
            let seed = plan.seed.wrapping_add(id as u64);
            thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    run_client(id, &client, seed, &bases, &keys, &events, started, quiesce)
                })
                .unwrap()
        })
        .collect();

    let faults = nemesis(&plan, &db, &sink, nodes, &proxies, started, quiesce);
    for client in clients {
        client.join().expect("a client thread");
    }
    let quiet = faults
        .iter()
        .map(|fault| fault.end)
        .max()
        .unwrap_or_default()
        .max(started.elapsed());
    thread::sleep(Duration::from_millis(SETTLE_MS));
    let resolve_from = started.elapsed();
    resolve(&plan, &bases, &keys, &events, started);

    let ledger = db
        .query("SELECT idem_key, nonce, receipt, instance, at_ms, body FROM ledger ORDER BY id")
        .lines()
        .filter(|line| !line.is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.splitn(6, '\t').collect();
            LedgerRow {
                key: fields[0].to_string(),
                nonce: fields[1].to_string(),
                receipt: fields[2].to_string(),
                instance: fields[3].to_string(),
                at_ms: fields[4].parse().unwrap_or(0),
                body: fields.get(5).unwrap_or(&"").to_string(),
            }
        })
        .collect();
    let records = db
        .query("SELECT status, COUNT(*) FROM idempotent_record GROUP BY status")
        .lines()
        .filter_map(|line| {
            let (status, count) = line.split_once('\t')?;
            Some((status.to_string(), count.parse().ok()?))
        })
        .collect();
    let mut logs = Vec::new();
    for instance in &mut instances {
        let mut log = instance.log_text();
        if !instance.alive() {
            log.push_str("\n(the process exited)");
        }
        logs.push((instance.name.clone(), log));
    }
    drop(instances);
    let sink_calls = sink.calls();
    let mut events = std::mem::take(&mut *events.lock().unwrap());
    events.sort_by_key(|event| event.sent);
    let history = History {
        plan,
        events,
        faults,
        sink: sink_calls,
        ledger,
        records,
        quiet,
        resolve_from,
        wall: wall.elapsed(),
        started,
        logs,
    };
    (history, db)
}

/// One client: sends its request, follows `Retry-After` on 429 and 503
/// (to a random instance, as a load balancer would) until it gets a final
/// answer or the faults stop; a hanging-up client sends once.
#[allow(clippy::too_many_arguments)]
fn run_client(
    id: usize,
    client: &ClientPlan,
    seed: u64,
    bases: &[String],
    keys: &[String],
    events: &Events,
    started: Instant,
    quiesce: Instant,
) {
    let mut rng = Rng::new(seed);
    thread::sleep(
        (started + Duration::from_millis(client.at_ms)).saturating_duration_since(Instant::now()),
    );
    let mut instance = client.instance;
    let mut kind = client.kind;
    loop {
        if Instant::now() >= quiesce {
            return;
        }
        let timeout = Duration::from_millis(client.hang_up_ms.unwrap_or(20_000));
        let sent = started.elapsed();
        let result = send(&bases[instance], &keys[client.key], &client.body, timeout);
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(_) if client.hang_up_ms.is_some() => Outcome::Disconnected,
            Err(error) => Outcome::Failed(error),
        };
        let retry = match &outcome {
            Outcome::Answer {
                status: 429 | 503,
                retry_after,
                ..
            } => retry_after
                .as_deref()
                .and_then(|value| value.parse::<u64>().ok()),
            _ => None,
        };
        events.lock().unwrap().push(Event {
            client: id,
            key: client.key,
            nonce: client.nonce.clone(),
            instance,
            kind,
            sent,
            done: started.elapsed(),
            outcome,
        });
        let Some(seconds) = retry else { return };
        if client.hang_up_ms.is_some() {
            return;
        }
        thread::sleep(Duration::from_secs(seconds) + Duration::from_millis(rng.range(0, 200)));
        instance = rng.range(0, bases.len() as u64) as usize;
        kind = Kind::FollowUp;
    }
}

/// The faults of the plan, injected on time until `quiesce`; then waits
/// for every held lock to end. What was injected, with when it ended.
fn nemesis(
    plan: &Plan,
    db: &Database,
    sink: &Sink,
    nodes: &[String],
    proxies: &[Arc<Proxy>],
    started: Instant,
    quiesce: Instant,
) -> Vec<Fault> {
    // Partitions heal in threads of their own: each one's index and
    // thread, which returns when it healed.
    let mut partitions: Vec<(usize, thread::JoinHandle<Duration>)> = Vec::new();
    let mut injected = Vec::new();
    // A node fault runs in a thread of its own (bringing a node back
    // takes seconds): its index and the thread, which returns its end.
    let mut node_fault: Option<(usize, thread::JoinHandle<Duration>)> = None;
    let mut holders: Vec<(usize, Child)> = Vec::new();
    let mut stall_ends: Option<(usize, Instant)> = None;
    for fault in &plan.faults {
        let at = started + Duration::from_millis(fault.at_ms);
        // A stall ends on time, not when the next fault comes.
        if let Some((_, ends)) = stall_ends
            && ends < at
        {
            thread::sleep(ends.saturating_duration_since(Instant::now()));
            end_stall(sink, &mut stall_ends, &mut injected, started, false);
        }
        thread::sleep(at.saturating_duration_since(Instant::now()));
        end_stall(sink, &mut stall_ends, &mut injected, started, false);
        if Instant::now() >= quiesce {
            break;
        }
        let start = started.elapsed();
        match fault.kind {
            FaultKind::KillConnections => {
                let killed = db.kill_connections(nodes);
                injected.push(Fault {
                    kind: fault.kind,
                    start,
                    end: started.elapsed(),
                    detail: format!("{killed} connections"),
                });
            }
            FaultKind::LockRecords => {
                let keys: Vec<String> = fault
                    .keys
                    .iter()
                    .map(|key| format!("'{}'", plan.keys[*key]))
                    .collect();
                let seconds = fault.duration_ms as f64 / 1000.0;
                let script = match db.dialect {
                    Dialect::Sqlite => format!(
                        "BEGIN IMMEDIATE;\nUPDATE idempotent_record SET updated_at = updated_at \
                         WHERE idem_key IN ({});\n.shell sleep {seconds}\nCOMMIT;\n",
                        keys.join(", ")
                    ),
                    Dialect::Mysql => format!(
                        "BEGIN;\nSELECT status FROM idempotent_record WHERE idem_key IN ({}) \
                         FOR UPDATE;\nSELECT SLEEP({seconds});\nCOMMIT;\n",
                        keys.join(", ")
                    ),
                    Dialect::Postgres => format!(
                        "BEGIN;\nSELECT status FROM idempotent_record WHERE idem_key IN ({}) \
                         FOR UPDATE;\nSELECT pg_sleep({seconds});\nCOMMIT;\n",
                        keys.join(", ")
                    ),
                };
                holders.push((injected.len(), db.spawn_session(&script)));
                injected.push(Fault {
                    kind: fault.kind,
                    start,
                    end: start,
                    detail: format!("{} for {seconds:.1} s", keys.join(", ")),
                });
            }
            FaultKind::SinkStall => {
                end_stall(sink, &mut stall_ends, &mut injected, started, true);
                let stall = LEASE_MS + 200 + fault.duration_ms % 800;
                sink.stall(stall);
                stall_ends = Some((
                    injected.len(),
                    Instant::now() + Duration::from_millis(fault.duration_ms),
                ));
                injected.push(Fault {
                    kind: fault.kind,
                    start,
                    end: start,
                    detail: format!(
                        "every call answered after {stall} ms for {} ms",
                        fault.duration_ms
                    ),
                });
            }
            FaultKind::PartitionInstance => {
                let proxy = proxies[fault.node].clone();
                proxy.cut();
                let hold = Duration::from_millis(fault.duration_ms);
                let thread = thread::spawn(move || {
                    thread::sleep(hold);
                    proxy.heal();
                    started.elapsed()
                });
                partitions.push((injected.len(), thread));
                injected.push(Fault {
                    kind: fault.kind,
                    start,
                    end: start,
                    detail: format!("i{} for {} ms", fault.node, fault.duration_ms),
                });
            }
            FaultKind::KillNode | FaultKind::PartitionNode => {
                if let Some((index, thread)) = node_fault.take() {
                    injected[index].end = thread.join().expect("a node fault");
                }
                let (kind, node, hold) = (
                    fault.kind,
                    fault.node,
                    Duration::from_millis(fault.duration_ms),
                );
                let url = nodes[node].clone();
                let thread = thread::spawn(move || {
                    node_down(kind, node, &url, hold);
                    started.elapsed()
                });
                node_fault = Some((injected.len(), thread));
                injected.push(Fault {
                    kind: fault.kind,
                    start,
                    end: start,
                    detail: format!(
                        "node{} for {} ms, then until Synced",
                        node + 1,
                        fault.duration_ms
                    ),
                });
            }
            FaultKind::RestartServer => {
                restart_database_server(db.dialect);
                injected.push(Fault {
                    kind: fault.kind,
                    start,
                    end: started.elapsed(),
                    detail: String::new(),
                });
            }
        }
        reap(&mut holders, &mut injected, started);
    }
    if let Some((_, ends)) = stall_ends
        && ends < quiesce
    {
        thread::sleep(ends.saturating_duration_since(Instant::now()));
        end_stall(sink, &mut stall_ends, &mut injected, started, false);
    }
    thread::sleep(quiesce.saturating_duration_since(Instant::now()));
    end_stall(sink, &mut stall_ends, &mut injected, started, true);
    if let Some((index, thread)) = node_fault.take() {
        injected[index].end = thread.join().expect("a node fault");
    }
    for (index, thread) in partitions {
        injected[index].end = thread.join().expect("a partition");
    }
    // Held locks end by themselves (their sessions commit after a sleep
    // shorter than the lease plus two seconds).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !holders.is_empty() && Instant::now() < deadline {
        reap(&mut holders, &mut injected, started);
        thread::sleep(Duration::from_millis(20));
    }
    for (index, mut holder) in holders {
        let _ = holder.kill();
        let _ = holder.wait();
        injected[index].end = started.elapsed();
    }
    injected
}

fn end_stall(
    sink: &Sink,
    stall: &mut Option<(usize, Instant)>,
    injected: &mut [Fault],
    started: Instant,
    now: bool,
) {
    if let Some((index, ends)) = *stall
        && (now || Instant::now() >= ends)
    {
        sink.stall(0);
        injected[index].end = started.elapsed();
        *stall = None;
    }
}

fn reap(holders: &mut Vec<(usize, Child)>, injected: &mut [Fault], started: Instant) {
    holders.retain_mut(|(index, holder)| match holder.try_wait() {
        Ok(Some(_)) | Err(_) => {
            injected[*index].end = started.elapsed();
            false
        }
        Ok(None) => true,
    });
}

/// After the faults: each key's latest request (the last one planned that
/// was sent) until it gets a final answer (201 or 409), following
/// `Retry-After`, round robin over the instances; given up well past the
/// bound the checker holds it to.
fn resolve(
    plan: &Plan,
    bases: &Arc<Vec<String>>,
    keys: &Arc<Vec<String>>,
    events: &Events,
    started: Instant,
) {
    let sent: Vec<(usize, String)> = {
        let events = events.lock().unwrap();
        let mut latest: BTreeMap<usize, (u64, String)> = BTreeMap::new();
        for event in events.iter() {
            let client = &plan.clients[event.client];
            let entry = latest
                .entry(event.key)
                .or_insert((client.at_ms, event.nonce.clone()));
            if client.at_ms >= entry.0 {
                *entry = (client.at_ms, event.nonce.clone());
            }
        }
        latest
            .into_iter()
            .map(|(key, (_, nonce))| (key, nonce))
            .collect()
    };
    let give_up = Instant::now()
        + Duration::from_millis(LEASE_MS + RETRY_AFTER_MS + RESOLVE_SLACK_MS + 5_000);
    let threads: Vec<_> = sent
        .into_iter()
        .map(|(key, nonce)| {
            let body = plan
                .clients
                .iter()
                .find(|client| client.key == key && client.nonce == nonce)
                .map(|client| client.body.clone())
                .unwrap();
            let (bases, keys, events) = (bases.clone(), keys.clone(), events.clone());
            thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    let mut instance = key % bases.len();
                    while Instant::now() < give_up {
                        let sent = started.elapsed();
                        let outcome =
                            send(&bases[instance], &keys[key], &body, Duration::from_secs(20))
                                .unwrap_or_else(Outcome::Failed);
                        let again = match &outcome {
                            Outcome::Answer {
                                status: 429 | 503,
                                retry_after,
                                ..
                            } => retry_after
                                .as_deref()
                                .and_then(|value| value.parse::<u64>().ok()),
                            _ => None,
                        };
                        events.lock().unwrap().push(Event {
                            client: usize::MAX,
                            key,
                            nonce: nonce.clone(),
                            instance,
                            kind: Kind::Resolve,
                            sent,
                            done: started.elapsed(),
                            outcome,
                        });
                        let Some(seconds) = again else { return };
                        thread::sleep(Duration::from_secs(seconds));
                        instance = (instance + 1) % bases.len();
                    }
                })
                .unwrap()
        })
        .collect();
    for thread in threads {
        thread.join().expect("a resolving client");
    }
}

/// Takes Galera node `node` (0-based) down for `hold` (SIGKILL, or cut
/// off with the provider's `gmcast.isolate`), then brings it back and
/// waits until it is Synced in a cluster of three again.
fn node_down(kind: FaultKind, node: usize, url: &str, hold: Duration) {
    let script = root().join("scripts/galera.sh");
    let galera = |args: &[&str]| {
        let output = std::process::Command::new(&script).args(args).output();
        assert!(
            output.as_ref().is_ok_and(|output| output.status.success()),
            "galera.sh {args:?}: {output:?}"
        );
    };
    let number = (node + 1).to_string();
    let isolate = |on: u8| {
        mysql_on(
            url,
            &format!("SET GLOBAL wsrep_provider_options = 'gmcast.isolate={on}'"),
        )
    };
    match kind {
        FaultKind::KillNode => galera(&["kill", &number]),
        _ => assert!(isolate(1).is_some(), "node{number} not cut off"),
    }
    thread::sleep(hold);
    match kind {
        FaultKind::KillNode => galera(&["start-node", &number]),
        _ => assert!(isolate(0).is_some(), "node{number} not let back"),
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let state = mysql_on(
            url,
            "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
             WHERE VARIABLE_NAME IN ('wsrep_local_state_comment', 'wsrep_cluster_size') \
             ORDER BY VARIABLE_NAME",
        );
        if state.is_some_and(|state| state.split_whitespace().eq(["3", "Synced"])) {
            return;
        }
        assert!(Instant::now() < deadline, "node{number} did not come back");
        thread::sleep(Duration::from_millis(200));
    }
}

/// Whether a restart may still happen in this process (one per dialect:
/// each takes seconds and disturbs every history on that server).
pub fn take_restart(flag: &AtomicBool) -> bool {
    std::env::var_os("IDEMGEN_TEST_RESTART_DATABASES").is_some_and(|value| value == "1")
        && !flag.swap(true, Ordering::Relaxed)
}
