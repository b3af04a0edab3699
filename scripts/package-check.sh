#!/usr/bin/env bash
# Installs what `scripts/package.sh all` wrote into target/dist/ the way a
# user would, and checks the pre-commit hooks, the Action's installer and
# the release workflow. .ci/run runs, from one release build:
#
#   scripts/package.sh all               # the release build, packed into target/dist/
#   scripts/package-check.sh             # everything below but the rust hook, from target/dist/ (no build)
#   scripts/package-check.sh rust-hook   # pre-commit's idemgen-lint hook, which builds
#
# rust-hook: `pre-commit try-repo` of this repository's idemgen-lint hook
#    (pre-commit 4.7.0, pinned in scripts/tools-requirements.txt) on a
#    temporary git repository holding a clean and a broken spec: it fails,
#    showing the broken spec's finding and none for the clean one.
#    pre-commit builds the hook with `cargo install --path .` on its own
#    copy of this repository; with CARGO_TARGET_DIR set to this checkout's
#    target/ it reuses the release build's dependencies, and compiles
#    idemgen's own crates (its copy's files are newer) and links again.
# Without an argument:
# 1. the wheel: manylinux tag against the binary's glibc symbols, metadata;
#    pip-installed into a fresh venv, `idemgen --version` and `idemgen lint`
#    with no cargo on PATH;
# 2. the npm tarballs: `npm install`ed into a fresh folder (offline: the
#    other platforms' optional packages are left out), `npx idemgen lint`
#    with no cargo on PATH;
# 3. pre-commit: `pre-commit try-repo` of the idemgen-lint-system hook with
#    the pip-installed idemgen, passing on a clean spec and failing on a
#    broken one with its finding; then the hook of the docs that installs
#    the wheel (`repo: local`, `language: python`), fed target/dist/ in
#    place of PyPI, both ways too;
# 4. the Action's installer (scripts/action-install.sh) against a local
#    copy of a release: checksum verified, a wrong checksum refused, no
#    binary for the runner → the source build it announces;
# 5. actionlint and shellcheck (pinned) on .github/workflows/ and examples/ci/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

fail() {
    echo "package-check: $*" >&2
    exit 1
}
step() {
    echo "--- $* ($((SECONDS - started)) s)"
}
started=$SECONDS
mode=${1:-packages}
case "$mode" in
packages | rust-hook) ;;
*)
    echo "usage: scripts/package-check.sh [rust-hook]" >&2
    exit 2
    ;;
esac

version="$(sed -n '/^\[package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
host="$(rustc -vV | sed -n 's/^host: //p')"
dist=$root/target/dist
tools="$(scripts/tools-venv.sh)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export PRE_COMMIT_HOME=$root/target/pre-commit-home
repo="$work/repo"
mkdir -p "$repo/api"
cp examples/payment-callback/openapi.yaml "$repo/api/openapi.yaml"
git -C "$repo" init --quiet && git -C "$repo" add -A
try_repo() { # try_repo WANT_EXIT HOOK [ENV...]: run from the temporary repository
    local want=$1 hook=$2 status=0
    (cd "$repo" && env "${@:3}" "$tools/pre-commit" try-repo "$root" "$hook" --all-files) >"$work/hook.log" 2>&1 || status=$?
    sed 's/^/    /' "$work/hook.log"
    [ "$status" = "$want" ] || fail "pre-commit try-repo ... $hook exited $status, expected $want"
    [ "$want" = 0 ] || grep -q 'window-too-short' "$work/hook.log" || fail "$hook failed without showing the finding"
}
add_broken_spec() {
    cp examples/broken/window-too-short.yaml "$repo/api/openapi-broken.yaml"
    git -C "$repo" add -A
}

if [ "$mode" = rust-hook ]; then
    step "pre-commit's idemgen-lint hook (its cargo install reuses target/release's dependencies)"
    add_broken_spec
    try_repo 1 idemgen-lint CARGO_TARGET_DIR="$root/target"
    if grep -q '─\[api/openapi.yaml' "$work/hook.log"; then
        fail "idemgen-lint reported a finding in the clean spec"
    fi
    echo "package-check rust-hook: passed in $((SECONDS - started)) s"
    exit 0
fi

