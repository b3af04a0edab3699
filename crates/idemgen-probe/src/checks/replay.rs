//! # replay
//!
//! **What it checks.** After the burst, the same request once more (waiting
//! out in-progress answers) gets the stored answer: the first answer's
//! status and body, byte for byte, marked as a replay (`Idempotent-Replayed:
//! true`, `Idempotency-Replayed: true`, either with an `X-` prefix, or the
//! header `--replay-header` names). When
//! the first attempt failed and the contract says `failed: reject`, it gets
//! the conflict status instead.
//!
//! **Why it matters.** A client that retries after a lost answer must learn
//! what happened the first time. A service that runs the step again, or
//! answers something else, either repeats the side effect or tells the
//! client a different story than the one it acted on.
//!
//! **What a failure means.** The replay's status or body differs from the
//! first answer (or, under `failed: reject`, is not the conflict status),
//! or no answer came back. A replay without a mark is a warning (clients
//! and logs cannot tell it from a first answer), unless `--replay-header
//! none` says the service marks none. Under
//! `failed: retry` after a failed first attempt the check does not apply.
//! With `--observe`, an effect count that rose for the replay fails it:
//! the step ran again for a key already answered.

use idemgen_spec::contract::model::FailedPolicy;

use super::{Probe, REPLAY_MARKS, Settled};
use crate::check::declare_check;
use crate::request::{Event, KeyUse};
use crate::{CheckResult, Outcome, ReplayHeader};

declare_check!(
    "replay.rs",
    "replay",
    [
        "the same request afterwards: the stored answer, byte for byte",
        "(a replay without a replay mark is a warning)",
    ]
);

impl Probe<'_> {
    /// The same request after the burst: the stored answer again.
    pub fn replay(&self, event: &Event, settled: &Settled) -> CheckResult {
        let mut check = CheckResult::new(&CHECK);
        let Some(first) = &settled.0 else {
            check.outcome = Outcome::NotApplicable;
            check.summary = "the burst left no answer to replay".into();
            return check;
        };
        let expect_conflict =
            !first.is_success() && self.plan.expect.failed == FailedPolicy::Reject;
        if !first.is_success() && !expect_conflict {
            check.outcome = Outcome::NotApplicable;
            check.summary = format!(
                "the first attempt answered {}, and under `failed: retry` a retry runs again instead of replaying",
                first.describe()
            );
            return check;
        }
        let before = self.count_before(event);
        let answer = match self.settle(&self.plan.request(event, KeyUse::Valid)) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        let effects = self.count_after(before, event);
        if expect_conflict {
            let conflict = self.plan.expect.conflict;
            check.summary = format!(
                "after a recorded failure ({}), `failed: reject` answered {}",
                first.describe(),
                answer.describe()
            );
            if answer.status != conflict {
                check.fail(format!("expected {conflict}: {}", answer.excerpt()));
            }
            self.record_effects(&mut check, &effects, 0, false);
            return check;
        }
        let replayed = self.replay_mark(&answer);
        if answer.status == first.status && answer.same_body(first) {
            check.summary = format!(
                "{}{} with the first answer's {} bytes{}",
                answer.describe(),
                self.client.from(&answer),
                answer.body.len(),
                replayed
                    .as_ref()
                    .map_or(String::new(), |mark| format!(", {mark}"))
            );
            if replayed.is_none() && *self.replay_header != ReplayHeader::Unmarked {
                check.warn(format!(
                    "the replay carries no replay mark (`{}`, nor any of {}), so clients and logs cannot tell it from a first answer; a service that marks its replays under another name: --replay-header NAME, one that marks none: --replay-header none",
                    self.expected_mark(),
                    REPLAY_MARKS.join(", ")
                ));
            }
        } else {
            check.summary = format!(
                "{}{}, not the stored answer",
                answer.describe(),
                self.client.from(&answer)
            );
            check.fail(format!(
                "first answer{} {} {}",
                self.client.from(first),
                first.describe(),
                first.excerpt()
            ));
            check.evidence.push(format!(
                "replay{} {} {}",
                self.client.from(&answer),
                answer.describe(),
                answer.excerpt()
            ));
        }
        self.record_effects(&mut check, &effects, 0, false);
        check
    }
}
