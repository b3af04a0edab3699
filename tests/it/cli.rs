//! The `idemgen` binary as users run it: outputs are snapshots, exit codes
//! and rule ids are asserted.

use crate::support::root;
use crate::support::run::idemgen;

use serde_json::Value;

fn lint_json(path: &str) -> (i32, Value) {
    let run = idemgen(&["lint", "--format", "json", path]);
    let json = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|error| panic!("{path}: not JSON ({error}): {}{}", run.stdout, run.stderr));
    (run.code, json)
}

fn rules_fired(json: &Value) -> Vec<String> {
    json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|diagnostic| diagnostic["rule"].as_str().unwrap().to_string())
        .collect()
}

fn broken_examples() -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = std::fs::read_dir(root().join("examples/broken"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .map(|path| {
            let rule = path.file_stem().unwrap().to_string_lossy().to_string();
            (rule.clone(), format!("examples/broken/{rule}.yaml"))
        })
        .collect();
    found.sort();
    found
}

#[test]
fn every_rule_fires_in_its_broken_example() {
    let examples = broken_examples();
    assert_eq!(
        examples.len() + FIRING_FIXTURES_ELSEWHERE.len(),
        idemgen_lint::RULES.len(),
        "one broken example per rule, except those with a fixture elsewhere"
    );
    for (rule, path) in examples {
        let (code, json) = lint_json(&path);
        let fired = rules_fired(&json);
        assert!(
            fired.contains(&rule),
            "{path}: expected {rule}, got {fired:?}"
        );
        let severity = idemgen(&["rules"]).stdout;
        let is_error = severity
            .lines()
            .any(|line| line.split_whitespace().take(2).eq([rule.as_str(), "error"]));
        assert_eq!(code, i32::from(is_error), "{path}: exit code for {fired:?}");
        let pretty = idemgen(&["lint", &path]);
        insta::assert_snapshot!(format!("rule_{rule}"), pretty.stdout);
    }
}

/// Rules whose firing input is not a one-rule example under
/// `examples/broken`: a parse-level problem, a multi-file `$ref` tree and a
/// stale suppression.
const FIRING_FIXTURES_ELSEWHERE: &[(&str, &str)] = &[
    ("duplicate-key", "tests/fixtures/lint/duplicate-key.yaml"),
    ("ref-unresolved", "tests/fixtures/refs/openapi.yaml"),
    ("unused-ignore", "tests/fixtures/lint/unused-ignore.yaml"),
];

/// The registry, not a count, says which rules need fixtures: each rule
/// fires in its own fixture and stays silent in a clean one (its fixed
/// counterpart under `examples/broken/fixed` when there is one, else the
/// payment-callback example the broken files derive from).
#[test]
fn every_registered_rule_has_a_fixture_that_fires_and_one_that_does_not() {
    let examples = broken_examples();
    for (rule, _) in &examples {
        assert!(
            idemgen_lint::rule(rule).is_some(),
            "examples/broken/{rule}.yaml names no registered rule"
        );
    }
    for rule in idemgen_lint::RULES {
        let firing = examples
            .iter()
            .find(|(example, _)| example == rule.id)
            .map(|(_, path)| path.clone())
            .or_else(|| {
                FIRING_FIXTURES_ELSEWHERE
                    .iter()
                    .find(|(id, _)| *id == rule.id)
                    .map(|(_, path)| path.to_string())
            })
            .unwrap_or_else(|| panic!("{}: add examples/broken/{0}.yaml", rule.id));
        let (_, json) = lint_json(&firing);
        assert!(
            rules_fired(&json).iter().any(|fired| fired == rule.id),
            "{firing}: expected {}",
            rule.id
        );

        let fixed = format!("examples/broken/fixed/{}.yaml", rule.id);
        let clean = if root().join(&fixed).exists() {
            fixed
        } else {
            "examples/payment-callback/openapi.yaml".to_string()
        };
        // Silent because it passes, not because it is silenced.
        let text = std::fs::read_to_string(root().join(&clean)).unwrap();
        assert!(
            !text
                .lines()
                .any(|line| line.contains("x-idemgen-ignore") && line.contains(rule.id)),
            "{clean} silences {} instead of passing it",
            rule.id
        );
        let (_, json) = lint_json(&clean);
        assert!(
            !rules_fired(&json).iter().any(|fired| fired == rule.id),
            "{clean}: {} fires ({json:#})",
            rule.id
        );
    }
}

#[test]
fn the_payment_callback_example_lints_clean() {
    // Its callback requires the provider's signature; keys are not scoped
    // by principal (its one caller is every callback's principal), and it
    // silences the rule that asks for that.
    let (code, json) = lint_json("examples/payment-callback/openapi.yaml");
    assert_eq!(code, 0);
    assert!(rules_fired(&json).is_empty(), "{json}");
    assert_eq!(json["summary"]["operations"], 2);
}

#[test]
fn json_output_has_exactly_the_contract_fields() {
    let (_, json) = lint_json("examples/broken/window-too-short.yaml");
    let diagnostic = &json["diagnostics"][0];
    let mut keys: Vec<&str> = diagnostic
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "column",
            "file",
            "help",
            "line",
            "message",
            "operation",
            "pointer",
            "rule",
            "severity"
        ]
    );
    assert_eq!(diagnostic["rule"], "window-too-short");
    assert_eq!(diagnostic["severity"], "error");
    assert_eq!(diagnostic["file"], "examples/broken/window-too-short.yaml");
    assert_eq!(diagnostic["operation"], "onPayCallback");
    assert_eq!(
        diagnostic["pointer"],
        "/paths/~1callbacks~1pay/post/x-idempotency/window"
    );
    let source =
        std::fs::read_to_string(root().join("examples/broken/window-too-short.yaml")).unwrap();
    let line = source
        .lines()
        .nth(diagnostic["line"].as_u64().unwrap() as usize - 1)
        .unwrap();
    let column = diagnostic["column"].as_u64().unwrap() as usize;
    assert!(
        line[column - 1..].starts_with("16s"),
        "points at the value: {line}"
    );
    assert!(diagnostic["message"].as_str().unwrap().contains("= 18s"));
    let summary = &json["summary"];
    assert_eq!(
        (summary["errors"].as_u64(), summary["warnings"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(
        (summary["files"].as_u64(), summary["operations"].as_u64()),
        (Some(1), Some(1))
    );
}

#[test]
fn warnings_fail_only_with_deny_warnings() {
    let path = "examples/broken/missing-idempotency.yaml";
    assert_eq!(idemgen(&["lint", path]).code, 0);
    assert_eq!(idemgen(&["lint", "--deny-warnings", path]).code, 1);
}

#[test]
fn several_files_in_one_run() {
    let run = idemgen(&[
        "lint",
        "--format",
        "json",
        "examples/broken/fixed/replay-unauthenticated.yaml",
        "examples/broken/window-too-short.yaml",
        "examples/broken/key-predictable.yaml",
    ]);
    assert_eq!(run.code, 1);
    let json: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(json["summary"]["files"], 3);
    assert_eq!(rules_fired(&json), ["window-too-short", "key-predictable"]);
}

#[test]
fn a_bad_file_among_good_ones_exits_2_but_still_reports_the_rest() {
    let run = idemgen(&[
        "lint",
        "--format",
        "json",
        "examples/broken/window-too-short.yaml",
        "does/not/exist.yaml",
    ]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("does/not/exist.yaml"), "{}", run.stderr);
    let json: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(rules_fired(&json), ["window-too-short"]);
}

#[test]
fn inherited_values_point_at_the_document_level_block() {
    let (code, json) = lint_json("tests/fixtures/lint/inherited.yaml");
    assert_eq!(code, 1);
    let diagnostics = json["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
    let finding = &diagnostics[0];
    assert_eq!(finding["rule"], "window-too-short");
    // The operation's timeout (6s) merged over the document's retries (1s).
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .contains("timeout 6s + retries 1s"),
        "{finding}"
    );
    assert_eq!(finding["pointer"], "/x-idempotency/window");
    assert_eq!(
        (finding["line"].as_u64(), finding["column"].as_u64()),
        (Some(7), Some(11))
    );
}

#[test]
fn findings_in_referenced_files_point_into_those_files() {
    let (code, json) = lint_json("tests/fixtures/refs/openapi.yaml");
    assert_eq!(code, 1);
    let diagnostics = json["diagnostics"].as_array().unwrap();
    let window = diagnostics
        .iter()
        .find(|d| d["rule"] == "window-too-short")
        .expect("window finding");
    assert_eq!(window["file"], "tests/fixtures/refs/paths/payments.yaml");
    assert_eq!(window["line"], 7);
    assert_eq!(window["operation"], "createPayment");
    assert_eq!(
        window["pointer"],
        "/paths/~1payments/post/x-idempotency/window"
    );
    let refs: Vec<String> = diagnostics
        .iter()
        .filter(|d| d["rule"] == "ref-unresolved")
        .map(|d| format!("{} {}", d["severity"], d["message"]))
        .collect();
    let expect = [
        "cycle of references",
        "remote references are not fetched",
        "leaves the directory",
        "does not exist",
        "nothing is at `#/components/pathItems/nope`",
    ];
    for needle in expect {
        assert!(
            refs.iter().any(|r| r.contains(needle)),
            "{needle} not in {refs:#?}"
        );
    }
    assert!(
        refs.iter()
            .any(|r| r.starts_with("\"warning\"") && r.contains("remote"))
    );
    insta::assert_snapshot!(
        "refs",
        idemgen(&["lint", "tests/fixtures/refs/openapi.yaml"]).stdout
    );
}

#[test]
fn duplicate_keys_are_findings() {
    let (code, json) = lint_json("tests/fixtures/lint/duplicate-key.yaml");
    assert_eq!(code, 1);
    let finding = &json["diagnostics"][0];
    assert_eq!(finding["rule"], "duplicate-key");
    assert_eq!(finding["line"], 10);
    assert_eq!(finding["pointer"], "/paths/~1pay/post");
    assert_eq!(finding["line"], 10, "points at the second `post`");
    insta::assert_snapshot!(
        "duplicate_key",
        idemgen(&["lint", "tests/fixtures/lint/duplicate-key.yaml"]).stdout
    );
}

#[test]
fn wrong_types_inside_the_contract_are_contract_invalid_findings() {
    let (code, json) = lint_json("tests/fixtures/lint/wrong-types.yaml");
    assert_eq!(code, 1);
    let messages: Vec<&str> = json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["rule"] == "contract-invalid")
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    for needle in [
        "`key.in` is `cookie`",
        "`key.name` must be a string",
        "did you mean `{uuid}`",
        "`key.max-length` must be an integer",
        "`18` has no unit",
        "unknown field `timeout`",
        "longer than a year",
        "`client.retries` must be a list",
        "unknown field `jiter`",
        "bad duration for `server.max-processing`",
        "from 100 to 599",
        "`responses.failed` is `maybe`",
        "`store.dialect` is `oracle`",
        "must be a percentage",
    ] {
        assert!(
            messages.iter().any(|m| m.contains(needle)),
            "{needle} not in {messages:#?}"
        );
    }
    insta::assert_snapshot!(
        "wrong_types",
        idemgen(&["lint", "tests/fixtures/lint/wrong-types.yaml"]).stdout
    );
}

#[test]
fn rules_list_and_rule_docs() {
    let list = idemgen(&["rules"]);
    assert_eq!(list.code, 0);
    insta::assert_snapshot!("rules", list.stdout);
    for line in list.stdout.lines() {
        let id = line.split_whitespace().next().unwrap();
        let doc = idemgen(&["rule", id]);
        assert_eq!(doc.code, 0);
        assert!(
            doc.stdout.starts_with(&format!("# {id}\n")),
            "{id}: {}",
            doc.stdout
        );
        for section in [
            "**What it checks.**",
            "**Why it matters.**",
            "**Example fix.**",
            "Default severity:",
        ] {
            assert!(doc.stdout.contains(section), "{id} docs lack {section}");
        }
    }
    insta::assert_snapshot!(
        "docs_window_too_short",
        idemgen(&["rule", "window-too-short"]).stdout
    );
    let unknown = idemgen(&["rule", "window-to-short"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("Did you mean `window-too-short`"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn unsupported_documents_exit_2_naming_what_was_found() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "swagger.yaml",
            "swagger: \"2.0\"\ninfo: {title: x, version: 1}\npaths: {}\n",
            "Swagger 2.0 is not supported",
        ),
        (
            "async.yaml",
            "asyncapi: 2.6.0\ninfo: {title: x, version: 1}\n",
            "AsyncAPI 2.6.0 is not an OpenAPI document",
        ),
        (
            "v33.yaml",
            "openapi: 3.3.0\ninfo: {title: x, version: 1}\n",
            "OpenAPI 3.3.0 is not supported",
        ),
        (
            "none.yaml",
            "info: {title: x, version: 1}\n",
            "no `openapi` version field",
        ),
        ("list.yaml", "- a\n- b\n", "the top level is a list"),
    ];
    for (name, text, expected) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let run = idemgen(&["lint", path.to_str().unwrap()]);
        assert_eq!(run.code, 2, "{name}");
        assert!(run.stderr.contains(expected), "{name}: {}", run.stderr);
        assert!(
            run.stderr.contains(name),
            "{name}: the message names the file"
        );
    }
}

#[test]
fn hostile_input_ends_in_a_clear_error_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut bomb = String::from("openapi: 3.1.0\na: &a [x, x, x, x, x, x, x, x, x]\n");
    let mut previous = 'a';
    for name in 'b'..='m' {
        bomb.push_str(&format!(
            "{name}: &{name} [{}]\n",
            vec![format!("*{previous}"); 9].join(", ")
        ));
        previous = name;
    }
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty.yaml", Vec::new(), "the file is empty"),
        ("comment.yaml", b"# nothing\n".to_vec(), "the file is empty"),
        (
            "garbage.yaml",
            b"\x00\x01\x02{[}]::".to_vec(),
            "invalid YAML/JSON",
        ),
        (
            "latin1.yaml",
            b"openapi: 3.1.0\ninfo: {title: caf\xe9}\n".to_vec(),
            "not UTF-8",
        ),
        ("utf16.yaml", vec![0xFF, 0xFE, b'o', 0, b'p', 0], "UTF-16"),
        (
            "deep.yaml",
            "- ".repeat(100_000).into_bytes(),
            "nesting deeper than",
        ),
        (
            "deep-flow.json",
            "[".repeat(100_000).into_bytes(),
            // The JSON fast path reaches the tree's depth limit first.
            "nesting deeper than",
        ),
        ("bomb.yaml", bomb.into_bytes(), "alias"),
        (
            "two-docs.yaml",
            b"openapi: 3.1.0\n---\nopenapi: 3.1.0\n".to_vec(),
            "more than one YAML document",
        ),
        (
            "tab.yaml",
            b"openapi: 3.1.0\npaths:\n\t/a: {}\n".to_vec(),
            "invalid YAML/JSON",
        ),
    ];
    for (name, bytes, expected) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let run = idemgen(&["lint", path.to_str().unwrap()]);
        assert_eq!(run.code, 2, "{name}: {}", run.stderr);
        assert!(run.stderr.contains(expected), "{name}: {}", run.stderr);
    }
    let missing = idemgen(&["lint", "no/such/spec.yaml"]);
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("no/such/spec.yaml"));
    let directory = idemgen(&["lint", "examples"]);
    assert_eq!(directory.code, 2);
    assert!(directory.stderr.contains("is a directory"));
}

