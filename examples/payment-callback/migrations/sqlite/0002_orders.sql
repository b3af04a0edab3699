-- The business tables of the payment-callback example.
CREATE TABLE orders (
    order_no TEXT NOT NULL PRIMARY KEY,
    amount INTEGER NOT NULL CHECK (amount > 0),
    status TEXT NOT NULL DEFAULT 'UNPAID' CHECK (status IN ('UNPAID', 'PAID')),
    txn_id TEXT,
    paid_at INTEGER
);

-- One row per payment actually applied: the article's double payments
-- would show up here as two rows for one order.
CREATE TABLE paid_log (
    id INTEGER PRIMARY KEY,
    order_no TEXT NOT NULL REFERENCES orders (order_no),
    txn_id TEXT NOT NULL,
    amount INTEGER NOT NULL,
    paid_at INTEGER NOT NULL
);
CREATE INDEX ix_paid_log_order_no ON paid_log (order_no);
