#!/usr/bin/env node
// The `idemgen` command of the npm package: runs the prebuilt binary of
// the platform package npm installed beside it (one optional dependency
// per platform; npm installs only the one whose os, cpu and libc match).
"use strict";

const { spawnSync } = require("node:child_process");

const PLATFORMS = {
  "linux x64": "@idemgen/linux-x64",
  "linux arm64": "@idemgen/linux-arm64",
  "darwin x64": "@idemgen/darwin-x64",
  "darwin arm64": "@idemgen/darwin-arm64",
  "win32 x64": "@idemgen/win32-x64",
};

function binaryPath() {
  const platform = `${process.platform} ${process.arch}`;
  const pkg = PLATFORMS[platform];
  if (!pkg) {
    throw new Error(
      `no prebuilt idemgen for ${platform} (there are: ${Object.keys(PLATFORMS).join(", ")}); ` +
        "build it from source with `cargo install --locked --path .` in a checkout",
    );
  }
  const exe = process.platform === "win32" ? "idemgen.exe" : "idemgen";
  try {
    return require.resolve(`${pkg}/bin/${exe}`);
  } catch {
    throw new Error(
      `${pkg}, the package with idemgen's binary for ${platform}, is not installed: ` +
        "npm leaves optional dependencies out with --omit=optional or --no-optional; install again without it",
    );
  }
}

let binary;
try {
  binary = binaryPath();
} catch (error) {
  console.error(`idemgen: ${error.message}`);
  process.exit(1);
}
const run = spawnSync(binary, process.argv.slice(2), { stdio: "inherit" });
if (run.error) {
  console.error(`idemgen: cannot run ${binary}: ${run.error.message}`);
  process.exit(1);
}
if (run.signal) {
  process.kill(process.pid, run.signal);
}
process.exit(run.status ?? 1);
