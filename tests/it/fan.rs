//! The fan, end to end: real stub stores on loopback, a real callosum in front, real HTTP between.

use crate::support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[tokio::test]
async fn interleaves_two_stores_by_rank_with_roster_order_breaking_ties() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1), ("m2", 0.2), ("m3", 0.3)])).await;
    let loci = StubStore::hits(loci_hits(&[("l1", 0.2), ("l2", 0.1)])).await;
    let callosum = Callosum::start(&config_yaml(&[
        ("episodic", "seren_memory", &memory.url, ""),
        ("facts", "seren_loci", &loci.url, ""),
    ]))
    .await;
    let (status, answer) = callosum.search("cuda", None).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        order(&answer),
        [
            "episodic:m1",
            "facts:l1",
            "episodic:m2",
            "facts:l2",
            "episodic:m3"
        ]
    );
    assert_eq!(answer["stores_searched"], json!(["episodic", "facts"]));
    assert_eq!(answer["failed"], json!([]));
    assert_eq!(answer["skipped"], json!([]));
    let first = &answer["hits"][0];
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for key in [
        "store",
        "id",
        "content",
        "score",
        "store_rank",
        "base_relevance",
        "native_score",
        "raw_distance",
        "metadata",
    ] {
        assert!(keys.contains(&key), "missing {key}: {first}");
    }
    assert_eq!(keys.len(), 9);
    assert_eq!(first["score"], json!(1.0 / 61.0));
    assert_eq!(first["store_rank"], 1);
    // Loci: relevance is Loci's score; the content is the rendered fact.
    let l1 = &answer["hits"][1];
    assert_eq!(l1["base_relevance"], 0.2);
    assert_eq!(l1["raw_distance"], Value::Null);
    assert_eq!(l1["content"], "key.l1 = v because w");

    // Declared the other way round, loci wins the ties.
    let callosum = Callosum::start(&config_yaml(&[
        ("facts", "seren_loci", &loci.url, ""),
        ("episodic", "seren_memory", &memory.url, ""),
    ]))
    .await;
    let (_, answer) = callosum.search("cuda", Some(3)).await;
    assert_eq!(order(&answer), ["facts:l1", "episodic:m1", "facts:l2"]);
}

#[tokio::test]
async fn weight_lets_one_store_outrank_another() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.0), ("m2", 0.0)])).await;
    let loci = StubStore::hits(loci_hits(&[("l1", 0.1), ("l2", 0.1)])).await;
    let callosum = Callosum::start(&config_yaml(&[
        ("episodic", "seren_memory", &memory.url, ""),
        ("facts", "seren_loci", &loci.url, "weight: 3"),
    ]))
    .await;
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(
        order(&answer),
        ["facts:l1", "facts:l2", "episodic:m1", "episodic:m2"]
    );
    assert_eq!(answer["hits"][0]["score"], json!(3.0 / 61.0));
}

#[tokio::test]
async fn floor_drops_weak_hits_before_ranking() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1), ("m2", 0.2)])).await;
    let loci = StubStore::hits(loci_hits(&[
        ("weak", 0.2),
        ("l1", 0.9),
        ("noise", 0.1),
        ("l2", 0.5),
    ]))
    .await;
    let callosum = Callosum::start(&config_yaml(&[
        ("episodic", "seren_memory", &memory.url, ""),
        ("facts", "seren_loci", &loci.url, "floor: 0.3"),
    ]))
    .await;
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(
        order(&answer),
        ["episodic:m1", "facts:l1", "episodic:m2", "facts:l2"]
    );
    assert_eq!(
        answer["hits"][1]["store_rank"], 1,
        "ranks count after the floor"
    );
}

