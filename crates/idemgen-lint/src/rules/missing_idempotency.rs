//! # missing-idempotency
//!
//! **What it checks.** Every POST and PATCH under `paths` (and every
//! OpenAPI 3.2 custom method, which promises nothing about retries) either
//! carries an `x-idempotency` block or opts out with `x-idempotency: false`. OpenAPI
//! 3.1 `webhooks` are not checked: they describe requests the API sends,
//! which the receiving side deduplicates (a webhook may still carry a
//! contract, and every other rule checks it).
//!
//! **Why it matters.** POST and PATCH are not idempotent by HTTP's
//! definition, yet clients retry them on timeouts. Without a contract, a
//! retry after a lost response runs the write twice: the article's team
//! paid 417 orders twice in three months this way.
//!
//! **One finding per problem.** An operation that already takes an
//! `Idempotency-Key`-like header, query parameter or body field is left to
//! `undeclared-key-header`, which says more; this rule reports the POSTs
//! and PATCHes with no key-like input at all (and all of them when
//! `undeclared-key-header` is turned off).
//!
//! **Example fix.** Add a contract, or say explicitly that the operation
//! is safe to repeat:
//!
//! ```yaml
//! post:
//!   operationId: createRefund
//!   x-idempotency:
//!     key: {in: header, name: Idempotency-Key, format: "refund:{uuid}"}
//!     window: 18s
//! ```
//!
//! ```yaml
//! post:
//!   operationId: search   # a read that uses POST for its body
//!   x-idempotency: false
//! ```
use super::prelude::*;
use super::undeclared_key_header;
use crate::fix::builders::{KeyInput, contract_block, key_input, key_schema_value};
use crate::fix::edit::Editor;
use crate::fix::emit::Emit;
use crate::fix::{FixDefaults, Offer};
use idemgen_spec::contract::model::KeyLocation;
use idemgen_spec::operations::OperationKind;

declare_rule!(
    "missing_idempotency.rs",
    "missing-idempotency",
    Warning,
    "a POST, PATCH or 3.2 custom method has no x-idempotency (and is not `false`)",
    Check::Operation(check),
    fix = Unsafe
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let operation = context.operation;
    if operation.kind != OperationKind::Path
        || !operation.is_write()
        || !matches!(context.state, ContractState::Absent)
    {
        return;
    }
    if sink.rule_runs(undeclared_key_header::RULE.id)
        && undeclared_key_header::key_like_input(context).is_some()
    {
        return;
    }
    let name = match &operation.operation_id {
        Some(id) => format!("{id} ({} {})", operation.method, operation.path),
        None => format!("{} {}", operation.method, operation.path),
    };
    let fix = contract_with_new_key(context, sink.fix_defaults());
    sink.report(
        &context.operation_origin(),
        format!("{name} has no x-idempotency: a retried request can run the write twice"),
    )
    .with_help(
        "add an `x-idempotency` block, or `x-idempotency: false` if repeating it is harmless",
    )
    .with_label("no idempotency contract")
    .with_fix(RULE.offered(fix));
}

/// `missing-idempotency` → an `Idempotency-Key` header and an
/// `x-idempotency` block (unsafe: clients must start sending the key).
fn contract_with_new_key(context: &OperationContext<'_>, defaults: &FixDefaults) -> Option<Offer> {
    if key_input(context).is_some() {
        return None; // undeclared-key-header's fix uses the existing key
    }
    let input = KeyInput {
        location: KeyLocation::Header,
        name: "Idempotency-Key".into(),
        required: true,
        max_length: None,
        written: Default::default(),
        shared_name: None,
        pattern: None,
    };
    let mut editor = Editor::new(context.workspace);
    let (template, max_length) = contract_block(context, defaults, &input, &mut editor)?;
    editor.append(
        context.operation.node,
        "parameters",
        Emit::map([
            ("name", Emit::str("Idempotency-Key")),
            ("in", Emit::str("header")),
            ("required", Emit::Bool(true)),
            (
                "description",
                Emit::str(format!(
                    "Idempotency key, `{}`: the same for every retry of one request, new for every new request.",
                    template.source
                )),
            ),
            ("schema", key_schema_value(&template, max_length)),
        ]),
    )?;
    editor.finish("Add an `Idempotency-Key` header and an `x-idempotency` block")
}
