#!/usr/bin/env bash
# Instructions per request of builds of the generated example service,
# counted by callgrind: first-time idempotent writes and replays.
#
#   scripts/callgrind-cost.sh /a/postgres/payment-callback /b/postgres/payment-callback
#
# Each binary runs under `valgrind --tool=callgrind` on a database of its
# own (created on the server of IDEMGEN_TEST_PG_URL or
# IDEMGEN_TEST_MYSQL_URL, by the binary's directory name: `postgres` or
# `mysql`), with the settings the load bench gives it (unsigned callbacks,
# no purge during the run, warnings logged but not the example's one per
# unsigned callback: SERVICE_LOG, default warn,payment_callback::auth=error,
# and the same for payment_callback_one_commit).
# Then, over one keep-alive connection, one request at a time:
#
#   startup   the process starts, migrates, answers /healthz, and WARMUP
#             first writes and WARMUP replays (pool connections, prepared
#             statements, lazily built state);
#   first     REQUESTS first-time writes (new key, new order);
#   replay    REQUESTS replays of those keys;
#
# `callgrind_control --dump` closes each phase (a dump zeroes the
# counters), so each phase's total counts only its own work, in every
# thread of the process: the startup and the idle time around the phases
# are not in the figures. Instructions per request = the phase's Ir /
# REQUESTS. Shutdown is the last dump.
#
# Settings: REQUESTS (default 300), WARMUP (default 20), WORKERS (the
# service's tokio worker threads, TOKIO_WORKER_THREADS; default 1: with
# more, how often workers park, steal and wake each other varies from run
# to run by about 2 % of a request's instructions), OUT (default a new
# temporary directory: the callgrind files, for callgrind_annotate).
# Needs valgrind, curl, python3, and psql or mysql.
#
# COUNT_DB=1 also counts, per request of each phase, what the database
# did, on servers of the run's own: a MariaDB (mariadb-install-db,
# mariadbd) and a PostgreSQL (initdb, pg_ctl; as the postgres OS user when
# run as root) in a temporary directory, on free ports, with the default
# durability (innodb_flush_log_at_trx_commit=1; synchronous_commit and
# fsync on), so that nobody else's statements are counted; PostgreSQL
# loads pg_stat_statements. The IDEMGEN_TEST_*_URL servers are not used,
# and both servers are stopped at the end. Each phase's counters are read
# before and after it, after SETTLE seconds (default 15) without requests,
# since a PostgreSQL backend reports its counts only 10 s after going
# idle (later on a busy machine); a phase's window is its requests and
# that wait. Counted:
#
#   statements   MariaDB: Questions, one counter of the statements
#                clients send, of any kind (a prepared statement's
#                execution one, BEGIN and COMMIT one each). Not a sum of
#                Com_ counters: executing a prepared statement adds to
#                Com_stmt_execute and to its kind's (Com_select,
#                Com_insert, ...), so that sum counts it twice.
#                PostgreSQL: the sum of pg_stat_statements' calls in the
#                service's database (utility statements included).
#   commits      MariaDB: Com_commit (COMMIT statements) and
#                Handler_commit (the server's commits to the engine: one
#                for each statement on a table that succeeds, a read's
#                too, and one for each COMMIT; so it counts statements
#                more than transactions: the fsyncs tell durable
#                commits).
#                PostgreSQL: pg_stat_database's xact_commit of the
#                service's database (each autocommit statement is one).
#   rollbacks    MariaDB: Com_rollback and Handler_rollback (a failed
#                statement's rollback too). PostgreSQL: xact_rollback.
#   log writes   MariaDB: Innodb_log_writes (writes of the redo log).
#                PostgreSQL: pg_stat_wal's wal_write.
#   fsyncs       MariaDB: Innodb_data_fsyncs, every fsync InnoDB makes:
#                the redo log's at each durable commit and the data
#                files' when pages are written back (MariaDB 10.11 has
#                no Innodb_os_log_fsyncs). PostgreSQL:
#                pg_stat_wal's wal_sync, the WAL's fsyncs.
#                Log writes and fsyncs are server-wide: the servers' own
#                background work (InnoDB purge and page flushing, the WAL
#                writer flushing asynchronous commits, autovacuum,
#                checkpoints) is in the figures.
#
# MariaDB counts the reads' own statements and commits: those of two
# reads in a row are subtracted from each phase. PostgreSQL's counts are
# read from another database, whose statements are not counted. The raw
# counter readings (seven numbers each, in the order above; PostgreSQL's
# second commit and rollback figures are 0) are in $OUT/counts.tsv.
# $OUT/N/statements.txt lists the statements PostgreSQL counted for the
# Nth binary, with their calls, over its whole run. PG_BIN (default the
# newest /usr/lib/postgresql/*/bin) names PostgreSQL's programs.
set -euo pipefail

