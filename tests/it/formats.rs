//! Every `--format` of `idemgen lint`: its structure (SARIF against the
//! official schema, JUnit as XML, GitHub workflow commands, Markdown), and
//! that all formats report the same findings and exit with the same code.

use crate::support::root;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

const FORMATS: [&str; 6] = ["pretty", "json", "sarif", "github", "junit", "markdown"];

/// `idemgen lint --no-config ARGS…` from the package root: stdout and exit code.
fn lint(args: &[&str]) -> (String, i32) {
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .current_dir(root())
        .arg("lint")
        .arg("--no-config")
        .arg("--color=never")
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_WORKSPACE")
        .output()
        .expect("idemgen runs");
    let code = output.status.code().expect("exits, no signal");
    assert!(
        code == 0 || code == 1,
        "exit {code}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (
        String::from_utf8(output.stdout).expect("UTF-8 output"),
        code,
    )
}

/// Spec sets to compare formats on: a small fixture, and every example.
fn spec_sets() -> Vec<Vec<String>> {
    let mut examples: Vec<String> = std::fs::read_dir(root().join("examples/broken"))
        .expect("examples/broken")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .map(|path| relative(&path))
        .collect();
    examples.sort();
    examples.push("examples/payment-callback/openapi.yaml".into());
    vec![
        vec!["tests/data/specs/payments.yaml".into()],
        vec![
            "tests/data/specs/ignores.yaml".into(),
            "tests/data/specs/payments.yaml".into(),
        ],
        vec!["examples/payment-callback/openapi.yaml".into()],
        examples,
    ]
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// (errors, warnings, notes) as one format shows them.
type Counts = (usize, usize, usize);

fn counts(format: &str, text: &str) -> Counts {
    let tally = |severities: Vec<&str>| {
        let count = |wanted: &str| severities.iter().filter(|s| **s == wanted).count();
        (count("error"), count("warning"), count("note"))
    };
    match format {
        "json" => {
            let document: Value = serde_json::from_str(text).expect("JSON");
            tally(
                document["diagnostics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| match d["severity"].as_str().unwrap() {
                        "info" => "note",
                        other => other,
                    })
                    .collect(),
            )
        }
        "sarif" => {
            let document: Value = serde_json::from_str(text).expect("SARIF is JSON");
            tally(
                document["runs"][0]["results"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|result| result["level"].as_str().unwrap())
                    .collect(),
            )
        }
        "github" => tally(
            text.lines()
                .filter_map(|line| {
                    line.strip_prefix("::")
                        .and_then(|rest| rest.split_once(' '))
                        .map(|(command, _)| match command {
                            "notice" => "note",
                            other => other,
                        })
                })
                .collect(),
        ),
        "junit" => {
            let document = roxmltree::Document::parse(text).expect("JUnit is XML");
            let mut severities = Vec::new();
            for node in document
                .descendants()
                .filter(|node| node.has_tag_name("failure") || node.has_tag_name("system-out"))
            {
                for line in node.text().unwrap_or("").lines() {
                    let severity = line.split('[').next().unwrap();
                    severities.push(match severity {
                        "info" => "note",
                        other => other,
                    });
                }
            }
            tally(severities)
        }
        "markdown" => tally(
            text.lines()
                .filter_map(|line| {
                    let cells: Vec<&str> = line.split(" | ").collect();
                    let first = cells.first()?.strip_prefix("| ")?;
                    first.split(' ').nth(1).filter(|_| cells.len() >= 5)
                })
                .collect(),
        ),
        "pretty" => {
            // `1 error, 2 warnings, 1 note in 3 files (…)`
            let summary = text.lines().last().expect("a summary line");
            let number = |word: &str| {
                summary
                    .split(", ")
                    .flat_map(|part| part.split(" in ").next())
                    .find(|part| part.split(' ').nth(1).is_some_and(|w| w.starts_with(word)))
                    .map_or(0, |part| part.split(' ').next().unwrap().parse().unwrap())
            };
            (number("error"), number("warning"), number("note"))
        }
        _ => unreachable!(),
    }
}

