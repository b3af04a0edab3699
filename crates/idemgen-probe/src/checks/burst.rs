//! # burst
//!
//! **What it checks.** The probe sends `--burst` identical requests (same
//! key, same body, 8 by default) released at once, `--concurrency` of them
//! in flight together, round-robin over every `--base-url`. Exactly one of
//! them may run the business step: every 2xx answer carries the same body,
//! and every other answer is the contract's in-progress status with a
//! `Retry-After` (whole seconds, as `responses.in-progress.retry-after`
//! says; another value is a warning).
//!
//! **Why it matters.** A burst is what a client's timeout-and-retry, a
//! double click or a redelivered message looks like to the service. When
//! two of those requests both find no record under the key and both run,
//! the customer is charged twice. Instances that do not share one
//! idempotency store each let one request through.
//!
//! **What a failure means.** The step ran more than once for one key (two
//! different 2xx bodies, or several first answers: 2xx answers without a
//! replay mark from a service that marks its replays, or from more than
//! one instance), a duplicate got an answer that is neither the
//! in-progress status nor the first answer, an in-progress answer had no
//! `Retry-After`, or a request got no answer at all. A replay mark is
//! `Idempotent-Replayed: true`, `Idempotency-Replayed: true`, either with
//! an `X-` prefix, or the header `--replay-header` names. Several instances
//! whose replays are declared unmarked (`--replay-header none`) are
//! judged by the `shared-store` test: a store each fails, and when it
//! cannot tell, neither can this check (not applicable). When no request
//! succeeds the check does not apply: give the probe a request the service
//! accepts (`--example`, `--set`, `--body-file`). Unmarked replays from one
//! instance and a race that was never exercised (the first attempt
//! finished before a duplicate arrived) are warnings. With `--observe`, a
//! read that counts the key's effects before and after the burst decides:
//! a count that rose by more than one fails the check whatever the answers
//! looked like, and one that rose by exactly one is its evidence, in place
//! of what marks and the `shared-store` test infer.

use super::{Firsts, Probe, REPLAY_MARKS, Settled, tally};
use crate::check::declare_check;
use crate::http::{Answer, SendError, excerpt};
use crate::request::{Event, KeyUse};
use crate::{CheckResult, Outcome};

declare_check!(
    "burst.rs",
    "burst",
    [
        "N identical requests at once: one first answer, identical 2xx",
        "bodies, every other answer the in-progress status + Retry-After",
    ]
);

