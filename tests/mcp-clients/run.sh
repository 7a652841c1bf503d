#!/usr/bin/env bash
# Independent MCP client checks: clients that are not ours talk to seren-corpus-callosum.
#
#   1. The official Python `mcp` SDK (requirements.txt) over stdio, over streamable HTTP with no
#      token and over HTTP with a bearer token, each in its legacy (initialize handshake), auto and
#      pinned current-protocol (2026-07-28) modes: python_client.py.
#   2. The MCP Inspector CLI (package.json, pinned) over stdio and HTTP in its legacy and modern
#      protocol eras: `initialize`, `tools/list --strict` (tool-schema portability lint: any
#      error-severity finding fails; warnings are printed) and a `tools/call` of search.
#   3. The official MCP Bundle CLI (`mcpb validate`, package.json, pinned) on
#      mcp-manifests/mcpb/manifest.json, and on a broken copy that it must refuse.
#
# Builds nothing: the binary comes from $SCC_BIN (default target/debug/seren-corpus-callosum,
# relative to the repo root). Needs python3 (>= 3.10, with venv), node (>= 20) and npm. Creates the
# venv target/mcp-clients-venv and installs requirements.txt into it when it is missing or its pins
# changed; runs `npm ci` here when node_modules is not from the lock. After that it needs no network:
# every server it starts listens on 127.0.0.1 only, with sample stores from `demo`.
#
# Ends with one line `mcp-clients: N passed, M failed`; exits non-zero if anything failed.
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"

STARTUP_TIMEOUT=30  # seconds for a server to print its address
INSPECTOR_TIMEOUT=120  # seconds for one Inspector run

scc_bin
need "$PYTHON" node npm timeout
# The counts, with the closing line whatever happens, and the scratch dir; the servers started
# below run in the background, stopped at exit.
tally
scratch

# --- installs (the only step that uses the network) ---------------------------------------------
venv="$target/mcp-clients-venv"
venv "$venv" "$here/requirements.txt"
# On Node < 22.19 npm warns EBADENGINE (the Inspector asks for it); the CLI works there all the same.
npm_ci "$here"

# --- fixtures -----------------------------------------------------------------------------------
# start NAME CMD... : runs a server in the background, stderr to $work/NAME.log.
start() {
  local name="$1"
  shift
  background "$@" </dev/null >"$work/$name.stdout" 2>"$work/$name.log" 3>&- 4>&-
}

# await NAME REGEX : polls NAME's log until a line matches, the server dies, or the deadline passes.
await() {
  local name="$1" regex="$2" pid="${pids[-1]}" deadline=$((SECONDS + STARTUP_TIMEOUT))
  until grep -qE "$regex" "$work/$name.log"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "mcp-clients: $name exited before printing /$regex/:" >&2
      sed 's/^/  | /' "$work/$name.log" >&2
      failed=$((failed + 1))
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "mcp-clients: $name printed no /$regex/ within ${STARTUP_TIMEOUT}s:" >&2
      sed 's/^/  | /' "$work/$name.log" >&2
      failed=$((failed + 1))
      exit 1
    fi
    sleep 0.1
  done
}

listen_addr() { sed -nE 's#.*listening on http://([^ ]+).*#\1#p' "$work/$1.log" | head -n 1; }

# The sample stores: `demo` runs them in-process (its own callosum is not used). An absent config
# file keeps it from reading the user's.
start demo env SEREN_SCC_RUNTIME_STORES="$work/demo.overlay.yaml" \
  "$SCC_BIN" demo -c "$work/no-such-config.yaml" --host 127.0.0.1 --port 0
store_line='^[[:space:]]+%s[[:space:]]+%s[[:space:]]+(http://[^[:space:]]+)'
# shellcheck disable=SC2059
episodic_re="$(printf "$store_line" episodic seren_memory)"
# shellcheck disable=SC2059
facts_re="$(printf "$store_line" facts seren_loci)"
await demo "$episodic_re"
await demo "$facts_re"
episodic_url="$(sed -nE "s#$episodic_re#\\1#p" "$work/demo.log" | head -n 1)"
facts_url="$(sed -nE "s#$facts_re#\\1#p" "$work/demo.log" | head -n 1)"

config="$work/callosum.yaml"
cat >"$config" <<EOF
federation:
  stores:
    - {name: episodic, type: seren_memory, url: $episodic_url}
    - {name: facts, type: seren_loci, url: $facts_url, description: "sample facts about the Xavier"}
EOF

token="mcp-clients-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
start open env SEREN_SCC_RUNTIME_STORES="$work/open.overlay.yaml" \
  "$SCC_BIN" serve -c "$config" --host 127.0.0.1 --port 0
await open 'listening on http://'
start guarded env SEREN_SCC_RUNTIME_STORES="$work/guarded.overlay.yaml" SEREN_SCC_BEARER_TOKEN="$token" \
  "$SCC_BIN" serve -c "$config" --host 127.0.0.1 --port 0
