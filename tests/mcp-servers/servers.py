"""The memory servers people run, fanned with a preset and with the mapping `propose` prints.

The servers:
  - basic-memory (PyPI, pinned in requirements-basic-memory.txt), for real: seeded with five notes
    through its own `write_note` (basic_memory_seed.py), spawned by the callosum over stdio.
  - @modelcontextprotocol/server-memory (npm, tests/mcp-peers), for real, for `propose`.
  - mcp-server-qdrant, chroma-mcp, Graphiti and mem0 as stubs (stub_servers.py) that answer what
    each server's source answers (the file and version are cited there), over stdio and HTTP.
  - a SerenMemory stub (REST /search, here) beside them, so every answer is a fused one.

One callosum serves them all; each case reads one store's hits out of its fused answer and holds
them against what the official Python SDK gets from the same server, mapped here independently:

  a. basic-memory with its preset: its hits in its own order, with the notes' text, beside the
     SerenMemory stub's.
  b. basic-memory with the block `propose` printed: the same hits.
  c. each stub with its preset, over stdio and over HTTP: ids, order, content and metadata as the
     SDK's answer mapped here; ids stable across two searches; stdio equal to HTTP.
  d. each stub's malformed entry (a query with "broken" reaches it) is its store's `failed`
     reason, naming what is wrong, and the other stores still answer.
  e. `propose` against each stub and against server-memory: the printed block binds (the
     callosum starts it) and searches to the preset's hits.
  f. `propose` refuses, naming why: a scope argument missing, a server with no search tool.

Usage: servers.py --bin BINARY --basic-memory EXE --server-memory DIST_INDEX_JS
Prints `ok  CASE  DETAIL` or `FAIL  CASE  DETAIL` per case and ends with
`mcp-servers: N passed, M failed`; exits 1 if anything failed.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "harness"))
sys.path.insert(0, str(HERE.parent / "mcp-peers"))
from harness import Processes, check, free_port, run_cases  # noqa: E402
from peers import GRAPH, post, yaml_str  # noqa: E402

import basic_memory_seed  # noqa: E402
import peers  # noqa: E402

# basic-memory takes 15 s to start alone, and more beside a dozen other servers starting.
STARTUP_TIMEOUT = 180.0

N_RESULTS = 200  # the most a search may ask: every store's hits fit, uncut
ASK = N_RESULTS * 2  # the store's ask: n_results × fetch_multiplier (2)
REQUEST_TIMEOUT = 60.0
PROPOSE_TIMEOUT = 120.0  # seconds for one `propose` run (basic-memory takes ~15 s to start)
CORPUS = json.loads((HERE / "corpus.json").read_text())
PYTHON = sys.executable
STUB = str(HERE / "stub_servers.py")

# Each stubbed server's preset store: the preset, the scope it needs, the queries of the cases.
STUBS: dict[str, dict[str, Any]] = {
    "qdrant": {"server": "qdrant", "preset": "mcp-server-qdrant", "arguments": {"collection_name": "lab"}, "query": "xavier"},
    "chroma": {"server": "chroma", "preset": "chroma-mcp", "arguments": {"collection_name": "lab"}, "query": "xavier"},
    "graphiti-facts": {"server": "graphiti", "preset": "graphiti-facts", "arguments": {"group_ids": ["main"]}, "query": "xavier"},
    "graphiti-nodes": {"server": "graphiti", "preset": "graphiti-nodes", "arguments": {"group_ids": ["main"]}, "query": "xavier"},
    "mem0": {"server": "mem0", "preset": "mem0", "arguments": {}, "query": "xavier"},
}
# What each stub's malformed entry makes its store's `failed` reason say.
BROKEN = {
    "qdrant": "does not end with </content><metadata>|has no </content><metadata>",
    "chroma": "the metadatas column has",
    "graphiti-facts": "nests deeper than",
    "graphiti-nodes": "nests deeper than",
    "mem0": "the tool's text is not JSON",
}
# The SerenMemory stub's episodes: a hit when a query word is in its content.
EPISODES = [
    {"id": "ep-1", "content": "Reflashed the Xavier after the JetPack upgrade", "tier": "episodic", "topic": "lab"},
    {"id": "ep-2", "content": "Moved the backup job to the new NAS share", "tier": "episodic", "topic": "lab"},
    {"id": "ep-3", "content": "The CUDA build broke on the workstation until the driver update", "tier": "long", "topic": "gpu"},
]


# --- the SerenMemory stub -----------------------------------------------------------------------


class Episodes(http.server.BaseHTTPRequestHandler):
    """POST /search as SerenMemory answers it (contract §1 `seren_memory`)."""

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(min(length, 1 << 16)) or b"{}")
        words = str(body.get("query", "")).lower().split()
        hits = [dict(e, score=0.9 - 0.1 * i, raw_distance=0.1 + 0.1 * i, metadata={})
                for i, e in enumerate(e for e in EPISODES if any(w in e["content"].lower() for w in words))]
        answer = json.dumps({"query": body.get("query"), "searched_tiers": ["episodic", "long"],
                             "hits": hits[: int(body.get("n_results", 10))]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *_: Any) -> None:
        pass


# --- the run's fixtures -------------------------------------------------------------------------


class Servers:
    def __init__(self, args: argparse.Namespace, work: Path, procs: Processes) -> None:
        self.args, self.work, self.procs = args, work, procs
        self.notes_home = work / "basic-memory"
        self.memory_file = work / "memory.jsonl"
        self.http_urls: dict[str, str] = {}
        self.proposed: dict[str, str] = {}

    def start(self) -> None:
        basic_memory_seed.seed(self.notes_home, self.args.basic_memory)
        self.memory_file.write_text("".join(json.dumps(line) + "\n" for line in GRAPH))
        episodes = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Episodes)
        threading.Thread(target=episodes.serve_forever, daemon=True).start()
        self.episodes_url = f"http://127.0.0.1:{episodes.server_address[1]}"
        for server in sorted({s["server"] for s in STUBS.values()}):
            port = free_port()
            self.procs.start(f"stub-{server}", [PYTHON, STUB, server, "--http", str(port)])
            self.http_urls[server] = f"http://127.0.0.1:{port}/mcp"
        for server in self.http_urls:
            self.procs.wait_for_line(f"stub-{server}", r"(Uvicorn running|listening) on http://")
        self.propose_all()
        self.config = self.work / "callosum.yaml"
        self.config.write_text(self.callosum_yaml())
        self.procs.start("callosum", [self.args.bin, "serve", "-c", str(self.config)],
                         {"SEREN_SCC_RUNTIME_STORES": str(self.work / "overlay.json")})
        self.url = "http://" + self.procs.wait_for_line("callosum", r"listening on http://(\S+)").group(1)
        for store in self.mcp_store_names():
            self.procs.wait_for_line("callosum", rf"mcp server up store={re.escape(store)} ")

    # --- the stores, as YAML -------------------------------------------------------------------

    def notes_endpoint(self) -> tuple[str, list[str], dict[str, str]]:
        argv = basic_memory_seed.server_argv(self.args.basic_memory)
        return argv[0], argv[1:], basic_memory_seed.server_env(self.notes_home)

    def stub_endpoint(self, server: str, transport: str) -> str:
        if transport == "http":
            return f"      url: {yaml_str(self.http_urls[server])}\n"
        return f"      command: {yaml_str(PYTHON)}\n      args: {json.dumps([STUB, server])}\n"

    def callosum_yaml(self) -> str:
        command, args, env = self.notes_endpoint()
        entries = [
            f"    - {{name: episodes, type: seren_memory, url: {yaml_str(self.episodes_url)}}}\n",
            "    - name: notes\n      type: mcp\n      preset: basic-memory\n      timeout_s: 30\n"
            f"      command: {yaml_str(command)}\n      args: {json.dumps(args)}\n      env: {json.dumps(env)}\n",
            "    - name: graph\n      type: mcp\n      preset: server-memory\n      command: node\n"
            f"      args: [{yaml_str(self.args.server_memory)}]\n"
            f"      env: {{MEMORY_FILE_PATH: {yaml_str(str(self.memory_file))}}}\n",
        ]
        for name, stub in STUBS.items():
            for transport in ("stdio", "http"):
                entries.append(f"    - name: {name}-{transport}\n      type: mcp\n      preset: {stub['preset']}\n"
                               + (f"      arguments: {json.dumps(stub['arguments'])}\n" if stub["arguments"] else "")
                               + self.stub_endpoint(stub["server"], transport))
        # Each proposed block, pasted as printed (its comment lines and all) with a timeout of 30 s.
        for block in self.proposed.values():
            entries.append(block.rstrip("\n") + "\n      timeout_s: 30\n")
        return ("server: {host: 127.0.0.1, port: 0}\nfederation:\n  per_store_timeout_s: 10\n"
                f"  n_results: {N_RESULTS}\n  stores:\n" + "".join(entries))

    def mcp_store_names(self) -> list[str]:
        names = ["notes", "graph"] + [f"{n}-{t}" for n in STUBS for t in ("stdio", "http")]
        return names + [f"{name}-proposed" for name in self.proposed]

    # --- propose --------------------------------------------------------------------------------

    def propose(self, name: str, query: str, argv: list[str], extra: list[str] = ()) -> subprocess.CompletedProcess:
        return subprocess.run([self.args.bin, "propose", "--query", query, "--name", name, *extra, "--", *argv],
                              capture_output=True, text=True, timeout=PROPOSE_TIMEOUT, cwd=self.work)

    def propose_all(self) -> None:
        command, args, env = self.notes_endpoint()
        env_flags = [flag for key, value in env.items() for flag in ("--env", f"{key}={value}")]
        runs = {
            "notes": self.propose("notes-proposed", "xavier", [command, *args], env_flags),
            "graph": self.propose("graph-proposed", "xavier", ["node", self.args.server_memory],
                                  ["--env", f"MEMORY_FILE_PATH={self.memory_file}"]),
        }
        for name, stub in STUBS.items():
            if name == "graphiti-nodes":
                extra = ["--tool", "search_nodes"]
            elif name == "graphiti-facts":
                extra = ["--tool", "search_memory_facts"]
            else:
                extra = []
            extra += [flag for key, value in stub["arguments"].items() for flag in ("--arg", f"{key}={json.dumps(value)}")]
            runs[name] = self.propose(f"{name}-proposed", stub["query"], [PYTHON, STUB, stub["server"]], extra)
        for name, run in runs.items():
            (self.work / f"propose-{name}.out").write_text(run.stdout + "\n--- stderr\n" + run.stderr)
            if run.returncode == 0:
                self.proposed[name] = run.stdout
            else:
                self.propose_errors[name] = f"exit {run.returncode}: {run.stderr.strip()[:400]}"

    propose_errors: dict[str, str] = {}

    # --- asking -------------------------------------------------------------------------------

    def search(self, query: str) -> dict[str, Any]:
        return post(self.url + "/search", {"query": query, "n_results": N_RESULTS})

    def sdk_call(self, transport: Callable[[Any], Any], tool: str, arguments: dict[str, Any]) -> Any:
        async def go() -> Any:
            with anyio.fail_after(REQUEST_TIMEOUT):
                with (self.work / "sdk-stdio.log").open("a") as errlog:
                    async with Client(transport(errlog), mode="legacy", read_timeout_seconds=REQUEST_TIMEOUT) as client:
                        return await client.call_tool(tool, arguments)

        return anyio.run(go)

    def stub_transport(self, server: str) -> Callable[[Any], Any]:
        return lambda errlog: stdio_client(StdioServerParameters(command=PYTHON, args=[STUB, server], cwd=str(self.work)),
                                           errlog=errlog)

    def notes_transport(self, errlog: Any) -> Any:
        return stdio_client(basic_memory_seed.server_params(self.notes_home, self.args.basic_memory), errlog=errlog)


# --- reading answers ------------------------------------------------------------------------------


def of(answer: dict[str, Any], store: str) -> list[dict[str, Any]]:
    """One store's hits in a fused answer, checked to be its whole list in rank order."""
    check(store not in [f["name"] for f in answer["failed"]], f"{store} failed: {answer['failed']}")
    check(store in answer["stores_searched"], f"{store} not in stores_searched {answer['stores_searched']}")
    hits = [h for h in answer["hits"] if h["store"] == store]
    ranks = [h["store_rank"] for h in hits]
    check(ranks == list(range(1, len(hits) + 1)), f"{store}: store_rank runs {ranks}, not 1..{len(hits)}")
    check(len(answer["hits"]) < N_RESULTS, f"{len(answer['hits'])} hits fill n_results: some may be cut")
    return hits


