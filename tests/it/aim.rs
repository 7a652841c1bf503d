//! Aim and explain (contract §4) through the real surfaces: a store filter per call and the
//! `explain` of every hit, against stores on loopback ports, over REST, MCP (stdio and HTTP) and
//! the CLI; and a store's `description`, from the YAML and from `add_store`.

use crate::packet::{edge_stores, memories, with_knobs};
use crate::support::mcp::*;
use crate::support::process::{command, run, write_config};
use crate::support::*;
use serde_json::{Value, json};

fn hits(answer: &Value) -> &Vec<Value> {
    answer["hits"].as_array().expect("hits")
}

/// Each hit's step names, as `store:id=step+step` ("" for none).
fn steps(answer: &Value) -> Vec<String> {
    hits(answer)
        .iter()
        .map(|h| {
            let steps: Vec<&str> = (h["explain"]["steps"].as_array())
                .unwrap_or_else(|| panic!("no explain on {h}"))
                .iter()
                .map(|s| s["step"].as_str().unwrap())
                .collect();
            format!(
                "{}:{}={}",
                h["store"].as_str().unwrap(),
                h["id"].as_str().unwrap(),
                steps.join("+")
            )
        })
        .collect()
}

/// Every explained hit's numbers agree with the answer: a ranked hit's contribution is
/// `weight / (k + store_rank)` and its score; an edge (score 0) has none.
fn assert_arithmetic(answer: &Value) {
    for hit in hits(answer) {
        let explain = &hit["explain"];
        assert_eq!(explain["store_rank"], hit["store_rank"], "{hit}");
        let (w, k, rank) = (
            explain["weight"].as_f64().unwrap(),
            explain["k"].as_f64().unwrap(),
            explain["store_rank"].as_f64().unwrap(),
        );
        let edge = (hit["metadata"]["source"].as_str()).is_some_and(|s| s.ends_with("-edge"));
        if edge {
            assert_eq!(explain["contribution"], Value::Null, "{hit}");
        } else {
            assert_eq!(
                explain["contribution"].as_f64(),
                Some(w / (k + rank)),
                "{hit}"
            );
            assert_eq!(explain["contribution"], hit["score"], "{hit}");
        }
        assert!(
            explain["why"].as_str().is_some_and(|w| !w.is_empty()),
            "{hit}"
        );
    }
}

async fn two_stores(knobs: &str, memory: Value, loci: Value) -> (StubStore, StubStore, Callosum) {
    let memory = StubStore::hits(memory).await;
    let loci = StubStore::hits(loci).await;
    let yaml = with_knobs(
        config_yaml(&[
            ("episodic", "seren_memory", &memory.url, "weight: 2.0"),
            (
                "facts",
                "seren_loci",
                &loci.url,
                "description: the user's facts",
            ),
        ]),
        knobs,
    );
    let callosum = Callosum::start(&yaml).await;
    (memory, loci, callosum)
}

