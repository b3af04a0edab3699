#!/usr/bin/env bash
# The GitHub Action's install step (action.yml): puts idemgen on the job's
# PATH. The release of the Action's ref (`uses: OWNER/idemgen@v0.1.0`) has a
# prebuilt binary per runner (.github/workflows/release.yml): it is
# downloaded with the release's SHA256SUMS and installed only if its
# checksum matches. Where the ref has no release (a branch, a commit) or no
# binary for the runner, idemgen is built from the Action's source with
# cargo, and the job log says so. An idemgen already on PATH is used as is.
#
# Environment: IDEMGEN_REPOSITORY and IDEMGEN_REF (the Action's own,
# github.action_repository and github.action_ref), the runner's RUNNER_OS,
# RUNNER_ARCH, RUNNER_TEMP, GITHUB_PATH and GITHUB_ACTION_PATH.
# IDEMGEN_RELEASE_URL replaces the release's download address (tests).
set -euo pipefail

if command -v idemgen >/dev/null 2>&1; then
    echo "using the idemgen on PATH: $(command -v idemgen) ($(idemgen --version))"
    exit 0
fi

action_path=${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set: this is a step of action.yml}
# Older runners leave github.action_ref empty in composite actions; the
# Action's path ends in OWNER/REPO/REF then.
repository=${IDEMGEN_REPOSITORY:-$(basename "$(dirname "$(dirname "$action_path")")")/$(basename "$(dirname "$action_path")")}
ref=${IDEMGEN_REF:-$(basename "$action_path")}
dest=${RUNNER_TEMP:?RUNNER_TEMP is not set}/idemgen

case "${RUNNER_OS:-}/${RUNNER_ARCH:-}" in
Linux/X64) target=x86_64-unknown-linux-gnu ;;
Linux/ARM64) target=aarch64-unknown-linux-gnu ;;
macOS/X64) target=x86_64-apple-darwin ;;
macOS/ARM64) target=aarch64-apple-darwin ;;
Windows/X64) target=x86_64-pc-windows-msvc ;;
*) target="" ;;
esac

sha256() {
    if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1
}

# Installs the release's binary; returns 1 (with $why set) where there is none.
install_prebuilt() {
    if [ -z "$target" ]; then
        why="no prebuilt binary is made for $RUNNER_OS $RUNNER_ARCH"
        return 1
    fi
    local asset="idemgen-$target.tar.gz"
    local url=${IDEMGEN_RELEASE_URL:-https://github.com/$repository/releases/download/$ref}
    local download="$dest/download"
    rm -rf "$download" && mkdir -p "$download"
    if ! curl -fsSL --retry 3 -o "$download/SHA256SUMS" "$url/SHA256SUMS" ||
        ! curl -fsSL --retry 3 -o "$download/$asset" "$url/$asset"; then
        why="the ref $ref has no release with $asset"
        return 1
    fi
    local expected actual
    expected="$(awk -v name="$asset" '$2 == name || $2 == "*" name { print $1 }' "$download/SHA256SUMS")"
    actual="$(sha256 "$download/$asset")"
    if [ -z "$expected" ]; then
        echo "::error title=idemgen::the release $ref's SHA256SUMS does not list $asset" >&2
        exit 1
    fi
    if [ "$expected" != "$actual" ]; then
        echo "::error title=idemgen::$asset of release $ref has sha256 $actual, but SHA256SUMS says $expected: not installed" >&2
        exit 1
    fi
    mkdir -p "$dest/bin"
    tar -xzf "$download/$asset" -C "$dest/bin"
    echo "$dest/bin" >>"${GITHUB_PATH:?GITHUB_PATH is not set}"
    echo "installed the prebuilt idemgen of $ref for $target (sha256 $actual, checked against SHA256SUMS)"
}

why=""
if install_prebuilt; then
    exit 0
fi
echo "::notice title=idemgen::$why: building idemgen from source with cargo (minutes)"
if ! command -v cargo >/dev/null 2>&1; then
    echo "::error title=idemgen::cannot build idemgen: cargo is not on PATH (install a Rust toolchain first, or use a ref with a release)" >&2
    exit 1
fi
cargo install --locked --quiet --root "$dest" --path "$action_path"
echo "$dest/bin" >>"${GITHUB_PATH:?GITHUB_PATH is not set}"
echo "built idemgen from source ($ref) into $dest/bin"
