//! `idemgen.toml`: found in the working directory or its parents, or given
//! with `--config`; command-line flags win; unknown keys and rule ids are
//! errors that name them.

use std::path::Path;
use std::process::Command;

use crate::support::run::rules_with;

const SPEC: &str = include_str!("../data/specs/payments.yaml");

struct Run {
    rules: Vec<(String, String)>,
    code: i32,
    stderr: String,
}

/// `idemgen lint --format json ARGS… payments.yaml` run in `dir`.
fn lint_in(dir: &Path, spec: &Path, args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .current_dir(dir)
        .args(["lint", "--format", "json"])
        .args(args)
        .arg(spec)
        .output()
        .expect("idemgen runs");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let rules = if stdout.is_empty() {
        Vec::new()
    } else {
        rules_with(&stdout, "severity")
    };
    Run {
        rules,
        code: output.status.code().unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(rule, severity)| (rule.to_string(), severity.to_string()))
        .collect()
}

/// A project: `root/idemgen.toml` (when given) and `root/api/spec.yaml`.
fn project(config: Option<&str>, spec: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let root = tempfile::tempdir().unwrap();
    if let Some(config) = config {
        std::fs::write(root.path().join("idemgen.toml"), config).unwrap();
    }
    let api = root.path().join("api");
    std::fs::create_dir(&api).unwrap();
    let spec_path = api.join("spec.yaml");
    std::fs::write(&spec_path, spec).unwrap();
    (root, spec_path)
}

#[test]
fn the_config_in_a_parent_directory_is_found_and_applied() {
    let (root, spec) = project(
        Some("[rules]\nmissing-idempotency = \"off\"\nwindow-too-short = \"warning\"\n"),
        SPEC,
    );
    // Run from the spec's directory: the config is one level up.
    let run = lint_in(&root.path().join("api"), &spec, &[]);
    assert_eq!(run.rules, pairs(&[("window-too-short", "warning")]));
    assert_eq!(run.code, 0, "a warning only: exit 0");

    // --no-config ignores it.
    let run = lint_in(&root.path().join("api"), &spec, &["--no-config"]);
    assert_eq!(
        run.rules,
        pairs(&[
            ("window-too-short", "error"),
            ("missing-idempotency", "warning")
        ])
    );
    assert_eq!(run.code, 1);
}

#[test]
fn an_explicit_config_is_used_instead_of_the_discovered_one() {
    let (root, spec) = project(Some("[rules]\nmissing-idempotency = \"off\"\n"), SPEC);
    let other = root.path().join("strict.toml");
    std::fs::write(&other, "[rules]\nmissing-idempotency = \"error\"\n").unwrap();
    let run = lint_in(root.path(), &spec, &["--config", other.to_str().unwrap()]);
    assert_eq!(
        run.rules,
        pairs(&[
            ("window-too-short", "error"),
            ("missing-idempotency", "error")
        ])
    );
}

#[test]
fn command_line_flags_win_over_the_config() {
    let (root, spec) = project(
        Some(
            "profile = \"ietf-draft\"\n[rules]\nwindow-too-short = \"off\"\nmissing-idempotency = \"info\"\n",
        ),
        SPEC,
    );
    // The config's profile expects 422 for a conflict, which the spec does not declare.
    let run = lint_in(root.path(), &spec, &[]);
    assert_eq!(
        run.rules,
        pairs(&[
            ("conflict-undeclared", "error"),
            ("missing-idempotency", "info")
        ])
    );
    let run = lint_in(
        root.path(),
        &spec,
        &[
            "--profile",
            "retry-after",
            "--severity",
            "window-too-short=warning",
            "--severity",
            "missing-idempotency=off",
        ],
    );
    assert_eq!(run.rules, pairs(&[("window-too-short", "warning")]));
    assert_eq!(run.code, 0);
}

#[test]
fn the_default_dialect_comes_from_the_config_unless_the_flag_says_otherwise() {
    // No store.dialect in the document, and a key longer than PostgreSQL's
    // unique index can hold (but within MySQL's and SQLite's).
    let spec = SPEC
        .replace(
            "  store: {dialect: sqlite, table: idempotent_record, database: payments}\n",
            "",
        )
        .replace(
            "format: \"pay:{date}:{uuid}\",",
            "format: \"pay:{date}:{uuid}\", max-length: 2700,",
        );
    let (root, path) = project(Some("[store]\ndialect = \"postgres\"\n"), &spec);
    let key_too_long = |run: &Run| run.rules.iter().any(|(rule, _)| rule == "key-too-long");
    assert!(key_too_long(&lint_in(root.path(), &path, &[])));
    assert!(!key_too_long(&lint_in(
        root.path(),
        &path,
        &["--dialect", "mysql"]
    )));
    assert!(!key_too_long(&lint_in(
        root.path(),
        &path,
        &["--no-config"]
    )));
}

