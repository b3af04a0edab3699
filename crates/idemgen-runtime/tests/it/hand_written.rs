//! The hand-written service of `examples/hand_written.rs`, over HTTP
//! through its router on SQLite: duplicates pay once, failures roll the
//! business write back with the record, retries replay.

#![cfg(feature = "sqlite")]

#[path = "../../examples/hand_written.rs"]
#[allow(dead_code)]
mod example;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use idemgen_runtime::Idempotency;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::key;

/// The example's database in a temporary SQLite file, removed afterwards.
struct Service {
    engine: Idempotency,
    file: std::path::PathBuf,
}

impl Service {
    async fn start() -> Service {
        let file = std::env::temp_dir().join(format!("hand-written-{}.db", uuid::Uuid::new_v4()));
        let engine = example::engine(&format!("sqlite://{}", file.display()))
            .await
            .unwrap();
        sqlx::query("INSERT INTO orders (id) VALUES ('A1')")
            .execute(engine.pool())
            .await
            .unwrap();
        Service { engine, file }
    }

    async fn pay(&self, order: &str, key: &str, body: Value) -> (StatusCode, bool, String) {
        let request = Request::post(format!("/orders/{order}/pay"))
            .header("Idempotency-Key", key)
            .body(Body::from(body.to_string()))
            .unwrap();
        let response = example::router(self.engine.clone())
            .oneshot(request)
            .await
            .unwrap();
        let status = response.status();
        let replayed = response.headers().contains_key("idempotent-replayed");
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (
            status,
            replayed,
            String::from_utf8_lossy(&body).into_owned(),
        )
    }

    async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(self.engine.pool())
            .await
            .unwrap()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = self.file.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_duplicates_pay_once_and_retries_replay_the_answer() {
    let service = std::sync::Arc::new(Service::start().await);
    let key = key();
    let attempts: Vec<_> = (0..12)
        .map(|_| {
            let (service, key) = (service.clone(), key.clone());
            tokio::spawn(async move { service.pay("A1", &key, json!({"amount": 250})).await })
        })
        .collect();
    let mut paid = Vec::new();
    for attempt in attempts {
        let (status, _, body) = attempt.await.unwrap();
        match status {
            StatusCode::OK => paid.push(body),
            StatusCode::TOO_MANY_REQUESTS => {}
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert!(!paid.is_empty());
    assert!(paid.iter().all(|body| *body == paid[0]), "{paid:?}");
    assert_eq!(service.count("SELECT COUNT(*) FROM payments").await, 1);
    assert_eq!(service.count("SELECT paid FROM orders").await, 250);

    let (status, replayed, body) = service.pay("A1", &key, json!({"amount": 250})).await;
    assert_eq!((status, replayed), (StatusCode::OK, true));
    assert_eq!(body, paid[0]);
    let (status, _, _) = service.pay("A1", &key, json!({"amount": 999})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(service.count("SELECT COUNT(*) FROM payments").await, 1);
}

#[tokio::test]
async fn a_failed_business_step_rolls_back_with_the_record_and_a_retry_runs_again() {
    let service = Service::start().await;
    let key = key();
    // The UPDATE succeeds, the INSERT fails its CHECK: nothing is kept.
    // The database refused a value of the request, which is the client's
    // to fix: a 400 naming the CHECK (never a 500), recorded as the key's
    // failure, and under `failed: retry` a retry runs again (and is
    // refused again) rather than getting a replay.
    let (status, _, body) = service.pay("A1", &key, json!({"amount": -5})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("urn:idemgen:problem:value-refused"), "{body}");
    assert!(body.contains("amount > 0"), "{body}");
    assert_eq!(service.count("SELECT paid FROM orders").await, 0);
    assert_eq!(
        service
            .count("SELECT COUNT(*) FROM idempotent_record WHERE status = 'failed'")
            .await,
        1
    );
    let (status, replayed, body) = service.pay("A1", &key, json!({"amount": -5})).await;
    assert_eq!(
        (status, replayed),
        (StatusCode::BAD_REQUEST, false),
        "{body}"
    );
    assert_eq!(service.count("SELECT paid FROM orders").await, 0);

    // An unknown order is a 404, recorded as failed; once it exists, the
    // same key pays.
    let other = self::key();
    let (status, _, _) = service.pay("B2", &other, json!({"amount": 10})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    sqlx::query("INSERT INTO orders (id) VALUES ('B2')")
        .execute(service.engine.pool())
        .await
        .unwrap();
    let (status, replayed, body) = service.pay("B2", &other, json!({"amount": 10})).await;
    assert_eq!((status, replayed), (StatusCode::OK, false), "{body}");
    assert!(body.contains("\"order_total\":10"), "{body}");
}

#[tokio::test]
async fn a_missing_key_is_refused_before_anything_is_written() {
    let service = Service::start().await;
    let request = Request::post("/orders/A1/pay")
        .body(Body::from(r#"{"amount": 1}"#))
        .unwrap();
    let response = example::router(service.engine.clone())
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        service
            .count("SELECT COUNT(*) FROM idempotent_record")
            .await,
        0
    );
    assert_eq!(service.count("SELECT paid FROM orders").await, 0);
}
