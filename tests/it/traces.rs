//! Traces (contract §6d) on the wire: callosums export to a collector on loopback (an OTLP/HTTP
//! receiver decoding the protobuf, `support::otlp`), and what arrives is read span by span: names,
//! kinds, attributes, parent links, one trace across a tree of callosums; the `traceparent` a
//! store receives (a header, an MCP `_meta` member); no query text anywhere in an export; searches
//! that go on, counted drops, when the collector is down; and the settings' errors.

use crate::support::mcp::{http_client, structured};
use crate::support::otlp::{CLIENT, INTERNAL, Received, Receiver, SERVER};
use crate::support::{
    Behaviour, Callosum, StubStore, closed_port_url, loci_hits, memory_hits, serve_loopback,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, Implementation, JsonObject, MetaObject,
    RequestMetaObject, ServerCapabilities, ServerConfig,
};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use seren_corpus_callosum::config::{Config, Env};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";
const QUERY: &str = "where did zanzibar-quokka live";

fn inbound() -> String {
    format!("00-{TRACE}-{PARENT}-01")
}

/// A config exporting to `collector` as `service`, with these store entries (YAML lines).
fn traced(collector: &str, service: &str, extra: &str, stores: &str) -> String {
    format!(
        "telemetry:\n  otlp_endpoint: {collector}\n  service_name: {service}\n{extra}\
         federation:\n  per_store_timeout_s: 2.0\n  stores:\n{stores}"
    )
}

fn store(name: &str, kind: &str, url: &str, extra: &str) -> String {
    let mut entry = format!("    - name: {name}\n      type: {kind}\n      url: {url}\n");
    for line in extra.lines().filter(|l| !l.trim().is_empty()) {
        entry.push_str(&format!("      {}\n", line.trim()));
    }
    entry
}

