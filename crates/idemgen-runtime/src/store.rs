//! The record table: one row per `(scope, idem_key)`.
//!
//! The statements are fixed except for the table's name, which comes from
//! the contract (`store.table`). `sqlx::query!` needs the whole SQL text as
//! a literal at compile time, so it cannot take a name chosen by each
//! service; instead the text is built once per store from a name that must
//! be a plain SQL identifier (nothing a request can influence is ever
//! formatted into SQL: every value is bound), and [`RecordStore::new`] has
//! the database prepare every statement before the first request, so a
//! table that lacks a column or has one of another type stops the service
//! at start with the table's name, not at the first duplicate. This
//! crate's tests run every statement against SQLite, MariaDB and
//! PostgreSQL tables created with the DDL `idemgen ddl` prints.
//!
//! Every time the statements write or compare comes from the database's
//! clock ([`db_now`]), never from the application server's: instances whose
//! clocks disagree still agree on when a lease or a window ends, because
//! one clock decides. On a cluster whose nodes each have a clock (Galera),
//! the comparisons that hand a key to a new owner wait an extra
//! `clock_margin_ms` beyond the lease and the window, which covers the
//! nodes' offset.

use std::sync::Arc;
use std::time::Duration;

use sqlx::{AssertSqlSafe, Executor, Row, SqlSafeStr};

use crate::db::{Db, Dialect, Pool};
use crate::reply::Reply;

/// Below this many records (by the database's estimate) the census counts
/// the table; from it on, it serves the estimate ([`RecordStore::census`]).
pub(crate) const CENSUS_EXACT_BELOW: i64 = 100_000;

/// Final record states, as stored (a claim writes `in_progress`).
pub(crate) const IN_PROGRESS: &str = "in_progress";
pub(crate) const COMPLETED: &str = "completed";
pub(crate) const FAILED: &str = "failed";

/// The record of one key, as read back.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub fingerprint: String,
    pub status: String,
    pub claim_token: String,
    pub lease_expires_at: i64,
    pub expires_at: i64,
    pub response_status: Option<u16>,
    pub response_content_type: Option<String>,
    pub response_body: Option<Vec<u8>>,
    /// The stored headers, as [`crate::response_headers::encode`] wrote them.
    pub response_headers: Option<Vec<u8>>,
    /// When the record last changed (Unix ms, the database's clock).
    pub updated_at: i64,
    /// The database's clock when the record was read (Unix ms).
    pub db_now: i64,
}

impl Record {
    /// Whether the attempt that claimed it gave it up
    /// ([`RecordStore::release`]: its lease set to end `margin_ms` before
    /// that update, which no claim does) rather than its lease running out.
    pub(crate) fn released(&self, margin_ms: i64) -> bool {
        self.status == IN_PROGRESS && self.lease_expires_at.saturating_add(margin_ms) == self.updated_at
    }

    /// Whether its lease, `margin_ms` added, has not ended by the
    /// database's clock read with it.
    pub(crate) fn lease_running(&self, margin_ms: i64) -> bool {
        self.lease_expires_at.saturating_add(margin_ms) > self.db_now
    }
}

/// A new in-progress record; its times are the database's now plus these.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewClaim<'a> {
    pub scope: &'a str,
    pub key: &'a str,
    pub fingerprint: &'a str,
    pub token: &'a str,
    pub lease_ms: i64,
    pub window_ms: i64,
}

/// Claiming an existing record, fenced on what was read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reclaim<'a> {
    pub claim: NewClaim<'a>,
    pub old_token: &'a str,
    pub old_status: &'a str,
    /// Extra time past the lease and window before a record is taken.
    pub margin_ms: i64,
}

/// The outcome of an attempt, fenced on its claim token.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Finish<'a> {
    pub status: &'a str,
    pub reply: &'a Reply,
    pub scope: &'a str,
    pub key: &'a str,
    pub token: &'a str,
}

/// The record table of one service, with its statements.
#[derive(Debug, Clone)]
pub(crate) struct RecordStore {
    table: Arc<str>,
    sql: Arc<Statements>,
}

