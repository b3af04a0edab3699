//! Generated projects, built and run: the SQLite projects build offline
//! (no database, no `DATABASE_URL`) and pass their tests; when
//! `IDEMGEN_TEST_MYSQL_URL` / `IDEMGEN_TEST_PG_URL` are set (`.ci/run` sets
//! both), the MariaDB and PostgreSQL projects build offline too and pass
//! their tests there (each run in a fresh database), against the copy of
//! the runtime crate `gen` writes into the project.
//!
//! Every build goes through `support/build.rs`: one shared target
//! directory, `target/generated`, where the example services of the other
//! suites build too, and this workspace's lock file and profile, so axum
//! and sqlx compile once for all of them. The SQLite projects are members
//! of one workspace, built, linted and tested by one cargo invocation each.
//! They run when `IDEMGEN_TEST_GENERATED_BUILDS=1` (`.ci/run` sets it;
//! `support/skip.rs` says why a plain `cargo test` skips them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::support::skip;

use crate::support::build;

use crate::support::server_url::ServerUrl;
use build::root;
use skip::database_url;

fn skip() -> bool {
    skip::generated_builds_skipped()
}

const EXAMPLE_SPEC: &str = "examples/payment-callback/openapi.yaml";
const HOSTILE_SPEC: &str = "tests/codegen_fixtures/hostile.yaml";

/// Generates `spec` into `out`.
fn generate_into(spec: &str, out: &Path, extra: &[&str]) {
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
}

/// Generates `spec` into a fresh directory under the system temp dir: a
/// project of its own, with this workspace's lock file (the versions the
/// other builds in the shared target directory use).
fn generate(spec: &str, name: &str, extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(name);
    generate_into(spec, &out, extra);
    std::fs::copy(root().join("Cargo.lock"), out.join("Cargo.lock")).unwrap();
    (dir, out)
}

/// Runs cargo in `dir` in the shared target directory, with no database
/// unless `env` names one.
fn cargo(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = build::cargo(dir);
    command.args(args);
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

/// The servers' command-line clients, for the databases these tests make.
impl ServerUrl {
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
        let url = self.with_database(&name);
        FreshDatabase {
            server: self,
            name,
            url,
        }
    }
}

struct FreshDatabase<'a> {
    server: &'a ServerUrl,
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
fn server(variable: &str) -> Option<ServerUrl> {
    database_url(variable).map(|url| ServerUrl::parse(&url))
}

/// The example's spec; hostile names; no operations at all; an optional
/// key in the body (`stripe` profile) with a raw fingerprint that leaves
/// the body out; and every kind of typed input (parameters of each place
/// and type, optional and non-JSON bodies, responses by code, class and
/// `default`); a 201 with the headers a create sends (`Location`,
/// `ETag`, `Set-Cookie`); and the IETF draft's client-chosen `{opaque}`
/// keys. All on SQLite, as the members of one workspace: the first
/// carries the runtime copy `gen` writes, the others depend on that copy
/// (two copies of one crate cannot share a lock file).
const SQLITE_PROJECTS: [(&str, &str); 7] = [
    ("pay-sqlite", EXAMPLE_SPEC),
    ("hostile", HOSTILE_SPEC),
    ("empty", "tests/codegen_fixtures/empty.yaml"),
    (
        "optional-body-key",
        "tests/codegen_fixtures/optional-body-key.yaml",
    ),
    ("typed-input", "tests/codegen_fixtures/typed-input.yaml"),
    (
        "created-headers",
        "tests/codegen_fixtures/created-headers.yaml",
    ),
    ("opaque-key", "tests/codegen_fixtures/opaque-key.yaml"),
];

/// The members that must be clippy-clean (all but the hostile names).
const LINTED: [&str; 6] = [
    "pay-sqlite",
    "empty",
    "optional-body-key",
    "typed-input",
    "created-headers",
    "opaque-key",
];

/// A test of ours in the typed-input project: a `date-time` member is
/// read as RFC 3339, and a body whose value is not one is refused with
/// the schema-mismatch problem naming the member, before any key is
/// claimed (422, which the spec declares for a body that does not fit;
/// 400 where a spec does not); so is a payment method that breaks the
/// keywords of the branch its `type` chooses.
const TYPED_INPUT_DATES: &str = r##"
use axum::body::Body;
use axum::http::{Request, StatusCode};
use tower::ServiceExt;

async fn send(app: &typed_input::App, body: &str) -> (StatusCode, String) {
    let request = Request::post("/shops/1/refunds")
        .header("content-type", "application/json")
        .header("Idempotency-Key", format!("refund:{}", uuid::Uuid::new_v4()))
        .body(Body::from(body.to_owned()))
        .unwrap();
    let answer = app.router().oneshot(request).await.unwrap();
    let status = answer.status();
    let bytes = axum::body::to_bytes(answer.into_body(), usize::MAX).await.unwrap();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test]
