#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (or those named) for DURATION seconds
# each, as many at once as there are cores, and prints per target the executions, the
# coverage reached (libFuzzer's `cov`: edges; `ft`: features) and whether
# it crashed. Exits 1 when any target crashed; the input is kept under
# fuzz/artifacts/TARGET/ (reproduce: the target binary with that file).
#
#   scripts/fuzz.sh 30                 # CI: 30 s a target
#   scripts/fuzz.sh 1800 yaml_json     # a long local run of one target
#   scripts/fuzz.sh build              # only the build (CI starts it early,
#                                      # beside the tests, at low priority)
#
# Stable Rust, no sanitizer (fuzz/README.md says why): cargo-fuzz 0.13 is
# installed from crates.io when missing. The working corpus grows in
# fuzz/corpus/TARGET (not committed); the committed seeds are read too.
# IDEMGEN_FUZZ_TARGET_DIR moves the build (default fuzz/target);
# IDEMGEN_FUZZ_JOBS sets how many targets run at once (default: the cores).
# IDEMGEN_FUZZ_KNOWN_CRASHES names targets with a known crash not fixed
# yet (docs/src/fuzzing.md lists it): theirs are printed, not fatal.
set -euo pipefail
cd "$(dirname "$0")/.."

duration="${1:?usage: scripts/fuzz.sh DURATION_SECONDS|build [TARGET...]}"
shift
if [ "$duration" != build ] && ! [[ "$duration" =~ ^[0-9]+$ ]]; then
    echo "usage: scripts/fuzz.sh DURATION_SECONDS|build [TARGET...]" >&2
    exit 2
fi
CARGO_FUZZ_VERSION=0.13.2
if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
    echo "installing cargo-fuzz $CARGO_FUZZ_VERSION"
    cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi
target_dir="${IDEMGEN_FUZZ_TARGET_DIR:-$PWD/fuzz/target}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cd fuzz && cargo fuzz list)
fi
# -a: overflow checks and debug assertions on, as in tests.
build=(cargo fuzz build --sanitizer none --debug-assertions --release --target-dir "$target_dir")
build_started=$SECONDS
if [ $# -eq 1 ]; then
    (cd fuzz && nice -n 19 "${build[@]}" "$1")
else
    (cd fuzz && nice -n 19 "${build[@]}")
fi
echo "fuzz targets built in $((SECONDS - build_started)) s"
[ "$duration" = build ] && exit 0

# The seed directories each target reads besides its own corpus.
seeds_of() {
    local seeds=()
    [ -d "fuzz/seeds/$1" ] && seeds+=("fuzz/seeds/$1")
    case "$1" in
        yaml_json | fix | lsp) seeds+=(fuzz/seeds/specs) ;;
    esac
    echo "${seeds[@]}"
}

# One target: runs it, then writes its table row to $2 and its verdict
# (ok, known or crash) to $3; what a crash printed goes to stderr.
run_target() {
    local target=$1 row=$2 verdict=$3
    local corpus="fuzz/corpus/$target" artifacts="fuzz/artifacts/$target/"
    mkdir -p "$corpus" "$artifacts"
    local log result
    log="$(mktemp)"
    # shellcheck disable=SC2046
    if nice -n 19 "$target_dir/x86_64-unknown-linux-gnu/release/$target" \
        -max_total_time="$duration" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 \
        -max_len=65536 -dict=fuzz/dict/idemgen.dict -print_final_stats=1 \
        -artifact_prefix="$artifacts" "$corpus" $(seeds_of "$target") >"$log" 2>&1; then
        result=ok
        echo ok >"$verdict"
    else
        result="CRASH: $(grep -ao "Test unit written to .*" "$log" | tail -1 | sed 's/Test unit written to //')"
        if [[ " ${IDEMGEN_FUZZ_KNOWN_CRASHES:-} " == *" $target "* ]]; then
            result="known, not fatal: ${result#CRASH: }"
            echo known >"$verdict"
        else
            echo crash >"$verdict"
        fi
        grep -aE "panicked at|thread '.*' panicked|ERROR: libFuzzer" -A3 "$log" | head -12 >&2 || true
    fi
    local executions status cov ft
    executions=$(grep -ao 'stat::number_of_executed_units: [0-9]*' "$log" | grep -ao '[0-9]*$' || echo '?')
    status=$(grep -aE "^#[0-9]+" "$log" | tail -1 || true)
    cov=$(grep -aoE 'cov: [0-9]+' <<<"$status" | grep -aoE '[0-9]+' || echo '?')
    ft=$(grep -aoE 'ft: [0-9]+' <<<"$status" | grep -aoE '[0-9]+' || echo '?')
    printf '%-16s %12s %8s %8s  %s\n' "$target" "$executions" "$cov" "$ft" "$result" >"$row"
    rm -f "$log"
}

# Targets run side by side, one a core (IDEMGEN_FUZZ_JOBS overrides): each
# still gets DURATION seconds, and the step takes a fraction of the sum.
jobs="${IDEMGEN_FUZZ_JOBS:-$(nproc)}"
results="$(mktemp -d)"
running=0
for target in "${targets[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    run_target "$target" "$results/$target.row" "$results/$target.verdict" &
    running=$((running + 1))
done
wait

crashed=()
printf '%-16s %12s %8s %8s  %s\n' target executions cov ft result
for target in "${targets[@]}"; do
    if [ ! -f "$results/$target.verdict" ]; then
        printf '%-16s %12s %8s %8s  %s\n' "$target" '?' '?' '?' "NO RESULT: its run stopped early"
        crashed+=("$target")
        continue
    fi
    cat "$results/$target.row"
    if [ "$(cat "$results/$target.verdict")" = crash ]; then
        crashed+=("$target")
    fi
done
rm -rf "$results"
if [ ${#crashed[@]} -gt 0 ]; then
    echo "fuzzing found crashes in: ${crashed[*]}" >&2
    exit 1
fi