def texts_of(result: Any) -> list[str]:
    return [b.text for b in result.content if getattr(b, "type", None) == "text"]


def document_of(result: Any) -> Any:
    """The answer's JSON as each server means it: its text (their structured content, where there
    is one, is FastMCP's `{"result": ...}` wrapper of the same)."""
    return json.loads(texts_of(result)[0])


def content_id(content: str) -> str:
    """The id the contract gives a `text_entries` hit: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(content.encode()).hexdigest()[:16]


ENTRY = re.compile(r"^<entry><content>(.*)</content><metadata>(.*)</metadata></entry>$", re.DOTALL)


def expected_hits(name: str, result: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """(id, content, metadata) of each hit of a stub's SDK answer, mapped here as the contract
    says the preset reads it, independently of the callosum's code."""
    check(not result.is_error, f"{name}: the SDK got a tool error: {texts_of(result)}")
    if name == "qdrant":
        hits, blocks = [], texts_of(result)
        # fastmcp 2 sends the header and the entries as one block holding their JSON list.
        if len(blocks) == 1 and blocks[0].lstrip().startswith("["):
            blocks = json.loads(blocks[0])
        for block in blocks[1:]:
            match = ENTRY.match(block.strip())
            check(match, f"qdrant: an entry block the SDK got is not an <entry>: {block[:80]!r}")
            metadata = json.loads(match.group(2)) if match.group(2).strip() else {}
            hits.append((content_id(match.group(1)), match.group(1), metadata or {}))
        return hits
    document = document_of(result)
    if name == "chroma":
        columns = {k: (document.get(k) or [[]])[0] for k in ("ids", "documents", "metadatas")}
        return [(i, d, m or {}) for i, d, m in zip(columns["ids"], columns["documents"], columns["metadatas"])]
    if name == "graphiti-facts":
        return [(f["uuid"], f["fact"], {k: v for k, v in f.items() if k not in ("uuid", "fact")}) for f in document["facts"]]
    if name == "graphiti-nodes":
        return [(n["uuid"], f"{n['name']}: {n['summary']}" if n.get("summary") else n["name"],
                 {k: v for k, v in n.items() if k not in ("uuid", "name", "summary")}) for n in document["nodes"]]
    if name == "mem0":
        return [(m["id"], m["memory"], {k: v for k, v in m.items() if k not in ("id", "memory", "score")})
                for m in document["results"]]
    raise ValueError(name)


