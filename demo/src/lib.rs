//! The sample stores: a demo and test fixture, not a store of the callosum's own, in a crate of its own.
//!
//! Two small in-process HTTP servers, one speaking the SerenMemory search protocol (`memory.rs`) and
//! one speaking the SerenLoci search protocol (`loci.rs`), each loaded with a bundled sample data set
//! about one developer's work and ranked by a real BM25 scorer (`bm25.rs`). The `demo` subcommand puts
//! the callosum in front of them so a first run shows a fused answer without installing either real
//! store; tests use them as real peers on loopback.
//!
//! This crate owns binding and serving them until a cancellation token fires. It does not know the
//! callosum at all (neither its store adapters nor its configuration): the stores always bind
//! `127.0.0.1` on a port the OS picks, need no token, and serve read-only data. The callosum's
//! `demo` command (`src/cli/demo.rs`) points a config at them.

mod bm25;
mod loci;
mod memory;
mod request;
#[cfg(test)]
mod tests;

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
    /// What it holds, in words for a store entry's `description`.
    pub description: &'static str,
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
        description: describe(kind),
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

fn url_of(addr: SocketAddr) -> String {
    format!("http://{addr}")
}
