//! One document in several stores (contract §2c) through the real surfaces: `federation.identity`
//! and each store's `identity_key` from the YAML, a search's own `identity` over REST, MCP and the
//! command line, `also_from` and `explain`'s contributions, and what is refused (a bad `identity`,
//! a bad `identity_key`) with words naming it.

use crate::packet::with_knobs;
use crate::support::mcp::*;
use crate::support::process::{command, run, write_config};
use crate::support::*;
use serde_json::{Value, json};

/// A memory store keyed by `metadata.path` and a facts store keyed by its ids. The memory's m1
/// (path `notes/shared.md`) is the facts' `notes/shared.md`; its m3 has no path, so it is its
/// own even though the facts store has an `m3` too.
async fn stores() -> (StubStore, StubStore, String) {
    let notes = StubStore::hits(json!([
        {"id": "m1", "content": "the shared note", "tier": "long", "topic": "t", "score": 0.9,
         "raw_distance": 0.1, "metadata": {"path": "notes/shared.md"}},
        {"id": "m2", "content": "a note of the memory alone", "tier": "long", "topic": "t",
         "score": 0.8, "raw_distance": 0.2, "metadata": {"path": "notes/only.md"}},
        {"id": "m3", "content": "a note without a path", "tier": "long", "topic": "t",
         "score": 0.7, "raw_distance": 0.3, "metadata": {}},
    ]))
    .await;
    let facts = StubStore::hits(loci_hits(&[
        ("f1", 0.9),
        ("notes/shared.md", 0.8),
        ("m3", 0.7),
    ]))
    .await;
    let yaml = config_yaml(&[
        (
            "notes",
            "seren_memory",
            &notes.url,
            "identity_key: metadata.path",
        ),
        ("facts", "seren_loci", &facts.url, ""),
    ]);
    (notes, facts, yaml)
}

fn hits(answer: &Value) -> &Vec<Value> {
    answer["hits"].as_array().expect("hits")
}

/// Each hit as `store:id#rank`, with ` +store:id#rank` for each store in `also_from`.
fn rows(answer: &Value) -> Vec<String> {
    hits(answer)
        .iter()
        .map(|h| {
            let mut row =
                format!("{}:{}#{}", h["store"], h["id"], h["store_rank"]).replace('"', "");
            for also in h["also_from"].as_array().into_iter().flatten() {
                row.push_str(
                    &format!(" +{}:{}#{}", also["store"], also["id"], also["store_rank"])
                        .replace('"', ""),
                );
            }
            row
        })
        .collect()
}

fn scores(answer: &Value) -> Vec<f64> {
    hits(answer)
        .iter()
        .map(|h| h["score"].as_f64().unwrap())
        .collect()
}

/// What a search with identity `key` answers on these stores, and its scores by hand.
fn assert_merged_by_key(answer: &Value) {
    assert_eq!(
        rows(answer),
        [
            "notes:m1#1 +facts:notes/shared.md#2",
            "facts:f1#1",
            "notes:m2#2",
            "notes:m3#3",
            "facts:m3#3",
        ],
        "{answer}"
    );
    assert_eq!(
        scores(answer),
        [
            1.0 / 61.0 + 1.0 / 62.0,
            1.0 / 61.0,
            1.0 / 62.0,
            1.0 / 63.0,
            1.0 / 63.0
        ]
    );
    let first = &hits(answer)[0];
    assert_eq!(first["also_from"][0]["contribution"], json!(1.0 / 62.0));
    // Every hit carries `also_from` when identity is on, empty when no other store has it.
    for hit in &hits(answer)[1..] {
        assert_eq!(hit["also_from"], json!([]), "{hit}");
    }
}

/// What a search without identity answers: every store's hit its own, no `also_from`.
fn assert_unmerged(answer: &Value) {
    assert_eq!(
        rows(answer),
        [
            "notes:m1#1",
            "facts:f1#1",
            "notes:m2#2",
            "facts:notes/shared.md#2",
            "notes:m3#3",
            "facts:m3#3",
        ],
        "{answer}"
    );
    for hit in hits(answer) {
        assert!(hit.get("also_from").is_none(), "{hit}");
    }
}