def tool_call(name: str, query: str) -> tuple[str, dict[str, Any]]:
    """The tool and arguments the preset sends for `query` (the SDK sends the same)."""
    stub = STUBS[name]
    preset = {
        "qdrant": ("qdrant-find", {"query": query}),
        "chroma": ("chroma_query_documents", {"query_texts": [query], "n_results": ASK}),
        "graphiti-facts": ("search_memory_facts", {"query": query, "max_facts": ASK}),
        "graphiti-nodes": ("search_nodes", {"query": query, "max_nodes": ASK}),
        "mem0": ("search_memories", {"query": query, "limit": ASK}),
    }[name]
    return preset[0], dict(stub["arguments"], **preset[1])


# --- the cases ------------------------------------------------------------------------------------


def case_notes_preset(s: Servers) -> str:
    details = []
    for query in ("xavier", "cuda", "backup"):
        answer = s.search(query)
        hits = of(answer, "notes")
        episodes = of(answer, "episodes")
        check(episodes, f"{query!r}: the SerenMemory stub gave no hits; the answer is not a fused one")
        result = s.sdk_call(s.notes_transport, "search_notes",
                            {"query": query, "output_format": "json", "page_size": ASK})
        found = result.structured_content["result"]["results"]
        check(found, f"{query!r}: search_notes found nothing; the case would prove little")
        theirs = [(n["permalink"], f"{n['title']}: {n['content']}") for n in found]
        ours = [(h["id"], h["content"]) for h in hits]
        check(ours == theirs, f"{query!r}: the callosum's notes hits\n        {ours}\n      search_notes\n        {theirs}")
        bodies = {n["title"]: n["content"].rstrip("\n") for n in basic_memory_seed.NOTES}
        for hit in found:
            check(hit["content"] == bodies[hit["title"]], f"{hit['title']}: not the note's text: {hit['content']!r}")
        check(all(h["base_relevance"] == 0.0 and h["native_score"] is None for h in hits),
              f"{query!r}: basic-memory's negative ranks were read as scores")
        details.append(f"{query} -> {len(hits)} notes, {len(episodes)} episodes")
    return "; ".join(details)


