//! The generated client of the payment-callback example, built once and
//! driven by a small program (`client_driver.rs`), for
//! `tests/it/client.rs`.
//!
//! The client is generated from the example's spec with `client.timeout`
//! shortened to [`CLIENT_TIMEOUT_MS`], below the service's
//! `server.max-processing` (3 s): then a first attempt can time out while
//! the service still works on it, and its retry is told "in progress".
//! The service is unchanged: a client's timeout is not part of what it
//! serves.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use super::build::{self, DirLock, copy_aside, root, target_dir};

/// The shortened `client.timeout`.
pub const CLIENT_TIMEOUT_MS: u64 = 1_000;
/// The example's `client.retries`.
pub const RETRIES_MS: [u64; 2] = [200, 800];
/// The example's `server.max-processing`.
pub const MAX_PROCESSING_MS: u64 = 3_000;

/// Where the client crate and its driver are generated and built.
pub fn client_dir() -> PathBuf {
    target_dir().join("client")
}

/// The example's spec with the shortened timeout.
pub fn client_spec() -> String {
    let spec =
        std::fs::read_to_string(root().join("examples/payment-callback/openapi.yaml")).unwrap();
    let original = "timeout: 5s ";
    assert!(
        spec.contains(original),
        "the example's client.timeout moved"
    );
    spec.replacen(original, &format!("timeout: {CLIENT_TIMEOUT_MS}ms "), 1)
}

/// Writes `contents` to `path` unless it already holds them, so an
/// unchanged file keeps its time and cargo rebuilds nothing.
pub fn write_if_changed(path: &Path, contents: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(contents) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
}

/// Runs `idemgen` with `args`, which must succeed.
pub fn idemgen(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "idemgen {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Generates the client crate into `client_dir()/pay-client`; its path.
pub fn generate_client() -> PathBuf {
    let dir = client_dir();
    let spec = dir.join("openapi.yaml");
    write_if_changed(&spec, &client_spec());
    let crate_dir = dir.join("pay-client");
    idemgen(&[
        "gen",
        spec.to_str().unwrap(),
        "--client",
        "-o",
        crate_dir.to_str().unwrap(),
    ]);
    crate_dir
}

/// The driver program, built once per process (and under a lock between
/// processes) against the freshly generated client. Plain HTTP only
/// (`default-features = false`): the services run on loopback.
pub fn driver() -> PathBuf {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut built = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(path) = &*built {
        return path.clone();
    }
    let dir = client_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let _lock = DirLock::acquire(&dir.join(".build.lock"));
    generate_client();
    let path = build_program(
        &dir.join("driver"),
        "[package]\nname = \"client-driver\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
         [workspace]\n\n[dependencies]\n\
         pay-client = { path = \"../pay-client\", default-features = false }\n\
         serde_json = \"1\"\n\
         tokio = { version = \"1\", features = [\"macros\", \"rt\"] }\n",
        include_str!("client_driver.rs"),
        "client-driver",
    );
    *built = Some(path.clone());
    path
}

/// Builds the program crate in `program` (its manifest and `src/main.rs`)
/// in the shared target, with the versions the other builds there use,
/// and copies its binary `name` beside it: the binary's path.
pub fn build_program(program: &Path, manifest: &str, main: &str, name: &str) -> PathBuf {
    write_if_changed(&program.join("Cargo.toml"), manifest);
    write_if_changed(&program.join("src/main.rs"), main);
    if !program.join("Cargo.lock").exists() {
        std::fs::copy(root().join("Cargo.lock"), program.join("Cargo.lock")).unwrap();
    }
    let output = build::cargo(program).arg("build").output().unwrap();
    assert!(
        output.status.success(),
        "building {name} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    copy_aside(
        &target_dir().join("debug").join(name),
        program.parent().unwrap(),
        name,
    )
}

/// How one call of the client ended, as the driver reports it.
#[derive(Debug, serde::Deserialize)]
pub struct Call {
    pub ok: bool,
    pub status: Option<u16>,
    #[serde(default)]
    pub replayed: bool,
    pub key: Option<String>,
    pub error: Option<String>,
    pub attempts: Vec<CallAttempt>,
}

#[derive(Debug, serde::Deserialize)]
pub struct CallAttempt {
    /// When it started, in ms after the first attempt.
    pub at_ms: u64,
    /// `answered 200`, `in-progress 1000`, `retryable 503`,
    /// `timed-out`, `not-sent`, `connection`.
    pub outcome: String,
}

/// One call of `on_pay_callback` against `base` for `order`: the driver
/// prints exactly one line, the one answer the client returned.
pub fn call(driver: &Path, base: &str, order: &str, amount: i64) -> Call {
    call_with(driver, &[base, order, &amount.to_string()])
}

/// The call a process restarted after a crash makes: with a key prepared
/// `ago_ms` before.
pub fn resume(driver: &Path, base: &str, order: &str, amount: i64, ago_ms: u64) -> Call {
    call_with(
        driver,
        &[base, order, &amount.to_string(), &ago_ms.to_string()],
    )
}

fn call_with(driver: &Path, args: &[&str]) -> Call {
    let output = Command::new(driver).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the driver failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one call, one answer: {stdout}");
    serde_json::from_str(lines[0]).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}
