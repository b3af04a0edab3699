// Builds idemgen's npm packages as tarballs (`npm pack`), the way esbuild
// and biome ship: `idemgen`, a launcher with one optional dependency per
// platform, and `@idemgen/<os>-<cpu>`, one platform's binary.
//
//   node npm/pack.mjs launcher OUT_DIR
//   node npm/pack.mjs platform TARGET BINARY OUT_DIR
//
// TARGET is the binary's Rust target triple (x86_64-unknown-linux-gnu,
// ...). The version, licence and description are Cargo.toml's. Each
// package is staged under target/npm/ and packed into OUT_DIR; the path of
// each tarball is printed.
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

// Rust target triple → the platform package and its npm os/cpu/libc.
const TARGETS = {
  "x86_64-unknown-linux-gnu": { name: "linux-x64", os: "linux", cpu: "x64", libc: "glibc" },
  "aarch64-unknown-linux-gnu": { name: "linux-arm64", os: "linux", cpu: "arm64", libc: "glibc" },
  "x86_64-apple-darwin": { name: "darwin-x64", os: "darwin", cpu: "x64" },
  "aarch64-apple-darwin": { name: "darwin-arm64", os: "darwin", cpu: "arm64" },
  "x86_64-pc-windows-msvc": { name: "win32-x64", os: "win32", cpu: "x64" },
};

function fail(message) {
  console.error(`npm/pack.mjs: ${message}`);
  process.exit(2);
}

// The [package] table's string fields of Cargo.toml.
function cargoPackage() {
  const text = readFileSync(join(root, "Cargo.toml"), "utf8");
  const table = text.split(/^\[package\]\s*$/m)[1]?.split(/^\[/m)[0];
  if (!table) fail("Cargo.toml has no [package] table");
  const field = (key) => {
    const match = table.match(new RegExp(`^${key}\\s*=\\s*"([^"]*)"`, "m"));
    if (!match) fail(`Cargo.toml's [package] has no ${key}`);
    return match[1];
  };
  return { version: field("version"), license: field("license"), description: field("description") };
}

function pack(stage, outDir) {
  mkdirSync(outDir, { recursive: true });
  // npm is npm.cmd on Windows, which only a shell runs.
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", resolve(outDir)], {
    cwd: stage,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    shell: process.platform === "win32",
  });
  const [{ filename }] = JSON.parse(out);
  console.log(join(resolve(outDir), filename));
}

function stageDir(name) {
  const stage = join(root, "target", "npm", name);
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  return stage;
}

const cargo = cargoPackage();
const [command, ...args] = process.argv.slice(2);

if (command === "launcher" && args.length === 1) {
  const stage = stageDir("idemgen");
  mkdirSync(join(stage, "bin"));
  copyFileSync(join(root, "npm/idemgen/bin/idemgen.js"), join(stage, "bin/idemgen.js"));
  chmodSync(join(stage, "bin/idemgen.js"), 0o755);
  copyFileSync(join(root, "README.md"), join(stage, "README.md"));
  const optionalDependencies = Object.fromEntries(
    Object.values(TARGETS).map(({ name }) => [`@idemgen/${name}`, cargo.version]),
  );
  const manifest = {
    name: "idemgen",
    version: cargo.version,
    description: cargo.description,
    license: cargo.license,
    keywords: ["openapi", "idempotency", "lint", "x-idempotency"],
    bin: { idemgen: "bin/idemgen.js" },
    files: ["bin/idemgen.js"],
    engines: { node: ">=18" },
    optionalDependencies,
  };
  writeFileSync(join(stage, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  pack(stage, args[0]);
} else if (command === "platform" && args.length === 3) {
  const [target, binary, outDir] = args;
  const platform = TARGETS[target];
  if (!platform) fail(`no npm platform package for the target ${target} (known: ${Object.keys(TARGETS).join(", ")})`);
  const exe = platform.os === "win32" ? "idemgen.exe" : "idemgen";
  const stage = stageDir(platform.name);
  mkdirSync(join(stage, "bin"));
  copyFileSync(binary, join(stage, "bin", exe));
  chmodSync(join(stage, "bin", exe), 0o755);
  writeFileSync(
    join(stage, "README.md"),
    `# @idemgen/${platform.name}\n\nThe idemgen binary for ${target}. Install \`idemgen\`, which runs it.\n`,
  );
  const manifest = {
    name: `@idemgen/${platform.name}`,
    version: cargo.version,
    description: `The idemgen binary for ${target}`,
    license: cargo.license,
    os: [platform.os],
    cpu: [platform.cpu],
    ...(platform.libc ? { libc: [platform.libc] } : {}),
    files: [`bin/${exe}`],
    preferUnplugged: true,
  };
  writeFileSync(join(stage, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  pack(stage, outDir);
} else {
  fail("usage: node npm/pack.mjs launcher OUT_DIR | node npm/pack.mjs platform TARGET BINARY OUT_DIR");
}
