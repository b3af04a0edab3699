//! `in-transaction-calls-out`: the contract's claim mode against
//! what it says the business step calls (docs/src/contract.md, "When the
//! claim commits"): `in-transaction` is for steps whose effects are all
//! in this database; an operation whose `server.downstream` lists other
//! systems is warned, at its `store.claim`, and told to use `committed`.

use idemgen_diagnostics::Severity;

use crate::support::findings;

const RULE: &str = "in-transaction-calls-out";

/// `POST /pay` with a contract that lints clean apart from this rule:
/// `server` continues the document's `server` mapping (after its
/// `max-processing`), `document` adds to the document's `x-idempotency`.
fn spec(server: &str, document: &str) -> String {
    format!(
        "openapi: 3.1.0
info: {{title: t, version: '1'}}
x-idempotency:
  client: {{timeout: 5s}}
  server: {{max-processing: 3s{server}}}
{document}paths:
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
        '401': {{description: refused}}
        '409': {{description: conflict}}
        '429': {{description: busy, headers: {{Retry-After: {{required: true, schema: {{type: integer}}}}}}}}
components:
  securitySchemes:
    apiKey: {{type: apiKey, in: header, name: X-Api-Key}}
security:
  - apiKey: []
"
    )
}

const CALLS_PROVIDER: &str = ", downstream: [payment-provider]";
const IN_TRANSACTION: &str = "  store: {claim: in-transaction}\n";
const COMMITTED: &str = "  store: {claim: committed}\n";

#[test]
fn the_spec_lints_clean_without_the_combination() {
    for (server, document) in [
        ("", ""),
        ("", IN_TRANSACTION),
        (CALLS_PROVIDER, ""),
        (CALLS_PROVIDER, COMMITTED),
        (", downstream: []", IN_TRANSACTION),
    ] {
        let text = spec(server, document);
        let found: Vec<_> = findings(&text)
            .into_iter()
            .map(|finding| (finding.rule, finding.message))
            .collect();
        assert!(found.is_empty(), "{found:?}\n{text}");
    }
}

#[test]
fn an_in_transaction_claim_whose_step_calls_out_is_warned_at_its_claim() {
    let text = spec(CALLS_PROVIDER, IN_TRANSACTION);
    let found = findings(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    let finding = &found[0];
    assert_eq!(finding.rule, RULE);
    assert_eq!(finding.severity, Severity::Warning);
    assert_eq!(finding.pointer, "/x-idempotency/store/claim");
    assert!(
        finding.message.contains("`payment-provider`")
            && finding.message.contains("rolled-back claim")
            && finding.message.contains("first call may still be running"),
        "{}",
        finding.message
    );
    let help = finding.help.as_deref().unwrap_or_default();
    assert!(help.contains("`store.claim: committed`"), "{help}");
}

/// The document says what the step calls, the operation chooses its
/// claim (and the other way round): the merged contract is what counts,
/// and the finding points where the claim was written.
#[test]
fn the_merged_contract_is_what_counts() {
    let text = spec(CALLS_PROVIDER, "").replace(
        "        window: 16s\n",
        "        window: 16s\n        store: {claim: in-transaction}\n",
    );
    let found = findings(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].rule, RULE);
    assert_eq!(
        found[0].pointer,
        "/paths/~1pay/post/x-idempotency/store/claim"
    );

    let text = spec("", IN_TRANSACTION).replace(
        "        window: 16s\n",
        "        window: 16s\n        server: {downstream: [ledger-api, mailer]}\n",
    );
    let found = findings(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].message.contains("`ledger-api`, `mailer`"),
        "{}",
        found[0].message
    );

    // The operation's own `committed` wins over the document's choice.
    let text = spec(CALLS_PROVIDER, IN_TRANSACTION).replace(
        "        window: 16s\n",
        "        window: 16s\n        store: {claim: committed}\n",
    );
    let found = findings(&text);
    assert!(found.is_empty(), "{found:?}");
}

/// `server.downstream` is a list of names: anything else is
/// `contract-invalid`, naming the field.
#[test]
fn a_downstream_that_is_not_a_list_of_names_is_contract_invalid() {
    for server in [", downstream: payment-provider", ", downstream: ['']"] {
        let text = spec(server, IN_TRANSACTION);
        let found = findings(&text);
        assert!(
            found
                .iter()
                .any(|finding| finding.rule == "contract-invalid"
                    && finding.message.contains("server.downstream")),
            "{server}: {found:?}"
        );
        assert!(
            !found.iter().any(|finding| finding.rule == RULE),
            "{server}: a field found invalid is not also linted: {found:?}"
        );
    }
}
