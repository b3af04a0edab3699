//! Faults injected into real servers and real service processes: the
//! payment-callback example on SQLite, MariaDB and PostgreSQL, checked in
//! the database afterwards.
//!
//! - **Clock skew**: a second instance runs with its clock an hour ahead
//!   (libfaketime, Debian's `faketime` package, preloaded directly), far
//!   beyond the lease and the window. Leases and windows are read from the
//!   database's clock, so it can neither take over a live claim, nor treat
//!   a completed key as new, nor purge a live record.
//! - **A killed connection**: the business transaction's connection is
//!   killed mid-payment (`KILL CONNECTION`, `pg_terminate_backend`). The
//!   client is told to retry (503 with `Retry-After`), nothing is recorded
//!   as failed, and the retry pays exactly once.
//!
//! - **A pool of two connections** takes 500 duplicates at once: every
//!   answer is 200, a replay or 429 with `Retry-After`, never a 5xx.
//! - **Bodies at the limit**: a request of exactly 1 MiB is processed,
//!   stored and replayed byte for byte; one byte more is 413 and leaves no
//!   record.
//! - **Lock-wait timeouts** (`innodb_lock_wait_timeout=2`, PostgreSQL
//!   `lock_timeout = '2s'`): another session holds the order row during
//!   the business step, or the record row during a takeover. The request
//!   is answered 429 (in progress, retry), nothing is recorded as failed,
//!   and the retry pays once.
//! - **The one-commit claim** (`store.claim: in-transaction`, the same
//!   example generated with that line): a killed connection takes the
//!   claim away with the work (503 with `Retry-After`, no record, the retry
//!   pays once); a locked order row is answered 429 as above; a duplicate
//!   waits on the uncommitted claim, is answered 429, and once the holder
//!   is SIGKILLed its retry pays once.
//! - **`innodb_snapshot_isolation=ON`** (MariaDB) during bursts of
//!   duplicates across two instances.
//! - **The database server restarted** during a burst of many payments ×
//!   many duplicates across two instances, clients retrying within the
//!   window: every payment exactly once, no 5xx but 503 while it is down.
//!   It restarts the shared server, so it is a test of its own
//!   (`*_restarted_mid_burst`) that runs only when
//!   `IDEMGEN_TEST_RESTART_DATABASES=1` (`.ci/run` sets it, and runs it
//!   alone after the other tests).
//!
//! MariaDB and PostgreSQL run when `IDEMGEN_TEST_MYSQL_URL` /
//! `IDEMGEN_TEST_PG_URL` are set; the clock-skew case needs libfaketime.
//! SQLite runs the pool and body cases; the others do not exist for it: it
//! runs inside the service, so its clock is the process's (instances
//! sharing a SQLite file share one machine, hence one clock), there is no
//! connection to kill and no server to restart, and its lock waits are the
//! busy timeout (`crates/idemgen-runtime/tests/lost_races.rs`).

use crate::support::exactly_once as support;
use crate::support::restart::restart_database_server;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use support::build::one_commit_service;
use support::skip::{database_url, generated_builds_skipped, skipped};
use support::*;

/// Where Debian's `faketime` package puts the library.
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// The request limit of the generated service (`MAX_BODY_BYTES`).
const BODY_LIMIT: usize = 1024 * 1024;

#[test]
fn sqlite_faults() {
    if generated_builds_skipped() {
        return;
    }
    let db = Database::create(Dialect::Sqlite).expect("SQLite always runs");
    let binaries = Binaries::get(Dialect::Sqlite);
    let server = Server::start(&binaries.generated, &db, 0);
    a_body_at_the_limit_is_replayed_and_one_byte_more_is_refused(&db, &server);
    drop(server);
    a_pool_of_two_answers_500_duplicates_without_a_5xx(&db, &binaries.generated);
    no_key_is_left_in_progress(&db);
}

#[test]
fn mysql_faults() {
    run(Dialect::Mysql);
}

