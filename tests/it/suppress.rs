//! `x-idemgen-ignore` on an operation, a path item and the document root,
//! and `unused-ignore` for entries that silence nothing.

use crate::support::root;
use std::collections::HashMap;
use std::path::Path;

use idemgen_diagnostics::{Diagnostic, Severity};
use idemgen_lint::{LintOptions, lint};
use idemgen_spec::Workspace;

const BASE: &str = include_str!("../data/specs/payments.yaml");

/// Lints `text` (payments.yaml edited) and returns `(rule, operation, pointer)`
/// of each finding, plus the findings themselves.
fn run(text: &str, options: &LintOptions) -> (Vec<(String, String, String)>, Vec<Diagnostic>) {
    let workspace = Workspace::from_text(
        Path::new("/nonexistent/spec.yaml"),
        "spec.yaml".into(),
        text.to_string(),
    )
    .expect("loads");
    let linted = lint(&workspace, options);
    let keys = linted
        .diagnostics
        .iter()
        .map(|d| {
            (
                d.rule.to_string(),
                d.operation.clone().unwrap_or_default(),
                d.pointer.clone(),
            )
        })
        .collect();
    (keys, linted.diagnostics)
}

fn rules(keys: &[(String, String, String)]) -> Vec<&str> {
    keys.iter().map(|(rule, _, _)| rule.as_str()).collect()
}

fn on_operation(list: &str) -> String {
    BASE.replace(
        "      operationId: onPayCallback\n",
        &format!("      operationId: onPayCallback\n      x-idemgen-ignore: {list}\n"),
    )
}

#[test]
fn without_ignores_the_fixture_has_two_findings() {
    let (keys, _) = run(BASE, &LintOptions::default());
    assert_eq!(rules(&keys), ["window-too-short", "missing-idempotency"]);
}

#[test]
fn an_operation_ignore_silences_that_rule_on_that_operation_only() {
    let (keys, _) = run(&on_operation("[window-too-short]"), &LintOptions::default());
    assert_eq!(rules(&keys), ["missing-idempotency"]);

    // The same id on another operation silences nothing there.
    let text = BASE.replace(
        "      operationId: createRefund\n",
        "      operationId: createRefund\n      x-idemgen-ignore: [window-too-short]\n",
    );
    let (keys, found) = run(&text, &LintOptions::default());
    assert_eq!(
        rules(&keys),
        ["window-too-short", "missing-idempotency", "unused-ignore"]
    );
    let unused = &found[2];
    assert_eq!(unused.severity, Severity::Warning);
    assert_eq!(unused.operation.as_deref(), Some("createRefund"));
    assert_eq!(unused.pointer, "/paths/~1refunds/post/x-idemgen-ignore/0");
    assert_eq!(
        unused.message,
        "`window-too-short` is ignored on createRefund but reports nothing there"
    );
}

#[test]
fn a_path_item_ignore_covers_its_operations() {
    let text = BASE.replace(
        "  /refunds:\n",
        "  /refunds:\n    x-idemgen-ignore: [missing-idempotency]\n",
    );
    let (keys, _) = run(&text, &LintOptions::default());
    assert_eq!(rules(&keys), ["window-too-short"]);
}

#[test]
fn a_root_ignore_covers_the_whole_document() {
    let text = BASE.replace(
        "paths:\n",
        "x-idemgen-ignore: [missing-idempotency, window-too-short]\npaths:\n",
    );
    let (keys, _) = run(&text, &LintOptions::default());
    assert!(keys.is_empty(), "{keys:?}");
}

#[test]
fn an_inherited_value_is_silenced_by_the_operation_that_inherits_it() {
    // The too-short window now comes from the document-level block, so the
    // finding points there, but it is still about onPayCallback.
    let text = on_operation("[window-too-short]")
        .replace("        window: 16s\n", "")
        .replace(
            "  server: {max-processing: 3s}\n",
            "  server: {max-processing: 3s}\n  window: 16s\n",
        );
    let (keys, _) = run(
        &text.replace(
            "x-idemgen-ignore: [window-too-short]\n",
            "x-idemgen-ignore: []\n",
        ),
        &LintOptions::default(),
    );
    assert!(
        keys.contains(&(
            "window-too-short".into(),
            "onPayCallback".into(),
            "/x-idempotency/window".into()
        )),
        "{keys:?}"
    );
    let (keys, _) = run(&text, &LintOptions::default());
    assert_eq!(rules(&keys), ["missing-idempotency"]);
}

