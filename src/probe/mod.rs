//! `idemgen probe`: attacks each idempotent operation of a running service
//! the way retries and races do in production (a burst of identical
//! requests, a replay, a changed body, bad keys, duplicates mid-flight)
//! and reports which promises of its `x-idempotency` contract hold.
//!
//! [`request`] builds a valid request per operation from the spec, [`key`]
//! the keys, [`checks`] sends and judges, [`report`] shows the outcome;
//! [`http`] keeps the client safe (loopback, no redirects, bounded).

pub mod checks;
pub mod http;
pub mod key;
pub mod report;
pub mod request;
pub mod sample;

use std::time::Duration;

use crate::analysis::analyse;
use crate::contract::model::Defaults;
use crate::spec::Workspace;

use checks::Probe;
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
    /// `burst`, `replay`, `conflict`, `missing-key`, `malformed-key`,
    /// `long-key`, `in-progress`, `retry-after`, `scope`.
    pub id: &'static str,
    pub outcome: Outcome,
    /// One line: what was sent and what came back.
    pub summary: String,
    /// Why it failed or was not applicable, and the answers that show it.
    pub evidence: Vec<String>,
    pub warnings: Vec<String>,
    /// Not run to the end because `--max-requests` or `--deadline` ran out.
    pub stopped_early: bool,
}

impl CheckResult {
    pub fn new(id: &'static str) -> CheckResult {
        CheckResult {
            id,
            outcome: Outcome::Pass,
            summary: String::new(),
            evidence: Vec::new(),
            warnings: Vec::new(),
            stopped_early: false,
        }
    }

    pub fn fail(&mut self, why: String) {
        self.outcome = Outcome::Fail;
        self.evidence.push(why);
    }

    pub fn warn(&mut self, why: String) {
        self.warnings.push(why);
    }

    /// Repeated lines (one per answer) once each.
    pub fn dedup(&mut self) {
        let mut seen = std::collections::HashSet::new();
        self.evidence.retain(|line| seen.insert(line.clone()));
        let mut seen = std::collections::HashSet::new();
        self.warnings.retain(|line| seen.insert(line.clone()));
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
    let client = Client::connect(
        &options.base_urls,
        options.allow_remote,
        options.request_timeout,
        options.deadline,
        options.max_requests,
    )
    .map_err(ProbeError)?;
    let mut rng = key::Rng::new();
    let mut operations = Vec::new();
    for (operation, contract) in targets {
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
        match plan.and_then(|plan| {
            let first = plan.event(&mut rng)?;
            let second = plan.event(&mut rng)?;
            let third = plan.event(&mut rng)?;
            let scoped = [plan.event(&mut rng)?, plan.event(&mut rng)?];
            Ok((plan, first, second, third, scoped))
        }) {
            Err(why) => report.skipped = Some(why),
            Ok((plan, first, second, third, scoped)) => {
                report.request = describe_plan(&plan, &first);
                let probe = Probe {
                    client: &client,
                    plan: &plan,
                    burst: options.burst,
                    concurrency: options.concurrency,
                };
                // The burst goes first, on a fresh event, so it races for
                // the first claim; the key checks come after it, so a
                // service that wrongly accepts them meets a finished event.
                let (burst, settled) = probe.burst(&first);
                report.checks.push(burst);
                report.checks.push(probe.replay(&first, &settled));
                report.checks.push(probe.conflict(&first, &settled));
                report.checks.extend(probe.key_checks(&first, &mut rng));
                report.checks.push(probe.in_progress_honesty(&second));
                report.checks.push(probe.retry_after_honesty(&third));
                report.checks.push(probe.scope(&scoped[0], &scoped[1]));
            }
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
    Ok(Report {
        spec: spec.to_string(),
        base_urls: client.instances().to_vec(),
        operations,
        requests: client.requests_sent(),
        elapsed: client.elapsed(),
    })
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