#[tokio::test]
async fn every_kind_of_broken_store_degrades_to_failed() {
    let good = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let slow = StubStore::start(Behaviour::Slow(
        Duration::from_secs(30),
        json!({"hits": []}),
    ))
    .await;
    let error = StubStore::start(Behaviour::Status(500)).await;
    let unauthorized = StubStore::start(Behaviour::Status(401)).await;
    let html = StubStore::start(Behaviour::Raw("<html>oops</html>")).await;
    let wrong = StubStore::start(Behaviour::Json(
        json!({"hits": [{"id": "x", "score": "high"}]}),
    ))
    .await;
    let not_a_list = StubStore::start(Behaviour::Json(json!({"hits": {"id": "x"}}))).await;
    let dead = closed_port_url();
    let mut yaml = config_yaml(&[
        ("good", "seren_memory", &good.url, ""),
        ("dead", "seren_memory", &dead, ""),
        ("slow", "seren_memory", &slow.url, "timeout_s: 0.3"),
        ("error", "seren_memory", &error.url, ""),
        ("unauthorized", "seren_loci", &unauthorized.url, ""),
        ("html", "seren_memory", &html.url, ""),
        ("wrong", "seren_loci", &wrong.url, ""),
        ("not_a_list", "seren_memory", &not_a_list.url, ""),
    ]);
    yaml = yaml.replace("per_store_timeout_s: 2.0", "per_store_timeout_s: 5.0");
    let callosum = Callosum::start(&yaml).await;
    let started = Instant::now();
    let (status, answer) = callosum.search("q", None).await;
    let elapsed = started.elapsed();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(order(&answer), ["good:m1"]);
    assert_eq!(answer["stores_searched"], json!(["good"]));
    let reasons = failed(&answer);
    let reason = |name: &str| reason_of(&answer, name);
    assert_eq!(reasons.len(), 7, "{reasons:?}");
    assert_eq!(reason("dead"), "connect: connection refused");
    assert_eq!(reason("slow"), "timeout after 0.30s");
    assert_eq!(reason("error"), "status 500");
    assert_eq!(reason("unauthorized"), "status 401");
    assert!(
        reason("html").starts_with("decode: expected value"),
        "{}",
        reason("html")
    );
    assert!(
        reason("wrong").starts_with("decode: hits[0].score: invalid type"),
        "{}",
        reason("wrong")
    );
    assert!(
        reason("not_a_list").starts_with("decode: hits: invalid type"),
        "{}",
        reason("not_a_list")
    );
    // The failed list follows roster order.
    let names: Vec<&str> = reasons.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "dead",
            "slow",
            "error",
            "unauthorized",
            "html",
            "wrong",
            "not_a_list"
        ]
    );
    // The slow store was cut at its own 0.3 s, far inside the 30 s it would have taken; the bound
    // is a generous ratio of the configured timeout, not a tight wall-clock figure.
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    // No reason carries a url.
    assert!(
        !answer["failed"].to_string().contains("127.0.0.1"),
        "{}",
        answer["failed"]
    );
}

#[tokio::test]
async fn an_empty_answer_is_an_answer() {
    let empty = StubStore::start(Behaviour::Json(json!({"query": "q"}))).await;
    let callosum = Callosum::start(&config_yaml(&[(
        "episodic",
        "seren_memory",
        &empty.url,
        "",
    )]))
    .await;
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(answer["hits"], json!([]));
    assert_eq!(answer["stores_searched"], json!(["episodic"]));
    assert_eq!(answer["failed"], json!([]));
}

#[tokio::test]
async fn unknown_type_is_skipped_and_the_rest_still_works() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let callosum = Callosum::start(&config_yaml(&[
        ("weird", "quantum_brain", "http://127.0.0.1:1", ""),
        ("episodic", "seren_memory", &memory.url, ""),
        ("off", "seren_memory", &memory.url, "enabled: false"),
    ]))
    .await;
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(order(&answer), ["episodic:m1"]);
    assert_eq!(answer["skipped"][0]["name"], "weird");
    assert!(
        answer["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("unknown store type 'quantum_brain'")
    );
    assert_eq!(
        answer["skipped"].as_array().unwrap().len(),
        1,
        "disabled is not skipped"
    );
    assert_eq!(
        memory.captured().len(),
        1,
        "the disabled twin was never asked"
    );
    let (_, root) = callosum.get("/").await;
    assert_eq!(root["stores"], json!(["episodic"]));
    assert_eq!(root["skipped"][0]["name"], "weird");
    assert_eq!(root["service"], "SerenCorpusCallosum");
}

