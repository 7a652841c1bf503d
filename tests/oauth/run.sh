#!/usr/bin/env bash
# The callosum as an OAuth 2.1 resource server (contract §6b) against a real authorization server:
# oidc-provider (package.json, pinned; provider.mjs) on loopback, with keys made on the spot, the
# Python MCP SDK's own OAuth client (requirements.txt, pinned) and tokens minted to be wrong in
# exactly one way. oauth.py says what is checked; everything it starts is stopped at the end.
#
# Builds nothing: the binary comes from $SCC_BIN (default target/debug/seren-corpus-callosum,
# relative to the repo root). Needs python3 (>= 3.11, with venv), node (>= 20) and npm. Creates the
# venv target/oauth-venv and installs requirements.txt into it when it is missing or its pins
# changed; runs `npm ci` here when node_modules is not from the lock. After that
# it needs no network: every server it starts listens on 127.0.0.1 only.
#
# Arguments go to oauth.py (-k SUBSTRING runs only the cases whose name has it; -v prints tracebacks).
# Ends with one line `oauth: N passed, M failed`; exits non-zero if anything failed.
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"

scc_bin
need "$PYTHON" node npm

# --- installs (the only step that uses the network) ---------------------------------------------
venv="$target/oauth-venv"
venv "$venv" "$here/requirements.txt"
npm_ci "$here"
echo "oauth: oidc-provider $(node -p 'require(process.argv[1]).version' "$here/node_modules/oidc-provider/package.json")" \
  "(node $(node --version)), mcp $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"

# --- the run --------------------------------------------------------------------------------------
# oauth.py starts and stops the providers, stores and callosums itself; it runs in the background so
# that a signal here reaches it (it stops its children on SIGTERM), and the scratch dir goes when
# everything passed, else stays for its logs.
scratch
background "$venv/bin/python" "$here/oauth.py" --bin "$SCC_BIN" --work "$work" --provider "$here/provider.mjs" "$@"
wait "${pids[-1]}"
