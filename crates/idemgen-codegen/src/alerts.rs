//! `ops/prometheus/alerts.yml`: Prometheus alert rules over the metrics the
//! runtime serves, their thresholds taken from the same contracts the code
//! was generated from, and `ops/prometheus/alerts.test.yml`, the
//! `promtool test rules` unit tests that prove each alert fires on
//! synthetic series above its threshold and stays silent below it, and
//! `ops/prometheus/runbook.md`, each alert's runbook section with this
//! service's numbers, where every rule's `runbook_url` points.
//!
//! Operations whose contracts give the same numbers share one rule
//! (`operation=~"a|b"`, aggregated `by (operation)`), so a spec with
//! hundreds of operations under one default contract has one rule per
//! alert, not hundreds.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::context::{Operation, Project};
use crate::{File, Owner};

pub const RULES: &str = "ops/prometheus/alerts.yml";
pub const TESTS: &str = "ops/prometheus/alerts.test.yml";
/// Each alert's runbook section, with this service's numbers.
pub const RUNBOOK: &str = "ops/prometheus/runbook.md";

/// The window rates are taken over, and how long a condition must hold.
const RATE_WINDOW: &str = "10m";
const HOLD: &str = "5m";
/// Records stuck in progress must stay stuck this long (the purge task
/// samples them once a minute by default).
const STUCK_HOLD: &str = "15m";
/// The share of answers that may be 503 before the alert (not a contract
/// number: a service that answers 1 % of its requests "unavailable" is
/// down for someone).
const UNAVAILABLE_SHARE: f64 = 0.01;
/// The business step's 99th percentile, as a share of the lease, above
/// which a takeover is near.
const NEAR_LEASE: f64 = 0.75;

/// The contract fields the thresholds come from.
const REPLAY_RATE: &str = "monitoring.replay-rate-alert";
const MAX_PROCESSING: &str = "server.max-processing";

/// The operations of one rule: the same threshold numbers.
struct Cohort<'a> {
    operations: Vec<&'a Operation>,
    /// `monitoring.replay-rate-alert` as a ratio (0.1 % is 0.001).
    replay_ratio: f64,
    lease_secs: f64,
}

impl Cohort<'_> {
    fn matcher(&self) -> String {
        match self.operations.as_slice() {
            [one] => format!("operation=\"{}\"", one.ident),
            many => format!(
                "operation=~\"{}\"",
                many.iter()
                    .map(|op| op.ident.as_str())
                    .collect::<Vec<_>>()
                    .join("|")
            ),
        }
    }

    /// The operation the unit tests drive.
    fn sample(&self) -> &str {
        &self.operations[0].ident
    }

    /// The operations, for messages: a few by name, else how many.
    fn names(&self) -> String {
        let names: Vec<&str> = self.operations.iter().map(|op| op.name.as_str()).collect();
        match names.len() {
            0..=3 => names.join(", "),
            many => format!("{} and {} more operations", names[..3].join(", "), many - 3),
        }
    }
}