#[test]
fn unknown_and_unused_ids_are_reported_with_their_place() {
    let (keys, found) = run(
        &on_operation("[window-too-short, key-too-long, window-to-short]"),
        &LintOptions::default(),
    );
    assert_eq!(
        keys[..2],
        [
            (
                "unused-ignore".into(),
                "onPayCallback".into(),
                "/paths/~1callbacks~1pay/post/x-idemgen-ignore/1".into()
            ),
            (
                "unused-ignore".into(),
                "onPayCallback".into(),
                "/paths/~1callbacks~1pay/post/x-idemgen-ignore/2".into()
            ),
        ]
    );
    assert_eq!(found[0].location.line, 13);
    assert!(
        found[0]
            .message
            .contains("`key-too-long` is ignored on onPayCallback")
    );
    assert_eq!(
        found[1].message,
        "`x-idemgen-ignore` on onPayCallback names `window-to-short`, which is not a rule"
    );
    assert_eq!(
        found[1].help.as_deref(),
        Some("did you mean `window-too-short`? `idemgen rules` lists them")
    );
}

#[test]
fn unused_ignore_follows_severities_and_can_itself_be_ignored() {
    let text = on_operation("[window-too-short, key-too-long]");
    let off = LintOptions {
        severities: HashMap::from([("unused-ignore".to_string(), None)]),
        ..LintOptions::default()
    };
    assert_eq!(rules(&run(&text, &off).0), ["missing-idempotency"]);

    let error = LintOptions {
        severities: HashMap::from([("unused-ignore".to_string(), Some(Severity::Error))]),
        ..LintOptions::default()
    };
    let (_, found) = run(&text, &error);
    assert_eq!(found[0].rule, "unused-ignore");
    assert_eq!(found[0].severity, Severity::Error);

    let deliberate = on_operation("[window-too-short, key-too-long, unused-ignore]");
    assert_eq!(
        rules(&run(&deliberate, &LintOptions::default()).0),
        ["missing-idempotency"]
    );
}

#[test]
fn ignoring_a_rule_that_is_turned_off_is_reported() {
    let options = LintOptions {
        severities: HashMap::from([("window-too-short".to_string(), None)]),
        ..LintOptions::default()
    };
    let (_, found) = run(&on_operation("[window-too-short]"), &options);
    assert_eq!(found[0].rule, "unused-ignore");
    assert_eq!(
        found[0].message,
        "`window-too-short` is turned off, so ignoring it on onPayCallback silences nothing"
    );
}

#[test]
fn a_malformed_list_is_reported_and_a_single_string_works() {
    let (keys, found) = run(&on_operation("3"), &LintOptions::default());
    assert_eq!(rules(&keys)[0], "unused-ignore");
    assert!(found[0].message.contains("must be a list of rule ids"));
    let (keys, _) = run(&on_operation("window-too-short"), &LintOptions::default());
    assert_eq!(rules(&keys), ["missing-idempotency"]);
}

#[test]
fn the_silenced_findings_are_counted_and_shown_in_the_summary() {
    let text = on_operation("[window-too-short]");
    let workspace = Workspace::from_text(
        Path::new("/nonexistent/spec.yaml"),
        "spec.yaml".into(),
        text,
    )
    .expect("loads");
    assert_eq!(lint(&workspace, &LintOptions::default()).suppressed, 1);

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .current_dir(root())
        .args([
            "lint",
            "--no-config",
            "--color=never",
            "tests/data/specs/ignores.yaml",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.ends_with(
            "0 errors, 3 warnings in 1 file (2 operations); 1 silenced by x-idemgen-ignore\n"
        ),
        "{stdout}"
    );
    assert_eq!(output.status.code(), Some(0));
}
