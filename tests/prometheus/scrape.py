"""`GET /metrics` read by a real Prometheus server (Debian's package), and linted by its promtool.

Starts three stub stores on loopback (one that answers, one that answers 500, one that accepts
and never answers) and the callosum fanning them with a bearer token and a short store timeout.
Lints one scrape with `promtool check metrics`, starts Prometheus on a free loopback port with its
data in a temp dir, scraping `/metrics` every second with the token, drives searches for a few
seconds, then asks Prometheus's HTTP API for the per-store call rates, the latency quantiles and
the breaker states, and checks that each store looks as it behaved. Exits 1 naming every check
that failed; every process it started is killed on the way out.

Usage: scrape.py OUR_BINARY PROMETHEUS PROMTOOL   (SCRAPE_DEBUG=1 also prints raw samples and
Prometheus's log)
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
from harness import NotReady, free_port, stop, wait_http, wait_line  # noqa: E402

TOKEN = "prom-scrape-" + os.urandom(8).hex()
QUERY = "secret query text " + os.urandom(4).hex()
# How long searches run: long enough for a few scrapes at 1 s and for the breakers to open,
# probe and open again (cool-down 1 s, at most 2 s).
LOAD_SECONDS = 6
WORKERS = 4


def stub(kind):
    """A store on loopback: `healthy` answers two SerenMemory hits, `failing` answers 500,
    `hanging` reads the request and never answers (until the process ends)."""
    hits = [{"id": f"m{i}", "content": f"memory {i}", "tier": "short", "topic": "t",
             "score": 0.9 - i / 10, "raw_distance": 0.1 * i, "metadata": {}} for i in range(2)]
    body = json.dumps({"hits": hits}).encode()
    forever = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            if kind == "hanging":
                forever.wait()
                return
            status, answer = (200, body) if kind == "healthy" else (500, b'{"detail":"scripted"}')
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def get(url, token=None, timeout=5):
    request = urllib.request.Request(url)
    if token:
        request.add_header("authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, r.headers.get("content-type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("content-type", ""), e.read().decode()


def search(base):
    request = urllib.request.Request(base + "/search", data=json.dumps({"query": QUERY}).encode(),
                                     headers={"content-type": "application/json",
                                              "authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as r:
        return r.status


def query(prom, expr):
    url = f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    status, _, text = get(url)
    answer = json.loads(text)
    if status != 200 or answer.get("status") != "success":
        sys.exit(f"prometheus: query {expr!r} failed: {status} {text}")
    return answer["data"]["result"]


def by_labels(result, *names):
    return {tuple(row["metric"].get(n, "") for n in names): float(row["value"][1]) for row in result}


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    binary, prometheus, promtool = sys.argv[1:]
    began = time.time()
    work = tempfile.mkdtemp(prefix="scc-prometheus.")
    procs = []
    failures = []

    def check(ok, what):
        print(("  ok   " if ok else "  FAIL ") + what)
        if not ok:
            failures.append(what)

    try:
        stores = {kind: stub(kind) for kind in ("healthy", "failing", "hanging")}
        config = os.path.join(work, "seren-corpus-callosum.yaml")
        with open(config, "w") as f:
            f.write(f"server:\n  bearer_token: {TOKEN}\n"
                    "federation:\n  per_store_timeout_s: 0.5\n  breaker_failures: 3\n"
                    "  breaker_cooldown_s: 1\n  breaker_max_cooldown_s: 2\n  stores:\n")
            for name, url in stores.items():
                f.write(f"    - name: {name}\n      type: seren_memory\n      url: {url}\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEREN_SCC_")}
        env["RUST_LOG"] = "warn,seren_corpus_callosum=info"
        log = os.path.join(work, "callosum.log")
        with open(log, "w") as out:
            callosum = subprocess.Popen([binary, "serve", "-c", config, "--port", "0"], env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=out)
        procs.append(callosum)
        addr = wait_line("the callosum", log, r"listening on http://(\S+)", callosum).group(1)
        base = f"http://{addr}"

        print("the exposition, scraped directly:")
        status, _, _ = get(base + "/metrics")
        check(status == 401, f"/metrics without the token is refused (got {status})")
        search(base)
        status, content_type, text = get(base + "/metrics", TOKEN)
        check(status == 200 and content_type.startswith("text/plain; version=0.0.4"),
              f"/metrics with the token: 200 text/plain; version=0.0.4 (got {status} {content_type!r})")
        if os.environ.get("SCRAPE_DEBUG"):
            print(text)
        lint = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
        check(lint.returncode == 0, "promtool check metrics passes"
              + ("" if lint.returncode == 0 else f": {lint.stdout}{lint.stderr}"))
        check(QUERY not in text and TOKEN not in text and "127.0.0.1" not in text,
              "no query text, token or store url in the exposition")

        data = os.path.join(work, "data")
        token_file = os.path.join(work, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN)
        prom_config = os.path.join(work, "prometheus.yml")
        with open(prom_config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: callosum\n    metrics_path: /metrics\n"
                    f"    authorization:\n      type: Bearer\n      credentials_file: {token_file}\n"
                    f"    static_configs:\n      - targets: ['{addr}']\n")
        prom_port = free_port()
        prom = f"http://127.0.0.1:{prom_port}"
        prom_log = os.path.join(work, "prometheus.log")
        with open(prom_log, "w") as out:
            server = subprocess.Popen(
                [prometheus, f"--config.file={prom_config}", f"--storage.tsdb.path={data}",
                 f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
                cwd=work, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        procs.append(server)
        deadline = time.time() + 30
        wait_http("the Prometheus server", prom + "/-/ready", server, 30, prom_log)
        # Prometheus hands new targets to its scrapers at most every 5 s: wait for the first
        # scrape, so the searches below all happen under scraping.
        while not query(prom, 'up{job="callosum"}'):
            if time.time() > deadline:
                sys.exit("prometheus: the callosum was not scraped within 30 s")
            time.sleep(0.2)

        print(f"searches for {LOAD_SECONDS} s, {WORKERS} at a time, scraped every second:")
        until = time.time() + LOAD_SECONDS
        counts = {"searches": 0, "errors": 0}
        lock = threading.Lock()

        def drive():
            while time.time() < until:
                try:
                    ok = search(base) == 200
                except OSError:
                    ok = False
                with lock:
                    counts["searches"] += 1
                    counts["errors"] += 0 if ok else 1

        workers = [threading.Thread(target=drive) for _ in range(WORKERS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        # Two more scrapes, so the last searches are in what Prometheus holds.
        time.sleep(2.5)
        print(f"  {counts['searches']} searches, {counts['errors']} errors")
        check(counts["searches"] > 0 and counts["errors"] == 0, "every search answered 200")

        print("what Prometheus holds:")
        up = by_labels(query(prom, 'up{job="callosum"}'), "job")
        check(up.get(("callosum",)) == 1.0, f"the target is up, scraped with the bearer token ({up})")
        scrapes = by_labels(query(prom, 'count_over_time(up{job="callosum"}[1m])'), "job")
        check(scrapes.get(("callosum",), 0) >= LOAD_SECONDS, f"scraped every second ({scrapes})")
        window = f"[{LOAD_SECONDS + 4}s]"
        rates = by_labels(query(prom, f"rate(seren_callosum_store_calls_total{window})"), "store", "outcome")
        for (store, outcome), rate in sorted(rates.items()):
            if rate > 0:
                print(f"    rate {store:8} {outcome:13} {rate:8.2f}/s")
        nonzero = lambda store: {o for (s, o), r in rates.items() if s == store and r > 0}
        check(nonzero("healthy") == {"ok"}, f"healthy: ok calls only ({nonzero('healthy')})")
        check(nonzero("failing") == {"status", "circuit_open"},
              f"failing: status calls, then calls skipped by its open breaker ({nonzero('failing')})")
        check(nonzero("hanging") == {"timeout", "circuit_open"},
              f"hanging: timeouts, then calls skipped by its open breaker ({nonzero('hanging')})")
        check(rates.get(("healthy", "ok"), 0) > rates.get(("failing", "status"), 0),
              "the breaker keeps the failing store's calls below the healthy store's")

        breaker = by_labels(query(prom, "seren_callosum_store_breaker_state"), "store")
        was_open = by_labels(query(prom, f"max_over_time(seren_callosum_store_breaker_state{window})"), "store")
        print(f"    breaker now {breaker}, at most {was_open}")
        check(breaker.get(("healthy",)) == 0.0, "healthy: breaker closed")
        check(breaker.get(("failing",)) == 2.0, "failing: breaker open")
        check(was_open.get(("hanging",)) == 2.0 and breaker.get(("hanging",), 0) >= 1.0,
              "hanging: breaker open (or probing)")

        p50 = by_labels(query(prom, "histogram_quantile(0.5, sum by (store, le) "
                                    f"(rate(seren_callosum_store_call_duration_seconds_bucket{window})))"), "store")
        print(f"    p50 call latency {p50}")
        check(p50.get(("healthy",), 1) < 0.1, "healthy: p50 call latency under 100 ms")
        check(0.25 <= p50.get(("hanging",), 0) <= 1.0, "hanging: p50 call latency in the timeout's bucket (0.25-1 s)")

        searches = by_labels(query(prom, f"increase(seren_callosum_searches_total{window})"), "outcome")
        check(searches.get(("answered",), 0) > 0 and searches.get(("refused",), 1) == 0,
              f"searches: answered, none refused ({searches})")
        if os.environ.get("SCRAPE_DEBUG"):
            for expr in ['up{job="callosum"}[1m]', 'seren_callosum_store_calls_total{store="failing",outcome="status"}[1m]']:
                for row in query(prom, expr):
                    print("    debug", row["metric"], [(round(float(t) - began, 2), v) for t, v in row["values"]])
            print(open(prom_log).read())
        series = query(prom, 'count({__name__=~"seren_callosum_.+"})')
        print(f"    {series[0]['value'][1] if series else 0} seren_callosum_* series")
    except NotReady as e:
        sys.exit(f"prometheus: {e}")
    finally:
        for proc in procs:
            stop(proc, grace=0)
        subprocess.run(["rm", "-rf", work])

    print(f"prometheus: {'FAILED: ' + '; '.join(failures) if failures else 'all checks passed'} "
          f"in {time.time() - began:.1f} s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
