//! Test support: scriptable stub stores and a callosum, each a real HTTP server on an ephemeral
//! loopback port. Nothing here mocks the HTTP layer: every call crosses a real socket.

pub mod fault;
pub mod mcp;
pub mod mcp_server;
pub mod otlp;
pub mod process;
pub mod stdio;
pub mod tls;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use seren_corpus_callosum::cli::serve;
use seren_corpus_callosum::config::Config;
use seren_corpus_callosum::federation::Federation;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What anyone may read without the token (the contract's §6): the service card, health, and the
/// viewer page. Written out here, so tests need not ask the code's own `is_public`.
pub const PUBLIC: [&str; 7] = [
    "GET /",
    "GET /health",
    "GET /health/stores",
    "GET /.well-known/oauth-protected-resource",
    "GET /.well-known/oauth-protected-resource/mcp",
    "GET /viewer",
    "GET /viewer/",
];

/// What a stub store does with a search.
#[derive(Clone, Debug)]
pub enum Behaviour {
    /// Answer 200 with this JSON.
    Json(Value),
    /// Answer this status with a small JSON body.
    Status(u16),
    /// Answer 200 with this raw body (for non-JSON answers).
    Raw(&'static str),
    /// Wait this long, then answer the JSON.
    Slow(Duration, Value),
    /// By request path: the first entry whose path matches; 404 for any other path.
    Paths(Vec<(&'static str, Behaviour)>),
    /// By query: the hits of the first entry whose words the request's `query` contains (`""`
    /// matches any).
    ByQuery(Vec<(&'static str, Value)>),
}

/// One request a stub store received.
#[derive(Clone, Debug)]
pub struct Captured {
    pub path: String,
    pub body: Value,
    pub authorization: Option<String>,
    /// Every header, by lower-case name.
    pub headers: std::collections::HashMap<String, String>,
}

#[derive(Clone)]
struct StubState {
    behaviour: Behaviour,
    captured: Arc<Mutex<Vec<Captured>>>,
}

/// A store on loopback that answers as scripted and records what it was sent.
pub struct StubStore {
    pub url: String,
    captured: Arc<Mutex<Vec<Captured>>>,
    /// Connections accepted so far (counted by the canned stores only).
    accepted: Arc<std::sync::atomic::AtomicUsize>,
    _stop: tokio_util::sync::DropGuard,
}

impl StubStore {
    pub async fn start(behaviour: Behaviour) -> Self {
        let captured = Arc::new(Mutex::new(Vec::new()));
        let state = StubState {
            behaviour,
            captured: captured.clone(),
        };
        let router = Router::new().fallback(post(stub_answer)).with_state(state);
        let stop = CancellationToken::new();
        let url = serve_loopback(router, stop.clone()).await;
        Self {
            url,
            captured,
            accepted: Arc::default(),
            _stop: stop.drop_guard(),
        }
    }

    /// A store that answers `/search` with `body` (and `/by_topic` with no hits) after
    /// `latency`, as cheaply as it can: no capture, no parse, the bytes as given. The load bench's
    /// stores.
    pub async fn canned(body: Bytes, latency: Duration) -> Self {
        Self::canned_with_topics(body, Bytes::from_static(br#"{"hits":[]}"#), latency).await
    }

    /// As [`StubStore::canned`], answering `/by_topic` with `topics` (the bench's packet runs).
    pub async fn canned_with_topics(body: Bytes, topics: Bytes, latency: Duration) -> Self {
        let router = Router::new()
            .route("/search", post(canned_answer).with_state((body, latency)))
            .route(
                "/by_topic",
                post(canned_answer).with_state((topics, latency)),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        let listener = axum::serve::ListenerExt::tap_io(listener, move |_| {
            count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
        let stop = CancellationToken::new();
        let cancelled = stop.clone().cancelled_owned();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(cancelled)
                .await;
        });
        Self {
            url,
            captured: Arc::default(),
            accepted,
            _stop: stop.drop_guard(),
        }
    }

    /// A store answering these hits.
    pub async fn hits(hits: Value) -> Self {
        Self::start(Behaviour::Json(json!({ "hits": hits }))).await
    }

    /// Connections a canned store has accepted so far (keep-alive: far fewer than requests).
    pub fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Every request received so far.
    pub fn captured(&self) -> Vec<Captured> {
        self.captured.lock().unwrap().clone()
    }
}

async fn stub_answer(
    State(state): State<StubState>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    state.captured.lock().unwrap().push(Captured {
        path: uri.path().to_owned(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        headers: headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect(),
    });
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    answer(state.behaviour, uri.path(), &body).await
}

async fn answer(behaviour: Behaviour, path: &str, body: &Value) -> Response {
    match behaviour {
        Behaviour::ByQuery(entries) => {
            let query = body["query"].as_str().unwrap_or("");
            let hits = entries
                .into_iter()
                .find(|(words, _)| query.contains(words))
                .map_or(json!([]), |(_, hits)| hits);
            axum::Json(json!({ "hits": hits })).into_response()
        }
        Behaviour::Paths(paths) => match paths.into_iter().find(|(p, _)| *p == path) {
            Some((_, behaviour)) => Box::pin(answer(behaviour, path, body)).await,
            None => (
                StatusCode::NOT_FOUND,
                axum::Json(json!({"detail": "no route"})),
            )
                .into_response(),
        },
        Behaviour::Json(value) => axum::Json(value).into_response(),
        Behaviour::Status(code) => (
            StatusCode::from_u16(code).unwrap(),
            axum::Json(json!({"detail": "scripted"})),
        )
            .into_response(),
        Behaviour::Raw(text) => ([("content-type", "application/json")], text).into_response(),
        Behaviour::Slow(wait, value) => {
            tokio::time::sleep(wait).await;
            axum::Json(value).into_response()
        }
    }
}

async fn canned_answer(State((body, latency)): State<(Bytes, Duration)>) -> Response {
    if !latency.is_zero() {
        // A thread sleep on the blocking pool rather than `tokio::time::sleep`: tokio's timer has a
        // 1 ms granularity and rounds up, which would put up to a millisecond of the stub's own into
        // every "added over L" figure. A thread sleep overshoots by tens of microseconds.
        let _ = tokio::task::spawn_blocking(move || std::thread::sleep(latency)).await;
    }
    ([("content-type", "application/json")], body).into_response()
}

/// Serves `router` on an ephemeral loopback port until `stop` is cancelled: its `http://` url.
pub async fn serve_loopback(router: Router, stop: CancellationToken) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await
            .unwrap();
    });
    url
}

/// Memory-shaped hits with the given ids and distances.
pub fn memory_hits(items: &[(&str, f64)]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|(id, d)| {
                json!({"id": id, "content": format!("memory {id}"), "tier": "short", "topic": "t",
                       "score": 1.0 / (1.0 + d), "raw_distance": d, "metadata": {}})
            })
            .collect(),
    )
}

/// Loci-shaped hits with the given ids and scores.
pub fn loci_hits(items: &[(&str, f64)]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|(id, score)| {
                json!({"id": id, "project": "p", "key": format!("key.{id}"), "value": "v", "why": "w",
                       "score": score, "match_kind": "lexical", "source": "user", "raw_distance": null})
            })
            .collect(),
    )
}

/// A callosum served on loopback from a config written into its own temp directory.
pub struct Callosum {
    pub url: String,
    pub dir: Arc<tempfile::TempDir>,
    pub client: reqwest::Client,
    pub federation: Arc<Federation>,
    stop: CancellationToken,
    /// The server's end (`serve::Started::finished`), until [`Callosum::stop`] awaits it.
    finished: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Drop for Callosum {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Callosum {
    /// Starts a callosum whose config file holds `yaml`.
    pub async fn start(yaml: &str) -> Self {
        Self::start_in(Arc::new(tempfile::tempdir().unwrap()), yaml).await
    }

    /// Starts a callosum in `dir` (a restart reuses the directory, and so the overlay).
    pub async fn start_in(dir: Arc<tempfile::TempDir>, yaml: &str) -> Self {
        let path = dir.path().join("seren-corpus-callosum.yaml");
        std::fs::write(&path, yaml).unwrap();
        let config = Config::load_from(&path, &seren_corpus_callosum::config::Env::none()).unwrap();
        Self::start_with(dir, config).await
    }

    /// Starts a callosum on `config` as `serve` starts one (`cli::serve::start`: the federation,
    /// the warm-up, the graceful shutdown when dropped), on a loopback port the system picks and
    /// without a reload watch (a test reloads when it says so).
    pub async fn start_with(dir: Arc<tempfile::TempDir>, config: Config) -> Self {
        Self::serve(dir, config, None).await
    }

    /// As [`Callosum::start`], reading the config file again when it or the overlay changes (and
    /// at SIGHUP), as `serve` does.
    pub async fn start_watching(yaml: &str) -> Self {
        let dir = Arc::new(tempfile::tempdir().unwrap());
        let path = dir.path().join("seren-corpus-callosum.yaml");
        std::fs::write(&path, yaml).unwrap();
        let config = Config::load_from(&path, &seren_corpus_callosum::config::Env::none()).unwrap();
        Self::start_watching_with(dir, config).await
    }

    /// As [`Callosum::start_with`], watching as [`Callosum::start_watching`] does.
    pub async fn start_watching_with(dir: Arc<tempfile::TempDir>, config: Config) -> Self {
        Self::serve(dir, config, Some(serve::reloader(Default::default()))).await
    }

    async fn serve(
        dir: Arc<tempfile::TempDir>,
        config: Config,
        reload: Option<seren_corpus_callosum::reload::Loader>,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let options = serve::Options {
            reload,
            listener: Some(listener),
            ..serve::Options::default()
        };
        let stop = CancellationToken::new();
        let started = serve::start(config, options, stop.clone()).await.unwrap();
        Self {
            url: started.url(),
            dir,
            client: test_client(),
            federation: started.federation,
            stop,
            finished: Some(started.finished),
        }
    }

    /// Stops the server as a signal would, and waits for its end: its requests drained, its
    /// queued spans sent (when traces are on).
    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(finished) = self.finished.take() {
            finished.await.unwrap().unwrap();
        }
    }

    pub fn overlay_path(&self) -> PathBuf {
        self.dir.path().join("runtime-stores.json")
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("seren-corpus-callosum.yaml")
    }

    /// POST /search and return (status, body).
    pub async fn search(&self, query: &str, n: Option<i64>) -> (u16, Value) {
        self.post("/search", json!({"query": query, "n_results": n}))
            .await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.url))
            .json(&body)
            .send()
            .await
            .unwrap();
        read(response).await
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        read(
            self.client
                .get(format!("{}{path}", self.url))
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    pub async fn delete(&self, path: &str) -> (u16, Value) {
        read(
            self.client
                .delete(format!("{}{path}", self.url))
                .send()
                .await
                .unwrap(),
        )
        .await
    }
}

/// A client whose pooled connections expire before the shortest header timeout the tests set
/// (1 s): the server closes an idle keep-alive connection at that timeout, and a request written
/// onto it just as it closes would fail with an incomplete message, as it would for any client
/// that keeps connections longer than the server does.
pub fn test_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_idle_timeout(Duration::from_millis(500))
        .build()
        .unwrap()
}

async fn read(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}

/// A config with these `(name, type, url, extra yaml lines)` stores and a short timeout.
pub fn config_yaml(stores: &[(&str, &str, &str, &str)]) -> String {
    let mut yaml = String::from("federation:\n  per_store_timeout_s: 2.0\n  stores:\n");
    for (name, kind, url, extra) in stores {
        yaml.push_str(&format!(
            "    - name: {name}\n      type: {kind}\n      url: {url}\n"
        ));
        for line in extra.lines().filter(|l| !l.trim().is_empty()) {
            yaml.push_str(&format!("      {}\n", line.trim()));
        }
    }
    yaml
}

/// The ids of a search answer's hits, as `store:id`.
pub fn order(answer: &Value) -> Vec<String> {
    answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            format!(
                "{}:{}",
                h["store"].as_str().unwrap(),
                h["id"].as_str().unwrap()
            )
        })
        .collect()
}

/// A loopback port with nothing listening on it.
pub fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

pub fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Takes a spawned server's piped stderr and waits (bounded by the server: it ends if the process
/// does) for its `listening on http://...` line; returns that url.
pub async fn wait_listening(child: &mut std::process::Child) -> String {
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr is piped"));
    tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "the server did not start"
            );
            if let Some(at) = line.find("listening on http://") {
                return line[at + "listening on ".len()..]
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .to_owned();
            }
        }
    })
    .await
    .unwrap()
}

/// The `failed` entries of a search answer as `(name, reason)`, in order.
pub fn failed(answer: &Value) -> Vec<(String, String)> {
    answer["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_owned(),
                f["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The reason `name` failed; panics naming the answer when it did not.
pub fn reason_of(answer: &Value, name: &str) -> String {
    failed(answer)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, r)| r)
        .unwrap_or_else(|| panic!("{name} is not in failed: {}", answer["failed"]))
}

/// The names of `GET /stores` rows whose `key` is `value` (`"managed", true`; `"status", "active"`).
pub fn rows_where(stores: &Value, key: &str, value: Value) -> std::collections::BTreeSet<String> {
    stores["stores"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row[key] == value)
        .map(|row| row["name"].as_str().unwrap().to_owned())
        .collect()
}
