//! Prometheus counters per operation (the `operation` label), for
//! `GET /metrics`.
//!
//! Watch the replay rate, `replays / (first_attempts + replays)`: it should
//! stay under 0.1 %; a jump means a client's retry policy broke.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// A monotonically increasing count: read by anyone, counted only by the
/// engine.
pub struct Counter(AtomicU64);

impl Counter {
    pub(crate) const fn new() -> Counter {
        Counter(AtomicU64::new(0))
    }

    pub(crate) fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
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
    /// In-progress claims taken over after their lease ran out.
    pub takeovers: Counter,
    /// Attempts recorded as failed.
    pub failures: Counter,
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
        }
    }
}

impl Default for Counters {
    fn default() -> Self {
        Counters::new()
    }
}

/// A metric family: name, help text, and which counter it reads.
type Family = (&'static str, &'static str, fn(&Counters) -> &Counter);

/// The Prometheus text exposition of the counters of each operation, by
/// its `operation` label (`service::health_and_metrics` passes every
/// idempotent operation's).
pub(crate) fn render(operations: &[(&str, &Counters)]) -> String {
    let families: [Family; 6] = [
        (
            "idempotency_first_attempts_total",
            "Requests that claimed their key and ran the business function.",
            |c| &c.first_attempts,
        ),
        (
            "idempotency_replays_total",
            "Requests answered with the stored response.",
            |c| &c.replays,
        ),
        (
            "idempotency_in_progress_total",
            "Requests answered in progress with Retry-After.",
            |c| &c.in_progress,
        ),
        (
            "idempotency_conflicts_total",
            "Keys reused with a different request.",
            |c| &c.conflicts,
        ),
        (
            "idempotency_takeovers_total",
            "In-progress claims taken over after their lease ran out.",
            |c| &c.takeovers,
        ),
        (
            "idempotency_failures_total",
            "Attempts recorded as failed.",
            |c| &c.failures,
        ),
    ];
    let mut out = String::new();
    for (name, help, counter) in families {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} counter");
        for (label, counters) in operations {
            let _ = writeln!(
                out,
                "{name}{{operation=\"{label}\"}} {}",
                counter(counters).get()
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Counters, render};

    #[test]
    fn each_family_is_typed_and_labelled_by_operation() {
        let counters = Counters::new();
        counters.replays.inc();
        let text = render(&[("on_pay_callback", &counters)]);
        assert!(text.contains("# TYPE idempotency_replays_total counter\n"));
        assert!(text.contains("idempotency_replays_total{operation=\"on_pay_callback\"} 1\n"));
        assert!(text.contains("idempotency_takeovers_total{operation=\"on_pay_callback\"} 0\n"));
    }
}