#[test]
fn a_huge_scalar_loads_within_the_limits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.yaml");
    let text = format!(
        "openapi: 3.1.0\ninfo: {{title: x, version: '1', description: '{}'}}\n",
        "x".repeat(8 << 20)
    );
    std::fs::write(&path, text).unwrap();
    assert_eq!(idemgen(&["lint", path.to_str().unwrap()]).code, 0);
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(idemgen(&["lint"]).code, 2);
    assert_eq!(idemgen(&["frobnicate"]).code, 2);
    assert_eq!(idemgen(&["lint", "--format", "yaml", "x.yaml"]).code, 2);
    assert_eq!(idemgen(&["--help"]).code, 0);
    // An empty item among the retry delays is a mistake, not "no retries";
    // an empty list is.
    let spec = "examples/payment-callback/openapi.yaml";
    for retries in [",,,", "1s,,2s", "1s,"] {
        let run = idemgen(&["window", spec, "--retries", retries]);
        assert_eq!(run.code, 2, "{retries}");
        assert!(
            run.stderr.contains("has an empty delay between commas"),
            "{}",
            run.stderr
        );
    }
    assert_eq!(idemgen(&["window", spec, "--retries", ""]).code, 0);
}

#[test]
fn completions_are_printed() {
    for shell in ["bash", "zsh", "fish"] {
        let run = idemgen(&["completions", shell]);
        assert_eq!(run.code, 0);
        assert!(run.stdout.contains("idemgen"), "{shell}");
    }
}

