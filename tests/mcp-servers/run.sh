#!/usr/bin/env bash
# The memory servers people run, fanned by the `mcp` store type with a preset and with the block
# `seren-corpus-callosum propose` prints: basic-memory (PyPI, real, over stdio),
# @modelcontextprotocol/server-memory (npm, real) and stubs of mcp-server-qdrant, chroma-mcp,
# Graphiti and mem0 built on the official Python MCP SDK (stub_servers.py cites the source each
# answers like), over stdio and HTTP, beside a SerenMemory stub: servers.py.
#
# Builds nothing: the binary comes from $SCC_BIN (default target/debug/seren-corpus-callosum,
# relative to the repo root). Needs python3 (>= 3.10, with venv) for the client, a Python >= 3.12
# for basic-memory ($PYTHON312, else python3.12 or python3.13 on PATH, else pyenv's), node and
# npm. Makes two venvs under target/ when they are missing or their pins changed:
# target/mcp-servers-basic-memory-venv (requirements-basic-memory.txt) and the client venv
# tests/mcp-peers/run.sh makes too (target/mcp-peers-client-venv, the same pins); runs `npm ci` in
# tests/mcp-peers when server-memory is missing. After that nothing reaches the network: every
# server listens on 127.0.0.1 only, and basic-memory is kept offline (basic_memory_seed.server_env).
#
# Ends with one line `mcp-servers: N passed, M failed`; exits non-zero if anything failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
peers="$root/tests/mcp-peers"

SCC_BIN="${SCC_BIN:-target/debug/seren-corpus-callosum}"
case "$SCC_BIN" in
  /*) ;;
  *) SCC_BIN="$root/$SCC_BIN" ;;
esac
PYTHON="${PYTHON:-python3}"

ran=0
closing() { if [ "$ran" -eq 0 ]; then echo "mcp-servers: 0 passed, 1 failed"; fi; }
trap closing EXIT

if [ ! -x "$SCC_BIN" ]; then
  echo "mcp-servers: no executable at $SCC_BIN; build it first (cargo build) or set SCC_BIN" >&2
  exit 2
fi
for tool in "$PYTHON" node npm; do
  command -v "$tool" >/dev/null || { echo "mcp-servers: $tool is needed" >&2; exit 2; }
done
# basic-memory needs Python 3.12 or newer. A candidate counts only when it runs: pyenv's shims
# exist for versions that are not selected, and fail.
newer() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }
python312="${PYTHON312:-}"
if [ -z "$python312" ]; then
  for candidate in python3.12 python3.13 "$HOME"/.pyenv/versions/3.12*/bin/python "$HOME"/.pyenv/versions/3.13*/bin/python; do
    if newer "$candidate"; then python312="$candidate"; break; fi
  done
fi
if [ -z "$python312" ] || ! newer "$python312"; then
  echo "mcp-servers: basic-memory needs a Python >= 3.12; set PYTHON312" >&2
  exit 2
fi

# --- installs (the only step that uses the network) ---------------------------------------------
# venv DIR PYTHON REQUIREMENTS : DIR, (re)installed when its stamp differs.
venv() {
  local dir="$1" python="$2" requirements="$3" stamp
  stamp="$dir/installed-$(basename "$requirements")"
  if [ ! -x "$dir/bin/python" ] || ! cmp -s "$requirements" "$stamp"; then
    [ -x "$dir/bin/python" ] || { echo "mcp-servers: creating $dir"; "$python" -m venv "$dir"; }
    echo "mcp-servers: installing $(basename "$requirements") into $dir"
    "$dir/bin/python" -m pip install --disable-pip-version-check --no-input --quiet -r "$requirements"
    cp "$requirements" "$stamp"
  fi
}
venv "$root/target/mcp-servers-basic-memory-venv" "$python312" "$here/requirements-basic-memory.txt"
venv "$root/target/mcp-peers-client-venv" "$PYTHON" "$peers/requirements-client.txt"
server_memory="$peers/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
if [ ! -f "$server_memory" ]; then
  echo "mcp-servers: npm ci (server-memory, in tests/mcp-peers)"
  (cd "$peers" && npm ci --no-audit --no-fund --ignore-scripts)
fi
basic_memory="$root/target/mcp-servers-basic-memory-venv/bin/basic-memory"
client="$root/target/mcp-peers-client-venv/bin/python"
echo "mcp-servers: basic-memory $("$root/target/mcp-servers-basic-memory-venv/bin/python" -c 'import importlib.metadata as m; print(m.version("basic-memory"))') ($("$python312" --version)), server-memory $(node -p 'require(process.argv[1]).version' "$peers/node_modules/@modelcontextprotocol/server-memory/package.json"), stubs and client on mcp $("$client" -c 'import importlib.metadata as m; print(m.version("mcp"))')"

# --- the checks ---------------------------------------------------------------------------------
ran=1
"$client" "$here/servers.py" --bin "$SCC_BIN" --basic-memory "$basic_memory" --server-memory "$server_memory" "$@"
