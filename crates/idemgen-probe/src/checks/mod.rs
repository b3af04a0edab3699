//! Every probe check, one per file. Each file's `//!` header is the
//! check's documentation and its `declare_check!` the line `idemgen probe
//! --help` gives it; [`CHECKS`] lists them in the order they run. This
//! module holds what they share: the [`Probe`] that sends and judges, and
//! the helpers that read an answer.

use std::time::Duration;

use super::check::Check;
use super::http::{Answer, Client, SendError, shown_header};
use super::request::{Event, KeyUse, Plan};
use super::{CheckResult, Outcome};

pub mod burst;
pub mod conflict;
pub mod in_progress;
pub mod long_key;
pub mod malformed_key;
pub mod missing_key;
pub mod principals;
pub mod replay;
pub mod replay_fidelity;
pub mod retry_after;
pub mod scope;
pub mod unauthenticated;

/// All checks, in the order they run on an operation and `idemgen probe
/// --help` lists them.
pub const CHECKS: &[Check] = &[
    burst::CHECK,
    replay::CHECK,
    replay_fidelity::CHECK,
    conflict::CHECK,
    missing_key::CHECK,
    malformed_key::CHECK,
    long_key::CHECK,
    in_progress::CHECK,
    retry_after::CHECK,
    scope::CHECK,
    principals::CHECK,
    unauthenticated::CHECK,
];

/// Most replay attempts that meet an in-progress answer before giving up.
const REPLAY_ATTEMPTS: usize = 4;
/// 4xx answers a business step gives once it ran and refused (payment
/// declined, a conflict with the resource's state, a resource gone, a
/// request it understood and will not carry out): final, and stored for
/// replays like a 2xx.
const BUSINESS_REFUSALS: [u16; 4] = [402, 409, 410, 422];
/// Longest wait honoured from a `Retry-After`.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(2);

pub struct Probe<'a> {
    pub client: &'a Client,
    pub plan: &'a Plan,
    pub burst: usize,
    pub concurrency: usize,
}

/// What the burst settled on: the first success, else the first answer
/// that is not "in progress".
pub struct Settled(pub Option<Answer>);

