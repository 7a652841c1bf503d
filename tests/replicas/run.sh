#!/usr/bin/env bash
# Three replicas behind a real nginx (Debian's `nginx`), sharing one runtime overlay: first as a
# file, then as a table in a real PostgreSQL server (Debian's `postgresql`, started on loopback
# with its data in a temp dir). replicas.py says what is checked, over REST in both modes and over
# MCP, driven by the official Python MCP SDK in its session and stateless modes, on the file
# overlay; everything it starts is killed at the end.
#
# Builds nothing: the binary comes from $SCC_BIN (default target/debug/seren-corpus-callosum, which
# `cargo test` builds). Needs python3 (>= 3.10, with venv). The MCP SDK comes pinned from
# tests/mcp-clients/requirements.txt, into the same venv as tests/mcp-clients/run.sh makes
# (target/mcp-clients-venv, installed when it is missing or its pins changed: the only step that
# uses the network), so CI installs it once for both.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
SCC_BIN="${SCC_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/seren-corpus-callosum}"
case "$SCC_BIN" in
  /*) ;;
  *) SCC_BIN="$root/$SCC_BIN" ;;
esac
NGINX="${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
PG_BIN="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}"

[ -x "$SCC_BIN" ] || { echo "replicas: no executable at $SCC_BIN; build it first" >&2; exit 2; }
[ -x "$NGINX" ] || { echo "replicas: nginx is needed (apt-get install nginx)" >&2; exit 2; }
[ -n "$PG_BIN" ] && [ -x "$PG_BIN/postgres" ] || {
  echo "replicas: PostgreSQL is needed (apt-get install postgresql)" >&2
  exit 2
}
PYTHON="${PYTHON:-python3}"

venv="$root/target/mcp-clients-venv"
requirements="$root/tests/mcp-clients/requirements.txt"
stamp="$venv/installed-requirements.txt"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$requirements" "$stamp"; then
  if [ ! -x "$venv/bin/python" ]; then
    echo "replicas: creating $venv"
    "$PYTHON" -m venv "$venv"
  fi
  echo "replicas: installing tests/mcp-clients/requirements.txt into the venv"
  "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet -r "$requirements"
  cp "$requirements" "$stamp"
fi

"$NGINX" -v 2>&1
"$PG_BIN/postgres" --version
# The file mode runs the MCP part too (it imports the SDK); the postgres mode needs only the
# standard library, and runs in the same venv for simplicity.
"$venv/bin/python" "$here/replicas.py" "$SCC_BIN" "$NGINX" file
"$venv/bin/python" "$here/replicas.py" "$SCC_BIN" "$NGINX" postgres "$PG_BIN"