async fn search(callosum: &Callosum, traceparent: Option<&str>) -> Value {
    let mut request = (callosum.client)
        .post(format!("{}/search", callosum.url))
        .json(&json!({"query": QUERY, "n_results": 5}));
    if let Some(traceparent) = traceparent {
        request = request
            .header("traceparent", traceparent)
            .header("tracestate", "vendor=abc");
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

fn named<'a>(spans: &'a [Received], name: &str) -> Vec<&'a Received> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn call_to<'a>(spans: &'a [Received], store: &str) -> &'a Received {
    let calls: Vec<_> = (spans.iter())
        .filter(|s| {
            s.name == "store.call"
                && s.attributes.get("store.name").map(String::as_str) == Some(store)
        })
        .collect();
    assert_eq!(calls.len(), 1, "one call to {store}: {spans:#?}");
    calls[0]
}

/// The `traceparent` a stub store received, split: (trace id, parent id, flags).
fn parent_sent(store: &StubStore) -> (String, String, String) {
    let captured = store.captured();
    let header = captured[0]
        .headers
        .get("traceparent")
        .expect("a traceparent");
    let parts: Vec<&str> = header.split('-').collect();
    assert_eq!((parts.len(), parts[0]), (4, "00"), "{header}");
    (parts[1].into(), parts[2].into(), parts[3].into())
}

#[tokio::test]
async fn a_search_is_a_server_span_with_a_client_span_per_store_call() {
    let collector = Receiver::start().await;
    let ok = StubStore::hits(memory_hits(&[("m1", 0.1), ("m2", 0.2)])).await;
    let down = StubStore::start(Behaviour::Status(500)).await;
    let junk = StubStore::start(Behaviour::Raw("not json")).await;
    let slow = StubStore::start(Behaviour::Slow(Duration::from_secs(3), json!({"hits": []}))).await;
    let stores = [
        store("ok", "seren_memory", &ok.url, ""),
        store("down", "seren_loci", &down.url, ""),
        store("gone", "seren_memory", &closed_port_url(), ""),
        store("junk", "seren_memory", &junk.url, ""),
        store("slow", "seren_memory", &slow.url, "timeout_s: 0.2"),
    ]
    .concat();
    let yaml = traced(&collector.url, "callosum-a", "", &stores)
        .replace("stores:\n", "breaker_failures: 1\n  stores:\n");
    let callosum = Callosum::start(&yaml).await;
    let answer = search(&callosum, Some(&inbound())).await;
    assert_eq!(answer["hits"].as_array().unwrap().len(), 2, "{answer}");
    // Every store but `ok` failed once: the breaker (1 failure) now skips them.
    let again = search(&callosum, None).await;
    assert_eq!(again["failed"].as_array().unwrap().len(), 4, "{again}");
    callosum.stop().await;

    let spans = collector.spans();
    let searches = named(&spans, "search");
    assert_eq!(searches.len(), 2, "{spans:#?}");
    // The first is the caller's child: its trace, its span as the parent.
    let first = searches
        .iter()
        .find(|s| s.trace_id == TRACE)
        .expect("the inbound trace");
    assert_eq!((first.kind, first.parent_id.as_str()), (SERVER, PARENT));
    assert_eq!(first.service, "callosum-a");
    assert_eq!(first.attr("hits"), "2");
    assert_eq!(first.attr("stores.answered"), "1");
    assert_eq!(first.attr("stores.failed"), "4");
    // The second started a trace of its own.
    let second = searches.iter().find(|s| s.trace_id != TRACE).unwrap();
    assert_eq!(second.parent_id, "");
    for search in &searches {
        assert_eq!(search.attr("callosum.depth"), "0");
    }

    let first_calls: Vec<Received> = (spans.iter())
        .filter(|s| s.name == "store.call" && s.trace_id == TRACE)
        .cloned()
        .collect();
    for (name, kind, outcome, hits) in [
        ("ok", "seren_memory", "ok", "2"),
        ("down", "seren_loci", "status", "0"),
        ("gone", "seren_memory", "refused", "0"),
        ("junk", "seren_memory", "decode", "0"),
        ("slow", "seren_memory", "timeout", "0"),
    ] {
        let call = call_to(&first_calls, name);
        assert_eq!(call.kind, CLIENT);
        assert_eq!(
            call.parent_id, first.span_id,
            "{name} is the search's child"
        );
        assert_eq!(call.attr("store.type"), kind);
        assert_eq!(call.attr("outcome"), outcome, "{name}");
        assert_eq!(call.attr("hits"), hits);
        assert_eq!(call.status, if outcome == "ok" { 0 } else { 2 }, "{name}");
    }
    assert_eq!(call_to(&first_calls, "gone").attr("error.type"), "connect");

    let second_calls: Vec<Received> = (spans.iter())
        .filter(|s| s.name == "store.call" && s.trace_id == second.trace_id)
        .cloned()
        .collect();
    assert_eq!(call_to(&second_calls, "ok").attr("outcome"), "ok");
    for name in ["down", "gone", "junk", "slow"] {
        assert_eq!(call_to(&second_calls, name).attr("outcome"), "circuit_open");
    }

    // The store got its own call's span as its parent, in the caller's trace, with its state.
    let (trace, parent, flags) = parent_sent(&ok);
    assert_eq!((trace.as_str(), flags.as_str()), (TRACE, "01"));
    assert_eq!(parent, call_to(&first_calls, "ok").span_id);
    assert_eq!(ok.captured()[0].headers["tracestate"], "vendor=abc");
    assert!(
        !collector.bodies_contain("zanzibar"),
        "the query left in a span"
    );
}

#[tokio::test]
async fn a_tree_of_callosums_is_one_trace() {
    let collector = Receiver::start().await;
    let leaf = StubStore::hits(loci_hits(&[("l1", 0.9)])).await;
    let b = Callosum::start(&traced(
        &collector.url,
        "callosum-b",
        "",
        &store("facts", "seren_loci", &leaf.url, ""),
    ))
    .await;
    let a = Callosum::start(&traced(
        &collector.url,
        "callosum-a",
        "",
        &store("b", "seren_callosum", &b.url, ""),
    ))
    .await;
    let answer = search(&a, None).await;
    assert_eq!(answer["hits"][0]["id"], "l1", "{answer}");
    a.stop().await;
    b.stop().await;

    let spans = collector.spans();
    assert_eq!(
        spans.len(),
        4,
        "two levels, a search and a call each: {spans:#?}"
    );
    let trace = &spans[0].trace_id;
    assert!(
        spans.iter().all(|s| &s.trace_id == trace),
        "one trace: {spans:#?}"
    );
    let of = |service: &str, name: &str| {
        let found: Vec<_> = (spans.iter())
            .filter(|s| s.service == service && s.name == name)
            .collect();
        assert_eq!(found.len(), 1, "{service} {name}: {spans:#?}");
        found[0].clone()
    };
    let (a_search, a_call) = (of("callosum-a", "search"), of("callosum-a", "store.call"));
    let (b_search, b_call) = (of("callosum-b", "search"), of("callosum-b", "store.call"));
    assert_eq!(a_search.parent_id, "");
    assert_eq!(a_call.parent_id, a_search.span_id);
    assert_eq!(a_call.attr("store.type"), "seren_callosum");
    assert_eq!(
        b_search.parent_id, a_call.span_id,
        "B's search is A's call's child"
    );
    assert_eq!(b_search.attr("callosum.depth"), "1");
    assert_eq!(b_call.parent_id, b_search.span_id);
    assert_eq!(b_call.attr("store.name"), "facts");
    let (sent_trace, sent_parent, _) = parent_sent(&leaf);
    assert_eq!((&sent_trace, &sent_parent), (trace, &b_call.span_id));
    assert!(
        !collector.bodies_contain("zanzibar"),
        "the query left in a span"
    );
}

/// An MCP server with one tool, `find`, that answers two hits and keeps each call's `_meta`.
#[derive(Clone)]
struct Recorder {
    metas: Arc<Mutex<Vec<JsonObject>>>,
}

#[tool_router]
impl Recorder {
    #[tool(name = "find", description = "Finds notes.")]
    async fn find(
        &self,
        _args: JsonObject,
        meta: RequestMetaObject,
    ) -> Result<CallToolResult, String> {
        self.metas.lock().unwrap().push(meta.0.0);
        Ok(CallToolResult::structured(json!({"results": [
            {"id": "r1", "content": "note one", "score": 0.9},
            {"id": "r2", "content": "note two", "score": 0.5},
        ]})))
    }
}

#[tool_handler(router = Recorder::tool_router())]
impl ServerHandler for Recorder {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("recorder", "1.0.0"))
    }
}

