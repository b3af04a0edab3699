//! `idemgen gen` and `idemgen ddl` without building anything: what is
//! written where, what is refused, and that the committed example is
//! exactly what idemgen generates plus the user's business files.
//! (`tests/it/generated.rs` builds and runs generated projects.)

use crate::support::root;
use crate::support::run::{Run, idemgen};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use idemgen_codegen::{self as codegen, Owner};
use idemgen_spec::Workspace;
use idemgen_spec::contract::model::Dialect;

use crate::support::skip;

const EXAMPLE: &str = "examples/payment-callback";

fn gen_into(spec: &str, dir: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["gen", spec, "-o", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    idemgen(&args)
}

#[test]
fn ddl_defaults_to_the_spec_dialect_and_follows_db() {
    let spec = format!("{EXAMPLE}/openapi.yaml");
    let sqlite = idemgen(&["ddl", &spec]);
    assert_eq!(sqlite.code, 0, "{}", sqlite.stderr);
    assert!(sqlite.stdout.contains("CREATE TABLE idempotent_record ("));
    assert!(sqlite.stdout.contains("UNIQUE (scope, idem_key)"));
    assert!(sqlite.stdout.contains("ON idempotent_record (expires_at)"));

    let mysql = idemgen(&["ddl", &spec, "--db", "mysql"]);
    assert_eq!(mysql.code, 0);
    assert!(mysql.stdout.contains("idem_key VARBINARY(128) NOT NULL"));
    assert!(
        mysql
            .stdout
            .contains("UNIQUE KEY uq_idempotent_record_scope_key (scope, idem_key)")
    );
    assert!(
        mysql
            .stdout
            .contains("ENGINE = InnoDB DEFAULT CHARSET = utf8mb4")
    );

    let postgres = idemgen(&["ddl", &spec, "--db", "postgres"]);
    assert_eq!(postgres.code, 0);
    assert!(
        postgres
            .stdout
            .contains("idem_key VARCHAR(128) COLLATE \"C\" NOT NULL")
    );

    let bad = idemgen(&["ddl", &spec, "--db", "oracle"]);
    assert_eq!(bad.code, 2);
}

#[test]
fn ddl_uses_the_spec_table_and_widest_key() {
    let run = idemgen(&["ddl", "tests/codegen_fixtures/hostile.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("CREATE TABLE idem_records ("),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("idem_key VARCHAR(80)"),
        "{}",
        run.stdout
    );
}

#[test]
fn ddl_applies_to_sqlite() {
    if Command::new("sqlite3").arg("--version").output().is_err() {
        skip::skipped("no sqlite3 command");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ddl = idemgen(&["ddl", &format!("{EXAMPLE}/openapi.yaml")]).stdout;
    let sql = dir.path().join("ddl.sql");
    std::fs::write(&sql, ddl).unwrap();
    let output = Command::new("sqlite3")
        .arg(dir.path().join("db.sqlite"))
        .arg(format!(".read {}", sql.display()))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn gen_refuses_a_spec_with_error_findings() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("svc");
    let run = gen_into("examples/broken/window-too-short.yaml", &out, &[]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("window-too-short"), "{}", run.stderr);
    assert!(
        run.stderr.contains("fix it before generating code"),
        "{}",
        run.stderr
    );
    assert!(!out.exists());
}

/// What `lint` says a `retry-after` the header cannot carry is sent as is
/// what the generated service sends.
#[test]
fn a_retry_after_that_is_not_whole_seconds_is_sent_as_the_lint_says() {
    let spec = "examples/broken/retry-after-not-whole-seconds.yaml";
    let lint = idemgen(&["lint", "--no-config", "--format", "json", spec]);
    assert_eq!(lint.code, 0, "a warning only: {}", lint.stderr);
    assert!(
        lint.stdout
            .contains("retry-after 1.5s is sent as `Retry-After: 2`"),
        "{}",
        lint.stdout
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("svc");
    let run = gen_into(spec, &out, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let operations = std::fs::read_to_string(out.join("src/operations.rs")).unwrap();
    assert!(operations.contains("retry_after_secs: 2,"), "{operations}");
}

#[test]
fn regenerating_refreshes_generated_files_and_keeps_business_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("svc");
    let spec = format!("{EXAMPLE}/openapi.yaml");
    let first = gen_into(&spec, &out, &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);

    let manifest = std::fs::read_to_string(out.join(".idemgen-manifest")).unwrap();
    assert!(manifest.contains("  Cargo.toml\n"));
    assert!(manifest.contains("  src/routes.rs\n"));
    assert!(manifest.contains("  vendor/idemgen-runtime/src/engine.rs\n"));
    assert!(!manifest.contains("src/business/on_pay_callback.rs"));

    let business = out.join("src/business/on_pay_callback.rs");
    std::fs::write(&business, "// mine\n").unwrap();
    let again = gen_into(&spec, &out, &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stdout.contains("0 created, 0 updated"),
        "{}",
        again.stdout
    );
    assert!(
        again.stdout.contains("kept your business files"),
        "{}",
        again.stdout
    );
    assert_eq!(std::fs::read_to_string(&business).unwrap(), "// mine\n");

    // A generated file the user changed is not clobbered without --force.
    let lib = out.join("src/lib.rs");
    let original = std::fs::read_to_string(&lib).unwrap();
    std::fs::write(&lib, "// changed by hand\n").unwrap();
    let refused = gen_into(&spec, &out, &[]);
    assert_eq!(refused.code, 2);
    assert!(refused.stderr.contains("src/lib.rs"), "{}", refused.stderr);
    assert_eq!(
        std::fs::read_to_string(&lib).unwrap(),
        "// changed by hand\n"
    );
    let forced = gen_into(&spec, &out, &["--force"]);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert_eq!(std::fs::read_to_string(&lib).unwrap(), original);
    assert_eq!(std::fs::read_to_string(&business).unwrap(), "// mine\n");
}

#[test]
fn gen_refuses_to_overwrite_files_it_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("svc");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("Cargo.toml"), "[package]\nname = \"mine\"\n").unwrap();
    let run = gen_into(&format!("{EXAMPLE}/openapi.yaml"), &out, &[]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("refusing to overwrite"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("Cargo.toml"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(out.join("Cargo.toml")).unwrap(),
        "[package]\nname = \"mine\"\n"
    );
    assert!(
        !out.join("src").exists(),
        "nothing is written when anything is refused"
    );
}

#[test]
fn templates_can_be_overridden_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let templates = dir.path().join("templates");
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::write(templates.join("README.md.j2"), "# {{ package }}, our way\n").unwrap();
    std::fs::write(templates.join("READNE.md.j2"), "typo").unwrap();
    let out = dir.path().join("pay-svc");
    let run = gen_into(
        &format!("{EXAMPLE}/openapi.yaml"),
        &out,
        &["--templates", templates.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("READNE.md.j2: replaces no template"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(out.join("README.md")).unwrap(),
        "# pay-svc, our way\n"
    );
    // The others are the embedded ones.
    assert!(
        std::fs::read_to_string(out.join("src/routes.rs"))
            .unwrap()
            .contains("async fn on_pay_callback(State(app): State<App>")
    );
}

#[test]
fn a_template_that_is_not_rust_stops_gen_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let templates = dir.path().join("templates");
    std::fs::create_dir_all(templates.join("src")).unwrap();
    std::fs::write(
        templates.join("src/main.rs.j2"),
        "fn main() {}\nfn main( {\n",
    )
    .unwrap();
    let out = dir.path().join("svc");
    let run = gen_into(
        &format!("{EXAMPLE}/openapi.yaml"),
        &out,
        &["--templates", templates.to_str().unwrap()],
    );
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr
            .contains("the generated src/main.rs is not valid Rust")
            && run.stderr.contains("at line 2"),
        "{}",
        run.stderr
    );
    assert!(!out.exists());
}

#[test]
fn hostile_names_become_unique_readable_identifiers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("hostile");
    let run = gen_into("tests/codegen_fixtures/hostile.yaml", &out, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let business: BTreeSet<String> = std::fs::read_dir(out.join("src/business"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let expected = [
        "mod.rs",
        "create_order.rs",
        "create_order_2.rs",
        "delete_orders_id.rs",
        "type_.rs",
        "op_3d_secure.rs",
        "u652f_u4ed8.rs",
        "creer_paiement.rs",
        "router_.rs",
        "self_.rs",
    ];
    assert_eq!(business, expected.iter().map(|s| s.to_string()).collect());

    // Descriptions and titles stay inside comments and strings.
    for file in [
        "src/lib.rs",
        "src/routes.rs",
        "src/operations.rs",
        "src/business/create_order.rs",
    ] {
        let text = std::fs::read_to_string(out.join(file)).unwrap();
        for line in text.lines() {
            let code = line.trim_start();
            assert!(
                !code.starts_with("#![no_std]")
                    && !code.starts_with("*/ fn main")
                    && !code.starts_with("panic!"),
                "{file}: `{line}` escaped its comment"
            );
            assert!(
                !line.contains('\u{202e}'),
                "{file}: bidirectional override kept"
            );
        }
    }
    let operations = std::fs::read_to_string(out.join("src/operations.rs")).unwrap();
    // Each operation's name is its first argument, as written in the spec.
    for name in ["create order!", "支付", "DELETE /orders/{id}"] {
        assert!(
            operations.contains(&format!("(\n    \"{name}\","))
                || operations.contains(&format!("(\"{name}\", ")),
            "{name}: {operations}"
        );
    }
}

/// The committed example is what idemgen generates from its spec: every
/// generated file is identical, and only the business files (the user's)
/// differ from what idemgen would create.
#[test]
fn the_example_is_idemgen_output_plus_business_files() {
    let dir = root().join(EXAMPLE);
    let workspace = Workspace::load(&dir.join("openapi.yaml")).unwrap();
    let options = codegen::Options {
        dialects: vec![Dialect::Sqlite, Dialect::Mysql, Dialect::Postgres],
        templates: None,
        package: "payment-callback".into(),
        standalone: false,
        runtime_path: Some("../../crates/idemgen-runtime".into()),
        runbook_url: None,
        job: None,
        spec: "openapi.yaml".into(),
        defaults: Default::default(),
    };
    let project = codegen::plan(&workspace, &options).unwrap();
    assert_eq!(project.dialect, Dialect::Sqlite);
    let mut differing = Vec::new();
    for file in &project.files {
        let committed = std::fs::read_to_string(dir.join(&file.path))
            .unwrap_or_else(|_| panic!("{} is not committed; regenerate the example", file.path));
        match file.owner {
            Owner::Idemgen => assert!(
                // Below the "Yours" line of Cargo.toml is the user's. The
                // workspace's `cargo fmt` lays the Rust out its own way,
                // which changes no code.
                codegen::manifest::split_user_tail(committed.as_bytes()).0
                    == codegen::manifest::split_user_tail(file.contents.as_bytes()).0
                    || (file.path.ends_with(".rs")
                        && codegen::format::same_but_layout(&committed, &file.contents)),
                "{} differs from idemgen's output; run `idemgen gen {EXAMPLE}/openapi.yaml -o {EXAMPLE} --db sqlite,mysql,postgres --runtime-path ../../crates/idemgen-runtime`",
                file.path
            ),
            Owner::User => {
                if committed != file.contents {
                    differing.push(file.path.clone());
                }
            }
        }
    }
    differing.sort();
    assert_eq!(
        differing,
        [
            "src/auth.rs",
            "src/business/get_order.rs",
            "src/business/on_pay_callback.rs"
        ]
    );
    let manifest = std::fs::read_to_string(dir.join(".idemgen-manifest")).unwrap();
    for file in project
        .files
        .iter()
        .filter(|file| file.owner == Owner::Idemgen)
    {
        assert!(
            manifest.contains(&format!("  {}\n", file.path)),
            "{} not in the manifest",
            file.path
        );
    }
}

#[cfg(unix)]
#[test]
fn gen_never_writes_through_a_symbolic_link_out_of_the_output_directory() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let out = dir.path().join("svc");
    std::fs::create_dir_all(&out).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("src")).unwrap();
    let run = gen_into(&format!("{EXAMPLE}/openapi.yaml"), &out, &["--force"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("symbolic link"), "{}", run.stderr);
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// A spec with `count` read-only operations `GET /items{n}`.
fn spec_with_operations(count: usize) -> String {
    let mut spec = String::from("openapi: 3.1.0\ninfo: {title: many, version: 1.0.0}\npaths:\n");
    for n in 1..=count {
        spec.push_str(&format!(
            "  /items{n}:\n    get:\n      operationId: getItem{n}\n      \
             responses:\n        \"200\": {{description: ok}}\n"
        ));
    }
    spec
}

#[test]
fn the_next_hint_names_a_few_business_files_and_summarises_many() {
    let dir = tempfile::tempdir().unwrap();
    let redact = |text: &str| text.replace(dir.path().to_str().unwrap(), "[TMP]");

    let small = dir.path().join("small.yaml");
    std::fs::write(&small, spec_with_operations(2)).unwrap();
    let run = gen_into(small.to_str().unwrap(), &dir.path().join("small-svc"), &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("next_hint_small", redact(&run.stdout));

    let big = dir.path().join("big.yaml");
    std::fs::write(&big, spec_with_operations(40)).unwrap();
    let out = dir.path().join("big-svc");
    let run = gen_into(big.to_str().unwrap(), &out, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("next_hint_big", redact(&run.stdout));
    assert!(
        run.stdout.lines().all(|line| line.len() < 200),
        "{}",
        run.stdout
    );

    // The printed command lists exactly the files still answering 501.
    std::fs::write(
        out.join("src/business/get_item1.rs"),
        "// written by hand\n",
    )
    .unwrap();
    let command = run
        .stdout
        .lines()
        .find_map(|line| {
            line.trim()
                .strip_prefix("list the ones still answering 501: ")
        })
        .expect("a command to list them");
    let listed = Command::new("sh").arg("-c").arg(command).output().unwrap();
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert_eq!(listed.lines().count(), 39, "{listed}");
    assert!(!listed.contains("get_item1.rs\n"), "{listed}");

    let again = gen_into(big.to_str().unwrap(), &out, &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    insta::assert_snapshot!("next_hint_again", redact(&again.stdout));
}

/// Every file under `dir`, by relative path, with its bytes.
fn tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                files.insert(path.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    files
}

/// `idemgen gen` of the example into `out` with `PATH` set to `path`.
fn gen_with_path(out: &Path, path: &std::ffi::OsStr) -> Run {
    let spec = root().join(EXAMPLE).join("openapi.yaml");
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(["gen", spec.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .args(["--name", "svc", "--force"])
        .current_dir(root())
        .env("PATH", path)
        .output()
        .expect("the binary runs");
    Run {
        code: output.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// Generated Rust is laid out by idemgen itself (prettyplease), so gen
/// needs no rustfmt and writes the same bytes whether or not one is on
/// PATH; and either way `cargo fmt --check` passes in the project: the
/// files the user owns are laid out as rustfmt would, the others tell
/// rustfmt to leave them.
#[test]
fn gen_needs_no_rustfmt_and_writes_the_same_bytes_without_it() {
    let full = std::env::var_os("PATH").unwrap_or_default();
    let scratch = tempfile::tempdir().unwrap();
    let empty = scratch.path().join("empty-bin");
    std::fs::create_dir(&empty).unwrap();

    let with_full_path = scratch.path().join("full");
    let run = gen_with_path(&with_full_path, &full);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let expected = tree(&with_full_path);
    assert!(expected.keys().any(|path| path.ends_with("routes.rs")));

    // Nothing on PATH at all: no rustfmt, no cargo.
    let without = scratch.path().join("without");
    let run = gen_with_path(&without, empty.as_os_str());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(tree(&without) == expected, "the trees differ");

    // The vendored runtime is the crate's own source, in rustfmt's layout.
    let generated = |path: &&str| path.ends_with(".rs") && !path.starts_with("vendor/");
    for (path, contents) in &expected {
        let Some(path) = path.to_str().filter(generated) else {
            continue;
        };
        let contents = String::from_utf8_lossy(contents);
        let left_alone = contents.contains("#![cfg_attr(rustfmt, rustfmt::skip)]");
        let users = ["src/app.rs", "src/auth.rs"].contains(&path)
            || (path.starts_with("src/business/") && path != "src/business/mod.rs");
        assert_eq!(left_alone, !users, "{path}");
    }
    if Command::new("rustfmt").arg("--version").output().is_err() {
        skip::skipped("rustfmt is not on PATH, so `cargo fmt --check` cannot run");
        return;
    }
    let output = Command::new(env!("CARGO"))
        .args(["fmt", "--check"])
        .current_dir(&without)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo fmt --check:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The user's own module (`src/app.rs`) and what they add below the
/// "Yours" line of `Cargo.toml` survive regeneration without `--templates`,
/// also when idemgen's part of `Cargo.toml` changes.
#[test]
fn the_users_module_and_dependencies_survive_regeneration() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("svc");
    let spec = format!("{EXAMPLE}/openapi.yaml");
    assert_eq!(gen_into(&spec, &out, &[]).code, 0);

    let app = out.join("src/app.rs");
    std::fs::write(&app, "pub mod downstream;\n").unwrap();
    let cargo_toml = out.join("Cargo.toml");
    let mut manifest = std::fs::read_to_string(&cargo_toml).unwrap();
    assert!(manifest.ends_with(
        "# sqlx = { version = \"0.9\", default-features = false, features = [\"uuid\"] }\n"
    ));
    manifest.push_str("reqwest = \"0.12\"\n\n[profile.release]\nlto = true\n");
    std::fs::write(&cargo_toml, &manifest).unwrap();

    let again = gen_into(&spec, &out, &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.contains("0 updated"), "{}", again.stdout);

    // Renaming the package changes idemgen's part; the user's part stays.
    let renamed = gen_into(&spec, &out, &["--name", "payments"]);
    assert_eq!(renamed.code, 0, "{}", renamed.stderr);
    let now = std::fs::read_to_string(&cargo_toml).unwrap();
    assert!(now.contains("name = \"payments\""), "{now}");
    assert!(
        now.ends_with("reqwest = \"0.12\"\n\n[profile.release]\nlto = true\n"),
        "{now}"
    );
    assert_eq!(
        std::fs::read_to_string(&app).unwrap(),
        "pub mod downstream;\n"
    );
    // Only idemgen's part is hashed: a further run changes nothing.
    let settled = gen_into(&spec, &out, &["--name", "payments"]);
    assert!(
        settled.stdout.contains("0 created, 0 updated"),
        "{}",
        settled.stdout
    );

    // A change above the line is still the user's to confirm.
    std::fs::write(
        &cargo_toml,
        now.replace("edition = \"2024\"", "edition = \"2021\""),
    )
    .unwrap();
    let refused = gen_into(&spec, &out, &["--name", "payments"]);
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    assert!(refused.stderr.contains("Cargo.toml"), "{}", refused.stderr);
}

/// `--db mysql` builds for MySQL alone: one feature, one migration
/// directory, no `per_dialect!`; several dialects keep them all.
#[test]
fn one_dialect_is_written_alone_and_several_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("{EXAMPLE}/openapi.yaml");
    let one = dir.path().join("one");
    assert_eq!(gen_into(&spec, &one, &["--db", "mysql"]).code, 0);
    let manifest = std::fs::read_to_string(one.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("default = [\"mysql\"]\nmysql = ["),
        "{manifest}"
    );
    assert!(!manifest.contains("sqlite ="), "{manifest}");
    assert!(!manifest.contains("postgres ="), "{manifest}");
    assert!(one.join("migrations/mysql").is_dir());
    assert!(!one.join("migrations/sqlite").exists());
    assert!(!one.join("migrations/postgres").exists());
    let lib = std::fs::read_to_string(one.join("src/lib.rs")).unwrap();
    assert!(!lib.contains("per_dialect"), "{lib}");

    let several = dir.path().join("several");
    let run = gen_into(&spec, &several, &["--db", "postgres,sqlite"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let manifest = std::fs::read_to_string(several.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("default = [\"postgres\"]"), "{manifest}");
    assert!(manifest.contains("sqlite = ["), "{manifest}");
    assert!(!manifest.contains("mysql ="), "{manifest}");
    let lib = std::fs::read_to_string(several.join("src/lib.rs")).unwrap();
    assert!(lib.contains("macro_rules! per_dialect"), "{lib}");
    assert!(
        lib.contains("(postgres: $postgres:expr, sqlite: $sqlite:expr $(,)?)"),
        "{lib}"
    );
}

/// A project generated by an earlier idemgen, whose engine files are now
/// the runtime crate's: regenerating deletes those idemgen wrote and the
/// user left alone, and keeps (naming) one the user changed.
#[test]
fn files_idemgen_no_longer_generates_are_removed_unless_changed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("svc");
    let spec = format!("{EXAMPLE}/openapi.yaml");
    assert_eq!(gen_into(&spec, &out, &[]).code, 0);
    let mut manifest = std::fs::read_to_string(out.join(".idemgen-manifest")).unwrap();
    for (path, text) in [
        ("src/idempotency.rs", "// the old engine\n"),
        ("src/store/mod.rs", "// the old store\n"),
    ] {
        std::fs::create_dir_all(out.join(path).parent().unwrap()).unwrap();
        std::fs::write(out.join(path), text).unwrap();
        manifest.push_str(&format!(
            "{}  {path}\n",
            codegen::manifest::sha256_hex(text.as_bytes())
        ));
    }
    std::fs::write(out.join(".idemgen-manifest"), manifest).unwrap();
    std::fs::write(out.join("src/store/mod.rs"), "// changed by hand\n").unwrap();

    let run = gen_into(&spec, &out, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains(", 1 removed;"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("note: idemgen no longer generates src/store/mod.rs, which you changed"),
        "{}",
        run.stdout
    );
    assert!(!out.join("src/idempotency.rs").exists());
    assert_eq!(
        std::fs::read_to_string(out.join("src/store/mod.rs")).unwrap(),
        "// changed by hand\n"
    );
    let manifest = std::fs::read_to_string(out.join(".idemgen-manifest")).unwrap();
    assert!(!manifest.contains("src/idempotency.rs"));
    assert!(!manifest.contains("src/store/mod.rs"));
}

/// Generated comments say what the code does: a GET that claims no key
/// does not say its input is read "before the key is claimed", and the
/// status a mismatched body gets is the one its reader answers (400 where
/// the spec declares no 422).
#[test]
fn generated_comments_say_what_the_code_does() {
    let dir = tempfile::tempdir().unwrap();
    let run = gen_into(&format!("{EXAMPLE}/openapi.yaml"), dir.path(), &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let routes = std::fs::read_to_string(dir.path().join("src/routes.rs")).unwrap();
    let handler = |name: &str| {
        let start = routes.find(&format!("async fn {name}(")).unwrap();
        let end = routes[start + 1..]
            .find("\nasync fn ")
            .map_or(routes.len(), |end| start + 1 + end);
        routes[start..end].to_string()
    };
    let get_order = handler("get_order");
    assert!(!get_order.contains("key is claimed"), "{get_order}");
    assert!(!get_order.contains("key can be retried"), "{get_order}");
    assert!(
        handler("on_pay_callback").contains("and the key can be retried"),
        "an idempotent operation's key can"
    );
    // A status the engine sends itself is offered to the business code
    // only with a word that it does, and when; one it never sends, not.
    let models = std::fs::read_to_string(dir.path().join("src/models.rs")).unwrap();
    let engine_says = |response: &str, variant: &str| -> Vec<String> {
        let start = models.find(&format!("pub enum {response} {{")).unwrap();
        let end = start + models[start..].find(&format!("\n    {variant}(")).unwrap();
        let doc_start = models[start..end]
            .rfind("),\n")
            .map_or(start, |found| start + found);
        let doc = &models[doc_start..end];
        let Some(said) = doc.find("/// The engine sends this status itself") else {
            return Vec::new();
        };
        doc[said..]
            .lines()
            .skip(1)
            .filter_map(|line| line.trim().strip_prefix("/// - "))
            .map(str::to_string)
            .collect()
    };
    let on_pay = "OnPayCallbackResponse";
    assert_eq!(
        engine_says(on_pay, "BadRequest"),
        [
            "`400` when the parameters or the body cannot be read or break the spec.",
            "`400` when the idempotency key is missing or malformed.",
        ]
    );
    assert_eq!(
        engine_says(on_pay, "Unauthorized"),
        ["`401` when the request carries no credential `src/auth.rs` accepts."]
    );
    assert_eq!(
        engine_says(on_pay, "Conflict"),
        [
            "`409` when the key was used with a different request, or by a first request that \
          failed and may not be retried."
        ]
    );
    assert_eq!(
        engine_says(on_pay, "PayloadTooLarge"),
        ["`413` when the body is larger than the service accepts."]
    );
    assert_eq!(
        engine_says(on_pay, "TooManyRequests"),
        [
            "`429` with `Retry-After`, while another request with the same key is in progress.",
            "`429` with `Retry-After`, when the database is too busy to claim the key.",
        ]
    );
    assert!(engine_says(on_pay, "Ok").is_empty());
    assert!(engine_says(on_pay, "NotFound").is_empty());
    // A GET without a key or body: only its security is the engine's.
    assert_eq!(
        engine_says("GetOrderResponse", "Unauthorized"),
        ["`401` when the request carries no credential `src/auth.rs` accepts."]
    );
    assert!(engine_says("GetOrderResponse", "NotFound").is_empty());
    assert!(
        get_order.contains("before the business function runs"),
        "{get_order}"
    );
    let on_pay = handler("on_pay_callback");
    assert!(
        on_pay.contains("body_checked_as::<models::PayCallback>(400, ON_PAY_CALLBACK_BODY)"),
        "{on_pay}"
    );
    assert!(on_pay.contains("is answered 400 and leaves no"), "{on_pay}");
    assert!(!on_pay.contains("422"), "{on_pay}");
    let business =
        std::fs::read_to_string(dir.path().join("src/business/on_pay_callback.rs")).unwrap();
    assert!(
        business.contains("was answered 400 before its key was claimed"),
        "{business}"
    );
    let committed =
        std::fs::read_to_string(root().join(EXAMPLE).join("src/business/on_pay_callback.rs"))
            .unwrap();
    assert!(committed.contains("answered 400 before its key is claimed"));
}

/// Over every fixture the generator is tested with, and the example:
/// each handler's comments say what its code does. Only an idempotent
/// operation's speak of its key (claimed, retried, a record left or not),
/// and the statuses they say a refused input is answered with are the
/// ones its readers answer: 400 for what cannot be read, and each body
/// reader's own status for a body that does not fit.
#[test]
fn every_generated_handlers_comments_match_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let mut specs: Vec<PathBuf> = std::fs::read_dir(root().join("tests/codegen_fixtures"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    specs.sort();
    specs.push(root().join(EXAMPLE).join("openapi.yaml"));
    let mut handlers = 0;
    let mut idempotent_handlers = 0;
    for spec in &specs {
        let name = spec.file_stem().unwrap().to_string_lossy().into_owned();
        let out = dir.path().join(&name);
        let run = gen_into(spec.to_str().unwrap(), &out, &["--db", "sqlite"]);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let operations = std::fs::read_to_string(out.join("src/operations.rs")).unwrap();
        let routes = std::fs::read_to_string(out.join("src/routes.rs")).unwrap();
        for handler in routes.split("\nasync fn ").skip(1) {
            let handler = handler.split("\n}\n").next().unwrap();
            let fn_name = handler.split('(').next().unwrap();
            let Some(constant) = handler.split("operations::").nth(1).map(|rest| {
                rest.split(|c: char| c != '_' && !c.is_ascii_alphanumeric())
                    .next()
                    .unwrap()
            }) else {
                continue;
            };
            handlers += 1;
            let idempotent = operations.contains(&format!(
                "pub static {constant}: Operation = Operation::idempotent("
            ));
            idempotent_handlers += usize::from(idempotent);
            let comments: String = handler
                .lines()
                .filter_map(|line| line.trim().strip_prefix("//"))
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ");
            let code: String = handler
                .lines()
                .filter(|line| !line.trim().starts_with("//"))
                .collect::<String>()
                .split_whitespace()
                .collect();
            let place = format!("{name}: `{fn_name}`");
            for phrase in ["key is claimed", "key can be retried", "leaves no record"] {
                if !idempotent {
                    assert!(
                        !comments.contains(phrase),
                        "{place} claims no key: {comments}"
                    );
                }
            }
            if idempotent {
                assert!(
                    comments.contains("the key can be retried"),
                    "{place}: {comments}"
                );
            }
            let Some(said) = comments
                .split("does not match the spec's schemas is answered ")
                .nth(1)
            else {
                continue;
            };
            // `400`, or `400 or 422`, then the rest of the sentence.
            let said: BTreeSet<u16> = said
                .split([' ', '.', ','])
                .take_while(|word| *word == "or" || word.parse::<u16>().is_ok())
                .filter_map(|word| word.parse().ok())
                .collect();
            // What the readers answer: 400 for parameters or a body that
            // cannot be read; a body that does not fit, its reader's status.
            let mut answered = BTreeSet::from([400]);
            let status_after = |call: &str| -> Vec<u16> {
                code.split(call)
                    .skip(1)
                    .map(|rest| {
                        let rest = rest.trim_start_matches(|c: char| c != '(');
                        // `multipart_checked_as(&[parts…], 422, …)`: past the
                        // table, whose parts may hold tables of their own.
                        let rest = match rest.strip_prefix("(&[") {
                            Some(table) => {
                                let mut depth = 1;
                                let end = table
                                    .char_indices()
                                    .find(|(_, c)| {
                                        depth += match c {
                                            '[' => 1,
                                            ']' => -1,
                                            _ => 0,
                                        };
                                        depth == 0
                                    })
                                    .map(|(at, _)| at)
                                    .unwrap();
                                table[end + 1..].trim_start_matches(',')
                            }
                            None => &rest[1..],
                        };
                        // A call broken over lines starts with its status on the next.
                        rest.trim_start()[..3].parse().unwrap()
                    })
                    .collect()
            };
            for call in [
                ".body_as_or",
                ".body_checked_as",
                ".form_checked_as",
                ".joined_form_checked_as",
                ".encoded_form_checked_as",
                ".multipart_checked_as",
            ] {
                answered.extend(status_after(call));
            }
            if code.contains(".body_as::<") || code.contains(".body_as(") {
                answered.insert(422);
            }
            assert_eq!(said, answered, "{place}: {comments}");
        }
    }
    assert!(
        handlers > 20 && idempotent_handlers > 5,
        "{handlers} handlers read"
    );
}

/// `responses.replayed-header` names the replay mark: the generated
/// service sends it (or none), its tests expect it, and the generated
/// client reads it; a name no client can read is `contract-invalid`.
#[test]
fn the_replay_mark_the_contract_names_is_the_one_generated() {
    let example = std::fs::read_to_string(root().join(EXAMPLE).join("openapi.yaml")).unwrap();
    let failed = "          failed: retry ";
    assert!(example.contains(failed));
    let dir = tempfile::tempdir().unwrap();
    let with_mark = |mark: &str| {
        let spec = dir.path().join(format!("{mark}.yaml"));
        let text = example.replacen(
            failed,
            &format!("          replayed-header: {mark}\n{failed}"),
            1,
        );
        std::fs::write(&spec, text).unwrap();
        spec.to_str().unwrap().to_string()
    };

    let named = with_mark("Idempotency-Replayed");
    let out = dir.path().join("named");
    let run = gen_into(&named, &out, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let operations = std::fs::read_to_string(out.join("src/operations.rs")).unwrap();
    assert!(
        operations.contains("replayed_header: Some(\"Idempotency-Replayed\"),"),
        "{operations}"
    );
    let tests = std::fs::read_dir(out.join("tests"))
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect::<String>();
    assert!(
        tests.contains("const REPLAYED_HEADER: &str = \"idempotency-replayed\";"),
        "{tests}"
    );
    let client = dir.path().join("named-client");
    let run = gen_into(&named, &client, &["--client"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lib = std::fs::read_to_string(client.join("src/lib.rs")).unwrap();
    assert!(
        lib.contains("replayed_header: Some(\"Idempotency-Replayed\"),"),
        "{lib}"
    );

    let unmarked = with_mark("None");
    let out = dir.path().join("unmarked");
    let run = gen_into(&unmarked, &out, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let operations = std::fs::read_to_string(out.join("src/operations.rs")).unwrap();
    assert!(
        operations.contains("replayed_header: None,"),
        "{operations}"
    );

    let bad = with_mark("'Replayed From Store'");
    let lint = idemgen(&["lint", "--no-config", "--format", "json", &bad]);
    assert_eq!(lint.code, 1, "{}", lint.stderr);
    assert!(
        lint.stdout.contains(
            "`responses.replayed-header` \\\"Replayed From Store\\\" is not an HTTP header name"
        ),
        "{}",
        lint.stdout
    );
}

/// `store.claim` chooses the claim mode the generated contract carries
/// (`committed` unless set); a value that is neither is
/// `contract-invalid`.
#[test]
fn the_claim_mode_the_contract_names_is_the_one_generated() {
    let example = std::fs::read_to_string(root().join(EXAMPLE).join("openapi.yaml")).unwrap();
    let dialect = "    dialect: sqlite\n";
    assert!(example.contains(dialect));
    let dir = tempfile::tempdir().unwrap();
    let with_claim = |mode: &str| {
        let spec = dir.path().join(format!("{mode}.yaml"));
        let text = example.replacen(dialect, &format!("{dialect}    claim: {mode}\n"), 1);
        std::fs::write(&spec, text).unwrap();
        spec.to_str().unwrap().to_string()
    };

    let default = dir.path().join("default");
    let run = gen_into(
        root().join(EXAMPLE).join("openapi.yaml").to_str().unwrap(),
        &default,
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let operations = std::fs::read_to_string(default.join("src/operations.rs")).unwrap();
    assert!(
        operations.contains("claim: ClaimMode::Committed,"),
        "{operations}"
    );

    let one_commit = dir.path().join("one-commit");
    let run = gen_into(&with_claim("in-transaction"), &one_commit, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let operations = std::fs::read_to_string(one_commit.join("src/operations.rs")).unwrap();
    assert!(
        operations.contains("claim: ClaimMode::InTransaction,"),
        "{operations}"
    );

    let bad = with_claim("deferred");
    let lint = idemgen(&["lint", "--no-config", "--format", "json", &bad]);
    assert_eq!(lint.code, 1, "{}", lint.stderr);
    assert!(
        lint.stdout.contains("contract-invalid") && lint.stdout.contains("store.claim"),
        "{}",
        lint.stdout
    );
}

/// The payment-callback spec on PostgreSQL alone, its `store.database`
/// renamed `journey`, generated into `dir`.
fn gen_journey(dir: &Path) -> PathBuf {
    let spec = std::fs::read_to_string(root().join(EXAMPLE).join("openapi.yaml"))
        .unwrap()
        .replace("    dialect: sqlite\n", "    dialect: postgres\n")
        .replace("    database: payments ", "    database: journey ");
    assert!(spec.contains("dialect: postgres") && spec.contains("database: journey"));
    let spec_path = dir.join("openapi.yaml");
    std::fs::write(&spec_path, spec).unwrap();
    let out = dir.join("refunds_svc");
    let run = gen_into(spec_path.to_str().unwrap(), &out, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    out
}

/// The generated README and `src/lib.rs` describe the project generated:
/// its dialect, its `store.database` (not the directory's name) and the
/// default that `DEFAULT_DATABASE_URL` really holds.
#[test]
fn the_generated_readme_and_lib_describe_the_project_generated() {
    let dir = tempfile::tempdir().unwrap();
    let out = gen_journey(dir.path());
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    let lib = std::fs::read_to_string(out.join("src/lib.rs")).unwrap();
    let url = "postgres://postgres@127.0.0.1:5432/journey";
    assert!(
        lib.contains(&format!(
            "pub const DEFAULT_DATABASE_URL: &str = \"{url}\";"
        )),
        "{lib}"
    );
    assert!(
        readme.contains(&format!(
            "cargo run                        # DATABASE_URL defaults to {url}"
        )),
        "{readme}"
    );
    assert!(
        readme.contains("names `journey`, the contracts'\n`store.database`"),
        "{readme}"
    );
    assert!(
        !readme.contains("refunds_svc`") && !readme.contains("/refunds_svc"),
        "{readme}"
    );
    // The module documentation names the same default, and no SQLite one.
    let settings: String = lib
        .lines()
        .take_while(|line| line.starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(settings.contains(&format!("`{url}`")), "{settings}");
    assert!(!settings.to_lowercase().contains("sqlite"), "{settings}");
    assert!(!readme.contains("sqlite://"), "{readme}");

    // Several dialects: each default named with its build.
    let several = dir.path().join("several");
    let run = gen_into(
        dir.path().join("openapi.yaml").to_str().unwrap(),
        &several,
        &["--db", "postgres,sqlite"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lib = std::fs::read_to_string(several.join("src/lib.rs")).unwrap();
    assert!(
        lib.contains(&format!("//!   PostgreSQL (the default build): `{url}`;")),
        "{lib}"
    );
    assert!(
        lib.contains("//!   SQLite: `sqlite://journey.db`, in the working\n//!   directory, created if missing."),
        "{lib}"
    );
}

/// The generated README says how to get and use sqlx-cli at the version
/// the project pins, the offline check, and dynamic SQL in sqlx 0.9; the
/// auth stub shows a `Principal` being built.
#[test]
fn the_generated_readme_shows_sqlx_cli_offline_data_and_dynamic_sql() {
    // The version the project pins is the one this workspace builds with.
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).unwrap();
    let locked = lock
        .split("[[package]]")
        .find(|package| package.contains("name = \"sqlx\"\n"))
        .and_then(|package| package.lines().find(|line| line.starts_with("version = ")))
        .map(|line| {
            line.trim_start_matches("version = ")
                .trim_matches('"')
                .to_string()
        })
        .expect("sqlx in Cargo.lock");
    assert_eq!(codegen::SQLX_VERSION, locked);

    let dir = tempfile::tempdir().unwrap();
    let out = gen_journey(dir.path());
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    let manifest = std::fs::read_to_string(out.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!("sqlx = {{ version = \"={locked}\"")),
        "{manifest}"
    );
    for expected in [
        format!(
            "cargo install sqlx-cli --version {locked} --locked --no-default-features --features rustls,postgres\n"
        ),
        "DATABASE_URL=postgres://postgres@127.0.0.1:5432/journey cargo sqlx prepare".to_string(),
        "SQLX_OFFLINE=true cargo build".to_string(),
        "cargo sqlx prepare --check".to_string(),
        "sqlx::query_scalar(sqlx::AssertSqlSafe(sql))".to_string(),
        "ORDER BY {column} LIMIT $1".to_string(),
    ] {
        assert!(
            readme.contains(&expected),
            "README lacks {expected:?}:\n{readme}"
        );
    }
    let auth = std::fs::read_to_string(out.join("src/auth.rs")).unwrap();
    assert!(
        auth.contains("//! Ok(Principal::new(format!(\"client:{client_id}\"), scheme.name))"),
        "{auth}"
    );
    // The book says the same, at the same version.
    let service = std::fs::read_to_string(root().join("docs/src/service.md")).unwrap();
    for expected in [
        format!("cargo install sqlx-cli --version {locked} --locked"),
        "SQLX_OFFLINE=true".to_string(),
        "cargo sqlx prepare --check".to_string(),
        "sqlx::AssertSqlSafe(sql)".to_string(),
        "Ok(Principal::new(".to_string(),
    ] {
        assert!(
            service.contains(&expected),
            "docs/src/service.md lacks {expected:?}"
        );
    }
}

/// With `headers` in `fingerprint.include`, the generated contract lists
/// the operation's declared header parameters for the fingerprint (lower
/// case, the key's header and a credential's left out); without it, none.
#[test]
fn the_declared_headers_the_fingerprint_hashes_are_generated() {
    let broken = "examples/broken/fingerprint-misses-input.yaml";
    let text = std::fs::read_to_string(root().join(broken)).unwrap();
    let dir = tempfile::tempdir().unwrap();

    let left_out = dir.path().join("left-out");
    let run = gen_into(root().join(broken).to_str().unwrap(), &left_out, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let operations = std::fs::read_to_string(left_out.join("src/operations.rs")).unwrap();
    assert!(operations.contains("headers: &[],"), "{operations}");

    let currency = "        - name: X-Currency";
    let block = "        window: 18s\n";
    assert!(text.contains(currency) && text.contains(block));
    let included = text
        .replacen(
            currency,
            &format!("        - {{name: X-Provider-Key, in: header, schema: {{type: string}}}}\n{currency}"),
            1,
        )
        .replacen(
            block,
            &format!("{block}        fingerprint: {{include: [method, path, body, headers]}}\n"),
            1,
        );
    let spec = dir.path().join("included.yaml");
    std::fs::write(&spec, included).unwrap();
    let out = dir.path().join("included");
    let run = gen_into(spec.to_str().unwrap(), &out, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let operations = std::fs::read_to_string(out.join("src/operations.rs")).unwrap();
    assert!(
        operations.contains("headers: &[\"x-currency\"],"),
        "{operations}"
    );
}
