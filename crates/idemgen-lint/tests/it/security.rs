//! Who a stored answer is replayed to: the security requirement in force
//! (the operation's `security`, else the document's), the
//! `replay-unauthenticated` rule that reads it, and its fix, which adds
//! `principal` to the `key.scope` list the operation uses.

use std::path::Path;

use idemgen_diagnostics::Applicability;
use idemgen_diagnostics::{Diagnostic, Severity};
use idemgen_lint::LintOptions;
use idemgen_lint::fix_loop::fix_document;
use idemgen_spec::Workspace;

use crate::support::{findings, workspace_root};

const RULE: &str = "replay-unauthenticated";

/// A document whose `POST /pay` has a contract that lints clean apart
/// from its scope. `document` goes after `info`, `operation` and `block`
/// into the operation and its `x-idempotency` (all at their indentation).
fn spec(document: &str, operation: &str, block: &str) -> String {
    format!(
        "openapi: 3.1.0
info: {{title: t, version: '1'}}
x-idempotency:
  client: {{timeout: 5s}}
  server: {{max-processing: 3s}}
{document}paths:
  /pay:
    post:
      operationId: pay
{operation}      parameters:
        - name: Idempotency-Key
          in: header
          required: true
          schema: {{type: string, maxLength: 128, pattern: '^pay:[0-9a-fA-F]{{8}}-[0-9a-fA-F]{{4}}-4[0-9a-fA-F]{{3}}-[89abAB][0-9a-fA-F]{{3}}-[0-9a-fA-F]{{12}}$'}}
      x-idempotency:
        key: {{in: header, name: Idempotency-Key, format: 'pay:{{uuid}}'}}
{block}        window: 16s
      responses:
        '200': {{description: ok, content: {{application/json: {{schema: {{type: object}}}}}}}}
        '400': {{description: bad key}}
        '401': {{description: no or bad credentials}}
        '409': {{description: conflict}}
        '429': {{description: busy, headers: {{Retry-After: {{required: true, schema: {{type: integer}}}}}}}}
components:
  securitySchemes:
    apiKey: {{type: apiKey, in: header, name: X-Api-Key}}
"
    )
}

/// The finding of this rule, asserting it is the only finding.
fn only_finding(text: &str) -> Option<Diagnostic> {
    let found = findings(text);
    assert!(
        found.iter().all(|finding| finding.rule == RULE),
        "{found:#?}\n{text}"
    );
    assert!(found.len() <= 1, "{found:#?}");
    found.into_iter().next()
}

const ANYONE: &str =
    "pay: no security requirement, so stored responses are replayed to anyone holding the key";
const AUTHENTICATED: &str = "pay: `key.scope` has no `principal`, so stored responses are replayed to any authenticated caller holding the key";

#[test]
fn without_a_security_requirement_anyone_holding_the_key_gets_the_answer() {
    let cases = [
        ("", "", "no security anywhere"),
        ("security: []\n", "", "an empty document requirement"),
        ("security: [{}]\n", "", "only anonymous access"),
        (
            "security: [{apiKey: []}]\n",
            "      security: []\n",
            "the operation opts out",
        ),
        (
            "",
            "      security:\n        - {}\n",
            "the operation allows anonymous access only",
        ),
    ];
    for (document, operation, case) in cases {
        let finding = only_finding(&spec(document, operation, ""))
            .unwrap_or_else(|| panic!("{case}: no finding"));
        assert_eq!(finding.message, ANYONE, "{case}");
        assert_eq!(finding.severity, Severity::Warning, "{case}");
        assert_eq!(finding.pointer, "/paths/~1pay/post/x-idempotency", "{case}");
        assert!(finding.fix.is_none(), "{case}: no fix declares security");
    }
    // A scope the caller sets does not help.
    let finding = only_finding(&spec("", "", "").replace(
        "format: 'pay:{uuid}'}",
        "format: 'pay:{uuid}', scope: [header:X-Tenant]}",
    ))
    .expect("a request scope is not a principal");
    assert_eq!(finding.message, ANYONE);
    assert_eq!(finding.pointer, "/paths/~1pay/post/x-idempotency/key/scope");
}

