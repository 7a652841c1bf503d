"""Three replicas of the callosum behind a real nginx (Debian's package), sharing one runtime
overlay: once as a file on disk (`file`), once as a table in a real PostgreSQL server (`postgres`,
Debian's package, started here on loopback with its data in a temp dir).

Checks, through the balancer and on each replica directly:
  1. a store added through the balancer is fanned by every replica's searches within 2 s;
  2. 100 concurrent adds through the balancer (nginx spreads them round-robin) lose none: the
     overlay holds every one, and every replica lists every one;
  3. a replica killed with SIGKILL under search load, and another stopped with SIGTERM (it drains),
     while nginx retries the next replica: zero failed searches at the balancer.
Exits 1 naming every check that failed; every process it started is killed on the way out.

Usage: replicas.py OUR_BINARY NGINX (file | postgres POSTGRES_BIN_DIR)
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

REPLICAS = 3
ADDS = 100
SEEN_WITHIN = 2.0
failures = []
started = []


def check(ok, what):
    print(("ok      " if ok else "FAILED  ") + what, flush=True)
    if not ok:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def call(base, method, path, body=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        request.add_header("content-type", "application/json")
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
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if call(base, "GET", path, timeout=2)[0] == 200:
                return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


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


def nginx_conf(tmp, listen, ports):
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=10s;" for p in ports)
    return f"""
daemon off;
master_process off;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    upstream callosum {{
{servers}
        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{listen};
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
        }}
    }}
}}
"""


def main():
    binary, nginx, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    tmp = tempfile.mkdtemp(prefix=f"scc-replicas-{mode}-")
    os.chmod(tmp, 0o755)
    try:
        run(binary, nginx, mode, tmp)
    finally:
        for process in reversed(started):
            if process.poll() is None:
                process.kill()
                process.wait()
        if failures:
            for name in ("nginx-error.log", "postgres.log", "replica-0.log", "replica-1.log",
                         "replica-2.log"):
                path = os.path.join(tmp, name)
                if os.path.exists(path):
                    print(f"--- {name} (last lines)")
                    print("".join(open(path, errors="replace").readlines()[-15:]))
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"replicas ({mode}): {len(failures)} check(s) failed")
        sys.exit(1)
    print(f"replicas ({mode}): all checks passed")


def run(binary, nginx, mode, tmp):
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
    with open(config, "w") as f:
        f.write(server + "federation:\n  max_stores: 256\n  per_store_timeout_s: 2\n")
    ports = [free_port() for _ in range(REPLICAS)]
    replicas = []
    for i, port in enumerate(ports):
        log = open(os.path.join(tmp, f"replica-{i}.log"), "w")
        replicas.append(start([binary, "serve", "-c", config, "--port", str(port)], env=env,
                              log=log))
    bases = [f"http://127.0.0.1:{p}" for p in ports]
    check(all(wait_http(b) for b in bases), f"{REPLICAS} replicas up ({mode} overlay)")
    listen = free_port()
    with open(os.path.join(tmp, "nginx.conf"), "w") as f:
        f.write(nginx_conf(tmp, listen, ports))
    start([nginx, "-p", tmp, "-c", os.path.join(tmp, "nginx.conf")],
          log=open(os.path.join(tmp, "nginx.out"), "w"))
    balancer = f"http://127.0.0.1:{listen}"
    check(wait_http(balancer, "/health"), "nginx up in front of them")

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
