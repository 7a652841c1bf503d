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
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"

scc_bin
need --hint "apt-get install prometheus" "${PROMETHEUS:-prometheus}" "${PROMTOOL:-promtool}" "$PYTHON"
PROMETHEUS="$(command -v "${PROMETHEUS:-prometheus}")"
PROMTOOL="$(command -v "${PROMTOOL:-promtool}")"
"$PROMETHEUS" --version 2>&1 | head -1
exec "$PYTHON" "$here/scrape.py" "$SCC_BIN" "$PROMETHEUS" "$PROMTOOL"