def proposed_equals(s: Servers, name: str, preset_store: str, query: str, same_content: bool = True) -> str:
    check(name in s.proposed, f"propose {name} failed: {s.propose_errors.get(name)}")
    answer = s.search(query)
    ours = [(h["id"], h["content"]) for h in of(answer, f"{name}-proposed")]
    theirs = [(h["id"], h["content"]) for h in of(answer, preset_store)]
    check(theirs, f"{query!r}: {preset_store} found nothing; the case would prove little")
    if not same_content:
        ours, theirs = [i for i, _ in ours], [i for i, _ in theirs]
    check(ours == theirs, f"{query!r}: {name}-proposed\n        {ours}\n      {preset_store}\n        {theirs}")
    return f"{len(ours)} hits as {preset_store}"


def case_notes_proposed(s: Servers) -> str:
    block = s.proposed.get("notes", "")
    check("search_notes" in block and "output_format" in block, f"the block:\n{block}")
    return "; ".join(proposed_equals(s, "notes", "notes", q) for q in ("xavier", "cuda"))


def stub_case(name: str) -> Callable[[Servers], str]:
    def case(s: Servers) -> str:
        query = STUBS[name]["query"]
        tool, arguments = tool_call(name, query)
        theirs = expected_hits(name, s.sdk_call(s.stub_transport(STUBS[name]["server"]), tool, arguments))
        check(len(theirs) >= 2, f"{name}: the SDK got {len(theirs)} hits; the case would prove little")
        first, second = s.search(query), s.search(query)
        for transport in ("stdio", "http"):
            store = f"{name}-{transport}"
            ours = [(h["id"], h["content"], h["metadata"]) for h in of(first, store)]
            check(ours == theirs, f"{store}: the callosum's hits\n        {ours}\n      the SDK's, mapped here\n        {theirs}")
            again = [h["id"] for h in of(second, store)]
            check(again == [i for i, _, _ in ours], f"{store}: ids changed between two searches: {again}")
        if name == "chroma":
            distances = [h["raw_distance"] for h in of(first, "chroma-stdio")]
            check(all(isinstance(d, float) for d in distances) and distances == sorted(distances),
                  f"chroma: raw_distance {distances}")
        return f"{len(theirs)} hits, stdio = http = SDK, stable ids"

    return case


