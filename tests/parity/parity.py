"""The packet, ours against the Python SerenCorpusCallosum 5.3.0 from PyPI.

Starts two stub stores (a SerenMemory with cores, satellites, a superseded core, topics and
/by_topic; a SerenLoci with an exact key, fanned twice, once down-weighted), writes one YAML with
5.3.0's packet block (authority, seats, satellite and topic edges, two hops), starts the Python service and ours on it, asks both
the same searches (with and without a token page) and compares what a model reads: every hit's
store, id, rank and score (to 1e-9), the edges' kind and core, and the packet's `tokens` and
`budget_tokens`. Exits 1 naming the first difference of each search.

Usage: parity.py PYTHON_SCC_EXE OUR_BINARY
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
from harness import NotReady, free_port, stop, wait_http  # noqa: E402


def memory_hit(i, topic, surroundings=None, via=None):
    return {"id": f"m{i}", "content": f"memory number {i} about {topic}", "tier": "long" if surroundings else "short",
            "topic": topic, "score": 0.9 - i * 0.05, "raw_distance": 0.1 + i * 0.05,
            "metadata": {"source": "user", "created_at": f"2025-10-{10 + i:02d}"},
            "surroundings": surroundings, "matched_via": via}


def core_surroundings(core):
    return {"satellites": 3, "latest_satellite_at": "2025-10-19", "supersedes": f"{core}-old", "superseded_by": None,
            "recent": [{"id": f"{core}-s{j}", "content": f"episode {j} of {core}", "created_at": f"2025-10-1{9 - j}"}
                       for j in range(3)],
            "supersedes_entry": {"id": f"{core}-old", "content": f"the core {core} replaced", "created_at": "2025-09-01"}}


def memory_search(body):
    query = body.get("query", "")
    if len(query) > 40:  # a hop's bridge: the query and the best hits' text
        hits = [memory_hit(i, "hop, xavier") for i in range(20, 26)]
        # An id the first round already holds from another store: a hop must not add it again.
        hits[0]["id"] = "f0"
    else:
        # Found through its oldest episode: 5.3.0 keeps the episodes newest first all the same.
        hits = [memory_hit(1, "cuda, Xavier", core_surroundings("m1"),
                           {"id": "m1-s2", "content": "episode 2 of m1", "created_at": "2025-10-17", "raw_distance": 0.1})]
        hits += [memory_hit(i, "backup" if i % 2 else "cuda") for i in range(2, 8)]
        # A second core whose episodes include one of m1's and a ranked hit: an edge never repeats.
        m8 = core_surroundings("m8")
        m8["recent"][0]["id"] = "m1-s1"
        m8["recent"][1]["id"] = "m2"
        hits.append(memory_hit(8, "jetpack", m8))
    if not body.get("with_surroundings", False):
        for hit in hits:
            if hit["surroundings"]:
                hit["surroundings"] = {k: v for k, v in hit["surroundings"].items() if k not in ("recent", "supersedes_entry")}
    return {"query": query, "searched_tiers": ["short", "near", "long"], "hits": hits[: body.get("n_results", 5)]}


def memory_by_topic(body):
    exclude = set(body.get("exclude_ids", []))
    topics = body.get("topics", [])
    hits = []
    for i in range(40, 48):
        tag = ["cuda", "xavier", "backup", "jetpack"][i % 4]
        if tag in topics and f"t{i}" not in exclude:
            hits.append({"id": f"t{i}", "content": f"topic memory {i} on {tag}", "tier": "near", "topic": tag,
                         "matched_topics": [tag], "overlap": 1, "metadata": {"source": "user"}})
    return {"topics": topics, "searched_tiers": ["short", "near", "long"], "hits": hits[: body.get("n_results", 5)]}


def loci_search(body):
    query = body.get("query", "")
    hits = []
    if len(query) <= 40:
        hits.append({"id": "f0", "project": "x", "key": "xavier.cuda", "value": "11.4", "why": "JetPack 5",
                     "score": 1.0, "match_kind": "exact", "source": "user", "raw_distance": None})
    for i in range(1, 8):
        hits.append({"id": f"f{i}", "project": "x", "key": f"key.{i}", "value": "v" * (10 * i), "why": "w",
                     "score": 0.8 - i * 0.05, "match_kind": "lexical", "source": "user", "raw_distance": None})
    return {"query": query, "project": None, "finder": "lexical", "hits": hits[: body.get("n_results", 5)]}


def serve(routes):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            route = routes.get(self.path)
            answer = json.dumps(route(body)).encode() if route else b'{"detail":"no route"}'
            self.send_response(200 if route else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def search(url, body):
    request = urllib.request.Request(url + "/search", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.load(r)


def packet(answer):
    rows = []
    for hit in answer["hits"]:
        meta = hit["metadata"]
        rows.append((hit["store"], hit["id"], hit["store_rank"], round(hit["score"], 9),
                     meta.get("source") if str(meta.get("source", "")).endswith("-edge") else None,
                     meta.get("edge_of"), meta.get("hop")))
    return {"hits": rows, "tokens": answer["tokens"], "budget_tokens": answer["budget_tokens"],
            "stores_searched": answer["stores_searched"]}


def main():
    python_exe, ours = sys.argv[1], sys.argv[2]
    memory = serve({"/search": memory_search, "/by_topic": memory_by_topic})
    loci = serve({"/search": loci_search})
    work = tempfile.mkdtemp(prefix="scc-parity-")
    py_port, our_port = free_port(), free_port()
    config = os.path.join(work, "seren-corpus-callosum.yaml")
    with open(config, "w") as f:
        f.write(f"""server:
  host: 127.0.0.1
  port: {py_port}
