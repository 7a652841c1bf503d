#!/usr/bin/env bash
# The deployment files, checked by the tools that read them, each check paired with a broken copy
# that it must refuse (so a check that accepts everything fails here):
#
#   1. deploy/kubernetes/*.yaml against the Kubernetes OpenAPI schemas of KUBE_VERSIONS, offline
#      and strict (an unknown field is an error), by kubernetes-validate (PyPI, requirements.txt).
#      It only warns, and exits 0, on a kind or apiVersion it has no schema for; any line but a
#      pass fails here. Then manifests.py checks what no schema sees: kustomization.yaml lists
#      every file, and the names the Deployment uses (Secret key, ConfigMap key, PVC, selectors,
#      --config, the overlay path) resolve.
#   2. The ConfigMap's config, read by `seren-corpus-callosum check` with the Secret's token: no
#      warning (an unknown key), nothing skipped, no exit 78. Its example store is not reachable
#      from here, so `failed` for it (exit 2) is expected.
#   3. deploy/systemd/seren-corpus-callosum.service, with ExecStart pointed at $SCC_BIN:
#      `systemd-analyze verify` must print nothing about it (it exits 0 on an unknown directive or
#      a bad value and only prints them; lines about other units on this machine are shown, not
#      judged), and `systemd-analyze security --offline=yes` must rate its exposure at most
#      SECURITY_THRESHOLD (tenths; 2.0 is "OK"). Both read the file; neither needs systemd running.
#   4. The Dockerfile's build step is the same command as .ci/run's release build. The image itself
#      is not built: there is no image registry to pull the base images from.
#
# Builds nothing: the binary comes from $SCC_BIN (default ${CARGO_TARGET_DIR:-target}/debug/
# seren-corpus-callosum). Needs python3 with venv, and systemd-analyze (Debian's systemd package).
# Creates the venv ${CARGO_TARGET_DIR:-target}/deploy-venv from requirements.txt when it is missing
# or its pins changed (the only step that uses the network).
#
# Ends with one line `deploy: N passed, M failed`; exits non-zero if anything failed.
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"

# 1.30: the oldest release where lifecycle.preStop.sleep is on by default; 1.37: the newest the
# pinned kubernetes-validate bundles.
KUBE_VERSIONS=(1.30 1.37)
SECURITY_THRESHOLD=20

k8s_dir="$root/deploy/kubernetes"
unit_src="$root/deploy/systemd/seren-corpus-callosum.service"
dockerfile="$root/Dockerfile"
ci_run="$root/.ci/run"

scc_bin
need --hint "systemd-analyze: apt-get install systemd" "$PYTHON" systemd-analyze timeout
tally
scratch

# --- installs (the only step that uses the network) ---------------------------------------------
venv="$target/deploy-venv"
venv --no-deps "$venv" "$here/requirements.txt"
echo "deploy: kubernetes-validate $("$venv/bin/kubernetes-validate" --version)," \
  "Kubernetes schemas ${KUBE_VERSIONS[*]}; $(systemd-analyze --version | head -n 1)"

# --- expect and mutate ---------------------------------------------------------------------------
# expect pass|fail NAME CMD... : runs CMD, which must succeed (pass) or fail (fail). A pass shows
# what CMD printed; a refusal, as it must be, shows its last lines but passes; a wrong outcome
# shows it all.
n=0
expect() {
  local want="$1" name="$2" rc=0 log
  shift 2
  n=$((n + 1))
  log="$work/$n.log"
  "$@" >"$log" 2>&1 || rc=$?
  if { [ "$want" = pass ] && [ "$rc" -eq 0 ]; } || { [ "$want" = fail ] && [ "$rc" -ne 0 ]; }; then
    passed=$((passed + 1))
    if [ "$want" = pass ]; then
      echo "ok      $name"
      sed 's/^/    | /' "$log"
    else
      echo "ok      $name (refused, as it must be)"
      grep -v '^INFO ' "$log" | tail -n 4 | sed 's/^/    | /'
    fi
  else
    failed=$((failed + 1))
    if [ "$want" = pass ]; then echo "FAILED  $name (exit $rc)"; else echo "FAILED  $name: accepted, but must be refused"; fi
    sed 's/^/    | /' "$log"
  fi
}

# mutate SRC DST SED-SCRIPT : DST is SRC edited by the script, which must change it.
mutate() {
  sed -e "$3" "$1" >"$2"
  if cmp -s "$1" "$2"; then
    echo "deploy: the edit '$3' did not change $1; the negative check would prove nothing" >&2
    exit 1
  fi
}

