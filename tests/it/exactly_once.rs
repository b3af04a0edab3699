//! Exactly-once under real concurrency, crashes and restarts: the
//! payment-callback example runs as several processes against one database
//! and is hammered over HTTP, and the outcome is checked in the database.
//! Beside it, `examples/naive-callback` (the article's "SELECT, then write"
//! handler) takes the same burst on the same database and pays twice.
//!
//! SQLite runs wherever the examples are built; MariaDB and PostgreSQL when
//! `IDEMGEN_TEST_MYSQL_URL` / `IDEMGEN_TEST_PG_URL` name a server (e.g.
//! `mysql://root@127.0.0.1:3306/test`); every run creates and drops its own
//! database there. Assertions go through the `mysql`, `psql` and `sqlite3`
//! command-line clients. The suite builds the examples, so it runs when
//! `IDEMGEN_TEST_GENERATED_BUILDS=1` (`.ci/run` sets it);
//! `IDEMGEN_GENERATED_BIN=/path/{dialect}/payment-callback` runs it against
//! another build of the generated service (a candidate fix).
//!
//! The binaries are debug builds in the shared `target/generated` directory
//! (`support/build.rs`), where the other suites' builds reuse them and their
//! axum and sqlx: a cold release build takes minutes per dialect on two
//! cores, and nothing here measures speed (that is `benches/load.rs`).

use crate::support::exactly_once as support;

use std::thread;
use std::time::Duration;

use support::skip::{database_url, generated_builds_skipped, skipped};
use support::*;

/// Duplicates fired at once in the burst tests (the issue asks for ≥ 200).
const BURST: usize = 200;
/// Concurrent retries after a recorded failure (the issue asks for ≥ 50).
const RETRIES: usize = 50;
/// Time "calling downstream" inside the business step of the burst
/// instances: the article's duplicates came through a 50 ms gap; a wider one
/// lets every duplicate of the burst arrive while the first is working.
const BURST_DELAY_MS: u64 = 200;
/// Longer than the lease (`server.max-processing`, 3 s): a worker this slow
/// has its claim taken over while it still works.
const STALE_DELAY_MS: u64 = 4_500;
/// The example's window (`openapi.yaml`).
const WINDOW_MS: i64 = 18_000;

#[test]
fn sqlite_exactly_once() {
    run(Dialect::Sqlite);
}

#[test]
fn mysql_exactly_once() {
    run(Dialect::Mysql);
}

#[test]
fn postgres_exactly_once() {
    run(Dialect::Postgres);
}

fn run(dialect: Dialect) {
    if dialect != Dialect::Sqlite && database_url(dialect.env_var()).is_none() {
        return;
    }
    if generated_builds_skipped() {
        return;
    }
    let Some(db) = Database::create(dialect) else {
        skipped(&format!("set {} to run", dialect.env_var()));
        return;
    };
    let binaries = Binaries::get(dialect);
    // The generated service migrates the database; start one before the
    // others so they do not all race to do it.
    let first = Server::start(&binaries.generated, &db, BURST_DELAY_MS);
    let second = Server::start(&binaries.generated, &db, BURST_DELAY_MS);
    let generated = [first, second];
    let naive = [
        Server::start(&binaries.naive, &db, BURST_DELAY_MS),
        Server::start(&binaries.naive, &db, BURST_DELAY_MS),
    ];

    let naive_rows = naive_burst_pays_more_than_once(&db, &naive);
    drop(naive);
    let burst = duplicate_burst_pays_once(&db, &generated);
    eprintln!(
        "{dialect:?}: {BURST} concurrent duplicates over 2 instances → naive check-then-write: \
         {naive_rows} paid_log rows; generated: 1 row, {} × 200 (1 fresh + {} replays), {} × 429",
        burst.successes,
        burst.successes - 1,
        burst.in_progress
    );

    // Restart (well inside the 18 s window): every instance goes away, new
    // ones answer from the record.
    drop(generated);
    let generated = [
        Server::start(&binaries.generated, &db, BURST_DELAY_MS),
        Server::start(&binaries.generated, &db, BURST_DELAY_MS),
    ];
    for server in &generated {
        let replay = post(server, Some(&burst.key), &burst.body);
        assert_eq!(replay.status, 200, "replay after restart: {replay:?}");
        assert!(replay.replayed, "replay after restart lacks the header");
        assert_eq!(
            replay.body, burst.success_body,
            "replay after restart differs from the first answer"
        );
    }

    bad_keys_and_reused_keys(&db, &generated);
    retries_after_failure_pay_once(&db, &generated);
    crashed_worker_lease_then_one_takeover(&db, &binaries, &generated);
    stale_worker_changes_nothing(&db, &binaries, &generated);
    expired_key_is_new(&db, &generated);
    drop(generated);

    purge_removes_only_expired(&db, &binaries);
}

