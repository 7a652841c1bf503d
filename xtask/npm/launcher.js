#!/usr/bin/env node
// The `seren-corpus-callosum` command of the npm package seren-corpus-callosum-rs: finds the
// binary that npm installed for this machine (one of the package's optionalDependencies) and runs
// it with this process's arguments, standard streams and environment, passing signals on and
// ending as it ends: with its exit code, or by the signal that ended it. It downloads nothing.
"use strict";

const { spawn } = require("node:child_process");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");

const PACKAGES = {
  "linux-x64": "seren-corpus-callosum-rs-linux-x64-gnu",
  "linux-arm64": "seren-corpus-callosum-rs-linux-arm64-gnu",
  "darwin-arm64": "seren-corpus-callosum-rs-darwin-arm64",
  "darwin-x64": "seren-corpus-callosum-rs-darwin-x64",
  "win32-x64": "seren-corpus-callosum-rs-win32-x64-gnu",
};

const WINDOWS = process.platform === "win32";

// The signals that end a process unless it handles them, and that a process can handle: each one
// the launcher gets is sent on to the binary, which then ends (or not) as it would if it had been
// sent the signal itself. SIGUSR1 is among them, and so handled here, which also keeps Node's own
// meaning of it (opening the inspector, a debugger port anyone on this machine could attach to)
// from ever running; the binary gives SIGUSR1 no meaning, so it ends of it, as it would without
// the launcher. SIGKILL cannot be handled: the binary notices that itself (SEREN_SCC_LAUNCHER_PID).
// On Windows the console's events (Ctrl-C, Ctrl-Break, the window closed) reach the binary
// directly, since it shares the console; the launcher only keeps them from ending itself first, and
// waits for the binary's exit code. Sending them on would kill the binary outright (Node kills a
// Windows process for any signal), cutting its own graceful stop short.
const FORWARDED = WINDOWS
  ? ["SIGINT", "SIGBREAK", "SIGHUP"]
  : ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGPIPE"];

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
  const exe = WINDOWS ? "seren-corpus-callosum.exe" : "seren-corpus-callosum";
  return path.join(dir, "bin", exe);
}

// On Windows the binary learns that the launcher is gone (killed outright, which no handler sees)
// from a named pipe the launcher holds open: the binary connects, and the pipe breaks when this
// process ends, however it ends. Resolves to whether the pipe is up; without it the binary is not
// told to watch. Kept in a variable so nothing collects it while the binary runs.
let pipe = null;
function launcherPipe() {
  if (!WINDOWS) return Promise.resolve(true);
  return new Promise((resolve) => {
    const server = net.createServer((socket) => {
      socket.on("error", () => {});
      socket.unref();
    });
    server.on("error", () => resolve(false));
    server.listen(`\\\\.\\pipe\\seren-corpus-callosum-launcher-${process.pid}`, () => {
      server.unref();
      pipe = server;
      resolve(true);
    });
  });
}

// Ends this process as the binary ended: with its exit code, or by the same signal. A signal is
// raised again on this process with its default action (a handler Node installs for a signal, or
// one this file added, is taken off first: libuv puts back the default when a signal's last
// listener goes); should this process outlive that, or on Windows, where no POSIX signal can be
// raised, it exits 128 + the signal's number, as a shell reports a death by signal.
function endAs(code, signal) {
  if (!signal) process.exit(code ?? 1);
  const number = os.constants.signals[signal] ?? 0;
  if (!WINDOWS) {
    process.removeAllListeners(signal);
    try {
      // For a signal Node itself catches or ignores (SIGPIPE, SIGUSR1, SIGSEGV, ...): listening
      // and then not listening leaves its default action in place.
      process.on(signal, () => {});
      process.removeAllListeners(signal);
    } catch {
      // SIGKILL and SIGSTOP cannot be listened to; their action is always the default.
    }
    process.kill(process.pid, signal);
  }
  setTimeout(() => process.exit(128 + number), WINDOWS ? 0 : 1000);
}

async function main() {
  const exe = binary();
  const env = { ...process.env };
  // `init` prints host entries that launch this same package, not a path inside npx's cache.
  if (__dirname.split(path.sep).includes("_npx")) env.SEREN_SCC_LAUNCHER = "npx";
  // The binary stops by itself once this process is gone (src/launcher.rs).
  delete env.SEREN_SCC_LAUNCHER_PID;
  if (await launcherPipe()) env.SEREN_SCC_LAUNCHER_PID = String(process.pid);
  const child = spawn(exe, process.argv.slice(2), { stdio: "inherit", env, windowsHide: true });
  const running = () => child.exitCode === null && child.signalCode === null;
  for (const signal of FORWARDED) {
    process.on(signal, () => {
      if (!WINDOWS && running()) child.kill(signal);
    });
  }
  child.on("error", (error) => fail(`cannot run ${exe}: ${error.message}`));
  child.on("exit", endAs);
}

main();
