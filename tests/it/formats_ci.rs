//! The ready-to-copy CI files (action.yml, the GitHub workflow example,
//! .pre-commit-hooks.yaml) parse, have the expected shape, and only use
//! `idemgen lint` flags and formats that exist.

use crate::support::root;
use std::process::Command;

use saphyr::{LoadableYamlNode, Yaml};

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn lint_help() -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(["lint", "--help"])
        .output()
        .unwrap();
    String::from_utf8(output.stdout).unwrap()
}

/// Every `--flag` and `--format X` on lines that run `idemgen lint`.
fn check_commands(path: &str, text: &str, help: &str) -> usize {
    let mut commands = 0;
    for line in text.lines().filter(|line| line.contains("idemgen lint")) {
        commands += 1;
        let words: Vec<&str> = line.split_whitespace().collect();
        for (index, word) in words.iter().enumerate() {
            let word = word.trim_matches(|c| c == '"' || c == '\'');
            let Some(flag) = word.strip_prefix("--") else {
                continue;
            };
            let flag = flag.split('=').next().unwrap();
            if matches!(
                flag,
                "locked" | "git" | "quiet" | "root" | "path" | "no-tags" | "depth"
            ) {
                continue; // cargo's and git's
            }
            assert!(
                help.contains(&format!("--{flag}")),
                "{path}: unknown flag --{flag} in `{line}`"
            );
            if flag == "format" {
                let value = words[index + 1];
                assert!(
                    help.contains(&format!("- {value}:")),
                    "{path}: unknown format {value}"
                );
            }
        }
    }
    commands
}

#[test]
fn ci_files_parse_and_use_existing_flags() {
    let help = lint_help();
    for path in [
        "action.yml",
        "examples/ci/github-workflow.yml",
        ".pre-commit-hooks.yaml",
    ] {
        let text = read(path);
        let documents = Yaml::load_from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(documents.len(), 1, "{path}");
        assert!(
            check_commands(path, &text, &help) > 0,
            "{path} runs idemgen lint"
        );
    }
}

#[test]
fn the_action_is_composite_and_writes_sarif_and_annotations() {
    let text = read("action.yml");
    let action = &Yaml::load_from_str(&text).unwrap()[0];
    assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
    assert!(action["inputs"]["specs"]["required"].as_bool() == Some(true));
    for needed in [
        "--format sarif",
        "--format github",
        "--format markdown",
        "--since",
        "upload-sarif@v3",
    ] {
        assert!(text.contains(needed), "action.yml lacks {needed}");
    }
}

#[test]
fn the_workflow_runs_on_pull_requests_and_uploads_sarif() {
    let text = read("examples/ci/github-workflow.yml");
    let workflow = &Yaml::load_from_str(&text).unwrap()[0];
    assert!(!workflow["on"]["pull_request"].is_badvalue());
    assert_eq!(
        workflow["permissions"]["security-events"].as_str(),
        Some("write")
    );
    for needed in [
        "--format github",
        "--format sarif",
        "--since",
        "upload-sarif@v3",
        "fetch-depth: 0",
    ] {
        assert!(text.contains(needed), "workflow lacks {needed}");
    }
}

#[test]
fn the_pre_commit_hooks_name_an_entry_and_language() {
    let text = read(".pre-commit-hooks.yaml");
    let hooks = &Yaml::load_from_str(&text).unwrap()[0];
    let hooks = hooks.as_vec().expect("a list of hooks");
    assert!(!hooks.is_empty());
    for hook in hooks {
        assert!(hook["id"].as_str().is_some());
        assert!(hook["entry"].as_str().unwrap().starts_with("idemgen lint"));
        assert!(matches!(hook["language"].as_str(), Some("rust" | "system")));
        assert!(hook["files"].as_str().is_some());
    }
}
