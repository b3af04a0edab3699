//! Generated projects, built and run: every dialect builds offline (no
//! database, no `DATABASE_URL`), the generated tests pass on SQLite and, when
//! `IDEMGEN_TEST_MYSQL_URL` / `IDEMGEN_TEST_PG_URL` are set, on MariaDB and
//! PostgreSQL (each run in a fresh database), against the copy of the
//! runtime crate `gen` writes into the project.
//!
//! Every project builds in one shared target directory, `target/generated`
//! (a cold axum + sqlx build takes about a minute on two cores; later ones
//! reuse it). `IDEMGEN_SKIP_GENERATED_BUILDS=1` skips these tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{SystemTime, UNIX_EPOCH};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[path = "support/skip.rs"]
mod skip;

use skip::database_url;

fn skip() -> bool {
    skip::generated_builds_skipped()
}

const EXAMPLE_SPEC: &str = "examples/payment-callback/openapi.yaml";
const HOSTILE_SPEC: &str = "tests/codegen_fixtures/hostile.yaml";

/// Generates `spec` into a fresh directory under the system temp dir.
fn generate(spec: &str, name: &str, extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(name);
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(["gen", spec, "-o", out.to_str().unwrap()])
        .args(extra)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "idemgen gen {spec}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (dir, out)
}

/// Runs cargo in `dir` with the shared target directory and no database
/// unless `env` names one.
fn cargo(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO"));
    command
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", root().join("target/generated"))
        .env_remove("DATABASE_URL")
        .env_remove("TEST_DATABASE_URL")
        .env_remove("SQLX_OFFLINE_DIR")
        .env("SQLX_OFFLINE", "true");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

fn assert_ok(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A database URL parsed just enough to name another database beside it.
struct Server {
    scheme: String,
    user: String,
    password: Option<String>,
    host: String,
    port: Option<String>,
    database: String,
}

impl Server {
    fn parse(url: &str) -> Option<Server> {
        let (scheme, rest) = url.split_once("://")?;
        let (authority, database) = rest.split_once('/').unwrap_or((rest, ""));
        let (credentials, address) = match authority.rsplit_once('@') {
            Some((credentials, address)) => (credentials, address),
            None => ("", authority),
        };
        let (user, password) = match credentials.split_once(':') {
            Some((user, password)) => (user.to_string(), Some(password.to_string())),
            None => (credentials.to_string(), None),
        };
        let (host, port) = match address.rsplit_once(':') {
            Some((host, port)) => (host.to_string(), Some(port.to_string())),
            None => (address.to_string(), None),
        };
        Some(Server {
            scheme: scheme.into(),
            user,
            password,
            host,
            port,
            database: database.split('?').next().unwrap_or_default().to_string(),
        })
    }

    fn url(&self, database: &str) -> String {
        let credentials = match &self.password {
            Some(password) => format!("{}:{password}@", self.user),
            None if self.user.is_empty() => String::new(),
            None => format!("{}@", self.user),
        };
        let port = self
            .port
            .as_ref()
            .map(|p| format!(":{p}"))
            .unwrap_or_default();
        format!(
            "{}://{credentials}{}{port}/{database}",
            self.scheme, self.host
        )
    }

    /// Runs SQL with the server's command-line client (`mysql`, `psql`).
    fn run_sql(&self, database: Option<&str>, sql: &str) -> Result<(), String> {
        let mut command = if self.scheme.starts_with("mysql") || self.scheme == "mariadb" {
            let mut command = Command::new("mysql");
            command.args(["-h", &self.host, "-u", &self.user]);
            if let Some(port) = &self.port {
                command.args(["-P", port]);
            }
            if let Some(password) = &self.password {
                command.arg(format!("-p{password}"));
            }
            if let Some(database) = database {
                command.arg(database);
            }
            command.args(["-e", sql]);
            command
        } else {
            let mut command = Command::new("psql");
            command.args([
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                &self.host,
                "-U",
                &self.user,
            ]);
            if let Some(port) = &self.port {
                command.args(["-p", port]);
            }
            if let Some(password) = &self.password {
                command.env("PGPASSWORD", password);
            }
            command.args(["-d", database.unwrap_or(&self.database), "-c", sql]);
            command
        };
        let output = command.output().map_err(|error| error.to_string())?;
        if output.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    }

    /// A new, empty database on this server, dropped again when the
    /// returned guard goes.
    fn fresh_database(&self, purpose: &str) -> FreshDatabase<'_> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let name = format!("idemgen_{purpose}_{}_{nanos}", std::process::id());
        self.run_sql(None, &format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|error| panic!("creating database {name}: {error}"));
        let url = self.url(&name);
        FreshDatabase {
            server: self,
            name,
            url,
        }
    }
}

struct FreshDatabase<'a> {
    server: &'a Server,
    name: String,
    url: String,
}

impl Drop for FreshDatabase<'_> {
    fn drop(&mut self) {
        let _ = self
            .server
            .run_sql(None, &format!("DROP DATABASE IF EXISTS {}", self.name));
    }
}

/// The server of `variable` (`IDEMGEN_TEST_MYSQL_URL`, `IDEMGEN_TEST_PG_URL`).
fn server(variable: &str) -> Option<Server> {
    let url = database_url(variable)?;
    Some(Server::parse(&url).unwrap_or_else(|| panic!("{variable}: bad URL")))
}

#[test]
fn sqlite_project_builds_offline_is_clean_and_passes_its_tests() {
    if skip() {
        return;
    }
    let (_dir, project) = generate(EXAMPLE_SPEC, "pay-sqlite", &["--db", "sqlite"]);
    assert_ok(
        "cargo fmt --check",
        &cargo(&project, &["fmt", "--check"], &[]),
    );
    assert_ok("cargo test", &cargo(&project, &["test"], &[]));
    assert_ok(
        "cargo clippy",
        &cargo(
            &project,
            &["clippy", "--all-targets", "--", "-D", "warnings"],
            &[],
        ),
    );
}

