#!/usr/bin/env bash
# Runs schemathesis (a property-based API tester that knows only the
# OpenAPI document) against a generated service on SQLite, on loopback,
# with every check on (`--checks all`: status codes, content types,
# response headers — `response_headers_conformance`, which wants every
# header a response declares `required` — and schemas). Every check must
# pass: in particular a request the schema calls valid must not be
# refused, which holds only while the key parameter's schema carries the
# contract's `pattern` and `maxLength` (rule key-schema-mismatch).
#
#   scripts/schemathesis.sh                   # the payment-callback example
#   scripts/schemathesis.sh created-headers   # a 201 with Location and ETag
#
# `created-headers` generates tests/codegen_fixtures/created-headers.yaml
# into target/schemathesis/, with the business file next to that spec,
# and builds it in target/generated (where the tests build generated
# projects). Schemathesis is installed into target/ on first use.
# PAYMENT_CALLBACK_BIN runs an already built example service instead of
# building it.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${1:-payment-callback}
venv=target/schemathesis-venv
if [ ! -x "$venv/bin/st" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "schemathesis>=4,<5"
fi

case "$target" in
payment-callback)
    spec=$PWD/examples/payment-callback/openapi.yaml
    bin=${PAYMENT_CALLBACK_BIN:-}
    if [ -z "$bin" ]; then
        cargo build --quiet --bin payment-callback
        bin=target/debug/payment-callback
    fi
    ;;
created-headers)
    spec=$PWD/tests/codegen_fixtures/created-headers.yaml
    project=$PWD/target/schemathesis/created-headers
    cargo run --quiet --bin idemgen -- gen "$spec" -o "$project" --db sqlite --force >/dev/null
    cp tests/codegen_fixtures/created-headers/create_order.rs "$project/src/business/create_order.rs"
    cp Cargo.lock "$project/Cargo.lock"
    # With the settings tests/support/build.rs builds generated projects
    # with, so the dependencies the tests compiled are reused.
    profiles=()
    while read -r setting; do
        profiles+=(--config "$setting")
    done < <(python3 -c '
import json, tomllib
profiles = tomllib.load(open("Cargo.toml", "rb")).get("profile", {})
for profile, table in profiles.items():
    for package, keys in table.get("package", {}).items():
        for key, value in keys.items():
            print(f"profile.{profile}.package.{package}.{key}={json.dumps(value)}")
')
    (cd "$project" && env -u DATABASE_URL CARGO_TARGET_DIR="$OLDPWD/target/generated" \
        CARGO_PROFILE_DEV_DEBUG=0 CARGO_INCREMENTAL=0 SQLX_OFFLINE=true \
        cargo "${profiles[@]}" build --quiet)
    bin=$PWD/target/generated/debug/created-headers
    ;;
*)
    echo "usage: scripts/schemathesis.sh [payment-callback|created-headers]" >&2
    exit 2
    ;;
esac

work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Schemathesis sends unsigned callbacks: run without signature checks.
PAYMENT_CALLBACK_INSECURE=1 DATABASE_URL="sqlite://$work/service.db?mode=rwc" LISTEN_ADDR="127.0.0.1:$port" \
    "$bin" >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 50); do
    curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.2
done

# From the scratch directory, so its example database stays out of the tree.
st=$PWD/$venv/bin/st
cd "$work"
"$st" run "$spec" \
    --url "http://127.0.0.1:$port" \
    --checks all \
    --max-examples 50 \
    --generation-database none
