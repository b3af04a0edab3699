//! `ops/prometheus/alerts.yml`: Prometheus alert rules over the metrics the
//! runtime serves, their thresholds taken from the same contracts the code
//! was generated from, and `ops/prometheus/alerts.test.yml`, the
//! `promtool test rules` unit tests that prove each alert fires on
//! synthetic series above its threshold and stays silent below it.
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

/// Where each alert's runbook is: the idemgen manual's alerts page.
const RUNBOOK: &str = "docs/src/alerts.md";

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
    /// Series (`name{labels}`, promtool's expanding notation) that cross
    /// the threshold, and series that stay below it.
    above: Vec<(String, String)>,
    below: Vec<(String, String)>,
}

/// Both files, or none when no operation is idempotent.
pub fn files(project: &Project) -> Vec<File> {
    let cohorts = cohorts(project);
    if cohorts.is_empty() {
        return Vec::new();
    }
    let mut alerts = Vec::new();
    for cohort in &cohorts {
        alerts.extend(cohort_alerts(cohort));
    }
    alerts.push(stuck(project));
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
    let labels_note = "{{ $labels.operation }}";
    let mut alerts = Vec::new();

    let (above, below) = watched("idempotency_replays_total", "");
    alerts.push(Alert {
        name: "IdempotencyReplayRateHigh",
        expr: format!("{replays}\n  / ({first} + {replays})\n  > {}", number(r)),
        hold: HOLD,
        severity: "warning",
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
fn stuck(project: &Project) -> Alert {
    let table = &project.table;
    let series = format!("idempotency_records_past_lease{{table=\"{table}\"}}");
    Alert {
        name: "IdempotencyRecordsStuckInProgress",
        expr: format!("max by (table) ({series}) > 0"),
        hold: STUCK_HOLD,
        severity: "warning",
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

fn runbook(alert: &str) -> String {
    format!("{RUNBOOK}#{}", alert.to_ascii_lowercase())
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
            quoted(&runbook(alert.name))
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
                quoted(&runbook(alert.name))
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
