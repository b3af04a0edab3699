//! The checker: the invariants of exactly-once, proved on a whole history
//! (requests and answers, faults, the ledger and the sink's calls), and
//! the report of a history that breaks one.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

use super::history::{
    Claim, Event, FaultKind, History, Kind, LEASE_MS, RESOLVE_SLACK_MS, RETRY_AFTER_MS, WINDOW_MS,
};
use super::system::Outcome;

/// Clock noise allowed between two timestamps of the database's clock.
const CLOCK_TOLERANCE_MS: i64 = 100;

#[derive(Debug, Clone)]
pub struct Violation {
    /// The key it concerns (an index into the plan's keys).
    pub key: Option<usize>,
    /// The event that shows it, if one does (an index into the events).
    pub event: Option<usize>,
    pub what: String,
}

/// What the checker measured besides the violations.
#[derive(Debug, Clone, Default)]
pub struct Measures {
    /// The longest time without a 2xx answer while clients were told to
    /// retry.
    pub longest_unavailable: Duration,
    /// The longest time a key took to resolve once the faults stopped.
    pub longest_resolve: Duration,
    /// Downstream calls that arrived while another call of the same
    /// request was still outstanding for its caller.
    pub overlapping_calls: usize,
}

pub fn check(history: &History) -> (Vec<Violation>, Measures) {
    let mut violations = Vec::new();
    let plan = &history.plan;
    let key_index: BTreeMap<&str, usize> = plan
        .keys
        .iter()
        .enumerate()
        .map(|(i, key)| (key.as_str(), i))
        .collect();
    let violation =
        |key: Option<usize>, event: Option<usize>, what: String| Violation { key, event, what };

    // 1. Each key's business effect committed at most once per use: two
    // ledger rows of one key closer than window − lease means the second
    // ran while the first's record was live.
    let mut rows_by_key: BTreeMap<&str, Vec<&super::history::LedgerRow>> = BTreeMap::new();
    for row in &history.ledger {
        rows_by_key.entry(row.key.as_str()).or_default().push(row);
    }
    for (key, rows) in &mut rows_by_key {
        let index = key_index.get(key).copied();
        if index.is_none() {
            violations.push(violation(
                None,
                None,
                format!("a ledger row for an unknown key {key}"),
            ));
        }
        rows.sort_by_key(|row| row.at_ms);
        for pair in rows.windows(2) {
            let gap = pair[1].at_ms - pair[0].at_ms;
            let least = (WINDOW_MS - LEASE_MS) as i64 - CLOCK_TOLERANCE_MS;
            if gap < least {
                violations.push(violation(
                    index,
                    None,
                    format!(
                        "the business effect of {key} committed twice {gap} ms apart \
                         (nonces {} by {} and {} by {}; a second effect needs the window, \
                         at least {least} ms)",
                        pair[0].nonce, pair[0].instance, pair[1].nonce, pair[1].instance
                    ),
                ));
            }
        }
    }

    // 2. The sink saw one downstream key per request (idempotency key and
    // body: a key reused after its window with another body is another
    // request downstream too), never one shared by two keys, and every
    // committed effect called it.
    let mut downstream_by_request: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    let mut keys_by_downstream: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for call in &history.sink {
        downstream_by_request
            .entry((call.key.as_str(), call.nonce.as_str()))
            .or_default()
            .insert(call.downstream.as_str());
        keys_by_downstream
            .entry(call.downstream.as_str())
            .or_default()
            .insert(call.key.as_str());
    }
    for ((key, nonce), downstream) in &downstream_by_request {
        if downstream.len() > 1 || downstream.contains("") {
            violations.push(violation(
                key_index.get(key).copied(),
                None,
                format!(
                    "the sink saw {} downstream keys for {key} ({nonce}): {downstream:?}",
                    downstream.len()
                ),
            ));
        }
    }
    for (downstream, keys) in &keys_by_downstream {
        if keys.len() > 1 {
            violations.push(violation(
                None,
                None,
                format!("the downstream key {downstream} was given for several keys: {keys:?}"),
            ));
        }
    }
    // 2b. Whether two calls of one request may be outstanding at once
    // depends on the claim mode (docs/src/contract.md, "When the claim
    // commits"). Committed: the visible in-progress record and its lease
    // keep every other attempt out while one runs, and an attempt is cut
    // off (hanging up on the sink) when its lease ends, before the record
    // can be taken over; so a second call of a request never arrives
    // while an earlier one is outstanding for its caller, and the checker
    // demands it. In-transaction: nothing visible holds the key while the
    // business step runs, and a killed connection or a lost node rolls the
    // claim back while the step's downstream call goes on, so a retry can
    // call downstream at the same time; the docs say this mode is not for
    // steps that call out. There the checker demands what still holds,
    // one downstream key per request (2 above), so a provider that honours
    // it acts once, and only counts the overlaps.
    let mut calls_by_request: BTreeMap<(&str, &str), Vec<&super::system::SinkCall>> =
        BTreeMap::new();
    for call in &history.sink {
        calls_by_request
            .entry((call.key.as_str(), call.nonce.as_str()))
            .or_default()
            .push(call);
    }
    let mut overlapping_calls = 0;
    let tolerance = Duration::from_millis(CLOCK_TOLERANCE_MS as u64);
    for ((key, nonce), calls) in &mut calls_by_request {
        calls.sort_by_key(|call| call.at);
        for (i, later) in calls.iter().enumerate().skip(1) {
            let Some(earlier) = calls[..i]
                .iter()
                .find(|earlier| later.at + tolerance < earlier.ended)
            else {
                continue;
            };
            overlapping_calls += 1;
            if history.plan.claim == Claim::Committed {
                let since = |at: std::time::Instant| {
                    at.saturating_duration_since(history.started).as_secs_f64()
                };
                violations.push(violation(
                    key_index.get(key).copied(),
                    None,
                    format!(
                        "a second downstream call for {key} ({nonce}) from {} at {:.3} s while the call from {} \
                         (at {:.3} s) was outstanding until {:.3} s: the committed claim's lease did not keep it out",
                        later.instance,
                        since(later.at),
                        earlier.instance,
                        since(earlier.at),
                        since(earlier.ended)
                    ),
                ));
            }
        }
    }
    for row in &history.ledger {
        let called = history
            .sink
            .iter()
            .any(|call| call.key == row.key && call.nonce == row.nonce);
        if !called {
            violations.push(violation(
                key_index.get(row.key.as_str()).copied(),
                None,
                format!(
                    "{} ({}) committed without a downstream call",
                    row.key, row.nonce
                ),
            ));
        }
    }

    // 3. Every answer: an expected status, Retry-After where it asks to
    // retry, a 2xx that names a committed receipt of this very request
    // and equals it byte for byte, a conflict only where another body was
    // sent with the key.
    let receipts: BTreeMap<&str, &super::history::LedgerRow> = history
        .ledger
        .iter()
        .map(|row| (row.receipt.as_str(), row))
        .collect();
    for (i, event) in history.events.iter().enumerate() {
        let key = &plan.keys[event.key];
        let quiet = event.sent >= history.resolve_from;
        let mut bad = |what: String| violations.push(violation(Some(event.key), Some(i), what));
        let (status, retry_after, body) = match &event.outcome {
            Outcome::Answer {
                status,
                retry_after,
                body,
                ..
            } => (*status, retry_after, body),
            Outcome::Disconnected => continue,
            Outcome::Failed(error) => {
                bad(format!("no answer from i{}: {error}", event.instance));
                continue;
            }
        };
        match status {
            201 => {
                let text = String::from_utf8_lossy(body);
                let receipt = serde_json::from_slice::<serde_json::Value>(body)
                    .ok()
                    .and_then(|value| value["receipt"].as_str().map(str::to_string));
                match receipt.as_deref().and_then(|receipt| receipts.get(receipt)) {
                    None => bad(format!(
                        "a 201 whose effect is not in the ledger (not durable): {text}"
                    )),
                    Some(row) if row.body.as_bytes() != body.as_slice() => bad(format!(
                        "a 201 that differs from the committed receipt:\n  answered {text}\n  committed {}",
                        row.body
                    )),
                    Some(row) if row.key != *key || row.nonce != event.nonce => bad(format!(
                        "a 201 for {key} ({}) carrying the receipt of {} ({})",
                        event.nonce, row.key, row.nonce
                    )),
                    Some(_) => {}
                }
            }
            409 => {
                let other_body = history.events.iter().any(|other| {
                    other.key == event.key && other.nonce != event.nonce && other.sent < event.done
                });
                if !other_body {
                    bad(format!(
                        "409 for {key} although it was only ever sent with one body"
                    ));
                }
            }
            429 | 503 => {
                if retry_after.is_none() {
                    bad(format!("{status} without Retry-After"));
                }
                if status == 503 && quiet {
                    bad(format!(
                        "503 from i{} after the faults stopped, while its database answers: {}",
                        event.instance,
                        String::from_utf8_lossy(body)
                    ));
                }
            }
            _ => bad(format!(
                "unexpected {status}: {}",
                String::from_utf8_lossy(body)
            )),
        }
    }

    // 4. After the faults stop every key resolves (201, or 409 where
    // another body holds it) within lease + retry delay.
    let mut measures = Measures {
        overlapping_calls,
        ..Measures::default()
    };
    let bound = Duration::from_millis(LEASE_MS + RETRY_AFTER_MS + RESOLVE_SLACK_MS);
    let mut sent_keys: BTreeSet<usize> = BTreeSet::new();
    let mut resolved: BTreeMap<usize, Duration> = BTreeMap::new();
    for event in &history.events {
        if event.kind != Kind::Resolve {
            sent_keys.insert(event.key);
            continue;
        }
        if matches!(
            event.outcome,
            Outcome::Answer {
                status: 201 | 409,
                ..
            }
        ) {
            resolved.entry(event.key).or_insert(event.done);
        }
    }
    for key in &sent_keys {
        match resolved.get(key) {
            None => violations.push(violation(
                Some(*key),
                None,
                format!(
                    "{} never resolved after the faults stopped",
                    plan.keys[*key]
                ),
            )),
            Some(done) => {
                let took = done.saturating_sub(history.resolve_from);
                measures.longest_resolve = measures.longest_resolve.max(took);
                if took > bound {
                    violations.push(violation(
                        Some(*key),
                        None,
                        format!(
                            "{} resolved {:.1} s after the faults stopped (bound: lease + retry delay + {:.1} s slack = {:.1} s)",
                            plan.keys[*key],
                            took.as_secs_f64(),
                            RESOLVE_SLACK_MS as f64 / 1000.0,
                            bound.as_secs_f64()
                        ),
                    ));
                }
            }
        }
    }

    // 5. An outage or a lost race is never recorded as the key's failure
    // (the service has no business failure).
    if let Some(failed) = history.records.get("failed") {
        violations.push(violation(
            None,
            None,
            format!("{failed} records are `failed`: an outage or a race recorded as a failure"),
        ));
    }

    // The longest time between two 2xx answers (or from the start to the
    // first) in which some client was answered "retry" or not at all.
    let mut successes: Vec<Duration> = history
        .events
        .iter()
        .filter(|event| is_success(event))
        .map(|event| event.done)
        .collect();
    successes.sort();
    for event in &history.events {
        let refused = match &event.outcome {
            Outcome::Answer { status, .. } => matches!(status, 429 | 503),
            Outcome::Failed(_) => true,
            Outcome::Disconnected => false,
        };
        if !refused {
            continue;
        }
        let after = successes.partition_point(|done| *done < event.done);
        let Some(next) = successes.get(after) else {
            continue;
        };
        let before = after
            .checked_sub(1)
            .map_or(Duration::ZERO, |i| successes[i]);
        measures.longest_unavailable = measures.longest_unavailable.max(*next - before);
    }
    (violations, measures)
}

