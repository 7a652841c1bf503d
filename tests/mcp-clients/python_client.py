"""Independent MCP client check: the official Python `mcp` SDK (pinned in requirements.txt) against
seren-corpus-callosum over stdio and over streamable HTTP, in each of its connect modes.

run.sh starts the fixtures (two sample stores, an open HTTP callosum and one that needs a bearer
token) and passes them here; this script only connects as a client. For every transport x mode it
checks the four tools as a host sees them (schemas, annotations), runs search / list_stores /
add_store / remove_store end to end, and checks that bad arguments come back as a tool error. It
also checks that the token-guarded endpoint refuses a client without the right token, and that a
view's token sees its view's store and nothing of the other.

One line per case (`ok  stdio/legacy  protocol=2025-11-25 ...` or `FAIL  ...`); the counts go to
--results as JSON for run.sh. Exits 0 when every case passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import traceback
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
from jsonschema.validators import validator_for
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
from harness import HIT_KEYS, CheckFailed, check, describe, flatten  # noqa: E402

SERVER_NAME = "seren-corpus-callosum"
TOOLS = {"search", "list_stores", "add_store", "remove_store"}
SAMPLE_STORES = {"episodic", "facts"}
QUERY = "that CUDA thing on the Xavier"
# Nothing listens on the discard port: a store there fails at once with a refused connection.
DOWN_URL = "http://127.0.0.1:9"
# legacy = the initialize handshake; auto = probe server/discover, fall back to initialize;
# a pinned modern version = adopt it with no probe (the SDK then learns no serverInfo).
MODES = ("legacy", "auto", LATEST_MODERN_VERSION)
REQUEST_TIMEOUT = 20.0  # seconds, each MCP request
CASE_TIMEOUT = 90.0  # seconds, a whole case including connect and teardown


class WarningCollector(logging.Handler):
    """Keeps the SDK's warnings so they are shown under their case instead of mid-line."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")

    def take(self) -> list[str]:
        taken, self.messages = self.messages, []
        return taken


def text_json(result: Any, what: str) -> Any:
    """The JSON in a tool result's text block (the backward-compatible copy of the structured result)."""
    texts = [b.text for b in result.content if getattr(b, "type", None) == "text"]
    check(texts, f"{what}: no text block in {result.content!r}")
    try:
        return json.loads(texts[0])
    except json.JSONDecodeError as e:
        raise CheckFailed(f"{what}: the text block is not JSON ({e}): {texts[0][:200]!r}") from e


def error_text(result: Any) -> str:
    return " ".join(b.text for b in result.content if getattr(b, "type", None) == "text")


def check_schema(schema: Any, what: str) -> None:
    check(isinstance(schema, dict), f"{what} is not an object: {schema!r}")
    check(schema.get("type") == "object", f"{what} is not object-rooted: type={schema.get('type')!r}")
    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except Exception as e:  # jsonschema.SchemaError
        raise CheckFailed(f"{what} is not a valid JSON Schema ({cls.__name__}): {e}") from e


def structured(result: Any, what: str) -> dict[str, Any]:
    """A successful tool result's structured content, checked to equal its text block."""
    check(not result.is_error, f"{what} is a tool error: {error_text(result)!r}")
    content = result.structured_content
    check(isinstance(content, dict), f"{what}: structured content is not an object: {content!r}")
    check(text_json(result, what) == content, f"{what}: the text block differs from the structured content")
    return content


