//! Every cargo build a test starts goes through here: generated projects
//! (`tests/it/generated.rs`, `tests/it/types_compile.rs`, `tests/it/types_corpus.rs`)
//! and the example services (`tests/it/probe.rs`, and through
//! `support/exactly_once.rs` the exactly-once, fault, Galera and crash
//! suites and the benches). They all build in one target directory,
//! `target/generated`, with one environment, so that axum, sqlx and the
//! rest compile once for all of them, and each example binary is built
//! once per dialect however many test binaries run it.

// Each test target that includes this file uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

#[path = "root.rs"]
mod root_dir;

pub use root_dir::root;

/// The target directory every build of this file shares.
pub fn target_dir() -> PathBuf {
    root().join("target/generated")
}

/// `cargo` in `dir`, building into [`target_dir`] with this workspace's
/// per-package profile settings (a generated project has none of its own;
/// the same settings mean the same compiled dependencies). sqlx reads its
/// offline query data (no `DATABASE_URL` reaches the build). Debug builds
/// carry no debuginfo, whose linking dominated these builds, and no
/// incremental cache: each of these crates is compiled once, never edited.
/// Release builds keep cargo's default LTO, codegen units and stripping,
/// not the workspace's tuning for the shipped CLI (minutes more per example
/// build, and nothing these tests measure).
pub fn cargo(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO"));
    for setting in package_profiles() {
        command.arg("--config").arg(setting);
    }
    command
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env("CARGO_INCREMENTAL", "0")
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
        .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo")
        .env_remove("DATABASE_URL")
        .env_remove("TEST_DATABASE_URL")
        .env_remove("SQLX_OFFLINE_DIR")
        .env("SQLX_OFFLINE", "true");
    command
}

/// The root manifest's `[profile.*.package.*]` settings, as `--config`
/// values (`profile.dev.package.syn.opt-level=3`).
fn package_profiles() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let manifest: toml::Table = text.parse().expect("the root Cargo.toml parses");
    let mut settings = Vec::new();
    let profiles = manifest.get("profile").and_then(toml::Value::as_table);
    for (profile, table) in profiles.into_iter().flatten() {
        let packages = table.get("package").and_then(toml::Value::as_table);
        for (package, keys) in packages.into_iter().flatten() {
            for (key, value) in keys.as_table().into_iter().flatten() {
                let value = match value {
                    toml::Value::String(text) => format!("{text:?}"),
                    toml::Value::Integer(number) => number.to_string(),
                    toml::Value::Boolean(flag) => flag.to_string(),
                    other => panic!("profile.{profile}.package.{package}.{key} = {other:?}"),
                };
                settings.push(format!("profile.{profile}.package.{package}.{key}={value}"));
            }
        }
    }
    settings
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Mysql,
    Postgres,
}

impl Dialect {
    /// The Cargo feature of both example crates.
    pub fn feature(self) -> &'static str {
        match self {
            Dialect::Sqlite => "sqlite",
            Dialect::Mysql => "mysql",
            Dialect::Postgres => "postgres",
        }
    }

    /// Where the base URL of a server comes from (none for SQLite).
    pub fn env_var(self) -> &'static str {
        match self {
            Dialect::Sqlite => "(nothing: SQLite always runs)",
            Dialect::Mysql => "IDEMGEN_TEST_MYSQL_URL",
            Dialect::Postgres => "IDEMGEN_TEST_PG_URL",
        }
    }

    /// [`Dialect::env_var`] for the dialects with a server.
    pub fn server_env_var(self) -> Option<&'static str> {
        self.has_server().then(|| self.env_var())
    }

    /// A server of its own: connections to kill, a clock apart from the
    /// service's, isolation levels to choose.
    pub fn has_server(self) -> bool {
        self != Dialect::Sqlite
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Debug,
    Release,
    /// Release as a generated project of its own builds it: its
    /// `[profile.release]` (fat LTO, one codegen unit). The load bench
    /// measures this build, of the baseline too; the tests take the
    /// quicker [`Profile::Release`].
    Shipped,
}

