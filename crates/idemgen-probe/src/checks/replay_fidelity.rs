//! # replay-fidelity
//!
//! **What it checks.** After the burst settled on a successful first
//! answer, the same request once more (waiting out in-progress answers) is
//! the first answer whole: the same status (a `201 Created` is replayed as
//! `201`, not `200`), the same `Content-Type`, the same body byte for byte
//! (the first 1 MiB of a longer one: the probe reads no more), and every
//! header the spec declares on that response (its exact code, else its
//! range such as `2XX`, else `default`; `Location`, `ETag`, `Link`, a
//! rate-limit or request-id header) with the first answer's value. `Date`
//! (the time of each answer) and the replay mark (`Idempotent-Replayed`,
//! `Idempotency-Replayed`, either with an `X-` prefix, or the
//! `--replay-header`) are left out, and so is `Set-Cookie`, which must not be replayed: the
//! replay may not carry the first answer's cookie.
//!
//! **Why it matters.** A retry is how a client learns the outcome of a
//! request whose answer it lost; the replay is the only answer it ever
//! reads. A client that branches on `201`, follows `Location`, or caches by
//! `ETag` breaks when the replay drops or changes them, and these are the
//! most common defects of idempotency libraries. A replayed `Set-Cookie`
//! hands the first caller's session to whoever retries.
//!
//! **What a failure means.** The replay's status, content type, body or a
//! declared header differs from the first answer, a declared header the
//! first answer carried is missing, or the replay repeats the first
//! answer's `Set-Cookie`. A declared header that neither answer carries is
//! a warning (the service does not send what the spec declares). The check
//! does not apply when the first attempt did not succeed.

use super::{Probe, REPLAY_MARKS, Settled};
use crate::check::declare_check;
use crate::http::{Answer, shown_header};
use crate::request::{Event, KeyUse};
use crate::{CheckResult, Outcome, ReplayHeader};

declare_check!(
    "replay_fidelity.rs",
    "replay-fidelity",
    [
        "the replay is the first answer whole: status, Content-Type, body",
        "and every header the spec declares on it; Set-Cookie never replayed",
    ]
);

impl Probe<'_> {
    /// The same request after the burst: the first answer, whole.
    pub fn replay_fidelity(&self, event: &Event, settled: &Settled) -> CheckResult {
        let mut check = CheckResult::new(&CHECK);
        let Some(first) = settled.0.as_ref().filter(|first| first.is_success()) else {
            check.outcome = Outcome::NotApplicable;
            check.summary = "the burst left no successful answer to replay".into();
            return check;
        };
        let replay = match self.settle(&self.plan.request(event, KeyUse::Valid)) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        let declared = self.plan.declared_headers(first.status);
        let mut compared = vec!["status".to_string(), "Content-Type".into(), "body".into()];
        if replay.status != first.status {
            check.fail(format!(
                "status: first {}, replay {}",
                first.describe(),
                replay.describe()
            ));
        }
        if first.header("content-type") != replay.header("content-type") {
            check.fail(format!(
                "Content-Type: first {}, replay {}",
                shown(first.header("content-type")),
                shown(replay.header("content-type"))
            ));
        }
        if !replay.same_body(first) {
            check.fail(format!(
                "body: first {}, replay {}: {}",
                body_size(first),
                body_size(&replay),
                replay.excerpt()
            ));
        }
        for name in declared {
            let lower = name.to_ascii_lowercase();
            if self.per_answer(&lower) || lower == "set-cookie" || lower == "content-type" {
                continue;
            }
            compared.push(name.clone());
            match (first.header(&lower), replay.header(&lower)) {
                (None, None) => check.warn(format!(
                    "the spec declares `{name}` on {}, and neither answer carries it",
                    first.status
                )),
                (first_value, replay_value) if first_value == replay_value => {}
                (first_value, replay_value) => check.fail(format!(
                    "declared header `{name}`: first {}, replay {}",
                    shown(first_value),
                    shown(replay_value)
                )),
            }
        }
        let first_cookies = all(first, "set-cookie");
        let replayed_cookies: Vec<&str> = all(&replay, "set-cookie")
            .into_iter()
            .filter(|cookie| first_cookies.contains(cookie))
            .collect();
        if !replayed_cookies.is_empty() {
            let replayed_cookies: Vec<String> =
                replayed_cookies.into_iter().map(shown_header).collect();
            check.fail(format!(
                "the replay repeats the first answer's Set-Cookie `{}`: a stored session handed to whoever retries",
                replayed_cookies.join("`, `")
            ));
        }
        check.summary = format!(
            "{}{} against the first answer {}{}: compared {}",
            replay.describe(),
            self.client.from(&replay),
            first.describe(),
            self.client.from(first),
            compared.join(", ")
        );
        check
    }
}

impl Probe<'_> {
    /// Headers that differ between a first answer and its replay by their
    /// nature: each answer's own time, and the mark a replay carries (any
    /// of [`REPLAY_MARKS`], or the one `--replay-header` names).
    fn per_answer(&self, lower: &str) -> bool {
        let named = match self.replay_header {
            ReplayHeader::Named(name) => Some(name.as_str()),
            ReplayHeader::Unmarked => None,
        };
        lower == "date"
            || named
                .into_iter()
                .chain(REPLAY_MARKS)
                .any(|mark| mark.eq_ignore_ascii_case(lower))
    }
}

/// `12 bytes`, or `over 1048576 bytes` for a body the probe cut.
fn body_size(answer: &Answer) -> String {
    let over = if answer.cut { "over " } else { "" };
    format!("{over}{} bytes", answer.body.len())
}

/// Every value of `name` in `answer`.
fn all<'a>(answer: &'a Answer, name: &str) -> Vec<&'a str> {
    answer
        .headers
        .iter()
        .filter(|(header, _)| header.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
        .collect()
}

/// A header value of either answer as evidence, or `none`.
fn shown(value: Option<&str>) -> String {
    value.map_or("none".to_string(), |value| {
        format!("`{}`", shown_header(value))
    })
}
