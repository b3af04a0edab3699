//! Pull-request mode: `--baseline OLD_SPEC` and `--since GITREF` report
//! only findings the old version did not have, matched by rule, operation
//! and JSON pointer, so a reordered spec brings no "new" findings.

use crate::support::root;
use crate::support::run::{Run, idemgen_in, rules_with};
use std::path::Path;
use std::process::Command;

use idemgen_lint::baseline::new_findings;
use idemgen_lint::{LintOptions, lint};
use idemgen_spec::Workspace;

const OLD: &str = "tests/data/specs/payments.yaml";
const NEW: &str = "tests/data/specs/payments-reordered.yaml";

/// `idemgen lint` in `dir`, without a configuration.
fn idemgen(dir: &Path, args: &[&str]) -> Run {
    let lint = ["lint", "--no-config", "--color=never"];
    idemgen_in(dir, &[&lint[..], args].concat())
}

/// `(rule, operation)` of each finding in a JSON report.
fn findings(json: &str) -> Vec<(String, String)> {
    rules_with(json, "operation")
}

fn pair(rule: &str, operation: &str) -> (String, String) {
    (rule.to_string(), operation.to_string())
}

#[test]
fn a_reordered_spec_has_only_its_really_new_finding() {
    // Lines all moved: the old findings sit on other lines in the new file.
    let all = idemgen(&root(), &["--format", "json", NEW]);
    assert_eq!(all.code, 1);
    assert_eq!(
        findings(&all.stdout),
        [
            pair("missing-idempotency", "createPayout"),
            pair("missing-idempotency", "createRefund"),
            pair("window-too-short", "onPayCallback"),
        ]
    );
    let new = idemgen(&root(), &["--format", "json", "--baseline", OLD, NEW]);
    assert_eq!(
        findings(&new.stdout),
        [pair("missing-idempotency", "createPayout")]
    );
    assert_eq!(
        new.code, 0,
        "the old error is not new: exit follows new findings"
    );

    let pretty = idemgen(&root(), &["--baseline", OLD, NEW]);
    assert!(
        pretty.stdout.ends_with(
            "0 errors, 1 warning in 1 file (3 operations); 2 findings already in the baseline not shown\n"
        ),
        "{}",
        pretty.stdout
    );
    // Every format agrees.
    let sarif = idemgen(&root(), &["--format", "sarif", "--baseline", OLD, NEW]);
    let log: serde_json::Value = serde_json::from_str(&sarif.stdout).unwrap();
    assert_eq!(log["runs"][0]["results"].as_array().unwrap().len(), 1);
    let github = idemgen(&root(), &["--format", "github", "--baseline", OLD, NEW]);
    assert_eq!(
        github
            .stdout
            .lines()
            .filter(|l| l.starts_with("::"))
            .count(),
        1
    );
}

#[test]
fn a_finding_the_old_version_did_not_have_fails_the_run() {
    // Swap roles: against the reordered spec, the old one has nothing new...
    let run = idemgen(&root(), &["--format", "json", "--baseline", NEW, OLD]);
    assert!(findings(&run.stdout).is_empty());
    assert_eq!(run.code, 0);
    // ...and against a spec without the window error, that error is new.
    let dir = tempfile::tempdir().unwrap();
    let fixed = dir.path().join("fixed.yaml");
    let text = std::fs::read_to_string(root().join(OLD)).unwrap();
    std::fs::write(&fixed, text.replace("window: 16s", "window: 18s")).unwrap();
    let run = idemgen(
        &root(),
        &[
            "--format",
            "json",
            "--baseline",
            fixed.to_str().unwrap(),
            OLD,
        ],
    );
    assert_eq!(
        findings(&run.stdout),
        [pair("window-too-short", "onPayCallback")]
    );
    assert_eq!(run.code, 1);
}

#[test]
fn matching_uses_rule_operation_and_pointer_not_lines() {
    let options = LintOptions::default();
    let load = |path: &str| Workspace::load(&root().join(path)).unwrap();
    let (old, new) = (load(OLD), load(NEW));
    let old_findings = lint(&old, &options).diagnostics;
    let new_findings_all = lint(&new, &options).diagnostics;
    let old_lines: Vec<usize> = old_findings.iter().map(|d| d.location.line).collect();
    let new_lines: Vec<usize> = new_findings_all.iter().map(|d| d.location.line).collect();
    assert_ne!(old_lines, new_lines[1..], "the fixture moves lines");
    let (fresh, matched) = new_findings(&old_findings, new_findings_all);
    assert_eq!(matched, 2);
    assert_eq!(fresh.len(), 1);
    assert_eq!(fresh[0].pointer, "/paths/~1payouts/post");
}

