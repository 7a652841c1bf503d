//! What a store type is, to the rest of the store layer: the wire format ([`Protocol`]) and the
//! [`Context`] a search gives it, how one search calls a store ([`Call`]), a type's entry in the
//! registry ([`StoreType`], [`Reach`]), and the typed reads of an entry's `options` (the paths it
//! is searched at among them). Vocabulary only: it defines no store type and makes no call.

use crate::fusion::{Hit, Keep};
use serde_json::{Map, Value};

/// A store's wire format.
pub trait Protocol: Send + Sync {
    /// The request body (JSON) asking for (about) `n` hits for `query`, as this search's knobs
    /// say. Written straight from a struct of borrowed fields ([`json_body`]), never through a
    /// `serde_json::Value`: it is built once per store per search.
    fn request(&self, query: &str, n: usize, context: &Context) -> Vec<u8>;
    /// Reads the store's answer, best hit first, keeping at most `limit` hits (what was asked):
    /// the rest are read over without being kept, so an answer of millions of tiny hits costs the
    /// body and no more.
    fn decode(&self, body: &[u8], limit: usize) -> Result<Vec<Hit>, String> {
        self.decode_kept(body, limit, Keep::ALL)
    }
    /// [`Protocol::decode`], building only the hits `keep` says the search can use: the answer
    /// is still read (and checked) to its end, the rest is never copied out of it.
    fn decode_kept(&self, body: &[u8], limit: usize, keep: Keep) -> Result<Vec<Hit>, String>;
    /// The topic search body (`/by_topic`, JSON, as [`Protocol::request`]'s): up to `n` memories
    /// tagged with any of `topics`, none of `exclude`. `None` for a protocol without topic search.
    fn topic_request(&self, _topics: &[String], _n: usize, _exclude: &[String]) -> Option<Vec<u8>> {
        None
    }
    /// Reads a topic search answer into topic edges (`base_relevance` 0, `metadata.source`
    /// "topic-edge").
    fn decode_topic(&self, _body: &[u8], _limit: usize) -> Result<Vec<Hit>, String> {
        Ok(Vec::new())
    }
}

/// A request body's JSON text.
pub fn json_body<T: serde::Serialize>(body: &T) -> Vec<u8> {
    // A struct of strings, numbers and booleans always serializes.
    serde_json::to_vec(body).expect("a request body serializes")
}

/// A request body read back, for tests to compare with `json!`.
#[cfg(test)]
pub(crate) fn body_of(bytes: Vec<u8>) -> Value {
    serde_json::from_slice(&bytes).expect("a request body is JSON")
}

/// What a search's live knobs tell a protocol about one request.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Context {
    /// Satellite edges are on: a SerenMemory store is asked for its cores' surroundings (unless
    /// its own `with_surroundings` option says otherwise).
    pub surroundings: bool,
}

/// How a type builds its protocol from an entry's options; an error names the bad option.
pub type Builder = fn(&Options) -> Result<Box<dyn Protocol>, String>;

/// How one search calls one store, from the knobs it started with.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    /// The whole call's deadline: the store's own `timeout_s`, else `per_store_timeout_s`.
    pub timeout: std::time::Duration,
    pub context: Context,
    /// What of the answer the search can use ([`Keep::ALL`] but in a plain first round).
    pub keep: Keep,
}

/// One store type: its name in the config ([`StoreKind::name`](crate::config::StoreKind::name))
/// and how its stores are called.
pub struct StoreType {
    /// The `type:` value in a store entry.
    pub name: &'static str,
    /// The option keys the type reads (others are warned about at start).
    pub options: &'static [&'static str],
    /// How a store of this type is reached.
    pub reach: Reach,
}

/// How a store type's stores are reached.
pub enum Reach {
    /// A POST of the protocol's body to the store's url.
    Http {
        /// Builds the protocol; an error names the bad option.
        build: Builder,
        /// Whether the type answers topic searches (`topic_search_path`, default `/by_topic`).
        topics: bool,
    },
    /// A tool call to an MCP server ([`mcp`](crate::store::mcp)).
    Mcp,
}

/// The path a store is searched at: `options.search_path`, else `/search`.
pub fn search_path(options: &Map<String, Value>) -> Result<String, String> {
    path_option(options, "search_path", "/search")
}

/// The path a store's topic search is at: `options.topic_search_path`, else `/by_topic` [5.3].
pub fn topic_search_path(options: &Map<String, Value>) -> Result<String, String> {
    path_option(options, "topic_search_path", "/by_topic")
}

fn path_option(options: &Map<String, Value>, key: &str, default: &str) -> Result<String, String> {
    match options.get(key) {
        None | Some(Value::Null) => Ok(default.to_owned()),
        Some(Value::String(path)) if path.starts_with('/') => Ok(path.clone()),
        Some(other) => Err(format!(
            "{key} must be a string starting with '/', got {other}"
        )),
    }
}

/// Typed reads of a store entry's `options`.
pub struct Options<'a>(pub &'a Map<String, Value>);

impl Options<'_> {
    /// A boolean option, `default` when absent or null.
    pub fn flag(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(format!("{key} must be true or false, got {other}")),
        }
    }

    /// A boolean option, `None` when absent or null.
    pub fn maybe_flag(&self, key: &str) -> Result<Option<bool>, String> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!("{key} must be true or false, got {other}")),
        }
    }

    /// A string option, `None` when absent or null.
    pub fn text(&self, key: &str) -> Result<Option<String>, String> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("{key} must be a string, got {other}")),
        }
    }
}