REQUESTS=${REQUESTS:-300}
WARMUP=${WARMUP:-20}
WORKERS=${WORKERS:-1}
SERVICE_LOG=${SERVICE_LOG:-warn,payment_callback::auth=error,payment_callback_one_commit::auth=error}
OUT=${OUT:-$(mktemp -d /tmp/callgrind-cost.XXXXXX)}
COUNT_DB=${COUNT_DB:-0}
SETTLE=${SETTLE:-15}
PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -1)}
mkdir -p "$OUT"

[ $# -ge 1 ] || { sed -n '2,5p' "$0"; exit 2; }

# The client: COUNT requests over one connection, each checked.
# client.py BASE MODE(first|replay) PREFIX FROM COUNT
cat > "$OUT/client.py" <<'PY'
import http.client, sys, uuid, urllib.parse
base, mode, prefix, start, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
url = urllib.parse.urlparse(base)
conn = http.client.HTTPConnection(url.hostname, url.port)
def key(i):
    # The same key for request i in both modes: replays repeat first writes.
    # A version-4 UUID, as the example's keys are, made from the index.
    derived = uuid.uuid5(uuid.NAMESPACE_URL, f"{prefix}-{i}").bytes
    return "pay:20240615:" + str(uuid.UUID(bytes=derived, version=4))
for i in range(start, start + count):
    order = f"{prefix}-{i}"
    body = f'{{"txn_id":"TXN-{order}","order_no":"{order}","amount":100,"date":"20240615"}}'
    conn.request("POST", "/callbacks/pay", body=body,
                 headers={"content-type": "application/json", "Idempotency-Key": key(i)})
    response = conn.getresponse()
    replayed = response.getheader("Idempotent-Replayed") is not None
    answer = response.read()
    if response.status != 200 or replayed != (mode == "replay"):
        sys.exit(f"{mode} {order}: {response.status}, replayed={replayed}: {answer[:300]!r}")
PY

total_ir() { # the Ir total of one callgrind file
    awk '/^(summary|totals):/ { print $2; exit }' "$1"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# What runs must stop, whatever fails: the service under valgrind, then
# the run's own database servers.
service_pid=
servers_dir=
cleanup() {
    [ -z "$service_pid" ] || kill -TERM "$service_pid" 2> /dev/null || true
    [ -z "$servers_dir" ] || stop_servers
}
trap cleanup EXIT

# PostgreSQL refuses to run as root: as root, its programs run as postgres.
as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_servers() { # the dialects the binaries need
    servers_dir=$(mktemp -d /tmp/callgrind-cost-db.XXXXXX)
    chmod 755 "$servers_dir"
    local dialect
    for dialect in "$@"; do
        case $dialect in
            mysql)
                local port dir=$servers_dir/mariadb
                port=$(free_port)
                mkdir "$dir"
                mariadb-install-db --no-defaults --datadir="$dir/data" --user="$(id -un)" \
                    --auth-root-authentication-method=socket --skip-test-db \
                    > "$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; exit 1; }
                mariadbd --no-defaults --user="$(id -un)" --datadir="$dir/data" \
                    --port="$port" --bind-address=127.0.0.1 --socket="$dir/mysqld.sock" \
                    --pid-file="$dir/mysqld.pid" --log-error="$dir/error.log" > /dev/null 2>&1 &
                for _ in $(seq 120); do
                    mysql --no-defaults -uroot --socket="$dir/mysqld.sock" -e 'SELECT 1' > /dev/null 2>&1 && break
                    sleep 0.5
                done
                mysql --no-defaults -uroot --socket="$dir/mysqld.sock" \
                    -e "CREATE USER cost@'%'; GRANT ALL ON *.* TO cost@'%'"
                IDEMGEN_TEST_MYSQL_URL="mysql://cost@127.0.0.1:$port/mysql"
                echo "MariaDB $(mysql --no-defaults -ucost -h127.0.0.1 -P"$port" -N -B -e 'SELECT CONCAT(@@version, ", innodb_flush_log_at_trx_commit=", @@innodb_flush_log_at_trx_commit, ", log_bin=", @@log_bin)') on port $port"
                ;;
            postgres)
                local port dir=$servers_dir/postgres
                port=$(free_port)
                mkdir "$dir"
                [ "$(id -u)" != 0 ] || chown postgres: "$dir"
                (cd / && as_pg "$PG_BIN/initdb" -D "$dir/data" -U postgres --auth=trust) \
                    > "$servers_dir/initdb.log" 2>&1 || { cat "$servers_dir/initdb.log" >&2; exit 1; }
                (cd / && as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
                    -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir -c shared_preload_libraries=pg_stat_statements" \
                    start) > /dev/null
                IDEMGEN_TEST_PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
                psql -X -q "$IDEMGEN_TEST_PG_URL" -c 'CREATE EXTENSION pg_stat_statements'
                echo "PostgreSQL $(psql -X -At "$IDEMGEN_TEST_PG_URL" -c "SELECT current_setting('server_version') || ', synchronous_commit=' || current_setting('synchronous_commit') || ', fsync=' || current_setting('fsync') || ', wal_sync_method=' || current_setting('wal_sync_method')") on port $port"
                ;;
        esac
    done
}

stop_servers() {
    local dir=$servers_dir
    servers_dir=
    if [ -f "$dir/mariadb/mysqld.pid" ]; then
        local pid
        pid=$(cat "$dir/mariadb/mysqld.pid")
        kill -TERM "$pid" 2> /dev/null || true
        while kill -0 "$pid" 2> /dev/null; do sleep 0.2; done
    fi
    if [ -d "$dir/postgres/data" ]; then
        (cd / && as_pg "$PG_BIN/pg_ctl" -D "$dir/postgres/data" -m fast -w stop) > /dev/null 2>&1 || true
    fi
    rm -rf "$dir"
}

# One line of the database's counters: statements, COMMIT statements,
# engine commits, rollback statements, engine rollbacks, log writes,
# fsyncs (PostgreSQL has no second figure of commits or rollbacks: "0").
counters() {
    sleep "$SETTLE"
    "counters_$dialect"
}
counters_mysql() {
    mysql -u"$user" -h"$host" -P"$mport" -N -B -e "SHOW GLOBAL STATUS WHERE Variable_name IN
        ('Questions', 'Com_commit', 'Handler_commit', 'Com_rollback', 'Handler_rollback',
         'Innodb_log_writes', 'Innodb_data_fsyncs')" |
        awk '{ v[$1] = $2 } END { print v["Questions"], v["Com_commit"], v["Handler_commit"],
            v["Com_rollback"], v["Handler_rollback"], v["Innodb_log_writes"], v["Innodb_data_fsyncs"] }'
}
counters_postgres() {
    psql -X -At -F ' ' "$server_url" -c "SELECT
        (SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE dbid = d.oid),
        s.xact_commit, 0, s.xact_rollback, 0, w.wal_write, w.wal_sync
        FROM pg_stat_wal w, pg_database d JOIN pg_stat_database s ON s.datid = d.oid WHERE d.datname = '$db'"
}

