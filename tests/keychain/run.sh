#!/usr/bin/env bash
# Keychain tokens against the Secret Service a Linux desktop runs (GNOME Keyring), with the entries
# written and read by Python's `keyring`, the library the Python SerenCorpusCallosum uses. It proves
# the callosum reads what Python wrote, and that Python reads what the callosum wrote.
#
# Builds nothing: the binary comes from $SCC_BIN (default target/debug/seren-corpus-callosum).
# Needs Debian's gnome-keyring and dbus (dbus-run-session), and python3 with venv; creates the venv
# target/keychain-venv from requirements.txt when it is missing or its pins changed. Runs inside a
# private D-Bus session with a throwaway HOME, so it never touches the user's own keyring.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
SCC_BIN="${SCC_BIN:-target/debug/seren-corpus-callosum}"
case "$SCC_BIN" in
  /*) ;;
  *) SCC_BIN="$root/$SCC_BIN" ;;
esac
PYTHON="${PYTHON:-python3}"

[ -x "$SCC_BIN" ] || { echo "keychain: no executable at $SCC_BIN; build it first" >&2; exit 2; }
for tool in "$PYTHON" dbus-run-session gnome-keyring-daemon; do
  command -v "$tool" >/dev/null || { echo "keychain: $tool is needed (apt-get install gnome-keyring dbus-daemon)" >&2; exit 2; }
done
while read -r var; do unset "$var"; done < <(compgen -e | grep '^SEREN_SCC_' || true)

venv="$root/target/keychain-venv"
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$here/requirements.txt" "$stamp"; then
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$stamp"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/scc-keychain.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export SCC_BIN WORK="$work" HOME="$work/home" KEYCHAIN_PYTHON="$venv/bin/python"
mkdir -p "$HOME/.local/share/keyrings"
# In the session: start GNOME Keyring with its login keyring unlocked by a throwaway password (a
# desktop does this at login), then run the checks against it.
exec dbus-run-session -- bash -c '
  set -euo pipefail
  eval "$(printf %s ci-keyring-password | gnome-keyring-daemon --unlock --components=secrets | sed "s/^/export /")"
  exec "$KEYCHAIN_PYTHON" "'"$here"'/secret_service.py"
'