def case_broken(s: Servers) -> str:
    answer = post(s.url + "/search", {"query": "broken", "n_results": N_RESULTS})
    failed = {f["name"]: f["reason"] for f in answer["failed"]}
    for name, expected in BROKEN.items():
        for transport in ("stdio", "http"):
            store = f"{name}-{transport}"
            check(store in failed, f"{store} is not in failed: {answer['failed']}")
            check(re.search(expected, failed[store]), f"{store}: reason {failed[store]!r} does not say /{expected}/")
    check("episodes" in answer["stores_searched"], f"the other stores did not answer: {answer['stores_searched']}")
    return "; ".join(f"{k}: {v}" for k, v in sorted(failed.items()) if k.endswith("-stdio"))


def case_proposed_stubs(s: Servers) -> str:
    details = []
    for name in STUBS:
        # graphiti's facts carry a `name` the proposed template puts first: the same hits, other text.
        details.append(f"{name}: " + proposed_equals(s, name, f"{name}-stdio", STUBS[name]["query"],
                                                     same_content=name not in ("graphiti-facts",)))
    return "; ".join(details)


def case_proposed_graph(s: Servers) -> str:
    block = s.proposed.get("graph", "")
    check("search_nodes" in block, f"propose picked another tool:\n{block}")
    return "; ".join(proposed_equals(s, "graph", "graph", q, same_content=False) for q in ("xavier", "backup"))