async fn recorder() -> (String, Arc<Mutex<Vec<JsonObject>>>, CancellationToken) {
    let metas = Arc::new(Mutex::new(Vec::new()));
    let stop = CancellationToken::new();
    let kept = metas.clone();
    let service = StreamableHttpService::new(
        move || {
            Ok(Recorder {
                metas: kept.clone(),
            })
        },
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default().with_cancellation_token(stop.clone()),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let url = format!("{}/mcp", serve_loopback(router, stop.clone()).await);
    (url, metas, stop)
}

#[tokio::test]
async fn over_mcp_the_context_comes_in_by_meta_or_header_and_goes_out_in_meta() {
    let collector = Receiver::start().await;
    let (mcp_url, metas, stop_mcp) = recorder().await;
    let callosum = Callosum::start(&traced(
        &collector.url,
        "callosum-m",
        "",
        &store(
            "notes",
            "mcp",
            &mcp_url,
            "tool: find\nhits: /results\nscore: /score",
        ),
    ))
    .await;

    // `_meta.traceparent` on the tool call.
    let client = http_client(&callosum.url, None).await.unwrap();
    let mut params = CallToolRequestParams::new("search")
        .with_arguments(crate::support::mcp::object(json!({"query": QUERY})));
    let mut meta = JsonObject::new();
    meta.insert("traceparent".into(), inbound().into());
    params.meta = Some(RequestMetaObject(MetaObject(meta)));
    let answer = structured(&client.call_tool(params).await.unwrap());
    assert_eq!(answer["hits"].as_array().unwrap().len(), 2, "{answer}");
    drop(client);

    // The `/mcp` request's own header, when `_meta` has none.
    let header_trace = "0af7651916cd43dd8448eb211c80319c";
    let header_parent = "b7ad6b7169203331";
    let mut config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            format!("{}/mcp", callosum.url),
        );
    config.custom_headers.insert(
        "traceparent".parse().unwrap(),
        format!("00-{header_trace}-{header_parent}-01")
            .parse()
            .unwrap(),
    );
    let client = rmcp::ServiceExt::serve(
        (),
        rmcp::transport::StreamableHttpClientTransport::from_config(config),
    )
    .await
    .unwrap();
    let result = crate::support::mcp::call(&client, "search", json!({"query": QUERY})).await;
    structured(&result);
    drop(client);
    callosum.stop().await;
    stop_mcp.cancel();

    let spans = collector.spans();
    let searches = named(&spans, "search");
    assert_eq!(searches.len(), 2, "{spans:#?}");
    for (trace, parent) in [(TRACE, PARENT), (header_trace, header_parent)] {
        let search = (searches.iter())
            .find(|s| s.trace_id == trace)
            .unwrap_or_else(|| panic!("no search in {trace}: {spans:#?}"));
        assert_eq!((search.kind, search.parent_id.as_str()), (SERVER, parent));
        let calls: Vec<Received> = (spans.iter())
            .filter(|s| s.trace_id == trace && s.name == "store.call")
            .cloned()
            .collect();
        let call = call_to(&calls, "notes");
        assert_eq!(
            (call.attr("store.type"), call.attr("outcome")),
            ("mcp", "ok")
        );
        assert_eq!(call.attr("hits"), "2");
        // The MCP store got that call's span in `_meta.traceparent`, beside the chain.
        let metas = metas.lock().unwrap();
        let sent = (metas.iter())
            .find(|m| m["traceparent"].as_str().is_some_and(|t| t.contains(trace)))
            .unwrap_or_else(|| panic!("no _meta.traceparent in {trace}: {metas:?}"));
        assert_eq!(
            sent["traceparent"],
            format!("00-{trace}-{}-01", call.span_id)
        );
        assert!(sent.contains_key("seren-corpus-callosum/chain"), "{sent:?}");
    }
    assert!(
        !collector.bodies_contain("zanzibar"),
        "the query left in a span"
    );
}

