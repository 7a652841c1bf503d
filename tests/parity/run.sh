#!/usr/bin/env bash
# The packet against the Python SerenCorpusCallosum 5.3.0 (PyPI, pinned in requirements.txt): the
# same 5.3.0 YAML, the same stub stores, the same searches, the same hits, ranks, scores, edges and
# token costs. Builds nothing: takes the binary from $SCC_BIN (default target/debug/...). Makes its
# venv under target/parity-venv on first use.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
SCC_BIN="${SCC_BIN:-$root/target/debug/seren-corpus-callosum}"
venv="$root/target/parity-venv"
if [ ! -x "$venv/bin/seren-corpus-callosum" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet -r "$here/requirements.txt"
fi
exec "$venv/bin/python" "$here/parity.py" "$venv/bin/seren-corpus-callosum" "$SCC_BIN"
