//! Live knobs: `POST /configure` (atomic, 5.3.0's names), `GET /knobs`, and a change seen by the
//! very next search on every surface while a search under way keeps the knobs it started with.

use crate::support::fault::{Fault, FaultStore};
use crate::support::mcp::*;
use crate::support::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Two stores whose first hits tie on rank: the roster order decides, until a weight says.
async fn two_stores() -> (Callosum, StubStore, StubStore) {
    let facts = StubStore::hits(loci_hits(&[("l1", 0.9), ("l2", 0.8)])).await;
    let episodic = StubStore::hits(memory_hits(&[("m1", 0.1), ("m2", 0.2)])).await;
    let callosum = Callosum::start(&config_yaml(&[
        ("facts", "seren_loci", &facts.url, ""),
        ("episodic", "seren_memory", &episodic.url, ""),
    ]))
    .await;
    (callosum, facts, episodic)
}

async fn configure(callosum: &Callosum, body: Value) -> (u16, Value) {
    callosum.post("/configure", body).await
}

#[tokio::test]
async fn one_bad_field_among_good_ones_changes_nothing() {
    let (callosum, _f, _e) = two_stores().await;
    let (_, before) = callosum.get("/stores").await;
    let (status, refused) = configure(
        &callosum,
        json!({"k": 30, "n_results": 5, "hops": 9, "stores": [{"name": "facts", "weight": 2.0}]}),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["detail"], "hops must be within 1..=5, got 9");
    let (_, after) = callosum.get("/stores").await;
    assert_eq!(before, after, "nothing was applied");
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(answer["hits"][0]["score"], json!(1.0 / 61.0));

    let (status, applied) = configure(
        &callosum,
        json!({"k": 30, "n_results": 5, "stores": [{"name": "facts", "weight": 2.0}]}),
    )
    .await;
    assert_eq!(status, 200, "{applied}");
    assert_eq!(
        applied,
        json!({"ok": true, "active": 2, "changed": {"k": 30, "n_results": 5,
               "stores": [{"name": "facts", "weight": 2.0, "floor": 0.0}]}})
    );
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(stores["k"], 30);
    assert_eq!(stores["stores"][0]["weight"], 2.0);
}

#[tokio::test]
async fn every_refusal_says_what_is_wrong() {
    let (callosum, _f, _e) = two_stores().await;
    let cases = [
        (json!({"k": 0}), 422, "k must be a whole number >= 1, got 0"),
        (
            json!({"n_results": 0}),
            422,
            "n_results must be within 1..=200, got 0",
        ),
        (
            json!({"fetch_multiplier": 101}),
            422,
            "fetch_multiplier must be within 1..=100, got 101",
        ),
        (
            json!({"per_store_timeout_s": -1.0}),
            422,
            "per_store_timeout_s must be a number of seconds within 0.001..=3600 (1 ms to an hour), got -1",
        ),
        (
            json!({"authority_margin": 2.0}),
            422,
            "authority_margin must be within 0..=1, got 2",
        ),
        (
            json!({"budget_tokens": 1_000_000}),
            422,
            "budget_tokens must be within 1..=100000, got 1000000",
        ),
        (
            json!({"fusion_mode": "percentile"}),
            422,
            "unknown fusion_mode 'percentile'; valid: ['rrf']",
        ),
        (
            json!({"stores": [{"weight": 2.0}]}),
            422,
            "stores[0]: name is required",
        ),
        (
            json!({"stores": [{"name": "facts", "floor": 1.5}]}),
            422,
            "stores[0] (facts): floor must be within 0..=1, got 1.5",
        ),
        (
            json!({"stores": [{"name": "facts", "weight": 0.0}]}),
            422,
            "stores[0] (facts): weight must be a finite number > 0, got 0",
        ),
        (
            json!({"stores": [{"name": "nope", "weight": 2.0}]}),
            404,
            "no store named 'nope'",
        ),
        (
            json!({"k": "sixty"}),
            422,
            "invalid body: k: invalid type: string \"sixty\", expected u32",
        ),
    ];
    for (body, status, detail) in cases {
        let (got, answer) = configure(&callosum, body.clone()).await;
        assert_eq!(
            (got, answer["detail"].as_str().unwrap_or("")),
            (status, detail),
            "{body}"
        );
    }
    // A key this service does not read is named, not dropped (5.3.0 drops `rrf_k` silently).
    let (status, answer) = configure(&callosum, json!({"rrf_k": 30})).await;
    assert_eq!(status, 422);
    assert!(
        answer["detail"]
            .as_str()
            .unwrap()
            .starts_with("invalid body: rrf_k: unknown field `rrf_k`, expected one of `k`"),
        "{answer}"
    );
    // An empty body changes nothing and says so; 0 clears a default page [5.3].
    let (status, answer) = configure(&callosum, json!({})).await;
    assert_eq!((status, answer["changed"].clone()), (200, json!({})));
    configure(&callosum, json!({"budget_tokens": 500})).await;
    let (_, answer) = configure(&callosum, json!({"budget_tokens": 0})).await;
    assert_eq!(answer["changed"], json!({"budget_tokens": null}));
}

