//! # window-below-retry-span
//!
//! **What it checks.** The window covers the real span from the first
//! attempt's arrival to the end of the last retry:
//! `retries × timeout + Σ retries + retries × jitter + max-processing`.
//!
//! **Why it matters.** The 2× rule assumes few retries. A client that
//! retries eight times with a 5 s timeout keeps sending the same key for
//! 40 s and more, which a 2× window of 28 s does not cover: the ninth
//! attempt arrives after the key is forgotten and is processed as new.
//!
//! **Example fix.** With `timeout: 5s`, eight 1 s retries and
//! `max-processing: 1s`, the span is 8×5 + 8 + 1 = 49 s: set `window: 49s`
//! or more, or retry less. `lint --fix` writes the smallest safe window,
//! the larger of this bound and `window-too-short`'s (both findings ask for
//! that one window), with a comment that it is the floor: a client that
//! resumes a stored key later needs hours or days.
use super::prelude::*;
use super::window_too_short::{jitter_term, window_help};
use idemgen_spec::window::{WindowInputs, compute};

declare_rule!(
    "window_below_retry_span.rs",
    "window-below-retry-span",
    Error,
    "window is shorter than retries×timeout + Σretries + retries×jitter + max-processing",
    Check::Operation(check),
    fix = Safe
);

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
    let Some(span) = math.retry_span_ms else {
        return;
    };
    if window.value >= span {
        return;
    }
    let retries = inputs.retries_ms.len();
    sink.report(
        &window.origin,
        format!(
            "{}: window {} ends before the last retry can finish: {} retries × timeout {} + retries {}{} + max-processing {} = {}",
            context.name(),
            format_ms(window.value),
            retries,
            format_ms(timeout.value),
            format_ms(inputs.total_retry_delay_ms()),
            jitter_term(retries, inputs.jitter_ms),
            format_ms(processing.value),
            format_ms(span)
        ),
    )
    .with_help(format!(
        "{}; or retry fewer times",
        window_help(&math, "window-too-short", "2× bound")
            .unwrap_or_else(|| format!("set `window: {}` or longer", format_ms(span)))
    ))
    .with_label(format!("retries run for up to {}", format_ms(span)))
    .with_fix(RULE.offered(crate::fix::builders::window(context, contract)));
}
