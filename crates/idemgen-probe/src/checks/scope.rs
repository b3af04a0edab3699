//! # scope
//!
//! **What it checks.** With `key.scope`: a request under the first scope
//! value, then the same key and body under a second value (from `--scope`,
//! else `probe-tenant-a` and `probe-tenant-b`), then a request without the
//! scope value. The second is a new key: neither the first scope's stored
//! answer nor the conflict status. The third is refused with a 4xx.
//!
//! **Why it matters.** Scoping keys by tenant (or account) is what stops
//! two tenants who pick the same key from colliding, and one of them from
//! reading the other's stored response. A request without the scope value
//! has no namespace to be deduplicated in.
//!
//! **What a failure means.** The second scope got the first scope's stored
//! answer (one tenant sees another's response) or the conflict status (keys
//! are not namespaced), or the request without the scope value was
//! processed or answered other than with a 4xx. The check does not apply
//! without `key.scope` (a scope of only `principal` is the `principals`
//! check's), or when the first request did not succeed.

use super::Probe;
use crate::check::declare_check;
use crate::request::{Event, KeyUse, Plan, ScopeUse};
use crate::{CheckResult, Outcome};

declare_check!(
    "scope.rs",
    "scope",
    [
        "with key.scope: the same key under a second scope value is",
        "a new key (not the first scope's stored answer, not the",
        "conflict status), and a request without the scope value",
        "is refused with a 4xx; values from --scope, else",
        "probe-tenant-a and probe-tenant-b",
    ]
);

impl Probe<'_> {
    /// `key.scope`: the same key under another scope value is another key
    /// (neither the first scope's stored answer nor a conflict), and a
    /// request without the scope value is refused, not processed.
    /// `event` and `unscoped` are fresh events.
    pub fn scope(&self, event: &Event, unscoped: &Event) -> CheckResult {
        let mut check = CheckResult::new(&CHECK);
        if self.plan.scopes.is_empty() {
            check.outcome = Outcome::NotApplicable;
            check.summary = if self.plan.principal_scoped {
                "`key.scope` is `principal` only, which the `principals` check covers".into()
            } else {
                "the contract declares no `key.scope`".into()
            };
            return check;
        }
        let shown = |index: usize| {
            self.plan
                .scopes
                .iter()
                .map(|(source, values)| {
                    format!("{} `{}`", Plan::scope_label(source), values[index])
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let first = match self.settle(&self.plan.scoped_request(
            event,
            KeyUse::Valid,
            ScopeUse::First,
        )) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        if !first.is_success() {
            check.outcome = Outcome::NotApplicable;
            check.summary = format!(
                "under {} the first request answered {}{}, so there is no stored answer to leak",
                shown(0),
                first.describe(),
                self.client.from(&first)
            );
            check
                .evidence
                .push(format!("its body: {}", first.excerpt()));
            return check;
        }
        let second = match self.settle(&self.plan.scoped_request(
            event,
            KeyUse::Valid,
            ScopeUse::Second,
        )) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        let missing = match self.client.send(&self.plan.scoped_request(
            unscoped,
            KeyUse::Valid,
            ScopeUse::Missing,
        )) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        check.summary = format!(
            "one key under {}: {}{}; under {}: {}{}; without the scope value: {}{}",
            shown(0),
            first.describe(),
            self.client.from(&first),
            shown(1),
            second.describe(),
            self.client.from(&second),
            missing.describe(),
            self.client.from(&missing)
        );
        if let Some(sign) = self.stored_answer_of(&first, &second) {
            check.fail(format!(
                "the second scope got the first scope's stored answer ({sign}): one tenant sees another's response"
            ));
            self.show(&mut check, "first scope", &first);
            self.show(&mut check, "second scope", &second);
        } else if second.status == self.plan.expect.conflict {
            check.fail(format!(
                "the second scope got the conflict status {}: the key is not namespaced by the scope",
                self.plan.expect.conflict
            ));
            check
                .evidence
                .push(format!("its body: {}", second.excerpt()));
        }
        if missing.is_success() {
            check.fail(format!(
                "{}{} without the scope value: the request was processed, expected a 4xx refusal",
                missing.describe(),
                self.client.from(&missing)
            ));
            check
                .evidence
                .push(format!("its body: {}", missing.excerpt()));
        } else if !(400..500).contains(&missing.status) {
            check.fail(format!(
                "{}{} without the scope value: expected a 4xx refusal",
                missing.describe(),
                self.client.from(&missing)
            ));
        }
        check
    }
}
