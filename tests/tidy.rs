//! House rules no compiler checks: no merge leftovers are committed, every
//! lint rule is documented, and the crate graph keeps to the layers the
//! README's "How it is built" draws.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Each crate's layer: a crate may depend only on crates of lower layers,
/// which also rules out cycles. A new crate must be placed here.
const LAYERS: &[(&str, u8)] = &[
    ("idemgen-diagnostics", 0),
    ("idemgen-spec", 0),
    ("idemgen-runtime", 0),
    ("idemgen-lint", 1),
    ("idemgen-codegen", 1),
    ("idemgen-probe", 1),
    ("idemgen-report", 2),
    ("idemgen-lsp", 3),
    ("idemgen", 4),
];

fn layer(name: &str) -> Option<u8> {
    LAYERS
        .iter()
        .find(|(crate_name, _)| *crate_name == name)
        .map(|(_, layer)| *layer)
}

#[test]
fn no_merge_leftovers_are_committed() {
    let output = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git ls-files failed");
    let listed = String::from_utf8(output.stdout).expect("UTF-8 paths");
    let leftovers: Vec<&str> = listed
        .split('\0')
        .filter(|path| path.ends_with(".orig") || path.ends_with(".rej"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "merge or patch leftovers are committed: {leftovers:?}"
    );
}

#[test]
fn every_rule_is_documented() {
    for rule in idemgen_lint::RULES {
        assert!(!rule.summary.trim().is_empty(), "{}: no summary", rule.id);
        let docs = rule.docs();
        assert!(
            docs.lines().filter(|line| !line.trim().is_empty()).count() >= 2,
            "{}: its file needs a `//!` header explaining the rule (got {docs:?})",
            rule.id
        );
    }
}

/// `idemgen-*` package → the `idemgen-*` packages it depends on (dev
/// dependencies included: a test must not reach up a layer either).
fn crate_graph() -> BTreeMap<String, Vec<String>> {
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata is JSON");
    let is_ours = |name: &str| name == "idemgen" || name.starts_with("idemgen-");
    let mut graph = BTreeMap::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("name");
        if !is_ours(name) {
            continue;
        }
        let mut dependencies: Vec<String> = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .map(|dependency| dependency["name"].as_str().expect("name").to_string())
            .filter(|dependency| is_ours(dependency))
            .collect();
        dependencies.sort();
        dependencies.dedup();
        graph.insert(name.to_string(), dependencies);
    }
    graph
}

#[test]
fn crates_depend_only_on_lower_layers() {
    let graph = crate_graph();
    assert!(graph.len() > 1, "no workspace crates found: {graph:?}");
    for (name, dependencies) in &graph {
        let own = layer(name).unwrap_or_else(|| {
            panic!("{name} has no layer: add it to LAYERS and to the README's crate graph")
        });
        for dependency in dependencies {
            let theirs = layer(dependency)
                .unwrap_or_else(|| panic!("{dependency} has no layer: add it to LAYERS"));
            assert!(
                theirs < own,
                "{name} (layer {own}) depends on {dependency} (layer {theirs}): \
                 a crate may use only lower layers"
            );
        }
    }
}
