//! What `GET /metrics` serves, per operation (the `operation` label), in
//! the Prometheus text format (encoded by `prometheus-client`).
//!
//! Watch the replay rate, `replays / (first_attempts + replays)`: it should
//! stay under the contract's `monitoring.replay-rate-alert` (0.1 % by
//! default); a jump means a client's retry policy broke. `idemgen gen`
//! writes the alert rules (`ops/prometheus/alerts.yml`) that watch it.
//!
//! Every measure lives in the `static` [`crate::Operation`] (atomics, and
//! histograms made on first use from its contract's lease), so counting
//! costs no lock and no lookup; [`Collector`] reads them at scrape time.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::collector::Collector as PromCollector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::contract::Contract;
use crate::problem::ProblemKind;

/// A monotonically increasing count: read by anyone, counted only by the
/// engine.
#[derive(Debug)]
pub struct Counter(AtomicU64);

impl Counter {
    pub(crate) const fn new() -> Counter {
        Counter(AtomicU64::new(0))
    }

    pub(crate) fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add(&self, count: u64) {
        self.0.fetch_add(count, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Default for Counter {
    fn default() -> Self {
        Counter::new()
    }
}

/// What happened to an operation's requests ([`crate::Operation`]'s
/// `counters`, served by [`crate::service::health_and_metrics`]).
pub struct Counters {
    /// Requests that claimed their key and ran the business function.
    pub first_attempts: Counter,
    /// Requests answered with the stored response.
    pub replays: Counter,
    /// Requests answered "in progress, retry later".
    pub in_progress: Counter,
    /// Keys reused with a different request (or after a refused failure).
    pub conflicts: Counter,
    /// In-progress claims taken over after their lease ran out (the
    /// attempt died or hangs), never one its attempt released.
    pub takeovers: Counter,
    /// Attempts recorded as failed.
    pub failures: Counter,
    /// Keys claimed again after their attempt released them (it stopped on
    /// a database error, a busy pool or its deadline, and rolled back);
    /// also counted as first attempts, never as takeovers.
    pub reclaims_after_release: Counter,
    /// Duplicates that waited on this process's running first attempt of
    /// their key and were answered with its committed answer, with no
    /// statement of their own; also counted as replays.
    pub duplicates_joined: Counter,
}

impl Counters {
    pub(crate) const fn new() -> Counters {
        Counters {
            first_attempts: Counter::new(),
            replays: Counter::new(),
            in_progress: Counter::new(),
            conflicts: Counter::new(),
            takeovers: Counter::new(),
            failures: Counter::new(),
            reclaims_after_release: Counter::new(),
            duplicates_joined: Counter::new(),
        }
    }
}

impl Default for Counters {
    fn default() -> Self {
        Counters::new()
    }
}

/// Why a request was answered without its business function running
/// (`idempotency_refusals_total{reason}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalReason {
    MissingKey,
    MalformedKey,
    /// A scope value (tenant header, principal) missing or unreadable.
    InvalidScope,
    /// The key was used with a different request (or after a failure that
    /// may not be retried).
    Conflict,
    Unauthenticated,
    /// Parameters or body not what the spec's schemas say.
    SchemaInvalid,
    TooLarge,
    /// Any other 4xx answered before the engine (a body sent too slowly).
    Other,
}

impl RefusalReason {
    const ALL: [RefusalReason; 8] = [
        RefusalReason::MissingKey,
        RefusalReason::MalformedKey,
        RefusalReason::InvalidScope,
        RefusalReason::Conflict,
        RefusalReason::Unauthenticated,
        RefusalReason::SchemaInvalid,
        RefusalReason::TooLarge,
        RefusalReason::Other,
    ];

    pub fn label(self) -> &'static str {
        match self {
            RefusalReason::MissingKey => "missing_key",
            RefusalReason::MalformedKey => "malformed_key",
            RefusalReason::InvalidScope => "invalid_scope",
            RefusalReason::Conflict => "conflict",
            RefusalReason::Unauthenticated => "unauthenticated",
            RefusalReason::SchemaInvalid => "schema_invalid",
            RefusalReason::TooLarge => "too_large",
            RefusalReason::Other => "other",
        }
    }
}

/// Why an answer is not the business function's success nor the replay of
/// one (`idempotency_rejections_total{reason}`): every such answer has
/// exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// No database connection or claim in time on a server that is up
    /// (429), or too many requests being read at once; what it waited for
    /// is its [`Wait`].
    Busy,
    /// The database cannot be reached (503).
    DatabaseUnavailable,
    /// The business step ran past `server.max-processing` and was rolled
    /// back (503).
    Deadline,
    /// The commit's outcome is unknown: the connection broke while it ran,
    /// or it outlived its deadline (503; retry with the same key).
    OutcomeUnknown,
    /// Anything else that failed on the server (5xx), the business
    /// function's own 5xx answers included.
    InternalError,
    /// Another attempt holds the key (the contract's in-progress answer).
    InProgress,
    /// The key was used with a different request, or after a failure that
    /// may not be retried.
    Conflict,
    /// The request was refused before its business step (key, credentials,
    /// schema, size, a value the database refused).
    Refused,
    /// The business function's own answer that is not a success (a 4xx).
    Business,
}

