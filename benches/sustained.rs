//! Sustained load at scale: the payment callback at 100× the article's
//! average rate (400,000 callbacks a day ≈ 4.6/s; 460/s offered by
//! default) against eight instances of the generated service on (a) one
//! MariaDB, (b) one PostgreSQL and (c) a three-node Galera cluster (the
//! instances spread over its nodes), with a realistic duplicate mix:
//!
//! - 95 % of payments are sent once, with a key of their own;
//! - 4 % are retried once with the same key, 0.1–3 s later (a provider
//!   that timed out and sends again);
//! - 1 % arrive as a burst of 10 copies at once (a retry storm).
//!
//! The schedule is open-loop: each send has its time, and its latency is
//! counted from that time, so a service that falls behind shows it in p99
//! instead of being offered less. The same schedule (the same payments,
//! retries and bursts) first goes to eight instances of
//! `examples/naive-callback`'s `POST /plain/pay` (the business step alone,
//! its duplicates answered 409 by the order's own guard): the baseline the
//! figures are ratios to. Then to the generated service, after which the
//! bench reads `/metrics` of every instance (first attempts, replays,
//! in-progress answers), counts orders paid twice in `paid_log` (must be
//! 0) and checks that every payment answered 200 has its `paid_log` row.
//!
//! ```sh
//! IDEMGEN_TEST_MYSQL_URL=mysql://root@127.0.0.1:3306/test \
//! IDEMGEN_TEST_PG_URL=postgres://postgres@127.0.0.1:5432/postgres \
//! IDEMGEN_TEST_GALERA_URLS=$(scripts/galera.sh urls | paste -sd,) \
//! IDEMGEN_SUSTAINED_SECS=300 \
//!   cargo bench --bench sustained
//! ```
//!
//! `IDEMGEN_SUSTAINED_SECS` is the length of each phase (default 20: a
//! smoke run), `IDEMGEN_SUSTAINED_RATE` the payments offered per second
//! (default 460), `IDEMGEN_SUSTAINED_INSTANCES` the service instances
//! (default 8). A setup whose URL is unset is skipped.
//! `IDEMGEN_GENERATED_BIN` measures another build of the generated service.

#[path = "../tests/support/exactly_once.rs"]
mod support;

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use support::skip::skipped;
use support::*;

/// Client threads: enough that a burst's ten copies and the sends around it
/// go out on time while the service answers in tens of milliseconds.
const WORKERS: usize = 96;
/// Connections per generated instance (8 × 5 stays well under a default
/// server's 100, with room for other clients).
const POOL_SIZE: &str = "5";

fn main() {
    let secs = setting("IDEMGEN_SUSTAINED_SECS", 20);
    let rate = setting("IDEMGEN_SUSTAINED_RATE", 460);
    let instances = setting("IDEMGEN_SUSTAINED_INSTANCES", 8);
    let duration = Duration::from_secs(secs as u64);
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|load| load.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();

    let mut setups = Vec::new();
    for (name, dialect) in [
        ("MariaDB", Dialect::Mysql),
        ("PostgreSQL", Dialect::Postgres),
    ] {
        match std::env::var(dialect.env_var())
            .ok()
            .filter(|url| !url.is_empty())
        {
            Some(url) => setups.push(Setup {
                name,
                dialect,
                nodes: vec![url],
            }),
            None => skipped(&format!("set {} to run ({name})", dialect.env_var())),
        }
    }
    match std::env::var("IDEMGEN_TEST_GALERA_URLS") {
        Ok(urls) if !urls.trim().is_empty() => setups.push(Setup {
            name: "Galera (3 nodes)",
            dialect: Dialect::Mysql,
            nodes: urls
                .split(',')
                .map(|url| url.trim().to_string())
                .filter(|url| !url.is_empty())
                .collect(),
        }),
        _ => skipped(
            "set IDEMGEN_TEST_GALERA_URLS to run on Galera \
             (scripts/galera.sh start; IDEMGEN_TEST_GALERA_URLS=$(scripts/galera.sh urls | paste -sd,))",
        ),
    }

    let mut rows = String::new();
    for setup in &setups {
        if let Some(down) = setup.nodes.iter().find(|node| !reachable(node)) {
            skipped(&format!("{}: {down} does not answer", setup.name));
            continue;
        }
        rows.push_str(&run_setup(setup, rate, duration, instances));
    }
    println!("\n## sustained load\n");
    println!(
        "{rate} payments/s offered for {secs} s per phase, {instances} instances, \
         {WORKERS} client threads, release builds; load average before the run: {load}.\n"
    );
    println!(
        "| setup | service | sent | answered/s | × plain | p50 ms | p99 ms | p50 × plain | p99 × plain | answers | replays (/metrics) | in progress (/metrics) | business runs (/metrics) | paid twice | 200 without payment |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|");
    print!("{rows}");
}

