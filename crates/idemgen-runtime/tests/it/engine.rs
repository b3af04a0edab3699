//! The claim / finish / reclaim state machine against a real database:
//! SQLite always, MariaDB or PostgreSQL when this crate is built with
//! `--features mysql|postgres` and `IDEMGEN_TEST_MYSQL_URL` /
//! `IDEMGEN_TEST_PG_URL` is set.

use crate::support::{self, Table, body_text, key};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use idemgen_runtime::{
    AnswerConstraints, Call, Check, ClaimMode, Constraint, Contract, Dialect, Fingerprint,
    Idempotency, Operation, REPLAYED_HEADER, Reply, Source, StoreError,
};
use serde_json::{Value, json};

const KEY_PATTERN: &str =
    "^pay:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$";

static PAY: Operation = Operation::idempotent(
    "onPay",
    "on_pay",
    Contract {
        max_key_len: 64,
        ..Contract::header("pay:{uuid}", KEY_PATTERN, 60_000, 3_000)
    },
);

/// `failed: reject`, a key in the body that must repeat `/order`, scoped
/// by a tenant header, raw body fingerprint.
static STRICT: Operation = Operation::idempotent(
    "strict",
    "strict",
    Contract {
        key: Source::Body("/key"),
        key_format: "ord:{field:/order}",
        key_pattern: "^ord:([a-z0-9]+)$",
        key_fields: &[(1, "/order")],
        max_key_len: 64,
        key_required: true,
        missing_key_status: 422,
        scope: &[Source::Header("X-Tenant")],
        window_ms: 60_000,
        lease_ms: 3_000,
        client_timeout_ms: 2_000,
        retry_after_secs: 2,
        in_progress_status: 409,
        conflict_status: 422,
        retry_failed: false,
        replayed_header: Some("Idempotent-Replayed"),
        fingerprint: Fingerprint {
            canonical_json: false,
            ..Fingerprint::DEFAULT
        },
        claim: ClaimMode::Committed,
    },
);

static PLAIN: Operation = Operation::plain("plain", "plain");

fn pay(key: Option<&str>, body: &Value) -> axum::extract::Request {
    support::post_json("/pay", key, body)
}

async fn claim(engine: &Idempotency, request: axum::extract::Request) -> Call {
    support::claim(&PAY, engine, request).await
}

async fn answer(
    op: &'static Operation,
    engine: &Idempotency,
    request: axum::extract::Request,
) -> Response {
    match engine.begin(op, request).await {
        Ok(_) => panic!("expected an answer, but the key was claimed"),
        Err(answer) => answer,
    }
}

fn created(marker: &str) -> Result<Reply, sqlx::Error> {
    Ok(Reply::json(
        StatusCode::CREATED,
        &json!({ "marker": marker }),
    ))
}

/// Moves a time column of `key`'s record to the past.
async fn age(table: &Table, key: &str, column: &str) {
    table
        .sql(&format!(
            "UPDATE {{t}} SET {column} = 0 WHERE idem_key = '{key}'"
        ))
        .await;
}

async fn count(table: &Table, sql: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql.replace("{t}", &table.name)))
        .fetch_one(&table.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn success_is_stored_and_replayed_byte_for_byte() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let key = key();
    let first = claim(&engine, pay(Some(&key), &json!({"amount": 1})))
        .await
        .finish(created("first"))
        .await;
    assert_eq!(first.status(), StatusCode::CREATED);
    assert!(first.headers().get(REPLAYED_HEADER).is_none());
    let first_body = body_text(first).await;

    // Reordered and re-spaced JSON is the same request.
    let replay = answer(&PAY, &engine, pay(Some(&key), &json!({"amount": 1}))).await;
    assert_eq!(replay.status(), StatusCode::CREATED);
    assert_eq!(replay.headers()[REPLAYED_HEADER], "true");
    assert_eq!(replay.headers()["content-type"], "application/json");
    assert_eq!(replay.headers().len(), 2, "{:?}", replay.headers());
    assert_eq!(body_text(replay).await, first_body);
    assert!(support::metric(&engine, &PAY, "idempotency_replays_total").await >= 1);
}

#[tokio::test]
async fn a_duplicate_in_progress_is_told_to_retry_and_concurrent_claims_have_one_winner() {
    let Some(table) = Table::new().await else {
        return;
    };
    let key = key();
    // Each winner finishes at once: on SQLite its transaction holds the
    // only write lock, and the other claims wait for it.
    let attempts: Vec<_> = table
        .engines(8)
        .await
        .into_iter()
        .map(|engine| {
            let request = pay(Some(&key), &json!({"amount": 2}));
            tokio::spawn(async move {
                match engine.begin(&PAY, request).await {
                    Ok(call) => (true, call.finish(created("one")).await),
                    Err(answer) => (false, answer),
                }
            })
        })
        .collect();
    let mut winners = 0;
    for attempt in attempts {
        let (won, answer) = attempt.await.unwrap();
        if won {
            winners += 1;
            assert_eq!(answer.status(), StatusCode::CREATED);
            continue;
        }
        match answer.status() {
            StatusCode::CREATED => assert_eq!(answer.headers()[REPLAYED_HEADER], "true"),
            status => {
                assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
                assert_eq!(answer.headers()["retry-after"], "1");
                assert_eq!(answer.headers()["content-type"], "application/problem+json");
            }
        }
    }
    assert_eq!(winners, 1);
    let rows = count(&table, "SELECT COUNT(*) FROM {t}").await;
    assert_eq!(rows, 1);
}