#[test]
fn postgres_faults() {
    run(Dialect::Postgres);
}

fn run(dialect: Dialect) {
    if database_url(dialect.env_var()).is_none() || generated_builds_skipped() {
        return;
    }
    let Some(db) = Database::create(dialect) else {
        skipped(&format!("set {} to run", dialect.env_var()));
        return;
    };
    let binaries = Binaries::get(dialect);
    let honest = Server::start(&binaries.generated, &db, 1_500);
    if Path::new(LIBFAKETIME).exists() {
        a_clock_an_hour_ahead_changes_nothing(&db, &binaries.generated, &honest);
    } else {
        skipped("install the faketime package to run the clock-skew case");
    }
    a_killed_connection_is_retried_and_pays_once(&db, &honest);
    a_body_at_the_limit_is_replayed_and_one_byte_more_is_refused(&db, &honest);
    drop(honest);
    a_pool_of_two_answers_500_duplicates_without_a_5xx(&db, &binaries.generated);
    {
        let _short = short_lock_waits(&db);
        a_locked_order_row_is_in_progress_not_failed(&db, &binaries.generated);
        a_locked_record_during_a_takeover_is_in_progress(&db, &binaries.generated);
    }
    if dialect == Dialect::Mysql {
        snapshot_isolation_changes_nothing(&db, &binaries.generated);
    }
    // The same service generated with `store.claim: in-transaction`.
    let one_commit = one_commit_service(dialect);
    a_killed_connection_takes_the_one_commit_claim_away(&db, &one_commit);
    {
        let _short = short_lock_waits(&db);
        a_locked_order_row_is_in_progress_not_failed(&db, &one_commit);
        a_duplicate_waits_on_a_one_commit_claim_and_runs_once_its_holder_dies(&db, &one_commit);
    }
    no_key_is_left_in_progress(&db);
}

#[test]
fn mysql_restarted_mid_burst() {
    restarted_mid_burst(Dialect::Mysql);
}

#[test]
fn postgres_restarted_mid_burst() {
    restarted_mid_burst(Dialect::Postgres);
}

/// The restart case, a test of its own: `.ci/run` runs it alone, after
/// the others, and the rest of this file with the other tests.
fn restarted_mid_burst(dialect: Dialect) {
    if database_url(dialect.env_var()).is_none() || generated_builds_skipped() {
        return;
    }
    if std::env::var_os("IDEMGEN_TEST_RESTART_DATABASES").is_none() {
        skipped("set IDEMGEN_TEST_RESTART_DATABASES=1 to restart the database server mid-burst");
        return;
    }
    let Some(db) = Database::create(dialect) else {
        skipped(&format!("set {} to run", dialect.env_var()));
        return;
    };
    let binaries = Binaries::get(dialect);
    a_restarted_database_pays_every_payment_once(&db, &binaries.generated);
    no_key_is_left_in_progress(&db);
}

/// Every case ends with its payments answered 200: whatever was claimed by
/// a killed worker, a timed-out lock wait or a restart has been taken over
/// and completed, so no record may still be in progress.
fn no_key_is_left_in_progress(db: &Database) {
    let stuck = db.query("SELECT idem_key FROM idempotent_record WHERE status <> 'completed'");
    assert_eq!(stuck, "", "keys not completed after the faults");
}

