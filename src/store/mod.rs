//! The store protocols: one [`Protocol`] per store type, and the one HTTP call every store gets.
//!
//! A protocol only knows its wire format: the request body it sends and how it reads the answer
//! into ranked [`Hit`]s. Both are pure functions, so decoding can be tested (and fuzzed) without a
//! network. The call itself, with its bearer header, deadline and body cap, lives in [`remote`] and
//! is the same for every type. Adding a type is one file here, one line in [`TYPES`] and in [`of`],
//! and its name in the config's [`StoreKind`] (the config knows the names, this module the rest).
//! The one type that is not an HTTP protocol, `mcp`, calls a tool of an MCP server instead
//! ([`mcp`]); [`Caller`] is how the federation asks either kind.
//!
//! The remote JSON shapes stay private to each protocol's file.

pub mod callosum;
pub mod clients;
pub mod loci;
pub mod mcp;
pub mod memory;
pub mod remote;

pub use crate::fusion::{Hit, Keep};
pub use remote::{Failure, Remote};

use crate::chain::Chain;
use crate::config::{EntryKind, StoreKind, TypeRules};
use crate::ledger::Purse;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::marker::PhantomData;

/// A store's wire format.
pub trait Protocol: Send + Sync {
    /// The request body asking for (about) `n` hits for `query`, as this search's knobs say.
    fn request(&self, query: &str, n: usize, context: &Context) -> Value;
    /// Reads the store's answer, best hit first, keeping at most `limit` hits (what was asked):
    /// the rest are read over without being kept, so an answer of millions of tiny hits costs the
    /// body and no more.
    fn decode(&self, body: &[u8], limit: usize) -> Result<Vec<Hit>, String> {
        self.decode_kept(body, limit, Keep::ALL)
    }
    /// [`Protocol::decode`], building only the hits `keep` says the search can use: the answer
    /// is still read (and checked) to its end, the rest is never copied out of it.
    fn decode_kept(&self, body: &[u8], limit: usize, keep: Keep) -> Result<Vec<Hit>, String>;
    /// The topic search body (`/by_topic`): up to `n` memories tagged with any of `topics`, none
    /// of `exclude`. `None` for a protocol without topic search.
    fn topic_request(&self, _topics: &[String], _n: usize, _exclude: &[String]) -> Option<Value> {
        None
    }
    /// Reads a topic search answer into topic edges (`base_relevance` 0, `metadata.source`
    /// "topic-edge").
    fn decode_topic(&self, _body: &[u8], _limit: usize) -> Result<Vec<Hit>, String> {
        Ok(Vec::new())
    }
}

/// What a search's live knobs tell a protocol about one request.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Context {
    /// Satellite edges are on: a SerenMemory store is asked for its cores' surroundings (unless
    /// its own `with_surroundings` option says otherwise).
    pub surroundings: bool,
}

/// Reads a store's `{"hits": [...], ...}` answer into at most `limit` hits of type `T`, in order.
/// A missing or null `hits` is no hits; other members are skipped unread. Hits past `limit` are
/// checked to be JSON and dropped, never built: a hit at a rank past what was asked can never
/// make the fused cut, since the store has `limit` better ones.
///
/// A failure names the path and the expected type, never the value: a store may echo the query (or
/// anything else) into a field, and the reason is shown on a public route and in the log.
pub fn decode_hits<'de, T: Deserialize<'de>>(
    body: &'de [u8],
    limit: usize,
) -> Result<Vec<T>, String> {
    // The fast path, as in `decode_json`: path tracking only when there is an error to word.
    let mut plain = serde_json::Deserializer::from_slice(body);
    if let Ok(hits) = Hits::<T>::new(limit).deserialize(&mut plain)
        && plain.end().is_ok()
    {
        return Ok(hits);
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let mut track = serde_path_to_error::Track::new();
    let hits = Hits::<T>::new(limit).deserialize(serde_path_to_error::Deserializer::new(
        &mut deserializer,
        &mut track,
    ));
    match hits {
        Ok(hits) => deserializer
            .end()
            .map(|()| hits)
            .map_err(|_| "trailing characters after the JSON value".to_owned()),
        Err(error) => Err(crate::api::value_free(&track.path(), &error.to_string())),
    }
}

/// The answer object, read for its `hits` member only.
struct Hits<T> {
    limit: usize,
    kind: PhantomData<T>,
}

impl<T> Hits<T> {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            kind: PhantomData,
        }
    }
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Hits<T> {
    type Value = Vec<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<T>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Hits<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an answer object with a hits list")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Vec<T>, M::Error> {
        let mut hits = Vec::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "hits" {
                hits = map
                    .next_value_seed(OptionalList::<T>(self.limit, PhantomData))?
                    .unwrap_or_default();
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(hits)
    }
}