/// The article's bug: both instances read "absent", both pay.
fn naive_burst_pays_more_than_once(db: &Database, naive: &[Server]) -> i64 {
    let order = db.seed_order(1999);
    let (key, body) = callback(&order, 1999);
    let answers = burst(naive, BURST, &key, &body);
    let rows = db.paid_rows(&order);
    let ok = answers.iter().filter(|answer| answer.status == 200).count();
    eprintln!(
        "{:?}: naive check-then-write answered 200 to {ok} of {BURST} and wrote {rows} paid_log rows for one order",
        db.dialect
    );
    assert!(
        rows > 1,
        "the naive handler was expected to pay twice under a {BURST}-request burst, it wrote {rows} rows"
    );
    rows
}

struct BurstOutcome {
    key: String,
    body: String,
    success_body: Vec<u8>,
    successes: usize,
    in_progress: usize,
}

fn duplicate_burst_pays_once(db: &Database, servers: &[Server]) -> BurstOutcome {
    let order = db.seed_order(1999);
    let (key, body) = callback(&order, 1999);
    let attempts_before = first_attempts(servers);
    let answers = burst(servers, BURST, &key, &body);

    assert_eq!(db.paid_rows(&order), 1, "paid_log rows after the burst");
    assert_eq!(db.order_status(&order), "PAID");
    assert_eq!(
        first_attempts(servers) - attempts_before,
        1,
        "the business step ran more than once across the instances"
    );
    let successes: Vec<&Answer> = answers.iter().filter(|a| a.status == 200).collect();
    let fresh = successes.iter().filter(|a| !a.replayed).count();
    assert_eq!(fresh, 1, "exactly one answer comes from the business step");
    let success_body = successes[0].body.clone();
    assert!(
        successes.iter().all(|a| a.body == success_body),
        "every success answer is byte-identical"
    );
    let mut in_progress = 0;
    for answer in &answers {
        match answer.status {
            200 => {}
            429 => {
                in_progress += 1;
                assert!(
                    answer.retry_after.is_some(),
                    "429 without Retry-After: {answer:?}"
                );
            }
            _ => panic!("a duplicate got neither 200 nor 429: {answer:?}"),
        }
    }
    BurstOutcome {
        key,
        body,
        success_body,
        successes: successes.len(),
        in_progress,
    }
}

fn bad_keys_and_reused_keys(db: &Database, servers: &[Server]) {
    let order = db.seed_order(500);
    let (key, body) = callback(&order, 500);
    let answer = post(&servers[0], None, &body);
    assert_eq!(answer.status, 400, "missing key: {answer:?}");
    let wrong_prefix = key.replacen("pay:", "refund:", 1);
    let answer = post(&servers[0], Some(&wrong_prefix), &body);
    assert_eq!(answer.status, 400, "wrong prefix: {answer:?}");
    let over_long = format!("{key}{}", "a".repeat(200));
    let answer = post(&servers[0], Some(&over_long), &body);
    assert_eq!(answer.status, 400, "over-long key: {answer:?}");
    assert_eq!(db.paid_rows(&order), 0, "a refused key paid");
    assert_eq!(
        db.count(&format!(
            "SELECT COUNT(*) FROM idempotent_record WHERE idem_key LIKE '%{order}%'"
        )),
        0
    );

    let first = post(&servers[0], Some(&key), &body);
    assert_eq!(first.status, 200, "{first:?}");
    let other_body = body.replace("\"amount\":500", "\"amount\":501");
    for server in servers {
        let answer = post(server, Some(&key), &other_body);
        assert_eq!(answer.status, 409, "same key, other body: {answer:?}");
    }
    assert_eq!(db.paid_rows(&order), 1);
    let replay = post(&servers[1], Some(&key), &body);
    assert_eq!((replay.status, replay.replayed), (200, true));
    assert_eq!(
        replay.body, first.body,
        "a conflict must not overwrite the record"
    );
}

