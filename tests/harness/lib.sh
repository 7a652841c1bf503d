# shellcheck shell=bash
# The preamble every suite's run.sh shares, written once (tests/harness/harness.py is the Python
# side). A run.sh sources it as its first command:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"
#
# and is then in strict mode (set -euo pipefail), in the repository's root, with the caller's
# SEREN_SCC_* variables unset (nothing from outside configures a server a suite starts), with
#
#   suite    the suite's folder name (oauth, mcp-clients, ...): the prefix of every line said here
#   here     the suite's folder; root: the repository; target: ${CARGO_TARGET_DIR:-target}, taken
#            from the root when relative (all three absolute)
#   PYTHON   the Python that makes the venvs (default python3)
#
# and these functions, each described where it is defined:
#
#   say, die         a line prefixed with the suite's name; die exits with a code
#   need             tools on PATH
#   scc_bin          SCC_BIN, the binary under test (default: the debug build), checked
#   venv             a venv under target/ holding exactly the pins of requirement files
#   npm_ci           `npm ci` in a folder whose node_modules is not from its lock
#   scratch          $work, a temp dir kept only when the run failed
#   background       a process in the background, stopped at exit
#   tally            passed/failed counters and the closing line `SUITE: N passed, M failed`
#   at_exit          a function of the suite's own, run at exit
#
# At exit, whatever ends the run (an error under set -e, INT, TERM): the at_exit functions run, the
# background processes are stopped, the tally turns counted failures into exit status 1, the
# scratch dir goes (exit status 0) or stays, and the closing line comes last. Builds nothing.