#[tokio::test]
async fn hop_rounds_are_spans_whose_calls_are_their_children() {
    let collector = Receiver::start().await;
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1), ("m2", 0.2)])).await;
    let yaml = traced(
        &collector.url,
        "callosum-h",
        "",
        &store("mem", "seren_memory", &memory.url, ""),
    )
    .replace("stores:\n", "hops: 2\n  hop_budget: 4\n  stores:\n");
    let callosum = Callosum::start(&yaml).await;
    search(&callosum, None).await;
    callosum.stop().await;

    let spans = collector.spans();
    let search = named(&spans, "search")[0].clone();
    let hops = named(&spans, "hop");
    assert_eq!(hops.len(), 1, "{spans:#?}");
    let hop = hops[0];
    assert_eq!((hop.kind, &hop.parent_id), (INTERNAL, &search.span_id));
    assert_eq!((hop.attr("hop.round"), hop.attr("hop.stores")), ("2", "1"));
    let calls = named(&spans, "store.call");
    assert_eq!(
        calls.len(),
        2,
        "the first round's call and the hop's: {spans:#?}"
    );
    assert!(calls.iter().any(|c| c.parent_id == search.span_id));
    assert!(calls.iter().any(|c| c.parent_id == hop.span_id));
    // The hop's bridge query is made of the query and the hits: neither is in any span.
    assert!(!collector.bodies_contain("zanzibar"));
    assert!(!collector.bodies_contain("memory m1"));
}

#[tokio::test]
async fn a_trace_left_out_by_the_ratio_sends_nothing_but_still_tells_the_store() {
    let collector = Receiver::start().await;
    let ok = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let callosum = Callosum::start(&traced(
        &collector.url,
        "callosum-s",
        "  sample_ratio: 0.0\n",
        &store("ok", "seren_memory", &ok.url, ""),
    ))
    .await;
    search(&callosum, None).await;
    // A caller that kept its trace is followed, whatever the ratio (parent-based sampling).
    search(&callosum, Some(&inbound())).await;
    callosum.stop().await;

    let (_, _, flags) = parent_sent(&ok);
    assert_eq!(flags, "00", "the store is told the trace is not kept");
    let spans = collector.spans();
    assert_eq!(spans.len(), 2, "only the kept trace's spans: {spans:#?}");
    assert!(spans.iter().all(|s| s.trace_id == TRACE));
}

