//! `GET /metrics` scraped after one request of each kind, parsed by a real
//! Prometheus parser (the `prometheus-parse` crate, and `promtool check
//! metrics` when it is installed), and the span of each request: its
//! outcome and timings, never its key, credential or body.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::from_fn_with_state;
use axum::response::Response;
use axum::routing::post;
use idemgen_runtime::{
    Contract, Idempotency, Operation, Reply, Scheme, SchemeKind, Security, observe,
};
use prometheus_parse::{Sample, Scrape, Value};
use tower::ServiceExt;
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use crate::support::{self, Table, body_text, key};

/// A lease of two seconds: the histograms' buckets climb to it.
static PAY: Operation = Operation::idempotent(
    "pay",
    "pay",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 2_000),
);

const BEARER: Scheme = Scheme {
    name: "bearerAuth",
    kind: SchemeKind::Bearer,
    realm: "",
};

/// Reaches the engine without a principal: refused there.
static LOCKED: Operation = Operation::idempotent(
    "locked",
    "locked",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 2_000),
)
.secured(Security {
    alternatives: &[&[BEARER]],
});

static OPERATIONS: [&Operation; 2] = [&PAY, &LOCKED];

#[derive(serde::Deserialize)]
struct Order {
    #[allow(dead_code)]
    order: String,
}

async fn pay(State(engine): State<Idempotency>, request: Request) -> Response {
    let begun = engine
        .begin_typed(&PAY, request, |request| request.body_as_or::<Order>(422))
        .await;
    let (call, _order) = match begun {
        Ok(begun) => begun,
        Err(answer) => return answer,
    };
    call.answer(Reply::json(
        StatusCode::CREATED,
        &serde_json::json!({"paid": true}),
    ))
    .await
}

async fn locked(State(engine): State<Idempotency>, request: Request) -> Response {
    match engine.begin(&LOCKED, request).await {
        Ok(call) => {
            call.answer(Reply::from_parts(StatusCode::OK, None, Vec::new()))
                .await
        }
        Err(answer) => answer,
    }
}

fn router(engine: &Idempotency) -> Router {
    Router::new()
        .route("/pay", post(pay).layer(from_fn_with_state(&PAY, observe)))
        .route(
            "/locked",
            post(locked).layer(from_fn_with_state(&LOCKED, observe)),
        )
        .with_state(engine.clone())
        .merge(idemgen_runtime::service::health_and_metrics(
            engine.clone(),
            &OPERATIONS,
        ))
}

fn post_pay(key: Option<&str>, body: impl Into<Body>) -> Request {
    let mut request = axum::http::Request::post("/pay")
        .header("content-type", "application/json")
        .header("authorization", "Bearer s3cret-bearer-token");
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    request.body(body.into()).unwrap()
}

async fn send(router: &Router, request: Request) -> StatusCode {
    router.clone().oneshot(request).await.unwrap().status()
}

/// The spans closed so far: each one's fields, by name, and when it was
/// opened (a span closes when its last handle goes, which may be a
/// database task's: the order of closing is not the requests').
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<(usize, SpanFields)>>>, Arc<AtomicUsize>);

type SpanFields = BTreeMap<String, String>;

impl Spans {
    /// The spans of this thread's requests, recorded while the guard lives.
    fn recorded() -> (Spans, tracing::subscriber::DefaultGuard) {
        let spans = Spans::default();
        let guard =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));
        (spans, guard)
    }
}

struct Fields(BTreeMap<String, String>);

struct Opened(usize);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(
            field.name().to_string(),
            format!("{value:?}").replace('"', ""),
        );
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Spans {
    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, context: Context<'_, S>) {
        let mut fields = Fields(BTreeMap::new());
        attributes.record(&mut fields);
        fields
            .0
            .insert("name".into(), attributes.metadata().name().into());
        let opened = self.1.fetch_add(1, Ordering::SeqCst);
        let span = context.span(id).unwrap();
        let mut extensions = span.extensions_mut();
        extensions.insert(fields);
        extensions.insert(Opened(opened));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, context: Context<'_, S>) {
        let span = context.span(id).unwrap();
        let mut extensions = span.extensions_mut();
        values.record(extensions.get_mut::<Fields>().unwrap());
    }

    fn on_close(&self, id: Id, context: Context<'_, S>) {
        let span = context.span(&id).unwrap();
        let extensions = span.extensions();
        let fields = extensions.get::<Fields>().unwrap().0.clone();
        let opened = extensions.get::<Opened>().unwrap().0;
        self.0.lock().unwrap().push((opened, fields));
    }
}

