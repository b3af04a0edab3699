//! # missing-key-undeclared
//!
//! **What it checks.** The status answered to a request without a key, or
//! with one that does not match `key.format` or is longer than
//! `key.max-length` (400 by default), is declared in `responses`.
//!
//! **Why it matters.** Clients that forget the key, or build it wrongly,
//! should learn so from the contract, not in production.
//!
//! **Example fix.**
//!
//! ```yaml
//! "400": {description: Idempotency-Key missing or malformed.}
//! ```
use super::prelude::*;

declare_rule!(
    "missing_key_undeclared.rs",
    "missing-key-undeclared",
    Warning,
    "the missing-key status is not declared",
    Check::Operation(check),
    fix = Safe
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    let Some(status) = &contract.missing_key_status else {
        return;
    };
    if context.response(status.value).is_some() {
        return;
    }
    sink.report(
        &context.responses_origin(),
        format!(
            "{}: the missing-key answer {} is not declared in responses",
            context.name(),
            status.value
        ),
    )
    .with_help(format!(
        "declare `\"{}\"`: the idempotency key is missing or malformed",
        status.value
    ))
    .with_fix(RULE.offered(crate::fix::builders::declare_response(
        context,
        status.value,
        crate::fix::builders::Answer::MissingKey,
    )));
}
