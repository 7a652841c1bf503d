//! The knobs on the wire: what `POST /configure` takes and answers, and what `GET /knobs` shows.
//! Plain types; reading a `/configure` body against the knob table is `configure.rs`'s.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

impl KnobsAnswer {
    /// The answer as a view's caller reads it: its store rows are already its own, and the
    /// server's files, environment and token are the operator's business, so they are not shown;
    /// nor why the config file could not be read again, which may name any store.
    pub fn for_view(mut self, view: &str) -> Self {
        const HIDDEN: &str = "(not shown to a view)";
        self.sources.config_path = HIDDEN.into();
        self.sources.config_error = None;
        self.sources.overlay_path = HIDDEN.into();
        self.sources.env_overrides.clear();
        self.server.auth = format!("view {view}");
        self
    }
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
    /// Where the inbound token comes from: `open`, `inline`, `keychain <entry>` or `env $NAME`;
    /// to a view's caller, `view <name>`.
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
