-- Copied from examples/payment-callback/migrations/mysql/, created only when missing.
-- Idempotency records: one row per (scope, key). Keys are compared as
-- case-sensitive bytes (VARBINARY); times are Unix milliseconds.
CREATE TABLE IF NOT EXISTS idempotent_record (
    id BIGINT NOT NULL AUTO_INCREMENT,
    scope VARBINARY(64) NOT NULL,
    idem_key VARBINARY(128) NOT NULL,
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
    UNIQUE KEY uq_idempotent_record_scope_key (scope, idem_key),
    KEY ix_idempotent_record_expires_at (expires_at),
    CONSTRAINT ck_idempotent_record_status CHECK (status IN ('in_progress', 'completed', 'failed'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The business tables of the payment-callback example.
CREATE TABLE IF NOT EXISTS orders (
    order_no VARCHAR(64) NOT NULL,
    amount BIGINT NOT NULL,
    status VARCHAR(8) NOT NULL DEFAULT 'UNPAID',
    txn_id VARCHAR(64) NULL,
    paid_at BIGINT NULL,
    PRIMARY KEY (order_no),
    CONSTRAINT ck_orders_amount CHECK (amount > 0),
    CONSTRAINT ck_orders_status CHECK (status IN ('UNPAID', 'PAID'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row per payment actually applied: the article's double payments
-- would show up here as two rows for one order.
CREATE TABLE IF NOT EXISTS paid_log (
    id BIGINT NOT NULL AUTO_INCREMENT,
    order_no VARCHAR(64) NOT NULL,
    txn_id VARCHAR(64) NOT NULL,
    amount BIGINT NOT NULL,
    paid_at BIGINT NOT NULL,
    PRIMARY KEY (id),
    KEY ix_paid_log_order_no (order_no),
    CONSTRAINT fk_paid_log_order FOREIGN KEY (order_no) REFERENCES orders (order_no)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
