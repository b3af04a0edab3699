//! # retry-after
//!
//! **What it checks.** A client that waits each advertised `Retry-After`
//! and retries gets the final answer within `server.max-processing` plus 3
//! retries, each after the contract's `responses.in-progress.retry-after`.
//! A duplicate that is held (a lock) rather than told to wait must be
//! answered within the same time.
//!
//! **Why it matters.** `Retry-After` is a promise that waiting helps. A
//! service whose in-progress record outlives the attempt (a crashed worker,
//! a lease never released) keeps sending its clients' retries into an
//! attempt that is not running, until they give up on a request that may
//! have succeeded.
//!
//! **What a failure means.** No final answer came within that time, the
//! held duplicate was answered after it, or, with several instances, the
//! first attempt and the duplicate each got a first answer (2xx answers
//! without a replay mark from two instances: each ran the step; judged as
//! in `burst`). A 429 or 503 with `Retry-After`
//! is waited out like the in-progress answer. The check does not apply when
//! the contract declares no `server.max-processing`, or when no attempt
//! ran to an answer (a 2xx or a business refusal) and the duplicates were
//! not kept waiting on one: the service answered only 5xx, "try again
//! later", or a refusal before running anything. With `--observe`, the
//! key's effect count decides as in `burst`.

use idemgen_spec::contract::duration::retry_after_header_secs;
use std::time::{Duration, Instant};

use super::Probe;
use crate::check::declare_check;
use crate::http::{Answer, Outgoing, SendError, shown_header};
use crate::request::{Event, KeyUse};
use crate::{CheckResult, Outcome};

/// Retries, each after the advertised `Retry-After`, that a client may need
/// beyond `server.max-processing` before the final answer.
const RETRIES_PAST_MAX_PROCESSING: u32 = 3;
/// Shortest wait between retries: a `Retry-After: 0` would otherwise spend
/// the whole request budget in a second.
const MIN_RETRY_WAIT: Duration = Duration::from_millis(100);

declare_check!(
    "retry_after.rs",
    "retry-after",
    [
        "a client that waits each advertised Retry-After and retries",
        "gets the final answer within server.max-processing plus 3",
        "retries (Retry-After as the contract says); a service that",
        "stays in progress longer fails",
    ]
);

impl Probe<'_> {
    /// A client that waits the advertised `Retry-After` and retries must
    /// get the final answer within `server.max-processing` plus a few
    /// retries; a service that keeps saying "in progress, retry in 1 s"
    /// for much longer sends its clients' retries into a void.
    pub fn retry_after_honesty(&self, event: &Event) -> CheckResult {
        let mut check = CheckResult::new(&CHECK);
        let Some(max_processing) = self
            .plan
            .expect
            .max_processing_ms
            .map(Duration::from_millis)
        else {
            check.outcome = Outcome::NotApplicable;
            check.summary =
                "the contract declares no `server.max-processing` to hold the service to".into();
            return check;
        };
        let promised =
            Duration::from_secs(retry_after_header_secs(self.plan.expect.retry_after_ms));
        let budget = max_processing + promised * RETRIES_PAST_MAX_PROCESSING;
        let request = self.plan.request(event, KeyUse::Valid);
        let before = self.count_before(event);
        let started = Instant::now();
        let (first, outcome) = std::thread::scope(|scope| {
            let first = scope.spawn(|| self.client.send(&request));
            std::thread::sleep(Duration::from_millis(5));
            let outcome = self
                .client
                .send(&request)
                .and_then(|answer| self.wait_out(&request, answer, started, budget, promised));
            let first = first
                .join()
                .unwrap_or_else(|_| Err(SendError::Transport("the sender panicked".into())));
            (first, outcome)
        });
        // The two requests may reach the service in either order. When the
        // one sent first was told to wait and the other ran at once, the
        // first is the client that waits.
        let (first, outcome) = match (first, outcome) {
            (Ok(early), Ok(ran)) if ran.waits.is_empty() && !self.is_final(&early) => {
                let waited = self.wait_out(&request, early, started, budget, promised);
                (Ok(ran.last), waited)
            }
            other => other,
        };
        let Waited {
            last,
            waits,
            elapsed,
            settled,
        } = match outcome {
            Ok(waited) => waited,
            Err(error) => return check.no_answer(error),
        };
        let effects = self.count_after(before, event);
        let advertised = advertised_waits(&waits);
        let first_ran = first.as_ref().is_ok_and(|answer| self.ran(answer));
        let first_answer = first.as_ref().ok().cloned();
        let first = match first {
            Ok(answer) => format!("{}{}", answer.describe(), self.client.from(&answer)),
            Err(error) => error.to_string(),
        };
        // A duplicate still told "in progress" when the budget ran out is
        // kept waiting on an attempt, whatever the first request got (a
        // 5xx after its claim, a timeout): the stale lease this check is
        // for.
        let kept_waiting = !settled && self.in_progress(&last);
        if !first_ran && !self.ran(&last) && !kept_waiting {
            // No attempt ran to an answer (only "busy", "later", a 5xx or
            // a refusal before running anything): nothing shows how long
            // a client waits for one that did.
            check.outcome = Outcome::NotApplicable;
            check.summary = format!(
                "no attempt ran to an answer, a 2xx or a business refusal (the first attempt answered {first}, the duplicate {}{}): give the service a request it accepts (--example, --set POINTER=VALUE, --body-file)",
                last.describe(),
                self.client.from(&last)
            );
            self.record_effects(&mut check, &effects, 1, false);
            return check;
        }
        let allowed = format!(
            "max-processing {} s + {RETRIES_PAST_MAX_PROCESSING} × Retry-After {} s",
            max_processing.as_secs_f64(),
            promised.as_secs()
        );
        if waits.is_empty() {
            // No "in progress" to wait out: the duplicate met a finished
            // attempt, or was held until it finished (a lock), which is
            // honest as long as it is not held past the budget.
            check.summary = format!(
                "the duplicate got {}{} after {:.1} s without an in-progress answer (the first attempt answered {first})",
                last.describe(),
                self.client.from(&last),
                elapsed.as_secs_f64()
            );
            if elapsed > budget {
                check.fail(format!(
                    "held {:.1} s, past {allowed} = {:.1} s: clients time out first",
                    elapsed.as_secs_f64(),
                    budget.as_secs_f64()
                ));
            }
        } else if settled {
            check.summary = format!(
                "{} in progress ({advertised}), then {}{} after {:.1} s, within {allowed}",
                waits.len(),
                last.describe(),
                self.client.from(&last),
                elapsed.as_secs_f64()
            );
        } else {
            check.summary = format!(
                "{} retries after the advertised wait ({advertised}): still {}{} after {:.1} s",
                waits.len(),
                last.describe(),
                self.client.from(&last),
                elapsed.as_secs_f64()
            );
            check.fail(format!(
                "no final answer within {allowed} = {:.1} s: a client that waits as told keeps retrying into an attempt that is not running (the first attempt answered {first})",
                budget.as_secs_f64()
            ));
        }
        // Two instances that each gave the key a first answer each ran
        // the step: the client that waited got an answer, but not the one
        // attempt's.
        if let Some(first) = first_answer.filter(|first| {
            first.is_success()
                && last.is_success()
                && first.instance != last.instance
                && !self.marked_replay(first)
                && !self.marked_replay(&last)
        }) {
            let firsts = [&first, &last];
            let judged = self.judge_firsts(&firsts, &firsts, &request, &effects);
            self.report_firsts(
                &mut check,
                judged,
                &firsts,
                "2xx answers (the first attempt's and the duplicate's)",
                "the business step ran twice for one key",
            );
        }
        self.record_effects(&mut check, &effects, 1, last.is_success());
        check
    }
}

