//! # shared-store
//!
//! **What it checks.** With two or more `--base-url`: a fresh key is
//! answered by the first instance (its in-progress answers waited out),
//! then sent with one body value changed to that instance and to each of
//! the others. Every one of them must answer the contract's conflict
//! status: the key's record, with its fingerprint, is seen by all.
//!
//! **Why it matters.** Instances behind one load balancer that each keep
//! their records in a store of their own each run the business step once
//! per key: a retry that reaches another instance pays again. Identical
//! answers and replay marks can hide that from the other checks; a changed
//! body cannot, since an instance that does not know the key takes it as
//! new. When replays are declared unmarked (`--replay-header none`), the
//! `burst`, `in-progress` and `retry-after` checks judge first answers
//! from several instances by what this test shows.
//!
//! **What a failure means.** The first instance answered the conflict
//! status and another did not (a 2xx: it ran the step for a key the
//! deployment had already answered; another status: it does not know the
//! key): the instances do not share one idempotency store. The check does
//! not apply with one `--base-url`, when `fingerprint.include` leaves out
//! the body or the body has no value to change, when the first request did
//! not succeed, or when the first instance itself does not answer the
//! conflict status (the `conflict` check judges that). With `--observe`,
//! an effect count that rose by more than one for the key fails it too,
//! whatever the instances answered.

use super::{Probe, StoreEvidence};
use crate::check::declare_check;
use crate::observe::Effects;
use crate::request::{Event, KeyUse};
use crate::{CheckResult, Outcome};

declare_check!(
    "shared_store.rs",
    "shared-store",
    [
        "several --base-url: a key one instance answered, sent with a",
        "changed body to each instance: the conflict status from all",
    ]
);

impl Probe<'_> {
    /// Whether the instances share one idempotency store, as the check
    /// reports it.
    pub fn shared_store(&self) -> CheckResult {
        let mut check = CheckResult::new(&CHECK);
        match self.shared_store_evidence() {
            StoreEvidence::Shared(summary) => check.summary = summary,
            StoreEvidence::NotShared(mut lines) => {
                check.outcome = Outcome::Fail;
                check.summary = lines.remove(0);
                check.evidence = lines;
            }
            StoreEvidence::Unknown(why) => {
                check.outcome = Outcome::NotApplicable;
                check.summary = why;
            }
        }
        match self.store_evidence.get() {
            // A count that rose by more than one is in the failure's
            // lines already.
            Some((_, Effects::Counted(count))) if count.rose() > 1 => {
                check.effects.push(count.clone());
            }
            Some((_, effects)) => self.record_effects(&mut check, effects, 1, false),
            None => {}
        }
        check
    }

    /// What one key shows of the instances' store: tested once per
    /// operation, on its own event, whichever check asks first.
    pub(super) fn shared_store_evidence(&self) -> StoreEvidence {
        self.store_evidence
            .get_or_init(|| self.test_store())
            .0
            .clone()
    }

    /// The store test, and the `--observe` count around it.
    fn test_store(&self) -> (StoreEvidence, Effects) {
        let instances = self.client.instances();
        if instances.len() < 2 {
            return (
                StoreEvidence::Unknown(
                    "one --base-url: give one per instance to check that they share one store"
                        .into(),
                ),
                Effects::Unobserved,
            );
        }
        if !self.plan.expect.fingerprint_body {
            return (
                StoreEvidence::Unknown(
                    "`fingerprint.include` leaves out the body, so a changed body is the same request"
                        .into(),
                ),
                Effects::Unobserved,
            );
        }
        let event = self.store_event;
        let Some((changed, pointer)) = self.plan.changed(event) else {
            return (
                StoreEvidence::Unknown("the request body has no value the probe can change".into()),
                Effects::Unobserved,
            );
        };
        let before = self.count_before(event);
        let evidence = self.store_answers(&changed, &pointer);
        let effects = self.count_after(before, event);
        // One key that took effect twice is a store each, whatever the
        // instances answered.
        let evidence = match (&effects, evidence) {
            (Effects::Counted(count), evidence) if count.rose() > 1 => {
                let line = format!(
                    "{} went from {} to {}: the step took effect {} times for one key",
                    count.label(),
                    count.before,
                    count.after,
                    count.rose()
                );
                match evidence {
                    StoreEvidence::NotShared(mut lines) => {
                        lines.push(line);
                        StoreEvidence::NotShared(lines)
                    }
                    StoreEvidence::Shared(summary) | StoreEvidence::Unknown(summary) => {
                        StoreEvidence::NotShared(vec![summary, line])
                    }
                }
            }
            (_, evidence) => evidence,
        };
        (evidence, effects)
    }

    /// A fresh key answered by the first instance, then `changed` sent to
    /// every instance.
    fn store_answers(&self, changed: &Event, pointer: &str) -> StoreEvidence {
        let instances = self.client.instances();
        let event = self.store_event;
        let home = &instances[0];
        let first = match self.settle_on(Some(0), &self.plan.request(event, KeyUse::Valid)) {
            Ok(answer) => answer,
            Err(error) => return StoreEvidence::Unknown(format!("{home}: {error}")),
        };
        if !first.is_success() {
            return StoreEvidence::Unknown(format!(
                "the first request answered {} from {home}, so it left no record to look for; give the service a request it accepts (--example, --set POINTER=VALUE, --body-file)",
                first.describe()
            ));
        }
        let conflict = self.plan.expect.conflict;
        let request = self.plan.request(changed, KeyUse::Valid);
        let mut answers = Vec::with_capacity(instances.len());
        for (index, instance) in instances.iter().enumerate() {
            match self.settle_on(Some(index), &request) {
                Ok(answer) => answers.push(answer),
                Err(error) => return StoreEvidence::Unknown(format!("{instance}: {error}")),
            }
        }
        let tally: Vec<String> = answers
            .iter()
            .map(|answer| format!("{}{}", answer.describe(), self.client.from(answer)))
            .collect();
        let summary = format!(
            "a key answered by {home} ({}), then sent with `{pointer}` changed to each instance: {}",
            first.describe(),
            tally.join(", ")
        );
        if answers[0].status != conflict {
            return StoreEvidence::Unknown(format!(
                "{summary}; {home} itself did not answer the conflict status {conflict}, so the others' answers show nothing of the store"
            ));
        }
        let strangers: Vec<String> = answers[1..]
            .iter()
            .filter(|answer| answer.status != conflict)
            .map(|answer| {
                let what = if answer.is_success() {
                    "took it as a new request and ran the step"
                } else {
                    "does not know the key"
                };
                format!(
                    "{} answered {} where {home} answered {conflict}: it {what}; the instances do not share one idempotency store",
                    instances[answer.instance],
                    answer.describe()
                )
            })
            .collect();
        if strangers.is_empty() {
            StoreEvidence::Shared(summary)
        } else {
            let mut lines = vec![summary];
            lines.extend(strangers);
            StoreEvidence::NotShared(lines)
        }
    }
}
