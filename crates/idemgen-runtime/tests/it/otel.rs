//! With the `otel` feature: the spans of requests reach an OTLP/HTTP
//! receiver run in this test (decoded with `opentelemetry-proto`), with
//! their operation, outcome and timings, the `OTEL_*` variables honoured,
//! and no key, credential or body in what is sent; named and attributed
//! by OpenTelemetry's HTTP server conventions, children of the caller's
//! `traceparent`, which business code passes on to a downstream service,
//! and exported under `RUST_LOG=warn`.
//!
//! It sets `OTEL_*` variables and installs the global subscriber, so it
//! runs alone, when `IDEMGEN_TEST_OTEL=1` (`.ci/run` runs
//! `cargo test -p idemgen-runtime --features otel --test it otel::`).

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::from_fn_with_state;
use axum::response::Response;
use axum::routing::post;
use idemgen_runtime::{Contract, Idempotency, Operation, Reply, observe};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode as SpanStatus;
use prost::Message;
use tower::ServiceExt;

use crate::support::{Table, key, skipped};

static TRACED: Operation = Operation::idempotent(
    "traced",
    "traced",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 2_000),
);

static FAILING: Operation = Operation::idempotent(
    "failing",
    "failing",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 2_000),
);

/// The caller's trace, as its `traceparent` names it.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN_ID: &str = "00f067aa0ba902b7";

/// The downstream service the business step calls: the `traceparent`
/// headers it received.
#[derive(Clone, Default)]
struct Downstream(Arc<Mutex<Vec<String>>>);

async fn charge(State(downstream): State<Downstream>, request: Request) -> StatusCode {
    let traceparent = request
        .headers()
        .get("traceparent")
        .map(|value| value.to_str().unwrap().to_string())
        .unwrap_or_default();
    downstream.0.lock().unwrap().push(traceparent);
    StatusCode::OK
}

/// `POST /charge` to the downstream service at `address` with `headers`,
/// over plain HTTP/1.1.
async fn call_downstream(address: &str, headers: &axum::http::HeaderMap) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut request = format!(
        "POST /charge HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n"
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap()));
    }
    request.push_str("\r\n");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

static DOWNSTREAM_ADDRESS: std::sync::OnceLock<String> = std::sync::OnceLock::new();

async fn failing(State(engine): State<Idempotency>, request: Request) -> Response {
    match engine.begin(&FAILING, request).await {
        Ok(call) => {
            let error = std::io::Error::other("the ledger is read-only");
            call.finish(Err::<Reply, _>(error)).await
        }
        Err(answer) => answer,
    }
}

const TOKEN: &str = "s3cret-bearer-token";
const BODY: &str = r#"{"card":"4111-secret-card"}"#;

async fn traced(State(engine): State<Idempotency>, request: Request) -> Response {
    match engine.begin(&TRACED, request).await {
        Ok(call) => {
            // The business step calls a downstream service in this
            // request's trace.
            let headers = call.request().trace_headers();
            call_downstream(DOWNSTREAM_ADDRESS.get().unwrap(), &headers).await;
            call.answer(Reply::json(
                StatusCode::CREATED,
                &serde_json::json!({"ok": true}),
            ))
            .await
        }
        Err(answer) => answer,
    }
}

fn request(key: Option<&str>) -> Request {
    let mut request = axum::http::Request::post("/traced/A-1")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {TOKEN}"));
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    request.body(Body::from(BODY)).unwrap()
}

/// What the receiver got: every export request, raw.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<Bytes>>>);

async fn receive(State(received): State<Received>, body: Bytes) -> Response {
    received.0.lock().unwrap().push(body);
    let mut answer = Response::new(Body::from(Vec::new()));
    answer.headers_mut().insert(
        "content-type",
        axum::http::HeaderValue::from_static("application/x-protobuf"),
    );
    answer
}