#[test]
fn every_format_reports_the_same_findings_and_exit_code() {
    for specs in spec_sets() {
        let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
        for extra in [&[][..], &["--deny-warnings"][..]] {
            let mut seen: Vec<(&str, Counts, i32)> = Vec::new();
            for format in FORMATS {
                let mut args = vec!["--format", format];
                args.extend(extra);
                args.extend(&specs);
                let (text, code) = lint(&args);
                seen.push((format, counts(format, &text), code));
            }
            let (_, expected_counts, expected_code) = seen[1]; // json
            for (format, counts, code) in &seen {
                assert_eq!(
                    (*counts, *code),
                    (expected_counts, expected_code),
                    "{format} disagrees with json on {specs:?} {extra:?}: {seen:?}"
                );
            }
        }
    }
    // The fixture's numbers, so the comparison is not of zeros.
    let (text, code) = lint(&["--format", "json", "tests/data/specs/payments.yaml"]);
    assert_eq!(counts("json", &text), (1, 1, 0));
    assert_eq!(code, 1);
}

fn sarif_validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("tests/data/sarif-schema-2.1.0.json")).unwrap();
    // The official schema's `run.language` pattern has a stray `]`, a literal
    // in ECMA-262 regexes but refused by the Rust regex engine when the
    // schema itself is checked: escape it, keeping what it matches.
    let stray = r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#;
    assert!(
        text.contains(stray),
        "the schema changed; revisit this patch"
    );
    let text = text.replace(stray, r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$""#);
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::draft7::new(&schema).expect("the SARIF schema compiles offline")
}