#[tokio::test]
async fn an_empty_config_answers_empty() {
    let callosum = Callosum::start("").await;
    let (status, answer) = callosum.search("anything", None).await;
    assert_eq!(status, 200);
    let config = callosum.config_path().display().to_string();
    assert_eq!(
        answer,
        json!({"query": "anything", "hits": [], "budget_tokens": null, "tokens": 0,
               "stores_searched": [], "failed": [], "skipped": [],
               "notes": [format!("no stores are configured, so nothing was searched: add one \
                                  with the add_store tool (or POST /stores), or under \
                                  federation.stores in {config}")]})
    );
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(stores["active"], 0);
    assert_eq!(stores["stores"], json!([]));
    assert_eq!(stores["k"], 60);
    assert_eq!(stores["n_results"], 10);
    assert_eq!(
        stores["types"],
        json!(["mcp", "seren_callosum", "seren_loci", "seren_memory"])
    );
}

#[tokio::test]
async fn each_adapter_sends_exactly_the_documented_body() {
    let memory = StubStore::hits(json!([])).await;
    let scoped = StubStore::hits(json!([])).await;
    let unscoped = StubStore::hits(json!([])).await;
    let inner = StubStore::hits(json!([])).await;
    let callosum = Callosum::start(&config_yaml(&[
        (
            "episodic",
            "seren_memory",
            &memory.url,
            "token: mem-secret\ninclude_near: false",
        ),
        (
            "facts",
            "seren_loci",
            &scoped.url,
            "project: jetson\nsearch_path: /v2/search",
        ),
        ("all-facts", "seren_loci", &unscoped.url, ""),
        ("inner", "seren_callosum", &inner.url, ""),
    ]))
    .await;
    // 40 x 2 = 80: Memory is clamped to 50, Loci is not, a callosum is clamped to 200.
    callosum.search("cuda on the xavier", Some(40)).await;
    let sent = memory.captured();
    assert_eq!(sent[0].path, "/search");
    assert_eq!(
        sent[0].body,
        json!({"query": "cuda on the xavier", "n_results": 50, "include_short": true, "include_near": false,
               "include_long": true, "include_superseded": false, "with_surroundings": false})
    );
    assert_eq!(sent[0].authorization.as_deref(), Some("Bearer mem-secret"));
    let sent = scoped.captured();
    assert_eq!(sent[0].path, "/v2/search");
    assert_eq!(
        sent[0].body,
        json!({"query": "cuda on the xavier", "n_results": 80, "include_fundamentals": true,
               "include_superseded": false, "project": "jetson"})
    );
    assert_eq!(sent[0].authorization, None, "no token, no header");
    assert_eq!(
        unscoped.captured()[0].body,
        json!({"query": "cuda on the xavier", "n_results": 80, "include_fundamentals": true, "include_superseded": false})
    );
    assert_eq!(
        inner.captured()[0].body,
        json!({"query": "cuda on the xavier", "n_results": 80})
    );

    // The default n (10) times the multiplier (2), and a small ask is clamped up to Memory's 1.
    callosum.search("q", None).await;
    assert_eq!(memory.captured()[1].body["n_results"], 20);
    assert_eq!(scoped.captured()[1].body["n_results"], 20);
}

