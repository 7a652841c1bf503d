"""A small benchmark of the `mcp` store type with the same peers as peers.py (not run in CI).

  a. The latency an MCP store adds over the same store's REST protocol: two callosums, one fanning
     SerenLoci over REST (`seren_loci`), one over its MCP endpoint (`mcp`, preset seren-loci).
     After a warm-up, 3 rounds of ROUND sequential searches on each (the order flips every round,
     so drift hits both alike), one keep-alive connection per callosum; client-observed p50/p99.
     Beside them, SerenLoci itself with no callosum, over REST and over MCP (JSON-RPC by hand), so
     the MCP cost of the server can be told from the callosum's.
  b. Searches/s through one stdio store (server-memory) at concurrency 64 for DURATION seconds:
     64 threads, each its own keep-alive connection, each search checked to have answered.
  c. Memory: a callosum with 16 stdio stores (graph1..graph16, each its own server-memory and its
     own copy of the JSONL), after one search: the callosum's VmRSS and its node children's.

Usage (from the repo root, after tests/mcp-peers/run.sh has made the venvs and node_modules):
  target/mcp-peers-client-venv/bin/python tests/mcp-peers/bench.py [--bin BINARY]
Prints a Markdown table per part. The client is Python on the same machine: its own time is in
every number (both sides of a comparison alike).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.dont_write_bytecode = True  # no __pycache__ beside the sources for importing peers and the harness
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Processes, children  # noqa: E402
from peers import STARTUP_TIMEOUT, STOP_TIMEOUT, Peers  # noqa: E402 - the fixtures live beside us

ROOT = Path(__file__).resolve().parents[2]
QUERY = "xavier"
N = 10
WARMUP = 50  # searches per callosum before anything is timed
ROUND = 100  # searches per callosum per round; 3 rounds
ROUNDS = 3
CONCURRENCY = 64
DURATION = 10.0  # seconds of part b
STDIO_STORES = 16


class Searcher:
    """One keep-alive HTTP/1.1 connection to one callosum's POST /search."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)
        self.body = json.dumps({"query": QUERY, "n_results": N}).encode()

    def search(self) -> dict[str, Any]:
        self.conn.request("POST", "/search", body=self.body, headers={"content-type": "application/json"})
        response = self.conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"status {response.status}: {data[:200]!r}")
        answer = json.loads(data)
        if answer.get("failed"):  # a callosum's answer; SerenLoci's own has no such member
            raise RuntimeError(f"failed: {answer['failed']}")
        return answer

    def timed(self) -> float:
        start = time.perf_counter()
        self.search()
        return time.perf_counter() - start