fn string(value: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match value.as_ref().and_then(|value| value.value.as_ref()) {
        Some(Value::StringValue(text)) => text.clone(),
        Some(Value::IntValue(number)) => number.to_string(),
        Some(Value::DoubleValue(number)) => number.to_string(),
        other => format!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_spans_reach_an_otlp_receiver_without_secrets() {
    if std::env::var_os("IDEMGEN_TEST_OTEL").is_none() {
        skipped("set IDEMGEN_TEST_OTEL=1 (and build with --features otel) to run");
        return;
    }
    let Some(table) = Table::new().await else {
        return;
    };
    let received = Received::default();
    let receiver = Router::new()
        .route("/v1/traces", post(receive))
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, receiver).await });
    let downstream = Downstream::default();
    let charges = Router::new()
        .route("/charge", post(charge))
        .with_state(downstream.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    DOWNSTREAM_ADDRESS.get_or_init(|| listener.local_addr().unwrap().to_string());
    tokio::spawn(async move { axum::serve(listener, charges).await });

    // SAFETY: this test runs alone in its process (see the module's
    // comment); nothing else reads the environment concurrently.
    unsafe {
        std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{address}"));
        std::env::set_var("OTEL_SERVICE_NAME", "idemgen-otel-test");
        std::env::set_var("OTEL_BSP_SCHEDULE_DELAY", "50");
        // Logs only warnings: the spans are exported all the same.
        std::env::set_var("RUST_LOG", "warn");
    }
    idemgen_runtime::service::init_logging();

    let engine = table.engine().await;
    let router = Router::new()
        .route(
            "/traced/{order}",
            post(traced).layer(from_fn_with_state(&TRACED, observe)),
        )
        .route(
            "/failing",
            post(failing).layer(from_fn_with_state(&FAILING, observe)),
        )
        .with_state(engine);
    let the_key = key();
    let mut from_a_caller = request(Some(&the_key));
    from_a_caller.headers_mut().insert(
        "traceparent",
        format!("00-{TRACE_ID}-{CALLER_SPAN_ID}-01")
            .parse()
            .unwrap(),
    );
    from_a_caller
        .headers_mut()
        .insert("tracestate", "vendor=opaque".parse().unwrap());
    let mut failing_request = request(Some(&key()));
    *failing_request.uri_mut() = "/failing".parse().unwrap();
    for (request, status) in [
        (from_a_caller, StatusCode::CREATED),
        (request(Some(&the_key)), StatusCode::CREATED),
        (request(None), StatusCode::BAD_REQUEST),
        (failing_request, StatusCode::INTERNAL_SERVER_ERROR),
    ] {
        let answer = router.clone().oneshot(request).await.unwrap();
        assert_eq!(answer.status(), status);
    }
    tokio::task::spawn_blocking(idemgen_runtime::otel::flush_traces)
        .await
        .unwrap();

    let exports = received.0.lock().unwrap().clone();
    assert!(!exports.is_empty(), "the receiver got no export");
    let mut outcomes = Vec::new();
    let mut first_span_id = None;
    let mut failed = 0;
    for export in &exports {
        for secret in [the_key.as_str(), TOKEN, "4111-secret-card"] {
            let found = export
                .windows(secret.len())
                .any(|window| window == secret.as_bytes());
            assert!(!found, "{secret} reached the receiver");
        }
        let request = ExportTraceServiceRequest::decode(export.as_ref()).unwrap();
        for resource_spans in &request.resource_spans {
            let resource = resource_spans.resource.as_ref().unwrap();
            let service = resource
                .attributes
                .iter()
                .find(|attribute| attribute.key == "service.name")
                .map(|attribute| string(&attribute.value));
            assert_eq!(service.as_deref(), Some("idemgen-otel-test"));
            for span in resource_spans
                .scope_spans
                .iter()
                .flat_map(|scope| &scope.spans)
            {
                let attribute = |name: &str| {
                    span.attributes
                        .iter()
                        .find(|attribute| attribute.key == name)
                        .map(|attribute| string(&attribute.value))
                };
                assert_eq!(span.kind, SpanKind::Server as i32, "{}", span.name);
                assert_eq!(attribute("http.request.method").as_deref(), Some("POST"));
                assert_eq!(attribute("url.scheme").as_deref(), Some("http"));
                if span.name == "POST /failing" {
                    assert_eq!(attribute("http.route").as_deref(), Some("/failing"));
                    assert_eq!(
                        attribute("http.response.status_code").as_deref(),
                        Some("500")
                    );
                    assert_eq!(attribute("error.type").as_deref(), Some("500"));
                    let status = span.status.as_ref().expect("a status");
                    assert_eq!(status.code, SpanStatus::Error as i32);
                    failed += 1;
                    continue;
                }
                assert_eq!(span.name, "POST /traced/{order}");
                assert_eq!(attribute("http.route").as_deref(), Some("/traced/{order}"));
                assert_eq!(attribute("url.path").as_deref(), Some("/traced/A-1"));
                assert_ne!(
                    span.status.as_ref().map(|status| status.code),
                    Some(SpanStatus::Error as i32),
                    "a 4xx is no server error"
                );
                assert_eq!(attribute("operation").as_deref(), Some("traced"));
                let outcome = attribute("outcome").expect("an outcome");
                let status = attribute("http.response.status_code").unwrap();
                assert_eq!(status, if outcome == "refused" { "400" } else { "201" });
                if outcome == "first" {
                    // The child of the caller's span, in the caller's trace.
                    assert_eq!(hex(&span.trace_id), TRACE_ID);
                    assert_eq!(hex(&span.parent_span_id), CALLER_SPAN_ID);
                    first_span_id = Some(hex(&span.span_id));
                } else {
                    assert_ne!(
                        hex(&span.trace_id),
                        TRACE_ID,
                        "{outcome}: a trace of its own"
                    );
                }
                if outcome == "first" {
                    for timing in ["claim_ms", "business_ms", "commit_ms", "total_ms"] {
                        let millis: f64 = attribute(timing).expect(timing).parse().unwrap();
                        assert!(millis >= 0.0, "{timing}");
                    }
                }
                outcomes.push(outcome);
            }
        }
    }
    outcomes.sort();
    assert_eq!(outcomes, ["first", "refused", "replay"]);
    assert_eq!(failed, 1);
    // The downstream service got the trace, with the server span as the
    // parent of its own.
    let first_span_id = first_span_id.expect("the first attempt's span");
    assert_eq!(
        *downstream.0.lock().unwrap(),
        [format!("00-{TRACE_ID}-{first_span_id}-01")]
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
