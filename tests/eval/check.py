"""`eval` against scorers that are not ours: trec_eval's C code (pytrec-eval-terrier, through
ir-measures) and ranx. run.sh says what is compared and which gain each tool uses.

Starts three stub SerenMemory stores on loopback (one weighted 1.5, one with a floor of 0.4 that
drops its far hits, one failing a query), writes a config naming them and judgments in JSON Lines
(graded and binary queries, a query that judges nothing relevant, an id with a space, a qid left to
its line number), runs `eval --k 5 --json --runs DIR`, writes the judgments as TREC qrels itself,
and reads our run files with each tool's own reader. One `ok`/`FAIL` line a case, then the closing
line `eval: N passed, M failed`; exits 1 if any failed.

Usage: check.py OUR_BINARY   (EVAL_DEBUG=1 prints the report and the tools' numbers)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
from harness import check, run_cases  # noqa: E402

import ir_measures  # noqa: E402
import numpy as np  # noqa: E402
from ir_measures import RR, P, R, nDCG  # noqa: E402
from ranx import Qrels, Run, evaluate  # noqa: E402

# ranx's numba kernels warn of an index cast of their own as they compile (on a first run, before
# numba's cache holds them): nothing of ours, and noise in CI's log.
warnings.filterwarnings("ignore", message="unsafe cast from uint64 to int64")

K = 5
TOLERANCE = 1e-6
DEBUG = os.environ.get("EVAL_DEBUG") == "1"

# Each store's ranking for each query: (id, raw_distance), best first. A SerenMemory hit's
# relevance is 1 / (1 + distance): `lexical`'s floor of 0.4 drops the hits at distance 2.0.
RANKINGS = {
    "notes": {
        "cuda on the xavier": [("n1", 0.1), ("n3", 0.2), ("n9", 0.3), ("n4", 0.4), ("n5", 0.5), ("n6", 0.6), ("n7", 0.7)],
        "backup plan": [("n8", 0.1), ("n2", 0.2)],
        "rust toolchain": [("n1", 0.3)],
        "nothing relevant here": [("n1", 0.1), ("n2", 0.2)],
        "flaky search": [("n5", 0.1), ("n6", 0.2), ("n7", 0.3)],
        "short lists": [("n2", 0.5)],
        "ties everywhere": [("t1", 0.1), ("t2", 0.2), ("t3", 0.3)],
        "deep relevant": [("d1", 0.1), ("d2", 0.1), ("d3", 0.1), ("d4", 0.1), ("d5", 0.1), ("d6", 0.1), ("d7", 0.1)],
    },
    "facts": {
        "cuda on the xavier": [("f1", 0.2), ("f9", 0.3), ("f2", 0.4)],
        "backup plan": [("f2", 0.1), ("f4", 0.2), ("f5", 0.3)],
        "rust toolchain": [("f 7", 0.1), ("f8", 0.2)],
        "nothing relevant here": [("f1", 0.1)],
        "flaky search": [("f3", 0.1)],
        "short lists": [],
        "ties everywhere": [("t1", 0.1), ("t4", 0.2)],
        "deep relevant": [("e1", 0.1), ("e2", 0.2)],
    },
    "lexical": {
        "cuda on the xavier": [("l1", 0.5), ("l2", 2.0), ("l3", 0.9)],
        "backup plan": [("l5", 2.0), ("l6", 1.0)],
        "rust toolchain": [("l2", 0.1), ("l9", 0.2), ("l8", 2.0)],
        "nothing relevant here": [],
        "flaky search": [("l4", 0.1)],
        "short lists": [("l1", 0.2)],
        "ties everywhere": [("t1", 0.1), ("t2", 0.2), ("t5", 0.3)],
        "deep relevant": [("x1", 0.1)],
    },
}
FLOORS = {"lexical": 0.4}
WEIGHTS = {"facts": 1.5}
# The store that answers 500 to this query (its fused and its own search alike).
FAILS = ("facts", "flaky search")

# The judgments, as written to the file; `None` is a line left blank.
JUDGMENTS = [
    {"qid": "cuda", "query": "cuda on the xavier", "relevant": [
        {"store": "notes", "id": "n1", "grade": 3}, {"store": "facts", "id": "f1", "grade": 2},
        {"store": "lexical", "id": "l1"}, {"store": "notes", "id": "n3", "grade": 0},
        {"store": "facts", "id": "f2", "grade": 1}, {"store": "lexical", "id": "l2", "grade": 2}]},
    {"qid": "backup", "query": "backup plan", "relevant": [
        {"store": "notes", "id": "n2", "grade": 1}, {"store": "facts", "id": "f2", "grade": 1},
        {"store": "lexical", "id": "l6", "grade": 1}]},
    None,
    {"qid": "rust", "query": "rust toolchain", "relevant": [
        {"store": "facts", "id": "f 7", "grade": 2}, {"store": "lexical", "id": "l2", "grade": 1},
        {"store": "notes", "id": "n1", "grade": 3}]},
    {"qid": "none", "query": "nothing relevant here", "relevant": [
        {"store": "notes", "id": "n1", "grade": 0}, {"store": "facts", "id": "f1", "grade": 0}]},
    {"qid": "flaky", "query": "flaky search", "relevant": [
        {"store": "facts", "id": "f3", "grade": 1}, {"store": "notes", "id": "n7", "grade": 1}]},
    {"query": "short lists", "relevant": [
        {"store": "notes", "id": "n2", "grade": 2}, {"store": "lexical", "id": "l1", "grade": 1},
        {"store": "facts", "id": "f0", "grade": 1}]},
    {"qid": 8, "query": "ties everywhere", "relevant": [
        {"store": "notes", "id": "t2", "grade": 1}, {"store": "lexical", "id": "t2", "grade": 1},
        {"store": "facts", "id": "t4", "grade": 1}]},
    {"qid": "deep", "query": "deep relevant", "relevant": [
        {"store": "notes", "id": "d7", "grade": 2}, {"store": "notes", "id": "d2", "grade": 1},
        {"store": "facts", "id": "e2", "grade": 3}, {"store": "lexical", "id": "x9", "grade": 1}]},
]


def qid_of(line_number: int, judged: dict) -> str:
    return str(judged["qid"]) if "qid" in judged else str(line_number)


def judged_queries() -> list[tuple[str, dict]]:
    return [(qid_of(i + 1, j), j) for i, j in enumerate(JUDGMENTS) if j is not None]


def docid(store: str, id_: str) -> str:
    """Our run files' docid: store/id, whitespace in the id as %XX of its UTF-8 bytes."""
    out = "".join("".join(f"%{b:02X}" for b in c.encode()) if c.isspace() or not c.isprintable() else c
                  for c in id_)
    return f"{store}/{out}"


