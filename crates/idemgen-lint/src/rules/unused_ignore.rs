//! # unused-ignore
//!
//! **What it checks.** Every rule id listed in an `x-idemgen-ignore`
//! (on the document root, a path item or an operation) names a rule that
//! is on and silences at least one finding there.
//!
//! **Why it matters.** An ignore is a reviewed exception to the contract.
//! Once the problem it excused is fixed, or the rule id is misspelt, the
//! ignore silences nothing, yet it still reads as "this operation is known
//! to break rule X", and it will hide the next, different finding of that
//! rule without anyone reviewing it. Like ruff's unused-noqa (RUF100).
//!
//! **Example fix.** Remove the id from the list (and the whole
//! `x-idemgen-ignore` when the list becomes empty), or correct its
//! spelling:
//!
//! ```yaml
//! post:
//!   operationId: onPayCallback
//!   x-idemgen-ignore: [missing-key-undeclared]   # silences a real finding
//! ```
//!
//! List `unused-ignore` itself in an `x-idemgen-ignore` to keep ignores that
//! are there on purpose (for a rule turned off only in some runs).
use super::prelude::*;

declare_rule!(
    "unused_ignore.rs",
    "unused-ignore",
    Warning,
    "an `x-idemgen-ignore` entry silences nothing, or names no rule",
    Check::Document(check)
);

/// The engine's suppression step ([`crate::suppress`]) reports this
/// rule once every other rule has run; there is nothing to check before.
fn check(_context: &DocumentContext<'_>, _sink: &mut Sink<'_>) {}