#[tokio::test]
async fn without_telemetry_no_traceparent_goes_out() {
    let ok = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let callosum = Callosum::start(&format!(
        "federation:\n  stores:\n{}",
        store("ok", "seren_memory", &ok.url, "")
    ))
    .await;
    assert!(!callosum.federation.traces().is_on());
    search(&callosum, Some(&inbound())).await;
    let headers = &ok.captured()[0].headers;
    assert!(!headers.contains_key("traceparent"), "{headers:?}");
    assert!(!headers.contains_key("tracestate"), "{headers:?}");
    let metrics = (callosum.client.get(format!("{}/metrics", callosum.url)))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!metrics.contains("trace_spans_dropped"), "{metrics}");
}

#[tokio::test]
async fn with_the_collector_down_searches_answer_and_the_dropped_spans_are_counted() {
    let ok = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let callosum = Callosum::start(&traced(
        &closed_port_url(),
        "callosum-d",
        "",
        &store("ok", "seren_memory", &ok.url, ""),
    ))
    .await;
    let dropped = |text: &str| -> f64 {
        let series = r#"seren_callosum_trace_spans_dropped_total{reason="export_failed"} "#;
        let line = text.lines().find(|l| l.starts_with(series)).expect(text);
        line[series.len()..].parse().unwrap()
    };
    let scrape = || async {
        (callosum.client.get(format!("{}/metrics", callosum.url)))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    assert_eq!(dropped(&scrape().await), 0.0);
    for _ in 0..3 {
        let answer = search(&callosum, None).await;
        assert_eq!(answer["hits"].as_array().unwrap().len(), 1);
    }
    // The export is tried now, not at the batch's timer; it fails (after the exporter's
    // retries), and its spans are counted: three searches, a search and a call span each.
    callosum.federation.traces().flush().await;
    let text = scrape().await;
    assert_eq!(dropped(&text), 6.0, "{text}");
    assert!(text.contains(r#"seren_callosum_trace_spans_dropped_total{reason="queue_full"} 0"#));
    callosum.stop().await;
}

#[test]
fn bad_telemetry_settings_are_errors_that_name_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seren-corpus-callosum.yaml");
    let load = |yaml: &str, env: &[(&str, &str)]| {
        std::fs::write(&path, yaml).unwrap();
        Config::load_from(&path, &Env::of(env)).map(|c| c.telemetry)
    };
    for (yaml, named) in [
        (
            "telemetry:\n  otlp_endpoint: grpc://c:4317\n",
            "telemetry.otlp_endpoint must be an http:// or https:// url",
        ),
        (
            "telemetry:\n  otlp_endpoint: http://c:4318\n  sample_ratio: 2\n",
            "telemetry.sample_ratio must be within 0..=1, got 2",
        ),
        (
            "telemetry:\n  otlp_endpoint: http://c:4318\n  sample_ratio: lots\n",
            "telemetry.sample_ratio: invalid type",
        ),
        (
            "telemetry:\n  otlp_endpoint: http://c:4318\n  service_name: \"\"\n",
            "telemetry.service_name must not be blank",
        ),
    ] {
        let why = load(yaml, &[]).unwrap_err().to_string();
        assert!(why.contains(named), "{yaml}: {why}");
    }
    for (env, named) in [
        (
            [("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"), ("", "")],
            "environment variable OTEL_EXPORTER_OTLP_ENDPOINT",
        ),
        (
            [
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_TRACES_SAMPLER_ARG", "1.5"),
            ],
            "environment variable OTEL_TRACES_SAMPLER_ARG: expected the share of traces kept, a number within 0..=1, got \"1.5\"",
        ),
    ] {
        let why = load("", &env).unwrap_err().to_string();
        assert!(why.contains(named), "{env:?}: {why}");
    }
    // The variables work as for any OpenTelemetry SDK, and the file's keys win over them.
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
        ("OTEL_SERVICE_NAME", "from-env"),
    ];
    let on = load("", &env).unwrap().unwrap();
    assert_eq!(on.endpoint.as_str(), "http://collector:4318/v1/traces");
    assert_eq!(
        (on.service_name.as_str(), on.sample_ratio),
        ("from-env", 1.0)
    );
    let on = load("telemetry:\n  service_name: mine\n", &env)
        .unwrap()
        .unwrap();
    assert_eq!(on.service_name, "mine");
    assert_eq!(load("", &[]).unwrap(), None);
}
