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
//! MariaDB and PostgreSQL run when `IDEMGEN_TEST_MYSQL_URL` /
//! `IDEMGEN_TEST_PG_URL` are set; the clock-skew case needs libfaketime.
//! Neither fault exists for SQLite: it runs inside the service, so its
//! clock is the process's (instances sharing a SQLite file share one
//! machine, hence one clock), and there is no connection to kill.

#[path = "support/exactly_once.rs"]
mod support;

use std::path::Path;
use std::thread;
use std::time::Duration;

use support::skip::{database_url, generated_builds_skipped, skipped};
use support::*;

/// Where Debian's `faketime` package puts the library.
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

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

/// Kills the connections of the run's database that hold the business
/// transaction; how many.
fn kill_transaction_connections(db: &Database) -> usize {
    let ids = match db.dialect {
        // InnoDB lists a transaction only after its first statement, and
        // the payment has not run one yet: kill every connection of the
        // service (its idle ones too; the pool replaces them).
        Dialect::Mysql => db.query(
            "SELECT id FROM information_schema.processlist \
             WHERE db = DATABASE() AND id <> CONNECTION_ID()",
        ),
        Dialect::Postgres => db.query(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
             AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()",
        ),
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
