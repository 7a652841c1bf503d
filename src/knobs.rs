//! The federation's live knobs: one immutable snapshot ([`Knobs`], declared with the knob table
//! in [`crate::config::TABLE`]), read once per search and swapped whole by `POST /configure`, so a
//! search under way keeps the knobs it started with and the very next search, on any surface,
//! sees a change.
//!
//! The rules a knob's value keeps (ranges, 5.3.0's names) are the table's
//! ([`crate::config::read_knobs`]): a value `/configure` takes is one the YAML would take.

use crate::api::{
    ConfigureRequest, KnobRow, KnobSources, KnobsAnswer, Refusal, RefusalKind, ServerKnobs,
    StoreKnobRows, StoreRow, TlsKnobs,
};
use crate::config::{Config, TABLE, TokenSource, read_knobs};
pub use crate::config::{Knobs, Override};
use crate::store::{Bound, Call, Context, Keep};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

impl Knobs {
    /// The knobs as the config file sets them.
    pub fn from_config(config: &Config) -> Self {
        config.federation.knobs.clone()
    }

    /// A bound store's weight and floor under these knobs.
    pub fn weight_and_floor(&self, bound: &Bound) -> (f64, f64) {
        self.live(&bound.name, bound.weight, bound.floor)
    }

    /// The weight and floor in force for the store `name` whose entry says `weight` and
    /// `floor`: what `/configure` set for it, else the entry's. The one place they are decided,
    /// for searches, `GET /stores`, `/configure`'s answer and `GET /knobs` alike.
    pub fn live(&self, name: &str, weight: f64, floor: f64) -> (f64, f64) {
        let set = self.stores.get(name).copied().unwrap_or_default();
        (set.weight.unwrap_or(weight), set.floor.unwrap_or(floor))
    }

    /// How this search calls `bound`.
    pub fn call(&self, bound: &Bound) -> Call {
        Call {
            timeout: bound.entry.timeout.unwrap_or(self.per_store_timeout),
            context: Context {
                surroundings: self.shaping.satellites_on(),
            },
            keep: Keep::ALL,
        }
    }
}

/// The keys `POST /configure` takes.
pub fn settable() -> Vec<String> {
    let mut keys: Vec<String> = crate::config::listed()
        .map(|knob| knob.name.to_owned())
        .collect();
    keys.push("stores".to_owned());
    keys
}

impl Knobs {
    /// The knobs with `request` applied, checked with the config file's rules: every field is
    /// checked before anything is applied, so one bad field changes nothing. `rows` is the roster
    /// (a store knob must name one of its stores). Also says what changed, as applied.
    pub fn configure(
        &self,
        request: &ConfigureRequest,
        rows: &[StoreRow],
    ) -> Result<(Knobs, Map<String, Value>), Refusal> {
        let mut problems = Vec::new();
        let mut knobs = read_knobs(&request.knobs, self, "", &mut problems);
        knobs.stores = self.store_knobs(request, rows, &mut problems)?;
        if !problems.is_empty() {
            return Err(Refusal::unprocessable(problems.join("; ")));
        }
        let changed = knobs.changed(request, rows);
        Ok((knobs, changed))
    }