/// Whether the server of `url` (`scheme://user@host:port/…`) accepts a
/// connection.
fn reachable(url: &str) -> bool {
    let authority = url.split_once("://").map_or(url, |(_, rest)| rest);
    let hostport = authority.split('/').next().unwrap_or_default();
    let hostport = hostport
        .rsplit_once('@')
        .map_or(hostport, |(_, hostport)| hostport);
    use std::net::ToSocketAddrs;
    hostport.to_socket_addrs().is_ok_and(|mut addresses| {
        addresses.any(|address| {
            std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_ok()
        })
    })
}

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .filter(|value| *value > 0)
        .unwrap_or(default)
}

/// One database setup: its servers' base URLs (one, or a cluster's nodes).
struct Setup {
    name: &'static str,
    dialect: Dialect,
    nodes: Vec<String>,
}

/// One send of the schedule: when (from the start), which payment, and
/// whether it repeats an earlier one.
#[derive(Debug, Clone, Copy)]
struct Send {
    at: Duration,
    payment: usize,
}

/// The payments of one phase and when each copy is sent.
struct Schedule {
    payments: usize,
    sends: Vec<Send>,
    retried: usize,
    bursts: usize,
}

/// A tiny deterministic generator (xorshift64*), so that every run and
/// both phases offer the same mix.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

impl Schedule {
    fn new(rate: usize, duration: Duration) -> Schedule {
        let payments = rate * duration.as_secs() as usize;
        let mut mix = Mix(0x9E37_79B9_7F4A_7C15);
        let mut sends = Vec::with_capacity(payments * 11 / 10);
        let (mut retried, mut bursts) = (0, 0);
        for payment in 0..payments {
            let at = Duration::from_secs_f64(payment as f64 / rate as f64);
            sends.push(Send { at, payment });
            match mix.next() % 100 {
                0..95 => {}
                95..99 => {
                    retried += 1;
                    let delay = Duration::from_millis(100 + mix.next() % 2_900);
                    sends.push(Send {
                        at: at + delay,
                        payment,
                    });
                }
                _ => {
                    bursts += 1;
                    for _ in 1..10 {
                        sends.push(Send { at, payment });
                    }
                }
            }
        }
        sends.sort_by_key(|send| send.at);
        Schedule {
            payments,
            sends,
            retried,
            bursts,
        }
    }
}

/// What one phase saw.
#[derive(Default)]
struct Phase {
    latencies: Vec<Duration>,
    answers: BTreeMap<String, usize>,
    /// Payments that were answered 200 (first or replayed) at least once.
    acknowledged: HashSet<usize>,
    elapsed: Duration,
}

impl Phase {
    fn answered(&self) -> usize {
        self.latencies.len()
    }

    fn throughput(&self) -> f64 {
        self.answered() as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        sorted[((p / 100.0) * (sorted.len() - 1) as f64).round() as usize]
    }