#[test]
fn minified_json_with_a_huge_line_prints_a_short_window() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("min.json");
    let text = format!(
        r#"{{"openapi":"3.1.0","info":{{"title":"t","version":"1","description":"{}"}},"paths":{{"/a":{{"post":{{"operationId":"create","responses":{{"200":{{"description":"ok"}}}}}}}}}}}}"#,
        "d".repeat(70_000)
    );
    std::fs::write(&path, text).unwrap();
    let run = idemgen(&["lint", path.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(":1:70"),
        "the header names the real column: {}",
        run.stdout
    );
    assert!(run.stdout.len() < 2_000, "{} bytes", run.stdout.len());
}

#[test]
fn a_symlink_cannot_lead_a_ref_out_of_the_spec_directory() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    let spec = dir.path().join("spec");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(&spec).unwrap();
    std::fs::write(
        outside.join("secret.yaml"),
        "post: {operationId: secret, responses: {}}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside, spec.join("link")).unwrap();
    let root = spec.join("openapi.yaml");
    std::fs::write(
        &root,
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /a: {$ref: link/secret.yaml}\n",
    )
    .unwrap();
    let (code, json) = lint_json(root.to_str().unwrap());
    assert_eq!(code, 1);
    let message = json["diagnostics"][0]["message"].as_str().unwrap();
    assert!(message.contains("leaves the directory"), "{message}");
}

