//! The stores on the wire: the roster as `GET /stores` shows it, each store's health, what `GET /`
//! says, and what adding (`POST /stores`, `add_store`) or removing one takes and answers. Plain
//! types; a status's one-string form is `status.rs`'s, what a new store's keys say `new_store.rs`'s.

use super::search::NameReason;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// Which hits of several stores are one document (`none`, `key`, `content`).
    pub identity: crate::identity::Identity,
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
    /// The view the caller is held to (contract §6c), when it has one: only these stores are
    /// listed, searched and changed for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<ViewRow>,
}

/// A caller's view as `GET /stores` and `list_stores` show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ViewRow {
    pub name: String,
    /// The store names and globs it sees.
    pub stores: Vec<String>,
    /// Whether it may add (within `stores`), remove and re-weight stores.
    pub write: bool,
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
    /// Which field of its hits names the document under `identity: key`, when its entry sets
    /// one (`id` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_key: Option<String>,
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
    /// Absent when views are configured: anyone may read `GET /`, and which stores exist is
    /// each view's business.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stores: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<Vec<NameReason>>,
}

/// The MCP `remove_store` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RemoveRequest {
    /// The name of a store added at run time (config-file stores cannot be removed here).
    pub name: String,
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
    /// Which field of its hits names the document when a search treats hits of several stores
    /// as one (`identity: "key"`): `id` (the default), `content` or `metadata.<name>`.
    #[serde(default)]
    #[schemars(with = "String")]
    pub identity_key: Option<String>,
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
