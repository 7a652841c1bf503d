//! The packet through the real surfaces: pages, edges and hops against stores on loopback ports,
//! over REST, MCP (stdio and HTTP) and the CLI.

use crate::support::mcp::*;
use crate::support::process::{command, run, write_config};
use crate::support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// `yaml` with `knobs` (lines under `federation:`) added.
pub(crate) fn with_knobs(yaml: String, knobs: &str) -> String {
    let knobs: String = knobs
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("  {}\n", l.trim()))
        .collect();
    yaml.replacen("federation:\n", &format!("federation:\n{knobs}"), 1)
}

/// A SerenMemory-shaped hit: a long-tier core with satellites and a superseded core, or a plain
/// memory, with the topic given.
pub(crate) fn memory_hit(id: &str, topic: &str, surroundings: Option<Value>) -> Value {
    json!({"id": id, "content": format!("memory {id}"), "tier": "long", "topic": topic,
           "score": 0.6, "raw_distance": 0.4, "metadata": {"source": "user"},
           "surroundings": surroundings, "matched_via": null})
}

pub(crate) fn core_surroundings() -> Value {
    json!({"satellites": 2, "latest_satellite_at": "2025-10-19", "supersedes": "old1",
           "superseded_by": null,
           "recent": [{"id": "s2", "content": "episode two", "created_at": "2025-10-19"},
                      {"id": "s1", "content": "episode one", "created_at": "2025-10-18"}],
           "supersedes_entry": {"id": "old1", "content": "the old core", "created_at": "2025-09-01"}})
}

/// A memory store answering `/search` with a core and a plain hit, and `/by_topic` with `topic`.
pub(crate) async fn memory_store(topic: Behaviour) -> StubStore {
    StubStore::start(Behaviour::Paths(vec![
        (
            "/search",
            Behaviour::Json(json!({"hits": [
                memory_hit("c1", "cuda, Xavier", Some(core_surroundings())),
                memory_hit("m2", "backup", None),
            ]})),
        ),
        ("/by_topic", topic),
    ]))
    .await
}

pub(crate) fn topic_hits() -> Behaviour {
    Behaviour::Json(json!({"topics": [], "hits": [
        {"id": "t1", "content": "topic one", "tier": "near", "topic": "cuda", "matched_topics": ["cuda"], "overlap": 1, "metadata": {}},
        {"id": "t2", "content": "topic two", "tier": "near", "topic": "backup", "matched_topics": ["backup"], "overlap": 1, "metadata": {}},
        {"id": "t3", "content": "topic three", "tier": "near", "topic": "xavier", "matched_topics": ["xavier"], "overlap": 1, "metadata": {}},
    ]}))
}

fn sources(answer: &Value) -> Vec<String> {
    answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let source = h["metadata"]["source"].as_str().unwrap_or("");
            if source.ends_with("-edge") {
                format!("{source}:{}", h["id"].as_str().unwrap())
            } else {
                format!(
                    "{}:{}",
                    h["store"].as_str().unwrap(),
                    h["id"].as_str().unwrap()
                )
            }
        })
        .collect()
}

pub(crate) const EDGES_ON: &str =
    "satellite_edges_enabled: true\nsatellite_budget: 10\nedges_enabled: true\nedge_budget: 2\n";

