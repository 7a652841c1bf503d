#!/usr/bin/env bash
# `eval` checked by scorers that are not ours: trec_eval's own C code (pytrec-eval-terrier, driven
# through ir-measures) and ranx, both pinned from PyPI (requirements.txt). check.py starts stub
# stores on loopback, runs the debug binary's `eval --runs DIR --json` on judgments with graded and
# binary grades, converts the judgments to TREC qrels itself, reads our run files with each tool's
# own reader, and checks that each tool's mean (and per-query value) of every measure, for every
# run (the fusion and each store), equals ours to 1e-6.
#
# The gains, as observed (check.py's `gains` case proves them on every run):
#   - trec_eval's `ndcg_cut` takes the grade itself as the gain (linear), where ours is
#     2^grade - 1; the two agree on binary grades. So nDCG is compared with trec_eval's default on
#     the binary-graded queries, and with trec_eval given our gains per grade (ir-measures'
#     nDCG(gains=...)) on all of them.
#   - ranx's `ndcg` is linear too; its `ndcg_burges` is 2^grade - 1, and is compared on all of them.
#   - trec_eval holds a run's score as a 32-bit float and breaks ties by docid: our score column
#     falls strictly in f32, so every tool reads our order (check.py checks the files for it).
#
# Builds nothing: the binary comes from $SCC_BIN (default target/debug/seren-corpus-callosum, which
# `cargo test` builds). Needs python3 (>= 3.10, with venv). Creates the venv target/eval-venv from
# requirements.txt when it is missing or its pins changed (the only step that uses the network).
#
# Ends with one line `eval: N passed, M failed`; exits non-zero if anything failed.
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"

scc_bin
need "$PYTHON"
venv="$target/eval-venv"
venv --no-deps "$venv" "$here/requirements.txt"
# numba caches compiled functions beside ranx's sources unless told otherwise: keep them in target/.
export NUMBA_CACHE_DIR="$target/eval-venv/numba-cache"
exec "$venv/bin/python" "$here/check.py" "$SCC_BIN"