#[tokio::test]
async fn a_change_is_seen_by_the_next_rest_and_mcp_search() {
    let (callosum, _f, _e) = two_stores().await;
    let client = http_client(&callosum.url, None).await.unwrap();
    let first = |answer: &Value| answer["hits"][0]["store"].as_str().unwrap().to_owned();
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(first(&answer), "facts", "the roster order breaks the tie");
    let (status, _) = configure(
        &callosum,
        json!({"stores": [{"name": "episodic", "weight": 3.0}]}),
    )
    .await;
    assert_eq!(status, 200);
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(first(&answer), "episodic");
    let over_mcp = structured(&call(&client, "search", json!({"query": "q"})).await);
    assert_eq!(first(&over_mcp), "episodic");
    assert_eq!(over_mcp["hits"][0]["score"], json!(3.0 / 61.0));
}

#[tokio::test]
async fn a_search_under_way_keeps_the_knobs_it_started_with() {
    let facts = StubStore::hits(loci_hits(&[("l1", 0.9)])).await;
    let slow = FaultStore::start(Fault::SlowHeaders(Duration::from_millis(800))).await;
    let callosum = Arc::new(
        Callosum::start(&config_yaml(&[
            ("facts", "seren_loci", &facts.url, ""),
            ("slow", "seren_memory", &slow.url, ""),
        ]))
        .await,
    );
    let held = tokio::spawn({
        let callosum = callosum.clone();
        async move { callosum.search("q", None).await }
    });
    // The search has its knobs once it is waiting on the slow store.
    assert!(slow.wait_for_connections(1, Duration::from_secs(10)).await);
    let (status, _) = configure(&callosum, json!({"k": 1})).await;
    assert_eq!(status, 200);
    let (_, answer) = held.await.unwrap();
    assert_eq!(
        answer["hits"][0]["score"],
        json!(1.0 / 61.0),
        "started with k = 60"
    );
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(
        answer["hits"][0]["score"],
        json!(1.0 / 2.0),
        "the next one has k = 1"
    );
}

