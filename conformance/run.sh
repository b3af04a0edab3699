#!/usr/bin/env bash
# The conformance table: the same payment callback behind five idempotency
# libraries (axum-idempotent from crates.io, express-idempotency and
# @node-idempotency/nestjs from npm, django-idempotency-key and
# asgi-idempotency-header from PyPI) and behind the service idemgen
# generates (examples/payment-callback), each probed on loopback with
# `idemgen probe` against its own contract (`<app>/openapi.yaml`).
#
#   conformance/run.sh      # installs what is missing, probes, prints the table
#
# Each check's verdict is compared with conformance/expected.json: the
# script exits 1 if any differs (a probe change that flips a verdict is
# noticed; update expected.json and the table in docs/src/conformance.md together), 2 if an
# app cannot be installed or started. Needs the crates.io, npm and PyPI
# registries the first time; later runs reuse what they installed:
# the Rust builds in $CARGO_TARGET_DIR (default target/), the Python venvs in
# $CARGO_TARGET_DIR/conformance-venv and conformance-venv-asgi, node_modules
# beside package.json. The
# probe's JSON reports are left in $CARGO_TARGET_DIR/conformance-reports.
#
# Every app spends DOWNSTREAM_DELAY_MS=150 in its business step, so the
# probe's duplicates (sent at once, or 10 ms apart) always arrive while a
# first attempt runs. Not more: the generated service's probe pays its one
# seeded order in the burst, so the later checks' first attempts answer
# "order already paid" (409), a failure that `failed: retry` lets every
# duplicate retry; SQLite runs those retries one after another, and nine of
# them at 300 ms each come close to the 3 s lease (`server.max-processing`),
# past which the last is answered 503.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
started=$(date +%s)
target=${CARGO_TARGET_DIR:-$root/target}
export CARGO_TARGET_DIR=$target

fail_setup() {
    echo "conformance: $*" >&2
    exit 2
}

for tool in cargo npm python3 curl sqlite3; do
    command -v "$tool" >/dev/null 2>&1 || fail_setup "\`$tool\` is needed"
done

echo "== building idemgen, the generated service and the axum-idempotent app"
cargo build --quiet --bin idemgen --bin payment-callback || fail_setup "building idemgen failed"
cargo build --quiet --locked --manifest-path conformance/axum-idempotent/Cargo.toml \
    || fail_setup "building the axum-idempotent app failed"
idemgen=$target/debug/idemgen

echo "== installing express-idempotency (npm ci)"
if [ ! -d conformance/express-idempotency/node_modules/express-idempotency ]; then
    (cd conformance/express-idempotency && npm ci --silent --no-audit --no-fund) \
        || fail_setup "npm ci of the express-idempotency app failed"
fi

echo "== installing @node-idempotency/nestjs (npm ci)"
if [ ! -d conformance/node-idempotency-nestjs/node_modules/@node-idempotency/nestjs ]; then
    (cd conformance/node-idempotency-nestjs && npm ci --silent --no-audit --no-fund) \
        || fail_setup "npm ci of the @node-idempotency/nestjs app failed"
fi

echo "== installing django-idempotency-key (pip, into $target/conformance-venv)"
venv=$target/conformance-venv
requirements=conformance/django-idempotency-key/requirements.txt
if ! cmp -s "$requirements" "$venv/requirements.txt" 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv" || fail_setup "python3 -m venv failed"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" \
        || fail_setup "pip install of the django-idempotency-key app failed"
    cp "$requirements" "$venv/requirements.txt"
fi

echo "== installing asgi-idempotency-header (pip, into $target/conformance-venv-asgi)"
asgi_venv=$target/conformance-venv-asgi
asgi_requirements=conformance/asgi-idempotency-header/requirements.txt
if ! cmp -s "$asgi_requirements" "$asgi_venv/requirements.txt" 2>/dev/null; then
    rm -rf "$asgi_venv"
    python3 -m venv "$asgi_venv" || fail_setup "python3 -m venv failed"
    "$asgi_venv/bin/pip" install --quiet --disable-pip-version-check -r "$asgi_requirements" \
        || fail_setup "pip install of the asgi-idempotency-header app failed"
    cp "$asgi_requirements" "$asgi_venv/requirements.txt"
fi

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start NAME PORT COMMAND...: runs COMMAND in the background with
# LISTEN_ADDR and DOWNSTREAM_DELAY_MS set, and waits until PORT answers.
start() {
    local name=$1 port=$2
    shift 2
    LISTEN_ADDR=127.0.0.1:$port DOWNSTREAM_DELAY_MS=150 NODE_ENV=production RUST_LOG=warn \
        "$@" >"$work/$name.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    cat "$work/$name.log" >&2
    fail_setup "$name did not start listening on 127.0.0.1:$port"
}

# probe NAME SPEC PORT [ARGS...]: the JSON report in $work/NAME.json.
probe() {
    local name=$1 spec=$2 port=$3
    shift 3
    local code=0
    "$idemgen" probe "$spec" --base-url "http://127.0.0.1:$port" --format json "$@" \
        >"$work/$name.json" 2>"$work/$name.probe.log" || code=$?
    # 0: all passed, 1: some failed; anything else is not a verdict.
    if [ "$code" -gt 1 ]; then
        cat "$work/$name.probe.log" >&2
        fail_setup "the probe of $name exited $code"
    fi
}

