//! What idempotency costs under load, on SQLite, MariaDB and PostgreSQL:
//!
//! - (a) `plain`: the business step alone (one transaction: mark the order
//!   paid, one `paid_log` row), served by `examples/naive-callback`'s
//!   `POST /plain/pay`: the baseline;
//! - (b) `first`: first-time idempotent writes through the generated
//!   example (claim, business step, fenced completion), once per claim
//!   mode (`store.claim`): `committed` (the example's contract: the claim
//!   commits on its own, then the business transaction) and
//!   `in-transaction` (the same service with its callback's claim in the
//!   business transaction: one commit);
//! - (c) `replay`: repeats of completed keys, answered from the record;
//! - (d) `burst`: every client sends the same new key at once, round after
//!   round (one pays, the rest get 429 or the replay), once per claim mode.
//!
//! Each runs for a fixed time with N client threads (keep-alive
//! connections) against release builds as a generated project makes them
//! (its `[profile.release]`: fat LTO, one codegen unit; the baseline built
//! alike), one server process each, in the same run; the table gives each
//! as a ratio to (a). No assertion depends on time. SQLite (a file of the run's own, shared by the server processes)
//! always runs; run with
//!
//! ```sh
//! IDEMGEN_TEST_MYSQL_URL=mysql://root@127.0.0.1:3306/test \
//! IDEMGEN_TEST_PG_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!   cargo bench --bench load
//! ```
//!
//! Each row also gives, per request, what is behind the ratio: statements
//! (MariaDB's `Questions`, server-wide; PostgreSQL's `pg_stat_statements`
//! where the server has it), commits (PostgreSQL's `xact_commit`, which
//! counts a read outside a transaction as one), log flushes
//! (`pg_stat_wal.wal_sync`; MariaDB's redo log writes), and CPU time: the
//! service's, the database server's (every process of it, background
//! work included; where the server runs on this machine) and the load
//! generator's (this bench's own threads). The three share the machine's
//! cores, so when they are busy their sum per request is what bounds a
//! scenario's throughput.
//!
//! `IDEMGEN_BENCH_CLIENTS` (default 16) and `IDEMGEN_BENCH_SECS` (default
//! 10) tune it; a dialect whose URL is unset is skipped.
//! `IDEMGEN_GENERATED_BIN=/path/{dialect}/payment-callback` measures
//! another build of the generated service (a candidate fix) instead.
//!
//! `IDEMGEN_COMPARE_BINS=/a/{dialect}/payment-callback,/b/{dialect}/payment-callback`
//! compares builds instead (MariaDB and PostgreSQL): `IDEMGEN_BENCH_ROUNDS` rounds (default 3) of
//! (a), then (b) and (c) on each build (their order turning round by round),
//! each ratio taken to the (a) of its own round, with the profile behind
//! it per request: statements (PostgreSQL's `pg_stat_statements`, where
//! the server has it), commits, WAL flushes (`pg_stat_wal.wal_sync`), and
//! CPU time of the service process and of the database server (the
//! MariaDB figures as above).

#[path = "../tests/support/exactly_once.rs"]
mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use support::skip::skipped;
use support::*;

/// Orders seeded per scenario: more than any scenario gets through in its
/// time on a small machine; a scenario that runs out stops early and says so.
const ORDERS_PER_SCENARIO: usize = 200_000;
/// Completed keys the replay scenario cycles through.
const REPLAY_KEYS: usize = 2_000;

