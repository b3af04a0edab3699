//! `retry-after` as the wire carries it: the `Retry-After` header holds
//! whole seconds, so a generated service rounds the contract's delay up.
//! The lint says what will be sent, offers to write that, and checks the
//! delay sent (not the one written) against the client timeout and the
//! window, with help a sub-second timeout can follow.

use idemgen_diagnostics::Diagnostic;
use idemgen_lint::LintOptions;
use idemgen_lint::fix_loop::fix_document;

use crate::support::findings;

/// `POST /orders` with a client `timeout`, a `window` and an in-progress
/// `retry_after`; everything else as the rules want it.
fn spec(timeout: &str, window: &str, retry_after: &str) -> String {
    format!(
        "openapi: 3.1.0
info: {{title: t, version: '1'}}
x-idempotency:
  client: {{timeout: {timeout}, retries: [100ms]}}
  server: {{max-processing: 100ms}}
paths:
  /orders:
    post:
      operationId: createOrder
      parameters:
        - name: Idempotency-Key
          in: header
          required: true
          schema: {{type: string, maxLength: 64, pattern: '^ord:[0-9a-fA-F]{{8}}-[0-9a-fA-F]{{4}}-4[0-9a-fA-F]{{3}}-[89abAB][0-9a-fA-F]{{3}}-[0-9a-fA-F]{{12}}$'}}
      x-idempotency:
        key: {{in: header, name: Idempotency-Key, format: 'ord:{{uuid}}', max-length: 64}}
        window: {window}
        responses:
          in-progress: {{status: 429, retry-after: {retry_after}}}
      responses:
        '201':
          description: created
          content:
            application/json:
              schema: {{type: object}}
        '400': {{description: no key}}
        '409': {{description: key reused}}
        '429':
          description: in progress
          headers:
            Retry-After: {{required: true, schema: {{type: integer, minimum: 1}}}}
"
    )
}

fn of_rule<'a>(found: &'a [Diagnostic], rule: &str) -> Vec<&'a Diagnostic> {
    found.iter().filter(|d| d.rule == rule).collect()
}

/// Every finding about the in-progress delay.
fn retry_after_findings(text: &str) -> Vec<Diagnostic> {
    findings(text)
        .into_iter()
        .filter(|d| d.rule.starts_with("retry-after"))
        .collect()
}

#[test]
fn a_delay_the_header_cannot_carry_says_what_is_sent_and_the_fix_writes_it() {
    for (written, sent, fixed) in [("500ms", 1, "1s"), ("1500ms", 2, "2s"), ("PT0.2S", 1, "1s")] {
        let before = spec("5s", "30s", written);
        let found = retry_after_findings(&before);
        assert_eq!(found.len(), 1, "{written}: {found:#?}");
        let finding = &found[0];
        assert_eq!(finding.rule, "retry-after-not-whole-seconds");
        assert!(
            finding
                .message
                .contains(&format!("is sent as `Retry-After: {sent}`")),
            "{}",
            finding.message
        );
        assert!(
            finding.help.as_deref().unwrap().contains(fixed),
            "{finding:#?}"
        );
        assert!(finding.fix.is_some(), "{written}: no fix");

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spec.yaml");
        std::fs::write(&path, &before).unwrap();
        let outcome = fix_document(&path, &LintOptions::default(), false).unwrap();
        assert!(!outcome.unfinished);
        let after = &outcome.files.first().expect("retry-after was fixed").after;
        assert!(
            after.contains(&format!("retry-after: {fixed}}}")),
            "{after}"
        );
        assert!(retry_after_findings(after).is_empty(), "{after}");
    }
    // Whole seconds, whichever way written, are sent as written.
    for whole in ["1s", "2s", "PT3S", "1000ms"] {
        let found = retry_after_findings(&spec("5s", "30s", whole));
        assert!(found.is_empty(), "{whole}: {found:#?}");
    }
}

#[test]
fn the_delay_checked_against_the_timeout_is_the_one_sent() {
    // 500ms fits an 800ms timeout as written, but 1s is what clients are
    // told to wait.
    let found = findings(&spec("800ms", "2s", "500ms"));
    let range = of_rule(&found, "retry-after-out-of-range");
    assert_eq!(range.len(), 1, "{found:#?}");
    assert!(
        range[0]
            .message
            .contains("sent as `Retry-After: 1`, longer than the client timeout 800ms"),
        "{}",
        range[0].message
    );
    // The help can be followed: no whole-second delay fits, so it says
    // what to change instead of asking for a delay between 1s and 800ms.
    let help = range[0].help.as_deref().unwrap();
    assert!(!help.contains("between 1s and"), "{help}");
    assert!(help.contains("no in-progress delay fits"), "{help}");
    assert!(help.contains("raise `client.timeout` to 1s"), "{help}");
    // Following it clears the finding: a 1s timeout (and a window to match).
    let found = findings(&spec("1s", "3s", "1s"));
    assert!(
        of_rule(&found, "retry-after-out-of-range").is_empty(),
        "{found:#?}"
    );
}

#[test]
fn a_delay_over_the_timeout_gets_a_range_it_can_pick_from() {
    let found = findings(&spec("5s", "30s", "10s"));
    let range = of_rule(&found, "retry-after-out-of-range");
    assert_eq!(range.len(), 1, "{found:#?}");
    assert!(
        range[0]
            .message
            .contains("is longer than the client timeout 5s"),
        "{}",
        range[0].message
    );
    let help = range[0].help.as_deref().unwrap();
    assert!(help.contains("from 1s to 5s"), "{help}");
    // A 2.5s timeout: whole seconds up to 2s fit.
    let found = findings(&spec("2500ms", "12s", "3s"));
    let help = of_rule(&found, "retry-after-out-of-range")[0]
        .help
        .clone()
        .unwrap();
    assert!(help.contains("from 1s to 2s"), "{help}");
}