/// An unknown order is answered 404 and recorded as failed; once the order
/// exists, a crowd of retries re-claims the key and exactly one pays.
fn retries_after_failure_pay_once(db: &Database, servers: &[Server]) {
    let order = unique_order_no();
    let (key, body) = callback(&order, 700);
    let first = post(&servers[0], Some(&key), &body);
    assert_eq!(first.status, 404, "{first:?}");
    assert_eq!(db.record_status(&key), "failed");

    db.insert_order(&order, 700);
    let attempts_before = first_attempts(servers);
    let answers = burst(servers, RETRIES, &key, &body);
    assert_eq!(db.paid_rows(&order), 1, "paid_log rows after the retries");
    assert_eq!(first_attempts(servers) - attempts_before, 1);
    assert_eq!(db.record_status(&key), "completed");
    let fresh = answers
        .iter()
        .filter(|a| a.status == 200 && !a.replayed)
        .count();
    assert_eq!(fresh, 1, "exactly one retry runs the business step");
    for answer in &answers {
        assert!(
            answer.status == 200 || (answer.status == 429 && answer.retry_after.is_some()),
            "a retry got {answer:?}"
        );
    }
}

/// A worker SIGKILLed while it holds a claim: retries get 429 until its
/// lease ends, then one of a crowd of retries takes the key over and pays.
fn crashed_worker_lease_then_one_takeover(db: &Database, binaries: &Binaries, servers: &[Server]) {
    let order = db.seed_order(900);
    let (key, body) = callback(&order, 900);
    let doomed = Server::start(&binaries.generated, db, STALE_DELAY_MS);
    let in_flight = {
        let (base, key, body) = (doomed.base.clone(), key.clone(), body.clone());
        // The answer never comes: the process dies mid-request.
        thread::spawn(move || try_post(&base, Some(&key), &body))
    };
    db.wait_for_record(&key, "in_progress");
    drop(doomed);
    let _ = in_flight.join();

    let lease_end = db.record_lease_end(&key);
    let mut early = 0;
    for _ in 0..100 {
        if now_ms() >= lease_end - 200 {
            break;
        }
        let answer = post(&servers[early % servers.len()], Some(&key), &body);
        if now_ms() < lease_end {
            // Answered before the lease ended, so decided before it too.
            assert_eq!(answer.status, 429, "retry during the lease: {answer:?}");
            assert!(answer.retry_after.is_some());
            early += 1;
        }
        thread::sleep(Duration::from_millis(150));
    }
    assert!(early > 0, "no retry landed inside the lease");
    assert_eq!(db.paid_rows(&order), 0, "the killed worker paid");

    sleep_until(lease_end + 100);
    let answers = burst(servers, 20, &key, &body);
    assert_eq!(db.paid_rows(&order), 1, "paid_log rows after the takeover");
    let fresh = answers
        .iter()
        .filter(|a| a.status == 200 && !a.replayed)
        .count();
    assert_eq!(
        fresh, 1,
        "exactly one retry takes the key over: {answers:?}"
    );
    assert!(answers.iter().all(|a| a.status == 200 || a.status == 429));
}