#[test]
fn with_security_but_no_principal_scope_any_authenticated_caller_gets_it() {
    let cases = [
        (
            "security: [{apiKey: []}]\n",
            "",
            "the document's requirement",
        ),
        (
            "",
            "      security: [{apiKey: []}]\n",
            "the operation's own",
        ),
        (
            "security: [{}]\n",
            "      security: [{apiKey: []}]\n",
            "the operation's overrides the document's anonymous one",
        ),
        (
            "security: [{apiKey: []}, {}]\n",
            "",
            "a scheme offered next to anonymous access",
        ),
    ];
    for (document, operation, case) in cases {
        let finding = only_finding(&spec(document, operation, ""))
            .unwrap_or_else(|| panic!("{case}: no finding"));
        assert_eq!(finding.message, AUTHENTICATED, "{case}");
        let fix = finding.fix.expect("fixable");
        assert_eq!(fix.applicability, Applicability::Safe, "{case}");
    }
}

#[test]
fn a_principal_scope_is_quiet_wherever_it_is_written() {
    let secured = "security: [{apiKey: []}]\n";
    let operation_level = spec(secured, "", "").replace(
        "format: 'pay:{uuid}'}",
        "format: 'pay:{uuid}', scope: [header:X-Tenant, principal]}",
    );
    assert_eq!(only_finding(&operation_level), None);
    let document_level = spec(secured, "", "").replace(
        "x-idempotency:\n  client:",
        "x-idempotency:\n  key: {scope: [principal]}\n  client:",
    );
    assert_eq!(only_finding(&document_level), None);
    // Without security, `principal` names no one, but the key is scoped
    // as the contract asks: this rule has nothing more to say.
    let unsecured = spec("", "", "").replace(
        "format: 'pay:{uuid}'}",
        "format: 'pay:{uuid}', scope: [principal]}",
    );
    assert_eq!(only_finding(&unsecured), None);
}

#[test]
fn an_operation_without_a_contract_is_not_this_rules_business() {
    let text = spec("", "", "").replace(
        "      x-idempotency:\n        key: {in: header, name: Idempotency-Key, format: 'pay:{uuid}'}\n        window: 16s\n",
        "      x-idempotency: false\n",
    );
    assert!(
        findings(&text).iter().all(|finding| finding.rule != RULE),
        "{:#?}",
        findings(&text)
    );
}

/// `lint --fix` on `text`, in a temporary file: the text it leaves.
fn fixed(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, text).unwrap();
    let outcome = fix_document(&path, &LintOptions::default(), false).unwrap();
    assert!(!outcome.unfinished);
    let after = outcome
        .files
        .first()
        .map_or_else(|| text.to_string(), |file| file.after.clone());
    assert_eq!(only_finding(&after), None, "fixed:\n{after}");
    after
}

#[test]
fn the_fix_writes_the_scope_into_the_operations_key_when_none_is_written() {
    let before = spec("security: [{apiKey: []}]\n", "", "");
    assert_eq!(
        fixed(&before),
        before.replace(
            "format: 'pay:{uuid}'}",
            "format: 'pay:{uuid}', scope: [principal]}"
        )
    );
    // A key inherited from the document gets an operation-level `key`.
    let inherited = before
        .replace(
            "x-idempotency:\n  client:",
            "x-idempotency:\n  key: {in: header, name: Idempotency-Key, format: 'pay:{uuid}'}\n  client:",
        )
        .replace(
            "        key: {in: header, name: Idempotency-Key, format: 'pay:{uuid}'}\n",
            "",
        );
    assert_eq!(
        fixed(&inherited),
        inherited.replace(
            "        window: 16s\n",
            "        window: 16s\n        key:\n          scope: [principal]\n"
        )
    );
}

#[test]
fn the_fix_extends_the_operations_own_list_in_its_style() {
    let flow = spec("security: [{apiKey: []}]\n", "", "").replace(
        "format: 'pay:{uuid}'}",
        "format: 'pay:{uuid}', scope: [header:X-Tenant]}",
    );
    assert_eq!(
        fixed(&flow),
        flow.replace("[header:X-Tenant]", "[header:X-Tenant, principal]")
    );
    let block = spec("security: [{apiKey: []}]\n", "", "").replace(
        "        key: {in: header, name: Idempotency-Key, format: 'pay:{uuid}'}\n",
        "        key:\n          in: header\n          name: Idempotency-Key\n          format: 'pay:{uuid}'\n          scope:\n            - header:X-Tenant   # the tenant\n",
    );
    assert_eq!(
        fixed(&block),
        block.replace(
            "            - header:X-Tenant   # the tenant\n",
            "            - header:X-Tenant   # the tenant\n            - principal\n"
        )
    );
}