#[tokio::test]
async fn overrides_survive_other_stores_coming_and_going_and_go_with_their_own() {
    let (callosum, facts, _e) = two_stores().await;
    let add = |name: &str| json!({"name": name, "type": "seren_loci", "url": facts.url});
    assert_eq!(callosum.post("/stores", add("extra")).await.0, 200);
    let (status, _) = configure(
        &callosum,
        json!({"stores": [{"name": "facts", "weight": 2.0}, {"name": "extra", "floor": 0.5}]}),
    )
    .await;
    assert_eq!(status, 200);
    let row = |stores: &Value, name: &str| {
        stores["stores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["name"] == name)
            .map(|row| {
                (
                    row["weight"].as_f64().unwrap(),
                    row["floor"].as_f64().unwrap(),
                )
            })
    };
    assert_eq!(callosum.post("/stores", add("more")).await.0, 200);
    assert_eq!(callosum.delete("/stores/more").await.0, 200);
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(row(&stores, "facts"), Some((2.0, 0.0)));
    assert_eq!(row(&stores, "extra"), Some((1.0, 0.5)));
    // Removed, its override goes with it: added again, it starts from its entry.
    assert_eq!(callosum.delete("/stores/extra").await.0, 200);
    assert_eq!(callosum.post("/stores", add("extra")).await.0, 200);
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(row(&stores, "extra"), Some((1.0, 0.0)));
    assert_eq!(row(&stores, "facts"), Some((2.0, 0.0)));
}

#[tokio::test]
async fn knobs_say_live_file_and_default_and_never_a_secret() {
    let facts = StubStore::hits(loci_hits(&[("l1", 0.9)])).await;
    let secret_url = facts.url.replace("http://", "http://user:pw-SECRET@") + "/?key=SECRET2";
    let yaml = format!(
        "server:\n  bearer_token: SECRET3-inbound\nfederation:\n  k: 40\n  stores:\n    - name: facts\n      type: seren_loci\n      url: {secret_url}\n      token: SECRET4-outbound\n      weight: 1.5\n"
    );
    let callosum = Callosum::start(&yaml).await;
    let knobs = || async {
        let response = callosum
            .client
            .get(format!("{}/knobs", callosum.url))
            .bearer_auth("SECRET3-inbound")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.text().await.unwrap()
    };
    let text = knobs().await;
    for secret in ["SECRET", "pw-"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["server"]["auth"], "inline");
    let k = |answer: &Value| {
        answer["federation"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["key"] == "k")
            .cloned()
            .unwrap()
    };
    let row = k(&answer);
    assert_eq!(
        (
            row["live"].clone(),
            row["yaml"].clone(),
            row["default"].clone()
        ),
        (json!(40), json!(40), json!(60))
    );
    assert_eq!(row["twiddled"], false);
    assert_eq!(answer["stores"][0]["where"], "yaml");
    assert_eq!(answer["stores"][0]["knobs"][0]["yaml"], 1.5);
    // Changed live, and the file edited since: the file is read again, the live value stands.
    let configured = callosum
        .client
        .post(format!("{}/configure", callosum.url))
        .bearer_auth("SECRET3-inbound")
        .json(&json!({"k": 20}))
        .send()
        .await
        .unwrap();
    assert_eq!(configured.status(), 200);
    // `yaml` is the config in force: the file as last loaded, not as it stands on disk.
    std::fs::write(callosum.config_path(), yaml.replace("k: 40", "k: 50")).unwrap();
    let answer: Value = serde_json::from_str(&knobs().await).unwrap();
    let row = k(&answer);
    assert_eq!(
        (row["live"].clone(), row["yaml"].clone()),
        (json!(20), json!(40))
    );
    assert_eq!(row["twiddled"], true);
    // Loaded, the file's change of that very knob is the later change: it wins.
    let loader: seren_corpus_callosum::reload::Loader = Arc::new(|running| running.reread());
    seren_corpus_callosum::reload::reload(&callosum.federation, &loader)
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&knobs().await).unwrap();
    let row = k(&answer);
    assert_eq!(
        (row["live"].clone(), row["yaml"].clone()),
        (json!(50), json!(50))
    );
    assert_eq!(row["twiddled"], false);
    // Both are behind the token.
    let (status, _) = callosum.get("/knobs").await;
    assert_eq!(status, 401);
    let (status, _) = callosum.post("/configure", json!({"k": 5})).await;
    assert_eq!(status, 401);
}

