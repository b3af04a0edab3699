//! Every answer that is not the business function's success (nor its
//! replay) is counted in `idempotency_rejections_total` under one reason,
//! read here from `GET /metrics` as Prometheus scrapes it; and a key
//! claimed again after its attempt released it is not a takeover. Each
//! test has operations of its own: their counters are theirs alone.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use idemgen_runtime::{Contract, Idempotency, Operation, Reply};
use prometheus_parse::{Scrape, Value};
use tower::ServiceExt;

use crate::support::{NO_MIGRATIONS, Table, body_text, claim, key, pay};

/// `family`'s samples for `operation` with `labels`, summed (a label not
/// named is summed over, as `sum` in PromQL), as `GET /metrics` serves
/// them.
async fn scraped(
    engine: &Idempotency,
    operation: &'static Operation,
    family: &str,
    labels: &[(&str, &str)],
) -> f64 {
    let mut labels = labels.to_vec();
    labels.push(("operation", operation.label));
    scraped_from(engine, operation, family, &labels).await
}

/// `family`'s samples with `labels`, summed, as `GET /metrics` serves
/// them for `operation` and the engine's table.
async fn scraped_from(
    engine: &Idempotency,
    operation: &'static Operation,
    family: &str,
    labels: &[(&str, &str)],
) -> f64 {
    let operations: &'static [&'static Operation] = Box::leak(Box::new([operation]));
    let router = idemgen_runtime::service::health_and_metrics(engine.clone(), operations);
    let response = router
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let text = body_text(response).await;
    let scrape = Scrape::parse(text.lines().map(|line| Ok(line.to_string()))).unwrap();
    let found: Vec<f64> = scrape
        .samples
        .iter()
        .filter(|sample| {
            sample.metric == family
                && labels
                    .iter()
                    .all(|(name, value)| sample.labels.get(name) == Some(*value))
        })
        .map(|sample| match &sample.value {
            Value::Counter(value) => *value,
            other => panic!("{family} {labels:?}: {other:?} in\n{text}"),
        })
        .collect();
    assert!(!found.is_empty(), "no {family} {labels:?} in\n{text}");
    found.iter().sum()
}

async fn rejections(engine: &Idempotency, operation: &'static Operation, reason: &str) -> f64 {
    scraped(
        engine,
        operation,
        "idempotency_rejections_total",
        &[("reason", reason)],
    )
    .await
}

/// The busy answers of `operation` that waited in vain for `wait`.
async fn busy(engine: &Idempotency, operation: &'static Operation, wait: &str) -> f64 {
    scraped(
        engine,
        operation,
        "idempotency_rejections_total",
        &[("reason", "busy"), ("wait", wait)],
    )
    .await
}

/// Sends `request` to `operation` and answers it with `reply` if the key
/// is claimed.
async fn answer(
    engine: &Idempotency,
    operation: &'static Operation,
    request: axum::extract::Request,
    reply: Reply,
) -> StatusCode {
    match engine.begin(operation, request).await {
        Ok(call) => call.answer(reply).await.status(),
        Err(answer) => answer.status(),
    }
}

fn created() -> Reply {
    Reply::json(StatusCode::CREATED, &serde_json::json!({"paid": true}))
}

static REASONS: Operation = Operation::idempotent(
    "reasons",
    "reasons",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 5_000),
);