updates:
  enabled: false
federation:
  k: 60
  n_results: 6
  fetch_multiplier: 2
  per_store_timeout_s: 5.0
  authority_margin: 0.035
  min_per_store: 1
  edges_enabled: true
  edge_budget: 3
  satellite_edges_enabled: true
  satellite_budget: 5
  hops: 2
  hop_terms: 2
  hop_budget: 3
  stores:
    - name: episodic
      type: seren_memory
      url: {memory}
    - name: facts
      type: seren_loci
      url: {loci}
    - name: archive
      type: seren_loci
      url: {loci}
      weight: 0.3
""")
    env = dict(os.environ, HOME=work, SEREN_SCC_UPDATES_ENABLED="false",
               SEREN_SCC_RUNTIME_STORES=os.path.join(work, "runtime-stores.json"))
    env.pop("SEREN_SCC_CONFIG", None)
    python = subprocess.Popen([python_exe, "--config", config], env=env, cwd=work,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rust = subprocess.Popen([ours, "serve", "-c", config, "--port", str(our_port)], env=env, cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http("the Python 5.3.0 service", f"http://127.0.0.1:{py_port}/health", python, 60)
        wait_http("our service", f"http://127.0.0.1:{our_port}/health", rust, 60)
        failures = 0
        # The cases must exercise the packet, or agreeing proves little: the exact key leads (facts'
        # f0 over episodic's m1, tied on score), the down-weighted archive gets its seat, and every
        # kind of edge and hop hits all appear.
        first = packet(search(f"http://127.0.0.1:{our_port}", {"query": "cuda xavier"}))
        kinds = {h[4] for h in first["hits"]}
        stores = [h[0] for h in first["hits"] if not h[4] and not h[6]]
        if first["hits"][0][:2] != ("facts", "f0") or "archive" not in stores \
                or not {"satellite-edge", "supersedes-edge", "topic-edge"} <= kinds \
                or not any(h[6] for h in first["hits"]):
            sys.exit(f"parity: the first case does not exercise the packet: {first}")
        cases = [
            {"query": "cuda xavier"},
            {"query": "cuda xavier", "n_results": 3},
            {"query": "cuda xavier", "budget_tokens": 120},
            {"query": "cuda xavier", "budget_tokens": 400},
            {"query": "cuda xavier", "budget_tokens": 400, "n_results": 4},
            {"query": "backup", "n_results": 10},
        ]
        for case in cases:
            theirs = packet(search(f"http://127.0.0.1:{py_port}", case))
            mine = packet(search(f"http://127.0.0.1:{our_port}", case))
            if theirs == mine:
                print(f"parity ok: {json.dumps(case)}: {len(mine['hits'])} hits, {mine['tokens']} tokens, "
                      f"{sum(1 for h in mine['hits'] if h[4])} edges, {sum(1 for h in mine['hits'] if h[6])} hop hits")
                continue
            failures += 1
            print(f"parity DIFFERS: {json.dumps(case)}")
            for key in ("tokens", "budget_tokens", "stores_searched"):
                if theirs[key] != mine[key]:
                    print(f"  {key}: 5.3.0 {theirs[key]!r}, ours {mine[key]!r}")
            for i in range(max(len(theirs["hits"]), len(mine["hits"]))):
                a = theirs["hits"][i] if i < len(theirs["hits"]) else None
                b = mine["hits"][i] if i < len(mine["hits"]) else None
                print(f"  {'  ' if a == b else '!='} {i + 1:>2} 5.3.0 {a}\n        ours  {b}")
        sys.exit(1 if failures else 0)
    except NotReady as e:
        sys.exit(f"parity: {e}")
    finally:
        for proc in (python, rust):
            stop(proc)


if __name__ == "__main__":
    main()