/// A valid value for a knob other than its default: one more, a half more, the other flag, a
/// page where there is none; a knob with one value (5.3.0's `fusion_mode`) keeps it.
fn other_than(default: &Value) -> Value {
    match default {
        Value::Bool(on) => Value::Bool(!on),
        Value::Null => json!(500),
        Value::Number(n) if n.is_u64() => json!(n.as_u64().unwrap() + 1),
        Value::Number(n) => json!(n.as_f64().unwrap() + 0.5),
        other => other.clone(),
    }
}

/// The `federation` row of `GET /knobs` for `key`.
async fn knob_row(callosum: &Callosum, key: &str) -> Value {
    let (_, knobs) = callosum.get("/knobs").await;
    let rows = knobs["federation"].as_array().unwrap();
    rows.iter().find(|r| r["key"] == key).unwrap().clone()
}

#[tokio::test]
async fn every_knob_is_read_from_the_file_set_live_and_listed_with_its_default() {
    // A knob cannot be half-added: each one `GET /knobs` lists, and each one `GET /stores`
    // names as supported, is read from the file, taken by `/configure` when it says it is
    // live, and shown with its default where nothing sets it.
    let plain = Callosum::start("").await;
    let (status, knobs) = plain.get("/knobs").await;
    assert_eq!(status, 200);
    let rows = knobs["federation"].as_array().unwrap().clone();
    let (_, stores) = plain.get("/stores").await;
    for name in stores["supported_knobs"].as_array().unwrap() {
        assert!(
            rows.iter().any(|row| &row["key"] == name),
            "{name} is supported but /knobs does not list it"
        );
    }
    assert!(rows.len() >= 14, "{}", rows.len());
    // The table is what is listed: every entry, in 5.3.0's order, and nothing else.
    let table: Vec<&str> = seren_corpus_callosum::config::listed()
        .map(|knob| knob.name)
        .collect();
    assert_eq!(table.len(), seren_corpus_callosum::config::TABLE.len());
    let listed: Vec<&str> = rows
        .iter()
        .map(|row| row["key"].as_str().unwrap())
        .collect();
    assert_eq!(listed, table);
    // A knob a search may set for itself is an argument of the MCP `search` tool (whose schema
    // is `SearchRequest`'s), and a knob that is one says so in the table.
    let schema = serde_json::to_value(schemars::schema_for!(
        seren_corpus_callosum::api::SearchRequest
    ))
    .unwrap();
    for knob in seren_corpus_callosum::config::TABLE {
        let argument = schema["properties"].get(knob.name).is_some();
        assert_eq!(
            argument, knob.per_call,
            "{}: per_call against the tool's schema",
            knob.name
        );
    }
    // And it is taken by `POST /search`.
    for knob in seren_corpus_callosum::config::TABLE
        .iter()
        .filter(|knob| knob.per_call)
    {
        let value = other_than(&knob.default.value());
        let (status, answer) = plain
            .post("/search", json!({ "query": "q", knob.name: value }))
            .await;
        assert_eq!(status, 200, "{}: {answer}", knob.name);
    }
    for row in &rows {
        let key = row["key"].as_str().unwrap();
        let default = &row["default"];
        assert_eq!(&row["live"], default, "{key}: live without a file");
        assert_eq!(row["is_default"], true, "{key}");
        let value = other_than(default);
        // The file.
        let yaml = format!("federation:\n  {key}: {value}\n");
        let from_file = Callosum::start(&yaml).await;
        let found = knob_row(&from_file, key).await;
        assert_eq!(found["yaml"], value, "{key} from the file: {found}");
        assert_eq!(found["live"], value, "{key} from the file: {found}");
        assert_eq!(&found["default"], default, "{key}");
        // `/configure`, where the knob is live.
        if row["runtime_settable"] == true {
            let (status, answer) = plain.post("/configure", json!({ key: value })).await;
            assert_eq!(status, 200, "{key}: {answer}");
            let live = knob_row(&plain, key).await["live"].clone();
            assert_eq!(live, value, "{key} after /configure");
        }
    }
}