// test_budget.py: test_search_route_takes_a_budget_and_reports_the_cost,
// test_a_budget_sizes_the_ask_and_the_report_says_what_the_page_cost,
// test_without_a_budget_the_ask_and_the_packet_are_as_before
#[tokio::test]
async fn a_page_sizes_the_ask_and_says_what_it_cost() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1), ("m2", 0.2), ("m3", 0.3)])).await;
    let loci = StubStore::hits(loci_hits(&[("l1", 0.9), ("l2", 0.8)])).await;
    let callosum = Callosum::start(&config_yaml(&[
        ("episodic", "seren_memory", &memory.url, ""),
        ("facts", "seren_loci", &loci.url, ""),
    ]))
    .await;
    let (status, answer) = callosum
        .post("/search", json!({"query": "q", "budget_tokens": 1000}))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["budget_tokens"], 1000);
    let tokens = answer["tokens"].as_u64().unwrap();
    assert!(tokens > 0 && tokens <= 1000, "{answer}");
    assert_eq!(answer["hits"].as_array().unwrap().len(), 5);
    assert_eq!(loci.captured().last().unwrap().body["n_results"], 63);
    assert_eq!(memory.captured().last().unwrap().body["n_results"], 50);

    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(answer["budget_tokens"], Value::Null);
    assert!(answer["tokens"].as_u64().unwrap() > 0);
    assert_eq!(loci.captured().last().unwrap().body["n_results"], 20);

    // A tight page: "key.l1 = v because w" is 20 characters, 5 tokens and one for the row.
    let (_, answer) = callosum
        .post("/search", json!({"query": "q", "budget_tokens": 13}))
        .await;
    assert_eq!(order(&answer), ["episodic:m1", "facts:l1"]);
    assert_eq!(answer["tokens"], 10);
    // An explicit n_results is a second cap.
    let (_, answer) = callosum
        .post(
            "/search",
            json!({"query": "q", "budget_tokens": 1000, "n_results": 2}),
        )
        .await;
    assert_eq!(order(&answer), ["episodic:m1", "facts:l1"]);

    for (bad, message) in [
        (json!(0), "budget_tokens must be within 1..=100000, got 0"),
        (json!(-3), "budget_tokens must be within 1..=100000, got -3"),
        (
            json!(100001),
            "budget_tokens must be within 1..=100000, got 100001",
        ),
    ] {
        let (status, answer) = callosum
            .post("/search", json!({"query": "q", "budget_tokens": bad}))
            .await;
        assert_eq!((status, answer["detail"].as_str().unwrap()), (422, message));
    }
    let (status, answer) = callosum
        .post("/search", json!({"query": "q", "budget_tokens": "lots"}))
        .await;
    assert_eq!(status, 422);
    assert!(
        answer["detail"].as_str().unwrap().contains("budget_tokens"),
        "{answer}"
    );
}

// test_the_configs_default_page_applies_and_the_calls_own_budget_wins
#[tokio::test]
async fn the_configs_page_applies_and_a_calls_own_wins() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1), ("m2", 0.2), ("m3", 0.3)])).await;
    let yaml = with_knobs(
        config_yaml(&[("episodic", "seren_memory", &memory.url, "")]),
        "budget_tokens: 8",
    );
    let callosum = Callosum::start(&yaml).await;
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(answer["budget_tokens"], 8);
    assert_eq!(order(&answer), ["episodic:m1", "episodic:m2"]);
    let (_, answer) = callosum
        .post("/search", json!({"query": "q", "budget_tokens": 100}))
        .await;
    assert_eq!(answer["budget_tokens"], 100);
    assert_eq!(answer["hits"].as_array().unwrap().len(), 3);
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(stores["budget_tokens"], 8);
}