#[tokio::test]
async fn a_callosum_fans_another_callosum() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1), ("m2", 0.2)])).await;
    let loci = StubStore::hits(loci_hits(&[("l1", 0.9)])).await;
    let inner = Callosum::start(&config_yaml(&[
        ("episodic", "seren_memory", &memory.url, ""),
        ("facts", "seren_loci", &loci.url, ""),
    ]))
    .await;
    let project = StubStore::hits(memory_hits(&[("p1", 0.3)])).await;
    let outer = Callosum::start(&config_yaml(&[
        ("team", "seren_callosum", &inner.url, "weight: 2"),
        ("project", "seren_memory", &project.url, ""),
    ]))
    .await;
    let (status, answer) = outer.search("q", None).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        order(&answer),
        ["team:m1", "team:l1", "team:m2", "project:p1"]
    );
    let second = &answer["hits"][1];
    assert_eq!(second["metadata"]["origin_store"], "facts");
    assert_eq!(second["metadata"]["origin_rank"], 1);
    assert_eq!(second["metadata"]["origin_score"], json!(1.0 / 61.0));
    assert_eq!(second["metadata"]["key"], "key.l1");
    assert_eq!(second["base_relevance"], 0.9);
    assert_eq!(second["store_rank"], 2);
}

/// A callosum served at `url` (a port picked beforehand), so its config can point back at it.
async fn callosum_at(
    url: &str,
    yaml: &str,
) -> (
    tokio_util::sync::CancellationToken,
    std::sync::Arc<tempfile::TempDir>,
) {
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let path = dir.path().join("seren-corpus-callosum.yaml");
    std::fs::write(&path, yaml).unwrap();
    let config = seren_corpus_callosum::config::Config::load_from(
        &path,
        &seren_corpus_callosum::config::Env::none(),
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind(url.trim_start_matches("http://"))
        .await
        .unwrap();
    let options = seren_corpus_callosum::cli::serve::Options {
        listener: Some(listener),
        ..Default::default()
    };
    let stop = tokio_util::sync::CancellationToken::new();
    seren_corpus_callosum::cli::serve::start(config, options, stop.clone())
        .await
        .unwrap();
    (stop, dir)
}

/// A loopback url whose port was free a moment ago.
fn free_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}", listener.local_addr().unwrap())
}

async fn post_search(url: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = test_client()
        .post(format!("{url}/search"))
        .json(&json!({"query": "q"}));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn a_store_pointed_back_at_this_callosum_is_a_loop_whatever_its_type() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let url = free_url();
    // One of each type at itself; once, two seren_memory entries at itself made 1,850 internal
    // requests and 1,013 calls to the real store for one search, with `failed` empty.
    let (stop, _dir) = callosum_at(
        &url,
        &config_yaml(&[
            ("episodic", "seren_memory", &memory.url, ""),
            ("me-as-memory", "seren_memory", &url, ""),
            ("me-again", "seren_memory", &url, ""),
            ("me-as-callosum", "seren_callosum", &url, ""),
        ]),
    )
    .await;
    let (status, answer) = post_search(&url, &[]).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["stores_searched"], json!(["episodic"]));
    for name in ["me-as-memory", "me-again", "me-as-callosum"] {
        assert_eq!(
            reason_of(&answer, name),
            "loop: status 508, the url leads back to a callosum this search already passed",
        );
    }
    assert_eq!(
        memory.captured().len(),
        1,
        "the real store is asked once per search"
    );
    // What the looped call itself answered.
    let sent = &memory.captured()[0].headers;
    assert_eq!(sent["x-seren-callosum-depth"], "1");
    assert_eq!(sent["x-seren-callosum-via"].len(), 16, "{sent:?}");
    let (status, refused) = post_search(
        &url,
        &[(
            "x-seren-callosum-via",
            sent["x-seren-callosum-via"].as_str(),
        )],
    )
    .await;
    assert_eq!(status, 508);
    assert_eq!(
        refused["detail"],
        "loop: this search has already passed through this callosum"
    );
    stop.cancel();
}

