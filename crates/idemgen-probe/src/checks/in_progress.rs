//! # in-progress
//!
//! **What it checks.** While a first attempt runs, the probe sends
//! duplicates 10 ms apart (up to 8). Each must get the contract's
//! in-progress status with a `Retry-After`, or the first answer itself;
//! none may get a 2xx with an empty body or with a body other than the
//! first attempt's.
//!
//! **Why it matters.** A client takes a 2xx as "done". A service that
//! answers a duplicate with an empty 2xx while the first attempt is still
//! running, or runs the duplicate too, tells the client something that is
//! not true yet, or does the work twice.
//!
//! **What a failure means.** A duplicate got an empty 2xx, a different 2xx
//! body (the step ran again), the first answer without a replay mark from a
//! service that marks its replays (`Idempotent-Replayed`,
//! `Idempotency-Replayed` or the `--replay-header`) or from another
//! instance (a first answer: the step ran again), an in-progress answer
//! without `Retry-After`, or another status. Several instances whose
//! replays are declared unmarked are judged by the `shared-store` test, as
//! in `burst`. A 429 or 503 with `Retry-After` is a warning: not the
//! contract's answer, but one a client retries. When the first attempt
//! finished before a duplicate could be sent, or no attempt ran to an
//! answer (a 2xx or a business refusal), the check does not apply: slow the
//! business step down, or give the service a request it accepts. With
//! `--observe`, the key's effect count decides as in `burst`: more than
//! one effect fails, exactly one is the evidence.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{Probe, tally};
use crate::check::declare_check;
use crate::http::{Answer, SendError};
use crate::request::{Event, KeyUse};
use crate::{CheckResult, Outcome};

/// Most duplicates sent while the first attempt runs.
const STAGGERED_DUPLICATES: usize = 8;

declare_check!(
    "in_progress.rs",
    "in-progress",
    [
        "duplicates while a first attempt runs: never a 2xx with an",
        "empty or different body",
    ]
);