/// A worker slower than its lease: another request takes the key over and
/// pays; when the slow one finally finishes, nothing changes. Then the
/// fence alone: a worker whose claim token was replaced writes nothing even
/// though its business step succeeded.
fn stale_worker_changes_nothing(db: &Database, binaries: &Binaries, servers: &[Server]) {
    let slow = Server::start(&binaries.generated, db, STALE_DELAY_MS);

    let order = db.seed_order(1200);
    let (key, body) = callback(&order, 1200);
    let stale = {
        let (base, key, body) = (slow.base.clone(), key.clone(), body.clone());
        thread::spawn(move || try_post(&base, Some(&key), &body))
    };
    db.wait_for_record(&key, "in_progress");
    sleep_until(db.record_lease_end(&key) + 100);
    let takeover = post(&servers[0], Some(&key), &body);
    assert_eq!(
        (takeover.status, takeover.replayed),
        (200, false),
        "{takeover:?}"
    );
    let stale_answer = stale.join().expect("client thread").expect("stale answer");
    assert_ne!(stale_answer.status, 200, "the stale worker claims success");
    assert_eq!(db.paid_rows(&order), 1);
    assert_eq!(db.record_status(&key), "completed");
    let replay = post(&servers[1], Some(&key), &body);
    assert_eq!((replay.status, replay.replayed), (200, true));
    assert_eq!(
        replay.body, takeover.body,
        "the stale worker overwrote the record"
    );

    // The fence itself: the order is unpaid, so the slow worker's business
    // step succeeds, and only the claim-token check stops the commit.
    let order = db.seed_order(1300);
    let (key, body) = callback(&order, 1300);
    let fenced = {
        let (base, key, body) = (slow.base.clone(), key.clone(), body.clone());
        thread::spawn(move || try_post(&base, Some(&key), &body))
    };
    db.wait_for_record(&key, "in_progress");
    db.exec(&format!(
        "UPDATE idempotent_record SET claim_token = 'taken-over-by-another-worker' WHERE idem_key = '{key}'"
    ));
    let fenced_answer = fenced.join().expect("client thread").expect("answer");
    assert_ne!(fenced_answer.status, 200, "{fenced_answer:?}");
    assert_eq!(
        db.paid_rows(&order),
        0,
        "a worker that lost its claim committed a payment"
    );
    assert_eq!(db.order_status(&order), "UNPAID");
    assert_eq!(db.record_status(&key), "in_progress");
}

/// A finished key older than the window is a new key: another request with
/// it is processed, not answered 409. The purge is kept away (its lease is
/// pushed out) so that the claim's own expiry check is what is tested.
fn expired_key_is_new(db: &Database, servers: &[Server]) {
    let order = db.seed_order(400);
    let (key, body) = callback(&order, 400);
    assert_eq!(post(&servers[0], Some(&key), &body).status, 200);
    let next_order = db.seed_order(401);
    let next_body = callback_body(&next_order, 401);
    let conflict = post(&servers[1], Some(&key), &next_body);
    assert_eq!(conflict.status, 409, "inside the window: {conflict:?}");

    let now = now_ms();
    db.exec(&format!(
        "UPDATE idempotent_record SET created_at = {}, expires_at = {}, lease_expires_at = {} WHERE idem_key = '{key}'",
        now - WINDOW_MS - 1_000,
        now - 1_000,
        now + 600_000
    ));
    let fresh = post(&servers[1], Some(&key), &next_body);
    assert_eq!(
        (fresh.status, fresh.replayed),
        (200, false),
        "past the window: {fresh:?}"
    );
    assert_eq!(db.paid_rows(&next_order), 1);
    assert_eq!(db.paid_rows(&order), 1);
}

/// Records past their window and lease go; everything else stays.
fn purge_removes_only_expired(db: &Database, binaries: &Binaries) {
    let now = now_ms();
    let rows = [
        // (key, status, lease end, window end, purged?)
        ("expired", "completed", now - 60_000, now - 1_000, true),
        ("failed-expired", "failed", now - 60_000, now - 1_000, true),
        ("in-window", "completed", now - 60_000, now + 60_000, false),
        ("leased", "in_progress", now + 60_000, now - 1_000, false),
    ];
    let tag = unique_order_no();
    for (name, status, lease_end, window_end, _) in rows {
        db.exec(&format!(
            "INSERT INTO idempotent_record (scope, idem_key, fingerprint, status, claim_token, \
             lease_expires_at, expires_at, created_at, updated_at) VALUES \
             ('', 'pay:purge:{tag}:{name}', 'f', '{status}', 't', {lease_end}, {window_end}, {now}, {now})"
        ));
    }
    let purger = Server::start_with(&binaries.generated, db, 0, &[("PURGE_INTERVAL_SECS", "1")]);
    let expired = format!(
        "SELECT COUNT(*) FROM idempotent_record WHERE idem_key LIKE 'pay:purge:{tag}:%expired'"
    );
    for _ in 0..100 {
        if db.count(&expired) == 0 {
            break;
        }
        thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(db.count(&expired), 0, "expired records were not purged");
    for (name, _, _, _, purged) in rows {
        let present = db.count(&format!(
            "SELECT COUNT(*) FROM idempotent_record WHERE idem_key = 'pay:purge:{tag}:{name}'"
        ));
        assert_eq!(present, i64::from(!purged), "record {name}");
    }
    drop(purger);
}
