//! A business step's downstream call continues the caller's trace with
//! `request.trace_headers()` even when this service exports no spans (this
//! build without the `otel` feature, or no OTLP endpoint): the caller's
//! `traceparent` and `tracestate` reach the downstream service unchanged;
//! a malformed one is not passed on.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use idemgen_runtime::{Contract, Operation, Reply};

use crate::support::{Table, key, serve_on_a_free_port};

static CHARGED: Operation = Operation::idempotent(
    "charged",
    "charged",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 5_000),
);

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TRACESTATE: &str = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";

/// A call's `traceparent` and `tracestate`, as it arrived.
type TraceHeaders = (Option<String>, Option<String>);

/// The trace headers each downstream call arrived with.
#[derive(Clone, Default)]
struct Downstream(Arc<Mutex<Vec<TraceHeaders>>>);

async fn charge(State(downstream): State<Downstream>, request: Request) -> StatusCode {
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap().to_string())
    };
    let received = (header("traceparent"), header("tracestate"));
    downstream.0.lock().unwrap().push(received);
    StatusCode::OK
}

/// `POST /charge` to `address` with `headers`, over plain HTTP/1.1.
async fn call_downstream(address: &str, headers: &HeaderMap) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut request = format!(
        "POST /charge HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n"
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap()));
    }
    request.push_str("\r\n");
    let mut stream = loop {
        match tokio::net::TcpStream::connect(address).await {
            Ok(stream) => break stream,
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
        }
    };
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

fn paid(trace: &[(&str, &str)]) -> axum::extract::Request {
    let mut request = axum::http::Request::post("/charged")
        .header("content-type", "application/json")
        .header("Idempotency-Key", key());
    for (name, value) in trace {
        request = request.header(*name, *value);
    }
    request.body(Body::from(r#"{"order":"A-1"}"#)).unwrap()
}

#[tokio::test]
async fn a_downstream_call_continues_the_callers_trace_without_exported_spans() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let downstream = Downstream::default();
    let router = Router::new()
        .route("/charge", post(charge))
        .with_state(downstream.clone());
    let (address, server) = serve_on_a_free_port(router, std::time::Duration::from_secs(5));

    for trace in [
        vec![("traceparent", TRACEPARENT), ("tracestate", TRACESTATE)],
        vec![
            ("traceparent", "00-not-a-trace-01"),
            ("tracestate", TRACESTATE),
        ],
        vec![],
    ] {
        let call = engine.begin(&CHARGED, paid(&trace)).await.ok().unwrap();
        call_downstream(&address, &call.request().trace_headers()).await;
        let created = Reply::json(StatusCode::CREATED, &serde_json::json!({"paid": true}));
        assert_eq!(call.answer(created).await.status(), StatusCode::CREATED);
    }
    server.abort();

    let received = downstream.0.lock().unwrap().clone();
    assert_eq!(
        received,
        [
            // The caller's trace, continued as it came.
            (Some(TRACEPARENT.to_string()), Some(TRACESTATE.to_string())),
            // A malformed traceparent names no trace: nothing passed on.
            (None, None),
            // No trace: none made up.
            (None, None),
        ]
    );
}