#[derive(Debug)]
struct Statements {
    claim: Arc<str>,
    /// The claim inside the business transaction (`ClaimMode::InTransaction`).
    claim_in_transaction: Arc<str>,
    read: Arc<str>,
    reclaim: Arc<str>,
    finish: Arc<str>,
    complete: Arc<str>,
    release: Arc<str>,
    purge: Arc<str>,
}

/// Why [`crate::Idempotency::new`] could not open the record table.
#[derive(Debug)]
pub enum StoreError {
    /// The table name is not a plain SQL identifier.
    BadTableName(String),
    /// The database refused a statement (missing table or column, wrong type).
    Schema {
        table: String,
        statement: &'static str,
        error: sqlx::Error,
    },
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::BadTableName(name) => write!(
                f,
                "record table name `{name}` is not a plain SQL identifier \
                 (letters, digits and `_`, not starting with a digit, at most 63 bytes)"
            ),
            StoreError::Schema {
                table,
                statement,
                error,
            } => write!(
                f,
                "the record table `{table}` does not fit the {statement} statement ({error}); \
                 create it with the DDL `idemgen ddl` prints (a table made before records kept \
                 response headers needs only the `ALTER TABLE` at its end)"
            ),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Schema { error, .. } => Some(error),
            StoreError::BadTableName(_) => None,
        }
    }
}

/// Whether `name` is a plain SQL identifier, safe to write unquoted in every
/// dialect.
pub(crate) fn is_plain_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'A'..=b'Z' | b'_'))
        && bytes.all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
        && name.len() <= 63
}

impl RecordStore {
    /// The store for `table`, its statements prepared by the database once
    /// to prove the table fits them.
    pub(crate) async fn new(pool: &Pool, table: &str) -> Result<RecordStore, StoreError> {
        let store = RecordStore::unchecked(table)?;
        for (statement, sql) in store.statements() {
            if let Err(error) = pool
                .prepare(AssertSqlSafe(sql.clone()).into_sql_str())
                .await
            {
                return Err(StoreError::Schema {
                    table: table.to_string(),
                    statement,
                    error,
                });
            }
        }
        Ok(store)
    }

