//! House rules no compiler checks: no merge leftovers are committed, every
//! lint rule and probe check is documented, each crate's integration tests
//! are one binary, and the crate graph keeps to the layers the README's
//! "How it is built" draws.

use crate::support::root;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// Each crate's layer: a crate may depend only on crates of lower layers,
/// which also rules out cycles. A new crate must be placed here.
const LAYERS: &[(&str, u8)] = &[
    ("idemgen-diagnostics", 0),
    ("idemgen-spec", 0),
    ("idemgen-runtime", 0),
    ("idemgen-lint", 1),
    ("idemgen-codegen", 1),
    ("idemgen-probe", 1),
    ("idemgen-report", 1),
    ("idemgen-lsp", 2),
    ("idemgen", 3),
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

/// Each crate's integration tests are one binary, `tests/it/main.rs` with a
/// module per area: every file directly under `tests/` would be a binary of
/// its own that links all the dependencies again.
#[test]
fn each_crate_has_one_integration_test_binary() {
    let mut crates = vec![String::new()];
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        crates.push(format!("crates/{name}"));
    }
    crates.sort();
    let mut offenders = Vec::new();
    for dir in &crates {
        let Ok(entries) = std::fs::read_dir(root().join(dir).join("tests")) else {
            continue;
        };
        let mut binaries: Vec<String> = entries
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.is_file() && path.extension().is_some_and(|ext| ext == "rs"))
            .map(|path| path.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        binaries.sort();
        if !binaries.is_empty() {
            let dir = if dir.is_empty() { "." } else { dir };
            offenders.push(format!(
                "{dir}/tests: {binaries:?} (make each a module of tests/it/main.rs)"
            ));
        }
    }
    assert!(
        offenders.is_empty(),
        "integration tests outside tests/it: {offenders:#?}"
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

#[test]
fn every_probe_check_is_documented() {
    let mut ids: Vec<&str> = Vec::new();
    for check in idemgen_probe::CHECKS {
        assert!(
            !check.summary().trim().is_empty(),
            "{}: no help entry",
            check.id
        );
        let docs = check.docs();
        for section in [
            "**What it checks.**",
            "**Why it matters.**",
            "**What a failure means.**",
        ] {
            assert!(
                docs.contains(section),
                "{}: its file's `//!` header needs a {section} paragraph (got {docs:?})",
                check.id
            );
        }
        assert!(
            !ids.contains(&check.id),
            "{}: two checks share it",
            check.id
        );
        ids.push(check.id);
    }
    // A check file left out of the registry runs nowhere and is listed nowhere.
    let dir = root().join("crates/idemgen-probe/src/checks");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .replace('_', "-");
        if stem != "mod" {
            assert!(
                ids.contains(&stem.as_str()),
                "{}: a check file not in idemgen_probe::CHECKS",
                path.display()
            );
        }
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

/// Module cycles that exist today and are being removed; the test fails
/// when one of them is gone, so the entry goes with it.
const KNOWN_MODULE_CYCLES: &[(&str, &[&str])] = &[];

/// Inside each crate, its top-level modules must not form a cycle either:
/// `a` uses `b` when a file of `a` names `crate::b` (or, at the top level,
/// `super::b`). Comments and `#[cfg(test)]` code do not count.
#[test]
fn no_module_cycles_inside_a_crate() {
    let mut sources: Vec<(String, PathBuf)> = vec![("idemgen".into(), root().join("src"))];
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        if dir.join("src").is_dir() {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            sources.push((name, dir.join("src")));
        }
    }
    let mut found: Vec<(String, Vec<String>)> = Vec::new();
    for (name, src) in &sources {
        let graph = module_graph(src);
        for cycle in cycles(&graph) {
            found.push((name.clone(), cycle));
        }
    }
    let known: Vec<(String, Vec<String>)> = KNOWN_MODULE_CYCLES
        .iter()
        .map(|(name, cycle)| {
            (
                name.to_string(),
                cycle.iter().map(|m| m.to_string()).collect(),
            )
        })
        .collect();
    let new: Vec<_> = found
        .iter()
        .filter(|cycle| !known.contains(cycle))
        .collect();
    assert!(new.is_empty(), "module cycles: {new:?}");
    let gone: Vec<_> = known
        .iter()
        .filter(|cycle| !found.contains(cycle))
        .collect();
    assert!(
        gone.is_empty(),
        "these cycles are gone, remove them from KNOWN_MODULE_CYCLES: {gone:?}"
    );
}

/// Top-level module → the top-level modules of the same crate it uses.
fn module_graph(src: &std::path::Path) -> BTreeMap<String, Vec<String>> {
    let top_level: Vec<String> = std::fs::read_dir(src)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| {
            let stem = path.file_stem()?.to_string_lossy().into_owned();
            let is_module = path.is_dir() || path.extension().is_some_and(|ext| ext == "rs");
            (is_module && stem != "lib" && stem != "main").then_some(stem)
        })
        .collect();
    let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for module in &top_level {
        let mut uses = Vec::new();
        let file = src.join(format!("{module}.rs"));
        if file.is_file() {
            uses.extend(used_modules(&std::fs::read_to_string(&file).unwrap(), true));
        }
        let dir = src.join(module);
        if dir.is_dir() {
            for file in rust_files(&dir) {
                // `super::` in `dir/mod.rs` is the crate root, like a top-level file's.
                let top = file.file_name().is_some_and(|name| name == "mod.rs");
                uses.extend(used_modules(&std::fs::read_to_string(&file).unwrap(), top));
            }
        }
        uses.retain(|used| used != module && top_level.contains(used));
        uses.sort();
        uses.dedup();
        graph.insert(module.clone(), uses);
    }
    graph
}

fn rust_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files
}

