#!/usr/bin/env bash
# Three replicas behind a real nginx (Debian's `nginx`), sharing one runtime overlay: first as a
# file, then as a table in a real PostgreSQL server (Debian's `postgresql`, started on loopback
# with its data in a temp dir). replicas.py says what is checked; everything it starts is killed
# at the end.
#
# Builds nothing: the binary comes from $SCC_BIN (default target/debug/seren-corpus-callosum, which
# `cargo test` builds). Needs python3 (the standard library only).
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
"$NGINX" -v 2>&1
"$PG_BIN/postgres" --version
python3 "$here/replicas.py" "$SCC_BIN" "$NGINX" file
python3 "$here/replicas.py" "$SCC_BIN" "$NGINX" postgres "$PG_BIN"
