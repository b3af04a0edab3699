//! # idempotency-on-safe-method
//!
//! **What it checks.** GET, HEAD, OPTIONS and TRACE operations (and
//! OpenAPI 3.2's QUERY) do not carry an `x-idempotency` block.
//!
//! **Why it matters.** Safe methods change nothing, so there is nothing to
//! deduplicate; a contract there stores a record per read, costs a write on
//! every request and suggests the method is not really safe.
//!
//! **Example fix.** Remove the block from the GET. If the GET does change
//! state, make it a POST and keep the contract there.
use super::prelude::*;

declare_rule!(
    "idempotency_on_safe_method.rs",
    "idempotency-on-safe-method",
    Warning,
    "GET, HEAD, OPTIONS, TRACE or QUERY carries x-idempotency",
    Check::Operation(check)
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let origin = match context.state {
        ContractState::Present(contract) => &contract.block,
        ContractState::Unreadable(origin) => origin,
        ContractState::Absent | ContractState::OptedOut(_) => return,
    };
    if !context.operation.is_safe() {
        return;
    }
    sink.report(
        origin,
        format!(
            "{} is a {}, a safe method: it needs no idempotency key",
            context.name(),
            context.operation.method
        ),
    )
    .with_help("remove `x-idempotency` here; if the operation changes state, it should not be a safe method");
}
