//! # in-transaction-calls-out
//!
//! **What it checks.** An operation whose contract says its business step
//! calls other systems (`server.downstream` lists them) claims its key
//! with `store.claim: in-transaction`.
//!
//! **Why it matters.** Under `in-transaction` the claim is written in the
//! business transaction: nothing visible holds the key while the step
//! runs, and a rollback, a killed connection or a crash takes the claim
//! away with the work. The database work is undone; a call already made to
//! another system is not. The retry claims the key at once and calls that
//! system again, while the first call may still be running there. Only a
//! provider that honours the downstream key (`Call::downstream_key`) does
//! the work once; one that does not charges, ships or sends twice.
//! `committed` (the default) is the mode for such steps: its in-progress
//! record and lease (`server.max-processing`) keep every other attempt
//! away while the first one runs or after it crashed, and the downstream
//! key covers the attempt cut off at its lease.
//!
//! **Example fix.** `store: {claim: in-transaction}` with
//! `server: {downstream: [payment-provider]}` becomes
//! `store: {claim: committed}` (or drop `claim`). Keep `in-transaction`
//! only for a step whose every effect is a write in this database, and
//! then list no downstream system.
use super::prelude::*;
use idemgen_spec::contract::model::ClaimMode;

declare_rule!(
    "in_transaction_calls_out.rs",
    "in-transaction-calls-out",
    Warning,
    "store.claim is in-transaction but server.downstream lists systems the business step calls",
    Check::Operation(check)
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    if contract.claim.value != ClaimMode::InTransaction || contract.downstream.value.is_empty() {
        return;
    }
    let systems = contract
        .downstream
        .value
        .iter()
        .map(|name| format!("`{}`", name.value))
        .collect::<Vec<_>>()
        .join(", ");
    sink.report(
        &contract.claim.origin,
        format!(
            "{}: store.claim is `in-transaction` but the business step calls {systems} (server.downstream): \
             a rolled-back claim lets a retry call it again at once while the first call may still be running",
            context.name()
        ),
    )
    .with_help(
        "use `store.claim: committed` (the default): its in-progress record and lease keep a second attempt \
         from calling downstream while the first one runs, and `Call::downstream_key` covers an attempt cut off \
         at its lease; keep `in-transaction` only for a step whose effects are all in this database",
    );
}
