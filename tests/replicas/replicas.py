"""Three replicas of the callosum behind a real nginx (Debian's package), sharing one runtime
overlay: once as a file on disk (`file`), once as a table in a real PostgreSQL server (`postgres`,
Debian's package, started here on loopback with its data in a temp dir).

Checks over REST, through the balancer and on each replica directly, in both modes:
  1. a store added through the balancer is fanned by every replica's searches within 2 s;
  2. 100 concurrent adds through the balancer (nginx spreads them round-robin) lose none: the
     overlay holds every one, and every replica lists every one;
  3. a replica killed with SIGKILL under search load, and another stopped with SIGTERM (it drains),
     while nginx retries the next replica: zero failed searches at the balancer.

Checks over MCP, in the `file` mode only (MCP_OVERLAY), to keep the run short: the file is the
overlay slower to propagate an add. They run between 2 and 3; in that mode the replicas require a
bearer token, on REST too.
  4. by hand, on one replica: `initialize` answers no Mcp-Session-Id, `DELETE /mcp` is 405 (200 or
     204 would do; never 202); through nginx: Authorization, Accept and Mcp-Protocol-Version reach
     the replica (each left out or wrong is refused: 401, 406, 400), and a call naming an old
     Mcp-Session-Id is served.
  Then the official Python MCP SDK (tests/mcp-clients/requirements.txt; run.sh makes the venv), in
  its session mode (`legacy`: initialize, protocol 2025-11-25) and in its stateless mode (pinned
  2026-07-28), each through a fresh nginx of the same config, round-robin, nothing sticky:
  5. one client session makes 12 `search` calls (each answers hits) and a `list_stores`; its calls
     are served by all three replicas; it sends one initialize (none when stateless) and is never
     answered an Mcp-Session-Id;
  6. `add_store` (a seren_memory store at the stub, under a fresh name) in one session, then at
     least 6 fresh sessions (more until every replica has answered) each poll `list_stores` until
     it is there, within 3 s: the propagation time is printed; `remove_store` takes it out of every
     replica again;
  7. replica 1 is killed (SIGKILL) after 20 of a session's 60 `search` calls, a few ms into the
     next: not one call fails, the client never initializes again, nginx retries the next replica;
     the killed replica is started again (on its port) for the next checks.
Exits 1 naming every check that failed; every process it started is killed on the way out.

Usage: replicas.py OUR_BINARY NGINX (file | postgres POSTGRES_BIN_DIR)
The `file` mode imports the MCP SDK, so run it with the venv's python (run.sh does); the
`postgres` mode needs the standard library only.
"""

import concurrent.futures
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
import harness  # noqa: E402
from harness import NotReady, describe, free_port, stop  # noqa: E402

REPLICAS = 3
ADDS = 100
SEEN_WITHIN = 2.0
MCP_OVERLAY = "file"  # the overlay mode that runs the MCP part (the other runs REST only)
MCP_SEARCHES = 12  # search calls in one client session (check 5)
MCP_SESSIONS = 6  # fresh sessions that must each list an added store (check 6), at least
MCP_SEEN_WITHIN = 3.0  # seconds for an add to reach every replica's list_stores
MCP_KILL_CALLS = 60  # search calls in the session a replica is killed under (check 7)
MCP_KILL_AFTER = 20  # ... the kill is sent once this many have been answered
# The replicas of the mode that runs the MCP part require this bearer token (on /mcp and REST
# alike), so the checks show nginx passes Authorization through.
TOKEN = None
failures = []
started = []


def check(ok, what):
    print(("ok      " if ok else "FAILED  ") + what, flush=True)
    if not ok:
        failures.append(what)


