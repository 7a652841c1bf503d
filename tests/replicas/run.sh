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
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"

scc_bin
NGINX="${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
PG_BIN="${PG_BIN:-$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin 2>/dev/null | sort -V | tail -1)}"
need --hint "apt-get install nginx" "$NGINX"
need --hint "apt-get install postgresql" "${PG_BIN:-/usr/lib/postgresql/VERSION/bin}/postgres"

venv="$target/mcp-clients-venv"  # tests/mcp-clients/run.sh's, the same pins
venv "$venv" "$root/tests/mcp-clients/requirements.txt"

"$NGINX" -v 2>&1
"$PG_BIN/postgres" --version
# The file mode runs the MCP part too (it imports the SDK); the postgres mode needs only the
# standard library, and runs in the same venv for simplicity.
"$venv/bin/python" "$here/replicas.py" "$SCC_BIN" "$NGINX" file
"$venv/bin/python" "$here/replicas.py" "$SCC_BIN" "$NGINX" postgres "$PG_BIN"
