//! # missing-key
//!
//! **What it checks.** A request without the idempotency key (no header, or
//! no body field, wherever the contract puts it) gets the contract's
//! missing-key status.
//!
//! **Why it matters.** A write that arrives without its key cannot be
//! deduplicated. Processing it anyway turns every retry of a client that
//! forgot the key into a second side effect, and hides that bug from the
//! client.
//!
//! **What a failure means.** Another status came back; a 2xx means the
//! request was processed without a key. The check does not apply when the
//! status profile makes the key optional.

use super::Probe;
use crate::CheckResult;
use crate::check::declare_check;
use crate::request::{Event, KeyUse};

declare_check!(
    "missing_key.rs",
    "missing-key",
    ["no key: the missing-key status"]
);

impl Probe<'_> {
    /// No key at all: the missing-key status.
    pub fn missing_key(&self, event: &Event) -> CheckResult {
        let expect = match self.key_required(&CHECK) {
            Ok(expect) => expect,
            Err(not_applicable) => return not_applicable,
        };
        let what = format!("no {}", self.plan.key_label());
        self.refused_key(&CHECK, expect, event, Some(KeyUse::Missing), what)
    }
}
