//! The federation's live knobs: one immutable snapshot, read once per search and swapped whole by
//! `POST /configure`, so a search under way keeps the knobs it started with and the very next
//! search, on any surface, sees a change.
//!
//! The rules a knob's value keeps (ranges, 5.3.0's names) are the config file's
//! ([`crate::config::read_knobs`]): a value `/configure` takes is one the YAML would take.

use crate::api::{
    ConfigureRequest, KnobRow, KnobSources, KnobsAnswer, Refusal, RefusalKind, ServerKnobs,
    StoreKnobRows, StoreRow, TlsKnobs,
};
use crate::config::{Config, KnobInput, TokenSource, read_knobs};
use crate::packet::Shaping;
use crate::roster::Bound;
use crate::store::{Call, Context};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// The knobs one search runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct Knobs {
    /// The RRF constant.
    pub k: u32,
    /// The default number of fused hits.
    pub n_results: usize,
    /// Each store is asked for `n * fetch_multiplier` hits.
    pub fetch_multiplier: usize,
    /// The bound on a store call, unless the store has its own `timeout_s`.
    pub per_store_timeout: Duration,
    /// How the fused list is shaped into the packet.
    pub shaping: Shaping,
    /// Per-store weight and floor set at run time, by store name. Kept across changes of other
    /// stores, dropped with their own.
    pub stores: BTreeMap<String, Override>,
}

/// A store's weight and floor as `/configure` set them; `None` keeps the entry's.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Override {
    pub weight: Option<f64>,
    pub floor: Option<f64>,
}

impl Knobs {
    /// The knobs as the config file sets them.
    pub fn from_config(config: &Config) -> Self {
        let federation = &config.federation;
        Self {
            k: federation.k,
            n_results: federation.n_results,
            fetch_multiplier: federation.fetch_multiplier,
            per_store_timeout: federation.per_store_timeout,
            shaping: federation.shaping.clone(),
            stores: BTreeMap::new(),
        }
    }

    /// A bound store's weight and floor under these knobs.
    pub fn weight_and_floor(&self, bound: &Bound) -> (f64, f64) {
        let set = self.stores.get(&bound.name).copied().unwrap_or_default();
        (
            set.weight.unwrap_or(bound.weight),
            set.floor.unwrap_or(bound.floor),
        )
    }

    /// How this search calls `bound`.
    pub fn call(&self, bound: &Bound) -> Call {
        Call {
            timeout: bound.entry.timeout.unwrap_or(self.per_store_timeout),
            context: Context {
                surroundings: self.shaping.satellites_on(),
            },
        }
    }
}

/// The federation knobs `GET /knobs` lists, in 5.3.0's order, each in plain words.
const ROWS: &[(&str, &str)] = &[
    (
        "n_results",
        "fused hits a search returns when it does not say",
    ),
    (
        "fetch_multiplier",
        "each store is asked for n_results times this",
    ),
    (
        "per_store_timeout_s",
        "seconds a store may take before it is named in failed (a store's own timeout_s wins)",
    ),
    (
        "fusion_mode",
        "how ranked lists are merged: weighted Reciprocal Rank Fusion",
    ),
    (
        "k",
        "the RRF constant: a hit at rank r scores weight / (k + r)",
    ),
    (
        "authority_margin",
        "a store whose top hit stands this far above its next leads the list; 0 is off",
    ),
    (
        "min_per_store",
        "seats per answering store before the fused order fills the rest",
    ),
    (
        "budget_tokens",
        "a default token page for searches that set none; null is no page",
    ),
    (
        "edges_enabled",
        "add memories sharing the packet's topics (SerenMemory /by_topic)",
    ),
    ("edge_budget", "the most topic edges"),
    (
        "satellite_edges_enabled",
        "a SerenMemory core brings its episodes and the core it replaced",
    ),
    (
        "satellite_budget",
        "the most satellite and supersedes edges",
    ),
    (
        "hops",
        "rounds of search: 1 is one round, more bridge from the best hits",
    ),
    ("hop_terms", "words a hop takes from the last round's hits"),
    ("hop_budget", "the most hits hops add"),
];

/// The keys `POST /configure` takes.
pub fn settable() -> Vec<String> {
    let mut keys: Vec<String> = ROWS.iter().map(|(key, _)| (*key).to_owned()).collect();
    keys.push("stores".to_owned());
    keys
}

