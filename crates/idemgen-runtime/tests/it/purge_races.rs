//! The purge never deletes a record that a reclaim or finish made live
//! while the purge waited for it: the expiry test must hold for the row as
//! it is when the purge deletes it, not as it was when the purge looked.
//! Under PostgreSQL's READ COMMITTED only the DELETE's own WHERE is
//! re-checked against a row updated meanwhile, so a test kept in a
//! subquery alone deleted live records.

use std::time::Duration;

use crate::support::Table;
use idemgen_runtime::Idempotency;

/// Far past any test's clock: a record with this expiry is live.
const YEAR_2100_MS: i64 = 4_102_444_800_000;

async fn completed_and_expired(table: &Table, key: &str) {
    table
        .sql(&format!(
            "INSERT INTO {{t}} (scope, idem_key, fingerprint, status, claim_token, \
             lease_expires_at, expires_at, response_status, response_content_type, \
             response_body, created_at, updated_at) \
             VALUES ('s', '{key}', 'f', 'completed', 'old-token', 0, 0, 201, \
             'application/json', NULL, 0, 0)"
        ))
        .await;
}

async fn token_of(table: &Table, key: &str) -> Option<String> {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT claim_token FROM {} WHERE idem_key = '{key}'",
        table.name
    )))
    .fetch_optional(&table.pool)
    .await
    .unwrap()
}

async fn purge_during_a_reclaim(table: &Table, engine: &Idempotency, key: &str) {
    completed_and_expired(table, key).await;
    // A reclaim in an open transaction: the expired record becomes live
    // (a new token, a new window and lease), as the claim's reclaim does.
    let mut reclaim = table.pool.begin().await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE {} SET status = 'in_progress', claim_token = 'new-token', \
         lease_expires_at = {YEAR_2100_MS}, expires_at = {YEAR_2100_MS} \
         WHERE idem_key = '{key}'",
        table.name
    )))
    .execute(&mut *reclaim)
    .await
    .unwrap();
    let purge = {
        let engine = engine.clone();
        tokio::spawn(async move { engine.purge_expired(100).await })
    };
    // Let the purge find the row and wait for its lock (MariaDB; SQLite
    // waits for the database) or skip it (PostgreSQL's SKIP LOCKED, so
    // there this test cannot see the DELETE's own re-check of expiry:
    // `store.rs` pins that statement's shape).
    tokio::time::sleep(Duration::from_millis(500)).await;
    reclaim.commit().await.unwrap();
    let purged = tokio::time::timeout(Duration::from_secs(30), purge)
        .await
        .expect("the purge ends once the reclaim committed")
        .unwrap();
    // SQLite may refuse the purge while the reclaim holds its write lock
    // (SQLITE_BUSY): that deletes nothing either.
    if let Ok(purged) = purged {
        assert_eq!(purged, 0, "the purge deleted a live record");
    }
    assert_eq!(
        token_of(table, key).await.as_deref(),
        Some("new-token"),
        "the reclaimed record was deleted by a purge that started while it was expired"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purge_waiting_on_a_reclaim_keeps_the_reclaimed_record() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    for round in 0..3 {
        purge_during_a_reclaim(&table, &engine, &format!("pay:race-{round}")).await;
    }
    // An expired record nobody touches is still purged.
    completed_and_expired(&table, "pay:idle").await;
    assert_eq!(engine.purge_expired(100).await.unwrap(), 1);
    assert_eq!(token_of(&table, "pay:idle").await, None);
}
