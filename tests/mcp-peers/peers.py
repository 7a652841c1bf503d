"""The `mcp` store type against real MCP servers that are not ours, each checked against an
independent client (the official Python `mcp` SDK) asking the same server the same thing.

The peers: SerenLoci 5.5.0 from PyPI (its MCP endpoint at /mcp/, tool `search_loci`, and its REST
/search beside it), the official knowledge-graph server `@modelcontextprotocol/server-memory`
2026.8.31 from npm (stdio, tool `search_nodes`), and a second callosum (ours, fanning SerenLoci's
REST) reached over streamable HTTP and over stdio. run.sh installs them; this script seeds them,
starts an outer callosum that fans all of them, and checks, one line per case:

  a. graph over stdio: the outer answer's `graph` hits are what `search_nodes` answers the SDK,
     mapped here independently (id = name, content = "name (type): obs; obs"), cut to the ask.
  b. SerenLoci over MCP and over REST give the same hits, and both the SDK's `search_loci` ids.
  c. / d. the inner callosum over HTTP MCP and over stdio gives its own POST /search hits.
  e. graph entities and facts fuse into one answer, with their provenance.
  f. `check` lists each MCP server's tools and finds the tool and its query argument.
  g. a tool the server does not list is a `failed` reason naming the server's tools.
  h. on SIGTERM the outer callosum ends the stdio servers it spawned.

Usage: peers.py --bin BINARY --loci SEREN_LOCI_EXE --server-memory DIST_INDEX_JS
Prints `ok  CASE  DETAIL` or `FAIL  CASE  DETAIL` per case and ends with
`mcp-peers: N passed, M failed`; exits 1 if anything failed (a fixture that does not start, too).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
from harness import HIT_KEYS, CheckFailed, Processes, alive, check, children, free_port, run_cases  # noqa: E402

# Large enough that no fused answer here is cut: every store's hits all appear (a check says so).
N_RESULTS = 40
# What the callosum asks each store for: max(n * fetch_multiplier, n), multiplier 2 by default.
ASK = max(N_RESULTS * 2, N_RESULTS)
STARTUP_TIMEOUT = 60.0  # seconds for a server to answer /health or print its address
REQUEST_TIMEOUT = 30.0  # seconds, one HTTP request or one MCP session of the independent client
STOP_TIMEOUT = 10.0  # seconds a process gets after SIGTERM before SIGKILL

# Six facts: two without a why, one in the "*" project (a fundamental, found from every project).
FACTS = [
    {"project": "*", "key": "xavier.cuda", "value": "11.4", "why": "JetPack 5 ships CUDA 11.4"},
    {"project": "lab", "key": "xavier.hostname", "value": "xavier-01", "why": ""},
    {"project": "lab", "key": "backup.target", "value": "nas:/srv/backup", "why": "the NAS has the space"},
    {"project": "lab", "key": "cuda.toolkit", "value": "12.2", "why": ""},
    {"project": "lab", "key": "jetpack.version", "value": "5.1.2", "why": "last release for Xavier"},
    {"project": "lab", "key": "editor", "value": "helix", "why": "it starts fast"},
]
# Five entities and two relations, in the server's own JSONL form; search_nodes answers in file order.
GRAPH = [
    {"type": "entity", "name": "Xavier", "entityType": "device",
     "observations": ["Jetson AGX Xavier dev kit", "runs JetPack 5.1.2", "sits in the lab rack"]},
    {"type": "entity", "name": "NAS", "entityType": "device", "observations": ["Synology box", "holds the nightly backup"]},
    {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["owns the Xavier", "prefers helix"]},
    {"type": "entity", "name": "CUDA", "entityType": "software",
     "observations": ["11.4 on the Xavier", "12.2 on the workstation"]},
    {"type": "entity", "name": "Lab", "entityType": "place", "observations": ["room 4.12"]},
    {"type": "relation", "from": "Ada", "to": "Xavier", "relationType": "owns"},
    {"type": "relation", "from": "Xavier", "to": "Lab", "relationType": "located_in"},
]
# Upper case on purpose: server-memory matches case-insensitively, and the callosum passes the
# query through untouched.
GRAPH_QUERIES = ["xavier", "DEVICE", "backup"]
FACT_QUERIES = ["xavier", "cuda", "backup"]
FUSED_QUERY = "cuda"  # matches the CUDA entity and two facts
STORES = ["graph", "facts-mcp", "facts-rest", "inner", "inner-stdio"]


def post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as r:
        return json.load(r)


def yaml_str(value: str) -> str:
    """A JSON string is a YAML flow scalar: safe for any path or URL."""
    return json.dumps(value)


class Peers:
    """The running fixtures: SerenLoci, the server-memory file, the inner and the outer callosum."""

    def __init__(self, args: argparse.Namespace, work: Path, procs: Processes) -> None:
        self.args, self.work, self.procs = args, work, procs
        self.memory_file = work / "memory.jsonl"
        self.fact_ids: dict[str, str] = {}

    def start(self) -> None:
        self.start_loci()
        self.write_graph(self.memory_file)
        self.start_inner()
        self.outer_config = self.work / "outer.yaml"
        self.outer_config.write_text(self.outer_yaml(STORES))
        self.outer_url = self.start_callosum("outer", self.outer_config, [s for s in STORES if s != "facts-rest"])

    def start_loci(self) -> None:
        """SerenLoci on a free port, its home and database in the scratch dir, seeded with FACTS."""
        port = free_port()
        self.loci_url = f"http://127.0.0.1:{port}"
        (self.work / "loci-home").mkdir()
        loci_config = self.work / "seren-loci.yaml"
        loci_config.write_text(f"""server:
  host: 127.0.0.1
  port: {port}
