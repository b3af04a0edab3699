#!/usr/bin/env bash
# Installs the tools pinned with hashes in scripts/tools-requirements.txt
# (maturin, pre-commit, actionlint) into target/tools-venv, once: again
# only when that file changes. Runs hold a lock while installing, so two
# at once wait for each other instead of racing. Prints the venv's bin
# directory.
#
#   bin=$(scripts/tools-venv.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/tools-venv
requirements=scripts/tools-requirements.txt
mkdir -p target
exec 9>target/tools-venv.lock
flock 9
stamp="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ "$(cat "$venv/.installed" 2>/dev/null || true)" != "$stamp" ]; then
    echo "installing $requirements into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    # Wheels only, each checked against its hash: nothing is built here.
    if ! "$venv/bin/pip" install --quiet --require-hashes --no-deps --only-binary=:all: \
        -r "$requirements" >&2; then
        echo "scripts/tools-venv.sh: could not install $requirements (is PyPI reachable?)" >&2
        rm -rf "$venv"
        exit 1
    fi
    echo "$stamp" >"$venv/.installed"
fi
echo "$PWD/$venv/bin"