#[tokio::test]
async fn every_answer_that_is_not_a_success_is_counted_under_its_reason() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let op = &REASONS;

    // A success and its replay are no rejection.
    let paid = key();
    assert_eq!(
        answer(&engine, op, pay(&paid), created()).await,
        StatusCode::CREATED
    );
    assert_eq!(
        answer(&engine, op, pay(&paid), created()).await,
        StatusCode::CREATED
    );

    // Refused before anything ran: no key.
    let mut keyless = pay(&key());
    keyless.headers_mut().remove("Idempotency-Key");
    assert_eq!(
        answer(&engine, op, keyless, created()).await,
        StatusCode::BAD_REQUEST
    );

    // The key reused with another body.
    let mut other_body = pay(&paid);
    *other_body.body_mut() = Body::from(r#"{"order":"B-2"}"#);
    assert_eq!(
        answer(&engine, op, other_body, created()).await,
        StatusCode::CONFLICT
    );

    // Held by an attempt whose lease still runs (its transaction rolled
    // back, its claim left).
    let held = key();
    drop(claim(op, &engine, pay(&held)).await);
    assert_eq!(
        answer(&engine, op, pay(&held), created()).await,
        StatusCode::TOO_MANY_REQUESTS
    );

    // The business function's own refusal.
    assert_eq!(
        answer(
            &engine,
            op,
            pay(&key()),
            Reply::problem(StatusCode::PAYMENT_REQUIRED, "declined", "")
        )
        .await,
        StatusCode::PAYMENT_REQUIRED
    );

    // The business function's own server error.
    assert_eq!(
        answer(
            &engine,
            op,
            pay(&key()),
            Reply::problem(StatusCode::BAD_GATEWAY, "the provider is down", "")
        )
        .await,
        StatusCode::BAD_GATEWAY
    );

    // The business function failed.
    let failed = claim(op, &engine, pay(&key())).await;
    let error = std::io::Error::other("the ledger is read-only");
    assert_eq!(
        failed.finish(Err::<Reply, _>(error)).await.status(),
        StatusCode::INTERNAL_SERVER_ERROR
    );

    // The business step ran past its lease.
    let late = claim(op, &engine, pay(&key())).await;
    assert_eq!(
        late.lease_expired().await.status(),
        StatusCode::SERVICE_UNAVAILABLE
    );

    for (reason, expected) in [
        ("refused", 1.0),
        ("conflict", 1.0),
        ("in_progress", 1.0),
        ("business", 1.0),
        ("internal_error", 2.0),
        ("deadline", 1.0),
        ("busy", 0.0),
        ("database_unavailable", 0.0),
        ("outcome_unknown", 0.0),
    ] {
        assert_eq!(rejections(&engine, op, reason).await, expected, "{reason}");
    }

    // The database goes away: every request is answered 503 at once.
    table.pool.close().await;
    assert_eq!(
        answer(&engine, op, pay(&key()), created()).await,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(rejections(&engine, op, "database_unavailable").await, 1.0);
    assert_eq!(rejections(&engine, op, "busy").await, 0.0);
}

/// A lease short enough that waiting it out in a test is quick.
static BUSY: Operation = Operation::idempotent(
    "busy",
    "busy",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 300),
);

#[tokio::test]
async fn a_request_that_waits_out_its_lease_for_a_connection_is_busy() {
    let Some(table) = Table::new().await else {
        return;
    };
    // One connection, held by a request in its business step.
    let pool = idemgen_runtime::connect_with_pool_size(&table.url, &NO_MIGRATIONS, Some(1))
        .await
        .unwrap();
    let engine = Idempotency::new(pool, &table.name).await.unwrap();
    let holding = claim(&BUSY, &engine, pay(&key())).await;
    let waiting = answer(&engine, &BUSY, pay(&key()), created()).await;
    assert_eq!(waiting, StatusCode::TOO_MANY_REQUESTS);
    drop(holding);
    assert_eq!(rejections(&engine, &BUSY, "busy").await, 1.0);
    assert_eq!(busy(&engine, &BUSY, "pool").await, 1.0);
    assert_eq!(busy(&engine, &BUSY, "claim").await, 0.0);
    assert_eq!(
        rejections(&engine, &BUSY, "database_unavailable").await,
        0.0
    );
}

static LOCKED: Operation = Operation::idempotent(
    "locked",
    "locked",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 300),
);

#[tokio::test]
async fn a_claim_that_waits_out_its_lease_on_a_locked_row_is_busy_on_the_claim() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let op = &LOCKED;
    // A record of this operation, for its scope.
    let paid = key();
    assert_eq!(
        answer(&engine, op, pay(&paid), created()).await,
        StatusCode::CREATED
    );
    // Another transaction inserts the key the request will claim and
    // holds it uncommitted: the claim waits on its lock (on SQLite, on the
    // database's write lock).
    let held = key();
    let mut holder = table.pool.begin().await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {t} (scope, idem_key, fingerprint, status, claim_token, \
         lease_expires_at, expires_at, created_at, updated_at) \
         SELECT scope, '{held}', fingerprint, 'in_progress', 'held', 0, 0, 0, 0 FROM {t} \
         WHERE idem_key = '{paid}'",
        t = table.name
    )))
    .execute(&mut *holder)
    .await
    .unwrap();
    let waiting = answer(&engine, op, pay(&held), created()).await;
    holder.rollback().await.unwrap();
    assert_eq!(waiting, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(busy(&engine, op, "claim").await, 1.0);
    assert_eq!(busy(&engine, op, "pool").await, 0.0);
    assert_eq!(rejections(&engine, op, "busy").await, 1.0);
    assert_eq!(rejections(&engine, op, "in_progress").await, 0.0);
}

