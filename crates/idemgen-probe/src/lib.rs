//! `idemgen probe`: attacks each idempotent operation of a running service
//! the way retries and races do in production (a burst of identical
//! requests, a replay, a changed body, bad keys, duplicates mid-flight)
//! and reports which promises of its `x-idempotency` contract hold.
//!
//! [`request`] builds a valid request per operation from the spec, [`key`]
//! the keys, [`checks`] sends and judges (one check a file, registered in
//! [`CHECKS`] with a [`check::Check`] each), [`report`] shows the outcome;
//! [`http`] keeps the client safe (loopback, no redirects, bounded);
//! [`server_text`] makes what the service sent safe to print;
//! [`principal`] holds the `--as` credentials and keeps them out of the
//! report; [`observe`] reads the effect count `--observe` points at.

pub mod check;
mod checks;
mod http;
mod key;
pub mod observe;
pub mod principal;
pub mod report;
pub mod request;
mod sample;
mod server_text;

use std::time::Duration;

use idemgen_spec::Workspace;
use idemgen_spec::analysis::analyse;
use idemgen_spec::contract::Contract;
use idemgen_spec::contract::model::{Defaults, KeyLocation, ScopeSource};

use checks::Probe;
pub use checks::{CHECKS, REPLAY_MARKS};
use http::{Client, SendError};
use request::{Plan, RequestOptions};

pub struct ProbeOptions {
    /// One URL per instance of the service; requests go round-robin.
    pub base_urls: Vec<String>,
    /// Profile and dialect of contracts that name none (`idemgen.toml`,
    /// `--profile`), so the probe expects what lint demands.
    pub defaults: Defaults,
    /// operationIds or `METHOD /path`; empty: every idempotent operation.
    pub operations: Vec<String>,
    pub burst: usize,
    pub concurrency: usize,
    pub allow_remote: bool,
    pub max_requests: usize,
    pub request_timeout: Duration,
    pub deadline: Duration,
    pub request: RequestOptions,
    /// How the service marks its replays (`--replay-header`); `None`:
    /// as each operation's contract says (`responses.replayed-header`).
    pub replay_header: Option<ReplayHeader>,
    /// Longest the `window-end` check may wait for a window to end
    /// (`--window-wait`); zero leaves the check out.
    pub window_wait: Duration,
    /// A read that counts a key's effects (`--observe`): the checks that
    /// send one key several times count them before and after.
    pub observe: Option<observe::Observe>,
}

/// How the service marks an answer replayed from its record
/// (`--replay-header`). Whatever it says, an answer that carries one of
/// the common marks ([`REPLAY_MARKS`], value `true`) is a replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayHeader {
    /// Replays carry this header with `true`; `Idempotent-Replayed` by
    /// default.
    Named(String),
    /// The service marks no replay (`--replay-header none`): an unmarked
    /// 2xx is not taken for a first answer, and first answers from several
    /// instances are judged by whether they share one store.
    Unmarked,
}

impl ReplayHeader {
    /// The mark `contract` declares (`responses.replayed-header`).
    pub fn declared_by(contract: &Contract) -> ReplayHeader {
        match contract.replayed_header.value.header() {
            Some(name) => ReplayHeader::Named(name.to_string()),
            None => ReplayHeader::Unmarked,
        }
    }
}

impl Default for ReplayHeader {
    fn default() -> ReplayHeader {
        ReplayHeader::Named("Idempotent-Replayed".into())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    NotApplicable,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::NotApplicable => "not-applicable",
        }
    }
}

#[derive(Debug, Clone)]
pub struct CheckResult {
    /// The id of the check in [`CHECKS`] that produced it.
    pub id: &'static str,
    pub outcome: Outcome,
    /// One line: what was sent and what came back.
    pub summary: String,
    /// Why it failed or was not applicable, and the answers that show it.
    pub evidence: Vec<String>,
    pub warnings: Vec<String>,
    /// Not run to the end because `--max-requests` or `--deadline` ran out.
    pub stopped_early: bool,
    /// With `--observe`: the effect count around each key the check sent.
    pub effects: Vec<observe::EffectCount>,
}

/// Most evidence (or warning) lines one check keeps.
const MAX_LINES: usize = 12;

impl CheckResult {
    pub fn new(check: &check::Check) -> CheckResult {
        CheckResult {
            id: check.id,
            outcome: Outcome::Pass,
            summary: String::new(),
            evidence: Vec::new(),
            warnings: Vec::new(),
            stopped_early: false,
            effects: Vec::new(),
        }
    }

    pub fn fail(&mut self, why: String) {
        self.outcome = Outcome::Fail;
        self.evidence.push(why);
    }

    pub fn warn(&mut self, why: String) {
        self.warnings.push(why);
    }