fn main() {
    let clients = setting("IDEMGEN_BENCH_CLIENTS", 16);
    let duration = Duration::from_secs(setting("IDEMGEN_BENCH_SECS", 10) as u64);
    let machine = machine();
    let mut tables = Vec::new();
    let compared: Vec<String> = std::env::var("IDEMGEN_COMPARE_BINS")
        .unwrap_or_default()
        .split(',')
        .map(|path| path.trim().to_string())
        .filter(|path| !path.is_empty())
        .collect();
    for dialect in [Dialect::Sqlite, Dialect::Mysql, Dialect::Postgres] {
        // Comparing builds profiles the database server and its
        // statements: SQLite has none.
        if dialect == Dialect::Sqlite && !compared.is_empty() {
            continue;
        }
        let Some(db) = Database::create(dialect) else {
            skipped(&format!("set {} to run ({dialect:?})", dialect.env_var()));
            continue;
        };
        if compared.is_empty() {
            tables.push(bench(&db, clients, duration));
        } else {
            let rounds = setting("IDEMGEN_BENCH_ROUNDS", 3);
            tables.push(compare(&db, &compared, clients, duration, rounds));
        }
    }
    if !compared.is_empty() {
        println!("\n## first-time writes and replays, builds compared\n");
        println!("{machine}");
        println!(
            "{clients} client threads, {} s per run, one server process each, release builds (fat LTO, one codegen unit).\n",
            duration.as_secs()
        );
        println!(
            "| database | round | service | req/s | × (a) | p50 ms | p99 ms | statements/request | commits/request | WAL flushes/request | service CPU µs/request | database CPU µs/request |"
        );
        println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for table in &tables {
            print!("{table}");
        }
        return;
    }
    println!("\n## idempotency under load\n");
    println!("{machine}");
    println!(
        "{clients} client threads, {} s per scenario, one server process each, release builds (fat LTO, one codegen unit).\n",
        duration.as_secs()
    );
    println!(
        "| database | scenario | requests | req/s | × (a) | p50 ms | p99 ms | p50 × (a) | p99 × (a) | answers | statements/request | commits/request | log flushes/request | service CPU µs/request | database CPU µs/request | load generator CPU µs/request |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|");
    for table in &tables {
        print!("{table}");
    }
}

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .filter(|value| *value > 0)
        .unwrap_or(default)
}