#[tokio::test]
async fn the_same_key_with_another_body_is_a_conflict_and_changes_nothing() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let key = key();
    claim(&engine, pay(Some(&key), &json!({"amount": 3})))
        .await
        .finish(created("first"))
        .await;
    let conflict = answer(&PAY, &engine, pay(Some(&key), &json!({"amount": 4}))).await;
    assert_eq!(conflict.status(), StatusCode::CONFLICT);
    let replay = answer(&PAY, &engine, pay(Some(&key), &json!({"amount": 3}))).await;
    assert!(body_text(replay).await.contains("first"));
}

#[tokio::test]
async fn the_business_write_commits_with_the_record_or_not_at_all() {
    let Some((table, engine)) = with_paid_table().await else {
        return;
    };

    // A failure rolls the write back and records the failure.
    let key = key();
    let mut call = claim(&engine, pay(Some(&key), &json!({"order": "A"}))).await;
    let (tx, _) = call.parts();
    table_insert(tx, &table.name, "A").await;
    let failed = call
        .finish(Ok::<_, sqlx::Error>(Reply::problem(
            StatusCode::NOT_FOUND,
            "unknown order",
            "",
        )))
        .await;
    assert_eq!(failed.status(), StatusCode::NOT_FOUND);
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}_paid").await, 0);
    let status: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT status FROM {} WHERE idem_key = '{key}'",
        table.name
    )))
    .fetch_one(&table.pool)
    .await
    .unwrap();
    assert_eq!(status, "failed");

    // An error of the business function's own type is a 500, rolled back.
    let mut call = claim(&engine, pay(Some(&key), &json!({"order": "A"}))).await;
    let (tx, _) = call.parts();
    table_insert(tx, &table.name, "A").await;
    let broken = call.finish(Err::<Reply, _>("the downstream refused")).await;
    assert_eq!(broken.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}_paid").await, 0);

    // A retry after the failures succeeds, and its write commits with it.
    let mut call = claim(&engine, pay(Some(&key), &json!({"order": "A"}))).await;
    let (tx, _) = call.parts();
    table_insert(tx, &table.name, "A").await;
    assert_eq!(
        call.finish(created("paid")).await.status(),
        StatusCode::CREATED
    );
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}_paid").await, 1);
    table.sql("DROP TABLE {t}_paid").await;
}

/// A record table and an engine on it, beside a `{t}_paid` table of the
/// business write.
async fn with_paid_table() -> Option<(Table, Idempotency)> {
    let table = Table::new().await?;
    table
        .sql("CREATE TABLE {t}_paid (order_no VARCHAR(32) NOT NULL)")
        .await;
    let engine = table.engine().await;
    Some((table, engine))
}

async fn table_insert(tx: &mut idemgen_runtime::Tx, table: &str, order: &str) {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {table}_paid (order_no) VALUES ('{order}')"
    )))
    .execute(&mut **tx)
    .await
    .unwrap();
}

#[tokio::test]
async fn a_recorded_failure_is_claimed_again_by_exactly_one_retry() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let key = key();
    claim(&engine, pay(Some(&key), &json!({})))
        .await
        .finish(Ok::<_, sqlx::Error>(Reply::problem(
            StatusCode::NOT_FOUND,
            "no",
            "",
        )))
        .await;
    let retries: Vec<_> = table
        .engines(6)
        .await
        .into_iter()
        .map(|engine| {
            let request = pay(Some(&key), &json!({}));
            tokio::spawn(async move {
                match engine.begin(&PAY, request).await {
                    Ok(call) => (true, call.finish(created("retried")).await),
                    Err(answer) => (false, answer),
                }
            })
        })
        .collect();
    let mut winners = 0;
    for retry in retries {
        let (won, answer) = retry.await.unwrap();
        if won {
            winners += 1;
            assert_eq!(answer.status(), StatusCode::CREATED);
        } else if answer.status() == StatusCode::CREATED {
            assert_eq!(answer.headers()[REPLAYED_HEADER], "true");
        } else {
            assert_eq!(answer.status(), StatusCode::TOO_MANY_REQUESTS);
        }
    }
    assert_eq!(winners, 1);
}

fn strict(tenant: &str, body: &Value) -> axum::extract::Request {
    Request::post("/strict")
        .header("X-Tenant", tenant)
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap()
}

