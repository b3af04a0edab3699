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
//! `lint --fix` writes the smallest safe window, the larger of this bound
//! and `window-below-retry-span`'s, with a comment that it is the floor:
//! it covers one call's retries, and a client that resends a stored key
//! after a restart (it may start an attempt until `window −
//! max-processing` after the key's first send) needs hours or days, as
//! money APIs keep them (Stripe 24 h). When both window rules fire, both
//! ask for that one window.
use super::prelude::*;
use idemgen_spec::window::{WindowInputs, WindowMath, compute};

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

/// The help of both window rules: one window that passes them both (the
/// larger bound), named as the floor it is, so two findings on one
/// `window` never ask for two different values. `other_rule` is the other
/// window rule, `other_bound` what it bounds the window by.
pub fn window_help(math: &WindowMath, other_rule: &str, other_bound: &str) -> Option<String> {
    let smallest = math.smallest_safe_ms?;
    let other_ms = match other_rule {
        "window-below-retry-span" => math.retry_span_ms,
        _ => math.required_ms,
    };
    let other_fails = math
        .window_ms
        .zip(other_ms)
        .is_some_and(|(window, bound)| window < bound);
    let this_ms = match other_rule {
        "window-below-retry-span" => math.required_ms,
        _ => math.retry_span_ms,
    };
    let why = if this_ms < other_ms {
        format!(", the {other_bound} `{other_rule}` asks for, which covers this one too")
    } else if other_fails {
        format!(", which passes `{other_rule}` too")
    } else {
        String::new()
    };
    Some(format!(
        "set `window: {}` or longer{why} (a floor: resumed calls need hours, see `idemgen window`)",
        format_ms(smallest)
    ))
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
    let math = compute(&inputs);
    let Some(required) = math.required_ms else {
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
    .with_help(
        window_help(&math, "window-below-retry-span", "retry span")
            .unwrap_or_else(|| format!("set `window: {}` or longer", format_ms(required))),
    )
    .with_label(format!("needs at least {}", format_ms(required)))
    .with_fix(RULE.offered(crate::fix::builders::window(context, contract)));
}
