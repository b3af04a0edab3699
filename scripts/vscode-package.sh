#!/usr/bin/env bash
# Packages the VS Code extension in editors/vscode into a .vsix (never
# publishes it): installs the locked dependencies with `npm ci`, runs
# `vsce package` (the version locked in package-lock.json) and checks that
# the .vsix holds the client and its language-client library.
#
#   scripts/vscode-package.sh [OUT_DIR]   # default: a new temporary directory
set -euo pipefail
# OUT_DIR is relative to where the script was started.
out_dir="${1:-$(mktemp -d)}"
mkdir -p "$out_dir"
out_dir="$(cd "$out_dir" && pwd)"

cd "$(dirname "$0")/../editors/vscode"

# @vscode/vsce 3.9 needs Node.js 20 or later.
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' 2>/dev/null; then
    echo "scripts/vscode-package.sh needs Node.js 20 or later and npm on PATH" >&2
    exit 1
fi
npm ci --no-audit --no-fund
version="$(node -p 'require("./package.json").version')"
vsix="$out_dir/idemgen-$version.vsix"
# No repository URL to name yet; stdin closed so vsce can never wait on a prompt.
npx --yes @vscode/vsce package --allow-missing-repository --out "$vsix" </dev/null

if [ ! -s "$vsix" ]; then
    echo "vsce did not write $vsix" >&2
    exit 1
fi
contents="$(python3 -m zipfile -l "$vsix")"
for entry in extension/extension.js extension/package.json \
    extension/node_modules/vscode-languageclient/node.js; do
    if ! grep -q "$entry" <<<"$contents"; then
        echo "$vsix lacks $entry" >&2
        exit 1
    fi
done
echo "packaged $vsix ($(wc -c <"$vsix") bytes)"