set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
suite="$(basename "$here")"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in
  /*) ;;
  *) target="$root/$target" ;;
esac
PYTHON="${PYTHON:-python3}"
cd "$root"
while read -r var; do unset "$var"; done < <(compgen -e | grep '^SEREN_SCC_' || true)

# say TEXT... : one line on stdout, `SUITE: TEXT`.
say() { echo "$suite: $*"; }

# die CODE TEXT... : one line on stderr, `SUITE: TEXT`, then exit CODE (2: something this run
# needs is missing).
die() {
  local code="$1"
  shift
  echo "$suite: $*" >&2
  exit "$code"
}

# need [--hint HINT] TOOL... : each TOOL is a command on PATH or an executable path, else exit 2
# naming it (and HINT, how to get it).
need() {
  local hint="" tool
  if [ "${1:-}" = --hint ]; then
    hint=" ($2)"
    shift 2
  fi
  for tool in "$@"; do
    command -v "$tool" >/dev/null || die 2 "$tool is needed$hint"
  done
}

# scc_bin : SCC_BIN (exported), the binary under test: $SCC_BIN, default the debug build
# $target/debug/seren-corpus-callosum, taken from the root when relative; exit 2 when it is not an
# executable. Nothing here builds it: `cargo build` (or `cargo test`) does.
scc_bin() {
  SCC_BIN="${SCC_BIN:-$target/debug/seren-corpus-callosum}"
  case "$SCC_BIN" in
    /*) ;;
    *) SCC_BIN="$root/$SCC_BIN" ;;
  esac
  [ -x "$SCC_BIN" ] || die 2 "no executable at $SCC_BIN; build it first (cargo build) or set SCC_BIN"
  export SCC_BIN
}

# venv [--python PY] [--no-deps] DIR REQUIREMENTS... : DIR, a venv under $target holding the pins of
# the REQUIREMENTS files (pip install -r each). It is reused while its stamp (DIR/installed-NAME,
# NAME the first file's) holds the pins it was made from, and made anew, from nothing, when they
# changed or it has none: so nothing of older pins stays. Suites that share a venv name the same
# files. --python: the Python it is made with (default $PYTHON); --no-deps: the files pin every
# dependency themselves, and `pip check` then proves they fit together. The only step here, with
# npm_ci, that uses the network.
venv() {
  local python="$PYTHON" no_deps="" dir stamp file args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --python) python="$2"; shift 2 ;;
      --no-deps) no_deps=1; shift ;;
      *) break ;;
    esac
  done
  dir="$1"
  shift
  [ $# -gt 0 ] || die 2 "venv $dir: no requirements file"
  case "$dir" in
    "$target"/*) ;;
    *) die 2 "venv $dir: not under $target" ;;
  esac
  stamp="$dir/installed-$(basename "$1")"
  if [ -x "$dir/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$(cat "$@")" ]; then
    return 0
  fi
  for file in "$@"; do args+=(-r "$file"); done
  say "making $dir from ${*#"$root"/}"
  rm -rf "$dir"
  "$python" -m venv "$dir"
  "$dir/bin/python" -m pip install --disable-pip-version-check --no-input --quiet ${no_deps:+--no-deps} "${args[@]}"
  if [ -n "$no_deps" ]; then "$dir/bin/python" -m pip check --disable-pip-version-check; fi
  cat "$@" >"$stamp"
}

# npm_ci DIR : `npm ci` in DIR unless DIR/node_modules was installed from the package-lock.json DIR
# has now (its stamp, node_modules/.installed-package-lock.json, says so). --ignore-scripts: no
# package a suite pins needs an install script (the MCP Inspector's only one is a no-op outside its
# own source tree), and none may download anything, a browser least of all.
npm_ci() {
  local dir="$1" stamp="$1/node_modules/.installed-package-lock.json"
  if [ -d "$dir/node_modules" ] && cmp -s "$dir/package-lock.json" "$stamp"; then
    return 0
  fi
  say "npm ci in ${dir#"$root"/}"
  (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts)
  cp "$dir/package-lock.json" "$stamp"
}

# scratch : work, a fresh temp dir (scc-SUITE.XXXXXX under $TMPDIR). At exit it goes when the run
# passed, else it stays for its logs, named on stderr.
_scratch=""
scratch() {
  work="$(mktemp -d "${TMPDIR:-/tmp}/scc-$suite.XXXXXX")"
  _scratch=1
}

# background CMD... : runs CMD in the background (redirections given to `background` are CMD's)
# and appends its pid to `pids`. At exit each that still runs gets SIGTERM, then SIGKILL once
# _stop_timeout seconds have passed: time for a Python helper to stop its own children on SIGTERM.
pids=()
_stop_timeout=30
background() {
  "$@" &
  pids+=("$!")
}

# tally : passed=0 and failed=0, for the suite to count in; at exit, a failure is counted when the
# run ends non-zero with none counted (a fixture that did not start), the exit status is 1 when any
# failed, and the closing line `SUITE: N passed, M failed` is the last. fds 3 and 4 keep the
# script's own stdout and stderr for what is said at exit (the exit may come while a function's
# output is redirected to a file); start servers with 3>&- 4>&-.
_tally=""
tally() {
  passed=0
  failed=0
  _tally=1
  exec 3>&1 4>&2
}

# at_exit FUNCTION : the suite's FUNCTION runs at exit, before anything else there (in the order
# given), with $exit_status the run's exit status so far.
_at_exit=()
at_exit() { _at_exit+=("$1"); }

_exit() {
  exit_status=$?
  set +e
  local hook pid deadline
  if [ -n "$_tally" ]; then exec 1>&3 2>&4; fi
  for hook in "${_at_exit[@]}"; do "$hook"; done
  deadline=$((SECONDS + _stop_timeout))
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  if [ -n "$_tally" ]; then
    if [ "$exit_status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
    if [ "$failed" -ne 0 ]; then exit_status=1; fi
  fi
  if [ -n "$_scratch" ]; then
    if [ "$exit_status" -eq 0 ]; then rm -rf "$work"; else echo "$suite: logs kept in $work" >&2; fi
  fi
  if [ -n "$_tally" ]; then echo "$suite: $passed passed, $failed failed"; fi
  exit "$exit_status"
}
trap _exit EXIT
trap 'exit 130' INT TERM
