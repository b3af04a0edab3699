//! The SQL of a generated service, per dialect: the record table's DDL and
//! the fixed-shape queries of the idempotency layer.
//!
//! The queries differ between services only in the table name, so their
//! sqlx describe data (see [`super::offline`]) can be computed without a
//! database. Placeholders are `?1…` on SQLite, `?` on MySQL and `$1…` on
//! PostgreSQL, which also keeps every dialect's SQL text (and so its
//! offline-data hash) distinct inside one generated project.

use crate::contract::model::Dialect;

/// Every query the idempotency layer runs, in a fixed order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryKind {
    /// Insert an in-progress record unless `(scope, idem_key)` exists.
    Claim,
    /// Read a record back (who holds it, in which state).
    Read,
    /// Take over an expired, failed or abandoned record, fenced on the
    /// claim token and status that were read.
    Reclaim,
    /// Store the outcome, fenced on this attempt's claim token.
    Finish,
    /// Delete a batch of expired records.
    Purge,
}

impl QueryKind {
    pub const ALL: [QueryKind; 5] = [
        QueryKind::Claim,
        QueryKind::Read,
        QueryKind::Reclaim,
        QueryKind::Finish,
        QueryKind::Purge,
    ];

    pub fn name(self) -> &'static str {
        match self {
            QueryKind::Claim => "claim",
            QueryKind::Read => "read",
            QueryKind::Reclaim => "reclaim",
            QueryKind::Finish => "finish",
            QueryKind::Purge => "purge",
        }
    }
}

/// Every dialect, in the order generated projects list them.
pub const DIALECTS: [Dialect; 3] = [Dialect::Sqlite, Dialect::Mysql, Dialect::Postgres];

/// The SQL text of `kind` for `table`, exactly as the generated code passes
/// it to `sqlx::query!`.
pub fn query(dialect: Dialect, kind: QueryKind, table: &str) -> String {
    let template = match kind {
        QueryKind::Claim => {
            let on_conflict = match dialect {
                // A plain INSERT: a duplicate is a unique violation, which
                // the caller classifies (affected rows cannot tell on MySQL).
                Dialect::Mysql => "",
                // The token comes back only when this statement inserted.
                Dialect::Postgres | Dialect::Sqlite => {
                    " ON CONFLICT (scope, idem_key) DO NOTHING RETURNING claim_token"
                }
            };
            format!(
                "INSERT INTO {{t}} (scope, idem_key, fingerprint, status, claim_token, \
                 lease_expires_at, expires_at, created_at, updated_at) \
                 VALUES ({{1}}, {{2}}, {{3}}, 'in_progress', {{4}}, {{5}}, {{6}}, {{7}}, {{8}})\
                 {on_conflict}"
            )
        }
        QueryKind::Read => {
            "SELECT fingerprint, status, claim_token, lease_expires_at, expires_at, \
             response_status, response_content_type, response_body \
             FROM {t} WHERE scope = {1} AND idem_key = {2}"
                .to_string()
        }
        QueryKind::Reclaim => "UPDATE {t} SET fingerprint = {1}, status = 'in_progress', \
             claim_token = {2}, lease_expires_at = {3}, expires_at = {4}, created_at = {5}, \
             updated_at = {6}, response_status = NULL, response_content_type = NULL, \
             response_body = NULL \
             WHERE scope = {7} AND idem_key = {8} AND claim_token = {9} AND status = {10} \
             AND (expires_at <= {11} OR status = 'failed' \
             OR (status = 'in_progress' AND lease_expires_at <= {12}))"
            .to_string(),
        QueryKind::Finish => "UPDATE {t} SET status = {1}, response_status = {2}, \
             response_content_type = {3}, response_body = {4}, updated_at = {5} \
             WHERE scope = {6} AND idem_key = {7} AND claim_token = {8} \
             AND status = 'in_progress'"
            .to_string(),
        QueryKind::Purge => match dialect {
            Dialect::Mysql => "DELETE FROM {t} WHERE expires_at < {1} AND lease_expires_at < {2} \
                 ORDER BY expires_at LIMIT {3}"
                .to_string(),
            Dialect::Postgres | Dialect::Sqlite => {
                "DELETE FROM {t} WHERE id IN (SELECT id FROM {t} \
                 WHERE expires_at < {1} AND lease_expires_at < {2} ORDER BY expires_at LIMIT {3})"
                    .to_string()
            }
        },
    };
    placeholders(dialect, &template.replace("{t}", table))
}