#[tokio::test]
async fn body_keys_scopes_and_the_reject_policy() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let order = format!("o{}", uuid::Uuid::new_v4().simple());
    let body = json!({"key": format!("ord:{order}"), "order": order});

    // The key must repeat the body's `/order`.
    let wrong = json!({"key": "ord:other", "order": order});
    let refused = answer(&STRICT, &engine, strict("a", &wrong)).await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        body_text(refused)
            .await
            .contains("must equal the request body's `/order`")
    );

    // Tenant `a` fails; `failed: reject` refuses its retry.
    let call = engine
        .begin(&STRICT, strict("a", &body))
        .await
        .ok()
        .unwrap();
    call.finish(Ok::<_, sqlx::Error>(Reply::problem(
        StatusCode::BAD_GATEWAY,
        "down",
        "",
    )))
    .await;
    let rejected = answer(&STRICT, &engine, strict("a", &body)).await;
    assert_eq!(rejected.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body_text(rejected).await.contains("earlier attempt failed"));

    // The same key under tenant `b` is another record.
    let call = engine
        .begin(&STRICT, strict("b", &body))
        .await
        .ok()
        .unwrap();
    assert_eq!(
        call.finish(created("b")).await.status(),
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn an_abandoned_claim_is_taken_over_and_the_old_worker_is_fenced() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let key = key();
    let stale = claim(&engine, pay(Some(&key), &json!({}))).await;
    if idemgen_runtime::Dialect::BUILT == idemgen_runtime::Dialect::Sqlite {
        // SQLite has one writer: a stale worker's open transaction holds
        // off the takeover until its deadline rolls it back (tested in
        // `a_business_step_past_its_lease_is_cut_off_and_the_key_retried`).
        drop(stale);
        age(&table, &key, "lease_expires_at").await;
        let fresh = claim(&engine, pay(Some(&key), &json!({}))).await;
        assert!(support::metric(&engine, &PAY, "idempotency_takeovers_total").await >= 1);
        assert_eq!(
            fresh.finish(created("fresh")).await.status(),
            StatusCode::CREATED
        );
        return;
    }
    age(&table, &key, "lease_expires_at").await;
    let fresh = claim(&engine, pay(Some(&key), &json!({}))).await;
    assert!(support::metric(&engine, &PAY, "idempotency_takeovers_total").await >= 1);

    let late = stale.finish(created("stale")).await;
    assert_eq!(late.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        fresh.finish(created("fresh")).await.status(),
        StatusCode::CREATED
    );
    let replay = answer(&PAY, &engine, pay(Some(&key), &json!({}))).await;
    assert!(body_text(replay).await.contains("fresh"));
}

#[tokio::test]
async fn a_key_past_its_window_is_new_and_the_purge_deletes_only_expired_records() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let (expired, live) = (key(), key());
    for key in [&expired, &live] {
        claim(&engine, pay(Some(key), &json!({})))
            .await
            .finish(created("done"))
            .await;
    }
    age(&table, &expired, "expires_at").await;
    // Past its window the key is new, even with another body.
    let call = claim(&engine, pay(Some(&expired), &json!({"other": true}))).await;
    call.finish(created("new")).await;

    age(&table, &expired, "expires_at").await;
    age(&table, &expired, "lease_expires_at").await;
    assert_eq!(engine.purge_expired(1).await.unwrap(), 1);
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}").await, 1);
    let replay = answer(&PAY, &engine, pay(Some(&live), &json!({}))).await;
    assert_eq!(replay.headers()[REPLAYED_HEADER], "true");
}

#[tokio::test]
async fn missing_malformed_and_overlong_keys_and_oversized_bodies_write_nothing() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let long = format!("{}{}", key(), "0".repeat(64));
    for key in [None, Some("pay:not-a-uuid"), Some(long.as_str())] {
        let refused = answer(&PAY, &engine, pay(key, &json!({}))).await;
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "{key:?}");
        assert_eq!(
            refused.headers()["content-type"],
            "application/problem+json"
        );
    }
    let mut request = pay(Some(&key()), &json!({}));
    *request.body_mut() = Body::from(vec![b' '; idemgen_runtime::MAX_BODY_BYTES + 1]);
    let refused = answer(&PAY, &engine, request).await;
    assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}").await, 0);
}

/// A JSON reply of exactly `bytes` bytes: one string.
fn reply_of(bytes: usize) -> Result<Reply, sqlx::Error> {
    Ok(Reply::json(
        StatusCode::CREATED,
        &json!("x".repeat(bytes - 2)),
    ))
}

#[tokio::test]
async fn a_reply_at_the_limit_is_replayed_byte_for_byte_and_one_byte_more_is_refused_as_too_large()
{
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let limit = engine.max_stored_answer();
    assert_eq!(limit, idemgen_runtime::DEFAULT_MAX_STORED_ANSWER_BYTES);
    assert_eq!(limit, 1024 * 1024);
    let key = key();
    let first = claim(&engine, pay(Some(&key), &json!({"order": "big"})))
        .await
        .finish(reply_of(limit))
        .await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first = body_text(first).await;
    assert_eq!(first.len(), limit);
    let replay = answer(&PAY, &engine, pay(Some(&key), &json!({"order": "big"}))).await;
    assert_eq!(replay.headers()[REPLAYED_HEADER], "true");
    assert!(body_text(replay).await == first, "the replay differs");

    // One byte more cannot be stored: refused with a problem of its own
    // that says so and that retrying will not help, logged as what it is,
    // not as a database error; nothing completed.
    let logs = Logs::default();
    let bigger = self::key();
    let too_big = {
        let _logging = logs.capture();
        claim(&engine, pay(Some(&bigger), &json!({"order": "bigger"})))
            .await
            .finish(reply_of(limit + 1))
            .await
    };
    assert_too_large(too_big, limit + 1, limit).await;
    let logged = logs.lines();
    assert!(
        logged
            .iter()
            .any(|line| line.contains("too large to store")),
        "{logged:#?}"
    );
    assert!(
        !logged.iter().any(|line| line.contains("database error")),
        "{logged:#?}"
    );
    let completed = count(
        &table,
        &format!("SELECT COUNT(*) FROM {{t}} WHERE idem_key = '{bigger}' AND status = 'completed'"),
    )
    .await;
    assert_eq!(completed, 0, "a reply past the limit was stored");
    // Under `failed: retry` the retry may run again (and meets the same
    // limit, as the problem says).
    claim(&engine, pay(Some(&bigger), &json!({"order": "bigger"}))).await;

    #[cfg(feature = "mysql")]
    a_server_that_cannot_take_the_reply_stores_nothing(&table, &engine).await;
}