/// What a busy answer (`Rejection::Busy`) waited for in vain: the `wait`
/// label of `idempotency_rejections_total{reason="busy"}`, so that a full
/// pool (add connections, or find what holds them) is told from a
/// database slow to answer the claim (a row lock, a stalled server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// A connection from the pool.
    Pool,
    /// The database's answer to the claim (or to the transaction's start):
    /// a row another transaction holds, a stalled server.
    Claim,
    /// Memory for the request's body: too many bodies were being read at
    /// once.
    Bodies,
    /// A request without a key lost a race to a concurrent one on the
    /// database (a deadlock, a serialization failure).
    Lock,
}

impl Wait {
    pub const ALL: [Wait; 4] = [Wait::Pool, Wait::Claim, Wait::Bodies, Wait::Lock];

    pub fn label(self) -> &'static str {
        match self {
            Wait::Pool => "pool",
            Wait::Claim => "claim",
            Wait::Bodies => "bodies",
            Wait::Lock => "lock",
        }
    }
}

impl Rejection {
    pub const ALL: [Rejection; 9] = [
        Rejection::Busy,
        Rejection::DatabaseUnavailable,
        Rejection::Deadline,
        Rejection::OutcomeUnknown,
        Rejection::InternalError,
        Rejection::InProgress,
        Rejection::Conflict,
        Rejection::Refused,
        Rejection::Business,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Rejection::Busy => "busy",
            Rejection::DatabaseUnavailable => "database_unavailable",
            Rejection::Deadline => "deadline",
            Rejection::OutcomeUnknown => "outcome_unknown",
            Rejection::InternalError => "internal_error",
            Rejection::InProgress => "in_progress",
            Rejection::Conflict => "conflict",
            Rejection::Refused => "refused",
            Rejection::Business => "business",
        }
    }

    /// The reason of an answer the engine makes with the problem `kind`.
    pub fn of_problem(kind: ProblemKind) -> Rejection {
        match kind {
            ProblemKind::ServerBusy | ProblemKind::Overloaded | ProblemKind::ConcurrentRequest => {
                Rejection::Busy
            }
            ProblemKind::DatabaseUnavailable => Rejection::DatabaseUnavailable,
            ProblemKind::ProcessingTooLong => Rejection::Deadline,
            ProblemKind::OutcomeUnknown => Rejection::OutcomeUnknown,
            ProblemKind::InternalError
            | ProblemKind::AnswerTooLarge
            | ProblemKind::NotImplemented => Rejection::InternalError,
            ProblemKind::InProgress => Rejection::InProgress,
            ProblemKind::KeyReused | ProblemKind::EarlierAttemptFailed => Rejection::Conflict,
            ProblemKind::MissingKey
            | ProblemKind::InvalidKey
            | ProblemKind::Unauthenticated
            | ProblemKind::Forbidden
            | ProblemKind::InvalidScope
            | ProblemKind::AmbiguousBody
            | ProblemKind::InvalidBody
            | ProblemKind::SchemaMismatch
            | ProblemKind::ValueRefused
            | ProblemKind::InvalidParameters
            | ProblemKind::UnsupportedMediaType
            | ProblemKind::UnsupportedTransferCoding
            | ProblemKind::BodyTooLarge
            | ProblemKind::BodyTooSlow
            | ProblemKind::NotFound
            | ProblemKind::MethodNotAllowed => Rejection::Refused,
        }
    }
}