// test_honest_fan.py: test_a_core_brings_its_surroundings_as_marked_edges,
// test_topic_edges_never_repeat_a_satellite_and_come_after_them; test_edges.py: test_edges_appended_and_marked,
// test_topics_and_exclude_threaded, test_edge_budget_caps, test_loci_skipped_no_topic_capability
#[tokio::test]
async fn satellites_then_topic_edges_follow_the_packet() {
    let memory = memory_store(topic_hits()).await;
    let loci = StubStore::hits(loci_hits(&[("l1", 0.9)])).await;
    let yaml = with_knobs(
        config_yaml(&[
            ("episodic", "seren_memory", &memory.url, ""),
            ("facts", "seren_loci", &loci.url, ""),
        ]),
        EDGES_ON,
    );
    let callosum = Callosum::start(&yaml).await;
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(
        sources(&answer),
        [
            "episodic:c1",
            "facts:l1",
            "episodic:m2",
            "satellite-edge:s2",
            "satellite-edge:s1",
            "supersedes-edge:old1",
            "topic-edge:t1",
            "topic-edge:t2",
        ]
    );
    let core = &answer["hits"][0];
    assert_eq!(
        core["metadata"]["surroundings"],
        json!({"satellites": 2, "latest_satellite_at": "2025-10-19", "supersedes": "old1", "superseded_by": null}),
        "the core keeps only the counts"
    );
    let satellite = &answer["hits"][3];
    assert_eq!(
        (
            satellite["score"].as_f64(),
            satellite["store_rank"].as_u64()
        ),
        (Some(0.0), Some(1))
    );
    assert_eq!(satellite["metadata"]["edge_of"], "c1");
    let topic = &answer["hits"][6];
    assert_eq!(topic["metadata"]["matched_topics"], json!(["cuda"]));
    assert_eq!(
        (
            topic["native_score"].as_f64(),
            topic["base_relevance"].as_f64()
        ),
        (Some(1.0), Some(0.0))
    );

    let calls = memory.captured();
    let search = calls.iter().find(|c| c.path == "/search").unwrap();
    assert_eq!(
        search.body["with_surroundings"], true,
        "satellites on asks for them"
    );
    let by_topic = calls
        .iter()
        .find(|c| c.path == "/by_topic")
        .expect("a /by_topic call");
    assert_eq!(by_topic.body["topics"], json!(["cuda", "xavier", "backup"]));
    assert_eq!(by_topic.body["n_results"], 2);
    assert_eq!(
        by_topic.body["exclude_ids"],
        json!(["c1", "l1", "m2", "s2", "s1", "old1"]),
        "every id so far, satellites included"
    );
    assert!(
        loci.captured().iter().all(|c| c.path == "/search"),
        "Loci has no /by_topic"
    );
    let tokens: u64 = answer["tokens"].as_u64().unwrap();
    assert!(tokens > 0, "{answer}");
}

// test_edges_disabled_no_join, test_satellite_edges_off_strips_the_content_and_adds_nothing,
// test_no_topics_no_join
#[tokio::test]
async fn with_edges_off_nothing_follows_and_the_core_is_still_stripped() {
    let memory = memory_store(topic_hits()).await;
    let callosum = Callosum::start(&config_yaml(&[(
        "episodic",
        "seren_memory",
        &memory.url,
        "",
    )]))
    .await;
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(sources(&answer), ["episodic:c1", "episodic:m2"]);
    assert!(
        answer["hits"][0]["metadata"]["surroundings"]
            .get("recent")
            .is_none()
    );
    assert!(memory.captured().iter().all(|c| c.path == "/search"));
    assert_eq!(memory.captured()[0].body["with_surroundings"], false);

    // Edges on, but a packet without topics: no /by_topic.
    let plain = StubStore::start(Behaviour::Paths(vec![
        (
            "/search",
            Behaviour::Json(json!({"hits": [{"id": "p1", "content": "no topic", "topic": null}]})),
        ),
        ("/by_topic", topic_hits()),
    ]))
    .await;
    let callosum = Callosum::start(&with_knobs(
        config_yaml(&[("episodic", "seren_memory", &plain.url, "")]),
        EDGES_ON,
    ))
    .await;
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(sources(&answer), ["episodic:p1"]);
    assert!(plain.captured().iter().all(|c| c.path == "/search"));
}