/// An answer its business code built that the spec's response schema
/// does not allow (`amount` below its `minimum`) is never sent, stored or
/// committed: a 500, the business write rolled back, the key free for a
/// retry whose answer fits.
#[tokio::test]
async fn an_answer_that_breaks_its_response_schema_is_a_500_and_commits_nothing() {
    static ANSWERS: &[AnswerConstraints] = &[AnswerConstraints {
        status: "201",
        media_type: "application/json",
        constraints: &[Constraint {
            at: "/amount",
            check: Check::Minimum("1"),
        }],
    }];
    let Some((table, engine)) = with_paid_table().await else {
        return;
    };
    let key = key();
    let order = json!({"order": "A"});
    let answer_with = |amount: i64| {
        let body = serde_json::to_vec(&json!({"order": "A", "amount": amount}));
        Reply::typed_checked(201, Some("application/json"), body, ANSWERS)
    };

    let mut call = claim(&engine, pay(Some(&key), &order)).await;
    let (tx, _) = call.parts();
    table_insert(tx, &table.name, "A").await;
    let broken = call.finish(answer_with(0)).await;
    assert_eq!(broken.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert!(!body_text(broken).await.contains("amount\":0"));
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}_paid").await, 0);

    let mut call = claim(&engine, pay(Some(&key), &order)).await;
    let (tx, _) = call.parts();
    table_insert(tx, &table.name, "A").await;
    assert_eq!(
        call.finish(answer_with(5)).await.status(),
        StatusCode::CREATED
    );
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}_paid").await, 1);
    let replay = answer(&PAY, &engine, pay(Some(&key), &order)).await;
    assert_eq!(replay.headers()[REPLAYED_HEADER], "true");
    assert!(body_text(replay).await.contains(r#""amount":5"#));
    table.sql("DROP TABLE {t}_paid").await;
}

/// A response declared with several media types sends the one its
/// business code chose (a generated body enum's variant): that
/// `Content-Type` is stored with the answer and replayed.
#[tokio::test]
async fn the_content_type_an_answer_chose_is_stored_and_replayed() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    for (content_type, body) in [
        ("text/csv; charset=utf-8", b"id,amount\no-1,5\n".to_vec()),
        ("application/json", br#"[{"id":"o-1"}]"#.to_vec()),
    ] {
        let key = key();
        let order = json!({"order": content_type});
        let first = claim(&engine, pay(Some(&key), &order))
            .await
            .finish(Reply::typed(200, Some(content_type), Ok(body.clone())))
            .await;
        assert_eq!(first.headers()["content-type"], content_type);
        let replay = answer(&PAY, &engine, pay(Some(&key), &order)).await;
        assert_eq!(replay.headers()[REPLAYED_HEADER], "true");
        assert_eq!(replay.headers()["content-type"], content_type);
        assert_eq!(body_text(replay).await.as_bytes(), body.as_slice());
    }
}

/// `response` is the refusal of an answer of `bytes` bytes over `limit`.
async fn assert_too_large(response: Response, bytes: usize, limit: usize) {
    assert_eq!(response.status(), StatusCode::INSUFFICIENT_STORAGE);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    let problem: Value = serde_json::from_str(&body_text(response).await).unwrap();
    assert_eq!(problem["type"], "urn:idemgen:problem:answer-too-large");
    assert_eq!(problem["title"], "answer too large to store");
    assert_eq!(problem["status"], 507);
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!(
            "the answer is {bytes} bytes, more than the {limit} bytes"
        )) && detail.contains("retrying will not help"),
        "{detail}"
    );
}

#[tokio::test]
async fn the_stored_answer_limit_is_configurable_and_a_refusal_is_final_under_reject() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table
        .engine()
        .await
        .with_max_stored_answer(100)
        .expect("100 bytes fit every record table");
    assert_eq!(engine.max_stored_answer(), 100);
    let Err(too_much) = table
        .engine()
        .await
        .with_max_stored_answer(Dialect::BUILT.largest_stored_answer() + 1)
    else {
        panic!("a limit past what the record table holds was taken");
    };
    assert!(
        too_much.contains("does not fit the record table's response_body column"),
        "{too_much}"
    );
    let order = format!("o{}", uuid::Uuid::new_v4().simple());
    let body = json!({"key": format!("ord:{order}"), "order": order});
    let call = engine
        .begin(&STRICT, strict("a", &body))
        .await
        .ok()
        .unwrap();
    assert_too_large(call.finish(reply_of(101)).await, 101, 100).await;
    // `failed: reject`: the retry is told the first attempt failed; it
    // claims nothing, so the business step does not run again.
    let rejected = answer(&STRICT, &engine, strict("a", &body)).await;
    assert_eq!(rejected.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body_text(rejected).await.contains("earlier attempt failed"));
    // At the limit it is stored and replayed.
    let key = key();
    let stored = claim(&engine, pay(Some(&key), &json!({"order": "small"})))
        .await
        .finish(reply_of(100))
        .await;
    assert_eq!(stored.status(), StatusCode::CREATED);
    let replay = answer(&PAY, &engine, pay(Some(&key), &json!({"order": "small"}))).await;
    assert_eq!(body_text(replay).await.len(), 100);
}

