//! Loopback tests: both sample stores served for real and asked over HTTP, as the callosum asks them.
//!
//! Owns the end-to-end checks (status codes, wire shapes, filters, shutdown). The ranking itself is
//! tested beside each store's pure search function. Requests are written with serde_json rather than
//! reqwest's `json` feature, so these tests need only a plain reqwest.

use super::*;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::net::TcpStream;

/// A generous bound on waits that should take milliseconds, so a broken shutdown fails instead of
/// hanging the suite; it is never used to wait for something to become ready.
const PATIENCE: Duration = Duration::from_secs(10);

async fn post_to(url: &str, path: &str, body: impl Into<reqwest::Body>) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .post(format!("{url}{path}"))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await
        .expect("the sample store is listening");
    let status = response.status();
    let bytes = response.bytes().await.expect("a complete body");
    let value = serde_json::from_slice(&bytes).expect("every answer is JSON");
    (status, value)
}

async fn post_raw(url: &str, body: impl Into<reqwest::Body>) -> (StatusCode, Value) {
    post_to(url, "/search", body).await
}

async fn post(url: &str, body: Value) -> (StatusCode, Value) {
    post_raw(url, body.to_string()).await
}

async fn post_by_topic(url: &str, body: Value) -> (StatusCode, Value) {
    post_to(url, "/by_topic", body.to_string()).await
}

async fn get(url: &str) -> Value {
    let response = reqwest::get(url)
        .await
        .expect("the sample store is listening");
    assert_eq!(response.status(), StatusCode::OK, "{url}");
    let bytes = response.bytes().await.expect("a complete body");
    serde_json::from_slice(&bytes).expect("every answer is JSON")
}

fn ids(answer: &Value) -> Vec<&str> {
    answer["hits"]
        .as_array()
        .expect("hits is a list")
        .iter()
        .map(|h| h["id"].as_str().expect("every hit has a string id"))
        .collect()
}

#[tokio::test]
async fn spawned_stores_describe_themselves() {
    let shutdown = CancellationToken::new();
    let memory = spawn_memory_store(shutdown.clone()).await.expect("bind");
    let loci = spawn_loci_store(shutdown.clone()).await.expect("bind");
    assert_eq!((memory.kind, memory.name), ("seren_memory", "episodic"));
    assert_eq!((loci.kind, loci.name), ("seren_loci", "facts"));
    for store in [&memory, &loci] {
        assert!(store.url.starts_with("http://127.0.0.1:"), "{}", store.url);
        assert!(!store.url.ends_with('/'));
        assert_eq!(get(&format!("{}/health", store.url)).await["ok"], true);
    }
    let root = get(&memory.url).await;
    assert_eq!(root["service"], "SerenMemory (demo sample)");
    assert!(root["memories"].as_u64().is_some_and(|n| n >= 30));
    let root = get(&loci.url).await;
    assert_eq!(root["service"], "SerenLoci (demo sample)");
    assert!(root["facts"].as_u64().is_some_and(|n| n >= 30));
    shutdown.cancel();
}

