//! The wire types both edges speak: what `POST /search`, `GET /stores` and friends answer, and what
//! the MCP tools return as structured content. One definition, so REST and MCP cannot drift.
//!
//! Also [`Refusal`]: a request the core will not carry out, with the status REST gives it and the
//! message both edges show.

pub use crate::config::TextFormat;
use crate::metadata::Metadata;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
        }
    }
}

/// The MCP `remove_store` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RemoveRequest {
    /// The name of a store added at run time (config-file stores cannot be removed here).
    pub name: String,
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
    /// Its RRF contribution, `weight / (k + store_rank)`: the hit's `score`. Null for an edge,
    /// which follows a hit instead of being ranked.
    #[schemars(with = "f64")]
    pub contribution: Option<f64>,
    /// Each shaping step that moved or kept it, in the order they ran; empty when the fused
    /// order alone put it where it is.
    pub steps: Vec<Step>,
    /// All of the above in one short line.
    pub why: String,
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
    /// The fused RRF score it was ranked by: `weight / (k + store_rank)`.
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
    /// With `explain`: why it is where it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Explain")]
    pub explain: Option<Explain>,
}

/// A store name and a reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NameReason {
    pub name: String,
    pub reason: String,
}

/// The roster: every configured store and how it is bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Stores {
    /// Every configured store, config stores first (file order), then added ones.
    pub stores: Vec<StoreRow>,
    /// How many stores are fanned.
    pub active: usize,
    /// The RRF constant.
    pub k: u32,
    /// The default number of fused hits.
    pub n_results: usize,
    /// The packet's knobs, as configured (`federation:`).
    #[serde(flatten)]
    pub shaping: crate::config::Shaping,
    /// Each store is asked for `n_results * fetch_multiplier` hits.
    pub fetch_multiplier: usize,
    /// The knobs this service reads (5.3.0's names).
    pub supported_knobs: Vec<String>,
    /// The store types this service can fan.
    pub types: Vec<String>,
    /// The `mcp` presets (`preset:` of an `mcp` store) and the tool each calls.
    pub presets: Vec<PresetRow>,
    /// Set when the runtime overlay could not be read; adding and removing stores is refused
    /// until the file is fixed or removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlay_error: Option<String>,
    /// Set when the config file changed but the new version could not be loaded: the service
    /// runs on the one last loaded, and says here why the new one was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_error: Option<String>,
    /// Settings the config file now sets otherwise than the running service, which take effect
    /// only at its next start (the bind address, the token, ...), by their YAML names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restart_needed: Vec<String>,
}

/// One `mcp` preset: a known MCP server's mapping, named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PresetRow {
    pub name: String,
    /// The tool it calls.
    pub tool: String,
}

/// One configured store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StoreRow {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub url: String,
    pub weight: f64,
    pub floor: f64,
    pub enabled: bool,
    /// Added at run time (removable); false for stores of the config file.
    pub managed: bool,
    /// Whether an outbound token is set (never the token itself).
    pub auth: bool,
    /// What the store holds, in one line, as its entry says (`description:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `active`, `disabled`, or `skipped: <reason>`.
    pub status: StoreStatus,
    /// For an active store, its circuit breaker: `closed`, `open` or `probing`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<BreakerState>,
}

/// How a configured store is bound. On the wire it is one string, as the Python service writes
/// it: `active`, `disabled` or `skipped: <reason>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreStatus {
    Active,
    Disabled,
    Skipped(String),
}

impl std::fmt::Display for StoreStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreStatus::Active => f.write_str("active"),
            StoreStatus::Disabled => f.write_str("disabled"),
            StoreStatus::Skipped(reason) => write!(f, "skipped: {reason}"),
        }
    }
}

impl Serialize for StoreStatus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for StoreStatus {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(match text.as_str() {
            "active" => StoreStatus::Active,
            "disabled" => StoreStatus::Disabled,
            other => {
                StoreStatus::Skipped(other.strip_prefix("skipped: ").unwrap_or(other).to_owned())
            }
        })
    }
}

impl JsonSchema for StoreStatus {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StoreStatus".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "`active`, `disabled`, or `skipped: <reason>`"
        })
    }
}

/// A store's circuit breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BreakerState {
    /// Calls go through.
    Closed,
    /// Calls are skipped until the cool-down ends.
    Open,
    /// One probe call is under way.
    Probing,
}

