#!/usr/bin/env bash
# Every platform's build tried on this Linux x86_64 machine (contract §7; platforms.py says what each
# case checks): the Windows .exe under Wine and the Linux aarch64 binary under qemu-aarch64, each a
# stdio MCP server driven by the official Python MCP SDK; the npm launcher choosing the .exe on
# win32; the macOS binaries' Mach-O headers; every bundle through `mcpb validate`.
#
# Builds nothing of the service: run `cargo xtask dist` first (.ci/run does, with its cheaper
# profile). Needs Debian's wine (8.0), qemu-user, libc6-arm64-cross and gcc-mingw-w64-x86-64
# (.ci/run installs them), python3, node and npm. Reuses the MCP SDK venv of tests/mcp-clients and
# the mcpb of tests/dist, installing them when missing. The Wine prefix is made in a scratch dir
# by wine-prefix.sh, with the stand-in bcryptprimitives.dll (Wine 8.0 lacks the DLL) built into it.
#
# Ends with one line `platforms: N passed, M failed`; exits non-zero if anything failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in
  /*) ;;
  *) target="$root/$target" ;;
esac
dist="$target/dist"
host_bin="${SCC_BIN:-$target/debug/seren-corpus-callosum}"
PYTHON="${PYTHON:-python3}"

for tool in "$PYTHON" node npm wine wineboot qemu-aarch64 x86_64-w64-mingw32-gcc x86_64-w64-mingw32-objdump; do
  command -v "$tool" >/dev/null || { echo "platforms: $tool is needed" >&2; exit 2; }
done
[ -d /usr/aarch64-linux-gnu/lib ] || { echo "platforms: libc6-arm64-cross is needed" >&2; exit 2; }
[ -x "$host_bin" ] || { echo "platforms: no $host_bin; cargo build first" >&2; exit 2; }
ls "$dist"/*win_amd64.whl "$dist"/*manylinux_2_28_aarch64.whl >/dev/null 2>&1 ||
  { echo "platforms: no cross-built wheels in $dist; run cargo xtask dist first" >&2; exit 2; }
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)"

# Nothing from the caller's environment may configure the binaries run here.
while read -r var; do unset "$var"; done < <(compgen -e | grep '^SEREN_SCC_' || true)

# --- installs (the only steps that use the network) ---------------------------------------------
venv="$target/mcp-clients-venv"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$root/tests/mcp-clients/requirements.txt" "$venv/installed-requirements.txt"; then
  [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
    -r "$root/tests/mcp-clients/requirements.txt"
  cp "$root/tests/mcp-clients/requirements.txt" "$venv/installed-requirements.txt"
fi
if [ ! -d "$root/tests/dist/node_modules/@anthropic-ai/mcpb" ]; then
  (cd "$root/tests/dist" && npm ci --no-audit --no-fund --ignore-scripts)
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/scc-platforms.XXXXXX")"
status=0
cleanup() {
  # The prefix's wineserver outlives the programs it ran; it goes with the scratch dir.
  WINEPREFIX="$work/wineprefix" wineserver -k 2>/dev/null || true
}
trap cleanup EXIT

# --- a Windows prefix of the test's own ---------------------------------------------------------
echo "== Wine $(wine --version) prefix in $work/wineprefix"
export WINEDEBUG=-all
"$here/wine-prefix.sh" "$work/wineprefix"

echo "== $(qemu-aarch64 --version | head -n 1)"
"$venv/bin/python" "$here/platforms.py" --dist "$dist" --work "$work" --version "$version" \
  --host-bin "$host_bin" --wineprefix "$work/wineprefix" \
  --mcpb "$root/tests/dist/node_modules/.bin/mcpb" | tee "$work/platforms.out" || status=1

passed="$(grep -c '^ok  ' "$work/platforms.out" || true)"
failed="$(grep -c '^FAIL  ' "$work/platforms.out" || true)"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
if [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "platforms: logs kept in $work" >&2; fi
echo "platforms: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
