//! How a store entry is bound to its protocol: the token it is called with, its TLS client, and an
//! HTTP protocol or an MCP link, into a [`Bound`] store. Decides no entry's place in the roster
//! (a duplicate name, the cap, a disabled entry are the roster's) and reads no knob.

use super::caller::Caller;
use super::clients::Clients;
use super::mcp::client::Link;
use super::mcp::{McpStore, Spec};
use super::protocol::{search_path, topic_search_path};
use super::registry::{build, speaks_topics};
use super::remote::Remote;
use crate::config::{Config, Endpoint, StoreEntry, StoreKind};

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
            let remote = Remote::new(url.join(&path), token, protocol, clients.http(ca_file)?);
            Caller::Http(if speaks_topics(kind) {
                remote.with_topics(url.join(&topic_search_path(&entry.options)?))
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
    })
}
