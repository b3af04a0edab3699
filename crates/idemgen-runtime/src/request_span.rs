//! One `tracing` span per request, and the request-level measures: wrap
//! each operation's route with [`observe`]. The engine marks its answers
//! with what happened ([`Observed`]); the span records it with the claim,
//! business and commit timings, and answers made before the engine
//! (credentials refused, a body too large) are classified by their status.
//! A route that is not wrapped still gets the engine's own measures (the
//! counters, the claim and business histograms, refusals, lost races), not
//! the span or the request histogram.
//!
//! The span's fields are the operation, the outcome, the status and the
//! timings: never the key, a credential, a header or a body, so whatever
//! the spans are exported to learns no secret.

use std::time::Duration;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use tokio::time::Instant;
use tracing::Instrument;

use crate::engine::Operation;
use crate::metrics::{RefusalReason, Rejection};
use crate::outcome::{NotServed, Observed, Outcome};

/// The middleware of `operation`'s route: runs the rest of the request
/// inside its span and records what came of it (the request duration
/// histogram, the answers by status, refusals made before the engine).
///
/// ```ignore
/// use axum::middleware::from_fn_with_state;
/// let route = on(MethodFilter::POST, pay).layer(from_fn_with_state(&PAY, idemgen_runtime::observe));
/// ```
pub async fn observe(
    State(operation): State<&'static Operation>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    // OpenTelemetry's HTTP server conventions: named `{method} {route}`,
    // kind server, the route as the router matched it (a template such as
    // `/orders/{order_no}`, never the path's values).
    let method = request.method().as_str().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| request.uri().path().to_string(), |matched| matched.as_str().to_string());
    let span = tracing::info_span!(
        "request",
        otel.name = format!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = method,
        http.route = route,
        http.response.status_code = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
        url.path = request.uri().path(),
        url.scheme = request.uri().scheme_str().unwrap_or("http"),
        operation = operation.label,
        outcome = tracing::field::Empty,
        refusal = tracing::field::Empty,
        status = tracing::field::Empty,
        claim_ms = tracing::field::Empty,
        business_ms = tracing::field::Empty,
        commit_ms = tracing::field::Empty,
        total_ms = tracing::field::Empty,
    );
    #[cfg(feature = "otel")]
    crate::otel::continue_trace(&span, request.headers());
    let response = next.run(request).instrument(span.clone()).await;
    let took = started.elapsed();
    let status = response.status().as_u16();
    if response.extensions().get::<NotServed>().is_some() {
        // Another path than the operation's: none of its measures.
        span.record("status", status);
        span.record("http.response.status_code", status);
        return response;
    }
    let observed = match response.extensions().get::<Observed>() {
        Some(observed) => *observed,
        None => {
            // Answered before the engine saw it.
            let outcome = match status {
                401 | 403 => Outcome::Refused(RefusalReason::Unauthenticated),
                413 => Outcome::Refused(RefusalReason::TooLarge),
                400..=499 => Outcome::Refused(RefusalReason::Other),
                500..=599 => Outcome::Failed,
                _ => Outcome::First,
            };
            if let Outcome::Refused(refusal) = outcome {
                operation.metrics.refused(refusal);
            }
            let rejection = match status {
                400..=499 => Some(Rejection::Refused),
                500..=599 => Some(Rejection::InternalError),
                _ => None,
            };
            if let Some(rejection) = rejection {
                operation.metrics.rejected(rejection);
            }
            Observed::new(outcome)
        }
    };
    operation
        .metrics
        .observe_request(operation.contract.as_ref(), took);
    operation.metrics.responded(status);
    span.record("outcome", observed.outcome.label());
    if let Outcome::Refused(refusal) = observed.outcome {
        span.record("refusal", refusal.label());
    }
    span.record("status", status);
    span.record("http.response.status_code", status);
    // A server span's error is a 5xx; a 4xx is the client's.
    if (500..600).contains(&status) {
        span.record("otel.status_code", "error");
        span.record("error.type", status.to_string());
    }
    let millis = |duration: Duration| duration.as_secs_f64() * 1000.0;
    if let Some(claim) = observed.claim {
        span.record("claim_ms", millis(claim));
    }
    if let Some(business) = observed.business {
        span.record("business_ms", millis(business));
    }
    if let Some(commit) = observed.commit {
        span.record("commit_ms", millis(commit));
    }
    span.record("total_ms", millis(took));
    response
}
