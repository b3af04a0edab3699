//! # malformed-key
//!
//! **What it checks.** A key that does not fit the contract's `key.format`
//! gets the missing-key status: the template with one typed segment made
//! nonsense (`pay:20240615:not-a-uuid-3fa1`, with a fresh random tail each
//! run, so a store that wrongly kept an earlier run's key cannot answer
//! it), or, for a template of body fields only, the key without its
//! business prefix.
//!
//! **Why it matters.** The format is what keeps keys unique and
//! unpredictable: a service that accepts any string lets clients send keys
//! that collide, such as an order number reused across orders, and two
//! different requests then share one stored answer.
//!
//! **What a failure means.** Another status came back; a 2xx means the
//! request was processed under a key the contract does not allow, or, when
//! the 2xx carries a replay mark, that the service answered it from a
//! record it keeps under such a key. The
//! check does not apply when the profile makes the key optional or no
//! malformed key can be built from the template.

use super::Probe;
use crate::CheckResult;
use crate::check::declare_check;
use crate::key;
use crate::request::{Event, KeyUse};

declare_check!(
    "malformed_key.rs",
    "malformed-key",
    ["a key that does not fit key.format: the missing-key status"]
);

impl Probe<'_> {
    /// A key that breaks `key.format`: the missing-key status.
    pub fn malformed_key(&self, event: &Event, rng: &mut key::Rng) -> CheckResult {
        let expect = match self.key_required(&CHECK) {
            Ok(expect) => expect,
            Err(not_applicable) => return not_applicable,
        };
        let body = event.body.clone().unwrap_or(serde_json::Value::Null);
        let malformed = key::malformed(&self.plan.template, &body, rng);
        let what = format!("`{}`", malformed.as_deref().unwrap_or(""));
        self.refused_key(
            &CHECK,
            expect,
            event,
            malformed.as_deref().map(KeyUse::Given),
            what,
        )
    }
}