# A copy of the Kubernetes directory, for a broken variant.
k8s_copy() {
  rm -rf "${work:?}/${1:?}"
  cp -R "$k8s_dir" "$work/$1"
  echo "$work/$1"
}

# --- 1. Kubernetes manifests ----------------------------------------------------------------------
k8s_validate() {
  local dir="$1" files=() args=() out rc=0 bad docs passes
  for f in "$dir"/*.yaml "$dir"/*.yml; do
    [ -e "$f" ] && [ "$(basename "$f")" != kustomization.yaml ] && files+=("$f")
  done
  [ ${#files[@]} -gt 0 ] || { echo "no manifests in $dir"; return 1; }
  for v in "${KUBE_VERSIONS[@]}"; do args+=(-k "$v"); done
  out="$("$venv/bin/kubernetes-validate" --strict "${args[@]}" "${files[@]}" 2>&1)" || rc=$?
  printf '%s\n' "$out" | sed "s#$dir/##g"
  [ "$rc" -eq 0 ] || return 1
  bad="$(grep -vE '^INFO .* passed for resource ' <<<"$out" || true)"
  [ -z "$bad" ] || { echo "not a pass (a WARN means no schema was found, so nothing was checked)"; return 1; }
  docs="$("$venv/bin/python" -c 'import sys, yaml
print(sum(1 for f in sys.argv[1:] for d in yaml.safe_load_all(open(f)) if d))' "${files[@]}")"
  passes="$(grep -c '^INFO' <<<"$out")"
  [ "$passes" -eq $((docs * ${#KUBE_VERSIONS[@]})) ] ||
    { echo "$passes passes for $docs documents x ${#KUBE_VERSIONS[@]} versions"; return 1; }
}
manifests() { "$venv/bin/python" "$here/manifests.py" check "$1"; }

expect pass "kubernetes-validate --strict ${KUBE_VERSIONS[*]/#/-k } deploy/kubernetes" k8s_validate "$k8s_dir"
d="$(k8s_copy k8s-unknown-field)"
mutate "$k8s_dir/deployment.yaml" "$d/deployment.yaml" 's/^      terminationGracePeriodSeconds:/      terminationGracePeriodSecond:/'
expect fail "kubernetes-validate: a misspelled Deployment field" k8s_validate "$d"
d="$(k8s_copy k8s-wrong-type)"
mutate "$k8s_dir/deployment.yaml" "$d/deployment.yaml" 's/^  replicas: 3$/  replicas: three/'
expect fail "kubernetes-validate: replicas: three" k8s_validate "$d"
d="$(k8s_copy k8s-unknown-api)"
mutate "$k8s_dir/pdb.yaml" "$d/pdb.yaml" 's#^apiVersion: policy/v1$#apiVersion: policy/v2#'
expect fail "kubernetes-validate: an apiVersion with no schema (the tool only warns)" k8s_validate "$d"

expect pass "manifests.py: kustomization.yaml and the Deployment's references" manifests "$k8s_dir"
d="$(k8s_copy k8s-secret-key)"
mutate "$k8s_dir/secret.yaml" "$d/secret.yaml" 's/^  bearer-token:/  token:/'
expect fail "manifests.py: the Secret lacks the key the Deployment reads" manifests "$d"
d="$(k8s_copy k8s-unlisted)"
cp "$k8s_dir/service.yaml" "$d/service-extra.yaml"
expect fail "manifests.py: a file kustomization.yaml does not list" manifests "$d"

# --- 2. the ConfigMap's config, read by the binary ------------------------------------------------
app_config() {
  local dir="$1" out="$work/config.$n" rc=0 text
  mkdir -p "$out"
  text="$("$venv/bin/python" "$here/manifests.py" extract "$dir" "$out" 2>&1)" || { printf '%s\n' "$text"; return 1; }
  text="$(cd "$out" && SEREN_SCC_BEARER_TOKEN="$(cat "$out/token")" \
    SEREN_SCC_RUNTIME_STORES="$out/runtime-stores.json" \
    timeout 60 "$SCC_BIN" check --config "$out/config.yaml" 2>&1 </dev/null)" || rc=$?
  printf '%s\n' "$text"
  case "$rc" in
    0 | 2) ;;  # 2: a store failed; the example store's host does not resolve here
    *) echo "exit $rc"; return 1 ;;
  esac
  grep -q '^config: .*(found)' <<<"$text" || { echo "the config file was not read"; return 1; }
  ! grep -qE '^(warning|skipped)' <<<"$text" || { echo "a warning or a skipped store"; return 1; }
}
expect pass "seren-corpus-callosum check: the ConfigMap's config with the Secret's token" app_config "$k8s_dir"
d="$(k8s_copy k8s-config-key)"
mutate "$k8s_dir/configmap.yaml" "$d/configmap.yaml" 's/^      port: 7423$/      prot: 7423/'
expect fail "seren-corpus-callosum check: a misspelled config key" app_config "$d"

# --- 3. the systemd unit --------------------------------------------------------------------------
mkdir -p "$work/systemd" "$work/systemd-typo" "$work/systemd-bare"
unit="$work/systemd/seren-corpus-callosum.service"
mutate "$unit_src" "$unit" "s|^ExecStart=/usr/local/bin/seren-corpus-callosum |ExecStart=$SCC_BIN |"

systemd_verify() {
  local unit="$1" out rc=0 ours
  out="$(systemd-analyze verify "$unit" 2>&1)" || rc=$?
  ours="$(grep -F "$(basename "$unit")" <<<"$out" || true)"
  if [ -n "$out" ]; then printf '%s\n' "$out"; else echo "(nothing printed)"; fi
  [ "$rc" -eq 0 ] || { echo "exit $rc"; return 1; }
  [ -z "$ours" ] || { echo "the lines above naming $(basename "$unit") are about the unit"; return 1; }
}
systemd_security() {
  local out rc=0
  out="$(systemd-analyze security --offline=yes --threshold="$SECURITY_THRESHOLD" "$1" 2>&1)" || rc=$?
  grep -E 'Overall exposure level|^Failed|rror' <<<"$out" || printf '%s\n' "$out" | tail -n 5
  [ "$rc" -eq 0 ]
}

expect pass "systemd-analyze verify deploy/systemd/seren-corpus-callosum.service" systemd_verify "$unit"
mutate "$unit" "$work/systemd-typo/seren-corpus-callosum.service" 's/^ProtectSystem=strict$/ProtectSytem=strict/'
expect fail "systemd-analyze verify: a misspelled directive" systemd_verify "$work/systemd-typo/seren-corpus-callosum.service"
expect pass "systemd-analyze security --offline=yes: exposure at most $((SECURITY_THRESHOLD / 10)).$((SECURITY_THRESHOLD % 10))" systemd_security "$unit"
# The unit without its sandbox: every line from the "--- Sandbox" comment to [Install].
mutate "$unit" "$work/systemd-bare/seren-corpus-callosum.service" '/^# --- Sandbox/,/^\[Install\]/{/^\[Install\]/!d;}'
expect fail "systemd-analyze security: the unit without its sandbox" systemd_security "$work/systemd-bare/seren-corpus-callosum.service"

# --- 4. the Dockerfile's build step ---------------------------------------------------------------
build_steps() {
  local dockerfile="$1" ci="$2" in_docker in_ci
  in_docker="$(grep -E '^[[:space:]]*RUN[[:space:]].*cargo[[:space:]]+build' "$dockerfile" || true)"
  in_ci="$(grep -E '^[[:space:]]*cargo[[:space:]]+build' "$ci" || true)"
  [ "$(grep -c . <<<"$in_docker")" -eq 1 ] || { echo "want one RUN ... cargo build in $dockerfile, found: $in_docker"; return 1; }
  [ "$(grep -c . <<<"$in_ci")" -eq 1 ] || { echo "want one cargo build line in $ci, found: $in_ci"; return 1; }
  in_docker="$(sed -E 's/^[[:space:]]*RUN[[:space:]]+//; s/[[:space:]]+$//' <<<"$in_docker")"
  in_ci="$(sed -E 's/^[[:space:]]+//; s/[[:space:]]+$//' <<<"$in_ci")"
  echo "Dockerfile: $in_docker"
  echo ".ci/run:    $in_ci"
  [ "$in_docker" = "$in_ci" ] || { echo "they differ"; return 1; }
}
expect pass "the Dockerfile builds with .ci/run's command" build_steps "$dockerfile" "$ci_run"
mutate "$dockerfile" "$work/Dockerfile.unlocked" 's/cargo build --release --locked/cargo build --release/'
expect fail "the build-step comparison: a Dockerfile without --locked" build_steps "$work/Dockerfile.unlocked" "$ci_run"
