//! # contract-invalid
//!
//! **What it checks.** That every `x-idempotency` block (document-level and
//! per operation) can be read: no unknown fields, the right types, durations
//! with units, valid key templates, known enum values, and the required
//! `key.in`, `key.name` and `key.format` present after merging.
//!
//! **Why it matters.** A misspelt field is silently ignored by every other
//! tool, so the contract you think you wrote is not the one enforced: a
//! `windw: 18s` leaves the window undefined, and a bare `18` could mean
//! seconds or milliseconds.
//!
//! **Example fix.**
//!
//! ```yaml
//! x-idempotency:
//!   windw: 18          # unknown field, and no unit
//! ```
//!
//! becomes
//!
//! ```yaml
//! x-idempotency:
//!   window: 18s
//! ```
use super::prelude::*;

declare_rule!(
    "contract_invalid.rs",
    "contract-invalid",
    Error,
    "the x-idempotency block does not parse: unknown field, wrong type, bad duration or template",
    Check::Both(check_document, check_operation)
);

/// Document-level problems are reported once, not per operation.
fn check_document(context: &DocumentContext<'_>, sink: &mut Sink<'_>) {
    for error in context.contract_errors {
        report(sink, error, "document-level x-idempotency");
    }
}

fn check_operation(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    for error in context.contract_errors {
        report(sink, error, &context.name());
    }
}

fn report(sink: &mut Sink<'_>, error: &idemgen_spec::contract::parse::ContractError, whose: &str) {
    let message = format!("{whose}: {}", error.message);
    let diagnostic = sink.report(&error.origin, message);
    if let Some(help) = &error.help {
        diagnostic.with_help(help.clone());
    }
}