/// A client's wait for the final answer: the last answer, each in-progress
/// answer's `Retry-After`, and whether it ended final within the budget.
struct Waited {
    last: Answer,
    /// Each in-progress answer's `Retry-After`, all that is kept of it: a
    /// server that answers fast with big bodies would otherwise fill
    /// memory.
    waits: Vec<Option<String>>,
    elapsed: Duration,
    settled: bool,
}

impl Probe<'_> {
    /// Waits each advertised `Retry-After` and sends `request` again, from
    /// `answer` on, until a final answer or the budget (counted from
    /// `started`) ends.
    fn wait_out(
        &self,
        request: &Outgoing,
        mut answer: Answer,
        started: Instant,
        budget: Duration,
        promised: Duration,
    ) -> Result<Waited, SendError> {
        let mut waits = Vec::new();
        loop {
            let elapsed = started.elapsed();
            let settled = self.is_final(&answer);
            if settled || elapsed >= budget {
                return Ok(Waited {
                    last: answer,
                    waits,
                    elapsed,
                    settled,
                });
            }
            // What the client is told to wait; a missing or unreadable
            // Retry-After (failed elsewhere) counts as the contract's.
            let header = answer.header("retry-after");
            let advertised = header
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map_or(promised, Duration::from_secs);
            waits.push(header.map(str::to_string));
            // The last retry goes out when the budget ends, not after.
            std::thread::sleep(advertised.max(MIN_RETRY_WAIT).min(budget - elapsed));
            answer = self.client.send(request)?;
        }
    }
}

/// At most this many distinct `Retry-After` values are named; a server
/// that alternates them would otherwise fill the summary.
const ADVERTISED_SHOWN: usize = 4;

/// The `Retry-After` values the client was told, each once, in the order
/// first seen.
fn advertised_waits(waits: &[Option<String>]) -> String {
    let mut distinct: Vec<String> = Vec::new();
    for value in waits.iter().flatten() {
        let shown = shown_header(value.trim());
        if !distinct.contains(&shown) {
            distinct.push(shown);
        }
    }
    match distinct.len() {
        0 => "no Retry-After".into(),
        count if count <= ADVERTISED_SHOWN => format!("Retry-After: {}", distinct.join(", ")),
        count => format!(
            "Retry-After: {}, … ({count} different values)",
            distinct[..ADVERTISED_SHOWN].join(", ")
        ),
    }
}
