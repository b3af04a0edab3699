//! # naturally-idempotent-write
//!
//! **What it checks.** A POST, PATCH or 3.2 custom method without
//! `x-idempotency` (and not `false`) whose path or operationId says it is
//! a transition that lands in one state however often it runs (`cancel`,
//! `void`, `expire`, `delete`, `close`, `revoke`, `approve`, `finalize`…),
//! or an update that sets fields (any PATCH, a POST to `/things/{id}`, an
//! operationId that begins with `update`, `upsert` or `set`). These are the
//! operations `missing-idempotency` leaves to this rule; a word that moves
//! money (`capture`, `refund`, `payout`, `transfer`, `charge`, `pay`…)
//! keeps the operation there, as a warning, whatever else its name says
//! (`cancelOrRefund`).
//!
//! **Why it matters.** A second cancel finds the payment cancelled and a
//! second update writes the same values again: a retry rarely does harm,
//! so these are not warnings. They are still worth a look once: a "cancel"
//! that refunds, or an update that appends to a list, is not idempotent,
//! and only the API's owner knows. Say which it is, and the finding goes
//! away.
//!
//! **Measured precision.** On the hand-judged sample of corpus findings
//! in `tests/data/precision/labels.tsv` (Stripe, Adyen, PayPal and
//! Square), 31 of the 31 operations this rule reports are naturally
//! idempotent (100 %), and it reports 31 of the 34 that are; the other
//! three (PayPal's `orders.confirm`, Square's `RegisterDomain`, Stripe's
//! `verify_microdeposits`, which reads as a read) stay a warning or go
//! unreported. `tests/it/precision.rs` fails below 80 %.
//!
//! **Example fix.** Confirm that repeating it is harmless:
//!
//! ```yaml
//! /payment_intents/{intent}/cancel:
//!   post:
//!     operationId: cancelPaymentIntent
//!     x-idempotency: false   # cancelling twice leaves it cancelled
//! ```
//!
//! or give it a contract like any other write when it is not.
use super::prelude::*;
use super::undeclared_key_header;
use crate::write_shape::{self, Shape};
use idemgen_spec::operations::OperationKind;

declare_rule!(
    "naturally_idempotent_write.rs",
    "naturally-idempotent-write",
    Info,
    "a cancel, void, delete or set-fields update has no x-idempotency: confirm it is safe to repeat",
    Check::Operation(check)
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
    let Shape::Repeatable(word) = write_shape::of(operation) else {
        return;
    };
    let name = match &operation.operation_id {
        Some(id) => format!("{id} ({} {})", operation.method, operation.path),
        None => format!("{} {}", operation.method, operation.path),
    };
    let what = match word {
        "patch" | "update" | "upsert" | "set" | "modify" | "amend" | "edit" => {
            "an update that sets fields".to_string()
        }
        _ => format!("a `{word}` transition"),
    };
    sink.report(
        &context.operation_origin(),
        format!(
            "{name} has no x-idempotency; as {what} it is likely safe to repeat: say so with `x-idempotency: false`"
        ),
    )
    .with_help(
        "write `x-idempotency: false` if a retry that runs twice is harmless, else add an `x-idempotency` block",
    )
    .with_label("looks safe to repeat");
}
