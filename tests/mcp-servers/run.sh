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
# tests/mcp-peers when its node_modules is not from the lock. After that nothing reaches the
# network: every server listens on 127.0.0.1 only, and basic-memory is kept offline
# (basic_memory_seed.server_env).
#
# Ends with one line `mcp-servers: N passed, M failed`; exits non-zero if anything failed.
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"
peers="$root/tests/mcp-peers"

ran=0
closing() { if [ "$ran" -eq 0 ]; then echo "mcp-servers: 0 passed, 1 failed"; fi; }
at_exit closing
scc_bin
need "$PYTHON" node npm
# basic-memory needs Python 3.12 or newer. A candidate counts only when it runs: pyenv's shims
# exist for versions that are not selected, and fail.
newer() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }
python312="${PYTHON312:-}"
if [ -z "$python312" ]; then
  for candidate in python3.12 python3.13 "$HOME"/.pyenv/versions/3.12*/bin/python "$HOME"/.pyenv/versions/3.13*/bin/python; do
    if newer "$candidate"; then python312="$candidate"; break; fi
  done
fi
if [ -z "$python312" ] || ! newer "$python312"; then die 2 "basic-memory needs a Python >= 3.12; set PYTHON312"; fi

# --- installs (the only step that uses the network) ---------------------------------------------
basic_memory_venv="$target/mcp-servers-basic-memory-venv"
client="$target/mcp-peers-client-venv"  # tests/mcp-peers/run.sh's, the same pins
venv --python "$python312" "$basic_memory_venv" "$here/requirements-basic-memory.txt"
venv "$client" "$peers/requirements-client.txt"
npm_ci "$peers"
server_memory="$peers/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
basic_memory="$basic_memory_venv/bin/basic-memory"
echo "mcp-servers: basic-memory $("$basic_memory_venv/bin/python" -c 'import importlib.metadata as m; print(m.version("basic-memory"))') ($("$python312" --version)), server-memory $(node -p 'require(process.argv[1]).version' "$peers/node_modules/@modelcontextprotocol/server-memory/package.json"), stubs and client on mcp $("$client/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"

# --- the checks ---------------------------------------------------------------------------------
ran=1
"$client/bin/python" "$here/servers.py" --bin "$SCC_BIN" --basic-memory "$basic_memory" --server-memory "$server_memory" "$@"
