-- Copied from examples/payment-callback/migrations/sqlite/, created only when missing.
-- Idempotency records: one row per (scope, key). Keys are compared as
-- case-sensitive bytes (BINARY collation); times are Unix milliseconds.
CREATE TABLE IF NOT EXISTS idempotent_record (
    id INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    idem_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed')),
    claim_token TEXT NOT NULL,
    lease_expires_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    response_status INTEGER,
    response_content_type TEXT,
    response_body BLOB,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CONSTRAINT uq_idempotent_record_scope_key UNIQUE (scope, idem_key)
);
CREATE INDEX IF NOT EXISTS ix_idempotent_record_expires_at ON idempotent_record (expires_at);

-- The business tables of the payment-callback example.
CREATE TABLE IF NOT EXISTS orders (
    order_no TEXT NOT NULL PRIMARY KEY,
    amount INTEGER NOT NULL CHECK (amount > 0),
    status TEXT NOT NULL DEFAULT 'UNPAID' CHECK (status IN ('UNPAID', 'PAID')),
    txn_id TEXT,
    paid_at INTEGER
);

-- One row per payment actually applied: the article's double payments
-- would show up here as two rows for one order.
CREATE TABLE IF NOT EXISTS paid_log (
    id INTEGER PRIMARY KEY,
    order_no TEXT NOT NULL REFERENCES orders (order_no),
    txn_id TEXT NOT NULL,
    amount INTEGER NOT NULL,
    paid_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_paid_log_order_no ON paid_log (order_no);