fn is_success(event: &Event) -> bool {
    matches!(event.outcome, Outcome::Answer { status: 201, .. })
}

/// The report of a failing history: its seed, the command that replays
/// it, each violation, and for each offending key the sequence of events
/// that breaks the invariant (that key's requests and answers up to the
/// offending one, the faults meanwhile, its ledger rows and downstream
/// calls).
pub fn report(history: &History, violations: &[Violation], test: &str) -> String {
    let plan = &history.plan;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nNEMESIS VIOLATION ({:?}, seed {})\nreplay: IDEMGEN_TEST_NEMESIS=1 IDEMGEN_NEMESIS_SEED={} IDEMGEN_NEMESIS_HISTORIES=1 cargo test --test it nemesis:: {test}\n\
         conditions: claim {:?}, isolation {:?}, skew {:?}, pool {}, purge every 1 s, window {WINDOW_MS} ms, lease {LEASE_MS} ms; \
         faults ended at {:.3} s, resolving from {:.3} s",
        plan.dialect,
        plan.seed,
        plan.seed,
        plan.claim,
        plan.isolation,
        plan.skew,
        plan.pool_size,
        history.quiet.as_secs_f64(),
        history.resolve_from.as_secs_f64()
    );
    for v in violations {
        let _ = writeln!(out, "- {}", v.what);
    }
    let keys: BTreeSet<usize> = violations.iter().filter_map(|v| v.key).take(3).collect();
    for key in keys {
        let name = &plan.keys[key];
        let upto = violations
            .iter()
            .filter(|v| v.key == Some(key))
            .filter_map(|v| v.event)
            .max();
        let events: Vec<(usize, &Event)> = history
            .events
            .iter()
            .enumerate()
            .filter(|(i, event)| event.key == key && upto.is_none_or(|upto| *i <= upto))
            .collect();
        let _ = writeln!(out, "\nevents of {name}:");
        let (from, to) = (
            events.first().map_or(Duration::ZERO, |(_, e)| e.sent),
            events.last().map_or(Duration::ZERO, |(_, e)| e.done),
        );
        let mut lines: Vec<(Duration, String)> = Vec::new();
        for (i, event) in &events {
            let mark = if violations.iter().any(|v| v.event == Some(*i)) {
                ">>"
            } else {
                "  "
            };
            lines.push((
                event.sent,
                format!(
                    "{mark} {:>7.3}s → {:>7.3}s i{} {:?} {}: {}",
                    event.sent.as_secs_f64(),
                    event.done.as_secs_f64(),
                    event.instance,
                    event.kind,
                    event.nonce,
                    describe(&event.outcome)
                ),
            ));
        }
        for fault in &history.faults {
            if fault.start <= to && fault.end >= from {
                lines.push((
                    fault.start,
                    format!(
                        "   {:>7.3}s → {:>7.3}s FAULT {} {}",
                        fault.start.as_secs_f64(),
                        fault.end.as_secs_f64(),
                        fault.kind.name(),
                        fault.detail
                    ),
                ));
            }
        }
        for call in history.sink.iter().filter(|call| call.key == *name) {
            let at = call.at.saturating_duration_since(history.started);
            lines.push((
                at,
                format!(
                    "   {:>7.3}s          SINK {} from {} downstream key {}",
                    at.as_secs_f64(),
                    call.nonce,
                    call.instance,
                    call.downstream
                ),
            ));
        }
        lines.sort_by_key(|(at, _)| *at);
        for (_, line) in lines {
            let _ = writeln!(out, "{line}");
        }
        for row in history.ledger.iter().filter(|row| row.key == *name) {
            let _ = writeln!(
                out,
                "   LEDGER at {} ms (database clock) by {}: {}",
                row.at_ms, row.instance, row.body
            );
        }
    }
    out
}