#[tokio::test]
async fn a_search_may_turn_identity_on_and_none_is_todays_answer_exactly() {
    let (_notes, _facts, yaml) = stores().await;
    let callosum = Callosum::start(&yaml).await;
    let (status, plain) = callosum.post("/search", json!({"query": "q"})).await;
    assert_eq!(status, 200, "{plain}");
    assert_unmerged(&plain);
    let (_, none) = callosum
        .post("/search", json!({"query": "q", "identity": "none"}))
        .await;
    assert_eq!(
        none, plain,
        "identity none is the answer without it, byte for byte"
    );
    let (status, merged) = callosum
        .post("/search", json!({"query": "q", "identity": "key"}))
        .await;
    assert_eq!(status, 200, "{merged}");
    assert_merged_by_key(&merged);
    // n_results counts documents: two documents, the first from both stores.
    let (_, two) = callosum
        .post(
            "/search",
            json!({"query": "q", "identity": "key", "n_results": 2}),
        )
        .await;
    assert_eq!(
        rows(&two),
        ["notes:m1#1 +facts:notes/shared.md#2", "facts:f1#1"]
    );
    // The command line says the same, and names the other store under the hit.
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &yaml);
    let output = run(command(&[
        "search",
        "-c",
        &config,
        "--identity",
        "key",
        "--json",
        "q",
    ]))
    .await;
    assert_eq!(output.status.code(), Some(0));
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["hits"], merged["hits"]);
    let output = run(command(&[
        "search",
        "-c",
        &config,
        "--identity",
        "key",
        "q",
    ]))
    .await;
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(
        table.contains("also in facts #2 (id notes/shared.md)"),
        "{table}"
    );
}

#[tokio::test]
async fn the_configured_identity_is_the_default_and_a_search_overrides_it() {
    let (_notes, _facts, yaml) = stores().await;
    let configured = Callosum::start(&with_knobs(yaml.clone(), "identity: key")).await;
    let (_, merged) = configured.post("/search", json!({"query": "q"})).await;
    assert_merged_by_key(&merged);
    let (_, stores) = configured.get("/stores").await;
    assert_eq!(stores["identity"], "key");
    assert_eq!(stores["stores"][0]["identity_key"], "metadata.path");
    assert!(stores["stores"][1].get("identity_key").is_none());
    // A search's own `none` is the answer of a callosum without identity.
    let plain = Callosum::start(&yaml).await;
    let (_, without) = plain.post("/search", json!({"query": "q"})).await;
    let (_, none) = configured
        .post("/search", json!({"query": "q", "identity": "none"}))
        .await;
    assert_eq!(none, without);
    // `/configure` turns it live, as every knob.
    let (status, changed) = plain.post("/configure", json!({"identity": "key"})).await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["changed"]["identity"], "key");
    let (_, now) = plain.post("/search", json!({"query": "q"})).await;
    assert_merged_by_key(&now);
}

#[tokio::test]
async fn explain_lists_every_contribution_of_a_document() {
    let (_notes, _facts, yaml) = stores().await;
    let callosum = Callosum::start(&with_knobs(yaml, "identity: key")).await;
    let (_, answer) = callosum
        .post("/search", json!({"query": "q", "explain": true}))
        .await;
    assert_merged_by_key(&answer);
    let first = &hits(&answer)[0];
    let contributions = first["explain"]["contributions"].as_array().unwrap();
    assert_eq!(
        contributions,
        &[
            json!({"store": "notes", "id": "m1", "store_rank": 1, "weight": 1.0,
                   "contribution": 1.0 / 61.0}),
            json!({"store": "facts", "id": "notes/shared.md", "store_rank": 2, "weight": 1.0,
                   "contribution": 1.0 / 62.0}),
        ]
    );
    let sum: f64 = (contributions.iter())
        .map(|c| c["contribution"].as_f64().unwrap())
        .sum();
    assert_eq!(sum, first["score"].as_f64().unwrap());
    assert_eq!(first["explain"]["contribution"], json!(1.0 / 61.0));
    let why = first["explain"]["why"].as_str().unwrap();
    assert!(
        why.starts_with(
            "one document from 2 stores: #1 in notes: 1/(60+1) = 0.01639 + #2 in facts: 1/(60+2) = 0.01613; sum 0.03252"
        ),
        "{why}"
    );
    // A document of one store lists its one contribution.
    let second = &hits(&answer)[1]["explain"];
    assert_eq!(second["contributions"].as_array().unwrap().len(), 1);
    assert!(
        second["why"]
            .as_str()
            .unwrap()
            .starts_with("#1 in facts: 1/(60+1)")
    );
    // Without identity, explain says nothing of contributions.
    let (_, plain) = callosum
        .post(
            "/search",
            json!({"query": "q", "explain": true, "identity": "none"}),
        )
        .await;
    for hit in hits(&plain) {
        assert!(hit["explain"].get("contributions").is_none(), "{hit}");
    }
}