await guarded 'listening on http://'
# A callosum for a team (contract §6c): a view's token sees the facts store and nothing of the
# other (named so that no ordinary word in a tool's description matches it).
view_token="mcp-clients-view-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
view_config="$work/viewed.yaml"
cat >"$view_config" <<EOF
server:
  views:
    - {name: research, token: $view_token, stores: [facts]}
federation:
  stores:
    - {name: hidden-episodes, type: seren_memory, url: $episodic_url}
    - {name: facts, type: seren_loci, url: $facts_url, description: "sample facts about the Xavier"}
EOF
start viewed env SEREN_SCC_RUNTIME_STORES="$work/viewed.overlay.yaml" SEREN_SCC_BEARER_TOKEN="$token" \
  "$SCC_BIN" serve -c "$view_config" --host 127.0.0.1 --port 0
await viewed 'listening on http://'
open_url="http://$(listen_addr open)/mcp"
guarded_url="http://$(listen_addr guarded)/mcp"
viewed_url="http://$(listen_addr viewed)/mcp"
echo "mcp-clients: stores episodic=$episodic_url facts=$facts_url; callosum open=$open_url guarded=$guarded_url"

# --- 1. the Python SDK --------------------------------------------------------------------------
echo "== python mcp SDK"
mkdir -p "$work/python"
"$venv/bin/python" "$here/python_client.py" --bin "$SCC_BIN" --config "$config" --workdir "$work/python" \
  --open-url "$open_url" --token-url "$guarded_url" --token "$token" \
  --view-url "$viewed_url" --view-token "$view_token" --results "$work/python.json" || true
if counts="$("$venv/bin/python" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["passed"], d["failed"])' \
  "$work/python.json" 2>/dev/null)"; then
  read -r p f <<<"$counts"
  passed=$((passed + p))
  failed=$((failed + f))
else
  echo "FAIL  python  python_client.py wrote no results"
  failed=$((failed + 1))
fi

# --- 2. the MCP Inspector CLI -------------------------------------------------------------------
echo "== MCP Inspector $(node -p 'require(process.argv[1]).version' "$here/node_modules/@modelcontextprotocol/inspector/package.json") (node $(node --version))"
mkdir -p "$work/inspector/home"
inspector() {
  # Its catalog, client config and OAuth state go to the scratch dir, never to ~/.mcp-inspector.
  HOME="$work/inspector/home" MCP_CATALOG_PATH="$work/inspector/catalog.json" \
    MCP_CLIENT_CONFIG_PATH="$work/inspector/client.json" \
    timeout -k 5 "$INSPECTOR_TIMEOUT" "$here/node_modules/.bin/inspector" --cli "$@"
}
ok() { echo "ok  $1  $2"; passed=$((passed + 1)); }
# fail CASE DETAIL [FILE...] : the case's line, then the tail of each non-empty FILE.
fail() {
  local name="$1" detail="$2" file
  shift 2
  echo "FAIL  $name  $detail"
  failed=$((failed + 1))
  for file in "$@"; do
    if [ -s "$file" ]; then tail -n 20 "$file" | sed 's/^/      | /'; fi
  done
}
# judge JSON_FILE CODE : runs CODE with `out` bound to the Inspector's JSON envelope and `r` to its
# result; CODE prints the detail for the case's line, or raises.
judge() {
  "$venv/bin/python" - "$1" "$2" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
r = out.get("result")
exec(sys.argv[2])
PY
}

first_report=""
for target in stdio http+bearer; do
  if [ "$target" = stdio ]; then
    args=("$SCC_BIN" stdio -c "$config" -e "SEREN_SCC_RUNTIME_STORES=$work/inspector/overlay.yaml" -e SEREN_SCC_LOG=warn)
  else
    args=("$guarded_url" --header "Authorization: Bearer $token")
  fi
  for era in legacy modern; do
    case "$era" in legacy) want=2025-11-25 ;; modern) want=2026-07-28 ;; esac
    name="inspector/$target/$era"
    out="$work/inspector/$target-$era"

    rc=0
    inspector "${args[@]}" --protocol-era "$era" --method initialize --format json \
      >"$out.init.json" 2>"$out.init.err" || rc=$?
    if [ "$rc" -eq 0 ] && detail="$(judge "$out.init.json" "
info = r['serverInfo']
assert info['name'] == 'seren-corpus-callosum', info
assert r['protocolVersion'] == '$want', r['protocolVersion']
print(f\"protocol={r['protocolVersion']} server={info['name']}/{info['version']}\")" 2>"$out.init.judge")"; then
      ok "$name/initialize" "$detail"
    else
      fail "$name/initialize" "exit $rc, or a wrong answer" "$out.init.err" "$out.init.judge"
    fi

    # --strict: the portability report goes to stderr, the findings into the JSON envelope
    # (schemaFindings, absent when there are none), and any error-severity finding exits 6.
    rc=0
    inspector "${args[@]}" --protocol-era "$era" --method tools/list --strict --format json \
      >"$out.list.json" 2>"$out.list.err" || rc=$?
    if [ "$rc" -eq 0 ] && detail="$(judge "$out.list.json" "
