//! # conflict
//!
//! **What it checks.** The burst's key sent again with one value of the
//! request body changed gets the contract's conflict status (the one it
//! declares, else its status profile's).
//!
//! **Why it matters.** A reused key with a different body is a client bug,
//! or two different payments that collided on one key. Answering with the
//! first request's stored answer silently drops the second payment;
//! running it breaks the key's promise. Only a refusal tells the client.
//!
//! **What a failure means.** Another status came back; when it is the first
//! answer replayed, the service ignores the request fingerprint. The check
//! does not apply when `fingerprint.include` leaves out the body or the
//! body holds no value the probe can change. With `--observe`, an effect
//! count that rose shows the changed request ran the step.

use super::{Probe, Settled};
use crate::check::declare_check;
use crate::request::{Event, KeyUse};
use crate::{CheckResult, Outcome};

declare_check!(
    "conflict.rs",
    "conflict",
    ["same key, one body value changed: the conflict status"]
);

impl Probe<'_> {
    /// Same key, different body: the conflict status.
    pub fn conflict(&self, event: &Event, settled: &Settled) -> CheckResult {
        let mut check = CheckResult::new(&CHECK);
        let expect = self.plan.expect.conflict;
        if !self.plan.expect.fingerprint_body {
            check.outcome = Outcome::NotApplicable;
            check.summary = "`fingerprint.include` leaves out the body".into();
            return check;
        }
        let Some((changed, pointer)) = self.plan.changed(event) else {
            check.outcome = Outcome::NotApplicable;
            check.summary = "the request body has no value the probe can change".into();
            return check;
        };
        // Counted on the first event's read: the changed value is the
        // amount, rarely what the read names.
        let before = self.count_before(event);
        let answer = match self.settle(&self.plan.request(&changed, KeyUse::Valid)) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        let effects = self.count_after(before, event);
        let show = |event: &Event| {
            event
                .body
                .as_ref()
                .and_then(|body| body.pointer(&pointer))
                .map_or_else(String::new, |value| value.to_string())
        };
        check.summary = format!(
            "same key, `{pointer}` {} → {}: {}{}",
            show(event),
            show(&changed),
            answer.describe(),
            self.client.from(&answer)
        );
        if answer.status != expect {
            check.fail(format!("expected {expect}: {}", answer.excerpt()));
            let replayed = settled
                .0
                .as_ref()
                .is_some_and(|first| first.same_body(&answer));
            if answer.is_success() && replayed && !effects.decides() {
                // Only a replay mark or the count shows that the first
                // answer's bytes are a replay and not a second execution
                // with the same output.
                check.evidence.push(if self.marked_replay(&answer) || effects.rose() == Some(0) {
                    "it is the first answer replayed: the request fingerprint is ignored, so a different payment under a reused key is silently dropped"
                        .into()
                } else {
                    "it carries the first answer's bytes without a replay mark: the request fingerprint is ignored, and the changed request was either answered from the first one's record (a different payment silently dropped) or run again with the same output; --observe would tell which"
                        .into()
                });
            }
        }
        self.record_effects(&mut check, &effects, 0, false);
        check
    }
}