/// The four scenarios on one database; their table rows.
fn bench(db: &Database, clients: usize, duration: Duration) -> String {
    let binaries = Binaries::build(db.dialect, Profile::Shipped).with_override(db.dialect);
    let generated = Server::start(&binaries.generated, db, 0);
    let naive = Server::start(&binaries.naive, db, 0);
    let database = match db.dialect {
        Dialect::Sqlite => format!("SQLite {}", db.query("SELECT sqlite_version()")),
        // "10.11.19-MariaDB-…".
        Dialect::Mysql => {
            let version = db.query("SELECT VERSION()");
            format!("MariaDB {}", version.split('-').next().unwrap_or_default())
        }
        // "PostgreSQL 15.14 (Debian …) on …".
        Dialect::Postgres => {
            let version = db.query("SELECT VERSION()");
            version.split(' ').take(2).collect::<Vec<_>>().join(" ")
        }
    };
    let one_commit_binary = support::build::one_commit_service_built(db.dialect, Profile::Shipped);
    let one_commit = Server::start(&one_commit_binary, db, 0);
    for prefix in ["W", "A", "B", "C", "R", "D", "E"] {
        seed_orders(db, prefix, ORDERS_PER_SCENARIO);
    }

    // Warm both servers' pools and the database's caches.
    drive(
        clients,
        Duration::from_secs(2),
        ORDERS_PER_SCENARIO,
        |agent, i| plain(agent, &naive.base, &format!("W-{i}")),
    );

    let keys = new_keys(ORDERS_PER_SCENARIO);
    let profiler = Profiler::start(db, naive.pid());
    let mut plain_run = drive(clients, duration, ORDERS_PER_SCENARIO, |agent, i| {
        plain(agent, &naive.base, &format!("A-{i}"))
    });
    plain_run.profile = profiler.per_request(&plain_run);
    let profiler = Profiler::start(db, generated.pid());
    let mut first_run = drive(clients, duration, ORDERS_PER_SCENARIO, |agent, i| {
        let order = format!("B-{i}");
        send(
            agent,
            &generated.base,
            Some(&keys[i]),
            &callback_body(&order, 100),
        )
    });

    first_run.profile = profiler.per_request(&first_run);
    let one_commit_keys = new_keys(ORDERS_PER_SCENARIO);
    let profiler = Profiler::start(db, one_commit.pid());
    let mut one_commit_run = drive(clients, duration, ORDERS_PER_SCENARIO, |agent, i| {
        let order = format!("C-{i}");
        send(
            agent,
            &one_commit.base,
            Some(&one_commit_keys[i]),
            &callback_body(&order, 100),
        )
    });
    one_commit_run.profile = profiler.per_request(&one_commit_run);

    // The bursts come before the replays' set-up: its UPDATE of every
    // replay key leaves the database purging old row versions for a while,
    // which would weigh on whichever scenario came next.
    let burst_keys = new_keys(ORDERS_PER_SCENARIO);
    let profiler = Profiler::start(db, generated.pid());
    let mut burst_run = drive_rounds(clients, duration, ORDERS_PER_SCENARIO, |agent, round| {
        send(
            agent,
            &generated.base,
            Some(&burst_keys[round]),
            &callback_body(&format!("D-{round}"), 100),
        )
    });
    burst_run.profile = profiler.per_request(&burst_run);
    let one_commit_burst_keys = new_keys(ORDERS_PER_SCENARIO);
    let profiler = Profiler::start(db, one_commit.pid());
    let mut one_commit_burst_run =
        drive_rounds(clients, duration, ORDERS_PER_SCENARIO, |agent, round| {
            send(
                agent,
                &one_commit.base,
                Some(&one_commit_burst_keys[round]),
                &callback_body(&format!("E-{round}"), 100),
            )
        });
    one_commit_burst_run.profile = profiler.per_request(&one_commit_burst_run);
    // Keys to replay: completed now, their window pushed out so that a long
    // run does not outlive it (the window is the example's 18 s).
    let replay_keys = new_keys(REPLAY_KEYS);
    let replay_bodies: Vec<String> = (0..REPLAY_KEYS)
        .map(|i| callback_body(&format!("R-{i}"), 100))
        .collect();
    let prepared_from = now_ms();
    let prepared = drive(clients, Duration::from_secs(60), REPLAY_KEYS, |agent, i| {
        send(
            agent,
            &generated.base,
            Some(&replay_keys[i]),
            &replay_bodies[i],
        )
    });
    assert_eq!(prepared.count(200), REPLAY_KEYS, "preparing the replays");
    db.exec(&format!(
        "UPDATE idempotent_record SET expires_at = expires_at + 3600000 \
         WHERE created_at >= {prepared_from}"
    ));
    let profiler = Profiler::start(db, generated.pid());
    let mut replay_run = drive(clients, duration, usize::MAX, |agent, i| {
        let pick = i % REPLAY_KEYS;
        send(
            agent,
            &generated.base,
            Some(&replay_keys[pick]),
            &replay_bodies[pick],
        )
    });

    replay_run.profile = profiler.per_request(&replay_run);

    drop(one_commit);
    // Not a timing: the bursts must not have paid any order twice.
    let doubled = db.count(
        "SELECT COUNT(*) FROM (SELECT order_no FROM paid_log GROUP BY order_no HAVING COUNT(*) > 1) AS doubled",
    );
    assert_eq!(doubled, 0, "an order was paid twice under load");
    drop(generated);
    drop(naive);

    let mut rows = String::new();
    for (name, run) in [
        ("(a) plain write", &plain_run),
        ("(b) first-time idempotent, committed claim", &first_run),
        (
            "(b) first-time idempotent, in-transaction claim",
            &one_commit_run,
        ),
        ("(c) replay", &replay_run),
        ("(d) duplicate burst, committed claim", &burst_run),
        (
            "(d) duplicate burst, in-transaction claim",
            &one_commit_burst_run,
        ),
    ] {
        rows.push_str(&format!(
            "| {database} | {name} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {} | {} |\n",
            run.latencies.len(),
            run.throughput(),
            run.throughput() / plain_run.throughput(),
            ms(run.percentile(50.0)),
            ms(run.percentile(99.0)),
            run.percentile(50.0).as_secs_f64() / plain_run.percentile(50.0).as_secs_f64(),
            run.percentile(99.0).as_secs_f64() / plain_run.percentile(99.0).as_secs_f64(),
            run.describe_answers(),
            figure(run.profile.statements, 1),
            figure(run.profile.commits, 1),
            figure(run.profile.wal_syncs, 2),
            figure(run.profile.service_cpu_us, 0),
            figure(run.profile.database_cpu_us, 0),
            figure(run.profile.load_generator_cpu_us, 0),
        ));
    }
    eprint!("{rows}");
    rows
}

