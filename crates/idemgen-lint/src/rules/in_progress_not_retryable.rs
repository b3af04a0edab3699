//! # in-progress-not-retryable
//!
//! **What it checks.** The answer to a duplicate that arrives while the
//! first attempt still runs (`responses.in-progress.status`) is not a 2xx,
//! and, under the default `retry-after` profile, is 429.
//!
//! **Why it matters.** A 2xx tells the client the work is done; an empty
//! 200 while the payment is still running makes the client record success
//! without the real answer, and a failure that follows is never seen. 429
//! with `Retry-After` tells every HTTP client library to wait and try
//! again, which is exactly what should happen. (The `ietf-draft` and
//! `stripe` profiles answer 409 instead.)
//!
//! **Example fix.** `in-progress: {status: 200}` becomes
//! `in-progress: {status: 429, retry-after: 1s}`.
use super::prelude::*;
use idemgen_spec::contract::profile::Profile;

declare_rule!(
    "in_progress_not_retryable.rs",
    "in-progress-not-retryable",
    Error,
    "the in-progress answer is a 2xx, or (profile retry-after) not 429",
    Check::Operation(check)
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    let status = &contract.in_progress_status;
    if (200..300).contains(&status.value) {
        sink.report(
            &status.origin,
            format!(
                "{}: in-progress answer {} claims success while the first attempt still runs",
                context.name(),
                status.value
            ),
        )
        .with_help("answer 429 with `Retry-After` so the client waits and retries");
    } else if contract.profile.value == Profile::RetryAfter && status.value != 429 {
        sink.report(
            &status.origin,
            format!(
                "{}: in-progress answer {} is not 429, which the retry-after profile requires",
                context.name(),
                status.value
            ),
        )
        .with_help("use 429 with `Retry-After`, or choose `profile: ietf-draft` for 409");
    }
}
