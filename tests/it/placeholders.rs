//! Fixes never invent numbers: where the spec states no client timeout,
//! retries, server processing time or window, `--fix --unsafe-fixes`
//! writes `TODO:` placeholders that lint as errors (`contract-invalid`,
//! naming the field and what to decide), so an overlay of guessed
//! contracts is never silently clean; what the spec does state (a key
//! kept "for 45 days") is taken from it, and the key the API already
//! takes stays optional, its schema untouched.

use std::path::Path;

use serde_json::Value;

use crate::support::run::idemgen_in;

const SPEC: &str = r#"openapi: 3.1.0
info: {title: Payments, version: "1"}
security: [{apiKey: []}]
components:
  securitySchemes:
    apiKey: {type: apiKey, in: header, name: X-Api-Key}
paths:
  /refunds:
    post:
      operationId: createRefund
      parameters:
        - name: Idempotency-Key
          in: header
          required: false
          description: A unique key for the refund. The server stores keys for 45 days.
          schema: {type: string}
      responses:
        "201": {description: created, content: {application/json: {schema: {type: object}}}}
  /payouts:
    post:
      operationId: createPayout
      responses:
        "201": {description: created, content: {application/json: {schema: {type: object}}}}
"#;

fn lint_json(dir: &Path, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["lint", "--no-config", "--format", "json"];
    all.extend_from_slice(args);
    let run = idemgen_in(dir, &all);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    (run.code, serde_json::from_str(&run.stdout).unwrap())
}

fn errors(report: &Value) -> Vec<&Value> {
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect()
}

#[test]
fn a_guessed_overlay_lints_as_errors_until_a_person_fills_in_the_numbers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("openapi.yaml"), SPEC).unwrap();
    let run = idemgen_in(
        dir.path(),
        &[
            "lint",
            "--no-config",
            "--fix",
            "--unsafe-fixes",
            "--overlay",
            "fix.overlay.yaml",
            "openapi.yaml",
        ],
    );
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("openapi.yaml")).unwrap(),
        SPEC,
        "the spec is untouched"
    );
    let overlay = std::fs::read_to_string(dir.path().join("fix.overlay.yaml")).unwrap();
    // Stated in the key's description: taken, not guessed.
    assert!(overlay.contains("window: 45d"), "{overlay}");
    // No timing number the spec does not state.
    for guess in ["30s", "2m14s", "[1s, 2s, 4s]"] {
        assert!(!overlay.contains(guess), "{guess}: {overlay}");
    }
    // The existing optional key: kept optional, its schema not narrowed.
    let refunds_key = overlay
        .lines()
        .skip_while(|line| !line.contains("$.paths['/refunds']"))
        .take_while(|line| !line.contains("$.paths['/payouts']"))
        .collect::<Vec<_>>()
        .join("\n");
    for narrowing in [
        "pattern",
        "maxLength",
        "required: true\n        description: Idem",
    ] {
        assert!(!refunds_key.contains(narrowing), "{narrowing}: {overlay}");
    }

    let (code, report) = lint_json(
        dir.path(),
        &["--overlay", "fix.overlay.yaml", "openapi.yaml"],
    );
    assert_eq!(code, 1, "placeholders are errors: {report:#}");
    let mut placeholders: Vec<(String, String)> = errors(&report)
        .iter()
        .map(|d| {
            assert_eq!(d["rule"], "contract-invalid", "{d:#}");
            let message = d["message"].as_str().unwrap();
            assert!(message.contains("still a placeholder"), "{message}");
            assert!(d["help"].as_str().unwrap().starts_with("decide"), "{d:#}");
            assert_eq!(
                d["file"], "fix.overlay.yaml",
                "points where to fill it in: {d:#}"
            );
            (
                d["pointer"].as_str().unwrap().to_string(),
                message.split('`').nth(1).unwrap().to_string(),
            )
        })
        .collect();
    placeholders.sort();
    assert_eq!(
        placeholders,
        [
            ("/paths/~1payouts/post/x-idempotency/window", "window"),
            ("/x-idempotency/client/retries", "client.retries"),
            ("/x-idempotency/client/timeout", "client.timeout"),
            (
                "/x-idempotency/server/max-processing",
                "server.max-processing"
            ),
        ]
        .map(|(pointer, field)| (pointer.to_string(), field.to_string()))
    );

    // A person decides the numbers: the contracts lint without an error.
    let filled = crate::corpus_fix::fill_placeholders(&overlay);
    assert!(!filled.contains("TODO"), "{filled}");
    std::fs::write(dir.path().join("fix.overlay.yaml"), filled).unwrap();
    let (code, report) = lint_json(
        dir.path(),
        &["--overlay", "fix.overlay.yaml", "openapi.yaml"],
    );
    assert_eq!(code, 0, "{report:#}");
    assert!(errors(&report).is_empty(), "{report:#}");
}

/// Numbers given on the command line are decisions, written as given.
#[test]
fn numbers_given_on_the_command_line_are_written() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("openapi.yaml"), SPEC).unwrap();
    let run = idemgen_in(
        dir.path(),
        &[
            "lint",
            "--no-config",
            "--fix",
            "--unsafe-fixes",
            "--timeout",
            "5s",
            "--retries",
            "200ms,800ms",
            "--max-processing",
            "3s",
            "openapi.yaml",
        ],
    );
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    let fixed = std::fs::read_to_string(dir.path().join("openapi.yaml")).unwrap();
    assert!(!fixed.contains("TODO"), "{fixed}");
    assert!(fixed.contains("timeout: 5s"), "{fixed}");
    // The article's example: 2 × (5 s + 1 s + 3 s).
    assert!(fixed.contains("window: 18s"), "{fixed}");
    let (code, report) = lint_json(dir.path(), &["openapi.yaml"]);
    assert_eq!(code, 0, "{report:#}");
    assert!(errors(&report).is_empty(), "{report:#}");
}
