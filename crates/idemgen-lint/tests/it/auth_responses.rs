//! `auth-responses-undeclared`: a secured operation with a contract
//! declares the 401 it answers a refused credential, and the 403 when its
//! requirement lists scopes; the fix declares what is missing.

use idemgen_lint::LintOptions;
use idemgen_lint::fix_loop::fix_document;

use crate::support::findings;

const RULE: &str = "auth-responses-undeclared";

/// `POST /pay` with a contract that lints clean apart from this rule;
/// `security` goes at the top level, `responses` are added to the
/// operation's.
fn spec(security: &str, responses: &str) -> String {
    format!(
        "openapi: 3.1.0
info: {{title: t, version: '1'}}
x-idempotency:
  client: {{timeout: 5s}}
  server: {{max-processing: 3s}}
{security}paths:
  /pay:
    post:
      operationId: pay
      parameters:
        - name: Idempotency-Key
          in: header
          required: true
          schema: {{type: string, maxLength: 128, pattern: '^pay:[0-9a-fA-F]{{8}}-[0-9a-fA-F]{{4}}-4[0-9a-fA-F]{{3}}-[89abAB][0-9a-fA-F]{{3}}-[0-9a-fA-F]{{12}}$'}}
      x-idempotency:
        key: {{in: header, name: Idempotency-Key, format: 'pay:{{uuid}}', scope: [principal]}}
        window: 16s
      responses:
        '200': {{description: ok, content: {{application/json: {{schema: {{type: object}}}}}}}}
        '400': {{description: bad key}}
        '409': {{description: conflict}}
        '429': {{description: busy, headers: {{Retry-After: {{required: true, schema: {{type: integer}}}}}}}}
{responses}components:
  securitySchemes:
    apiKey: {{type: apiKey, in: header, name: X-Api-Key}}
    oauth:
      type: oauth2
      flows: {{clientCredentials: {{tokenUrl: 'https://auth.example.com/token', scopes: {{pay: pay}}}}}}
"
    )
}

/// This rule's findings, by message.
fn messages(text: &str) -> Vec<String> {
    findings(text)
        .into_iter()
        .filter(|finding| finding.rule == RULE)
        .map(|finding| finding.message)
        .collect()
}

#[test]
fn a_secured_operation_declares_401_and_with_scopes_403() {
    // Global security, no scopes: 401.
    assert_eq!(
        messages(&spec("security: [{apiKey: []}]\n", "")),
        ["pay: it requires credentials, but 401 is not declared in responses"]
    );
    // Scopes listed: 401 and 403.
    assert_eq!(
        messages(&spec("security: [{oauth: [pay]}]\n", "")),
        ["pay: it requires credentials and scopes, but 401 and 403 are not declared in responses"]
    );
    // Only 403 left.
    assert_eq!(
        messages(&spec(
            "security: [{oauth: [pay]}]\n",
            "        '401': {description: no token}\n"
        )),
        ["pay: it requires credentials and scopes, but 403 is not declared in responses"]
    );
}

#[test]
fn declared_answers_a_range_and_open_operations_are_quiet() {
    let quiet = [
        // Declared.
        spec(
            "security: [{oauth: [pay]}]\n",
            "        '401': {description: no token}\n        '403': {description: no scope}\n",
        ),
        // A range declares both.
        spec(
            "security: [{oauth: [pay]}]\n",
            "        4XX: {description: refused}\n",
        ),
        // An empty scope list asks for no 403.
        spec(
            "security: [{oauth: []}]\n",
            "        '401': {description: no token}\n",
        ),
        // No security, `security: []`, only the anonymous `{}`.
        spec("", ""),
        spec("security: []\n", ""),
        spec("security: [{}]\n", ""),
    ];
    for text in &quiet {
        assert_eq!(messages(text), Vec::<String>::new(), "{text}");
    }
    // The operation's own `security: []` overrides the document's.
    let open = spec("security: [{apiKey: []}]\n", "").replace(
        "      operationId: pay\n",
        "      operationId: pay\n      security: []\n",
    );
    assert_eq!(messages(&open), Vec::<String>::new());
    // An operation without a contract is outside it.
    let no_contract = spec("security: [{apiKey: []}]\n", "").replace(
        "      x-idempotency:\n        key: {in: header, name: Idempotency-Key, format: 'pay:{uuid}', scope: [principal]}\n        window: 16s\n",
        "      x-idempotency: false\n",
    );
    assert_eq!(messages(&no_contract), Vec::<String>::new());
}

#[test]
fn the_fix_declares_what_is_missing_and_nothing_else() {
    let before = spec("security: [{oauth: [pay]}]\n", "");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, &before).unwrap();
    let outcome = fix_document(&path, &LintOptions::default(), false).unwrap();
    let after = &outcome.files.first().expect("a fixed file").after;
    assert!(
        after.contains(
            "        '401':\n          description: The credentials are missing or were not accepted; nothing was processed and the key was not claimed.\n"
        ) || after.contains("\"401\":\n          description: The credentials are missing"),
        "{after}"
    );
    assert!(after.contains("403"), "{after}");
    assert_eq!(messages(after), Vec::<String>::new(), "{after}");
    // Everything else is as it was.
    let without_new: String = after
        .lines()
        .filter(|line| {
            !line.contains("401") && !line.contains("403") && !line.contains("The credentials")
        })
        .map(|line| format!("{line}\n"))
        .collect();
    assert_eq!(without_new, before);
}
