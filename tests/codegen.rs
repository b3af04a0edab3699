//! `idemgen gen` and `idemgen ddl` without building anything: what is
//! written where, what is refused, and that the committed example is
//! exactly what idemgen generates plus the user's business files.
//! (`tests/generated.rs` builds and runs generated projects.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use idemgen::codegen::{self, Owner};
use idemgen::contract::model::Dialect;
use idemgen::spec::Workspace;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const EXAMPLE: &str = "examples/payment-callback";

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn idemgen(args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs");
    Run {
        code: output.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(output.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8 stderr"),
    }
}

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
        eprintln!("skipped: no sqlite3 command");
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

#[test]
fn regenerating_refreshes_generated_files_and_keeps_business_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("svc");
    let spec = format!("{EXAMPLE}/openapi.yaml");
    let first = gen_into(&spec, &out, &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);

    let manifest = std::fs::read_to_string(out.join(".idemgen-manifest")).unwrap();
    assert!(manifest.contains("  Cargo.toml\n"));
    assert!(manifest.contains("  src/idempotency.rs\n"));
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
        std::fs::read_to_string(out.join("src/idempotency.rs"))
            .unwrap()
            .contains("pub async fn begin")
    );
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
    assert!(
        operations.contains("name: \"create order!\","),
        "{operations}"
    );
    assert!(operations.contains("name: \"支付\","));
    assert!(operations.contains("name: \"DELETE /orders/{id}\","));
}

/// The committed example is what idemgen generates from its spec: every
/// generated file is identical, and only the business files (the user's)
/// differ from what idemgen would create.
#[test]
fn the_example_is_idemgen_output_plus_business_files() {
    let dir = root().join(EXAMPLE);
    let workspace = Workspace::load(&dir.join("openapi.yaml")).unwrap();
    let options = codegen::Options {
        dialect: None,
        templates: None,
        package: "payment-callback".into(),
        standalone: false,
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
                committed == file.contents,
                "{} differs from idemgen's output; run `idemgen gen {EXAMPLE}/openapi.yaml -o {EXAMPLE}`",
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

#[test]
fn offline_data_names_each_query_by_the_hash_of_its_sql() {
    for dialect in [Dialect::Sqlite, Dialect::Mysql, Dialect::Postgres] {
        for (name, contents) in codegen::offline::files(dialect, "idempotent_record", "payments") {
            let data: serde_json::Value = serde_json::from_str(&contents).unwrap();
            let query = data["query"].as_str().unwrap();
            let hash = codegen::manifest::sha256_hex(query.as_bytes());
            assert_eq!(name, format!("query-{hash}.json"));
            assert_eq!(data["hash"], hash.as_str());
        }
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