def stub(name: str) -> tuple[str, list[str], ThreadingHTTPServer]:
    """A SerenMemory store answering RANKINGS[name]; returns its url and the queries it was sent."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            query = body.get("query", "")
            asked.append(query)
            if (name, query) == FAILS:
                status, answer = 500, {"detail": "scripted failure"}
            else:
                hits = [{"id": id_, "content": f"{name} {id_}", "tier": "short", "topic": "t",
                         "score": 1.0 / (1.0 + d), "raw_distance": d, "metadata": {}}
                        for id_, d in RANKINGS[name].get(query, [])]
                status, answer = 200, {"hits": hits}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", asked, server


class Fixture:
    """The stores, the files, our report and each tool's reading of the files."""

    def __init__(self, binary: str, work: Path) -> None:
        self.work = work
        self.stores = {name: stub(name) for name in RANKINGS}
        config = work / "seren-corpus-callosum.yaml"
        lines = ["federation:", "  per_store_timeout_s: 5", "  stores:"]
        for name, (url, _, _) in self.stores.items():
            lines += [f"    - name: {name}", "      type: seren_memory", f"      url: {url}"]
            if name in WEIGHTS:
                lines.append(f"      weight: {WEIGHTS[name]}")
            if name in FLOORS:
                lines.append(f"      floor: {FLOORS[name]}")
        config.write_text("\n".join(lines) + "\n")
        judgments = work / "judgments.jsonl"
        judgments.write_text("".join((json.dumps(j) if j is not None else "") + "\n" for j in JUDGMENTS))
        self.runs = work / "runs"
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEREN_SCC_")}
        done = subprocess.run([binary, "eval", "-c", str(config), "--judgments", str(judgments), "--k", str(K),
                               "--json", "--runs", str(self.runs)],
                              capture_output=True, text=True, timeout=120, env=env, cwd=work)
        if done.returncode != 0:
            raise SystemExit(f"eval exited {done.returncode}: {done.stderr}")
        self.report = json.loads(done.stdout)
        if DEBUG:
            print(json.dumps(self.report, indent=1))
        # The judgments as TREC qrels, written here from the file's objects.
        self.qrels_path = work / "judgments.qrels"
        self.qrels_path.write_text("".join(
            f"{qid} 0 {docid(r['store'], str(r['id']))} {r.get('grade', 1)}\n"
            for qid, j in judged_queries() for r in j["relevant"]))
        binary_qids = {qid for qid, j in judged_queries() if all(r.get("grade", 1) <= 1 for r in j["relevant"])}
        self.binary_qids = binary_qids
        self.binary_qrels_path = work / "binary.qrels"
        self.binary_qrels_path.write_text("".join(
            line + "\n" for line in self.qrels_path.read_text().splitlines() if line.split()[0] in binary_qids))
        self.qids = [qid for qid, _ in judged_queries()]
        # Every run: ours by name ("fused" or a store), its file, its tag.
        self.run_files = {"fused": self.runs / "fused.run"}
        self.run_files.update({name: self.runs / f"store.{name}.run" for name in RANKINGS})

    def ours(self, run: str) -> dict:
        """Our means for a run: {metric: mean}."""
        summary = self.report["fused"] if run == "fused" else next(
            s for s in self.report["stores"] if s["store"] == run)
        return {m: summary[m]["mean"] for m in ("ndcg", "recall", "mrr", "precision")}

    def ours_per_query(self, run: str) -> dict[str, dict]:
        """Our per-query values for a run: {qid: {metric: value}}."""
        out = {}
        for q in self.report["per_query"]:
            scores = q["fused"] if run == "fused" else next(s for s in q["stores"] if s["store"] == run)
            out[q["qid"]] = scores
        return out


