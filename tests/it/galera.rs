//! Exactly-once on a multi-primary MariaDB Galera cluster: eight instances
//! of the payment-callback example spread over three nodes, hammered the
//! way the exactly-once suite hammers one server, plus a node killed with
//! SIGKILL in the middle of a burst. Everything runs twice, on a database
//! of its own each time: against the example (`store.claim: committed`),
//! then against the example generated with `store.claim: in-transaction`,
//! where an instance killed mid-payment takes its uncommitted claim away
//! with it instead of leaving a lease to wait out.
//!
//! Runs when `IDEMGEN_TEST_GALERA_URLS` lists the three nodes' URLs
//! (comma-separated, node 1 first), as `scripts/galera.sh urls` prints them
//! after `scripts/galera.sh start`; the node-crash scenario drives the same
//! script to kill and restart a node. Every run creates and drops its own
//! database on the cluster.

use crate::support::exactly_once as support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use support::build::one_commit_service;
use support::skip::{generated_builds_skipped, skipped};
use support::*;

const INSTANCES: usize = 8;
const BURST: usize = 200;
const RETRIES: usize = 60;
const BURST_DELAY_MS: u64 = 200;
const STALE_DELAY_MS: u64 = 4_500;
/// The example's `client.timeout` and window (`openapi.yaml`).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
const WINDOW: Duration = Duration::from_secs(18);

#[test]
fn galera_exactly_once() {
    if generated_builds_skipped() {
        return;
    }
    if std::env::var_os("IDEMGEN_TEST_GALERA_URLS").is_none() {
        skipped(
            "set IDEMGEN_TEST_GALERA_URLS to run (scripts/galera.sh start, then \
             IDEMGEN_TEST_GALERA_URLS=$(scripts/galera.sh urls | paste -sd,))",
        );
        return;
    }
    let binaries = Binaries::get(Dialect::Mysql);
    let one_commit = one_commit_service(Dialect::Mysql);
    for (binary, claim) in [
        (&binaries.generated, Claim::Committed),
        (&one_commit, Claim::InTransaction),
    ] {
        let started = Instant::now();
        let cluster = Cluster::create().expect("IDEMGEN_TEST_GALERA_URLS is set");
        exactly_once_on(&cluster, binary, claim);
        eprintln!(
            "galera, claim {}: done in {:.0?}",
            claim.name(),
            started.elapsed()
        );
    }
}

/// The example's `store.claim`: the service each round runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claim {
    /// The example as it is: the claim commits on its own.
    Committed,
    /// The example generated with `store.claim: in-transaction`: the claim
    /// commits with the payment.
    InTransaction,
}

impl Claim {
    fn name(self) -> &'static str {
        match self {
            Claim::Committed => "committed",
            Claim::InTransaction => "in-transaction",
        }
    }

    /// Checks how many business steps one payment's duplicates ran
    /// (`idempotency_first_attempts_total`), and returns it. A committed
    /// claim is replicated before the step runs: one. A claim in the
    /// business transaction is replicated only with its commit, so each
    /// node may run a step of its own (and run another if the first loses
    /// certification before the winner's write set is applied there);
    /// certification commits one of them, which the `paid_log` counts and
    /// the single answer from a business step check.
    fn assert_business_steps(self, steps: i64) -> i64 {
        match self {
            Claim::Committed => assert_eq!(steps, 1, "business steps run"),
            Claim::InTransaction => assert!(steps >= 1, "business steps run: {steps}"),
        }
        steps
    }
}