#[test]
fn unknown_rule_ids_keys_and_values_are_errors_that_name_them() {
    for (config, expected) in [
        (
            "[rules]\nwindow-to-short = \"off\"\n",
            "unknown rule id `window-to-short` (did you mean `window-too-short`?)",
        ),
        ("profil = \"stripe\"\n", "unknown field `profil`"),
        ("[store]\ntable = \"records\"\n", "unknown field `table`"),
        (
            "[rules]\nwindow-too-short = \"warn\"\n",
            "unknown level `warn` (did you mean `warning`?)",
        ),
        ("profile = \"paypal\"\n", "unknown profile `paypal`"),
        (
            "[store]\ndialect = \"oracle\"\n",
            "unknown store.dialect `oracle`",
        ),
    ] {
        let (root, spec) = project(Some(config), SPEC);
        let run = lint_in(root.path(), &spec, &[]);
        assert_eq!(run.code, 2, "{config}");
        assert!(run.stderr.contains(expected), "{config}: {}", run.stderr);
        assert!(run.stderr.contains("idemgen.toml"), "{}", run.stderr);
        assert!(run.rules.is_empty());
    }
    let (root, spec) = project(None, SPEC);
    let run = lint_in(root.path(), &spec, &["--severity", "window-to-short=off"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("unknown rule id `window-to-short`"),
        "{}",
        run.stderr
    );
}

/// `idemgen ARGS…` run in `dir`: exit code, stdout, stderr.
fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("idemgen runs");
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn ddl_and_gen_take_the_default_dialect_and_rules_from_the_config() {
    // The spec names no dialect: the configuration's applies.
    let spec = SPEC.replace("store: {dialect: sqlite, ", "store: {");
    assert!(
        !spec.contains("dialect"),
        "the fixture names no dialect now"
    );
    let (root, path) = project(Some("[store]\ndialect = \"postgres\"\n"), &spec);
    let spec_path = path.to_str().unwrap();
    let (code, ddl, stderr) = run_in(root.path(), &["ddl", spec_path]);
    assert_eq!(code, 0, "{stderr}");
    assert!(ddl.contains("COLLATE \"C\""), "PostgreSQL DDL: {ddl}");
    let (_, sqlite, _) = run_in(root.path(), &["ddl", "--db", "sqlite", spec_path]);
    assert!(
        sqlite.contains("INTEGER PRIMARY KEY"),
        "--db wins: {sqlite}"
    );

    // gen refuses error-level findings, unless the configuration turns the rule off.
    let out = root.path().join("svc");
    let (code, _, stderr) = run_in(
        root.path(),
        &["gen", spec_path, "-o", out.to_str().unwrap()],
    );
    assert_eq!(code, 1, "window-too-short is an error: {stderr}");
    std::fs::write(
        root.path().join("idemgen.toml"),
        "[store]\ndialect = \"postgres\"\n[rules]\nwindow-too-short = \"warning\"\n",
    )
    .unwrap();
    let (code, _, stderr) = run_in(
        root.path(),
        &["gen", spec_path, "-o", out.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{stderr}");
    let cargo = std::fs::read_to_string(out.join("Cargo.toml")).unwrap();
    assert!(cargo.contains("default = [\"postgres\"]"), "{cargo}");

    // A broken configuration stops every command with exit 2.
    std::fs::write(
        root.path().join("idemgen.toml"),
        "[rules]\nno-such-rule = \"off\"\n",
    )
    .unwrap();
    for args in [vec!["ddl", spec_path], vec!["window", spec_path]] {
        let (code, _, stderr) = run_in(root.path(), &args);
        assert_eq!(code, 2, "{args:?}");
        assert!(stderr.contains("no-such-rule"), "{stderr}");
    }
}

/// The spec, a broken `idemgen.toml` beside it and a good one elsewhere.
fn broken_project() -> (tempfile::TempDir, String, String) {
    let spec = SPEC.replace("store: {dialect: sqlite, ", "store: {");
    let (root, path) = project(Some("[rules]\nno-such-rule = \"off\"\n"), &spec);
    let good = root.path().join("api").join("relaxed.toml");
    std::fs::write(
        &good,
        "[store]\ndialect = \"postgres\"\n[rules]\nwindow-too-short = \"warning\"\n",
    )
    .unwrap();
    (
        root,
        path.to_str().unwrap().to_string(),
        good.to_str().unwrap().to_string(),
    )
}

#[test]
fn every_command_reads_the_config_and_takes_config_and_no_config() {
    let (root, spec, good) = broken_project();
    let out = root.path().join("svc");
    let out = out.to_str().unwrap();
    // A closed port: probe gets as far as connecting only when its
    // configuration is fine.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let commands: [Vec<&str>; 5] = [
        vec!["lint", &spec],
        vec!["window", &spec],
        vec!["ddl", &spec],
        vec!["gen", &spec, "-o", out],
        vec!["probe", &spec, "--base-url", &base_url],
    ];
    for command in &commands {
        let (code, _, stderr) = run_in(root.path(), command);
        assert_eq!(code, 2, "{command:?} reads the broken idemgen.toml");
        assert!(
            stderr.contains("idemgen.toml:2") && stderr.contains("no-such-rule"),
            "{command:?}: {stderr}"
        );
        for flags in [vec!["--no-config"], vec!["--config", &good]] {
            let args: Vec<&str> = command.iter().copied().chain(flags.clone()).collect();
            let (_, _, stderr) = run_in(root.path(), &args);
            assert!(!stderr.contains("no-such-rule"), "{args:?}: {stderr}");
        }
        let args: Vec<&str> = command
            .iter()
            .copied()
            .chain(["--no-config", "--config", &good])
            .collect();
        let (code, _, stderr) = run_in(root.path(), &args);
        assert_eq!(code, 2, "{args:?}");
        assert!(stderr.contains("cannot be used with"), "{stderr}");
    }

    // What the chosen file says applies: its dialect to ddl, its rule
    // levels to gen; --no-config is the built-in defaults.
    let (code, ddl, _) = run_in(root.path(), &["ddl", &spec, "--config", &good]);
    assert_eq!(code, 0);
    assert!(ddl.contains("COLLATE \"C\""), "PostgreSQL DDL: {ddl}");
    let (_, ddl, _) = run_in(root.path(), &["ddl", &spec, "--no-config"]);
    assert!(ddl.contains("INTEGER PRIMARY KEY"), "SQLite DDL: {ddl}");
    let (code, _, stderr) = run_in(root.path(), &["gen", &spec, "-o", out, "--no-config"]);
    assert_eq!(code, 1, "window-too-short is an error by default: {stderr}");
    let (code, _, stderr) = run_in(root.path(), &["gen", &spec, "-o", out, "--config", &good]);
    assert_eq!(code, 0, "{stderr}");
    let cargo = std::fs::read_to_string(root.path().join("svc/Cargo.toml")).unwrap();
    assert!(cargo.contains("default = [\"postgres\"]"), "{cargo}");
}

#[test]
fn mariadb_is_accepted_wherever_mysql_is() {
    let spec = SPEC.replace("store: {dialect: sqlite, ", "store: {");
    let (root, path) = project(None, &spec);
    let spec = path.to_str().unwrap();
    let run = |dialect: &str, args: &[&str]| -> (i32, String, String) {
        let args: Vec<&str> = args
            .iter()
            .map(|arg| if *arg == "DIALECT" { dialect } else { arg })
            .collect();
        run_in(root.path(), &args)
    };
    for args in [
        vec!["lint", "--format", "json", "--dialect", "DIALECT", spec],
        vec!["ddl", "--db", "DIALECT", spec],
    ] {
        let mysql = run("mysql", &args);
        let mariadb = run("mariadb", &args);
        assert_ne!(mariadb.0, 2, "{args:?}: {}", mariadb.2);
        assert_eq!(mysql, mariadb, "{args:?}");
    }
    // In idemgen.toml too, for gen.
    for (dialect, dir) in [("mysql", "a"), ("mariadb", "b")] {
        std::fs::write(
            root.path().join("idemgen.toml"),
            format!("[store]\ndialect = \"{dialect}\"\n[rules]\nwindow-too-short = \"warning\"\n"),
        )
        .unwrap();
        let out = root.path().join(dir);
        let (code, _, stderr) = run_in(
            root.path(),
            &["gen", spec, "-o", out.to_str().unwrap(), "--name", "svc"],
        );
        assert_eq!(code, 0, "{dialect}: {stderr}");
        let cargo = std::fs::read_to_string(out.join("Cargo.toml")).unwrap();
        assert!(cargo.contains("default = [\"mysql\"]"), "{cargo}");
    }
    let (code, _, stderr) = run_in(
        root.path(),
        &[
            "gen",
            spec,
            "-o",
            root.path().join("c").to_str().unwrap(),
            "--name",
            "svc",
            "--db",
            "mariadb",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    for file in ["Cargo.toml", "src/lib.rs", "README.md"] {
        let a = std::fs::read_to_string(root.path().join("a").join(file)).unwrap();
        let b = std::fs::read_to_string(root.path().join("b").join(file)).unwrap();
        let c = std::fs::read_to_string(root.path().join("c").join(file)).unwrap();
        assert_eq!(a, b, "{file}");
        assert_eq!(a, c, "{file}");
    }
}

/// A device named as the configuration is read only up to the limit of a
/// configuration file, not until memory runs out.
#[test]
fn a_configuration_without_end_is_refused_at_its_size_limit() {
    let run = crate::support::run::idemgen(&[
        "lint",
        "--config",
        "/dev/zero",
        "examples/payment-callback/openapi.yaml",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "/dev/zero: cannot read the configuration: it is larger than the 1024 KiB limit"
        ),
        "{}",
        run.stderr
    );
}