    fn unchecked(table: &str) -> Result<RecordStore, StoreError> {
        if !is_plain_identifier(table) {
            return Err(StoreError::BadTableName(table.to_string()));
        }
        let sql = |template: &str| -> Arc<str> {
            let template = template
                .replace("{t}", table)
                .replace("{now}", db_now(Dialect::BUILT));
            placeholders(Dialect::BUILT, &template).into()
        };
        let on_conflict = match Dialect::BUILT {
            // A plain INSERT: a duplicate is a unique violation (affected
            // rows cannot tell an insert from a duplicate on MySQL, where
            // sqlx always sets CLIENT_FOUND_ROWS).
            Dialect::Mysql => "",
            // The token comes back only when this statement inserted.
            Dialect::Sqlite | Dialect::Postgres => {
                " ON CONFLICT (scope, idem_key) DO NOTHING RETURNING claim_token"
            }
        };
        // The expiry test is the DELETE's own, never only a subquery's: a
        // record a reclaim or finish makes live again while the purge
        // waits for its lock must survive. InnoDB evaluates a locking
        // statement's WHERE on the latest row version. PostgreSQL, under
        // READ COMMITTED, re-checks only the outer WHERE against a row
        // updated meanwhile (`id IN (…)` would still hold), so the test is
        // repeated there, and SKIP LOCKED leaves rows that a claim holds
        // to the next run instead of waiting for them. SQLite has one
        // writer at a time, but shares the statement's shape.
        let purge = match Dialect::BUILT {
            Dialect::Mysql => {
                "DELETE FROM {t} WHERE expires_at < {now} - {1} AND lease_expires_at < {now} - {2} \
                 ORDER BY expires_at LIMIT {3}"
            }
            Dialect::Postgres => {
                "DELETE FROM {t} WHERE id IN (SELECT id FROM {t} \
                 WHERE expires_at < {now} - {1} AND lease_expires_at < {now} - {2} \
                 ORDER BY expires_at LIMIT {3} FOR UPDATE SKIP LOCKED) \
                 AND expires_at < {now} - {1} AND lease_expires_at < {now} - {2}"
            }
            Dialect::Sqlite => {
                "DELETE FROM {t} WHERE id IN (SELECT id FROM {t} \
                 WHERE expires_at < {now} - {1} AND lease_expires_at < {now} - {2} \
                 ORDER BY expires_at LIMIT {3}) \
                 AND expires_at < {now} - {1} AND lease_expires_at < {now} - {2}"
            }
        };
        // The completion runs in the business transaction; business code
        // that ended it (a raw COMMIT, DDL that commits implicitly, a
        // deadlock it swallowed, which rolled everything back) would leave
        // it running on its own in autocommit, where it then matches no
        // row. MySQL: the session's flag. PostgreSQL: the transaction has
        // an id once the business step wrote (an autocommit statement gets
        // its own only when it writes, after its WHERE), so a step that
        // wrote nothing also matches no row, and is told apart by
        // `transaction_is_open` on that rare path. SQLite has no such test.
        let in_transaction = match Dialect::BUILT {
            Dialect::Mysql => " AND @@in_transaction = 1",
            Dialect::Postgres => " AND txid_current_if_assigned() IS NOT NULL",
            Dialect::Sqlite => "",
        };
        let finish = "UPDATE {t} SET status = {1}, response_status = {2}, \
                      response_content_type = {3}, response_body = {4}, \
                      response_headers = {5}, updated_at = {now} \
                      WHERE scope = {6} AND idem_key = {7} AND claim_token = {8} \
                      AND status = 'in_progress'";
        // The lease ends `margin` before the update's time, read once, so
        // that a reader tells a released claim from one whose lease ran
        // out ([`Record::released`]). PostgreSQL's clock_timestamp() moves
        // between two calls in one statement: it is read in a subquery.
        let release = match Dialect::BUILT {
            Dialect::Postgres => {
                "UPDATE {t} SET lease_expires_at = clock.now_ms - {1}, updated_at = clock.now_ms \
                 FROM (SELECT {now} AS now_ms) AS clock \
                 WHERE scope = {2} AND idem_key = {3} AND claim_token = {4} \
                 AND status = 'in_progress'"
            }
            Dialect::Sqlite | Dialect::Mysql => {
                "UPDATE {t} SET lease_expires_at = {now} - {1}, updated_at = {now} \
                 WHERE scope = {2} AND idem_key = {3} AND claim_token = {4} \
                 AND status = 'in_progress'"
            }
        };
        let claim = match Dialect::BUILT {
            Dialect::Sqlite | Dialect::Mysql => format!(
                "INSERT INTO {{t}} (scope, idem_key, fingerprint, status, claim_token, \
                 lease_expires_at, expires_at, created_at, updated_at) \
                 VALUES ({{1}}, {{2}}, {{3}}, 'in_progress', {{4}}, {{now}} + {{5}}, \
                 {{now}} + {{6}}, {{now}}, {{now}}){on_conflict}"
            ),
            // The claim commits without waiting for its WAL to reach disk
            // (`synchronous_commit` off for this statement's own
            // transaction only): a duplicate sees it at once all the same.
            // WAL is flushed in order, so the business transaction's
            // durable commit, which comes later and completes this record,
            // makes the claim durable too; a crash before that can lose
            // only a claim whose business step never committed, and whose
            // client was never answered.
            Dialect::Postgres => format!(
                "INSERT INTO {{t}} (scope, idem_key, fingerprint, status, claim_token, \
                 lease_expires_at, expires_at, created_at, updated_at) \
                 SELECT {{1}}, {{2}}, {{3}}, 'in_progress', {{4}}, {{now}} + {{5}}, \
                 {{now}} + {{6}}, {{now}}, {{now}} \
                 FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit\
                 {on_conflict}"
            ),
        };
        // Inside the business transaction the claim commits with the work,
        // durably. PostgreSQL bounds its wait for another transaction's
        // claim of the key with `lock_timeout`, set for this transaction
        // before the row is inserted and, once it is, set back to the
        // session's value in the same statement (one round trip; a claim
        // that found the key taken keeps the bound for the read and the
        // reclaim that follow, and [`RecordStore::end_claim_wait`] ends
        // it). Each step reads the one before, which fixes their order.
        // MySQL bounds it with `SET STATEMENT innodb_lock_wait_timeout`
        // around the INSERT, written per call
        // ([`RecordStore::claim_in_transaction`]). SQLite needs no bound
        // here: `BEGIN IMMEDIATE` already waited for the other writer.
        let claim_in_transaction = match Dialect::BUILT {
            Dialect::Sqlite | Dialect::Mysql => claim.clone(),
            Dialect::Postgres => format!(
                "WITH session AS MATERIALIZED \
                 (SELECT current_setting('lock_timeout') AS lock_timeout), \
                 bounded_wait AS MATERIALIZED \
                 (SELECT set_config('lock_timeout', {{7}}, true) AS lock_timeout FROM session), \
                 claimed AS (INSERT INTO {{t}} (scope, idem_key, fingerprint, status, \
                 claim_token, lease_expires_at, expires_at, created_at, updated_at) \
                 SELECT {{1}}, {{2}}, {{3}}, 'in_progress', {{4}}, {{now}} + {{5}}, \
                 {{now}} + {{6}}, {{now}}, {{now}} FROM bounded_wait\
                 {on_conflict}) \
                 SELECT claimed.claim_token, CASE WHEN claimed.claim_token IS NOT NULL \
                 THEN set_config('lock_timeout', session.lock_timeout, true) END \
                 FROM session LEFT JOIN claimed ON true"
            ),
        };
        Ok(RecordStore {
            table: table.into(),
            sql: Arc::new(Statements {
                claim: sql(&claim),
                claim_in_transaction: sql(&claim_in_transaction),
                read: sql(
                    "SELECT fingerprint, status, claim_token, lease_expires_at, expires_at, \
                     response_status, response_content_type, response_body, response_headers, \
                     updated_at, {now} AS db_now \
                     FROM {t} WHERE scope = {1} AND idem_key = {2}",
                ),
                reclaim: sql("UPDATE {t} SET fingerprint = {1}, status = 'in_progress', \
                     claim_token = {2}, lease_expires_at = {now} + {3}, \
                     expires_at = {now} + {4}, created_at = {now}, updated_at = {now}, \
                     response_status = NULL, response_content_type = NULL, response_body = NULL, \
                     response_headers = NULL \
                     WHERE scope = {5} AND idem_key = {6} AND claim_token = {7} \
                     AND status = {8} AND (expires_at + {9} <= {now} OR status = 'failed' \
                     OR (status = 'in_progress' AND lease_expires_at + {10} <= {now}))"),
                finish: sql(finish),
                complete: sql(&format!("{finish}{in_transaction}")),
                release: sql(release),
                purge: sql(purge),
            }),
        })
    }