shopt -s nullglob
wheels=("$dist"/idemgen-"$version"-*.whl)
launchers=("$dist"/idemgen-"$version".tgz)
platforms=("$dist"/idemgen-*-"$version".tgz)
shopt -u nullglob
[ ${#wheels[@]} -eq 1 ] || fail "expected one idemgen-$version wheel in target/dist/ (run scripts/package.sh all), found ${#wheels[@]}"
[ ${#launchers[@]} -eq 1 ] || fail "no idemgen-$version.tgz in target/dist/ (run scripts/package.sh all)"
[ ${#platforms[@]} -eq 1 ] || fail "expected one platform tarball idemgen-OS-CPU-$version.tgz in target/dist/, found ${#platforms[@]}"
wheel=${wheels[0]} launcher=${launchers[0]} platform=${platforms[0]}

# PATH without cargo (and rustc): the directories that hold neither.
clean_path=""
IFS=: read -r -a path_dirs <<<"$PATH"
for dir in "${path_dirs[@]}"; do
    [ -n "$dir" ] || continue
    [ -e "$dir/cargo" ] || [ -e "$dir/rustc" ] && continue
    clean_path="${clean_path:+$clean_path:}$dir"
done
for tool in python3 node npm npx git; do
    PATH=$clean_path command -v "$tool" >/dev/null ||
        fail "$tool shares a directory with cargo on PATH; the install checks need it without cargo"
done
without_cargo() {
    env PATH="$1:$clean_path" CARGO_HOME=/nonexistent RUSTUP_HOME=/nonexistent "${@:2}"
}
expect_lint() { # expect_lint WANT_EXIT DIR_ON_PATH COMMAND... : runs it from $work without cargo
    local want=$1 out status=0
    out="$(cd "$work" && without_cargo "${@:2}" 2>&1)" || status=$?
    printf '%s\n' "$out" | sed 's/^/    /'
    [ "$status" = "$want" ] || fail "${*:3} exited $status, expected $want"
}
cp -r examples/payment-callback/openapi.yaml "$work/clean.yaml"
cp examples/broken/window-too-short.yaml "$work/broken.yaml"

step "1. the wheel: $(basename "$wheel")"
if [[ "$host" == *-linux-gnu ]]; then
    # The tag's glibc must cover every GLIBC_x.y symbol version the binary needs.
    tag_glibc="$(basename "$wheel" | sed -n 's/.*manylinux_\([0-9]*\)_\([0-9]*\)_.*/\1.\2/p')"
    [ -n "$tag_glibc" ] || fail "$(basename "$wheel") has no manylinux_X_Y tag"
    needed="$(objdump -T target/release/idemgen | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)"
    [ "$(printf '%s\n%s\n' "$needed" "$tag_glibc" | sort -V | tail -1)" = "$tag_glibc" ] ||
        fail "the wheel is tagged for glibc $tag_glibc but the binary needs $needed"
    echo "    tag manylinux_${tag_glibc/./_}: the binary needs glibc $needed at most"
fi
metadata="$(python3 -m zipfile -e "$wheel" "$work/wheel" >/dev/null && cat "$work"/wheel/idemgen-"$version".dist-info/METADATA)"
license="$(sed -n '/^\[package\]/,/^\[/s/^license = "\(.*\)"/\1/p' Cargo.toml)"
for field in "Name: idemgen" "Version: $version" "License: $license" \
    "Description-Content-Type: text/markdown; charset=UTF-8; variant=GFM" "# idemgen"; do
    grep -qxF "$field" <<<"$metadata" || fail "the wheel's METADATA lacks the line '$field'"
done
echo "    METADATA: version $version, licence $license, README.md as its description"
[ -f "$work/wheel/idemgen-$version.data/scripts/idemgen" ] || fail "the wheel holds no idemgen-$version.data/scripts/idemgen"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index --find-links "$dist" "idemgen==$version"
expect_lint 0 "$work/venv/bin" sh -c 'command -v cargo && exit 9; idemgen --version'
[ "$(without_cargo "$work/venv/bin" idemgen --version)" = "idemgen $version" ] || fail "idemgen --version is not 'idemgen $version'"
expect_lint 0 "$work/venv/bin" idemgen lint clean.yaml
expect_lint 1 "$work/venv/bin" idemgen lint --color=never broken.yaml

step "2. the npm packages: $(basename "$launcher"), $(basename "$platform")"
mkdir "$work/npm"
(cd "$work/npm" && echo '{"name": "try-idemgen", "private": true}' >package.json &&
    without_cargo "" npm install --offline --no-audit --no-fund --loglevel=error "$launcher" "$platform")
expect_lint 0 "" sh -c 'cd npm && npx --offline idemgen --version'
expect_lint 0 "" sh -c 'cd npm && npx --offline idemgen lint ../clean.yaml'
expect_lint 1 "" sh -c 'cd npm && npx --offline idemgen lint --color=never ../broken.yaml'

step "3. pre-commit hooks"
# idemgen-lint-system: the idemgen on PATH, here the one pip installed, no cargo.
system=(PATH="$work/venv/bin:$clean_path" CARGO_HOME=/nonexistent)
try_repo 0 idemgen-lint-system "${system[@]}"
add_broken_spec
try_repo 1 idemgen-lint-system "${system[@]}"
# The hook of the docs that installs the published wheel (docs/src/ci.md),
# fed target/dist/ for PyPI until a release publishes it.
cat >"$repo/.pre-commit-config.yaml" <<YAML
repos:
  - repo: local
    hooks:
      - id: idemgen-lint
        name: idemgen lint
        entry: idemgen lint --color=never
        language: python
        additional_dependencies: [idemgen==$version]
        files: (^|/)(openapi|swagger)[^/]*\.(ya?ml|json)$
        types_or: [yaml, json]
YAML
git -C "$repo" add -A
# pip takes idemgen from target/dist/ and, for pre-commit's placeholder
# package, setuptools (hash-checked from the lock), from no index.
sed -n '/^setuptools==/,/^ *# via/p' scripts/tools-requirements.txt | grep -v '# via' >"$work/setuptools.txt"
"$tools/pip" download --quiet --no-deps --require-hashes --only-binary=:all: -d "$work/wheels" -r "$work/setuptools.txt"
export PIP_NO_INDEX=1 PIP_FIND_LINKS="$dist $work/wheels"
status=0
(cd "$repo" && without_cargo "$tools" "$tools/pre-commit" run --all-files) >"$work/wheel-hook.log" 2>&1 || status=$?
sed 's/^/    /' "$work/wheel-hook.log"
if [ "$status" != 1 ] || ! grep -q window-too-short "$work/wheel-hook.log"; then
    fail "the wheel hook exited $status on the broken spec; expected 1 with its finding"
fi
git -C "$repo" rm --quiet --force api/openapi-broken.yaml
(cd "$repo" && without_cargo "$tools" "$tools/pre-commit" run --all-files) | sed 's/^/    /'
unset PIP_NO_INDEX PIP_FIND_LINKS

step "4. the Action's installer (scripts/action-install.sh) on a local release"
# This machine as a runner, and a runner the release has no binary for.
case "$host" in
x86_64-unknown-linux-gnu) arch=X64 other_arch=ARM64 other_target=aarch64-unknown-linux-gnu ;;
aarch64-unknown-linux-gnu) arch=ARM64 other_arch=X64 other_target=x86_64-unknown-linux-gnu ;;
*) fail "the Action's installer is checked on Linux x86_64 or aarch64, not $host" ;;
esac
release="$work/release/v$version"
mkdir -p "$release"
cp "$dist/idemgen-$host.tar.gz" "$release/"
(cd "$release" && sha256sum -- * >SHA256SUMS)
action() { # action WANT_EXIT RUNNER_ARCH LOG: the install step as the runner runs it, no cargo on PATH
    local status=0
    rm -rf "$work/runner" && mkdir -p "$work/runner"
    without_cargo "" env RUNNER_OS=Linux RUNNER_ARCH="$2" RUNNER_TEMP="$work/runner" \
        GITHUB_PATH="$work/runner/path" GITHUB_ACTION_PATH="$root" \
        IDEMGEN_REPOSITORY=OWNER/idemgen IDEMGEN_REF="v$version" IDEMGEN_RELEASE_URL="file://$release" \
        scripts/action-install.sh >"$3" 2>&1 || status=$?
    sed 's/^/    /' "$3"
    [ "$status" = "$1" ] || fail "scripts/action-install.sh exited $status, expected $1"
}
action 0 "$arch" "$work/action.log"
grep -q 'checked against SHA256SUMS' "$work/action.log" || fail "the Action did not check the checksum"
[ "$(without_cargo "$(cat "$work/runner/path")" idemgen --version)" = "idemgen $version" ] ||
    fail "the Action's idemgen is not on the PATH it wrote"
# A release whose binary does not match its checksum is refused.
echo "0000000000000000000000000000000000000000000000000000000000000000  idemgen-$host.tar.gz" >"$release/SHA256SUMS"
action 1 "$arch" "$work/action.log"
grep -q 'not installed' "$work/action.log" || fail "the Action did not refuse a wrong checksum"
# A runner with no binary in the release: the source build, announced (here
# without cargo on PATH, so it stops there).
action 1 "$other_arch" "$work/action.log"
grep -q "has no release with idemgen-$other_target.tar.gz: building idemgen from source" "$work/action.log" ||
    fail "the Action did not say it builds from source"

step "5. actionlint on the workflows"
# With the pinned shellcheck on PATH: actionlint checks each `run:` script with it.
PATH="$tools:$PATH" "$tools/actionlint" .github/workflows/*.yml examples/ci/github-workflow.yml
echo "    actionlint: no findings"

echo "package-check: all passed in $((SECONDS - started)) s"
