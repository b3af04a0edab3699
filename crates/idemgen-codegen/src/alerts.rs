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
/// The least answers an operation must give over [`RATE_WINDOW`] before a
/// ratio alert may fire: one replay among ten requests is no trend.
const MIN_ANSWERS: u32 = 100;
/// The share of answers that may be 503, busy or another 5xx before the
/// alert (not a contract number: a service that fails 1 % of its requests
/// is down for someone).
const UNAVAILABLE_SHARE: f64 = 0.01;
/// The business step's 99th percentile, as a share of the lease, above
/// which a takeover is near.
const NEAR_LEASE: f64 = 0.75;
/// How often a generated service's purge task samples the record table
/// (`PURGE_INTERVAL_SECS`, 60 unless set).
const PURGE_INTERVAL_SECS: u64 = 60;
/// The longest a stuck record must stay stuck before the alert.
const STUCK_HOLD_MAX_SECS: u64 = 15 * 60;

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
    hold: String,
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
    /// The unit tests: series (`name{labels}`, promtool's expanding
    /// notation) on which it fires, and the outages' look-alikes on which
    /// it stays silent.
    scenarios: Vec<Scenario>,
}

/// What each alert means and what to do, the same for every service: the
/// sections of the manual's alerts page (`docs/src/alerts.md`, rendered
/// from here by the book test) and of every generated `runbook.md`, which
/// adds the service's own numbers.
const GUIDE: [(&str, &str); 10] = [
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
attempt was rolled back. A key its attempt released (it stopped on a
database error, a busy pool or its deadline) and a retry claimed again is
no takeover: `idempotency_reclaims_after_release_total` counts those, and a
database blip raises them, not this alert. Compare
`idempotency_business_duration_seconds` with `server.max-processing`; raise
it (and re-run `idemgen window`, since the window must grow with it), or
make the step faster.",
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
outcome is unknown (the connection broke while it ran);
`idempotency_rejections_total`'s `reason` label (`deadline`,
`database_unavailable`, `outcome_unknown`) says which. Clients retry with
the same key after `Retry-After`, and the record table keeps the request
exactly-once meanwhile; check `GET /healthz` and the database.",
    ),
    (
        "IdempotencyBusy",
        "More than 1 % of an operation's answers are \"server busy\" (429,
`idempotency_rejections_total{reason=\"busy\"}`): requests waited out their
lease for a database connection or their claim on a database that still
accepts connections. Contract field: `server.max-processing` (how long a
request waits). The `wait` label says what they waited for: `pool` (no
connection came: the pool is too small for the load, or something holds
its connections) or `claim` (the database did not answer the claim: lock
waits, a full disk, a failover or a demoted primary); `bodies` counts
503s for too many request bodies read at once. A 429 that answers a
duplicate in progress is not counted here (its reason is `in_progress`).
Check the database's own metrics and the claim histogram
(`idempotency_claim_duration_seconds`); clients retry with the same key.",
    ),
    (
        "IdempotencyServerErrors",
        "More than 1 % of an operation's answers are server errors other than 503
(500, 501, 507…). No contract field: a database error the engine could not
classify, a business function that failed, an answer too large to store,
a bug. Nothing was committed unless the business function answered the
error itself; the error log says which.",
    ),
    (
        "IdempotencyRecordsStuckInProgress",
        "The record table holds more records in progress past their lease than
it did a little earlier, and still does after the hold. Contract fields:
`server.max-processing` (the lease) and `window`. A stuck record's first
attempt neither finished nor released the key: the process died or hangs
mid-request, and no client retried. A retry with the same key takes the
record over at once; otherwise the key stays blocked until its window ends
and the purge deletes it. The hold is the shortest window less the longest
lease and a purge interval (at most 15 minutes; 0 when the purge deletes a
stuck record before it is sampled twice), and the alert resolves a few
minutes after the last record got stuck, however long the window keeps
it. Look for crashes or restarts at the time the records got stuck.",
    ),
    (
        "IdempotencyRecordsGettingStuck",
        "Records keep getting stuck in progress: in every 5 minutes for 15
minutes, an instance saw at least one record's lease run out with its
attempt neither finished nor released and no retry
(`idempotency_records_stuck_total`, counted before each purge). Contract
field: `server.max-processing` (the lease). Unlike
`IdempotencyRecordsStuckInProgress`, which watches how many stuck records
the table holds, this fires when the purge deletes old ones as fast as new
ones get stuck, so that their number stays flat (a short window); one crash
whose records the purge then deletes stays silent. Processes keep dying or
hanging mid-request, or a business step keeps outliving its lease without
the engine's deadline stopping it: look for restarts, out-of-memory kills
and hung downstream calls at those times.",
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
        alerts.extend(cohort_alerts(project, cohort));
    }
    alerts.push(stuck(project, &cohorts));
    alerts.push(getting_stuck(project, &cohorts));
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