/// Rounds of (a), (b) and (c) on each of `builds`; their table rows.
fn compare(
    db: &Database,
    builds: &[String],
    clients: usize,
    duration: Duration,
    rounds: usize,
) -> String {
    let binaries = Binaries::build(db.dialect, Profile::Shipped);
    let generated: Vec<(String, Server)> = builds
        .iter()
        .map(|build| {
            let path = build.replace("{dialect}", db.dialect.feature());
            // The directory that names the build: `…/<build>/<dialect>/payment-callback`.
            let name = std::path::Path::new(&path)
                .ancestors()
                .nth(2)
                .and_then(|dir| dir.file_name())
                .map_or_else(|| path.clone(), |name| name.to_string_lossy().into_owned());
            (name, Server::start(std::path::Path::new(&path), db, 0))
        })
        .collect();
    let naive = Server::start(&binaries.naive, db, 0);
    let database = match db.dialect {
        Dialect::Mysql => "MariaDB",
        _ => "PostgreSQL",
    };
    let orders = 60_000;
    seed_orders(db, "W", orders);
    drive(clients, Duration::from_secs(2), orders, |agent, i| {
        plain(agent, &naive.base, &format!("W-{i}"))
    });
    // Each build's keys to replay: completed now, their window pushed out
    // so that the rounds do not outlive it (the window is the example's 18 s).
    let replays: Vec<(Vec<String>, Vec<String>)> = generated
        .iter()
        .enumerate()
        .map(|(build, (_, server))| {
            let prefix = format!("R{build}");
            seed_orders(db, &prefix, REPLAY_KEYS);
            let keys = new_keys(REPLAY_KEYS);
            let bodies: Vec<String> = (0..REPLAY_KEYS)
                .map(|i| callback_body(&format!("{prefix}-{i}"), 100))
                .collect();
            let prepared = drive(clients, Duration::from_secs(60), REPLAY_KEYS, |agent, i| {
                send(agent, &server.base, Some(&keys[i]), &bodies[i])
            });
            assert_eq!(prepared.count(200), REPLAY_KEYS, "preparing the replays");
            (keys, bodies)
        })
        .collect();
    db.exec("UPDATE idempotent_record SET expires_at = expires_at + 3600000");
    let mut rows = String::new();
    for round in 0..rounds {
        let prefix = format!("A{round}");
        seed_orders(db, &prefix, orders);
        let profile = Profiler::start(db, naive.pid());
        let plain_run = drive(clients, duration, orders, |agent, i| {
            plain(agent, &naive.base, &format!("{prefix}-{i}"))
        });
        let plain_profile = profile.per_request(&plain_run);
        rows.push_str(&compared_row(
            database,
            round,
            "(a) plain write",
            &plain_run,
            &plain_run,
            &plain_profile,
        ));
        for turn in 0..generated.len() {
            let (name, server) = &generated[(turn + round) % generated.len()];
            let prefix = format!("B{round}{turn}");
            seed_orders(db, &prefix, orders);
            let keys = new_keys(orders);
            let profile = Profiler::start(db, server.pid());
            eprintln!("round {}: (b) on {name}", round + 1);
            let run = drive(clients, duration, orders, |agent, i| {
                send(
                    agent,
                    &server.base,
                    Some(&keys[i]),
                    &callback_body(&format!("{prefix}-{i}"), 100),
                )
            });
            let measured = profile.per_request(&run);
            rows.push_str(&compared_row(
                database,
                round,
                &format!("(b) first-time, {name}"),
                &run,
                &plain_run,
                &measured,
            ));
        }
        for turn in 0..generated.len() {
            let build = (turn + round) % generated.len();
            let (name, server) = &generated[build];
            let (keys, bodies) = &replays[build];
            let profile = Profiler::start(db, server.pid());
            eprintln!("round {}: (c) on {name}", round + 1);
            let run = drive(clients, duration, usize::MAX, |agent, i| {
                let pick = i % REPLAY_KEYS;
                send(agent, &server.base, Some(&keys[pick]), &bodies[pick])
            });
            assert_eq!(run.count(200), run.latencies.len(), "replays answer 200");
            let measured = profile.per_request(&run);
            rows.push_str(&compared_row(
                database,
                round,
                &format!("(c) replay, {name}"),
                &run,
                &plain_run,
                &measured,
            ));
        }
        eprint!("{rows}");
    }
    rows
}