/// The skewed instance starts with `FAKETIME=+1h`; tokio's timers stay on
/// the real monotonic clock (`FAKETIME_DONT_FAKE_MONOTONIC=1`).
fn a_clock_an_hour_ahead_changes_nothing(db: &Database, binary: &Path, honest: &Server) {
    let skewed = Server::start_with(
        binary,
        db,
        0,
        &[
            ("LD_PRELOAD", LIBFAKETIME),
            ("FAKETIME", "+1h"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
            ("PURGE_INTERVAL_SECS", "1"),
        ],
    );
    // A live claim held by the honest instance (1.5 s of work): the
    // skewed one, whose clock says its lease ended an hour ago, is told
    // "in progress", never takes it over.
    let order = db.seed_order(300);
    let (key, body) = callback(&order, 300);
    let first = {
        let (base, key, body) = (honest.base.clone(), key.clone(), body.clone());
        thread::spawn(move || try_post(&base, Some(&key), &body))
    };
    db.wait_for_record(&key, "in_progress");
    let duplicate = post(&skewed, Some(&key), &body);
    assert_eq!(
        duplicate.status, 429,
        "skewed duplicate during the lease: {duplicate:?}"
    );
    let first = first.join().unwrap().expect("the first answer");
    assert_eq!((first.status, first.replayed), (200, false), "{first:?}");

    // A completed key, well inside its window: the skewed instance replays
    // it (its clock says the window ended long ago).
    let replay = post(&skewed, Some(&key), &body);
    assert_eq!((replay.status, replay.replayed), (200, true), "{replay:?}");
    assert_eq!(replay.body, first.body, "the stored answer was overwritten");
    assert_eq!(db.paid_rows(&order), 1);

    // Its purge (every second) deletes nothing that is live.
    thread::sleep(Duration::from_millis(2_500));
    assert_eq!(
        db.record_status(&key),
        "completed",
        "a live record was purged"
    );
    eprintln!(
        "{:?}: an instance an hour ahead answered 429 during the lease and replayed the completed key; its purge kept the live record",
        db.dialect
    );
}

/// Kills the connection of the open business transaction while the
/// payment waits downstream.
fn a_killed_connection_is_retried_and_pays_once(db: &Database, server: &Server) {
    let order = db.seed_order(700);
    let (key, body) = callback(&order, 700);
    let attempt = {
        let (base, key, body) = (server.base.clone(), key.clone(), body.clone());
        thread::spawn(move || try_post(&base, Some(&key), &body))
    };
    db.wait_for_record(&key, "in_progress");
    // BEGIN follows the claim at once, then the payment waits 1.5 s
    // downstream: 300 ms in, the transaction is open and idle.
    thread::sleep(Duration::from_millis(300));
    kill_the_open_transaction(db, attempt);
    assert_eq!(db.paid_rows(&order), 0, "the killed transaction paid");
    assert_ne!(
        db.record_status(&key),
        "failed",
        "an outage was recorded as a failure"
    );

    // The claim was released: the retry runs at once and pays once.
    let retry = post(server, Some(&key), &body);
    assert_eq!((retry.status, retry.replayed), (200, false), "{retry:?}");
    assert_eq!(db.paid_rows(&order), 1);
    let replay = post(server, Some(&key), &body);
    assert_eq!((replay.status, replay.replayed), (200, true));
    eprintln!(
        "{:?}: the business transaction's connection killed mid-payment → 503 + Retry-After, nothing recorded; the retry paid once",
        db.dialect
    );
}

/// Kills the open business transaction's connection (waiting up to 2 s
/// for one) and checks that `attempt` is told to retry: 503 with
/// `Retry-After`.
fn kill_the_open_transaction(db: &Database, attempt: thread::JoinHandle<Result<Answer, String>>) {
    let mut killed = 0;
    for _ in 0..100 {
        killed = kill_transaction_connections(db);
        if killed > 0 {
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    assert!(killed > 0, "no open business transaction to kill");
    let answer = attempt.join().unwrap().expect("an answer");
    assert_eq!(answer.status, 503, "after the kill: {answer:?}");
    assert!(answer.retry_after.is_some(), "{answer:?}");
}

/// Under `store.claim: in-transaction` the claim is in the business
/// transaction: killing its connection mid-payment takes the claim away
/// with the work. The attempt is told to retry (503 with `Retry-After`),
/// no record is left (neither in progress nor failed), and the retry runs
/// at once and pays once.
fn a_killed_connection_takes_the_one_commit_claim_away(db: &Database, binary: &Path) {
    let server = Server::start(binary, db, 1_500);
    let order = db.seed_order(710);
    let (key, body) = callback(&order, 710);
    let attempt = {
        let (base, key, body) = (server.base.clone(), key.clone(), body.clone());
        thread::spawn(move || try_post(&base, Some(&key), &body))
    };
    // Nothing outside the transaction shows the claim: 300 ms in, it is
    // written and the payment waits downstream (1.5 s).
    thread::sleep(Duration::from_millis(300));
    kill_the_open_transaction(db, attempt);
    assert_eq!(db.paid_rows(&order), 0, "the killed transaction paid");
    assert_eq!(
        db.record_status(&key),
        "",
        "the rolled-back claim left a record"
    );

    let retry = post(&server, Some(&key), &body);
    assert_eq!((retry.status, retry.replayed), (200, false), "{retry:?}");
    assert_eq!(db.paid_rows(&order), 1);
    let replay = post(&server, Some(&key), &body);
    assert_eq!((replay.status, replay.replayed), (200, true), "{replay:?}");
    assert_eq!(replay.body, retry.body);
    eprintln!(
        "{:?}, in-transaction claim: the business transaction's connection killed mid-payment → 503 + Retry-After, no record left; the retry paid once",
        db.dialect
    );
}

/// Under `store.claim: in-transaction` a first attempt holds its key's
/// claim, uncommitted, on the unique index while it pays (2 s). A
/// duplicate on another instance waits on it for the in-progress
/// `Retry-After` (1 s), then is answered 429 with `Retry-After`; the
/// first instance is then SIGKILLed mid-payment, and its crash takes the
/// claim away with the work: the duplicate's retry runs at once and pays
/// once.
fn a_duplicate_waits_on_a_one_commit_claim_and_runs_once_its_holder_dies(
    db: &Database,
    binary: &Path,
) {
    let server = Server::start(binary, db, 0);
    let order = db.seed_order(960);
    let (key, body) = callback(&order, 960);
    let doomed = Server::start(binary, db, 2_000);
    let attempt = {
        let (base, key, body) = (doomed.base.clone(), key.clone(), body.clone());
        thread::spawn(move || try_post(&base, Some(&key), &body))
    };
    thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    let waited = post(&server, Some(&key), &body);
    let wait = sent.elapsed();
    assert_eq!(
        waited.status,
        429,
        "a duplicate of an attempt still paying ({wait:?}): {waited:?}\n{}",
        server.log_text()
    );
    assert!(waited.retry_after.is_some(), "{waited:?}");
    assert!(
        wait >= Duration::from_millis(900),
        "answered in {wait:?}: the duplicate did not wait on the claim"
    );
    drop(doomed);
    assert!(
        attempt.join().unwrap().is_err(),
        "the killed worker answered"
    );
    assert_eq!(db.paid_rows(&order), 0, "the killed worker paid");
    let paid = post_until_ok(&server, &key, &body);
    assert!(!paid.replayed, "{paid:?}");
    assert_eq!(db.paid_rows(&order), 1);
    eprintln!(
        "{:?}, in-transaction claim: a duplicate waited {:.1} s on the uncommitted claim → 429 + Retry-After; its holder killed, the retry paid once",
        db.dialect,
        wait.as_secs_f64()
    );
}

/// Kills the service's connections to the run's database: the one that
/// holds the business transaction and the idle ones (among them the one
/// that made the claim just before); how many.
fn kill_transaction_connections(db: &Database) -> usize {
    let ids = match db.dialect {
        // InnoDB lists a transaction only after its first statement, and
        // the payment has not run one yet: kill every connection of the
        // service (its idle ones too; the pool replaces them).
        Dialect::Mysql => db.query(
            "SELECT id FROM information_schema.processlist \
             WHERE db = DATABASE() AND id <> CONNECTION_ID()",
        ),
        // Here the open transaction shows: once it does, kill it and the
        // idle connections (the claim's among them).
        Dialect::Postgres => {
            let activity = |states: &str| {
                db.query(&format!(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
                     AND state IN ({states}) AND pid <> pg_backend_pid()"
                ))
            };
            let open = activity("'idle in transaction'");
            if open.is_empty() {
                return 0;
            }
            format!("{open} {}", activity("'idle'"))
        }
        Dialect::Sqlite => String::new(),
    };
    let ids: Vec<&str> = ids.split_whitespace().collect();
    for id in &ids {
        match db.dialect {
            Dialect::Mysql => db.exec(&format!("KILL CONNECTION {id}")),
            Dialect::Postgres => {
                db.query(&format!("SELECT pg_terminate_backend({id})"));
            }
            Dialect::Sqlite => {}
        }
    }
    ids.len()
}

/// 500 copies of one payment at once on a service whose pool holds two
/// connections: waiting for a connection counts against the lease, so
/// requests that get none in time are told to retry (429), never 5xx.
fn a_pool_of_two_answers_500_duplicates_without_a_5xx(db: &Database, binary: &Path) {
    let servers = [Server::start_with(
        binary,
        db,
        50,
        &[("DATABASE_POOL_SIZE", "2")],
    )];
    let order = db.seed_order(500);
    let (key, body) = callback(&order, 500);
    let answers = burst(&servers, 500, &key, &body);
    let unexpected: Vec<_> = answers
        .iter()
        .filter(|answer| !matches!(answer.status, 200 | 429))
        .collect();
    assert!(
        unexpected.is_empty(),
        "answers other than 200/429: {unexpected:?}"
    );
    assert!(
        answers
            .iter()
            .filter(|answer| answer.status == 429)
            .all(|answer| answer.retry_after.is_some()),
        "a 429 without Retry-After"
    );
    let fresh = answers
        .iter()
        .filter(|answer| answer.status == 200 && !answer.replayed)
        .count();
    assert!(fresh <= 1, "{fresh} requests ran the payment");
    let busy = answers.iter().filter(|answer| answer.status == 429).count();
    let final_answer = post_until_ok(&servers[0], &key, &body);
    for answer in answers.iter().filter(|answer| answer.status == 200) {
        assert_eq!(answer.body, final_answer.body, "two different answers");
    }
    assert_eq!(db.paid_rows(&order), 1);
    eprintln!(
        "{:?}: 500 duplicates on a pool of 2: {fresh} ran the payment, {} replays, {busy} × 429 with Retry-After, no 5xx; paid once",
        db.dialect,
        answers.len() - fresh - busy
    );
}

/// A callback padded with JSON whitespace to exactly `BODY_LIMIT` bytes is
/// processed and replayed; one byte more is refused before any record.
fn a_body_at_the_limit_is_replayed_and_one_byte_more_is_refused(db: &Database, server: &Server) {
    let order = db.seed_order(800);
    let (key, body) = callback(&order, 800);
    let at_limit = padded(&body, BODY_LIMIT);
    let first = post(server, Some(&key), &at_limit);
    assert_eq!((first.status, first.replayed), (200, false), "{first:?}");
    let replay = post(server, Some(&key), &at_limit);
    assert_eq!((replay.status, replay.replayed), (200, true), "{replay:?}");
    assert_eq!(replay.body, first.body, "the replay differs");
    assert_eq!(db.paid_rows(&order), 1);

    let order = db.seed_order(801);
    let (key, body) = callback(&order, 801);
    let too_big = status_after_expect_continue(server, &key, &padded(&body, BODY_LIMIT + 1));
    assert_eq!(too_big, 413);
    assert_eq!(db.record_status(&key), "", "a record for a refused body");
    assert_eq!(db.paid_rows(&order), 0);
    eprintln!(
        "{:?}: a {BODY_LIMIT}-byte request paid once and replayed byte for byte; {} bytes → 413, no record",
        db.dialect,
        BODY_LIMIT + 1
    );
}

/// The status of a POST that announces its body and waits for `100
/// Continue` before sending it (as curl does for large bodies): a server
/// that refuses the body by its length answers at once, and the client
/// sees that answer instead of a connection closed while it still writes.
fn status_after_expect_continue(server: &Server, key: &str, body: &str) -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let address = server.base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "POST /callbacks/pay HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Idempotency-Key: {key}\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        body.len()
    )
    .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = |line: &str| -> u16 {
        line.split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP status line: {line:?}"))
    };
    if status(&status_line) != 100 {
        return status(&status_line);
    }
    // Told to go on: send the body, then read the final answer.
    stream.write_all(body.as_bytes()).unwrap();
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap() > 0 && line.trim().is_empty() {
        line.clear();
    }
    status(&line)
}

/// `json` followed by spaces up to `size` bytes (the same JSON value).
fn padded(json: &str, size: usize) -> String {
    let mut padded = String::with_capacity(size);
    padded.push_str(json);
    padded.extend(std::iter::repeat_n(' ', size - json.len()));
    padded
}

/// A global MariaDB variable set for the connections opened while this
/// lives, restored when it is dropped (also when a case fails).
struct MariadbGlobal<'a> {
    db: &'a Database,
    name: &'static str,
    previous: String,
}

