//! # window-end
//!
//! **What it checks.** Only with `--window-wait DURATION` of at least the
//! contract's `window` plus 2 s (it waits that long): a fresh key is
//! answered, and once its window has passed (counted from that answer,
//! plus 1 s) `--burst` requests with the same key and body are released at
//! once. The contract makes an expired record new: exactly one of them
//! runs the business step again (a 2xx other than the old answer, or
//! without the replay mark from a service that marks its replays), and
//! every other gets the in-progress status with a `Retry-After` or that new
//! answer.
//!
//! **Why it matters.** A key reused after its window is a new request, and
//! a late burst of it is a race like any other. A store that lets each
//! request that finds the expired record take it over (or that deletes it
//! and then claims the key in two steps) pays several times for one event;
//! one that ignores expiry answers from a record it no longer promises to
//! keep.
//!
//! **What a failure means.** More than one request ran the step (different
//! 2xx bodies, or several first answers from a service that marks its
//! replays), none did (every 2xx was the old answer replayed, or every
//! request was told the key is in progress: the record or its claim
//! outlived the window), or a request got another answer. The check does
//! not apply without `--window-wait` (or with a shorter one), without a
//! `window` in the contract, when the first request does not succeed, or
//! when the service marks no replay and answers the same bytes each time,
//! so nothing tells a replay from a new execution, unless `--observe`
//! counts the key's effects: the count around the burst must rise by
//! exactly one (and, when it rose by one for the key's first request, a
//! burst that left it unmoved ran nothing).

use std::time::Duration;

use super::{Probe, tally};
use crate::check::declare_check;
use crate::http::{Answer, SendError};
use crate::request::{Event, KeyUse};
use crate::{CheckResult, Outcome};

/// Waited past the window, so a record the service dates a little later
/// than the probe's clock (it stamps the claim, or the finish) has
/// expired too.
const PAST_THE_WINDOW: Duration = Duration::from_secs(1);
/// What `--window-wait` must leave beyond the window: the wait past it,
/// and the burst after it.
const WAIT_SLACK: Duration = Duration::from_secs(2);

declare_check!(
    "window_end.rs",
    "window-end",
    [
        "with --window-wait: a key reused at once by N requests after its",
        "window ends: exactly one new execution, the rest in progress",
    ]
);

