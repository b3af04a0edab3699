#!/usr/bin/env bash
# Brings real API descriptions under contract with
# `idemgen lint --fix --unsafe-fixes`, then asks Redocly CLI (its default
# "recommended" ruleset) whether it still accepts them: the fixed copy must
# have no more Redocly errors than the original.
#
#   scripts/redocly-after-fix.sh [SPEC...]
#
# Default specs: the committed corpus subset (tests/corpus/specs). Needs
# node/npx (Redocly CLI is fetched from npm on first use) and a built
# idemgen (IDEMGEN, default target/release/idemgen, else target/debug/idemgen).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${IDEMGEN:-}" ]; then
    for candidate in target/release/idemgen target/debug/idemgen; do
        [ -x "$candidate" ] && IDEMGEN=$candidate && break
    done
fi
[ -x "${IDEMGEN:-}" ] || { echo "build idemgen first (cargo build --release)" >&2; exit 2; }
if [ $# -eq 0 ]; then
    set -- tests/corpus/specs/adyen-TransferService-v4.yaml \
        tests/corpus/specs/paypal-checkout_orders_v1.json \
        tests/corpus/specs/paypal-catalogs_products_v1.json
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# "ERRORS WARNINGS" of Redocly's recommended ruleset (it exits 1 on errors).
redocly_errors() {
    npx --yes @redocly/cli@2 lint --format json "$1" >"$work/redocly.json" 2>/dev/null || true
    python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["totals"]; print(t["errors"], t["warnings"])' \
        "$work/redocly.json"
}
status=0
printf '%-40s %18s %18s %s\n' spec "redocly before" "redocly after" "idemgen after"
for spec in "$@"; do
    name=$(basename "$spec")
    cp "$spec" "$work/$name"
    before=$(redocly_errors "$work/$name")
    "$IDEMGEN" lint --no-config --fix --unsafe-fixes "$work/$name" >/dev/null 2>&1 || true
    after=$(redocly_errors "$work/$name")
    summary=$("$IDEMGEN" lint --no-config --format json "$work/$name" \
        | python3 -c 'import json,sys; s=json.load(sys.stdin)["summary"]; print(s["errors"], "errors,", s["warnings"], "warnings")' || true)
    printf '%-40s %8s err %4s warn %8s err %4s warn  %s\n' "$name" $before $after "$summary"
    if [ "${after%% *}" -gt "${before%% *}" ]; then
        echo "  Redocly finds more errors after the fix" >&2
        status=1
    fi
done
exit $status