names = sorted(t['name'] for t in r['tools'])
assert names == ['add_store', 'list_stores', 'remove_store', 'search'], names
for t in r['tools']:
    assert t.get('inputSchema') and t.get('outputSchema') and t.get('annotations'), t['name']
found = [f for tool in out.get('schemaFindings', []) for f in tool['findings']]
errors = [f for f in found if f['severity'] == 'error']
assert not errors, errors
print(f'{len(names)} tools; strict: {len(errors)} errors, {len(found) - len(errors)} warnings')" 2>"$out.list.judge")"; then
      ok "$name/tools/list --strict" "$detail"
    else
      fail "$name/tools/list --strict" "exit $rc, or a wrong answer" "$out.list.err" "$out.list.judge"
    fi
    # The full report once, verbatim; later runs print theirs only when it differs.
    if [ -z "$first_report" ]; then
      first_report="$out.list.err"
      echo "      --strict report ($name), verbatim:"
      sed 's/^/      | /' "$out.list.err"
    elif ! cmp -s "$first_report" "$out.list.err"; then
      echo "      --strict report ($name) differs from the first:"
      sed 's/^/      | /' "$out.list.err"
    fi

    rc=0
    inspector "${args[@]}" --protocol-era "$era" --method tools/call --tool-name search \
      --tool-arg "query=that CUDA thing on the Xavier" n_results=5 --format json \
      >"$out.call.json" 2>"$out.call.err" || rc=$?
    if [ "$rc" -eq 0 ] && detail="$(judge "$out.call.json" "
assert not r.get('isError'), r
s = r['structuredContent']
stores = sorted({h['store'] for h in s['hits']})
assert stores == ['episodic', 'facts'], stores
assert len(s['hits']) == 5, len(s['hits'])
assert json.loads(r['content'][0]['text']) == s, 'the text block differs from structuredContent'
print(f\"hits={len(s['hits'])} from {','.join(stores)}\")" 2>"$out.call.judge")"; then
      ok "$name/tools/call search" "$detail"
    else
      fail "$name/tools/call search" "exit $rc, or a wrong answer" "$out.call.err" "$out.call.judge"
    fi
    # Whatever else the Inspector (or the stdio server) said, each line once.
    for step in init call; do
      if grep -q '[^[:space:]]' "$out.$step.err"; then
        sort -u "$out.$step.err" | sed "s/^/      stderr of $step: /"
      fi
    done
  done
done

rc=0
inspector "$guarded_url" --protocol-era legacy --method tools/list --stored-auth-only \
  >"$work/inspector/no-token.out" 2>"$work/inspector/no-token.err" || rc=$?
if [ "$rc" -ne 0 ] && grep -q 'auth_required\|nauthorized' "$work/inspector/no-token.err"; then
  ok "inspector/http+bearer/no-token" "refused (exit $rc: $(head -c 160 "$work/inspector/no-token.err"))"
else
  fail "inspector/http+bearer/no-token" "exit $rc without a token" "$work/inspector/no-token.err"
fi

# --- 3. the MCP Bundle manifest, checked by the official mcpb CLI ------------------------------
manifest="$root/mcp-manifests/mcpb/manifest.json"
mcpb() { timeout -k 5 60 "$here/node_modules/.bin/mcpb" "$@"; }
rc=0
mcpb validate "$manifest" >"$work/mcpb.out" 2>&1 || rc=$?
if [ "$rc" -eq 0 ] && grep -q 'validation passes' "$work/mcpb.out"; then
  ok "mcpb/validate" "$(tr '\n' ' ' <"$work/mcpb.out" | head -c 160)"
else
  fail "mcpb/validate" "exit $rc" "$work/mcpb.out"
fi
# The same check must refuse a broken copy (a wrong type where the schema wants a string), so a
# pass above means something.
"$venv/bin/python" - "$manifest" "$work/broken-manifest.json" <<'PY'
import json, sys
manifest = json.load(open(sys.argv[1]))
manifest["version"] = 7
json.dump(manifest, open(sys.argv[2], "w"))
PY
rc=0
mcpb validate "$work/broken-manifest.json" >"$work/mcpb-broken.out" 2>&1 || rc=$?
if [ "$rc" -ne 0 ] && grep -q 'version' "$work/mcpb-broken.out"; then
  ok "mcpb/validate-refuses" "exit $rc: $(grep -m1 'version' "$work/mcpb-broken.out" | head -c 120)"
else
  fail "mcpb/validate-refuses" "exit $rc on a manifest whose version is a number" "$work/mcpb-broken.out"
fi

# At exit the harness stops the servers and prints the closing line.
