#!/usr/bin/env bash
# The callosum as an OAuth 2.1 resource server (contract §6b) against a real authorization server:
# oidc-provider (package.json, pinned; provider.mjs) on loopback, with keys made on the spot, the
# Python MCP SDK's own OAuth client (requirements.txt, pinned) and tokens minted to be wrong in
# exactly one way. oauth.py says what is checked; everything it starts is stopped at the end.
#
# Builds nothing: the binary comes from $SCC_BIN (default target/debug/seren-corpus-callosum,
# relative to the repo root). Needs python3 (>= 3.11, with venv), node (>= 20) and npm. Creates the
# venv target/oauth-venv and installs requirements.txt into it when it is missing or its pins
# changed; runs `npm ci` here when node_modules lacks oidc-provider or the lock changed. After that
# it needs no network: every server it starts listens on 127.0.0.1 only.
#
# Arguments go to oauth.py (-k SUBSTRING runs only the cases whose name has it; -v prints tracebacks).
# Ends with one line `oauth: N passed, M failed`; exits non-zero if anything failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

SCC_BIN="${SCC_BIN:-target/debug/seren-corpus-callosum}"
case "$SCC_BIN" in
  /*) ;;
  *) SCC_BIN="$root/$SCC_BIN" ;;
esac
PYTHON="${PYTHON:-python3}"

if [ ! -x "$SCC_BIN" ]; then
  echo "oauth: no executable at $SCC_BIN; build it first (cargo build) or set SCC_BIN" >&2
  exit 2
fi
for tool in "$PYTHON" node npm; do
  command -v "$tool" >/dev/null || { echo "oauth: $tool is needed" >&2; exit 2; }
done

# Nothing from the caller's environment may configure the servers started here.
while read -r var; do unset "$var"; done < <(compgen -e | grep '^SEREN_SCC_' || true)

# --- installs (the only step that uses the network) ---------------------------------------------
venv="$root/target/oauth-venv"
stamp="$venv/installed-requirements.txt"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$here/requirements.txt" "$stamp"; then
  if [ ! -x "$venv/bin/python" ]; then
    echo "oauth: creating $venv"
    "$PYTHON" -m venv "$venv"
  fi
  echo "oauth: installing requirements.txt into the venv"
  "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$stamp"
fi
node_stamp="$here/node_modules/.installed-package-lock.json"
if [ ! -d "$here/node_modules/oidc-provider" ] || ! cmp -s "$here/package-lock.json" "$node_stamp"; then
  # --ignore-scripts: neither oidc-provider nor its dependencies need an install script.
  echo "oauth: npm ci (oidc-provider)"
  (cd "$here" && npm ci --no-audit --no-fund --ignore-scripts)
  cp "$here/package-lock.json" "$node_stamp"
fi
echo "oauth: oidc-provider $(node -p 'require(process.argv[1]).version' "$here/node_modules/oidc-provider/package.json")" \
  "(node $(node --version)), mcp $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"

# --- the run --------------------------------------------------------------------------------------
# oauth.py starts and stops the providers, stores and callosums itself; it runs in the background so
# that a signal here reaches it (it stops its children on SIGTERM), and the scratch dir goes when
# everything passed, else stays for its logs.
work="$(mktemp -d "${TMPDIR:-/tmp}/scc-oauth.XXXXXX")"
pid=""
cleanup() {
  local status=$?
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  if [ "$status" -eq 0 ]; then rm -rf "$work"; else echo "oauth: logs kept in $work" >&2; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$venv/bin/python" "$here/oauth.py" --bin "$SCC_BIN" --work "$work" --provider "$here/provider.mjs" "$@" &
pid=$!
wait "$pid"