/// Where a request lost a race to a concurrent one on the database
/// (`idempotency_lost_races_total{class}`); each is answered (in progress
/// or replay), never a 500.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LostRace {
    /// The claim's INSERT (a unique violation, a deadlock).
    Claim,
    /// Retrying a failure, reusing an expired key or taking over a lease:
    /// another request reclaimed it first.
    Reclaim,
    /// Reading the record back (a serialization failure).
    Read,
    /// The business step's own statements (a deadlock it propagated).
    Business,
    /// Storing the answer, or committing it.
    Commit,
    /// The lease ran out during the business step and another request took
    /// the key over: this attempt was rolled back.
    TakenOver,
}

impl LostRace {
    const ALL: [LostRace; 6] = [
        LostRace::Claim,
        LostRace::Reclaim,
        LostRace::Read,
        LostRace::Business,
        LostRace::Commit,
        LostRace::TakenOver,
    ];

    fn label(self) -> &'static str {
        match self {
            LostRace::Claim => "claim",
            LostRace::Reclaim => "reclaim",
            LostRace::Read => "read",
            LostRace::Business => "business",
            LostRace::Commit => "commit",
            LostRace::TakenOver => "taken_over",
        }
    }
}

/// HTTP statuses counted one by one (`idempotency_responses_total{code}`).
const STATUSES: std::ops::Range<u16> = 100..600;

/// The measures of one operation besides its [`Counters`].
pub struct OperationMetrics {
    histograms: OnceLock<Histograms>,
    refusals: [Counter; RefusalReason::ALL.len()],
    rejections: [Counter; Rejection::ALL.len()],
    /// The busy rejections by what they waited for.
    busy: [Counter; Wait::ALL.len()],
    lost_races: [Counter; LostRace::ALL.len()],
    responses: [Counter; (STATUSES.end - STATUSES.start) as usize],
}

struct Histograms {
    claim: Histogram,
    business: Histogram,
    request: Histogram,
}

impl OperationMetrics {
    pub(crate) const fn new() -> OperationMetrics {
        OperationMetrics {
            histograms: OnceLock::new(),
            refusals: [const { Counter::new() }; RefusalReason::ALL.len()],
            rejections: [const { Counter::new() }; Rejection::ALL.len()],
            busy: [const { Counter::new() }; Wait::ALL.len()],
            lost_races: [const { Counter::new() }; LostRace::ALL.len()],
            responses: [const { Counter::new() }; (STATUSES.end - STATUSES.start) as usize],
        }
    }

    pub(crate) fn refused(&self, refusal: RefusalReason) {
        self.refusals[refusal as usize].inc();
    }

    /// How many requests were refused for `refusal`.
    pub fn refusals(&self, refusal: RefusalReason) -> u64 {
        self.refusals[refusal as usize].get()
    }

    pub(crate) fn rejected(&self, rejection: Rejection) {
        self.rejections[rejection as usize].inc();
    }

    /// How many answers were not a success for `rejection`.
    pub fn rejections(&self, rejection: Rejection) -> u64 {
        self.rejections[rejection as usize].get()
    }

    /// Counts a busy answer that waited in vain for `wait`.
    pub(crate) fn busy(&self, wait: Wait) {
        self.rejected(Rejection::Busy);
        self.busy[wait as usize].inc();
    }

    /// How many busy answers waited in vain for `wait`.
    pub fn busy_waits(&self, wait: Wait) -> u64 {
        self.busy[wait as usize].get()
    }

    pub(crate) fn lost_race(&self, class: LostRace) {
        self.lost_races[class as usize].inc();
    }

    pub(crate) fn responded(&self, status: u16) {
        if STATUSES.contains(&status) {
            self.responses[usize::from(status - STATUSES.start)].inc();
        }
    }

