//! How a test that cannot run here says so: a `SKIPPED: …` line on
//! standard error instead of a silent pass. The line is written past the
//! test harness's output capture, so `cargo test` shows it without
//! `--nocapture`; nextest shows it because `.config/nextest.toml` prints
//! these tests' output even when they pass.

// Each test target that includes this file uses only part of it.
#![allow(dead_code)]

use std::io::Write;

/// Prints `SKIPPED: {reason} ({test name})`.
pub fn skipped(reason: &str) {
    let test = std::thread::current()
        .name()
        .filter(|name| *name != "main")
        .map(|name| format!(" ({name})"))
        .unwrap_or_default();
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED: {reason}{test}");
}

/// The server URL in `variable` (`IDEMGEN_TEST_MYSQL_URL`,
/// `IDEMGEN_TEST_PG_URL`); when it is unset, says the test is skipped.
pub fn database_url(variable: &str) -> Option<String> {
    match std::env::var(variable) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            skipped(&format!("set {variable} to run"));
            None
        }
    }
}

/// Whether the tests that build generated projects or the example
/// services are skipped (then says so and why). They run when
/// `IDEMGEN_TEST_GENERATED_BUILDS=1` (`.ci/run` sets it): their first cold
/// axum + sqlx build alone takes minutes on two cores, more than a plain
/// `cargo test` has. `IDEMGEN_SKIP_GENERATED_BUILDS` skips them even then.
pub fn generated_builds_skipped() -> bool {
    if std::env::var_os("IDEMGEN_SKIP_GENERATED_BUILDS").is_some() {
        skipped("IDEMGEN_SKIP_GENERATED_BUILDS is set, so generated projects are not built");
        return true;
    }
    if std::env::var("IDEMGEN_TEST_GENERATED_BUILDS").as_deref() != Ok("1") {
        skipped(
            "set IDEMGEN_TEST_GENERATED_BUILDS=1 to build generated projects and the example \
             services (a cold axum + sqlx build: minutes on two cores; .ci/run sets it)",
        );
        return true;
    }
    false
}