#[test]
fn an_invalid_operation_field_does_not_inherit_the_document_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("api.yaml");
    let spec = std::fs::read_to_string(root().join("examples/broken/window-too-short.yaml"))
        .unwrap()
        .replace("window: 16s", "window: 16")
        .replace(
            "x-idempotency:\n  client:",
            "x-idempotency:\n  window: 10s\n  client:",
        );
    std::fs::write(&path, spec).unwrap();
    let (_, json) = lint_json(path.to_str().unwrap());
    assert_eq!(rules_fired(&json), ["contract-invalid"], "{json:#}");
}

#[test]
fn the_exact_status_wins_over_its_range() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("api.yaml");
    let spec = std::fs::read_to_string(root().join("examples/payment-callback/openapi.yaml"))
        .unwrap()
        .replacen(
            "        \"429\":",
            "        \"4XX\": {description: any client error}\n        \"429\":",
            1,
        );
    assert!(spec.contains("4XX"));
    std::fs::write(&path, spec).unwrap();
    let (code, json) = lint_json(path.to_str().unwrap());
    assert_eq!(code, 0, "{json:#}");
    assert!(rules_fired(&json).is_empty(), "{json:#}");
}

#[test]
fn unquoted_numeric_versions_and_endless_inputs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.yaml");
    std::fs::write(&path, "openapi: 3.10\ninfo: {title: t, version: '1'}\n").unwrap();
    let run = idemgen(&["lint", path.to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("quote it"), "{}", run.stderr);
    let endless = idemgen(&["lint", "/dev/zero"]);
    assert_eq!(endless.code, 2);
    assert!(endless.stderr.contains("larger than"), "{}", endless.stderr);
}