/// Every scenario against `binary` on a database of its own.
fn exactly_once_on(cluster: &Cluster, binary: &Path, claim: Claim) {
    // The first instance migrates; the others find the schema in place.
    let mut servers = vec![cluster.start(binary, 0, BURST_DELAY_MS)];
    for i in 1..INSTANCES {
        servers.push(cluster.start(binary, i % 3, BURST_DELAY_MS));
    }

    let paid = [
        burst_pays_once_on_every_node(cluster, &servers, claim),
        retries_after_failure_pay_once(cluster, &servers, claim),
        match claim {
            Claim::Committed => {
                crashed_instance_is_taken_over_on_another_node(cluster, binary, &servers)
            }
            Claim::InTransaction => {
                crashed_instance_takes_its_claim_away(cluster, binary, &servers)
            }
        },
    ];

    // Restart every instance: the records answer, identically everywhere.
    drop(servers);
    let servers: Vec<Server> = (0..INSTANCES)
        .map(|i| cluster.start(binary, i % 3, BURST_DELAY_MS))
        .collect();
    for (key, body, first_answer) in &paid {
        for server in &servers {
            let replay = post(server, Some(key), body);
            assert_eq!((replay.status, replay.replayed), (200, true), "{replay:?}");
            assert_eq!(
                &replay.body, first_answer,
                "replay of {key} differs on {}",
                server.base
            );
        }
    }
    let records = cluster.record_counts();
    assert!(
        records.windows(2).all(|pair| pair[0] == pair[1]),
        "record counts per node: {records:?}"
    );
    eprintln!(
        "galera: every instance restarted: the {} payments so far replayed byte-identically on \
         all {INSTANCES}; records per node {records:?}",
        paid.len()
    );

    node_killed_mid_burst(cluster, &servers);
}

/// A payment made once: its key, its body and the answer that made it.
type Paid = (String, String, Vec<u8>);

