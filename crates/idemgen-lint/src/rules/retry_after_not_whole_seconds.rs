//! # retry-after-not-whole-seconds
//!
//! **What it checks.** `responses.in-progress.retry-after` is a whole
//! number of seconds.
//!
//! **Why it matters.** The `Retry-After` header carries whole seconds
//! (RFC 9110), so the generated service rounds the delay up: `500ms` is
//! sent as `Retry-After: 1`, `1.5s` as `Retry-After: 2`. Clients wait what
//! the header says, not what the contract says, so a review of the
//! contract sees a delay no client is told to wait. The finding says what
//! will be sent.
//!
//! **Example fix.** `retry-after: 500ms` becomes `retry-after: 1s`, the
//! value already sent (so the fix changes nothing on the wire). With a
//! client timeout under 1 s no whole-second delay fits it;
//! `retry-after-out-of-range` then says what to change instead.
use super::prelude::*;
use crate::fix::edit::Editor;
use crate::fix::emit::Emit;
use idemgen_spec::contract::duration::retry_after_header_secs;

declare_rule!(
    "retry_after_not_whole_seconds.rs",
    "retry-after-not-whole-seconds",
    Warning,
    "retry-after is not whole seconds, which is all the Retry-After header carries",
    Check::Operation(check),
    fix = Safe
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    let retry_after = &contract.retry_after_ms;
    if retry_after.value == 0 || retry_after.value % 1_000 == 0 {
        return; // 0 is retry-after-out-of-range's
    }
    let sent = retry_after_header_secs(retry_after.value);
    let whole = format_ms(sent * 1_000);
    sink.report(
        &retry_after.origin,
        format!(
            "{}: retry-after {} is sent as `Retry-After: {sent}` (the header carries whole seconds, so the delay is rounded up)",
            context.name(),
            format_ms(retry_after.value),
        ),
    )
    .with_help(format!(
        "write `retry-after: {whole}`, what clients are told to wait"
    ))
    .with_label(format!("sent as {whole}"))
    .with_fix(RULE.offered(round_up(context, &retry_after.origin, &whole)));
}

/// `retry-after` → the whole seconds it is sent as.
fn round_up(
    context: &OperationContext<'_>,
    origin: &Origin,
    whole: &str,
) -> Option<crate::fix::Offer> {
    let mut editor = Editor::new(context.workspace);
    editor.replace_scalar(origin.span, &Emit::str(whole))?;
    editor.finish(format!(
        "Set `retry-after` to {whole}, the whole seconds it is sent as"
    ))
}
