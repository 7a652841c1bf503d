"""Two stores of different kinds over the same documents with the same ids, each an HTTP server on
loopback speaking the `seren_memory` protocol (contract §1): POST /search with {"query",
"n_results", ...}, answering {"query", "searched_tiers", "hits": [{"id", "content", "tier",
"topic", "score", "raw_distance", "metadata"}]}, best first, n_results clamped to 1..50 as
SerenMemory does.

- Lexical: Okapi BM25 (k1 = 1.2, b = 0.75; idf = ln(1 + (N - df + 0.5) / (df + 0.5)), Lucene's,
  never negative) over lower-case runs of letters and digits (so `make_encoding_map` is three
  words), no stemming, no stop words. Only documents that share a word with the query are hits;
  `score` is the BM25 score and `raw_distance` = 1 / (1 + score), falling as the score rises, so
  the callosum's base relevance 1 / (1 + raw_distance) keeps the order and its floor of 0 keeps
  every hit.
- Dense: all-MiniLM-L6-v2 (minilm.py) embeddings of the documents and of each query, ranked by
  cosine similarity; `score` is the cosine and `raw_distance` = 1 - cosine.

Ties go to the document first in the collection's order. Each store notes every request it
answers (the query, the n_results asked, the ids it gave) in `asked`, for the checks.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

K1 = 1.2
B = 0.75
TOKEN = re.compile(r"[a-z0-9]+")
MAX_RESULTS = 50  # SerenMemory answers 422 past it; the callosum clamps, and so does this store


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


class BM25:
    def __init__(self, texts: list[str]) -> None:
        self.n = len(texts)
        self.lengths = np.array([len(tokens(t)) for t in texts], dtype=np.float64)
        self.avg = float(self.lengths.mean())
        # term -> (document indexes, term frequencies)
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for i, text in enumerate(texts):
            for term, tf in sorted(Counter(tokens(text)).items()):
                docs, tfs = postings.setdefault(term, ([], []))
                docs.append(i)
                tfs.append(tf)
        self.postings = {t: (np.array(d), np.array(f, dtype=np.float64)) for t, (d, f) in postings.items()}
        self.norm = K1 * (1.0 - B + B * self.lengths / self.avg)

    def idf(self, term: str) -> float:
        df = len(self.postings[term][0])
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    def scores(self, query: str) -> np.ndarray:
        """Every document's BM25 score for the query (each distinct query word counted once)."""
        out = np.zeros(self.n)
        for term in sorted(set(tokens(query))):
            if term not in self.postings:
                continue
            docs, tf = self.postings[term]
            out[docs] += self.idf(term) * tf * (K1 + 1.0) / (tf + self.norm[docs])
        return out

    def search(self, query: str, n: int) -> list[tuple[int, float]]:
        """The n best (document index, score), best first; only documents with a query word."""
        s = self.scores(query)
        hits = np.flatnonzero(s > 0)
        order = hits[np.lexsort((hits, -s[hits]))][:n]
        return [(int(i), float(s[i])) for i in order]


class Dense:
    def __init__(self, vectors: np.ndarray, embed: Callable[[list[str]], np.ndarray]) -> None:
        self.vectors = vectors
        self.embed = embed
        self.cache: dict[str, np.ndarray] = {}
        self.lock = threading.Lock()

    def query_vector(self, query: str) -> np.ndarray:
        with self.lock:  # one forward pass at a time; a query asked again is not embedded again
            if query not in self.cache:
                self.cache[query] = self.embed([query])[0]
            return self.cache[query]

    def search(self, query: str, n: int) -> list[tuple[int, float]]:
        """The n most similar (document index, cosine), best first."""
        cos = self.vectors @ self.query_vector(query)
        index = np.arange(len(cos))
        order = np.lexsort((index, -cos))[:n]
        return [(int(i), float(cos[i])) for i in order]


class Store:
    """One seren_memory store on 127.0.0.1, on a port the system gives (`url` says which)."""

    def __init__(self, name: str, ids: list[str], texts: list[str],
                 search: Callable[[str, int], list[tuple[int, float]]], distance: Callable[[float], float]) -> None:
        self.name = name
        self.ids = ids
        self.texts = texts
        self.search = search
        self.distance = distance
        self.asked: list[tuple[str, int, list[str]]] = []
        self.lock = threading.Lock()
        store = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # The headers and the body go in two writes: without TCP_NODELAY, Nagle's algorithm
            # holds the body until the client's delayed ACK, some 40 ms an answer on loopback.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = None
                if self.path != "/search":
                    self.answer(404, {"detail": "Not Found"})
                elif not isinstance(body, dict) or not isinstance(body.get("query"), str):
                    self.answer(422, {"detail": "query: a string is required"})
                else:
                    self.answer(200, store.answer(body))

            def answer(self, status: int, document: dict) -> None:
                data = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def ranking(self, query: str, n: int) -> list[tuple[str, float]]:
        """(id, score) of the store's first n hits for the query, as it answers them."""
        return [(self.ids[i], score) for i, score in self.search(query, n)]

    def answer(self, body: dict) -> dict:
        n = body.get("n_results", 10)
        n = min(max(n if isinstance(n, int) and not isinstance(n, bool) else 10, 1), MAX_RESULTS)
        query = body["query"]
        found = self.search(query, n)
        with self.lock:
            self.asked.append((query, body.get("n_results"), [self.ids[i] for i, _ in found]))
        hits = [{"id": self.ids[i], "content": self.texts[i], "tier": "long", "topic": self.ids[i].split(".")[0],
                 "score": score, "raw_distance": self.distance(score),
                 "metadata": {"parent": self.ids[i].rsplit(".", 1)[0]}} for i, score in found]
        return {"query": query, "searched_tiers": ["long"], "hits": hits}

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