#[test]
fn anchors_count_against_the_alias_budget() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("anchors.yaml");
    // Nested anchors and no alias at all: each anchor keeps a copy.
    let mut text = String::from("openapi: 3.1.0\nx: ");
    for level in 0..100 {
        text.push_str(&format!("&a{level} ["));
    }
    text.push_str(&vec!["1"; 20_000].join(","));
    text.push_str(&"]".repeat(100));
    text.push('\n');
    std::fs::write(&path, text).unwrap();
    let run = idemgen(&["lint", path.to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("anchors and aliases"), "{}", run.stderr);
}

#[test]
fn a_key_like_input_without_a_contract_is_one_finding_not_two() {
    let path = "tests/fixtures/lint/key-without-contract.yaml";
    let findings = |extra: &[&str]| {
        let mut args = vec!["lint", "--format", "json", path];
        args.extend_from_slice(extra);
        let run = idemgen(&args);
        let json: Value = serde_json::from_str(&run.stdout).unwrap();
        json["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                format!(
                    "{} {}",
                    d["rule"].as_str().unwrap(),
                    d["operation"].as_str().unwrap()
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        findings(&[]),
        [
            "undeclared-key-header createPayment",
            "undeclared-key-header updateRefund",
            "missing-idempotency createPayout",
        ]
    );
    // With the specific rule off, the general one covers every write again.
    assert_eq!(
        findings(&["--severity", "undeclared-key-header=off"]),
        [
            "missing-idempotency createPayment",
            "missing-idempotency updateRefund",
            "missing-idempotency createPayout",
        ]
    );
    insta::assert_snapshot!("key_without_contract", idemgen(&["lint", path]).stdout);
}

#[test]
fn statistics_count_findings_per_rule_across_files() {
    let files = [
        "tests/fixtures/lint/wrong-types.yaml",
        "tests/fixtures/lint/key-without-contract.yaml",
        "examples/broken/missing-idempotency.yaml",
    ];
    let mut args = vec!["lint", "--statistics"];
    args.extend(files);
    let run = idemgen(&args);
    assert_eq!(run.code, 1, "the exit code still follows the findings");
    insta::assert_snapshot!("statistics", run.stdout);

    // Most findings first; the counts add up to the findings `--format json` lists.
    args.extend(["--format", "json"]);
    let json: Value = serde_json::from_str(&idemgen(&args).stdout).unwrap();
    let rows = json["statistics"].as_array().unwrap();
    let counts: Vec<u64> = rows
        .iter()
        .map(|row| row["count"].as_u64().unwrap())
        .collect();
    assert!(
        counts.windows(2).all(|pair| pair[0] >= pair[1]),
        "{counts:?}"
    );
    let mut full = vec!["lint", "--format", "json"];
    full.extend(files);
    let listed: Value = serde_json::from_str(&idemgen(&full).stdout).unwrap();
    let findings = listed["diagnostics"].as_array().unwrap().len() as u64;
    assert_eq!(counts.iter().sum::<u64>(), findings);
    assert_eq!(json["summary"], listed["summary"]);
    assert_eq!(rows[0]["rule"], "contract-invalid");
    assert_eq!(rows[0]["severity"], "error");
    assert!(
        rows[0]["summary"]
            .as_str()
            .unwrap()
            .contains("does not parse")
    );

    let refused = idemgen(&["lint", "--statistics", "--format", "sarif", files[0]]);
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains("--statistics") && refused.stderr.contains("--format sarif"),
        "{}",
        refused.stderr
    );
    assert_eq!(refused.stdout, "");
}

