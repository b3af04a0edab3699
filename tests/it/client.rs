//! `idemgen gen --client`: the generated client of the payment-callback
//! example, against the generated service on SQLite (and MariaDB and
//! PostgreSQL when `IDEMGEN_TEST_MYSQL_URL` / `IDEMGEN_TEST_PG_URL` are
//! set), misbehaving three ways: a first attempt slower than the client's
//! timeout, a connection dropped after the service answered, and two 503s.
//! Each time the business step runs once, the client returns one answer,
//! and its attempts start when the contract's schedule says.
//!
//! The client and its driver program build once (`support/client.rs`) in
//! the shared `target/generated`, so these run when
//! `IDEMGEN_TEST_GENERATED_BUILDS=1`; generating and regenerating the
//! crate is checked without a build.

use std::time::{Duration, Instant};

use crate::support::build;
use crate::support::client::{
    self, CLIENT_TIMEOUT_MS, Call, MAX_PROCESSING_MS, RETRIES_MS, call, driver, idemgen,
};
use crate::support::exactly_once::{Binaries, Database, Dialect, Server};
use crate::support::fault_proxy::{Fault, FaultProxy};
use crate::support::skip::{database_url, generated_builds_skipped};

/// How late (ms) an attempt may start past its planned time, and how far
/// the proxy's view of a gap may differ from the client's report: the
/// scheduling of both, on a busy machine.
const SLACK_MS: u64 = 250;

/// The latest start of each attempt, as the spec's window math computes it
/// for the client's contract (one computation for both).
fn latest_starts() -> Vec<u64> {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("openapi.yaml");
    std::fs::write(&spec, client::client_spec()).unwrap();
    let workspace = idemgen_spec::Workspace::load(&spec).unwrap();
    let analysis = idemgen_spec::analysis::analyse(&workspace, Default::default());
    let (_, contract) = analysis
        .contracted()
        .next()
        .expect("onPayCallback has a contract");
    let schedule = idemgen_spec::window::schedule(contract).expect("a timeout");
    let starts: Vec<u64> = schedule.attempts.iter().map(|a| a.start_ms).collect();
    // The contract the tests were written against: 1 s, then 200 ms and
    // 800 ms, no jitter.
    let timeout = CLIENT_TIMEOUT_MS;
    assert_eq!(
        starts,
        vec![
            0,
            timeout + RETRIES_MS[0],
            2 * timeout + RETRIES_MS[0] + RETRIES_MS[1]
        ]
    );
    assert_eq!(schedule.retry_span_ms, Some(starts[2] + MAX_PROCESSING_MS));
    starts
}

#[test]
fn generated_client_carries_the_schedule_and_keeps_what_is_yours() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("openapi.yaml");
    std::fs::write(&spec, client::client_spec()).unwrap();
    let out = dir.path().join("pay-client");
    let (spec, out_text) = (spec.to_str().unwrap(), out.to_str().unwrap());
    let first = idemgen(&["gen", spec, "--client", "-o", out_text]);
    assert!(
        first.contains("6 created, 0 updated, 0 unchanged"),
        "{first}"
    );
    let lib = std::fs::read_to_string(out.join("src/lib.rs")).unwrap();
    for (index, start) in latest_starts().iter().enumerate() {
        assert!(
            lib.contains(&format!("start_ms: {start},")),
            "attempt {index} should start by {start} ms:\n{lib}"
        );
    }
    assert!(lib.contains("retry::KeyPart::Date"), "{lib}");
    // The same models as the service.
    assert_eq!(
        std::fs::read_to_string(out.join("src/models.rs")).unwrap(),
        std::fs::read_to_string(build::root().join("examples/payment-callback/src/models.rs"))
            .unwrap()
    );

    // What is added below the marked line of Cargo.toml is the user's.
    let manifest = out.join("Cargo.toml");
    let mut text = std::fs::read_to_string(&manifest).unwrap();
    text.push_str("anyhow = \"1\"\n");
    std::fs::write(&manifest, &text).unwrap();
    let again = idemgen(&["gen", spec, "--client", "-o", out_text]);
    assert!(
        again.contains("0 created, 0 updated, 6 unchanged"),
        "{again}"
    );
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), text);

    // A generated file the user changed is not overwritten without --force.
    std::fs::write(out.join("src/lib.rs"), "// mine\n").unwrap();
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(["gen", spec, "--client", "-o", out_text])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("src/lib.rs"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(out.join("src/lib.rs")).unwrap(),
        "// mine\n"
    );
}