fn sample<'a>(scrape: &'a Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<&'a Sample> {
    scrape.samples.iter().find(|sample| {
        sample.metric == metric
            && labels
                .iter()
                .all(|(name, value)| sample.labels.get(name) == Some(*value))
    })
}

fn value(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    match sample(scrape, metric, labels).map(|sample| &sample.value) {
        Some(Value::Counter(value) | Value::Gauge(value) | Value::Untyped(value)) => *value,
        other => panic!("{metric} {labels:?}: {other:?}"),
    }
}

#[tokio::test]
async fn every_kind_of_request_is_counted_timed_and_traced_without_its_secrets() {
    let Some(table) = Table::new().await else {
        return;
    };
    let (spans, _subscriber) = Spans::recorded();
    let engine = table.engine().await;
    let router = router(&engine);

    let first = key();
    let order = r#"{"order":"A-1"}"#;
    assert_eq!(
        send(&router, post_pay(Some(&first), order)).await,
        StatusCode::CREATED
    );
    assert_eq!(
        send(&router, post_pay(Some(&first), order)).await,
        StatusCode::CREATED
    );
    let other_order = r#"{"order":"B-2"}"#;
    assert_eq!(
        send(&router, post_pay(Some(&first), other_order)).await,
        StatusCode::CONFLICT
    );
    assert_eq!(
        send(&router, post_pay(None, order)).await,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        send(&router, post_pay(Some("pay:nope"), order)).await,
        StatusCode::BAD_REQUEST
    );
    let schema_invalid = key();
    assert_eq!(
        send(&router, post_pay(Some(&schema_invalid), r#"{"order":5}"#)).await,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    let huge = vec![b' '; idemgen_runtime::MAX_BODY_BYTES + 1];
    assert_eq!(
        send(&router, post_pay(Some(&key()), huge)).await,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    let mut unauthenticated = post_pay(Some(&key()), order);
    *unauthenticated.uri_mut() = "/locked".parse().unwrap();
    assert_eq!(
        send(&router, unauthenticated).await,
        StatusCode::UNAUTHORIZED
    );

    // A key held by an attempt that died (its transaction rolled back,
    // its claim left): while its lease runs, a duplicate is told to retry
    // later; once it ran out, the record is stuck in progress until
    // someone retries. (A live transaction would hold SQLite's only write
    // lock, and the duplicate would wait for it instead.)
    let held = key();
    drop(support::claim(&PAY, &engine, post_pay(Some(&held), order)).await);
    assert_eq!(
        send(&router, post_pay(Some(&held), order)).await,
        StatusCode::TOO_MANY_REQUESTS
    );
    table
        .sql("UPDATE {t} SET lease_expires_at = lease_expires_at - 3600000 WHERE status = 'in_progress'")
        .await;
    engine.sample_census().await.unwrap();

    let response = router
        .clone()
        .oneshot(
            axum::http::Request::get("/metrics")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = body_text(response).await;
    check_with_promtool(&text);
    // Bounds are whole milliseconds, printed without float noise.
    for line in text.lines().filter(|line| line.contains("le=\"")) {
        let bound = line
            .split("le=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let decimals = bound.split('.').nth(1).map_or(0, str::len);
        assert!(bound == "+Inf" || decimals <= 3, "{line}");
    }
    let scrape = Scrape::parse(text.lines().map(|line| Ok(line.to_string()))).unwrap();
    let pay = ("operation", "pay");

    // The six counters keep their names, types and labels.
    for (family, expected) in [
        ("idempotency_first_attempts_total", 2.0),
        ("idempotency_replays_total", 1.0),
        ("idempotency_in_progress_total", 1.0),
        ("idempotency_conflicts_total", 1.0),
        ("idempotency_takeovers_total", 0.0),
        ("idempotency_failures_total", 0.0),
    ] {
        assert!(
            matches!(
                sample(&scrape, family, &[pay]).unwrap().value,
                Value::Counter(_)
            ),
            "{family} is a counter"
        );
        assert_eq!(value(&scrape, family, &[pay]), expected, "{family}\n{text}");
    }
    for (reason, expected) in [
        ("missing_key", 1.0),
        ("malformed_key", 1.0),
        ("conflict", 1.0),
        ("schema_invalid", 1.0),
        ("too_large", 1.0),
        ("unauthenticated", 0.0),
    ] {
        let labels = [pay, ("reason", reason)];
        assert_eq!(
            value(&scrape, "idempotency_refusals_total", &labels),
            expected,
            "{reason}"
        );
    }
    let locked_refused = [("operation", "locked"), ("reason", "unauthenticated")];
    assert_eq!(
        value(&scrape, "idempotency_refusals_total", &locked_refused),
        1.0
    );
    for (code, expected) in [
        ("201", 2.0),
        ("409", 1.0),
        ("400", 2.0),
        ("422", 1.0),
        ("413", 1.0),
        ("429", 1.0),
    ] {
        let labels = [pay, ("code", code)];
        assert_eq!(
            value(&scrape, "idempotency_responses_total", &labels),
            expected,
            "{code}"
        );
    }
    let lost = [pay, ("class", "claim")];
    assert_eq!(value(&scrape, "idempotency_lost_races_total", &lost), 0.0);

    // Requests through the router; claims of every key that got that far
    // (one made directly); business steps that finished.
    for (histogram, count) in [
        ("idempotency_request_duration_seconds", 8.0),
        ("idempotency_claim_duration_seconds", 5.0),
        ("idempotency_business_duration_seconds", 1.0),
    ] {
        let Value::Histogram(buckets) = &sample(&scrape, histogram, &[pay]).unwrap().value else {
            panic!("{histogram} is a histogram");
        };
        let bounds: Vec<f64> = buckets.iter().map(|bucket| bucket.less_than).collect();
        assert!(bounds.contains(&2.0), "the lease is a bound: {bounds:?}");
        assert!(
            bounds.contains(&1.8),
            "90 % of the lease is a bound: {bounds:?}"
        );
        let everything = buckets.iter().find(|bucket| bucket.less_than.is_infinite());
        assert_eq!(everything.unwrap().count, count, "{histogram}");
        assert_eq!(value(&scrape, &format!("{histogram}_count"), &[pay]), count);
    }

    let table_label = ("table", table.name.as_str());
    assert_eq!(value(&scrape, "idempotency_records", &[table_label]), 2.0);
    assert_eq!(
        value(&scrape, "idempotency_records_past_lease", &[table_label]),
        1.0
    );

    // One span per request through the router, with what came of it.
    let mut spans = spans.0.lock().unwrap().clone();
    spans.sort_by_key(|(opened, _)| *opened);
    let spans: Vec<BTreeMap<String, String>> =
        spans.into_iter().map(|(_, fields)| fields).collect();
    let requests: Vec<_> = spans
        .iter()
        .filter(|span| span["name"] == "request")
        .collect();
    let outcomes: Vec<&str> = requests
        .iter()
        .map(|span| span["outcome"].as_str())
        .collect();
    assert_eq!(
        outcomes,
        [
            "first",
            "replay",
            "conflict",
            "refused",
            "refused",
            "refused",
            "refused",
            "refused",
            "in_progress"
        ],
        "{requests:#?}"
    );
    let first_span = requests[0];
    for field in ["claim_ms", "business_ms", "commit_ms", "total_ms"] {
        let millis: f64 = first_span[field].parse().unwrap();
        assert!(millis >= 0.0, "{field}: {first_span:?}");
    }
    assert_eq!(first_span["operation"], "pay");
    assert_eq!(first_span["status"], "201");
    assert_eq!(requests[5]["refusal"], "schema_invalid");
    assert_eq!(requests[7]["refusal"], "unauthenticated");
    for span in &spans {
        for value in span.values() {
            for secret in [&first, &held, &schema_invalid, "s3cret", "A-1", "B-2"] {
                assert!(!value.contains(secret), "{secret} in {span:?}");
            }
        }
    }
}

/// Served at `/things/{id}.json`, routed at `/things/{id}`.
static THING: Operation = Operation::plain("thing", "thing");

static THINGS: [&Operation; 1] = [&THING];

static THING_AFFIXES: &[idemgen_runtime::PathAffix] =
    &[idemgen_runtime::PathAffix::new("id", "", ".json")];

async fn thing(request: Request) -> Response {
    match idemgen_runtime::Request::read(idemgen_runtime::with_path_affixes(request, THING_AFFIXES))
        .await
    {
        Ok(_) => Response::new(Body::from("a thing")),
        Err(not_found) => not_found,
    }
}

/// `/things/abc` is a path the operation does not serve, although its
/// route matched: a 404 as for any unknown path, none of the operation's
/// measures (no refusal, no answer by status, no request timed), and its
/// span has no outcome.
#[tokio::test]
async fn a_path_the_operation_does_not_serve_is_not_counted_as_its_request() {
    let Some(table) = Table::new().await else {
        return;
    };
    let (spans, _subscriber) = Spans::recorded();
    let engine = table.engine().await;
    let router = Router::new()
        .route(
            "/things/{id}",
            axum::routing::get(thing).layer(from_fn_with_state(&THING, observe)),
        )
        .merge(idemgen_runtime::service::health_and_metrics(
            engine.clone(),
            &THINGS,
        ));
    let get = |path: &str| axum::http::Request::get(path).body(Body::empty()).unwrap();
    assert_eq!(send(&router, get("/things/abc.json")).await, StatusCode::OK);
    assert_eq!(
        send(&router, get("/things/abc")).await,
        StatusCode::NOT_FOUND
    );
    // Not the operation's path first, whatever else is wrong with it.
    let mut too_large = get("/things/abc");
    too_large
        .headers_mut()
        .insert("content-length", "999999999999".parse().unwrap());
    assert_eq!(send(&router, too_large).await, StatusCode::NOT_FOUND);
    let response = router.clone().oneshot(get("/metrics")).await.unwrap();
    let text = body_text(response).await;
    let scrape = Scrape::parse(text.lines().map(|line| Ok(line.to_string()))).unwrap();
    let thing = ("operation", "thing");
    assert_eq!(
        value(
            &scrape,
            "idempotency_request_duration_seconds_count",
            &[thing]
        ),
        1.0,
        "{text}"
    );
    assert_eq!(
        value(
            &scrape,
            "idempotency_responses_total",
            &[thing, ("code", "200")]
        ),
        1.0,
        "{text}"
    );
    for sample in &scrape.samples {
        let counted = match sample.value {
            Value::Counter(value) | Value::Gauge(value) | Value::Untyped(value) => value,
            _ => 0.0,
        };
        let refusal_or_404 = sample.metric == "idempotency_refusals_total"
            || sample.labels.get("code") == Some("404");
        assert!(
            !(refusal_or_404 && counted > 0.0),
            "the 404 was counted: {sample:?}\n{text}"
        );
    }
    let spans = spans.0.lock().unwrap().clone();
    let requests: Vec<_> = spans
        .iter()
        .map(|(_, fields)| fields)
        .filter(|span| span["name"] == "request")
        .collect();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let not_served = requests
        .iter()
        .find(|span| span.get("status").map(String::as_str) == Some("404"))
        .unwrap_or_else(|| panic!("{requests:#?}"));
    assert!(!not_served.contains_key("outcome"), "{not_served:?}");
}

/// `promtool check metrics` (Prometheus's own parser and linter) on the
/// scrape, when promtool is installed.
fn check_with_promtool(text: &str) {
    use std::io::Write;
    use std::process::{Command, Stdio};

    let Ok(mut child) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        support::skipped(
            "promtool is not installed: the scrape is checked by prometheus-parse only",
        );
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