echo "== probing"
port=$(free_port)
start axum-idempotent "$port" "$target/debug/conformance-axum-idempotent"
# The middleware caches answers only within a session: open one, as a
# client that logged in would have.
cookie=$(curl -fsS -D - -o /dev/null -X POST "http://127.0.0.1:$port/login" \
    | sed -n 's/^set-cookie: \(session=[^;]*\).*/\1/Ip' | tr -d '\r')
[ -n "$cookie" ] || fail_setup "axum-idempotent's POST /login set no session cookie"
probe axum-idempotent conformance/axum-idempotent/openapi.yaml "$port" --header "Cookie: $cookie"
curl -fsS "http://127.0.0.1:$port/stats" >"$work/axum-idempotent.stats"

port=$(free_port)
start express-idempotency "$port" node conformance/express-idempotency/server.js
probe express-idempotency conformance/express-idempotency/openapi.yaml "$port"
curl -fsS "http://127.0.0.1:$port/stats" >"$work/express-idempotency.stats"

port=$(free_port)
start node-idempotency-nestjs "$port" node conformance/node-idempotency-nestjs/server.js
# Its records live 18 s (`cacheTTLMS`, the contract's window): window-end
# waits that out and reuses a key.
probe node-idempotency-nestjs conformance/node-idempotency-nestjs/openapi.yaml "$port" --window-wait 21s
curl -fsS "http://127.0.0.1:$port/stats" >"$work/node-idempotency-nestjs.stats"

port=$(free_port)
start django-idempotency-key "$port" \
    "$venv/bin/python" conformance/django-idempotency-key/app.py runserver --noreload "127.0.0.1:$port"
probe django-idempotency-key conformance/django-idempotency-key/openapi.yaml "$port"
curl -fsS "http://127.0.0.1:$port/stats" >"$work/django-idempotency-key.stats"

port=$(free_port)
start asgi-idempotency-header "$port" "$asgi_venv/bin/python" conformance/asgi-idempotency-header/app.py
# Its answers live 18 s (`MemoryBackend(expiry=18)`, the contract's window).
probe asgi-idempotency-header conformance/asgi-idempotency-header/openapi.yaml "$port" --window-wait 21s
curl -fsS "http://127.0.0.1:$port/stats" >"$work/asgi-idempotency-header.stats"

port=$(free_port)
db=$work/payments.db
start generated "$port" env PAYMENT_CALLBACK_INSECURE=1 DATABASE_URL="sqlite://$db?mode=rwc" "$target/debug/payment-callback"
order=ORD-CONFORMANCE-1
sqlite3 "$db" "INSERT INTO orders (order_no, amount) VALUES ('$order', 1999)"
probe generated examples/payment-callback/openapi.yaml "$port" --set "/order_no=$order" --set /amount=1999
# Its business step pays an order once; paid_log has a row per payment.
sqlite3 "$db" "SELECT json_object('payments', count(*), 'keys', 1) FROM paid_log" >"$work/generated.stats"

# The probe's reports stay for reading: what each check sent and got.
reports=$target/conformance-reports
mkdir -p "$reports"
cp "$work"/*.json "$reports"/

python3 - "$work" conformance/expected.json "$started" <<'EOF'
import json
import sys
import time

work, expected_path, started = sys.argv[1], sys.argv[2], int(sys.argv[3])
apps = ["axum-idempotent", "express-idempotency", "node-idempotency-nestjs", "django-idempotency-key",
        "asgi-idempotency-header", "generated"]
expected = json.load(open(expected_path))["verdicts"]
found = {}
stats = {}
for app in apps:
    report = json.load(open(f"{work}/{app}.json"))
    (operation,) = report["operations"]
    found[app] = {check["check"]: check["outcome"] for check in operation["checks"]}
    stats[app] = json.load(open(f"{work}/{app}.stats"))
checks = list(dict.fromkeys(check for app in apps for check in found[app]))

print()
print("| check | " + " | ".join(apps) + " |")
print("|---|" + "---|" * len(apps))
mismatches = []
for check in checks:
    cells = []
    for app in apps:
        verdict = found[app].get(check, "absent")
        want = expected.get(app, {}).get(check, "absent")
        if verdict != want:
            mismatches.append(f"{app} {check}: {verdict}, expected {want}")
            verdict = f"**{verdict}** (expected {want})"
        cells.append(verdict)
    print(f"| `{check}` | " + " | ".join(cells) + " |")
for app in apps:
    for check in expected.get(app, {}):
        if check not in found[app]:
            mismatches.append(f"{app} {check}: absent, expected {expected[app][check]}")
print()
for app in apps:
    s = stats[app]
    if app == "generated":
        print(f"{app}: {s['payments']} payment recorded for the probe's order (it is paid at most once)")
    else:
        print(f"{app}: {s['payments']} payments recorded under {s['keys']} keys, "
              f"{s['payments'] - s['keys']} of them a repeat under a key already paid")
print()
for mismatch in mismatches:
    print(f"MISMATCH {mismatch}")
print(f"conformance: {len(checks) * len(apps) - len(mismatches)} verdicts as expected, "
      f"{len(mismatches)} differ ({int(time.time()) - started} s)")
if mismatches:
    print(f"a probe change flipped a verdict: read the probe's JSON reports, then update "
          f"{expected_path} and the table in docs/src/conformance.md together", file=sys.stderr)
    sys.exit(1)
EOF
