//! A search on the wire: the request (`POST /search`, the MCP `search` tool's arguments) and the
//! fused answer, hit by hit, with `explain`'s why. Plain types and their constructors.

use crate::config::TextFormat;
use crate::identity::Identity;
use crate::metadata::Metadata;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A search, as `POST /search` takes it and as the MCP `search` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchRequest {
    /// What to recall, in plain words (a question, a name, a topic). Up to 8 KiB.
    pub query: String,
    /// How many fused hits to return, 1..=200. Default: the callosum's configured n_results (10).
    #[serde(default)]
    #[schemars(with = "u32", range(min = 1, max = crate::limits::MAX_N_RESULTS))]
    pub n_results: Option<i64>,
    /// The most tokens you can read from this answer (about 4 characters a token). Rows are packed
    /// best first, a row that does not fit is skipped, and `tokens` says what the page cost. Say
    /// it whenever your context is tight. Default: the callosum's configured page, if any.
    #[serde(default)]
    #[schemars(with = "u32", range(min = 1, max = crate::limits::MAX_BUDGET_TOKENS))]
    pub budget_tokens: Option<i64>,
    /// Search only these stores, by name (this tool's description and list_stores name them),
    /// e.g. ["facts"] for the facts alone. Default: every store. An unknown name is an error.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub stores: Option<Vec<String>>,
    /// Leave these stores out, by name. An unknown name is an error.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub exclude_stores: Option<Vec<String>>,
    /// Say why each hit is where it is: each hit gets `explain` (its store's rank, weight and
    /// floor, its RRF contribution weight/(k+rank), and every shaping step that moved or kept it)
    /// and `explain_dropped` lists the best hits the page or n_results left out. Default false.
    #[serde(default)]
    pub explain: bool,
    /// Treat hits that several stores return for the same document as one hit: "key" (the
    /// stores' identity_key values, by default their ids, are equal), "content" (their texts are
    /// equal, ignoring case, spacing and Unicode compatibility forms) or "none" (each store's
    /// hit is its own). A document's score is then the sum of what each of its stores gives it,
    /// and every hit lists the other stores that returned it in `also_from`. Default: the
    /// callosum's configured identity (none unless set).
    #[serde(default)]
    #[schemars(with = "Identity")]
    pub identity: Option<Identity>,
}

/// The MCP `search` tool's arguments: a search, and how its text block is written.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchToolRequest {
    #[serde(flatten)]
    pub search: SearchRequest,
    /// How the text block is written: "compact" (numbered lines, a few times fewer tokens) or
    /// "json" (the whole answer). The structured content is the whole answer either way.
    /// Default: the callosum's `server.mcp_format`.
    #[serde(default)]
    #[schemars(with = "TextFormat")]
    pub format: Option<TextFormat>,
}

impl SearchRequest {
    /// A search for `query` with the configured defaults.
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            n_results: None,
            budget_tokens: None,
            stores: None,
            exclude_stores: None,
            explain: false,
            identity: None,
        }
    }
}

/// The fused answer to one search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchAnswer {
    /// The query, as asked.
    pub query: String,
    /// The fused hits, best first; then hop hits (`metadata.hop`), then edges (`score` 0.0,
    /// `metadata.source` "satellite-edge", "supersedes-edge" or "topic-edge").
    pub hits: Vec<Hit>,
    /// The token page this answer was packed into, or null for none.
    pub budget_tokens: Option<usize>,
    /// The estimated token cost of every hit above, edges included (about 4 characters a token,
    /// plus one a row).
    pub tokens: usize,
    /// The stores that answered (an empty answer counts), in roster order.
    pub stores_searched: Vec<String>,
    /// The stores that were asked and gave nothing, with why.
    pub failed: Vec<NameReason>,
    /// The stores that were never asked (unknown type, invalid entry), with why.
    pub skipped: Vec<NameReason>,
    /// What the search could not do, in words: nothing to search (no store fanned), or what it
    /// left undone to stay within its bounds (a hop round or the topic edges its call budget or
    /// deadline had no room for); absent when it did everything.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// With `explain`: the best hits the page or `n_results` left out (at most 25), best first,
    /// each with why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<Dropped>")]
    pub explain_dropped: Option<Vec<Dropped>>,
}

impl SearchAnswer {
    /// The answer as JSON, written into one buffer sized for it up front: a 5 KB answer written
    /// into a buffer that starts small (axum's `Json` starts at 128 bytes) is copied about six
    /// times as it grows. The size is a guess from the hits' texts; escapes and `explain` may
    /// grow it once more.
    pub fn to_json(&self) -> Vec<u8> {
        let size = 256
            + (self.hits.iter())
                .map(|hit| {
                    192 + hit.store.len() + hit.id.len() + hit.content.len() + hit.metadata.len()
                })
                .sum::<usize>();
        let mut out = Vec::with_capacity(size);
        // Strings, numbers and JSON objects written by this crate: it always serializes.
        serde_json::to_writer(&mut out, self).expect("an answer serializes");
        out
    }
}

