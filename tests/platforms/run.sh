#!/usr/bin/env bash
# Every platform's build tried on this Linux x86_64 machine (contract §7; platforms.py says what each
# case checks): the Windows .exe under Wine and the Linux aarch64 binary under qemu-aarch64, each a
# stdio MCP server driven by the official Python MCP SDK; the npm launcher choosing the .exe on
# win32; the macOS binaries' Mach-O headers; every bundle through `mcpb validate`.
#
# Builds nothing of the service: run `cargo xtask dist` first (.ci/run does, with its cheaper
# profile). Needs Debian's wine (8.0), qemu-user, libc6-arm64-cross and gcc-mingw-w64-x86-64
# (.ci/run installs them), python3, node and npm. Reuses the MCP SDK venv of tests/mcp-clients and
# the mcpb of tests/dist, installing them when missing or their pins changed. The Wine prefix is made in a scratch dir
# by wine-prefix.sh, with the stand-in bcryptprimitives.dll (Wine 8.0 lacks the DLL) built into it.
#
# Ends with one line `platforms: N passed, M failed`; exits non-zero if anything failed.
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"
dist="$target/dist"

need "$PYTHON" node npm wine wineboot qemu-aarch64 x86_64-w64-mingw32-gcc x86_64-w64-mingw32-objdump
[ -d /usr/aarch64-linux-gnu/lib ] || die 2 "libc6-arm64-cross is needed"
scc_bin
host_bin="$SCC_BIN"
ls "$dist"/*win_amd64.whl "$dist"/*manylinux_2_28_aarch64.whl >/dev/null 2>&1 ||
  die 2 "no cross-built wheels in $dist; run cargo xtask dist first"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)"

# --- installs (the only steps that use the network) ---------------------------------------------
venv="$target/mcp-clients-venv"  # tests/mcp-clients/run.sh's, the same pins
venv "$venv" "$root/tests/mcp-clients/requirements.txt"
npm_ci "$root/tests/dist"  # mcpb, as tests/dist/run.sh installs it

work="$(mktemp -d "${TMPDIR:-/tmp}/scc-platforms.XXXXXX")"
status=0
# The prefix's wineserver outlives the programs it ran. It is stopped, and waited for, before the
# scratch dir goes: a server still flushing its registry files into the prefix while `rm -rf` walks
# it leaves "Directory not empty" behind (a CI run failed on exactly that).
stop_wineserver() {
  [ -d "$work/wineprefix" ] || return 0
  WINEPREFIX="$work/wineprefix" wineserver -k 2>/dev/null || true
  WINEPREFIX="$work/wineprefix" timeout 60 wineserver -w 2>/dev/null || true
}
at_exit stop_wineserver

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
if [ "$failed" -eq 0 ]; then stop_wineserver && rm -rf "$work"; else echo "platforms: logs kept in $work" >&2; fi
echo "platforms: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
