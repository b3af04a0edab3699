//! With the `otel` feature: each request's span (`request_span`) exported
//! over OTLP/HTTP (protobuf) when `OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set. The OpenTelemetry SDK reads
//! the standard variables itself: `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`;
//! `OTEL_SDK_DISABLED=true` turns the export off.
//!
//! A request's W3C `traceparent` / `tracestate` headers make its span a
//! child of the caller's trace ([`continue_trace`]), and
//! [`crate::Request::trace_headers`] gives business code the headers that
//! continue it in a downstream call; both through the SDK's
//! `TraceContextPropagator`.

use std::sync::OnceLock;

use axum::http::HeaderMap;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};
use tracing::Subscriber;
use tracing_opentelemetry::{OpenTelemetryLayer, OpenTelemetrySpanExt as _};
use tracing_subscriber::registry::LookupSpan;

/// The provider spans are exported through, to flush at shutdown.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// The layer that exports spans, when an OTLP endpoint is configured.
pub(crate) fn layer_from_env<S>() -> Option<OpenTelemetryLayer<S, Tracer>>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    let configured = [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ]
    .iter()
    .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()));
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|value| value == "true");
    if !configured || disabled {
        return None;
    }
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
    {
        Ok(exporter) => exporter,
        Err(error) => {
            // Logging is not set up yet: say it where it is seen.
            eprintln!("warning: traces are not exported: {error}");
            return None;
        }
    };
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().build())
        .build();
    let tracer = provider.tracer("idemgen-runtime");
    let _ = PROVIDER.set(provider);
    Some(tracing_opentelemetry::layer().with_tracer(tracer))
}

/// Exports the spans still buffered and stops the exporter. Blocks until
/// the exporter answers (or times out): call it off the async runtime.
pub fn flush_traces() {
    if let Some(provider) = PROVIDER.get()
        && let Err(error) = provider.shutdown()
    {
        tracing::warn!(%error, "exporting the last spans failed");
    }
}

/// Makes `span` (a request's, not yet entered) a child of the trace that
/// `headers` (`traceparent`, `tracestate`) name, when they name a valid
/// one.
pub(crate) fn continue_trace(span: &tracing::Span, headers: &HeaderMap) {
    let parent = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    if parent.span().span_context().is_valid() {
        // Fails only when no OpenTelemetry layer records spans: then there
        // is no trace to continue.
        let _ = span.set_parent(parent);
    }
}

/// The `traceparent` and `tracestate` headers of the current span: empty
/// when spans are not exported (then [`crate::Request::trace_headers`]
/// passes on the caller's own).
pub(crate) fn current_trace_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    let context = tracing::Span::current().context();
    if context.span().span_context().is_valid() {
        TraceContextPropagator::new().inject_context(&context, &mut HeaderInjector(&mut headers));
    }
    headers
}
