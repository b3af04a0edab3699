//! # replay-alert-too-high
//!
//! **What it checks.** `monitoring.replay-rate-alert` is at most 1 %.
//!
//! **Why it matters.** Replays (requests whose key already exists) should
//! be rare: healthy clients retry only after timeouts, well under 0.1 % of
//! requests. A rising replay rate is the first sign that a client's retry
//! policy is broken or that keys are being reused; an alert threshold above
//! 1 % only fires after that has gone on for a long time.
//!
//! **Example fix.** `replay-rate-alert: 5%` becomes `replay-rate-alert: 0.1%`.
use super::prelude::*;

declare_rule!(
    "replay_alert_too_high.rs",
    "replay-alert-too-high",
    Warning,
    "monitoring.replay-rate-alert is above 1%",
    Check::Operation(check)
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    let alert = &contract.replay_rate_alert;
    if alert.value <= 1.0 {
        return;
    }
    sink.report(
        &alert.origin,
        format!(
            "{}: replay-rate alert at {}% fires only long after a client's retries have gone wrong",
            context.name(),
            alert.value
        ),
    )
    .with_help("alert at 0.1% (healthy clients replay far less), 1% at most");
}