#[tokio::test]
async fn memory_answers_ranked_hits() {
    let shutdown = CancellationToken::new();
    let store = spawn_memory_store(shutdown.clone()).await.expect("bind");
    // Exactly the body the callosum sends.
    let (status, answer) = post(
        &store.url,
        json!({"query": "cuda xavier", "n_results": 4, "include_short": true, "include_near": true,
               "include_long": true, "include_superseded": false, "with_surroundings": false}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["query"], "cuda xavier");
    assert_eq!(answer["searched_tiers"], json!(["short", "near", "long"]));
    let hits = answer["hits"].as_array().expect("hits is a list");
    assert_eq!(hits.len(), 4);
    let mut last_distance = 0.0;
    for hit in hits {
        for key in ["id", "content", "tier", "topic", "metadata"] {
            assert!(!hit[key].is_null(), "{key} in {hit}");
        }
        // Both keys are always present. Since the sample has cores, a long-tier hit carries its
        // surroundings (counts only: `with_surroundings` is false); other hits carry null.
        let object = hit.as_object().expect("a hit is an object");
        assert!(object.contains_key("surroundings") && object.contains_key("matched_via"));
        if hit["tier"] == "long" {
            assert!(hit["surroundings"]["satellites"].is_u64(), "{hit}");
            assert!(hit["surroundings"].get("recent").is_none(), "{hit}");
        } else {
            assert!(hit["surroundings"].is_null(), "{hit}");
        }
        assert_eq!(hit["metadata"]["source"], "demo");
        let distance = hit["raw_distance"].as_f64().expect("a number");
        assert!(
            distance >= last_distance,
            "BM25 order: distances never shrink"
        );
        last_distance = distance;
        assert!(hit["score"].as_f64().is_some_and(|s| s > 0.0 && s <= 1.0));
    }
    // Defaults: five hits when n_results is left out.
    let (_, answer) = post(&store.url, json!({"query": "xavier"})).await;
    assert_eq!(ids(&answer).len(), 5);
    shutdown.cancel();
}

#[tokio::test]
async fn memory_filters_tiers() {
    let shutdown = CancellationToken::new();
    let store = spawn_memory_store(shutdown.clone()).await.expect("bind");
    let (status, answer) = post(
        &store.url,
        json!({"query": "backup xavier cuda", "n_results": 50,
               "include_short": false, "include_near": false}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["searched_tiers"], json!(["long"]));
    let hits = answer["hits"].as_array().expect("hits is a list");
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h["tier"] == "long"));
    // The superseded memory appears only when asked for.
    let old = "jetpack 4.6 cuda 10.2";
    let (_, hidden) = post(&store.url, json!({"query": old})).await;
    assert!(!ids(&hidden).contains(&"mem-037"));
    let (_, shown) = post(
        &store.url,
        json!({"query": old, "include_superseded": true}),
    )
    .await;
    assert_eq!(ids(&shown).first(), Some(&"mem-037"));
    shutdown.cancel();
}