impl<'a> MariadbGlobal<'a> {
    /// `None` when the server has no such variable.
    fn set(db: &'a Database, name: &'static str, value: &str) -> Option<MariadbGlobal<'a>> {
        let previous = db.server_query(&format!(
            "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES \
             WHERE VARIABLE_NAME = '{}'",
            name.to_uppercase()
        ));
        if previous.is_empty() {
            return None;
        }
        db.server_query(&format!("SET GLOBAL {name} = {value}"));
        Some(MariadbGlobal { db, name, previous })
    }
}

impl Drop for MariadbGlobal<'_> {
    fn drop(&mut self) {
        self.db
            .server_query(&format!("SET GLOBAL {} = {}", self.name, self.previous));
    }
}

/// Lock waits of two seconds for the service's connections opened from now
/// on: `innodb_lock_wait_timeout` globally on MariaDB (restored when the
/// guard is dropped), `lock_timeout` on the run's own database on
/// PostgreSQL.
fn short_lock_waits(db: &Database) -> Option<MariadbGlobal<'_>> {
    match db.dialect {
        Dialect::Mysql => MariadbGlobal::set(db, "innodb_lock_wait_timeout", "2"),
        _ => {
            db.server_query(&format!(
                "ALTER DATABASE {} SET lock_timeout = '2s'",
                db.name()
            ));
            None
        }
    }
}