def stub_store():
    """A SerenLoci-speaking store on loopback answering one fact."""
    body = json.dumps({"hits": [{"key": "k", "value": "v", "why": "w", "score": 0.9,
                                 "project": "p", "match_kind": "exact"}]}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            # A replica killed mid-search resets its connection here: expected, not worth a trace.
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def call(base, method, path, body=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        request.add_header("content-type", "application/json")
    if TOKEN is not None:
        request.add_header("authorization", f"Bearer {TOKEN}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, text.decode(errors="replace")


def wait_http(base, path="/health", limit=30):
    """Whether base + path answers 200 within `limit` seconds (a check says what it means)."""
    try:
        harness.wait_http(base, base + path, timeout=limit,
                          headers={"authorization": f"Bearer {TOKEN}"} if TOKEN is not None else None)
    except NotReady:
        return False
    return True


def start(args, env=None, log=None):
    process = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL,
                               stdout=log or subprocess.DEVNULL, stderr=log or subprocess.DEVNULL)
    started.append(process)
    return process


def run_as_postgres(args):
    """initdb and postgres refuse to run as root: as root, run them as Debian's `postgres` user."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--"] + args
    return args


def start_postgres(bin_dir, tmp):
    data, sockets = os.path.join(tmp, "pgdata"), os.path.join(tmp, "pgsock")
    os.makedirs(sockets)
    if os.geteuid() == 0:
        shutil.chown(tmp, "postgres")
        shutil.chown(sockets, "postgres")
    subprocess.run(run_as_postgres([os.path.join(bin_dir, "initdb"), "-D", data, "-U", "postgres",
                                    "--auth=trust", "--no-sync", "-E", "UTF8"]),
                   check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    log = open(os.path.join(tmp, "postgres.log"), "w")
    start(run_as_postgres([os.path.join(bin_dir, "postgres"), "-D", data, "-p", str(port),
                           "-h", "127.0.0.1", "-k", sockets, "-c", "fsync=off"]), log=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    # Accepting TCP is not yet accepting logins: wait for pg_isready too.
    isready = os.path.join(bin_dir, "pg_isready")
    while time.monotonic() < deadline:
        if subprocess.run([isready, "-h", "127.0.0.1", "-p", str(port)],
                          stdout=subprocess.DEVNULL).returncode == 0:
            return port
        time.sleep(0.1)
    raise SystemExit("postgres did not come up; see " + log.name)


def table_count(bin_dir, port):
    out = subprocess.run([os.path.join(bin_dir, "psql"), "-h", "127.0.0.1", "-p", str(port),
                          "-U", "postgres", "-At", "-c",
                          "SELECT count(*) FROM seren_corpus_callosum_stores"],
                         capture_output=True, text=True)
    return int(out.stdout.strip() or -1)


def nginx_conf(tmp, name, listen, ports):
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=10s;" for p in ports)
    files = os.path.join(tmp, name)
    return f"""
daemon off;
master_process off;
pid {files}.pid;
error_log {files}-error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {files}-body;
    proxy_temp_path {files}-proxy;
    fastcgi_temp_path {files}-fastcgi;
    uwsgi_temp_path {files}-uwsgi;
    scgi_temp_path {files}-scgi;
    upstream callosum {{
{servers}
        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{listen};
        # One location for REST and /mcp alike. nginx passes every request header on as it came
        # (Accept, Authorization, Mcp-Protocol-Version, Mcp-Session-Id), so MCP needs nothing here.
        location / {{
            proxy_pass http://callosum;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            # A search is a POST: let nginx retry it on the next replica when one is gone.
            proxy_next_upstream error timeout http_502 http_503 non_idempotent;
            proxy_next_upstream_tries {REPLICAS};
            proxy_connect_timeout 1s;
            proxy_read_timeout 30s;
            # An answer streamed as SSE reaches the client as it is written (MCP calls are answered
            # as plain JSON today, which buffering would not hurt either).
            proxy_buffering off;
            # Which replica(s) answered, tried in order: the MCP checks count them.
            add_header X-Upstream $upstream_addr always;
        }}
    }}
}}
"""


def start_nginx(nginx, tmp, name, ports):
    """An nginx round-robin in front of ports; returns its base URL once it answers."""
    listen = free_port()
    conf = os.path.join(tmp, f"{name}.conf")
    with open(conf, "w") as f:
        f.write(nginx_conf(tmp, name, listen, ports))
    process = start([nginx, "-p", tmp, "-c", conf], log=open(os.path.join(tmp, f"{name}.out"), "w"))
    base = f"http://127.0.0.1:{listen}"
    return base, process, wait_http(base, "/health")


def raw(base, method, path="/mcp", body=None, headers=None, timeout=10):
    """One HTTP exchange with no client library in the way: (status, headers, text)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers, response.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode(errors="replace")


MCP_ACCEPT = "application/json, text/event-stream"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "replicas.py", "version": "1"}}}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


