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
set -euo pipefail

REQUESTS=${REQUESTS:-300}
WARMUP=${WARMUP:-20}
WORKERS=${WORKERS:-1}
SERVICE_LOG=${SERVICE_LOG:-warn,payment_callback::auth=error,payment_callback_one_commit::auth=error}
OUT=${OUT:-$(mktemp -d /tmp/callgrind-cost.XXXXXX)}
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

run_one() {
    local binary=$1 index=$2
    local dialect server_url db url port pid
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
            local rest=${server_url#mysql://} user host hostport
            user=${rest%%@*}
            hostport=${rest#*@}
            hostport=${hostport%%/*}
            host=${hostport%:*}
            local mport=${hostport##*:}
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
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    local out="$OUT/$index"
    mkdir -p "$out"
    LISTEN_ADDR="127.0.0.1:$port" DATABASE_URL="$url" PAYMENT_CALLBACK_INSECURE=1 \
        PURGE_INTERVAL_SECS=3600 RUST_LOG="$SERVICE_LOG" DOWNSTREAM_DELAY_MS=0 TOKIO_WORKER_THREADS="$WORKERS" \
        valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" \
        "$binary" > "$out/service.log" 2>&1 &
    pid=$!
    # Never leave the service running, whatever fails.
    trap "kill -TERM $pid 2> /dev/null || true" EXIT
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
    python3 "$OUT/client.py" "$base" first C 0 "$REQUESTS"
    callgrind_control --dump=first "$pid" > /dev/null 2>&1
    sql "$outlast"
    python3 "$OUT/client.py" "$base" replay C 0 "$REQUESTS"
    callgrind_control --dump=replay "$pid" > /dev/null 2>&1
    kill -TERM "$pid"
    wait "$pid" || true
    drop
    local first replay
    first=$(total_ir "$(grep -l '^desc: Trigger: .*first' "$out"/callgrind.out* | head -1)")
    replay=$(total_ir "$(grep -l '^desc: Trigger: .*replay' "$out"/callgrind.out* | head -1)")
    printf '| %s | %s | %d | %d |\n' "$binary" "$dialect" \
        $((first / REQUESTS)) $((replay / REQUESTS))
}

echo "callgrind files in $OUT; $REQUESTS requests per phase, $WARMUP of each warmed up, $WORKERS worker thread(s)"
echo
echo "| build | database | Ir per first write | Ir per replay |"
echo "|---|---|---:|---:|"
index=0
for binary in "$@"; do
    index=$((index + 1))
    run_one "$binary" "$index"
done