impl Probe<'_> {
    /// Duplicates sent 10 ms apart while a first attempt runs: each must
    /// be the in-progress answer (or, at the very end, the first answer
    /// replayed), never a 2xx with an empty or different body.
    pub fn in_progress_honesty(&self, event: &Event) -> CheckResult {
        let mut check = CheckResult::new(&CHECK);
        let request = self.plan.request(event, KeyUse::Valid);
        // Set once any answer is final (not "in progress"): no more
        // duplicates are needed after that.
        let settled = AtomicBool::new(false);
        let before = self.count_before(event);
        let send = || {
            let answer = self.client.send(&request);
            if answer.as_ref().is_ok_and(|answer| self.is_final(answer)) {
                settled.store(true, Ordering::SeqCst);
            }
            answer
        };
        // Each duplicate goes out on its own thread, 10 ms after the
        // previous one, so a server that blocks them (or runs them) still
        // meets several, each with its own clock.
        let results = std::thread::scope(|scope| {
            let mut senders = vec![scope.spawn(send)];
            std::thread::sleep(Duration::from_millis(5));
            while !settled.load(Ordering::SeqCst) && senders.len() <= STAGGERED_DUPLICATES {
                senders.push(scope.spawn(send));
                std::thread::sleep(Duration::from_millis(10));
            }
            senders
                .into_iter()
                .map(|sender| {
                    sender
                        .join()
                        .unwrap_or_else(|_| Err(SendError::Transport("the sender panicked".into())))
                })
                .collect::<Vec<_>>()
        });
        let effects = self.count_after(before, event);
        let mut answers = Vec::with_capacity(results.len());
        for result in results {
            match result {
                Ok(answer) => answers.push(answer),
                Err(error) => return check.no_answer(error),
            }
        }
        // Which request reached the server first is unknown. The one that
        // did the work ran to an answer (a 2xx or a business refusal, not a
        // 5xx a duplicate may have met), else gave a final one (not "in
        // progress"), one with a body when some are empty, and, of those,
        // took longest.
        answers.sort_by_key(|answer| {
            (
                self.ran(answer),
                self.is_final(answer),
                !answer.body.is_empty(),
                answer.received - answer.sent,
            )
        });
        let Some(first) = answers.pop() else {
            return check.no_answer(SendError::Transport("no request was sent".into()));
        };
        let during: Vec<Answer> = answers
            .into_iter()
            .filter(|answer| answer.sent < first.received)
            .collect();
        check.summary = format!(
            "{} duplicate(s) sent while the first attempt ran (it took {} ms and answered {}{}): {}",
            during.len(),
            (first.received - first.sent).as_millis(),
            first.describe(),
            self.client.from(&first),
            tally(&during, self)
        );
        if during.is_empty() {
            check.outcome = Outcome::NotApplicable;
            check.summary = format!(
                "the first attempt answered in {} ms, before a duplicate could be sent; slow the business step (the payment-callback example: DOWNSTREAM_DELAY_MS=300)",
                (first.received - first.sent).as_millis()
            );
            self.record_effects(&mut check, &effects, 1, first.is_success());
            return check;
        }
        if !self.ran(&first) {
            // No attempt ran to its end (the answer that sorts first is the
            // best there is: the service answered only "busy", "later", a
            // 5xx or a refusal before running anything): what the
            // duplicates got says nothing of how it treats them while one
            // runs.
            check.outcome = Outcome::NotApplicable;
            check.evidence.push(
                "no attempt ran to an answer (a 2xx or a business refusal), so nothing shows how duplicates are treated while one runs; give the service a request it accepts (--example, --set POINTER=VALUE, --body-file)"
                    .into(),
            );
            self.record_effects(&mut check, &effects, 1, false);
            return check;
        }
        let mut reran: Vec<&Answer> = Vec::new();
        // The first answer again, unmarked: a replay that raced the first
        // answer's delivery, or, from a service that marks its replays, a
        // duplicate that ran the step with the same output.
        let mut unmarked_again: Vec<&Answer> = Vec::new();
        for answer in &during {
            let same_as_first = answer.status == first.status && answer.same_body(&first);
            if same_as_first {
                if answer.is_success() && !self.marked_replay(answer) {
                    unmarked_again.push(answer);
                }
                continue;
            }
            if self.in_progress(answer) && !answer.is_success() {
                match self.retry_after(answer) {
                    Err(why) => check.fail(format!("{why}{}", self.client.from(answer))),
                    Ok(Some(warning)) => check.warn(warning),
                    Ok(None) => {}
                }
            } else if self.retry_later(answer) {
                check.warn(format!(
                    "{}{} while the first attempt ran: not the contract's in-progress answer, but a client retries it",
                    answer.describe(),
                    self.client.from(answer)
                ));
            } else if answer.is_success() && answer.body.is_empty() {
                check.fail(format!(
                    "{}{} with an empty body while the first attempt was still running: a client would take it as done",
                    answer.describe(),
                    self.client.from(answer)
                ));
            } else if answer.is_success() {
                reran.push(answer);
            } else {
                check.fail(format!(
                    "{}{} while the first attempt ran: expected {} with Retry-After",
                    answer.describe(),
                    self.client.from(answer),
                    self.plan.expect.in_progress
                ));
            }
        }
        if !unmarked_again.is_empty() && first.is_success() && !self.marked_replay(&first) {
            // The first answer and each unmarked copy of it: first answers
            // when the service marks its replays, or when several
            // instances gave them.
            let mut firsts = vec![&first];
            firsts.extend(unmarked_again.iter().copied());
            let seen: Vec<&Answer> = during.iter().chain([&first]).collect();
            let judged = self.judge_firsts(&firsts, &seen, &request, &effects);
            let count = unmarked_again.len();
            self.report_firsts(
                &mut check,
                judged,
                &firsts,
                "2xx answers with the first attempt's body (it and the duplicates that got it)",
                &format!(
                    "{count} duplicate(s) sent while the first attempt ran got its answer unmarked: each was a first answer, the business step ran again"
                ),
            );
        }
        if !reran.is_empty() {
            check.fail(if effects.once() {
                format!(
                    "{} duplicate(s) answered 2xx with a different body than the first attempt's, and the effect count shows one effect: not the first answer",
                    reran.len()
                )
            } else {
                format!(
                    "{} duplicate(s) answered 2xx with a different body than the first attempt's: the business step ran again",
                    reran.len()
                )
            });
            check.evidence.push(format!(
                "first{}: {}",
                self.client.from(&first),
                first.excerpt()
            ));
            for answer in reran.iter().take(2) {
                check.evidence.push(format!(
                    "duplicate{}: {}",
                    self.client.from(answer),
                    answer.excerpt()
                ));
            }
        }
        self.record_effects(&mut check, &effects, 1, first.is_success());
        check
    }
}
