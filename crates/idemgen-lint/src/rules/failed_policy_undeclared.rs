//! # failed-policy-undeclared
//!
//! **What it checks.** With `responses.failed: reject`, the conflict status
//! that refuses a retry after a recorded failure is declared.
//!
//! **Why it matters.** `reject` means a key whose first attempt failed can
//! never succeed: the client must use a new key. If the answer is not
//! declared, clients treat it as an unknown error, retry with the same key
//! forever, and the payment never happens.
//!
//! **Example fix.** Declare the conflict status, or use `failed: retry` so
//! a retry after a failure runs again (idemgen's generated code re-claims
//! the key atomically, so two retries cannot both run).
use super::prelude::*;
use idemgen_spec::contract::model::FailedPolicy;

declare_rule!(
    "failed_policy_undeclared.rs",
    "failed-policy-undeclared",
    Error,
    "`failed: reject` and the conflict status is not declared",
    Check::Operation(check),
    fix = Safe
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    if contract.failed.value != FailedPolicy::Reject {
        return;
    }
    let status = contract.conflict_status.value;
    if context.response(status).is_some() {
        return;
    }
    sink.report(
        &contract.failed.origin,
        format!(
            "{}: `failed: reject` answers {status} to retries after a failure, but {status} is not declared",
            context.name()
        ),
    )
    .with_help(format!(
        "declare `\"{status}\"` and say that the client must use a new key, or use `failed: retry`"
    ))
    .with_fix(RULE.offered(crate::fix::builders::declare_response(
        context,
        status,
        crate::fix::builders::Answer::Conflict,
    )));
}
