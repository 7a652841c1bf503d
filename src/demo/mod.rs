//! The sample stores: a demo and test fixture, not a store of the callosum's own.
//!
//! Two small in-process HTTP servers, one speaking the SerenMemory search protocol (`memory.rs`) and
//! one speaking the SerenLoci search protocol (`loci.rs`), each loaded with a bundled sample data set
//! about one developer's work and ranked by a real BM25 scorer (`bm25.rs`). The `demo` subcommand puts
//! the callosum in front of them so a first run shows a fused answer without installing either real
//! store; tests use them as real peers on loopback.
//!
//! This module owns binding and serving them until a cancellation token fires. It does not own the
//! callosum's side of the protocols (the store adapters), and it never reads configuration: the
//! stores always bind `127.0.0.1` on a port the OS picks, need no token, and serve read-only data.

mod bm25;
mod loci;
mod memory;
mod request;
#[cfg(test)]
mod tests;

use crate::config::{Config, Endpoint, EntryKind, StoreEntry, StoreUrl};
use axum::Router;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// A running sample store, described the way a store entry in the callosum's config describes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleStore {
    /// The store type: `"seren_memory"` or `"seren_loci"`.
    pub kind: &'static str,
    /// The store name to fan it under: `"episodic"` or `"facts"`.
    pub name: &'static str,
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub url: String,
}

/// Binds 127.0.0.1:0 and serves the SerenMemory sample until `shutdown` is cancelled (graceful
/// shutdown: no new connections, in-flight requests finish).
pub async fn spawn_memory_store(shutdown: CancellationToken) -> io::Result<SampleStore> {
    spawn("seren_memory", "episodic", memory_router(), shutdown).await
}

/// Binds 127.0.0.1:0 and serves the SerenLoci sample until `shutdown` is cancelled (graceful
/// shutdown: no new connections, in-flight requests finish).
pub async fn spawn_loci_store(shutdown: CancellationToken) -> io::Result<SampleStore> {
    spawn("seren_loci", "facts", loci_router(), shutdown).await
}

/// The SerenMemory sample's routes (`POST /search`, `POST /by_topic`, `GET /health`, `GET /`), for
/// mounting elsewhere.
pub fn memory_router() -> Router {
    memory::router()
}

/// The SerenLoci sample's routes (`POST /search`, `GET /health`, `GET /`), for mounting elsewhere.
pub fn loci_router() -> Router {
    loci::router()
}

async fn spawn(
    kind: &'static str,
    name: &'static str,
    router: Router,
    shutdown: CancellationToken,
) -> io::Result<SampleStore> {
    // Bound before returning, so the url is live the moment the caller has it: no retry loop or
    // readiness probe is needed by whoever fans the store next.
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let addr = listener.local_addr()?;
    // Detached on purpose: the task's whole life is bounded by `shutdown`, which the caller owns.
    tokio::spawn(serve(listener, router, shutdown, name));
    Ok(SampleStore {
        kind,
        name,
        url: url_of(addr),
    })
}

/// Serves `router` on `listener` until `shutdown` is cancelled and every open connection has closed.
async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: CancellationToken,
    name: &'static str,
) -> io::Result<()> {
    let addr = listener.local_addr()?;
    tracing::info!(store = name, %addr, "sample store listening");
    let result = axum::serve(listener, router)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await;
    match &result {
        Ok(()) => tracing::debug!(store = name, "sample store stopped"),
        Err(error) => tracing::warn!(store = name, %error, "sample store stopped with an error"),
    }
    result
}

/// What a sample store holds, as its `description` says it.
fn describe(kind: &str) -> &'static str {
    match kind {
        "seren_loci" => "sample facts: short statements about people, places and settings",
        _ => "sample episodes: conversations and notes, as they happened",
    }
}

/// Points `config` at the sample stores instead of its own (the demo never fans the configured
/// stores, so a first run cannot be confused by them). The runtime overlay goes to a fresh
/// temporary directory, unless `SEREN_SCC_RUNTIME_STORES` named one (the config knows), so stores
/// added while playing with the demo never land beside a real config.
pub fn use_sample_stores(config: &mut Config, stores: &[&SampleStore]) -> io::Result<()> {
    config.federation.stores = stores
        .iter()
        .map(|store| -> io::Result<_> {
            Ok(Ok(StoreEntry {
                name: store.name.to_owned(),
                kind: EntryKind::parse(store.kind),
                // A loopback url this module just formatted: it always parses.
                endpoint: Endpoint::Url(StoreUrl::parse(&store.url).map_err(io::Error::other)?),
                weight: 1.0,
                floor: 0.0,
                enabled: true,
                token: None,
                token_keyring: None,
                token_env: None,
                timeout: None,
                tls_ca_file: None,
                description: Some(describe(store.kind).to_owned()),
                options: serde_json::Map::new(),
            }))
        })
        .collect::<io::Result<_>>()?;
    if !config.overlay_from_env {
        let dir =
            std::env::temp_dir().join(format!("seren-corpus-callosum-demo-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(crate::config::OVERLAY_FILE_NAME);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        config.overlay_path = path;
    }
    // The demo's stores are its own: a shared PostgreSQL overlay is not touched either.
    config.overlay_url = None;
    Ok(())
}

/// Five decimals, as the real stores round their numbers.
fn round5(x: f64) -> f64 {
    (x * 1e5).round() / 1e5
}

fn url_of(addr: SocketAddr) -> String {
    format!("http://{addr}")
}
