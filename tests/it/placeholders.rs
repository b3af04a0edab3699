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

/// `SPEC` with one more keyed write, `createCharge`.
fn with_charges() -> String {
    format!(
        "{SPEC}  /charges:
    post:
      operationId: createCharge
      parameters:
        - {{name: Idempotency-Key, in: header, required: true, schema: {{type: string}}}}
      responses:
        \"201\": {{description: created, content: {{application/json: {{schema: {{type: object}}}}}}}}
"
    )
}

fn fix_through(dir: &Path, overlays: &[&str]) -> crate::support::run::Run {
    let mut args = vec!["lint", "--no-config", "--fix", "--unsafe-fixes"];
    for overlay in overlays {
        args.extend(["--overlay", overlay]);
    }
    args.push("openapi.yaml");
    let run = idemgen_in(dir, &args);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    run
}

/// Running the fix again, after a person filled in the placeholders and
/// commented the overlay, never loses either: the spec is read through
/// the overlay, nothing new leaves the file as it is, and a new operation
/// only appends its actions (in YAML and in JSON).
#[test]
fn a_second_fix_run_keeps_what_a_person_wrote_and_adds_only_what_is_new() {
    for out in ["fix.overlay.yaml", "fix.overlay.json"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("openapi.yaml"), SPEC).unwrap();
        fix_through(dir.path(), &[out]);
        let path = dir.path().join(out);
        let filled = crate::corpus_fix::fill_placeholders(&std::fs::read_to_string(&path).unwrap());
        let decided = if out.ends_with(".json") {
            filled
        } else {
            format!("# decided by the payments team\n{filled}")
        };
        std::fs::write(&path, &decided).unwrap();

        let run = fix_through(dir.path(), &[out]);
        assert!(
            run.stderr.contains("nothing new to fix"),
            "{out}: {}",
            run.stderr
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), decided, "{out}");

        std::fs::write(dir.path().join("openapi.yaml"), with_charges()).unwrap();
        let run = fix_through(dir.path(), &[out]);
        assert!(run.stderr.contains("added"), "{out}: {}", run.stderr);
        let after = std::fs::read_to_string(&path).unwrap();
        let kept = if out.ends_with(".json") {
            // The closing `]` and `}` move behind the new actions.
            decided
                .trim_end()
                .trim_end_matches('}')
                .trim_end()
                .trim_end_matches(']')
                .trim_end()
        } else {
            decided.trim_end()
        };
        assert!(after.starts_with(kept), "{out}: {after}");
        assert!(after.contains("$.paths['/charges'].post"), "{out}: {after}");
        // The numbers decided before are read: the new contract's window
        // is worked out from them, not left as a placeholder.
        assert!(!after.contains("TODO"), "{out}: {after}");
        let (code, report) = lint_json(dir.path(), &["--overlay", out, "openapi.yaml"]);
        assert_eq!(code, 0, "{report:#}");
        assert!(errors(&report).is_empty(), "{out}: {report:#}");
        let charge = contracts_of(dir.path(), out, "createCharge");
        assert!(
            charge["window_ms"]
                .as_u64()
                .is_some_and(|window| window > 0),
            "{out}: {charge:#}"
        );
        assert_eq!(charge["verdict"], "ok", "{out}: {charge:#}");
    }
}

/// `idemgen window --format json`'s contract of `operation`, read
/// through `overlay`.
fn contracts_of(dir: &Path, overlay: &str, operation: &str) -> Value {
    let run = idemgen_in(
        dir,
        &[
            "window",
            "--no-config",
            "--format",
            "json",
            "--overlay",
            overlay,
            "openapi.yaml",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    report["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|contract| contract["operation"] == operation)
        .unwrap_or_else(|| panic!("{operation}: {report:#}"))
        .clone()
}

/// The overlays before the last `--overlay` are read, as `gen` reads
/// them: the fixes are made to the spec as they leave it.
#[test]
fn fixes_are_made_to_the_spec_as_the_overlays_before_the_last_leave_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("openapi.yaml"), SPEC).unwrap();
    std::fs::write(
        dir.path().join("trim.yaml"),
        "overlay: 1.1.0\ninfo: {title: t, version: '1'}\nactions:\n  - target: $.paths['/refunds']\n    remove: true\n",
    )
    .unwrap();
    fix_through(dir.path(), &["trim.yaml", "fix.overlay.yaml"]);
    let overlay = std::fs::read_to_string(dir.path().join("fix.overlay.yaml")).unwrap();
    assert!(overlay.contains("$.paths['/payouts']"), "{overlay}");
    assert!(!overlay.contains("refunds"), "{overlay}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("openapi.yaml")).unwrap(),
        SPEC
    );
}
