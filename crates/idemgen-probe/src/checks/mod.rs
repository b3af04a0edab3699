//! One function per promise of the contract. Each sends its requests and
//! returns pass / fail / not applicable with the evidence.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use idemgen_spec::contract::model::FailedPolicy;

use super::http::{Answer, Client, SendError, excerpt};
use super::key;
use super::request::{Caller, Event, KeyUse, Plan, ScopeUse};
use super::{CheckResult, Outcome};

/// Most replay attempts that meet an in-progress answer before giving up.
const REPLAY_ATTEMPTS: usize = 4;
/// Longest wait honoured from a `Retry-After`.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(2);
/// Most duplicates sent while the first attempt of the in-progress check runs.
const STAGGERED_DUPLICATES: usize = 8;
/// Retries, each after the advertised `Retry-After`, that a client may need
/// beyond `server.max-processing` before the final answer.
const RETRIES_PAST_MAX_PROCESSING: u32 = 3;

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

    /// Evidence about an in-progress answer's `Retry-After`: `Err` when
    /// absent, `Ok(Some(warning))` when it disagrees with the contract.
    fn retry_after(&self, answer: &Answer) -> Result<Option<String>, String> {
        let Some(value) = answer.header("retry-after") else {
            return Err(format!(
                "{} without Retry-After: clients cannot tell when to retry",
                answer.describe()
            ));
        };
        let promised = self.plan.expect.retry_after_ms.div_ceil(1000);
        Ok(match value.trim().parse::<u64>() {
            Ok(seconds) if seconds == promised => None,
            Ok(seconds) => Some(format!(
                "Retry-After: {seconds}, the contract's in-progress retry-after is {promised} s"
            )),
            Err(_) => Some(format!(
                "Retry-After: `{value}` is not whole seconds (an HTTP date works, but seconds are what the contract says)"
            )),
        })
    }

    /// N identical requests released at once.
    pub fn burst(&self, event: &Event) -> (CheckResult, Settled) {
        let mut check = CheckResult::new("burst");
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
        if let Some(error) = lost
            .iter()
            .find(|error| !matches!(error, SendError::Transport(_)))
        {
            check.outcome = Outcome::NotApplicable;
            check.stopped_early = true;
            check.evidence.push(error.to_string());
            return (check, Settled(None));
        }
        if !lost.is_empty() {
            check.fail(format!(
                "{} of {total} requests got no answer ({})",
                lost.len(),
                lost[0]
            ));
        }

        let successes: Vec<&Answer> = answers.iter().filter(|a| a.is_success()).collect();
        // Each distinct 2xx body, with the first answer that carried it.
        let mut bodies: Vec<&Answer> = Vec::new();
        for answer in &successes {
            if !bodies.iter().any(|seen| seen.body == answer.body) {
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
            .filter(|answer| answer.header("idempotent-replayed").is_none())
            .collect();
        let firsts = unmarked.len();
        let mut first_instances: Vec<usize> =
            unmarked.iter().map(|answer| answer.instance).collect();
        first_instances.sort_unstable();
        first_instances.dedup();
        // A service that marks its replays, yet gave first answers on two
        // instances, ran the step on each, even if the outputs match. When
        // the burst held no replay, one more request tells.
        let marks_replays = || {
            firsts < successes.len()
                || self
                    .settle(&request)
                    .is_ok_and(|answer| answer.header("idempotent-replayed").is_some())
        };
        if bodies.len() == 1 && first_instances.len() > 1 && marks_replays() {
            check.fail(format!(
                "{firsts} unmarked 2xx answers (first answers, since replays carry `Idempotent-Replayed`) from {}: each ran the step for the same key; the instances do not share one idempotency store",
                self.instance_names(&first_instances)
            ));
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
        check.dedup();
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
        check.dedup();
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

    /// The same request after the burst: the stored answer again.
    pub fn replay(&self, event: &Event, settled: &Settled) -> CheckResult {
        let mut check = CheckResult::new("replay");
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
        let answer = match self.settle(&self.plan.request(event, KeyUse::Valid)) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
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
            return check;
        }
        let replayed = answer
            .header("idempotent-replayed")
            .is_some_and(|value| value.trim().eq_ignore_ascii_case("true"));
        if answer.status == first.status && answer.body == first.body {
            check.summary = format!(
                "{}{} with the first answer's {} bytes{}",
                answer.describe(),
                self.client.from(&answer),
                answer.body.len(),
                if replayed {
                    ", Idempotent-Replayed: true"
                } else {
                    ""
                }
            );
            if !replayed {
                check.warn(
                    "the replay has no `Idempotent-Replayed: true` header, so clients and logs cannot tell it from a first answer"
                        .into(),
                );
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
        check
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

    /// Same key, different body: the conflict status.
    pub fn conflict(&self, event: &Event, settled: &Settled) -> CheckResult {
        let mut check = CheckResult::new("conflict");
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
        let answer = match self.settle(&self.plan.request(&changed, KeyUse::Valid)) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
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
            let first_body = settled.0.as_ref().map(|first| first.body.as_slice());
            if answer.is_success() && first_body == Some(answer.body.as_slice()) {
                check.evidence.push(
                    "it is the first answer replayed: the request fingerprint is ignored, so a different payment under a reused key is silently dropped"
                        .into(),
                );
            }
        }
        check
    }

    /// No key, a malformed key, an over-long key: the missing-key status.
    pub fn key_checks(&self, event: &Event, rng: &mut key::Rng) -> Vec<CheckResult> {
        let Some(expect) = self.plan.expect.missing_key else {
            return ["missing-key", "malformed-key", "long-key"]
                .into_iter()
                .map(|id| {
                    let mut check = CheckResult::new(id);
                    check.outcome = Outcome::NotApplicable;
                    check.summary = format!(
                        "profile `{}` makes the key optional",
                        self.plan.expect.profile
                    );
                    check
                })
                .collect();
        };
        let body = event.body.clone().unwrap_or(serde_json::Value::Null);
        let malformed = key::malformed(&self.plan.template, &body, rng);
        let long = (self.plan.max_length < 8192)
            .then(|| key::over_long(&self.plan.template, self.plan.max_length));
        let cases: [(&str, Option<KeyUse<'_>>, String); 3] = [
            (
                "missing-key",
                Some(KeyUse::Missing),
                format!("no {}", self.plan.key_label()),
            ),
            (
                "malformed-key",
                malformed.as_deref().map(KeyUse::Given),
                format!("`{}`", malformed.as_deref().unwrap_or("")),
            ),
            (
                "long-key",
                long.as_deref().map(KeyUse::Given),
                format!(
                    "a {}-character key (max-length {})",
                    long.as_ref().map_or(0, String::len),
                    self.plan.max_length
                ),
            ),
        ];
        cases
            .into_iter()
            .map(|(id, key_use, what)| {
                let mut check = CheckResult::new(id);
                let Some(key_use) = key_use else {
                    check.outcome = Outcome::NotApplicable;
                    check.summary = "no such key can be built from this template".into();
                    return check;
                };
                let answer = match self.client.send(&self.plan.request(event, key_use)) {
                    Ok(answer) => answer,
                    Err(error) => return check.no_answer(error),
                };
                check.summary =
                    format!("{what}: {}{}", answer.describe(), self.client.from(&answer));
                if answer.status != expect {
                    check.fail(format!("expected {expect}: {}", answer.excerpt()));
                    if answer.is_success() {
                        check
                            .evidence
                            .push("the request was processed without a valid key".into());
                    }
                }
                check
            })
            .collect()
    }

    /// `key.scope`: the same key under another scope value is another key
    /// (neither the first scope's stored answer nor a conflict), and a
    /// request without the scope value is refused, not processed.
    /// `event` and `unscoped` are fresh events.
    pub fn scope(&self, event: &Event, unscoped: &Event) -> CheckResult {
        let mut check = CheckResult::new("scope");
        if self.plan.scopes.is_empty() {
            check.outcome = Outcome::NotApplicable;
            check.summary = if self.plan.principal_scoped {
                "`key.scope` is `principal` only, which the `principals` check covers".into()
            } else {
                "the contract declares no `key.scope`".into()
            };
            return check;
        }
        let shown = |index: usize| {
            self.plan
                .scopes
                .iter()
                .map(|(source, values)| {
                    format!("{} `{}`", Plan::scope_label(source), values[index])
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let first = match self.settle(&self.plan.scoped_request(
            event,
            KeyUse::Valid,
            ScopeUse::First,
        )) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        if !first.is_success() {
            check.outcome = Outcome::NotApplicable;
            check.summary = format!(
                "under {} the first request answered {}{}, so there is no stored answer to leak",
                shown(0),
                first.describe(),
                self.client.from(&first)
            );
            check
                .evidence
                .push(format!("its body: {}", first.excerpt()));
            return check;
        }
        let second = match self.settle(&self.plan.scoped_request(
            event,
            KeyUse::Valid,
            ScopeUse::Second,
        )) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        let missing = match self.client.send(&self.plan.scoped_request(
            unscoped,
            KeyUse::Valid,
            ScopeUse::Missing,
        )) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        check.summary = format!(
            "one key under {}: {}{}; under {}: {}{}; without the scope value: {}{}",
            shown(0),
            first.describe(),
            self.client.from(&first),
            shown(1),
            second.describe(),
            self.client.from(&second),
            missing.describe(),
            self.client.from(&missing)
        );
        if let Some(sign) = stored_answer_of(&first, &second) {
            check.fail(format!(
                "the second scope got the first scope's stored answer ({sign}): one tenant sees another's response"
            ));
            self.show(&mut check, "first scope", &first);
            self.show(&mut check, "second scope", &second);
        } else if second.status == self.plan.expect.conflict {
            check.fail(format!(
                "the second scope got the conflict status {}: the key is not namespaced by the scope",
                self.plan.expect.conflict
            ));
            check
                .evidence
                .push(format!("its body: {}", second.excerpt()));
        }
        if missing.is_success() {
            check.fail(format!(
                "{}{} without the scope value: the request was processed, expected a 4xx refusal",
                missing.describe(),
                self.client.from(&missing)
            ));
            check
                .evidence
                .push(format!("its body: {}", missing.excerpt()));
        } else if !(400..500).contains(&missing.status) {
            check.fail(format!(
                "{}{} without the scope value: expected a 4xx refusal",
                missing.describe(),
                self.client.from(&missing)
            ));
        }
        check
    }

    /// `--as`: the first principal's key and body sent as each other
    /// principal must be a new key to them: a fresh answer or a refusal,
    /// never the first one's stored answer, nor an answer (conflict, in
    /// progress) that tells them the first one's request exists. `event`
    /// is a fresh event; `own` one fresh event per other principal, sent
    /// when that principal is refused, to tell a refusal of the key from
    /// credentials the service does not accept.
    pub fn principals(&self, event: &Event, own: &[Event]) -> CheckResult {
        let mut check = CheckResult::new("principals");
        let principals = &self.plan.principals;
        let Some(owner) = principals.first() else {
            check.outcome = Outcome::NotApplicable;
            check.summary = "no --as principals given; pass two, e.g. --as alice='Authorization: Bearer …' --as bob='Authorization: Bearer …'".into();
            return check;
        };
        let owner = &owner.name;
        if principals.len() < 2 {
            check.outcome = Outcome::NotApplicable;
            check.summary = format!(
                "one principal (`{owner}`) given; a second --as NAME='Header: value' checks that it never gets `{owner}`'s stored answer"
            );
            return check;
        }
        let as_caller = |event: &Event, caller| {
            self.plan
                .as_caller(self.plan.request(event, KeyUse::Valid), caller)
        };
        let first = match self.settle(&as_caller(event, Caller::Principal(0))) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        if !first.is_success() {
            check.outcome = Outcome::NotApplicable;
            check.summary = format!(
                "as `{owner}` the first request answered {}{}, so there is no stored answer to leak",
                first.describe(),
                self.client.from(&first)
            );
            check
                .evidence
                .push(format!("its body: {}", first.excerpt()));
            return check;
        }
        let mut parts = vec![format!(
            "one key and body as `{owner}`: {}{}",
            first.describe(),
            self.client.from(&first)
        )];
        // Principals whose answer showed something either way.
        let mut judged = 0;
        for (index, principal) in principals.iter().enumerate().skip(1) {
            let name = &principal.name;
            let answer = match self
                .client
                .send(&as_caller(event, Caller::Principal(index)))
            {
                Ok(answer) => answer,
                Err(error) => return check.no_answer(error),
            };
            let shown = format!("{}{}", answer.describe(), self.client.from(&answer));
            let reveals = [
                self.plan.expect.conflict,
                self.plan.expect.in_progress,
                409,
                422,
            ]
            .contains(&answer.status);
            if let Some(sign) = stored_answer_of(&first, &answer) {
                judged += 1;
                parts.push(format!("as `{name}`: {shown}, `{owner}`'s stored answer"));
                check.fail(format!(
                    "`{name}` got `{owner}`'s stored answer ({sign}): one principal sees another's response; keys are not namespaced by the principal"
                ));
                self.show(&mut check, &format!("`{owner}`"), &first);
                self.show(&mut check, &format!("`{name}`"), &answer);
            } else if answer.is_success() {
                judged += 1;
                parts.push(format!("as `{name}`: {shown}, a fresh answer"));
            } else if reveals {
                judged += 1;
                parts.push(format!("as `{name}`: {shown}"));
                check.fail(format!(
                    "`{name}` got {}: it tells `{name}` that `{owner}`'s request with this key exists; expected a fresh answer or a refusal",
                    answer.describe()
                ));
                check
                    .evidence
                    .push(format!("its body: {}", answer.excerpt()));
            } else if answer.status >= 500 || answer.status < 400 {
                judged += 1;
                parts.push(format!("as `{name}`: {shown}"));
                check.fail(format!(
                    "`{name}` got {}: expected a fresh answer or a refusal (a 4xx)",
                    answer.describe()
                ));
                check
                    .evidence
                    .push(format!("its body: {}", answer.excerpt()));
            } else {
                // A refusal: of this key, or of the principal altogether?
                let Some(own) = own.get(index - 1) else {
                    continue;
                };
                let control = match self.settle(&as_caller(own, Caller::Principal(index))) {
                    Ok(answer) => answer,
                    Err(error) => return check.no_answer(error),
                };
                if control.is_success() {
                    judged += 1;
                    parts.push(format!(
                        "as `{name}`: {shown}, refused (a key of `{name}`'s own: {})",
                        control.describe()
                    ));
                } else {
                    parts.push(format!(
                        "as `{name}`: {shown}, and {} for a key of `{name}`'s own",
                        control.describe()
                    ));
                    check.warn(format!(
                        "`{name}` is refused for a fresh key too ({}): the service does not accept these credentials or this request from `{name}`, so nothing shows whether `{name}` could see `{owner}`'s answer; check --as {name}",
                        control.describe()
                    ));
                }
            }
        }
        check.summary = parts.join("; ");
        if judged == 0 && check.outcome != Outcome::Fail {
            check.outcome = Outcome::NotApplicable;
        }
        check
    }

    /// `--as`: a request without any of the principals' headers is refused
    /// (401 or 403) before it is processed: the first principal's request
    /// with the same key and body afterwards is a fresh one, not a replay,
    /// a conflict or "in progress". `event` is a fresh event.
    pub fn unauthenticated(&self, event: &Event) -> CheckResult {
        let mut check = CheckResult::new("unauthenticated");
        let Some(owner) = self.plan.principals.first() else {
            check.outcome = Outcome::NotApplicable;
            check.summary = "no --as credentials given, so the probe cannot tell them from other headers; pass --as NAME='Header: value'".into();
            return check;
        };
        let mut names: Vec<String> = Vec::new();
        for (name, _) in self.plan.principals.iter().flat_map(|p| &p.headers) {
            if !names.iter().any(|known| known.eq_ignore_ascii_case(name)) {
                names.push(name.clone());
            }
        }
        let without = names
            .iter()
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let request = self.plan.request(event, KeyUse::Valid);
        let bare = match self
            .client
            .send(&self.plan.as_caller(request, Caller::Nobody))
        {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        let after = match self.settle(&self.plan.as_caller(
            self.plan.request(event, KeyUse::Valid),
            Caller::Principal(0),
        )) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        let owner = &owner.name;
        check.summary = format!(
            "without {without}: {}{}; then as `{owner}` with the same key and body: {}{}",
            bare.describe(),
            self.client.from(&bare),
            after.describe(),
            self.client.from(&after)
        );
        if bare.is_success() {
            check.fail(format!(
                "{} without credentials: the request was processed, expected 401 or 403",
                bare.describe()
            ));
            check.evidence.push(format!("its body: {}", bare.excerpt()));
        } else if !matches!(bare.status, 401 | 403) {
            check.fail(format!(
                "{} without credentials: expected 401 or 403, the refusal of an unauthenticated request",
                bare.describe()
            ));
            check.evidence.push(format!("its body: {}", bare.excerpt()));
        }
        let replayed = after
            .header("idempotent-replayed")
            .is_some_and(|value| value.trim().eq_ignore_ascii_case("true"));
        let conflict = after.status == self.plan.expect.conflict;
        let busy = self.in_progress(&after) && !after.is_success();
        if replayed || ((conflict || busy) && !after.is_success()) {
            check.fail(format!(
                "`{owner}`'s request with the key got {}{}: the request without credentials left a record under the key, so it was processed (or claimed the key) before it was refused",
                after.describe(),
                if replayed { ", Idempotent-Replayed: true" } else { "" }
            ));
            check
                .evidence
                .push(format!("`{owner}`'s answer: {}", after.excerpt()));
        } else if !after.is_success() {
            check.warn(format!(
                "`{owner}`'s request with the key answered {}, not a fresh 2xx, so whether the request without credentials left a record is not shown{}",
                after.describe(),
                if after.status == 401 {
                    format!("; the service does not accept `{owner}`'s credentials: check --as {owner}")
                } else {
                    String::new()
                }
            ));
        }
        check
    }

    /// Duplicates sent 10 ms apart while a first attempt runs: each must
    /// be the in-progress answer (or, at the very end, the first answer
    /// replayed), never a 2xx with an empty or different body.
    pub fn in_progress_honesty(&self, event: &Event) -> CheckResult {
        let mut check = CheckResult::new("in-progress");
        let request = self.plan.request(event, KeyUse::Valid);
        // Set once any answer is final (not "in progress"): no more
        // duplicates are needed after that.
        let settled = AtomicBool::new(false);
        let is_final = |answer: &Result<Answer, SendError>| {
            answer.as_ref().is_ok_and(|answer| {
                answer.is_success() || !(self.in_progress(answer) || self.retry_later(answer))
            })
        };
        let send = || {
            let answer = self.client.send(&request);
            if is_final(&answer) {
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
        let mut answers = Vec::with_capacity(results.len());
        for result in results {
            match result {
                Ok(answer) => answers.push(answer),
                Err(error) => return check.no_answer(error),
            }
        }
        // Which request reached the server first is unknown. The one that
        // did the work gave a final answer (not "in progress"), one with a
        // body when some are empty, and, of those, took longest.
        answers.sort_by_key(|answer| {
            (
                answer.is_success() || !(self.in_progress(answer) || self.retry_later(answer)),
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
            return check;
        }
        let mut reran: Vec<&Answer> = Vec::new();
        for answer in &during {
            let same_as_first = answer.status == first.status && answer.body == first.body;
            if same_as_first {
                continue; // a replay that raced the first answer's delivery
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
        if !reran.is_empty() {
            check.fail(format!(
                "{} duplicate(s) answered 2xx with a different body than the first attempt's: the business step ran again",
                reran.len()
            ));
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
        check.dedup();
        check
    }
    /// A client that waits the advertised `Retry-After` and retries must
    /// get the final answer within `server.max-processing` plus a few
    /// retries; a service that keeps saying "in progress, retry in 1 s"
    /// for much longer sends its clients' retries into a void.
    pub fn retry_after_honesty(&self, event: &Event) -> CheckResult {
        let mut check = CheckResult::new("retry-after");
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
        let promised = Duration::from_secs(self.plan.expect.retry_after_ms.div_ceil(1000).max(1));
        let budget = max_processing + promised * RETRIES_PAST_MAX_PROCESSING;
        let request = self.plan.request(event, KeyUse::Valid);
        let (first, outcome) = std::thread::scope(|scope| {
            let first = scope.spawn(|| self.client.send(&request));
            std::thread::sleep(Duration::from_millis(5));
            let started = Instant::now();
            let mut waits: Vec<Answer> = Vec::new();
            let outcome = loop {
                let answer = match self.client.send(&request) {
                    Ok(answer) => answer,
                    Err(error) => break Err(error),
                };
                if answer.is_success() || !self.in_progress(&answer) {
                    break Ok((answer, waits, started.elapsed(), true));
                }
                let elapsed = started.elapsed();
                if elapsed >= budget {
                    break Ok((answer, waits, elapsed, false));
                }
                // What the client is told to wait; a missing or unreadable
                // Retry-After (failed elsewhere) counts as the contract's.
                let advertised = answer
                    .header("retry-after")
                    .and_then(|value| value.trim().parse::<u64>().ok())
                    .map_or(promised, Duration::from_secs);
                waits.push(answer);
                // The last retry goes out when the budget ends, not after.
                std::thread::sleep(advertised.min(budget - elapsed));
            };
            let first = first
                .join()
                .unwrap_or_else(|_| Err(SendError::Transport("the sender panicked".into())));
            (first, outcome)
        });
        let (last, waits, elapsed, settled) = match outcome {
            Ok(outcome) => outcome,
            Err(error) => return check.no_answer(error),
        };
        let advertised = waits
            .iter()
            .filter_map(|answer| answer.header("retry-after"))
            .map(|value| value.trim().to_string())
            .collect::<Vec<_>>();
        let advertised = match advertised.first() {
            Some(value) if advertised.iter().all(|other| other == value) => {
                format!("Retry-After: {value}")
            }
            Some(_) => format!("Retry-After: {}", advertised.join(", ")),
            None => "no Retry-After".into(),
        };
        let first = match first {
            Ok(answer) => format!("{}{}", answer.describe(), self.client.from(&answer)),
            Err(error) => error.to_string(),
        };
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
        check
    }
}

/// `1 × 200 OK, 7 × 429 Too Many Requests`, in order of first appearance.
fn tally(answers: &[Answer], probe: &Probe<'_>) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for answer in answers {
        let mut label = format!("{}", answer.status);
        if probe.in_progress(answer) && answer.header("retry-after").is_some() {
            label.push_str(" with Retry-After");
        } else if answer.header("idempotent-replayed").is_some() && answer.is_success() {
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
    let replayed = other
        .header("idempotent-replayed")
        .is_some_and(|value| value.trim().eq_ignore_ascii_case("true"));
    if replayed {
        Some("Idempotent-Replayed: true")
    } else if other.body == first.body {
        Some("a byte-identical 2xx body")
    } else {
        None
    }
}