/// The selector of `job`'s series, with `more` matchers.
fn selector(job: &str, more: &str) -> String {
    if more.is_empty() {
        format!("job=\"{job}\"")
    } else {
        format!("job=\"{job}\",{more}")
    }
}

fn rate(metric: &str, selector: &str) -> String {
    format!("sum by (job, operation) (rate({metric}{{{selector}}}[{RATE_WINDOW}]))")
}

/// `ratio > threshold`, only where the operation gave [`MIN_ANSWERS`]
/// answers over the window.
fn with_floor(ratio: String, threshold: f64, selector: &str) -> String {
    format!(
        "{ratio}\n  > {}\nand on (job, operation)\n  sum by (job, operation) \
         (increase(idempotency_responses_total{{{selector}}}[{RATE_WINDOW}])) >= {MIN_ANSWERS}",
        number(threshold)
    )
}

/// A counter growing by `per_minute` every minute for 40 minutes.
fn growing(per_minute: f64) -> String {
    format!("0+{}x40", number(per_minute))
}

/// A counter at 0 for 10 minutes, then 1 for 30: one event at minute 10.
const ONCE_AT_MINUTE_10: &str = "0x9 1x30";

/// The series one unit test feeds an operation's rules, by metric and
/// extra labels.
struct Feed<'a> {
    job: &'a str,
    op: &'a str,
}

impl Feed<'_> {
    fn series(&self, metric: &str, extra: &str) -> String {
        format!(
            "{metric}{{job=\"{}\",operation=\"{}\"{extra}}}",
            self.job, self.op
        )
    }

    /// `per_minute` first attempts, each answered 201.
    fn traffic(&self, per_minute: f64) -> Vec<(String, String)> {
        vec![
            (
                self.series("idempotency_first_attempts_total", ""),
                growing(per_minute),
            ),
            (
                self.series("idempotency_responses_total", ",code=\"201\""),
                growing(per_minute),
            ),
        ]
    }

    /// `per_minute` answers with `code`, counted under `reason`.
    fn rejected(&self, code: &str, reason: &str, values: &str) -> Vec<(String, String)> {
        vec![
            (
                self.series("idempotency_responses_total", &format!(",code=\"{code}\"")),
                values.to_string(),
            ),
            (
                self.series(
                    "idempotency_rejections_total",
                    &format!(",reason=\"{reason}\""),
                ),
                values.to_string(),
            ),
        ]
    }
}

/// One `promtool test rules` case: series, when the rule is evaluated,
/// and whether it fires then.
struct Scenario {
    what: String,
    series: Vec<(String, String)>,
    eval_minutes: u64,
    fires: bool,
}

impl Scenario {
    fn fires(what: &str, series: Vec<(String, String)>) -> Scenario {
        Scenario {
            what: what.to_string(),
            series,
            eval_minutes: 30,
            fires: true,
        }
    }

    fn silent(what: &str, series: Vec<(String, String)>) -> Scenario {
        Scenario {
            fires: false,
            ..Scenario::fires(what, series)
        }
    }
}

