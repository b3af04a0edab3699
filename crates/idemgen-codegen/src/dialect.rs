//! The SQL of a generated service, per dialect: the record table's DDL.
//! The statements that use the table are the `idemgen-runtime` crate's.

use idemgen_spec::contract::model::Dialect;

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
