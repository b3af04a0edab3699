//! The SQL of a generated service, per dialect: the record table's DDL.
//! The statements that use the table are the `idemgen-runtime` crate's.
//!
//! The table is its first `CREATE TABLE` followed by the changes made to
//! it since, in order. A generated service applies them as migrations
//! and refuses to start when one it already applied has changed, so the
//! first (`0001_…`) is never edited: a change is a new one, which is also
//! what brings a table created before it up to date. A change's version is
//! the date it was made (`20261204000000_…`), never the next small number:
//! projects number their own migrations `0002_…` onwards, and sqlx refuses
//! two migrations of one version.

use idemgen_spec::contract::model::Dialect;

/// One change to the record table after its creation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alteration {
    /// The migration's file name without `.sql`: `20261204000000_record_response_headers`.
    pub stem: &'static str,
    /// Comment lines and the statement, ready to run.
    pub sql: String,
}

/// The whole record table as a new one gets it: [`create_table`], then
/// every [`alterations`] statement.
pub fn ddl(dialect: Dialect, table: &str, key_width: u64) -> String {
    let mut sql = create_table(dialect, table, key_width);
    for alteration in alterations(dialect, table) {
        sql.push('\n');
        sql.push_str(&alteration.sql);
    }
    sql
}

/// The changes since the first `CREATE TABLE`, oldest first; each one,
/// run alone, brings a table created before it up to date.
pub fn alterations(dialect: Dialect, table: &str) -> Vec<Alteration> {
    let headers_type = match dialect {
        Dialect::Mysql => "MEDIUMBLOB NULL",
        Dialect::Postgres => "BYTEA",
        Dialect::Sqlite => "BLOB",
    };
    // PostgreSQL and SQLite index the in-progress records alone (a few:
    // the attempts running, and those stuck); MySQL has no partial index.
    let in_progress_index = match dialect {
        Dialect::Mysql => {
            format!("CREATE INDEX ix_{table}_in_progress ON {table} (status, lease_expires_at);")
        }
        // Every lease, not only those in progress: an index whose rows
        // depend on `status` makes each completing update a non-HOT one,
        // writing an entry in every index of the table (WAL 1.38x a first
        // write) and, under SERIALIZABLE, into the index pages concurrent
        // completions read, so that they abort each other.
        Dialect::Postgres => {
            format!("CREATE INDEX ix_{table}_lease_expires_at ON {table} (lease_expires_at);")
        }
        Dialect::Sqlite => format!(
            "CREATE INDEX ix_{table}_in_progress ON {table} (lease_expires_at) \
             WHERE status = 'in_progress';"
        ),
    };
    let in_progress_comment = match dialect {
        Dialect::Postgres => {
            "-- The records by when their lease ends: the purge task counts those that got
-- stuck in progress since its last look without reading the table. No
-- predicate on status, so that a completing update stays heap-only (HOT)."
        }
        Dialect::Mysql | Dialect::Sqlite => {
            "-- The records in progress, by when their lease ends: the purge task counts
-- those past it (records stuck in progress) without reading the table."
        }
    };
    vec![
        Alteration {
            stem: "20261204000000_record_response_headers",
            sql: format!(
                "-- The headers a stored answer is replayed with besides its content type (the
-- ones the spec declares on that response; never Set-Cookie, Date or the
-- server's own): an HTTP/1.1 field block, `name: value` lines ending in CRLF,
-- names in lower case; NULL for none. Run alone on a table created before.
ALTER TABLE {table} ADD COLUMN response_headers {headers_type};
"
            ),
        },
        Alteration {
            stem: "20261205000000_record_in_progress",
            sql: format!(
                "{in_progress_comment}
{in_progress_index}
"
            ),
        },
    ]
}

/// The record table and its purge index as first created: migration
/// `0001`, never edited.
pub fn create_table(dialect: Dialect, table: &str, key_width: u64) -> String {
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