/// One alert rule and the series its unit tests feed it.
struct Alert {
    name: &'static str,
    expr: String,
    hold: &'static str,
    severity: &'static str,
    /// The label the alert carries besides `severity`: `operation` from
    /// the expression, or the record table's.
    labels: Vec<(&'static str, String)>,
    summary: String,
    description: String,
    /// What the rule watches, for the runbook: its operations, or the
    /// record table.
    watches: String,
    /// The contract fields behind the rule, with this rule's values.
    fields: Vec<(&'static str, String)>,
    /// Series (`name{labels}`, promtool's expanding notation) that cross
    /// the threshold, and series that stay below it.
    above: Vec<(String, String)>,
    below: Vec<(String, String)>,
}

/// What each alert means and what to do, the same for every service: the
/// sections of the manual's alerts page (`docs/src/alerts.md`, rendered
/// from here by the book test) and of every generated `runbook.md`, which
/// adds the service's own numbers.
const GUIDE: [(&str, &str); 7] = [
    (
        "IdempotencyReplayRateHigh",
        "More than the threshold of an operation's requests are answered with a
stored response. Contract field: `monitoring.replay-rate-alert`. A client
retries requests that already succeeded: its retry policy broke (retrying
on success, or on a status it should not), or answers are lost on the way
back (a proxy timing out before the service answers; compare
`client.timeout` with the request histogram). The window did its job:
nothing ran twice; find the client in the access logs.",
    ),
    (
        "IdempotencyInProgressRising",
        "In-progress answers plus takeovers exceed the threshold's share of first
attempts. Contract field: `server.max-processing` (and `client.timeout`).
Retries arrive while their first attempt still runs: the client's timeout
is shorter than the business step. Takeovers mean an attempt ran past its
lease (or its process died) and a retry took the key over; the first
attempt was rolled back. Compare `idempotency_business_duration_seconds`
with `server.max-processing`; raise it (and re-run `idemgen window`, since
the window must grow with it), or make the step faster.",
    ),
    (
        "IdempotencyBusinessNearMaxProcessing",
        "The business step's 99th percentile is above 75 % of
`server.max-processing`. Contract field: `server.max-processing`. Past the
lease the attempt is cut off with 503 and a retry takes the key over, so a
step that creeps toward the lease turns into takeovers and 503s. Raise
`server.max-processing` (then `idemgen window`), or find what slowed the
step down (the span's `business_ms`).",
    ),
    (
        "IdempotencyConflictsRising",
        "Keys reused with a different request exceed the threshold's share of
first attempts. Contract fields: `key.format`, `fingerprint.include`
(and `responses.failed: reject`, under which a retry after a recorded
failure is a conflict too). A client generates keys that collide (a
counter, a timestamp), or changes a request between retries (a new
timestamp in the body). The first request's result stands; nothing ran
twice.",
    ),
    (
        "IdempotencyLostRacesHigh",
        "Races lost on the database to a duplicate sent at the same moment exceed
the threshold's share of first attempts. Contract field:
`monitoring.replay-rate-alert` (the share), `client.retries`. Every lost
race is answered correctly (in progress or a replay), but many mean that
clients send copies in parallel (hedged requests, a fan-out) rather than
retry after `client.timeout`. The `class` label says where the race was
lost: `claim` and `reclaim` are normal under parallel copies; `business`
and `commit` cost a rolled-back business step.",
    ),
    (
        "IdempotencyUnavailable",
        "More than 1 % of an operation's answers are 503. Contract field:
`server.max-processing` (a 503 \"processing took too long\" is an attempt cut
off at its lease). Otherwise the database is unreachable, or a commit's
outcome is unknown (the connection broke while it ran). Clients retry with
the same key after `Retry-After`, and the record table keeps the request
exactly-once meanwhile; check `GET /healthz` and the database.",
    ),
    (
        "IdempotencyRecordsStuckInProgress",
        "For 15 minutes the record table has held records in progress whose lease
ran out. Contract field: `server.max-processing` (the lease) and `window`.
Their first attempt neither finished nor released the key: the process
died or hangs mid-request, and no client retried. A retry with the same key
takes the record over at once; otherwise the key stays blocked until its
window ends and the purge deletes it. Look for crashes or restarts at the
time the records were created.",
    ),
];

/// The manual's sections (`docs/src/alerts.md`, a generated part): each
/// alert's `## Name` and its guide.
pub fn guide_sections() -> String {
    GUIDE
        .iter()
        .map(|(name, text)| format!("## {name}\n\n{text}\n"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn guide(alert: &str) -> &'static str {
    GUIDE
        .iter()
        .find(|(name, _)| *name == alert)
        .map(|(_, text)| *text)
        .unwrap_or_else(|| panic!("{alert} has no guide"))
}

/// The three files, or none when no operation is idempotent.
pub fn files(project: &Project) -> Vec<File> {
    let cohorts = cohorts(project);
    if cohorts.is_empty() {
        return Vec::new();
    }
    let mut alerts = Vec::new();
    for cohort in &cohorts {
        alerts.extend(cohort_alerts(cohort));
    }
    alerts.push(stuck(project, &cohorts));
    vec![
        File {
            path: RULES.to_string(),
            contents: rules_yaml(project, &alerts),
            owner: Owner::Idemgen,
        },
        File {
            path: TESTS.to_string(),
            contents: tests_yaml(project, &alerts),
            owner: Owner::Idemgen,
        },
        File {
            path: RUNBOOK.to_string(),
            contents: runbook_md(project, &alerts),
            owner: Owner::Idemgen,
        },
    ]
}

fn cohorts(project: &Project) -> Vec<Cohort<'_>> {
    let mut by_numbers: BTreeMap<(String, u64), Cohort<'_>> = BTreeMap::new();
    for op in &project.operations {
        let Some(contract) = &op.contract else {
            continue;
        };
        let replay_ratio = contract.replay_rate_alert / 100.0;
        let numbers = (number(replay_ratio), contract.lease_ms);
        by_numbers
            .entry(numbers)
            .or_insert_with(|| Cohort {
                operations: Vec::new(),
                replay_ratio,
                lease_secs: contract.lease_ms as f64 / 1000.0,
            })
            .operations
            .push(op);
    }
    by_numbers.into_values().collect()
}

/// `value` as Prometheus reads it, without float noise (`0.001`, not
/// `0.0010000000000000002`).
fn number(value: f64) -> String {
    let text = format!("{value:.9}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text.is_empty() || text == "-" {
        "0".to_string()
    } else {
        text.to_string()
    }
}

/// `value` in percent, for messages.
fn percent(ratio: f64) -> String {
    format!("{} %", number(ratio * 100.0))
}

fn rate(metric: &str, matcher: &str) -> String {
    format!("sum by (operation) (rate({metric}{{{matcher}}}[{RATE_WINDOW}]))")
}

/// A counter growing by `per_minute` every minute for 40 minutes.
fn growing(per_minute: f64) -> String {
    format!("0+{}x40", number(per_minute))
}

/// The per-operation alerts of one cohort.
fn cohort_alerts(cohort: &Cohort<'_>) -> Vec<Alert> {
    let m = cohort.matcher();
    let op = cohort.sample();
    let names = cohort.names();
    let r = cohort.replay_ratio;
    let lease = cohort.lease_secs;
    let first = rate("idempotency_first_attempts_total", &m);
    let replays = rate("idempotency_replays_total", &m);
    let operation = vec![("operation", op.to_string())];
    let series = |metric: &str, extra: &str| format!("{metric}{{operation=\"{op}\"{extra}}}");
    // A thousand first attempts a minute; the watched count at twice the
    // threshold's share, and at half of it.
    let traffic = (
        series("idempotency_first_attempts_total", ""),
        growing(1000.0),
    );
    let watched = |metric: &str, extra: &str| {
        (
            vec![
                traffic.clone(),
                (series(metric, extra), growing(2.0 * r * 1000.0)),
            ],
            vec![
                traffic.clone(),
                (series(metric, extra), growing(0.5 * r * 1000.0)),
            ],
        )
    };
    let replay_share = percent(r);
    let lease_text = format!("{} s", number(lease));
    let labels_note = "{{ $labels.operation }}";
    let mut alerts = Vec::new();

    let (above, below) = watched("idempotency_replays_total", "");
    alerts.push(Alert {
        name: "IdempotencyReplayRateHigh",
        expr: format!("{replays}\n  / ({first} + {replays})\n  > {}", number(r)),
        hold: HOLD,
        severity: "warning",
        watches: names.clone(),
        fields: vec![(REPLAY_RATE, replay_share.clone())],
        labels: operation.clone(),
        summary: format!(
            "{labels_note}: more than {replay_share} of requests are answered by replay"
        ),
        description: format!(
            "Over {RATE_WINDOW}, the share of requests answered with a stored response is above \
             monitoring.replay-rate-alert ({replay_share}) of the contract of {names}. A client \
             retries requests that already succeeded: its retry policy broke, or answers are lost \
             on the way back."
        ),
        above,
        below,
    });

    let (mut above, mut below) = watched("idempotency_in_progress_total", "");
    // The runtime serves every counter of an operation, at 0 until counted.
    let no_takeovers = (
        series("idempotency_takeovers_total", ""),
        "0x40".to_string(),
    );
    above.push(no_takeovers.clone());
    below.push(no_takeovers);
    alerts.push(Alert {
        name: "IdempotencyInProgressRising",
        expr: format!(
            "({} + {})\n  / {first}\n  > {}",
            rate("idempotency_in_progress_total", &m),
            rate("idempotency_takeovers_total", &m),
            number(r)
        ),
        hold: HOLD,
        severity: "warning",
        watches: names.clone(),
        fields: vec![(REPLAY_RATE, replay_share.clone()), (MAX_PROCESSING, lease_text.clone())],
        labels: operation.clone(),
        summary: format!(
            "{labels_note}: duplicates answered in progress, or taken over, exceed {replay_share} of first attempts"
        ),
        description: format!(
            "Over {RATE_WINDOW}, retries arrive while their first attempt still runs, or take over \
             one whose lease ran out. Check server.max-processing ({} s) of the contract of \
             {names} against the business step's latency and client.timeout: a lease shorter \
             than the step, or a client that gives up before it ends, sends duplicates here.",
            number(lease)
        ),
        above,
        below,
    });

    let bucket = "idempotency_business_duration_seconds_bucket";
    let le = |bound: &str| series(bucket, &format!(",le=\"{bound}\""));
    let near = number(NEAR_LEASE * lease);
    let (half, ninety, full) = (number(0.5 * lease), number(0.9 * lease), number(lease));
    alerts.push(Alert {
        name: "IdempotencyBusinessNearMaxProcessing",
        expr: format!(
            "histogram_quantile(0.99, sum by (operation, le) (rate({bucket}{{{m}}}[{RATE_WINDOW}])))\n  > {near}"
        ),
        hold: HOLD,
        severity: "warning",
        watches: names.clone(),
        fields: vec![(MAX_PROCESSING, format!("{lease_text} (the alert at {near} s, {})", percent(NEAR_LEASE)))],
        labels: operation.clone(),
        summary: format!(
            "{labels_note}: the business step's 99th percentile is above {} of server.max-processing",
            percent(NEAR_LEASE)
        ),
        description: format!(
            "Over {RATE_WINDOW}, 1 % of business steps of {names} take more than {near} s of \
             their server.max-processing ({} s). Past the lease the attempt is cut off (503) and a \
             retry takes the key over: raise server.max-processing, or make the step faster.",
            number(lease)
        ),
        // Every step between 90 % of the lease and the lease, or all
        // within half of it.
        above: vec![
            (le(&half), "0x40".into()),
            (le(&ninety), "0x40".into()),
            (le(&full), growing(100.0)),
            (le("+Inf"), growing(100.0)),
        ],
        below: vec![
            (le(&half), growing(100.0)),
            (le(&ninety), growing(100.0)),
            (le(&full), growing(100.0)),
            (le("+Inf"), growing(100.0)),
        ],
    });

    let (above, below) = watched("idempotency_conflicts_total", "");
    alerts.push(Alert {
        name: "IdempotencyConflictsRising",
        expr: format!(
            "{}\n  / {first}\n  > {}",
            rate("idempotency_conflicts_total", &m),
            number(r)
        ),
        hold: HOLD,
        severity: "warning",
        watches: names.clone(),
        fields: vec![(REPLAY_RATE, replay_share.clone())],
        labels: operation.clone(),
        summary: format!(
            "{labels_note}: keys reused with another request exceed {replay_share} of first attempts"
        ),
        description: format!(
            "Over {RATE_WINDOW}, requests of {names} reuse a key with a different request (or \
             after a failure under responses.failed: reject). A client generates keys wrongly \
             (see key.format) or changes a request between retries; fingerprint.include says \
             which parts must stay the same."
        ),
        above,
        below,
    });

    let (above, below) = watched("idempotency_lost_races_total", ",class=\"claim\"");
    alerts.push(Alert {
        name: "IdempotencyLostRacesHigh",
        expr: format!(
            "{}\n  / {first}\n  > {}",
            rate("idempotency_lost_races_total", &m),
            number(r)
        ),
        hold: HOLD,
        severity: "info",
        watches: names.clone(),
        fields: vec![(REPLAY_RATE, replay_share.clone())],
        labels: operation.clone(),
        summary: format!(
            "{labels_note}: races lost to concurrent duplicates exceed {replay_share} of first attempts"
        ),
        description: format!(
            "Over {RATE_WINDOW}, requests of {names} lose races on the database to a duplicate \
             sent at the same moment (the class label says where). Each is answered correctly \
             (in progress or replay); many mean clients send copies in parallel, not retries \
             after client.timeout, which monitoring.replay-rate-alert ({replay_share}) also \
             bounds."
        ),
        above,
        below,
    });

    let ok = series("idempotency_responses_total", ",code=\"201\"");
    let unavailable = series("idempotency_responses_total", ",code=\"503\"");
    alerts.push(Alert {
        name: "IdempotencyUnavailable",
        expr: format!(
            "{}\n  / {}\n  > {}",
            rate("idempotency_responses_total", &format!("{m},code=\"503\"")),
            rate("idempotency_responses_total", &m),
            number(UNAVAILABLE_SHARE)
        ),
        hold: HOLD,
        severity: "critical",
        watches: names.clone(),
        fields: vec![(MAX_PROCESSING, lease_text.clone())],
        labels: operation,
        summary: format!(
            "{labels_note}: more than {} of answers are 503",
            percent(UNAVAILABLE_SHARE)
        ),
        description: format!(
            "Over {RATE_WINDOW}, requests of {names} are answered 503: the database is \
             unreachable, a commit's outcome is unknown, or a business step ran past \
             server.max-processing ({} s). Clients retry with the same key after Retry-After; \
             the record table keeps it exactly-once meanwhile.",
            number(lease)
        ),
        above: vec![
            (ok.clone(), growing(1000.0)),
            (unavailable.clone(), growing(20.0)),
        ],
        below: vec![(ok, growing(1000.0)), (unavailable, growing(5.0))],
    });
    alerts
}

/// Records in progress past their lease, table-wide.
fn stuck(project: &Project, cohorts: &[Cohort<'_>]) -> Alert {
    let table = &project.table;
    let mut leases: Vec<f64> = cohorts.iter().map(|cohort| cohort.lease_secs).collect();
    leases.sort_by(f64::total_cmp);
    leases.dedup();
    let leases = leases
        .iter()
        .map(|lease| format!("{} s", number(*lease)))
        .collect::<Vec<_>>()
        .join(", ");
    let series = format!("idempotency_records_past_lease{{table=\"{table}\"}}");
    Alert {
        name: "IdempotencyRecordsStuckInProgress",
        expr: format!("max by (table) ({series}) > 0"),
        hold: STUCK_HOLD,
        severity: "warning",
        watches: format!("the record table `{table}`"),
        fields: vec![
            (MAX_PROCESSING, leases),
            ("store.table", format!("`{table}`")),
        ],
        labels: vec![("table", table.clone())],
        summary: "{{ $labels.table }}: records stay in progress past their lease".to_string(),
        description: format!(
            "For {STUCK_HOLD}, the record table holds records whose first attempt neither \
             finished nor released its key before server.max-processing ran out: the process \
             died or hangs mid-request, and no client retried. A retry with the same key takes \
             the record over; otherwise it blocks the key until its window ends."
        ),
        above: vec![(series.clone(), "1x40".into())],
        below: vec![(series, "0x40".into())],
    }
}

/// The alert's section of `runbook.md`, where the project publishes it
/// (`gen --runbook-url`), else its path in the project.
fn runbook_url(project: &Project, alert: &str) -> String {
    let base = project.runbook_url.as_deref().unwrap_or(RUNBOOK);
    format!("{base}#{}", alert.to_ascii_lowercase())
}

fn runbook_md(project: &Project, alerts: &[Alert]) -> String {
    let mut out = format!(
        "<!-- Generated by idemgen {} from {}: `idemgen gen` rewrites this file. -->\n\n",
        project.version, project.spec
    );
    let _ = writeln!(out, "# Runbook: {}'s idempotency alerts\n", project.package);
    let published = match &project.runbook_url {
        Some(url) => format!("published at <{url}> (`idemgen gen --runbook-url`)"),
        None => format!(
            "this file's path in the project, `{RUNBOOK}`; publish it where on-call can open \
             it and pass its address to `idemgen gen --runbook-url URL`, which every rule's \
             link then starts with"
        ),
    };
    let _ = writeln!(
        out,
        "Each rule of `alerts.yml` (beside this file) links to its section here through its \
         `runbook_url`: {published}. A section says what the alert means, which contract \
         field of {} sets its threshold, and this service's numbers. Rates are taken over \
         {RATE_WINDOW} and must hold for {HOLD} (records stuck in progress: {STUCK_HOLD}); \
         edit the contract and run `idemgen gen` again, not this file.\n",
        project.spec
    );
    let mut names: Vec<&str> = Vec::new();
    for alert in alerts {
        if !names.contains(&alert.name) {
            names.push(alert.name);
        }
    }
    let _ = writeln!(out, "| alert | severity | for |\n| --- | --- | --- |");
    for name in &names {
        let first = alerts.iter().find(|alert| alert.name == *name).unwrap();
        let _ = writeln!(
            out,
            "| [{name}](#{}) | {} | {} |",
            name.to_ascii_lowercase(),
            first.severity,
            first.hold
        );
    }
    for name in names {
        let _ = writeln!(out, "\n## {name}\n");
        let _ = writeln!(out, "{}\n", guide(name));
        let _ = writeln!(out, "In this service:");
        for alert in alerts.iter().filter(|alert| alert.name == name) {
            let fields = alert
                .fields
                .iter()
                .map(|(field, value)| format!("`{field}`: {value}"))
                .collect::<Vec<_>>()
                .join("; ");
            let _ = writeln!(
                out,
                "\n- {} (severity {}, for {}). {fields}.\n\n  {}",
                alert.watches, alert.severity, alert.hold, alert.description
            );
        }
    }
    out
}

/// A YAML double-quoted string.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

fn header(project: &Project, what: &str) -> String {
    format!(
        "# Generated by idemgen {} from {}: `idemgen gen` rewrites this file.\n# {what}\n",
        project.version, project.spec
    )
}

fn rules_yaml(project: &Project, alerts: &[Alert]) -> String {
    let mut out = header(
        project,
        "Prometheus alert rules over the service's GET /metrics, thresholds from its contracts.\n\
         # Load with `rule_files: [alerts.yml]`; `promtool test rules alerts.test.yml` proves them.",
    );
    let _ = writeln!(out, "groups:");
    let _ = writeln!(out, "  - name: {}-idempotency", project.package);
    let _ = writeln!(out, "    rules:");
    for alert in alerts {
        let _ = writeln!(out, "      - alert: {}", alert.name);
        let _ = writeln!(out, "        expr: |");
        for line in alert.expr.lines() {
            let _ = writeln!(out, "          {line}");
        }
        let _ = writeln!(out, "        for: {}", alert.hold);
        let _ = writeln!(out, "        labels:");
        let _ = writeln!(out, "          severity: {}", alert.severity);
        let _ = writeln!(out, "        annotations:");
        let _ = writeln!(out, "          summary: {}", quoted(&alert.summary));
        let _ = writeln!(out, "          description: {}", quoted(&alert.description));
        let _ = writeln!(
            out,
            "          runbook_url: {}",
            quoted(&runbook_url(project, alert.name))
        );
    }
    out
}

fn tests_yaml(project: &Project, alerts: &[Alert]) -> String {
    let mut out = header(
        project,
        "promtool unit tests of alerts.yml: each alert fires on series above its threshold and\n\
         # stays silent below it. Run `promtool test rules alerts.test.yml`.",
    );
    let _ = writeln!(
        out,
        "rule_files:\n  - alerts.yml\nevaluation_interval: 1m\ntests:"
    );
    for alert in alerts {
        for (fires, series) in [(true, &alert.above), (false, &alert.below)] {
            let _ = writeln!(
                out,
                "  # {} {}.",
                alert.name,
                if fires {
                    "fires above its threshold"
                } else {
                    "stays silent below it"
                }
            );
            let _ = writeln!(out, "  - interval: 1m\n    input_series:");
            for (name, values) in series.iter() {
                let _ = writeln!(out, "      - series: {}", quoted(name));
                let _ = writeln!(out, "        values: {}", quoted(values));
            }
            let _ = writeln!(out, "    alert_rule_test:");
            let _ = writeln!(out, "      - eval_time: 30m");
            let _ = writeln!(out, "        alertname: {}", alert.name);
            if !fires {
                let _ = writeln!(out, "        exp_alerts: []");
                continue;
            }
            let _ = writeln!(out, "        exp_alerts:");
            let _ = writeln!(out, "          - exp_labels:");
            let _ = writeln!(out, "              severity: {}", alert.severity);
            for (name, value) in &alert.labels {
                let _ = writeln!(out, "              {name}: {}", quoted(value));
            }
            let expand = |text: &str| {
                alert
                    .labels
                    .iter()
                    .fold(text.to_string(), |text, (name, value)| {
                        text.replace(&format!("{{{{ $labels.{name} }}}}"), value)
                    })
            };
            let _ = writeln!(out, "            exp_annotations:");
            let _ = writeln!(
                out,
                "              summary: {}",
                quoted(&expand(&alert.summary))
            );
            let _ = writeln!(
                out,
                "              description: {}",
                quoted(&expand(&alert.description))
            );
            let _ = writeln!(
                out,
                "              runbook_url: {}",
                quoted(&runbook_url(project, alert.name))
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::number;

    #[test]
    fn numbers_are_written_without_float_noise() {
        assert_eq!(number(0.1 / 100.0), "0.001");
        assert_eq!(number(0.75 * 3.0), "2.25");
        assert_eq!(number(30.0), "30");
        assert_eq!(number(0.0), "0");
    }
}