def mcp_http_checks(replica, balancer):
    """/mcp by hand: on one replica directly, then the headers MCP needs through nginx."""
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    post = {"Accept": MCP_ACCEPT, "Content-Type": "application/json"}
    status, headers, text = raw(replica, "POST", body=INITIALIZE, headers={**post, **bearer})
    check(status == 200 and '"serverInfo"' in text and headers.get("Mcp-Session-Id") is None,
          f"initialize on one replica: {status}, no Mcp-Session-Id answered "
          f"(got {headers.get('Mcp-Session-Id')!r})")
    status, _, _ = raw(replica, "DELETE", headers={**bearer, "Mcp-Session-Id": "from-before"})
    check(status in (405, 200, 204), f"DELETE /mcp on one replica: {status} (405, 200 or 204; never 202)")
    # Each header a replica reads, sent wrong through nginx, is refused by the replica: so it passed.
    refused = {
        "Authorization": raw(balancer, "POST", body=INITIALIZE, headers=post)[0],
        "Accept": raw(balancer, "POST", body=INITIALIZE,
                      headers={**post, **bearer, "Accept": "text/plain"})[0],
        "Mcp-Protocol-Version": raw(balancer, "POST", body=TOOLS_LIST,
                                    headers={**post, **bearer,
                                             "Mcp-Protocol-Version": "1999-01-01"})[0],
    }
    check(refused == {"Authorization": 401, "Accept": 406, "Mcp-Protocol-Version": 400},
          "nginx passes Authorization, Accept and Mcp-Protocol-Version: each left out or wrong is "
          f"refused by the replica behind it ({refused}; want 401, 406, 400)")
    status, headers, _ = raw(balancer, "POST", body=TOOLS_LIST,
                             headers={**post, **bearer, "Mcp-Protocol-Version": "2025-11-25",
                                      "Mcp-Session-Id": "from-before"})
    check(status == 200 and headers.get("Mcp-Session-Id") is None,
          f"a call naming an old Mcp-Session-Id through nginx is served: {status}")


