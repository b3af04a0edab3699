#!/usr/bin/env bash
# Builds idemgen's packages for this machine's platform into target/dist/,
# from one release build of the CLI (target/release/idemgen):
#
#   scripts/package.sh pypi   # idemgen-VERSION-py3-none-PLATFORM.whl (maturin, `bin` bindings)
#   scripts/package.sh npm    # idemgen-VERSION.tgz (the launcher) and idemgen-OS-CPU-VERSION.tgz
#   scripts/package.sh all    # both, and idemgen-TARGET.tar.gz (the binary, as the Action downloads it)
#
# maturin comes from scripts/tools-requirements.txt (pinned with hashes,
# installed once into target/tools-venv); npm packs the npm packages
# (npm/pack.mjs). The version, licence and description are Cargo.toml's;
# the wheel's manylinux tag is the one maturin finds the binary's glibc
# symbols allow. Nothing is published: .github/workflows/release.yml does
# that on a release. scripts/package-check.sh installs what this wrote.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: scripts/package.sh pypi|npm|all" >&2
    exit 2
}
[ $# -eq 1 ] || usage
case "$1" in
pypi | npm | all) what=$1 ;;
*) usage ;;
esac

for tool in cargo rustc python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "scripts/package.sh needs $tool on PATH" >&2; exit 1; }
done
if [ "$what" != pypi ]; then
    command -v npm >/dev/null 2>&1 || { echo "scripts/package.sh npm needs node and npm on PATH" >&2; exit 1; }
fi

dist=target/dist
host="$(rustc -vV | sed -n 's/^host: //p')"
version="$(sed -n '/^\[package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
[ -n "$version" ] || { echo "scripts/package.sh: no version in Cargo.toml's [package]" >&2; exit 1; }
mkdir -p "$dist"

# The one release build: the CLI package alone (the examples of the
# workspace would turn on the runtime's database features in it).
started=$SECONDS
cargo build --release --locked -p idemgen --bin idemgen
echo "release build: $((SECONDS - started)) s" >&2
binary=target/release/idemgen
[ -x "$binary" ] || binary=target/release/idemgen.exe

if [ "$what" != npm ]; then
    bin="$(scripts/tools-venv.sh)"
    rm -f "$dist"/idemgen-*.whl
    # The same cargo build as above (same profile, package and features), so
    # maturin finds it fresh and only packs it.
    "$bin/maturin" build --release --locked --out "$dist"
    wheel="$(ls "$dist"/idemgen-"$version"-*.whl)"
    echo "wrote $wheel" >&2
fi

if [ "$what" = all ]; then
    # The binary alone, as the GitHub Action downloads it from a release.
    archive="$dist/idemgen-$host.tar.gz"
    tar -czf "$archive" -C "$(dirname "$binary")" "$(basename "$binary")"
    echo "wrote $archive" >&2
fi

if [ "$what" != pypi ]; then
    rm -f "$dist"/idemgen-*.tgz
    node npm/pack.mjs launcher "$dist" >&2
    node npm/pack.mjs platform "$host" "$binary" "$dist" >&2
fi
ls -l "$dist" >&2