# Per request: (after - before - one read's own counts) / REQUESTS.
per_request() { # before after overhead
    awk -v b="$1" -v a="$2" -v o="$3" -v n="$REQUESTS" 'BEGIN {
        split(b, B, " "); split(a, A, " "); split(o, O, " ")
        for (i = 1; i <= 7; i++) printf "%s%.2f", (i > 1 ? "|" : ""), (A[i] - B[i] - O[i]) / n
    }'
}
# A read's own counts on MariaDB: statements, commits and rollbacks of
# the second of two reads in a row (a read writes no log: none of its log
# counts). On PostgreSQL none: the reads are made in another database.
read_cost() { # first second
    [ "$dialect" = mysql ] || { echo 0 0 0 0 0 0 0; return; }
    awk -v a="$2" -v b="$1" 'BEGIN {
        split(a, A, " "); split(b, B, " ")
        for (i = 1; i <= 7; i++) printf "%s%d", (i > 1 ? " " : ""), (i <= 5 ? A[i] - B[i] : 0)
    }'
}

run_one() {
    local binary=$1 index=$2
    local server_url db url port pid
    dialect=$(basename "$(dirname "$binary")")
    db="idem_cg_$$_$index"
    case $dialect in
        postgres)
            server_url=${IDEMGEN_TEST_PG_URL:?set IDEMGEN_TEST_PG_URL}
            psql -q "$server_url" -c "CREATE DATABASE $db"
            url="${server_url%/*}/$db"
            sql() { psql -q "$url" -c "$1"; }
            seed() { sql "INSERT INTO orders (order_no, amount) SELECT '$1-' || n, 100 FROM generate_series(0, $(($2 - 1))) AS n"; }
            drop() { psql -q "$server_url" -c "DROP DATABASE $db"; }
            ;;
        mysql)
            server_url=${IDEMGEN_TEST_MYSQL_URL:?set IDEMGEN_TEST_MYSQL_URL}
            # mysql://user@host:port/database
            local rest=${server_url#mysql://} hostport
            user=${rest%%@*}
            hostport=${rest#*@}
            hostport=${hostport%%/*}
            host=${hostport%:*}
            mport=${hostport##*:}
            mysql -u"$user" -h"$host" -P"$mport" -e "CREATE DATABASE $db"
            url="mysql://$user@$hostport/$db"
            sql() { mysql -u"$user" -h"$host" -P"$mport" "$db" -e "$1"; }
            seed() { sql "INSERT INTO orders (order_no, amount) SELECT CONCAT('$1-', seq), 100 FROM seq_0_to_$(($2 - 1))"; }
            drop() { mysql -u"$user" -h"$host" -P"$mport" -e "DROP DATABASE $db"; }
            ;;
        *)
            echo "$binary: its directory must be postgres or mysql" >&2
            exit 2
            ;;
    esac
    port=$(free_port)
    local out="$OUT/$index"
    mkdir -p "$out"
    LISTEN_ADDR="127.0.0.1:$port" DATABASE_URL="$url" PAYMENT_CALLBACK_INSECURE=1 \
        PURGE_INTERVAL_SECS=3600 RUST_LOG="$SERVICE_LOG" DOWNSTREAM_DELAY_MS=0 TOKIO_WORKER_THREADS="$WORKERS" \
        valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" \
        "$binary" > "$out/service.log" 2>&1 &
    pid=$!
    service_pid=$pid
    local base="http://127.0.0.1:$port"
    for _ in $(seq 600); do
        curl -fs "$base/healthz" > /dev/null && break
        kill -0 "$pid" 2> /dev/null || { cat "$out/service.log" >&2; exit 1; }
        sleep 0.5
    done
    seed W "$WARMUP"
    seed C "$REQUESTS"
    # The example's window is 18 s, shorter than a phase under valgrind:
    # completed keys have it pushed out before they are replayed, as the
    # load bench does.
    local outlast="UPDATE idempotent_record SET expires_at = expires_at + 3600000"
    python3 "$OUT/client.py" "$base" first W 0 "$WARMUP"
    sql "$outlast"
    python3 "$OUT/client.py" "$base" replay W 0 "$WARMUP"
    callgrind_control --dump=startup "$pid" > /dev/null 2>&1
    local read1 read2 overhead before_first after_first before_replay after_replay
    if [ "$COUNT_DB" = 1 ]; then
        read1=$(counters)
        read2=$(counters)
        overhead=$(read_cost "$read1" "$read2")
        before_first=$read2
    fi
    python3 "$OUT/client.py" "$base" first C 0 "$REQUESTS"
    callgrind_control --dump=first "$pid" > /dev/null 2>&1
    [ "$COUNT_DB" != 1 ] || after_first=$(counters)
    sql "$outlast"
    [ "$COUNT_DB" != 1 ] || before_replay=$(counters)
    python3 "$OUT/client.py" "$base" replay C 0 "$REQUESTS"
    callgrind_control --dump=replay "$pid" > /dev/null 2>&1
    [ "$COUNT_DB" != 1 ] || after_replay=$(counters)
    kill -TERM "$pid"
    wait "$pid" || true
    service_pid=
    if [ "$COUNT_DB" = 1 ] && [ "$dialect" = postgres ]; then
        # Which statements, over the whole run (warm-up and set-up included).
        psql -X -At -F ' | ' "$server_url" -c "SELECT calls, regexp_replace(query, '\s+', ' ', 'g')
            FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$db')
            ORDER BY calls DESC" > "$out/statements.txt"
    fi
    drop
    local first replay
    first=$(total_ir "$(grep -l '^desc: Trigger: .*first' "$out"/callgrind.out* | head -1)")
    replay=$(total_ir "$(grep -l '^desc: Trigger: .*replay' "$out"/callgrind.out* | head -1)")
    if [ "$COUNT_DB" != 1 ]; then
        printf '| %s | %s | %d | %d |\n' "$binary" "$dialect" \
            $((first / REQUESTS)) $((replay / REQUESTS))
        return
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$binary" "$dialect" "$read1" "$before_first" \
        "$after_first" "$before_replay" "$after_replay" >> "$OUT/counts.tsv"
    local phase ir counts
    for phase in first replay; do
        if [ "$phase" = first ]; then
            ir=$first counts=$(per_request "$before_first" "$after_first" "$overhead")
        else
            ir=$replay counts=$(per_request "$before_replay" "$after_replay" "$overhead")
        fi
        IFS='|' read -r statements commits engine_commits rollbacks engine_rollbacks writes fsyncs <<< "$counts"
        if [ "$dialect" = mysql ]; then
            commits="$commits / $engine_commits" rollbacks="$rollbacks / $engine_rollbacks"
        fi
        printf '| %s | %s | %s | %d | %s | %s | %s | %s | %s |\n' "$binary" "$dialect" "$phase" \
            $((ir / REQUESTS)) "$statements" "$commits" "$rollbacks" "$writes" "$fsyncs"
    done
}

if [ "$COUNT_DB" = 1 ]; then
    dialects=$(for binary in "$@"; do basename "$(dirname "$binary")"; done | sort -u)
    # shellcheck disable=SC2086 # one word a dialect
    start_servers $dialects
    printf 'binary\tdialect\tread 1\tbefore first (read 2)\tafter first\tbefore replay\tafter replay\n' > "$OUT/counts.tsv"
fi
echo "callgrind files in $OUT; $REQUESTS requests per phase, $WARMUP of each warmed up, $WORKERS worker thread(s)"
echo
if [ "$COUNT_DB" = 1 ]; then
    echo "Per request; MariaDB's commits and rollbacks: statements / the engine's (Com_ / Handler_)."
    echo
    echo "| build | database | phase | Ir | statements | commits | rollbacks | log writes | fsyncs |"
    echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
else
    echo "| build | database | Ir per first write | Ir per replay |"
    echo "|---|---|---:|---:|"
fi
index=0
for binary in "$@"; do
    index=$((index + 1))
    run_one "$binary" "$index"
done
