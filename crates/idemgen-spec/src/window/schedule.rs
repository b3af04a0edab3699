//! The retry schedule: when each attempt starts and when the client stops
//! waiting for it, in the worst case (every attempt times out, every
//! backoff gets its full jitter). One computation, read by the window
//! math (the retry span is the last attempt's latest start plus
//! `server.max-processing`), by `idemgen window`'s timeline and by the
//! generated client, whose retry loop is bounded by these numbers: the
//! bounds the window was checked against are the client's own.

use serde::Serialize;

use super::WindowInputs;

/// Every attempt of one exchange, the first one included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Schedule {
    /// `client.timeout`.
    pub timeout_ms: u64,
    pub attempts: Vec<Attempt>,
    /// When the last attempt's processing ends at the latest, from the
    /// first attempt's start: the retry span. `None` without
    /// `server.max-processing`.
    pub retry_span_ms: Option<u64>,
}

/// One attempt; times are milliseconds from the first attempt's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Attempt {
    /// The latest it starts: every earlier attempt timed out and every
    /// backoff got its full jitter. A real attempt may start earlier (the
    /// one before it was answered at once), never later.
    pub start_ms: u64,
    /// `start_ms + client.timeout`: where the window math has the client
    /// give up on it.
    pub timeout_end_ms: u64,
    /// When the client stops waiting for it at the latest: its timeout,
    /// cut at the retry span, so no attempt outlasts the span the window
    /// was checked against.
    pub deadline_ms: u64,
    /// The wait after it, before the next attempt; `None` for the last.
    pub backoff: Option<Backoff>,
}

/// The wait between two attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Backoff {
    /// Its `client.retries` entry.
    pub delay_ms: u64,
    /// When the delay ends, before jitter.
    pub end_ms: u64,
    /// When the next attempt starts at the latest (full jitter added).
    pub next_start_ms: u64,
}

impl Schedule {
    /// The schedule `inputs` describe; `None` without `client.timeout`.
    /// Saturating, like the rest of the window math.
    pub fn of(inputs: &WindowInputs) -> Option<Schedule> {
        let timeout_ms = inputs.timeout_ms?;
        let retries = &inputs.retries_ms;
        let mut attempts: Vec<Attempt> = Vec::with_capacity(retries.len().saturating_add(1));
        let mut start_ms = 0u64;
        for index in 0..=retries.len() {
            let timeout_end_ms = start_ms.saturating_add(timeout_ms);
            let backoff = retries.get(index).map(|delay_ms| {
                let end_ms = timeout_end_ms.saturating_add(*delay_ms);
                Backoff {
                    delay_ms: *delay_ms,
                    end_ms,
                    next_start_ms: end_ms.saturating_add(inputs.jitter_ms),
                }
            });
            attempts.push(Attempt {
                start_ms,
                timeout_end_ms,
                deadline_ms: timeout_end_ms,
                backoff,
            });
            if let Some(backoff) = backoff {
                start_ms = backoff.next_start_ms;
            }
        }
        let retry_span_ms = inputs
            .processing_ms
            .map(|processing| start_ms.saturating_add(processing));
        if let Some(span) = retry_span_ms {
            for attempt in &mut attempts {
                attempt.deadline_ms = attempt.timeout_end_ms.min(span);
            }
        }
        Some(Schedule {
            timeout_ms,
            attempts,
            retry_span_ms,
        })
    }

    /// The last attempt (there is always the first).
    pub fn last(&self) -> &Attempt {
        self.attempts
            .last()
            .expect("a schedule always has the first attempt")
    }
}

/// The schedule of an operation's merged contract.
pub fn schedule(contract: &crate::contract::Contract) -> Option<Schedule> {
    Schedule::of(&WindowInputs::of(contract))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::{Verdict, compute};
    use proptest::prelude::*;

    fn article() -> WindowInputs {
        WindowInputs {
            timeout_ms: Some(5_000),
            retries_ms: vec![200, 800],
            jitter_ms: 100,
            processing_ms: Some(3_000),
            window_ms: Some(18_000),
        }
    }

    #[test]
    fn article_schedule() {
        let schedule = Schedule::of(&article()).unwrap();
        let starts: Vec<u64> = schedule.attempts.iter().map(|a| a.start_ms).collect();
        assert_eq!(starts, vec![0, 5_300, 11_200]);
        assert_eq!(schedule.retry_span_ms, Some(14_200));
        assert_eq!(schedule.last().timeout_end_ms, 16_200);
        assert_eq!(
            schedule.last().deadline_ms,
            14_200,
            "the last attempt is cut at the span"
        );
        assert_eq!(schedule.attempts[0].deadline_ms, 5_000);
        assert_eq!(
            schedule.attempts[0].backoff,
            Some(Backoff {
                delay_ms: 200,
                end_ms: 5_200,
                next_start_ms: 5_300
            })
        );
        assert_eq!(schedule.last().backoff, None);
    }

    #[test]
    fn no_timeout_no_schedule() {
        let inputs = WindowInputs {
            timeout_ms: None,
            ..article()
        };
        assert_eq!(Schedule::of(&inputs), None);
    }

    fn inputs() -> impl Strategy<Value = WindowInputs> {
        let ms = 0u64..120_000;
        (
            ms.clone(),
            proptest::collection::vec(ms.clone(), 0..8),
            0u64..5_000,
            ms,
            0u64..2_000_000,
        )
            .prop_map(
                |(timeout, retries, jitter, processing, window)| WindowInputs {
                    timeout_ms: Some(timeout),
                    retries_ms: retries,
                    jitter_ms: jitter,
                    processing_ms: Some(processing),
                    window_ms: Some(window),
                },
            )
    }

    proptest! {
        /// Whatever a lint-clean contract says, the client's last attempt
        /// (started as late as the schedule allows, waited on as long as it
        /// allows) ends before the window does, and so does its processing.
        #[test]
        fn lint_clean_contracts_end_inside_the_window(inputs in inputs()) {
            let math = compute(&inputs);
            prop_assume!(math.verdict == Verdict::Ok);
            let window = inputs.window_ms.unwrap();
            let schedule = Schedule::of(&inputs).unwrap();
            prop_assert_eq!(schedule.attempts.len(), inputs.retries_ms.len() + 1);
            prop_assert_eq!(schedule.retry_span_ms, math.retry_span_ms);
            for pair in schedule.attempts.windows(2) {
                prop_assert!(pair[0].start_ms <= pair[1].start_ms);
                prop_assert!(pair[0].deadline_ms <= pair[1].start_ms);
            }
            let last = schedule.last();
            prop_assert!(last.deadline_ms <= window);
            prop_assert!(last.start_ms + inputs.processing_ms.unwrap() <= window);
        }
    }
}
