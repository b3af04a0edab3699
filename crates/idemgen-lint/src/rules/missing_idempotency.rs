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
//! **What it leaves out, and why.** Real APIs use POST for much that a
//! retry cannot harm; on the corpus's payment APIs two findings in three
//! were such operations, and a team that meets them turns the rule off.
//! The operation's *action* decides: the last path segment unless it is a
//! parameter (`/payments/{id}/capture` → `capture`), and the operationId's
//! verb unless the id only spells the method and path (`CancelPayment`,
//! `authorizations.void`; not `PostChargesChargeCapture`), a leading
//! `bulk`/`batch` skipped.
//!
//! - *Reads* are not reported: an action that begins with `search`,
//!   `retrieve`, `get`, `list`, `lookup`, `query`, `find`, `fetch`,
//!   `count`, `validate`, `verify`, `check`, `calculate`, `compute`,
//!   `estimate`, `preview` or `reveal`, or a summary that begins with one
//!   (Square's `SearchCatalogObjects`, `RetrieveGiftCardFromNonce` and
//!   `BatchRetrieveOrders`, Adyen's `/validateShopperId` and
//!   `/transferRoutes/calculate`, PayPal's `search-invoices`).
//! - *Money* always stays here as a warning: an action that begins with
//!   `capture`, `refund`, `payout`, `transfer`, `charge`, `pay`, `cashout`,
//!   `withdraw`, `authorise`, `reverse`, `donate` or `topup` (or joins one
//!   with `or`, Adyen's `/cancelOrRefund`), even beside a transition.
//! - *Transitions and updates that set fields* go to
//!   `naturally-idempotent-write`, an info: an action that begins with
//!   `cancel`, `void`, `expire`, `delete`, `close`, `revoke`, `approve`,
//!   `submit`, `finalize`… (Stripe's PaymentIntent cancel, PayPal's
//!   `authorizations.void`), or with `update`, `upsert`, `set` or
//!   `change`; every PATCH; and a POST to a path that ends in a parameter
//!   (Stripe's `POST /v1/accounts/{account}`, which "updates by setting
//!   the values of the parameters passed"). Turning that rule off hands
//!   them back to this one.
//! - An operation that takes a key anywhere, a nested body field
//!   included, is `undeclared-key-header`'s, and this rule's fix never
//!   adds an `Idempotency-Key` header beside it. Nor does it where the
//!   API's other operations take a key of their own kind (PayPal's
//!   `PayPal-Request-Id` header, Square's `idempotency_key` body field):
//!   the finding then names that key and offers no fix, since a second
//!   mechanism would leave clients unsure which one counts.
//!
//! **Measured precision.** On the hand-judged sample of corpus findings
//! in `tests/data/precision/labels.tsv` (86 operations of Stripe, Adyen,
//! PayPal and Square, each read at the reported line, the reason written
//! down), this rule's warnings were right 21 times in 70 (30 %) before
//! these heuristics and 21 times in 25 (84 %) with them, with all 21
//! operations that need a key still reported (Adyen's `/cashouts`,
//! `/capture` and `/refund`, Stripe's refunds, payouts and captures). The
//! four left are a webhook test, PayPal's `orders.confirm`, an invoice's
//! QR code and Square's `RegisterDomain`. `tests/it/precision.rs` prints
//! the numbers and fails below 80 %.
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
use super::{naturally_idempotent_write, undeclared_key_header};
use crate::fix::builders::{KeyInput, contract_block, key_input, key_schema_value};
use crate::fix::edit::Editor;
use crate::fix::emit::Emit;
use crate::fix::{FixDefaults, Offer};
use crate::write_shape::{self, Shape};
use idemgen_spec::Node;
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
    match write_shape::of(operation) {
        Shape::Read(_) => return,
        Shape::Repeatable(_) if sink.rule_runs(naturally_idempotent_write::RULE.id) => return,
        _ => {}
    }
    let name = match &operation.operation_id {
        Some(id) => format!("{id} ({} {})", operation.method, operation.path),
        None => format!("{} {}", operation.method, operation.path),
    };
    let keys = sink.once(|| std::sync::Arc::new(api_keys(context.workspace)));
    let api_key = api_key_elsewhere(&keys, context);
    let fix = match api_key {
        Some(_) => None,
        None => contract_with_new_key(context, sink.fix_defaults()),
    };
    let help = match &api_key {
        Some(what) => format!(
            "the API's other operations take the {what}: accept it here too and add an `x-idempotency` block that names it, or `x-idempotency: false` if repeating it is harmless"
        ),
        None => {
            "add an `x-idempotency` block, or `x-idempotency: false` if repeating it is harmless"
                .to_string()
        }
    };
    sink.report(
        &context.operation_origin(),
        format!("{name} has no x-idempotency: a retried request can run the write twice"),
    )
    .with_help(help)
    .with_label("no idempotency contract")
    .with_fix(RULE.offered(fix));
}

/// The key another operation of the document takes, when it is not an
/// `Idempotency-Key` header (PayPal's `PayPal-Request-Id`, Square's
/// `idempotency_key` body field): the API's own mechanism, beside which
/// the fix must not add a second one. The first other operation, in the
/// document's order, that takes a key decides.
fn api_key_elsewhere(keys: &[(String, String)], context: &OperationContext<'_>) -> Option<String> {
    keys.iter()
        .find(|(pointer, _)| *pointer != context.operation.pointer)
        .map(|(_, what)| what.clone())
        .filter(|what| !what.eq_ignore_ascii_case("header parameter `Idempotency-Key`"))
}

/// Every operation's key, in the document's order, by its pointer: read
/// once per document, from parameters and top-level body fields only, so
/// that a large spec stays quick.
fn api_keys(workspace: &idemgen_spec::Workspace) -> Vec<(String, String)> {
    let absent = ContractState::Absent;
    idemgen_spec::operations::operations(workspace)
        .iter()
        .filter_map(|operation| {
            let context = OperationContext {
                workspace,
                operation,
                state: &absent,
                contract_errors: &[],
            };
            let parameter = context.parameters().into_iter().find_map(|parameter| {
                let name = parameter.get("name").and_then(Node::as_str)?;
                let location = parameter.get("in").and_then(Node::as_str)?;
                undeclared_key_header::looks_like_key(name, parameter)
                    .then(|| format!("{location} parameter `{name}`"))
            });
            let field = || {
                let schema = context.request_schema()?;
                let properties = context.workspace.deref(schema.get("properties")?)?;
                properties
                    .as_map()?
                    .iter()
                    .find(|entry| undeclared_key_header::looks_like_key(&entry.key, &entry.value))
                    .map(|entry| format!("request-body field `{}`", entry.key))
            };
            let what = parameter.or_else(field)?;
            Some((operation.pointer.clone(), what))
        })
        .collect()
}

/// `missing-idempotency` → an `Idempotency-Key` header and an
/// `x-idempotency` block (unsafe: clients must start sending the key).
fn contract_with_new_key(context: &OperationContext<'_>, defaults: &FixDefaults) -> Option<Offer> {
    if key_input(context).is_some() || undeclared_key_header::key_like_input(context).is_some() {
        // undeclared-key-header's fix uses the existing key; a key nested
        // in the body is a key too, and a second mechanism beside it would
        // leave clients unsure which one counts.
        return None;
    }
    let input = KeyInput {
        location: KeyLocation::Header,
        name: "Idempotency-Key".into(),
        required: true,
        existing: false,
        max_length: None,
        written: Default::default(),
        shared_name: None,
        pattern: None,
        stated_window_ms: None,
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
