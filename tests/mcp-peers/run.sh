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
# here when node_modules lacks server-memory. After that it needs no network: every server listens
# on 127.0.0.1 only.
#
# Ends with one line `mcp-peers: N passed, M failed`; exits non-zero if anything failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

SCC_BIN="${SCC_BIN:-target/debug/seren-corpus-callosum}"
case "$SCC_BIN" in
  /*) ;;
  *) SCC_BIN="$root/$SCC_BIN" ;;
esac
PYTHON="${PYTHON:-python3}"

# An install that fails before peers.py runs still ends with the closing line.
ran=0
closing() { if [ "$ran" -eq 0 ]; then echo "mcp-peers: 0 passed, 1 failed"; fi; }
trap closing EXIT

if [ ! -x "$SCC_BIN" ]; then
  echo "mcp-peers: no executable at $SCC_BIN; build it first (cargo build) or set SCC_BIN" >&2
  exit 2
fi
for tool in "$PYTHON" node npm; do
  command -v "$tool" >/dev/null || { echo "mcp-peers: $tool is needed" >&2; exit 2; }
done

# --- installs (the only step that uses the network) ---------------------------------------------
# venv NAME REQUIREMENTS : target/mcp-peers-NAME-venv, (re)installed when its stamp differs.
venv() {
  local dir="$root/target/mcp-peers-$1-venv" requirements="$here/$2"
  if [ ! -x "$dir/bin/python" ] || ! cmp -s "$requirements" "$dir/installed-$2"; then
    if [ ! -x "$dir/bin/python" ]; then
      echo "mcp-peers: creating $dir"
      "$PYTHON" -m venv "$dir"
    fi
    echo "mcp-peers: installing $2 into the venv"
    "$dir/bin/python" -m pip install --disable-pip-version-check --no-input --quiet -r "$requirements"
    cp "$requirements" "$dir/installed-$2"
  fi
}
venv loci requirements-loci.txt
venv client requirements-client.txt
server_memory="$here/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
if [ ! -f "$server_memory" ]; then
  # --ignore-scripts: nothing in server-memory's tree needs an install script.
  echo "mcp-peers: npm ci (server-memory)"
  (cd "$here" && npm ci --no-audit --no-fund --ignore-scripts)
fi
echo "mcp-peers: seren-loci $("$root/target/mcp-peers-loci-venv/bin/python" -c 'import importlib.metadata as m; print(m.version("seren-loci"), "(mcp", m.version("mcp") + ")")'), server-memory $(node -p 'require(process.argv[1]).version' "$here/node_modules/@modelcontextprotocol/server-memory/package.json") (node $(node --version)), client mcp $("$root/target/mcp-peers-client-venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"

# --- the checks ---------------------------------------------------------------------------------
ran=1
"$root/target/mcp-peers-client-venv/bin/python" "$here/peers.py" --bin "$SCC_BIN" \
  --loci "$root/target/mcp-peers-loci-venv/bin/seren-loci" --server-memory "$server_memory" "$@"