/// Lint levels may silence a finding; they do not make generated code
/// unsafe. A 6 s window under a schedule whose attempts start as late as
/// 11 s, with both window rules turned down in idemgen.toml: `gen` and
/// `gen --client` refuse, exit 2, and name the fields to change.
#[test]
fn a_schedule_that_outlasts_the_window_is_not_generated_whatever_the_lint_levels() {
    let dir = tempfile::tempdir().unwrap();
    let spec_text =
        std::fs::read_to_string(build::root().join("examples/payment-callback/openapi.yaml"))
            .unwrap()
            .replacen("window: 18s", "window: 6s", 1);
    let spec = dir.path().join("openapi.yaml");
    std::fs::write(&spec, spec_text).unwrap();
    std::fs::write(
        dir.path().join("idemgen.toml"),
        "[rules]\nwindow-too-short = \"warning\"\nwindow-below-retry-span = \"off\"\n",
    )
    .unwrap();
    for client in [true, false] {
        let out = dir.path().join(if client { "client" } else { "service" });
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_idemgen"));
        command
            .current_dir(dir.path())
            .arg("gen")
            .arg(&spec)
            .arg("-o")
            .arg(&out);
        if client {
            command.arg("--client");
        }
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "client: {client}: {stderr}");
        for needle in [
            "onPayCallback",
            "window: 6000 ms",
            "openapi.yaml:",
            "`client.timeout`",
            "`server.max-processing`",
            "at least 14000 ms",
            "whatever idemgen.toml sets",
        ] {
            assert!(
                stderr.contains(needle),
                "client: {client}: no {needle:?} in {stderr}"
            );
        }
        assert!(!out.exists(), "client: {client}: nothing is written");
    }
}

/// Specs under `tests/codegen_fixtures/` whose clients are linted too.
const FIXTURES: [&str; 4] = [
    "created-headers",
    "typed-input",
    "optional-body-key",
    "hostile",
];

