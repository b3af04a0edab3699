//! # window-too-short
//!
//! **What it checks.** `window ≥ 2 × (client.timeout + Σ client.retries +
//! retries × client.jitter + server.max-processing)`.
//!
//! **Why it matters.** A key must be remembered at least as long as a
//! client may still send it. The sum is the longest one client can keep a
//! request in flight; doubling it covers clock skew, queueing and a client
//! restarting its sequence. With the article's numbers, 5 s + (200 ms +
//! 800 ms) + 3 s = 9 s, so the window must be at least 18 s. A shorter
//! window forgets the key while a retry is still coming, and the retry
//! runs the payment again.
//!
//! **Example fix.** `window: 10s` becomes `window: 18s` (or longer).
use super::prelude::*;
use idemgen_spec::window::{WindowInputs, compute};

declare_rule!(
    "window_too_short.rs",
    "window-too-short",
    Error,
    "window < 2 × (timeout + Σretries + retries×jitter + max-processing)",
    Check::Operation(check),
    fix = Safe
);

/// ` + jitter 3×100ms`, or nothing when there is no jitter.
pub fn jitter_term(retries: usize, jitter_ms: u64) -> String {
    if jitter_ms == 0 {
        String::new()
    } else {
        format!(" + jitter {retries}×{}", format_ms(jitter_ms))
    }
}

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    let (Some(window), Some(timeout), Some(processing)) = (
        &contract.window_ms,
        &contract.timeout_ms,
        &contract.max_processing_ms,
    ) else {
        return;
    };
    let inputs = WindowInputs::of(contract);
    let Some(required) = compute(&inputs).required_ms else {
        return;
    };
    if window.value >= required {
        return;
    }
    let retries_total = inputs.total_retry_delay_ms();
    let jitter = jitter_term(inputs.retries_ms.len(), inputs.jitter_ms);
    sink.report(
        &window.origin,
        format!(
            "{}: window {} is shorter than 2 × (timeout {} + retries {}{jitter} + max-processing {}) = {}",
            context.name(),
            format_ms(window.value),
            format_ms(timeout.value),
            format_ms(retries_total),
            format_ms(processing.value),
            format_ms(required)
        ),
    )
    .with_help(format!("set `window: {}` or longer", format_ms(required)))
    .with_label(format!("needs at least {}", format_ms(required)))
    .with_fix(RULE.offered(crate::fix::builders::window(context, contract)));
}