#[test]
fn hostile_names_build_and_pass_on_sqlite() {
    if skip() {
        return;
    }
    let (_dir, project) = generate(HOSTILE_SPEC, "hostile", &["--db", "sqlite"]);
    assert_ok(
        "cargo test (hostile names)",
        &cargo(
            &project,
            &["test", "--no-default-features", "--features", "sqlite"],
            &[],
        ),
    );
}

/// No operations at all; an optional key in the body (`stripe` profile)
/// with a raw fingerprint that leaves the body out; and every kind of
/// typed input (parameters of each place and type, optional and non-JSON
/// bodies, responses by code, class and `default`).
#[test]
fn unusual_specs_build_clean_and_pass_on_sqlite() {
    if skip() {
        return;
    }
    for spec in [
        "tests/codegen_fixtures/empty.yaml",
        "tests/codegen_fixtures/optional-body-key.yaml",
        "tests/codegen_fixtures/typed-input.yaml",
    ] {
        let (_dir, project) = generate(spec, "unusual", &["--db", "sqlite"]);
        let sqlite = ["--no-default-features", "--features", "sqlite"];
        let clippy: Vec<&str> = ["clippy", "--all-targets"]
            .into_iter()
            .chain(sqlite)
            .chain(["--", "-D", "warnings"])
            .collect();
        assert_ok(
            &format!("cargo clippy ({spec})"),
            &cargo(&project, &clippy, &[]),
        );
        let test: Vec<&str> = ["test"].into_iter().chain(sqlite).collect();
        assert_ok(
            &format!("cargo test ({spec})"),
            &cargo(&project, &test, &[]),
        );
    }
}

fn project_for(dialect: &str, variable: &str) {
    if skip() {
        return;
    }
    let (_dir, project) = generate(EXAMPLE_SPEC, &format!("pay-{dialect}"), &["--db", dialect]);
    assert_ok(
        &format!("cargo build ({dialect})"),
        &cargo(&project, &["build"], &[]),
    );
    let Some(server) = server(variable) else {
        return;
    };
    let database = server.fresh_database(dialect);
    assert_ok(
        &format!("cargo test ({dialect})"),
        &cargo(&project, &["test"], &[("TEST_DATABASE_URL", &database.url)]),
    );
}

#[test]
fn mysql_project_builds_offline_and_passes_on_mariadb() {
    project_for("mysql", "IDEMGEN_TEST_MYSQL_URL");
}

#[test]
fn postgres_project_builds_offline_and_passes_on_postgres() {
    project_for("postgres", "IDEMGEN_TEST_PG_URL");
}

/// The example's own tests (business write included) on MariaDB and
/// PostgreSQL; on SQLite they run with the root `cargo test`.
#[test]
fn example_passes_its_tests_on_mariadb_and_postgres() {
    if skip() {
        return;
    }
    for (feature, variable) in [
        ("mysql", "IDEMGEN_TEST_MYSQL_URL"),
        ("postgres", "IDEMGEN_TEST_PG_URL"),
    ] {
        let Some(server) = server(variable) else {
            continue;
        };
        let database = server.fresh_database("example");
        assert_ok(
            &format!("example tests on {feature}"),
            &cargo(
                &root(),
                &[
                    "test",
                    "-p",
                    "payment-callback",
                    "--no-default-features",
                    "--features",
                    feature,
                ],
                &[("TEST_DATABASE_URL", &database.url)],
            ),
        );
    }
}

/// The runtime crate's own suite (every record-table statement, the state
/// machine, the startup schema check) on MariaDB and PostgreSQL; on SQLite
/// it runs with the root `cargo test`.
#[test]
fn runtime_passes_its_tests_on_mariadb_and_postgres() {
    if skip() {
        return;
    }
    for (feature, variable) in [
        ("mysql", "IDEMGEN_TEST_MYSQL_URL"),
        ("postgres", "IDEMGEN_TEST_PG_URL"),
    ] {
        let Some(url) = database_url(variable) else {
            continue;
        };
        assert_ok(
            &format!("idemgen-runtime tests on {feature}"),
            &cargo(
                &root(),
                &[
                    "test",
                    "-p",
                    "idemgen-runtime",
                    "--no-default-features",
                    "--features",
                    feature,
                ],
                &[(variable, &url)],
            ),
        );
    }
}

/// A generated project carries a copy of the runtime crate that is
/// byte-identical to this workspace's, so it builds with crates.io alone.
#[test]
fn the_vendored_runtime_is_this_workspace_crate() {
    let (_dir, project) = generate(EXAMPLE_SPEC, "vendored", &[]);
    let crate_dir = root().join("crates/idemgen-runtime");
    let mut pending = vec![crate_dir.join("src")];
    let mut sources = vec![crate_dir.join("Cargo.toml")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                sources.push(path);
            }
        }
    }
    for source in sources {
        let relative = source.strip_prefix(&crate_dir).unwrap();
        let copy = project.join("vendor/idemgen-runtime").join(relative);
        assert_eq!(
            std::fs::read_to_string(&copy)
                .unwrap_or_else(|_| panic!("{} was not vendored", relative.display())),
            std::fs::read_to_string(&source).unwrap(),
            "{} differs from the crate's",
            relative.display()
        );
    }
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(
            "idemgen-runtime = { path = \"vendor/idemgen-runtime\", default-features = false }"
        ),
        "{manifest}"
    );
}