/// Every fault and request of a history, in time order
/// (`IDEMGEN_NEMESIS_VERBOSE=1`).
pub fn timeline(history: &History) -> String {
    let mut lines: Vec<(Duration, String)> = Vec::new();
    for fault in &history.faults {
        lines.push((
            fault.start,
            format!(
                "{:>7.3}s → {:>7.3}s FAULT {} {}",
                fault.start.as_secs_f64(),
                fault.end.as_secs_f64(),
                fault.kind.name(),
                fault.detail
            ),
        ));
    }
    for event in &history.events {
        let mut answer = describe(&event.outcome);
        answer.truncate(60);
        lines.push((
            event.sent,
            format!(
                "{:>7.3}s → {:>7.3}s i{} {} {:?} {}: {answer}",
                event.sent.as_secs_f64(),
                event.done.as_secs_f64(),
                event.instance,
                history.plan.keys[event.key],
                event.kind,
                event.nonce,
            ),
        ));
    }
    lines.sort_by_key(|(at, _)| *at);
    lines.into_iter().map(|(_, line)| line + "\n").collect()
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Answer {
            status,
            retry_after,
            replayed,
            body,
        } => format!(
            "{status}{}{} {}",
            if *replayed { " replayed" } else { "" },
            retry_after
                .as_ref()
                .map(|value| format!(" retry-after={value}"))
                .unwrap_or_default(),
            String::from_utf8_lossy(body)
        ),
        Outcome::Disconnected => "client hung up".to_string(),
        Outcome::Failed(error) => format!("no answer: {error}"),
    }
}