// test_edge_join_failure_degrades, and a /by_topic that never answers
#[tokio::test]
async fn a_failing_or_hanging_by_topic_never_fails_the_search() {
    for topic in [
        Behaviour::Status(500),
        Behaviour::Raw("not json"),
        Behaviour::Slow(Duration::from_secs(30), json!({"hits": []})),
    ] {
        let memory = memory_store(topic).await;
        let yaml = with_knobs(
            config_yaml(&[("episodic", "seren_memory", &memory.url, "timeout_s: 0.5")]),
            "edges_enabled: true",
        );
        let callosum = Callosum::start(&yaml).await;
        let started = Instant::now();
        let (status, answer) = callosum.search("q", None).await;
        let took = started.elapsed();
        assert_eq!(status, 200);
        assert_eq!(
            sources(&answer),
            ["episodic:c1", "episodic:m2"],
            "the ranked hits intact"
        );
        assert_eq!(answer["failed"], json!([]), "not named as failed");
        assert_eq!(answer["stores_searched"], json!(["episodic"]));
        // The hanging one is cut at the store's timeout (0.5 s), far below its 30 s.
        assert!(took < Duration::from_secs(10), "{took:?}");
        let (_, health) = callosum.get("/health/stores").await;
        assert_eq!(
            health["stores"][0]["total_calls"], 1,
            "topic calls are not health calls: {health}"
        );
    }
}

pub(crate) fn memories(ids: &[(&str, &str)]) -> Value {
    Value::Array(
        ids.iter()
            .enumerate()
            .map(|(i, (id, content))| json!({"id": id, "content": content, "raw_distance": 0.1 * (i + 1) as f64}))
            .collect(),
    )
}

#[tokio::test]
async fn hops_refan_a_bridge_and_mark_what_they_add() {
    let memory = StubStore::start(Behaviour::ByQuery(vec![
        (
            "m fourth",
            memories(&[("m7", "m seventh"), ("m1", "m first")]),
        ),
        (
            "m first",
            memories(&[("m4", "m fourth"), ("m5", "m fifth")]),
        ),
        (
            "",
            memories(&[("m1", "m first"), ("m2", "m second"), ("m3", "m third")]),
        ),
    ]))
    .await;
    let loci = StubStore::hits(loci_hits(&[("l1", 0.9), ("l2", 0.8), ("l3", 0.7)])).await;
    let yaml = with_knobs(
        config_yaml(&[
            ("episodic", "seren_memory", &memory.url, ""),
            ("facts", "seren_loci", &loci.url, ""),
        ]),
        "hops: 3\nhop_terms: 2\nhop_budget: 3",
    );
    let callosum = Callosum::start(&yaml).await;
    let (_, answer) = callosum.search("cuda", Some(2)).await;
    assert_eq!(
        order(&answer),
        ["episodic:m1", "facts:l1", "episodic:m4", "episodic:m7"]
    );
    let hop2 = &answer["hits"][2];
    assert_eq!(hop2["metadata"]["hop"], 2);
    assert_eq!(
        hop2["metadata"]["hop_bridge"],
        "cuda m first key.l1 = v because w"
    );
    assert_eq!(
        (hop2["store_rank"].as_u64(), hop2["score"].as_f64()),
        (Some(1), Some(1.0 / 61.0)),
        "its own rank and score"
    );
    assert_eq!(answer["hits"][3]["metadata"]["hop"], 3);
    assert_eq!(answer["hits"][3]["metadata"]["hop_bridge"], "cuda m fourth");
    let queries: Vec<Value> = memory
        .captured()
        .iter()
        .map(|c| c.body["query"].clone())
        .collect();
    assert_eq!(
        queries,
        [
            json!("cuda"),
            json!("cuda m first key.l1 = v because w"),
            json!("cuda m fourth")
        ]
    );
    assert_eq!(answer["stores_searched"], json!(["episodic", "facts"]));
    let (_, health) = callosum.get("/health/stores").await;
    let calls: Vec<u64> = health["stores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["total_calls"].as_u64().unwrap())
        .collect();
    assert_eq!(calls, [3, 3], "hop calls go through health like any other");

    // The hop budget bounds what all later rounds add; a round that adds nothing stops them.
    let callosum = Callosum::start(&yaml.replace("hop_budget: 3", "hop_budget: 1")).await;
    let (_, answer) = callosum.search("cuda", Some(2)).await;
    assert_eq!(order(&answer), ["episodic:m1", "facts:l1", "episodic:m4"]);
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(
        (
            stores["hops"].as_u64(),
            stores["hop_terms"].as_u64(),
            stores["hop_budget"].as_u64()
        ),
        (Some(3), Some(2), Some(1))
    );
}

/// The compact text block, after checking the structured content is the whole answer.
fn compact_text(result: &rmcp::model::CallToolResult) -> (Value, String) {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let structured = result
        .structured_content
        .clone()
        .expect("structured content");
    let text = result.content[0]
        .as_text()
        .expect("a text block")
        .text
        .clone();
    (structured, text)
}

/// What both MCP transports must do with a page and the compact text.
async fn pages_and_compact_text(client: &Client) {
    // test_mcp_tool_passes_the_budget_through
    let answer = structured(
        &call(
            client,
            "search",
            json!({"query": "q", "budget_tokens": 500}),
        )
        .await,
    );
    assert_eq!(answer["budget_tokens"], 500);
    assert!(answer["tokens"].as_u64().unwrap() <= 500);
    let answer = structured(&call(client, "search", json!({"query": "q"})).await);
    assert_eq!(answer["budget_tokens"], Value::Null);
    assert_eq!(
        error_text(&call(client, "search", json!({"query": "q", "budget_tokens": 0})).await),
        "budget_tokens must be within 1..=100000, got 0"
    );
    assert!(
        error_text(&call(client, "search", json!({"query": "q", "format": "yaml"})).await)
            .contains("format"),
    );
    let (structured, text) =
        compact_text(&call(client, "search", json!({"query": "q", "format": "compact"})).await);
    assert_eq!(
        structured["hits"].as_array().unwrap().len(),
        8,
        "{structured}"
    );
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("8 hits for \"q\" ("), "{text}");
    assert_eq!(lines[1], "1. [episodic #1 c1] memory c1");
    assert!(
        lines.contains(&"4. [episodic satellite of c1 s2] episode two"),
        "{text}"
    );
    assert!(
        lines.contains(&"6. [episodic superseded by c1 old1] the old core"),
        "{text}"
    );
    assert!(
        lines.contains(&"7. [episodic topic edge (cuda) t1] topic one"),
        "{text}"
    );
    assert!(
        text.len() * 3 < serde_json::to_string(&structured).unwrap().len(),
        "compact is compact"
    );
}