async fn a_date_time_that_is_not_rfc_3339_is_refused_naming_the_member() {
    let file = std::env::temp_dir().join(format!("typed-input-dates-{}.db", uuid::Uuid::new_v4()));
    let app = typed_input::App::connect(&format!("sqlite://{}", file.display()))
        .await
        .unwrap();
    for wrong in [
        r#"{"amount": 5, "refund_at": "2024-13-01T00:00:00Z"}"#,
        r#"{"amount": 5, "refund_at": "yesterday"}"#,
    ] {
        let (status, problem) = send(&app, wrong).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{wrong}: {problem}");
        assert!(problem.contains("urn:idemgen:problem:schema-mismatch"), "{wrong}: {problem}");
        assert!(problem.contains("`refund_at`: "), "{wrong}: {problem}");
    }
    // A valid one reaches the (unimplemented) business code.
    let (status, answer) = send(&app, r#"{"amount": 5, "refund_at": "2024-06-15T14:00:00+02:00"}"#).await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{answer}");
    // The union chosen by `type` holds each branch's keywords where its
    // `type` names it, and no other branch's.
    for (method, broken) in [
        (r#"{"type": "card", "number": "12345678901234567890"}"#, Some(("/method/number", "maxLength"))),
        (r#"{"type": "ideal", "issuer": "12"}"#, Some(("/method/issuer", "minLength"))),
        (r#"{"type": "scheme", "number": "1234567890123456789"}"#, None),
        (r#"{"type": "ideal", "issuer": "1121", "number": "12345678901234567890"}"#, None),
        (r#"{"number": "12345678901234567890"}"#, None),
    ] {
        let (status, answer) = send(&app, &format!(r#"{{"amount": 5, "method": {method}}}"#)).await;
        match broken {
            Some((pointer, keyword)) => {
                assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{method}: {answer}");
                assert!(answer.contains(pointer) && answer.contains(keyword), "{method}: {answer}");
            }
            None => assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{method}: {answer}"),
        }
    }
    drop(app);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
}
"##;

#[test]
fn sqlite_projects_build_offline_are_clean_and_pass_their_tests() {
    if skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path();
    let members: Vec<String> = SQLITE_PROJECTS
        .iter()
        .map(|(name, _)| format!("\"{name}\""))
        .collect();
    std::fs::write(
        workspace.join("Cargo.toml"),
        format!(
            "[workspace]\nresolver = \"3\"\nmembers = [{}]\nexclude = [\"pay-sqlite/vendor\"]\n",
            members.join(", ")
        ),
    )
    .unwrap();
    std::fs::copy(root().join("Cargo.lock"), workspace.join("Cargo.lock")).unwrap();
    for (index, (name, spec)) in SQLITE_PROJECTS.into_iter().enumerate() {
        let mut extra = vec!["--db", "sqlite"];
        if index > 0 {
            extra.extend(["--runtime-path", "../pay-sqlite/vendor/idemgen-runtime"]);
        }
        generate_into(spec, &workspace.join(name), &extra);
    }
    std::fs::write(
        workspace.join("typed-input/tests/dates.rs"),
        TYPED_INPUT_DATES,
    )
    .unwrap();
    let manifest = std::fs::read_to_string(workspace.join("pay-sqlite/Cargo.toml")).unwrap();
    assert!(
        manifest.contains("path = \"vendor/idemgen-runtime\""),
        "{manifest}"
    );
    // A user who runs `cargo fmt` has changed the layout, not the code:
    // regenerating neither refuses nor rewrites a file.
    assert_ok(
        "cargo fmt (pay-sqlite)",
        &cargo(&workspace.join("pay-sqlite"), &["fmt"], &[]),
    );
    let formatted = std::fs::read_to_string(workspace.join("pay-sqlite/src/routes.rs")).unwrap();
    generate_into(
        EXAMPLE_SPEC,
        &workspace.join("pay-sqlite"),
        &["--db", "sqlite"],
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("pay-sqlite/src/routes.rs")).unwrap(),
        formatted
    );
    let packages = |names: &[&str]| -> Vec<String> {
        names
            .iter()
            .flat_map(|name| ["-p".to_string(), name.to_string()])
            .collect()
    };
    let linted = packages(&LINTED);
    let mut clippy: Vec<&str> = vec!["clippy", "--all-targets"];
    clippy.extend(linted.iter().map(String::as_str));
    clippy.extend(["--", "-D", "warnings"]);
    assert_ok("cargo clippy", &cargo(workspace, &clippy, &[]));
    let all: Vec<&str> = SQLITE_PROJECTS.iter().map(|(name, _)| *name).collect();
    let tested = packages(&all);
    let mut test: Vec<&str> = vec!["test"];
    test.extend(tested.iter().map(String::as_str));
    assert_ok("cargo test", &cargo(workspace, &test, &[]));
}

/// The example's spec for MariaDB or PostgreSQL, built offline and tested
/// on a fresh database. Only where its server is configured (`.ci/run`
/// sets both): each dialect is a cold build of its own sqlx driver, which a
/// plain `cargo test` has no time for.
fn project_for(dialect: &str, variable: &str) {
    if skip() {
        return;
    }
    let Some(server) = server(variable) else {
        return;
    };
    let (_dir, project) = generate(EXAMPLE_SPEC, &format!("pay-{dialect}"), &["--db", dialect]);
    assert_ok(
        &format!("cargo build ({dialect})"),
        &cargo(&project, &["build"], &[]),
    );
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