/// The log lines written while [`Logs::capture`]'s guard lives (on this
/// thread, where a `#[tokio::test]` runs the engine).
#[derive(Clone, Default)]
struct Logs(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Logs {
    fn capture(&self) -> tracing::subscriber::DefaultGuard {
        use tracing_subscriber::layer::SubscriberExt;
        tracing::subscriber::set_default(tracing_subscriber::registry().with(self.clone()))
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Logs {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Line(String);
        impl tracing::field::Visit for Line {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push_str(&format!(" {}={value:?}", field.name()));
            }
        }
        let mut line = Line(event.metadata().level().to_string());
        event.record(&mut line);
        self.0.lock().unwrap().push(line.0);
    }
}

/// A MariaDB server whose `max_allowed_packet` is 1 MiB cannot take a
/// 1 MiB reply in the statement that stores it: the attempt is rolled
/// back and the client told to retry; no half-stored record, the key stays
/// claimable.
#[cfg(feature = "mysql")]
async fn a_server_that_cannot_take_the_reply_stores_nothing(table: &Table, engine: &Idempotency) {
    let previous: u64 = sqlx::query_scalar("SELECT @@GLOBAL.max_allowed_packet")
        .fetch_one(&table.pool)
        .await
        .unwrap();
    sqlx::query("SET GLOBAL max_allowed_packet = 1048576")
        .execute(&table.pool)
        .await
        .unwrap();
    // The one connection of this pool is opened now, with the small packet.
    let small =
        idemgen_runtime::connect_with_pool_size(&table.url, &support::NO_MIGRATIONS, Some(1)).await;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SET GLOBAL max_allowed_packet = {previous}"
    )))
    .execute(&table.pool)
    .await
    .unwrap();
    let small = Idempotency::new(small.expect("connect"), &table.name)
        .await
        .unwrap();
    let key = key();
    let refused = claim(&small, pay(Some(&key), &json!({"order": "packet"})))
        .await
        .finish(reply_of(idemgen_runtime::DEFAULT_MAX_STORED_ANSWER_BYTES))
        .await;
    // The server closes the connection: an outage for this attempt.
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers().contains_key("retry-after"));
    let stored = count(
        table,
        &format!("SELECT COUNT(*) FROM {{t}} WHERE idem_key = '{key}' AND status <> 'in_progress'"),
    )
    .await;
    assert_eq!(stored, 0, "a reply the server refused was recorded");
    let retry = claim(engine, pay(Some(&key), &json!({"order": "packet"}))).await;
    assert_eq!(
        retry.finish(created("small")).await.status(),
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn an_operation_without_a_contract_runs_in_a_plain_transaction() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let call = engine
        .begin(&PLAIN, pay(None, &json!({})))
        .await
        .ok()
        .unwrap();
    assert_eq!(call.request().path, "/pay");
    assert_eq!(
        call.finish(created("x")).await.status(),
        StatusCode::CREATED
    );
    // Nothing recorded, and the same request runs again.
    let again = engine
        .begin(&PLAIN, pay(None, &json!({})))
        .await
        .ok()
        .unwrap();
    again.finish(created("x")).await;
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}").await, 0);
}

#[tokio::test]
async fn a_table_that_does_not_fit_stops_the_service_at_start() {
    let Some(table) = Table::new().await else {
        return;
    };
    match Idempotency::new(table.pool.clone(), "no_such_table").await {
        Err(StoreError::Schema { table, .. }) => assert_eq!(table, "no_such_table"),
        Err(other) => panic!("expected a schema error, got {other}"),
        Ok(_) => panic!("a missing table was accepted"),
    }
    table.sql("ALTER TABLE {t} DROP COLUMN response_body").await;
    let Err(error) = Idempotency::new(table.pool.clone(), &table.name).await else {
        panic!("a table without response_body was accepted");
    };
    let message = error.to_string();
    assert!(message.contains(&format!("`{}`", table.name)), "{message}");
    assert!(message.contains("idemgen ddl"), "{message}");
    match Idempotency::new(table.pool.clone(), "records; DROP TABLE x").await {
        Err(StoreError::BadTableName(_)) => {}
        _ => panic!("a table name that is not an identifier was accepted"),
    }
}

/// A 300 ms lease, so the deadline test does not wait long.
static QUICK: Operation = Operation::idempotent(
    "quick",
    "quick",
    Contract {
        max_key_len: 64,
        ..Contract::header("pay:{uuid}", KEY_PATTERN, 60_000, 300)
    },
);

