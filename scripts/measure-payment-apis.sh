#!/usr/bin/env bash
# What `idemgen gen` makes of the corpus's payment APIs, one line per spec:
#
#   scripts/measure-payment-apis.sh [IDEMGEN] [CORPUS] [SPEC...]
#
# IDEMGEN is the binary to measure (default target/debug/idemgen; pass an
# older build to compare), CORPUS the corpus directory (default
# ../shared/corpus, or $IDEMGEN_CORPUS). Each spec is generated into a
# temporary directory and counted there:
#   gen        gen's exit status (0: it wrote the service, or the client)
#   operations the business files it wrote (one per served operation); with
#              CLIENT=1, the client's `pub async fn` methods
#   types      `pub struct|enum|type` items of src/models.rs
#   long_ids   distinct identifiers longer than 60 characters in src/*.rs
#              (comments and string literals left out)
#   raw_bodies request bodies typed as raw bytes (`pub type … = Vec<u8>;`)
#   warnings   lines of `warning:` gen printed
#   clippy     with CLIPPY=1 only: `ok` when the generated project passes
#              `cargo fmt --check` and `cargo clippy --all-targets -- -D
#              warnings` (a service built on this checkout's runtime; in
#              one shared CARGO_TARGET_DIR, default target/generated),
#              else `fmt` or `fails`, with the output kept in $CLIPPY_LOGS
#              (default /tmp/measure-payment-apis). The six services take
#              11 to 12 minutes on two cores once the shared target
#              directory holds axum, sqlx and tokio; the six clients 8½.
# CLIENT=1 generates each spec's client crate (`gen --client`) instead of
# its service, and counts and checks that.
# A spec that cannot be generated as published gets the overlay that fixes
# it, scripts/spec-fixes/<spec name>.overlay.yaml, where there is one.
set -euo pipefail
cd "$(dirname "$0")/.."

idemgen=${1:-target/debug/idemgen}
corpus=${2:-${IDEMGEN_CORPUS:-../shared/corpus}}
specs=(
    adyen-CheckoutService-v71.yaml
    stripe-spec3.yaml
    paypal-checkout_orders_v2.json
    paypal-payments_payment_v2.json
    square-api.json
    twilio-twilio_api_v2010.yaml
)
# SPEC...: some of them (file names in the corpus's specs/), in that order.
[ $# -gt 2 ] && specs=("${@:3}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
kind=()
[ "${CLIENT:-0}" = 1 ] && kind=(--client)
clippy=${CLIPPY:-0}
logs=${CLIPPY_LOGS:-/tmp/measure-payment-apis}
runtime=()
if [ "$clippy" = 1 ]; then
    mkdir -p "$logs"
    # A client crate depends on no runtime.
    [ ${#kind[@]} -eq 0 ] && runtime=(--runtime-path "$PWD/crates/idemgen-runtime")
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target/generated}
fi

printf '%-34s %4s %10s %6s %8s %10s %8s' spec gen operations types long_ids raw_bodies warnings
[ "$clippy" = 1 ] && printf ' %6s' clippy
printf '\n'
for spec in "${specs[@]}"; do
    path="$corpus/specs/$spec"
    if [ ! -f "$path" ]; then
        echo "$spec: not in $corpus/specs" >&2
        continue
    fi
    out="$work/${spec%.*}"
    status=0
    overlay=()
    fixes="scripts/spec-fixes/${spec%.*}.overlay.yaml"
    [ -f "$fixes" ] && overlay=(--overlay "$fixes")
    "$idemgen" gen "$path" ${kind[@]+"${kind[@]}"} ${overlay[@]+"${overlay[@]}"} ${runtime[@]+"${runtime[@]}"} \
        -o "$out" --name svc >"$work/stdout" 2>"$work/stderr" || status=$?
    operations=0 types=0 long_ids=0 raw_bodies=0
    if [ -f "$out/src/models.rs" ]; then
        if [ ${#kind[@]} -gt 0 ]; then
            operations=$(grep -cE '^    pub async fn ' "$out/src/lib.rs" || true)
        else
            operations=$(find "$out/src/business" -name '*.rs' ! -name mod.rs | wc -l)
        fi
        types=$(grep -cE '^pub (struct|enum|type) ' "$out/src/models.rs" || true)
        # One line, as a long alias is laid out over two.
        raw_bodies=$(tr '\n' ' ' <"$out/src/models.rs" \
            | { grep -oE 'pub type [A-Za-z0-9_]+ =[[:space:]]*Vec<[[:space:]]*u8,?[[:space:]]*>;' || true; } | wc -l)
        long_ids=$(find "$out/src" -name '*.rs' -exec cat {} + \
            | sed -E 's://.*$::; s/"([^"\\]|\\.)*"//g' \
            | { grep -oE '\b[A-Za-z_][A-Za-z0-9_]{60,}\b' || true; } | sort -u | wc -l)
    fi
    warnings=$(grep -c '^warning:' "$work/stderr" || true)
    printf '%-34s %4s %10s %6s %8s %10s %8s' \
        "$spec" "$status" "$operations" "$types" "$long_ids" "$raw_bodies" "$warnings"
    if [ "$clippy" = 1 ]; then
        verdict=ok
        log="$logs/${spec%.*}.log"
        if ! (cd "$out" && cargo fmt --check) >"$log" 2>&1; then
            verdict=fmt
        elif ! (cd "$out" && nice cargo clippy --quiet --all-targets -- -D warnings) >>"$log" 2>&1; then
            verdict=fails
        fi
        printf ' %6s' "$verdict"
    fi
    printf '\n'
done