#[test]
fn generated_client_is_clippy_clean_and_its_tests_pass() {
    if generated_builds_skipped() {
        return;
    }
    // Built (and its lock file written) by the driver first.
    driver();
    let crate_dir = client::client_dir().join("pay-client");
    if !crate_dir.join("Cargo.lock").exists() {
        std::fs::copy(
            client::client_dir().join("driver/Cargo.lock"),
            crate_dir.join("Cargo.lock"),
        )
        .unwrap();
    }
    // The fixtures take the template's other branches: declared response
    // headers, keys in the query and the body, optional and raw bodies,
    // status ranges, hostile names.
    let mut crates = vec![crate_dir.clone()];
    for fixture in FIXTURES {
        let out = client::client_dir().join("fixtures").join(fixture);
        let spec = build::root().join(format!("tests/codegen_fixtures/{fixture}.yaml"));
        idemgen(&[
            "gen",
            spec.to_str().unwrap(),
            "--client",
            "-o",
            out.to_str().unwrap(),
        ]);
        if !out.join("Cargo.lock").exists() {
            std::fs::copy(crate_dir.join("Cargo.lock"), out.join("Cargo.lock")).unwrap();
        }
        crates.push(out);
    }
    for dir in &crates {
        // Formatted as rustfmt would, in a user's workspace as here.
        let output = std::process::Command::new(env!("CARGO"))
            .args(["fmt", "--check"])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "cargo fmt --check in {}:\n{}",
            dir.display(),
            String::from_utf8_lossy(&output.stdout)
        );
        let output = build::cargo(dir)
            .args([
                "clippy",
                "--all-targets",
                "--no-default-features",
                "--",
                "-D",
                "warnings",
            ])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "cargo clippy in {}:\n{}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    for args in [
        &[
            "clippy",
            "--all-targets",
            "--no-default-features",
            "--",
            "-D",
            "warnings",
        ][..],
        &["test", "--no-default-features"][..],
        // The default build, HTTPS through rustls included.
        &["clippy", "--all-targets", "--", "-D", "warnings"][..],
    ] {
        let output = build::cargo(&crate_dir).args(args).output().unwrap();
        assert!(
            output.status.success(),
            "cargo {args:?} in the generated client:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// A client whose responses declare headers (a `201` with `Location` and
/// `ETag`) reads them into its variant's fields: its decoder compiles,
/// clippy-clean, against the models the service uses.
#[test]
fn a_client_of_declared_response_headers_is_clippy_clean() {
    if generated_builds_skipped() {
        return;
    }
    // Built after the driver: the dependencies are the ones it compiled.
    driver();
    let crate_dir = client::client_dir().join("headers-client");
    idemgen(&[
        "gen",
        "tests/codegen_fixtures/created-headers.yaml",
        "--client",
        "-o",
        crate_dir.to_str().unwrap(),
    ]);
    let decode = std::fs::read_to_string(crate_dir.join("src/lib.rs")).unwrap();
    assert!(
        decode.contains(r#"location: required(headers, "Location")?"#)
            && decode.contains(r#"etag: header(headers, "ETag")?"#),
        "{decode}"
    );
    std::fs::copy(
        client::client_dir().join("driver/Cargo.lock"),
        crate_dir.join("Cargo.lock"),
    )
    .unwrap();
    let output = build::cargo(&crate_dir)
        .args([
            "clippy",
            "--all-targets",
            "--no-default-features",
            "--",
            "-D",
            "warnings",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo clippy in the headers client:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn sqlite_client_retries_by_the_schedule() {
    run(Dialect::Sqlite);
}

#[test]
fn mysql_client_retries_by_the_schedule() {
    run(Dialect::Mysql);
}

#[test]
fn postgres_client_retries_by_the_schedule() {
    run(Dialect::Postgres);
}

fn run(dialect: Dialect) {
    if dialect != Dialect::Sqlite && database_url(dialect.env_var()).is_none() {
        return;
    }
    if generated_builds_skipped() {
        return;
    }
    let latest = latest_starts();
    let driver = driver();
    let binaries = Binaries::get(dialect);
    let db = Database::create(dialect).expect("checked above");

    // 1. The first attempt outlasts the client's timeout; the service
    //    finishes it and the retry gets its answer, replayed. A retry that
    //    arrives while the first still works waits for it on this one
    //    instance (at most the in-progress Retry-After, 1 s: the service
    //    serves the example's contract, whose client waits 5 s) and gets
    //    its answer when it comes in that time, or is told "in progress".
    //    A retry that started early in its slot may time out instead: its
    //    1 s ends as the first attempt's 2 s do, a race either side may win
    //    (on SQLite it may also wait out the writer lock). The client then
    //    retries, and what the contract promises holds all the same: one
    //    payment, one answer, the schedule kept.
    let slow = Server::start(&binaries.generated, &db, CLIENT_TIMEOUT_MS + 1_000);
    let call = exchange(&db, &slow, Fault::None, &driver);
    let seen = outcomes(&call);
    assert_eq!(seen.first(), Some(&"timed-out"), "{call:?}");
    assert_eq!(seen.last(), Some(&"answered 200"), "{call:?}");
    assert!(
        seen[1..seen.len() - 1]
            .iter()
            .all(|outcome| *outcome == "in-progress 1000" || *outcome == "timed-out"),
        "{call:?}"
    );
    assert!(
        call.replayed,
        "the first attempt's answer, replayed: {call:?}"
    );
    assert_starts(&call, &latest);
    drop(slow);

    let server = Server::start(&binaries.generated, &db, 0);
    // 2. The service answers, the connection drops before the client hears.
    let call = exchange(&db, &server, Fault::DropAfterAnswer { times: 1 }, &driver);
    assert_eq!(outcomes(&call), ["connection", "answered 200"], "{call:?}");
    assert!(call.replayed, "the dropped answer, replayed: {call:?}");
    assert_starts(&call, &latest);

    // 3. Two 503s, then the service itself.
    let call = exchange(&db, &server, Fault::Unavailable { times: 2 }, &driver);
    assert_eq!(
        outcomes(&call),
        ["retryable 503", "retryable 503", "answered 200"],
        "{call:?}"
    );
    assert!(
        !call.replayed,
        "the third attempt was the first to arrive: {call:?}"
    );
    assert_starts(&call, &latest);

    // 4. A process that gave up at 14 s, restarted, resumes the key at
    //    16 s: past the window's bound for it (18 s window − 3 s
    //    max-processing), so nothing is sent and nothing paid.
    let order = db.seed_order(100);
    let proxy = FaultProxy::start(server.base.trim_start_matches("http://"), Fault::None);
    let resumed = client::resume(&driver, &proxy.base, &order, 100, 16_000);
    assert!(!resumed.ok, "{resumed:?}");
    assert!(
        resumed
            .error
            .as_deref()
            .is_some_and(|why| why.contains("window")),
        "{resumed:?}"
    );
    assert!(resumed.attempts.is_empty(), "{resumed:?}");
    assert!(proxy.requests().is_empty(), "nothing reached the service");
    assert_eq!(db.paid_rows(&order), 0);
    // Within the bound the same resume is sent, and pays once.
    let call = client::resume(&driver, &proxy.base, &order, 100, 10_000);
    assert!(call.ok, "{call:?}");
    assert_eq!(db.paid_rows(&order), 1);
    eprintln!(
        "{dialect:?}: the client retried by the schedule in all three cases, and refused a key past its window"
    );
}

/// One call through a proxy with `fault` in front of `server`, for a new
/// order: the payment is made once, and the proxy saw each attempt the
/// client reports, as far apart as the client says.
fn exchange(db: &Database, server: &Server, fault: Fault, driver: &std::path::Path) -> Call {
    let order = db.seed_order(100);
    let proxy = FaultProxy::start(server.base.trim_start_matches("http://"), fault);
    let started = Instant::now();
    let call = call(driver, &proxy.base, &order, 100);
    assert!(
        call.ok,
        "{fault:?}: {}\n{call:?}\n{}",
        call.error.as_deref().unwrap_or(""),
        server.log_text()
    );
    assert_eq!(call.status, Some(200), "{call:?}");
    assert!(
        call.key
            .as_deref()
            .is_some_and(|key| key.starts_with("pay:"))
    );
    assert_eq!(db.paid_rows(&order), 1, "{fault:?}: the payment ran once");
    assert_eq!(db.order_status(&order), "PAID");
    let seen = proxy.requests();
    assert_eq!(
        seen.len(),
        call.attempts.len(),
        "{fault:?}: requests on the wire vs attempts the client reports: {call:?}"
    );
    // The same gaps on the wire as in the client's report.
    for (pair, attempts) in seen.windows(2).zip(call.attempts.windows(2)) {
        let wire = pair[1].duration_since(pair[0]).as_millis() as i64;
        let reported = (attempts[1].at_ms - attempts[0].at_ms) as i64;
        assert!(
            (wire - reported).abs() < SLACK_MS as i64,
            "{fault:?}: {wire} ms apart on the wire, {reported} ms reported"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(30));
    let attempts: Vec<String> = call
        .attempts
        .iter()
        .map(|attempt| format!("{} ms {}", attempt.at_ms, attempt.outcome))
        .collect();
    eprintln!(
        "{fault:?}: {} (replayed: {})",
        attempts.join(", "),
        call.replayed
    );
    call
}

fn outcomes(call: &Call) -> Vec<&str> {
    call.attempts.iter().map(|a| a.outcome.as_str()).collect()
}

/// Each retry waited at least what the attempt before asks (its timeout
/// after a timeout; the `Retry-After` of an in-progress answer; after a
/// 503 any part of the backoff's slot) and started no later than the
/// schedule's last latest start, the bound the window was checked against.
fn assert_starts(call: &Call, latest: &[u64]) {
    let last = *latest.last().unwrap();
    for (index, attempt) in call.attempts.iter().enumerate().skip(1) {
        let before = &call.attempts[index - 1];
        let wait = match before.outcome.as_str() {
            "timed-out" => CLIENT_TIMEOUT_MS,
            in_progress if in_progress.starts_with("in-progress ") => {
                in_progress["in-progress ".len()..].parse().unwrap()
            }
            _ => 0,
        };
        let gap = attempt.at_ms - before.at_ms;
        assert!(
            gap >= wait,
            "retry {index} came {gap} ms after the attempt before, not after at least {wait} ms: {call:?}"
        );
        assert!(
            attempt.at_ms <= last + SLACK_MS,
            "retry {index} started at {} ms, past the schedule's last start {last} ms: {call:?}",
            attempt.at_ms,
        );
    }
}