async def exercise(client: Client, case: str, mode: str) -> str:
    """Runs every check on a connected client; returns the details for the case's line."""
    version = client.protocol_version
    expected = LATEST_HANDSHAKE_VERSION if mode == "legacy" else LATEST_MODERN_VERSION
    check(version == expected, f"negotiated protocol {version!r}, expected {expected!r}")

    info = client.server_info
    if info is None and mode not in ("legacy", "auto"):
        # A pinned modern connection learns nothing at connect time; ask server/discover, whose
        # _meta carries the server's identity.
        raw = await client.session.send_discover(version)
        stamp = (raw.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo") or {}
        name, server_version, source = stamp.get("name"), stamp.get("version"), "discover"
    else:
        check(info is not None, "the server did not identify itself")
        name, server_version, source = info.name, info.version, "connect"
    check(name == SERVER_NAME, f"server name {name!r}, expected {SERVER_NAME!r}")
    check(server_version, "the server gave no version")

    listed = await client.list_tools()
    tools = {t.name: t for t in listed.tools}
    check(set(tools) == TOOLS and len(listed.tools) == len(TOOLS), f"tools {sorted(tools)}, expected {sorted(TOOLS)}")
    for tool in listed.tools:
        check_schema(tool.input_schema, f"{tool.name}.inputSchema")
        check_schema(tool.output_schema, f"{tool.name}.outputSchema")
        check(tool.description, f"{tool.name} has no description")
        check(tool.annotations is not None, f"{tool.name} has no annotations")
    for read_only in ("search", "list_stores"):
        check(tools[read_only].annotations.read_only_hint is True, f"{read_only} is not readOnlyHint")
    for writer in ("add_store", "remove_store"):
        check(tools[writer].annotations.read_only_hint is not True, f"{writer} claims readOnlyHint")
    check(tools["remove_store"].annotations.destructive_hint is True, "remove_store is not destructiveHint")
    check("query" in (tools["search"].input_schema.get("required") or []), "search does not require query")

    # The SDK itself validates each successful result against the tool's outputSchema.
    answer = structured(await client.call_tool("search", {"query": QUERY}), "search")
    check(answer.get("query") == QUERY, f"search echoed query {answer.get('query')!r}")
    hits = answer.get("hits") or []
    hit_stores = {h.get("store") for h in hits}
    check(SAMPLE_STORES <= hit_stores, f"search hits came from {sorted(hit_stores)}, expected both of {sorted(SAMPLE_STORES)}")
    check(SAMPLE_STORES <= set(answer.get("stores_searched") or []), f"stores_searched {answer.get('stores_searched')}")
    check(answer.get("failed") == [] and answer.get("skipped") == [], f"failed {answer.get('failed')} skipped {answer.get('skipped')}")
    for hit in hits:
        missing = set(HIT_KEYS) - set(hit)
        check(not missing, f"a hit lacks {sorted(missing)}: {hit}")
    ranks = [h["score"] for h in hits]
    check(ranks == sorted(ranks, reverse=True), "search hits are not ordered by score")

    limited = structured(await client.call_tool("search", {"query": QUERY, "n_results": 2}), "search n_results=2")
    check(len(limited.get("hits") or []) == 2, f"n_results=2 gave {len(limited.get('hits') or [])} hits")

    # An explained, aimed answer is valid against the same output schema (the SDK checks it).
    aimed = structured(
        await client.call_tool("search", {"query": QUERY, "n_results": 2, "stores": ["facts"], "explain": True}),
        "search stores=[facts] explain=true",
    )
    check({h.get("store") for h in aimed.get("hits") or []} == {"facts"}, f"stores=[facts] gave {aimed.get('hits')}")
    for hit in aimed.get("hits") or []:
        why = hit.get("explain") or {}
        expected = why.get("weight", 0) / (why.get("k", 0) + why.get("store_rank", 0))
        check(why.get("contribution") == hit.get("score") and abs(expected - hit["score"]) < 1e-12,
              f"explain does not agree with the score: {hit}")
    check(isinstance(aimed.get("explain_dropped"), list), f"no explain_dropped: {aimed}")
    unknown = await client.call_tool("search", {"query": QUERY, "stores": ["nope"]})
    check(unknown.is_error is True and "no store is named 'nope'" in error_text(unknown),
          f"stores=[nope] says {error_text(unknown)!r}")
    check("facts (seren_loci): sample facts about the Xavier" in (tools["search"].description or ""),
          "the search tool does not name the stores it can be aimed at")

    stores = structured(await client.call_tool("list_stores", {}), "list_stores")
    names = {s.get("name") for s in stores.get("stores") or []}
    check(SAMPLE_STORES <= names, f"list_stores shows {sorted(names)}")

    down = re.sub(r"[^A-Za-z0-9._-]", "-", f"down-{case}")[:64]
    added = await client.call_tool("add_store", {"name": down, "type": "seren_memory", "url": DOWN_URL})
    structured(added, "add_store")
    try:
        stores = structured(await client.call_tool("list_stores", {}), "list_stores after add_store")
        row = next((s for s in stores.get("stores") or [] if s.get("name") == down), None)
        check(row is not None, f"list_stores does not show the added store {down}")
        check(row.get("managed") is True, f"the added store is not managed: {row}")
        answer = structured(await client.call_tool("search", {"query": QUERY}), "search with a store down")
        failed = {f.get("name") for f in answer.get("failed") or []}
        check(down in failed, f"the closed-port store is not in failed: {answer.get('failed')}")
        check(SAMPLE_STORES <= {h.get("store") for h in answer.get("hits") or []}, "a store down cost the other stores' hits")
    finally:
        removed = await client.call_tool("remove_store", {"name": down})
    structured(removed, "remove_store")
    stores = structured(await client.call_tool("list_stores", {}), "list_stores after remove_store")
    check(down not in {s.get("name") for s in stores.get("stores") or []}, f"{down} is still listed after remove_store")

    dup = await client.call_tool("add_store", {"name": "episodic", "type": "seren_memory", "url": DOWN_URL})
    check(dup.is_error is True, "add_store with an existing name is not a tool error")
    check("already exists" in error_text(dup), f"add_store duplicate says {error_text(dup)!r}")

    bad = await client.call_tool("search", {})
    check(bad.is_error is True, "search {} is not a tool error")
    check("missing field `query`" in error_text(bad), f"search {{}} says {error_text(bad)!r}")

    return (
        f"protocol={version} server={name}/{server_version} (from {source}) tools={len(tools)} "
        f"hits={len(hits)} from {','.join(sorted(hit_stores))} down-store-failed=yes bad-args=tool-error"
    )


class Runner:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.passed = 0
        self.failed = 0
        self.cases: list[dict[str, Any]] = []
        self.warnings = WarningCollector()
        logging.getLogger().addHandler(self.warnings)
        logging.getLogger().setLevel(logging.WARNING)

    def record(self, case: str, ok: bool, detail: str, log: Path | None = None) -> None:
        print(f"{'ok' if ok else 'FAIL'}  {case}  {detail}", flush=True)
        for message in self.warnings.take():
            print(f"      sdk warning: {message}", flush=True)
        if not ok and log is not None and log.exists():
            tail = log.read_text(errors="replace").splitlines()[-15:]
            print(f"      server stderr ({log}), last lines:", flush=True)
            for line in tail:
                print(f"      | {line}", flush=True)
        self.passed += ok
        self.failed += not ok
        self.cases.append({"case": case, "ok": ok, "detail": detail})

    async def run_case(self, case: str, mode: str, connect, log: Path | None = None) -> None:
        try:
            with anyio.fail_after(CASE_TIMEOUT):
                async with AsyncExitStack() as stack:
                    client = await connect(stack)
                    detail = await exercise(client, case, mode)
        except CheckFailed as e:
            self.record(case, False, str(e), log)
        except TimeoutError:
            self.record(case, False, f"timed out after {CASE_TIMEOUT:.0f} s", log)
        except BaseException as e:  # noqa: BLE001 - an SDK or transport error fails the case, not the run
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            leaves = flatten(e)
            if all(isinstance(x, CheckFailed) for x in leaves):  # a check, raised inside a task group
                self.record(case, False, "; ".join(str(x) for x in leaves), log)
            else:
                self.record(case, False, f"error: {describe(e)}", log)
                if self.args.verbose:
                    traceback.print_exception(e)
        else:
            self.record(case, True, detail)

    def stdio(self, mode: str):
        case = f"stdio/{mode}"
        slug = case.replace("/", "-")
        log = self.args.workdir / f"{slug}.stderr.log"

        async def connect(stack: AsyncExitStack) -> Client:
            errlog = stack.enter_context(log.open("w"))
            params = StdioServerParameters(
                command=self.args.bin,
                args=["stdio", "-c", str(self.args.config)],
                # Merged over the SDK's small safe default environment (PATH, HOME, ...).
                env={
                    "SEREN_SCC_RUNTIME_STORES": str(self.args.workdir / f"{slug}.overlay.yaml"),
                    "SEREN_SCC_LOG": "info",
                },
                cwd=str(self.args.workdir),
            )
            client = Client(stdio_client(params, errlog=errlog), mode=mode, read_timeout_seconds=REQUEST_TIMEOUT)
            return await stack.enter_async_context(client)

        return self.run_case(case, mode, connect, log)

    def http_plain(self, mode: str):
        """The open endpoint through the SDK's own default HTTP client: Client(url)."""

        async def connect(stack: AsyncExitStack) -> Client:
            client = Client(self.args.open_url, mode=mode, read_timeout_seconds=REQUEST_TIMEOUT)
            return await stack.enter_async_context(client)

        return self.run_case(f"http/{mode}", mode, connect)

    def http_client(self, token: str | None, keepalive: bool = True) -> httpx2.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        # Without keep-alive every request gets a fresh connection: the refusal cases must not
        # depend on whether the server kept a connection open after its 401.
        extra: dict[str, Any] = {} if keepalive else {"limits": httpx2.Limits(max_keepalive_connections=0)}
        return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(10.0, read=60.0), **extra)

    def http_bearer(self, mode: str):
        """The token-guarded endpoint through an httpx2 client that sends the bearer token."""

        async def connect(stack: AsyncExitStack) -> Client:
            http = await stack.enter_async_context(self.http_client(self.args.token))
            transport = streamable_http_client(self.args.token_url, http_client=http)
            client = Client(transport, mode=mode, read_timeout_seconds=REQUEST_TIMEOUT)
            return await stack.enter_async_context(client)

        return self.run_case(f"http+bearer/{mode}", mode, connect)

    async def refused(self, mode: str, token: str | None, label: str) -> None:
        """Without the right token the guarded endpoint must refuse the client: the connect fails
        (legacy, auto), or the first request does (a pinned modern mode sends nothing to connect)."""
        case = f"http+bearer/{label}/{mode}"
        try:
            with anyio.fail_after(CASE_TIMEOUT):
                async with self.http_client(token, keepalive=False) as http:
                    raw = await http.post(
                        self.args.token_url,
                        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                        headers={"Accept": "application/json, text/event-stream"},
                    )
                    check(raw.status_code == 401, f"a raw POST with {label} got HTTP {raw.status_code}, expected 401")
                    stage = "connect"
                    try:
                        async with Client(
                            streamable_http_client(self.args.token_url, http_client=http),
                            mode=mode,
                            read_timeout_seconds=REQUEST_TIMEOUT,
                        ) as client:
                            stage = "tools/list"
                            await client.list_tools()
                    except (TimeoutError, CheckFailed):
                        raise
                    except BaseException as e:  # noqa: BLE001
                        if isinstance(e, (KeyboardInterrupt, SystemExit)):
                            raise
                        leaves = flatten(e)
                        check(any(isinstance(x, MCPError) for x in leaves), f"{stage} failed, but not with MCPError: {describe(e)}")
                        check(mode not in ("legacy", "auto") or stage == "connect", f"connect succeeded; {stage} failed")
                        self.record(case, True, f"refused at {stage} (HTTP 401 -> {describe(e)})")
                        return
                    raise CheckFailed(f"the client connected and listed tools with {label}")
        except CheckFailed as e:
            self.record(case, False, str(e))
        except TimeoutError:
            self.record(case, False, f"timed out after {CASE_TIMEOUT:.0f} s")
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            self.record(case, False, f"error: {describe(e)}")

    async def viewed(self, mode: str) -> None:
        """A view's token (contract §6c) on a callosum for a team: the SDK sees the view's store
        (facts) and nothing of the other (hidden-episodes) in any tool's words or answer, aiming at the
        hidden store reads as aiming at one that does not exist, and writes are refused."""

        async def connect(stack: AsyncExitStack) -> Client:
            http = await stack.enter_async_context(self.http_client(self.args.view_token))
            transport = streamable_http_client(self.args.view_url, http_client=http)
            client = Client(transport, mode=mode, read_timeout_seconds=REQUEST_TIMEOUT)
            return await stack.enter_async_context(client)

        async def exercise_view(client: Client) -> str:
            hidden = "hidden-episodes"
            listed = await client.list_tools()
            words = json.dumps([t.model_dump(mode="json") for t in listed.tools])
            check(hidden not in words, f"tools/list shows {hidden}")
            check("facts" in words, "the search tool does not name the view's store")
            stores = structured(await client.call_tool("list_stores", {}), "list_stores")
            check(stores.get("view", {}).get("name") == "research", f"list_stores view {stores.get('view')!r}")
            check(hidden not in json.dumps(stores), f"list_stores shows {hidden}")
            answer = structured(await client.call_tool("search", {"query": QUERY, "explain": True}), "search")
            check(hidden not in json.dumps(answer), f"search shows {hidden}")
            check(answer["stores_searched"] == ["facts"], f"searched {answer['stores_searched']}")
            check(answer["hits"], "the view's search found nothing")
            aimed = await client.call_tool("search", {"query": QUERY, "stores": [hidden]})
            nowhere = await client.call_tool("search", {"query": QUERY, "stores": ["nowhere"]})
            check(aimed.is_error and nowhere.is_error, "aiming at an unknown store was not a tool error")
            check(
                error_text(aimed).replace(hidden, "nowhere") == error_text(nowhere),
                f"the hidden store reads differently: {error_text(aimed)!r} vs {error_text(nowhere)!r}",
            )
            refused = await client.call_tool("add_store", {"name": "facts2", "type": "seren_loci", "url": DOWN_URL})
            check(refused.is_error and "forbidden" in error_text(refused), f"add_store: {error_text(refused)!r}")
            return f"view=research stores_searched=facts hits={len(answer['hits'])} hidden-store=absent writes=refused"

        case = f"http+view/{mode}"
        try:
            with anyio.fail_after(CASE_TIMEOUT):
                async with AsyncExitStack() as stack:
                    detail = await exercise_view(await connect(stack))
        except CheckFailed as e:
            self.record(case, False, str(e))
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            self.record(case, False, f"error: {describe(e)}")
        else:
            self.record(case, True, detail)

    async def run(self) -> None:
        for mode in MODES:
            await self.stdio(mode)
        for mode in MODES:
            await self.http_plain(mode)
        for mode in MODES:
            await self.http_bearer(mode)
        for mode in MODES:
            await self.refused(mode, None, "no-token")
        await self.refused("legacy", "not-" + self.args.token, "wrong-token")
        for mode in ("legacy", LATEST_MODERN_VERSION):
            await self.viewed(mode)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="the seren-corpus-callosum binary")
    parser.add_argument("--config", required=True, type=Path, help="a config whose stores answer (for stdio)")
    parser.add_argument("--workdir", required=True, type=Path, help="a scratch directory (logs, overlays)")
    parser.add_argument("--open-url", required=True, help="/mcp of a callosum with no token")
    parser.add_argument("--token-url", required=True, help="/mcp of a callosum that needs --token")
    parser.add_argument("--token", required=True)
    parser.add_argument("--view-url", required=True, help="/mcp of a callosum with a view (contract §6c)")
    parser.add_argument("--view-token", required=True, help="the view's token there")
    parser.add_argument("--results", type=Path, help="write {passed, failed, cases} here as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failed cases")
    args = parser.parse_args()

    import importlib.metadata as md

    print(f"python mcp SDK {md.version('mcp')} (mcp-types {md.version('mcp-types')}, httpx2 {md.version('httpx2')}) on Python {sys.version.split()[0]}", flush=True)
    runner = Runner(args)
    try:
        anyio.run(runner.run)
    finally:
        if args.results:
            args.results.write_text(json.dumps({"passed": runner.passed, "failed": runner.failed, "cases": runner.cases}, indent=1))
    print(f"python mcp SDK: {runner.passed} of {runner.passed + runner.failed} cases ok", flush=True)
    return 0 if runner.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
