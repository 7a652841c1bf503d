"""A tree of two callosums as one trace, read by an OTLP/HTTP receiver that decodes every export
with the OpenTelemetry project's own protobuf classes (opentelemetry-proto, pinned).

run.sh makes the venv and passes the binary and a scratch dir; everything else happens here: the
receiver (`POST /v1/traces`, protobuf, on a loopback port), a stub SerenLoci store that records
the headers it gets, callosum B (`telemetry:` in its file: `otlp_endpoint`, `service_name`)
fanning the store, and callosum A (no `telemetry:` block: OTEL_EXPORTER_OTLP_ENDPOINT,
OTEL_SERVICE_NAME and OTEL_TRACES_SAMPLER_ARG in its environment) fanning B as a `seren_callosum`.
One search goes to A with a `traceparent` and a `tracestate`; both callosums are then stopped with
SIGTERM, which sends what they still queue; then the cases judge what arrived:

  wire         every export a POST of application/x-protobuf that decodes as an
               ExportTraceServiceRequest
  one-trace    four spans (a `search` and a `store.call` at each level), all in the caller's trace
  parents      A's search under the caller's span, A's call under A's search, B's search under A's
               call, B's call under B's search
  spans        kinds (server, client), the attributes (`store.name`, `store.type`, `outcome`,
               `hits`, `callosum.depth`), `service.name` from the variable (A) and the file (B)
  store        the store got `traceparent` naming B's call span, in the trace, and the `tracestate`
  no-query     the query's text is in no byte of any export

Each case prints `ok  <name>  <detail>` or `FAIL  <name>  <why>`; the last line is
`traces: N passed, M failed`. Exits 1 when anything failed; every process it started is stopped on
the way out (also on SIGTERM / SIGINT).

Usage: receiver.py --bin SCC_BINARY --work DIR [-v]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
from harness import NotReady, Processes, check, run_cases  # noqa: E402

TRACE = os.urandom(16).hex()
PARENT = os.urandom(8).hex()
QUERY = "quokka-" + os.urandom(4).hex() + " on the xavier"
STATE = "vendor=abc,other=x1"


def serve(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


class Collector:
    """The OTLP/HTTP receiver: every export's bytes and content type, and its spans, flat."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bodies: list[bytes] = []
        self.content_types: list[str] = []
        self.undecoded: list[str] = []
        self.spans: list[dict] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                collector.take(self.path, self.headers.get("content-type", ""), body)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args) -> None:
                pass

        self.server, self.url = serve(Handler)

    def take(self, path: str, content_type: str, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        with self.lock:
            self.bodies.append(body)
            self.content_types.append(content_type)
            try:
                if path != "/v1/traces":
                    raise ValueError(f"posted to {path}")
                request.ParseFromString(body)
            except Exception as e:  # noqa: BLE001 - judged by the `wire` case
                self.undecoded.append(f"{type(e).__name__}: {e}")
                return
            for resource_spans in request.resource_spans:
                service = self.attributes(resource_spans.resource.attributes).get("service.name")
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        self.spans.append({
                            "service": service,
                            "name": span.name,
                            "kind": span.kind,
                            "trace": span.trace_id.hex(),
                            "id": span.span_id.hex(),
                            "parent": span.parent_span_id.hex(),
                            "attributes": self.attributes(span.attributes),
                            "status": span.status.code,
                        })

    @staticmethod
    def attributes(pairs) -> dict:
        out = {}
        for pair in pairs:
            value = pair.value
            out[pair.key] = getattr(value, value.WhichOneof("value")) if value.WhichOneof("value") else None
        return out


class Store:
    """A SerenLoci store on loopback that answers one fact and records each request's headers."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        store = self
        body = json.dumps({"hits": [{"id": "l1", "project": "p", "key": "xavier.jetpack", "value": "5.1.2",
                                     "why": "L4T R35", "score": 0.9, "match_kind": "lexical",
                                     "source": "user", "raw_distance": None}]}).encode()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                store.headers.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server, self.url = serve(Handler)


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work = Path(args.work)
        # Nothing from outside configures a callosum here: no SEREN_SCC_*, no OTEL_*.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SEREN_SCC_", "OTEL_"))}
        env["SEREN_SCC_LOG"] = "info"
        self.procs = Processes(self.work, env)
        self.collector = Collector()
        self.store = Store()
        self.answer: dict = {}

    def callosum(self, name: str, yaml: str, env: dict[str, str] | None = None) -> str:
        config = self.work / f"{name}.yaml"
        config.write_text(yaml)
        self.procs.start(name, [self.args.bin, "serve", "-c", str(config), "--port", "0"], env)
        addr = self.procs.wait_for_line(name, r"listening on http://(\S+)").group(1)
        return f"http://{addr}"

    def start(self) -> None:
        b = self.callosum("b", (
            f"telemetry:\n  otlp_endpoint: {self.collector.url}\n  service_name: callosum-b\n"
            f"federation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: {self.store.url}\n"))
        a = self.callosum("a", (
            f"federation:\n  stores:\n    - name: b\n      type: seren_callosum\n      url: {b}\n"),
            {"OTEL_EXPORTER_OTLP_ENDPOINT": self.collector.url, "OTEL_SERVICE_NAME": "callosum-a",
             "OTEL_TRACES_SAMPLER_ARG": "1.0"})
        request = urllib.request.Request(
            a + "/search", data=json.dumps({"query": QUERY}).encode(),
            headers={"content-type": "application/json", "traceparent": f"00-{TRACE}-{PARENT}-01",
                     "tracestate": STATE})
        with urllib.request.urlopen(request, timeout=10) as response:
            self.answer = json.load(response)
        # SIGTERM: each drains and sends the spans it still queues before it exits.
        self.procs.stop("a")
        self.procs.stop("b")

    def span(self, service: str, name: str) -> dict:
        found = [s for s in self.collector.spans if s["service"] == service and s["name"] == name]
        check(len(found) == 1, f"expected one {name} span from {service}, got {len(found)}: {self.collector.spans}")
        return found[0]

    # --- the cases ----------------------------------------------------------------------------

    def wire(self, _) -> str:
        check(self.answer.get("hits") and self.answer["hits"][0]["id"] == "l1", f"the search's answer: {self.answer}")
        check(self.collector.bodies, "no export arrived")
        check(not self.collector.undecoded, f"exports that did not decode: {self.collector.undecoded}")
        types = set(self.collector.content_types)
        check(types == {"application/x-protobuf"}, f"content types {types}")
        return f"{len(self.collector.bodies)} export(s), {sum(map(len, self.collector.bodies))} bytes, all protobuf"

    def one_trace(self, _) -> str:
        spans = self.collector.spans
        check(len(spans) == 4, f"expected 4 spans, got {len(spans)}: {spans}")
        traces = {s["trace"] for s in spans}
        check(traces == {TRACE}, f"trace ids {traces}, expected only the caller's {TRACE}")
        return f"4 spans from {sorted({s['service'] for s in spans})}, all in trace {TRACE}"

    def parents(self, _) -> str:
        a_search, a_call = self.span("callosum-a", "search"), self.span("callosum-a", "store.call")
        b_search, b_call = self.span("callosum-b", "search"), self.span("callosum-b", "store.call")
        for child, parent, what in [(a_search, {"id": PARENT}, "the caller's span"), (a_call, a_search, "A's search"),
                                    (b_search, a_call, "A's call to B"), (b_call, b_search, "B's search")]:
            check(child["parent"] == parent["id"],
                  f"{child['service']} {child['name']}: parent {child['parent']}, expected {what} {parent['id']}")
        return "caller -> A search -> A store.call -> B search -> B store.call"

    def spans(self, _) -> str:
        server, client = Span.SpanKind.SPAN_KIND_SERVER, Span.SpanKind.SPAN_KIND_CLIENT
        for service, depth in [("callosum-a", 0), ("callosum-b", 1)]:
            search = self.span(service, "search")
            check(search["kind"] == server, f"{service} search kind {search['kind']}")
            check(search["attributes"].get("callosum.depth") == depth, f"{service} search {search['attributes']}")
            check(search["attributes"].get("hits") == 1, f"{service} search {search['attributes']}")
        for service, store, kind in [("callosum-a", "b", "seren_callosum"), ("callosum-b", "facts", "seren_loci")]:
            call = self.span(service, "store.call")
            check(call["kind"] == client, f"{service} store.call kind {call['kind']}")
            expected = {"store.name": store, "store.type": kind, "outcome": "ok", "hits": 1}
            got = {k: call["attributes"].get(k) for k in expected}
            check(got == expected, f"{service} store.call attributes {call['attributes']}, expected {expected}")
            check(call["status"] == 0, f"{service} store.call status {call['status']}")
        return "search: server, store.call: client; names, types, outcomes, hits and depths as fanned"

    def store_headers(self, _) -> str:
        check(len(self.store.headers) == 1, f"the store was called {len(self.store.headers)} times")
        headers = self.store.headers[0]
        b_call = self.span("callosum-b", "store.call")
        expected = f"00-{TRACE}-{b_call['id']}-01"
        check(headers.get("traceparent") == expected, f"traceparent {headers.get('traceparent')}, expected {expected}")
        check(headers.get("tracestate") == STATE, f"tracestate {headers.get('tracestate')}, expected {STATE}")
        return f"traceparent {expected}, tracestate passed down two levels"

    def no_query(self, _) -> str:
        words = [QUERY, QUERY.split()[0]]
        for body in self.collector.bodies:
            for word in words:
                check(word.encode() not in body, f"{word!r} is in an export")
        return f"neither {words[0]!r} nor its first word in {len(self.collector.bodies)} export(s)"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    run = Run(args)
    try:
        run.start()
    except NotReady as e:
        raise SystemExit(f"traces: {e}") from None
    finally:
        run.procs.stop_all()
    cases = [("wire", run.wire), ("one-trace", run.one_trace), ("parents", run.parents), ("spans", run.spans),
             ("store", run.store_headers), ("no-query", run.no_query)]
    passed, failed = run_cases(cases, None, args.verbose)
    print(f"traces: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