pub(crate) async fn edge_stores() -> (StubStore, StubStore, String) {
    let memory = memory_store(topic_hits()).await;
    let loci = StubStore::hits(loci_hits(&[("l1", 0.9)])).await;
    let yaml = with_knobs(
        config_yaml(&[
            ("episodic", "seren_memory", &memory.url, ""),
            ("facts", "seren_loci", &loci.url, ""),
        ]),
        EDGES_ON,
    );
    (memory, loci, yaml)
}

#[tokio::test]
async fn mcp_over_http_takes_a_page_and_writes_compact_text() {
    let (_memory, _loci, yaml) = edge_stores().await;
    let callosum = Callosum::start(&yaml).await;
    let client = http_client(&callosum.url, None).await.unwrap();
    pages_and_compact_text(&client).await;
    let tools = client.list_all_tools().await.unwrap();
    let search = tools.iter().find(|t| t.name == "search").unwrap();
    let description = search.description.as_deref().unwrap();
    assert!(
        description.contains("budget_tokens"),
        "the tool tells the model to say its page"
    );
    let schema = Value::Object(search.input_schema.as_ref().clone());
    assert_eq!(schema["properties"]["budget_tokens"]["minimum"], 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_over_stdio_takes_a_page_and_the_configs_format() {
    let (_memory, _loci, yaml) = edge_stores().await;
    let dir = tempfile::tempdir().unwrap();
    let config_path = write_config(
        dir.path(),
        &format!("server:\n  mcp_format: compact\n{yaml}"),
    );
    let client = stdio_client(&config_path, dir.path()).await;
    // The config's default is compact; a call may still ask for JSON.
    let (_, text) = compact_text(&call(&client, "search", json!({"query": "q"})).await);
    assert!(text.starts_with("8 hits for \"q\""), "{text}");
    let answer = structured(
        &call(
            &client,
            "search",
            json!({"query": "q", "format": "json", "budget_tokens": 500}),
        )
        .await,
    );
    assert_eq!(answer["budget_tokens"], 500);
    let (_, text) = compact_text(
        &call(
            &client,
            "search",
            json!({"query": "q", "format": "compact"}),
        )
        .await,
    );
    assert!(text.contains("[episodic satellite of c1 s2]"), "{text}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_cli_pages_marks_edges_and_check_says_what_is_on() {
    let (_memory, _loci, yaml) = edge_stores().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &yaml);
    let output = run(command(&[
        "search",
        "-c",
        &config,
        "--budget-tokens",
        "500",
        "q",
    ]))
    .await;
    assert!(output.status.success());
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(table.contains("[satellite of c1] episode two"), "{table}");
    assert!(table.contains("[topic edge (cuda)] topic one"), "{table}");
    assert!(table.contains(" of 500\n"), "{table}");
    let output = run(command(&[
        "search",
        "-c",
        &config,
        "--json",
        "--budget-tokens",
        "500",
        "q",
    ]))
    .await;
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["budget_tokens"], 500);
    let output = run(command(&[
        "search",
        "-c",
        &config,
        "--budget-tokens",
        "0",
        "q",
    ]))
    .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("budget_tokens must be within 1..=100000, got 0")
    );

    let output = run(command(&["check", "-c", &config])).await;
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("packet:  satellite edges (up to 10); topic edges (up to 2)\n"),
        "{text}"
    );
    let plain = write_config(dir.path(), "federation:\n  stores: []\n");
    let output = run(command(&["check", "-c", &plain])).await;
    assert!(
        String::from_utf8(output.stdout)
            .unwrap()
            .contains("packet:  plain RRF\n")
    );
}

