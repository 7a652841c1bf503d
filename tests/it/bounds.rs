//! What one store answer can cost a search: topic tags read in linear time and capped, one budget
//! of store calls across every round and the topic edges, one deadline for the whole search, and
//! a bound on the bytes of store answers a search and the process hold.

use crate::support::process::{self, Server};
use crate::support::*;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// A memory store that answers every `/search` with one hit whose id is new each time (so every
/// hop round finds something new), after `first` for the search's own query and `later` for a
/// hop's bridge, and every `/by_topic` with no hits; it counts both.
#[derive(Clone, Default)]
struct Counting {
    searches: Arc<AtomicUsize>,
    topics: Arc<AtomicUsize>,
    first: Duration,
    later: Duration,
}

impl Counting {
    async fn serve(self) -> (String, tokio_util::sync::DropGuard) {
        let router = Router::new()
            .route("/search", post(counting_search))
            .route("/by_topic", post(counting_topics))
            .with_state(self);
        let stop = CancellationToken::new();
        (
            serve_loopback(router, stop.clone()).await,
            stop.drop_guard(),
        )
    }

    fn calls(&self) -> (usize, usize) {
        (
            self.searches.load(Ordering::SeqCst),
            self.topics.load(Ordering::SeqCst),
        )
    }
}

async fn counting_search(State(stub): State<Counting>, body: Bytes) -> impl IntoResponse {
    let n = stub.searches.fetch_add(1, Ordering::SeqCst);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let wait = if body["query"] == "needle" {
        stub.first
    } else {
        stub.later
    };
    tokio::time::sleep(wait).await;
    axum::Json(json!({"hits": [{
        "id": format!("h{n}"), "content": format!("word{n} more{n}"), "tier": "short",
        "topic": "cuda", "score": 0.9, "raw_distance": 0.1, "metadata": {}
    }]}))
}

async fn counting_topics(State(stub): State<Counting>) -> impl IntoResponse {
    stub.topics.fetch_add(1, Ordering::SeqCst);
    axum::Json(json!({"hits": []}))
}

/// `count` memory stores, all served by `url`, under `federation:` settings `extra`.
fn many_stores(count: usize, url: &str, extra: &str) -> String {
    let mut yaml = format!(
        "federation:\n  max_stores: {}\n{extra}  stores:\n",
        count.max(1)
    );
    for i in 0..count {
        yaml.push_str(&format!(
            "    - name: s{i}\n      type: seren_memory\n      url: {url}\n"
        ));
    }
    yaml
}