    /// `contract`: the operation's (`None`: it has none), whose lease and
    /// client timeout the buckets are chosen from when the histograms are
    /// made.
    pub(crate) fn observe_claim(&self, contract: Option<&Contract>, took: Duration) {
        self.histograms(contract).claim.observe(took.as_secs_f64());
    }

    pub(crate) fn observe_business(&self, contract: Option<&Contract>, took: Duration) {
        self.histograms(contract)
            .business
            .observe(took.as_secs_f64());
    }

    pub(crate) fn observe_request(&self, contract: Option<&Contract>, took: Duration) {
        self.histograms(contract)
            .request
            .observe(took.as_secs_f64());
    }

    fn histograms(&self, contract: Option<&Contract>) -> &Histograms {
        self.histograms.get_or_init(|| {
            let lease_ms = contract.map(|contract| contract.lease_ms);
            let client_timeout_ms = contract.map_or(0, |contract| contract.client_timeout_ms);
            let make = |extra_ms: &[i64]| Histogram::new(buckets(lease_ms, client_timeout_ms, extra_ms));
            let lease = lease_ms.map_or(DEFAULT_LEASE_MS, |ms| ms.max(1));
            Histograms {
                claim: make(&[]),
                business: make(&[]),
                // A request stopped at its lease still rolls back and
                // releases its claim (at most a second more).
                request: make(&[lease + 1_000, 2 * lease + 1_000]),
            }
        })
    }
}

/// The lease of an operation without a contract, for its buckets.
const DEFAULT_LEASE_MS: i64 = 1_000;

/// The low end of every histogram, in milliseconds: a claim or a replay on
/// a fast database, then the usual steps of a request's latency.
const FIXED_BOUNDS_MS: [i64; 12] = [1, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000];

/// The lease's fractions that are bounds: "the business step's 99th
/// percentile is at 90 % of max-processing" reads off the buckets, and at
/// 100 % a takeover starts.
const LEASE_FRACTIONS_PERCENT: [i64; 5] = [25, 50, 75, 90, 100];

/// Histogram bounds in seconds, each a whole number of milliseconds: the
/// fixed low end up to the lease (`server.max-processing`), fractions of
/// the lease, `client.timeout` (0: none; the runbook compares it with the
/// request histogram), and `extra_ms`; sorted, each once.
pub(crate) fn buckets(lease_ms: Option<i64>, client_timeout_ms: i64, extra_ms: &[i64]) -> Vec<f64> {
    let lease = lease_ms.map_or(DEFAULT_LEASE_MS, |ms| ms.max(1));
    let mut bounds: Vec<i64> = FIXED_BOUNDS_MS
        .into_iter()
        .filter(|bound| *bound < lease)
        .chain(
            LEASE_FRACTIONS_PERCENT
                .into_iter()
                .map(|percent| (lease * percent + 50) / 100),
        )
        .chain((client_timeout_ms > 0).then_some(client_timeout_ms))
        .chain(extra_ms.iter().copied())
        .filter(|bound| *bound > 0)
        .collect();
    bounds.sort_unstable();
    bounds.dedup();
    bounds
        .into_iter()
        .map(|millis| millis as f64 / 1000.0)
        .collect()
}

impl Default for OperationMetrics {
    fn default() -> Self {
        OperationMetrics::new()
    }
}

/// The record table's size, sampled by the purge task
/// ([`crate::service::spawn_purge`]).
#[derive(Debug)]
pub(crate) struct Census {
    /// Records in the table; -1 until first sampled.
    pub(crate) records: AtomicI64,
    /// Records in progress whose lease ran out: their first attempt died
    /// (or hangs) and nobody retried yet.
    pub(crate) past_lease: AtomicI64,
    /// Records this instance saw get stuck: in progress, their lease ended
    /// since its previous look. A steady stream of them keeps
    /// `past_lease` flat when the purge deletes old ones as fast.
    pub(crate) stuck: Counter,
    /// Where the previous look ended (database milliseconds); `i64::MIN`
    /// before the first.
    pub(crate) stuck_seen_until: AtomicI64,
}

