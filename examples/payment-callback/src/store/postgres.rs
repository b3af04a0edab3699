//! The record table on PostgreSQL.

use std::time::Duration;

use super::{Finish, NewClaim, Reclaim, Record};

pub type Db = sqlx::Postgres;
pub type Pool = sqlx::Pool<Db>;
/// The transaction a business function writes in.
pub type Tx = sqlx::Transaction<'static, Db>;

/// Used when `DATABASE_URL` is not set.
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/payment_callback";

/// Connects and applies the migrations in `migrations/postgres/`.
pub async fn connect(url: &str) -> Result<Pool, sqlx::Error> {
    let pool = sqlx::pool::PoolOptions::<Db>::new().connect(url).await?;
    // Instances starting together race to migrate; the losers see the
    // winner's bookkeeping (a duplicate or "dirty" version) and try again.
    let mut attempt = 0;
    loop {
        match sqlx::migrate!("migrations/postgres").run(&pool).await {
            Ok(()) => return Ok(pool),
            Err(error) if attempt < 10 => {
                attempt += 1;
                tracing::warn!(%error, attempt, "migrating failed; retrying");
                tokio::time::sleep(Duration::from_millis(100 * attempt)).await;
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// Starts the business transaction.
pub async fn begin(pool: &Pool) -> Result<Tx, sqlx::Error> {
    pool.begin().await
}

/// Inserts an in-progress record unless `(scope, idem_key)` exists; `true`
/// when this statement inserted it (its claim token came back), `false` on
/// a conflict, and the caller reads the record back.
pub async fn claim(pool: &Pool, claim: &NewClaim<'_>) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query_scalar!(
        "INSERT INTO idempotent_record (scope, idem_key, fingerprint, status, claim_token, lease_expires_at, expires_at, created_at, updated_at) VALUES ($1, $2, $3, 'in_progress', $4, $5, $6, $7, $8) ON CONFLICT (scope, idem_key) DO NOTHING RETURNING claim_token",
        claim.scope,
        claim.key,
        claim.fingerprint,
        claim.token,
        claim.lease_expires_at,
        claim.expires_at,
        claim.now,
        claim.now,
    )
    .fetch_optional(pool)
    .await?;
    Ok(inserted.as_deref() == Some(claim.token))
}

pub async fn read(pool: &Pool, scope: &str, key: &str) -> Result<Option<Record>, sqlx::Error> {
    let row = sqlx::query!("SELECT fingerprint, status, claim_token, lease_expires_at, expires_at, response_status, response_content_type, response_body FROM idempotent_record WHERE scope = $1 AND idem_key = $2", scope, key)
        .fetch_optional(pool)
        .await?;
    Ok(row.map(|row| Record {
        fingerprint: row.fingerprint,
        status: row.status,
        claim_token: row.claim_token,
        lease_expires_at: row.lease_expires_at,
        expires_at: row.expires_at,
        response_status: row
            .response_status
            .and_then(|status| u16::try_from(status).ok()),
        response_content_type: row.response_content_type,
        response_body: row.response_body,
    }))
}

/// Claims an expired, failed or abandoned record if it is still as read
/// (same claim token and status); the caller reads the token back.
pub async fn reclaim(pool: &Pool, reclaim: &Reclaim<'_>) -> Result<(), sqlx::Error> {
    let claim = &reclaim.claim;
    sqlx::query!(
        "UPDATE idempotent_record SET fingerprint = $1, status = 'in_progress', claim_token = $2, lease_expires_at = $3, expires_at = $4, created_at = $5, updated_at = $6, response_status = NULL, response_content_type = NULL, response_body = NULL WHERE scope = $7 AND idem_key = $8 AND claim_token = $9 AND status = $10 AND (expires_at <= $11 OR status = 'failed' OR (status = 'in_progress' AND lease_expires_at <= $12))",
        claim.fingerprint,
        claim.token,
        claim.lease_expires_at,
        claim.expires_at,
        claim.now,
        claim.now,
        claim.scope,
        claim.key,
        reclaim.old_token,
        reclaim.old_status,
        claim.now,
        claim.now,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Stores the outcome if this attempt still holds the claim; `false` when
/// its lease was taken over (then nothing was written).
pub async fn finish<'e>(
    executor: impl sqlx::Executor<'e, Database = Db>,
    finish: &Finish<'_>,
) -> Result<bool, sqlx::Error> {
    let result = sqlx::query!(
        "UPDATE idempotent_record SET status = $1, response_status = $2, response_content_type = $3, response_body = $4, updated_at = $5 WHERE scope = $6 AND idem_key = $7 AND claim_token = $8 AND status = 'in_progress'",
        finish.status,
        finish.response_status(),
        finish.reply.content_type.as_str(),
        finish.reply.body.as_slice(),
        finish.now,
        finish.scope,
        finish.key,
        finish.token,
    )
    .execute(executor)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Deletes up to `batch` records whose window and lease have both ended.
pub async fn purge(pool: &Pool, now: i64, batch: i64) -> Result<u64, sqlx::Error> {
    let result = sqlx::query!("DELETE FROM idempotent_record WHERE id IN (SELECT id FROM idempotent_record WHERE expires_at < $1 AND lease_expires_at < $2 ORDER BY expires_at LIMIT $3)", now, now, batch)
        .execute(pool)
        .await?;
    Ok(result.rows_affected())
}

/// Whether `error` means another request got to the key first, so the
/// answer is "in progress" or a replay rather than a 500.
pub fn is_lost_race(error: &sqlx::Error) -> bool {
    let sqlx::Error::Database(error) = error else {
        return false;
    };
    if error.is_unique_violation() {
        return true;
    }
    // serialization_failure, deadlock_detected
    matches!(error.code().as_deref(), Some("40001" | "40P01"))
}
