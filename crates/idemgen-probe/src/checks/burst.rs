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
//! different 2xx bodies, or several unmarked first answers from a service
//! that marks its replays with `Idempotent-Replayed: true`), a
//! duplicate got an answer that is neither the in-progress status nor the
//! first answer, an in-progress answer had no `Retry-After`, or a request
//! got no answer at all. When no request succeeds the check does not apply:
//! give the probe a request the service accepts (`--example`, `--set`,
//! `--body-file`). Unmarked replays and a race that was never exercised
//! (the first attempt finished before a duplicate arrived) are warnings.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};

use super::{Probe, Settled, marked_replay, tally};
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
        let threads = self.concurrency.clamp(1, total);
        let barrier = Barrier::new(threads);
        let next = AtomicUsize::new(0);
        let results = Mutex::new(Vec::with_capacity(total));
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    barrier.wait();
                    while next.fetch_add(1, Ordering::SeqCst) < total {
                        let result = self.client.send(&request);
                        results
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(result);
                    }
                });
            }
        });
        let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut answers: Vec<Answer> = Vec::new();
        let mut lost: Vec<SendError> = Vec::new();
        for result in results {
            match result {
                Ok(answer) => answers.push(answer),
                Err(error) => lost.push(error),
            }
        }
        answers.sort_by_key(|answer| answer.received);
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
            check.fail(format!(
                "{} different 2xx bodies for one key: the business step ran more than once",
                bodies.len()
            ));
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
            if instances.len() > 1 {
                check.evidence.push(format!(
                    "each of {} ran the step for the same key: the instances do not share one idempotency store",
                    self.instance_names(&instances)
                ));
            }
        }
        let unmarked: Vec<&Answer> = successes
            .iter()
            .copied()
            .filter(|answer| !marked_replay(answer))
            .collect();
        let firsts = unmarked.len();
        let mut first_instances: Vec<usize> =
            unmarked.iter().map(|answer| answer.instance).collect();
        first_instances.sort_unstable();
        first_instances.dedup();
        // A service that marks its replays, yet gave several unmarked 2xx
        // answers, gave several first answers: it ran the step for each,
        // even if the outputs match. When the burst held no replay, one
        // more request tells.
        if bodies.len() == 1
            && firsts > 1
            && self.marks_replays(successes.iter().copied(), &request)
        {
            if first_instances.len() > 1 {
                check.fail(format!(
                    "{firsts} unmarked 2xx answers (first answers, since replays carry `Idempotent-Replayed: true`) from {}: each ran the step for the same key; the instances do not share one idempotency store",
                    self.instance_names(&first_instances)
                ));
            } else {
                check.fail(format!(
                    "{firsts} unmarked 2xx answers (first answers, since this service marks its replays with `Idempotent-Replayed: true`): the business step ran {firsts} times for one key"
                ));
            }
        } else if firsts > 1 && bodies.len() == 1 {
            check.warn(format!(
                "{firsts} 2xx answers without `Idempotent-Replayed`: replays are unmarked, or the step ran {firsts} times with identical output"
            ));
        }
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
