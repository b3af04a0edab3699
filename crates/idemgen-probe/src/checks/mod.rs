//! Every probe check, one per file. Each file's `//!` header is the
//! check's documentation and its `declare_check!` the line `idemgen probe
//! --help` gives it; [`CHECKS`] lists them in the order they run. This
//! module holds what they share: the [`Probe`] that sends and judges, and
//! the helpers that read an answer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex, OnceLock};
use std::time::Duration;

use super::check::Check;
use super::http::{Answer, Client, Outgoing, SendError, shown_header};
use super::observe::{EffectCount, Effects, Observe, Reading};
use super::request::{Event, KeyUse, Plan};
use super::{CheckResult, Outcome, ReplayHeader};

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
pub mod sf_string;
pub mod shared_store;
pub mod unauthenticated;
pub mod window_end;

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
    shared_store::CHECK,
    sf_string::CHECK,
    window_end::CHECK,
];

/// Header names services mark a replay with, its value `true` (or the
/// structured-field boolean `?1`): idemgen's runtime and Stripe say
/// `Idempotent-Replayed`, the IETF draft's adopters (hono-idempotency, the
/// agentic-commerce and anyonce profiles) `Idempotency-Replayed`, others
/// the same with an `X-` prefix. Whatever `--replay-header` names counts
/// too.
pub const REPLAY_MARKS: [&str; 4] = [
    "Idempotent-Replayed",
    "Idempotency-Replayed",
    "X-Idempotent-Replayed",
    "X-Idempotency-Replayed",
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
    /// How the service marks its replays (`--replay-header`).
    pub replay_header: &'a ReplayHeader,
    /// Longest the `window-end` check may wait for a key's window to end
    /// (`--window-wait`); zero leaves it out.
    pub window_wait: Duration,
    /// The read that counts a key's effects (`--observe`), if any.
    pub observe: Option<&'a Observe>,
    /// A fresh event of its own for the `shared-store` test, run at most
    /// once per operation ([`Probe::shared_store_evidence`]).
    pub store_event: &'a Event,
    pub store_evidence: OnceLock<(StoreEvidence, Effects)>,
}

/// The effect count read before a check's requests for one key (none
/// without `--observe`).
pub struct Before(Option<Result<Reading, String>>);

/// What sending one key to each instance showed of their idempotency
/// store ([`Probe::shared_store_evidence`]).
#[derive(Debug, Clone)]
pub enum StoreEvidence {
    /// Every instance knew the key another had answered.
    Shared(String),
    /// An instance took as new a key another had answered: the lines that
    /// show it.
    NotShared(Vec<String>),
    /// Nothing tells (one instance, no request the service accepts, or a
    /// service that ignores the request fingerprint): why.
    Unknown(String),
}

/// How several 2xx answers for one key that carry no replay mark are
/// judged, when at most one of them may be a first answer
/// ([`Probe::judge_firsts`]).
pub enum Firsts {
    /// At most one, or nothing tells them from replays (one instance, a
    /// service that does not mark its replays).
    Fine,
    /// The service marks its replays (the header named), so each is a
    /// first answer.
    Marked(String),
    /// From several instances, and replays are expected to carry a mark
    /// (`--replay-header`, by default `Idempotent-Replayed`) yet none
    /// does: by the contract each is a first answer.
    UnmarkedReplays,
    /// From several instances, replays declared unmarked, and the
    /// instances shown not to share one store: the lines that show it.
    NotShared(Vec<String>),
    /// From several instances, replays declared unmarked, and nothing
    /// shows whether the instances share a store: why.
    CannotTell(String),
    /// The `--observe` count rose: it, not the answers, says how often
    /// the step ran ([`Probe::record_effects`] reports it).
    Counted,
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

    /// The header that marks `answer` as a replay, as `Name: value`: the
    /// one `--replay-header` names or any of [`REPLAY_MARKS`], with the
    /// value `true` or `?1`. Another value (`false`) marks a first answer.
    fn replay_mark(&self, answer: &Answer) -> Option<String> {
        let named = match self.replay_header {
            ReplayHeader::Named(name) => Some(name.as_str()),
            ReplayHeader::Unmarked => None,
        };
        named.into_iter().chain(REPLAY_MARKS).find_map(|name| {
            let value = answer.header(name)?.trim();
            (value.eq_ignore_ascii_case("true") || value == "?1")
                .then(|| format!("{name}: {}", shown_header(value)))
        })
    }

