-- Copied from examples/payment-callback/migrations/postgres/, created only when missing.
-- Idempotency records: one row per (scope, key). Keys are compared as
-- case-sensitive bytes (COLLATE "C"); times are Unix milliseconds.
CREATE TABLE IF NOT EXISTS idempotent_record (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope VARCHAR(64) COLLATE "C" NOT NULL,
    idem_key VARCHAR(128) COLLATE "C" NOT NULL,
    fingerprint VARCHAR(64) NOT NULL,
    status VARCHAR(16) NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed')),
    claim_token VARCHAR(36) NOT NULL,
    lease_expires_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    response_status SMALLINT,
    response_content_type VARCHAR(255),
    response_body BYTEA,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    CONSTRAINT uq_idempotent_record_scope_key UNIQUE (scope, idem_key)
);
CREATE INDEX IF NOT EXISTS ix_idempotent_record_expires_at ON idempotent_record (expires_at);

-- The business tables of the payment-callback example.
CREATE TABLE IF NOT EXISTS orders (
    order_no VARCHAR(64) NOT NULL PRIMARY KEY,
    amount BIGINT NOT NULL CHECK (amount > 0),
    status VARCHAR(8) NOT NULL DEFAULT 'UNPAID' CHECK (status IN ('UNPAID', 'PAID')),
    txn_id VARCHAR(64),
    paid_at BIGINT
);

-- One row per payment actually applied: the article's double payments
-- would show up here as two rows for one order.
CREATE TABLE IF NOT EXISTS paid_log (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_no VARCHAR(64) NOT NULL REFERENCES orders (order_no),
    txn_id VARCHAR(64) NOT NULL,
    amount BIGINT NOT NULL,
    paid_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_paid_log_order_no ON paid_log (order_no);