/// Modules named after `crate::` (and `super::` when `super` is the crate
/// root), including each name of a `crate::{a, b::c}` group.
fn used_modules(text: &str, super_is_root: bool) -> Vec<String> {
    let code: String = text
        .split("#[cfg(test)]")
        .next()
        .unwrap()
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut prefixes = vec!["crate::"];
    if super_is_root {
        prefixes.push("super::");
    }
    let mut used = Vec::new();
    for prefix in prefixes {
        for (at, _) in code.match_indices(prefix) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let rest = &code[at + prefix.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let mut depth = 0;
                let end = group
                    .char_indices()
                    .find(|&(_, c)| {
                        match c {
                            '{' => depth += 1,
                            '}' if depth == 0 => return true,
                            '}' => depth -= 1,
                            _ => {}
                        }
                        false
                    })
                    .map_or(group.len(), |(end, _)| end);
                let mut depth = 0;
                let mut start = 0;
                let group = &group[..end];
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            used.push(identifier(&group[start..i]));
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                used.push(identifier(&group[start..]));
            } else {
                used.push(identifier(rest));
            }
        }
    }
    used.retain(|name| !name.is_empty());
    used
}

fn identifier(text: &str) -> String {
    text.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Every cycle of the graph, each as its sorted modules (the strongly
/// connected components with more than one module).
fn cycles(graph: &BTreeMap<String, Vec<String>>) -> Vec<Vec<String>> {
    let reaches = |from: &str, to: &str| {
        let mut seen = vec![from.to_string()];
        let mut stack = vec![from.to_string()];
        while let Some(module) = stack.pop() {
            for next in graph.get(&module).into_iter().flatten() {
                if next == to {
                    return true;
                }
                if !seen.contains(next) {
                    seen.push(next.clone());
                    stack.push(next.clone());
                }
            }
        }
        false
    };
    let mut found: Vec<Vec<String>> = Vec::new();
    for module in graph.keys() {
        if found.iter().any(|cycle| cycle.contains(module)) {
            continue;
        }
        let mut cycle: Vec<String> = graph
            .keys()
            .filter(|other| *other == module || (reaches(module, other) && reaches(other, module)))
            .cloned()
            .collect();
        if cycle.len() > 1 {
            cycle.sort();
            found.push(cycle);
        }
    }
    found
}