def close(a: float, b: float) -> bool:
    return abs(float(a) - float(b)) <= TOLERANCE


def compare(what: str, ours: dict, theirs: dict) -> list[str]:
    """The differences between two {name: value} maps, in words."""
    return [f"{what} {name}: ours {ours[name]:.9f}, theirs {float(theirs[name]):.9f}"
            for name in ours if not close(ours[name], theirs[name])]


def exp_gains() -> dict[int, int]:
    return {g: 2 ** g - 1 for g in range(0, 11)}


def case_document(f: Fixture) -> str:
    r = f.report
    check(r["k"] == K and r["queries"] == len(f.qids), f"k {r['k']}, queries {r['queries']}")
    check([s["store"] for s in r["stores"]] == list(RANKINGS), f"stores {[s['store'] for s in r['stores']]}")
    check([q["qid"] for q in r["per_query"]] == f.qids, f"qids {[q['qid'] for q in r['per_query']]}")
    check(r["bootstrap"]["resamples"] == 1000 and r["bootstrap"]["level"] == 0.95, f"bootstrap {r['bootstrap']}")
    for summary in [r["fused"]] + r["stores"]:
        for m in ("ndcg", "recall", "mrr", "precision"):
            e = summary[m]
            check(e["low"] <= e["mean"] <= e["high"], f"{m}: {e}")
    flaky = next(q for q in r["per_query"] if q["qid"] == "flaky")
    check([x["name"] for x in flaky["failed"]] == ["facts"], f"flaky failed: {flaky['failed']}")
    check(all(not q["failed"] for q in r["per_query"] if q["qid"] != "flaky"), "only flaky failed")
    none = next(q for q in r["per_query"] if q["qid"] == "none")
    check(none["relevant"] == 0 and none["fused"]["ndcg"] == 0.0, f"none: {none}")
    for q in r["per_query"]:
        best = max(q["stores"], key=lambda s: s["ndcg"])
        check(close(q["delta_ndcg"], q["fused"]["ndcg"] - best["ndcg"]), f"{q['qid']}: delta {q['delta_ndcg']}")
    return f"{r['queries']} queries, {len(r['stores'])} stores, fused nDCG@{K} {r['fused']['ndcg']['mean']:.4f}"


def read_run(path: Path) -> dict[str, list[tuple[str, int, float, str]]]:
    by_query: dict[str, list] = {}
    for line in path.read_text().splitlines():
        fields = line.split()
        check(len(fields) == 6 and fields[1] == "Q0", f"{path.name}: {line!r}")
        by_query.setdefault(fields[0], []).append((fields[2], int(fields[3]), float(fields[4]), fields[5]))
    return by_query