storage:
  db_path: {yaml_str(str(self.work / "loci.db"))}
updates:
  enabled: false
backup:
  enabled: false
""")
        self.procs.start("seren-loci", [self.args.loci, "--config", str(loci_config)], {"HOME": str(self.work / "loci-home")})
        self.procs.wait_healthy("seren-loci", self.loci_url)
        for fact in FACTS:
            answer = post(self.loci_url + "/fact", fact)
            self.fact_ids[fact["key"]] = answer["fact"]["id"]

    @staticmethod
    def write_graph(path: Path) -> None:
        path.write_text("".join(json.dumps(line) + "\n" for line in GRAPH))

    def start_inner(self) -> None:
        """A callosum fanning SerenLoci's REST only, over HTTP on a port of its choosing."""
        self.inner_config = self.work / "inner.yaml"
        self.inner_config.write_text(f"""server: {{host: 127.0.0.1, port: 0}}
federation:
  per_store_timeout_s: 10
  stores:
    - {{name: facts-rest, type: seren_loci, url: {yaml_str(self.loci_url)}}}
""")
        self.procs.start("inner", [self.args.bin, "serve", "-c", str(self.inner_config)],
                         {"SEREN_SCC_RUNTIME_STORES": str(self.work / "inner.overlay.json")})
        self.inner_url = "http://" + self.procs.wait_for_line("inner", r"listening on http://(\S+)").group(1)

    def start_callosum(self, name: str, config: Path, mcp_stores: tuple[str, ...] | list[str] = ()) -> str:
        """Starts `serve` on `config` and returns its url once it listens and each of `mcp_stores`
        has its session up (a callosum starts them at once, in the background): a first search
        must not meet a server still starting on a loaded CI machine."""
        self.procs.start(name, [self.args.bin, "serve", "-c", str(config)],
                         {"SEREN_SCC_RUNTIME_STORES": str(self.work / f"{name}.overlay.json")})
        url = "http://" + self.procs.wait_for_line(name, r"listening on http://(\S+)").group(1)
        for store in mcp_stores:
            self.procs.wait_for_line(name, rf"mcp server up store={re.escape(store)} ")
        return url

    def store_yaml(self, store: str, name: str | None = None, extra: str = "", memory_file: Path | None = None) -> str:
        """One store entry of a callosum's YAML, `store` one of STORES, under `name` (default: the same)."""
        name = name or store
        if store == "graph":
            body = f"""      preset: server-memory
      command: node
      args: [{yaml_str(self.args.server_memory)}]
      env: {{MEMORY_FILE_PATH: {yaml_str(str(memory_file or self.memory_file))}}}"""
        elif store == "facts-mcp":
            body = f"""      preset: seren-loci
      url: {yaml_str(self.loci_url + "/mcp/")}"""
        elif store == "facts-rest":
            return f"    - {{name: {name}, type: seren_loci, url: {yaml_str(self.loci_url)}}}\n"
        elif store == "inner":
            body = f"""      preset: callosum
      url: {yaml_str(self.inner_url + "/mcp")}"""
        elif store == "inner-stdio":
            body = f"""      preset: callosum
      command: {yaml_str(self.args.bin)}
      args: [stdio, -c, {yaml_str(str(self.inner_config))}]
      env: {{SEREN_SCC_RUNTIME_STORES: {yaml_str(str(self.work / (name + ".overlay.json")))}}}"""
        else:
            raise ValueError(store)
        return f"    - name: {name}\n      type: mcp\n{body}\n{extra}"

    @staticmethod
    def callosum_yaml(entries: list[str]) -> str:
        return ("server: {host: 127.0.0.1, port: 0}\nfederation:\n  per_store_timeout_s: 10\n  stores:\n"
                + "".join(entries))

    def outer_yaml(self, stores: list[str]) -> str:
        return self.callosum_yaml([self.store_yaml(s) for s in stores])

    def search(self, query: str, url: str | None = None, n: int = N_RESULTS) -> dict[str, Any]:
        answer = post((url or self.outer_url) + "/search", {"query": query, "n_results": n})
        check(len(answer["hits"]) < n, f"{query!r}: {len(answer['hits'])} hits fill n_results={n}: some store's hits may be cut")
        return answer

    # --- the independent client ---------------------------------------------------------------

    def sdk(self, transport: Callable[[Any], Any], use: Callable[[Client], Any]) -> Any:
        """Opens one session of the official SDK (legacy initialize handshake: both peers speak it),
        runs `use` on it and closes it."""

        async def go() -> Any:
            with anyio.fail_after(REQUEST_TIMEOUT):
                with (self.work / "sdk-stdio.log").open("a") as errlog:
                    async with Client(transport(errlog), mode="legacy", read_timeout_seconds=REQUEST_TIMEOUT) as client:
                        return await use(client)

        return anyio.run(go)

    def graph_transport(self, errlog: Any) -> Any:
        params = StdioServerParameters(command="node", args=[self.args.server_memory],
                                       env={"MEMORY_FILE_PATH": str(self.memory_file)}, cwd=str(self.work))
        return stdio_client(params, errlog=errlog)

    def loci_transport(self, errlog: Any) -> str:
        return self.loci_url + "/mcp/"

    def tool_names(self, transport: Callable[[Any], Any]) -> list[str]:
        async def use(client: Client) -> list[str]:
            return [t.name for t in (await client.list_tools()).tools]

        return self.sdk(transport, use)

    def call(self, transport: Callable[[Any], Any], tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A tool's result document as the contract reads it: structuredContent, else the first
        text block as JSON."""

        async def use(client: Client) -> Any:
            return await client.call_tool(tool, arguments)

        result = self.sdk(transport, use)
        texts = [b.text for b in result.content if getattr(b, "type", None) == "text"]
        check(not result.is_error, f"{tool} is a tool error: {texts}")
        if result.structured_content is not None:
            return result.structured_content
        check(texts, f"{tool}: neither structured content nor a text block")
        return json.loads(texts[0])


def of(answer: dict[str, Any], store: str) -> list[dict[str, Any]]:
    """One store's hits in an answer, checked to be its whole list in rank order."""
    hits = [h for h in answer["hits"] if h["store"] == store]
    ranks = [h["store_rank"] for h in hits]
    check(ranks == list(range(1, len(hits) + 1)), f"{store}: store_rank runs {ranks}, not 1..{len(hits)}")
    return hits


def answered(answer: dict[str, Any], stores: list[str]) -> None:
    check(answer["failed"] == [], f"failed: {answer['failed']}")
    missing = set(stores) - set(answer["stores_searched"])
    check(not missing, f"{sorted(missing)} not in stores_searched {answer['stores_searched']}")


def rows(hits: list[dict[str, Any]], *keys: str) -> list[tuple]:
    return [tuple(h.get(k) for k in keys) for h in hits]


# --- the cases ----------------------------------------------------------------------------------


def case_graph_stdio(peers: Peers) -> str:
    details = []
    for query in GRAPH_QUERIES:
        answer = peers.search(query)
        answered(answer, ["graph"])
        ours = rows(of(answer, "graph"), "id", "content", "base_relevance", "native_score", "metadata")
        document = peers.call(peers.graph_transport, "search_nodes", {"query": query})
        # Every member of an entity is read by the id or the content, so none is left for metadata.
        theirs = [(e["name"], f"{e['name']} ({e['entityType']}): " + "; ".join(e["observations"]), 0.0, None, {})
                  for e in document["entities"]][:ASK]
        check(theirs, f"{query!r}: search_nodes found nothing; the case would prove little")
        check(ours == theirs, f"{query!r}: the callosum's graph hits\n        {ours}\n      search_nodes, mapped here\n        {theirs}")
        details.append(f"{query} -> {', '.join(r[0] for r in ours)}")
    return "; ".join(details)


def case_facts_mcp_vs_rest(peers: Peers) -> str:
    details = []
    for query in FACT_QUERIES:
        answer = peers.search(query)
        answered(answer, ["facts-mcp", "facts-rest"])
        over_mcp = rows(of(answer, "facts-mcp"), "id", "content", "base_relevance", "native_score")
        over_rest = rows(of(answer, "facts-rest"), "id", "content", "base_relevance", "native_score")
        check(over_mcp, f"{query!r}: no facts-mcp hits; the case would prove little")
        check(over_mcp == over_rest, f"{query!r}: facts-mcp\n        {over_mcp}\n      facts-rest\n        {over_rest}")
        document = peers.call(peers.loci_transport, "search_loci", {"query": query, "n_results": ASK})
        sdk_ids = [h["id"] for h in document["hits"]]
        check([r[0] for r in over_mcp] == sdk_ids, f"{query!r}: callosum ids {[r[0] for r in over_mcp]}, search_loci ids {sdk_ids}")
        # An mcp store's metadata: the hit's members that no one-level pointer of the mapping read.
        used = {"id", "key", "value", "why", "score"}
        expected = [{k: v for k, v in h.items() if k not in used} for h in document["hits"]]
        metadata = [h["metadata"] for h in of(answer, "facts-mcp")]
        check(metadata == expected, f"{query!r}: facts-mcp metadata\n        {metadata}\n      search_loci hits less {sorted(used)}\n        {expected}")
        details.append(f"{query} -> {len(sdk_ids)}")
    # The content template, with and without a why, on the MCP store.
    answer = peers.search("xavier")
    content = {h["id"]: h["content"] for h in of(answer, "facts-mcp")}
    with_why, without_why = peers.fact_ids["xavier.cuda"], peers.fact_ids["xavier.hostname"]
    check(content.get(with_why) == "xavier.cuda = 11.4 because JetPack 5 ships CUDA 11.4",
          f"the fact with a why reads {content.get(with_why)!r}")
    check(content.get(without_why) == "xavier.hostname = xavier-01", f"the fact without a why reads {content.get(without_why)!r}")
    return f"hits per query: {', '.join(details)}; same ids, content and scores over MCP, REST and the SDK; metadata = the unread members; why/no-why content ok"


def inner_case(store: str) -> Callable[[Peers], str]:
    def case(peers: Peers) -> str:
        details = []
        for query in FACT_QUERIES:
            answer = peers.search(query)
            answered(answer, [store])
            ours = rows(of(answer, store), "id", "content", "base_relevance")
            own = post(peers.inner_url + "/search", {"query": query, "n_results": ASK})
            theirs = rows(own["hits"], "id", "content", "base_relevance")
            check(ours, f"{query!r}: no {store} hits; the case would prove little")
            check(ours == theirs, f"{query!r}: outer's {store} hits\n        {ours}\n      the inner callosum's own /search\n        {theirs}")
            details.append(f"{query} -> {len(ours)}")
        return f"same ids, content and base_relevance as the inner's POST /search (n_results={ASK}): {', '.join(details)}"

    return case


def case_fused(peers: Peers) -> str:
    answer = peers.search(FUSED_QUERY)
    answered(answer, STORES)
    hits = answer["hits"]
    for hit in hits:
        missing = set(HIT_KEYS) - set(hit)
        check(not missing, f"a hit lacks {sorted(missing)}: {hit}")
    graph, facts = of(answer, "graph"), of(answer, "facts-mcp")
    check([h["id"] for h in graph] == ["CUDA"], f"graph hits {[h['id'] for h in graph]}, expected [CUDA]")
    check(graph[0]["content"] == "CUDA (software): 11.4 on the Xavier; 12.2 on the workstation", f"graph content {graph[0]['content']!r}")
    check(peers.fact_ids["xavier.cuda"] in {h["id"] for h in facts}, f"facts-mcp hits {rows(facts, 'id', 'content')} lack xavier.cuda")
    # Plain RRF, weight 1, k 60: each hit scores 1/(60 + its rank); ties keep roster order, so the
    # graph's rank 1 leads, then facts-mcp's rank 1.
    for hit in hits:
        check(abs(hit["score"] - 1 / (60 + hit["store_rank"])) < 1e-12, f"score {hit['score']} at rank {hit['store_rank']}: {hit}")
    check(rows(hits[:2], "store", "store_rank") == [("graph", 1), ("facts-mcp", 1)], f"the answer opens with {rows(hits[:2], 'store', 'store_rank')}")
    stores = {h["store"] for h in hits}
    return (f"{FUSED_QUERY!r}: {len(hits)} hits from {len(stores)} stores; "
            + " | ".join(f"{h['store']}#{h['store_rank']} {h['content']}" for h in hits[:3]))


def case_check(peers: Peers) -> str:
    env = dict(peers.procs.env, SEREN_SCC_RUNTIME_STORES=str(peers.work / "check.overlay.json"))
    run = subprocess.run([peers.args.bin, "check", "-c", str(peers.outer_config)], env=env, cwd=peers.work,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    printed = run.stdout + run.stderr
    check(run.returncode == 0, f"check exited {run.returncode}:\n{printed}")
    details = []
    for store, tool, transport in (("graph", "search_nodes", peers.graph_transport), ("facts-mcp", "search_loci", peers.loci_transport)):
        line = re.search(rf"^\s+{re.escape(store)}: tools: (.+); '{tool}' is listed and takes 'query'$", run.stdout, re.MULTILINE)
        check(line, f"no line saying {store}'s '{tool}' is listed and takes 'query' in:\n{printed}")
        listed = line.group(1).split(", ")
        sdk = peers.tool_names(transport)
        check(listed == sdk, f"{store}: check lists {listed}, the SDK's tools/list {sdk}")
        details.append(f"{store}: {len(listed)} tools")
    return f"exit 0; {'; '.join(details)}, the same as the SDK's tools/list"


def case_unknown_tool(peers: Peers) -> str:
    config = peers.work / "unknown-tool.yaml"
    config.write_text(peers.callosum_yaml([peers.store_yaml("graph", "no-tool", "      tool: no_such_tool\n"),
                                           peers.store_yaml("facts-rest")]))
    url = peers.start_callosum("unknown-tool", config, ["no-tool"])
    try:
        answer = peers.search("xavier", url)
    finally:
        peers.procs.stop("unknown-tool")
    reasons = {f["name"]: f["reason"] for f in answer["failed"]}
    check("no-tool" in reasons, f"the store with an unknown tool is not in failed: {answer['failed']}")
    sdk = peers.tool_names(peers.graph_transport)
    expected = f"unknown tool 'no_such_tool'; the server lists {len(sdk)} other tools"
    check(expected in reasons["no-tool"], f"reason {reasons['no-tool']!r}, expected it to hold {expected!r}")
    check(of(answer, "facts-rest"), "the other store's hits are gone")
    return f"failed: {reasons['no-tool']!r}; facts-rest still answered"


def case_children_end(peers: Peers) -> str:
    outer = peers.procs.running["outer"]
    spawned = children(outer.pid)
    check(len(spawned) == 2, f"the outer callosum has children {spawned}, expected 2 (graph, inner-stdio)")
    outer.terminate()
    try:
        code = outer.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"the outer callosum did not exit within {STOP_TIMEOUT:.0f} s of SIGTERM") from None
    deadline = time.monotonic() + STOP_TIMEOUT
    while any(alive(pid) for pid in spawned) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in spawned if alive(pid)]
    check(not left, f"after the callosum exited ({code}), its stdio servers {left} still run")
    check(code == 0, f"the callosum exited {code} on SIGTERM")
    return f"exit 0 on SIGTERM; its {len(spawned)} stdio servers ended too"