/// What a store's record says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    /// No calls yet.
    Unknown,
    /// A success rate of 0.9 or more, and the last call succeeded.
    Healthy,
    /// A success rate of 0.7 or more, and fewer than 3 failures in a row.
    Degraded,
    Unhealthy,
}

/// One store's health, as `GET /health/stores` shows it. Latencies are in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StoreHealth {
    pub name: String,
    pub total_calls: u64,
    pub successful_calls: u64,
    pub failed_calls: u64,
    /// Calls not made because the circuit was open.
    pub short_circuited: u64,
    pub success_rate: f64,
    pub avg_latency: f64,
    /// The median latency of the last 128 calls, in seconds.
    pub p50_latency: f64,
    pub max_latency: f64,
    pub last_latency: f64,
    pub last_error: Option<String>,
    pub consecutive_failures: u32,
    pub health_status: HealthStatus,
    pub breaker: BreakerState,
    /// While open: seconds until the next probe.
    pub breaker_retry_in_s: Option<f64>,
    pub last_call_ts: Option<f64>,
    pub last_success_ts: Option<f64>,
}

/// `GET /health/stores`: every store's call record, with counts by status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HealthAnswer {
    pub stores: Vec<StoreHealth>,
    pub healthy: usize,
    pub degraded: usize,
    pub unhealthy: usize,
    pub unknown: usize,
    /// Unix seconds.
    pub ts: f64,
}

/// The answer to adding a store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Added {
    pub ok: bool,
    /// The name of the store added.
    pub added: String,
    /// How many stores are fanned now.
    pub active: usize,
}

/// The answer to removing a store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Removed {
    pub ok: bool,
    /// The name of the store removed.
    pub removed: String,
    /// How many stores are fanned now.
    pub active: usize,
}

/// `GET /`: what this service is and what it fans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Info {
    pub service: String,
    pub version: String,
    pub stores: Vec<String>,
    pub skipped: Vec<NameReason>,
}

/// What kind of refusal, which REST maps to a status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// 400: the request is well-formed but asks for something invalid.
    BadRequest,
    /// 404: no such store.
    NotFound,
    /// 409: it clashes with what exists (a duplicate name, an unreadable overlay).
    Conflict,
    /// 503: too much is under way; retry shortly.
    Busy,
    /// 508: the search came back to a callosum it already passed through.
    Loop,
    /// 413: too large.
    TooLarge,
    /// 422: a field is missing or of the wrong type or range.
    Unprocessable,
    /// 500: the service failed (the overlay could not be written).
    Internal,
}

/// A request the core will not carry out. `detail` is safe to show: it never holds a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct Refusal {
    pub kind: RefusalKind,
    pub detail: String,
}

impl Refusal {
    pub fn new(kind: RefusalKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
        }
    }

    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(RefusalKind::BadRequest, detail)
    }

    pub fn unprocessable(detail: impl Into<String>) -> Self {
        Self::new(RefusalKind::Unprocessable, detail)
    }
}

/// Decodes `body` as `T`, naming the path of the first wrong field (`hits[2].score: ...`). Used on
/// request bodies and on store answers alike.
pub fn decode_json<'de, T: Deserialize<'de>>(body: &'de [u8]) -> Result<T, String> {
    // The fast path: plain serde_json. Tracking the path costs about a third of a decode (profiled
    // under load), and only an error needs it, so a failed decode is run again to word the error.
    if let Ok(value) = serde_json::from_slice(body) {
        return Ok(value);
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value: T = serde_path_to_error::deserialize(&mut deserializer).map_err(describe)?;
    deserializer
        .end()
        .map_err(|_| "trailing characters after the JSON value".to_owned())?;
    Ok(value)
}

/// Decodes an already parsed JSON value as `T` (MCP tool arguments), with the same messages.
pub fn decode_value<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(describe)
}

fn describe(error: serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = error.path().to_string();
    // serde_json appends "at line L column C"; the path says more, and short reasons read better
    // in a `failed` entry or a tool error.
    let message = error.into_inner().to_string();
    let message = message
        .split(" at line ")
        .next()
        .unwrap_or_default()
        .to_owned();
    if path == "." {
        message
    } else if path.len() > 80 {
        // A deeply nested value makes a path of thousands of `[0]`; the message matters more.
        format!("{}: {message}", crate::text::cut(&path, 60))
    } else {
        format!("{path}: {message}")
    }
}