class RawMcp:
    """SerenLoci's `search_loci` over streamable HTTP by hand (one session, one keep-alive
    connection, JSON-RPC with no SDK): the MCP cost on the server's side, with no callosum."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)
        self.headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        self.next_id = 0
        self.reconnects = 0
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "mcp-peers-bench", "version": "0"}})
        self.rpc("notifications/initialized", None)

    def rpc(self, method: str, params: Any) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            self.next_id += 1
            message.update(id=self.next_id, params=params)
        body = json.dumps(message).encode()
        try:
            self.conn.request("POST", "/mcp/", body=body, headers=self.headers)
            response = self.conn.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # Uvicorn drops an idle keep-alive connection after 5 s; the session outlives it.
            self.reconnects += 1
            self.conn.close()
            self.conn.request("POST", "/mcp/", body=body, headers=self.headers)
            response = self.conn.getresponse()
        data = response.read().decode()
        if response.status >= 300:
            raise RuntimeError(f"{method}: status {response.status}: {data[:200]}")
        session = response.getheader("mcp-session-id")
        if session:
            self.headers["mcp-session-id"] = session
        if params is None:
            return None
        # An SSE stream holding one message, or plain JSON.
        lines = [line[5:].strip() for line in data.splitlines() if line.startswith("data:")]
        return json.loads(lines[0] if lines else data)

    def search(self) -> dict[str, Any]:
        answer = self.rpc("tools/call", {"name": "search_loci", "arguments": {"query": QUERY, "n_results": N * 2}})
        if "error" in answer or answer["result"].get("isError"):
            raise RuntimeError(f"search_loci: {answer}")
        return {"hits": json.loads(answer["result"]["content"][0]["text"])["hits"]}

    def timed(self) -> float:
        start = time.perf_counter()
        self.search()
        return time.perf_counter() - start


def pct(values: list[float], p: float) -> float:
    """The p-th percentile, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def vm_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid: int) -> float:
    """utime + stime of one process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def part_a(peers: Peers) -> None:
    rest = peers.start_callosum("bench-rest", write(peers, "bench-rest", [peers.store_yaml("facts-rest")]))
    mcp = peers.start_callosum("bench-mcp", write(peers, "bench-mcp", [peers.store_yaml("facts-mcp")]), ["facts-mcp"])
    searchers: dict[str, Any] = {"facts-rest (seren_loci REST)": Searcher(rest), "facts-mcp (mcp, streamable HTTP)": Searcher(mcp)}
    # The store itself, with no callosum in front: what the two share.
    searchers["SerenLoci POST /search, direct"] = Searcher(peers.loci_url)
    searchers["SerenLoci MCP search_loci, direct"] = RawMcp(peers.loci_url)
    hits = {label.split(" (")[0]: len(s.search()["hits"]) for label, s in searchers.items()}
    for s in searchers.values():
        for _ in range(WARMUP):
            s.search()
    times: dict[str, list[float]] = {label: [] for label in searchers}
    order = list(searchers)
    for r in range(ROUNDS):
        for label in order if r % 2 == 0 else reversed(order):
            s = searchers[label]
            times[label] += [s.timed() for _ in range(ROUND)]
    print(f"\n### a. MCP over REST, same SerenLoci ({ROUNDS} rounds x {ROUND} sequential searches each, "
          f"after {WARMUP} warm-up; query {QUERY!r}, n_results {N}; hits {hits})\n")
    print("| path | searches | p50 ms | p99 ms | mean ms |")
    print("|---|---:|---:|---:|---:|")
    for label, t in times.items():
        print(f"| {label} | {len(t)} | {ms(pct(t, 50))} | {ms(pct(t, 99))} | {ms(statistics.fmean(t))} |")
    a, b = times["facts-rest (seren_loci REST)"], times["facts-mcp (mcp, streamable HTTP)"]
    print(f"| **added by MCP** (facts-mcp - facts-rest) | | {ms(pct(b, 50) - pct(a, 50))} | {ms(pct(b, 99) - pct(a, 99))} | "
          f"{ms(statistics.fmean(b) - statistics.fmean(a))} |")
    c, d = times["SerenLoci POST /search, direct"], times["SerenLoci MCP search_loci, direct"]
    print(f"| of which SerenLoci's own MCP cost (MCP direct - REST direct) | | {ms(pct(d, 50) - pct(c, 50))} | "
          f"{ms(pct(d, 99) - pct(c, 99))} | {ms(statistics.fmean(d) - statistics.fmean(c))} |")
    print(f"\n(the hand-made MCP client reconnected {searchers['SerenLoci MCP search_loci, direct'].reconnects} time(s))")
    for r in range(ROUNDS):
        per = [f"{label.split(' (')[0].split(', ')[0]} {ms(pct(times[label][r * ROUND:(r + 1) * ROUND], 50))}" for label in order]
        print(f"\nround {r + 1} p50 ms: " + ", ".join(per), end="")
    print()
    peers.procs.stop("bench-rest")
    peers.procs.stop("bench-mcp")


def part_b(peers: Peers) -> None:
    url = peers.start_callosum("bench-graph", write(peers, "bench-graph", [peers.store_yaml("graph")]), ["graph"])
    warm = Searcher(url)
    hits = len(warm.search()["hits"])
    for _ in range(WARMUP):
        warm.search()
    lock = threading.Lock()
    latencies: list[float] = []
    errors: list[str] = []
    start_gate = threading.Barrier(CONCURRENCY + 1)
    stop_at = [0.0]

    def worker() -> None:
        s = Searcher(url)
        mine: list[float] = []
        start_gate.wait()
        while time.perf_counter() < stop_at[0]:
            try:
                mine.append(s.timed())
            except Exception as e:  # noqa: BLE001 - counted, not fatal
                with lock:
                    errors.append(f"{type(e).__name__}: {e}"[:200])
                s = Searcher(url)
        with lock:
            latencies.extend(mine)

    pid = peers.procs.running["bench-graph"].pid
    kids = children(pid)
    threads = [threading.Thread(target=worker) for _ in range(CONCURRENCY)]
    for t in threads:
        t.start()
    cpu0 = os.times()
    servers0 = [cpu_s(p) for p in [pid, *kids]]
    stop_at[0] = time.perf_counter() + DURATION
    began = time.perf_counter()
    start_gate.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    cpu1 = os.times()
    servers = [cpu_s(p) - c for p, c in zip([pid, *kids], servers0)]
    print(f"\n### b. one stdio store (server-memory), concurrency {CONCURRENCY}, {elapsed:.1f} s "
          f"(query {QUERY!r}, {hits} hits each)\n")
    print("| searches | errors | searches/s | p50 ms | p99 ms | CPU s: client / callosum / node |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(f"| {len(latencies)} | {len(errors)} | {len(latencies) / elapsed:.0f} | {ms(pct(latencies, 50))} | "
          f"{ms(pct(latencies, 99))} | {(cpu1.user - cpu0.user) + (cpu1.system - cpu0.system):.1f} / "
          f"{servers[0]:.1f} / {sum(servers[1:]):.1f} |")
    if errors:
        print(f"\nfirst errors: {sorted(set(errors))[:3]}")
    peers.procs.stop("bench-graph")


def part_c(peers: Peers) -> None:
    entries = []
    for i in range(1, STDIO_STORES + 1):
        path = peers.work / f"memory-{i}.jsonl"
        peers.write_graph(path)
        entries.append(peers.store_yaml("graph", f"graph{i}", memory_file=path))
    url = peers.start_callosum("bench-16", write(peers, "bench-16", entries))
    pid = peers.procs.running["bench-16"].pid
    before = vm_rss_kib(pid)
    # The stdio servers start with the callosum; on a loaded 2-core machine 16 node processes may
    # take longer than the store timeout, so a search that meets them still starting names them in
    # `failed`. Search until one answer comes from all of them.
    began, tries, searcher = time.perf_counter(), 0, Searcher(url)
    while True:
        tries += 1
        try:
            answer = searcher.search()
            break
        except RuntimeError as e:
            if time.perf_counter() - began > 120:
                raise RuntimeError(f"no search answered by all {STDIO_STORES} stores within 120 s: {e}") from None
            time.sleep(0.5)
    ready = time.perf_counter() - began
    stores = len(answer["stores_searched"])
    time.sleep(1)  # let the first search's buffers settle before reading RSS
    kids = children(pid)
    own = vm_rss_kib(pid)
    kid_rss = [vm_rss_kib(k) for k in kids]
    names = {Path(f"/proc/{k}/comm").read_text().strip() for k in kids}
    print(f"\n### c. memory, {STDIO_STORES} stdio stores (a search answered by {stores} stores, "
          f"{len(answer['hits'])} hits, {ready:.1f} s after the callosum listened, search #{tries})\n")
    print("| process | count | VmRSS MiB | per process MiB |")
    print("|---|---:|---:|---:|")
    print(f"| callosum (before the first search) | 1 | {before / 1024:.1f} | |")
    print(f"| callosum (after) | 1 | {own / 1024:.1f} | |")
    print(f"| its children ({', '.join(sorted(names))}) | {len(kids)} | {sum(kid_rss) / 1024:.1f} | "
          f"{statistics.fmean(kid_rss) / 1024 if kid_rss else 0:.1f} |")
    peers.procs.stop("bench-16")


def write(peers: Peers, name: str, entries: list[str]) -> Path:
    path = peers.work / f"{name}.yaml"
    path.write_text(peers.callosum_yaml(entries))
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=str(ROOT / "target/debug/seren-corpus-callosum"))
    parser.add_argument("--loci", default=str(ROOT / "target/mcp-peers-loci-venv/bin/seren-loci"))
    parser.add_argument("--server-memory", default=str(
        ROOT / "tests/mcp-peers/node_modules/@modelcontextprotocol/server-memory/dist/index.js"))
    parser.add_argument("--parts", default="abc", help="which parts to run (default abc)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="scc-mcp-bench-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEREN_SCC_")}
    env["HOME"] = str(work / "home")
    (work / "home").mkdir()
    procs = Processes(work, env, STARTUP_TIMEOUT, STOP_TIMEOUT)
    try:
        peers = Peers(args, work, procs)
        peers.start_loci()
        peers.write_graph(peers.memory_file)
        print(f"mcp-peers bench: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
              f"binary {args.bin} ({time.strftime('%Y-%m-%d %H:%M', time.localtime(os.path.getmtime(args.bin)))}), "
              f"load {os.getloadavg()[0]:.2f}")
        for part in args.parts:
            {"a": part_a, "b": part_b, "c": part_c}[part](peers)
            print(f"\n(load average after part {part}: {os.getloadavg()[0]:.2f})")
    finally:
        procs.stop_all()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
