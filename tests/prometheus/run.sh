#!/usr/bin/env bash
# `GET /metrics` read by a real Prometheus server and linted by promtool, both from Debian's
# `prometheus` package (.ci/run installs it): three stub stores (healthy, failing, hanging), the
# callosum fanning them behind a bearer token, Prometheus scraping it every second on loopback,
# then queried over its HTTP API for the per-store rates and breaker states (scrape.py says what
# is checked). Prometheus keeps its data in a temp dir, listens on a free 127.0.0.1 port, and is
# killed at the end, as is everything else started here.
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
PROMETHEUS="${PROMETHEUS:-$(command -v prometheus || true)}"
PROMTOOL="${PROMTOOL:-$(command -v promtool || true)}"

[ -x "$SCC_BIN" ] || { echo "prometheus: no executable at $SCC_BIN; build it first" >&2; exit 2; }
for tool in "$PROMETHEUS" "$PROMTOOL"; do
  [ -n "$tool" ] && [ -x "$tool" ] || {
    echo "prometheus: prometheus and promtool are needed (apt-get install prometheus)" >&2
    exit 2
  }
done
"$PROMETHEUS" --version 2>&1 | head -1
exec python3 "$here/scrape.py" "$SCC_BIN" "$PROMETHEUS" "$PROMTOOL"