    /// Repeated lines (one per answer) once each, and at most
    /// [`MAX_LINES`] of each kind: a server that answers each request of a
    /// big burst differently would otherwise bury the verdict.
    pub fn dedup(&mut self) {
        for lines in [&mut self.evidence, &mut self.warnings] {
            let mut seen = std::collections::HashSet::new();
            lines.retain(|line| seen.insert(line.clone()));
            if lines.len() > MAX_LINES {
                let more = lines.len() - (MAX_LINES - 1);
                lines.truncate(MAX_LINES - 1);
                lines.push(format!("… and {more} more such lines"));
            }
        }
    }

    /// The check could not finish: out of budget or time is not a verdict,
    /// no answer at all is a failure.
    pub fn no_answer(mut self, error: SendError) -> CheckResult {
        let summary = match error {
            SendError::Transport(_) => {
                self.fail(error.to_string());
                "no answer"
            }
            _ => {
                self.outcome = Outcome::NotApplicable;
                self.stopped_early = true;
                self.evidence.push(error.to_string());
                "not sent"
            }
        };
        if self.summary.is_empty() {
            self.summary = summary.into();
        }
        self
    }
}

pub struct OperationReport {
    pub name: String,
    pub method: String,
    pub path: String,
    pub profile: String,
    /// What the probe sent: `POST /callbacks/pay`, body source, key.
    pub request: Vec<String>,
    /// Why the operation could not be probed, if so.
    pub skipped: Option<String>,
    pub checks: Vec<CheckResult>,
}

pub struct Report {
    pub spec: String,
    /// The instances probed, in the order of `--base-url`.
    pub base_urls: Vec<String>,
    pub operations: Vec<OperationReport>,
    pub requests: usize,
    pub elapsed: Duration,
}

impl Report {
    pub fn count(&self, outcome: Outcome) -> usize {
        self.checks()
            .filter(|check| check.outcome == outcome)
            .count()
    }

    pub fn warnings(&self) -> usize {
        self.checks().map(|check| check.warnings.len()).sum()
    }

    fn checks(&self) -> impl Iterator<Item = &CheckResult> {
        self.operations.iter().flat_map(|op| &op.checks)
    }

    pub fn failed(&self) -> bool {
        self.count(Outcome::Fail) > 0
    }

    /// Whether the request budget or the deadline cut the probe short.
    pub fn stopped_early(&self) -> bool {
        self.checks().any(|check| check.stopped_early)
    }
}

/// A reason not to probe at all: bad usage or nothing to talk to (exit 2).
#[derive(Debug)]
pub struct ProbeError(pub String);

