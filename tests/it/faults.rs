//! Fault injection: stores that hang, trickle, never end, lie, reset, or answer garbage. The answer
//! still comes back, on time, with every bad store named in `failed`; the circuit breaker stops a
//! hanging store from taxing every search; nothing panics.

use axum::response::IntoResponse;

use crate::support::fault::{Fault, FaultStore};
use crate::support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A config whose stores time out after `timeout` seconds, with the breaker off unless asked.
fn yaml(timeout: f64, breaker: &str, stores: &[(&str, &str, &str)]) -> String {
    let mut yaml = format!("federation:\n  per_store_timeout_s: {timeout}\n{breaker}  stores:\n");
    for (name, kind, url) in stores {
        yaml.push_str(&format!(
            "    - name: {name}\n      type: {kind}\n      url: {url}\n"
        ));
    }
    yaml
}

const NO_BREAKER: &str = "  breaker_failures: 0\n";

#[tokio::test]
async fn every_transport_fault_degrades_within_the_deadline() {
    let good = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let hang = FaultStore::start(Fault::Hang).await;
    let slow = FaultStore::start(Fault::SlowHeaders(Duration::from_secs(60))).await;
    let trickle = FaultStore::start(Fault::Trickle).await;
    let endless = FaultStore::start(Fault::Endless).await;
    let oversize = FaultStore::start(Fault::Oversize).await;
    let reset = FaultStore::start(Fault::ResetMidBody).await;
    let timeout = 0.8;
    let callosum = Callosum::start(&yaml(
        timeout,
        NO_BREAKER,
        &[
            ("good", "seren_memory", &good.url),
            ("hang", "seren_memory", &hang.url),
            ("slow", "seren_loci", &slow.url),
            ("trickle", "seren_memory", &trickle.url),
            ("endless", "seren_memory", &endless.url),
            ("oversize", "seren_loci", &oversize.url),
            ("reset", "seren_memory", &reset.url),
        ],
    ))
    .await;
    for round in 0..2 {
        let started = Instant::now();
        let (status, answer) = callosum.search("q", None).await;
        let elapsed = started.elapsed();
        assert_eq!(status, 200, "{answer}");
        assert_eq!(order(&answer), ["good:m1"], "round {round}");
        assert_eq!(reason_of(&answer, "hang"), "timeout after 0.80s");
        assert_eq!(reason_of(&answer, "slow"), "timeout after 0.80s");
        assert_eq!(reason_of(&answer, "trickle"), "timeout after 0.80s");
        assert_eq!(reason_of(&answer, "endless"), "body over the 8192 KiB cap");
        assert_eq!(reason_of(&answer, "oversize"), "body over the 8192 KiB cap");
        let reset_reason = reason_of(&answer, "reset");
        assert!(reset_reason.starts_with("transport: "), "{reset_reason}");
        // The whole search is bounded by the store timeout, whatever the stores do: a generous
        // ratio, not a tight wall-clock figure.
        assert!(
            elapsed < Duration::from_secs_f64(timeout * 3.0),
            "round {round} took {elapsed:?}"
        );
    }
}

#[tokio::test]
async fn a_kept_connection_the_store_closes_is_asked_again_once() {
    let body = serde_json::to_vec(&json!({"hits": memory_hits(&[("m1", 0.1)])})).unwrap();
    let store = FaultStore::start(Fault::ClosesKeptConnection(body)).await;
    let callosum = Callosum::start(&yaml(
        2.0,
        NO_BREAKER,
        &[("mem", "seren_memory", &store.url)],
    ))
    .await;
    // Each search after the first meets the connection the store is closing, and is asked again
    // on a fresh one.
    for round in 0..3 {
        let (status, answer) = callosum.search("q", None).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(order(&answer), ["mem:m1"], "round {round}: {answer}");
        assert_eq!(store.connections(), round + 1, "round {round}");
    }
    // A store that closes every connection unanswered is asked twice, no more, and named: once on
    // the pooled connection (which the store closes, as above) and once on a fresh one.
    store.set(Fault::CloseUnanswered);
    let before = store.connections();
    let (status, answer) = callosum.search("q", None).await;
    assert_eq!(status, 200, "{answer}");
    assert!(order(&answer).is_empty(), "{answer}");
    let reason = reason_of(&answer, "mem");
    assert!(reason.starts_with("transport: "), "{reason}");
    assert_eq!(store.connections() - before, 1);
    let (_, answer) = callosum.search("q", None).await;
    assert!(
        reason_of(&answer, "mem").starts_with("transport: "),
        "{answer}"
    );
    assert_eq!(store.connections() - before, 3);
}