#[test]
fn baseline_takes_exactly_one_spec() {
    let run = idemgen(&root(), &["--baseline", OLD, OLD, NEW]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--since"), "{}", run.stderr);
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=idemgen",
            "-c",
            "user.email=idemgen@example.com",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

#[test]
fn since_reads_the_old_version_from_git() {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    git(dir, &["init", "-q"]);
    std::fs::create_dir(dir.join("api")).unwrap();
    let spec = dir.join("api/openapi.yaml");
    std::fs::copy(root().join(OLD), &spec).unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "old"]);
    std::fs::copy(root().join(NEW), &spec).unwrap();

    // From the repository root, and from inside the spec's directory.
    for (cwd, path) in [
        (dir.to_path_buf(), "api/openapi.yaml"),
        (dir.join("api"), "openapi.yaml"),
    ] {
        let run = idemgen(&cwd, &["--format", "json", "--since", "HEAD", path]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(
            findings(&run.stdout),
            [pair("missing-idempotency", "createPayout")]
        );
    }

    // A spec that did not exist at REF: everything is new.
    std::fs::copy(root().join(OLD), dir.join("api/other.yaml")).unwrap();
    let run = idemgen(
        dir,
        &["--format", "json", "--since", "HEAD", "api/other.yaml"],
    );
    assert_eq!(findings(&run.stdout).len(), 2);
    assert_eq!(run.code, 1);

    // Several specs at once, each against its own old version.
    let run = idemgen(
        dir,
        &[
            "--format",
            "json",
            "--since",
            "HEAD",
            "api/openapi.yaml",
            "api/other.yaml",
        ],
    );
    assert_eq!(findings(&run.stdout).len(), 3);

    // An unknown revision is bad input, with a hint for shallow clones.
    let run = idemgen(dir, &["--since", "no-such-branch", "api/openapi.yaml"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("`no-such-branch` is not a git revision"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("fetch-depth: 0"), "{}", run.stderr);
}

#[test]
fn since_outside_a_repository_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::copy(root().join(OLD), &spec).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .current_dir(dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .args(["lint", "--no-config", "--since", "HEAD", "spec.yaml"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("not inside a git repository"));
}

/// Copies the directory `from` into `to`, file by file.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Pointers, and so baselines, are relative to the root document: a
/// multi-file spec's baseline taken in another checkout (the same tree at
/// another absolute path, named another way on the command line) matches
/// every finding, those in referenced files included.
#[test]
fn a_baseline_from_another_checkout_of_a_multi_file_spec_matches() {
    let fixture = root().join("tests/fixtures/refs");
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let old_root = one.path().join("refs");
    let new_root = two.path().join("checkout/api/refs");
    copy_tree(&fixture, &old_root);
    copy_tree(&fixture, &new_root);
    let old_spec = old_root.join("openapi.yaml");
    let new_spec = new_root.join("openapi.yaml");

    // The same findings with the same pointers, whether the spec is named
    // by an absolute path or relative to the working directory.
    let pointers = |dir: &Path, spec: &str| -> Vec<(String, String)> {
        let run = idemgen(dir, &["--format", "json", spec]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        let mut pointers = rules_with(&run.stdout, "pointer");
        // Related places (a shared key schema) are pointers too.
        let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        for finding in json["diagnostics"].as_array().unwrap() {
            for related in finding["related"].as_array().into_iter().flatten() {
                pointers.push((
                    format!("{} (related)", finding["rule"].as_str().unwrap()),
                    related["pointer"].as_str().unwrap().to_string(),
                ));
            }
        }
        pointers.sort();
        pointers
    };
    let absolute = pointers(&root(), old_spec.to_str().unwrap());
    let relative = pointers(two.path(), "checkout/api/refs/openapi.yaml");
    assert_eq!(absolute, relative);
    let in_referenced: Vec<_> = absolute
        .iter()
        .filter(|(_, pointer)| pointer.contains('#'))
        .collect();
    assert!(
        !in_referenced.is_empty(),
        "the fixture has findings or related places in referenced files: {absolute:?}"
    );
    for (rule, pointer) in &in_referenced {
        assert!(
            pointer.starts_with("shared/") || pointer.starts_with("paths/"),
            "{rule}: {pointer} is not relative to the root document"
        );
    }

    // The baseline in one checkout, the spec in the other: nothing new.
    let run = idemgen(
        &root(),
        &[
            "--format",
            "json",
            "--baseline",
            old_spec.to_str().unwrap(),
            new_spec.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(findings(&run.stdout), []);
    // A finding that the other checkout really is new in still is: the
    // shared key parameter is no longer required.
    let parameters = new_root.join("shared/parameters.yaml");
    let text = std::fs::read_to_string(&parameters).unwrap();
    assert!(text.contains("required: true"), "{text}");
    std::fs::write(
        &parameters,
        text.replace("required: true", "required: false"),
    )
    .unwrap();
    let run = idemgen(
        &root(),
        &[
            "--format",
            "json",
            "--baseline",
            old_spec.to_str().unwrap(),
            new_spec.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let fresh = rules_with(&run.stdout, "pointer");
    assert_eq!(fresh.len(), 1, "{fresh:?}");
    assert_eq!(fresh[0].0, "key-param-missing");
    // It points where the contract names the key (in the root's tree).
    assert_eq!(fresh[0].1, "/paths/~1payments/post/x-idempotency/key/name");
}