/// A second operation, `POST /refund`, whose contract inherits everything
/// but its window from the document; `security` is its own requirement.
fn with_refund(text: &str, security: &str) -> String {
    text.replace(
        "components:\n",
        &format!(
            "  /refund:
    post:
      operationId: refund
{security}      parameters:
        - name: Idempotency-Key
          in: header
          required: true
          schema: {{type: string, maxLength: 128, pattern: '^pay:[0-9a-fA-F]{{8}}-[0-9a-fA-F]{{4}}-4[0-9a-fA-F]{{3}}-[89abAB][0-9a-fA-F]{{3}}-[0-9a-fA-F]{{12}}$'}}
      x-idempotency: {{window: 16s}}
      responses:
        '200': {{description: ok, content: {{application/json: {{schema: {{type: object}}}}}}}}
        '400': {{description: bad key}}
        '401': {{description: no or bad credentials}}
        '409': {{description: conflict}}
        '429': {{description: busy, headers: {{Retry-After: {{required: true, schema: {{type: integer}}}}}}}}
components:
"
        ),
    )
}

#[test]
fn a_document_level_list_is_extended_when_everyone_who_inherits_it_is_authenticated() {
    let shared = spec("security: [{apiKey: []}]\n", "", "")
        .replace(
            "x-idempotency:\n  client:",
            "x-idempotency:\n  key: {in: header, name: Idempotency-Key, format: 'pay:{uuid}', scope: [header:X-Tenant]}\n  client:",
        )
        .replace(
            "        key: {in: header, name: Idempotency-Key, format: 'pay:{uuid}'}\n",
            "",
        );
    let both = with_refund(&shared, "");
    let found = findings(&both);
    assert_eq!(found.len(), 2, "{found:#?}");
    for finding in &found {
        assert_eq!(
            finding.message.split_once(':').unwrap().1,
            AUTHENTICATED.split_once(':').unwrap().1
        );
        assert_eq!(finding.pointer, "/x-idempotency/key/scope");
    }
    // Both operations want the same edit: it is made once.
    assert_eq!(
        fixed(&both),
        both.replace(
            "scope: [header:X-Tenant]}",
            "scope: [header:X-Tenant, principal]}"
        )
    );

    // `refund` opts out of security: the shared list stays as it is and
    // `pay` gets its own copy with `principal`.
    let mixed = with_refund(&shared, "      security: []\n");
    let after_pay = mixed.replace(
        "      x-idempotency:\n        window: 16s\n",
        "      x-idempotency:\n        window: 16s\n        key:\n          scope: [header:X-Tenant, principal]\n",
    );
    assert_ne!(after_pay, mixed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, &mixed).unwrap();
    let outcome = fix_document(&path, &LintOptions::default(), false).unwrap();
    assert_eq!(outcome.files[0].after, after_pay);
    let left: Vec<_> = findings(&after_pay)
        .into_iter()
        .map(|finding| (finding.operation, finding.message))
        .collect();
    assert_eq!(
        left,
        [(
            Some("refund".to_string()),
            "refund: no security requirement, so stored responses are replayed to anyone holding the key".to_string()
        )]
    );
}

#[test]
fn the_shipped_broken_example_fires_and_its_fixed_counterpart_does_not() {
    let broken = workspace_root().join("examples/broken/replay-unauthenticated.yaml");
    let fixed_path = workspace_root().join("examples/broken/fixed/replay-unauthenticated.yaml");
    let text = std::fs::read_to_string(&broken).unwrap();
    let found = findings(&text);
    let rules: Vec<&str> = found.iter().map(|finding| finding.rule).collect();
    assert_eq!(rules, [RULE]);
    assert_eq!(
        found[0].message,
        "onPayCallback: `key.scope` has no `principal`, so stored responses are replayed to any authenticated caller holding the key"
    );
    let fixed_text = std::fs::read_to_string(&fixed_path).unwrap();
    assert!(
        findings(&fixed_text).is_empty(),
        "{:#?}",
        findings(&fixed_text)
    );

    // `lint --fix` turns the broken one into the fixed one: the same
    // document, comments and title aside.
    let after = fixed(&text);
    let tree = |text: &str, title: &str| {
        let workspace = Workspace::from_text(
            Path::new("/nonexistent/spec.yaml"),
            "spec.yaml".into(),
            text.into(),
        )
        .unwrap();
        let mut json = workspace.root().to_json();
        json["info"]["title"] = title.into();
        json
    };
    assert_eq!(tree(&after, "t"), tree(&fixed_text, "t"));
    assert_ne!(tree(&text, "t"), tree(&fixed_text, "t"));
    assert!(
        after.contains("scope: [header:X-Merchant-Id, principal]"),
        "{after}"
    );
}
