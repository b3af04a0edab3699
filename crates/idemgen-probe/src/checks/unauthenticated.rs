//! # unauthenticated
//!
//! **What it checks.** With `--as`: a request without any of the `--as`
//! headers is refused with 401 or 403, and refused before it is processed:
//! the first principal's request with the same key and body afterwards is
//! a fresh one, not a replay, the conflict status or "in progress".
//!
//! **Why it matters.** A service that claims the key (or runs the step)
//! before it checks credentials lets anyone who knows a key block it, or
//! plant an answer the real client then gets as its own.
//!
//! **What a failure means.** The request without credentials was processed
//! or answered other than 401 or 403, or it left a record under the key
//! that the first principal's request then met. When the first principal's
//! request is not a fresh 2xx, that part is not shown and is a warning. The
//! check does not apply without `--as`.

use super::Probe;
use crate::check::declare_check;
use crate::request::{Caller, Event, KeyUse};
use crate::{CheckResult, Outcome};

declare_check!(
    "unauthenticated.rs",
    "unauthenticated",
    [
        "with --as: a request without any --as header is refused",
        "with 401 or 403 before it is processed: the first principal's",
        "request with the same key afterwards is fresh (no replay,",
        "conflict or in-progress answer)",
    ]
);

impl Probe<'_> {
    /// `--as`: a request without any of the principals' headers is refused
    /// (401 or 403) before it is processed: the first principal's request
    /// with the same key and body afterwards is a fresh one, not a replay,
    /// a conflict or "in progress". `event` is a fresh event.
    pub fn unauthenticated(&self, event: &Event) -> CheckResult {
        let mut check = CheckResult::new(&CHECK);
        let Some(owner) = self.plan.principals.first() else {
            check.outcome = Outcome::NotApplicable;
            check.summary = "no --as credentials given, so the probe cannot tell them from other headers; pass --as NAME='Header: value'".into();
            return check;
        };
        let mut names: Vec<String> = Vec::new();
        for (name, _) in self.plan.principals.iter().flat_map(|p| &p.headers) {
            if !names.iter().any(|known| known.eq_ignore_ascii_case(name)) {
                names.push(name.clone());
            }
        }
        let without = names
            .iter()
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let request = self.plan.request(event, KeyUse::Valid);
        let bare = match self
            .client
            .send(&self.plan.as_caller(request, Caller::Nobody))
        {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        let after = match self.settle(&self.plan.as_caller(
            self.plan.request(event, KeyUse::Valid),
            Caller::Principal(0),
        )) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        let owner = &owner.name;
        check.summary = format!(
            "without {without}: {}{}; then as `{owner}` with the same key and body: {}{}",
            bare.describe(),
            self.client.from(&bare),
            after.describe(),
            self.client.from(&after)
        );
        if bare.is_success() {
            check.fail(format!(
                "{} without credentials: the request was processed, expected 401 or 403",
                bare.describe()
            ));
            check.evidence.push(format!("its body: {}", bare.excerpt()));
        } else if !matches!(bare.status, 401 | 403) {
            check.fail(format!(
                "{} without credentials: expected 401 or 403, the refusal of an unauthenticated request",
                bare.describe()
            ));
            check.evidence.push(format!("its body: {}", bare.excerpt()));
        }
        let replayed = self.replay_mark(&after);
        let conflict = after.status == self.plan.expect.conflict;
        let busy = self.in_progress(&after) && !after.is_success();
        if replayed.is_some() || ((conflict || busy) && !after.is_success()) {
            check.fail(format!(
                "`{owner}`'s request with the key got {}{}: the request without credentials left a record under the key, so it was processed (or claimed the key) before it was refused",
                after.describe(),
                replayed.map_or(String::new(), |mark| format!(", {mark}"))
            ));
            check
                .evidence
                .push(format!("`{owner}`'s answer: {}", after.excerpt()));
        } else if !after.is_success() {
            check.warn(format!(
                "`{owner}`'s request with the key answered {}, not a fresh 2xx, so whether the request without credentials left a record is not shown{}",
                after.describe(),
                if after.status == 401 {
                    format!("; the service does not accept `{owner}`'s credentials: check --as {owner}")
                } else {
                    String::new()
                }
            ));
        }
        check
    }
}
