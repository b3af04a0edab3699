//! The user's section of a generated `Cargo.toml` (below the "Yours"
//! line): a dependency of their own and a feature added to a generated
//! dependency survive regeneration byte for byte, without `--force`, and
//! Cargo reads the result (the feature joins the generated dependency's).

use std::path::Path;
use std::process::Command;

use crate::support::run::{Run, idemgen};

const SPEC: &str = "examples/payment-callback/openapi.yaml";

/// What a user adds: sqlx's `uuid` (for a `UUID` column) and a crate of
/// their own.
const USERS_SECTION: &str = "\
[target.'cfg(all())'.dependencies]
sqlx = { version = \"0.9\", default-features = false, features = [\"uuid\"] }
hex = \"0.4\"
";

fn gen_into(dir: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["gen", SPEC, "-o", dir.to_str().unwrap(), "--db", "postgres"];
    args.extend_from_slice(extra);
    idemgen(&args)
}

/// `cargo metadata` of the project at `dir`, resolved.
fn metadata(dir: &Path) -> serde_json::Value {
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--quiet"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo metadata:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The resolve node of `package`.
fn node<'m>(metadata: &'m serde_json::Value, package: &str) -> &'m serde_json::Value {
    let id = &metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == package)
        .unwrap_or_else(|| panic!("{package} is a package of the project"))["id"];
    metadata["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|node| node["id"] == *id)
        .unwrap()
}

fn names(list: &serde_json::Value, key: &str) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|item| match key {
            "" => item.as_str().unwrap().to_string(),
            key => item[key].as_str().unwrap().to_string(),
        })
        .collect()
}

#[test]
fn a_feature_and_a_dependency_of_the_users_survive_regeneration() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("svc");
    let first = gen_into(&out, &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let cargo_toml = out.join("Cargo.toml");
    let generated = std::fs::read_to_string(&cargo_toml).unwrap();
    let (ours, template_section) = idemgen_codegen::manifest::split_user_tail(generated.as_bytes());
    let template_section = String::from_utf8(template_section.to_vec()).unwrap();
    // The section a fresh project starts with says how, in comments only.
    assert!(
        template_section.lines().all(|line| line.starts_with('#')),
        "{template_section}"
    );
    assert!(
        template_section.contains("[target.'cfg(all())'.dependencies]"),
        "{template_section}"
    );
    let users = format!("{template_section}{USERS_SECTION}");
    let mut edited = ours.to_vec();
    edited.extend_from_slice(users.as_bytes());
    std::fs::write(&cargo_toml, &edited).unwrap();

    // A run that changes idemgen's part (the package's name) keeps the
    // user's part as it was, and needs no `--force`.
    let again = gen_into(&out, &["--name", "payments"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let now = std::fs::read(&cargo_toml).unwrap();
    let (ours_now, users_now) = idemgen_codegen::manifest::split_user_tail(&now);
    assert!(
        String::from_utf8_lossy(ours_now).contains("name = \"payments\""),
        "{}",
        String::from_utf8_lossy(&now)
    );
    assert_eq!(
        users_now,
        users.as_bytes(),
        "the user's section, byte for byte"
    );

    // Cargo reads it: sqlx gets the user's feature beside idemgen's, and
    // the user's own dependency is the project's.
    let metadata = metadata(&out);
    let features = names(&node(&metadata, "sqlx")["features"], "");
    for feature in ["uuid", "postgres", "migrate"] {
        assert!(
            features.iter().any(|f| f == feature),
            "sqlx features: {features:?}"
        );
    }
    let dependencies = names(&node(&metadata, "payments")["deps"], "name");
    assert!(
        dependencies.iter().any(|name| name == "hex"),
        "{dependencies:?}"
    );
}

/// The features the generated `Cargo.toml` at `dir` gives sqlx.
fn sqlx_features(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let manifest: toml::Table = text.parse().expect("the generated Cargo.toml parses");
    let sqlx = &manifest["dependencies"]["sqlx"];
    sqlx["features"]
        .as_array()
        .unwrap_or_else(|| panic!("sqlx names its features: {sqlx:?}"))
        .iter()
        .map(|feature| feature.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn models_with_dates_give_sqlx_its_chrono_feature() {
    let dir = tempfile::tempdir().unwrap();
    // The example's models hold `date-time` values: they bind to a query
    // only with sqlx's `chrono`.
    let with_dates = dir.path().join("with-dates");
    let run = gen_into(&with_dates, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let features = sqlx_features(&with_dates);
    assert!(features.iter().any(|f| f == "chrono"), "{features:?}");
    let manifest = std::fs::read_to_string(with_dates.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("\nchrono = "), "{manifest}");

    // A spec without dates names neither chrono nor the feature.
    let without = dir.path().join("without-dates");
    let run = idemgen(&[
        "gen",
        "tests/codegen_fixtures/opaque-key.yaml",
        "-o",
        without.to_str().unwrap(),
        "--db",
        "postgres",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let features = sqlx_features(&without);
    assert!(!features.iter().any(|f| f == "chrono"), "{features:?}");
    let manifest = std::fs::read_to_string(without.join("Cargo.toml")).unwrap();
    assert!(!manifest.contains("\nchrono = "), "{manifest}");
}
