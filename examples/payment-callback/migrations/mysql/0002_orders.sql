-- The business tables of the payment-callback example.
CREATE TABLE orders (
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
CREATE TABLE paid_log (
    id BIGINT NOT NULL AUTO_INCREMENT,
    order_no VARCHAR(64) NOT NULL,
    txn_id VARCHAR(64) NOT NULL,
    amount BIGINT NOT NULL,
    paid_at BIGINT NOT NULL,
    PRIMARY KEY (id),
    KEY ix_paid_log_order_no (order_no),
    CONSTRAINT fk_paid_log_order FOREIGN KEY (order_no) REFERENCES orders (order_no)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