/// `null` or a list, kept up to a limit.
struct OptionalList<T>(usize, PhantomData<T>);

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for OptionalList<T> {
    type Value = Option<Vec<T>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for OptionalList<T> {
    type Value = Option<Vec<T>>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of hits")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
        let limit = self.0;
        let mut kept = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(limit).min(1024));
        while kept.len() < limit {
            match seq.next_element::<T>()? {
                Some(hit) => kept.push(hit),
                None => return Ok(Some(kept)),
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Some(kept))
    }
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

/// One store type: its name in the config ([`StoreKind::name`]) and how its stores are called.
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
    /// A tool call to an MCP server ([`mcp`]).
    Mcp,
}

/// Every known store type, sorted by name (in [`StoreKind::ALL`]'s order).
pub const TYPES: &[StoreType] = &[mcp::TYPE, callosum::TYPE, loci::TYPE, memory::TYPE];

/// One bound store's way of being asked: over HTTP with its protocol, or through an MCP tool.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one per bound store, behind an Arc: its size costs nothing"
)]
pub enum Caller {
    Http(Remote),
    Mcp(mcp::McpStore),
}

impl Caller {
    /// Asks the store for `n` hits, carrying `chain`.
    pub async fn search(
        &self,
        query: &str,
        n: usize,
        (chain, call): (&Chain, Call),
        purse: &Purse<'_>,
    ) -> Result<Vec<Hit>, Failure> {
        match self {
            Caller::Http(remote) => remote.search(query, n, (chain, call), purse).await,
            Caller::Mcp(store) => store.search(query, n, (chain, call.timeout), purse).await,
        }
    }

    /// Whether this store answers topic searches.
    pub fn has_topics(&self) -> bool {
        matches!(self, Caller::Http(remote) if remote.has_topics())
    }

    /// A topic search ([`Remote::by_topic`]); `None` for a store without one.
    pub async fn by_topic(
        &self,
        topics: &[String],
        n: usize,
        exclude: &[String],
        (chain, call): (&Chain, Call),
        purse: &Purse<'_>,
    ) -> Option<Result<Vec<Hit>, Failure>> {
        match self {
            Caller::Http(remote) => {
                remote
                    .by_topic(topics, n, exclude, (chain, call), purse)
                    .await
            }
            Caller::Mcp(_) => None,
        }
    }
}

/// The known type names, sorted.
pub fn type_names() -> Vec<&'static str> {
    TYPES.iter().map(|t| t.name).collect()
}

/// The store type of `kind`: what its stores read and how they are reached.
pub fn of(kind: StoreKind) -> &'static StoreType {
    match kind {
        StoreKind::Mcp => &mcp::TYPE,
        StoreKind::Callosum => &callosum::TYPE,
        StoreKind::Loci => &loci::TYPE,
        StoreKind::Memory => &memory::TYPE,
    }
}

/// What a type reads of an entry when the entry is read, for the config (and a store added at
/// run time): the option keys it knows, and an `mcp` store's mapping checked.
impl TypeRules for StoreKind {
    fn options(self) -> &'static [&'static str] {
        of(self).options
    }

    fn check_options(self, options: &Map<String, Value>) -> Result<(), String> {
        match of(self).reach {
            Reach::Mcp => mcp::Spec::parse(options).map(drop),
            Reach::Http { .. } => Ok(()),
        }
    }
}

