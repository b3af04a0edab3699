//! The idempotency window math: how long a finished key must be remembered
//! so that no retry of the same business event arrives after it is forgotten.
//!
//! Two bounds, both from the contract:
//!
//! - the article's **2× bound**:
//!   `2 × (timeout + Σretries + retries×jitter + max-processing)`;
//! - the **retry span**, the real time from the first attempt's arrival to
//!   the end of the last retry's processing:
//!   `retries×timeout + Σretries + retries×jitter + max-processing`.
//!   With many retries it exceeds the 2× bound, which the article's rule misses.
//!
//! All arithmetic saturates at `u64::MAX` milliseconds: inputs come from user
//! specs (up to a year each, lists of any length) and this must never panic.
//! A saturated bound is still larger than any real window, so the verdict
//! stays on the safe side ("too short").
//!
//! Pure std + serde; nothing from the rest of the crate. Its table and
//! SVG renderings live in the report crate.

use serde::Serialize;

mod schedule;

pub use schedule::{Attempt, Backoff, Schedule, schedule};

/// The merged `x-idempotency` values the window depends on, in milliseconds.
/// `None` means the spec does not say (the field is required, so that is a
/// `window-missing` finding and the verdict is [`Verdict::Unknown`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WindowInputs {
    /// `client.timeout`: how long the client waits for one attempt.
    pub timeout_ms: Option<u64>,
    /// `client.retries`: the backoff before each retry; its length is the
    /// retry count.
    pub retries_ms: Vec<u64>,
    /// `client.jitter`: the most random delay added to each backoff.
    pub jitter_ms: u64,
    /// `server.max-processing`: worst server time for one attempt, and the
    /// lease of an in-progress record.
    pub processing_ms: Option<u64>,
    /// `window`: how long a finished key is remembered.
    pub window_ms: Option<u64>,
}

impl WindowInputs {
    /// The inputs an operation's merged contract gives.
    pub fn of(contract: &crate::contract::Contract) -> WindowInputs {
        WindowInputs {
            timeout_ms: contract.timeout_ms.as_ref().map(|timeout| timeout.value),
            retries_ms: contract.retry_delays(),
            jitter_ms: contract.jitter_ms.value,
            processing_ms: contract
                .max_processing_ms
                .as_ref()
                .map(|processing| processing.value),
            window_ms: contract.window_ms.as_ref().map(|window| window.value),
        }
    }

    /// A what-if copy: each `Some` replaces that input, `None` keeps it.
    /// Used to answer "what window would a 10 s timeout need?".
    pub fn with_overrides(
        &self,
        timeout_ms: Option<u64>,
        retries_ms: Option<Vec<u64>>,
        max_processing_ms: Option<u64>,
    ) -> WindowInputs {
        WindowInputs {
            timeout_ms: timeout_ms.or(self.timeout_ms),
            retries_ms: retries_ms.unwrap_or_else(|| self.retries_ms.clone()),
            jitter_ms: self.jitter_ms,
            processing_ms: max_processing_ms.or(self.processing_ms),
            window_ms: self.window_ms,
        }
    }

    /// Number of retries after the first attempt.
    pub fn retry_count(&self) -> u64 {
        // usize fits in u64 on every platform Rust supports.
        self.retries_ms.len() as u64
    }

    /// Σretries: the sum of all backoff delays (the contract's
    /// "max total retry delay", without jitter).
    pub fn total_retry_delay_ms(&self) -> u64 {
        self.retries_ms
            .iter()
            .fold(0u64, |sum, delay| sum.saturating_add(*delay))
    }

    /// retries×jitter: the worst case adds the full jitter to every backoff.
    pub fn total_jitter_ms(&self) -> u64 {
        self.retry_count().saturating_mul(self.jitter_ms)
    }

    /// Contract field names of the inputs that are missing, in the order a
    /// person would fix them. Empty when the verdict can be decided.
    pub fn missing_fields(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if self.timeout_ms.is_none() {
            missing.push("client.timeout");
        }
        if self.processing_ms.is_none() {
            missing.push("server.max-processing");
        }
        if self.window_ms.is_none() {
            missing.push("window");
        }
        missing
    }
}

/// Whether the declared window covers both bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The window is at least the 2× bound and the retry span.
    Ok,
    /// The window is below at least one bound.
    TooShort,
    /// `client.timeout`, `server.max-processing` or `window` is missing.
    Unknown,
}

