//! The layout of generated Rust is idemgen's (prettyplease), and the user
//! may change it: after `rustfmt` relays out every generated file,
//! regenerating is not refused and leaves the files as the user laid them
//! out, while an edit to the code itself is still the user's and refused.

use std::path::Path;
use std::process::Command;

use crate::support::{root, skip};

const SPEC: &str = "examples/payment-callback/openapi.yaml";

fn generate(out: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(["gen", SPEC, "-o", out.to_str().unwrap(), "--name", "svc"])
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs")
}

/// Every `.rs` file under `dir` outside `vendor/`, relative paths sorted.
fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() && !path.ends_with("vendor") {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn a_generated_project_relaid_out_by_rustfmt_regenerates_without_force() {
    if Command::new("rustfmt").arg("--version").output().is_err() {
        skip::skipped("rustfmt is not on PATH, and this test relays files out with it");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("svc");
    let first = generate(&out);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );

    let files = rust_files(&out);
    let read = |files: &[std::path::PathBuf]| -> Vec<String> {
        files
            .iter()
            .map(|file| std::fs::read_to_string(file).unwrap())
            .collect()
    };
    let generated = read(&files);
    // A user who prefers rustfmt's layout deletes the line that tells
    // rustfmt to leave a generated file alone.
    for (file, text) in files.iter().zip(&generated) {
        let text = text.replacen("#![cfg_attr(rustfmt, rustfmt::skip)]\n", "", 1);
        std::fs::write(file, text).unwrap();
    }
    let status = Command::new("rustfmt")
        .args(["--edition", "2024"])
        .args(&files)
        .status()
        .unwrap();
    assert!(status.success());
    let relaid = read(&files);
    assert!(relaid != generated, "rustfmt changed no layout");
    let routes = out.join("src/routes.rs");
    let before = std::fs::read_to_string(&routes).unwrap();

    // Not refused, and nothing rewritten: the code is the same.
    let again = generate(&out);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(stdout.contains(" 0 updated"), "{stdout}");
    for (file, text) in files.iter().zip(&relaid) {
        assert_eq!(
            std::fs::read_to_string(file).unwrap(),
            *text,
            "{}",
            file.display()
        );
    }

    // A changed line of code is an edit, whatever the layout.
    std::fs::write(
        &routes,
        before.replacen("Err(answer) => return answer", "Err(a) => return a", 1),
    )
    .unwrap();
    let refused = generate(&out);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("src/routes.rs"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}
