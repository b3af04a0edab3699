//! # long-key
//!
//! **What it checks.** A key one character longer than `key.max-length`
//! (tried when the limit is below 8192; the template's prefix and random
//! hex digits, fresh each run) gets the missing-key status.
//!
//! **Why it matters.** Keys are stored, indexed and compared. A service that
//! accepts any length lets one client fill the idempotency store, or meets
//! a storage column that truncates the key so two keys become one.
//!
//! **What a failure means.** Another status came back; a 2xx means the
//! request was processed with an over-long key (or, marked as a replay,
//! answered from a record kept under one). The check does not apply
//! when the profile makes the key optional or the limit is 8192 or more.

use super::Probe;
use crate::CheckResult;
use crate::check::declare_check;
use crate::key;
use crate::request::{Event, KeyUse};

declare_check!(
    "long_key.rs",
    "long-key",
    ["a key longer than key.max-length: the missing-key status"]
);

impl Probe<'_> {
    /// A key one character past `key.max-length` (limits below 8192
    /// only): the missing-key status.
    pub fn long_key(&self, event: &Event, rng: &mut key::Rng) -> CheckResult {
        let expect = match self.key_required(&CHECK) {
            Ok(expect) => expect,
            Err(not_applicable) => return not_applicable,
        };
        let long = (self.plan.max_length < 8192)
            .then(|| key::over_long(&self.plan.template, self.plan.max_length, rng));
        let what = format!(
            "a {}-character key (max-length {})",
            long.as_ref().map_or(0, String::len),
            self.plan.max_length
        );
        self.refused_key(
            &CHECK,
            expect,
            event,
            long.as_deref().map(KeyUse::Given),
            what,
        )
    }
}