def case_run_files(f: Fixture) -> str:
    names = sorted(p.name for p in f.runs.iterdir())
    check(names == sorted(p.name for p in f.run_files.values()), f"files {names}")
    lines = 0
    for run, path in f.run_files.items():
        for qid, rows in read_run(path).items():
            lines += len(rows)
            check(qid in f.qids, f"{path.name}: qid {qid}")
            check(len(rows) <= K, f"{path.name} {qid}: {len(rows)} lines")
            check([r[1] for r in rows] == list(range(1, len(rows) + 1)), f"{path.name} {qid}: ranks")
            scores = np.array([r[2] for r in rows])
            # Strictly falling as the tools hold it: as a double, and as trec_eval's float.
            check(np.all(np.diff(scores) < 0), f"{path.name} {qid}: scores {scores}")
            check(np.all(np.diff(scores.astype(np.float32)) < 0), f"{path.name} {qid}: f32 {scores}")
            check(len({r[0] for r in rows}) == len(rows), f"{path.name} {qid}: a docid twice")
            check(all(r[3] == run for r in rows), f"{path.name} {qid}: tag")
            if run != "fused":
                # A store alone: its own ranking, floored, cut at k.
                query = next(j["query"] for q, j in judged_queries() if q == qid)
                floor = FLOORS.get(run, 0.0)
                expected = [docid(run, i) for i, d in RANKINGS[run][query] if 1.0 / (1.0 + d) >= floor][:K]
                check([r[0] for r in rows] == expected, f"{path.name} {qid}: {[r[0] for r in rows]} != {expected}")
    fused = read_run(f.run_files["fused"])
    check("flaky" in fused and not any(d.startswith("facts/") for d, *_ in fused["flaky"]), "flaky fused has no facts")
    check("flaky" not in read_run(f.run_files["facts"]), "facts has no line for flaky")
    check(any(d == "facts/f%207" for d, *_ in fused["rust"]), "the id with a space, encoded")
    return f"{len(f.run_files)} files, {lines} lines, scores strictly falling in f32"


def trec_eval_case(f: Fixture, graded: bool) -> str:
    provider = ir_measures.pytrec_eval  # trec_eval's own C code
    path = f.qrels_path if graded else f.binary_qrels_path
    qrels = list(ir_measures.read_trec_qrels(str(path)))
    qids = sorted({q.query_id for q in qrels})
    ndcg = nDCG(gains=exp_gains()) @ K if graded else nDCG @ K
    measures = {"ndcg": ndcg, "recall": R @ K, "mrr": RR @ K, "precision": P @ K}
    wrong = []
    for run, file in f.run_files.items():
        docs = [d for d in ir_measures.read_trec_run(str(file)) if d.query_id in qids]
        means = provider.calc_aggregate(list(measures.values()), qrels, docs)
        ours_q = f.ours_per_query(run)
        ours = {m: sum(ours_q[q][m] for q in qids) / len(qids) for m in measures}
        theirs = {m: means[measure] for m, measure in measures.items()}
        wrong += compare(f"{run} mean", ours, theirs)
        # Per query: a query the run retrieved nothing for is not in theirs, and scores 0.
        per_query = {(m.query_id, m.measure): m.value for m in provider.iter_calc(list(measures.values()), qrels, docs)}
        for q in qids:
            for m, measure in measures.items():
                value = per_query.get((q, measure), 0.0)
                if not close(ours_q[q][m], value):
                    wrong.append(f"{run} {q} {m}: ours {ours_q[q][m]:.9f}, trec_eval {value:.9f}")
        if DEBUG:
            print(f"  trec_eval {'graded' if graded else 'binary'} {run}: {theirs}")
    check(not wrong, "; ".join(wrong[:8]))
    what = "nDCG with gains {g: 2^g-1}" if graded else "default (linear-gain) nDCG"
    return f"{len(f.run_files)} runs x 4 measures over {len(qids)} queries agree to 1e-6 ({what})"


def case_trec_eval_graded(f: Fixture) -> str:
    return trec_eval_case(f, graded=True)


def case_trec_eval_binary(f: Fixture) -> str:
    return trec_eval_case(f, graded=False)


