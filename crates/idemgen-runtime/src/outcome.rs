//! What happened to a request, as the engine tells it: every answer it
//! makes carries an [`Observed`] response extension (the outcome and the
//! claim, business and commit timings), which the request's span
//! ([`crate::service::observe`]) records.

use std::time::Duration;

use axum::response::Response;

use crate::metrics::{OperationMetrics, RefusalReason, Rejection, Wait};

/// A response extension: the request was for a path the operation's route
/// matched but the operation does not serve (a segment without the text
/// around its parameter, [`crate::PathAffix`]). [`crate::observe`] counts
/// it as the router's 404 for an unknown path is counted: not as a
/// request of the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotServed;

/// What happened to a request, as the span's `outcome` field says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The key was claimed and the business function ran (or the operation
    /// has no key).
    First,
    /// The stored answer was sent again.
    Replay,
    /// Another attempt holds the key: "retry later".
    InProgress,
    /// The key was used with a different request.
    Conflict,
    /// Refused before anything ran (key, credentials, schema, size).
    Refused(RefusalReason),
    /// Stopped or failed: the database, the lease, an error, or a business
    /// answer recorded as a failure.
    Failed,
    /// The key was taken over from an attempt whose lease ran out.
    Takeover,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::First => "first",
            Outcome::Replay => "replay",
            Outcome::InProgress => "in_progress",
            Outcome::Conflict => "conflict",
            Outcome::Refused(_) => "refused",
            Outcome::Failed => "failed",
            Outcome::Takeover => "takeover",
        }
    }
}

/// What the engine knows of a request it answered: a response extension,
/// read by [`observe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed {
    pub outcome: Outcome,
    /// Getting a connection, reading the key's record, decoding the typed
    /// input (when a record did not answer) and claiming the key.
    pub claim: Option<Duration>,
    /// The business function.
    pub business: Option<Duration>,
    /// Storing the answer and committing.
    pub commit: Option<Duration>,
}

impl Observed {
    pub(crate) fn new(outcome: Outcome) -> Observed {
        Observed {
            outcome,
            claim: None,
            business: None,
            commit: None,
        }
    }
}

/// Marks `response` with `outcome` unless the engine marked it already.
pub(crate) fn mark(mut response: Response, outcome: Outcome) -> Response {
    if response.extensions().get::<Observed>().is_none() {
        response.extensions_mut().insert(Observed::new(outcome));
    }
    response
}

/// Whether `response` is marked as refused: the request claimed nothing.
pub(crate) fn is_refused(response: &Response) -> bool {
    response
        .extensions()
        .get::<Observed>()
        .is_some_and(|observed| matches!(observed.outcome, Outcome::Refused(_)))
}

/// Adds timings to the mark of `response` (marked `otherwise` if it was not).
pub(crate) fn timed(
    mut response: Response,
    otherwise: Outcome,
    update: impl FnOnce(&mut Observed),
) -> Response {
    let observed = response
        .extensions_mut()
        .get_or_insert_with(|| Observed::new(otherwise));
    update(observed);
    response
}

/// Marks `response` as rejected for `rejection` unless it was marked
/// already (the first reason given is the one counted).
pub(crate) fn reject(mut response: Response, rejection: Rejection) -> Response {
    if response.extensions().get::<Rejection>().is_none() {
        response.extensions_mut().insert(rejection);
    }
    response
}

/// Marks a busy `response` with what it waited for in vain.
pub(crate) fn waited(mut response: Response, wait: Wait) -> Response {
    response.extensions_mut().insert(wait);
    response
}

/// Counts `response`, one of an operation's final answers, in its
/// `metrics` under its rejection reason if it is not a success: the reason
/// it was marked with, or else the business function's own answer (a 5xx
/// of its own is an internal error). A replay is the first attempt's
/// answer again, and is not counted here.
pub(crate) fn count(metrics: &OperationMetrics, response: &Response) {
    let replayed = response
        .extensions()
        .get::<Observed>()
        .is_some_and(|observed| observed.outcome == Outcome::Replay);
    let status = response.status().as_u16();
    let rejection = match response.extensions().get::<Rejection>() {
        Some(rejection) => *rejection,
        None if replayed || status < 400 => return,
        None if status >= 500 => Rejection::InternalError,
        None => Rejection::Business,
    };
    match (rejection, response.extensions().get::<Wait>()) {
        (Rejection::Busy, Some(wait)) => metrics.busy(*wait),
        (Rejection::Busy, None) => {
            debug_assert!(false, "a busy answer is marked with what it waited for");
            metrics.busy(Wait::Claim);
        }
        (rejection, _) => metrics.rejected(rejection),
    }
}