#[tokio::test]
async fn a_business_step_past_its_lease_is_cut_off_and_the_key_retried() {
    let Some(table) = Table::new().await else {
        return;
    };
    table
        .sql("CREATE TABLE {t}_slow (order_no VARCHAR(32) NOT NULL)")
        .await;
    let engine = table.engine().await;
    let key = key();
    let call = support::claim(&QUICK, &engine, pay(Some(&key), &json!({"order": "S"}))).await;
    assert!(call.claim_token().is_some_and(|token| token.len() == 36));
    // What a downstream charge made by this attempt is keyed with.
    let charged_with = call.downstream_key().expect("a keyed call").to_string();
    let first_token = call.claim_token().unwrap().to_string();
    assert_eq!(
        call.request().downstream_key.as_deref(),
        Some(&*charged_with)
    );
    let name = table.name.clone();
    let mut call = call;
    let deadline = call.deadline();
    let (tx, _) = call.parts();
    let slow = async {
        table_insert_named(tx, &format!("{name}_slow"), "S").await;
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        created("too late")
    };
    assert!(
        idemgen_runtime::within_lease(deadline, slow)
            .await
            .is_none()
    );
    let slow = call.lease_expired().await;
    assert_eq!(slow.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(slow.headers().contains_key("retry-after"));
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}_slow").await, 0);
    // Another key's downstream key is another.
    let other = support::claim(
        &QUICK,
        &engine,
        pay(
            Some(&format!("pay:{}", uuid::Uuid::new_v4())),
            &json!({"order": "O"}),
        ),
    )
    .await;
    assert_ne!(other.downstream_key(), Some(&*charged_with));
    assert_eq!(
        other.finish(created("other")).await.status(),
        StatusCode::CREATED
    );
    // Released at once: the retry runs now, not after another lease.
    let mut retry = support::claim(&QUICK, &engine, pay(Some(&key), &json!({"order": "S"}))).await;
    // The retry has a claim token of its own (fencing), and the same
    // downstream key: a provider charged by the cut-off attempt recognises
    // the retry's charge instead of making a second one.
    assert_ne!(retry.claim_token(), Some(&*first_token));
    assert_eq!(retry.downstream_key(), Some(&*charged_with));
    let deadline = retry.deadline();
    let (tx, _) = retry.parts();
    let in_time = async {
        table_insert_named(tx, &format!("{name}_slow"), "S").await;
        created("in time")
    };
    let outcome = idemgen_runtime::within_lease(deadline, in_time)
        .await
        .expect("in time");
    assert_eq!(retry.finish(outcome).await.status(), StatusCode::CREATED);
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}_slow").await, 1);
    table.sql("DROP TABLE {t}_slow").await;
}

#[tokio::test]
async fn errors_that_are_not_business_answers_leave_the_key_retryable_under_reject() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let body = json!({"key": "ord:r1", "order": "r1"});
    let request = || {
        let mut request = pay(None, &body);
        request
            .headers_mut()
            .insert("x-tenant", "acme".parse().unwrap());
        request
    };
    // An error from the business function (here a database error of the
    // infrastructure kind) is not an answer: nothing is recorded.
    let call = support::claim(&STRICT, &engine, request()).await;
    let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
    let down = call.finish(Err::<Reply, _>(sqlx::Error::Io(reset))).await;
    assert_eq!(down.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(down.headers().contains_key("retry-after"));
    // Nor is any other error: a 500 the client may retry.
    let call = support::claim(&STRICT, &engine, request()).await;
    let raced = call
        .finish(Err::<Reply, _>(sqlx::Error::Protocol("not a race".into())))
        .await;
    assert_eq!(raced.status(), StatusCode::INTERNAL_SERVER_ERROR);
    // Still retryable, although the contract rejects recorded failures.
    let call = support::claim(&STRICT, &engine, request()).await;
    assert_eq!(
        call.finish(created("paid")).await.status(),
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn scope_values_that_cannot_be_read_exactly_are_refused_before_any_record() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let body = json!({"key": "ord:s1", "order": "s1"});
    let with_tenant = |tenant: Option<&[u8]>| {
        let mut request = pay(None, &body);
        if let Some(tenant) = tenant {
            request.headers_mut().insert(
                "x-tenant",
                axum::http::HeaderValue::from_bytes(tenant).unwrap(),
            );
        }
        request
    };
    let missing = answer(&STRICT, &engine, with_tenant(None)).await;
    assert_eq!(missing.status(), StatusCode::BAD_REQUEST);
    assert!(body_text(missing).await.contains("X-Tenant"));
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}").await, 0);
    // Two tenants whose names are not ASCII are two tenants.
    for tenant in [
        "Zürich".as_bytes(),
        "Malmö".as_bytes(),
        b"Z\xfcrich".as_slice(),
    ] {
        let call = support::claim(&STRICT, &engine, with_tenant(Some(tenant))).await;
        assert_eq!(
            call.finish(created("ok")).await.status(),
            StatusCode::CREATED
        );
    }
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}").await, 3);
}

#[tokio::test]
async fn a_body_with_a_duplicate_member_is_refused_before_any_record() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let request = Request::post("/pay")
        .header("Idempotency-Key", key())
        .header("content-type", "application/json")
        .body(Body::from(r#"{"amount": 1, "amount": 100}"#))
        .unwrap();
    let refused = answer(&PAY, &engine, request).await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert!(body_text(refused).await.contains("appears twice"));
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}").await, 0);
}

async fn table_insert_named(tx: &mut idemgen_runtime::Tx, table: &str, order: &str) {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {table} (order_no) VALUES ('{order}')"
    )))
    .execute(&mut **tx)
    .await
    .unwrap();
}

/// A decoder that refuses every request: its answer shows that decoding
/// ran.
fn refuse_every_input<I>(_: &idemgen_runtime::Request) -> Result<I, Reply> {
    Err(Reply::problem(
        StatusCode::UNPROCESSABLE_ENTITY,
        "decode ran",
        "",
    ))
}

/// The typed input of [`PAY`] in the tests below.
#[derive(serde::Deserialize)]
struct Payment {
    amount: u32,
}

