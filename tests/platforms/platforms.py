"""Every platform's build, tried on this Linux x86_64 machine as a host would use it (contract §7).

What `cargo xtask dist` wrote into target/dist/ is taken apart as a user's installer would:

- windows/*: the `.exe` out of the `win_amd64` wheel, run under Wine as a stdio MCP server driven by
  the official Python MCP SDK: initialize, the four tools, a search answered by a store on
  loopback, an `add_store` that lands in the overlay under the Windows profile
  (%APPDATA%\\seren-corpus-callosum\\config\\runtime-stores.json) with its token in the Credential
  Manager (Wine's), and is still there, token and all, after a restart, and an exit within seconds
  once stdin closes. Its import table is read with MinGW's
  objdump: no DLL beyond Windows' own.
- linux-arm64/*: the same session with the aarch64 binary out of its manylinux wheel, under
  qemu-aarch64, its config and overlay under $XDG_CONFIG_HOME.
- npm/win32: the launcher from the npm package, made to believe it runs on win32, picks the `.exe`
  of the win32 package (both unpacked from their tarballs) and runs it (under Wine).
- macos/*: each darwin binary's Mach-O load commands, read here (not by the xtask's reader): the
  CPU, the minimum macOS, only libraries of /usr/lib, an embedded code signature on arm64.
- artifacts: five wheels with their tags, five platform npm packages with `os`/`cpu` in the
  launcher's optionalDependencies, five bundles each passing `mcpb validate` and carrying the
  wheel's very binary, server.json naming every bundle.

run.sh starts nothing but this script; this script starts the sample stores (`demo`, the host's
binary) and everything else. One line per case (`ok  ...` or `FAIL  ...`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import time
import traceback
import zipfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

DIST_NAME = "seren-corpus-callosum-rs"
COMMAND = "seren-corpus-callosum"
TOOLS = {"search", "list_stores", "add_store", "remove_store"}
QUERY = "that CUDA thing on the Xavier"
TOKEN = "platforms-test-token-7f3a"  # a store token given to add_store
WHEEL_TAGS = {
    "linux-x64-gnu": "manylinux_2_28_x86_64",
    "linux-arm64-gnu": "manylinux_2_28_aarch64",
    "darwin-arm64": "macosx_11_0_arm64",
    "darwin-x64": "macosx_10_15_x86_64",
    "win32-x64-gnu": "win_amd64",
}
NPM_PLATFORMS = {
    "linux-x64-gnu": ("linux", "x64"),
    "linux-arm64-gnu": ("linux", "arm64"),
    "darwin-arm64": ("darwin", "arm64"),
    "darwin-x64": ("darwin", "x64"),
    "win32-x64-gnu": ("win32", "x64"),
}
MCPB_OS = {"linux-x64-gnu": "linux", "linux-arm64-gnu": "linux", "darwin-arm64": "darwin",
           "darwin-x64": "darwin", "win32-x64-gnu": "win32"}
# DLLs every Windows 10 and 11 has (api-ms-win-* API sets too).
WINDOWS_DLLS = {"advapi32.dll", "bcrypt.dll", "bcryptprimitives.dll", "combase.dll", "crypt32.dll",
                "kernel32.dll", "msvcrt.dll", "ntdll.dll", "ole32.dll", "oleaut32.dll", "secur32.dll",
                "shell32.dll", "user32.dll", "userenv.dll", "ws2_32.dll", "ucrtbase.dll"}
REQUEST_TIMEOUT = 60.0  # seconds, one MCP request (emulated: qemu and Wine are slower)
SESSION_TIMEOUT = 240.0  # seconds, a whole session including start and teardown
EXIT_WAIT = 15.0  # seconds a server may take to exit once its stdin is closed


class CheckFailed(Exception):
    pass


def check(condition: Any, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def structured(result: Any, what: str) -> dict:
    check(not result.is_error, f"{what} is a tool error: {result.content!r}")
    content = result.structured_content
    check(isinstance(content, dict), f"{what}: no structured content: {result.content!r}")
    return content


def processes() -> list[str]:
    """Every process's command line (Wine shows a Windows program's as Windows names it)."""
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [line.strip() for line in ps.splitlines()[1:]]


def windows_path(path: Path) -> str:
    """`path` as a Windows program under Wine names it: the Unix root is drive Z:."""
    return "Z:" + str(path).replace("/", "\\")


def flatten(e: BaseException) -> list[BaseException]:
    if isinstance(e, BaseExceptionGroup):
        return [leaf for sub in e.exceptions for leaf in flatten(sub)]
    return [e]


def wheel_binary(dist: Path, suffix: str, out: Path) -> Path:
    """The binary out of `suffix`'s wheel, as pip would install it."""
    wheels = sorted(dist.glob(f"*-{WHEEL_TAGS[suffix]}.whl"))
    check(len(wheels) == 1, f"one wheel tagged {WHEEL_TAGS[suffix]} expected, found {[w.name for w in wheels]}")
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = [n for n in wheel.namelist() if re.search(r"\.data/scripts/" + re.escape(COMMAND) + r"(\.exe)?$", n)]
        check(len(names) == 1, f"{wheels[0].name} holds no single script: {names}")
        out.mkdir(parents=True, exist_ok=True)
        target = out / Path(names[0]).name
        target.write_bytes(wheel.read(names[0]))
    target.chmod(0o755)
    return target


