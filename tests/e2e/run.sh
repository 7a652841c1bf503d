#!/usr/bin/env bash
# End-to-end test of The Bridge (the web viewer) in Debian's headless Chromium.
#
# Builds nothing: it takes an already-built binary from $SCC_BIN (default
# target/debug/seren-corpus-callosum, relative to the repo root). Needs Node.js >= 20 with npm, and
# Chromium at $CHROMIUM_BIN (default /usr/bin/chromium, Debian's `chromium` package). Installs the
# pinned npm dependencies with `npm ci` when node_modules is missing; never downloads a browser.
# Screenshots go to target/e2e-screenshots/. SCC_VIEWER_FROM_DISK=1 has the browser get
# viewer/index.html from disk (with the binary's own headers), to test an edit of the page against a
# binary built before it; without it, such a binary fails the run.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

SCC_BIN="${SCC_BIN:-target/debug/seren-corpus-callosum}"
case "$SCC_BIN" in
  /*) ;;
  *) SCC_BIN="$root/$SCC_BIN" ;;
esac
CHROMIUM_BIN="${CHROMIUM_BIN:-/usr/bin/chromium}"

if [ ! -x "$SCC_BIN" ]; then
  echo "e2e: no executable at $SCC_BIN; build it first (cargo build) or set SCC_BIN" >&2
  exit 2
fi
if [ ! -x "$CHROMIUM_BIN" ]; then
  echo "e2e: no Chromium at $CHROMIUM_BIN; install Debian's package: apt-get install -y chromium" >&2
  exit 2
fi
command -v node >/dev/null && command -v npm >/dev/null || {
  echo "e2e: node and npm are needed (Node.js >= 20)" >&2
  exit 2
}

if [ ! -d "$here/node_modules/playwright-core" ]; then
  (cd "$here" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
fi

mkdir -p "$root/target/e2e-screenshots"
rm -f "$root/target/e2e-screenshots/"*.png

export SCC_BIN CHROMIUM_BIN
cd "$here"
exec node --test --test-reporter=spec viewer.test.mjs