/// Holds `lock` (a `SELECT … FOR UPDATE`) in a session of its own for
/// `seconds`, then commits.
fn hold_lock(db: &Database, lock: &str, seconds: u32) -> std::process::Child {
    let sleep = match db.dialect {
        Dialect::Mysql => format!("SELECT SLEEP({seconds})"),
        _ => format!("SELECT pg_sleep({seconds})"),
    };
    let mut holder = db.spawn_query(&format!("BEGIN; {lock}; {sleep}; COMMIT;"));
    // The client connects and takes the lock well within this.
    thread::sleep(Duration::from_millis(700));
    assert!(
        holder.try_wait().unwrap().is_none(),
        "the session meant to hold `{lock}` ended: {}",
        std::fs::read_to_string(db.client_errors()).unwrap_or_default()
    );
    holder
}

/// Posts until the answer is 200, following `Retry-After` on 429 and 503
/// (at most 40 s, twice the window); the 200.
fn post_until_ok(server: &Server, key: &str, body: &str) -> Answer {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let answer = post(server, Some(key), body);
        match answer.status {
            200 => return answer,
            429 | 503 if Instant::now() < deadline => {
                thread::sleep(answer.retry_after_delay().unwrap_or(Duration::from_secs(1)));
            }
            _ => panic!("retrying {key}: {answer:?}\n{}", server.log_text()),
        }
    }
}

