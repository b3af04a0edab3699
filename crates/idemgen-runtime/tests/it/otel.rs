//! With the `otel` feature: the spans of requests reach an OTLP/HTTP
//! receiver run in this test (decoded with `opentelemetry-proto`), with
//! their operation, outcome and timings, the `OTEL_*` variables honoured,
//! and no key, credential or body in what is sent.
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
use prost::Message;
use tower::ServiceExt;

use crate::support::{Table, key, skipped};

static TRACED: Operation = Operation::idempotent(
    "traced",
    "traced",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 2_000),
);

const TOKEN: &str = "s3cret-bearer-token";
const BODY: &str = r#"{"card":"4111-secret-card"}"#;

async fn traced(State(engine): State<Idempotency>, request: Request) -> Response {
    match engine.begin(&TRACED, request).await {
        Ok(call) => {
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
    let mut request = axum::http::Request::post("/traced")
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

    // SAFETY: this test runs alone in its process (see the module's
    // comment); nothing else reads the environment concurrently.
    unsafe {
        std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{address}"));
        std::env::set_var("OTEL_SERVICE_NAME", "idemgen-otel-test");
        std::env::set_var("OTEL_BSP_SCHEDULE_DELAY", "50");
    }
    idemgen_runtime::service::init_logging();

    let engine = table.engine().await;
    let router = Router::new()
        .route(
            "/traced",
            post(traced).layer(from_fn_with_state(&TRACED, observe)),
        )
        .with_state(engine);
    let the_key = key();
    for (request, status) in [
        (request(Some(&the_key)), StatusCode::CREATED),
        (request(Some(&the_key)), StatusCode::CREATED),
        (request(None), StatusCode::BAD_REQUEST),
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
                .filter(|span| span.name == "request")
            {
                let attribute = |name: &str| {
                    span.attributes
                        .iter()
                        .find(|attribute| attribute.key == name)
                        .map(|attribute| string(&attribute.value))
                };
                assert_eq!(attribute("operation").as_deref(), Some("traced"));
                let outcome = attribute("outcome").expect("an outcome");
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
}