def mcp_sdk_checks(nginx, tmp, ports, bases, replicas, launch, facts):
    """The official Python MCP SDK through nginx, in its session (legacy) and stateless modes."""
    import importlib.metadata
    from contextlib import asynccontextmanager

    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

    print(f"mcp: the Python MCP SDK {importlib.metadata.version('mcp')} "
          f"(httpx2 {importlib.metadata.version('httpx2')})", flush=True)
    upstream = {f"127.0.0.1:{p}": i for i, p in enumerate(ports)}

    class Traffic:
        """What one client session sent and was answered, seen from its HTTP client."""

        def __init__(self):
            self.initializes = 0
            self.session_ids = []
            self.calls = []  # (replicas tried, in order) for each tools/call answered

        @staticmethod
        def rpc(request):
            try:
                return json.loads(request.content).get("method")
            except (ValueError, AttributeError):
                return None

        async def on_request(self, request):
            if request.method == "POST" and self.rpc(request) == "initialize":
                self.initializes += 1

        async def on_response(self, response):
            if response.headers.get("mcp-session-id"):
                self.session_ids.append(response.headers["mcp-session-id"])
            if response.request.method == "POST" and self.rpc(response.request) == "tools/call":
                tried = [a.strip() for a in response.headers.get("x-upstream", "").split(",")]
                self.calls.append([upstream.get(a, a) for a in tried if a])

        def last_replica(self):
            return self.calls[-1][-1] if self.calls and self.calls[-1] else None

    @asynccontextmanager
    async def session(url, mode, traffic):
        hooks = {"request": [traffic.on_request], "response": [traffic.on_response]}
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"},
                                      timeout=httpx2.Timeout(10.0, read=30.0),
                                      event_hooks=hooks) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode,
                              read_timeout_seconds=20.0) as client:
                yield client

    async def tool(client, name, args):
        """(structured content, None) for an answer, (None, why) for a tool error or an error."""
        try:
            with anyio.fail_after(25):
                result = await client.call_tool(name, args)
        except Exception as e:  # noqa: BLE001 - any failure of the call is counted
            return None, describe(e)
        if result.is_error:
            return None, "tool error: " + " ".join(getattr(b, "text", "") for b in result.content)
        return result.structured_content, None

    def names(listed):
        return {row.get("name") for row in (listed or {}).get("stores") or []}

    async def searches(label, url, mode, expected):
        traffic = Traffic()
        failed = []
        async with session(url, mode, traffic) as client:
            version = client.protocol_version
            for _ in range(MCP_SEARCHES):
                answer, why = await tool(client, "search", {"query": "k"})
                if not (answer and answer.get("hits")):
                    failed.append(why or f"no hits: {answer}")
            listed, why = await tool(client, "list_stores", {})
        served = sorted({c[-1] for c in traffic.calls if c})
        check(version == expected and not failed and "facts" in names(listed),
              f"{label}: one session (protocol {version}), {MCP_SEARCHES} searches answered hits "
              f"({len(failed)} failed {failed[:2]}) and list_stores lists facts ({why or 'ok'})")
        check(served == list(range(REPLICAS)),
              f"{label}: that session's {len(traffic.calls)} calls were served by replicas {served}")
        want = 1 if mode == "legacy" else 0
        check(traffic.initializes == want and not traffic.session_ids,
              f"{label}: {traffic.initializes} initialize sent (want {want}), no Mcp-Session-Id "
              f"answered ({traffic.session_ids[:1]})")

    async def add_and_list(label, url, mode):
        name = f"{label}-{os.urandom(3).hex()}"
        async with session(url, mode, Traffic()) as client:
            added, why = await tool(client, "add_store",
                                    {"name": name, "type": "seren_memory", "url": facts})
        added_at = time.monotonic()
        check(added is not None, f"{label}: add_store {name} through nginx ({why or 'ok'})")
        first_seen = {}  # replica -> seconds after the add it first listed the store
        last_miss = 0.0  # seconds after the add of the last list_stores answer without it
        lists = misses = sessions = 0
        unseen = []  # sessions that never listed it
        # A fresh session sends 4 requests to its first call's answer (legacy: initialize,
        # initialized, tools/list, the call) or 2 (stateless: tools/list, the call): round-robin
        # moves each session's list_stores on to another replica, and more sessions are made
        # until every replica has answered one.
        while sessions < MCP_SESSIONS or (len(first_seen) < REPLICAS
                                          and sessions < 3 * MCP_SESSIONS):
            sessions += 1
            traffic = Traffic()
            async with session(url, mode, traffic) as client:
                while True:
                    listed, why = await tool(client, "list_stores", {})
                    lists += 1
                    took = time.monotonic() - added_at
                    if name in names(listed):
                        first_seen.setdefault(traffic.last_replica(), took)
                        break
                    misses += 1
                    last_miss = took
                    if took > MCP_SEEN_WITHIN:
                        unseen.append((sessions, why))
                        break
                    await anyio.sleep(0.05)
        slowest = max(first_seen.values(), default=None)
        check(not unseen and sorted(first_seen) == list(range(REPLICAS))
              and slowest <= MCP_SEEN_WITHIN,
              f"{label}: {sessions} fresh sessions each list it within {MCP_SEEN_WITHIN} s: "
              f"{lists} list_stores calls, {misses} without it (the last {last_miss:.2f}s after "
              "the add); first listed by replica " + ", ".join(
                  f"{i} after {first_seen[i]:.2f}s" for i in sorted(first_seen, key=str))
              + (f"; never in sessions {unseen}" if unseen else ""))
        async with session(url, mode, Traffic()) as client:
            removed, why = await tool(client, "remove_store", {"name": name})
        removed_at = time.monotonic()
        gone = set()
        while len(gone) < REPLICAS and time.monotonic() - removed_at < MCP_SEEN_WITHIN:
            for i, base in enumerate(bases):
                if name not in names(call(base, "GET", "/stores")[1]):
                    gone.add(i)
            await anyio.sleep(0.05)
        check(removed is not None and len(gone) == REPLICAS,
              f"{label}: remove_store through nginx ({why or 'ok'}), gone from every replica in "
              f"{time.monotonic() - removed_at:.2f}s")

    async def kill_under(label, url, mode):
        victim = replicas[1]
        traffic = Traffic()
        failed = []
        killed_after = None
        async with session(url, mode, traffic) as client:
            for i in range(MCP_KILL_CALLS):
                if i == MCP_KILL_AFTER:
                    # Fires a few ms on, so the SIGKILL lands while the next call is under way.
                    threading.Timer(0.004, victim.kill).start()
                    killed_after = i
                answer, why = await tool(client, "search", {"query": "k"})
                if not (answer and answer.get("hits")):
                    failed.append((i, why or f"no hits: {answer}"))
        dead = victim.wait(timeout=10) is not None
        after = traffic.calls[killed_after:]
        retried = sum(len(c) > 1 for c in after)
        want = 1 if mode == "legacy" else 0
        check(dead and not failed and traffic.initializes == want,
              f"{label}: replica 1 killed (SIGKILL) after {killed_after} of {MCP_KILL_CALLS} "
              f"searches in one session: {len(failed)} failed {failed[:2]}, "
              f"{traffic.initializes} initialize (want {want}: never again); after the kill "
              f"{len(after)} answered by replicas {sorted({c[-1] for c in after if c})}, "
              f"{retried} retried by nginx past the dead one")
        replicas[1] = launch(1, "a")
        check(wait_http(bases[1]), f"{label}: the killed replica restarted")

    for mode, expected in (("legacy", LATEST_HANDSHAKE_VERSION),
                           (LATEST_MODERN_VERSION, LATEST_MODERN_VERSION)):
        label = "mcp-session" if mode == "legacy" else f"mcp-{mode}"
        # A fresh nginx for each mode: the kill below leaves nginx avoiding that replica for its
        # fail_timeout, which would hide it from the next mode's round-robin.
        url, process, up = start_nginx(nginx, tmp, f"nginx-{label}", ports)
        check(up, f"{label}: a fresh nginx in front of the {REPLICAS} replicas")
        url += "/mcp"
        began = time.monotonic()
        for part in (lambda: searches(label, url, mode, expected),
                     lambda: add_and_list(label, url, mode),
                     lambda: kill_under(label, url, mode)):
            try:
                anyio.run(part)
            except Exception as e:  # noqa: BLE001 - the SDK or the transport gave up: a failure
                check(False, f"{label}: the client failed: {describe(e)}")
        process.kill()
        process.wait()
        print(f"mcp: {label} took {time.monotonic() - began:.1f}s", flush=True)