/// Why a hit is where it is (`explain: true`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Explain {
    /// Its 1-based rank in its store's answer, after the floor (among its kind, for an edge).
    pub store_rank: u32,
    /// Its store's weight in this search.
    pub weight: f64,
    /// Its store's floor in this search.
    pub floor: f64,
    /// The RRF constant.
    pub k: u32,
    /// Its RRF contribution, `weight / (k + store_rank)`: the hit's `score` (with identity on,
    /// its own store's part of it). Null for an edge, which follows a hit instead of being
    /// ranked.
    #[schemars(with = "f64")]
    pub contribution: Option<f64>,
    /// With identity on: every store's contribution to the hit's document, its own first, then
    /// `also_from`'s in roster order; they sum to its `score`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<Contribution>")]
    pub contributions: Option<Vec<Contribution>>,
    /// Each shaping step that moved or kept it, in the order they ran; empty when the fused
    /// order alone put it where it is.
    pub steps: Vec<Step>,
    /// All of the above in one short line.
    pub why: String,
}

/// One store's contribution to a document's score (`explain` with identity on).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Contribution {
    pub store: String,
    /// That store's id for the document.
    pub id: String,
    /// Its rank in that store's answer, after the floor.
    pub store_rank: u32,
    /// That store's weight in this search.
    pub weight: f64,
    /// `weight / (k + store_rank)`.
    pub contribution: f64,
}

/// One shaping step that acted on a hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    /// Which step.
    pub step: StepKind,
    /// What it did, in words.
    pub why: String,
    /// `authority_lead`: how far its store's top hit stood above the runner-up (an exact match:
    /// its relevance), and the `authority_margin` it had to reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub margin: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub authority_margin: Option<f64>,
    /// `seat`: the seats each store is given (`min_per_store`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32")]
    pub min_per_store: Option<usize>,
    /// `hop`: the round that found it, and the bridge query's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32")]
    pub round: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub bridge: Option<String>,
    /// An edge: the id of the hit it is the edge of (satellite, supersedes), or the topic tags it
    /// shares with the packet (topic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub core: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<String>")]
    pub topics: Option<Vec<String>>,
}

/// The shaping steps `explain` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// Its store was sure of it (`authority_margin`), so it leads the packet.
    AuthorityLead,
    /// A reserved seat (`min_per_store`) kept it, where the fused order alone would not have.
    Seat,
    /// A later round found it (`hops`).
    Hop,
    /// A satellite episode of a hit of the packet.
    SatelliteEdge,
    /// The memory a hit of the packet superseded.
    SupersedesEdge,
    /// A memory sharing the packet's topic tags.
    TopicEdge,
}

impl Step {
    /// A step of `kind` with its words, and no numbers yet.
    pub fn new(kind: StepKind, why: impl Into<String>) -> Self {
        Self {
            step: kind,
            why: why.into(),
            margin: None,
            authority_margin: None,
            min_per_store: None,
            round: None,
            bridge: None,
            core: None,
            topics: None,
        }
    }
}

/// A hit the page or `n_results` left out (`explain: true`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Dropped {
    pub store: String,
    pub id: String,
    /// Its rank in its store's answer, after the floor.
    pub store_rank: u32,
    /// Its fused score.
    pub score: f64,
    /// What left it out, in words.
    pub why: String,
    /// Left out by the page: what it would have cost, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32")]
    pub tokens: Option<usize>,
}

/// One fused hit with its full provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Hit {
    /// The store it came from.
    pub store: String,
    /// The store's id for it.
    pub id: String,
    /// The text itself.
    pub content: String,
    /// The fused RRF score it was ranked by: `weight / (k + store_rank)`, summed over every
    /// store that returned the document when identity is on.
    pub score: f64,
    /// Its 1-based rank in its store's answer, after the store's floor.
    pub store_rank: u32,
    /// The store's relevance for it, 0..1 (what the floor reads).
    pub base_relevance: f64,
    /// The store's own score, if it gave one.
    pub native_score: Option<f64>,
    /// The store's raw distance, if it gave one.
    pub raw_distance: Option<f64>,
    /// Whatever else the store said about it: a JSON object.
    pub metadata: Metadata,
    /// With identity on (and only then): the other stores that returned the same document, in
    /// roster order, each with its id, rank and contribution to `score`; empty when none did.
    /// `store`, `id` and `store_rank` above are the hit of the largest contribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<AlsoFrom>")]
    pub also_from: Option<Vec<AlsoFrom>>,
    /// With `explain`: why it is where it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Explain")]
    pub explain: Option<Explain>,
}

/// Another store's hit of the same document (identity on).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AlsoFrom {
    pub store: String,
    /// That store's id for it.
    pub id: String,
    /// Its rank in that store's answer, after the floor.
    pub store_rank: u32,
    /// That store's part of the hit's `score`: `weight / (k + store_rank)`.
    pub contribution: f64,
}

/// A store name and a reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NameReason {
    pub name: String,
    pub reason: String,
}