impl Profile {
    /// Its directory under the target directory.
    pub fn dir(self) -> &'static str {
        match self {
            Profile::Debug => "debug",
            Profile::Release => "release",
            Profile::Shipped => "shipped",
        }
    }

    /// Its `cargo build` arguments.
    pub fn args(self) -> Vec<String> {
        match self {
            Profile::Debug => Vec::new(),
            Profile::Release => vec!["--release".into()],
            // What the generated Cargo.toml's `[profile.release]` says,
            // as a profile of its own: its objects do not replace the
            // release ones the tests build.
            Profile::Shipped => [
                "--profile=shipped",
                "--config=profile.shipped.inherits=\"release\"",
                "--config=profile.shipped.lto=\"fat\"",
                "--config=profile.shipped.codegen-units=1",
            ]
            .map(String::from)
            .to_vec(),
        }
    }
}

/// The two example servers of one dialect and profile:
/// `examples/payment-callback` and `examples/naive-callback`.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub generated: PathBuf,
    pub naive: PathBuf,
}

impl Binaries {
    /// Debug builds, for the tests.
    pub fn get(dialect: Dialect) -> Binaries {
        Binaries::build(dialect, Profile::Debug).with_override(dialect)
    }

    /// `IDEMGEN_GENERATED_BIN=/path/{dialect}/payment-callback` puts another
    /// build of the generated service (a candidate fix) to the same test.
    pub fn with_override(mut self, dialect: Dialect) -> Binaries {
        if let Ok(path) = std::env::var("IDEMGEN_GENERATED_BIN") {
            self.generated = path.replace("{dialect}", dialect.feature()).into();
            eprintln!("generated service: {}", self.generated.display());
        }
        self
    }

    /// Builds both crates for `dialect` in [`target_dir`] (once per
    /// process) and copies the binaries out, so that the next build for
    /// another dialect, which writes the same paths, cannot swap them under
    /// a running test.
    pub fn build(dialect: Dialect, profile: Profile) -> Binaries {
        static BUILT: Mutex<Vec<(Dialect, Profile, Binaries)>> = Mutex::new(Vec::new());
        let mut built = BUILT
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, _, binaries)) = built
            .iter()
            .find(|(d, p, _)| *d == dialect && *p == profile)
        {
            return binaries.clone();
        }
        let target = target_dir();
        let profile_dir = profile.dir();
        let out = target
            .join("exactly-once")
            .join(format!("{profile_dir}-{}", dialect.feature()));
        std::fs::create_dir_all(&out).unwrap();
        // Other test processes build other dialects into the same paths:
        // building and copying is one step under a file lock.
        let _lock = DirLock::acquire(&target.join("exactly-once/.build.lock"));
        let feature = dialect.feature();
        let mut command = cargo(&root());
        command
            .args(["build", "-p", "payment-callback", "-p", "naive-callback"])
            .args(["--no-default-features", "--features"])
            .arg(format!(
                "payment-callback/{feature},naive-callback/{feature}"
            ))
            .args(profile.args());
        let started = Instant::now();
        let output = command.output().expect("cargo runs");
        assert!(
            output.status.success(),
            "building the examples for {dialect:?} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        eprintln!(
            "built the examples for {dialect:?} ({profile_dir}) in {:.0?}",
            started.elapsed()
        );
        let copy = |name: &str| copy_aside(&target.join(profile_dir).join(name), &out, name);
        let binaries = Binaries {
            generated: copy("payment-callback"),
            naive: copy("naive-callback"),
        };
        built.push((dialect, profile, binaries.clone()));
        binaries
    }
}

/// The payment-callback example generated again with `store.claim:
/// in-transaction` (its spec with that one line added, its business code
/// as it is), built for `dialect` like [`Binaries::build`]'s debug build:
/// the same service with the one-commit claim, for the fault cases that
/// run in each claim mode. Built once per process and dialect.
pub fn one_commit_service(dialect: Dialect) -> PathBuf {
    one_commit_service_built(dialect, Profile::Debug)
}

