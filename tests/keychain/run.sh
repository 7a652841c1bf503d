#!/usr/bin/env bash
# Keychain tokens against the Secret Service a Linux desktop runs (GNOME Keyring), with the entries
# written and read by Python's `keyring`, the library the Python SerenCorpusCallosum uses. It proves
# the callosum reads what Python wrote, and that Python reads what the callosum wrote.
#
# Builds nothing: the binary comes from $SCC_BIN (default target/debug/seren-corpus-callosum).
# Needs Debian's gnome-keyring and dbus (dbus-run-session), and python3 with venv; creates the venv
# target/keychain-venv from requirements.txt when it is missing or its pins changed. Runs inside a
# private D-Bus session with a throwaway HOME, so it never touches the user's own keyring.
# shellcheck source-path=SCRIPTDIR source=../harness/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/lib.sh"

scc_bin
need --hint "apt-get install gnome-keyring dbus-daemon" "$PYTHON" dbus-run-session gnome-keyring-daemon

venv="$target/keychain-venv"
venv --no-deps "$venv" "$here/requirements.txt"

scratch
export WORK="$work" HOME="$work/home" KEYCHAIN_PYTHON="$venv/bin/python"
mkdir -p "$HOME/.local/share/keyrings"
# In the session: start GNOME Keyring with its login keyring unlocked by a throwaway password (a
# desktop does this at login), then run the checks against it. Not exec'd: the scratch dir goes at
# exit.
dbus-run-session -- bash -c '
  set -euo pipefail
  eval "$(printf %s ci-keyring-password | gnome-keyring-daemon --unlock --components=secrets | sed "s/^/export /")"
  exec "$KEYCHAIN_PYTHON" "'"$here"'/secret_service.py"
'