// test_satellite_knobs_are_configurable_and_advertised (the /stores half)
#[tokio::test]
async fn stores_shows_the_knobs_and_what_this_service_reads() {
    let callosum = Callosum::start("").await;
    let (_, stores) = callosum.get("/stores").await;
    for (key, value) in [
        ("budget_tokens", Value::Null),
        ("authority_margin", json!(0.0)),
        ("min_per_store", json!(0)),
        ("satellite_edges_enabled", json!(false)),
        ("satellite_budget", json!(3)),
        ("edges_enabled", json!(false)),
        ("edge_budget", json!(3)),
        ("hops", json!(1)),
        ("hop_terms", json!(4)),
        ("hop_budget", json!(5)),
        ("fetch_multiplier", json!(2)),
    ] {
        assert_eq!(stores[key], value, "{key}: {stores}");
    }
    let knobs = stores["supported_knobs"].as_array().unwrap();
    for knob in [
        "budget_tokens",
        "satellite_budget",
        "satellite_edges_enabled",
        "hops",
    ] {
        assert!(knobs.contains(&json!(knob)), "{knob}");
    }
}

#[tokio::test]
async fn a_config_with_bad_knobs_says_every_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "server:\n  mcp_format: yaml\nfederation:\n  authority_margin: 2\n  hops: 9\n  edge_budget: 51\n  budget_tokens: 200000\n  min_per_store: -1\n",
    );
    let output = run(command(&["check", "-c", &config])).await;
    assert_eq!(output.status.code(), Some(78));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("min_per_store"), "{stderr}");
    let config = write_config(
        dir.path(),
        "server:\n  mcp_format: yaml\nfederation:\n  authority_margin: 2\n  hops: 9\n  edge_budget: 51\n  budget_tokens: 200000\n",
    );
    let output = run(command(&["check", "-c", &config])).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    for needle in [
        "5 problems",
        "server.mcp_format must be \"json\" or \"compact\", got \"yaml\"",
        "federation.authority_margin must be within 0..=1, got 2",
        "federation.hops must be within 1..=5, got 9",
        "federation.edge_budget must be within 0..=50, got 51",
        "federation.budget_tokens must be within 1..=100000, got 200000",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
}