/// A ratio alert's scenarios: fires at twice the threshold's share of a
/// thousand first attempts a minute, silent at half of it, and silent on
/// one event at minute 10 among one first attempt a minute.
fn ratio_scenarios(feed: &Feed<'_>, watched: &str, threshold: f64) -> Vec<Scenario> {
    let with = |per_minute: f64, values: String| {
        let mut series = feed.traffic(per_minute);
        series.push((watched.to_string(), values));
        series
    };
    vec![
        Scenario::fires(
            "fires at twice its threshold, 1,000 requests a minute",
            with(1000.0, growing(2.0 * threshold * 1000.0)),
        ),
        Scenario::silent(
            "stays silent at half its threshold",
            with(1000.0, growing(0.5 * threshold * 1000.0)),
        ),
        // Evaluated while the one event is still in the rate's window and
        // the hold has passed.
        Scenario {
            eval_minutes: 16,
            ..Scenario::silent(
                "stays silent on one at minute 10 among one request a minute (under the traffic floor)",
                with(1.0, ONCE_AT_MINUTE_10.to_string()),
            )
        },
    ]
}

/// The per-operation alerts of one cohort.
fn cohort_alerts(project: &Project, cohort: &Cohort<'_>) -> Vec<Alert> {
    let job = project.job.as_str();
    let m = selector(job, &cohort.matcher());
    let feed = Feed {
        job,
        op: cohort.sample(),
    };
    let names = cohort.names();
    let r = cohort.replay_ratio;
    let lease = cohort.lease_secs;
    let first = rate("idempotency_first_attempts_total", &m);
    let replays = rate("idempotency_replays_total", &m);
    let answers = rate("idempotency_responses_total", &m);
    let labels = vec![("job", job.to_string()), ("operation", feed.op.to_string())];
    let replay_share = percent(r);
    let lease_text = format!("{} s", number(lease));
    let labels_note = "{{ $labels.operation }}";
    let floor_note = format!("(with at least {MIN_ANSWERS} answers over {RATE_WINDOW})");
    let mut alerts = Vec::new();

    let replay_series = feed.series("idempotency_replays_total", "");
    alerts.push(Alert {
        name: "IdempotencyReplayRateHigh",
        expr: with_floor(format!("{replays}\n  / ({first} + {replays})"), r, &m),
        hold: HOLD.to_string(),
        severity: "warning",
        watches: names.clone(),
        fields: vec![(REPLAY_RATE, replay_share.clone())],
        labels: labels.clone(),
        summary: format!(
            "{labels_note}: more than {replay_share} of requests are answered by replay"
        ),
        description: format!(
            "Over {RATE_WINDOW} {floor_note}, the share of requests answered with a stored \
             response is above monitoring.replay-rate-alert ({replay_share}) of the contract of \
             {names}. A client retries requests that already succeeded: its retry policy broke, \
             or answers are lost on the way back."
        ),
        scenarios: ratio_scenarios(&feed, &replay_series, r),
    });

    let in_progress = feed.series("idempotency_in_progress_total", "");
    let takeovers = feed.series("idempotency_takeovers_total", "");
    // The runtime serves every counter of an operation, at 0 until counted.
    let mut scenarios = ratio_scenarios(&feed, &in_progress, r);
    for scenario in &mut scenarios {
        scenario.series.push((takeovers.clone(), "0x40".into()));
    }
    let mut taken_over = feed.traffic(1000.0);
    taken_over.push((in_progress.clone(), "0x40".into()));
    taken_over.push((takeovers.clone(), growing(2.0 * r * 1000.0)));
    scenarios.push(Scenario::fires(
        "fires on takeovers (leases that ran out) at twice its threshold",
        taken_over,
    ));
    // A database blip: attempts stop, release their keys, and their
    // retries claim them again at once; no lease ran out.
    let mut blip = feed.traffic(1000.0);
    blip.push((in_progress.clone(), "0x40".into()));
    blip.push((takeovers.clone(), "0x40".into()));
    let blip_values = "0x9 100 200 300x28";
    blip.push((
        feed.series("idempotency_reclaims_after_release_total", ""),
        blip_values.into(),
    ));
    blip.extend(feed.rejected("503", "database_unavailable", blip_values));
    scenarios.push(Scenario::silent(
        "stays silent on a blip whose released claims are claimed again",
        blip,
    ));
    alerts.push(Alert {
        name: "IdempotencyInProgressRising",
        expr: with_floor(
            format!(
                "({} + {})\n  / {first}",
                rate("idempotency_in_progress_total", &m),
                rate("idempotency_takeovers_total", &m),
            ),
            r,
            &m,
        ),
        hold: HOLD.to_string(),
        severity: "warning",
        watches: names.clone(),
        fields: vec![(REPLAY_RATE, replay_share.clone()), (MAX_PROCESSING, lease_text.clone())],
        labels: labels.clone(),
        summary: format!(
            "{labels_note}: duplicates answered in progress, or taken over, exceed {replay_share} of first attempts"
        ),
        description: format!(
            "Over {RATE_WINDOW} {floor_note}, retries arrive while their first attempt still \
             runs, or take over one whose lease ran out (a claim its attempt released is no \
             takeover). Check server.max-processing ({} s) of the contract of {names} against \
             the business step's latency and client.timeout: a lease shorter than the step, or a \
             client that gives up before it ends, sends duplicates here.",
            number(lease)
        ),
        scenarios,
    });

    let bucket = "idempotency_business_duration_seconds_bucket";
    let le = |bound: &str| feed.series(bucket, &format!(",le=\"{bound}\""));
    let near = number(NEAR_LEASE * lease);
    let (half, ninety, full) = (number(0.5 * lease), number(0.9 * lease), number(lease));
    alerts.push(Alert {
        name: "IdempotencyBusinessNearMaxProcessing",
        expr: format!(
            "histogram_quantile(0.99, sum by (job, operation, le) (rate({bucket}{{{m}}}[{RATE_WINDOW}])))\n  > {near}"
        ),
        hold: HOLD.to_string(),
        severity: "warning",
        watches: names.clone(),
        fields: vec![(MAX_PROCESSING, format!("{lease_text} (the alert at {near} s, {})", percent(NEAR_LEASE)))],
        labels: labels.clone(),
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
        scenarios: vec![
            Scenario::fires(
                "fires when every step takes 90 % of the lease",
                vec![
                    (le(&half), "0x40".into()),
                    (le(&ninety), "0x40".into()),
                    (le(&full), growing(100.0)),
                    (le("+Inf"), growing(100.0)),
                ],
            ),
            Scenario::silent(
                "stays silent when every step takes half the lease",
                vec![
                    (le(&half), growing(100.0)),
                    (le(&ninety), growing(100.0)),
                    (le(&full), growing(100.0)),
                    (le("+Inf"), growing(100.0)),
                ],
            ),
        ],
    });

    let conflicts = feed.series("idempotency_conflicts_total", "");
    alerts.push(Alert {
        name: "IdempotencyConflictsRising",
        expr: with_floor(
            format!(
                "{}\n  / {first}",
                rate("idempotency_conflicts_total", &m)
            ),
            r,
            &m,
        ),
        hold: HOLD.to_string(),
        severity: "warning",
        watches: names.clone(),
        fields: vec![(REPLAY_RATE, replay_share.clone())],
        labels: labels.clone(),
        summary: format!(
            "{labels_note}: keys reused with another request exceed {replay_share} of first attempts"
        ),
        description: format!(
            "Over {RATE_WINDOW} {floor_note}, requests of {names} reuse a key with a different \
             request (or after a failure under responses.failed: reject). A client generates keys \
             wrongly (see key.format) or changes a request between retries; fingerprint.include \
             says which parts must stay the same."
        ),
        scenarios: ratio_scenarios(&feed, &conflicts, r),
    });

    let lost = feed.series("idempotency_lost_races_total", ",class=\"claim\"");
    alerts.push(Alert {
        name: "IdempotencyLostRacesHigh",
        expr: with_floor(
            format!(
                "{}\n  / {first}",
                rate("idempotency_lost_races_total", &m)
            ),
            r,
            &m,
        ),
        hold: HOLD.to_string(),
        severity: "info",
        watches: names.clone(),
        fields: vec![(REPLAY_RATE, replay_share.clone())],
        labels: labels.clone(),
        summary: format!(
            "{labels_note}: races lost to concurrent duplicates exceed {replay_share} of first attempts"
        ),
        description: format!(
            "Over {RATE_WINDOW} {floor_note}, requests of {names} lose races on the database to \
             a duplicate sent at the same moment (the class label says where). Each is answered \
             correctly (in progress or replay); many mean clients send copies in parallel, not \
             retries after client.timeout, which monitoring.replay-rate-alert ({replay_share}) \
             also bounds."
        ),
        scenarios: ratio_scenarios(&feed, &lost, r),
    });

    let share = UNAVAILABLE_SHARE;
    // Answers failing at `per_minute` among a thousand successes a minute,
    // alone at a thousand a minute, and one a minute alone.
    let outage = |code: &str, reason: &str| {
        let with = |ok: f64, failing: f64| {
            let mut series = feed.traffic(ok);
            series.extend(feed.rejected(code, reason, &growing(failing)));
            series
        };
        vec![
            Scenario::fires(
                &format!("fires on {code} ({reason}) at 1,000 a minute for 30 minutes"),
                with(0.0, 1000.0),
            ),
            Scenario::fires(
                &format!("fires on {code} ({reason}) at twice its threshold"),
                with(1000.0, 2.0 * share * 1000.0),
            ),
            Scenario::silent(
                "stays silent at half its threshold",
                with(1000.0, 0.5 * share * 1000.0),
            ),
            Scenario::silent(
                &format!("stays silent on one {code} a minute (under the traffic floor)"),
                with(0.0, 1.0),
            ),
        ]
    };

    let mut scenarios = outage("429", "busy");
    // The runtime splits busy answers by what they waited for: the alert
    // reads their sum.
    let mut split = feed.traffic(0.0);
    split.push((
        feed.series("idempotency_responses_total", ",code=\"429\""),
        growing(1000.0),
    ));
    for wait in ["pool", "claim"] {
        split.push((
            feed.series(
                "idempotency_rejections_total",
                &format!(",reason=\"busy\",wait=\"{wait}\""),
            ),
            growing(500.0),
        ));
    }
    scenarios.push(Scenario::fires(
        "fires on 429s half waiting for a connection, half for their claim",
        split,
    ));
    let mut duplicates = feed.traffic(0.0);
    duplicates.extend(feed.rejected("429", "in_progress", &growing(1000.0)));
    scenarios.push(Scenario::silent(
        "stays silent on 429s that answer duplicates in progress, not a busy server",
        duplicates,
    ));
    alerts.push(Alert {
        name: "IdempotencyBusy",
        expr: with_floor(
            format!(
                "{}\n  / {answers}",
                rate(
                    "idempotency_rejections_total",
                    &format!("{m},reason=\"busy\"")
                )
            ),
            share,
            &m,
        ),
        hold: HOLD.to_string(),
        severity: "critical",
        watches: names.clone(),
        fields: vec![(MAX_PROCESSING, lease_text.clone())],
        labels: labels.clone(),
        summary: format!(
            "{labels_note}: more than {} of answers are \"server busy\"",
            percent(share)
        ),
        description: format!(
            "Over {RATE_WINDOW} {floor_note}, requests of {names} waited out their lease, \
             server.max-processing ({} s), for a database connection or their claim on a \
             database that still accepts connections: it stalls (locks, a full disk, a \
             failover in progress) or the pool is too small. Clients retry with the same key \
             after Retry-After.",
            number(lease)
        ),
        scenarios,
    });

    alerts.push(Alert {
        name: "IdempotencyServerErrors",
        expr: with_floor(
            format!(
                "{}\n  / {answers}",
                rate(
                    "idempotency_responses_total",
                    &format!("{m},code=~\"5..\",code!=\"503\"")
                )
            ),
            share,
            &m,
        ),
        hold: HOLD.to_string(),
        severity: "critical",
        watches: names.clone(),
        fields: vec![],
        labels: labels.clone(),
        summary: format!(
            "{labels_note}: more than {} of answers are 5xx other than 503",
            percent(share)
        ),
        description: format!(
            "Over {RATE_WINDOW} {floor_note}, requests of {names} fail with a server error \
             (500 and the other 5xx but 503): a database error, a business function that \
             failed, a bug. Nothing was committed; idempotency_rejections_total's reason label \
             and the logs say which."
        ),
        scenarios: outage("500", "internal_error"),
    });

    alerts.push(Alert {
        name: "IdempotencyUnavailable",
        expr: with_floor(
            format!(
                "{}\n  / {answers}",
                rate("idempotency_responses_total", &format!("{m},code=\"503\""))
            ),
            share,
            &m,
        ),
        hold: HOLD.to_string(),
        severity: "critical",
        watches: names.clone(),
        fields: vec![(MAX_PROCESSING, lease_text.clone())],
        labels,
        summary: format!(
            "{labels_note}: more than {} of answers are 503",
            percent(share)
        ),
        description: format!(
            "Over {RATE_WINDOW} {floor_note}, requests of {names} are answered 503: the database \
             is unreachable, a commit's outcome is unknown, or a business step ran past \
             server.max-processing ({} s) (idempotency_rejections_total's reason label says \
             which). Clients retry with the same key after Retry-After; the record table keeps \
             it exactly-once meanwhile.",
            number(lease)
        ),
        scenarios: outage("503", "database_unavailable"),
    });
    alerts
}

