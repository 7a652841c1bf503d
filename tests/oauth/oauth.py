"""The callosum as an OAuth 2.1 resource server (contract §6b), against a real authorization server:
oidc-provider (provider.mjs, pinned in package.json) on loopback.

run.sh makes the venv and node_modules and passes the binary, a scratch dir and the provider
script; everything else happens here: free loopback ports, signing keys made on the spot (nothing
private is committed), two providers (the issuer, and a second one as a foreign issuer), stub
stores that record the Authorization header they get, and two callosums: `oauth` (server.oauth
only) and `mixed` (server.oauth and a static server.bearer_token).

  a. mcp/*   the Python MCP SDK's own OAuth client (mcp.client.auth.OAuthClientProvider): from the
             401 to the protected-resource metadata, the issuer's metadata, dynamic registration,
             PKCE and the resource parameter, a login and consent the test drives by following the
             redirects, then initialize, list_tools and a search that answers hits.
  b. rest/*  tokens from the provider (client_credentials) and tokens minted here with the
             provider's real private key or a foreign one, each defect alone: aud, exp, nbf, iss,
             key, kid, alg none, an edited payload, HS256 with the RSA public key as secret; scopes
             (403 insufficient_scope over REST, a tool error over MCP); junk Authorization headers;
             the metadata documents; key rotation; the JWKS refetch limit; the static token; no
             passthrough of client tokens to stores.

Each case prints `ok  <name>  <detail>` or `FAIL  <name>  <expected vs got>`; the last line is
`oauth: N passed, M failed`. Exits 1 when anything failed; every process it started is stopped on
the way out (also on SIGTERM / SIGINT).

Usage: oauth.py --bin SCC_BINARY --work DIR --provider provider.mjs [--node node] [-k SUBSTRING]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import anyio
import httpx2
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp_types.version import LATEST_MODERN_VERSION

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
from harness import CheckFailed, NotReady, check, describe, flatten, free_port, stop, wait_http, wait_line  # noqa: E402

READ, WRITE = "callosum:read", "callosum:write"
VIEW_SCOPE = "callosum:view:facts"
STATIC_TOKEN = "static-" + secrets.token_hex(12)  # the `mixed` callosum's server.bearer_token
STORE_TOKEN = "store-" + secrets.token_hex(12)  # the outbound token the callosum sends the `facts` stub
CC_SECRET = "cc-secret"  # provider.mjs's static client_credentials clients
QUERY = "that CUDA thing on the Xavier"
STARTUP_TIMEOUT = 30.0
REQUEST_TIMEOUT = 15.0
CASE_TIMEOUT = 90.0
ROTATION_WAIT = 45.0  # the callosum may refetch an unknown kid's JWKS once per 30 s
FLOOD = 50

processes: list[subprocess.Popen] = []


# --- fixtures ------------------------------------------------------------------------------------


def stop_all() -> None:
    for process in reversed(processes):
        stop(process)


def jwk_of(key, alg: str, kid: str) -> dict:
    algorithm = jwt.algorithms.RSAAlgorithm if alg == "RS256" else jwt.algorithms.ECAlgorithm
    jwk = json.loads(algorithm.to_jwk(key))
    jwk.pop("key_ops", None)
    jwk.update(kid=kid, alg=alg, use="sig")
    return jwk


class KeySet:
    """One RSA (RS256) and one P-256 (ES256) private key, written as a JWKS file for provider.mjs."""

    def __init__(self, path: Path, label: str):
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.rsa_kid = f"{label}-rsa-{secrets.token_hex(4)}"
        self.ec_kid = f"{label}-ec-{secrets.token_hex(4)}"
        self.path = path
        path.write_text(json.dumps({"keys": [jwk_of(self.rsa, "RS256", self.rsa_kid),
                                             jwk_of(self.ec, "ES256", self.ec_kid)]}))
        path.chmod(0o600)


class Provider:
    """provider.mjs on a port, with a key set; restartable on the same port with another one."""

    def __init__(self, args, work: Path, name: str, keys: KeySet):
        self.args, self.work, self.name, self.keys = args, work, name, keys
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.starts = 0

    def start(self, keys: KeySet | None = None) -> None:
        if keys is not None:
            self.keys = keys
        self.starts += 1
        log = self.work / f"{self.name}.{self.starts}.log"
        self.process = subprocess.Popen(
            [self.args.node, self.args.provider, "--port", str(self.port), "--jwks", str(self.keys.path)],
            stdin=subprocess.DEVNULL, stdout=log.open("w"), stderr=subprocess.STDOUT)
        processes.append(self.process)
        wait_line(f"provider {self.name}", log, "listening http://", self.process, STARTUP_TIMEOUT)

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
            processes.remove(self.process)
            self.process = None

    def jwks_fetches(self) -> int:
        return httpx2.get(f"{self.issuer}/__stats", timeout=REQUEST_TIMEOUT).json()["jwks_fetches"]

    def client_credentials(self, resource: str | None, scope: str, client: str = "cc-rs256") -> str:
        data = {"grant_type": "client_credentials", "client_id": client, "client_secret": CC_SECRET, "scope": scope}
        if resource is not None:
            data["resource"] = resource
        response = httpx2.post(f"{self.issuer}/token", data=data, timeout=REQUEST_TIMEOUT)
        check(response.status_code == 200, f"the provider's token endpoint answered {response.status_code}: {response.text}")
        return response.json()["access_token"]


class StubStore:
    """A SerenLoci-speaking store on loopback that answers one fact and keeps every request's
    Authorization header (None when there was none)."""

    def __init__(self, label: str):
        self.seen: list[str | None] = []
        body = json.dumps({"hits": [{"key": f"{label}-key", "value": "CUDA on the Xavier", "why": "w",
                                     "score": 0.9, "project": "p", "match_kind": "exact"}]}).encode()
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                seen.append(self.headers.get("authorization"))
                self.rfile.read(int(self.headers.get("content-length", 0)))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


class Callosum:
    def __init__(self, args, work: Path, name: str, issuer: str, stores: list[dict], static_token: str | None,
                 server_extra: dict | None = None):
        self.name = name
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.resource = f"{self.base}/mcp"
        self.metadata_url = f"{self.base}/.well-known/oauth-protected-resource/mcp"
        server: dict[str, Any] = {"oauth": {"issuer": issuer, "resource": self.resource}}
        if static_token:
            server["bearer_token"] = static_token
        server.update(server_extra or {})
        self.audit = work / f"{name}.audit.jsonl"
        server["audit_log"] = str(self.audit)
        config = work / f"{name}.yaml"
        # JSON is YAML: no quoting questions.
        config.write_text(json.dumps({"server": server, "federation": {"stores": stores}}, indent=2) + "\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEREN_SCC_")}
        env.update(SEREN_SCC_RUNTIME_STORES=str(work / f"{name}.overlay.json"), SEREN_SCC_LOG="info")
        self.log = work / f"{name}.log"
        self.process = subprocess.Popen(
            [args.bin, "serve", "-c", str(config), "--host", "127.0.0.1", "--port", str(self.port)],
            stdin=subprocess.DEVNULL, stdout=self.log.open("w"), stderr=subprocess.STDOUT, env=env, cwd=work)
        processes.append(self.process)
        wait_http(f"callosum {name}", f"{self.base}/health", self.process, STARTUP_TIMEOUT, self.log)


# --- tokens ----------------------------------------------------------------------------------------


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_json(value: Any) -> str:
    return b64url(json.dumps(value, separators=(",", ":")).encode())


def unverified(token: str) -> tuple[dict, dict]:
    header, payload = token.split(".")[:2]
    pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
    return (json.loads(base64.urlsafe_b64decode(pad(header))), json.loads(base64.urlsafe_b64decode(pad(payload))))


class Minter:
    """Tokens signed here: the claims a good read token from the issuer has, then one defect."""

    def __init__(self, issuer: str, resource: str):
        self.issuer, self.resource = issuer, resource

    def claims(self, **changes: Any) -> dict:
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": self.resource, "sub": "minted", "client_id": "minted",
                  "scope": READ, "iat": now, "exp": now + 600, "jti": uuid.uuid4().hex}
        for key, value in changes.items():
            if value is None:
                claims.pop(key, None)
            else:
                claims[key] = value
        return claims

    @staticmethod
    def sign(claims: dict, key, kid: str | None, alg: str = "RS256") -> str:
        headers = {"typ": "at+jwt"}
        if kid is not None:
            headers["kid"] = kid
        return jwt.encode(claims, key, algorithm=alg, headers=headers)


def reference_accepts(token: str, keys: "KeySet", issuer: str, resource: str) -> tuple[bool, str]:
    """The harness's own reading of §6b with PyJWT, so that a case cannot pass (or fail) on a token
    the harness got wrong: a 'good' token must pass it and a hostile one must not."""
    try:
        header = jwt.get_unverified_header(token)
        public = {keys.rsa_kid: keys.rsa.public_key(), keys.ec_kid: keys.ec.public_key()}
        key = public.get(header.get("kid"))
        if key is None:
            return False, f"unknown kid {header.get('kid')!r}"
        jwt.decode(token, key, algorithms=["RS256", "ES256"], audience=resource, issuer=issuer, leeway=60,
                   options={"require": ["exp", "iss", "aud"], "strict_aud": False})
        claims = unverified(token)[1]
        if not isinstance(claims.get("aud"), (str, list)) or not claims.get("aud"):
            return False, "no aud"
        return True, "valid"
    except Exception as e:  # noqa: BLE001 - any refusal is a verdict
        return False, f"{type(e).__name__}: {e}"


# --- HTTP helpers ----------------------------------------------------------------------------------


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def rest(method: str, url: str, headers: dict | None = None, body: Any = None) -> httpx2.Response:
    kwargs: dict[str, Any] = {"headers": dict(headers or {}), "timeout": REQUEST_TIMEOUT}
    if body is not None:
        kwargs["content"] = json.dumps(body).encode()
        kwargs["headers"]["content-type"] = "application/json"
    return httpx2.request(method, url, **kwargs)


def search(callosum: Callosum, headers: dict | None) -> httpx2.Response:
    return rest("POST", f"{callosum.base}/search", headers, {"query": QUERY})


def raw_request(port: int, method: str, path: str, header_lines: list[bytes], body: bytes = b"") -> tuple[int, dict, bytes]:
    """One HTTP/1.1 request written byte for byte (headers httpx would refuse to send), the
    status, headers (lower-case names; repeated ones joined with ', ') and body of the answer."""
    request = [f"{method} {path} HTTP/1.1".encode(), f"Host: 127.0.0.1:{port}".encode(), b"Connection: close"]
    if body:
        request += [b"Content-Type: application/json", f"Content-Length: {len(body)}".encode()]
    request += header_lines
    with socket.create_connection(("127.0.0.1", port), timeout=REQUEST_TIMEOUT) as s:
        s.sendall(b"\r\n".join(request) + b"\r\n\r\n" + body)
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    data = b"".join(chunks)
    head, _, rest_ = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    check(lines and lines[0].startswith("HTTP/1."), f"not an HTTP answer: {data[:200]!r}")
    status = int(lines[0].split()[1])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return status, headers, rest_


def www_auth_params(value: str | None) -> dict[str, str]:
    """The auth-params of a `Bearer` challenge: {'error': 'invalid_token', ...} (quoted or token form)."""
    check(value, "no WWW-Authenticate header")
    scheme, _, rest_ = value.strip().partition(" ")
    check(scheme.lower() == "bearer", f"WWW-Authenticate scheme is {scheme!r}, not Bearer: {value!r}")
    params, i = {}, 0
    while i < len(rest_):
        while i < len(rest_) and rest_[i] in " ,":
            i += 1
        eq = rest_.find("=", i)
        if eq < 0:
            break
        name = rest_[i:eq].strip().lower()
        i = eq + 1
        if i < len(rest_) and rest_[i] == '"':
            i += 1
            out = []
            while i < len(rest_) and rest_[i] != '"':
                if rest_[i] == "\\" and i + 1 < len(rest_):
                    i += 1
                out.append(rest_[i])
                i += 1
            i += 1
            params[name] = "".join(out)
        else:
            end = rest_.find(",", i)
            end = len(rest_) if end < 0 else end
            params[name] = rest_[i:end].strip()
            i = end
    return params


def show(response: httpx2.Response) -> str:
    return (f"HTTP {response.status_code}, WWW-Authenticate {response.headers.get('www-authenticate')!r}, "
            f"body {response.text[:200]!r}")


def expect_ok(response: httpx2.Response, what: str) -> str:
    check(response.status_code == 200, f"{what}: expected 200, got {show(response)}")
    return f"200 ({what})"


def expect_invalid(callosum: Callosum, response: httpx2.Response, what: str) -> str:
    """401 with a Bearer challenge naming the metadata, and error="invalid_token" (a token was sent)."""
    check(response.status_code == 401, f"{what}: expected 401 invalid_token, got {show(response)}")
    params = www_auth_params(response.headers.get("www-authenticate"))
    check(params.get("error") == "invalid_token", f"{what}: 401 without error=\"invalid_token\": {show(response)}")
    check(params.get("resource_metadata") == callosum.metadata_url,
          f"{what}: resource_metadata is {params.get('resource_metadata')!r}, expected {callosum.metadata_url!r}")
    return f"401 invalid_token ({what})"


def expect_scope(response: httpx2.Response, scope: str, what: str) -> str:
    check(response.status_code == 403, f"{what}: expected 403 insufficient_scope, got {show(response)}")
    params = www_auth_params(response.headers.get("www-authenticate"))
    check(params.get("error") == "insufficient_scope" and params.get("scope") == scope,
          f"{what}: expected error=\"insufficient_scope\", scope=\"{scope}\"; got {show(response)}")
    return f"403 insufficient_scope scope={scope} ({what})"


# --- the MCP side ------------------------------------------------------------------------------------


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Browser:
    """The user's browser, as far as the authorization step needs one: follows the authorization URL's
    redirects (login and consent complete with no UI) and stops at the redirect_uri, which nothing
    serves, reading the code there."""

    def __init__(self, redirect_uri: str):
        self.redirect_uri = redirect_uri
        self.authorization_urls: list[str] = []
        self.hops: list[str] = []
        self.result: AuthorizationCodeResult | None = None

    async def redirect_handler(self, url: str) -> None:
        self.authorization_urls.append(url)
        async with httpx2.AsyncClient(timeout=REQUEST_TIMEOUT, follow_redirects=False) as browser:
            for _ in range(12):
                if url.startswith(self.redirect_uri):
                    break
                response = await browser.get(url)
                check(response.status_code in (302, 303), f"the authorization step stopped at {url}: {show(response)}")
                url = urllib.parse.urljoin(url, response.headers["location"])
                path = urllib.parse.urlsplit(url).path
                self.hops.append(path.rsplit("/", 1)[0] + "/<uid>" if path.startswith(("/interaction/", "/auth/")) else path)
            else:
                raise CheckFailed(f"no redirect to {self.redirect_uri} after 12 hops: {self.hops}")
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        check("code" in query, f"the redirect_uri was reached without a code: {url}")
        self.result = AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0],
                                              iss=query.get("iss", [None])[0])

    async def callback_handler(self) -> AuthorizationCodeResult:
        check(self.result is not None, "the callback came before the redirect")
        result, self.result = self.result, None
        return result


def tool_error_text(result: Any) -> str:
    return " ".join(getattr(b, "text", "") for b in result.content)


async def mcp_session(url: str, http: httpx2.AsyncClient, mode: str, body) -> Any:
    async with Client(streamable_http_client(url, http_client=http), mode=mode,
                      read_timeout_seconds=REQUEST_TIMEOUT) as client:
        return await body(client)


# --- the cases -------------------------------------------------------------------------------------


class Harness:
    def __init__(self, args):
        self.args = args
        self.work = Path(args.work)
        self.passed = 0
        self.failed = 0

    def case(self, name: str, fn: Callable[[], Any]) -> None:
        if self.args.k and self.args.k not in name:
            return
        started = time.monotonic()
        try:
            detail = fn()
        except CheckFailed as e:
            self.fail(name, str(e))
        except BaseException as e:  # noqa: BLE001 - a harness or SDK error fails the case, not the run
            # A fixture that is not ready ends the run, as at the start (main says why).
            if isinstance(e, (KeyboardInterrupt, SystemExit, NotReady)):
                raise
            leaves = flatten(e)
            if all(isinstance(x, CheckFailed) for x in leaves):
                self.fail(name, "; ".join(str(x) for x in leaves))
            else:
                self.fail(name, "error: " + describe(e))
                if self.args.verbose:
                    traceback.print_exception(e)
        else:
            self.passed += 1
            print(f"ok  {name}  {detail or ''}  [{time.monotonic() - started:.1f}s]", flush=True)

    def fail(self, name: str, detail: str) -> None:
        self.failed += 1
        print(f"FAIL  {name}  {detail}", flush=True)

    def acase(self, name: str, fn) -> None:
        """An async case, with a deadline."""

        def run():
            async def bounded():
                with anyio.fail_after(CASE_TIMEOUT):
                    return await fn()

            return anyio.run(bounded)

        self.case(name, run)

    # --- fixtures

    def setup(self) -> None:
        self.keys1 = KeySet(self.work / "keys-1.json", "k1")
        self.keys2 = KeySet(self.work / "keys-2.json", "k2")  # the rotation's
        self.foreign = KeySet(self.work / "keys-foreign.json", "foreign")  # the second issuer's, and hostile tokens'
        self.provider = Provider(self.args, self.work, "provider", self.keys1)
        self.other = Provider(self.args, self.work, "other-issuer", self.foreign)
        self.provider.start()
        self.other.start()
        self.facts = StubStore("facts")
        self.plain = StubStore("plain")
        stores = [{"name": "facts", "type": "seren_loci", "url": self.facts.url, "token": STORE_TOKEN},
                  {"name": "plain", "type": "seren_loci", "url": self.plain.url}]
        self.cal = Callosum(self.args, self.work, "oauth", self.provider.issuer, stores, None)
        self.mixed = Callosum(self.args, self.work, "mixed", self.provider.issuer, stores, STATIC_TOKEN)
        self.mint = Minter(self.provider.issuer, self.cal.resource)
        # A callosum for a team (contract §6c): the scope callosum:view:facts holds a token to the
        # facts store; a token without it sees both.
        views = {"views": [{"name": "facts-only", "stores": ["facts"], "write": True}],
                 "views_by_scope": {VIEW_SCOPE: "facts-only"}}
        self.viewed = Callosum(self.args, self.work, "viewed", self.provider.issuer, stores, None, views)
        print(f"oauth: issuer {self.provider.issuer} (other {self.other.issuer}); callosum oauth={self.cal.base} "
              f"mixed={self.mixed.base}; stores facts={self.facts.url} plain={self.plain.url}", flush=True)

    def cc(self, scope: str = READ, resource: str | None = None, client: str = "cc-rs256") -> str:
        return self.provider.client_credentials(self.cal.resource if resource is None else resource, scope, client)

    def run(self) -> None:
        self.setup()
        self.tokens_seen: set[str] = set()

        # The authorization server itself, so that a provider problem is not taken for the callosum's.
        self.case("provider/self-check", self.provider_self_check)

        # a. the MCP SDK's own OAuth client, first, so nothing before it has warmed the callosum's keys
        self.acase("mcp/sdk-oauth-flow", self.mcp_sdk_flow)
        self.acase("mcp/sdk-token-reused", self.mcp_sdk_reuse)

        # b. REST
        self.case("rest/metadata-path-inserted", lambda: self.metadata(f"{self.cal.base}/.well-known/oauth-protected-resource/mcp"))
        self.case("rest/metadata-root", lambda: self.metadata(f"{self.cal.base}/.well-known/oauth-protected-resource"))
        self.case("rest/no-token", self.no_token)
        self.case("rest/no-token-mcp", self.no_token_mcp)
        self.case("rest/good-read-token-rs256", lambda: self.good(self.cc(READ), "client_credentials RS256"))
        self.case("rest/good-read-token-es256", lambda: self.good(self.cc(READ, client="cc-es256"), "client_credentials ES256"))
        self.case("rest/read-token-reads", self.read_routes)
        self.case("rest/minted-control", self.minted_control)
        self.case("rest/minted-es256-control", lambda: self.good(
            self.mint.sign(self.mint.claims(), self.keys1.ec, self.keys1.ec_kid, "ES256"), "minted ES256, real key"))
        self.case("rest/scp-array", lambda: self.good(
            self.mint.sign(self.mint.claims(scope=None, scp=[READ]), self.keys1.rsa, self.keys1.rsa_kid), "scp: [read]"))
        self.case("rest/aud-array", lambda: self.good(
            self.mint.sign(self.mint.claims(aud=["http://127.0.0.1:9/other", self.cal.resource]), self.keys1.rsa,
                           self.keys1.rsa_kid), "aud: [other, resource]"))
        self.case("rest/wrong-aud", self.wrong_aud)
        self.case("rest/aud-near-misses", self.aud_near_misses)
        self.case("rest/expired", lambda: self.invalid(self.real(exp=int(time.time()) - 120), "exp 120 s ago"))
        self.case("rest/exp-within-leeway", lambda: self.good(self.real(exp=int(time.time()) - 20), "exp 20 s ago"))
        self.case("rest/nbf-future", lambda: self.invalid(self.real(nbf=int(time.time()) + 300), "nbf in 300 s"))
        self.case("rest/nbf-within-leeway", lambda: self.good(self.real(nbf=int(time.time()) + 20), "nbf in 20 s"))
        self.case("rest/no-exp", lambda: self.invalid(self.real(exp=None), "no exp claim"))
        self.case("rest/other-issuer", self.other_issuer)
        self.case("rest/iss-mismatch-real-key", self.iss_mismatch)
        self.case("rest/foreign-key-same-kid", lambda: self.invalid(
            self.mint.sign(self.mint.claims(), self.foreign.rsa, self.keys1.rsa_kid), "the issuer's kid, a foreign RSA key"))
        self.case("rest/foreign-ec-key-same-kid", lambda: self.invalid(
            self.mint.sign(self.mint.claims(), self.foreign.ec, self.keys1.ec_kid, "ES256"), "the issuer's EC kid, a foreign key"))
        self.case("rest/unknown-kid", lambda: self.invalid(
            self.mint.sign(self.mint.claims(), self.foreign.rsa, "kid-" + secrets.token_hex(6)), "an unknown kid"))
        self.case("rest/no-kid", lambda: self.invalid(
            self.mint.sign(self.mint.claims(), self.foreign.rsa, None), "no kid, a foreign key"))
        self.case("rest/alg-none", self.alg_none)
        self.case("rest/payload-edited", self.payload_edited)
        self.case("rest/hs256-public-key", self.hs256_confusion)
        self.case("rest/alg-header-swapped", self.alg_swapped)
        self.case("rest/read-token-cannot-write", self.read_cannot_write)
        self.case("rest/write-token-cannot-read", self.write_cannot_read)
        self.case("rest/write-token-writes", self.write_token_writes)
        self.acase("mcp/read-token-add-store", self.mcp_read_token_add_store)
        self.acase("mcp/write-token-search", self.mcp_write_token_search)
        self.case("rest/garbage-authorization", self.garbage)
        self.case("rest/static-token-full-rights", self.static_token)
        self.case("rest/static-token-alongside-oauth", self.static_alongside)
        self.case("rest/jwks-refetch-limited", self.flood)
        self.case("rest/issuer-down", self.issuer_down)
        self.case("rest/key-rotation", self.rotation)
        self.case("rest/no-token-passthrough", self.no_passthrough)
        self.case("rest/view-scope-sees-its-stores", self.view_scope_rest)
        self.case("rest/no-view-scope-sees-all", self.no_view_scope)
        self.acase("mcp/view-scope-sees-its-stores", self.view_scope_mcp)

    def provider_self_check(self) -> str:
        issuer = self.provider.issuer
        for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
            doc = rest("GET", issuer + path).json()
            check(doc.get("issuer") == issuer and doc.get("jwks_uri") == f"{issuer}/jwks", f"{path}: {doc}")
            check(doc.get("registration_endpoint") and doc.get("code_challenge_methods_supported") == ["S256"], f"{path}: {doc}")
        keys = {k["kid"]: k for k in rest("GET", f"{issuer}/jwks").json()["keys"]}
        check(set(keys) == {self.keys1.rsa_kid, self.keys1.ec_kid} and all("d" not in k for k in keys.values()),
              f"the JWKS has {sorted(keys)}")
        out = []
        for client, alg, kid in (("cc-rs256", "RS256", self.keys1.rsa_kid), ("cc-es256", "ES256", self.keys1.ec_kid)):
            token = self.provider.client_credentials("http://127.0.0.1:9/mcp", READ, client)
            header, claims = unverified(token)
            check(header.get("alg") == alg and header.get("kid") == kid, f"{client}: header {header}")
            check(claims.get("aud") == "http://127.0.0.1:9/mcp" and claims.get("iss") == issuer and claims.get("scope") == READ,
                  f"{client}: claims {claims}")
            out.append(f"{alg} kid={kid}")
        return f"both discovery documents; client_credentials tokens {', '.join(out)} with aud, iss, scope as asked"

    # --- a.

    async def mcp_sdk_flow(self) -> str:
        redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
        self.browser = Browser(redirect_uri)
        self.storage = MemoryStorage()
        requests: list[str] = []
        self.sdk_requests = requests
        self.oauth = OAuthClientProvider(
            server_url=self.cal.resource,
            client_metadata=OAuthClientMetadata(client_name="seren oauth harness", redirect_uris=[redirect_uri],
                                                scope=f"{READ} {WRITE}"),
            storage=self.storage,
            redirect_handler=self.browser.redirect_handler,
            callback_handler=self.browser.callback_handler,
        )

        async def log_request(request: httpx2.Request) -> None:
            requests.append(f"{request.method} {request.url}")

        async with httpx2.AsyncClient(auth=self.oauth, timeout=httpx2.Timeout(REQUEST_TIMEOUT, read=60.0),
                                      event_hooks={"request": [log_request]}) as http:

            async def body(client: Client) -> str:
                info = client.server_info
                check(info is not None and info.name == "seren-corpus-callosum", f"serverInfo {info!r}")
                tools = sorted(t.name for t in (await client.list_tools()).tools)
                check(tools == ["add_store", "list_stores", "remove_store", "search"], f"tools {tools}")
                result = await client.call_tool("search", {"query": QUERY})
                check(not result.is_error, f"search is a tool error: {tool_error_text(result)}")
                hits = (result.structured_content or {}).get("hits") or []
                check(hits, f"search answered no hits: {result.structured_content!r}")
                return f"{len(hits)} hits from {sorted({h['store'] for h in hits})}"

            answer = await mcp_session(self.cal.resource, http, "legacy", body)

        # What the SDK did, step by step, from the requests it sent.
        def sent(prefix: str) -> bool:
            return any(r.startswith(prefix) for r in requests)

        issuer = self.provider.issuer
        check(sent(f"GET {self.cal.metadata_url}"), f"never fetched {self.cal.metadata_url}: {requests}")
        check(sent(f"GET {issuer}/.well-known/oauth-authorization-server") or sent(f"GET {issuer}/.well-known/openid-configuration"),
              f"never fetched the issuer's metadata: {requests}")
        check(sent(f"POST {issuer}/reg"), f"never registered: {requests}")
        check(sent(f"POST {issuer}/token"), f"never called the token endpoint: {requests}")
        check(len(self.browser.authorization_urls) == 1, f"{len(self.browser.authorization_urls)} authorizations")
        auth = urllib.parse.parse_qs(urllib.parse.urlsplit(self.browser.authorization_urls[0]).query)
        check(auth.get("resource") == [self.cal.resource], f"authorization resource {auth.get('resource')}")
        check(auth.get("code_challenge_method") == ["S256"] and auth.get("code_challenge"), f"no PKCE: {auth}")
        check(self.storage.client_info is not None, "no client registered")
        token = self.storage.tokens.access_token
        self.tokens_seen.add(token)
        header, claims = unverified(token)
        check(claims.get("aud") == self.cal.resource, f"the token's aud is {claims.get('aud')!r}")
        check(claims.get("iss") == issuer, f"the token's iss is {claims.get('iss')!r}")
        scopes = set(claims.get("scope", "").split())
        check({READ, WRITE} <= scopes, f"the token's scope is {claims.get('scope')!r}")
        return (f"{answer}; via 401 -> PRM -> AS metadata -> /reg (client {self.storage.client_info.client_id[:8]}...) -> "
                f"authorize (scope {auth.get('scope', [''])[0]!r}, resource, S256; hops {' '.join(self.browser.hops)}) "
                f"-> token {header['alg']} kid={header.get('kid')} aud={claims['aud']} scope={claims['scope']!r}")

    async def mcp_sdk_reuse(self) -> str:
        check(getattr(self, "oauth", None) is not None and self.storage.tokens, "the flow case got no token")
        before = len(self.browser.authorization_urls)
        async with httpx2.AsyncClient(auth=self.oauth, timeout=httpx2.Timeout(REQUEST_TIMEOUT, read=60.0)) as http:

            async def body(client: Client) -> str:
                result = await client.call_tool("list_stores", {})
                check(not result.is_error, f"list_stores is a tool error: {tool_error_text(result)}")
                return f"list_stores: {[s['name'] for s in result.structured_content['stores']]}"

            answer = await mcp_session(self.cal.resource, http, LATEST_MODERN_VERSION, body)
        check(len(self.browser.authorization_urls) == before, "the stored token was not reused: a new authorization ran")
        return f"{LATEST_MODERN_VERSION} with the stored token, no new authorization; {answer}"

    # --- b.

    def real(self, **changes: Any) -> str:
        return self.mint.sign(self.mint.claims(**changes), self.keys1.rsa, self.keys1.rsa_kid)

    def judge(self, token: str, valid: bool, what: str, keys: KeySet | None = None) -> None:
        self.tokens_seen.add(token)
        accepts, why = reference_accepts(token, keys or self.provider.keys, self.provider.issuer, self.cal.resource)
        check(accepts == valid, f"harness bug: {what}: the reference verifier says {why!r}, yet this case "
                                f"expects the token to be {'valid' if valid else 'refused'}")

    def good(self, token: str, what: str) -> str:
        self.judge(token, True, what)
        response = search(self.cal, bearer(token))
        detail = expect_ok(response, what)
        hits = response.json().get("hits") or []
        check(hits, f"{what}: 200 with no hits: {response.text[:300]}")
        return f"{detail}, {len(hits)} hits"

    def invalid(self, token: str, what: str) -> str:
        self.judge(token, False, what)
        return expect_invalid(self.cal, search(self.cal, bearer(token)), what)

    def metadata(self, url: str) -> str:
        response = rest("GET", url)
        check(response.status_code == 200, f"GET {url} with no token: expected 200, got {show(response)}")
        doc = response.json()
        check(doc.get("resource") == self.cal.resource, f"resource {doc.get('resource')!r}, expected {self.cal.resource!r}")
        check(json.dumps(self.cal.resource) in response.text, f"resource not byte-equal in {response.text!r}")
        check(doc.get("authorization_servers") == [self.provider.issuer], f"authorization_servers {doc.get('authorization_servers')!r}")
        check(set(doc.get("scopes_supported") or []) >= {READ, WRITE}, f"scopes_supported {doc.get('scopes_supported')!r}")
        check(doc.get("bearer_methods_supported") == ["header"], f"bearer_methods_supported {doc.get('bearer_methods_supported')!r}")
        check("json" in response.headers.get("content-type", ""), f"content-type {response.headers.get('content-type')!r}")
        return f"public, {response.text}"

    def no_token(self) -> str:
        details = []
        for method, path, body in (("POST", "/search", {"query": QUERY}), ("GET", "/stores", None),
                                   ("GET", "/knobs", None), ("POST", "/stores", {"name": "x", "type": "seren_loci",
                                                                                 "url": "http://127.0.0.1:9"})):
            response = rest(method, self.cal.base + path, None, body)
            check(response.status_code == 401, f"{method} {path} with no token: expected 401, got {show(response)}")
            params = www_auth_params(response.headers.get("www-authenticate"))
            check(params.get("resource_metadata") == self.cal.metadata_url,
                  f"{method} {path}: resource_metadata {params.get('resource_metadata')!r}, expected {self.cal.metadata_url!r}")
            check("error" not in params, f"{method} {path}: no token was sent, yet error={params.get('error')!r}")
            details.append(f"{method} {path}")
        for path in ("/", "/health"):
            response = rest("GET", self.cal.base + path)
            check(response.status_code == 200, f"GET {path} is public, got {show(response)}")
        return f"401 + resource_metadata on {', '.join(details)}; / and /health public"

    def no_token_mcp(self) -> str:
        response = rest("POST", self.cal.resource, {"Accept": "application/json, text/event-stream"},
                        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
        check(response.status_code == 401, f"POST /mcp with no token: expected 401, got {show(response)}")
        params = www_auth_params(response.headers.get("www-authenticate"))
        check(params.get("resource_metadata") == self.cal.metadata_url, f"resource_metadata {params.get('resource_metadata')!r}")
        return f"401, WWW-Authenticate: {response.headers['www-authenticate']}"

    def read_routes(self) -> str:
        token = self.cc(READ)
        out = []
        for method, path in (("GET", "/stores"), ("GET", "/knobs")):
            response = rest(method, self.cal.base + path, bearer(token))
            out.append(expect_ok(response, f"{method} {path}"))
        return ", ".join(out)

    def minted_control(self) -> str:
        return self.good(self.real(), "minted RS256 with the issuer's real key: the control for the defects below")

    def wrong_aud(self) -> str:
        token = self.cc(READ, resource="http://127.0.0.1:9/mcp")
        check(unverified(token)[1]["aud"] == "http://127.0.0.1:9/mcp", "the provider did not honour the resource")
        return self.invalid(token, "a real token for resource http://127.0.0.1:9/mcp")

    def aud_near_misses(self) -> str:
        out = []
        for aud in (self.cal.resource + "/", self.cal.base, self.cal.resource.upper(), [], None):
            out.append(self.invalid(self.real(aud=aud) if aud is not None else self.real(aud=None), f"aud={aud!r}"))
        return "; ".join(out)

    def other_issuer(self) -> str:
        token = self.other.client_credentials(self.cal.resource, READ)
        check(unverified(token)[1]["iss"] == self.other.issuer, "the other provider's token names another iss")
        return self.invalid(token, f"a real token from {self.other.issuer}")

    def iss_mismatch(self) -> str:
        out = [self.invalid(self.real(iss=self.other.issuer), "iss = the other issuer, the right key"),
               self.invalid(self.real(iss=self.provider.issuer + "/"), "iss with a trailing /"),
               self.invalid(self.real(iss=None), "no iss")]
        return "; ".join(out)

    def alg_none(self) -> str:
        out = []
        for alg in ("none", "None", "NONE"):
            header = {"alg": alg, "typ": "at+jwt", "kid": self.keys1.rsa_kid}
            token = f"{b64url_json(header)}.{b64url_json(self.mint.claims())}."
            out.append(self.invalid(token, f"alg {alg}, no signature"))
        return "; ".join(out)

    def payload_edited(self) -> str:
        good = self.cc(READ)
        header, payload, signature = good.split(".")
        claims = unverified(good)[1]
        claims["scope"] = f"{READ} {WRITE}"
        edited = f"{header}.{b64url_json(claims)}.{signature}"
        detail = self.invalid(edited, "a real read token whose scope was widened after signing")
        # And on a write route, so a 403 (scope read from the unverified payload) cannot pass for a 401.
        response = rest("POST", f"{self.cal.base}/stores", bearer(edited),
                        {"name": "edited", "type": "seren_loci", "url": "http://127.0.0.1:9"})
        return detail + "; " + expect_invalid(self.cal, response, "the same on POST /stores")

    def hs256_confusion(self) -> str:
        out = []
        public = self.keys1.rsa.public_key()
        secrets_ = {
            "PEM SPKI": public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
            "PEM PKCS1": public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.PKCS1),
            "DER SPKI": public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo),
            "JWK JSON": json.dumps(jwk_of(public, "RS256", self.keys1.rsa_kid)).encode(),
        }
        for name, secret in secrets_.items():
            for alg, digest in (("HS256", hashlib.sha256), ("HS512", hashlib.sha512)):
                signing_input = f"{b64url_json({'alg': alg, 'typ': 'at+jwt', 'kid': self.keys1.rsa_kid})}.{b64url_json(self.mint.claims())}"
                token = f"{signing_input}.{b64url(hmac.new(secret, signing_input.encode(), digest).digest())}"
                out.append(self.invalid(token, f"{alg} keyed with the RSA public key as {name}"))
        return f"{len(out)} variants, each 401 invalid_token"

    def alg_swapped(self) -> str:
        """An RS256 signature relabelled PS256 / RS512, and an ES256 token relabelled RS256."""
        out = []
        good = self.real()
        header, payload, signature = good.split(".")
        for alg in ("PS256", "RS512", "ES256"):
            h = unverified(good)[0]
            h["alg"] = alg
            out.append(self.invalid(f"{b64url_json(h)}.{payload}.{signature}", f"RS256 signature labelled {alg}"))
        return "; ".join(out)

    def read_cannot_write(self) -> str:
        token = self.cc(READ)
        self.tokens_seen.add(token)
        out = [
            expect_scope(rest("POST", f"{self.cal.base}/stores", bearer(token),
                              {"name": "ro", "type": "seren_loci", "url": "http://127.0.0.1:9"}), WRITE, "POST /stores"),
            expect_scope(rest("DELETE", f"{self.cal.base}/stores/plain", bearer(token)), WRITE, "DELETE /stores/plain"),
            expect_scope(rest("POST", f"{self.cal.base}/configure", bearer(token), {"k": 61}), WRITE, "POST /configure"),
        ]
        names = [s["name"] for s in rest("GET", f"{self.cal.base}/stores", bearer(token)).json()["stores"]]
        check(names == ["facts", "plain"], f"the roster changed all the same: {names}")
        return "; ".join(out)

    def write_cannot_read(self) -> str:
        token = self.cc(WRITE)
        self.tokens_seen.add(token)
        out = [expect_scope(search(self.cal, bearer(token)), READ, "POST /search"),
               expect_scope(rest("GET", f"{self.cal.base}/stores", bearer(token)), READ, "GET /stores")]
        return "; ".join(out)

    def write_token_writes(self) -> str:
        token = self.cc(f"{READ} {WRITE}")
        self.tokens_seen.add(token)
        added = rest("POST", f"{self.cal.base}/stores", bearer(token),
                     {"name": "added-by-oauth", "type": "seren_loci", "url": "http://127.0.0.1:9"})
        out = [expect_ok(added, "POST /stores")]
        out.append(expect_ok(rest("DELETE", f"{self.cal.base}/stores/added-by-oauth", bearer(token)), "DELETE /stores/added-by-oauth"))
        return "; ".join(out)

    async def mcp_with_token(self, token: str, body) -> Any:
        self.tokens_seen.add(token)
        async with httpx2.AsyncClient(headers=bearer(token), timeout=httpx2.Timeout(REQUEST_TIMEOUT, read=60.0)) as http:
            return await mcp_session(self.cal.resource, http, "legacy", body)

    async def mcp_read_token_add_store(self) -> str:
        async def body(client: Client) -> str:
            listed = await client.call_tool("list_stores", {})
            check(not listed.is_error, f"list_stores with a read token is a tool error: {tool_error_text(listed)}")
            result = await client.call_tool("add_store", {"name": "ro-mcp", "type": "seren_loci", "url": "http://127.0.0.1:9"})
            text = tool_error_text(result)
            check(result.is_error is True, f"add_store with a read-only token is not a tool error: {text!r}")
            check(WRITE in text, f"the tool error does not name {WRITE}: {text!r}")
            removed = await client.call_tool("remove_store", {"name": "plain"})
            check(removed.is_error is True and WRITE in tool_error_text(removed),
                  f"remove_store with a read-only token: {removed.is_error}, {tool_error_text(removed)!r}")
            return f"list_stores ok; add_store and remove_store: isError, {text!r}"

        return await self.mcp_with_token(self.cc(READ), body)

    async def mcp_write_token_search(self) -> str:
        async def body(client: Client) -> str:
            result = await client.call_tool("search", {"query": QUERY})
            text = tool_error_text(result)
            check(result.is_error is True, f"search with a write-only token is not a tool error: {text[:200]!r}")
            check(READ in text, f"the tool error does not name {READ}: {text!r}")
            return f"search: isError, {text!r}"

        return await self.mcp_with_token(self.cc(WRITE), body)

    def garbage(self) -> str:
        body = json.dumps({"query": QUERY}).encode()
        junk = secrets.token_urlsafe(7700)[:10240].encode()
        cases = {
            "no scheme": [b"Authorization: " + self.cc(READ).encode()],
            "Bearer alone": [b"Authorization: Bearer"],
            "Bearer and a space": [b"Authorization: Bearer "],
            "Basic": [b"Authorization: Basic " + base64.b64encode(b"user:" + STATIC_TOKEN.encode())],
            "10 KB of junk": [b"Authorization: Bearer " + junk],
            "non-UTF-8 bytes": [b"Authorization: Bearer \xff\xfe\x80abc.\xc3\x28.\xa0\xa1"],
            "three dots": [b"Authorization: Bearer ..."],
            "two dots": [b"Authorization: Bearer a.b.c"],
            "base64 junk parts": [b"Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.e30.AAAA"],
            "header not JSON": [b"Authorization: Bearer " + b64url(b"{not json").encode() + b"." + b64url(b"{}").encode() + b".x"],
        }
        out = []
        for name, lines in cases.items():
            status, headers, text = raw_request(self.cal.port, "POST", "/search", lines, body)
            check(status == 401, f"{name}: expected 401, got {status} {headers.get('www-authenticate')!r} {text[:200]!r}")
            params = www_auth_params(headers.get("www-authenticate"))
            check(params.get("resource_metadata") == self.cal.metadata_url, f"{name}: resource_metadata {params.get('resource_metadata')!r}")
            out.append(name)
        return f"401 for each of: {', '.join(out)}"

    def view_token(self, scope: str) -> str:
        token = self.provider.client_credentials(self.viewed.resource, scope)
        self.tokens_seen.add(token)
        return token

    def hides_plain(self, text: str, what: str) -> None:
        for secret in ('"plain"', self.plain.url, f":{self.plain.url.rsplit(':', 1)[1]}"):
            check(secret not in text, f"{what} shows {secret!r}: {text[:300]}")

    def view_scope_rest(self) -> str:
        """A real token granting the view's scope: the facts store only, on every reading route;
        the hidden store is no store at all to its writes; the write it may make is audited."""
        token = self.view_token(f"{READ} {WRITE} {VIEW_SCOPE}")
        check(VIEW_SCOPE in unverified(token)[1].get("scope", ""), "the provider did not grant the view's scope")
        answer = search(self.viewed, bearer(token))
        expect_ok(answer, "POST /search")
        self.hides_plain(answer.text, "the view's search")
        check(answer.json()["stores_searched"] == ["facts"], f"searched {answer.json()['stores_searched']}")
        for path in ("/stores", "/knobs", "/health/stores"):
            response = rest("GET", self.viewed.base + path, bearer(token))
            expect_ok(response, f"GET {path}")
            self.hides_plain(response.text, f"GET {path}")
        gone = rest("DELETE", f"{self.viewed.base}/stores/plain", bearer(token))
        check(gone.status_code == 404 and gone.json()["detail"] == "no store named 'plain'",
              f"removing the hidden store: {show(gone)}")
        outside = rest("POST", f"{self.viewed.base}/stores", bearer(token), {"name": "elsewhere", "type": "seren_loci", "url": "http://127.0.0.1:9"})
        check(outside.status_code == 403 and "facts" in outside.json()["detail"], f"adding outside the view: {show(outside)}")
        metrics = rest("GET", f"{self.viewed.base}/metrics", bearer(token))
        check(metrics.status_code == 403, f"GET /metrics with a view: {show(metrics)}")
        trail = [json.loads(line) for line in self.viewed.audit.read_text().splitlines()]
        actors = {line["actor"] for line in trail}
        check(all(a.startswith("oauth") for a in actors), f"audit actors {actors}")
        check(not any(t in self.viewed.audit.read_text() for t in self.tokens_seen), "a token in the audit trail")
        return f"stores_searched=facts; /stores /knobs /health/stores hide plain; DELETE plain 404; add outside 403; audit actors {sorted(actors)}"

    def no_view_scope(self) -> str:
        token = self.view_token(READ)
        answer = search(self.viewed, bearer(token))
        expect_ok(answer, "POST /search")
        searched = answer.json()["stores_searched"]
        check(searched == ["facts", "plain"], f"a token without a view scope searched {searched}")
        return f"stores_searched={','.join(searched)}"

    async def view_scope_mcp(self) -> str:
        token = self.view_token(f"{READ} {VIEW_SCOPE}")

        async def body(client: Client) -> str:
            listed = await client.call_tool("list_stores", {})
            text = json.dumps(listed.structured_content)
            check(not listed.is_error, f"list_stores: {tool_error_text(listed)}")
            self.hides_plain(text, "list_stores")
            check(listed.structured_content.get("view", {}).get("name") == "facts-only", f"list_stores view: {text[:300]}")
            tools = await client.list_tools()
            words = json.dumps([t.model_dump(mode="json") for t in tools.tools])
            self.hides_plain(words, "tools/list")
            result = await client.call_tool("search", {"query": QUERY})
            self.hides_plain(json.dumps(result.structured_content), "search")
            return f"list_stores view=facts-only, tools/list and search hide plain"

        async with httpx2.AsyncClient(headers=bearer(token), timeout=httpx2.Timeout(REQUEST_TIMEOUT, read=60.0)) as http:
            return await mcp_session(self.viewed.resource, http, "legacy", body)

    def static_token(self) -> str:
        head = bearer(STATIC_TOKEN)
        out = [expect_ok(search(self.mixed, head), "POST /search")]
        added = rest("POST", f"{self.mixed.base}/stores", head, {"name": "by-static", "type": "seren_loci", "url": "http://127.0.0.1:9"})
        out.append(expect_ok(added, "POST /stores"))
        out.append(expect_ok(rest("DELETE", f"{self.mixed.base}/stores/by-static", head), "DELETE /stores/by-static"))
        out.append(expect_ok(rest("POST", f"{self.mixed.base}/configure", head, {"k": 60}), "POST /configure"))
        wrong = rest("POST", f"{self.mixed.base}/search", bearer(STATIC_TOKEN + "x"), {"query": QUERY})
        out.append(expect_invalid(self.mixed, wrong, "the static token plus one character"))
        # On the oauth-only callosum the same string is just an invalid token.
        out.append(expect_invalid(self.cal, search(self.cal, head), "the static token where none is configured"))
        return "; ".join(out)

    def static_alongside(self) -> str:
        """The mixed callosum takes issuer tokens too, with scopes enforced."""
        read = self.provider.client_credentials(self.mixed.resource, READ)
        self.tokens_seen.add(read)
        out = [expect_ok(search(self.mixed, bearer(read)), "an issuer read token on the mixed callosum"),
               expect_scope(rest("POST", f"{self.mixed.base}/stores", bearer(read),
                                 {"name": "x", "type": "seren_loci", "url": "http://127.0.0.1:9"}), WRITE, "POST /stores")]
        own = rest("POST", f"{self.mixed.base}/search", bearer(self.cc(READ)), {"query": QUERY})
        out.append(expect_invalid(self.mixed, own, "a token for the other callosum's resource"))
        return "; ".join(out)

    def flood(self) -> str:
        before = self.provider.jwks_fetches()
        statuses: dict[int, int] = {}
        started = time.monotonic()
        for _ in range(FLOOD):
            token = self.mint.sign(self.mint.claims(), self.foreign.rsa, "kid-" + secrets.token_hex(8))
            response = search(self.cal, bearer(token))
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        elapsed = time.monotonic() - started
        after = self.provider.jwks_fetches()
        check(statuses == {401: FLOOD}, f"{FLOOD} tokens with unknown kids: expected {FLOOD} x 401, got {statuses}")
        check(after - before <= 3, f"{FLOOD} unknown kids made {after - before} JWKS fetches (expected at most 3)")
        # The known key still works right after the flood.
        self.good(self.real(), "the real key after the flood")
        cooling = " (all inside the 30 s since an earlier refetch)" if after == before else ""
        return (f"{FLOOD} x 401 in {elapsed:.1f}s; JWKS fetches {before} -> {after} (+{after - before}){cooling}; "
                "the real key still works")

    def issuer_down(self) -> str:
        self.provider.stop()
        try:
            out = [self.good(self.real(), "a known key while the issuer is down")]
            token = self.mint.sign(self.mint.claims(), self.keys2.rsa, self.keys2.rsa_kid)
            response = search(self.cal, bearer(token))
            out.append(expect_invalid(self.cal, response, "an unknown kid while the issuer is down"))
            check(self.cal.process.poll() is None, "the callosum exited")
            return "; ".join(out)
        finally:
            self.down_since = time.monotonic()

    def rotation(self) -> str:
        """The provider comes back on the same port with the second key set (new kids, new keys)."""
        if self.provider.process is not None:
            self.provider.stop()
        self.provider.start(self.keys2)
        started = time.monotonic()
        attempts = 0
        token = self.provider.client_credentials(self.cal.resource, READ)
        header = unverified(token)[0]
        check(header.get("kid") == self.keys2.rsa_kid, f"the restarted provider signed with kid {header.get('kid')!r}")
        self.tokens_seen.add(token)
        while True:
            attempts += 1
            response = search(self.cal, bearer(token))
            if response.status_code == 200:
                break
            check(response.status_code == 401, f"a new-key token: expected 200 (or 401 until the refetch), got {show(response)}")
            check(time.monotonic() - started < ROTATION_WAIT,
                  f"a token signed by the rotated key still refused after {ROTATION_WAIT:.0f} s ({attempts} tries): {show(response)}")
            time.sleep(1.0)
        waited = time.monotonic() - started
        es = self.provider.client_credentials(self.cal.resource, READ, "cc-es256")
        self.tokens_seen.add(es)
        expect_ok(search(self.cal, bearer(es)), "the rotated EC key")
        fetches = self.provider.jwks_fetches()
        # Every refused try above was an unknown kid: the callosum refetched, but not once per try.
        check(1 <= fetches <= 2, f"the restarted provider served {fetches} JWKS fetches over {attempts} tries "
                                 f"with an unknown kid in {waited:.0f} s (expected 1 or 2: at most one per 30 s)")
        return (f"new kid {header['kid']} accepted after {waited:.1f}s ({attempts} tries), its EC key too; "
                f"the restarted provider served {fetches} JWKS fetch(es)")

    def no_passthrough(self) -> str:
        # A fresh search on each callosum (an issuer token, the static token), then every call the
        # stubs ever got is judged against every client token this run sent.
        token = self.provider.client_credentials(self.cal.resource, READ)
        self.tokens_seen.add(token)
        expect_ok(search(self.cal, bearer(token)), "search")
        expect_ok(search(self.mixed, bearer(STATIC_TOKEN)), "search with the static token")
        check(self.facts.seen and self.plain.seen, f"the stubs were not called: facts {len(self.facts.seen)}, plain {len(self.plain.seen)}")
        check(set(self.facts.seen) == {f"Bearer {STORE_TOKEN}"},
              f"facts (token configured) got {sorted(set(map(str, self.facts.seen)))[:3]}, expected only 'Bearer <its store token>'")
        check(set(self.plain.seen) == {None},
              f"plain (no token configured) got {sorted(set(map(str, self.plain.seen)))[:3]}, expected no Authorization header")
        for seen in self.facts.seen + self.plain.seen:
            check(not any(t in (seen or "") for t in self.tokens_seen | {STATIC_TOKEN}), "a client token reached a store")
        return (f"facts got only its own store token ({len(self.facts.seen)} calls), plain no header "
                f"({len(self.plain.seen)} calls); none of {len(self.tokens_seen)} client tokens reached a store")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--provider", required=True)
    parser.add_argument("--node", default="node")
    parser.add_argument("-k", default="", help="run only the cases whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    harness = Harness(args)
    started = time.monotonic()
    try:
        harness.run()
    except NotReady as e:
        raise SystemExit(f"oauth: {e}") from None
    finally:
        stop_all()
    print(f"oauth: the cases took {time.monotonic() - started:.0f} s", flush=True)
    print(f"oauth: {harness.passed} passed, {harness.failed} failed", flush=True)
    return 1 if harness.failed else 0


if __name__ == "__main__":
    sys.exit(main())
