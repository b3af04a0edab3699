#!/usr/bin/env bash
# Runs schemathesis (a property-based API tester that knows only the
# OpenAPI document) against the payment-callback example service on
# SQLite, on loopback. Every check must pass: in particular a request the
# schema calls valid must not be refused, which holds only while the key
# parameter's schema carries the contract's `pattern` and `maxLength`
# (rule key-schema-mismatch).
#
#   scripts/schemathesis.sh            # installs schemathesis into target/ on first use
#
# PAYMENT_CALLBACK_BIN runs an already built service instead of building it.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/schemathesis-venv
if [ ! -x "$venv/bin/st" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "schemathesis>=4,<5"
fi
bin=${PAYMENT_CALLBACK_BIN:-}
if [ -z "$bin" ]; then
    cargo build --quiet --bin payment-callback
    bin=target/debug/payment-callback
fi

work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Schemathesis sends unsigned callbacks: run without signature checks.
PAYMENT_CALLBACK_INSECURE=1 DATABASE_URL="sqlite://$work/payments.db?mode=rwc" LISTEN_ADDR="127.0.0.1:$port" \
    "$bin" >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 50); do
    curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.2
done

# From the scratch directory, so its example database stays out of the tree.
spec=$PWD/examples/payment-callback/openapi.yaml
st=$PWD/$venv/bin/st
cd "$work"
"$st" run "$spec" \
    --url "http://127.0.0.1:$port" \
    --checks all \
    --max-examples 50 \
    --generation-database none