#[tokio::test]
async fn content_identity_merges_one_text_written_two_ways() {
    let memory = StubStore::hits(json!([
        {"id": "m1", "content": "The Straße  Café", "tier": "long", "topic": "t", "score": 0.9,
         "raw_distance": 0.1, "metadata": {}},
        {"id": "m2", "content": "something else", "tier": "long", "topic": "t", "score": 0.8,
         "raw_distance": 0.2, "metadata": {}},
    ]))
    .await;
    let other = StubStore::hits(json!([
        {"id": "o1", "content": "a third thing", "tier": "long", "topic": "t", "score": 0.9,
         "raw_distance": 0.1, "metadata": {}},
        {"id": "o2", "content": "the strasse\ncafe\u{301}", "tier": "long", "topic": "t",
         "score": 0.8, "raw_distance": 0.2, "metadata": {}},
    ]))
    .await;
    let callosum = Callosum::start(&config_yaml(&[
        ("a", "seren_memory", &memory.url, ""),
        ("b", "seren_memory", &other.url, ""),
    ]))
    .await;
    let (_, answer) = callosum
        .post("/search", json!({"query": "q", "identity": "content"}))
        .await;
    assert_eq!(
        rows(&answer),
        ["a:m1#1 +b:o2#2", "b:o1#1", "a:m2#2"],
        "{answer}"
    );
    // By key (the ids, here) nothing is shared.
    let (_, by_id) = callosum
        .post("/search", json!({"query": "q", "identity": "key"}))
        .await;
    assert_eq!(
        rows(&by_id),
        ["a:m1#1", "b:o1#1", "a:m2#2", "b:o2#2"],
        "{by_id}"
    );
}

#[tokio::test]
async fn mcp_search_takes_identity_and_lists_it_in_its_schema() {
    let (_notes, _facts, yaml) = stores().await;
    let callosum = Callosum::start(&yaml).await;
    let client = http_client(&callosum.url, None).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let search = tools.iter().find(|t| t.name == "search").unwrap();
    let schema = Value::Object(search.input_schema.as_ref().clone()).to_string();
    for word in [
        "identity",
        "also_from",
        "\"none\"",
        "\"key\"",
        "\"content\"",
    ] {
        assert!(schema.contains(word), "{word}: {schema}");
    }
    let merged =
        structured(&call(&client, "search", json!({"query": "q", "identity": "key"})).await);
    assert_merged_by_key(&merged);
    let (_, rest) = callosum
        .post("/search", json!({"query": "q", "identity": "key"}))
        .await;
    assert_eq!(merged, rest);
    let none =
        structured(&call(&client, "search", json!({"query": "q", "identity": "none"})).await);
    let plain = structured(&call(&client, "search", json!({"query": "q"})).await);
    assert_unmerged(&plain);
    assert_eq!(none, plain);
    let refused = call(
        &client,
        "search",
        json!({"query": "q", "identity": "fuzzy"}),
    )
    .await;
    let text = error_text(&refused);
    assert_eq!(
        text,
        "invalid arguments: identity: unknown variant `fuzzy`, expected one of `none`, `key`, `content`"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_bad_identity_or_identity_key_is_refused_naming_it() {
    let (_notes, _facts, yaml) = stores().await;
    let callosum = Callosum::start(&yaml).await;
    for bad in [json!("fuzzy"), json!(1), json!("KEY")] {
        let (status, answer) = callosum
            .post("/search", json!({"query": "q", "identity": bad}))
            .await;
        assert_eq!(status, 422, "{bad}: {answer}");
        let detail = answer["detail"].as_str().unwrap();
        assert!(detail.contains("identity: "), "{bad}: {detail}");
    }
    let (_, answer) = callosum
        .post("/search", json!({"query": "q", "identity": "fuzzy"}))
        .await;
    assert!(
        (answer["detail"].as_str().unwrap()).contains("expected one of `none`, `key`, `content`"),
        "{answer}"
    );
    // `/configure` names the knob and its words.
    let (status, answer) = callosum
        .post("/configure", json!({"identity": "fuzzy"}))
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        answer["detail"],
        "unknown identity 'fuzzy'; valid: ['none', 'key', 'content']"
    );
    // A store added at run time takes an identity_key, checked by the same rule.
    let (status, answer) = callosum
        .post(
            "/stores",
            json!({"name": "more", "type": "seren_loci", "url": "http://127.0.0.1:9",
                   "identity_key": "meta.path"}),
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        answer["detail"],
        "store 'more': identity_key must be id, content or metadata.<name> (a field of the store's hits), got \"meta.path\""
    );
    let (status, answer) = callosum
        .post(
            "/stores",
            json!({"name": "more", "type": "seren_loci", "url": "http://127.0.0.1:9",
                   "identity_key": "metadata.key"}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    // The config file: the start stops, naming the store and the field, and the knob's words.
    let dir = tempfile::tempdir().unwrap();
    let bad_key = yaml.replace("identity_key: metadata.path", "identity_key: path");
    let config = write_config(dir.path(), &bad_key);
    let output = run(command(&["check", "-c", &config])).await;
    assert_eq!(output.status.code(), Some(78));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("store 'notes': identity_key must be id, content or metadata.<name>"),
        "{stderr}"
    );
    let config = write_config(dir.path(), &with_knobs(yaml, "identity: fuzzy"));
    let output = run(command(&["check", "-c", &config])).await;
    assert_eq!(output.status.code(), Some(78));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("unknown federation.identity 'fuzzy'; valid: ['none', 'key', 'content']"),
        "{stderr}"
    );
}