fn notes(answer: &Value) -> Vec<String> {
    (answer["notes"].as_array().map(Vec::as_slice))
        .unwrap_or_default()
        .iter()
        .map(|n| n.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn hops_and_topic_edges_share_one_budget_of_store_calls() {
    let stub = Counting::default();
    let (url, _stop) = stub.clone().serve().await;
    let knobs = "  hops: 5\n  hop_budget: 50\n  edges_enabled: true\n  edge_budget: 5\n";
    let callosum = Callosum::start(&many_stores(64, &url, knobs)).await;
    let (status, answer) = callosum.search("needle", Some(1)).await;
    assert_eq!(status, 200, "{answer}");
    let (searches, topics) = stub.calls();
    // The default budget is 256 calls: four rounds of 64, and nothing left for the fifth round
    // or for the topic edges (before, 64 × 5 + 64 = 384 calls were made).
    assert_eq!(
        searches + topics,
        256,
        "{searches} searches, {topics} topic calls"
    );
    assert_eq!((searches, topics), (256, 0));
    assert_eq!(
        notes(&answer),
        [
            "hop round 5 not run: this search's budget of 256 store calls is spent",
            "topic edges not asked: this search's budget of 256 store calls is spent",
        ]
    );
    assert_eq!(
        answer["failed"],
        json!([]),
        "every store answered round one"
    );
    let hop_hits = (answer["hits"].as_array().unwrap().iter())
        .filter(|h| h["metadata"]["hop"].is_number())
        .count();
    assert_eq!(hop_hits, 3, "rounds 2 to 4 each added a hit: {answer}");
}

#[tokio::test]
async fn a_fan_wider_than_the_budget_asks_the_budget_and_names_the_rest() {
    let stub = Counting::default();
    let (url, _stop) = stub.clone().serve().await;
    let knobs = "  hops: 5\n  edges_enabled: true\n";
    let callosum = Callosum::start(&many_stores(300, &url, knobs)).await;
    let (status, answer) = callosum.search("needle", Some(1)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(stub.calls(), (256, 0), "300 stores, a budget of 256 calls");
    let over = failed(&answer);
    assert_eq!(over.len(), 44);
    assert_eq!(over[0].0, "s256");
    assert!(
        over.iter()
            .all(|(_, why)| why == "not asked: this search's budget of 256 store calls is spent"),
        "{over:?}"
    );
    assert_eq!(
        notes(&answer),
        [
            "hop rounds 2-5 not run: this search's budget of 256 store calls is spent",
            "topic edges not asked: this search's budget of 256 store calls is spent",
        ]
    );
}

#[tokio::test]
async fn with_room_in_the_budget_every_round_and_the_topic_edges_run() {
    let stub = Counting::default();
    let (url, _stop) = stub.clone().serve().await;
    let knobs = "  hops: 3\n  hop_budget: 50\n  edges_enabled: true\n";
    let callosum = Callosum::start(&many_stores(8, &url, knobs)).await;
    let (status, answer) = callosum.search("needle", Some(1)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        stub.calls(),
        (24, 8),
        "3 rounds of 8 stores, then 8 topic calls"
    );
    assert!(
        answer.get("notes").is_none(),
        "nothing was left out: {answer}"
    );
}

#[tokio::test]
async fn hop_rounds_that_cannot_fit_the_deadline_are_skipped_and_said() {
    // Eight stores answering in 0.6 s under a 1 s timeout: after the first round, 0.4 s are left,
    // less than a round takes, so no hop round starts (before, the search took 5 rounds, 3 s).
    let stub = Counting {
        first: Duration::from_millis(600),
        later: Duration::from_millis(600),
        ..Counting::default()
    };
    let (url, _stop) = stub.clone().serve().await;
    let knobs = "  per_store_timeout_s: 1.0\n  hops: 5\n  hop_budget: 50\n";
    let callosum = Callosum::start(&many_stores(8, &url, knobs)).await;
    let started = Instant::now();
    let (status, answer) = callosum.search("needle", Some(1)).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(stub.calls(), (8, 0), "the first round only");
    let notes = notes(&answer);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("hop rounds 2-5 not run: 0.")
            && notes[0]
                .contains("of this search's 1.00s deadline are left and its first round took 0.6"),
        "{notes:?}"
    );
    // A bound on behaviour, not a timing: five rounds would have taken 3 s.
    assert!(took < Duration::from_millis(2500), "{took:?}");
}

#[tokio::test]
async fn a_hop_round_is_cut_at_the_deadline_without_blaming_the_stores() {
    // The first round answers at once; a hop's bridge takes 3 s, past what is left of the 1 s
    // deadline: the round is cut there, and the stores are not marked as failing.
    let stub = Counting {
        first: Duration::ZERO,
        later: Duration::from_secs(3),
        ..Counting::default()
    };
    let (url, _stop) = stub.clone().serve().await;
    let knobs = "  per_store_timeout_s: 1.0\n  hops: 5\n  hop_budget: 50\n";
    let callosum = Callosum::start(&many_stores(4, &url, knobs)).await;
    let started = Instant::now();
    let (status, answer) = callosum.search("needle", Some(1)).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(stub.calls(), (8, 0), "the first round and one hop round");
    assert_eq!(
        order(&answer).len(),
        1,
        "the hop round found nothing in time"
    );
    assert_eq!(
        notes(&answer),
        ["hop round 2: 4 of 4 stores gave no answer within this search's 1.00s deadline"]
    );
    // Five hop rounds of 1 s each would have taken 4 s and more.
    assert!(took < Duration::from_millis(2500), "{took:?}");
    let (_, health) = callosum.get("/health/stores").await;
    for store in health["stores"].as_array().unwrap() {
        assert_eq!(store["consecutive_failures"], 0, "{store}");
        assert_ne!(store["breaker"], "open", "{store}");
    }
}

/// A memory hit whose `topic` holds `tags`, the rest of its metadata `note`.
fn tagged(tags: &str, note: &str) -> Value {
    json!({"hits": [{"id": "m1", "content": "memory one", "tier": "short", "topic": tags,
                     "score": 0.9, "raw_distance": 0.1, "metadata": {"note": note}}]})
}

async fn time_searches(callosum: &Callosum, rounds: usize) -> Duration {
    let started = Instant::now();
    for _ in 0..rounds {
        let (status, answer) = callosum.search("q", None).await;
        assert_eq!(status, 200, "{answer}");
    }
    started.elapsed()
}

#[tokio::test]
async fn a_hundred_thousand_topic_tags_cost_what_the_same_bytes_cost_elsewhere() {
    let tags = (0..100_000)
        .map(|i| format!("tag{i}"))
        .collect::<Vec<_>>()
        .join(",");
    // The same answer twice: the tags in `topic`, or the same bytes in another member.
    let with_tags = StubStore::start(Behaviour::Paths(vec![
        ("/search", Behaviour::Json(tagged(&tags, ""))),
        ("/by_topic", Behaviour::Json(json!({"hits": []}))),
    ]))
    .await;
    let without = StubStore::start(Behaviour::Paths(vec![
        ("/search", Behaviour::Json(tagged("cuda", &tags))),
        ("/by_topic", Behaviour::Json(json!({"hits": []}))),
    ]))
    .await;
    let config = |url: &str| {
        config_yaml(&[("m", "seren_memory", url, "")])
            .replace("  stores:\n", "  edges_enabled: true\n  stores:\n")
    };
    let tagged_callosum = Callosum::start(&config(&with_tags.url)).await;
    let plain_callosum = Callosum::start(&config(&without.url)).await;
    // Warm both (connections, first decode), then time them in turns.
    time_searches(&tagged_callosum, 1).await;
    time_searches(&plain_callosum, 1).await;
    let (mut tagged_time, mut plain_time) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..3 {
        tagged_time += time_searches(&tagged_callosum, 2).await;
        plain_time += time_searches(&plain_callosum, 2).await;
    }
    let ratio = tagged_time.as_secs_f64() / plain_time.as_secs_f64();
    // Linear and capped, the tags cost about what reading their bytes costs; quadratic, 100,000
    // tags took seconds against milliseconds.
    assert!(
        ratio < 5.0,
        "{tagged_time:?} with tags, {plain_time:?} without: {ratio:.1}×"
    );
    let asked = with_tags
        .captured()
        .into_iter()
        .find(|c| c.path == "/by_topic")
        .expect("the topic edges were asked");
    let topics = asked.body["topics"].as_array().unwrap();
    assert_eq!(topics.len(), 32, "one hit gives at most 32 tags");
    assert_eq!(topics[0], "tag0");
}

/// An answer of `hits` memory hits of about `each` bytes of content: just under the 8 MiB cap
/// for 1,000 hits of 8,000 bytes.
fn big_answer(hits: usize, each: usize) -> Bytes {
    let content = "x".repeat(each);
    let hits: Vec<Value> = (0..hits)
        .map(|i| {
            json!({"id": format!("h{i}"), "content": content, "tier": "short",
                        "score": 0.5, "raw_distance": 1.0, "metadata": {}})
        })
        .collect();
    Bytes::from(serde_json::to_vec(&json!({ "hits": hits })).unwrap())
}

#[tokio::test]
async fn the_bytes_a_search_holds_are_bounded_and_said_so() {
    let body = big_answer(1000, 8000);
    assert!(body.len() < 8 * 1024 * 1024 && body.len() > 7 * 1024 * 1024);
    let store = StubStore::canned(body, Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let mut yaml = many_stores(64, &store.url, "  per_store_timeout_s: 60\n");
    yaml.insert_str(0, "server:\n  port: 0\n  watch: false\n");
    let config = process::write_config(dir.path(), &yaml);
    let mut server = Server::start(process::command(&["serve", "-c", &config]));
    let url = process::listening_url(&server.wait_for("listening on"));
    let client = test_client();
    let idle = process::status_kib(server.pid(), "VmHWM:");
    let search = || async {
        let response = client
            .post(format!("{url}/search"))
            .json(&json!({"query": "q", "budget_tokens": 100000}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.json::<Value>().await.unwrap()
    };
    let answers = futures_util::future::join_all((0..4).map(|_| search())).await;
    let peak = process::status_kib(server.pid(), "VmHWM:");
    eprintln!(
        "peak RSS: {} MiB idle, {} MiB after four 64-store near-cap searches",
        idle / 1024,
        peak / 1024
    );
    for answer in &answers {
        let dropped: Vec<_> = failed(answer)
            .into_iter()
            .filter(|(_, why)| why.starts_with("answer dropped: "))
            .collect();
        // Four answers of 8 MiB fill a search's 32 MiB: most of the 64 are dropped, and say why.
        eprintln!("{} of 64 answers dropped", dropped.len());
        assert!(dropped.len() >= 56, "{} dropped", dropped.len());
        assert!(!answer["stores_searched"].as_array().unwrap().is_empty());
    }
    // Unbounded, four such searches peaked near 2 GB.
    assert!(peak < 512 * 1024, "peak RSS {} MiB", peak / 1024);
    // A dropped answer is not the store's failure: no health record is marked by it.
    let health = process::get_json(&url, "/health/stores").await;
    for store in health["stores"].as_array().unwrap() {
        assert_eq!(store["failed_calls"], 0, "{store}");
        assert_eq!(store["breaker"], "closed", "{store}");
    }
    drop(server);
}

/// A memory store that holds every search for `hold`, counting the calls it has under way and the
/// most it ever had at once.
#[derive(Clone, Default)]
struct Crowded {
    now: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    hold: Duration,
}

async fn crowded_search(State(stub): State<Crowded>) -> impl IntoResponse {
    let now = stub.now.fetch_add(1, Ordering::SeqCst) + 1;
    stub.most.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(stub.hold).await;
    stub.now.fetch_sub(1, Ordering::SeqCst);
    axum::Json(json!({"hits": memory_hits(&[("m1", 0.1), ("m2", 0.2)])}))
}

async fn crowded_store(hold: Duration) -> (Crowded, String, tokio_util::sync::DropGuard) {
    let stub = Crowded {
        hold,
        ..Crowded::default()
    };
    let router = Router::new()
        .route("/search", post(crowded_search))
        .with_state(stub.clone());
    let stop = CancellationToken::new();
    let url = serve_loopback(router, stop.clone()).await;
    (stub, url, stop.drop_guard())
}

#[tokio::test]
async fn a_store_never_has_more_calls_of_ours_at_once_than_the_cap() {
    let (stub, url, _stop) = crowded_store(Duration::from_millis(150)).await;
    let yaml = format!(
        "server:\n  max_calls_per_store: 2\n{}",
        config_yaml(&[("mem", "seren_memory", &url, "")])
    );
    let callosum = Callosum::start(&yaml).await;
    let searches = (0..8).map(|i| {
        let callosum = &callosum;
        async move { callosum.search(&format!("q{i}"), Some(5)).await }
    });
    let answers = futures_util::future::join_all(searches).await;
    for (status, answer) in &answers {
        assert_eq!(*status, 200, "{answer}");
        assert_eq!(order(answer), ["mem:m1", "mem:m2"], "{answer}");
        assert!(failed(answer).is_empty(), "{answer}");
    }
    // Eight searches at once, two calls at a time: the cap was reached and never passed.
    assert_eq!(stub.most.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_wait_for_a_free_call_counts_against_the_store_timeout() {
    // One call at a time, each held 700 ms, under a 1 s timeout: the first search is answered;
    // the next, 100 ms later, waits about 600 ms for the call, has about 400 ms left for a call
    // that takes 700, and is named a timeout of the whole second.
    let (stub, url, _stop) = crowded_store(Duration::from_millis(700)).await;
    let yaml = format!(
        "server:\n  max_calls_per_store: 1\n{}",
        config_yaml(&[("mem", "seren_memory", &url, "timeout_s: 1.0")])
    );
    let callosum = Callosum::start(&yaml).await;
    let first = callosum.search("first", Some(5));
    let second = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        callosum.search("second", Some(5)).await
    };
    let ((_, first), (_, second)) = tokio::join!(first, second);
    assert_eq!(order(&first), ["mem:m1", "mem:m2"], "{first}");
    assert_eq!(reason_of(&second, "mem"), "timeout after 1.00s", "{second}");
    assert_eq!(stub.most.load(Ordering::SeqCst), 1);
}