#[test]
fn a_long_pretty_report_ends_with_counts_per_rule() {
    // 18 findings: more than a screenful, so one line sums them up.
    let long = idemgen(&["lint", "tests/fixtures/lint/wrong-types.yaml"]).stdout;
    let lines: Vec<&str> = long.lines().rev().take(3).collect();
    assert_eq!(lines[1], "3 fixable with `idemgen lint --fix`");
    assert_eq!(
        lines[2],
        "by rule: 14 contract-invalid, 1 conflict-undeclared, 1 missing-key-undeclared, \
         1 replay-schema-missing, 1 retry-after-missing \
         (`idemgen lint --statistics` shows only the counts)"
    );
    assert!(lines[0].starts_with("16 errors, 2 warnings"), "{long}");
    // Three findings fit on a screen: no summary line.
    let short = idemgen(&["lint", "tests/fixtures/lint/key-without-contract.yaml"]).stdout;
    assert!(!short.contains("by rule:"), "{short}");
}

#[test]
fn window_only_failing_shows_what_needs_attention() {
    let spec = "tests/fixtures/window/mixed.yaml";
    let table = idemgen(&["window", spec, "--only-failing"]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    insta::assert_snapshot!("window_only_failing_table", table.stdout);
    let markdown = idemgen(&["window", spec, "--only-failing", "--format", "markdown"]);
    insta::assert_snapshot!("window_only_failing_markdown", markdown.stdout);

    let json: Value = serde_json::from_str(
        &idemgen(&["window", spec, "--only-failing", "--format", "json"]).stdout,
    )
    .unwrap();
    let shown: Vec<(&str, &str)> = json["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["operation"].as_str().unwrap(),
                row["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("createRefund", "too-short"),
            ("createPayout", "too-short"),
            ("createTransfer", "unknown")
        ]
    );

    let svg = idemgen(&["window", spec, "--only-failing", "--format", "svg"]).stdout;
    roxmltree::Document::parse(&svg).expect("well-formed SVG");
    for failing in ["createRefund", "createPayout", "createTransfer"] {
        assert!(svg.contains(failing), "{failing} missing from the SVG");
    }
    assert!(!svg.contains("createPayment"), "a passing panel was drawn");
    let everything = idemgen(&["window", spec, "--format", "svg"]).stdout;
    assert!(everything.contains("createPayment"));
}

#[test]
fn window_only_failing_says_so_when_nothing_fails() {
    let spec = "examples/payment-callback/openapi.yaml";
    let table = idemgen(&["window", spec, "--only-failing"]);
    assert_eq!(table.code, 0);
    assert_eq!(
        table.stdout,
        "No window check fails: the one operation checked is ok.\n"
    );
    let markdown = idemgen(&["window", spec, "--only-failing", "--format", "markdown"]);
    assert_eq!(markdown.stdout, table.stdout);
    let svg = idemgen(&["window", spec, "--only-failing", "--format", "svg"]).stdout;
    roxmltree::Document::parse(&svg).expect("well-formed SVG");
    assert!(svg.contains("No window check fails: the one operation checked is ok."));
    let json: Value = serde_json::from_str(
        &idemgen(&["window", spec, "--only-failing", "--format", "json"]).stdout,
    )
    .unwrap();
    assert_eq!(json["operations"], Value::Array(vec![]));
    let mixed = idemgen(&[
        "window",
        "tests/fixtures/window/mixed.yaml",
        "--op",
        "createPayment",
        "--op",
        "createRefund",
        "--timeout",
        "1s",
        "--only-failing",
    ]);
    assert_eq!(
        mixed.stdout,
        "No window check fails: all 2 operations checked are ok.\n"
    );
}

/// A key header whose name no client can send (a line break, a blank,
/// non-ASCII) or an empty name is `contract-invalid`, at the name, so
/// `gen` never writes a service that could not name its own key header;
/// a query parameter's name may hold a blank.
#[test]
fn a_key_name_no_client_can_send_is_contract_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let spec_with = |location: &str, name: &str| {
        let spec = format!(
            "openapi: 3.1.0\ninfo: {{title: t, version: '1'}}\npaths:\n  /pay:\n    post:\n      operationId: pay\n      x-idempotency:\n        key: {{in: {location}, name: {name}, format: 'pay:{{uuid}}'}}\n        client: {{timeout: 5s}}\n        server: {{max-processing: 3s}}\n      responses: {{'200': {{description: ok}}}}\n"
        );
        let path = dir.path().join("openapi.yaml");
        std::fs::write(&path, spec).unwrap();
        let run = idemgen(&[
            "lint",
            "--no-config",
            "--format",
            "json",
            path.to_str().unwrap(),
        ]);
        let json: Value = serde_json::from_str(&run.stdout).unwrap();
        json["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["rule"] == "contract-invalid")
            .map(|d| {
                (
                    d["message"].as_str().unwrap().to_string(),
                    d["line"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    for (name, held) in [
        (r#""Idempotency-Key\r\nX: y""#, r"'\r'"),
        ("Idempotency Key", "' '"),
        ("🔑", "'🔑'"),
    ] {
        let found = spec_with("header", name);
        assert!(
            found.iter().any(
                |(message, line)| message.contains("is not an HTTP header name")
                    && message.contains(held)
                    && *line == 8
            ),
            "{name}: {found:?}"
        );
    }
    assert!(
        spec_with("header", "''")
            .iter()
            .any(|(message, _)| message.contains("`key.name` is empty"))
    );
    assert!(
        !spec_with("query", "idempotency key")
            .iter()
            .any(|(message, _)| message.contains("key.name")),
    );
}