#[tokio::test]
async fn memory_refuses_bad_bodies_with_422() {
    let shutdown = CancellationToken::new();
    let store = spawn_memory_store(shutdown.clone()).await.expect("bind");
    let cases: &[(&str, &str)] = &[
        (r#"{"query": "cuda", "n_results": 51}"#, "n_results"),
        (r#"{"query": "cuda", "n_results": 0}"#, "n_results"),
        (r#"{"n_results": 5}"#, "query"),
        (r#"{"query": ["cuda"]}"#, "query"),
        ("cuda xavier", "body"),
        ("", "body"),
    ];
    for (body, field) in cases {
        let (status, answer) = post_raw(&store.url, body.to_string()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        let detail = answer["detail"].as_str().expect("detail is a string");
        assert!(
            detail.starts_with(&format!("{field}:")),
            "{body} gave {detail}"
        );
    }
    shutdown.cancel();
}

#[tokio::test]
async fn memory_shows_surroundings_and_satellites() {
    let shutdown = CancellationToken::new();
    let store = spawn_memory_store(shutdown.clone()).await.expect("bind");
    let (status, answer) = post(
        &store.url,
        json!({"query": "cuda xavier", "with_surroundings": true}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let hits = answer["hits"].as_array().expect("hits is a list");
    let core = hits
        .iter()
        .find(|h| {
            h["surroundings"]["recent"]
                .as_array()
                .is_some_and(|r| !r.is_empty())
        })
        .unwrap_or_else(|| panic!("a core with recent satellites in {answer}"));
    let surroundings = &core["surroundings"];
    let recent = surroundings["recent"].as_array().expect("recent is a list");
    assert!(recent.len() <= 3);
    assert!(surroundings["satellites"].as_u64() >= Some(recent.len() as u64));
    assert_eq!(surroundings["latest_satellite_at"], recent[0]["created_at"]);
    for pair in recent.windows(2) {
        assert!(
            pair[0]["created_at"].as_str() >= pair[1]["created_at"].as_str(),
            "newest first"
        );
    }
    for item in recent {
        for key in ["id", "content", "created_at"] {
            assert!(item[key].is_string(), "{key} in {item}");
        }
    }
    assert_eq!(core["id"], "mem-038");
    assert_eq!(surroundings["supersedes"], "mem-023");
    assert_eq!(surroundings["supersedes_entry"]["id"], "mem-023");

    // A satellite's match shows its core, naming the satellite.
    let (_, answer) = post(&store.url, json!({"query": "transcribes audio"})).await;
    assert_eq!(ids(&answer), ["mem-038"]);
    let via = &answer["hits"][0]["matched_via"];
    assert_eq!(via["id"], "mem-041");
    assert!(via["content"].is_string() && via["created_at"].is_string());
    assert_eq!(via["raw_distance"], answer["hits"][0]["raw_distance"]);
    let (_, answer) = post(
        &store.url,
        json!({"query": "transcribes audio", "include_satellites": true}),
    )
    .await;
    assert_eq!(ids(&answer), ["mem-041"]);
    assert!(answer["hits"][0]["matched_via"].is_null());
    shutdown.cancel();
}

#[tokio::test]
async fn memory_answers_by_topic() {
    let shutdown = CancellationToken::new();
    let store = spawn_memory_store(shutdown.clone()).await.expect("bind");
    let (status, answer) = post_by_topic(
        &store.url,
        json!({"topics": ["xavier", "cuda", "jetpack"], "n_results": 4,
               "exclude_ids": ["mem-024"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["topics"], json!(["xavier", "cuda", "jetpack"]));
    assert_eq!(answer["searched_tiers"], json!(["short", "near", "long"]));
    assert_eq!(ids(&answer), ["mem-038", "mem-013", "mem-001", "mem-014"]);
    let hits = answer["hits"].as_array().expect("hits is a list");
    assert_eq!(hits[0]["overlap"], 3);
    assert_eq!(
        hits[0]["matched_topics"],
        json!(["xavier", "cuda", "jetpack"])
    );
    assert_eq!(hits[1]["matched_topics"], json!(["xavier", "cuda"]));
    for hit in hits {
        for key in ["tier", "content", "topic", "metadata"] {
            assert!(!hit[key].is_null(), "{key} in {hit}");
        }
        let overlap = hit["overlap"].as_u64().expect("overlap is a count");
        assert_eq!(
            hit["matched_topics"].as_array().map(Vec::len),
            Some(overlap as usize)
        );
        assert_eq!(hit["metadata"]["source"], "demo");
    }
    let (_, answer) = post_by_topic(&store.url, json!({"topics": ["kyoto"]})).await;
    assert_eq!(ids(&answer), ["mem-009", "mem-018"]);
    shutdown.cancel();
}

#[tokio::test]
async fn memory_refuses_bad_topic_bodies_with_422() {
    let shutdown = CancellationToken::new();
    let store = spawn_memory_store(shutdown.clone()).await.expect("bind");
    let cases: &[(&str, &str)] = &[
        (r#"{"n_results": 5}"#, "topics"),
        (r#"{"topics": "cuda"}"#, "topics"),
        (r#"{"topics": []}"#, "topics"),
        (r#"{"topics": ["cuda", 7]}"#, "topics.1"),
        (r#"{"topics": ["cuda"], "n_results": 0}"#, "n_results"),
        (r#"{"topics": ["cuda"], "n_results": 51}"#, "n_results"),
        (
            r#"{"topics": ["cuda"], "exclude_ids": "mem-001"}"#,
            "exclude_ids",
        ),
        (
            r#"{"topics": ["cuda"], "exclude_ids": [1]}"#,
            "exclude_ids.0",
        ),
        ("cuda", "body"),
    ];
    for (body, field) in cases {
        let (status, answer) = post_to(&store.url, "/by_topic", body.to_string()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        let detail = answer["detail"].as_str().expect("detail is a string");
        assert!(
            detail.starts_with(&format!("{field}:")),
            "{body} gave {detail}"
        );
    }
    shutdown.cancel();
}

#[tokio::test]
async fn loci_exact_key_comes_first_with_score_one() {
    let shutdown = CancellationToken::new();
    let store = spawn_loci_store(shutdown.clone()).await.expect("bind");
    // Exactly the body the callosum sends (no project option set).
    let (status, answer) = post(
        &store.url,
        json!({"query": "Xavier.CUDA-Version", "n_results": 5, "include_fundamentals": true,
               "include_superseded": false}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["finder"], "lexical");
    assert!(answer["project"].is_null());
    let hits = answer["hits"].as_array().expect("hits is a list");
    assert!(hits.len() > 1 && hits.len() <= 5);
    assert_eq!(hits[0]["key"], "xavier.cuda-version");
    assert_eq!(hits[0]["score"], 1.0);
    assert_eq!(hits[0]["match_kind"], "exact");
    for hit in hits {
        assert!(hit["raw_distance"].is_null());
        assert_eq!(hit["live"], true);
        for key in [
            "id",
            "project",
            "key",
            "value",
            "source",
            "score",
            "match_kind",
        ] {
            assert!(!hit[key].is_null(), "{key} in {hit}");
        }
    }
    for hit in &hits[1..] {
        assert_eq!(hit["match_kind"], "lexical");
        assert!(hit["score"].as_f64().is_some_and(|s| s < 1.0));
    }
    shutdown.cancel();
}

#[tokio::test]
async fn loci_filters_projects() {
    let shutdown = CancellationToken::new();
    let store = spawn_loci_store(shutdown.clone()).await.expect("bind");
    let broad = "backup rust cuda editor travel";
    let (status, only) = post(
        &store.url,
        json!({"query": broad, "project": "homelab", "n_results": 50,
               "include_fundamentals": false}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(only["project"], "homelab");
    let hits = only["hits"].as_array().expect("hits is a list");
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h["project"] == "homelab"));

    let (_, with_fundamentals) = post(
        &store.url,
        json!({"query": broad, "project": "homelab", "n_results": 50}),
    )
    .await;
    let hits = with_fundamentals["hits"]
        .as_array()
        .expect("hits is a list");
    assert!(hits.iter().any(|h| h["project"] == "*"));
    assert!(
        hits.iter()
            .all(|h| h["project"] == "homelab" || h["project"] == "*")
    );

    let (_, zero) = post(&store.url, json!({"query": broad, "n_results": 0})).await;
    assert!(ids(&zero).is_empty());
    shutdown.cancel();
}

#[tokio::test]
async fn loci_refuses_bad_bodies_with_422() {
    let shutdown = CancellationToken::new();
    let store = spawn_loci_store(shutdown.clone()).await.expect("bind");
    let cases: &[(&str, &str)] = &[
        (r#"{"query": "cuda", "n_results": -1}"#, "n_results"),
        (r#"{"project": "wren"}"#, "query"),
        (r#"{"query": "cuda", "project": 7}"#, "project"),
        ("<xml/>", "body"),
    ];
    for (body, field) in cases {
        let (status, answer) = post_raw(&store.url, body.to_string()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        let detail = answer["detail"].as_str().expect("detail is a string");
        assert!(
            detail.starts_with(&format!("{field}:")),
            "{body} gave {detail}"
        );
    }
    shutdown.cancel();
}

#[tokio::test]
async fn demo_queries_reach_both_stores() {
    let shutdown = CancellationToken::new();
    let memory = spawn_memory_store(shutdown.clone()).await.expect("bind");
    let loci = spawn_loci_store(shutdown.clone()).await.expect("bind");
    let queries = [
        "that cuda thing on the xavier",
        "cuda driver mismatch",
        "jetpack",
        "backup",
        "rust",
    ];
    for query in queries {
        let (_, episodic) = post(&memory.url, json!({"query": query, "n_results": 3})).await;
        let (_, facts) = post(&loci.url, json!({"query": query, "n_results": 3})).await;
        assert_eq!(ids(&episodic).len(), 3, "{query} in memory");
        assert_eq!(ids(&facts).len(), 3, "{query} in loci");
    }
    // And some reach one store only.
    let (_, episodic) = post(&memory.url, json!({"query": "knee running"})).await;
    let (_, facts) = post(&loci.url, json!({"query": "knee running"})).await;
    assert!(!ids(&episodic).is_empty() && ids(&facts).is_empty());
    let (_, episodic) = post(&memory.url, json!({"query": "quad9 upstream"})).await;
    let (_, facts) = post(&loci.url, json!({"query": "quad9 upstream"})).await;
    assert!(ids(&episodic).is_empty() && !ids(&facts).is_empty());
    shutdown.cancel();
}

#[tokio::test]
async fn a_router_mounts_under_another_path() {
    let shutdown = CancellationToken::new();
    let app = Router::new()
        .nest("/memory", memory_router())
        .nest("/loci", loci_router());
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind");
    let base = url_of(listener.local_addr().expect("a bound address"));
    let server = tokio::spawn(serve(listener, app, shutdown.clone(), "mounted"));
    let (status, answer) = post(&format!("{base}/memory"), json!({"query": "jetpack"})).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!ids(&answer).is_empty());
    let (status, answer) =
        post_by_topic(&format!("{base}/memory"), json!({"topics": ["jetpack"]})).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!ids(&answer).is_empty());
    let (status, answer) = post(&format!("{base}/loci"), json!({"query": "jetpack"})).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!ids(&answer).is_empty());
    shutdown.cancel();
    let ended = tokio::time::timeout(PATIENCE, server).await;
    assert!(
        matches!(ended, Ok(Ok(Ok(())))),
        "serve ends cleanly: {ended:?}"
    );
}

/// Reads whatever arrives next: `Some(bytes)`, or `None` at end of stream or on a reset.
///
/// Written with `readable` + `try_read` because tokio's `io-util` extension traits are not among the
/// crate's features.
async fn read_some(stream: &TcpStream) -> Option<Vec<u8>> {
    let mut chunk = [0_u8; 1024];
    loop {
        stream.readable().await.ok()?;
        match stream.try_read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => return Some(chunk[..n].to_vec()),
            // Readiness can be spurious; wait for the next event.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(_) => return None,
        }
    }
}

async fn write_all(stream: &TcpStream, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        stream.writable().await.expect("writable");
        match stream.try_write(bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => panic!("write failed: {e}"),
        }
    }
}

/// Reads one HTTP/1.1 response off a kept-alive connection: headers, then `Content-Length` bytes.
async fn read_one_response(stream: &TcpStream) -> String {
    let mut buf = Vec::new();
    loop {
        let chunk = read_some(stream)
            .await
            .expect("the server answers before closing");
        buf.extend_from_slice(&chunk);
        let text = String::from_utf8_lossy(&buf).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(str::to_owned)
                })
                .and_then(|v| v.trim().parse::<usize>().ok())
                .expect("axum sets content-length on JSON answers");
            if body.len() >= length {
                return text;
            }
        }
    }
}

#[tokio::test]
async fn cancelling_the_token_stops_a_spawned_store() {
    let shutdown = CancellationToken::new();
    let store = spawn_memory_store(shutdown.clone()).await.expect("bind");
    let addr = store.url.trim_start_matches("http://").to_string();

    // One kept-alive connection that has finished a request, so the server holds it idle.
    let stream = TcpStream::connect(&addr)
        .await
        .expect("the store is listening");
    write_all(&stream, b"GET /health HTTP/1.1\r\nhost: sample\r\n\r\n").await;
    assert!(read_one_response(&stream).await.starts_with("HTTP/1.1 200"));

    shutdown.cancel();

    // Graceful shutdown closes idle connections: the read sees end of stream (or a reset), with
    // no timing assumption beyond the generous bound.
    let closed = tokio::time::timeout(PATIENCE, read_some(&stream)).await;
    assert_eq!(
        closed,
        Ok(None),
        "the idle connection was closed after cancel, with nothing sent"
    );

    // The listener is dropped as the accept loop ends, which races the connection's close above;
    // each refused-or-not attempt yields, so this settles within a few scheduler turns.
    let refused = tokio::time::timeout(PATIENCE, async {
        while TcpStream::connect(&addr).await.is_ok() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(
        refused.is_ok(),
        "new connections are refused after shutdown"
    );
}

#[tokio::test]
async fn serve_returns_once_cancelled() {
    let shutdown = CancellationToken::new();
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind");
    let url = url_of(listener.local_addr().expect("a bound address"));
    let server = tokio::spawn(serve(listener, loci_router(), shutdown.clone(), "facts"));
    assert_eq!(get(&format!("{url}/health")).await["ok"], true);
    shutdown.cancel();
    let ended = tokio::time::timeout(PATIENCE, server).await;
    assert!(
        matches!(ended, Ok(Ok(Ok(())))),
        "serve ends cleanly: {ended:?}"
    );
    assert!(
        reqwest::get(&url).await.is_err(),
        "nothing listens any more"
    );
}