impl Knobs {
    /// A federation knob's value, by its 5.3.0 name.
    fn value(&self, key: &str) -> Value {
        let s = &self.shaping;
        match key {
            "n_results" => self.n_results.into(),
            "fetch_multiplier" => self.fetch_multiplier.into(),
            "per_store_timeout_s" => self.per_store_timeout.as_secs_f64().into(),
            "fusion_mode" => "rrf".into(),
            "k" => self.k.into(),
            "authority_margin" => s.authority_margin.into(),
            "min_per_store" => s.min_per_store.into(),
            "budget_tokens" => s.budget_tokens.map_or(Value::Null, Value::from),
            "edges_enabled" => s.topic_edges.into(),
            "edge_budget" => s.edge_budget.into(),
            "satellite_edges_enabled" => s.satellite_edges.into(),
            "satellite_budget" => s.satellite_budget.into(),
            "hops" => s.hops.into(),
            "hop_terms" => s.hop_terms.into(),
            "hop_budget" => s.hop_budget.into(),
            _ => Value::Null,
        }
    }

    /// The knobs with `request` applied, checked with the config file's rules: every field is
    /// checked before anything is applied, so one bad field changes nothing. `rows` is the roster
    /// (a store knob must name one of its stores). Also says what changed, as applied.
    pub fn configure(
        &self,
        request: &ConfigureRequest,
        rows: &[StoreRow],
    ) -> Result<(Knobs, Map<String, Value>), Refusal> {
        if let Some(mode) = request.fusion_mode.as_deref()
            && mode != "rrf"
        {
            return Err(Refusal::unprocessable(format!(
                "unknown fusion_mode '{}'; valid: ['rrf']",
                crate::text::cut(mode, 40)
            )));
        }
        let mut problems = Vec::new();
        let values = read_knobs(&self.input(request), "", &mut problems);
        let stores = self.store_knobs(request, rows, &mut problems)?;
        if !problems.is_empty() {
            return Err(Refusal::unprocessable(problems.join("; ")));
        }
        let knobs = Knobs {
            k: values.k,
            n_results: values.n_results,
            fetch_multiplier: values.fetch_multiplier,
            per_store_timeout: values.per_store_timeout,
            shaping: values.shaping,
            stores,
        };
        let changed = knobs.changed(request, rows);
        Ok((knobs, changed))
    }

    /// These live knobs under a config file read again: `was` is what the file set before, `now`
    /// what it sets now. The later change wins: a knob the file changed takes the file's new
    /// value; any other keeps its live value (set with `/configure`, or the file's all along). A
    /// store's weight and floor override is kept while `same_entry` says the file left that
    /// store's own weight and floor alone. Also names the live values the file replaced.
    pub fn reloaded(
        &self,
        was: &Knobs,
        now: Knobs,
        rows: &[StoreRow],
        same_entry: impl Fn(&str) -> bool,
    ) -> (Knobs, Vec<String>) {
        let mut kept = Map::new();
        let mut replaced = Vec::new();
        for (key, _) in ROWS.iter().filter(|(key, _)| *key != "fusion_mode") {
            let live = self.value(key);
            if live == was.value(key) {
                continue;
            }
            if was.value(key) == now.value(key) {
                // `/configure` reads 0 as "no page", its way of writing null.
                kept.insert(
                    (*key).to_owned(),
                    if live.is_null() { 0.into() } else { live },
                );
            } else {
                replaced.push((*key).to_owned());
            }
        }
        let mut stores = BTreeMap::new();
        for (name, set) in &self.stores {
            if rows.iter().any(|row| &row.name == name) && same_entry(name) {
                stores.insert(name.clone(), *set);
            } else if rows.iter().any(|row| &row.name == name) {
                replaced.push(format!("stores.{name}"));
            }
        }
        let request = serde_json::from_value::<ConfigureRequest>(Value::Object(kept));
        let applied = request
            .map_err(|e| e.to_string())
            .and_then(|request| now.configure(&request, rows).map_err(|r| r.to_string()));
        let knobs = match applied {
            Ok((knobs, _)) => knobs,
            Err(error) => {
                // Live values were checked when they were set, by the same rules: not reached.
                tracing::warn!(%error, "live knobs not kept across the reload; the file's are in force");
                now
            }
        };
        (Knobs { stores, ..knobs }, replaced)
    }

