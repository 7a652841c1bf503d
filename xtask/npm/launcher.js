#!/usr/bin/env node
// The `seren-corpus-callosum` command of the npm package seren-corpus-callosum-rs: finds the
// binary that npm installed for this machine (one of the package's optionalDependencies) and runs
// it with this process's arguments, standard streams and environment, passing signals on and
// exiting as it exits. It downloads nothing.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

const PACKAGES = {
  "linux-x64": "seren-corpus-callosum-rs-linux-x64-gnu",
  "linux-arm64": "seren-corpus-callosum-rs-linux-arm64-gnu",
  "darwin-arm64": "seren-corpus-callosum-rs-darwin-arm64",
  "darwin-x64": "seren-corpus-callosum-rs-darwin-x64",
  "win32-x64": "seren-corpus-callosum-rs-win32-x64-gnu",
};

function fail(message) {
  process.stderr.write(`seren-corpus-callosum: ${message}\n`);
  process.exit(1);
}

function binary() {
  const platform = `${process.platform}-${process.arch}`;
  const name = PACKAGES[platform];
  if (!name) {
    fail(
      `no prebuilt binary for ${platform}; the packages cover ${Object.keys(PACKAGES).join(", ")}. ` +
        "Build from source instead: cargo install --locked seren-corpus-callosum",
    );
  }
  if (process.platform === "linux") {
    const report = process.report && process.report.getReport();
    if (report && report.header && !report.header.glibcVersionRuntime) {
      fail("the Linux binary needs glibc 2.28 or newer, and this system has none (musl?)");
    }
  }
  let dir;
  try {
    dir = path.dirname(require.resolve(`${name}/package.json`));
  } catch {
    fail(
      `${name} is not installed. npm skips an optional dependency when installing it fails or ` +
        "when optional dependencies are turned off (--omit=optional, --no-optional): install " +
        "seren-corpus-callosum-rs again with them on.",
    );
  }
  const exe = process.platform === "win32" ? "seren-corpus-callosum.exe" : "seren-corpus-callosum";
  return path.join(dir, "bin", exe);
}

const exe = binary();
// `init` prints host entries that launch this same package, not a path inside npx's cache.
const underNpx = __dirname.split(path.sep).includes("_npx");
const env = underNpx ? { ...process.env, SEREN_SCC_LAUNCHER: "npx" } : process.env;
const child = spawn(exe, process.argv.slice(2), { stdio: "inherit", env, windowsHide: true });

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    if (child.exitCode === null) child.kill(signal);
  });
}
child.on("error", (error) => fail(`cannot run ${exe}: ${error.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