def case_propose_refuses(s: Servers) -> str:
    run = s.propose("c", "xavier", [PYTHON, STUB, "chroma"])
    check(run.returncode == 2 and "requires collection_name" in run.stderr and not run.stdout,
          f"chroma without its collection: exit {run.returncode}, stderr {run.stderr!r}, stdout {run.stdout!r}")
    run = s.propose("n", "xavier", [PYTHON, STUB, "graphiti"], ["--tool", "nope"])
    check(run.returncode == 2 and "lists no tool 'nope'" in run.stderr, f"an unknown tool: {run.stderr!r}")
    run = s.propose("x", "xavier", [])
    check(run.returncode == 64 and "--url URL, or -- COMMAND" in run.stderr, f"no server: {run.stderr!r}")
    run = s.propose("x", "xavier", [PYTHON, STUB, "chroma"], ["--arg", "collection_name"])
    check(run.returncode == 64 and '--arg takes NAME=VALUE, got "collection_name"' in run.stderr, f"a bare --arg: {run.stderr!r}")
    run = s.propose("no/slash", "xavier", [PYTHON, STUB, "mem0"])
    check(run.returncode == 64 and "--name: name" in run.stderr, f"a bad --name: {run.stderr!r}")
    run = subprocess.run([s.args.bin, "propose", "--query", "x", "--url", "ftp://127.0.0.1/mcp"],
                         capture_output=True, text=True, timeout=PROPOSE_TIMEOUT)
    check(run.returncode == 64 and "--url must be http:// or https://, got ftp" in run.stderr, f"an ftp url: {run.stderr!r}")
    run = s.propose("bm", "zebrafish", [PYTHON, STUB, "mem0"])
    check(run.returncode == 2 and "found no hits" in run.stderr, f"a query with no hits: {run.stderr!r}")
    return "a missing scope, an unknown tool, no server, a bare --arg, a bad name, an ftp url, no hits: each named"


CASES: list[tuple[str, Callable[[Servers], str]]] = [
    ("a-basic-memory-preset", case_notes_preset),
    ("b-basic-memory-proposed", case_notes_proposed),
    *[(f"c-{name}", stub_case(name)) for name in STUBS],
    ("d-malformed-entries", case_broken),
    ("e-proposed-stubs", case_proposed_stubs),
    ("e-proposed-server-memory", case_proposed_graph),
    ("f-propose-refuses", case_propose_refuses),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="the seren-corpus-callosum binary")
    parser.add_argument("--basic-memory", required=True, help="the basic-memory executable (its own venv)")
    parser.add_argument("--server-memory", required=True, help="server-memory's dist/index.js")
    parser.add_argument("--keep", action="store_true", help="keep the scratch dir even when every case passed")
    parser.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failed cases")
    args = parser.parse_args()
    # Every process here runs in the scratch dir: the paths it is given must not be relative.
    args.bin, args.basic_memory, args.server_memory = (os.path.abspath(p) for p in (args.bin, args.basic_memory, args.server_memory))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="scc-mcp-servers-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEREN_SCC_")}
    env["HOME"] = str(work / "home")
    (work / "home").mkdir()
    procs = Processes(work, env, STARTUP_TIMEOUT, peers.STOP_TIMEOUT)
    passed = failed = 0
    try:
        servers = Servers(args, work, procs)
        try:
            started = time.monotonic()
            servers.start()
        except Exception as e:  # noqa: BLE001 - a fixture that does not start is one failure, reported
            print(f"FAIL  fixtures  {type(e).__name__}: {e}", flush=True)
            if args.verbose:
                traceback.print_exc()
            failed += 1
        else:
            print(f"mcp-servers: callosum {servers.url}, {len(servers.mcp_store_names())} MCP stores up in "
                  f"{time.monotonic() - started:.1f} s", flush=True)
            passed, failed = run_cases(CASES, servers, args.verbose)
    except (KeyboardInterrupt, SystemExit):
        print("FAIL  interrupted", flush=True)
        failed += 1
        raise
    else:
        if failed and (work / "callosum.log").exists():
            print(f"      callosum log, last lines:\n{procs.tail('callosum')}", flush=True)
    finally:
        procs.stop_all()
        if failed or args.keep:
            print(f"mcp-servers: logs kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
        print(f"mcp-servers: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