/// How long records must stay stuck before the alert, in whole minutes:
/// a stuck record stays in the table from its lease's end until its
/// window ends (then the purge deletes it within an interval), so the
/// hold leaves an interval of that to see it, capped at 15 minutes.
fn stuck_hold_minutes(shortest_window_secs: f64, longest_lease_secs: f64) -> u64 {
    let visible = shortest_window_secs - longest_lease_secs - PURGE_INTERVAL_SECS as f64;
    (visible.max(0.0) as u64).min(STUCK_HOLD_MAX_SECS) / 60
}

/// Records in progress past their lease, table-wide.
fn stuck(project: &Project, cohorts: &[Cohort<'_>]) -> Alert {
    let table = &project.table;
    let job = project.job.as_str();
    let mut leases: Vec<f64> = cohorts.iter().map(|cohort| cohort.lease_secs).collect();
    leases.sort_by(f64::total_cmp);
    leases.dedup();
    let longest_lease = leases.last().copied().unwrap_or(0.0);
    let shortest_window = project
        .operations
        .iter()
        .filter_map(|op| op.contract.as_ref())
        .map(|contract| contract.window_ms as f64 / 1000.0)
        .fold(f64::INFINITY, f64::min);
    let hold = stuck_hold_minutes(shortest_window, longest_lease);
    // New stuck records are looked for over the hold and two samples more:
    // one record resolves the alert that long after it got stuck, however
    // long its window keeps it.
    let lookback = hold + 2 * PURGE_INTERVAL_SECS / 60;
    let leases = leases
        .iter()
        .map(|lease| format!("{} s", number(*lease)))
        .collect::<Vec<_>>()
        .join(", ");
    let selected = format!(
        "idempotency_records_past_lease{{{}}}",
        selector(job, &format!("table=\"{table}\""))
    );
    let series = format!("idempotency_records_past_lease{{job=\"{job}\",table=\"{table}\"}}");
    let appears = format!("0x9 1x{}", 30 + lookback);
    let mut scenarios = vec![
        Scenario {
            what: "fires once a record got stuck and stayed for the hold".to_string(),
            series: vec![(series.clone(), appears.clone())],
            eval_minutes: 10 + hold + 1,
            fires: true,
        },
        Scenario {
            what: "stays silent once the stuck record is older than the look-back, \
                   however long its window keeps it"
                .to_string(),
            series: vec![(series.clone(), appears)],
            eval_minutes: 10 + lookback + 1,
            fires: false,
        },
        Scenario::silent(
            "stays silent without stuck records",
            vec![(series.clone(), "0x40".into())],
        ),
    ];
    if hold >= 2 {
        scenarios.push(Scenario {
            what: "stays silent on a record a retry takes over within the hold".to_string(),
            series: vec![(series, "0x9 1 0x30".into())],
            eval_minutes: 10 + hold,
            fires: false,
        });
    }
    Alert {
        name: "IdempotencyRecordsStuckInProgress",
        expr: format!(
            "max by (job, table) ({selected})\n  > max by (job, table) (min_over_time({selected}[{lookback}m]))"
        ),
        hold: format!("{hold}m"),
        severity: "warning",
        watches: format!("the record table `{table}`"),
        fields: vec![
            (MAX_PROCESSING, leases),
            (
                "window",
                format!("{} s (the shortest)", number(shortest_window)),
            ),
            ("store.table", format!("`{table}`")),
        ],
        labels: vec![("job", job.to_string()), ("table", table.clone())],
        summary: "{{ $labels.table }}: records got stuck in progress past their lease".to_string(),
        description: format!(
            "For {hold} minutes (the shortest window less the longest lease and a purge \
             interval, at most 15), the record table has held more records in progress past \
             their lease than it did in the {lookback} minutes before: an attempt neither \
             finished nor released its key before server.max-processing ran out (the process \
             died or hangs mid-request), and no client retried. A retry with the same key takes \
             the record over; otherwise it blocks the key until its window ends. The alert \
             resolves {lookback} minutes after the last record got stuck."
        ),
        scenarios,
    }
}

/// How long records must keep getting stuck before the alert: a stream,
/// not one crash.
const GETTING_STUCK_HOLD_MINUTES: u64 = 15;

/// The span in which at least one record must get stuck, all through the
/// hold.
const GETTING_STUCK_SPAN_MINUTES: u64 = 5;

/// Records getting stuck, counted as they do: a steady stream the purge
/// keeps up with leaves `idempotency_records_past_lease` flat.
fn getting_stuck(project: &Project, cohorts: &[Cohort<'_>]) -> Alert {
    let table = &project.table;
    let job = project.job.as_str();
    let mut leases: Vec<f64> = cohorts.iter().map(|cohort| cohort.lease_secs).collect();
    leases.sort_by(f64::total_cmp);
    leases.dedup();
    let leases = leases
        .iter()
        .map(|lease| format!("{} s", number(*lease)))
        .collect::<Vec<_>>()
        .join(", ");
    let hold = GETTING_STUCK_HOLD_MINUTES;
    let span = GETTING_STUCK_SPAN_MINUTES;
    let selected = format!(
        "idempotency_records_stuck_total{{{}}}",
        selector(job, &format!("table=\"{table}\""))
    );
    let stuck = format!("idempotency_records_stuck_total{{job=\"{job}\",table=\"{table}\"}}");
    let past_lease = format!("idempotency_records_past_lease{{job=\"{job}\",table=\"{table}\"}}");
    Alert {
        name: "IdempotencyRecordsGettingStuck",
        expr: format!("max by (job, table) (increase({selected}[{span}m])) > 0"),
        hold: format!("{hold}m"),
        severity: "warning",
        watches: format!("the record table `{table}`"),
        fields: vec![
            (MAX_PROCESSING, leases),
            ("store.table", format!("`{table}`")),
        ],
        labels: vec![("job", job.to_string()), ("table", table.clone())],
        summary: "{{ $labels.table }}: records keep getting stuck in progress".to_string(),
        description: format!(
            "For {hold} minutes, records got stuck in progress in every {span} minutes: their \
             lease (server.max-processing) ran out while their attempt neither finished nor \
             released the key, and no client retried. Processes keep dying or hanging \
             mid-request; the number of stuck records may stay flat while the purge deletes \
             old ones."
        ),
        scenarios: vec![
            Scenario::fires(
                "fires on a steady stream, one record stuck a minute, while the purge keeps \
                 the number past their lease flat",
                vec![
                    (stuck.clone(), "0+1x40".into()),
                    (past_lease.clone(), "0x9 1x30".into()),
                ],
            ),
            Scenario::silent(
                "stays silent on one crash that left five records stuck, which the purge deletes",
                vec![
                    (stuck.clone(), "0x9 5x30".into()),
                    (past_lease.clone(), "0x40".into()),
                ],
            ),
            Scenario::silent(
                "stays silent without stuck records",
                vec![(stuck, "0x40".into())],
            ),
        ],
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
    let stuck_hold = alerts
        .iter()
        .find(|alert| alert.name == "IdempotencyRecordsStuckInProgress")
        .map_or(HOLD, |alert| alert.hold.as_str());
    let _ = writeln!(
        out,
        "Each rule of `alerts.yml` (beside this file) links to its section here through its \
         `runbook_url`: {published}. A section says what the alert means, which contract \
         field of {} sets its threshold, and this service's numbers. Every rule selects the \
         series of the Prometheus job `{}` (`idemgen gen --job`). Rates are taken over \
         {RATE_WINDOW}, a ratio needs {MIN_ANSWERS} answers of the operation in that time, and \
         must hold for {HOLD} (records stuck in progress: {stuck_hold}); edit the contract \
         and run `idemgen gen` again, not this file.\n",
        project.spec, project.job
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
    let job_origin = if project.job == project.package {
        "the package name, the default"
    } else {
        "from `idemgen gen --job` or idemgen.toml's `[gen] job`"
    };
    let mut out = header(
        project,
        &format!(
            "Prometheus alert rules over the service's GET /metrics, thresholds from its contracts.\n\
             # Every rule selects job=\"{}\" ({job_origin}): the name of the scrape job that\n\
             # scrapes this service; pass yours with `idemgen gen --job NAME` or\n\
             # idemgen.toml's `[gen] job = \"NAME\"` (the flag wins).\n\
             # Load with `rule_files: [alerts.yml]`; `promtool test rules alerts.test.yml` proves them.",
            project.job
        ),
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
        "promtool unit tests of alerts.yml: each alert fires on its outage and stays silent\n\
         # below its threshold and on the noise that looks like it. Run\n\
         # `promtool test rules alerts.test.yml`.",
    );
    let _ = writeln!(
        out,
        "rule_files:\n  - alerts.yml\nevaluation_interval: 1m\ntests:"
    );
    for alert in alerts {
        for scenario in &alert.scenarios {
            let _ = writeln!(out, "  # {} {}.", alert.name, scenario.what);
            let _ = writeln!(out, "  - interval: 1m\n    input_series:");
            for (name, values) in &scenario.series {
                let _ = writeln!(out, "      - series: {}", quoted(name));
                let _ = writeln!(out, "        values: {}", quoted(values));
            }
            let _ = writeln!(out, "    alert_rule_test:");
            let _ = writeln!(out, "      - eval_time: {}m", scenario.eval_minutes);
            let _ = writeln!(out, "        alertname: {}", alert.name);
            if !scenario.fires {
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
    fn the_stuck_hold_leaves_room_to_see_a_stuck_record() {
        // The example: an 18 s window, a 3 s lease: purged before a
        // second sample, so any sample with one fires.
        assert_eq!(super::stuck_hold_minutes(18.0, 3.0), 0);
        assert_eq!(super::stuck_hold_minutes(300.0, 30.0), 3);
        // A day's window: capped.
        assert_eq!(super::stuck_hold_minutes(86_400.0, 30.0), 15);
    }

    #[test]
    fn numbers_are_written_without_float_noise() {
        assert_eq!(number(0.1 / 100.0), "0.001");
        assert_eq!(number(0.75 * 3.0), "2.25");
        assert_eq!(number(30.0), "30");
        assert_eq!(number(0.0), "0");
    }
}
