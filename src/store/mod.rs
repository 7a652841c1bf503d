//! The store protocols: one [`Protocol`] per store type, and the one HTTP call every store gets.
//!
//! A protocol only knows its wire format: the request body it sends and how it reads the answer
//! into ranked [`Hit`]s. Both are pure functions, so decoding can be tested (and fuzzed) without a
//! network. The call itself, with its bearer header, deadline and body cap, lives in [`remote`] and
//! is the same for every type. Adding a type is one file here plus one line in [`TYPES`].
//!
//! The remote JSON shapes stay private to each protocol's file.

pub mod callosum;
pub mod loci;
pub mod memory;
pub mod remote;

pub use crate::api::decode_json;
pub use crate::fusion::Hit;
pub use remote::{Failure, Remote};

use serde_json::{Map, Value};

/// A store's wire format.
pub trait Protocol: Send + Sync {
    /// The request body asking for (about) `n` hits for `query`.
    fn request(&self, query: &str, n: usize) -> Value;
    /// Reads the store's answer, best hit first.
    fn decode(&self, body: &[u8]) -> Result<Vec<Hit>, String>;
}

/// One store type: its name in the config and how to build its protocol from the entry's options.
pub struct StoreType {
    /// The `type:` value in a store entry.
    pub name: &'static str,
    /// The option keys the type reads (others are warned about at start).
    pub options: &'static [&'static str],
    /// Builds the protocol; an error names the bad option.
    pub build: fn(&Options) -> Result<Box<dyn Protocol>, String>,
}

/// Every known store type, sorted by name.
pub const TYPES: &[StoreType] = &[callosum::TYPE, loci::TYPE, memory::TYPE];

/// The known type names, sorted.
pub fn type_names() -> Vec<&'static str> {
    TYPES.iter().map(|t| t.name).collect()
}

/// The option keys a known type reads; `None` for an unknown type.
pub fn known_options(kind: &str) -> Option<&'static [&'static str]> {
    TYPES.iter().find(|t| t.name == kind).map(|t| t.options)
}

/// The message for a type nobody knows; REST, MCP and the roster all say it the same way.
pub fn unknown_type(kind: &str) -> String {
    format!(
        "unknown store type '{kind}'; known types: {:?}",
        type_names()
    )
}

/// Builds the protocol for `kind`, or says why not.
pub fn build(kind: &str, options: &Map<String, Value>) -> Result<Box<dyn Protocol>, String> {
    let store_type = TYPES
        .iter()
        .find(|t| t.name == kind)
        .ok_or_else(|| unknown_type(kind))?;
    (store_type.build)(&Options(options))
        .map_err(|why| format!("invalid options for {kind}: {why}"))
}

/// The path a store is searched at: `options.search_path`, else `/search`.
pub fn search_path(options: &Map<String, Value>) -> Result<String, String> {
    match options.get("search_path") {
        None | Some(Value::Null) => Ok("/search".to_owned()),
        Some(Value::String(path)) if path.starts_with('/') => Ok(path.clone()),
        Some(other) => Err(format!(
            "search_path must be a string starting with '/', got {other}"
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

    /// A string option, `None` when absent or null.
    pub fn text(&self, key: &str) -> Result<Option<String>, String> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("{key} must be a string, got {other}")),
        }
    }
}

/// Renders a JSON value as an id: a string as is, null as "", anything else as its JSON text.
pub(crate) fn id_text(value: Option<Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
    }
}

/// `1 / (1 + max(distance, 0))`: a distance read as a 0..1 relevance.
pub(crate) fn relevance_from_distance(distance: f64) -> f64 {
    1.0 / (1.0 + distance.max(0.0))
}
