//! # retry-after-out-of-range
//!
//! **What it checks.** `responses.in-progress.retry-after` is more than 0
//! and no longer than `client.timeout` or `window`.
//!
//! **Why it matters.** `Retry-After: 0` invites an immediate retry storm
//! against a key that is still held. A delay longer than the client's
//! timeout is ignored by most clients (they have given up), and one longer
//! than the window sends the retry after the key is forgotten, where it is
//! processed again.
//!
//! **Example fix.** With `timeout: 5s`, use `retry-after: 1s` or `2s`.
use super::prelude::*;

declare_rule!(
    "retry_after_out_of_range.rs",
    "retry-after-out-of-range",
    Warning,
    "retry-after is 0, or longer than client.timeout or window",
    Check::Operation(check)
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    let retry_after = &contract.retry_after_ms;
    let problem = if retry_after.value == 0 {
        Some("0 invites an immediate retry storm".to_string())
    } else if let Some(timeout) = contract
        .timeout_ms
        .as_ref()
        .filter(|t| retry_after.value > t.value)
    {
        Some(format!(
            "longer than the client timeout {}",
            format_ms(timeout.value)
        ))
    } else {
        contract
            .window_ms
            .as_ref()
            .filter(|window| retry_after.value > window.value)
            .map(|window| format!("longer than the window {}", format_ms(window.value)))
    };
    if let Some(problem) = problem {
        sink.report(
            &retry_after.origin,
            format!(
                "{}: retry-after {} is {problem}",
                context.name(),
                format_ms(retry_after.value)
            ),
        )
        .with_help("pick a delay between 1s and the client timeout");
    }
}
