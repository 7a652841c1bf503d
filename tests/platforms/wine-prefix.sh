#!/usr/bin/env bash
# wine-prefix.sh PREFIX: makes PREFIX a Wine prefix (Debian's Wine 8.0) that runs what Rust builds
# for x86_64-pc-windows-gnu: `wineboot --init`, then the stand-in bcryptprimitives.dll
# (bcryptprimitives.c: Wine 8.0 lacks the DLL that Rust's standard library takes its random bytes
# from) built with MinGW-w64 into its system32. Does nothing when PREFIX already has the DLL.
# Test-only: the DLL never reaches what ships.
set -euo pipefail
prefix="$1"
dll="$prefix/drive_c/windows/system32/bcryptprimitives.dll"
[ -f "$dll" ] && exit 0
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$prefix"
log="$prefix.wineboot.log"
WINEPREFIX="$prefix" WINEDEBUG=-all timeout 300 wineboot --init >"$log" 2>&1 ||
  { echo "wine-prefix: wineboot failed:" >&2; cat "$log" >&2; exit 1; }
WINEPREFIX="$prefix" timeout 60 wineserver -w || true
x86_64-w64-mingw32-gcc -shared -O2 -o "$dll.tmp" "$here/bcryptprimitives.c" -ladvapi32
mv "$dll.tmp" "$dll"