/// Another session holds the order row longer than the lock-wait timeout
/// while the payment runs: the business step's UPDATE times out (1205 /
/// 55P03), a lost race, answered "in progress"; the key stays retryable.
fn a_locked_order_row_is_in_progress_not_failed(db: &Database, binary: &Path) {
    let server = Server::start(binary, db, 0);
    let order = db.seed_order(900);
    let (key, body) = callback(&order, 900);
    let mut holder = hold_lock(
        db,
        &format!("SELECT amount FROM orders WHERE order_no = '{order}' FOR UPDATE"),
        5,
    );
    let blocked = post(&server, Some(&key), &body);
    assert_eq!(
        blocked.status, 429,
        "while the order row is locked: {blocked:?}"
    );
    assert!(blocked.retry_after.is_some(), "{blocked:?}");
    assert_ne!(
        db.record_status(&key),
        "failed",
        "a lock wait was recorded as a failure"
    );
    assert_eq!(db.paid_rows(&order), 0);
    let paid = post_until_ok(&server, &key, &body);
    assert!(!paid.replayed, "{paid:?}");
    assert_eq!(db.paid_rows(&order), 1);
    let _ = holder.wait();
    eprintln!(
        "{:?}: the order row locked past the lock-wait timeout → 429 + Retry-After, nothing recorded; the retry paid once",
        db.dialect
    );
}