/// Replaces `{n}` with the dialect's n-th placeholder.
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

/// The record table and its purge index, ready to run.
pub fn ddl(dialect: Dialect, table: &str, key_width: u64) -> String {
    let check = "CHECK (status IN ('in_progress', 'completed', 'failed'))";
    match dialect {
        Dialect::Mysql => format!(
            "-- Idempotency records: one row per (scope, key). Keys are compared as
-- case-sensitive bytes (VARBINARY); times are Unix milliseconds.
CREATE TABLE {table} (
    id BIGINT NOT NULL AUTO_INCREMENT,
    scope VARBINARY(64) NOT NULL,
    idem_key VARBINARY({key_width}) NOT NULL,
    fingerprint CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    status VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    claim_token CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    lease_expires_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    response_status SMALLINT NULL,
    response_content_type VARCHAR(255) NULL,
    response_body MEDIUMBLOB NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY uq_{table}_scope_key (scope, idem_key),
    KEY ix_{table}_expires_at (expires_at),
    CONSTRAINT ck_{table}_status {check}
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
"
        ),
        Dialect::Postgres => format!(
            "-- Idempotency records: one row per (scope, key). Keys are compared as
-- case-sensitive bytes (COLLATE \"C\"); times are Unix milliseconds.
CREATE TABLE {table} (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope VARCHAR(64) COLLATE \"C\" NOT NULL,
    idem_key VARCHAR({key_width}) COLLATE \"C\" NOT NULL,
    fingerprint VARCHAR(64) NOT NULL,
    status VARCHAR(16) NOT NULL {check},
    claim_token VARCHAR(36) NOT NULL,
    lease_expires_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    response_status SMALLINT,
    response_content_type VARCHAR(255),
    response_body BYTEA,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    CONSTRAINT uq_{table}_scope_key UNIQUE (scope, idem_key)
);
CREATE INDEX ix_{table}_expires_at ON {table} (expires_at);
"
        ),
        Dialect::Sqlite => format!(
            "-- Idempotency records: one row per (scope, key). Keys are compared as
-- case-sensitive bytes (BINARY collation); times are Unix milliseconds.
CREATE TABLE {table} (
    id INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    idem_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status TEXT NOT NULL {check},
    claim_token TEXT NOT NULL,
    lease_expires_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    response_status INTEGER,
    response_content_type TEXT,
    response_body BLOB,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CONSTRAINT uq_{table}_scope_key UNIQUE (scope, idem_key)
);
CREATE INDEX ix_{table}_expires_at ON {table} (expires_at);
"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_per_dialect() {
        let read = |dialect| query(dialect, QueryKind::Read, "rec");
        assert!(read(Dialect::Sqlite).ends_with("WHERE scope = ?1 AND idem_key = ?2"));
        assert!(read(Dialect::Mysql).ends_with("WHERE scope = ? AND idem_key = ?"));
        assert!(read(Dialect::Postgres).ends_with("WHERE scope = $1 AND idem_key = $2"));
    }

    #[test]
    fn every_query_text_is_distinct_across_dialects() {
        let mut seen = std::collections::HashSet::new();
        for dialect in DIALECTS {
            for kind in QueryKind::ALL {
                assert!(seen.insert(query(dialect, kind, "rec")));
            }
        }
    }

    #[test]
    fn claims_name_the_conflict_target() {
        for dialect in [Dialect::Sqlite, Dialect::Postgres] {
            assert!(
                query(dialect, QueryKind::Claim, "rec").contains("ON CONFLICT (scope, idem_key)")
            );
        }
    }
}