/// The member names the callosum reads, in store answers and in store entries: a path segment that
/// is one of them is shown, any other key (a metadata key, which the store chose) is shown as `*`.
const KNOWN_FIELDS: &[&str] = &[
    "name",
    "type",
    "url",
    "weight",
    "floor",
    "enabled",
    "token",
    "token_env",
    "token_keyring",
    "bearer_token",
    "bearer_token_env",
    "bearer_token_keyring",
    "timeout_s",
    "tls_ca_file",
    "options",
    "hits",
    "id",
    "content",
    "score",
    "raw_distance",
    "metadata",
    "tier",
    "topic",
    "surroundings",
    "matched_via",
    "project",
    "key",
    "value",
    "why",
    "match_kind",
    "source",
    "store",
    "store_rank",
    "base_relevance",
    "native_score",
];

/// A decode error worded without any value the store sent: `hits[0].score: invalid type: string,
/// expected f64`, never `... string "the query", ...`.
pub fn value_free(path: &serde_path_to_error::Path, message: &str) -> String {
    use serde_path_to_error::Segment;
    let mut shown = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => shown.push_str(&format!("[{index}]")),
            Segment::Map { key } => {
                if !shown.is_empty() {
                    shown.push('.');
                }
                shown.push_str(if KNOWN_FIELDS.contains(&key.as_str()) {
                    key
                } else {
                    "*"
                });
            }
            Segment::Enum { .. } | Segment::Unknown => shown.push_str(".?"),
        }
        if shown.len() > 80 {
            shown.push_str("...");
            break;
        }
    }
    let message =
        crate::text::without_values(message.split(" at line ").next().unwrap_or_default());
    if shown.is_empty() {
        message
    } else {
        format!("{shown}: {message}")
    }
}

/// What `POST /stores` and `add_store` take, before it becomes a [`StoreEntry`].
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NewStore {
    /// The store's name: 1-64 of `A-Z a-z 0-9 . _ -`, not starting with `.`; it labels every hit
    /// the store returns.
    pub name: String,
    /// The store protocol: one of the known types (`list_stores` shows them).
    #[serde(rename = "type")]
    pub kind: String,
    /// The store's base url, `http://` or `https://` (an `mcp` store's: its MCP endpoint).
    // Defaulted so that a body with a program and no url hears that the program is refused.
    #[serde(default)]
    pub url: String,
    /// Cross-store trust: every score of this store is multiplied by it. Default 1.0.
    // The schema says "number" (not "number or null"): type arrays trip some MCP hosts.
    #[serde(default)]
    #[schemars(with = "f64")]
    pub weight: Option<f64>,
    /// Relevance floor applied before ranking, 0..=1. Default 0 (trust the store's order).
    #[serde(default)]
    #[schemars(with = "f64", range(min = 0.0, max = 1.0))]
    pub floor: Option<f64>,
    /// Outbound bearer token the callosum sends to this store (printable ASCII, no spaces). Kept in
    /// the OS keychain when one is at hand, else in the runtime overlay file (mode 0600); never
    /// shown again.
    #[serde(default)]
    #[schemars(with = "String")]
    pub token: Option<String>,
    /// What the store holds, in one line of at most 200 characters ("the user's facts: names,
    /// dates, preferences"): the `search` tool lists it, so a model knows what it can aim at.
    #[serde(default)]
    #[schemars(with = "String")]
    pub description: Option<String>,
    /// `mcp` stores only: the mapping of one tool's result to ranked hits. Every key but `tool`
    /// has a default; a `preset` fills them for a known server.
    #[serde(flatten)]
    pub mcp: NewMcpStore,
    /// Every other key given, read only to be refused by name: a key dropped in silence (a
    /// `timeout_s`, a `token_env`) would look taken. After `mcp`, which takes its own keys first.
    #[serde(flatten, skip_serializing)]
    #[schemars(skip)]
    pub unknown: serde_json::Map<String, serde_json::Value>,
}

impl NewStore {
    /// The keys every store added at run time may carry.
    pub const KEYS: &[&str] = &[
        "name",
        "type",
        "url",
        "weight",
        "floor",
        "token",
        "description",
    ];

