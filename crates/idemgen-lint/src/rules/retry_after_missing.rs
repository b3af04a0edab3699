//! # retry-after-missing
//!
//! **What it checks.** The in-progress status (429 by default) is declared
//! in the operation's `responses`, with a `Retry-After` header.
//!
//! **Why it matters.** Clients and SDKs are generated from the declared
//! responses. An undeclared 429 is treated as an unexpected error and not
//! retried, and without `Retry-After` clients retry at once, in a tight
//! loop, while the first attempt holds the key.
//!
//! **Example fix.**
//!
//! ```yaml
//! responses:
//!   "429":
//!     description: The first request with this key is still being processed.
//!     headers:
//!       Retry-After: {schema: {type: integer}, description: Seconds to wait}
//! ```
use super::prelude::*;
use crate::fix::builders::{Answer, declare_response};

declare_rule!(
    "retry_after_missing.rs",
    "retry-after-missing",
    Error,
    "the in-progress status is not declared with a Retry-After header",
    Check::Operation(check),
    fix = Safe
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    let status = contract.in_progress_status.value;
    if (200..300).contains(&status) {
        return; // in-progress-not-retryable says what is wrong
    }
    match context.response(status) {
        None => {
            sink.report(
                &context.responses_origin(),
                format!(
                    "{}: the in-progress answer {status} is not declared in responses",
                    context.name()
                ),
            )
            .with_help(format!(
                "declare `\"{status}\"` with a `Retry-After` header so clients know to wait and retry"
            ))
            .with_fix(RULE.offered(declare_response(context, status, Answer::InProgress)));
        }
        Some(response) if context.response_header(response, "Retry-After").is_none() => {
            sink.report(
                &Origin {
                    span: response.span,
                    pointer: format!("{}/responses/{status}", context.operation.pointer),
                },
                format!(
                    "{}: response {status} (in progress) does not declare a `Retry-After` header",
                    context.name()
                ),
            )
            .with_help("add `headers: {Retry-After: {schema: {type: integer}}}`")
            .with_fix(RULE.offered(declare_response(
                context,
                status,
                Answer::InProgress,
            )));
        }
        Some(_) => {}
    }
}