    /// These live knobs under a config file read again: `was` is what the file set before, `now`
    /// what it sets now. The later change wins, knob by knob: a knob the file changed takes the
    /// file's new value (and is named when that replaces a live value set with `/configure`);
    /// any other keeps its live value. A store's weight and floor overrides go the same way,
    /// each against the store's own entry: `file_was` gives a store's weight and floor as the
    /// file set them before, `rows` (the roster now) as it sets them now.
    ///
    /// Knob by knob through the table ([`crate::config::Knob::pick`]), from values that were
    /// checked when they were set, so nothing here can fail and nothing live is dropped unsaid.
    pub fn reloaded(
        &self,
        was: &Knobs,
        now: Knobs,
        rows: &[StoreRow],
        file_was: impl Fn(&str) -> Option<(f64, f64)>,
    ) -> (Knobs, Vec<String>) {
        let mut replaced = Vec::new();
        let mut knobs = now.clone();
        knobs.stores = BTreeMap::new();
        for knob in TABLE {
            if knob.pick(&mut knobs, self, was, &now) {
                replaced.push(knob.name.to_owned());
            }
        }
        for (name, set) in &self.stores {
            // A store that left takes its overrides with it (the reload names it removed).
            let Some(row) = rows.iter().find(|row| &row.name == name) else {
                continue;
            };
            let before = file_was(name);
            let mut kept = Override::default();
            for (knob, live, file, now, into) in [
                (
                    "weight",
                    set.weight,
                    before.map(|b| b.0),
                    row.weight,
                    &mut kept.weight,
                ),
                (
                    "floor",
                    set.floor,
                    before.map(|b| b.1),
                    row.floor,
                    &mut kept.floor,
                ),
            ] {
                let Some(live) = live else { continue };
                if file == Some(now) {
                    *into = Some(live);
                } else if live != now {
                    // The file changed this store's own value (or the store is new to it).
                    replaced.push(format!("stores.{name}.{knob}"));
                }
            }
            if kept != Override::default() {
                knobs.stores.insert(name.clone(), kept);
            }
        }
        (knobs, replaced)
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
        let mut changed = Map::new();
        for knob in crate::config::listed() {
            if request.knobs.get(knob.name).is_some_and(|v| !v.is_null()) {
                changed.insert(knob.name.to_owned(), knob.value(self));
            }
        }
        if let Some(stores) = &request.stores {
            let named: Vec<Value> = stores
                .iter()
                .filter_map(|knob| knob.name.as_deref().map(str::trim))
                .filter_map(|name| {
                    let row = rows.iter().find(|row| row.name == name)?;
                    let (weight, floor) = self.live(name, row.weight, row.floor);
                    Some(serde_json::json!({"name": name, "weight": weight, "floor": floor}))
                })
                .collect();
            changed.insert("stores".into(), named.into());
        }
        changed
    }
}