    fn marked_replay(&self, answer: &Answer) -> bool {
        self.replay_mark(answer).is_some()
    }

    /// The replay mark the contract's service is expected to send, for
    /// messages: `--replay-header`'s name, `Idempotent-Replayed` by default.
    fn expected_mark(&self) -> String {
        match self.replay_header {
            ReplayHeader::Named(name) => format!("{name}: true"),
            ReplayHeader::Unmarked => "none (--replay-header none)".into(),
        }
    }

    /// How the service marks its replays: the mark one of `answers`
    /// carries, or, when none does, the one more `request` (its key
    /// already used) gets as a replay. `None`: it marks none of them. An
    /// unmarked 2xx from a service that marks its replays is a first
    /// answer.
    fn marks_replays<'a>(
        &self,
        mut answers: impl Iterator<Item = &'a Answer>,
        request: &Outgoing,
    ) -> Option<String> {
        answers
            .find_map(|answer| self.replay_mark(answer))
            .or_else(|| {
                self.settle(request)
                    .ok()
                    .and_then(|answer| self.replay_mark(&answer))
            })
    }

    /// Judges `firsts`, 2xx answers for one key that carry no replay mark
    /// and of which at most one may be a first answer (`seen`: every answer
    /// to the key, `request`: one more of it). Several from one instance
    /// are first answers when the service marks its replays, and tell
    /// nothing otherwise. From several instances they are first answers
    /// unless the replays are declared unmarked (`--replay-header none`),
    /// and then the instances' store decides: whether they are the same or
    /// not, each instance that answered a first answer ran the step. An
    /// `--observe` count that rose (`effects`) decides before all that.
    fn judge_firsts(
        &self,
        firsts: &[&Answer],
        seen: &[&Answer],
        request: &Outgoing,
        effects: &Effects,
    ) -> Firsts {
        if firsts.len() < 2 {
            return Firsts::Fine;
        }
        if effects.decides() {
            return Firsts::Counted;
        }
        if let Some(mark) = self.marks_replays(seen.iter().copied(), request) {
            return Firsts::Marked(mark);
        }
        if instances_of(firsts).len() < 2 {
            return Firsts::Fine;
        }
        match self.replay_header {
            ReplayHeader::Named(_) => Firsts::UnmarkedReplays,
            ReplayHeader::Unmarked => match self.shared_store_evidence() {
                StoreEvidence::NotShared(lines) => Firsts::NotShared(lines),
                StoreEvidence::Shared(why) | StoreEvidence::Unknown(why) => Firsts::CannotTell(why),
            },
        }
    }

    /// Records on `check` what [`Probe::judge_firsts`] found of `firsts`,
    /// given by `what` (`2xx answers`, `duplicate(s) …`); `single` is the
    /// failure from one instance of a service that marks its replays.
    fn report_firsts(
        &self,
        check: &mut CheckResult,
        judged: Firsts,
        firsts: &[&Answer],
        what: &str,
        single: &str,
    ) {
        let count = firsts.len();
        let instances = instances_of(firsts);
        let names = self.instance_names(&instances);
        match judged {
            Firsts::Fine | Firsts::Counted => {}
            Firsts::Marked(mark) if instances.len() > 1 => check.fail(format!(
                "{count} unmarked {what} (first answers, since replays carry `{mark}`) from {names}: each ran the step for the same key; the instances do not share one idempotency store"
            )),
            Firsts::Marked(mark) => check.fail(format!(
                "{count} unmarked {what} (first answers, since this service marks its replays with `{mark}`): {single}"
            )),
            Firsts::UnmarkedReplays => check.fail(format!(
                "{count} {what} from {names} carry no replay mark, and replays are to carry `{}` (the names {} count too): each is a first answer, so each of {names} ran the step for the same key; the instances do not share one idempotency store (a service that marks its replays under another name: --replay-header NAME; one that marks none: --replay-header none)",
                self.expected_mark(),
                REPLAY_MARKS.join(", ")
            )),
            Firsts::NotShared(lines) => {
                check.fail(format!(
                    "{count} {what} from {names}, and the instances do not share one idempotency store: each ran the step for the same key, identical answers or not"
                ));
                check.evidence.extend(lines);
            }
            Firsts::CannotTell(why) => {
                if check.outcome != Outcome::Fail {
                    check.outcome = Outcome::NotApplicable;
                }
                check.evidence.push(format!(
                    "{count} {what} from {names}, and replays are declared unmarked (--replay-header none): nothing tells a replay from a first answer, so whether each instance ran the step cannot be told ({why}); a read that counts the key's effects would tell: --observe"
                ));
            }
        }
    }

    /// The `--observe` count for `event`, before a check sends it.
    fn count_before(&self, event: &Event) -> Before {
        Before(
            self.observe
                .map(|observe| observe.read(self.client, self.plan, event)),
        )
    }

    /// The count `effects` ended on, as the start of the next reading.
    fn since(effects: &Effects) -> Before {
        Before(match effects {
            Effects::Unobserved => None,
            Effects::Unread(why) => Some(Err(why.clone())),
            Effects::Counted(count) => Some(Ok(Reading {
                read: count.read.clone(),
                count: count.after,
            })),
        })
    }

    /// The count for `event` after a check's requests, against `before`.
    fn count_after(&self, before: Before, event: &Event) -> Effects {
        let (Some(observe), Some(before)) = (self.observe, before.0) else {
            return Effects::Unobserved;
        };
        match (before, observe.read(self.client, self.plan, event)) {
            (Ok(before), Ok(after)) => Effects::Counted(EffectCount {
                read: after.read,
                pointer: observe.pointer.clone(),
                before: before.count,
                after: after.count,
            }),
            (Err(why), _) | (_, Err(why)) => Effects::Unread(why),
        }
    }

    /// Records what the `--observe` count shows of one key on `check`:
    /// a failure when the step took effect more than `allowed` times (1
    /// for a key's first requests, 0 for a key already answered), the
    /// count as evidence otherwise, and a warning when it tells nothing
    /// (it did not move although `answered` a 2xx, it fell, or it could
    /// not be read).
    fn record_effects(
        &self,
        check: &mut CheckResult,
        effects: &Effects,
        allowed: u64,
        answered: bool,
    ) {
        let count = match effects {
            Effects::Unobserved => return,
            Effects::Unread(why) => {
                check.warn(format!(
                    "the effect count (--observe) could not be read, so the verdict rests on the answers: {why}"
                ));
                return;
            }
            Effects::Counted(count) => count,
        };
        check.effects.push(count.clone());
        let rose = count.rose();
        let (label, before, after) = (count.label(), count.before, count.after);
        if rose > i128::from(allowed) {
            if allowed == 0 {
                check.fail(format!(
                    "{label} went from {before} to {after} for a key already answered: the step took effect again"
                ));
            } else {
                check.fail(format!(
                    "{label} went from {before} to {after}: the step took effect {rose} times for one key"
                ));
            }
        } else if rose < 0 {
            check.warn(format!(
                "{label} went from {before} to {after}: something else changes it, so it tells nothing of this key"
            ));
        } else if rose == 1 {
            check
                .evidence
                .push(format!("one effect: {label} went from {before} to {after}"));
        } else if allowed == 0 {
            check
                .evidence
                .push(format!("no new effect: {label} stayed at {before}"));
        } else if answered {
            check.warn(format!(
                "{label} stayed at {before} although the service answered 2xx: the read does not count this operation's effect (or counts it later), so it tells nothing here"
            ));
        }
    }

    /// `total` copies of `request` released at once, `--concurrency` of
    /// them in flight together: the answers, and the requests that got
    /// none or were not sent.
    fn at_once(&self, request: &Outgoing, total: usize) -> (Vec<Answer>, Vec<SendError>) {
        let threads = self.concurrency.clamp(1, total);
        let barrier = Barrier::new(threads);
        let next = AtomicUsize::new(0);
        let results = Mutex::new(Vec::with_capacity(total));
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    barrier.wait();
                    while next.fetch_add(1, Ordering::SeqCst) < total {
                        let result = self.client.send(request);
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
        (answers, lost)
    }

    /// Sends `request`, waiting out in-progress answers (bounded).
    fn settle(&self, request: &Outgoing) -> Result<Answer, SendError> {
        self.settle_on(None, request)
    }

    /// [`Probe::settle`] on the instance at `instance` (`None`: each
    /// request to the next in turn).
    fn settle_on(&self, instance: Option<usize>, request: &Outgoing) -> Result<Answer, SendError> {
        let send = |request| match instance {
            Some(index) => self.client.send_to(index, request),
            None => self.client.send(request),
        };
        let mut answer = send(request)?;
        for _ in 1..REPLAY_ATTEMPTS {
            if !self.in_progress(&answer) || answer.is_success() {
                break;
            }
            let wait = answer
                .header("retry-after")
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map_or(Duration::from_millis(200), Duration::from_secs);
            std::thread::sleep(wait.min(MAX_RETRY_WAIT));
            answer = send(request)?;
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
        let before = self.count_before(event);
        let answer = match self.client.send(&self.plan.request(event, key_use)) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        let effects = self.count_after(before, event);
        check.summary = format!("{what}: {}{}", answer.describe(), self.client.from(&answer));
        if answer.status != expect {
            check.fail(format!("expected {expect}: {}", answer.excerpt()));
            let counted = effects.rose().filter(|_| answer.is_success());
            if let Some(mark) = self.replay_mark(&answer).filter(|_| answer.is_success()) {
                check.evidence.push(format!(
                    "the answer is a stored one (`{mark}`): the service keeps records under a key the contract refuses"
                ));
            } else if counted.is_some_and(|rose| rose >= 1) {
                check.evidence.push(
                    "the request was processed without a valid key (the effect count rose)".into(),
                );
            } else if counted == Some(0) {
                check.evidence.push(
                    "the service answered 2xx to a key the contract refuses, and the effect count did not move: an answer from a record it keeps under such a key, or one that ran nothing"
                        .into(),
                );
            } else if answer.is_success() && *self.replay_header == ReplayHeader::Unmarked {
                check.evidence.push(
                    "the service answered 2xx to a key the contract refuses: it processed the request, or answered from a record it keeps under such a key (its replays carry no mark, so the answer cannot tell which)"
                        .into(),
                );
            } else if answer.is_success() {
                check
                    .evidence
                    .push("the request was processed without a valid key".into());
            }
        }
        if let Effects::Counted(count) = &effects {
            check.effects.push(count.clone());
        }
        check
    }
}

/// The instances that gave `answers`, each once, in order.
fn instances_of(answers: &[&Answer]) -> Vec<usize> {
    let mut instances: Vec<usize> = answers.iter().map(|answer| answer.instance).collect();
    instances.sort_unstable();
    instances.dedup();
    instances
}

/// `1 × 200 OK, 7 × 429 Too Many Requests`, in order of first appearance.
fn tally(answers: &[Answer], probe: &Probe<'_>) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for answer in answers {
        let mut label = format!("{}", answer.status);
        if probe.in_progress(answer) && answer.header("retry-after").is_some() {
            label.push_str(" with Retry-After");
        } else if probe.marked_replay(answer) && answer.is_success() {
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

impl Probe<'_> {
    /// How `other` shows it is `first`'s stored answer, handed to a
    /// request that must never see it: a 2xx marked as a replay, or byte
    /// for byte the same body. `None` when it is not.
    fn stored_answer_of(&self, first: &Answer, other: &Answer) -> Option<String> {
        if !other.is_success() {
            return None;
        }
        if let Some(mark) = self.replay_mark(other) {
            Some(mark)
        } else if other.same_body(first) {
            Some("a byte-identical 2xx body".into())
        } else {
            None
        }
    }
}
