//! # retry-after-out-of-range
//!
//! **What it checks.** `responses.in-progress.retry-after` is more than 0,
//! and the `Retry-After` it is sent as (whole seconds, rounded up; see
//! `retry-after-not-whole-seconds`) is no longer than `client.timeout` or
//! `window`.
//!
//! **Why it matters.** `Retry-After: 0` invites an immediate retry storm
//! against a key that is still held. A delay longer than the client's
//! timeout is ignored by most clients (they have given up), and one longer
//! than the window sends the retry after the key is forgotten, where it is
//! processed again. What counts is the delay on the wire: `retry-after:
//! 500ms` is sent as `Retry-After: 1`, a second, longer than an 800 ms
//! timeout.
//!
//! **Example fix.** With `timeout: 5s`, use `retry-after: 1s` or `2s`.
//! With a client timeout under 1 s no in-progress delay fits: the header
//! cannot ask for less than a second without asking for an immediate
//! retry. Raise `client.timeout` to 1s or more (and `window` with it), or
//! keep `retry-after: 1s` and silence the rule on the operation with
//! `x-idemgen-ignore: [retry-after-out-of-range]`, accepting that such
//! clients retry on their own schedule.
use super::prelude::*;
use idemgen_spec::contract::duration::retry_after_header_secs;

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
    let sent_ms = retry_after_header_secs(retry_after.value) * 1_000;
    let timeout = contract.timeout_ms.as_ref().map(|t| t.value);
    let problem = if retry_after.value == 0 {
        Some("0 invites an immediate retry storm".to_string())
    } else if let Some(timeout) = timeout.filter(|timeout| sent_ms > *timeout) {
        Some(format!(
            "{}longer than the client timeout {}",
            sent_as(retry_after.value, sent_ms),
            format_ms(timeout)
        ))
    } else {
        contract
            .window_ms
            .as_ref()
            .filter(|window| sent_ms > window.value)
            .map(|window| {
                format!(
                    "{}longer than the window {}",
                    sent_as(retry_after.value, sent_ms),
                    format_ms(window.value)
                )
            })
    };
    let Some(problem) = problem else {
        return;
    };
    let longest = [timeout, contract.window_ms.as_ref().map(|w| w.value)]
        .into_iter()
        .flatten()
        .min()
        .map(|bound| bound / 1_000 * 1_000);
    let help = match longest {
        Some(0) => "no in-progress delay fits a client timeout under 1s: `Retry-After` carries \
             whole seconds and 0 asks for an immediate retry; raise `client.timeout` to 1s or \
             more (and `window` with it), or keep `retry-after: 1s` and add \
             `x-idemgen-ignore: [retry-after-out-of-range]` to the operation"
            .to_string(),
        Some(longest) if longest > 1_000 => format!(
            "pick a whole-second delay from 1s to {}, such as `retry-after: 1s`",
            format_ms(longest)
        ),
        _ => "use `retry-after: 1s`".to_string(),
    };
    sink.report(
        &retry_after.origin,
        format!(
            "{}: retry-after {} is {problem}",
            context.name(),
            format_ms(retry_after.value)
        ),
    )
    .with_help(help);
}

/// `sent as 1s, ` when the header carries another value than the contract
/// wrote, else nothing.
fn sent_as(written_ms: u64, sent_ms: u64) -> String {
    if written_ms == sent_ms {
        String::new()
    } else {
        format!("sent as `Retry-After: {}`, ", sent_ms / 1_000)
    }
}