    /// The table's name.
    pub(crate) fn table(&self) -> &str {
        &self.table
    }

    fn statements(&self) -> [(&'static str, &Arc<str>); 8] {
        [
            ("claim", &self.sql.claim),
            ("claim in transaction", &self.sql.claim_in_transaction),
            ("read", &self.sql.read),
            ("reclaim", &self.sql.reclaim),
            ("finish", &self.sql.finish),
            ("complete", &self.sql.complete),
            ("release", &self.sql.release),
            ("purge", &self.sql.purge),
        ]
    }

    /// Inserts an in-progress record unless `(scope, idem_key)` exists;
    /// `true` when this statement inserted it. Never an affected-row count:
    /// the claim token coming back (SQLite, PostgreSQL) or the absence of a
    /// unique violation (MySQL) says who owns the key.
    pub(crate) async fn claim<'e>(
        &self,
        executor: impl sqlx::Executor<'e, Database = Db>,
        claim: &NewClaim<'_>,
    ) -> Result<bool, sqlx::Error> {
        self.insert_claim(executor, self.sql.claim.clone(), None, claim)
            .await
    }

    /// [`RecordStore::claim`] in the open business transaction on
    /// `executor`, waiting at most `wait` (MySQL: in whole seconds, at
    /// least one) for another transaction that holds a claim of the key
    /// to end. A wait that runs out is an error that
    /// [`crate::db::classify`] calls a lost race.
    pub(crate) async fn claim_in_transaction<'e>(
        &self,
        executor: impl sqlx::Executor<'e, Database = Db>,
        claim: &NewClaim<'_>,
        wait: Duration,
    ) -> Result<bool, sqlx::Error> {
        match Dialect::BUILT {
            Dialect::Mysql => {
                let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
                let sql = format!(
                    "SET STATEMENT innodb_lock_wait_timeout = {seconds} FOR {}",
                    self.sql.claim_in_transaction
                );
                self.insert_claim(executor, sql.into(), None, claim).await
            }
            Dialect::Postgres => {
                let millis = wait.as_millis().max(1);
                let timeout = format!("{millis}ms");
                let sql = self.sql.claim_in_transaction.clone();
                self.insert_claim(executor, sql, Some(timeout), claim).await
            }
            Dialect::Sqlite => {
                let sql = self.sql.claim_in_transaction.clone();
                self.insert_claim(executor, sql, None, claim).await
            }
        }
    }

    /// Ends the bounded wait [`RecordStore::claim_in_transaction`] set for
    /// the rest of its transaction (PostgreSQL), so that the business step
    /// waits for locks as long as the session would. A claim that inserted
    /// its record has ended it already.
    pub(crate) async fn end_claim_wait(
        &self,
        connection: &mut <Db as sqlx::Database>::Connection,
    ) -> Result<(), sqlx::Error> {
        if Dialect::BUILT == Dialect::Postgres {
            sqlx::raw_sql("SET LOCAL lock_timeout TO DEFAULT")
                .execute(connection)
                .await?;
        }
        Ok(())
    }

    async fn insert_claim<'e>(
        &self,
        executor: impl sqlx::Executor<'e, Database = Db>,
        sql: Arc<str>,
        lock_timeout: Option<String>,
        claim: &NewClaim<'_>,
    ) -> Result<bool, sqlx::Error> {
        let query = |sql: &Arc<str>| {
            let query = sqlx::query(AssertSqlSafe(sql.clone()))
                .bind(claim.scope)
                .bind(claim.key)
                .bind(claim.fingerprint)
                .bind(claim.token)
                .bind(claim.lease_ms)
                .bind(claim.window_ms);
            match &lock_timeout {
                Some(timeout) => query.bind(timeout.clone()),
                None => query,
            }
        };
        if Dialect::BUILT == Dialect::Mysql {
            return match query(&sql).execute(executor).await {
                Ok(_) => Ok(true),
                Err(sqlx::Error::Database(error)) if error.is_unique_violation() => Ok(false),
                Err(error) => Err(error),
            };
        }
        // No row, or (the claim in a transaction) a row whose token is
        // NULL: the key was taken.
        let inserted: Option<Option<String>> = query(&sql)
            .fetch_optional(executor)
            .await?
            .map(|row| row.try_get(0))
            .transpose()?;
        Ok(inserted.flatten().as_deref() == Some(claim.token))
    }

    pub(crate) async fn read<'e>(
        &self,
        executor: impl sqlx::Executor<'e, Database = Db>,
        scope: &str,
        key: &str,
    ) -> Result<Option<Record>, sqlx::Error> {
        let Some(row) = sqlx::query(AssertSqlSafe(self.sql.read.clone()))
            .bind(scope)
            .bind(key)
            .fetch_optional(executor)
            .await?
        else {
            return Ok(None);
        };
        let response_status: Option<i16> = row.try_get("response_status")?;
        Ok(Some(Record {
            fingerprint: row.try_get("fingerprint")?,
            status: row.try_get("status")?,
            claim_token: row.try_get("claim_token")?,
            lease_expires_at: row.try_get("lease_expires_at")?,
            expires_at: row.try_get("expires_at")?,
            response_status: response_status.and_then(|status| u16::try_from(status).ok()),
            response_content_type: row.try_get("response_content_type")?,
            response_body: row.try_get("response_body")?,
            response_headers: row.try_get("response_headers")?,
            updated_at: row.try_get("updated_at")?,
            db_now: row.try_get("db_now")?,
        }))
    }

    /// Claims an expired, failed or abandoned record if it is still as read
    /// (same claim token and status); the caller reads the token back.
    pub(crate) async fn reclaim<'e>(
        &self,
        executor: impl sqlx::Executor<'e, Database = Db>,
        reclaim: &Reclaim<'_>,
    ) -> Result<(), sqlx::Error> {
        let claim = &reclaim.claim;
        sqlx::query(AssertSqlSafe(self.sql.reclaim.clone()))
            .bind(claim.fingerprint)
            .bind(claim.token)
            .bind(claim.lease_ms)
            .bind(claim.window_ms)
            .bind(claim.scope)
            .bind(claim.key)
            .bind(reclaim.old_token)
            .bind(reclaim.old_status)
            .bind(reclaim.margin_ms)
            .bind(reclaim.margin_ms)
            .execute(executor)
            .await?;
        Ok(())
    }

    /// Stores the outcome, on its own (autocommit), if this attempt still
    /// holds the claim; `false` when its lease was taken over (then nothing
    /// was written).
    pub(crate) async fn finish<'e>(
        &self,
        executor: impl sqlx::Executor<'e, Database = Db>,
        finish: &Finish<'_>,
    ) -> Result<bool, sqlx::Error> {
        self.store_outcome(&self.sql.finish, executor, finish).await
    }

    /// [`RecordStore::finish`] inside the business transaction, which must
    /// still be open (MySQL, PostgreSQL): `false` also when business code
    /// ended it.
    pub(crate) async fn complete<'e>(
        &self,
        executor: impl sqlx::Executor<'e, Database = Db>,
        finish: &Finish<'_>,
    ) -> Result<bool, sqlx::Error> {
        self.store_outcome(&self.sql.complete, executor, finish)
            .await
    }

    /// Whether the business transaction on `connection` is still open,
    /// where the completion statement could not tell: PostgreSQL refuses a
    /// savepoint outside a transaction block (25P01). One round trip, taken
    /// only when the completion matched no row.
    pub(crate) async fn transaction_is_open(
        &self,
        connection: &mut <Db as sqlx::Database>::Connection,
    ) -> Result<bool, sqlx::Error> {
        if Dialect::BUILT != Dialect::Postgres {
            return Ok(true);
        }
        match sqlx::raw_sql("SAVEPOINT idemgen_complete")
            .execute(connection)
            .await
        {
            Ok(_) => Ok(true),
            Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some("25P01") => {
                Ok(false)
            }
            Err(error) => Err(error),
        }
    }

    async fn store_outcome<'e>(
        &self,
        sql: &Arc<str>,
        executor: impl sqlx::Executor<'e, Database = Db>,
        finish: &Finish<'_>,
    ) -> Result<bool, sqlx::Error> {
        let status = i16::try_from(finish.reply.status.as_u16()).unwrap_or(500);
        let result = sqlx::query(AssertSqlSafe(sql.clone()))
            .bind(finish.status)
            .bind(status)
            .bind(finish.reply.content_type.as_str())
            .bind(finish.reply.body.as_slice())
            .bind(crate::response_headers::encode(&finish.reply.headers))
            .bind(finish.scope)
            .bind(finish.key)
            .bind(finish.token)
            .execute(executor)
            .await?;
        Ok(result.rows_affected() == 1)
    }

    /// Ends this attempt's lease now, so that a retry may take the key over
    /// at once; nothing is recorded. `false` when the claim is no longer
    /// this attempt's.
    pub(crate) async fn release(
        &self,
        pool: &Pool,
        scope: &str,
        key: &str,
        token: &str,
        margin_ms: i64,
    ) -> Result<bool, sqlx::Error> {
        let result = sqlx::query(AssertSqlSafe(self.sql.release.clone()))
            .bind(margin_ms)
            .bind(scope)
            .bind(key)
            .bind(token)
            .execute(pool)
            .await?;
        Ok(result.rows_affected() == 1)
    }

    /// How many records the table holds, and how many of them are in
    /// progress `margin_ms` past their lease (their first attempt died or
    /// hangs). Run by the purge task, and cheap on a table of tens of
    /// millions of records: on MySQL and SQLite the records past their
    /// lease are found through the in-progress index (migration
    /// `20261205000000_record_in_progress`); on MySQL and PostgreSQL a
    /// table the database estimates at [`CENSUS_EXACT_BELOW`] records or
    /// more is given that estimate rather than counted, and on PostgreSQL
    /// such a table's records past their lease are not counted (-1).
    pub(crate) async fn census(&self, pool: &Pool, margin_ms: i64) -> Result<(i64, i64), sqlx::Error> {
        let t = &self.table;
        let exact = format!("(SELECT COUNT(*) FROM {t})");
        let records = match Dialect::BUILT {
            Dialect::Sqlite => exact,
            // InnoDB's row estimate, refreshed by its statistics.
            Dialect::Mysql => format!(
                "COALESCE((SELECT CAST(TABLE_ROWS AS SIGNED) FROM information_schema.TABLES \
                 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{t}' \
                 AND TABLE_ROWS >= {CENSUS_EXACT_BELOW}), {exact})"
            ),
            // The planner's estimate; -1 until the table is first analyzed.
            Dialect::Postgres => format!(
                "COALESCE((SELECT CAST(reltuples AS BIGINT) FROM pg_class \
                 WHERE oid = to_regclass('{t}') AND reltuples >= {CENSUS_EXACT_BELOW}), {exact})"
            ),
        };
        let now = db_now(Dialect::BUILT);
        let counted = format!(
            "(SELECT COUNT(*) FROM {t} WHERE status = 'in_progress' \
             AND lease_expires_at < {now} - {{1}})"
        );
        let past_lease = match Dialect::BUILT {
            Dialect::Sqlite | Dialect::Mysql => counted,
            // PostgreSQL's index holds every lease (a status predicate would
            // cost each completing update its HOT): the records past their
            // lease are found only by reading the table, so a large one is
            // not counted (-1: no sample); `newly_stuck` still is.
            Dialect::Postgres => format!(
                "COALESCE((SELECT -1 FROM pg_class WHERE oid = to_regclass('{t}') \
                 AND reltuples >= {CENSUS_EXACT_BELOW}), {counted})"
            ),
        };
        let sql = placeholders(
            Dialect::BUILT,
            &format!("SELECT {records} AS records, {past_lease} AS past_lease"),
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(margin_ms)
            .fetch_one(pool)
            .await?;
        Ok((row.try_get("records")?, row.try_get("past_lease")?))
    }

    /// How many records in progress saw their lease end, `margin_ms` ago
    /// by the database's clock, at or after `since` (a bound this returned
    /// before; `None` counts none, and only sets the bound): records that
    /// got stuck since the last look. Also the new bound. Found through the
    /// index of migration `20261205000000_record_in_progress` (a range of
    /// leases one purge interval long), and run before the purge, so that
    /// a record is counted however soon its window ends and the purge
    /// deletes it.
    pub(crate) async fn newly_stuck(
        &self,
        pool: &Pool,
        margin_ms: i64,
        since: Option<i64>,
    ) -> Result<(i64, i64), sqlx::Error> {
        let sql = placeholders(
            Dialect::BUILT,
            &format!(
                "SELECT {now} - {{1}} AS bound, \
                 (SELECT COUNT(*) FROM {t} WHERE status = 'in_progress' \
                 AND lease_expires_at < {now} - {{2}} AND lease_expires_at >= {{3}}) AS stuck",
                now = db_now(Dialect::BUILT),
                t = self.table,
            ),
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(margin_ms)
            .bind(margin_ms)
            .bind(since.unwrap_or(i64::MAX))
            .fetch_one(pool)
            .await?;
        Ok((row.try_get("stuck")?, row.try_get("bound")?))
    }

    /// Deletes up to `batch` records whose window and lease have both
    /// ended, `margin_ms` ago, by the database's clock.
    pub(crate) async fn purge(
        &self,
        pool: &Pool,
        margin_ms: i64,
        batch: i64,
    ) -> Result<u64, sqlx::Error> {
        let result = sqlx::query(AssertSqlSafe(self.sql.purge.clone()))
            .bind(margin_ms)
            .bind(margin_ms)
            .bind(batch)
            .execute(pool)
            .await?;
        Ok(result.rows_affected())
    }
}

/// The database's clock as Unix milliseconds, in SQL.
fn db_now(dialect: Dialect) -> &'static str {
    match dialect {
        // Julian days to Unix ms; 'now' is fixed for one statement.
        Dialect::Sqlite => "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)",
        // UTC_TIMESTAMP and TIMESTAMPDIFF do no time-zone conversion, so the
        // session's time zone and daylight saving cannot shift it.
        Dialect::Mysql => {
            "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)"
        }
        // clock_timestamp(), not now(): the time of the statement, not of
        // the transaction's start.
        Dialect::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
    }
}

