-- The business tables of the payment-callback example.
CREATE TABLE orders (
    order_no VARCHAR(64) NOT NULL PRIMARY KEY,
    amount BIGINT NOT NULL CHECK (amount > 0),
    status VARCHAR(8) NOT NULL DEFAULT 'UNPAID' CHECK (status IN ('UNPAID', 'PAID')),
    txn_id VARCHAR(64),
    paid_at BIGINT
);

-- One row per payment actually applied: the article's double payments
-- would show up here as two rows for one order.
CREATE TABLE paid_log (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_no VARCHAR(64) NOT NULL REFERENCES orders (order_no),
    txn_id VARCHAR(64) NOT NULL,
    amount BIGINT NOT NULL,
    paid_at BIGINT NOT NULL
);
CREATE INDEX ix_paid_log_order_no ON paid_log (order_no);