impl Verdict {
    /// The stable spelling used in JSON output: `ok`, `too-short`, `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::TooShort => "too-short",
            Verdict::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of [`compute`]. A bound is `None` when an input it needs is
/// missing; whatever can be computed still is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WindowMath {
    /// `2 × (timeout + Σretries + retries×jitter + max-processing)`.
    pub required_ms: Option<u64>,
    /// `retries×timeout + Σretries + retries×jitter + max-processing`.
    pub retry_span_ms: Option<u64>,
    /// The larger of the two bounds: the shortest window that passes.
    pub smallest_safe_ms: Option<u64>,
    /// The declared window, copied from the inputs so the math stands alone.
    pub window_ms: Option<u64>,
    pub verdict: Verdict,
}

impl WindowMath {
    /// The `window-too-short` rule: the window is below the 2× bound.
    pub fn below_two_x_bound(&self) -> bool {
        matches!((self.window_ms, self.required_ms), (Some(window), Some(required)) if window < required)
    }

    /// The `window-below-retry-span` rule: the window ends before the last
    /// retry can finish.
    pub fn below_retry_span(&self) -> bool {
        matches!((self.window_ms, self.retry_span_ms), (Some(window), Some(span)) if window < span)
    }

    /// How much longer the window must be to pass; `None` when it passes or
    /// cannot be judged.
    pub fn shortfall_ms(&self) -> Option<u64> {
        let (window, safe) = (self.window_ms?, self.smallest_safe_ms?);
        (window < safe).then(|| safe - window)
    }
}

