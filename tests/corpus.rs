//! The 92 real specs beside the project (`../shared/corpus`, or
//! `IDEMGEN_CORPUS`): every OpenAPI 3.0/3.1 document loads and lints, the
//! rest are refused with a message, and JSON/YAML twins agree.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use idemgen::lint::{LintOptions, lint};
use idemgen::spec::Workspace;

fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("IDEMGEN_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    if dir.join("MANIFEST.tsv").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: no corpus at {} (set IDEMGEN_CORPUS)",
            dir.display()
        );
        None
    }
}

struct Entry {
    file: String,
    version: String,
    operations: usize,
    notes: String,
}

fn manifest(dir: &Path) -> Vec<Entry> {
    let text = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (file, version, operations, notes) = (
        column("file"),
        column("openapi_version"),
        column("operations"),
        column("notes"),
    );
    lines
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            Entry {
                file: fields[file].to_string(),
                version: fields[version].to_string(),
                operations: fields[operations].parse().unwrap_or(0),
                notes: fields.get(notes).unwrap_or(&"").to_string(),
            }
        })
        .collect()
}

/// Findings without positions, which legitimately differ between twins.
fn findings(path: &Path) -> BTreeSet<(String, String, Option<String>, String)> {
    let workspace = Workspace::load(path)
        .unwrap_or_else(|error| panic!("{}: {}", path.display(), error.message));
    lint(&workspace, &LintOptions::default())
        .diagnostics
        .into_iter()
        .map(|d| (d.rule.to_string(), d.pointer, d.operation, d.message))
        .collect()
}

#[test]
fn every_openapi_3_document_loads_and_lints() {
    let Some(dir) = corpus() else { return };
    let specs = dir.join("specs");
    let mut linted = 0;
    for entry in manifest(&dir) {
        let path = specs.join(&entry.file);
        let supported =
            entry.version.starts_with("openapi 3.0") || entry.version.starts_with("openapi 3.1");
        let loaded = Workspace::load(&path);
        if !supported {
            let error = loaded
                .err()
                .unwrap_or_else(|| panic!("{} ({}) should be refused", entry.file, entry.version));
            let kind = entry.version.split(' ').next().unwrap();
            let named = match kind {
                "swagger" => "Swagger 2.0",
                "asyncapi" => "AsyncAPI",
                _ => "OpenAPI 3.2",
            };
            assert!(
                error.message.contains(named),
                "{}: {}",
                entry.file,
                error.message
            );
            continue;
        }
        let workspace = loaded.unwrap_or_else(|error| {
            panic!("{}: {} at {:?}", entry.file, error.message, error.location)
        });
        let result = lint(&workspace, &LintOptions::default());
        // The manifest counts the eight HTTP methods under `paths`; we add
        // 3.1 webhooks, so we see at least as many.
        assert!(
            result.operations >= entry.operations,
            "{}: {} operations, manifest says {}",
            entry.file,
            result.operations,
            entry.operations
        );
        linted += 1;
    }
    assert!(linted >= 79, "only {linted} documents linted");
}

#[test]
fn json_and_yaml_twins_give_the_same_findings() {
    let Some(dir) = corpus() else { return };
    let specs = dir.join("specs");
    let entries = manifest(&dir);
    let mut pairs = 0;
    for entry in &entries {
        let Some(stem) = entry.file.strip_suffix(".json") else {
            continue;
        };
        let twin = format!("{stem}.yaml");
        let declared = entry.notes.contains("twin");
        if !entries.iter().any(|e| e.file == twin)
            || !(declared || entry.file.starts_with("oai-v3"))
        {
            continue;
        }
        assert_eq!(
            findings(&specs.join(&entry.file)),
            findings(&specs.join(&twin)),
            "{} vs {twin}",
            entry.file
        );
        pairs += 1;
    }
    assert!(pairs >= 4, "only {pairs} twins compared");
}

#[test]
fn multi_file_specs_load_from_their_root() {
    let Some(dir) = corpus() else { return };
    let specs = dir.join("specs");
    for (root, operations) in [
        (
            "digitalocean-multifile/specification/DigitalOcean-public.v2.yaml",
            659,
        ),
        ("lob-multifile/lob-api-public.yml", 105),
        ("redocly-starter/openapi/openapi.yaml", 13),
    ] {
        let workspace =
            Workspace::load(&specs.join(root)).unwrap_or_else(|e| panic!("{root}: {}", e.message));
        assert!(workspace.files.len() > 1, "{root} references other files");
        let result = lint(&workspace, &LintOptions::default());
        assert_eq!(result.operations, operations, "{root}");
        assert!(
            !result.diagnostics.iter().any(|d| d.rule == "ref-unresolved"
                && d.severity == idemgen::lint::diagnostic::Severity::Error),
            "{root}: every relative $ref resolves"
        );
    }
}

#[test]
fn the_cli_exits_0_or_1_on_openapi_and_2_on_the_rest() {
    let Some(dir) = corpus() else { return };
    let specs = dir.join("specs");
    for (file, expected) in [
        ("stripe-spec3.yaml", [0, 1]),
        ("oai-v2.0-petstore.json", [2, 2]),
        ("slack-slack_events_api_async_v1.json", [2, 2]),
        ("oai-3.2test-mega.yaml", [2, 2]),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
            .args(["lint", "--format", "json"])
            .arg(specs.join(file))
            .output()
            .unwrap();
        let code = output.status.code().unwrap();
        assert!(expected.contains(&code), "{file}: exit {code}");
        if code == 2 {
            assert!(!output.stderr.is_empty(), "{file}: says why");
        }
    }
}