CASES: list[tuple[str, Callable[[Peers], str]]] = [
    ("a/graph-stdio-vs-sdk", case_graph_stdio),
    ("b/facts-mcp-vs-rest-vs-sdk", case_facts_mcp_vs_rest),
    ("c/inner-callosum-http", inner_case("inner")),
    ("d/inner-callosum-stdio", inner_case("inner-stdio")),
    ("e/graph-fused-with-facts", case_fused),
    ("f/check-lists-tools", case_check),
    ("g/unknown-tool-is-failed", case_unknown_tool),
    ("h/sigterm-ends-stdio-servers", case_children_end),  # last: it stops the outer callosum
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="the seren-corpus-callosum binary")
    parser.add_argument("--loci", required=True, help="the seren-loci executable (its own venv)")
    parser.add_argument("--server-memory", required=True, help="server-memory's dist/index.js")
    parser.add_argument("--keep", action="store_true", help="keep the scratch dir even when every case passed")
    parser.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failed cases")
    args = parser.parse_args()
    for path in (args.bin, args.loci, args.server_memory):
        if not os.path.exists(path):
            print(f"mcp-peers: {path} does not exist", file=sys.stderr)
            print("mcp-peers: 0 passed, 1 failed")
            return 1

    # SIGTERM (a CI timeout) unwinds like Ctrl-C, so the finally below still ends every process.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="scc-mcp-peers-"))
    # Nothing from the caller's environment configures the servers started here, and none of them
    # writes to the caller's home.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEREN_SCC_")}
    env["HOME"] = str(work / "home")
    (work / "home").mkdir()
    procs = Processes(work, env, STARTUP_TIMEOUT, STOP_TIMEOUT)
    passed = failed = 0
    try:
        peers = Peers(args, work, procs)
        try:
            peers.start()
        except Exception as e:  # noqa: BLE001 - a fixture that does not start is one failure, reported
            print(f"FAIL  fixtures  {e}", flush=True)
            failed += 1
        else:
            print(f"mcp-peers: seren-loci {peers.loci_url}, inner callosum {peers.inner_url}, outer {peers.outer_url}, "
                  f"n_results={N_RESULTS} (ask {ASK})", flush=True)
            passed, failed = run_cases(CASES, peers, args.verbose)
    except (KeyboardInterrupt, SystemExit):
        # An interrupted run is not a passing one.
        print("FAIL  interrupted", flush=True)
        failed += 1
        raise
    else:
        if failed:
            for name in ("seren-loci", "inner", "outer"):
                if (work / f"{name}.log").exists():
                    print(f"      {name} log, last lines:\n{procs.tail(name)}", flush=True)
    finally:
        procs.stop_all()
        if failed or args.keep:
            print(f"mcp-peers: logs kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
        print(f"mcp-peers: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