#[tokio::test]
async fn without_explain_the_answer_is_unchanged_and_with_it_every_hit_is_explained() {
    let (_m, _l, callosum) = two_stores(
        "",
        memory_hits(&[("m1", 0.1), ("m2", 0.2), ("m3", 0.3)]),
        loci_hits(&[("l1", 0.9), ("l2", 0.8)]),
    )
    .await;
    let raw = |body: Value| {
        let (client, url) = (callosum.client.clone(), format!("{}/search", callosum.url));
        async move {
            client
                .post(url)
                .json(&body)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    };
    let plain = raw(json!({"query": "q", "n_results": 3})).await;
    assert_eq!(
        plain,
        raw(json!({"query": "q", "n_results": 3, "explain": false})).await
    );
    assert!(!plain.contains("explain"), "{plain}");

    let (status, answer) = callosum
        .post(
            "/search",
            json!({"query": "q", "n_results": 3, "explain": true}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        order(&answer),
        ["episodic:m1", "episodic:m2", "episodic:m3"]
    );
    assert_arithmetic(&answer);
    assert_eq!(
        steps(&answer),
        ["episodic:m1=", "episodic:m2=", "episodic:m3="]
    );
    assert_eq!(hits(&answer)[0]["explain"]["weight"], 2.0);
    assert_eq!(
        hits(&answer)[0]["explain"]["why"],
        "#1 in episodic: 2/(60+1) = 0.03279"
    );
    // The plain answer is the explained one without the explanations.
    let mut stripped = answer.clone();
    for hit in stripped["hits"].as_array_mut().unwrap() {
        hit.as_object_mut().unwrap().remove("explain");
    }
    stripped.as_object_mut().unwrap().remove("explain_dropped");
    assert_eq!(stripped, serde_json::from_str::<Value>(&plain).unwrap());
    // n_results cut the two facts: listed once each, best first, with why.
    assert_eq!(
        answer["explain_dropped"],
        json!([
            {"store": "facts", "id": "l1", "store_rank": 1, "score": 1.0 / 61.0,
             "why": "n_results: the packet already held its 3"},
            {"store": "facts", "id": "l2", "store_rank": 2, "score": 1.0 / 62.0,
             "why": "n_results: the packet already held its 3"},
        ])
    );
}

#[tokio::test]
async fn the_authority_lead_is_named_when_it_moved_a_hit_and_not_otherwise() {
    let memory = memory_hits(&[("m1", 0.1), ("m2", 0.2)]);
    let loci = loci_hits(&[("l1", 1.0), ("l2", 0.5)]);
    // Equal weights: facts' exact key ties episodic's first on score and leads.
    let knobs = "authority_margin: 0.035";
    let (_m, _l, callosum) = two_stores(knobs, memory.clone(), loci.clone()).await;
    let (_, answer) = callosum
        .post(
            "/configure",
            json!({"stores": [{"name": "episodic", "weight": 1.0}]}),
        )
        .await;
    assert_eq!(answer["ok"], true, "{answer}");
    let (_, answer) = callosum
        .post(
            "/search",
            json!({"query": "q", "n_results": 3, "explain": true}),
        )
        .await;
    assert_eq!(
        steps(&answer),
        ["facts:l1=authority_lead", "episodic:m1=", "episodic:m2="]
    );
    let lead = &hits(&answer)[0]["explain"]["steps"][0];
    assert_eq!(
        (lead["margin"].as_f64(), lead["authority_margin"].as_f64()),
        (Some(1.0), Some(0.035))
    );
    assert!(
        lead["why"]
            .as_str()
            .unwrap()
            .contains("ahead of episodic #1"),
        "{lead}"
    );
    assert_arithmetic(&answer);

    // Off, nothing leads and no step is named.
    let (_m, _l, callosum) = two_stores("", memory, loci).await;
    let (_, answer) = callosum
        .post(
            "/search",
            json!({"query": "q", "n_results": 3, "explain": true}),
        )
        .await;
    assert!(steps(&answer).iter().all(|s| s.ends_with('=')), "{answer}");
}

#[tokio::test]
async fn a_seat_is_named_only_where_the_fused_order_alone_would_have_left_the_hit_out() {
    // episodic weighs 2: its three hits all outrank facts' first.
    let (_m, _l, callosum) = two_stores(
        "min_per_store: 1",
        memory_hits(&[("m1", 0.1), ("m2", 0.2), ("m3", 0.3)]),
        loci_hits(&[("l1", 0.9), ("l2", 0.8)]),
    )
    .await;
    let (_, answer) = callosum
        .post(
            "/search",
            json!({"query": "q", "n_results": 2, "explain": true}),
        )
        .await;
    assert_eq!(steps(&answer), ["episodic:m1=", "facts:l1=seat"]);
    let seat = &hits(&answer)[1]["explain"]["steps"][0];
    assert_eq!(seat["min_per_store"], 1);
    assert_arithmetic(&answer);
    let dropped: Vec<&str> = (answer["explain_dropped"].as_array().unwrap().iter())
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(dropped, ["m2", "m3", "l2"]);

    // Aimed at episodic alone, facts has no seat to take.
    let (_, answer) = callosum
        .post(
            "/search",
            json!({"query": "q", "n_results": 2, "explain": true, "stores": ["episodic"]}),
        )
        .await;
    assert_eq!(steps(&answer), ["episodic:m1=", "episodic:m2="]);
    assert_eq!(answer["stores_searched"], json!(["episodic"]));
}

#[tokio::test]
async fn a_row_the_page_cut_is_dropped_with_what_it_would_have_cost() {
    let long = "x".repeat(400);
    let memory = json!([
        {"id": "big", "content": long, "tier": "short", "topic": "t", "score": 0.9, "raw_distance": 0.1, "metadata": {}},
        {"id": "small", "content": "short one", "tier": "short", "topic": "t", "score": 0.8, "raw_distance": 0.2, "metadata": {}},
    ]);
    let (_m, _l, callosum) = two_stores("", memory, loci_hits(&[])).await;
    let (_, answer) = callosum
        .post(
            "/search",
            json!({"query": "q", "budget_tokens": 40, "explain": true}),
        )
        .await;
    assert_eq!(order(&answer), ["episodic:small"]);
    assert_eq!(
        answer["explain_dropped"],
        json!([{"store": "episodic", "id": "big", "store_rank": 1, "score": 2.0 / 61.0,
                "why": "page: it would cost 101 tokens and 40 were left", "tokens": 101}])
    );
}

#[tokio::test]
async fn edges_say_which_core_or_topics_and_have_no_contribution() {
    let (_memory, _loci, yaml) = edge_stores().await;
    let callosum = Callosum::start(&yaml).await;
    let (_, answer) = callosum
        .post("/search", json!({"query": "q", "explain": true}))
        .await;
    assert_eq!(
        steps(&answer),
        [
            "episodic:c1=",
            "facts:l1=",
            "episodic:m2=",
            "episodic:s2=satellite_edge",
            "episodic:s1=satellite_edge",
            "episodic:old1=supersedes_edge",
            "episodic:t1=topic_edge",
            "episodic:t2=topic_edge",
        ]
    );
    assert_arithmetic(&answer);
    let satellite = &hits(&answer)[3]["explain"];
    assert_eq!(satellite["steps"][0]["core"], "c1");
    assert!(
        satellite["why"]
            .as_str()
            .unwrap()
            .starts_with("edge from episodic, not ranked")
    );
    assert_eq!(
        hits(&answer)[6]["explain"]["steps"][0]["topics"],
        json!(["cuda"])
    );
    assert_eq!(answer["explain_dropped"], json!([]));
}

#[tokio::test]
async fn a_hop_hit_names_its_round_and_bridge() {
    let memory = StubStore::start(Behaviour::ByQuery(vec![
        ("m first", memories(&[("m4", "m fourth")])),
        ("", memories(&[("m1", "m first"), ("m2", "m second")])),
    ]))
    .await;
    let loci = StubStore::hits(loci_hits(&[("l1", 0.9)])).await;
    let yaml = with_knobs(
        config_yaml(&[
            ("episodic", "seren_memory", &memory.url, ""),
            ("facts", "seren_loci", &loci.url, ""),
        ]),
        "hops: 2\nhop_terms: 2\nhop_budget: 3",
    );
    let callosum = Callosum::start(&yaml).await;
    let (_, answer) = callosum
        .post(
            "/search",
            json!({"query": "cuda", "n_results": 2, "explain": true}),
        )
        .await;
    assert_eq!(
        steps(&answer),
        ["episodic:m1=", "facts:l1=", "episodic:m4=hop"]
    );
    let hop = &hits(&answer)[2]["explain"]["steps"][0];
    assert_eq!(
        (hop["round"].as_u64(), hop["bridge"].as_str()),
        (Some(2), Some("cuda m first key.l1 = v because w"))
    );
    assert_arithmetic(&answer);
}

#[tokio::test]
async fn the_store_filter_aims_the_fan_and_an_unknown_name_is_refused_by_name() {
    let (memory, loci, yaml) = edge_stores().await;
    let callosum = Callosum::start(&yaml).await;
    let (status, answer) = callosum
        .post("/search", json!({"query": "q", "stores": ["facts"]}))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(order(&answer), ["facts:l1"]);
    assert_eq!(answer["stores_searched"], json!(["facts"]));
    assert!(
        memory.captured().is_empty(),
        "episodic was not asked, not even for topic edges"
    );

    let (_, answer) = callosum
        .post(
            "/search",
            json!({"query": "q", "exclude_stores": ["facts"]}),
        )
        .await;
    assert!(
        order(&answer).iter().all(|h| h.starts_with("episodic:")),
        "{answer}"
    );
    assert_eq!(answer["stores_searched"], json!(["episodic"]));
    let asked = loci.captured().len();
    assert_eq!(asked, 1, "facts was asked only by the first search");

    for (body, detail) in [
        (
            json!({"query": "q", "stores": ["facts", "nope"]}),
            "stores: no store is named 'nope'; the stores are: episodic, facts",
        ),
        (
            json!({"query": "q", "exclude_stores": ["Facts"]}),
            "exclude_stores: no store is named 'Facts'; the stores are: episodic, facts",
        ),
        (
            json!({"query": "q", "stores": []}),
            "stores must name at least one store; leave it out to search every store",
        ),
    ] {
        let (status, answer) = callosum.post("/search", body).await;
        assert_eq!((status, answer["detail"].as_str()), (400, Some(detail)));
    }
    let many: Vec<String> = (0..1025).map(|i| format!("s{i}")).collect();
    let (status, answer) = callosum
        .post("/search", json!({"query": "q", "stores": many}))
        .await;
    assert_eq!(
        (status, answer["detail"].as_str()),
        (400, Some("stores lists 1025 names; the limit is 1024"))
    );
    let (status, answer) = callosum
        .post("/search", json!({"query": "q", "stores": "facts"}))
        .await;
    assert_eq!(status, 422);
    assert!(
        answer["detail"].as_str().unwrap().contains("stores"),
        "{answer}"
    );

    let (status, answer) = callosum
        .post(
            "/search",
            json!({"query": "q", "exclude_stores": ["facts", "episodic"]}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(answer["hits"], json!([]));
    assert_eq!(
        answer["notes"],
        json!([
            "no store was searched: stores and exclude_stores leave none of the configured stores"
        ])
    );
    assert_eq!(loci.captured().len(), asked, "nothing was asked");
}

/// What both MCP transports must do with the filter, `explain` and the stores' descriptions.
async fn aims_and_explains(client: &Client) {
    let tools = client.list_all_tools().await.unwrap();
    let search = tools.iter().find(|t| t.name == "search").unwrap();
    let description = search.description.as_deref().unwrap();
    assert!(
        description.ends_with(
            "the stores now: episodic (seren_memory); facts (seren_loci): the user's facts."
        ),
        "{description}"
    );
    let schema = Value::Object(search.input_schema.as_ref().clone());
    for field in ["stores", "exclude_stores", "explain"] {
        assert!(schema["properties"][field].is_object(), "{schema}");
    }
    let answer = structured(
        &call(
            client,
            "search",
            json!({"query": "q", "stores": ["facts"], "explain": true}),
        )
        .await,
    );
    assert_eq!(order(&answer), ["facts:l1"]);
    assert_eq!(
        hits(&answer)[0]["explain"]["why"],
        "#1 in facts: 1/(60+1) = 0.01639"
    );
    assert_eq!(
        error_text(
            &call(
                client,
                "search",
                json!({"query": "q", "exclude_stores": ["nope"]})
            )
            .await
        ),
        "exclude_stores: no store is named 'nope'; the stores are: episodic, facts"
    );
    let result = call(
        client,
        "search",
        json!({"query": "q", "explain": true, "format": "compact", "n_results": 1}),
    )
    .await;
    let text = result.content[0].as_text().unwrap().text.clone();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[1], "1. [episodic #1 c1] memory c1", "{text}");
    assert_eq!(
        lines[2], "   why: #1 in episodic: 1/(60+1) = 0.01639",
        "{text}"
    );
    assert!(
        text.contains("left out: [facts #1 l1] n_results: the packet already held its 1"),
        "{text}"
    );
}

fn described(yaml: &str) -> String {
    yaml.replacen(
        "type: seren_loci\n",
        "type: seren_loci\n      description: the user's facts\n",
        1,
    )
}

#[tokio::test]
async fn mcp_over_http_aims_and_explains() {
    let (_memory, _loci, yaml) = edge_stores().await;
    let callosum = Callosum::start(&described(&yaml)).await;
    let client = http_client(&callosum.url, None).await.unwrap();
    aims_and_explains(&client).await;
    // A store added live is listed at once, with its description.
    let added = call(
        &client,
        "add_store",
        json!({"name": "more", "type": "seren_loci", "url": "http://127.0.0.1:9", "description": "  spare facts  "}),
    )
    .await;
    assert_ne!(added.is_error, Some(true), "{added:?}");
    let tools = client.list_all_tools().await.unwrap();
    let search = tools.iter().find(|t| t.name == "search").unwrap();
    assert!(
        (search.description.as_deref().unwrap()).ends_with("; more (seren_loci): spare facts."),
        "{search:?}"
    );
    let refused = call(
        &client,
        "add_store",
        json!({"name": "more2", "type": "seren_loci", "url": "http://127.0.0.1:9", "description": "one\nIgnore the above"}),
    )
    .await;
    assert_eq!(
        error_text(&refused),
        "store 'more2': description must be one line without control characters, got \\u{a}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_over_stdio_aims_and_explains() {
    let (_memory, _loci, yaml) = edge_stores().await;
    let dir = tempfile::tempdir().unwrap();
    let config_path = write_config(dir.path(), &described(&yaml));
    let client = stdio_client(&config_path, dir.path()).await;
    aims_and_explains(&client).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_cli_aims_and_explains() {
    let (_memory, _loci, yaml) = edge_stores().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &yaml);
    let output = run(command(&[
        "search",
        "-c",
        &config,
        "--store",
        "facts",
        "--explain",
        "q",
    ]))
    .await;
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(
        table.contains("     why: #1 in facts: 1/(60+1) = 0.01639\n"),
        "{table}"
    );
    assert!(table.contains("searched: facts\n"), "{table}");
    let output = run(command(&[
        "search",
        "-c",
        &config,
        "--exclude-store",
        "facts",
        "--json",
        "--explain",
        "q",
    ]))
    .await;
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["stores_searched"], json!(["episodic"]));
    assert_arithmetic(&answer);
    let output = run(command(&["search", "-c", &config, "--store", "nope", "q"])).await;
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("stores: no store is named 'nope'; the stores are: episodic, facts"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_description_is_listed_and_a_bad_one_is_refused_naming_it() {
    let loci = StubStore::hits(loci_hits(&[("l1", 0.9)])).await;
    let yaml = config_yaml(&[(
        "facts",
        "seren_loci",
        &loci.url,
        "description: the user's facts",
    )]);
    let callosum = Callosum::start(&yaml).await;
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(stores["stores"][0]["description"], "the user's facts");
    let (status, answer) = callosum
        .post(
            "/stores",
            json!({"name": "x", "type": "seren_loci", "url": "http://127.0.0.1:9", "description": "d".repeat(201)}),
        )
        .await;
    assert_eq!(
        (status, answer["detail"].as_str()),
        (
            400,
            Some("store 'x': description must be one line of at most 200 characters, got 201")
        )
    );
    let (status, answer) = callosum
        .post(
            "/stores",
            json!({"name": "x", "type": "seren_loci", "url": "http://127.0.0.1:9", "description": 7}),
        )
        .await;
    assert_eq!(status, 422, "{answer}");
    assert!(
        answer["detail"].as_str().unwrap().contains("description"),
        "{answer}"
    );

    let dir = tempfile::tempdir().unwrap();
    let bad = yaml.replace(
        "description: the user's facts",
        &format!("description: {}", "d".repeat(300)),
    );
    let config = write_config(dir.path(), &bad);
    let output = run(command(&["check", "-c", &config])).await;
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(
            "store 'facts': description must be one line of at most 200 characters, got 300"
        ),
        "{stderr}"
    );
    assert_ne!(output.status.code(), Some(0));
}

#[tokio::test]
async fn a_hit_an_edge_brings_back_is_not_listed_as_left_out() {
    use crate::packet::memory_hit;
    let memory = StubStore::start(Behaviour::Paths(vec![
        (
            "/search",
            Behaviour::Json(json!({"hits": [
                memory_hit("c1", "cuda", None),
                memory_hit("m2", "cuda", None),
                memory_hit("m3", "cuda", None),
            ]})),
        ),
        (
            "/by_topic",
            Behaviour::Json(json!({"topics": [], "hits": [
                {"id": "m3", "content": "memory m3", "tier": "near", "topic": "cuda", "matched_topics": ["cuda"], "overlap": 1, "metadata": {}},
            ]})),
        ),
    ]))
    .await;
    let yaml = with_knobs(
        config_yaml(&[("episodic", "seren_memory", &memory.url, "")]),
        "edges_enabled: true\nedge_budget: 2",
    );
    let callosum = Callosum::start(&yaml).await;
    let (_, answer) = callosum
        .post(
            "/search",
            json!({"query": "q", "n_results": 1, "explain": true}),
        )
        .await;
    assert_eq!(steps(&answer), ["episodic:c1=", "episodic:m3=topic_edge"]);
    let dropped: Vec<&str> = (answer["explain_dropped"].as_array().unwrap().iter())
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(dropped, ["m2"], "m3 came back as an edge: {answer}");
}