#[tokio::test]
async fn a_loop_through_another_callosum_stops_at_the_first_return() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let (a_url, b_url) = (free_url(), free_url());
    let (stop_a, _a) = callosum_at(
        &a_url,
        &config_yaml(&[
            ("episodic", "seren_memory", &memory.url, ""),
            ("b", "seren_callosum", &b_url, ""),
        ]),
    )
    .await;
    let (stop_b, _b) =
        callosum_at(&b_url, &config_yaml(&[("a", "seren_callosum", &a_url, "")])).await;
    let (status, answer) = post_search(&a_url, &[]).await;
    assert_eq!(status, 200, "{answer}");
    // B answered (with A's refusal in its own `failed`), so A counts it as searched.
    assert_eq!(answer["stores_searched"], json!(["episodic", "b"]));
    assert_eq!(memory.captured().len(), 1);
    let (_, from_b) = post_search(&b_url, &[]).await;
    // Asked directly, B fans A, which fans the store and then B again: B refuses, once.
    assert_eq!(from_b["stores_searched"], json!(["a"]));
    assert_eq!(memory.captured().len(), 2);
    stop_a.cancel();
    stop_b.cancel();
}

#[tokio::test]
async fn the_depth_and_the_call_budget_bound_what_one_search_causes() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let callosum = Callosum::start(&config_yaml(&[
        ("one", "seren_memory", &memory.url, ""),
        ("two", "seren_memory", &memory.url, ""),
        ("three", "seren_memory", &memory.url, ""),
    ]))
    .await;
    // `4294967295` once wrapped to 0 on the next hop; it saturates, and past 8 nothing is asked.
    for depth in ["8", "4294967295", "99999999999999999999"] {
        let (status, answer) =
            post_search(&callosum.url, &[("x-seren-callosum-depth", depth)]).await;
        assert_eq!(status, 200);
        assert_eq!(answer["stores_searched"], json!([]), "{depth}");
        assert!(reason_of(&answer, "one").starts_with("not asked: 8 callosums"));
    }
    assert_eq!(memory.captured().len(), 0);
    // A budget of 2 store calls: two stores are asked, the third is named, and what each asked
    // store may cause below it is what is left, shared: (2 - 2) / 2 = 0.
    let (_, answer) = post_search(&callosum.url, &[("x-seren-callosum-budget", "2")]).await;
    assert_eq!(answer["stores_searched"], json!(["one", "two"]));
    assert_eq!(
        reason_of(&answer, "three"),
        "not asked: this search's budget of 2 store calls is spent"
    );
    let calls = memory.captured();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].headers["x-seren-callosum-budget"], "0");
    // A direct search starts with 256 and gives each of three stores (256 - 3) / 3.
    callosum.search("q", None).await;
    assert_eq!(
        memory.captured()[2].headers["x-seren-callosum-budget"],
        "84"
    );
}

/// A plain search builds only the hits fusion can keep (`fusion::Keep`): a malformed hit past the
/// first `n_results` of a store is read over as JSON, not decoded, so the store still answers;
/// `explain` reads every hit (it lists the ones left out), so there the store's answer fails and
/// says which hit.
#[tokio::test]
async fn a_malformed_hit_past_what_a_plain_search_keeps_does_not_fail_the_store() {
    let mut hits = memory_hits(&[("m1", 0.1), ("m2", 0.2), ("m3", 0.3), ("m4", 0.4)]);
    hits[3]["content"] = json!(["not", "a", "string"]);
    let memory = StubStore::hits(hits).await;
    let callosum = Callosum::start(&config_yaml(&[(
        "episodic",
        "seren_memory",
        &memory.url,
        "",
    )]))
    .await;

    let (status, body) = callosum.search("q", Some(3)).await;
    assert_eq!(status, 200, "{body}");
    let ids: Vec<&str> = (body["hits"].as_array().unwrap().iter())
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["m1", "m2", "m3"], "{body}");
    assert_eq!(body["failed"], json!([]), "{body}");

    // The fourth hit is one a search of 4 keeps: the store's answer fails, naming it.
    let (status, body) = callosum.search("q", Some(4)).await;
    assert_eq!(status, 200, "{body}");
    let reason = body["failed"][0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("hits[3].content"), "{body}");

    let (status, body) = (callosum)
        .post(
            "/search",
            json!({"query": "q", "n_results": 3, "explain": true}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let reason = body["failed"][0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("hits[3].content"), "{body}");
}
