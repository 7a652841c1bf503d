"""This machine's (Linux x86_64) release artifacts in target/dist/, installed and run as a user with no
Rust toolchain would; tests/platforms tries the other platforms'.

run.sh takes cargo and rustc off PATH and runs this with the venv that holds uv, auditwheel and the
official Python MCP SDK. Every case prints one line (`ok  CASE  detail` or `FAIL  CASE  detail`):

- toolchain: neither cargo nor rustc can be found;
- auditwheel: `auditwheel show` finds the wheel consistent with the manylinux policy its tag claims;
- uv: the wheel installed by `uv pip install --offline` into a fresh venv prints the crate's version;
- uvx/stdio: `uvx --offline --from <wheel> seren-corpus-callosum stdio`, spawned over stdio by the
  MCP SDK as a host spawns it: four tools listed, a search answered by a stub store;
- uvx/init: `init` from uvx writes the starter config and prints host entries that run uvx again;
- demo: the installed binary's `demo`, started in an empty directory, answers a search over HTTP;
- npm/install: the two tarballs installed with `npm install --offline` into a fresh project, from
  an empty npm cache, with the platform package's os/cpu/libc and no install scripts;
- npx/stdio: `npx --no-install seren-corpus-callosum stdio` driven by the same MCP client;
- npx/init: `init` through the launcher prints entries that run `npx -y seren-corpus-callosum-rs`;
- mcpb/validate: the bundle unpacked, and `mcpb validate` passing on its manifest;
- mcpb/stdio: the bundle's mcp_config, with ${__dirname} and ${user_config.config} put in as a
  host does, driven by the MCP client;
- server.json: package types, versions, identifiers, every bundle's sha256, the description's
  length, and the ownership marks (mcpName, `mcp-name:`) in what is published.

Exits 0 when every case passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import traceback
import urllib.request
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

COMMAND = "seren-corpus-callosum"
DIST_NAME = "seren-corpus-callosum-rs"
TOOLS = {"search", "list_stores", "add_store", "remove_store"}
QUERY = "that CUDA thing on the Xavier"
PACKAGE_TYPES = {"pypi", "npm", "mcpb", "cargo"}
# This machine's artifacts among every platform's (tests/platforms tries the others).
HOST_WHEEL = "*-manylinux_2_28_x86_64.whl"
HOST_NPM = f"{DIST_NAME}-linux-x64-gnu-[0-9]*.tgz"
HOST_BUNDLE = f"{DIST_NAME}-*-linux-x64-gnu.mcpb"
REQUEST_TIMEOUT = 30.0  # seconds, each MCP request
CASE_TIMEOUT = 120.0  # seconds, a whole MCP case, uvx's unpacking of the wheel included
COMMAND_TIMEOUT = 120  # seconds, each command run here


class CheckFailed(Exception):
    pass


def check(condition: Any, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def stub_store() -> str:
    """A SerenMemory store on loopback that answers every search with two hits."""
    hits = [
        {"id": f"stub-{i}", "content": f"the stub's memory {i}", "tier": "short", "topic": "t",
         "score": 0.9 - i / 10, "raw_distance": 0.1 * i, "metadata": {}}
        for i in range(2)
    ]
    body = json.dumps({"hits": hits}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, **kwargs)


def ran(result: subprocess.CompletedProcess[str], what: str) -> str:
    check(result.returncode == 0,
          f"{what} exited {result.returncode}: {(result.stderr or result.stdout).strip()[-600:]}")
    return result.stdout


async def drive(command: str, args: list[str], env: dict[str, str], cwd: Path, log: Path) -> str:
    """Spawns the server as a host does and runs the tools a host needs."""
    with log.open("w") as errlog:
        params = StdioServerParameters(command=command, args=args, env=env, cwd=str(cwd))
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=REQUEST_TIMEOUT) as client:
            listed = await client.list_tools()
            names = {t.name for t in listed.tools}
            check(names == TOOLS, f"tools {sorted(names)}, expected {sorted(TOOLS)}")
            result = await client.call_tool("search", {"query": QUERY})
            check(not result.is_error, f"search failed: {result.content}")
            answer = result.structured_content or {}
            hits = answer.get("hits") or []
            check([h.get("id") for h in hits] == ["stub-0", "stub-1"],
                  f"search hits {[h.get('id') for h in hits]}, expected the stub's two")
            check({h.get("store") for h in hits} == {"stub"}, f"hits from {[h.get('store') for h in hits]}")
            stores = (await client.call_tool("list_stores", {})).structured_content or {}
            return f"4 tools; search: {len(hits)} hits from the stub; list_stores: {len(stores.get('stores') or [])} store"


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.dist: Path = args.dist
        self.work: Path = args.work
        self.passed = 0
        self.failed = 0
        self.store = stub_store()
        self.config = self.work / "callosum.yaml"
        self.config.write_text(
            f"federation:\n  stores:\n    - {{name: stub, type: seren_memory, url: {self.store}}}\n")
        # A home of its own: nothing of the user's (config, caches) is read or written.
        self.home = self.work / "home"
        self.home.mkdir()
        self.env = {
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "UV_CACHE_DIR": str(self.home / ".cache" / "uv"),
            "UV_NO_CONFIG": "1",
            "npm_config_cache": str(self.home / ".npm"),
            "npm_config_update_notifier": "false",
            "PATH": os.environ["PATH"],
        }

    def one(self, pattern: str) -> Path:
        found = sorted(self.dist.glob(pattern))
        check(len(found) == 1, f"expected one {pattern} in {self.dist}, found {[p.name for p in found]}")
        return found[0]

    def case(self, name: str, body) -> None:
        try:
            detail = body()
        except CheckFailed as e:
            self.record(name, False, str(e))
        except Exception as e:  # noqa: BLE001 - a harness error fails its case, not the run
            self.record(name, False, f"error: {type(e).__name__}: {e}")
            traceback.print_exc()
        else:
            self.record(name, True, detail or "")

    def mcp_case(self, name: str, command: str, args: list[str], cwd: Path, extra_env: dict[str, str] | None = None) -> None:
        log = self.work / f"{name.replace('/', '-')}.stderr.log"
        env = {**self.env, "SEREN_SCC_RUNTIME_STORES": str(self.work / f"{name.replace('/', '-')}.overlay.json")}
        env.update(extra_env or {})

        async def body() -> str:
            with anyio.fail_after(CASE_TIMEOUT):
                return await drive(command, args, env, cwd, log)

        def sync() -> str:
            try:
                return anyio.run(body)
            except BaseException as e:  # an SDK error inside a task group arrives as a group
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                leaves = flatten(e)
                tail = log.read_text(errors="replace").strip().splitlines()[-8:] if log.exists() else []
                raise CheckFailed("; ".join(str(x) for x in leaves) + "".join(f"\n      | {t}" for t in tail)) from e

        self.case(name, sync)

    def record(self, name: str, ok: bool, detail: str) -> None:
        print(f"{'ok' if ok else 'FAIL'}  {name}  {detail}", flush=True)
        self.passed += ok
        self.failed += not ok

    # --- the cases -------------------------------------------------------------------------------

    def toolchain(self) -> str:
        found = {tool: shutil.which(tool) for tool in ("cargo", "rustc", "rustup")}
        check(not any(found.values()), f"a Rust toolchain is on PATH: {found}")
        return "no cargo, rustc or rustup on PATH"

    def auditwheel(self) -> str:
        wheel = self.one(HOST_WHEEL)
        claimed = re.findall(r"manylinux_\d+_\d+_\w+?(?=[.-])", wheel.name)
        check(claimed, f"{wheel.name} claims no manylinux tag")
        out = ran(run([self.args.auditwheel, "show", str(wheel)]), "auditwheel show")
        text = " ".join(out.split())
        check(f'consistent with the following platform tag: "{claimed[0]}"' in text,
              f"auditwheel does not find {wheel.name} consistent with {claimed[0]}: {text[:400]}")
        check(claimed[0].startswith(self.args.policy), f"the tag {claimed[0]} is not {self.args.policy}")
        return f"{wheel.name}: consistent with {claimed[0]}"

    def uv_install(self) -> str:
        wheel = self.one(HOST_WHEEL)
        venv = self.work / "uv-venv"
        ran(run([self.args.uv, "venv", "--offline", "--python", sys.executable, str(venv)], env=self.env), "uv venv")
        ran(run([self.args.uv, "pip", "install", "--offline", "--python", str(venv / "bin" / "python"), str(wheel)],
                env=self.env), "uv pip install")
        version = ran(run([str(venv / "bin" / COMMAND), "--version"]), "--version").strip()
        check(version == f"{COMMAND} {self.args.version}", f"--version printed {version!r}")
        return f"{venv.name}/bin/{COMMAND} --version: {version}"

    def uvx_init(self) -> str:
        wheel = self.one(HOST_WHEEL)
        out = ran(run([self.args.uvx, "--offline", "--from", str(wheel), COMMAND, "init"], env=self.env, cwd=self.work),
                  "uvx ... init")
        written = self.home / ".config" / COMMAND / f"{COMMAND}.yaml"
        check(written.is_file(), f"init wrote no {written}: {out[:300]}")
        line = f"claude mcp add {COMMAND} -- uvx --from {DIST_NAME} {COMMAND} stdio -c {written}"
        check(line in out, f"init's Claude Code line is not {line!r}:\n{out}")
        check('"command": "uvx"' in out, f"init's Claude Desktop entry does not run uvx:\n{out}")
        return f"wrote {written.relative_to(self.home)}; entries run uvx --from {DIST_NAME}"

    def demo(self) -> str:
        binary = self.work / "uv-venv" / "bin" / COMMAND
        check(binary.is_file(), "the uv case installed no binary")
        empty = self.work / "empty"
        empty.mkdir()
        log = self.work / "demo.log"
        with log.open("w") as err:
            proc = subprocess.Popen([str(binary), "demo", "-c", str(empty / "none.yaml"), "--host", "127.0.0.1", "--port", "0"],
                                    cwd=empty, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                    env={**self.env, "SEREN_SCC_RUNTIME_STORES": str(empty / "overlay.json")})
        try:
            deadline = time.monotonic() + 30
            address = None
            while address is None and time.monotonic() < deadline:
                check(proc.poll() is None, f"demo exited {proc.returncode}: {log.read_text()[-400:]}")
                found = re.search(r"listening on http://([0-9.:]+)", log.read_text(errors="replace"))
                address = found.group(1) if found else None
                time.sleep(0.1)
            check(address, f"demo printed no address: {log.read_text()[-400:]}")
            request = urllib.request.Request(f"http://{address}/search", data=json.dumps({"query": QUERY}).encode(),
                                             headers={"content-type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as response:
                answer = json.load(response)
            stores = {h["store"] for h in answer.get("hits", [])}
            check(answer.get("hits") and stores >= {"episodic", "facts"}, f"demo's search: {answer}")
            return f"{len(answer['hits'])} hits from {sorted(stores)} in a directory with no clone"
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()

    def npm_install(self) -> str:
        launcher = self.one(f"{DIST_NAME}-[0-9]*.tgz")
        platform = [self.one(HOST_NPM)]
        manifests = {p: json.load(tarfile.open(p).extractfile("package/package.json")) for p in (launcher, platform[0])}
        own = manifests[platform[0]]
        check(own.get("os") == ["linux"] and own.get("cpu") == ["x64"] and own.get("libc") == ["glibc"],
              f"{own['name']} declares os={own.get('os')} cpu={own.get('cpu')} libc={own.get('libc')}")
        main = manifests[launcher]
        check(main.get("bin") == {COMMAND: f"bin/{COMMAND}.js"}, f"bin is {main.get('bin')}")
        check(own["name"] in (main.get("optionalDependencies") or {}), f"{own['name']} is not an optional dependency")
        check(len(main["optionalDependencies"]) == 5, f"optionalDependencies: {sorted(main['optionalDependencies'])}")
        for manifest in manifests.values():
            check(manifest.get("version") == self.args.version, f"{manifest['name']} is version {manifest.get('version')}")
            scripts = set(manifest.get("scripts") or {}) & {"preinstall", "install", "postinstall", "prepare"}
            check(not scripts, f"{manifest['name']} runs {sorted(scripts)} at install")
        project = self.work / "npm-project"
        project.mkdir()
        (project / "package.json").write_text('{"name": "a-host", "version": "1.0.0", "private": true}\n')
        ran(run(["npm", "install", "--offline", "--no-audit", "--no-fund", str(launcher), str(platform[0])],
                cwd=project, env=self.env), "npm install --offline")
        version = ran(run(["npx", "--no-install", COMMAND, "--version"], cwd=project, env=self.env), "npx --version").strip()
        check(version == f"{COMMAND} {self.args.version}", f"npx {COMMAND} --version printed {version!r}")
        return f"{launcher.name} + {platform[0].name} from an empty cache, offline; --version: {version}"

    def npx_init(self) -> str:
        # npx's own cache, as `npx -y` leaves it: the launcher says so, and init names npx.
        cache = self.home / ".npm" / "_npx" / "0123abcd"
        shutil.copytree(self.work / "npm-project", cache)
        target = self.work / "npx-init.yaml"
        out = ran(run(["node", str(cache / "node_modules" / DIST_NAME / "bin" / f"{COMMAND}.js"), "init", "-c", str(target)],
                      cwd=self.work, env=self.env), "the launcher's init")
        line = f"claude mcp add {COMMAND} -- npx -y {DIST_NAME} stdio -c {target}"
        check(target.is_file() and line in out, f"init's Claude Code line is not {line!r}:\n{out}")
        return f"entries run npx -y {DIST_NAME}"

    def mcpb(self) -> tuple[Path, dict[str, Any]]:
        """The bundle unpacked (once) as a host unpacks it, and its manifest."""
        unpacked = self.work / "mcpb"
        if unpacked.is_dir():
            return unpacked, json.loads((unpacked / "manifest.json").read_text())
        bundle = self.one(HOST_BUNDLE)
        with zipfile.ZipFile(bundle) as z:
            z.extractall(unpacked)
            for info in z.infolist():  # zipfile drops the mode; a host keeps it
                mode = info.external_attr >> 16
                if mode:
                    os.chmod(unpacked / info.filename, mode & 0o7777)
        manifest = json.loads((unpacked / "manifest.json").read_text())
        return unpacked, manifest

    def mcpb_validate(self) -> str:
        unpacked, manifest = self.mcpb()
        out = ran(run([self.args.mcpb, "validate", str(unpacked / "manifest.json")], env=self.env), "mcpb validate")
        entry = unpacked / manifest["server"]["entry_point"]
        check(entry.is_file() and os.access(entry, os.X_OK), f"the entry point {entry.name} is not an executable file in the bundle")
        check(manifest.get("version") == self.args.version, f"the bundle's version is {manifest.get('version')}")
        check(manifest["compatibility"]["platforms"] == ["linux"], f"platforms {manifest['compatibility']['platforms']}")
        return f"{out.strip().splitlines()[-1] if out.strip() else 'valid'}; entry point {manifest['server']['entry_point']} is executable"

    def mcpb_command(self) -> tuple[str, list[str], Path]:
        unpacked, manifest = self.mcpb()
        config = manifest["server"]["mcp_config"]

        def fill(value: str) -> str:
            return value.replace("${__dirname}", str(unpacked)).replace("${user_config.config}", str(self.config))

        env = {k: fill(v) for k, v in (config.get("env") or {}).items()}
        check(env.get("SEREN_SCC_CONFIG") == str(self.config), f"the bundle passes env {env}")
        self.mcpb_env = env
        return fill(config["command"]), [fill(a) for a in config.get("args", [])], unpacked

    def server_json(self) -> str:
        server = json.loads((self.dist / "server.json").read_text())
        name = server["name"]
        packages = server["packages"]
        types = [p["registryType"] for p in packages]
        check(set(types) == PACKAGE_TYPES and len(types) == len(PACKAGE_TYPES) + 4, f"package types {types}")
        check(server["version"] == self.args.version, f"server.json version {server['version']}")
        for package in packages:
            check(package.get("version") == self.args.version, f"the {package['registryType']} package is version {package.get('version')}")
            check(package["transport"] == {"type": "stdio"}, f"the {package['registryType']} transport {package['transport']}")
        check(len(server["description"]) <= 100, f"description is {len(server['description'])} characters")
        by_type = {p["registryType"]: p for p in packages}
        bundles = sorted(self.dist.glob("*.mcpb"))
        listed = [p for p in packages if p["registryType"] == "mcpb"]
        check(len(listed) == len(bundles) == 5, f"{len(listed)} bundles listed, {len(bundles)} built")
        for bundle, mcpb in zip(bundles, sorted(listed, key=lambda p: p["identifier"])):
            digest = hashlib.sha256(bundle.read_bytes()).hexdigest()
            check(mcpb.get("fileSha256") == digest, f"fileSha256 {mcpb.get('fileSha256')} is not {bundle.name}'s {digest}")
            check(mcpb["identifier"].endswith(f"/v{self.args.version}/{bundle.name}") and "mcp" in mcpb["identifier"],
                  f"the bundle's identifier {mcpb['identifier']}")
        wheel = self.one(HOST_WHEEL)
        with zipfile.ZipFile(wheel) as z:
            metadata = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
        dist_name = re.search(r"^Name: (.+)$", metadata, re.M).group(1).strip()
        check(by_type["pypi"]["identifier"] == dist_name, f"pypi identifier {by_type['pypi']['identifier']}, the wheel is {dist_name}")
        check(re.search(rf"mcp-name: {re.escape(name)}(\s|-->|<|$)", metadata),
              f"the wheel's description (PyPI's README) lacks `mcp-name: {name}`")
        launcher = self.one(f"{DIST_NAME}-[0-9]*.tgz")
        main = json.load(tarfile.open(launcher).extractfile("package/package.json"))
        check(by_type["npm"]["identifier"] == main["name"], f"npm identifier {by_type['npm']['identifier']}, the package is {main['name']}")
        check(main.get("mcpName") == name, f"package.json mcpName {main.get('mcpName')!r}, not {name!r}")
        readme = tarfile.open(launcher).extractfile("package/README.md").read().decode()
        check(re.search(rf"mcp-name: {re.escape(name)}(\s|-->|<|$)", readme), f"the npm README lacks `mcp-name: {name}`")
        check(by_type["cargo"]["identifier"] == COMMAND, f"cargo identifier {by_type['cargo']['identifier']}")
        return f"{', '.join(sorted(set(types)))} at {self.args.version}; {len(bundles)} bundles with their sha256; mcpName and mcp-name: {name}"


def flatten(e: BaseException) -> list[BaseException]:
    if isinstance(e, BaseExceptionGroup):
        return [leaf for sub in e.exceptions for leaf in flatten(sub)]
    return [e]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--policy", default="manylinux_2_28")
    parser.add_argument("--uv", required=True)
    parser.add_argument("--uvx", required=True)
    parser.add_argument("--auditwheel", required=True)
    parser.add_argument("--mcpb", required=True)
    args = parser.parse_args()
    r = Run(args)
    wheel = r.one(HOST_WHEEL)
    r.case("toolchain", r.toolchain)
    r.case("auditwheel", r.auditwheel)
    r.case("uv", r.uv_install)
    r.mcp_case("uvx/stdio", args.uvx, ["--offline", "--from", str(wheel), COMMAND, "stdio", "-c", str(r.config)], r.work)
    r.case("uvx/init", r.uvx_init)
    r.case("demo", r.demo)
    r.case("npm/install", r.npm_install)
    r.mcp_case("npx/stdio", "npx", ["--no-install", COMMAND, "stdio", "-c", str(r.config)], r.work / "npm-project")
    r.case("npx/init", r.npx_init)
    r.case("mcpb/validate", r.mcpb_validate)
    try:
        command, bundle_args, unpacked = r.mcpb_command()
    except CheckFailed as e:
        r.record("mcpb/stdio", False, str(e))
    else:
        r.mcp_case("mcpb/stdio", command, bundle_args, unpacked, r.mcpb_env)
    r.case("server.json", r.server_json)
    print(f"packaged: {r.passed} passed, {r.failed} failed", flush=True)
    return 0 if r.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