/// Builds the protocol for `kind` (a [`StoreKind`], or a name, which is looked up), or says why
/// not.
pub fn build(
    kind: impl Into<EntryKind>,
    options: &Map<String, Value>,
) -> Result<Box<dyn Protocol>, String> {
    let kind = kind.into().known()?;
    match of(kind).reach {
        Reach::Http { build, .. } => {
            build(&Options(options)).map_err(|why| format!("invalid options for {kind}: {why}"))
        }
        Reach::Mcp => Err(format!("{kind} stores have no HTTP protocol")),
    }
}

/// The path a store is searched at: `options.search_path`, else `/search`.
pub fn search_path(options: &Map<String, Value>) -> Result<String, String> {
    path_option(options, "search_path", "/search")
}

/// Whether a store type answers topic searches (`/by_topic`, SerenMemory's) [5.3].
pub fn speaks_topics(kind: StoreKind) -> bool {
    matches!(of(kind).reach, Reach::Http { topics: true, .. })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Probe {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        score: Option<f64>,
    }

    fn hits(body: &str, limit: usize) -> Result<Vec<Probe>, String> {
        decode_hits(body.as_bytes(), limit)
    }

    #[test]
    fn hits_past_the_limit_are_read_over_not_kept() {
        let body = r#"{"query":"q","hits":[{"id":"a"},{"id":"b"},{"id":"c"},{"id":7,"score":"x"}],"extra":{"deep":[1,2]}}"#;
        let kept = hits(body, 2).unwrap();
        assert_eq!(
            kept.iter()
                .map(|h| h.id.clone().unwrap())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        // Past the limit a hit is not built, so its wrong types do not fail the answer.
        assert_eq!(hits(body, 3).unwrap().len(), 3);
        assert!(hits(body, 4).is_err());
        assert!(hits(r#"{"hits":null}"#, 5).unwrap().is_empty());
        assert!(hits(r#"{"query":"q"}"#, 5).unwrap().is_empty());
        assert!(hits(r#"{"hits":[]}"#, 0).unwrap().is_empty());
        // The rest of the list must still be JSON: the answer is checked whole.
        assert!(hits(r#"{"hits":[{"id":"a"}, nope]}"#, 1).is_err());
        assert!(
            hits(r#"{"hits":[]} trailing"#, 1)
                .unwrap_err()
                .contains("trailing")
        );
        assert!(
            hits(r#"[1, 2]"#, 1)
                .unwrap_err()
                .contains("invalid type: sequence")
        );
    }

    #[test]
    fn every_kind_has_its_type_in_the_registry_in_order() {
        assert_eq!(type_names(), StoreKind::names());
        for kind in StoreKind::ALL {
            assert_eq!(of(kind).name, kind.name());
            assert_eq!(StoreKind::parse(kind.name()), Ok(kind));
        }
        assert_eq!(
            StoreKind::parse("quantum"),
            Err("unknown store type 'quantum'; known types: [\"mcp\", \"seren_callosum\", \"seren_loci\", \"seren_memory\"]".into())
        );
    }

    #[test]
    fn a_reason_never_carries_what_the_store_sent() {
        // A store that echoes the query into a wrong-typed field: the reason names the field and
        // the type, not the query, so a public health page and the log never show it.
        let echo = r#"{"hits":[{"id":"a","score":"what is my bank password"}]}"#;
        let reason = hits(echo, 5).unwrap_err();
        assert_eq!(reason, "hits[0].score: invalid type: string, expected f64");
        let reason = hits(r#"{"hits":[{"id":12}]}"#, 5).unwrap_err();
        assert_eq!(
            reason,
            "hits[0].id: invalid type: integer, expected a string"
        );
        let reason = hits(r#"{"hits":{"the query":1}}"#, 5).unwrap_err();
        assert_eq!(reason, "hits: invalid type: map, expected a list of hits");
        for message in [
            "invalid value: string \"secret\", expected one of a or b",
            "unknown variant `secret`, expected `a`",
            "unknown field `secret`, expected `id`",
        ] {
            assert!(
                !crate::text::without_values(message).contains("secret"),
                "{message}"
            );
        }
    }
}