def main():
    binary, nginx, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    tmp = tempfile.mkdtemp(prefix=f"scc-replicas-{mode}-")
    os.chmod(tmp, 0o755)
    try:
        run(binary, nginx, mode, tmp)
    finally:
        for process in reversed(started):
            stop(process, grace=0)
        if failures:
            for name in sorted(n for n in os.listdir(tmp) if n.endswith(".log")):
                path = os.path.join(tmp, name)
                if os.path.getsize(path):
                    print(f"--- {name} (last lines)")
                    print("".join(open(path, errors="replace").readlines()[-15:]))
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"replicas ({mode}): {len(failures)} check(s) failed")
        sys.exit(1)
    print(f"replicas ({mode}): all checks passed")


def run(binary, nginx, mode, tmp):
    global TOKEN
    facts = stub_store()
    config = os.path.join(tmp, "seren-corpus-callosum.yaml")
    env = {"PATH": os.environ.get("PATH", ""), "SEREN_SCC_LOG": "warn"}
    server = "server:\n  access_log: false\n"
    if mode == "postgres":
        bin_dir = sys.argv[4]
        pg_port = start_postgres(bin_dir, tmp)
        server += f"  overlay_url: postgres://postgres@127.0.0.1:{pg_port}/postgres?sslmode=disable\n"
    else:
        overlay = os.path.join(tmp, "shared", "runtime-stores.json")
        env["SEREN_SCC_RUNTIME_STORES"] = overlay
    with_mcp = mode == MCP_OVERLAY
    if with_mcp:
        TOKEN = os.urandom(12).hex()
        env["SEREN_SCC_BEARER_TOKEN"] = TOKEN
    with open(config, "w") as f:
        f.write(server + "federation:\n  max_stores: 256\n  per_store_timeout_s: 2\n")
    ports = [free_port() for _ in range(REPLICAS)]

    def launch(i, how="w"):
        log = open(os.path.join(tmp, f"replica-{i}.log"), how)
        return start([binary, "serve", "-c", config, "--port", str(ports[i])], env=env, log=log)

    replicas = [launch(i) for i in range(REPLICAS)]
    bases = [f"http://127.0.0.1:{p}" for p in ports]
    check(all(wait_http(b) for b in bases), f"{REPLICAS} replicas up ({mode} overlay)")
    balancer, _, up = start_nginx(nginx, tmp, "nginx", ports)
    check(up, "nginx up in front of them")

    # 1. One add through the balancer, fanned by every replica within 2 s.
    status, body = call(balancer, "POST", "/stores",
                        {"name": "facts", "type": "seren_loci", "url": facts})
    check(status == 200, f"a store added through the balancer ({status} {body})")
    added_at = time.monotonic()
    seen = {}
    while len(seen) < REPLICAS and time.monotonic() - added_at < 10:
        for i, base in enumerate(bases):
            if i not in seen:
                _, answer = call(base, "POST", "/search", {"query": "k"})
                if isinstance(answer, dict) and "facts" in answer.get("stores_searched", []):
                    seen[i] = time.monotonic() - added_at
        time.sleep(0.02)
    slowest = max(seen.values()) if len(seen) == REPLICAS else None
    check(slowest is not None and slowest <= SEEN_WITHIN,
          f"every replica fans it within {SEEN_WITHIN} s (seen after "
          + ", ".join(f"{seen[i]:.2f}s" if i in seen else "never" for i in range(REPLICAS)) + ")")
    _, answer = call(balancer, "POST", "/search", {"query": "k"})
    check(isinstance(answer, dict) and [h["store"] for h in answer.get("hits", [])] == ["facts"],
          "a search through the balancer answers from it")

    # 2. 100 concurrent adds through the balancer.
    def add(i):
        return call(balancer, "POST", "/stores",
                    {"name": f"s{i}", "type": "seren_loci", "url": "http://127.0.0.1:9"}, timeout=30)

    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(add, range(ADDS)))
    took = time.monotonic() - began
    bad = [(i, r) for i, r in enumerate(results) if r[0] != 200]
    check(not bad, f"{ADDS} concurrent adds all answered 200 in {took:.2f}s ({bad[:3]})")
    want = {"facts"} | {f"s{i}" for i in range(ADDS)}
    if mode == "postgres":
        rows = table_count(bin_dir, pg_port)
        check(rows == len(want), f"the table holds {len(want)} entries (holds {rows})")
    else:
        written = {e["name"] for e in json.load(open(overlay))}
        check(written == want, f"the file holds all {len(want)} entries (holds {len(written)})")
    deadline = time.monotonic() + 10
    lists = {}
    while time.monotonic() < deadline:
        for i, base in enumerate(bases):
            _, stores = call(base, "GET", "/stores")
            lists[i] = {row["name"] for row in stores["stores"]} if isinstance(stores, dict) else set()
        if all(names == want for names in lists.values()):
            break
        time.sleep(0.05)
    check(all(lists.get(i) == want for i in range(REPLICAS)),
          f"every replica lists all {len(want)} stores within 10 s of the last add ("
          + ", ".join(str(len(lists.get(i, ()))) for i in range(REPLICAS)) + ")")
    # Take the 100 dead stores out again (through the balancer), so the load below fans one store.
    with concurrent.futures.ThreadPoolExecutor(max_workers=20) as pool:
        removed = list(pool.map(lambda i: call(balancer, "DELETE", f"/stores/s{i}")[0], range(ADDS)))
    check(all(s == 200 for s in removed), "the 100 removed again through the balancer")

    # 4.-7. MCP, by hand and through the Python MCP SDK, before the replicas are stopped below.
    if with_mcp:
        mcp_http_checks(bases[0], balancer)
        mcp_sdk_checks(nginx, tmp, ports, bases, replicas, launch, facts)

    # 3. Under load, one replica killed, another stopped gracefully: no search fails.
    stop = threading.Event()
    counts = {"ok": 0, "failed": 0}
    errors = []
    lock = threading.Lock()

    def load():
        while not stop.is_set():
            try:
                status, answer = call(balancer, "POST", "/search", {"query": "k"}, timeout=30)
                ok = status == 200 and isinstance(answer, dict) and answer.get("hits")
            except OSError as e:
                ok, status = False, repr(e)
            with lock:
                counts["ok" if ok else "failed"] += 1
                if not ok and len(errors) < 5:
                    errors.append(status)

    workers = [threading.Thread(target=load) for _ in range(8)]
    for w in workers:
        w.start()
    time.sleep(1.5)
    replicas[1].send_signal(signal.SIGKILL)
    time.sleep(1.5)
    replicas[2].send_signal(signal.SIGTERM)
    graceful = replicas[2].wait(timeout=20)
    time.sleep(1.5)
    stop.set()
    for w in workers:
        w.join()
    check(graceful == 0, f"the replica stopped with SIGTERM drained and exited 0 (exit {graceful})")
    check(counts["failed"] == 0 and counts["ok"] > 100,
          f"zero failed searches at the balancer with one replica killed and one stopped "
          f"({counts['ok']} answered, {counts['failed']} failed {errors})")


if __name__ == "__main__":
    main()