impl Probe<'_> {
    /// `http://a and http://b`: the instances at these indexes.
    fn instance_names(&self, instances: &[usize]) -> String {
        let names: Vec<&str> = instances
            .iter()
            .map(|&index| self.client.instances()[index].as_str())
            .collect();
        match names.as_slice() {
            [] => String::new(),
            [one] => one.to_string(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        }
    }

    fn in_progress(&self, answer: &Answer) -> bool {
        answer.status == self.plan.expect.in_progress
    }

    /// One answer as evidence: who sent it, which instance answered, and
    /// an excerpt.
    fn show(&self, check: &mut CheckResult, who: &str, answer: &Answer) {
        check.evidence.push(format!(
            "{who}{}: {}",
            self.client.from(answer),
            answer.excerpt()
        ));
    }

    /// "Try again later" that is not the contract's in-progress answer:
    /// 429 or 503 with `Retry-After` (a busy pool, a lease that ran out).
    /// Not final, and no lie: a client retries it.
    fn retry_later(&self, answer: &Answer) -> bool {
        !self.in_progress(answer)
            && matches!(answer.status, 429 | 503)
            && answer.header("retry-after").is_some()
    }

    /// A final answer: a 2xx, or anything but the in-progress answer and
    /// "try again later".
    fn is_final(&self, answer: &Answer) -> bool {
        answer.is_success() || !(self.in_progress(answer) || self.retry_later(answer))
    }

    /// Whether `answer` shows an attempt ran to its end: a 2xx, or a
    /// business refusal ([`BUSINESS_REFUSALS`], or the contract's conflict
    /// status). Not the in-progress answer, not "try again later", not a
    /// 5xx, and not a 4xx a service gives before it runs anything (a bad
    /// credential, an unknown route, a body it cannot read): a probe that
    /// met only those tested nothing.
    fn ran(&self, answer: &Answer) -> bool {
        answer.is_success()
            || ((BUSINESS_REFUSALS.contains(&answer.status)
                || answer.status == self.plan.expect.conflict)
                && self.is_final(answer))
    }

    /// Evidence about an in-progress answer's `Retry-After`: `Err` when
    /// absent, `Ok(Some(warning))` when it disagrees with the contract.
    fn retry_after(&self, answer: &Answer) -> Result<Option<String>, String> {
        let Some(value) = answer.header("retry-after") else {
            return Err(format!(
                "{} without Retry-After: clients cannot tell when to retry",
                answer.describe()
            ));
        };
        let promised = idemgen_spec::contract::duration::retry_after_header_secs(
            self.plan.expect.retry_after_ms,
        );
        Ok(match value.trim().parse::<u64>() {
            Ok(seconds) if seconds == promised => None,
            Ok(seconds) => Some(format!(
                "Retry-After: {seconds}, the contract's in-progress retry-after is {promised} s"
            )),
            Err(_) => Some(format!(
                "Retry-After: `{}` is not whole seconds (an HTTP date works, but seconds are what the contract says)",
                shown_header(value)
            )),
        })
    }

    /// Whether the service marks its replays with `Idempotent-Replayed:
    /// true`: one of `answers` is so marked, or, when none is, one more
    /// `request` (its key already used) gets a marked replay. An unmarked
    /// 2xx from such a service is a first answer.
    fn marks_replays<'a>(
        &self,
        mut answers: impl Iterator<Item = &'a Answer>,
        request: &super::http::Outgoing,
    ) -> bool {
        answers.any(marked_replay)
            || self
                .settle(request)
                .is_ok_and(|answer| marked_replay(&answer))
    }

    /// Sends `request`, waiting out in-progress answers (bounded).
    fn settle(&self, request: &super::http::Outgoing) -> Result<Answer, SendError> {
        let mut answer = self.client.send(request)?;
        for _ in 1..REPLAY_ATTEMPTS {
            if !self.in_progress(&answer) || answer.is_success() {
                break;
            }
            let wait = answer
                .header("retry-after")
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map_or(Duration::from_millis(200), Duration::from_secs);
            std::thread::sleep(wait.min(MAX_RETRY_WAIT));
            answer = self.client.send(request)?;
        }
        Ok(answer)
    }

    /// The missing-key status the contract expects, or the result of a
    /// key check when its profile makes the key optional.
    fn key_required(&self, check: &Check) -> Result<u16, CheckResult> {
        self.plan.expect.missing_key.ok_or_else(|| {
            let mut result = CheckResult::new(check);
            result.outcome = Outcome::NotApplicable;
            result.summary = format!(
                "profile `{}` makes the key optional",
                self.plan.expect.profile
            );
            result
        })
    }

    /// Sends `event` with a key the contract refuses (`what` describes
    /// it; `None` when the template cannot build one) and expects the
    /// missing-key status `expect`.
    fn refused_key(
        &self,
        check: &Check,
        expect: u16,
        event: &Event,
        key_use: Option<KeyUse<'_>>,
        what: String,
    ) -> CheckResult {
        let mut check = CheckResult::new(check);
        let Some(key_use) = key_use else {
            check.outcome = Outcome::NotApplicable;
            check.summary = "no such key can be built from this template".into();
            return check;
        };
        let answer = match self.client.send(&self.plan.request(event, key_use)) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        check.summary = format!("{what}: {}{}", answer.describe(), self.client.from(&answer));
        if answer.status != expect {
            check.fail(format!("expected {expect}: {}", answer.excerpt()));
            if answer.is_success() {
                check
                    .evidence
                    .push("the request was processed without a valid key".into());
            }
        }
        check
    }
}

/// Whether `answer` says it is a replay: `Idempotent-Replayed: true`. The
/// header with another value (`false`) marks a first answer.
fn marked_replay(answer: &Answer) -> bool {
    answer
        .header("idempotent-replayed")
        .is_some_and(|value| value.trim().eq_ignore_ascii_case("true"))
}

/// `1 × 200 OK, 7 × 429 Too Many Requests`, in order of first appearance.
fn tally(answers: &[Answer], probe: &Probe<'_>) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for answer in answers {
        let mut label = format!("{}", answer.status);
        if probe.in_progress(answer) && answer.header("retry-after").is_some() {
            label.push_str(" with Retry-After");
        } else if marked_replay(answer) && answer.is_success() {
            label.push_str(" replayed");
        }
        label.push_str(&probe.client.from(answer));
        match counts.iter_mut().find(|(seen, _)| *seen == label) {
            Some((_, count)) => *count += 1,
            None => counts.push((label, 1)),
        }
    }
    if counts.is_empty() {
        return "no answers".into();
    }
    counts
        .iter()
        .map(|(label, count)| format!("{count} × {label}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How `other` shows it is `first`'s stored answer, handed to a request
/// that must never see it: a 2xx marked as a replay, or byte for byte the
/// same body. `None` when it is not.
fn stored_answer_of(first: &Answer, other: &Answer) -> Option<&'static str> {
    if !other.is_success() {
        return None;
    }
    if marked_replay(other) {
        Some("Idempotent-Replayed: true")
    } else if other.same_body(first) {
        Some("a byte-identical 2xx body")
    } else {
        None
    }
}