impl Default for Census {
    fn default() -> Self {
        Census {
            records: AtomicI64::new(-1),
            past_lease: AtomicI64::new(-1),
            stuck: Counter::new(),
            stuck_seen_until: AtomicI64::new(i64::MIN),
        }
    }
}

/// One operation's measures, as the collector reads them.
pub(crate) struct Measured {
    pub(crate) label: &'static str,
    /// Whether it has a contract: the counters are served for those only.
    pub(crate) idempotent: bool,
    pub(crate) counters: &'static Counters,
    pub(crate) metrics: &'static OperationMetrics,
}

/// Reads the operations' measures (and the engine's census) at scrape time.
pub(crate) struct Collector {
    pub(crate) operations: Vec<Measured>,
    pub(crate) table: String,
    pub(crate) census: std::sync::Arc<Census>,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

/// The counters users' dashboards read: name (without `_total`), help,
/// which counter.
type CounterFamily = (&'static str, &'static str, fn(&Counters) -> &Counter);

const COUNTER_FAMILIES: [CounterFamily; 8] = [
    (
        "idempotency_first_attempts",
        "Requests that claimed their key and ran the business function.",
        |c| &c.first_attempts,
    ),
    (
        "idempotency_replays",
        "Requests answered with the stored response.",
        |c| &c.replays,
    ),
    (
        "idempotency_in_progress",
        "Requests answered in progress with Retry-After.",
        |c| &c.in_progress,
    ),
    (
        "idempotency_conflicts",
        "Keys reused with a different request.",
        |c| &c.conflicts,
    ),
    (
        "idempotency_takeovers",
        "In-progress claims taken over after their lease ran out.",
        |c| &c.takeovers,
    ),
    (
        "idempotency_failures",
        "Attempts recorded as failed.",
        |c| &c.failures,
    ),
    (
        "idempotency_reclaims_after_release",
        "Keys claimed again after their attempt released them (a database error, a busy pool, its deadline); also first attempts, never takeovers.",
        |c| &c.reclaims_after_release,
    ),
    (
        "idempotency_duplicates_joined",
        "Duplicates answered with the committed answer of the first attempt of their key this process was running, with no statement; also replays.",
        |c| &c.duplicates_joined,
    ),
];

type HistogramFamily = (&'static str, &'static str, fn(&Histograms) -> &Histogram);

const HISTOGRAM_FAMILIES: [HistogramFamily; 3] = [
    (
        "idempotency_claim_duration_seconds",
        "Time to get a connection and claim the key (or find who holds it), in seconds.",
        |h| &h.claim,
    ),
    (
        "idempotency_business_duration_seconds",
        "Time the business step ran, from the claim to its answer, in seconds; the lease (server.max-processing) stops it.",
        |h| &h.business,
    ),
    (
        "idempotency_request_duration_seconds",
        "Time from the request's arrival to its answer, in seconds.",
        |h| &h.request,
    ),
];

impl PromCollector for Collector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let idempotent: Vec<&Measured> = self
            .operations
            .iter()
            .filter(|operation| operation.idempotent)
            .collect();
        for (name, help, counter) in COUNTER_FAMILIES {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for operation in &idempotent {
                let labels = [("operation", operation.label)];
                ConstCounter::new(counter(operation.counters).get())
                    .encode(family.encode_family(&labels)?)?;
            }
        }
        for (name, help, histogram) in HISTOGRAM_FAMILIES {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
            for operation in &self.operations {
                // Made on first use; an operation never called has none yet.
                let Some(histograms) = operation.metrics.histograms.get() else {
                    continue;
                };
                let labels = [("operation", operation.label)];
                histogram(histograms).encode(family.encode_family(&labels)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "idempotency_refusals",
            "Requests answered without running the business function, by reason.",
            None,
            MetricType::Counter,
        )?;
        for operation in &self.operations {
            for refusal in RefusalReason::ALL {
                let labels = [("operation", operation.label), ("reason", refusal.label())];
                ConstCounter::new(operation.metrics.refusals(refusal))
                    .encode(family.encode_family(&labels)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "idempotency_rejections",
            "Answers that are neither the business function's success nor its replay, by reason.",
            None,
            MetricType::Counter,
        )?;
        for operation in &self.operations {
            for rejection in Rejection::ALL {
                if rejection == Rejection::Busy {
                    // One series per wait: `reason="busy"` sums them.
                    for wait in Wait::ALL {
                        let labels = [
                            ("operation", operation.label),
                            ("reason", rejection.label()),
                            ("wait", wait.label()),
                        ];
                        ConstCounter::new(operation.metrics.busy_waits(wait))
                            .encode(family.encode_family(&labels)?)?;
                    }
                    continue;
                }
                let labels = [("operation", operation.label), ("reason", rejection.label())];
                ConstCounter::new(operation.metrics.rejections(rejection))
                    .encode(family.encode_family(&labels)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "idempotency_lost_races",
            "Races lost to a concurrent request on the database, by where (answered in progress or replayed, never 500).",
            None,
            MetricType::Counter,
        )?;
        for operation in &idempotent {
            for class in LostRace::ALL {
                let labels = [("operation", operation.label), ("class", class.label())];
                ConstCounter::new(operation.metrics.lost_races[class as usize].get())
                    .encode(family.encode_family(&labels)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "idempotency_responses",
            "Answers sent, by HTTP status code.",
            None,
            MetricType::Counter,
        )?;
        for operation in &self.operations {
            for (index, counter) in operation.metrics.responses.iter().enumerate() {
                let count = counter.get();
                if count == 0 {
                    continue;
                }
                let code = (STATUSES.start + index as u16).to_string();
                let labels = [("operation", operation.label), ("code", code.as_str())];
                ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
            }
        }
        let gauges = [
            (
                "idempotency_records",
                "Records in the record table, sampled by the purge task (from 100000 on, the database's estimate on MySQL and PostgreSQL).",
                &self.census.records,
            ),
            (
                "idempotency_records_past_lease",
                "Records still in progress after their lease (server.max-processing) ran out, sampled by the purge task.",
                &self.census.past_lease,
            ),
        ];
        let mut family = encoder.encode_descriptor(
            "idempotency_records_stuck",
            "Records this instance saw get stuck in progress (their lease ran out and nobody finished or retried), counted before each purge.",
            None,
            MetricType::Counter,
        )?;
        let labels = [("table", self.table.as_str())];
        ConstCounter::new(self.census.stuck.get()).encode(family.encode_family(&labels)?)?;
        for (name, help, value) in gauges {
            let value = value.load(Ordering::Relaxed);
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            // Not sampled yet: no sample, rather than a made-up 0.
            if value >= 0 {
                let labels = [("table", self.table.as_str())];
                ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// The content type of [`render`]'s text.
pub(crate) const CONTENT_TYPE: &str =
    prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The Prometheus text exposition of `collector`.
pub(crate) fn render(collector: Collector) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(collector));
    let mut text = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut text, &registry)
        .expect("writing to a String cannot fail");
    text
}

#[cfg(test)]
mod tests {
    use super::buckets;

    #[test]
    fn buckets_have_a_fixed_low_end_and_the_contracts_points() {
        // The example: a 3 s lease, a 5 s client timeout.
        let bounds = buckets(Some(3_000), 5_000, &[]);
        assert_eq!(
            bounds,
            [
                0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.25, 2.5, 2.7,
                3.0, 5.0
            ]
        );
        // A 30 s lease still tells 5 ms from 300 ms.
        let long = buckets(Some(30_000), 0, &[]);
        for bound in [0.005, 0.05, 0.1, 0.25, 0.5, 7.5, 27.0, 30.0] {
            assert!(long.contains(&bound), "{bound}: {long:?}");
        }
        // A lease of a few milliseconds: whole milliseconds, increasing.
        let tiny = buckets(Some(30), 0, &[31]);
        assert_eq!(tiny, [0.001, 0.005, 0.008, 0.01, 0.015, 0.023, 0.025, 0.027, 0.03, 0.031]);
    }

    #[test]
    fn bounds_print_as_whole_milliseconds() {
        for bound in buckets(Some(300), 7_000, &[1_300, 1_600]) {
            let printed = bound.to_string();
            let decimals = printed.split('.').nth(1).map_or(0, str::len);
            assert!(decimals <= 3, "{printed}");
        }
    }
}