/// A worker dies holding a claim; when its lease has ended another session
/// still holds the record row, so the takeover's claim waits past the
/// lock-wait timeout: answered "in progress", then one retry pays.
fn a_locked_record_during_a_takeover_is_in_progress(db: &Database, binary: &Path) {
    let server = Server::start(binary, db, 0);
    let order = db.seed_order(950);
    let (key, body) = callback(&order, 950);
    {
        let doomed = Server::start(binary, db, 2_000);
        let attempt = {
            let (base, key, body) = (doomed.base.clone(), key.clone(), body.clone());
            thread::spawn(move || try_post(&base, Some(&key), &body))
        };
        db.wait_for_record(&key, "in_progress");
        drop(doomed);
        assert!(
            attempt.join().unwrap().is_err(),
            "the killed worker answered"
        );
    }
    let lease_end = db.record_lease_end(&key);
    let mut holder = hold_lock(
        db,
        &format!("SELECT status FROM idempotent_record WHERE idem_key = '{key}' FOR UPDATE"),
        // Past the lease end plus two lock waits: on MariaDB the claim's
        // INSERT waits on the row, then the takeover's UPDATE does.
        10,
    );
    sleep_until(lease_end + 200);
    let sent = Instant::now();
    let blocked = post(&server, Some(&key), &body);
    assert_eq!(
        blocked.status,
        429,
        "a takeover that waited on the row lock ({:?}, holder running: {}): {blocked:?}\n{}\n{}",
        sent.elapsed(),
        holder.try_wait().unwrap().is_none(),
        server.log_text(),
        std::fs::read_to_string(db.client_errors()).unwrap_or_default()
    );
    assert!(blocked.retry_after.is_some(), "{blocked:?}");
    assert_eq!(db.paid_rows(&order), 0, "the killed worker paid");
    let paid = post_until_ok(&server, &key, &body);
    assert!(!paid.replayed, "{paid:?}");
    assert_eq!(db.paid_rows(&order), 1);
    let _ = holder.wait();
    eprintln!(
        "{:?}: a takeover waiting past the lock-wait timeout on the record row → 429 + Retry-After; the retry took over and paid once",
        db.dialect
    );
}