class Host:
    """One system the binary runs on here: how it is started, and where its config lives."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], config_dir: Path, cwd: Path,
                 keychain: bool):
        self.name, self.command, self.env, self.config_dir, self.cwd = name, command, env, config_dir, cwd
        # Whether a token given to add_store is kept in the system's keychain (Windows: the
        # Credential Manager, Wine's own here) rather than inline in the overlay.
        self.keychain = keychain
        # More config entries (YAML lines under `stores:`), and the stores the config names.
        self.extra_stores = ""
        self.configured = {"facts"}
        # Text in the command line of the `mcp` store's server, when there is one.
        self.marker: str | None = None

    def params(self, *args: str) -> StdioServerParameters:
        return StdioServerParameters(command=self.command[0], args=[*self.command[1:], *args],
                                     env=self.env, cwd=str(self.cwd))


class Run:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.dist: Path = args.dist
        self.work: Path = args.work
        self.passed = 0
        self.failed = 0
        self.stores: dict[str, str] = {}

    def record(self, case: str, ok: bool, detail: str) -> None:
        print(f"{'ok  ' if ok else 'FAIL'}  {case}  {detail}", flush=True)
        self.passed += ok
        self.failed += not ok

    def case(self, name: str, fn, *args) -> None:
        try:
            detail = fn(*args)
        except Exception as e:  # noqa: BLE001 - a harness error fails the case, not the run
            leaves = flatten(e)
            if all(isinstance(x, CheckFailed) for x in leaves):  # raised inside the SDK's task group
                self.record(name, False, "; ".join(str(x) for x in leaves))
            else:
                self.record(name, False, "error: " + "; ".join(f"{type(x).__name__}: {x}" for x in leaves))
                traceback.print_exception(e)
        else:
            self.record(name, True, detail or "")

    # --- the sample stores ---------------------------------------------------------------------
    def start_stores(self) -> subprocess.Popen:
        log = (self.work / "demo.log").open("w")
        demo = subprocess.Popen(
            [str(self.args.host_bin), "demo", "-c", str(self.work / "no-such-config.yaml"),
             "--host", "127.0.0.1", "--port", "0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
            env={**os.environ, "SEREN_SCC_RUNTIME_STORES": str(self.work / "demo.overlay.json")})
        deadline = time.monotonic() + 60
        pattern = re.compile(r"^\s+(episodic|facts)\s+\S+\s+(http://\S+)", re.M)
        while time.monotonic() < deadline:
            self.stores = dict(pattern.findall((self.work / "demo.log").read_text()))
            if len(self.stores) == 2:
                return demo
            check(demo.poll() is None, f"demo exited: {(self.work / 'demo.log').read_text()}")
            time.sleep(0.1)
        raise CheckFailed("demo printed no store urls within 60 s")

    # --- a stdio session, twice, then an exit on EOF -------------------------------------------
    def write_config(self, host: Host) -> Path:
        host.config_dir.mkdir(parents=True, exist_ok=True)
        config = host.config_dir / "seren-corpus-callosum.yaml"
        config.write_text(
            "federation:\n  stores:\n"
            f"    - {{name: facts, type: seren_loci, url: {self.stores['facts']}}}\n" + host.extra_stores)
        overlay = host.config_dir / "runtime-stores.json"
        overlay.unlink(missing_ok=True)
        return overlay

    async def session(self, host: Host, first: bool) -> str:
        log = (self.work / f"{host.name}-{'first' if first else 'second'}.stderr.log").open("w")
        try:
            with anyio.fail_after(SESSION_TIMEOUT):
                async with Client(stdio_client(host.params("stdio"), errlog=log), mode="legacy",
                                  read_timeout_seconds=REQUEST_TIMEOUT) as client:
                    return await self.exercise(client, host, first)
        finally:
            log.close()

    async def exercise(self, client: Client, host: Host, first: bool) -> str:
        info = client.server_info
        check(info is not None and info.name == COMMAND and info.version == self.args.version,
              f"initialize answered {info!r}")
        listed = await client.list_tools()
        names = {t.name for t in listed.tools}
        check(names == TOOLS, f"tools {sorted(names)}, expected {sorted(TOOLS)}")
        answer = structured(await client.call_tool("search", {"query": QUERY}), "search")
        hits = answer.get("hits") or []
        # The first session starts with the config's one store; the second with the one it added too.
        expected = host.configured | (set() if first else {"episodes"})
        check(hits and {h.get("store") for h in hits} == expected,
              f"search gave hits from {sorted({h.get('store') for h in hits})}, expected {sorted(expected)}")
        overlay = host.config_dir / "runtime-stores.json"
        if host.marker is not None:
            running = [line for line in processes() if host.marker in line]
            check(len(running) == 1, f"the mcp store's server is not running once: {running}")
        if first:
            added = await client.call_tool("add_store", {"name": "episodes", "type": "seren_memory",
                                                         "url": self.stores["episodic"], "token": TOKEN})
            structured(added, "add_store")
            check(overlay.is_file(), f"add_store wrote no overlay at {overlay}")
            rows = json.loads(overlay.read_text())
            check([r.get("name") for r in rows] == ["episodes"], f"the overlay holds {rows}")
            # Where the system has a keychain that outlives a reboot, the token goes there and the
            # overlay names it; elsewhere it stays inline (the file is the user's alone).
            if host.keychain:
                check(rows[0].get("token_keyring") == "seren-corpus-callosum/episodes" and "token" not in rows[0]
                      and TOKEN not in overlay.read_text(), f"the token was not kept in the keychain: {rows}")
            else:
                check(rows[0].get("token") == TOKEN, f"the token is not inline: {rows}")
        stores = structured(await client.call_tool("list_stores", {}), "list_stores")
        listed_names = {s.get("name"): s for s in stores.get("stores") or []}
        check(listed_names.get("episodes", {}).get("managed") is True,
              f"list_stores after {'add_store' if first else 'a restart'} shows {sorted(listed_names)}")
        answer = structured(await client.call_tool("search", {"query": QUERY}), "search over both")
        both = {h.get("store") for h in answer.get("hits") or []}
        check(both == host.configured | {"episodes"}, f"search over every store gave hits from {both}")
        kept = "token in the keychain" if host.keychain else "token inline"
        if not first:
            return f"the added store and its token came back: hits from {sorted(both)}"
        return (f"{len(hits)} hits from {sorted(expected)}, then from {sorted(both)}; "
                f"overlay {overlay.relative_to(self.work)}, {kept}")

    def exits_on_eof(self, host: Host) -> str:
        """Started bare, given one initialize, then its stdin closed: how long until it exits."""
        env = {**os.environ, **host.env}
        proc = subprocess.Popen([*host.command, "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=(self.work / f"{host.name}-eof.stderr.log").open("w"), env=env,
                                cwd=host.cwd)
        try:
            hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "platforms.py", "version": "0"}}}
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write((json.dumps(hello) + "\n").encode())
            proc.stdin.flush()
            line = proc.stdout.readline()
            check(b'"result"' in line and b"\r" not in line, f"initialize answered {line[:200]!r}")
            started = time.monotonic()
            proc.stdin.close()
            try:
                code = proc.wait(timeout=EXIT_WAIT)
            except subprocess.TimeoutExpired:
                raise CheckFailed(f"still running {EXIT_WAIT:.0f} s after stdin closed") from None
            took = time.monotonic() - started
            rest = proc.stdout.read()
            check(code == 0, f"exited with {code} after stdin closed")
            check(rest == b"", f"wrote {rest[:200]!r} to stdout after initialize")
            return f"exit 0 {took:.1f} s after stdin closed; one LF-framed line on stdout"
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def sessions(self, host: Host) -> None:
        self.write_config(host)
        self.case(f"{host.name}/session", lambda: anyio.run(self.session, host, True))
        self.case(f"{host.name}/restart", lambda: anyio.run(self.session, host, False))
        self.case(f"{host.name}/eof", self.exits_on_eof, host)

    # --- Windows under Wine --------------------------------------------------------------------
    def windows(self) -> Host:
        exe = wheel_binary(self.dist, "win32-x64-gnu", self.work / "windows")
        prefix = self.args.wineprefix
        users = prefix / "drive_c" / "users"
        profile = next((p for p in users.iterdir() if p.name != "Public"), None)
        check(profile is not None, f"the Wine prefix {prefix} has no user profile")
        appdata = profile / "AppData" / "Roaming"
        host = Host("windows", [self.args.wine, str(exe)],
                    {"WINEPREFIX": str(prefix), "WINEDEBUG": "-all", "SEREN_SCC_LOG": "info"},
                    appdata / "seren-corpus-callosum" / "config", self.work / "windows", keychain=True)
        # An `mcp` store over stdio: the .exe itself in stdio mode fanning the facts store, started
        # by the callosum in a job object of its own (and ended with it: `leftovers`).
        inner = self.work / "windows" / "inner.yaml"
        inner.write_text(f"federation:\n  stores:\n    - {{name: facts, type: seren_loci, url: {self.stores['facts']}}}\n")
        host.extra_stores = (f"    - {{name: inner, type: mcp, preset: callosum, command: '{windows_path(exe)}', "
                             f"args: [stdio, -c, '{windows_path(inner)}']}}\n")
        host.configured = {"facts", "inner"}
        host.marker = windows_path(inner)
        return host

    def leftovers(self, host: Host) -> str:
        """Once every session has ended, no process of the build is left running: the `mcp`
        store's server went with its callosum (its job object)."""
        marks = [str(self.work / host.name), windows_path(self.work / host.name)]
        deadline = time.monotonic() + 10
        while True:
            left = [line for line in processes() if any(mark in line for mark in marks)]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        check(not left, f"still running after the sessions ended: {left}")
        return "no process of the build is left, the mcp store's server neither"

    def windows_imports(self) -> str:
        exe = self.work / "windows" / f"{COMMAND}.exe"
        out = subprocess.run([self.args.objdump, "-p", str(exe)], capture_output=True, text=True, check=True).stdout
        dlls = sorted({m.lower() for m in re.findall(r"DLL Name: (\S+)", out)})
        check(dlls, "objdump found no imports")
        foreign = [d for d in dlls if d not in WINDOWS_DLLS and not d.startswith("api-ms-win-")]
        check(not foreign, f"imports DLLs Windows does not ship: {foreign}")
        return f"imports {', '.join(dlls)}"

    def npm_launcher_win32(self) -> str:
        root = self.work / "npm-win32" / "node_modules"
        for tarball, name in [(self.one(f"{DIST_NAME}-[0-9]*.tgz"), DIST_NAME),
                              (self.one(f"{DIST_NAME}-win32-x64-gnu-*.tgz"), f"{DIST_NAME}-win32-x64-gnu")]:
            with tarfile.open(tarball) as tar:
                tar.extractall(root / "_unpack" / name, filter="data")
            shutil.move(str(root / "_unpack" / name / "package"), str(root / name))
        launcher = root / DIST_NAME / "bin" / f"{COMMAND}.js"
        # The launcher as Node runs it on Windows: process.platform is win32. Node here cannot run
        # an .exe, so spawn is handed to Wine, and told which file the launcher chose.
        harness = f"""
Object.defineProperty(process, "platform", {{ value: "win32" }});
Object.defineProperty(process, "arch", {{ value: "x64" }});
const cp = require("node:child_process");
const spawn = cp.spawn;
cp.spawn = (file, args, options) => {{
  process.stderr.write("launcher runs " + file + "\\n");
  return spawn({json.dumps(self.args.wine)}, [file, ...args], options);
}};
process.argv = [process.argv[0], {json.dumps(str(launcher))}, "--version"];
require({json.dumps(str(launcher))});
"""
        env = {**os.environ, "WINEPREFIX": str(self.args.wineprefix), "WINEDEBUG": "-all"}
        # The launcher's pipe for the binary to watch (\\.\pipe\seren-corpus-callosum-launcher-<pid>)
        # is, on Linux, a socket file of that name in the working directory: made in npm-win32/.
        ran = subprocess.run(["node", "-e", harness], capture_output=True, text=True, env=env, timeout=120,
                             cwd=root.parent)
        chosen = re.search(r"launcher runs (\S+)", ran.stderr)
        expected = root / f"{DIST_NAME}-win32-x64-gnu" / "bin" / f"{COMMAND}.exe"
        check(chosen and Path(chosen.group(1)) == expected, f"the launcher chose {chosen and chosen.group(1)}: {ran.stderr}")
        check(ran.returncode == 0 and ran.stdout.strip() == f"{COMMAND} {self.args.version}",
              f"exit {ran.returncode}, stdout {ran.stdout!r}, stderr {ran.stderr[-300:]!r}")
        return f"on win32 it runs {expected.relative_to(self.work)}: {ran.stdout.strip()}"

    # --- Linux aarch64 under qemu --------------------------------------------------------------
    def arm64(self) -> Host:
        binary = wheel_binary(self.dist, "linux-arm64-gnu", self.work / "arm64")
        home = self.work / "arm64" / "home"
        config_home = self.work / "arm64" / "config"
        home.mkdir(parents=True, exist_ok=True)
        return Host("linux-arm64", [self.args.qemu, "-L", self.args.arm64_sysroot, str(binary)],
                    {"HOME": str(home), "XDG_CONFIG_HOME": str(config_home), "SEREN_SCC_LOG": "info"},
                    config_home / "seren-corpus-callosum", self.work / "arm64", keychain=False)

    # --- macOS: the headers ----------------------------------------------------------------------
    def macos(self, suffix: str, cpu: str, min_os: str) -> str:
        data = wheel_binary(self.dist, suffix, self.work / suffix).read_bytes()
        magic, cputype, _, _, ncmds = struct.unpack_from("<5I", data, 0)
        check(magic == 0xFEEDFACF, f"not a 64-bit Mach-O (magic {magic:#x})")
        check({0x0100000C: "arm64", 0x01000007: "x86_64"}.get(cputype) == cpu, f"CPU type {cputype:#x}, not {cpu}")
        at, dylibs, minos, signed = 32, [], None, False
        for _ in range(ncmds):
            cmd, size = struct.unpack_from("<2I", data, at)
            if cmd in (0xC, 0x80000018, 0x8000001F, 0x20, 0x80000023):
                (offset,) = struct.unpack_from("<I", data, at + 8)
                dylibs.append(data[at + offset:data.index(b"\0", at + offset)].decode())
            elif cmd == 0x32:
                (version,) = struct.unpack_from("<I", data, at + 12)
                minos = f"{version >> 16}.{(version >> 8) & 0xFF}"
            elif cmd == 0x1D:
                (offset,) = struct.unpack_from("<I", data, at + 8)
                signed = data[offset:offset + 4] == b"\xfa\xde\x0c\xc0"
            at += size
        check(minos == min_os, f"minimum macOS {minos}, expected {min_os}")
        check("/usr/lib/libSystem.B.dylib" in dylibs, f"does not load libSystem: {dylibs}")
        foreign = [d for d in dylibs if not (d.startswith("/usr/lib/") and d.endswith(".dylib"))]
        check(not foreign, f"loads what not every Mac has (a framework?): {foreign}")
        check(signed or cpu != "arm64", "no embedded code signature: Apple silicon would refuse to run it")
        return f"{cpu}, macOS {minos}+, loads {', '.join(dylibs)}{', ad-hoc signed' if signed else ''}"

    # --- what was published -----------------------------------------------------------------------
    def one(self, pattern: str) -> Path:
        found = sorted(self.dist.glob(pattern))
        check(len(found) == 1, f"one {pattern} expected in {self.dist}, found {[f.name for f in found]}")
        return found[0]

    def artifacts(self) -> str:
        launcher_tgz = self.one(f"{DIST_NAME}-[0-9]*.tgz")
        with tarfile.open(launcher_tgz) as tar:
            launcher = json.load(tar.extractfile("package/package.json"))
        optional = launcher.get("optionalDependencies") or {}
        server = json.loads((self.dist / "server.json").read_text())
        bundles_listed = {p["identifier"].rsplit("/", 1)[-1] for p in server["packages"] if p["registryType"] == "mcpb"}
        for suffix, tag in WHEEL_TAGS.items():
            self.one(f"*-{tag}.whl")
            package = f"{DIST_NAME}-{suffix}"
            check(optional.get(package) == self.args.version, f"the launcher's optionalDependencies lack {package}")
            with tarfile.open(self.one(f"{package}-[0-9]*.tgz")) as tar:
                manifest = json.load(tar.extractfile("package/package.json"))
            os_, cpu = NPM_PLATFORMS[suffix]
            check(manifest.get("os") == [os_] and manifest.get("cpu") == [cpu], f"{package} says os {manifest.get('os')} cpu {manifest.get('cpu')}")
            bundle = self.one(f"{DIST_NAME}-{self.args.version}-{suffix}.mcpb")
            check(bundle.name in bundles_listed, f"server.json does not list {bundle.name}")
        check(len(optional) == 5 and len(bundles_listed) == 5, f"{len(optional)} npm platforms, {len(bundles_listed)} bundles listed")
        return "5 wheels, 5 platform packages in the launcher's optionalDependencies, 5 bundles in server.json"

    def bundle(self, suffix: str) -> str:
        bundle = self.one(f"{DIST_NAME}-{self.args.version}-{suffix}.mcpb")
        unpacked = self.work / "mcpb" / suffix
        with zipfile.ZipFile(bundle) as z:
            z.extractall(unpacked)
        manifest = json.loads((unpacked / "manifest.json").read_text())
        check(manifest["compatibility"]["platforms"] == [MCPB_OS[suffix]], f"platforms {manifest['compatibility']['platforms']}")
        entry = unpacked / manifest["server"]["entry_point"]
        wheel = wheel_binary(self.dist, suffix, self.work / "wheel-of" / suffix)
        digest = hashlib.sha256(entry.read_bytes()).hexdigest()
        check(digest == hashlib.sha256(wheel.read_bytes()).hexdigest(), "the bundle's binary is not the wheel's")
        ran = subprocess.run([self.args.mcpb, "validate", str(unpacked / "manifest.json")], capture_output=True, text=True)
        check(ran.returncode == 0, f"mcpb validate: {ran.stdout[-300:]} {ran.stderr[-300:]}")
        return f"mcpb validate passes; {manifest['server']['entry_point']} is the wheel's binary"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--host-bin", type=Path, required=True)
    parser.add_argument("--wine", default="wine")
    parser.add_argument("--wineprefix", type=Path, required=True)
    parser.add_argument("--objdump", default="x86_64-w64-mingw32-objdump")
    parser.add_argument("--qemu", default="qemu-aarch64")
    parser.add_argument("--arm64-sysroot", default="/usr/aarch64-linux-gnu")
    parser.add_argument("--mcpb", required=True)
    args = parser.parse_args()
    r = Run(args)
    r.case("artifacts", r.artifacts)
    for suffix in WHEEL_TAGS:
        r.case(f"mcpb/{suffix}", r.bundle, suffix)
    r.case("macos/arm64", r.macos, "darwin-arm64", "arm64", "11.0")
    r.case("macos/x86_64", r.macos, "darwin-x64", "x86_64", "10.15")
    demo = r.start_stores()
    try:
        windows = r.windows()
        r.case("windows/imports", r.windows_imports)
        r.sessions(windows)
        r.case("windows/leftovers", r.leftovers, windows)
        r.case("npm/win32", r.npm_launcher_win32)
        r.sessions(r.arm64())
    finally:
        demo.terminate()
        demo.wait(timeout=10)
    print(f"cases: {r.passed} ok, {r.failed} failing", flush=True)
    return 0 if r.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