    /// The first key given that is not taken here, if any.
    pub fn unknown_key(&self) -> Option<&str> {
        self.unknown.keys().next().map(String::as_str)
    }
}

/// The keys of an `mcp` store that `POST /stores` and `add_store` take (contract §1 `mcp`). A
/// program (`command`, `args`, `env`) is not among them: it is read only to be refused.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NewMcpStore {
    /// `mcp`: a known server's mapping defaults: `server-memory` (the official knowledge-graph
    /// server), `seren-loci`, `seren-memory`, `callosum`, `basic-memory`, `mcp-server-qdrant`,
    /// `chroma-mcp`, `graphiti-facts`, `graphiti-nodes` or `mem0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub preset: Option<String>,
    /// `mcp`: the tool to call (required unless a preset names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub tool: Option<String>,
    /// `mcp`: the argument that takes the query (default `query`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub query_arg: Option<String>,
    /// `mcp`: send the query as a list of one (chroma-mcp's `query_texts`; default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub query_list: Option<bool>,
    /// `mcp`: the argument that takes how many hits to return (default: none, cut here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub limit_arg: Option<String>,
    /// `mcp`: the most `limit_arg` may ask for (a whole number >= 1; default: no cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64", range(min = 1))]
    pub limit_max: Option<u64>,
    /// `mcp`: fixed extra arguments, under the query and limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub arguments: Option<serde_json::Map<String, serde_json::Value>>,
    /// `mcp`: how the result holds its hits: `json` (default; a hit array), `text_entries` (one
    /// `<entry>` text block per hit, after a header) or `columns` (column-major `ids`,
    /// `documents`, `metadatas`, `distances`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub shape: Option<String>,
    /// `mcp`: JSON pointer to the hit array in the result (default: found by name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub hits: Option<String>,
    /// `mcp`: JSON pointer to a hit's id (default `/id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub id: Option<String>,
    /// `mcp`: a pointer or a `{pointer}` template for a hit's text (default `/content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub content: Option<String>,
    /// `mcp`: JSON pointer to a hit's score (default: none; such hits pass only a floor of 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub score: Option<String>,
    /// `mcp`: JSON pointer to a hit's distance (lower is nearer; its relevance is
    /// `1 / (1 + distance)`; default `/distance` for `columns`, else none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub distance: Option<String>,
    /// Refused: a program is never taken from the network.
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub command: Option<serde_json::Value>,
    /// Refused with `command`.
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub args: Option<serde_json::Value>,
    /// Refused with `command`.
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub env: Option<serde_json::Value>,
}

impl NewMcpStore {
    /// The mapping keys that were given, as store options.
    pub fn options(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut options = serde_json::Map::new();
        let text = [
            ("preset", &self.preset),
            ("tool", &self.tool),
            ("query_arg", &self.query_arg),
            ("limit_arg", &self.limit_arg),
            ("shape", &self.shape),
            ("hits", &self.hits),
            ("id", &self.id),
            ("content", &self.content),
            ("score", &self.score),
            ("distance", &self.distance),
        ];
        for (key, value) in text {
            if let Some(value) = value {
                options.insert(key.into(), value.clone().into());
            }
        }
        if let Some(query_list) = self.query_list {
            options.insert("query_list".into(), query_list.into());
        }
        if let Some(limit_max) = self.limit_max {
            options.insert("limit_max".into(), limit_max.into());
        }
        if let Some(arguments) = &self.arguments {
            options.insert("arguments".into(), arguments.clone().into());
        }
        options
    }

    /// The first program key given, if any.
    pub fn program_key(&self) -> Option<&'static str> {
        [
            ("command", &self.command),
            ("args", &self.args),
            ("env", &self.env),
        ]
        .into_iter()
        .find_map(|(key, value)| value.is_some().then_some(key))
    }
}

/// `POST /configure` [5.3]: the knobs to change, all optional, with 5.3.0's names (the knob
/// table's, [`crate::config::TABLE`], each read as its rule's type), and per-store weight and
/// floor. A key this service does not know is refused, naming the keys it takes (5.3.0 drops it
/// silently, which hides a typo).
#[derive(Debug, Clone, Default)]
pub struct ConfigureRequest {
    /// The knobs given, by name (a null is "not given").
    pub knobs: serde_json::Map<String, serde_json::Value>,
    /// Per-store weight and floor, by name.
    pub stores: Option<Vec<StoreKnob>>,
}