    /// The live values, with the request's over them.
    fn input(&self, r: &ConfigureRequest) -> KnobInput {
        let s = &self.shaping;
        KnobInput {
            k: Some(r.k.unwrap_or(self.k)),
            n_results: Some(r.n_results.unwrap_or(self.n_results)),
            fetch_multiplier: Some(r.fetch_multiplier.unwrap_or(self.fetch_multiplier)),
            per_store_timeout_s: Some(
                r.per_store_timeout_s
                    .unwrap_or(self.per_store_timeout.as_secs_f64()),
            ),
            authority_margin: Some(r.authority_margin.unwrap_or(s.authority_margin)),
            min_per_store: Some(r.min_per_store.unwrap_or(s.min_per_store)),
            // 0 or less clears the page [5.3]; a number too large for the rule is named by it.
            budget_tokens: match r.budget_tokens {
                None => s.budget_tokens,
                Some(n) => Some(usize::try_from(n.max(0)).unwrap_or(usize::MAX)),
            },
            satellite_edges_enabled: Some(r.satellite_edges_enabled.unwrap_or(s.satellite_edges)),
            satellite_budget: Some(r.satellite_budget.unwrap_or(s.satellite_budget)),
            edges_enabled: Some(r.edges_enabled.unwrap_or(s.topic_edges)),
            edge_budget: Some(r.edge_budget.unwrap_or(s.edge_budget)),
            hops: Some(r.hops.unwrap_or(s.hops)),
            hop_terms: Some(r.hop_terms.unwrap_or(s.hop_terms)),
            hop_budget: Some(r.hop_budget.unwrap_or(s.hop_budget)),
        }
    }

    /// The per-store overrides with the request's applied: each names a store of the roster
    /// (else 404) and keeps the config's weight and floor rule.
    fn store_knobs(
        &self,
        request: &ConfigureRequest,
        rows: &[StoreRow],
        problems: &mut Vec<String>,
    ) -> Result<BTreeMap<String, Override>, Refusal> {
        let mut stores = self.stores.clone();
        for (i, knob) in request.stores.iter().flatten().enumerate() {
            let Some(name) = knob
                .name
                .as_deref()
                .map(str::trim)
                .filter(|n| !n.is_empty())
            else {
                problems.push(format!("stores[{i}]: name is required"));
                continue;
            };
            let Some(row) = rows.iter().find(|row| row.name == name) else {
                return Err(Refusal::new(
                    RefusalKind::NotFound,
                    format!("no store named '{}'", crate::text::cut(name, 64)),
                ));
            };
            let set = stores.entry(row.name.clone()).or_default();
            let weight = knob.weight.or(set.weight).unwrap_or(row.weight);
            let floor = knob.floor.or(set.floor).unwrap_or(row.floor);
            match crate::config::weight_and_floor(Some(weight), Some(floor)) {
                Ok(_) => {
                    set.weight = knob.weight.or(set.weight);
                    set.floor = knob.floor.or(set.floor);
                }
                Err((key, why)) => problems.push(format!("stores[{i}] ({name}): {key} {why}")),
            }
        }
        Ok(stores)
    }

    /// The keys `request` gave, with the values now in force.
    fn changed(&self, request: &ConfigureRequest, rows: &[StoreRow]) -> Map<String, Value> {
        let given = serde_json::to_value(request).unwrap_or_default();
        let mut changed = Map::new();
        for (key, _) in ROWS {
            if given.get(key).is_some_and(|v| !v.is_null()) {
                changed.insert((*key).to_owned(), self.value(key));
            }
        }
        if let Some(stores) = &request.stores {
            let named: Vec<Value> = stores
                .iter()
                .filter_map(|knob| knob.name.as_deref().map(str::trim))
                .filter_map(|name| {
                    let row = rows.iter().find(|row| row.name == name)?;
                    let set = self.stores.get(name).copied().unwrap_or_default();
                    Some(serde_json::json!({
                        "name": name,
                        "weight": set.weight.unwrap_or(row.weight),
                        "floor": set.floor.unwrap_or(row.floor),
                    }))
                })
                .collect();
            changed.insert("stores".into(), named.into());
        }
        changed
    }
}