#[tokio::test]
async fn a_request_refused_by_its_schema_writes_nothing_and_leaves_the_key_unused() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let key = key();
    for (body, status) in [
        (json!({"amount": "ten"}), StatusCode::UNPROCESSABLE_ENTITY),
        (json!({}), StatusCode::UNPROCESSABLE_ENTITY),
    ] {
        let refused = match engine
            .begin_typed(&PAY, pay(Some(&key), &body), |request| {
                request.body_as::<Payment>()
            })
            .await
        {
            Ok(_) => panic!("{body} was accepted"),
            Err(refused) => refused,
        };
        assert_eq!(refused.status(), status, "{body}");
        assert_eq!(
            refused.headers()["content-type"],
            "application/problem+json"
        );
        assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}").await, 0);
    }
    let mut malformed = pay(Some(&key), &json!({}));
    *malformed.body_mut() = Body::from("{\"amount\": 1");
    let refused = engine
        .begin_typed(&PAY, malformed, |request| request.body_as::<Payment>())
        .await
        .err()
        .unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}").await, 0);

    // The fixed request is processed with the same key, and its typed
    // answer is stored and replayed as serialised.
    let (call, payment) = engine
        .begin_typed(&PAY, pay(Some(&key), &json!({"amount": 10})), |request| {
            request.body_as::<Payment>()
        })
        .await
        .ok()
        .unwrap();
    let body = serde_json::to_vec(&json!({"paid": payment.amount})).unwrap();
    let reply = Reply::from_parts(StatusCode::CREATED, Some("application/json"), body.clone());
    let done = call
        .finish(Ok::<_, idemgen_runtime::BusinessError>(reply))
        .await;
    assert_eq!(done.status(), StatusCode::CREATED);
    let replay = answer(&PAY, &engine, pay(Some(&key), &json!({"amount": 10}))).await;
    assert_eq!(replay.headers()[REPLAYED_HEADER], "true");
    assert_eq!(body_text(replay).await.into_bytes(), body);

    // A replay is answered from the record before its input is decoded
    // (a decode that would refuse it never runs).
    let replay = engine
        .begin_typed(
            &PAY,
            pay(Some(&key), &json!({"amount": 10})),
            refuse_every_input::<Payment>,
        )
        .await
        .err()
        .unwrap();
    assert_eq!(replay.headers()[REPLAYED_HEADER], "true");
    assert_eq!(body_text(replay).await.into_bytes(), body);
}

#[tokio::test]
async fn an_answer_without_content_is_replayed_without_a_content_type() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let key = key();
    let call = claim(&engine, pay(Some(&key), &json!({}))).await;
    let done = call
        .answer(Reply::from_parts(StatusCode::NO_CONTENT, None, Vec::new()))
        .await;
    assert_eq!(done.status(), StatusCode::NO_CONTENT);
    assert!(done.headers().get("content-type").is_none());
    let replay = answer(&PAY, &engine, pay(Some(&key), &json!({}))).await;
    assert_eq!(replay.status(), StatusCode::NO_CONTENT);
    assert!(replay.headers().get("content-type").is_none());
    assert_eq!(body_text(replay).await, "");
}

#[tokio::test]
async fn a_missing_key_is_answered_before_the_input_is_decoded() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    // The body is also wrong, but the key's absence is what the contract
    // answers, with its own status.
    let refused = engine
        .begin_typed(
            &STRICT,
            strict("acme", &json!({"order": 5})),
            refuse_every_input::<()>,
        )
        .await
        .err()
        .unwrap();
    assert_eq!(refused.status().as_u16(), 422);
    assert!(body_text(refused).await.contains("missing idempotency key"));
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}").await, 0);
}

#[tokio::test]
async fn an_unwritten_business_function_is_501_and_leaves_the_key_retryable() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let key = key();
    let call = claim(&engine, pay(Some(&key), &json!({}))).await;
    let stub = call
        .finish(Err::<Reply, idemgen_runtime::BusinessError>(
            idemgen_runtime::NotImplemented("src/business/on_pay.rs").into(),
        ))
        .await;
    assert_eq!(stub.status(), StatusCode::NOT_IMPLEMENTED);
    assert!(body_text(stub).await.contains("src/business/on_pay.rs"));
    // Released, not recorded as failed: once written, the retry runs.
    let retry = claim(&engine, pay(Some(&key), &json!({}))).await;
    let done = retry.finish(created("written")).await;
    assert_eq!(done.status(), StatusCode::CREATED);
}

/// `profile: stripe`: the key is optional. A request without one runs
/// unprotected, as the contract says; a key that is there but cannot be
/// read (bytes that are not ASCII, a body key that is `true`, an array, an
/// object) is refused with 400, never read as "no key", which would run
/// every retry's business step again.
#[tokio::test]
async fn an_optional_key_that_is_present_but_unreadable_is_refused() {
    static OPTIONAL_HEADER: Operation = Operation::idempotent(
        "optionalHeader",
        "optional_header",
        Contract {
            key_required: false,
            ..Contract::header("pay:{uuid}", KEY_PATTERN, 60_000, 3_000)
        },
    );
    static OPTIONAL_BODY: Operation = Operation::idempotent(
        "optionalBody",
        "optional_body",
        Contract {
            key: Source::Body("/key"),
            key_required: false,
            ..Contract::header("pay:{uuid}", KEY_PATTERN, 60_000, 3_000)
        },
    );
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let latin1 = Request::post("/pay")
        .header(
            "Idempotency-Key",
            axum::http::HeaderValue::from_bytes(b"pay:caf\xe9").unwrap(),
        )
        .body(Body::from("{}"))
        .unwrap();
    let refused = answer(&OPTIONAL_HEADER, &engine, latin1).await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert!(body_text(refused).await.contains("not visible ASCII"));
    let twice = Request::post("/pay")
        .header("Idempotency-Key", key())
        .header("Idempotency-Key", key())
        .body(Body::from("{}"))
        .unwrap();
    assert_eq!(
        answer(&OPTIONAL_HEADER, &engine, twice).await.status(),
        StatusCode::BAD_REQUEST
    );
    for body in [
        json!({"key": true}),
        json!({"key": ["pay:1"]}),
        json!({"key": {"id": 1}}),
        json!({"key": "pay:\u{0}"}),
    ] {
        let refused = answer(&OPTIONAL_BODY, &engine, pay(None, &body)).await;
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "{body}");
    }
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}").await, 0);
    // Absent (or null) is no key: the request runs, and records nothing.
    for body in [json!({}), json!({"key": null})] {
        let call = support::claim(&OPTIONAL_BODY, &engine, pay(None, &body)).await;
        assert_eq!(call.downstream_key(), None);
        assert_eq!(
            call.finish(created("unkeyed")).await.status(),
            StatusCode::CREATED
        );
    }
    assert_eq!(count(&table, "SELECT COUNT(*) FROM {t}").await, 0);
}

