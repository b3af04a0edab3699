//! # fingerprint-misses-input
//!
//! **What it checks.** An operation with a contract whose declared query
//! or header parameters (other than the key, the key's scope and
//! credentials) are covered by `fingerprint.include`: `query` when it
//! declares query parameters, `headers` when it declares header
//! parameters.
//!
//! **Why it matters.** The fingerprint is what tells a retry from another
//! request sent with the same key: the same key with a different
//! fingerprint is a conflict, never a replay. The business code reads
//! every declared parameter, but the default fingerprint covers only the
//! method, the path and the body. Two requests with one key that differ
//! only in a parameter it leaves out (`X-Currency: EUR`, then `USD`) are
//! one request to the service: the second gets the first one's stored
//! answer, a wrong answer served as exactly-once. Credentials
//! (`Authorization`, a scheme's API key) are never hashed, and neither is
//! the key; a scope value already keeps its requests' records apart.
//!
//! Adding an entry changes the fingerprints of the operation's requests:
//! a retry of a request recorded before the change, while its key is
//! still remembered, is answered as a conflict. A header that a
//! client sends anew with every attempt (a request id, a trace header)
//! would make every retry a conflict: keep such a header out of the spec's
//! parameters, or suppress this finding for the operation.
//!
//! **Example fix.** With an `X-Currency` header declared,
//! `fingerprint: {include: [method, path, body]}` (or no `include`, the
//! same default) becomes `include: [method, path, body, headers]`;
//! `lint --fix --unsafe-fixes` writes it in the operation's own block.
use super::prelude::*;
use crate::fix::edit::Editor;
use crate::fix::emit::Emit;
use idemgen_spec::analysis::{InputLocation, RequestInput};
use idemgen_spec::contract::Contract;
use idemgen_spec::contract::model::{FingerprintPart, KeyLocation, ScopeSource};

declare_rule!(
    "fingerprint_misses_input.rs",
    "fingerprint-misses-input",
    Warning,
    "fingerprint.include leaves out declared query or header parameters (a request differing only there is replayed)",
    Check::Operation(check),
    fix = Unsafe
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    // A list that did not parse is contract-invalid's.
    if contract
        .invalid
        .iter()
        .any(|field| matches!(*field, "fingerprint" | "fingerprint.include"))
    {
        return;
    }
    let included = &contract.fingerprint.value;
    let missed: Vec<RequestInput<'_>> = context
        .request_inputs()
        .into_iter()
        .filter(|input| !is_scope(contract, input))
        .filter(|input| !included.contains(&part_of(input.location)))
        .collect();
    if missed.is_empty() {
        return;
    }
    let mut parts: Vec<FingerprintPart> = Vec::new();
    for input in &missed {
        let part = part_of(input.location);
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    let names = missed
        .iter()
        .map(|input| match input.location {
            InputLocation::Header => format!("header `{}`", input.name),
            InputLocation::Query => format!("query parameter `{}`", input.name),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let entries = parts
        .iter()
        .map(|part| format!("`{}`", part.name()))
        .collect::<Vec<_>>()
        .join(" and ");
    sink.report(
        &contract.fingerprint.origin,
        format!(
            "{}: fingerprint.include leaves out {names}: two requests with one key that differ only there \
             get the first one's answer replayed",
            context.name()
        ),
    )
    .with_help(format!(
        "add {entries} to `fingerprint.include`; a header a client sends anew with every attempt (a request id) \
         would make every retry a conflict: keep it out of the parameters, or suppress this finding"
    ))
    .with_label(format!("add {entries}"))
    .with_fix(RULE.offered(include_parts(context, contract, &parts)));
}

fn part_of(location: InputLocation) -> FingerprintPart {
    match location {
        InputLocation::Query => FingerprintPart::Query,
        InputLocation::Header => FingerprintPart::Headers,
    }
}

/// Whether `input` is a value of the key's scope: requests that differ
/// there have records of their own, fingerprint or not.
fn is_scope(contract: &Contract, input: &RequestInput<'_>) -> bool {
    let Some(key) = &contract.key else {
        return false;
    };
    key.scope.iter().any(|source| match &source.value {
        ScopeSource::Request(scope) => match (scope.location, input.location) {
            (KeyLocation::Header, InputLocation::Header) => {
                scope.name.eq_ignore_ascii_case(&input.name)
            }
            (KeyLocation::Query, InputLocation::Query) => scope.name == input.name,
            _ => false,
        },
        ScopeSource::Principal => false,
    })
}

/// `fingerprint.include` with `parts` added, in the operation's own block:
/// appended to the list there, or written there whole (what is in force
/// now, then `parts`) when the list is the document's or the default, so
/// no other operation's fingerprint changes.
fn include_parts(
    context: &OperationContext<'_>,
    contract: &Contract,
    parts: &[FingerprintPart],
) -> Option<crate::fix::Offer> {
    let block = context
        .workspace
        .deref(context.operation.node.get("x-idempotency")?)?;
    let own = block
        .get("fingerprint")
        .and_then(|fingerprint| context.workspace.deref(fingerprint));
    let mut editor = Editor::new(context.workspace);
    match own.filter(|fingerprint| fingerprint.get("include").is_some()) {
        Some(fingerprint) => {
            for part in parts {
                editor.append(fingerprint, "include", Emit::str(part.name()))?;
            }
        }
        None => {
            let list = contract
                .fingerprint
                .value
                .iter()
                .chain(parts)
                .map(|part| Emit::str(part.name()))
                .collect();
            editor.set(block, &["fingerprint", "include"], Emit::Seq(list))?;
        }
    }
    let entries = parts
        .iter()
        .map(|part| format!("`{}`", part.name()))
        .collect::<Vec<_>>()
        .join(" and ");
    editor.finish(format!("Add {entries} to `fingerprint.include`"))
}