    fn describe_answers(&self) -> String {
        self.answers
            .iter()
            .map(|(answer, count)| format!("{count} × {answer}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Sends `schedule` with [`WORKERS`] threads, round-robin over `bases`;
/// `request` sends payment `i` to a base.
fn drive(
    schedule: &Schedule,
    bases: &[String],
    request: impl Fn(&ureq::Agent, &str, usize) -> Result<Answer, String> + Sync,
) -> Phase {
    let next = AtomicUsize::new(0);
    let phase = Mutex::new(Phase::default());
    let started = Instant::now();
    thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                let agent = agent();
                let mut mine = Phase::default();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(send) = schedule.sends.get(index) else {
                        break;
                    };
                    let due = started + send.at;
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        thread::sleep(wait);
                    }
                    let answer = request(&agent, &bases[index % bases.len()], send.payment);
                    // From when it was due: a late send counts its wait.
                    mine.latencies.push(due.elapsed());
                    let label = match &answer {
                        Ok(answer) if answer.replayed => format!("{} replayed", answer.status),
                        Ok(answer) => answer.status.to_string(),
                        Err(_) => "transport error".into(),
                    };
                    if answer.is_ok_and(|answer| answer.status == 200) {
                        mine.acknowledged.insert(send.payment);
                    }
                    *mine.answers.entry(label).or_default() += 1;
                }
                let mut phase = phase.lock().unwrap();
                phase.latencies.extend(mine.latencies);
                phase.acknowledged.extend(mine.acknowledged);
                for (label, count) in mine.answers {
                    *phase.answers.entry(label).or_default() += count;
                }
            });
        }
    });
    let mut phase = phase.into_inner().unwrap();
    phase.elapsed = started.elapsed();
    phase
}

/// Both phases on one setup; its table rows.
fn run_setup(setup: &Setup, rate: usize, duration: Duration, instances: usize) -> String {
    let dialect = setup.dialect;
    let db = Database::create_at(dialect, Some(&setup.nodes[0]));
    let binaries = Binaries::build(dialect, Profile::Release).with_override(dialect);
    let schedule = Schedule::new(rate, duration);
    eprintln!(
        "{}: {} payments ({} retried once, {} bursts of 10), {} sends per phase",
        setup.name,
        schedule.payments,
        schedule.retried,
        schedule.bursts,
        schedule.sends.len()
    );
    let node_url = |instance: usize| db.url_on(&setup.nodes[instance % setup.nodes.len()]);
    let env = [("DATABASE_POOL_SIZE", POOL_SIZE)];

    // The generated service first, alone, so that its migrations create
    // the tables (and the record table) before anything else.
    let generated: Vec<Server> = (0..instances)
        .map(|instance| {
            Server::start_at(
                &binaries.generated,
                &node_url(instance),
                db.dir.path(),
                0,
                &env,
            )
        })
        .collect();
    for prefix in ["P", "I"] {
        seed_orders(&db, prefix, schedule.payments);
    }

    // (1) The plain write: the same schedule, no key.
    let naive: Vec<Server> = (0..instances)
        .map(|instance| {
            Server::start_at(&binaries.naive, &node_url(instance), db.dir.path(), 0, &[])
        })
        .collect();
    let naive_bases: Vec<String> = naive.iter().map(|server| server.base.clone()).collect();
    let plain = drive(&schedule, &naive_bases, |agent, base, payment| {
        plain_pay(agent, base, &format!("P-{payment}"))
    });
    drop(naive);

    // (2) The generated service: one key per payment, its copies reuse it.
    let keys = new_keys(schedule.payments);
    let bases: Vec<String> = generated.iter().map(|server| server.base.clone()).collect();
    let metrics_before = Metrics::read(&bases);
    let idempotent = drive(&schedule, &bases, |agent, base, payment| {
        send(
            agent,
            base,
            Some(&keys[payment]),
            &callback_body(&format!("I-{payment}"), 100),
        )
    });
    let metrics = Metrics::read(&bases).since(&metrics_before);
    drop(generated);

    let doubled = db.count(
        "SELECT COUNT(*) FROM (SELECT order_no FROM paid_log WHERE order_no LIKE 'I-%' \
         GROUP BY order_no HAVING COUNT(*) > 1) AS doubled",
    );
    let paid: HashSet<String> = db
        .query("SELECT order_no FROM paid_log WHERE order_no LIKE 'I-%'")
        .lines()
        .map(str::to_string)
        .collect();
    let unpaid_acknowledged = idempotent
        .acknowledged
        .iter()
        .filter(|payment| !paid.contains(&format!("I-{payment}")))
        .count();
    assert_eq!(doubled, 0, "{}: an order was paid twice", setup.name);
    assert_eq!(
        unpaid_acknowledged, 0,
        "{}: a payment answered 200 has no paid_log row",
        setup.name
    );

    let mut rows = String::new();
    for (service, phase) in [
        ("plain write", &plain),
        ("generated (idempotent)", &idempotent),
    ] {
        let is_plain = std::ptr::eq(phase, &plain);
        rows.push_str(&format!(
            "| {} | {service} | {} | {:.0} | {:.2} | {:.1} | {:.1} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {} |\n",
            setup.name,
            phase.answered(),
            phase.throughput(),
            phase.throughput() / plain.throughput(),
            ms(phase.percentile(50.0)),
            ms(phase.percentile(99.0)),
            phase.percentile(50.0).as_secs_f64() / plain.percentile(50.0).as_secs_f64(),
            phase.percentile(99.0).as_secs_f64() / plain.percentile(99.0).as_secs_f64(),
            phase.describe_answers(),
            if is_plain {
                "–".to_string()
            } else {
                format!(
                    "{} ({:.1} %, {:.1}/s)",
                    metrics.replays,
                    100.0 * metrics.replays as f64 / phase.answered() as f64,
                    metrics.replays as f64 / phase.elapsed.as_secs_f64()
                )
            },
            if is_plain {
                "–".to_string()
            } else {
                metrics.in_progress.to_string()
            },
            if is_plain {
                "–".to_string()
            } else {
                format!("{} of {} payments", metrics.first_attempts, schedule.payments)
            },
            if is_plain { "–".to_string() } else { doubled.to_string() },
            if is_plain {
                "–".to_string()
            } else {
                unpaid_acknowledged.to_string()
            },
        ));
    }
    eprint!("{rows}");
    rows
}

