#!/usr/bin/env bash
# The packet against the Python SerenCorpusCallosum 5.3.0 (PyPI, pinned in requirements.txt): the
# same 5.3.0 YAML, the same stub stores, the same searches, the same hits, ranks, scores, edges and
# token costs. Builds nothing: takes the binary from $SCC_BIN (default target/debug/...). Makes its
# venv target/parity-venv when it is missing or its pin changed.
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"
scc_bin
venv="$target/parity-venv"
venv "$venv" "$here/requirements.txt"
exec "$venv/bin/python" "$here/parity.py" "$venv/bin/seren-corpus-callosum" "$SCC_BIN"
