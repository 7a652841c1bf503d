//! How a store entry is bound to its protocol: the token it is called with, its TLS client, and an
//! HTTP protocol or an MCP link, into a [`Bound`] store. Decides no entry's place in the roster
//! (a duplicate name, the cap, a disabled entry are the roster's) and reads no knob.

use super::caller::Caller;
use super::clients::Clients;
use super::mcp::client::Link;
use super::mcp::{McpStore, Spec};
use super::protocol::Call;
use super::protocol::{search_path, topic_search_path};
use super::registry::{build, speaks_topics};
use super::remote::Failure;
use super::remote::Remote;
use super::transport::Target;
use crate::chain::Chain;
use crate::config::{Config, Endpoint, StoreEntry, StoreKind};
use crate::fusion::Hit;
use crate::ledger::Purse;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// A store that is fanned.
#[derive(Debug)]
pub struct Bound {
    pub name: String,
    pub kind: String,
    pub weight: f64,
    pub floor: f64,
    /// The entry it was bound from: a rebuild keeps a store whose entry did not change (its MCP
    /// session, its connections) instead of binding it again.
    pub entry: StoreEntry,
    pub caller: Caller,
    /// `server.max_calls_per_store` permits: a call holds one while it is under way, so the
    /// store never has more of ours at once (nor this process more connections to it).
    gate: Semaphore,
}

impl Bound {
    /// Asks the store for `n` hits ([`Caller::search`]) once one of its call permits is free.
    /// The wait is part of the call: it counts against the call's timeout, and a call that
    /// cannot start within it is a timeout, as a store too slow for its load is.
    pub async fn search(
        &self,
        query: &str,
        n: usize,
        (chain, call): (&Chain, Call),
        purse: &Purse<'_>,
    ) -> Result<Vec<Hit>, Failure> {
        let timeout = call.timeout;
        let (_permit, call) = self.admit(call).await?;
        let answer = self.caller.search(query, n, (chain, call), purse).await;
        whole_timeout(answer, timeout)
    }

    /// A topic search ([`Caller::by_topic`]) under the same permits as [`Bound::search`].
    pub async fn by_topic(
        &self,
        topics: &[String],
        n: usize,
        exclude: &[String],
        (chain, call): (&Chain, Call),
        purse: &Purse<'_>,
    ) -> Option<Result<Vec<Hit>, Failure>> {
        if !self.caller.has_topics() {
            return None;
        }
        let timeout = call.timeout;
        let (_permit, call) = match self.admit(call).await {
            Ok(admitted) => admitted,
            Err(failure) => return Some(Err(failure)),
        };
        let answer = self
            .caller
            .by_topic(topics, n, exclude, (chain, call), purse);
        answer.await.map(|answer| whole_timeout(answer, timeout))
    }

    /// Waits for a call permit within `call.timeout`, and hands the call on with what is left.
    async fn admit(
        &self,
        mut call: Call,
    ) -> Result<(tokio::sync::SemaphorePermit<'_>, Call), Failure> {
        // Uncontended, the permit is there at once: no clock is read.
        if let Ok(permit) = self.gate.try_acquire() {
            return Ok((permit, call));
        }
        let began = Instant::now();
        match tokio::time::timeout(call.timeout, self.gate.acquire()).await {
            Ok(Ok(permit)) => {
                call.timeout = call.timeout.saturating_sub(began.elapsed());
                Ok((permit, call))
            }
            // The gate is never closed; a closed one would refuse every call the same way.
            Ok(Err(_)) | Err(_) => Err(Failure::Timeout(call.timeout)),
        }
    }
}

/// A timeout names the call's whole limit, the wait for a permit included, not what was left of it.
fn whole_timeout(answer: Result<Vec<Hit>, Failure>, limit: Duration) -> Result<Vec<Hit>, Failure> {
    answer.map_err(|failure| match failure {
        Failure::Timeout(_) => Failure::Timeout(limit),
        other => other,
    })
}

/// Binds `entry`, read from `config`, over the shared `clients`, or says why it cannot be bound.
pub(crate) fn bind(
    config: &Config,
    clients: &Clients,
    entry: &StoreEntry,
) -> Result<Bound, String> {
    // The config's one rule (inline, keychain, env; failing closed): a pointer that leads
    // nowhere skips the store, which is never called without the token it needs.
    let token = config.store_token(entry)?;
    // A relative `tls_ca_file` is read beside the config file that names it (only the config
    // file may: the overlay's entries are refused one).
    let ca_file = entry
        .tls_ca_file
        .as_ref()
        .map(|path| match config.path.parent() {
            Some(folder) if path.is_relative() => folder.join(path),
            _ => path.clone(),
        });
    let ca_file = ca_file.as_deref();
    let kind = entry.kind.known()?;
    let caller = match (&entry.endpoint, kind) {
        (endpoint, StoreKind::Mcp) => {
            let spec = Spec::parse(&entry.options)?;
            let link = match endpoint {
                Endpoint::Url(url) => Link::Http {
                    url: url.exact().clone(),
                    token,
                    client: clients.mcp(ca_file)?,
                },
                Endpoint::Program(_) if config.untrusted() => {
                    return Err(format!(
                        "not started: {}",
                        config.untrusted_reason("run programs")
                    ));
                }
                Endpoint::Program(program) => Link::Stdio(program.clone()),
            };
            Caller::Mcp(McpStore::new(&entry.name, spec, link, clients.answers()))
        }
        (Endpoint::Url(url), _) => {
            let protocol = build(kind, &entry.options)?;
            let path = search_path(&entry.options)?;
            let target = Target::new(url.join(&path));
            let transport = clients.transport(ca_file, &target)?;
            let remote = Remote::new(target, token, protocol, transport);
            Caller::Http(if speaks_topics(kind) {
                remote.with_topics(Target::new(url.join(&topic_search_path(&entry.options)?)))
            } else {
                remote
            })
        }
        // The config refuses a program for any other type.
        (Endpoint::Program(_), _) => {
            return Err(format!("{kind} stores are reached at a url"));
        }
    };
    Ok(Bound {
        name: entry.name.clone(),
        kind: kind.name().to_owned(),
        weight: entry.weight,
        floor: entry.floor,
        entry: entry.clone(),
        caller,
        gate: Semaphore::new(config.server.max_calls_per_store),
    })
}
