//! `lint --fix` adds what a spec lacks and keeps what it says: a value the
//! author wrote is changed only where it contradicts the contract the
//! author wrote, never to fit a contract the fix itself invented.

use idemgen_lint::LintOptions;
use idemgen_lint::fix_loop::fix_document;

/// Found by the `fix` fuzz target: an `Idempotency-Key` header whose
/// schema spells its keys (`pay:{date}:{uuid}`) and no `x-idempotency`
/// block. The fix guessed a template of its own (`on-pay:{uuid}`) and, in
/// its next pass, rewrote the author's `pattern` to match it.
#[test]
fn a_key_pattern_the_author_wrote_becomes_the_template_not_overwritten() {
    let pattern = "^pay:[0-9]{4}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01]):[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$";
    let spec = format!(
        r#"openapi: 3.1.0
info: {{title: Payments, version: "1"}}
paths:
  /pay:
    post:
      operationId: onPay
      parameters:
        - name: Idempotency-Key
          in: header
          required: true
          schema: {{type: string, maxLength: 64, pattern: "{pattern}"}}
      responses:
        "200": {{description: ok}}
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.yaml");
    std::fs::write(&path, &spec).unwrap();
    let outcome = fix_document(&path, &LintOptions::default(), true).unwrap();
    let fixed = &outcome.files[0].after;
    assert!(
        fixed.contains(&format!("pattern: \"{pattern}\"")),
        "the author's pattern is kept:\n{fixed}"
    );
    assert!(
        fixed.contains("format: pay:{date}:{uuid}")
            || fixed.contains("format: \"pay:{date}:{uuid}\""),
        "the contract's template is the one the pattern spells:\n{fixed}"
    );
}

/// Found by the `fix` fuzz target: in `server: {max-processing:!3s}` the
/// one key (`max-processing:!3s`, a plain scalar: no blank after the colon)
/// has no value, and the fix that adds `max-processing` wrote it after the
/// closing brace: `{max-processing:!3s}, max-processing: 30s`, which no
/// longer loads. Text added to a flow mapping goes inside its braces.
#[test]
fn an_entry_added_to_a_flow_mapping_whose_last_key_has_no_value_stays_inside_it() {
    let spec = r#"openapi: 3.1.0
info: {title: Payments, version: "1"}
x-idempotency:
  client: {timeout: 5s, retries: [200ms, 800ms]}
  server: {max-processing:!3s}
paths:
  /pay:
    post:
      operationId: onPay
      parameters:
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}
      responses:
        "200": {description: ok}
"#;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.yaml");
    std::fs::write(&path, spec).unwrap();
    let outcome = fix_document(&path, &LintOptions::default(), true)
        .unwrap_or_else(|error| panic!("a fix wrote text that does not load: {}", error.message));
    let fixed = &outcome.files[0].after;
    let server = fixed.lines().find(|line| line.contains("server:")).unwrap();
    assert!(server.trim_end().ends_with('}'), "{server}");
}
