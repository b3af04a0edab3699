#!/usr/bin/env bash
# What the in-progress index (migration 20261205000000_record_in_progress)
# costs each first write, on MariaDB and PostgreSQL: two record tables made
# by the example's migrations, one without that index and one with it, take
# the same first writes in turns, in one run: the claim's INSERT (committed
# alone) and the completing UPDATE (committed alone), as the engine sends
# them. Prints, per table, the milliseconds per round and the redo/WAL bytes
# per write, and their ratio with / without.
#
#   scripts/index-write-cost.sh [writes per round, default 2000] [rounds, default 3]
#
# Needs `mysql` and `psql`, MariaDB at 127.0.0.1:3306 (root, database test)
# and PostgreSQL at 127.0.0.1:5432 (postgres, database test). The redo and
# WAL positions are the servers', so other writers running meanwhile add to
# both tables' figures: run it on a quiet server, and read the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."

writes=${1:-2000}
rounds=${2:-3}
migrations=examples/payment-callback/migrations

mysql_q() { mysql -h 127.0.0.1 -u root test -N -B -e "$1"; }
psql_q() { psql -h 127.0.0.1 -U postgres -d test -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }

# The example's migrations for `dialect`, the in-progress index included
# when `index` is "with" (the caller renames the table).
ddl() {
    local dialect=$1 index=$2
    cat "$migrations/$dialect/0001_idempotency_records.sql" \
        "$migrations/$dialect/20261204000000_record_response_headers.sql"
    if [[ $index == with ]]; then
        cat "$migrations/$dialect/20261205000000_record_in_progress.sql"
    fi
}

setup_mysql() {
    for index in without with; do
        local table=idx_cost_$index
        mysql_q "DROP TABLE IF EXISTS $table"
        ddl mysql "$index" | sed "s/idempotent_record/$table/g" | mysql -h 127.0.0.1 -u root test
        mysql_q "DROP PROCEDURE IF EXISTS first_writes_$index"
        mysql -h 127.0.0.1 -u root test <<SQL
DELIMITER //
CREATE PROCEDURE first_writes_$index(IN n INT, IN round_no INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  DECLARE now_ms BIGINT;
  WHILE i < n DO
    SET now_ms = CAST(UNIX_TIMESTAMP(UTC_TIMESTAMP(3)) * 1000 AS SIGNED);
    INSERT INTO $table (scope, idem_key, fingerprint, status, claim_token,
      lease_expires_at, expires_at, created_at, updated_at)
      VALUES ('pay', CONCAT('k-', round_no, '-', i), REPEAT('f', 64), 'in_progress',
      UUID(), now_ms + 3000, now_ms + 18000, now_ms, now_ms);
    UPDATE $table SET status = 'completed', response_status = 201,
      response_content_type = 'application/json', response_body = '{"paid":true}',
      response_headers = NULL, updated_at = now_ms
      WHERE scope = 'pay' AND idem_key = CONCAT('k-', round_no, '-', i)
      AND status = 'in_progress';
    SET i = i + 1;
  END WHILE;
END //
DELIMITER ;
SQL
    done
}

setup_postgres() {
    for index in without with; do
        local table=idx_cost_$index
        psql_q "DROP TABLE IF EXISTS $table"
        ddl postgres "$index" | sed "s/idempotent_record/$table/g" \
            | psql -h 127.0.0.1 -U postgres -d test -X -q -v ON_ERROR_STOP=1 >/dev/null
        psql_q "CREATE OR REPLACE PROCEDURE first_writes_$index(n INT, round_no INT)
LANGUAGE plpgsql AS \$\$
DECLARE now_ms BIGINT;
BEGIN
  FOR i IN 0..n - 1 LOOP
    now_ms := (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT;
    INSERT INTO $table (scope, idem_key, fingerprint, status, claim_token,
      lease_expires_at, expires_at, created_at, updated_at)
      VALUES ('pay', 'k-' || round_no || '-' || i, repeat('f', 64), 'in_progress',
      gen_random_uuid()::text, now_ms + 3000, now_ms + 18000, now_ms, now_ms);
    COMMIT;
    UPDATE $table SET status = 'completed', response_status = 201,
      response_content_type = 'application/json', response_body = '{\"paid\":true}',
      response_headers = NULL, updated_at = now_ms
      WHERE scope = 'pay' AND idem_key = 'k-' || round_no || '-' || i
      AND status = 'in_progress';
    COMMIT;
  END LOOP;
END \$\$"
    done
}

# Milliseconds and log bytes of one round on one table.
round_mysql() {
    local index=$1 round=$2 before after start end
    before=$(mysql_q "SHOW GLOBAL STATUS LIKE 'Innodb_lsn_current'" | cut -f2)
    start=$(date +%s%N)
    mysql_q "CALL first_writes_$index($writes, $round)"
    end=$(date +%s%N)
    after=$(mysql_q "SHOW GLOBAL STATUS LIKE 'Innodb_lsn_current'" | cut -f2)
    echo "$(((end - start) / 1000000)) $((after - before))"
}

round_postgres() {
    local index=$1 round=$2 before after start end
    before=$(psql_q "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn")
    start=$(date +%s%N)
    psql_q "CALL first_writes_$index($writes, $round)"
    end=$(date +%s%N)
    after=$(psql_q "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn")
    echo "$(((end - start) / 1000000)) $((after - before))"
}

measure() {
    local db=$1 ms_without=0 ms_with=0 bytes_without=0 bytes_with=0
    for round in $(seq 1 "$rounds"); do
        # Alternate which table goes first, so neither always meets a
        # warmer cache.
        local order="without with"
        ((round % 2 == 0)) && order="with without"
        for index in $order; do
            read -r ms bytes < <("round_$db" "$index" "$round")
            echo "$db round $round $index: $ms ms, $((bytes / writes)) log bytes per write"
            if [[ $index == with ]]; then
                ms_with=$((ms_with + ms)) bytes_with=$((bytes_with + bytes))
            else
                ms_without=$((ms_without + ms)) bytes_without=$((bytes_without + bytes))
            fi
        done
    done
    local total=$((writes * rounds))
    awk -v db="$db" -v t="$total" -v mw="$ms_with" -v mo="$ms_without" \
        -v bw="$bytes_with" -v bo="$bytes_without" 'BEGIN {
        printf "%s: %d first writes per table; without the index %.3f ms and %d log bytes per write, with it %.3f ms and %d bytes: time %.3fx, log %.3fx\n",
            db, t, mo / t, bo / t, mw / t, bw / t, mw / mo, bw / bo
    }'
}

cleanup() {
    mysql_q "DROP TABLE IF EXISTS idx_cost_without, idx_cost_with; \
        DROP PROCEDURE IF EXISTS first_writes_without; DROP PROCEDURE IF EXISTS first_writes_with" || true
    psql_q "DROP TABLE IF EXISTS idx_cost_without, idx_cost_with; \
        DROP PROCEDURE IF EXISTS first_writes_without; DROP PROCEDURE IF EXISTS first_writes_with" || true
}
trap cleanup EXIT

setup_mysql
setup_postgres
measure mysql
measure postgres
# PostgreSQL updates a row in place (HOT, no new index entries) only when
# the update changes no indexed column, the partial index's predicate
# included: how many of the completing updates were.
for index in without with; do
    psql_q "SELECT 'postgres $index: ' || n_tup_upd || ' updates, ' || n_tup_hot_upd || ' HOT' \
        FROM pg_stat_user_tables WHERE relname = 'idx_cost_$index'"
done
