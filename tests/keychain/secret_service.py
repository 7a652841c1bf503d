"""Keychain tokens through the Secret Service, with Python's `keyring` on the other side.

Run by run.sh inside a private D-Bus session where GNOME Keyring is unlocked. Each check prints
`ok   <what>` or `FAIL <what>: <why>`; the script exits 1 if any failed. Every server it starts
listens on 127.0.0.1 and is stopped at the end.
"""

import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import keyring
import keyring.backends.SecretService

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
from harness import stop  # noqa: E402

BIN = os.environ["SCC_BIN"]
WORK = os.environ["WORK"]
STARTUP_S = 30
failures = []


def check(what, ok, why=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": {why}"), flush=True)
    if not ok:
        failures.append(what)


class Store(http.server.BaseHTTPRequestHandler):
    """A SerenMemory-shaped store that records the Authorization header of every search."""

    seen = []

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        Store.seen.append(self.headers.get("authorization"))
        body = json.dumps({"hits": [{"id": "m1", "content": "from the store", "raw_distance": 0.1}]})
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


def request(base, method, path, token=None, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    if body is not None:
        req.add_header("content-type", "application/json")
    if token:
        req.add_header("authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def start(config):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEREN_SCC_")}
    process = subprocess.Popen(
        [BIN, "serve", "-c", config, "--port", "0"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + STARTUP_S
    seen = []
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        seen.append(line.rstrip())
        if "listening on http://" in line:
            url = line[line.index("http://"):].split()[0].rstrip("/")
            threading.Thread(target=lambda: process.stderr.read(), daemon=True).start()
            return process, url
    process.kill()
    raise SystemExit("the callosum did not start:\n" + "\n".join(seen))


def main():
    backend = keyring.get_keyring()
    check("Python's keyring uses the Secret Service", isinstance(backend, keyring.backends.SecretService.Keyring), repr(backend))
    # Written by Python, as a 5.3.0 user's setup script would.
    keyring.set_password("seren-test", "inbound", "py-inbound-token")
    keyring.set_password("seren-test", "memory", "py-store-token")

    store = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Store)
    threading.Thread(target=store.serve_forever, daemon=True).start()
    store_url = f"http://127.0.0.1:{store.server_address[1]}"
    config = os.path.join(WORK, "seren-corpus-callosum.yaml")
    with open(config, "w") as f:
        f.write(
            "server:\n  bearer_token_keyring: seren-test/inbound\n"
            "federation:\n  stores:\n"
            f"    - name: memory\n      type: seren_memory\n      url: {store_url}\n"
            "      bearer_token_keyring: seren-test/memory\n"
        )

    checked = subprocess.run([BIN, "check", "-c", config], capture_output=True, text=True, timeout=60)
    check("check names the keychain and its backend",
          "keychain entry 'seren-test/inbound' (Secret Service)" in checked.stdout, checked.stdout)
    check("check's probe reached the store with the token Python wrote",
          Store.seen == ["Bearer py-store-token"] and "ok       memory" in checked.stdout, (Store.seen, checked.stdout))
    Store.seen.clear()

    process, base = start(config)
    try:
        check("no token: 401", request(base, "GET", "/stores")[0] == 401)
        check("the token Python wrote opens the service", request(base, "GET", "/stores", "py-inbound-token")[0] == 200)
        status, answer = request(base, "POST", "/search", "py-inbound-token", {"query": "q"})
        check("the store answered", status == 200 and answer["stores_searched"] == ["memory"], answer)
        check("the store was called with the token Python wrote", Store.seen == ["Bearer py-store-token"], Store.seen)

        # A token given at run time goes to the keychain, where Python finds it.
        status, answer = request(base, "POST", "/stores", "py-inbound-token",
                                 {"name": "added", "type": "seren_memory", "url": store_url, "token": "rt-token-7"})
        check("POST /stores with a token", status == 200, answer)
        with open(os.path.join(WORK, "runtime-stores.json")) as f:
            overlay = f.read()
        entry = json.loads(overlay)[0]
        check("the overlay holds only the pointer",
              entry.get("token_keyring") == "seren-corpus-callosum/added" and "rt-token-7" not in overlay, overlay)
        check("Python reads the token the callosum wrote",
              keyring.get_password("seren-corpus-callosum", "added") == "rt-token-7")
        Store.seen.clear()
        request(base, "POST", "/search", "py-inbound-token", {"query": "q"})
        check("the added store is called with it", "Bearer rt-token-7" in Store.seen, Store.seen)
        status, _ = request(base, "DELETE", "/stores/added", "py-inbound-token")
        check("DELETE the store", status == 200)
        check("its keychain entry is gone", keyring.get_password("seren-corpus-callosum", "added") is None)
        check("the entries Python made are untouched",
              keyring.get_password("seren-test", "memory") == "py-store-token")
    finally:
        stop(process)
        store.shutdown()
        for user in ("inbound", "memory"):
            try:
                keyring.delete_password("seren-test", user)
            except keyring.errors.PasswordDeleteError:
                pass

    # The entry vanishes while configured: the next start refuses, naming it (fail closed).
    refused = subprocess.run([BIN, "serve", "-c", config, "--port", "0"], capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL)
    check("a missing inbound entry stops the start with 78",
          refused.returncode == 78 and "keychain entry 'seren-test/inbound' not found" in refused.stderr,
          f"{refused.returncode}: {refused.stderr}")

    print(f"keychain: {len(failures) == 0 and 'all passed' or str(len(failures)) + ' failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
