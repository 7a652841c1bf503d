#!/usr/bin/env bash
# The `mcp` store type against real MCP servers that are not ours: SerenLoci 5.5.0 (PyPI, over
# streamable HTTP, beside its own REST), the official knowledge-graph server
# @modelcontextprotocol/server-memory (npm, over stdio) and a second callosum (over HTTP and stdio),
# each checked against what the official Python `mcp` SDK gets from the same server: peers.py.
#
# Builds nothing: the binary comes from $SCC_BIN (default target/debug/seren-corpus-callosum,
# relative to the repo root). Needs python3 (>= 3.10, with venv), node (>= 20) and npm. Makes two
# venvs under target/ when they are missing or their pins changed (SerenLoci's [mcp] extra pulls
# mcp 1.x, the client is mcp 2.x, so they cannot share one): target/mcp-peers-loci-venv from
# requirements-loci.txt and target/mcp-peers-client-venv from requirements-client.txt; runs `npm ci`
# here when node_modules is not from the lock. After that it needs no network: every server listens
# on 127.0.0.1 only.
#
# Ends with one line `mcp-peers: N passed, M failed`; exits non-zero if anything failed.
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"

# An install that fails before peers.py runs still ends with the closing line.
ran=0
closing() { if [ "$ran" -eq 0 ]; then echo "mcp-peers: 0 passed, 1 failed"; fi; }
at_exit closing
scc_bin
need "$PYTHON" node npm

# --- installs (the only step that uses the network) ---------------------------------------------
loci="$target/mcp-peers-loci-venv"
client="$target/mcp-peers-client-venv"
venv "$loci" "$here/requirements-loci.txt"
venv "$client" "$here/requirements-client.txt"
npm_ci "$here"
server_memory="$here/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
echo "mcp-peers: seren-loci $("$loci/bin/python" -c 'import importlib.metadata as m; print(m.version("seren-loci"), "(mcp", m.version("mcp") + ")")'), server-memory $(node -p 'require(process.argv[1]).version' "$here/node_modules/@modelcontextprotocol/server-memory/package.json") (node $(node --version)), client mcp $("$client/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"

# --- the checks ---------------------------------------------------------------------------------
ran=1
"$client/bin/python" "$here/peers.py" --bin "$SCC_BIN" --loci "$loci/bin/seren-loci" --server-memory "$server_memory" "$@"