#[tokio::test]
async fn bad_answers_are_data_not_crashes() {
    let deep = format!(
        "{{\"hits\":[{{\"id\":\"x\",\"metadata\":{{\"a\":{}1{}}}}}]}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let huge = format!(
        "{{\"hits\":[{{\"id\":\"huge\",\"content\":\"{}\",\"raw_distance\":0.1}}]}}",
        "x".repeat(2 * 1024 * 1024)
    );
    let mut invalid_utf8 = b"{\"hits\":[{\"id\":\"bad\",\"content\":\"".to_vec();
    invalid_utf8.extend_from_slice(&[0xff, 0xfe, 0xc3]);
    invalid_utf8.extend_from_slice(b"\"}]}");
    let cases: Vec<(&str, &str, FaultStore)> = vec![
        ("nan", "seren_memory", FaultStore::json(r#"{"hits":[{"id":"a","raw_distance":NaN}]}"#).await),
        ("infinity", "seren_memory", FaultStore::json(r#"{"hits":[{"id":"a","score":"Infinity"}]}"#).await),
        ("huge-number", "seren_loci", FaultStore::json(r#"{"hits":[{"id":"a","score":1e400}]}"#).await),
        ("string-score", "seren_loci", FaultStore::json(r#"{"hits":[{"id":"a","score":"0.9"}]}"#).await),
        ("deep", "seren_memory", FaultStore::json(deep).await),
        ("utf8", "seren_memory", FaultStore::start(Fault::Body(invalid_utf8)).await),
        ("empty", "seren_memory", FaultStore::json("").await),
        ("html", "seren_callosum", FaultStore::json("<html><body>502 Bad Gateway</body></html>").await),
        ("negative", "seren_memory", FaultStore::json(r#"{"hits":[{"id":"neg","raw_distance":-5,"content":"n"}]}"#).await),
        ("dupes", "seren_loci", FaultStore::json(r#"{"hits":[{"id":"d","key":"k","value":"one","score":0.5},{"id":"d","key":"k","value":"two","score":0.4}]}"#).await),
        ("huge", "seren_memory", FaultStore::json(huge).await),
        ("odd-id", "seren_memory", FaultStore::json(r#"{"hits":[{"id":{"nested":[1,2]},"raw_distance":"far","tier":7,"topic":["a"]}]}"#).await),
    ];
    let stores: Vec<(&str, &str, &str)> = cases
        .iter()
        .map(|(n, k, s)| (*n, *k, s.url.as_str()))
        .collect();
    let callosum = Callosum::start(&yaml(5.0, NO_BREAKER, &stores)).await;
    let (status, answer) = callosum.search("q", Some(50)).await;
    assert_eq!(status, 200, "{answer}");
    for (name, needle) in [
        ("nan", "decode: hits[0].raw_distance: expected value"),
        // Never the value: a store may echo the query into any field, and reasons are public.
        (
            "infinity",
            "decode: hits[0].score: invalid type: string, expected f64",
        ),
        ("huge-number", "decode: hits[0].score: number out of range"),
        (
            "string-score",
            "decode: hits[0].score: invalid type: string, expected f64",
        ),
        // The object is checked whole: no key of the store's own choosing is shown either.
        (
            "deep",
            "decode: hits[0].metadata: nested deeper than 64 levels",
        ),
        (
            "utf8",
            "decode: hits[0].content: invalid unicode code point",
        ),
        ("empty", "decode: EOF while parsing a value"),
        ("html", "decode: expected value"),
    ] {
        let reason = reason_of(&answer, name);
        assert!(reason.starts_with(needle), "{name}: {reason}");
    }
    // The reason stays short, however deep the value.
    assert!(reason_of(&answer, "deep").len() < 120);
    assert_eq!(
        answer["stores_searched"],
        json!(["negative", "dupes", "huge", "odd-id"])
    );
    let hits = answer["hits"].as_array().unwrap();
    let by_id = |id: &str| hits.iter().filter(|h| h["id"] == id).collect::<Vec<_>>();
    assert_eq!(
        by_id("neg")[0]["base_relevance"],
        1.0,
        "a negative distance clamps to 0"
    );
    assert_eq!(
        by_id("d").len(),
        2,
        "a store's duplicate ids are both kept, ranked 1 and 2"
    );
    assert_eq!(
        by_id("huge")[0]["content"].as_str().unwrap().len(),
        2 * 1024 * 1024
    );
    let odd = by_id("{\"nested\":[1,2]}");
    assert_eq!(odd.len(), 1, "a non-string id is rendered as its JSON text");
    assert_eq!(odd[0]["raw_distance"], 0.0);
    assert_eq!(odd[0]["metadata"]["tier"], 7);
}

#[tokio::test]
async fn the_breaker_skips_a_hanging_store_then_probes_it_back() {
    let good = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let flaky = FaultStore::start(Fault::Hang).await;
    let callosum = Callosum::start(&yaml(
        0.4,
        "  breaker_failures: 2\n  breaker_cooldown_s: 0.3\n  breaker_max_cooldown_s: 0.6\n",
        &[
            ("good", "seren_memory", &good.url),
            ("flaky", "seren_memory", &flaky.url),
        ],
    ))
    .await;
    for _ in 0..2 {
        let (_, answer) = callosum.search("q", None).await;
        assert_eq!(reason_of(&answer, "flaky"), "timeout after 0.40s");
    }
    // Open: skipped at once, with the last error as the reason, and not called at all (the
    // store saw no new connection; a clock would say the same, less surely on a busy machine).
    let calls_before = flaky.connections();
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(
        reason_of(&answer, "flaky"),
        "circuit open: timeout after 0.40s"
    );
    assert_eq!(order(&answer), ["good:m1"]);
    assert_eq!(
        flaky.connections(),
        calls_before,
        "an open circuit calls nobody"
    );
    let (_, health) = callosum.get("/health/stores").await;
    let row = health["stores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "flaky")
        .unwrap()
        .clone();
    assert_eq!(row["breaker"], "open", "{health}");
    assert_eq!(row["consecutive_failures"], 2);
    assert_eq!(row["health_status"], "unhealthy");
    assert!(row["short_circuited"].as_u64().unwrap() >= 1);
    assert_eq!(row["last_error"], "timeout after 0.40s");
    assert_eq!(health["healthy"], 1);
    assert_eq!(health["unhealthy"], 1);
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(stores["stores"][1]["breaker"], "open");
    assert_eq!(stores["stores"][0]["breaker"], "closed");

    // The store comes back: once the cool-down the health page names has passed, the next search
    // is the probe, and it closes the circuit. (The transitions themselves are tested on a clock
    // of their own in `health.rs`.)
    flaky.set(Fault::Body(
        br#"{"hits":[{"id":"f1","raw_distance":0.2}]}"#.to_vec(),
    ));
    let retry_in = row["breaker_retry_in_s"].as_f64().unwrap();
    tokio::time::sleep(Duration::from_secs_f64(retry_in + 0.05)).await;
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(
        answer["stores_searched"],
        json!(["good", "flaky"]),
        "{answer}"
    );
    assert_eq!(order(&answer), ["good:m1", "flaky:f1"]);
    let (_, health) = callosum.get("/health/stores").await;
    let row = health["stores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "flaky")
        .unwrap()
        .clone();
    assert_eq!(row["breaker"], "closed");
    assert_eq!(row["consecutive_failures"], 0);
}

#[tokio::test]
async fn health_is_public_and_survives_roster_changes() {
    let store = StubStore::hits(memory_hits(&[("x1", 0.1)])).await;
    let yaml = format!(
        "server:\n  bearer_token: t0k\n{}",
        yaml(2.0, "", &[("base", "seren_memory", &store.url)])
    );
    let callosum = Callosum::start(&yaml).await;
    let client = &callosum.client;
    let add = json!({"name": "extra", "type": "seren_memory", "url": store.url});
    let search = json!({"query": "q"});
    let send = |method: reqwest::Method, path: &str, body: Option<&Value>| {
        let mut request = client
            .request(method, format!("{}{path}", callosum.url))
            .bearer_auth("t0k");
        if let Some(body) = body {
            request = request.json(body);
        }
        async move { request.send().await.unwrap().status() }
    };
    // Add, search, remove, add again, search again: the config store's record outlives every
    // roster change; the removed store's record goes with it (it once stayed on this public page
    // for good, and a new store under the same name inherited its breaker).
    assert_eq!(
        send(reqwest::Method::POST, "/stores", Some(&add)).await,
        200
    );
    assert_eq!(
        send(reqwest::Method::POST, "/search", Some(&search)).await,
        200
    );
    assert_eq!(
        send(reqwest::Method::DELETE, "/stores/extra", None).await,
        200
    );
    assert_eq!(
        send(reqwest::Method::POST, "/stores", Some(&add)).await,
        200
    );
    assert_eq!(
        send(reqwest::Method::POST, "/search", Some(&search)).await,
        200
    );
    // No token needed for health, like /health.
    let (status, health) = callosum.get("/health/stores").await;
    assert_eq!(status, 200);
    let rows = health["stores"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{health}");
    let (base, extra) = (&rows[0], &rows[1]);
    assert_eq!(
        (base["name"].as_str(), extra["name"].as_str()),
        (Some("base"), Some("extra"))
    );
    assert_eq!(
        base["total_calls"], 2,
        "the base store's record outlived the changes: {health}"
    );
    assert_eq!(
        extra["total_calls"], 1,
        "the re-added store starts afresh: {health}"
    );
    assert_eq!(base["health_status"], "healthy");
    assert_eq!(base["success_rate"], 1.0);
    // Removed, a store leaves the page.
    send(reqwest::Method::DELETE, "/stores/extra", None).await;
    let (_, health) = callosum.get("/health/stores").await;
    assert_eq!(health["stores"].as_array().unwrap().len(), 1, "{health}");
}

#[tokio::test]
async fn a_store_that_refuses_some_queries_is_not_shut_out_for_everyone() {
    // A store that answers 422 to long queries (SerenMemory does to some bodies): once, three
    // such queries opened its circuit, and everyone's searches skipped it from then on.
    let router =
        axum::Router::new().fallback(axum::routing::post(|body: axum::body::Bytes| async move {
            let query: Value = serde_json::from_slice(&body).unwrap();
            if query["query"].as_str().unwrap().len() > 100 {
                (axum::http::StatusCode::UNPROCESSABLE_ENTITY, "too long").into_response()
            } else {
                axum::Json(json!({"hits": [{"id": "m1", "content": "c", "raw_distance": 0.1}]}))
                    .into_response()
            }
        }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let callosum = Callosum::start(&yaml(2.0, "", &[("picky", "seren_memory", &url)])).await;
    for _ in 0..10 {
        let (_, answer) = callosum.search(&"long ".repeat(40), None).await;
        assert_eq!(reason_of(&answer, "picky"), "status 422");
    }
    let (_, answer) = callosum.search("short", None).await;
    assert_eq!(answer["stores_searched"], json!(["picky"]), "{answer}");
    let (_, health) = callosum.get("/health/stores").await;
    assert_eq!(health["stores"][0]["breaker"], "closed");
}

#[tokio::test]
async fn the_binary_never_panics_on_bad_stores() {
    let stores = [
        FaultStore::json(r#"{"hits":[{"score":"x"}]}"#).await,
        FaultStore::start(Fault::ResetMidBody).await,
        FaultStore::start(Fault::Endless).await,
        FaultStore::json(format!(
            "{{\"hits\":{}0{}}}",
            "[".repeat(5000),
            "]".repeat(5000)
        ))
        .await,
    ];
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.yaml");
    let entries: Vec<(String, &str, &str)> = stores
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("s{i}"), "seren_memory", s.url.as_str()))
        .collect();
    let refs: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|(n, k, u)| (n.as_str(), *k, *u))
        .collect();
    std::fs::write(&config, yaml(2.0, NO_BREAKER, &refs)).unwrap();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_seren-corpus-callosum"))
        .args(["search", "--json", "-c", &config.display().to_string(), "q"])
        .env_clear()
        .env("SEREN_SCC_LOG", "debug")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["failed"].as_array().unwrap().len(), 4, "{answer}");
}
