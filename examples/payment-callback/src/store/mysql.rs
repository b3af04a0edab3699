//! The record table on MySQL / MariaDB.
//!
//! sqlx connects to MySQL with `CLIENT_FOUND_ROWS`, so affected-row counts
//! cannot tell an insert from a duplicate: the claim is a plain INSERT whose
//! unique violation means another request holds the key. The fenced UPDATEs
//! count matched rows, which is what they need. Each connection sets
//! `wsrep_sync_wait = 1` so that, on a Galera cluster, reading the record
//! back sees a claim committed on another node.

use std::time::Duration;

use super::{Finish, NewClaim, Reclaim, Record};

pub type Db = sqlx::MySql;
pub type Pool = sqlx::Pool<Db>;
/// The transaction a business function writes in.
pub type Tx = sqlx::Transaction<'static, Db>;

/// Used when `DATABASE_URL` is not set.
pub const DEFAULT_DATABASE_URL: &str = "mysql://root@127.0.0.1:3306/payment_callback";

/// Connects and applies the migrations in `migrations/mysql/`.
pub async fn connect(url: &str) -> Result<Pool, sqlx::Error> {
    let pool = sqlx::pool::PoolOptions::<Db>::new()
        .after_connect(|connection, _| {
            Box::pin(async move {
                // On a Galera cluster a read may miss a claim committed on
                // another node a moment ago unless it waits for it. Other
                // servers do not know the variable, and need not.
                if let Err(error) = sqlx::query("SET SESSION wsrep_sync_wait = 1")
                    .execute(&mut *connection)
                    .await
                {
                    tracing::debug!(%error, "wsrep_sync_wait not set");
                }
                Ok(())
            })
        })
        .connect(url)
        .await?;
    // Instances starting together race to migrate; the losers see the
    // winner's bookkeeping (a duplicate or "dirty" version) and try again.
    let mut attempt = 0;
    loop {
        match sqlx::migrate!("migrations/mysql").run(&pool).await {
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

/// Inserts an in-progress record; `false` when `(scope, idem_key)` already
/// exists (a unique violation), and the caller reads the record back. A
/// plain INSERT either inserts or fails: the affected-row count is never
/// consulted.
pub async fn claim(pool: &Pool, claim: &NewClaim<'_>) -> Result<bool, sqlx::Error> {
    let result = sqlx::query!(
        "INSERT INTO idempotent_record (scope, idem_key, fingerprint, status, claim_token, lease_expires_at, expires_at, created_at, updated_at) VALUES (?, ?, ?, 'in_progress', ?, ?, ?, ?, ?)",
        claim.scope,
        claim.key,
        claim.fingerprint,
        claim.token,
        claim.lease_expires_at,
        claim.expires_at,
        claim.now,
        claim.now,
    )
    .execute(pool)
    .await;
    match result {
        Ok(_) => Ok(true),
        Err(sqlx::Error::Database(error)) if error.is_unique_violation() => Ok(false),
        Err(error) => Err(error),
    }
}

pub async fn read(pool: &Pool, scope: &str, key: &str) -> Result<Option<Record>, sqlx::Error> {
    let row = sqlx::query!("SELECT fingerprint, status, claim_token, lease_expires_at, expires_at, response_status, response_content_type, response_body FROM idempotent_record WHERE scope = ? AND idem_key = ?", scope, key)
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
        "UPDATE idempotent_record SET fingerprint = ?, status = 'in_progress', claim_token = ?, lease_expires_at = ?, expires_at = ?, created_at = ?, updated_at = ?, response_status = NULL, response_content_type = NULL, response_body = NULL WHERE scope = ? AND idem_key = ? AND claim_token = ? AND status = ? AND (expires_at <= ? OR status = 'failed' OR (status = 'in_progress' AND lease_expires_at <= ?))",
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
        "UPDATE idempotent_record SET status = ?, response_status = ?, response_content_type = ?, response_body = ?, updated_at = ? WHERE scope = ? AND idem_key = ? AND claim_token = ? AND status = 'in_progress'",
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
    let result = sqlx::query!("DELETE FROM idempotent_record WHERE expires_at < ? AND lease_expires_at < ? ORDER BY expires_at LIMIT ?", now, now, batch)
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
    // 1213 deadlock (also a Galera certification failure), 1205 lock wait
    // timeout: another transaction holds the key.
    let number = error
        .try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
        .map(|error| error.number());
    matches!(number, Some(1213 | 1205)) || error.code().as_deref() == Some("40001")
}