#[test]
fn sarif_is_valid_against_the_official_schema_and_carries_rule_help() {
    let validator = sarif_validator();
    for specs in spec_sets() {
        let mut args = vec!["--format", "sarif"];
        args.extend(specs.iter().map(String::as_str));
        let (text, _) = lint(&args);
        let log: Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&log)
            .map(|error| format!("{error} at {}", error.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{specs:?}: {errors:#?}");

        assert_eq!(log["version"], "2.1.0");
        let run = &log["runs"][0];
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        let ids: BTreeSet<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
        for rule in idemgen_lint::RULES {
            assert!(ids.contains(rule.id), "{} is not in the driver", rule.id);
        }
        for rule in rules {
            assert!(
                rule["shortDescription"]["text"]
                    .as_str()
                    .is_some_and(|t| !t.is_empty())
            );
            let help = rule["help"]["markdown"].as_str().unwrap();
            assert!(
                help.contains("**Why it matters.**"),
                "{}: {help}",
                rule["id"]
            );
            assert!(rule["help"]["text"].as_str().is_some_and(|t| !t.is_empty()));
            assert!(rule["defaultConfiguration"]["level"].is_string());
        }
        for result in run["results"].as_array().unwrap() {
            let index = result["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[index]["id"], result["ruleId"]);
            let location = &result["locations"][0]["physicalLocation"];
            let uri = location["artifactLocation"]["uri"].as_str().unwrap();
            assert!(!uri.starts_with('/') && !uri.contains('\\'), "{uri}");
            assert_eq!(location["artifactLocation"]["uriBaseId"], "%SRCROOT%");
            assert!(location["region"]["startLine"].as_u64().unwrap() >= 1);
            assert!(location["region"]["startColumn"].as_u64().unwrap() >= 1);
            assert!(result["partialFingerprints"]["idemgen/v1"].is_string());
        }
    }
}

#[test]
fn sarif_schema_check_is_not_vacuous() {
    let validator = sarif_validator();
    let (text, _) = lint(&["--format", "sarif", "tests/data/specs/payments.yaml"]);
    let mut log: Value = serde_json::from_str(&text).unwrap();
    assert!(validator.is_valid(&log));
    log["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!validator.is_valid(&log), "a bad level must be refused");
}

#[test]
fn github_annotations_name_file_line_column_and_rule() {
    let (text, code) = lint(&["--format", "github", "tests/data/specs/payments.yaml"]);
    assert_eq!(code, 1);
    let annotations: Vec<&str> = text.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(annotations.len(), 2, "{text}");
    assert!(
        annotations[0].starts_with(
            "::error file=tests/data/specs/payments.yaml,line=17,col=17,endColumn=20,title=window-too-short (onPayCallback)::onPayCallback: window 16s"
        ),
        "{}",
        annotations[0]
    );
    assert!(
        annotations[1].starts_with("::warning file=tests/data/specs/payments.yaml,line=32,col=5,"),
        "{}",
        annotations[1]
    );
    assert!(annotations[1].contains("title=missing-idempotency (createRefund)"));
    for annotation in annotations {
        let message = annotation.splitn(3, "::").nth(2).unwrap();
        assert!(!message.contains('\n'));
        assert!(message.contains("%0Ahelp: "), "{message}");
    }
    assert_eq!(
        text.lines().last(),
        Some("1 error, 1 warning in 1 file (2 operations)")
    );
}

#[test]
fn junit_has_one_testcase_per_operation_and_rule_and_fails_on_errors() {
    let (text, code) = lint(&["--format", "junit", "tests/data/specs/payments.yaml"]);
    assert_eq!(code, 1);
    let document = roxmltree::Document::parse(&text).expect("well-formed XML");
    let suites = document.root_element();
    assert_eq!(suites.tag_name().name(), "testsuites");
    let suite = suites
        .children()
        .find(|node| node.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(
        suite.attribute("name"),
        Some("tests/data/specs/payments.yaml")
    );
    let cases: Vec<roxmltree::Node> = suite
        .children()
        .filter(|node| node.has_tag_name("testcase"))
        .collect();
    let names: BTreeSet<&str> = cases.iter().map(|c| c.attribute("name").unwrap()).collect();
    assert_eq!(names.len(), cases.len(), "testcase names are unique");
    let mut expected = 0;
    for rule in idemgen_lint::RULES {
        if rule.check.document().is_some() {
            expected += 1;
            assert!(names.contains(format!("(document): {}", rule.id).as_str()));
        }
        if rule.check.operation().is_some() {
            expected += 2;
            for operation in ["onPayCallback", "createRefund"] {
                assert!(names.contains(format!("{operation}: {}", rule.id).as_str()));
            }
        }
    }
    assert_eq!(cases.len(), expected);
    assert_eq!(
        suite.attribute("tests"),
        Some(expected.to_string().as_str())
    );
    assert_eq!(suite.attribute("failures"), Some("1"));
    let failed: Vec<&str> = cases
        .iter()
        .filter(|case| case.children().any(|c| c.has_tag_name("failure")))
        .map(|case| case.attribute("name").unwrap())
        .collect();
    assert_eq!(failed, ["onPayCallback: window-too-short"]);
    let warned = cases
        .iter()
        .find(|case| case.attribute("name") == Some("createRefund: missing-idempotency"))
        .unwrap();
    let out = warned
        .children()
        .find(|c| c.has_tag_name("system-out"))
        .and_then(|c| c.text())
        .unwrap();
    assert!(
        out.starts_with("warning[missing-idempotency] tests/data/specs/payments.yaml:32:5: "),
        "{out}"
    );
}

#[test]
fn markdown_is_a_pull_request_summary() {
    let (text, _) = lint(&["--format", "markdown", "tests/data/specs/payments.yaml"]);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("### ❌ idemgen: 1 error, 1 warning in 1 file (2 operations)")
    );
    assert!(
        text.contains(
            "| Severity | Rule | Operation | Location | Message |\n|---|---|---|---|---|\n"
        )
    );
    assert!(text.contains(
        "| ❌ error | `window-too-short` | `onPayCallback` | `tests/data/specs/payments.yaml:17:17` |"
    ));
    assert!(text.contains("<details><summary>What the rules mean</summary>"));

    let (clean, code) = lint(&[
        "--format",
        "markdown",
        "examples/broken/fixed/replay-unauthenticated.yaml",
    ]);
    assert_eq!(code, 0);
    assert!(
        clean.starts_with("### ✅ idemgen: 0 errors, 0 warnings"),
        "{clean}"
    );
}

#[test]
fn output_flag_writes_the_report_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("idemgen.sarif");
    let (stdout, code) = lint(&[
        "--format",
        "sarif",
        "--output",
        out.to_str().unwrap(),
        "tests/data/specs/payments.yaml",
    ]);
    assert_eq!(code, 1);
    assert!(stdout.is_empty());
    let log: Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    assert_eq!(log["runs"][0]["results"].as_array().unwrap().len(), 2);
}

/// A spec that does not load is an exit 2 with its error on stderr, and no
/// format reports the run as clean: JSON gains `load_errors`, SARIF says
/// the run did not succeed (schema-valid), JUnit has an erring case, the
/// Markdown summary is ❌ and GitHub gets an `::error` annotation.
#[test]
fn a_spec_that_does_not_load_is_in_every_format_not_a_clean_report() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "openapi: 3.1.0\npaths: [\n").unwrap();
    let bad = bad.to_str().unwrap();
    let run = |format: &str| {
        let run = crate::support::run::idemgen(&["lint", "--no-config", "--format", format, bad]);
        assert_eq!(run.code, 2, "{format}: {}", run.stdout);
        assert!(
            run.stderr.contains("invalid YAML"),
            "{format}: {}",
            run.stderr
        );
        run.stdout
    };
    let json: Value = serde_json::from_str(&run("json")).unwrap();
    assert_eq!(json["load_errors"][0]["file"], bad);
    assert!(json["load_errors"][0]["line"].is_number(), "{json}");
    assert!(
        json["load_errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("invalid YAML")
    );
    let sarif: Value = serde_json::from_str(&run("sarif")).unwrap();
    let invocation = &sarif["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false, "{sarif}");
    assert_eq!(
        invocation["toolExecutionNotifications"][0]["level"],
        "error"
    );
    assert!(sarif_validator().is_valid(&sarif), "{sarif}");
    let junit = run("junit");
    assert!(
        junit.contains(r#"errors="1""#) && junit.contains(r#"type="load-error""#),
        "{junit}"
    );
    let markdown = run("markdown");
    assert!(markdown.starts_with("### ❌ idemgen:"), "{markdown}");
    assert!(markdown.contains("1 file could not be read"), "{markdown}");
    let github = run("github");
    assert!(
        github.starts_with(&format!("::error file={bad},line=")),
        "{github}"
    );
}

/// A finding about an operation whose key is a shared component points
/// at the operation and names the component as a related place: `related`
/// in JSON (only where there is one), `relatedLocations` in SARIF, a note
/// with its snippet in the pretty output.
#[test]
fn a_shared_key_is_a_related_location_in_every_format_that_has_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("shared")).unwrap();
    std::fs::write(
        dir.path().join("openapi.yaml"),
        "openapi: 3.1.0
info: {title: Payments, version: '1'}
paths:
  /refunds:
    post:
      operationId: createRefund
      parameters:
        - $ref: 'shared/parameters.yaml#/IdempotencyKey'
      responses:
        '201': {description: created}
  /payouts:
    post:
      operationId: createPayout
      parameters:
        - name: Idempotency-Key
          in: header
          schema: {type: string}
      responses:
        '201': {description: created}
",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("shared/parameters.yaml"),
        "IdempotencyKey:
  name: Idempotency-Key
  in: header
  required: false
  schema: {type: string}
",
    )
    .unwrap();
    let run = |format: &str| {
        crate::support::run::idemgen_in(
            dir.path(),
            &["lint", "--no-config", "--format", format, "openapi.yaml"],
        )
    };

    let json = run("json");
    assert_eq!(json.code, 0, "{}", json.stderr);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let by_operation = |name: &str| {
        report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["operation"] == name && d["rule"] == "undeclared-key-header")
            .unwrap_or_else(|| panic!("{name}: {report:#}"))
            .clone()
    };
    let shared = by_operation("createRefund");
    assert_eq!(shared["pointer"], "/paths/~1refunds/post");
    assert_eq!(shared["line"], 5);
    assert_eq!(
        shared["related"],
        serde_json::json!([{
            "message": "the header parameter `Idempotency-Key` is declared here, shared by the operations that reference it",
            "file": "shared/parameters.yaml",
            "line": 2,
            "column": 3,
            "pointer": "shared/parameters.yaml#/IdempotencyKey"
        }])
    );
    // The operation's own parameter: the finding is there, nothing related.
    let own = by_operation("createPayout");
    assert!(own.get("related").is_none(), "{own:#}");
    assert_eq!(own["pointer"], "/paths/~1payouts/post/parameters/0");

    let sarif = run("sarif");
    let sarif: serde_json::Value = serde_json::from_str(&sarif.stdout).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let related: Vec<&serde_json::Value> = results
        .iter()
        .filter_map(|result| result.get("relatedLocations"))
        .collect();
    assert_eq!(related.len(), 1, "{sarif:#}");
    assert_eq!(
        related[0][0]["physicalLocation"]["region"]["startLine"], 2,
        "{sarif:#}"
    );

    let pretty = run("pretty");
    assert!(
        pretty.stdout.contains("╭─[shared/parameters.yaml:2:3]"),
        "{}",
        pretty.stdout
    );
    assert!(pretty.stdout.contains("declared here"), "{}", pretty.stdout);
}