def case_ranx(f: Fixture) -> str:
    metrics = {"ndcg": f"ndcg_burges@{K}", "recall": f"recall@{K}", "mrr": f"mrr@{K}", "precision": f"precision@{K}"}
    wrong = []
    for run, file in f.run_files.items():
        qrels = Qrels.from_file(str(f.qrels_path), kind="trec")
        ranking = Run.from_file(str(file), kind="trec")
        # make_comparable: a query the run retrieved nothing for scores 0 (and counts), as ours.
        means = evaluate(qrels, ranking, list(metrics.values()), make_comparable=True)
        wrong += compare(f"{run} mean", f.ours(run), {m: means[name] for m, name in metrics.items()})
        ours_q = f.ours_per_query(run)
        for q in f.qids:
            for m, name in metrics.items():
                value = ranking.scores[name].get(q, 0.0)
                if not close(ours_q[q][m], value):
                    wrong.append(f"{run} {q} {m}: ours {ours_q[q][m]:.9f}, ranx {float(value):.9f}")
        if DEBUG:
            print(f"  ranx {run}: {means}")
    check(not wrong, "; ".join(wrong[:8]))
    return f"{len(f.run_files)} runs x 4 measures agree to 1e-6 (ndcg_burges: 2^g-1)"


def case_gains(f: Fixture) -> str:
    """Which gain each tool's nDCG uses, seen on the graded queries of the fused run."""
    provider = ir_measures.pytrec_eval
    qrels = list(ir_measures.read_trec_qrels(str(f.qrels_path)))
    docs = list(ir_measures.read_trec_run(str(f.run_files["fused"])))
    ours = f.ours_per_query("fused")
    graded = [q for q, j in judged_queries() if any(r.get("grade", 1) > 1 for r in j["relevant"])]
    linear = {0: 0, **{g: g for g in range(1, 11)}}
    default = {m.query_id: m.value for m in provider.iter_calc([nDCG @ K], qrels, docs)}
    as_linear = {m.query_id: m.value for m in provider.iter_calc([nDCG(gains=linear) @ K], qrels, docs)}
    ranx_qrels = Qrels.from_file(str(f.qrels_path), kind="trec")
    ranx_run = Run.from_file(str(f.run_files["fused"]), kind="trec")
    evaluate(ranx_qrels, ranx_run, [f"ndcg@{K}", f"ndcg_burges@{K}"], make_comparable=True)
    ranx_linear, ranx_burges = ranx_run.scores[f"ndcg@{K}"], ranx_run.scores[f"ndcg_burges@{K}"]
    differs = [q for q in graded if not close(default.get(q, 0.0), ours[q]["ndcg"])]
    check(differs, f"trec_eval's default nDCG equals ours on every graded query: {default}")
    check(all(close(default.get(q, 0.0), as_linear.get(q, 0.0)) for q in graded),
          "trec_eval's default nDCG is not linear gain")
    check(all(not close(ranx_linear[q], ours[q]["ndcg"]) for q in differs), "ranx's ndcg equals ours")
    check(all(close(ranx_burges[q], ours[q]["ndcg"]) for q in graded), "ranx's ndcg_burges differs from ours")
    return (f"trec_eval ndcg_cut and ranx ndcg: gain = grade (differ from ours on {len(differs)} of "
            f"{len(graded)} graded queries); ranx ndcg_burges: 2^grade-1, as ours")


def case_every_store_was_asked(f: Fixture) -> str:
    # One fused search and one search alone per query, each calling the store once.
    counts = {name: len(asked) for name, (_, asked, _) in f.stores.items()}
    check(all(c == 2 * len(f.qids) for c in counts.values()), f"calls {counts}")
    return f"{counts}"


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory(prefix="scc-eval.") as work:
        fixture = Fixture(str(Path(sys.argv[1]).resolve()), Path(work))
        cases = [
            ("the JSON document", case_document),
            ("the run files", case_run_files),
            ("every store asked twice a query", case_every_store_was_asked),
            ("trec_eval, every measure (graded, our gains)", case_trec_eval_graded),
            ("trec_eval, every measure (binary queries, its own nDCG)", case_trec_eval_binary),
            ("ranx, every measure", case_ranx),
            ("the gains each tool uses", case_gains),
        ]
        passed, failed = run_cases(cases, fixture, DEBUG)
        for _, _, server in fixture.stores.values():
            server.shutdown()
    print(f"eval: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