/// [`one_commit_service`] in `profile` (release for the PostgreSQL
/// failover and crash suites, like the example they also run). Built once
/// per process, dialect and profile.
pub fn one_commit_service_built(dialect: Dialect, profile: Profile) -> PathBuf {
    const ONE_COMMIT_PACKAGE: &str = "payment-callback-one-commit";
    static BUILT: Mutex<Vec<(Dialect, Profile, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, _, binary)) = built
        .iter()
        .find(|(d, p, _)| *d == dialect && *p == profile)
    {
        return binary.clone();
    }
    let profile_dir = profile.dir();
    let target = target_dir();
    let out = target
        .join("exactly-once")
        .join(format!("one-commit-{profile_dir}-{}", dialect.feature()));
    std::fs::create_dir_all(&out).unwrap();
    // One build of the project at a time, across test processes.
    let _lock = DirLock::acquire(&target.join("exactly-once/.build.lock"));
    let project = target.join("exactly-once/one-commit-project");
    let _ = std::fs::remove_dir_all(&project);
    std::fs::create_dir_all(&project).unwrap();
    let example = root().join("examples/payment-callback");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(example.join("."))
        .arg(&project)
        .status()
        .expect("cp runs");
    assert!(copied.success(), "copying {}", example.display());
    let dialect_line = "    dialect: sqlite\n";
    let spec = std::fs::read_to_string(example.join("openapi.yaml")).unwrap();
    assert!(
        spec.contains(dialect_line),
        "the example's store names its dialect"
    );
    let spec = spec.replacen(
        dialect_line,
        &format!("{dialect_line}    claim: in-transaction\n"),
        1,
    );
    std::fs::write(project.join("openapi.yaml"), spec).unwrap();
    let generated = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args([
            "gen",
            "openapi.yaml",
            "-o",
            ".",
            "--db",
            "sqlite,mysql,postgres",
            // A binary of its own name: the example's build writes
            // `payment-callback` into the same target directory.
            "--name",
            ONE_COMMIT_PACKAGE,
        ])
        .arg("--runtime-path")
        .arg(root().join("crates/idemgen-runtime"))
        .current_dir(&project)
        .output()
        .expect("idemgen runs");
    assert!(
        generated.status.success(),
        "idemgen gen with store.claim: in-transaction: {}",
        String::from_utf8_lossy(&generated.stderr)
    );
    let operations = std::fs::read_to_string(project.join("src/operations.rs")).unwrap();
    assert!(operations.contains("claim: ClaimMode::InTransaction,"));
    // A project of its own (gen writes its `[workspace]`), on this
    // workspace's lock file.
    std::fs::copy(root().join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    let started = Instant::now();
    let mut command = cargo(&project);
    command.args([
        "build",
        "--no-default-features",
        "--features",
        dialect.feature(),
    ]);
    command.args(profile.args());
    let output = command.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "building the one-commit example for {dialect:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!(
        "built the one-commit example for {dialect:?} ({profile_dir}) in {:.0?}",
        started.elapsed()
    );
    let binary = copy_aside(
        &target.join(profile_dir).join(ONE_COMMIT_PACKAGE),
        &out,
        ONE_COMMIT_PACKAGE,
    );
    built.push((dialect, profile, binary.clone()));
    binary
}

/// Copies the built binary `from` to `out/name`, where the next build
/// (another dialect, writing the same path) cannot swap it under a running
/// test. Copy, then rename: a process still running the old binary keeps
/// its file.
pub fn copy_aside(from: &Path, out: &Path, name: &str) -> PathBuf {
    let to = out.join(name);
    let partial = out.join(format!(".{name}.partial"));
    std::fs::copy(from, &partial).unwrap();
    std::fs::rename(&partial, &to).unwrap();
    to
}

/// A lock between processes: a directory only one can create (`File::lock`
/// is newer than the crate's MSRV). One left behind by a killed run is taken
/// over after ten minutes, longer than any build.
pub struct DirLock(PathBuf);

impl DirLock {
    pub fn acquire(path: &Path) -> DirLock {
        let started = Instant::now();
        loop {
            match std::fs::create_dir(path) {
                Ok(()) => return DirLock(path.to_path_buf()),
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                    let age = std::fs::metadata(path)
                        .and_then(|meta| meta.modified())
                        .ok()
                        .and_then(|modified| modified.elapsed().ok());
                    if age.is_some_and(|age| age > Duration::from_secs(600)) {
                        let _ = std::fs::remove_dir(path);
                    }
                    assert!(
                        started.elapsed() < Duration::from_secs(900),
                        "{} stayed locked",
                        path.display()
                    );
                    thread::sleep(Duration::from_millis(200));
                }
                Err(error) => panic!("cannot create {}: {error}", path.display()),
            }
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}
