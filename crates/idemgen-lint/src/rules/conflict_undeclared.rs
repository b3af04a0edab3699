//! # conflict-undeclared
//!
//! **What it checks.** The conflict status (409 by default; 422 under
//! `ietf-draft`, 400 under `stripe`) is declared in the operation's
//! `responses`.
//!
//! **Why it matters.** A reused key with a different body means a client
//! bug: the same key for two different payments. Silently replaying the
//! first answer hides the second payment; overwriting loses the first.
//! The only honest answer is the conflict status, and clients must know it
//! exists to surface it.
//!
//! **Example fix.**
//!
//! ```yaml
//! responses:
//!   "409": {description: The key was already used with a different request.}
//! ```
use super::prelude::*;

declare_rule!(
    "conflict_undeclared.rs",
    "conflict-undeclared",
    Error,
    "the conflict status (same key, different request) is not declared",
    Check::Operation(check),
    fix = Safe
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    let status = contract.conflict_status.value;
    if context.response(status).is_some() {
        return;
    }
    sink.report(
        &context.responses_origin(),
        format!(
            "{}: the conflict answer {status} (same key, different request) is not declared in responses",
            context.name()
        ),
    )
    .with_help(format!("declare `\"{status}\"`: the key was already used with a different request"))
    .with_fix(RULE.offered(crate::fix::builders::declare_response(
        context,
        status,
        crate::fix::builders::Answer::Conflict,
    )));
}