/// "N × 200 (R replays), M × 429": the answers of a burst, by status.
fn tally(answers: &[Answer]) -> String {
    let mut by_status = std::collections::BTreeMap::<u16, usize>::new();
    for answer in answers {
        *by_status.entry(answer.status).or_default() += 1;
    }
    let replays = answers.iter().filter(|a| a.replayed).count();
    by_status
        .iter()
        .map(|(status, count)| match status {
            200 => format!("{count} × 200 ({replays} replays)"),
            _ => format!("{count} × {status}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// 200 concurrent duplicates of one payment, round-robin over the eight
/// instances (so over the three nodes): one payment on every node.
fn burst_pays_once_on_every_node(cluster: &Cluster, servers: &[Server], claim: Claim) -> Paid {
    let order = cluster.seed_order(1999);
    let (key, body) = callback(&order, 1999);
    let before = first_attempts(servers);
    let answers = burst(servers, BURST, &key, &body);
    cluster.wait_for_replication();
    assert_eq!(
        cluster.paid_rows_per_node(&order),
        [1, 1, 1],
        "paid_log rows per node"
    );
    let steps = claim.assert_business_steps(first_attempts(servers) - before);
    let fresh: Vec<&Answer> = answers
        .iter()
        .filter(|a| a.status == 200 && !a.replayed)
        .collect();
    assert_eq!(fresh.len(), 1, "answers from the business step");
    let first_answer = fresh[0].body.clone();
    for answer in &answers {
        match answer.status {
            200 => assert_eq!(answer.body, first_answer, "replays are byte-identical"),
            429 => assert!(answer.retry_after.is_some(), "{answer:?}"),
            _ => panic!("a duplicate got neither 200 nor 429: {answer:?}"),
        }
    }
    let records = cluster.record_counts();
    eprintln!(
        "galera: {BURST} duplicates over {INSTANCES} instances on 3 nodes: {}; business steps \
         run {steps}; paid_log rows per node [1, 1, 1]; records per node {records:?}",
        tally(&answers)
    );
    (key, body, first_answer)
}

/// An unknown order fails (404, recorded); once it exists, 60 concurrent
/// retries over every node pay it once.
fn retries_after_failure_pay_once(cluster: &Cluster, servers: &[Server], claim: Claim) -> Paid {
    let order = unique_order_no();
    let (key, body) = callback(&order, 700);
    assert_eq!(post(&servers[0], Some(&key), &body).status, 404);
    cluster.insert_order(&order, 700);
    cluster.wait_for_replication();
    let before = first_attempts(servers);
    let answers = burst(servers, RETRIES, &key, &body);
    cluster.wait_for_replication();
    assert_eq!(cluster.paid_rows_per_node(&order), [1, 1, 1]);
    let steps = claim.assert_business_steps(first_attempts(servers) - before);
    let fresh: Vec<&Answer> = answers
        .iter()
        .filter(|a| a.status == 200 && !a.replayed)
        .collect();
    assert_eq!(fresh.len(), 1, "exactly one retry runs the business step");
    assert!(
        answers
            .iter()
            .all(|a| a.status == 200 || (a.status == 429 && a.retry_after.is_some())),
        "{answers:?}"
    );
    eprintln!(
        "galera: {RETRIES} concurrent retries after a recorded 404: {}; business steps run \
         {steps}; paid_log rows per node [1, 1, 1]",
        tally(&answers)
    );
    (key, body, fresh[0].body.clone())
}

/// An instance on node 1 is SIGKILLed while it holds a claim; instances on
/// the other nodes answer 429 until the lease ends, then one takes over.
fn crashed_instance_is_taken_over_on_another_node(
    cluster: &Cluster,
    binary: &Path,
    servers: &[Server],
) -> Paid {
    let order = cluster.seed_order(900);
    let (key, body) = callback(&order, 900);
    let doomed = cluster.start(binary, 0, STALE_DELAY_MS);
    let in_flight = {
        let (base, key, body) = (doomed.base.clone(), key.clone(), body.clone());
        thread::spawn(move || try_post(&base, Some(&key), &body))
    };
    cluster.wait_for_record(&key, "in_progress");
    drop(doomed);
    let _ = in_flight.join();

    let others: Vec<&Server> = servers.iter().skip(1).step_by(3).collect();
    let lease_end = cluster.count(
        0,
        &format!("SELECT lease_expires_at FROM idempotent_record WHERE idem_key = '{key}'"),
    );
    let mut early = 0;
    while now_ms() < lease_end - 300 {
        let answer = post(others[early % others.len()], Some(&key), &body);
        if now_ms() < lease_end {
            assert_eq!(answer.status, 429, "during the lease: {answer:?}");
            early += 1;
        }
        thread::sleep(Duration::from_millis(200));
    }
    assert!(early > 0, "no retry landed inside the lease");
    // A Galera engine waits its clock margin past the lease (the runtime's
    // `GALERA_CLOCK_MARGIN`, 1 s) before it takes a claim over.
    sleep_until(lease_end + 1_000 + 100);
    let answers = burst(servers, 24, &key, &body);
    cluster.wait_for_replication();
    assert_eq!(cluster.paid_rows_per_node(&order), [1, 1, 1]);
    let fresh: Vec<&Answer> = answers
        .iter()
        .filter(|a| a.status == 200 && !a.replayed)
        .collect();
    assert_eq!(fresh.len(), 1, "one takeover: {answers:?}");
    eprintln!(
        "galera: an instance on node 1 SIGKILLed holding a claim: {early} retries on nodes 2 \
         and 3 answered 429 during its lease; then 24 at once: {}; paid_log rows per node \
         [1, 1, 1]",
        tally(&answers)
    );
    (key, body, fresh[0].body.clone())
}

/// `store.claim: in-transaction`: an instance on node 1 is SIGKILLed in
/// the middle of a payment, its claim not yet committed: the claim goes
/// with the rolled-back transaction, so 24 retries at once over every node
/// right after pay the order once, with no lease to wait out.
fn crashed_instance_takes_its_claim_away(
    cluster: &Cluster,
    binary: &Path,
    servers: &[Server],
) -> Paid {
    let order = cluster.seed_order(900);
    let (key, body) = callback(&order, 900);
    let doomed = cluster.start(binary, 0, STALE_DELAY_MS);
    let in_flight = {
        let (base, key, body) = (doomed.base.clone(), key.clone(), body.clone());
        thread::spawn(move || try_post(&base, Some(&key), &body))
    };
    cluster.wait_for_uncommitted_claim();
    drop(doomed);
    let _ = in_flight.join();
    let answers = burst(servers, 24, &key, &body);
    cluster.wait_for_replication();
    assert_eq!(cluster.paid_rows_per_node(&order), [1, 1, 1]);
    let fresh: Vec<&Answer> = answers
        .iter()
        .filter(|a| a.status == 200 && !a.replayed)
        .collect();
    assert_eq!(fresh.len(), 1, "one retry runs the payment: {answers:?}");
    assert!(
        answers
            .iter()
            .all(|a| a.status == 200 || (a.status == 429 && a.retry_after.is_some())),
        "{answers:?}"
    );
    eprintln!(
        "galera: an instance on node 1 SIGKILLed mid-payment, its claim uncommitted: 24 \
         retries at once right after: {}; paid_log rows per node [1, 1, 1]",
        tally(&answers)
    );
    (key, body, fresh[0].body.clone())
}

/// Many payments, each sent several times at once over every instance,
/// while node 3 is SIGKILLed. Instances on node 3 answer 503; the clients
/// retry on the next instance until they get an answer. Afterwards node 3
/// rejoins, and every node holds one payment per order and the same record
/// counts, and every replay is byte-identical wherever it is asked.
fn node_killed_mid_burst(cluster: &Cluster, servers: &[Server]) {
    const PAYMENTS: usize = 40;
    const COPIES: usize = 5;
    let orders: Vec<String> = (0..PAYMENTS).map(|_| cluster.seed_order(2500)).collect();
    cluster.wait_for_replication();
    let requests: Vec<(String, String)> =
        orders.iter().map(|order| callback(order, 2500)).collect();
    let bases: Arc<Vec<String>> = Arc::new(servers.iter().map(|s| s.base.clone()).collect());
    let barrier = Arc::new(Barrier::new(PAYMENTS * COPIES + 1));
    let clients: Vec<_> = (0..PAYMENTS * COPIES)
        .map(|i| {
            let (key, body) = requests[i % PAYMENTS].clone();
            let (bases, barrier) = (bases.clone(), barrier.clone());
            thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    barrier.wait();
                    // A little spread, so the kill lands mid-burst.
                    thread::sleep(Duration::from_millis((i as u64 * 7) % 600));
                    retry_until_answered(&bases, i, &key, &body)
                })
                .unwrap()
        })
        .collect();
    barrier.wait();
    thread::sleep(Duration::from_millis(250));
    cluster.kill_node(3);
    let killed_ms = now_ms();
    let reformed_ms = cluster.wait_for_cluster_size(0, 2);
    let outcomes: Vec<ClientOutcome> = clients.into_iter().map(|c| c.join().unwrap()).collect();

    // Until the survivors evict node 3 (evs.suspect_timeout, 5 s by
    // default) the cluster commits nothing: an attempt that reached a
    // commit then may outlive the client's timeout or its lease on any
    // node, and its client moves on. Once the primary component has
    // re-formed, only node 3's instances may fail an attempt.
    let node3: BTreeSet<usize> = (0..INSTANCES).filter(|i| i % 3 == 2).collect();
    let mut refused = 0;
    let mut stalled = 0;
    for (i, outcome) in outcomes.iter().enumerate() {
        let key = &requests[i % PAYMENTS].0;
        assert_eq!(
            outcome.last.status,
            200,
            "a payment never succeeded: {outcome:?}\nrecord on node 1: {}",
            cluster.exec_on(
                0,
                Some(&cluster.name),
                &format!(
                    "SELECT status, claim_token, lease_expires_at, expires_at, created_at, updated_at, \
                     response_status FROM idempotent_record WHERE idem_key = '{key}'"
                )
            )
        );
        for &(instance, status, sent_ms) in &outcome.errors {
            assert!(
                status == 503 || status == 0,
                "instance {instance} answered {status}"
            );
            if node3.contains(&instance) {
                refused += 1;
            } else {
                assert!(
                    sent_ms < reformed_ms,
                    "instance {instance} (node {}) answered {status} {} ms after the cluster \
                     re-formed; only node 3's may fail then",
                    instance % 3 + 1,
                    sent_ms - reformed_ms
                );
                stalled += 1;
            }
        }
    }
    let slowest = outcomes
        .iter()
        .map(|outcome| outcome.answered_ms - outcome.started_ms)
        .max()
        .unwrap_or(0);
    let busy: Vec<i64> = outcomes
        .iter()
        .flat_map(|outcome| &outcome.busy)
        .filter(|(instance, _, _)| !node3.contains(instance))
        .map(|(_, _, answered_ms)| answered_ms - killed_ms)
        .collect();
    let busy_on_node3 = outcomes
        .iter()
        .flat_map(|outcome| &outcome.busy)
        .filter(|(instance, sent_ms, _)| node3.contains(instance) && *sent_ms > killed_ms)
        .count();
    let slowest_refusal = outcomes
        .iter()
        .flat_map(|outcome| &outcome.refusal_ms)
        .max()
        .copied()
        .unwrap_or(0);
    let replays = outcomes.iter().filter(|o| o.last.replayed).count();
    eprintln!(
        "galera: node 3 SIGKILLed mid-burst of {PAYMENTS} payments × {COPIES} copies; the \
         survivors re-formed the primary component {} ms later. {} × 200 ({replays} replays); \
         instances on node 3: {refused} × 503 or refused connection (slowest {slowest_refusal} \
         ms), {busy_on_node3} × 429 after the kill; instances on nodes 1 and 2: {stalled} attempts timed out or \
         503 during the stall, {} × 429, the last {} ms after the kill ({} ms after the \
         re-forming); slowest payment answered after {slowest} ms",
        reformed_ms - killed_ms,
        outcomes.len(),
        busy.len(),
        busy.iter().max().copied().unwrap_or(0),
        busy.iter().max().copied().unwrap_or(0) + killed_ms - reformed_ms,
    );
    assert!(refused > 0, "the kill did not land during the burst");
    assert_eq!(
        busy_on_node3, 0,
        "an instance whose node was down answered 429 (retry here) instead of 503"
    );

    // Inside the window (node 3 takes longer than that to rejoin), every
    // instance on the surviving nodes replays each payment, byte for byte
    // what its clients got.
    for (i, (key, body)) in requests.iter().enumerate() {
        let answered: Vec<&Vec<u8>> = outcomes
            .iter()
            .skip(i)
            .step_by(PAYMENTS)
            .map(|outcome| &outcome.last.body)
            .collect();
        assert!(
            answered.windows(2).all(|pair| pair[0] == pair[1]),
            "the copies of payment {i} were answered differently"
        );
        for (instance, server) in servers.iter().enumerate() {
            if node3.contains(&instance) {
                continue;
            }
            let replay = post(server, Some(key), body);
            assert!(replay.replayed, "{replay:?}");
            assert_eq!(&replay.body, answered[0], "replay on instance {instance}");
        }
    }

    cluster.start_node(3);
    cluster.wait_for_replication();
    for order in &orders {
        assert_eq!(
            cluster.paid_rows_per_node(order),
            [1, 1, 1],
            "order {order}"
        );
    }
    // Node 3 rejoined: it holds the same records, stored answers included.
    let counts = cluster.record_counts();
    let digests: Vec<String> = (0..3).map(|node| cluster.records_digest(node)).collect();
    assert!(
        counts.windows(2).all(|pair| pair[0] == pair[1]),
        "record counts per node: {counts:?}"
    );
    assert!(
        digests.windows(2).all(|pair| pair[0] == pair[1]),
        "stored records differ between nodes: {digests:?}"
    );
    eprintln!(
        "galera: node 3 rejoined: paid_log rows per node [1, 1, 1] for each of the {PAYMENTS} \
         orders; replays byte-identical on the {} instances of nodes 1 and 2; records per node \
         {counts:?}, their keys, states and stored answers identical on every node",
        INSTANCES - node3.len()
    );
}

#[derive(Debug)]
struct ClientOutcome {
    last: Answer,
    /// When the first and the last attempt were sent (Unix ms).
    started_ms: i64,
    answered_ms: i64,
    /// (instance, status, when sent) of every 5xx; status 0 for a refused
    /// connection or a timeout.
    errors: Vec<(usize, u16, i64)>,
    /// How long each of those took to come back (ms).
    refusal_ms: Vec<i64>,
    /// (instance, when sent, when answered) of every 429 (Unix ms).
    busy: Vec<(usize, i64, i64)>,
}

/// A client as the contract describes it: each attempt times out after
/// `client.timeout`; a 5xx or a transport error moves on to the next
/// instance; an in-progress answer is retried after its `Retry-After`. It
/// stays inside the window, after which the key would be a new one.
fn retry_until_answered(bases: &[String], first: usize, key: &str, body: &str) -> ClientOutcome {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .timeout_global(Some(CLIENT_TIMEOUT))
        .build()
        .into();
    let started = Instant::now();
    let started_ms = now_ms();
    let mut instance = first % bases.len();
    let mut errors = Vec::new();
    let mut refusal_ms = Vec::new();
    let mut busy = Vec::new();
    loop {
        assert!(
            started.elapsed() < WINDOW,
            "no answer inside the {WINDOW:?} window; errors: {errors:?}; 429s: {busy:?}"
        );
        let sent_ms = now_ms();
        let sent = send(&agent, &bases[instance], Some(key), body);
        if !matches!(&sent, Ok(answer) if answer.status < 500) {
            refusal_ms.push(now_ms() - sent_ms);
        }
        match sent {
            Ok(answer) if answer.status == 429 => {
                busy.push((instance, sent_ms, now_ms()));
                let wait = answer
                    .retry_after
                    .as_deref()
                    .and_then(|secs| secs.parse().ok())
                    .map_or(Duration::from_millis(300), Duration::from_secs);
                thread::sleep(wait);
            }
            Ok(answer) if answer.status >= 500 => {
                errors.push((instance, answer.status, sent_ms));
                instance = (instance + 1) % bases.len();
            }
            Ok(answer) => {
                return ClientOutcome {
                    last: answer,
                    started_ms,
                    answered_ms: now_ms(),
                    errors,
                    refusal_ms,
                    busy,
                };
            }
            Err(_) => {
                errors.push((instance, 0, sent_ms));
                instance = (instance + 1) % bases.len();
            }
        }
    }
}

/// The cluster's three nodes and a database of this run's on them.
struct Cluster {
    nodes: Vec<String>,
    name: String,
    logs: tempfile::TempDir,
}

impl Cluster {
    fn create() -> Option<Cluster> {
        let urls = std::env::var("IDEMGEN_TEST_GALERA_URLS").ok()?;
        let nodes: Vec<String> = urls
            .split(',')
            .map(|url| url.trim().trim_end_matches('/').to_string())
            .filter(|url| !url.is_empty())
            .collect();
        assert_eq!(
            nodes.len(),
            3,
            "IDEMGEN_TEST_GALERA_URLS names three nodes: {urls}"
        );
        let name = format!(
            "idem_galera_{}_{}",
            std::process::id(),
            now_ms() % 1_000_000
        );
        let cluster = Cluster {
            nodes,
            name,
            logs: tempfile::Builder::new()
                .prefix("idemgen-galera-")
                .tempdir()
                .unwrap(),
        };
        cluster.start_missing_nodes();
        cluster.exec_on(0, None, &format!("CREATE DATABASE {}", cluster.name));
        cluster.wait_for_replication();
        Some(cluster)
    }

    /// The URL of this run's database on `node` (0-based).
    fn url(&self, node: usize) -> String {
        let base = &self.nodes[node];
        let server = base
            .rsplit_once('/')
            .map_or(base.as_str(), |(server, _)| server);
        format!("{server}/{}", self.name)
    }

    fn start(&self, binary: &Path, node: usize, delay_ms: u64) -> Server {
        Server::start_at(binary, &self.url(node), self.logs.path(), delay_ms, &[])
    }

    fn client(&self, node: usize, database: Option<&str>) -> Command {
        let url = &self.nodes[node];
        let authority = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
        let authority = authority.split('/').next().unwrap();
        let (user, hostport) = authority.rsplit_once('@').unwrap_or(("root", authority));
        let (host, port) = hostport.rsplit_once(':').unwrap_or((hostport, "3306"));
        let mut command = Command::new("mysql");
        command.args([
            "--no-defaults",
            "--protocol=TCP",
            "-N",
            "-B",
            "-h",
            host,
            "-P",
            port,
            "-u",
        ]);
        match user.split_once(':') {
            Some((user, password)) => {
                command.arg(user).env("MYSQL_PWD", password);
            }
            None => {
                command.arg(user);
            }
        }
        if let Some(database) = database {
            command.arg(database);
        }
        command
    }

    fn exec_on(&self, node: usize, database: Option<&str>, sql: &str) -> String {
        let output = self
            .client(node, database)
            .args(["-e", sql])
            .output()
            .expect("the mysql client runs");
        assert!(
            output.status.success(),
            "`{sql}` on node {}: {}",
            node + 1,
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// `sql` on `node`, after waiting for every write the cluster has
    /// committed (`wsrep_sync_wait`).
    fn count(&self, node: usize, sql: &str) -> i64 {
        let text = self.exec_on(
            node,
            Some(&self.name),
            &format!("SET SESSION wsrep_sync_wait = 1; {sql}"),
        );
        text.parse()
            .unwrap_or_else(|_| panic!("`{sql}` answered {text:?}"))
    }

    fn seed_order(&self, amount: i64) -> String {
        let order = unique_order_no();
        self.insert_order(&order, amount);
        order
    }

    fn insert_order(&self, order: &str, amount: i64) {
        self.exec_on(
            0,
            Some(&self.name),
            &format!("INSERT INTO orders (order_no, amount) VALUES ('{order}', {amount})"),
        );
    }

    /// `idempotent_record` rows on each node.
    fn record_counts(&self) -> Vec<i64> {
        (0..3)
            .map(|node| self.count(node, "SELECT COUNT(*) FROM idempotent_record"))
            .collect()
    }

    /// A digest of every record's key, state and stored answer on `node`.
    fn records_digest(&self, node: usize) -> String {
        self.exec_on(
            node,
            Some(&self.name),
            "SET SESSION wsrep_sync_wait = 1; SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS('|', \
             scope, idem_key, fingerprint, status, claim_token, response_status, \
             response_content_type, HEX(response_body)))) FROM idempotent_record",
        )
    }

    fn paid_rows_per_node(&self, order: &str) -> [i64; 3] {
        let sql = format!("SELECT COUNT(*) FROM paid_log WHERE order_no = '{order}'");
        [
            self.count(0, &sql),
            self.count(1, &sql),
            self.count(2, &sql),
        ]
    }

    fn wait_for_record(&self, key: &str, status: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let sql = format!(
            "SELECT COUNT(*) FROM idempotent_record WHERE idem_key = '{key}' AND status = '{status}'"
        );
        while self.count(0, &sql) == 0 {
            assert!(
                Instant::now() < deadline,
                "the record of {key} never became {status}"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until a transaction of this run's database on node 1 has
    /// written and not committed (a claim in a business transaction).
    fn wait_for_uncommitted_claim(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let sql = format!(
            "SELECT COUNT(*) FROM information_schema.INNODB_TRX AS trx \
             JOIN information_schema.PROCESSLIST AS session ON session.ID = trx.trx_mysql_thread_id \
             WHERE session.DB = '{}' AND trx.trx_rows_modified > 0",
            self.name
        );
        while self.exec_on(0, None, &sql) == "0" {
            assert!(
                Instant::now() < deadline,
                "no claim was ever held uncommitted on node 1"
            );
            // InnoDB refreshes what `INNODB_TRX` shows only when nobody read
            // it in the last 100 ms: polled faster, it keeps showing the
            // first read's transactions (none yet) until the attempt ends.
            thread::sleep(Duration::from_millis(150));
        }
    }

    /// Waits until every node has applied what the cluster committed.
    fn wait_for_replication(&self) {
        for node in 0..3 {
            if self.node_up(node) {
                self.exec_on(node, None, "SET SESSION wsrep_sync_wait = 15; SELECT 1");
            }
        }
    }

    /// Polls `node` (0-based) until its `wsrep_cluster_size` is `size`;
    /// when it was (Unix ms).
    fn wait_for_cluster_size(&self, node: usize, size: i64) -> i64 {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = self.exec_on(node, None, "SHOW STATUS LIKE 'wsrep_cluster_size'");
            if text.split_whitespace().last() == Some(&size.to_string()) {
                return now_ms();
            }
            assert!(
                Instant::now() < deadline,
                "node {} never saw a cluster of {size}: {text}",
                node + 1
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    fn node_up(&self, node: usize) -> bool {
        self.client(node, None)
            .args(["-e", "SELECT 1"])
            .output()
            .is_ok_and(|output| output.status.success())
    }

    fn script(&self, args: &[&str]) {
        let output = Command::new("bash")
            .arg(root().join("scripts/galera.sh"))
            .args(args)
            .output()
            .expect("scripts/galera.sh runs");
        assert!(
            output.status.success(),
            "scripts/galera.sh {args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Starts every node that is down (a crashed earlier run leaves one).
    fn start_missing_nodes(&self) {
        for node in 0..3 {
            if !self.node_up(node) {
                let _ = Command::new("bash")
                    .arg(root().join("scripts/galera.sh"))
                    .args(["start-node", &(node + 1).to_string()])
                    .output();
            }
        }
    }

    /// SIGKILLs node `n` (1-based).
    fn kill_node(&self, n: usize) {
        self.script(&["kill", &n.to_string()]);
    }

    /// Starts node `n` again and waits until it has caught up.
    fn start_node(&self, n: usize) {
        self.script(&["start-node", &n.to_string()]);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Bring a killed node back for the next run.
        self.start_missing_nodes();
        if thread::panicking() {
            eprintln!(
                "kept database {} for inspection; logs in {}",
                self.name,
                self.logs.path().display()
            );
            std::mem::forget(std::mem::replace(
                &mut self.logs,
                tempfile::tempdir().unwrap(),
            ));
            return;
        }
        let _ = self
            .client(0, None)
            .args(["-e", &format!("DROP DATABASE IF EXISTS {}", self.name)])
            .output();
    }
}
