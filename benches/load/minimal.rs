//! The minimal fan (issue 26): the floor the callosum stands on, run as its own process beside it.
//!
//! `load --minimal-fan NAME=URL,...` serves `POST /search` on `127.0.0.1:0` the way the shortest
//! honest federating service would: one reqwest client, the query sent to every store at once
//! (`{"query", "n_results": 2n}`), each answer read for its hits' `id` and text only, plain RRF
//! (`1/(60 + rank)`, no floor, no weights, no packet), and the best `n` written back with their
//! store and rank. Same HTTP server crate (hyper, through axum), same allocator (mimalloc, this
//! program's global one), same number of tokio workers. What the callosum costs above this is
//! what it does for its users: checks, bounds, provenance, metadata, the packet.
//!
//! The load harness starts it (re-executing itself) and drives it like a service: its rows are
//! `min-fan`, and the ratios to it are printed with the others.

use super::*;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use std::borrow::Cow;

/// One store of the minimal fan: its name (for provenance) and its `/search` url.
struct Store {
    name: String,
    url: String,
}

struct Fan {
    client: reqwest::Client,
    stores: Vec<Store>,
}

#[derive(serde::Deserialize)]
struct Ask {
    query: String,
    #[serde(default)]
    n_results: Option<usize>,
}

#[derive(serde::Deserialize)]
struct Answer<'a> {
    #[serde(borrow)]
    hits: Vec<StoreHit<'a>>,
}

/// A hit as either store type sends it: an `id`, and `content` (SerenMemory) or `value`
/// (SerenLoci). Everything else is skipped.
#[derive(serde::Deserialize)]
struct StoreHit<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    value: Option<Cow<'a, str>>,
}

#[derive(serde::Serialize)]
struct Fused<'a> {
    id: &'a str,
    content: &'a str,
    store: &'a str,
    store_rank: usize,
    score: f64,
}

#[derive(serde::Serialize)]
struct Failed<'a> {
    name: &'a str,
}

#[derive(serde::Serialize)]
struct Out<'a> {
    hits: Vec<Fused<'a>>,
    stores_searched: Vec<&'a str>,
    failed: Vec<Failed<'a>>,
}

/// RRF's k.
const K: f64 = 60.0;
/// The most hits one search may ask for (the callosum's own bound).
const MAX_N: usize = 100;

/// Parses `NAME=URL,NAME=URL` (the stores' base urls).
fn parse_stores(list: &str) -> Result<Vec<Store>, String> {
    list.split(',')
        .map(|entry| {
            let (name, url) = entry
                .split_once('=')
                .ok_or_else(|| format!("minimal fan: {entry:?} is not NAME=URL"))?;
            Ok(Store {
                name: name.to_owned(),
                url: format!("{url}/search"),
            })
        })
        .collect()
}

/// Serves the minimal fan until killed. Returns only on a start-up error.
pub(super) fn serve(list: &str) -> ExitCode {
    let stores = match parse_stores(list) {
        Ok(stores) => stores,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(PER_STORE_TIMEOUT_S))
        .build()
        .expect("a plain HTTP client builds");
    let fan = Arc::new(Fan { client, stores });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let app = axum::Router::new()
            .route("/search", axum::routing::post(search))
            .route("/health", axum::routing::get(|| async { "ok" }))
            .with_state(fan);
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("minimal fan: cannot bind: {e}");
                return ExitCode::FAILURE;
            }
        };
        let addr = listener.local_addr().expect("a bound address");
        eprintln!("minimal fan listening on http://{addr}");
        match axum::serve(listener, app).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("minimal fan: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

async fn search(State(fan): State<Arc<Fan>>, body: Bytes) -> Response {
    let ask: Ask = match serde_json::from_slice(&body) {
        Ok(ask) => ask,
        Err(e) => return (axum::http::StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let n = ask.n_results.unwrap_or(10).clamp(1, MAX_N);
    let request = Bytes::from(
        serde_json::to_vec(&json!({"query": ask.query, "n_results": 2 * n}))
            .expect("JSON serializes"),
    );
    let client = &fan.client;
    let answers = futures_util::future::join_all(fan.stores.iter().map(|store| {
        let request = request.clone();
        async move {
            let response = client
                .post(&store.url)
                .header(CONTENT_TYPE, "application/json")
                .body(request)
                .send()
                .await
                .ok()?;
            response.bytes().await.ok()
        }
    }))
    .await;
    let lists: Vec<Option<Answer>> = answers
        .iter()
        .map(|bytes| bytes.as_ref().and_then(|b| serde_json::from_slice(b).ok()))
        .collect();
    let mut fused: Vec<Fused> = Vec::new();
    for (store, list) in fan.stores.iter().zip(&lists) {
        let Some(list) = list else { continue };
        for (index, hit) in list.hits.iter().enumerate() {
            fused.push(Fused {
                id: &hit.id,
                content: hit
                    .content
                    .as_deref()
                    .or(hit.value.as_deref())
                    .unwrap_or(""),
                store: &store.name,
                store_rank: index + 1,
                score: 1.0 / (K + (index + 1) as f64),
            });
        }
    }
    // Best score first; ties keep the stores' order and then rank (a stable sort).
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused.truncate(n);
    let out = Out {
        hits: fused,
        stores_searched: fan.stores.iter().map(|s| s.name.as_str()).collect(),
        failed: fan
            .stores
            .iter()
            .zip(&lists)
            .filter(|(_, list)| list.is_none())
            .map(|(store, _)| Failed { name: &store.name })
            .collect(),
    };
    (
        [(CONTENT_TYPE, "application/json")],
        serde_json::to_vec(&out).expect("JSON serializes"),
    )
        .into_response()
}

/// Starts the minimal fan over these stores, as a child process of this program.
pub(super) async fn start_minimal(stores: &[Entry<'_>]) -> Result<Service, String> {
    let exe = std::env::current_exe().map_err(|e| format!("no path to this program: {e}"))?;
    let list: Vec<String> = stores
        .iter()
        .map(|(name, _, url)| format!("{name}={url}"))
        .collect();
    let mut command = Command::new(exe);
    command.arg("--minimal-fan").arg(list.join(","));
    start_listening(command, "the minimal fan").await
}