/// `GET /knobs`: every knob's live, file and default value, and where the config, the overlay
/// and the token come from (the source, never the token). The file is read again, so `yaml` is
/// what it says now.
pub fn answer(config: &Config, live: &Knobs, rows: &[StoreRow]) -> KnobsAnswer {
    let defaults = Knobs::from_config(&Config::empty(&config.path));
    let (file, config_error) = if config.exists {
        match Config::load_from(&config.path, &crate::config::Env::process()) {
            Ok(file) => (Some(file), None),
            Err(error) => (None, Some(crate::text::cut(&error.to_string(), 300))),
        }
    } else {
        (None, None)
    };
    let from_file = file.as_ref().map(Knobs::from_config);
    let federation = ROWS
        .iter()
        .map(|(key, what)| {
            row(
                key,
                what,
                live.value(key),
                from_file.as_ref().map(|k| k.value(key)),
                defaults.value(key),
            )
        })
        .collect();
    let stores = rows
        .iter()
        .map(|store| store_rows(store, live, file.as_ref()))
        .collect();
    let server = &config.server;
    KnobsAnswer {
        ok: true,
        sources: KnobSources {
            config_path: config.path.display().to_string(),
            config_exists: config.exists,
            config_error,
            overlay_path: config.overlay_shown(),
            overlay_exists: config.overlay_url.is_some() || config.overlay_path.exists(),
            env_overrides: env_overrides(),
        },
        server: ServerKnobs {
            host: server.host.clone(),
            port: server.port,
            auth: match &server.token_source {
                TokenSource::None => "open".into(),
                TokenSource::Inline => "inline".into(),
                TokenSource::Keychain(pointer) => format!("keychain {pointer}"),
                TokenSource::Env(name) => format!("env ${name}"),
            },
            tls: TlsKnobs {
                trust_system_store: config.tls.trust_system_store,
            },
        },
        federation,
        stores,
        runtime_settable: settable(),
        note:
            "POST /configure changes these live and all at once (one bad value changes nothing); \
               nothing is written to the config file, so a restart goes back to it."
                .into(),
    }
}

fn row(key: &str, what: &str, live: Value, yaml: Option<Value>, default: Value) -> KnobRow {
    KnobRow {
        key: key.to_owned(),
        is_default: live == default,
        // Against the file's value, or the default where there is no file or store entry.
        twiddled: live != *yaml.as_ref().unwrap_or(&default),
        yaml: yaml.unwrap_or(Value::Null),
        default,
        live,
        what: what.to_owned(),
        runtime_settable: true,
    }
}

/// A store's weight and floor: live (with any run-time override), as the file has them (a store
/// of the file's; an added one has none), and the defaults.
fn store_rows(store: &StoreRow, live: &Knobs, file: Option<&Config>) -> StoreKnobRows {
    let set = live.stores.get(&store.name).copied().unwrap_or_default();
    let in_file = file.and_then(|file| {
        file.federation
            .stores
            .iter()
            .flatten()
            .find(|entry| entry.name == store.name)
    });
    let knobs = vec![
        row(
            "weight",
            "every score of this store is multiplied by it: the cross-store trust lever",
            set.weight.unwrap_or(store.weight).into(),
            in_file.map(|entry| entry.weight.into()),
            1.0.into(),
        ),
        row(
            "floor",
            "hits whose relevance is below it are dropped before ranking",
            set.floor.unwrap_or(store.floor).into(),
            in_file.map(|entry| entry.floor.into()),
            0.0.into(),
        ),
    ];
    StoreKnobRows {
        name: store.name.clone(),
        kind: store.kind.clone(),
        url: store.url.clone(),
        managed: store.managed,
        place: if store.managed {
            "overlay (added from the UI)".into()
        } else if in_file.is_some() {
            "yaml".into()
        } else {
            "not in the yaml".into()
        },
        auth: store.auth,
        knobs,
    }
}

/// The names of the `SEREN_SCC_*` variables set, sorted; never their values.
fn env_overrides() -> Vec<String> {
    let mut names: Vec<String> = std::env::vars_os()
        .filter_map(|(key, value)| {
            let key = key.into_string().ok()?;
            (key.starts_with("SEREN_SCC_") && !value.is_empty()).then_some(key)
        })
        .collect();
    names.sort();
    names
}