/// The keys `POST /configure` takes, in the table's order, then `stores`: what a refusal of an
/// unknown key lists.
fn configure_keys() -> &'static [&'static str] {
    static KEYS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        let knobs = crate::config::TABLE.iter().map(|knob| knob.name);
        knobs.chain(["stores"]).collect()
    });
    &KEYS
}

/// A `POST /configure` key: a knob's name (`Some`) or `stores` (`None`). Anything else is
/// refused while the key is read, so the refusal's path names it.
struct ConfigureKey;

impl<'de> serde::de::DeserializeSeed<'de> for ConfigureKey {
    type Value = Option<&'static str>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl serde::de::Visitor<'_> for ConfigureKey {
    type Value = Option<&'static str>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
        match crate::config::knob(key) {
            Some(knob) => Ok(Some(knob.name)),
            None if key == "stores" => Ok(None),
            None => Err(E::unknown_field(key, configure_keys())),
        }
    }
}

impl<'de> Deserialize<'de> for ConfigureRequest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RequestVisitor;
        impl<'de> serde::de::Visitor<'de> for RequestVisitor {
            type Value = ConfigureRequest;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("struct ConfigureRequest")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ConfigureRequest, A::Error> {
                use crate::config::{Reader, read_entry};
                let mut request = ConfigureRequest::default();
                while let Some(key) = map.next_key_seed(ConfigureKey)? {
                    match key {
                        None if request.stores.is_some() => {
                            return Err(serde::de::Error::duplicate_field("stores"));
                        }
                        None => request.stores = map.next_value()?,
                        Some(name) => {
                            read_entry(&mut map, name, Reader::Request, &mut request.knobs)?;
                        }
                    }
                }
                Ok(request)
            }
        }
        deserializer.deserialize_map(RequestVisitor)
    }
}

/// One store's weight and floor in `POST /configure`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreKnob {
    pub name: Option<String>,
    pub weight: Option<f64>,
    pub floor: Option<f64>,
}

/// What `POST /configure` applied: the keys given, with the values now in force.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Configured {
    pub ok: bool,
    pub changed: serde_json::Map<String, serde_json::Value>,
    /// How many stores are fanned.
    pub active: usize,
}

/// `GET /knobs` [5.3]: every knob's live, YAML and default value, and where things come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KnobsAnswer {
    pub ok: bool,
    #[serde(rename = "where")]
    pub sources: KnobSources,
    pub server: ServerKnobs,
    pub federation: Vec<KnobRow>,
    pub stores: Vec<StoreKnobRows>,
    /// The keys `POST /configure` takes.
    pub runtime_settable: Vec<String>,
    pub note: String,
}

/// Where the config, the overlay and the environment overrides come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KnobSources {
    pub config_path: String,
    pub config_exists: bool,
    /// Set when the file, read again now, does not parse: the `yaml` column is then null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_error: Option<String>,
    pub overlay_path: String,
    pub overlay_exists: bool,
    /// The names of the `SEREN_SCC_*` variables set (never their values).
    pub env_overrides: Vec<String>,
}

/// The settings that cannot change live.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerKnobs {
    pub host: String,
    pub port: u16,
    /// Where the inbound token comes from: `open`, `inline`, `keychain <entry>` or `env $NAME`.
    pub auth: String,
    pub tls: TlsKnobs,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TlsKnobs {
    pub trust_system_store: bool,
}

/// One knob.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KnobRow {
    pub key: String,
    /// In force now.
    pub live: serde_json::Value,
    /// What the config file says now (read again), or its default when the file leaves it out;
    /// null when there is no file.
    pub yaml: serde_json::Value,
    pub default: serde_json::Value,
    /// The knob in plain words.
    pub what: String,
    pub is_default: bool,
    /// The live value differs from the file's (from the default, where there is none).
    pub twiddled: bool,
    pub runtime_settable: bool,
}

/// A store's own knobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StoreKnobRows {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub url: String,
    pub managed: bool,
    /// `yaml` or `overlay (added from the UI)`.
    #[serde(rename = "where")]
    pub place: String,
    pub auth: bool,
    pub knobs: Vec<KnobRow>,
}