impl Probe<'_> {
    /// N identical requests released at once.
    pub fn burst(&self, event: &Event) -> (CheckResult, Settled) {
        let mut check = CheckResult::new(&CHECK);
        let request = self.plan.request(event, KeyUse::Valid);
        let total = self.burst.max(1);
        let before = self.count_before(event);
        let (answers, lost) = self.at_once(&request, total);
        let effects = self.count_after(before, event);
        check.summary = format!(
            "{total} identical requests at once: {}",
            tally(&answers, self)
        );
        // Requests the server left unanswered fail the check even when the
        // probe's budget or deadline then stopped the rest.
        let unanswered: Vec<&SendError> = lost
            .iter()
            .filter(|error| matches!(error, SendError::Transport(_)))
            .collect();
        if let Some(first) = unanswered.first() {
            check.fail(format!(
                "{} of {total} requests got no answer ({first})",
                unanswered.len()
            ));
        }
        if let Some(error) = lost
            .iter()
            .find(|error| !matches!(error, SendError::Transport(_)))
        {
            if check.outcome != Outcome::Fail {
                check.outcome = Outcome::NotApplicable;
            }
            check.stopped_early = true;
            check.evidence.push(error.to_string());
            return (check, Settled(None));
        }

        let successes: Vec<&Answer> = answers.iter().filter(|a| a.is_success()).collect();
        // Each distinct 2xx body, with the first answer that carried it.
        let mut bodies: Vec<&Answer> = Vec::new();
        for answer in &successes {
            if !bodies.iter().any(|seen| seen.same_body(answer)) {
                bodies.push(answer);
            }
        }
        if bodies.len() > 1 {
            check.fail(if effects.once() {
                format!(
                    "{} different 2xx bodies for one key, and the effect count shows one effect: the others are not the first answer replayed",
                    bodies.len()
                )
            } else {
                format!(
                    "{} different 2xx bodies for one key: the business step ran more than once",
                    bodies.len()
                )
            });
            for answer in bodies.iter().take(3) {
                check.evidence.push(format!(
                    "2xx body{}: {}",
                    self.client.from(answer),
                    excerpt(&answer.body)
                ));
            }
            let mut instances: Vec<usize> = bodies.iter().map(|answer| answer.instance).collect();
            instances.sort_unstable();
            instances.dedup();
            if instances.len() > 1 && !effects.once() {
                check.evidence.push(format!(
                    "each of {} ran the step for the same key: the instances do not share one idempotency store",
                    self.instance_names(&instances)
                ));
            }
        }
        let unmarked: Vec<&Answer> = successes
            .iter()
            .copied()
            .filter(|answer| !self.marked_replay(answer))
            .collect();
        let firsts = unmarked.len();
        // Several unmarked 2xx answers are several first answers from a
        // service that marks its replays (when the burst held no replay,
        // one more request tells), and, from several instances, unless the
        // replays are declared unmarked: the step ran for each, even when
        // the outputs match.
        if bodies.len() == 1 && firsts > 1 {
            let judged = self.judge_firsts(&unmarked, &successes, &request, &effects);
            if matches!(judged, Firsts::Fine) {
                check.warn(format!(
                    "{firsts} 2xx answers without a replay mark ({}): replays are unmarked, or the step ran {firsts} times with identical output (a read that counts the key's effects would tell: --observe)",
                    REPLAY_MARKS.join(", ")
                ));
            }
            self.report_firsts(
                &mut check,
                judged,
                &unmarked,
                "2xx answers",
                &format!("the business step ran {firsts} times for one key"),
            );
        }
        self.record_effects(&mut check, &effects, 1, !successes.is_empty());
        let mut others = Vec::new();
        for answer in &answers {
            if self.in_progress(answer) && !answer.is_success() {
                match self.retry_after(answer) {
                    Err(why) => check.fail(format!("{why}{}", self.client.from(answer))),
                    Ok(Some(warning)) => check.warn(warning),
                    Ok(None) => {}
                }
            } else if !answer.is_success() {
                others.push(answer);
            }
        }
        let settled = successes
            .first()
            .map(|answer| (*answer).clone())
            .or_else(|| others.first().map(|answer| (*answer).clone()));
        if successes.is_empty() {
            if let Some(first) = others.first() {
                check.evidence.push(format!(
                    "first answer{}: {} {}",
                    self.client.from(first),
                    first.describe(),
                    first.excerpt()
                ));
            }
            if check.outcome != Outcome::Fail {
                check.outcome = Outcome::NotApplicable;
                check.evidence.push(
                    "no request succeeded, so nothing shows whether the business step ran once; give the service a request it accepts (--example, --set POINTER=VALUE, --body-file)"
                        .into(),
                );
            }
            return (check, Settled(settled));
        }
        for answer in &others {
            check.fail(format!(
                "{}{} while the first attempt {}: expected {} with Retry-After or the first answer",
                answer.describe(),
                self.client.from(answer),
                if answer.received < successes[0].received {
                    "ran"
                } else {
                    "had finished"
                },
                self.plan.expect.in_progress
            ));
            check
                .evidence
                .push(format!("its body: {}", answer.excerpt()));
        }
        let in_progress = answers.iter().filter(|a| self.in_progress(a)).count();
        if in_progress == 0 && total > 1 && check.outcome == Outcome::Pass {
            let first = successes[0];
            check.warn(format!(
                "no duplicate arrived while the first attempt ran (it took {} ms), so the race was not exercised; slow the business step (the payment-callback example: DOWNSTREAM_DELAY_MS=300)",
                (first.received - first.sent).as_millis()
            ));
        }
        (check, Settled(settled))
    }
}