/// Replaces `{n}` with the dialect's n-th placeholder: `?n` on SQLite, `?`
/// on MySQL, `$n` on PostgreSQL.
fn placeholders(dialect: Dialect, template: &str) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = open + rest[open..].find('}').expect("placeholders are closed");
        let number = &rest[open + 1..close];
        match dialect {
            Dialect::Sqlite => out.push_str(&format!("?{number}")),
            Dialect::Mysql => out.push('?'),
            Dialect::Postgres => out.push_str(&format!("${number}")),
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_identifiers_name_a_table() {
        for good in ["idempotent_record", "_r", "Records2"] {
            assert!(is_plain_identifier(good), "{good}");
        }
        for bad in [
            "",
            "2records",
            "rec-ords",
            "r; DROP TABLE x",
            "\"quoted\"",
            "é",
        ] {
            assert!(!is_plain_identifier(bad), "{bad}");
            assert!(matches!(
                RecordStore::unchecked(bad),
                Err(StoreError::BadTableName(_))
            ));
        }
        assert!(!is_plain_identifier(&"r".repeat(64)));
    }

    /// PostgreSQL re-checks only the DELETE's own WHERE against a row
    /// updated while the purge waited (READ COMMITTED): the expiry test
    /// must be there, outside the subquery, and not only inside it.
    #[test]
    fn the_purge_tests_expiry_on_the_row_it_deletes() {
        let store = RecordStore::unchecked("records").unwrap();
        let purge = &*store.sql.purge;
        let limit = purge.find("LIMIT").expect("the purge is batched");
        // The subquery ends after its LIMIT; MySQL has no subquery.
        let Some(close) = purge[limit..].find(')') else {
            assert!(Dialect::BUILT == Dialect::Mysql, "{purge}");
            return;
        };
        let outer = &purge[limit + close..];
        assert!(
            outer.contains("expires_at <") && outer.contains("lease_expires_at <"),
            "{purge}"
        );
    }

    #[test]
    fn placeholders_follow_the_dialect() {
        let template = "a = {1} AND b = {12}";
        assert_eq!(
            placeholders(Dialect::Sqlite, template),
            "a = ?1 AND b = ?12"
        );
        assert_eq!(placeholders(Dialect::Mysql, template), "a = ? AND b = ?");
        assert_eq!(
            placeholders(Dialect::Postgres, template),
            "a = $1 AND b = $12"
        );
    }
}