fn compared_row(
    database: &str,
    round: usize,
    service: &str,
    run: &Run,
    plain_run: &Run,
    profile: &PerRequest,
) -> String {
    format!(
        "| {database} | {} | {service} | {:.0} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} | {} |\n",
        round + 1,
        run.throughput(),
        run.throughput() / plain_run.throughput(),
        ms(run.percentile(50.0)),
        ms(run.percentile(99.0)),
        figure(profile.statements, 2),
        figure(profile.commits, 2),
        figure(profile.wal_syncs, 2),
        figure(profile.service_cpu_us, 0),
        figure(profile.database_cpu_us, 0),
    )
}

/// A measured figure with `digits` decimals, `–` where there is none.
fn figure(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "–".to_string(), |value| format!("{value:.digits$}"))
}

/// Counters read before and after a run, per request.
#[derive(Debug, Default)]
struct PerRequest {
    statements: Option<f64>,
    commits: Option<f64>,
    wal_syncs: Option<f64>,
    service_cpu_us: Option<f64>,
    database_cpu_us: Option<f64>,
    /// The bench's own threads, sending the requests and reading answers.
    load_generator_cpu_us: Option<f64>,
}

/// What the counters read at the start of a run.
struct Profiler<'a> {
    db: &'a Database,
    service: u32,
    counters: Counters,
}

#[derive(Debug, Default)]
struct Counters {
    statements: Option<i64>,
    commits: Option<i64>,
    wal_syncs: Option<i64>,
    service_ticks: Option<u64>,
    load_generator_ticks: Option<u64>,
    /// The database server's CPU ticks ([`server_ticks`]).
    server_ticks: Option<u64>,
}

impl<'a> Profiler<'a> {
    fn start(db: &'a Database, service: u32) -> Profiler<'a> {
        Profiler {
            db,
            service,
            counters: Profiler::read(db, service),
        }
    }

    fn read(db: &Database, service: u32) -> Counters {
        let mut counters = Counters {
            service_ticks: cpu_ticks(service),
            load_generator_ticks: cpu_ticks(std::process::id()),
            server_ticks: server_ticks(db),
            ..Counters::default()
        };
        if db.dialect == Dialect::Mysql {
            // Server-wide (MariaDB counts no other way): the bench is the
            // server's only client while it runs, but for the services'
            // purge, once a minute. Statements are what
            // clients sent (`Questions`: each execution of a prepared
            // statement, not its preparation); flushes are the redo log's
            // writes, each flushed to disk at the default
            // `innodb_flush_log_at_trx_commit = 1` (10.11 has no
            // `Innodb_os_log_fsyncs`), one per group commit.
            let status = db.try_server_query(
                "SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
                 WHERE VARIABLE_NAME = 'QUESTIONS'), (SELECT VARIABLE_VALUE FROM \
                 information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_LOG_WRITES')",
            );
            let mut numbers = status
                .as_deref()
                .unwrap_or_default()
                .split_whitespace()
                .map(|number| number.parse().ok());
            counters.statements = numbers.next().flatten();
            counters.wal_syncs = numbers.next().flatten();
            return counters;
        }
        if db.dialect != Dialect::Postgres {
            return counters;
        }
        // Statistics reach the views up to a second late.
        thread::sleep(Duration::from_millis(1_200));
        let name = db.name();
        let number = |sql: &str| db.try_server_query(sql).and_then(|text| text.parse().ok());
        counters.commits = number(&format!(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = '{name}'"
        ));
        counters.wal_syncs = number("SELECT wal_sync FROM pg_stat_wal");
        counters.statements = number(&format!(
            "SELECT COALESCE(SUM(calls), 0) FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '{name}')"
        ));
        counters
    }

    fn per_request(self, run: &Run) -> PerRequest {
        let after = Profiler::read(self.db, self.service);
        let before = &self.counters;
        let requests = run.latencies.len().max(1) as f64;
        let per = |after: Option<i64>, before: Option<i64>, own: i64| {
            Some((after? - before? - own) as f64 / requests)
        };
        let tick_us = 1_000_000.0 / ticks_per_second();
        let cpu_us = |after: Option<u64>, before: Option<u64>| {
            Some(after?.checked_sub(before?)? as f64 * tick_us / requests)
        };
        PerRequest {
            // The reading query itself is one statement and one commit in
            // another database, or (commits) one in this run's count.
            statements: per(
                after.statements,
                before.statements,
                // Each read of MariaDB's counters adds 2 to them (two
                // reads in a row differ by 2).
                if self.db.dialect == Dialect::Mysql {
                    2
                } else {
                    0
                },
            ),
            commits: per(after.commits, before.commits, 0),
            wal_syncs: per(after.wal_syncs, before.wal_syncs, 0),
            service_cpu_us: cpu_us(after.service_ticks, before.service_ticks),
            database_cpu_us: cpu_us(after.server_ticks, before.server_ticks),
            load_generator_cpu_us: cpu_us(after.load_generator_ticks, before.load_generator_ticks),
        }
    }
}

/// User plus system CPU time of process `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    ticks_at(&stat_fields(pid)?, 11)
}