/// Business code that ends the transaction itself (a raw `COMMIT`; on
/// MySQL, DDL that commits implicitly) must not have its answer stored in
/// autocommit, as if it were part of the business write: the completion
/// matches nothing, the client is told the effect is unknown, and no
/// completed record exists.
#[cfg(any(feature = "mysql", feature = "postgres"))]
#[tokio::test]
async fn business_code_that_ends_the_transaction_is_not_completed_in_autocommit() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let mut endings = vec!["COMMIT".to_string(), "ROLLBACK".to_string()];
    if cfg!(feature = "mysql") {
        endings.push(format!("CREATE TABLE {}_ddl (id INTEGER)", table.name));
    }
    for ending in endings {
        let key = key();
        let mut call = claim(&engine, pay(Some(&key), &json!({}))).await;
        let (tx, _) = call.parts();
        sqlx::query(sqlx::AssertSqlSafe(ending.clone()))
            .execute(&mut **tx)
            .await
            .unwrap();
        let answer = call.finish(created("after its own commit")).await;
        assert_eq!(
            answer.status(),
            StatusCode::INTERNAL_SERVER_ERROR,
            "{ending}"
        );
        assert!(
            body_text(answer).await.contains("effect is unknown"),
            "{ending}"
        );
        let completed = count(
            &table,
            &format!(
                "SELECT COUNT(*) FROM {{t}} WHERE idem_key = '{key}' AND status <> 'in_progress'"
            ),
        )
        .await;
        assert_eq!(completed, 0, "{ending}: stored in autocommit");
    }
    table
        .sql(&format!("DROP TABLE IF EXISTS {}_ddl", table.name))
        .await;
}

/// One server has one clock: no margin unless asked (a Galera cluster
/// starts at `GALERA_CLOCK_MARGIN`: `galera_lost_races.rs`).
#[tokio::test]
async fn a_single_server_needs_no_clock_margin() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    assert_eq!(engine.clock_margin(), std::time::Duration::ZERO);
    let engine = engine.with_clock_margin(std::time::Duration::from_millis(250));
    assert_eq!(engine.clock_margin(), std::time::Duration::from_millis(250));
}

/// A replay is the answer as it was stored: after the resource it tells of
/// has changed, a retry with the same key still gets the first answer
/// (docs/src/service.md says so), and a new key sees the change.
#[tokio::test]
async fn a_replay_is_the_stored_answer_even_after_the_resource_changed() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    table
        .sql("CREATE TABLE {t}_payment (id BIGINT PRIMARY KEY, refunded BIGINT NOT NULL)")
        .await;
    table
        .sql("INSERT INTO {t}_payment (id, refunded) VALUES (1, 0)")
        .await;
    let refunded = || count(&table, "SELECT refunded FROM {t}_payment WHERE id = 1");
    let state = |refunded: i64| {
        Ok::<_, sqlx::Error>(Reply::json(
            StatusCode::OK,
            &json!({ "refunded": refunded }),
        ))
    };

    let key = key();
    let first = claim(&engine, pay(Some(&key), &json!({"amount": 1})))
        .await
        .finish(state(refunded().await))
        .await;
    let first_body = body_text(first).await;
    assert_eq!(first_body, r#"{"refunded":0}"#);

    table
        .sql("UPDATE {t}_payment SET refunded = 1 WHERE id = 1")
        .await;
    let replay = answer(&PAY, &engine, pay(Some(&key), &json!({"amount": 1}))).await;
    assert_eq!(replay.headers()[REPLAYED_HEADER], "true");
    assert_eq!(body_text(replay).await, first_body);

    let fresh = claim(&engine, pay(Some(&support::key()), &json!({"amount": 1})))
        .await
        .finish(state(refunded().await))
        .await;
    assert_eq!(body_text(fresh).await, r#"{"refunded":1}"#);
    table.sql("DROP TABLE {t}_payment").await;
}

/// Without a key there is no record to answer from, so the input is
/// decoded before anything touches the database: a request its decode
/// refuses is answered so even when no connection can be had. A keyed
/// request is refused only after the read that may answer it from its
/// record, so then it gets the database's answer instead.
#[tokio::test]
async fn input_without_a_key_is_refused_before_the_database_and_with_one_after_its_read() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    engine.pool().close().await;
    let refuse = refuse_every_input::<()>;
    let keyless = engine
        .begin_typed(&PLAIN, pay(None, &json!({})), refuse)
        .await
        .err()
        .unwrap();
    assert_eq!(keyless.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body_text(keyless).await.contains("decode ran"));
    let keyed = engine
        .begin_typed(&PAY, pay(Some(&key()), &json!({})), refuse)
        .await
        .err()
        .unwrap();
    assert_eq!(keyed.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(!body_text(keyed).await.contains("decode ran"));
}
