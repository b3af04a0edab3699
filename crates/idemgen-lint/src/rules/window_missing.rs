//! # window-missing
//!
//! **What it checks.** After merging the document-level defaults, the
//! operation's contract has `window`, `client.timeout` and
//! `server.max-processing`.
//!
//! **Why it matters.** The window is only safe when it outlasts the
//! client's whole retry sequence plus the server's worst processing time.
//! Without all three numbers nobody can check that, and a window picked
//! by feel (often "24h" or "5s") is either a storage cost or a double
//! payment.
//!
//! **Example fix.** Put the client and server numbers at document level
//! once, and the window on each operation:
//!
//! ```yaml
//! x-idempotency:
//!   client: {timeout: 5s, retries: [200ms, 800ms]}
//!   server: {max-processing: 3s}
//! ```
use super::prelude::*;

declare_rule!(
    "window_missing.rs",
    "window-missing",
    Error,
    "no window, client.timeout or server.max-processing after merging",
    Check::Operation(check)
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    let missing: Vec<&str> = [
        (contract.window_ms.is_some(), "window"),
        (contract.timeout_ms.is_some(), "client.timeout"),
        (
            contract.max_processing_ms.is_some(),
            "server.max-processing",
        ),
    ]
    .into_iter()
    .filter(|(present, field)| !present && !contract.invalid.contains(field))
    .map(|(_, field)| field)
    .collect();
    if missing.is_empty() {
        return;
    }
    sink.report(
        &contract.block,
        format!(
            "{}: the window cannot be checked without {}",
            context.name(),
            missing
                .iter()
                .map(|field| format!("`{field}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .with_help("set them on the operation or in the document-level `x-idempotency` block");
}
