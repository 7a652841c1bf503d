#!/usr/bin/env bash
# End-to-end test of The Bridge (the web viewer) in Debian's headless Chromium.
#
# Builds nothing: it takes an already-built binary from $SCC_BIN (default
# target/debug/seren-corpus-callosum, relative to the repo root). Needs Node.js >= 20 with npm, and
# Chromium at $CHROMIUM_BIN (default /usr/bin/chromium, Debian's `chromium` package). Installs the
# pinned npm dependencies with `npm ci` when node_modules is not from the lock (no install script
# runs); never downloads a browser.
# Screenshots go to target/e2e-screenshots/. SCC_VIEWER_FROM_DISK=1 has the browser get
# viewer/index.html from disk (with the binary's own headers), to test an edit of the page against a
# binary built before it; without it, such a binary fails the run.
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"

scc_bin
CHROMIUM_BIN="${CHROMIUM_BIN:-/usr/bin/chromium}"
need --hint "install Debian's package: apt-get install -y chromium" "$CHROMIUM_BIN"
need --hint "Node.js >= 20" node npm

npm_ci "$here"

mkdir -p "$root/target/e2e-screenshots"  # where viewer.test.mjs puts them
rm -f "$root/target/e2e-screenshots/"*.png

export CHROMIUM_BIN
cd "$here"
exec node --test --test-reporter=spec viewer.test.mjs