/// MariaDB's `innodb_snapshot_isolation=ON` (reports a row changed after a
/// transaction's snapshot as error 1020) for the service's connections,
/// during duplicate bursts across two instances.
fn snapshot_isolation_changes_nothing(db: &Database, binary: &Path) {
    let Some(_snapshot) = MariadbGlobal::set(db, "innodb_snapshot_isolation", "ON") else {
        skipped("this server has no innodb_snapshot_isolation");
        return;
    };
    let servers = [Server::start(binary, db, 20), Server::start(binary, db, 20)];
    let mut statuses = BTreeMap::<u16, usize>::new();
    for amount in 0..10 {
        let order = db.seed_order(1_000 + amount);
        let (key, body) = callback(&order, 1_000 + amount);
        for answer in burst(&servers, 20, &key, &body) {
            *statuses.entry(answer.status).or_default() += 1;
        }
        post_until_ok(&servers[0], &key, &body);
        assert_eq!(db.paid_rows(&order), 1, "{order}");
    }
    assert!(
        statuses.keys().all(|status| matches!(status, 200 | 429)),
        "{statuses:?}"
    );
    eprintln!(
        "{:?}: innodb_snapshot_isolation=ON, 10 payments × 20 duplicates on two instances: answers {statuses:?}; each paid once",
        db.dialect
    );
}

/// 40 payments, started 50 ms apart, each sent by 5 clients at once
/// across two instances; the database server is restarted while they run.
/// Every client retries (after `Retry-After`, or 250 ms after a refused
/// connection) until it gets a 200, within 90 s.
fn a_restarted_database_pays_every_payment_once(db: &Database, binary: &Path) {
    const PAYMENTS: i64 = 40;
    const DUPLICATES: usize = 5;
    let servers = Arc::new([
        Server::start(binary, db, 100),
        Server::start(binary, db, 100),
    ]);
    let payments: Vec<(String, String, String)> = (0..PAYMENTS)
        .map(|i| {
            let order = db.seed_order(2_000 + i);
            let (key, body) = callback(&order, 2_000 + i);
            (order, key, body)
        })
        .collect();
    let started = Instant::now();
    let clients: Vec<_> = payments
        .iter()
        .enumerate()
        .flat_map(|(payment, (_, key, body))| {
            (0..DUPLICATES).map({
                let servers = servers.clone();
                move |duplicate| {
                    let (servers, key, body) = (servers.clone(), key.clone(), body.clone());
                    let start = started + Duration::from_millis(50 * payment as u64);
                    thread::Builder::new()
                        .stack_size(256 * 1024)
                        .spawn(move || {
                            thread::sleep(start.saturating_duration_since(Instant::now()));
                            retry_until_ok(&servers, payment + duplicate, &key, &body)
                        })
                        .unwrap()
                }
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(500));
    let down = Instant::now();
    restart_database_server(db.dialect);
    let outage = down.elapsed();
    let mut counts = BTreeMap::<u16, usize>::new();
    for client in clients {
        for status in client.join().unwrap() {
            *counts.entry(status).or_default() += 1;
        }
    }
    assert!(
        counts
            .keys()
            .all(|status| matches!(status, 0 | 200 | 429 | 503)),
        "{counts:?}\n{}",
        servers[0].log_text()
    );
    for (order, key, _) in &payments {
        assert_eq!(db.paid_rows(order), 1, "{order} ({key})");
    }
    eprintln!(
        "{:?}: database restarted mid-burst (back after {:.1} s), {PAYMENTS} payments × {DUPLICATES} duplicates on two instances: answers {counts:?} (0: no connection); each paid once",
        db.dialect,
        outage.as_secs_f64()
    );
}

/// One client of the restart case: the statuses it saw (0 when the request
/// failed without an answer), the last one a 200.
fn retry_until_ok(servers: &[Server; 2], first: usize, key: &str, body: &str) -> Vec<u16> {
    let deadline = Instant::now() + Duration::from_secs(90);
    let agent = agent();
    let mut statuses = Vec::new();
    loop {
        let base = &servers[(first + statuses.len()) % 2].base;
        let answer = send(&agent, base, Some(key), body);
        let status = answer.as_ref().map_or(0, |answer| answer.status);
        statuses.push(status);
        if status == 200 {
            return statuses;
        }
        assert!(
            Instant::now() < deadline,
            "{key} never got a 200: {statuses:?}"
        );
        let wait = answer.ok().and_then(|answer| answer.retry_after_delay());
        thread::sleep(wait.unwrap_or(Duration::from_millis(250)));
    }
}