static RELEASED: Operation = Operation::idempotent(
    "released",
    "released",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 5_000),
);

#[tokio::test]
async fn a_key_released_by_its_attempt_and_claimed_again_is_not_a_takeover() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let op = &RELEASED;
    let counter = |family: &'static str| {
        let engine = engine.clone();
        async move { scraped(&engine, op, family, &[]).await }
    };

    // An attempt that stops on an error rolls back and releases its key:
    // the retry claims it at once, as a first attempt.
    let retried = key();
    let stopped = claim(op, &engine, pay(&retried)).await;
    let error = std::io::Error::other("the ledger is read-only");
    assert_eq!(
        stopped.finish(Err::<Reply, _>(error)).await.status(),
        StatusCode::INTERNAL_SERVER_ERROR
    );
    assert_eq!(
        answer(&engine, op, pay(&retried), created()).await,
        StatusCode::CREATED
    );
    assert_eq!(
        counter("idempotency_reclaims_after_release_total").await,
        1.0
    );
    assert_eq!(counter("idempotency_takeovers_total").await, 0.0);
    assert_eq!(counter("idempotency_first_attempts_total").await, 2.0);

    // An attempt that died with its claim: once its lease has run out, the
    // retry takes the key over.
    let abandoned = key();
    drop(claim(op, &engine, pay(&abandoned)).await);
    table
        .sql(&format!(
            "UPDATE {{t}} SET lease_expires_at = lease_expires_at - 3600000, \
             updated_at = updated_at - 3600000, created_at = created_at - 3600000 \
             WHERE idem_key = '{abandoned}'"
        ))
        .await;
    assert_eq!(
        answer(&engine, op, pay(&abandoned), created()).await,
        StatusCode::CREATED
    );
    assert_eq!(counter("idempotency_takeovers_total").await, 1.0);
    assert_eq!(
        counter("idempotency_reclaims_after_release_total").await,
        1.0
    );
}

/// A lease short enough that waiting it out in a test is quick, and a
/// window long enough that no record is purged meanwhile.
static STUCK: Operation = Operation::idempotent(
    "stuck",
    "stuck",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 300),
);

#[tokio::test]
async fn records_that_get_stuck_are_counted_once_each_and_a_taken_over_one_is_not() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let op = &STUCK;
    let stuck = || {
        let (engine, table) = (engine.clone(), table.name.clone());
        async move {
            scraped_from(
                &engine,
                op,
                "idempotency_records_stuck_total",
                &[("table", table.as_str())],
            )
            .await
        }
    };
    // A record stuck before the first look is not this instance's to count.
    let before = key();
    drop(claim(op, &engine, pay(&before)).await);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    engine.sample_stuck().await.unwrap();
    assert_eq!(stuck().await, 0.0);

    // Two attempts die with their claims; one key is retried after its
    // lease ran out (a takeover), the other never.
    let (abandoned, retried) = (key(), key());
    drop(claim(op, &engine, pay(&abandoned)).await);
    drop(claim(op, &engine, pay(&retried)).await);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        answer(&engine, op, pay(&retried), created()).await,
        StatusCode::CREATED
    );
    engine.sample_stuck().await.unwrap();
    assert_eq!(stuck().await, 1.0);

    // Seen once, counted once, however long it stays.
    engine.sample_stuck().await.unwrap();
    assert_eq!(stuck().await, 1.0);

    // The next one to die is counted in its turn: a steady stream counts up
    // while the number past their lease may stay flat.
    drop(claim(op, &engine, pay(&key())).await);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    table
        .sql(&format!("DELETE FROM {{t}} WHERE idem_key = '{abandoned}'"))
        .await;
    engine.sample_stuck().await.unwrap();
    assert_eq!(stuck().await, 2.0);
}