/// The sum of the two tick counts (user, then system) at `at` in
/// [`stat_fields`]: 11 for the process's own, 13 for its children's that
/// have ended (and that it waited for).
fn ticks_at(fields: &[String], at: usize) -> Option<u64> {
    let user: u64 = fields.get(at)?.parse().ok()?;
    let system: u64 = fields.get(at + 1)?.parse().ok()?;
    Some(user + system)
}

/// The fields of `/proc/PID/stat` after the command name (which is in
/// parentheses and may hold spaces): the state first, the parent's pid
/// second.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields = stat.rsplit_once(')')?.1.split_whitespace();
    Some(fields.map(str::to_string).collect())
}

/// Whether process `pid` on this machine runs one of `programs`: a pid
/// the server reports is another machine's, or another namespace's,
/// when the server runs elsewhere.
fn runs(pid: u32, programs: &[&str]) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|comm| programs.contains(&comm.trim()))
}

/// The CPU ticks the database server has used, where it runs on this
/// machine (`None` otherwise, and for SQLite): MariaDB's one process,
/// found by its pid file; PostgreSQL's postmaster (the checkpointer's
/// parent: the session of the query that asks would be gone), with the
/// processes it started, those still running (sessions, the WAL writer,
/// the checkpointer) and those that ended (autovacuum workers, the
/// sessions that read the counters).
fn server_ticks(db: &Database) -> Option<u64> {
    match db.dialect {
        Dialect::Sqlite => None,
        Dialect::Mysql => {
            let file = db.try_server_query("SELECT @@pid_file")?;
            let pid: u32 = std::fs::read_to_string(file.trim())
                .ok()?
                .trim()
                .parse()
                .ok()?;
            runs(pid, &["mariadbd", "mysqld"])
                .then(|| cpu_ticks(pid))
                .flatten()
        }
        Dialect::Postgres => {
            let parent = |fields: &[String]| fields.get(1)?.parse::<u32>().ok();
            let checkpointer: u32 = db
                .try_server_query(
                    "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'",
                )?
                .trim()
                .parse()
                .ok()?;
            let postmaster = parent(&stat_fields(checkpointer)?)?;
            if !runs(checkpointer, &["postgres"]) || !runs(postmaster, &["postgres"]) {
                return None;
            }
            let running: u64 = std::fs::read_dir("/proc")
                .ok()?
                .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .filter_map(stat_fields)
                .filter(|fields| parent(fields) == Some(postmaster))
                .filter_map(|fields| ticks_at(&fields, 11))
                .sum();
            let postmaster = stat_fields(postmaster)?;
            Some(ticks_at(&postmaster, 11)? + ticks_at(&postmaster, 13)? + running)
        }
    }
}

/// `getconf CLK_TCK`: 100 on Linux.
fn ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|output| String::from_utf8_lossy(&output.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

fn seed_orders(db: &Database, prefix: &str, count: usize) {
    let sql = match db.dialect {
        // MariaDB's sequence engine.
        Dialect::Mysql => format!(
            "INSERT INTO orders (order_no, amount) SELECT CONCAT('{prefix}-', seq), 100 FROM seq_0_to_{}",
            count - 1
        ),
        Dialect::Postgres => format!(
            "INSERT INTO orders (order_no, amount) SELECT '{prefix}-' || n, 100 FROM generate_series(0, {}) AS n",
            count - 1
        ),
        Dialect::Sqlite => format!(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {}) \
             INSERT INTO orders (order_no, amount) SELECT '{prefix}-' || i, 100 FROM n",
            count - 1
        ),
    };
    db.exec(&sql);
}