/// `GET /knobs`: every knob's live, file and default value, and where the config, the overlay
/// and the token come from (the source, never the token). The file's values are those of the
/// config in force (`config`, as it was last loaded), kept in memory: nothing is read per request,
/// so a huge or half-written file on disk costs a request nothing. `config_error` is why the file
/// as it now stands was not loaded, if it was not (the last reload's refusal).
pub fn answer(
    config: &Config,
    live: &Knobs,
    rows: &[StoreRow],
    config_error: Option<String>,
) -> KnobsAnswer {
    let defaults = Knobs::default();
    let file = config.exists.then_some(config);
    let config_error = config_error.map(|error| crate::text::cut(&error, 300));
    let from_file = file.map(Knobs::from_config);
    let federation = crate::config::listed()
        .map(|knob| {
            row(
                knob.name,
                knob.what,
                knob.value(live),
                from_file.as_ref().map(|k| knob.value(k)),
                knob.value(&defaults),
            )
        })
        .collect();
    let stores = rows
        .iter()
        .map(|store| store_rows(store, live, file))
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
    let (weight, floor) = live.live(&store.name, store.weight, store.floor);
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
            weight.into(),
            in_file.map(|entry| entry.weight.into()),
            1.0.into(),
        ),
        row(
            "floor",
            "hits whose relevance is below it are dropped before ranking",
            floor.into(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::StoreStatus;
    use serde_json::json;
    use std::path::Path;

    fn file(yaml: &str) -> Knobs {
        let config = Config::parse(Path::new("/c.yaml"), yaml, &crate::config::Env::none());
        Knobs::from_config(&config.expect("a valid file"))
    }

    fn row(name: &str, weight: f64, floor: f64) -> StoreRow {
        StoreRow {
            name: name.into(),
            kind: "seren_loci".into(),
            url: "http://x".into(),
            weight,
            floor,
            enabled: true,
            managed: false,
            auth: false,
            description: None,
            identity_key: None,
            status: StoreStatus::Active,
            breaker: None,
        }
    }

    fn configured(knobs: &Knobs, body: Value, rows: &[StoreRow]) -> Knobs {
        let request = serde_json::from_value(body).unwrap();
        knobs.configure(&request, rows).expect("a valid change").0
    }

    /// Every knob, set live to a value neither file version holds.
    const LIVE: &str = r#"{"k": 11, "n_results": 12, "fetch_multiplier": 3,
        "per_store_timeout_s": 2.5, "authority_margin": 0.5, "min_per_store": 2,
        "budget_tokens": 900, "edges_enabled": true, "edge_budget": 4,
        "satellite_edges_enabled": true, "satellite_budget": 5, "hops": 2, "hop_terms": 6,
        "hop_budget": 7, "identity": "key"}"#;
    /// The file before, and after changing every knob.
    const WAS: &str =
        "federation:\n  k: 60\n  edges_enabled: false\n  satellite_edges_enabled: false\n";
    const NOW: &str = "federation:\n  k: 61\n  n_results: 13\n  fetch_multiplier: 4\n  per_store_timeout_s: 3.5\n  authority_margin: 0.25\n  min_per_store: 3\n  budget_tokens: 800\n  edges_enabled: true\n  edge_budget: 8\n  satellite_edges_enabled: true\n  satellite_budget: 9\n  hops: 3\n  hop_terms: 10\n  hop_budget: 11\n  identity: content\n";

    fn all_knobs() -> Vec<String> {
        let mut keys: Vec<String> = TABLE
            .iter()
            .map(|knob| knob.name.to_owned())
            .filter(|key| key != "fusion_mode")
            .collect();
        keys.sort();
        keys
    }

    #[test]
    fn a_view_reads_none_of_the_servers_own_settings() {
        let config = Config::parse(
            Path::new("/etc/scc/c.yaml"),
            "server:\n  bearer_token: s3cret\n",
            &crate::config::Env::none(),
        )
        .unwrap();
        let knobs = Knobs::from_config(&config);
        let rows = [row("papers", 1.0, 0.0)];
        let whole = answer(&config, &knobs, &rows, Some("line 3: papers2 ...".into()));
        assert_eq!(whole.sources.config_path, "/etc/scc/c.yaml");
        assert_eq!(whole.server.auth, "inline");
        assert!(whole.sources.config_error.is_some());
        let seen = whole.clone().for_view("research");
        assert_eq!(seen.sources.config_path, "(not shown to a view)");
        assert_eq!(seen.sources.overlay_path, "(not shown to a view)");
        assert_eq!(seen.sources.config_error, None);
        assert!(seen.sources.env_overrides.is_empty());
        assert_eq!(seen.server.auth, "view research");
        // The knobs and the store rows are the same answer.
        assert_eq!(
            (&seen.federation, &seen.stores),
            (&whole.federation, &whole.stores)
        );
    }

    #[test]
    fn a_file_that_changes_no_knob_keeps_every_live_value() {
        let was = file(WAS);
        let live = configured(&was, serde_json::from_str(LIVE).unwrap(), &[]);
        // Another key of the file changed (the breaker), no knob did.
        let now = file(&format!("{WAS}  breaker_failures: 9\n"));
        let (knobs, replaced) = live.reloaded(&was, now, &[], |_| None);
        assert_eq!((knobs, replaced), (live, Vec::<String>::new()));
    }

    #[test]
    fn a_file_that_changes_every_knob_replaces_and_names_each_live_value() {
        let was = file(WAS);
        let live = configured(&was, serde_json::from_str(LIVE).unwrap(), &[]);
        let now = file(NOW);
        let (knobs, mut replaced) = live.reloaded(&was, now.clone(), &[], |_| None);
        replaced.sort();
        // A switch has two values: one changed both live and in the file came to the same value,
        // so nothing live was replaced.
        let numbers: Vec<String> = all_knobs()
            .into_iter()
            .filter(|key| !key.ends_with("_enabled"))
            .collect();
        assert_eq!(replaced, numbers, "every knob is decided and named");
        assert_eq!(knobs, now);
    }

    #[test]
    fn a_knob_never_set_live_follows_the_file_unnamed() {
        let was = file(WAS);
        let (knobs, replaced) = was.reloaded(&was, file(NOW), &[], |_| None);
        assert_eq!((knobs, replaced), (file(NOW), Vec::<String>::new()));
    }

    /// Each case: the live knobs set by `/configure`, the file's change, the knobs expected in
    /// force and the replaced names.
    #[test]
    fn the_later_change_wins_knob_by_knob() {
        fn check(live: Value, was: &str, now: &str, expected: Value, replaced: &[&str]) {
            let rows = [row("facts", 1.0, 0.0)];
            let (was, now) = (file(was), file(now));
            let live = configured(&was, live, &rows);
            let (knobs, names) = live.reloaded(&was, now.clone(), &rows, |_| Some((1.0, 0.0)));
            assert_eq!(names, replaced, "{expected}");
            assert_eq!(knobs, configured(&now, expected, &rows), "{replaced:?}");
        }
        // The file changes another knob: the live one stays, the file's other one is taken.
        check(
            json!({"per_store_timeout_s": 2.0}),
            "federation:\n  k: 60\n",
            "federation:\n  k: 30\n",
            json!({"per_store_timeout_s": 2.0}),
            &[],
        );
        // The file changes that very knob: the file wins, and says so.
        check(
            json!({"per_store_timeout_s": 2.0}),
            "federation:\n  per_store_timeout_s: 5\n",
            "federation:\n  per_store_timeout_s: 7\n",
            json!({}),
            &["per_store_timeout_s"],
        );
        // The file comes to the live value: nothing was replaced.
        check(
            json!({"hops": 2}),
            "federation:\n  hops: 1\n",
            "federation:\n  hops: 2\n",
            json!({}),
            &[],
        );
        // A page cleared live (null) stays cleared while the file leaves it alone.
        check(
            json!({"budget_tokens": 0}),
            "federation:\n  budget_tokens: 500\n",
            "federation:\n  budget_tokens: 500\n  k: 9\n",
            json!({"budget_tokens": 0}),
            &[],
        );
        // A store's weight override stays while its entry's weight is unchanged.
        check(
            json!({"stores": [{"name": "facts", "weight": 3.0}]}),
            "",
            "federation:\n  k: 9\n",
            json!({"stores": [{"name": "facts", "weight": 3.0}]}),
            &[],
        );
    }

    #[test]
    fn a_store_override_gives_way_only_where_its_entry_changed() {
        let was = file("");
        let before = [row("facts", 1.0, 0.0)];
        let live = configured(
            &was,
            json!({"stores": [{"name": "facts", "weight": 3.0, "floor": 0.5}]}),
            &before,
        );
        let file_was = |_: &str| Some((1.0, 0.0));
        // The entry's floor changed, its weight did not: the weight override stays.
        let after = [row("facts", 1.0, 0.2)];
        let (knobs, replaced) = live.reloaded(&was, was.clone(), &after, file_was);
        assert_eq!(replaced, ["stores.facts.floor"]);
        assert_eq!(
            knobs.stores["facts"],
            Override {
                weight: Some(3.0),
                floor: None
            }
        );
        // A store that left takes its overrides along, unnamed (the reload says it is removed).
        let (knobs, replaced) = live.reloaded(&was, was.clone(), &[], file_was);
        assert!(
            knobs.stores.is_empty() && replaced.is_empty(),
            "{replaced:?}"
        );
    }
}