/// Figures of one dialect's run, over its histories.
#[derive(Debug, Default)]
pub struct Tally {
    pub histories: usize,
    pub requests: usize,
    pub statuses: BTreeMap<String, usize>,
    pub faults: BTreeMap<String, usize>,
    pub violations: usize,
    pub longest_unavailable: Duration,
    pub longest_resolve: Duration,
    /// [`Measures::overlapping_calls`] per claim mode.
    pub overlapping_calls: BTreeMap<String, usize>,
}

impl Tally {
    pub fn add(&mut self, history: &History, violations: usize, measures: &Measures) {
        self.histories += 1;
        self.requests += history.events.len();
        self.violations += violations;
        self.longest_unavailable = self.longest_unavailable.max(measures.longest_unavailable);
        self.longest_resolve = self.longest_resolve.max(measures.longest_resolve);
        *self
            .overlapping_calls
            .entry(format!("{:?}", history.plan.claim))
            .or_default() += measures.overlapping_calls;
        for event in &history.events {
            let status = match &event.outcome {
                Outcome::Answer { status, .. } => status.to_string(),
                Outcome::Disconnected => "hung up".to_string(),
                Outcome::Failed(_) => "no answer".to_string(),
            };
            *self.statuses.entry(status).or_default() += 1;
        }
        let mut count = |name: String, n: usize| *self.faults.entry(name).or_default() += n;
        for kind in [
            FaultKind::KillConnections,
            FaultKind::LockRecords,
            FaultKind::SinkStall,
            FaultKind::RestartServer,
            FaultKind::PartitionInstance,
            FaultKind::KillNode,
            FaultKind::PartitionNode,
        ] {
            let n = history.faults.iter().filter(|f| f.kind == kind).count();
            if n > 0 {
                count(kind.name().to_string(), n);
            }
        }
        let plan = &history.plan;
        count("purge every 1 s (histories)".into(), 1);
        count(format!("claim {:?} (histories)", plan.claim), 1);
        if let Some(isolation) = plan.isolation {
            count(format!("isolation {isolation} (histories)"), 1);
        }
        if let Some((_, offset)) = &plan.skew {
            count(format!("instance clock skewed {offset} s"), 1);
        }
        let kinds = |kind: Kind| plan.clients.iter().filter(|c| c.kind == kind).count();
        count(
            "clients hung up mid-request".into(),
            kinds(Kind::Disconnect),
        );
        count("changed bodies".into(), kinds(Kind::Changed));
        count("keys reused after the window".into(), kinds(Kind::Reuse));
    }
}