impl Probe<'_> {
    /// A burst of a key whose window has ended: one new execution.
    pub fn window_end(&self, event: &Event) -> CheckResult {
        let mut check = CheckResult::new(&CHECK);
        let Some(window) = self.plan.expect.window_ms.map(Duration::from_millis) else {
            check.outcome = Outcome::NotApplicable;
            check.summary = "the contract declares no `window`".into();
            return check;
        };
        let needed = window + WAIT_SLACK;
        if self.window_wait < needed {
            check.outcome = Outcome::NotApplicable;
            check.summary = format!(
                "the window is {} s: reusing a key after it takes --window-wait {}s or more ({})",
                window.as_secs_f64(),
                needed.as_secs_f64().ceil(),
                if self.window_wait.is_zero() {
                    "not given".to_string()
                } else {
                    format!("given: {} s", self.window_wait.as_secs_f64())
                }
            );
            return check;
        }
        let request = self.plan.request(event, KeyUse::Valid);
        let before_old = self.count_before(event);
        let old = match self.settle(&request) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        if !old.is_success() {
            check.outcome = Outcome::NotApplicable;
            check.summary = format!(
                "the first request answered {}{}: give the service a request it accepts (--example, --set POINTER=VALUE, --body-file)",
                old.describe(),
                self.client.from(&old)
            );
            return check;
        }
        let wait = window + PAST_THE_WINDOW;
        if self.client.time_left() < wait + WAIT_SLACK {
            check.outcome = Outcome::NotApplicable;
            check.stopped_early = true;
            check.summary = "not sent".into();
            check.evidence.push(SendError::Deadline.to_string());
            return check;
        }
        std::thread::sleep(wait);
        // The count around the first request shows whether it counts
        // this operation's effect at all; the one around the burst, how
        // often the expired key ran.
        let first_effect = self.count_after(before_old, event);
        let counts_this = first_effect.once();
        let total = self.burst.max(1);
        let (answers, lost) = self.at_once(&request, total);
        let effects = self.count_after(Self::since(&first_effect), event);
        check.summary = format!(
            "{total} requests with a key answered {:.1} s earlier (window {:.1} s): {}",
            wait.as_secs_f64(),
            window.as_secs_f64(),
            tally(&answers, self)
        );
        if let Some(error) = lost.into_iter().next() {
            return check.no_answer(error);
        }
        let successes: Vec<&Answer> = answers.iter().filter(|a| a.is_success()).collect();
        self.record_effects(
            &mut check,
            &effects,
            1,
            !successes.is_empty() && !counts_this,
        );
        for answer in answers.iter().filter(|answer| !answer.is_success()) {
            if self.in_progress(answer) {
                if let Err(why) = self.retry_after(answer) {
                    check.fail(format!("{why}{}", self.client.from(answer)));
                }
            } else {
                check.fail(format!(
                    "{}{} for the expired key: expected {} with Retry-After or the new answer",
                    answer.describe(),
                    self.client.from(answer),
                    self.plan.expect.in_progress
                ));
                check
                    .evidence
                    .push(format!("its body: {}", answer.excerpt()));
            }
        }
        // Each 2xx body other than the old answer's is a new execution.
        let mut new_bodies: Vec<&Answer> = Vec::new();
        for answer in successes.iter().filter(|answer| !answer.same_body(&old)) {
            if !new_bodies.iter().any(|seen| seen.same_body(answer)) {
                new_bodies.push(answer);
            }
        }
        if new_bodies.len() > 1 {
            check.fail(if effects.once() {
                format!(
                    "{} different new 2xx bodies for the expired key, and the effect count shows one effect: the others are not the new answer",
                    new_bodies.len()
                )
            } else {
                format!(
                    "{} different new 2xx bodies for the expired key: the step ran {} times, more than one request took the expired record",
                    new_bodies.len(),
                    new_bodies.len()
                )
            });
            for answer in new_bodies.iter().take(3) {
                self.show(&mut check, "new 2xx body", answer);
            }
            return check;
        }
        let firsts: Vec<&Answer> = successes
            .iter()
            .copied()
            .filter(|answer| !self.marked_replay(answer))
            .collect();
        // One more request of the key, after the burst, shows how the
        // service marks its replays when none of the burst's answers did.
        let marks = self.marks_replays(successes.iter().copied(), &request);
        match marks {
            Some(mark) if firsts.len() > 1 && !effects.decides() => {
                check.fail(format!(
                    "{} unmarked 2xx answers for the expired key (first answers, since replays carry `{mark}`): the step ran {} times for one key",
                    firsts.len(),
                    firsts.len()
                ));
            }
            Some(mark) if firsts.is_empty() && new_bodies.is_empty() => {
                check.fail(format!(
                    "every 2xx is the old answer replayed (`{mark}`): the record outlived its window, and an expired record is a new one"
                ));
                self.show(&mut check, "old answer", &old);
            }
            Some(_) => {}
            None if new_bodies.is_empty()
                && !successes.is_empty()
                && counts_this
                && effects.rose() == Some(0) =>
            {
                // The count moved for the first request and not for the
                // burst: every 2xx was the old record's.
                check.fail(
                    "no request ran the step: every 2xx is the old answer's bytes, and the effect count did not move (it rose by one for the key's first request): the record outlived its window, and an expired record is a new one"
                        .into(),
                );
            }
            None if new_bodies.is_empty() && !successes.is_empty() && effects.decides() => {}
            None if new_bodies.is_empty() && !successes.is_empty() => {
                check.outcome = Outcome::NotApplicable;
                check.evidence.push(
                    "every 2xx is the old answer's bytes, and the service marks no replay: nothing tells a replay of the old record from a new execution with the same output (a count of the key's effects would: --observe)"
                        .into(),
                );
            }
            None => {}
        }
        if successes.is_empty() {
            if !answers.is_empty() && answers.iter().all(|answer| self.in_progress(answer)) {
                // The key is new, yet every request is told another runs:
                // the record (or a claim) outlived the window, and no
                // retry will ever get an answer.
                check.fail(format!(
                    "no request ran the step: each was told the expired key is in progress ({}), so the key stays blocked past its window",
                    self.plan.expect.in_progress
                ));
            } else if check.outcome == Outcome::Pass {
                check.outcome = Outcome::NotApplicable;
                check
                    .evidence
                    .push("no request succeeded, so nothing shows how often the step ran".into());
            }
        }
        check
    }
}