pub fn run(
    workspace: &Workspace,
    spec: &str,
    options: &ProbeOptions,
) -> Result<Report, ProbeError> {
    let analysis = analyse(workspace, options.defaults);
    let targets: Vec<_> = analysis
        .selected(&options.operations)
        .map(|(analysed, contract)| (&analysed.operation, contract))
        .collect();
    if targets.is_empty() {
        return Err(ProbeError(if options.operations.is_empty() {
            format!("{spec} has no operation with an `x-idempotency` contract to probe")
        } else {
            format!(
                "no operation with an `x-idempotency` contract matches {} in {spec}",
                options.operations.join(", ")
            )
        }));
    }
    let contracts: Vec<(String, &Contract)> = targets
        .iter()
        .map(|(operation, contract)| (operation.name(), *contract))
        .collect();
    check_scopes(&contracts, &options.request.scopes)?;
    check_principals(&contracts, &options.request.principals)?;
    let client = Client::connect(
        &options.base_urls,
        options.allow_remote,
        options.request_timeout,
        options.deadline,
        options.max_requests,
    )
    .map_err(ProbeError)?;
    let mut rng = key::Rng::new();
    // Every plan first, and the count `--observe` reads for each: a read
    // that does not work stops the probe before any check runs.
    let mut prepared = Vec::new();
    let several = targets.len() > 1;
    for (operation, contract) in targets {
        let replay_header = options
            .replay_header
            .clone()
            .unwrap_or_else(|| ReplayHeader::declared_by(contract));
        let mut report = OperationReport {
            name: operation.name(),
            method: operation.method.clone(),
            path: operation.path.clone(),
            profile: contract.profile.value.name().into(),
            request: Vec::new(),
            skipped: None,
            checks: Vec::new(),
        };
        let plan = Plan::build(workspace, operation, contract, &options.request, &mut rng);
        let events = plan.and_then(|plan| {
            let first = plan.event(&mut rng)?;
            let second = plan.event(&mut rng)?;
            let third = plan.event(&mut rng)?;
            let scoped = [plan.event(&mut rng)?, plan.event(&mut rng)?];
            let owned = plan.event(&mut rng)?;
            let own = (1..plan.principals.len())
                .map(|_| plan.event(&mut rng))
                .collect::<Result<Vec<_>, _>>()?;
            let unauthenticated = plan.event(&mut rng)?;
            let callers = (owned, own, unauthenticated);
            let more = [
                plan.event(&mut rng)?,
                plan.event(&mut rng)?,
                plan.event(&mut rng)?,
                plan.event(&mut rng)?,
            ];
            Ok((plan, first, second, third, scoped, callers, more))
        });
        match events {
            Err(why) => report.skipped = Some(why),
            Ok(events) => {
                report.request = describe_plan(&events.0, &events.1);
                if let Some(observe) = &options.observe {
                    let reading = observe.read(&client, &events.0, &events.1).map_err(|why| {
                        let secrets = principal::secrets(&options.request.principals);
                        let hint = if several {
                            "; --observe is read for every probed operation: probe the one whose effects it counts with --op"
                        } else {
                            ""
                        };
                        ProbeError(principal::redact(
                            &format!(
                                "--observe '{}' ({}): {why}{hint}",
                                observe.text, report.name
                            ),
                            &secrets,
                        ))
                    })?;
                    report.request.push(format!(
                        "effects counted by --observe: {} → {} = {} before the first key",
                        reading.read,
                        if observe.pointer.is_empty() {
                            "the document"
                        } else {
                            observe.pointer.as_str()
                        },
                        reading.count
                    ));
                }
                prepared.push((report, replay_header, Some(events)));
                continue;
            }
        }
        prepared.push((report, replay_header, None));
    }
    let mut operations = Vec::new();
    for (mut report, replay_header, events) in prepared {
        if let Some((
            plan,
            first,
            second,
            third,
            scoped,
            (owned, own, unauthenticated),
            [store, bare_first, quoted_first, expiring],
        )) = events
        {
            let probe = Probe {
                client: &client,
                plan: &plan,
                burst: options.burst,
                concurrency: options.concurrency,
                replay_header: &replay_header,
                window_wait: options.window_wait,
                observe: options.observe.as_ref(),
                store_event: &store,
                store_evidence: std::sync::OnceLock::new(),
            };
            // The burst goes first, on a fresh event, so it races for
            // the first claim; the key checks come after it, so a
            // service that wrongly accepts them meets a finished event.
            let (burst, settled) = probe.burst(&first);
            report.checks.push(burst);
            report.checks.push(probe.replay(&first, &settled));
            report.checks.push(probe.replay_fidelity(&first, &settled));
            report.checks.push(probe.conflict(&first, &settled));
            report.checks.push(probe.missing_key(&first));
            report.checks.push(probe.malformed_key(&first, &mut rng));
            report.checks.push(probe.long_key(&first, &mut rng));
            report.checks.push(probe.in_progress_honesty(&second));
            report.checks.push(probe.retry_after_honesty(&third));
            report.checks.push(probe.scope(&scoped[0], &scoped[1]));
            report.checks.push(probe.principals(&owned, &own));
            report.checks.push(probe.unauthenticated(&unauthenticated));
            report.checks.push(probe.shared_store());
            report
                .checks
                .push(probe.sf_string(&bare_first, &quoted_first));
            report.checks.push(probe.window_end(&expiring));
        }
        operations.push(report);
    }
    if operations.iter().all(|op| op.skipped.is_some()) {
        let reasons: Vec<String> = operations
            .iter()
            .map(|op| format!("{}: {}", op.name, op.skipped.as_deref().unwrap_or("")))
            .collect();
        return Err(ProbeError(format!(
            "no operation could be probed: {}",
            reasons.join("; ")
        )));
    }
    let secrets = principal::secrets(&options.request.principals);
    for operation in &mut operations {
        redact_operation(operation, &secrets);
        for check in &mut operation.checks {
            check.dedup();
        }
    }
    Ok(Report {
        spec: spec.to_string(),
        base_urls: client.instances().to_vec(),
        operations,
        requests: client.requests_sent(),
        elapsed: client.elapsed(),
    })
}

/// Credentials the service echoed in an answer stay out of the report.
fn redact_operation(operation: &mut OperationReport, secrets: &[String]) {
    if secrets.is_empty() {
        return;
    }
    let redact = |text: &mut String| *text = principal::redact(text, secrets);
    operation.request.iter_mut().for_each(redact);
    operation.skipped.iter_mut().for_each(redact);
    for check in &mut operation.checks {
        redact(&mut check.summary);
        check.evidence.iter_mut().for_each(redact);
        check.warnings.iter_mut().for_each(redact);
        for count in &mut check.effects {
            redact(&mut count.read);
        }
    }
}