/// Tokens per packet, JSON text block against compact, on the demo's sample stores with 5.3.0's
/// packet (BENCHMARKS.md quotes what this prints; run with `--nocapture`).
#[tokio::test]
async fn the_compact_text_costs_a_fraction_of_the_json_on_the_demo() {
    use seren_scc_demo as demo;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let _stop = shutdown.clone().drop_guard();
    let memory = demo::spawn_memory_store(shutdown.clone()).await.unwrap();
    let loci = demo::spawn_loci_store(shutdown.clone()).await.unwrap();
    let yaml = with_knobs(
        config_yaml(&[
            ("episodic", "seren_memory", &memory.url, ""),
            ("facts", "seren_loci", &loci.url, ""),
        ]),
        "authority_margin: 0.035\nmin_per_store: 1\nedges_enabled: true\nsatellite_edges_enabled: true",
    );
    let callosum = Callosum::start(&yaml).await;
    let client = http_client(&callosum.url, None).await.unwrap();
    let tokens = |text: &str| text.chars().count().div_ceil(4);
    let (mut json_total, mut compact_total) = (0, 0);
    for query in [
        "cuda xavier",
        "backup",
        "wren release",
        "jetpack reflash",
        "kyoto ryokan",
    ] {
        let json_result = call(&client, "search", json!({"query": query, "format": "json"})).await;
        let compact_result = call(
            &client,
            "search",
            json!({"query": query, "format": "compact"}),
        )
        .await;
        let (answer, json_text) = compact_text(&json_result);
        let (_, compact) = compact_text(&compact_result);
        let (j, c) = (tokens(&json_text), tokens(&compact));
        println!(
            "tokens per packet: {query:?}: {} hits, content {} tokens; json {j}, compact {c} ({:.2}x)",
            answer["hits"].as_array().unwrap().len(),
            answer["tokens"],
            j as f64 / c as f64
        );
        json_total += j;
        compact_total += c;
    }
    println!("tokens per packet, all five: json {json_total}, compact {compact_total}");
    assert!(
        compact_total * 2 < json_total,
        "{compact_total} vs {json_total}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn hop_hits_through_mcp_and_the_cli() {
    let memory = StubStore::start(Behaviour::ByQuery(vec![
        (
            "m first",
            memories(&[("m4", "m fourth"), ("m5", "m fifth")]),
        ),
        ("", memories(&[("m1", "m first"), ("m2", "m second")])),
    ]))
    .await;
    let loci = StubStore::hits(loci_hits(&[("l1", 0.9), ("l2", 0.8)])).await;
    let yaml = with_knobs(
        config_yaml(&[
            ("episodic", "seren_memory", &memory.url, ""),
            ("facts", "seren_loci", &loci.url, ""),
        ]),
        "hops: 2\nhop_budget: 1",
    );
    let callosum = Callosum::start(&yaml).await;
    let client = http_client(&callosum.url, None).await.unwrap();
    let answer =
        structured(&call(&client, "search", json!({"query": "cuda", "n_results": 2})).await);
    assert_eq!(order(&answer), ["episodic:m1", "facts:l1", "episodic:m4"]);
    assert_eq!(answer["hits"][2]["metadata"]["hop"], 2);
    let (_, text) = compact_text(
        &call(
            &client,
            "search",
            json!({"query": "cuda", "n_results": 2, "format": "compact"}),
        )
        .await,
    );
    assert!(
        text.contains("3. [episodic hop 2 #1 m4] m fourth"),
        "{text}"
    );
    client.cancel().await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &yaml);
    let output = run(command(&["search", "-c", &config, "-n", "2", "cuda"])).await;
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(table.contains("[hop 2 #1] m fourth"), "{table}");
}