/// Computes both bounds and the verdict. Never panics or overflows.
pub fn compute(inputs: &WindowInputs) -> WindowMath {
    // Shared by both bounds: every backoff, each with its full jitter.
    let waiting_ms = inputs
        .total_retry_delay_ms()
        .saturating_add(inputs.total_jitter_ms());

    let required_ms = match (inputs.timeout_ms, inputs.processing_ms) {
        (Some(timeout), Some(processing)) => Some(
            timeout
                .saturating_add(waiting_ms)
                .saturating_add(processing)
                .saturating_mul(2),
        ),
        _ => None,
    };

    // The last retry starts after every earlier attempt has timed out and
    // every backoff has elapsed, then runs for up to max-processing: the
    // schedule the generated client follows says when.
    let retry_span_ms = Schedule::of(inputs).and_then(|schedule| schedule.retry_span_ms);

    let smallest_safe_ms = match (required_ms, retry_span_ms) {
        (Some(required), Some(span)) => Some(required.max(span)),
        _ => None,
    };

    let verdict = match (inputs.window_ms, smallest_safe_ms) {
        (Some(window), Some(safe)) if window >= safe => Verdict::Ok,
        (Some(_), Some(_)) => Verdict::TooShort,
        _ => Verdict::Unknown,
    };

    WindowMath {
        required_ms,
        retry_span_ms,
        smallest_safe_ms,
        window_ms: inputs.window_ms,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The article's example: 5 s timeout, retries after 200 ms and 800 ms,
    /// 3 s worst processing.
    fn article(window_ms: Option<u64>) -> WindowInputs {
        WindowInputs {
            timeout_ms: Some(5_000),
            retries_ms: vec![200, 800],
            jitter_ms: 0,
            processing_ms: Some(3_000),
            window_ms,
        }
    }

    #[test]
    fn article_example_needs_18_seconds() {
        let math = compute(&article(Some(18_000)));
        assert_eq!(math.required_ms, Some(18_000));
        assert_eq!(math.retry_span_ms, Some(14_000), "2×5 s + 1 s + 3 s");
        assert_eq!(math.smallest_safe_ms, Some(18_000));
        assert_eq!(math.verdict, Verdict::Ok);
        assert!(!math.below_two_x_bound());
        assert!(!math.below_retry_span());
        assert_eq!(math.shortfall_ms(), None);
    }

    #[test]
    fn one_millisecond_short_is_too_short() {
        let math = compute(&article(Some(17_999)));
        assert_eq!(math.verdict, Verdict::TooShort);
        assert!(math.below_two_x_bound());
        assert!(!math.below_retry_span());
        assert_eq!(math.shortfall_ms(), Some(1));
    }

    #[test]
    fn jitter_counts_once_per_retry() {
        let inputs = WindowInputs {
            jitter_ms: 100,
            ..article(Some(18_400))
        };
        let math = compute(&inputs);
        assert_eq!(math.required_ms, Some(18_400));
        assert_eq!(math.retry_span_ms, Some(14_200));
        assert_eq!(math.verdict, Verdict::Ok);
    }

    #[test]
    fn many_retries_exceed_the_two_x_bound() {
        // Eight quick retries of a 5 s timeout: the last one finishes long
        // after 2 × (5 + 0.8 + 1) s.
        let inputs = WindowInputs {
            timeout_ms: Some(5_000),
            retries_ms: vec![100; 8],
            jitter_ms: 0,
            processing_ms: Some(1_000),
            window_ms: Some(20_000),
        };
        let math = compute(&inputs);
        assert_eq!(math.required_ms, Some(13_600));
        assert_eq!(math.retry_span_ms, Some(41_800));
        assert_eq!(math.smallest_safe_ms, Some(41_800));
        assert_eq!(math.verdict, Verdict::TooShort);
        assert!(
            !math.below_two_x_bound(),
            "the article's rule alone misses it"
        );
        assert!(math.below_retry_span());
        assert_eq!(math.shortfall_ms(), Some(21_800));
    }

    #[test]
    fn no_retries_span_is_processing_only() {
        let inputs = WindowInputs {
            retries_ms: vec![],
            ..article(Some(16_000))
        };
        let math = compute(&inputs);
        assert_eq!(math.required_ms, Some(16_000));
        assert_eq!(math.retry_span_ms, Some(3_000));
        assert_eq!(math.verdict, Verdict::Ok);
    }

    #[test]
    fn missing_inputs_are_unknown_but_still_computed_where_possible() {
        let no_window = compute(&article(None));
        assert_eq!(no_window.verdict, Verdict::Unknown);
        assert_eq!(no_window.required_ms, Some(18_000));
        assert_eq!(no_window.retry_span_ms, Some(14_000));
        assert_eq!(no_window.shortfall_ms(), None);
        assert!(!no_window.below_two_x_bound());

        let no_timeout = WindowInputs {
            timeout_ms: None,
            ..article(Some(1))
        };
        let math = compute(&no_timeout);
        assert_eq!(math.verdict, Verdict::Unknown);
        assert_eq!(math.required_ms, None);
        assert_eq!(math.retry_span_ms, None);
        assert_eq!(no_timeout.missing_fields(), vec!["client.timeout"]);

        let nothing = WindowInputs::default();
        assert_eq!(compute(&nothing).verdict, Verdict::Unknown);
        assert_eq!(
            nothing.missing_fields(),
            vec!["client.timeout", "server.max-processing", "window"]
        );
    }

    #[test]
    fn huge_inputs_saturate_instead_of_overflowing() {
        let year_ms = 366 * 24 * 3_600 * 1_000;
        let inputs = WindowInputs {
            timeout_ms: Some(year_ms),
            retries_ms: vec![year_ms; 100_000],
            jitter_ms: year_ms,
            processing_ms: Some(year_ms),
            window_ms: Some(year_ms),
        };
        let math = compute(&inputs);
        assert!(math.required_ms.is_some_and(|ms| ms > year_ms));
        assert_eq!(math.verdict, Verdict::TooShort);

        let extreme = WindowInputs {
            timeout_ms: Some(u64::MAX),
            retries_ms: vec![u64::MAX, u64::MAX],
            jitter_ms: u64::MAX,
            processing_ms: Some(u64::MAX),
            window_ms: Some(u64::MAX),
        };
        let math = compute(&extreme);
        assert_eq!(math.required_ms, Some(u64::MAX));
        assert_eq!(math.retry_span_ms, Some(u64::MAX));
        assert_eq!(math.verdict, Verdict::Ok);
        assert_eq!(extreme.total_retry_delay_ms(), u64::MAX);
        assert_eq!(extreme.total_jitter_ms(), u64::MAX);
    }

    #[test]
    fn overrides_replace_only_what_is_given() {
        let base = article(Some(18_000));
        let same = base.with_overrides(None, None, None);
        assert_eq!(same, base);

        let longer = base.with_overrides(Some(10_000), Some(vec![1_000]), Some(4_000));
        assert_eq!(longer.timeout_ms, Some(10_000));
        assert_eq!(longer.retries_ms, vec![1_000]);
        assert_eq!(longer.processing_ms, Some(4_000));
        assert_eq!(longer.window_ms, Some(18_000));
        let math = compute(&longer);
        assert_eq!(math.required_ms, Some(30_000));
        assert_eq!(math.verdict, Verdict::TooShort);
    }

    #[test]
    fn verdict_spellings_are_stable() {
        assert_eq!(Verdict::Ok.as_str(), "ok");
        assert_eq!(Verdict::TooShort.to_string(), "too-short");
        assert_eq!(
            serde_json::to_value(Verdict::Unknown).unwrap(),
            serde_json::json!("unknown")
        );
    }
}