/// Every `--scope NAME` names a `key.scope` source of a probed operation:
/// a misspelt one would otherwise be ignored and the probe would send its
/// own values.
fn check_scopes(
    contracts: &[(String, &Contract)],
    scopes: &[(String, String)],
) -> Result<(), ProbeError> {
    let declared: Vec<(KeyLocation, &str)> = contracts
        .iter()
        .filter_map(|(_, contract)| contract.key.as_ref())
        .flat_map(|key| &key.scope)
        .filter_map(|source| source.value.request())
        .map(|source| (source.location, source.name.as_str()))
        .collect();
    for (name, _) in scopes {
        let known = declared.iter().any(|(location, declared)| match location {
            KeyLocation::Header => declared.eq_ignore_ascii_case(name),
            _ => declared == name,
        });
        if known {
            continue;
        }
        let mut names: Vec<String> = Vec::new();
        for (location, declared) in &declared {
            let shown = format!("`{declared}` ({})", location.name());
            if !names.contains(&shown) {
                names.push(shown);
            }
        }
        let declared = if names.is_empty() {
            "the probed operations declare no `key.scope` value a request carries".to_string()
        } else {
            format!("the declared names: {}", names.join(", "))
        };
        let hint = if name == "principal" {
            "; `principal` is the verified principal, not a value the request carries: give each principal's credentials with --as NAME='Header: value'"
        } else {
            ""
        };
        return Err(ProbeError(format!(
            "--scope {name}=…: no `key.scope` of the probed operations names `{name}`; {declared}{hint}"
        )));
    }
    Ok(())
}

/// An operation whose keys are scoped by `principal` can only be probed
/// as principals, and its scope only checked with two of them.
fn check_principals(
    contracts: &[(String, &Contract)],
    principals: &[principal::Principal],
) -> Result<(), ProbeError> {
    if principals.len() >= 2 {
        return Ok(());
    }
    let scoped: Vec<&str> = contracts
        .iter()
        .filter(|(_, contract)| {
            contract.key.as_ref().is_some_and(|key| {
                key.scope
                    .iter()
                    .any(|source| source.value == ScopeSource::Principal)
            })
        })
        .map(|(name, _)| name.as_str())
        .collect();
    if scoped.is_empty() {
        return Ok(());
    }
    let given = match principals.first() {
        None => "none was given".to_string(),
        Some(one) => format!("only `{}` was given", one.name),
    };
    let names: Vec<String> = scoped.iter().map(|name| format!("`{name}`")).collect();
    let (subject, verb) = match names.as_slice() {
        [one] => (one.clone(), "scopes its"),
        _ => (format!("operations {}", names.join(", ")), "scope their"),
    };
    Err(ProbeError(format!(
        "{subject} {verb} keys by `principal` (`key.scope`), so the probe must act as principals the service accepts, and needs two to check that one never gets the other's stored answer; {given}: pass --as NAME='Header: value' for each, e.g. --as alice='Authorization: Bearer …' --as bob='Authorization: Bearer …' (or leave the operation out with --op)"
    )))
}

fn describe_plan(plan: &Plan, event: &request::Event) -> Vec<String> {
    let mut lines = vec![
        format!(
            "{} {}",
            plan.method,
            plan.request(event, request::KeyUse::Valid).target
        ),
        format!(
            "key {}: `{}` (format `{}`)",
            plan.key_label(),
            event.key,
            plan.template.source
        ),
    ];
    if let Some(body) = &event.body {
        lines.push(format!("body ({}): {body}", plan.body_source));
    }
    lines.push(format!(
        "expects: in progress {} + Retry-After, conflict {}, missing key {}",
        plan.expect.in_progress,
        plan.expect.conflict,
        plan.expect
            .missing_key
            .map_or("(optional key)".to_string(), |status| status.to_string())
    ));
    if let Some((first, others)) = plan.principals.split_first() {
        let mut line = format!(
            "as `{}` ({}, values not shown)",
            first.name,
            first.header_names()
        );
        if !others.is_empty() {
            let others: Vec<String> = others
                .iter()
                .map(|other| format!("`{}` ({})", other.name, other.header_names()))
                .collect();
            line.push_str(&format!(
                "; the principals check also sends as {}",
                others.join(", ")
            ));
        }
        lines.push(line);
    }
    for (source, values) in &plan.scopes {
        lines.push(format!(
            "scope {}: `{}` (the scope check also sends `{}`)",
            Plan::scope_label(source),
            values[0],
            values[1]
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_keeps_each_line_once_and_a_bounded_number_of_them() {
        let mut check = CheckResult::new(&checks::CHECKS[0]);
        for value in 0..100 {
            check.warn(format!("Retry-After: `{value}` is not whole seconds"));
            check.warn("the same line each time".into());
        }
        check.dedup();
        assert_eq!(check.warnings.len(), MAX_LINES);
        assert_eq!(check.warnings[1], "the same line each time");
        assert_eq!(check.warnings[MAX_LINES - 1], "… and 90 more such lines");
    }
}