fn plain(agent: &ureq::Agent, base: &str, order: &str) -> Result<Answer, String> {
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

/// What one scenario saw.
#[derive(Default)]
struct Run {
    latencies: Vec<Duration>,
    /// Status (0: transport error) → count; replays apart.
    answers: BTreeMap<String, usize>,
    elapsed: Duration,
    ran_out: bool,
    /// What the database and the service did per request.
    profile: PerRequest,
}

impl Run {
    fn merge(&mut self, latencies: Vec<Duration>, answers: BTreeMap<String, usize>) {
        self.latencies.extend(latencies);
        for (answer, count) in answers {
            *self.answers.entry(answer).or_default() += count;
        }
    }

    fn count(&self, status: u16) -> usize {
        self.answers
            .iter()
            .filter(|(answer, _)| answer.starts_with(&status.to_string()))
            .map(|(_, count)| count)
            .sum()
    }

    fn throughput(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
        sorted[rank]
    }

    fn describe_answers(&self) -> String {
        let mut parts: Vec<String> = self
            .answers
            .iter()
            .map(|(answer, count)| format!("{count} × {answer}"))
            .collect();
        if self.ran_out {
            parts.push("(ran out of orders)".into());
        }
        parts.join(", ")
    }
}

fn label(answer: &Result<Answer, String>) -> String {
    match answer {
        Ok(answer) if answer.replayed => format!("{} replayed", answer.status),
        Ok(answer) => answer.status.to_string(),
        Err(_) => "transport error".into(),
    }
}

/// `clients` threads send requests `0, 1, 2…` (each index once) until
/// `duration` has passed or `limit` requests were sent.
fn drive(
    clients: usize,
    duration: Duration,
    limit: usize,
    request: impl Fn(&ureq::Agent, usize) -> Result<Answer, String> + Sync,
) -> Run {
    let next = AtomicUsize::new(0);
    let run = Mutex::new(Run::default());
    let started = Instant::now();
    thread::scope(|scope| {
        for _ in 0..clients {
            scope.spawn(|| {
                let agent = agent();
                let mut latencies = Vec::new();
                let mut answers = BTreeMap::new();
                while started.elapsed() < duration {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= limit {
                        break;
                    }
                    let sent = Instant::now();
                    let answer = request(&agent, i);
                    latencies.push(sent.elapsed());
                    *answers.entry(label(&answer)).or_default() += 1;
                }
                run.lock().unwrap().merge(latencies, answers);
            });
        }
    });
    let mut run = run.into_inner().unwrap();
    run.elapsed = started.elapsed();
    run.ran_out = next.load(Ordering::Relaxed) >= limit && run.elapsed < duration;
    run
}

/// Rounds in which all `clients` threads send request `round` together,
/// released by a barrier, until `duration` or `limit` rounds.
fn drive_rounds(
    clients: usize,
    duration: Duration,
    limit: usize,
    request: impl Fn(&ureq::Agent, usize) -> Result<Answer, String> + Sync,
) -> Run {
    let barrier = Barrier::new(clients);
    let stop = AtomicBool::new(false);
    let run = Mutex::new(Run::default());
    let started = Instant::now();
    thread::scope(|scope| {
        for client in 0..clients {
            let (barrier, stop, run, request) = (&barrier, &stop, &run, &request);
            scope.spawn(move || {
                let agent = agent();
                let mut latencies = Vec::new();
                let mut answers = BTreeMap::new();
                for round in 0..limit {
                    barrier.wait();
                    // Set by client 0 before it reached this barrier, so
                    // every client sees the same value here.
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let sent = Instant::now();
                    let answer = request(&agent, round);
                    latencies.push(sent.elapsed());
                    *answers.entry(label(&answer)).or_default() += 1;
                    if client == 0 && started.elapsed() >= duration {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                run.lock().unwrap().merge(latencies, answers);
            });
        }
    });
    let mut run = run.into_inner().unwrap();
    run.elapsed = started.elapsed();
    run
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Where the figures came from.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split(':').nth(1))
                .map(|model| model.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = thread::available_parallelism().map_or(0, |cores| cores.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|load| load.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    format!(
        "Machine: {cpu}, {cores} cores available (load average before the run: {load}); \
         clients, servers and the database share them."
    )
}