/// The counters of `/metrics`, summed over instances.
#[derive(Debug, Default, Clone, Copy)]
struct Metrics {
    first_attempts: i64,
    replays: i64,
    in_progress: i64,
}

impl Metrics {
    fn read(bases: &[String]) -> Metrics {
        let mut total = Metrics::default();
        for base in bases {
            let (_, text) = get(base, "/metrics").expect("metrics");
            for line in text.lines() {
                let Some((name, value)) = line.split_once('{').and_then(|(name, rest)| {
                    Some((name, rest.rsplit(' ').next()?.parse::<i64>().ok()?))
                }) else {
                    continue;
                };
                match name {
                    "idempotency_first_attempts_total" => total.first_attempts += value,
                    "idempotency_replays_total" => total.replays += value,
                    "idempotency_in_progress_total" => total.in_progress += value,
                    _ => {}
                }
            }
        }
        total
    }

    fn since(self, before: &Metrics) -> Metrics {
        Metrics {
            first_attempts: self.first_attempts - before.first_attempts,
            replays: self.replays - before.replays,
            in_progress: self.in_progress - before.in_progress,
        }
    }
}

fn seed_orders(db: &Database, prefix: &str, count: usize) {
    let sql = match db.dialect {
        Dialect::Mysql => format!(
            "INSERT INTO orders (order_no, amount) SELECT CONCAT('{prefix}-', seq), 100 FROM seq_0_to_{}",
            count - 1
        ),
        _ => format!(
            "INSERT INTO orders (order_no, amount) SELECT '{prefix}-' || n, 100 FROM generate_series(0, {}) AS n",
            count - 1
        ),
    };
    db.exec(&sql);
}

fn plain_pay(agent: &ureq::Agent, base: &str, order: &str) -> Result<Answer, String> {
    let response = agent
        .post(format!("{base}/plain/pay"))
        .header("content-type", "application/json")
        .send(callback_body(order, 100))
        .map_err(|error| error.to_string())?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .read_to_vec()
        .map_err(|error| error.to_string())?;
    Ok(Answer {
        status,
        retry_after: None,
        replayed: false,
        body,
    })
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
