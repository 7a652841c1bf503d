//! The federation's facade: [`Federation`], the one core every edge (REST, MCP, the command line)
//! calls. A search is checked, fanned out to every bound store at once (each call under its own
//! deadline, all under one budget), what failed is collected, what answered is fused, and the
//! packet is shaped and answered. It also carries the roster's add and remove, so every edge
//! changes the same live set.
//!
//! A store's failure is data here, never an error: the only `Err` a search returns is a refusal of
//! the request itself (an empty query, an `n_results` out of range).
//!
//! This file holds the shared state and what the edges call, and composes a search from the
//! stages beside it, one room each: `check.rs` lets a search in, `spend.rs` is what it may spend
//! (calls, a deadline, answer bytes), `fan.rs` asks the stores under that budget, `round.rs`
//! collects a round's answers and fuses them, `follow.rs` runs what follows the ranked rows (hops,
//! edges), and `shape.rs` turns the rows into the answer's hits.

mod check;
mod fan;
mod follow;
mod round;
mod shape;
mod spend;

use crate::api::NewStore;
use crate::api::{
    Added, Configured, HealthAnswer, HealthStatus, Info, Refusal, Removed, SearchAnswer,
    SearchRequest, StoreStatus, Stores,
};
use crate::audit::{Action, Audit, Entry};
use crate::chain::{Chain, Id};
use crate::config::Config;
use crate::health::Health;
use crate::knobs::Knobs;
use crate::ledger::Ledger;
use crate::limits::MAX_EXPLAIN_DROPPED;
use crate::packet::page::packet_cost;
use crate::packet::{self, Cut};
use crate::roster::Fan;
use crate::roster::{Changed, Roster};
use crate::store;
use crate::view::{Actor, Caller};
use fan::Hop;
use round::Round;
use spend::{Spend, per_store_budget};
use std::sync::{Arc, PoisonError, RwLock};

pub use crate::limits::{MAX_N_RESULTS, MAX_QUERY_BYTES};

/// Why the federation could not be built: the store clients could not be.
pub use crate::store::clients::BuildError;

/// The shared core.
pub struct Federation {
    roster: Roster,
    health: Health,
    /// This process's id in chains of callosums (see `chain`).
    id: Id,
    /// Searches under way, from every surface, capped at `server.max_in_flight`: REST's in-flight
    /// cap does not see MCP tool calls, which rmcp runs in each session's own task.
    searches: tokio::sync::Semaphore,
    /// The live knobs: read once per search, swapped whole (`POST /configure`).
    knobs: RwLock<Arc<Knobs>>,
    /// The searches' and the store calls' numbers, for `GET /metrics`.
    metrics: crate::metrics::Metrics,
    /// How the last look at the config file went (a reload refused, settings waiting on a
    /// restart).
    reloads: RwLock<ReloadState>,
    /// The bytes of store answers every search under way holds, bounded (`ledger`).
    answers: Arc<Ledger>,
    /// Who changed what (contract §6c).
    audit: Audit,
    /// The searches' spans (`telemetry:`); off, nothing but a check per search.
    traces: crate::telemetry::Traces,
}

/// What `GET /stores` says of the config file since the service started.
#[derive(Debug, Default, Clone)]
struct ReloadState {
    /// Why the file as it now stands was not loaded.
    error: Option<String>,
    /// The settings it changes that only a restart applies.
    restart_needed: Vec<String>,
}

/// What a reload did, as its log line says it.
#[derive(Debug, Default, PartialEq)]
pub struct Reloaded {
    /// Stores fanned now and not before, by name.
    pub added: Vec<String>,
    /// Stores fanned before and not now.
    pub removed: Vec<String>,
    /// Stores whose entry changed: bound again, with a fresh health record.
    pub rebound: Vec<String>,
    /// Knobs set with `/configure` that a changed file value replaced.
    pub knobs_replaced: Vec<String>,
    /// Settings changed in the file that wait for a restart.
    pub restart_needed: Vec<String>,
}

impl Reloaded {
    /// Whether the reload changed nothing at all.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.rebound.is_empty()
            && self.knobs_replaced.is_empty()
            && self.restart_needed.is_empty()
    }
}

impl Federation {
    /// Binds the configured stores and builds the HTTP clients store calls share (their
    /// connection pools keep connections to each store alive between searches; a store with
    /// `tls_ca_file` gets its own, `store::clients`).
    pub fn new(config: Config) -> Result<Self, BuildError> {
        let clients = crate::store::clients::Clients::new(config.tls.trust_system_store)?;
        let max_searches = config.server.max_in_flight;
        let knobs = RwLock::new(Arc::new(Knobs::from_config(&config)));
        let answers = clients.answers();
        let audit = Audit::new(config.audit_path());
        let traces = crate::telemetry::Traces::start(
            config.telemetry.as_ref(),
            config.tls.trust_system_store,
        );
        Ok(Self {
            audit,
            knobs,
            health: Health::new(config.federation.breaker),
            roster: Roster::new(Arc::new(config), clients),
            id: Id::random(),
            searches: tokio::sync::Semaphore::new(max_searches),
            metrics: crate::metrics::Metrics::default(),
            reloads: RwLock::default(),
            answers,
            traces,
        })
    }

    /// [`Federation::new`], then the runtime overlay read where it lives: a PostgreSQL overlay is
    /// read over the network, so only here (a file is read at once by `new`).
    pub async fn start(config: Config) -> Result<Self, BuildError> {
        let federation = Self::new(config)?;
        if federation.config().overlay_url.is_some() {
            federation.refresh_overlay().await;
        }
        Ok(federation)
    }

    /// The bytes of store answers held now by the searches under way and by answers arriving,
    /// whatever the protocol (`ledger`).
    pub fn answer_bytes_held(&self) -> usize {
        self.answers.held()
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        self.roster.config()
    }

    /// Puts a config file read again in force, from the next search on: its stores (keeping the
    /// bound session, health and breaker of every store whose entry did not change) and its
    /// knobs (a knob set with `/configure` keeps its live value unless the file changed that
    /// knob: the later change wins). Settings only a start applies (`server:`, `tls:`, the
    /// breaker's) stay as they are and are named in `restart_needed`.
    pub async fn reload(&self, mut new: Config) -> Reloaded {
        let old = self.config();
        let restart_needed = old.needs_restart(&new);
        new.keep_start_settings(&old);
        for warning in &new.warnings {
            tracing::warn!("{warning}");
        }
        let new = Arc::new(new);
        let changed = self.roster.reload(new.clone()).await;
        let knobs_replaced = self.reload_knobs(&old, &new, &changed);
        self.after_change(&changed);
        *self.reloads.write().unwrap_or_else(PoisonError::into_inner) = ReloadState {
            error: None,
            restart_needed: restart_needed.clone(),
        };
        let reloaded = Reloaded {
            added: changed.added(),
            removed: changed.removed(),
            rebound: changed.rebound(),
            knobs_replaced,
            restart_needed,
        };
        if !reloaded.is_empty() {
            let mut entry = Entry::new(&Actor::Reload, Action::Reload, true);
            entry.changed = Some(serde_json::json!({
                "source": "config",
                "added": reloaded.added,
                "removed": reloaded.removed,
                "rebound": reloaded.rebound,
                "knobs_replaced": reloaded.knobs_replaced,
                "restart_needed": reloaded.restart_needed,
            }));
            self.audit.record(&entry);
        }
        reloaded
    }

    /// A config file that could not be loaded: nothing changes, and `GET /stores` says why.
    pub fn reload_failed(&self, error: String) {
        self.reloads
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .error = Some(error);
    }

    /// Reads the runtime overlay again and fans what another process wrote there.
    pub async fn refresh_overlay(&self) {
        if let Some(changed) = self.roster.refresh().await {
            self.after_change(&changed);
            let (added, removed, rebound) = (changed.added(), changed.removed(), changed.rebound());
            if !(added.is_empty() && removed.is_empty() && rebound.is_empty()) {
                let mut entry = Entry::new(&Actor::Reload, Action::Reload, true);
                entry.changed = Some(serde_json::json!({
                    "source": "overlay",
                    "added": added,
                    "removed": removed,
                    "rebound": rebound,
                }));
                self.audit.record(&entry);
            }
        }
    }

    /// The knobs under a reloaded file (see [`Federation::reload`]); names the live values the
    /// file replaced.
    fn reload_knobs(&self, old: &Config, new: &Config, changed: &Changed) -> Vec<String> {
        let (was, now) = (Knobs::from_config(old), Knobs::from_config(new));
        // A store's weight and floor as its entry set them before the reload (bound or not).
        let file_was = |name: &str| {
            (changed.before.rows.iter())
                .find(|row| row.name == name)
                .map(|row| (row.weight, row.floor))
        };
        let mut live = self.knobs.write().unwrap_or_else(PoisonError::into_inner);
        let (knobs, replaced) = live.reloaded(&was, now, &changed.after.rows, file_was);
        *live = Arc::new(knobs);
        replaced
    }

    /// The bookkeeping beside the roster after it changed: health records and metric series of
    /// stores that left go, a store bound again starts a fresh record (its breaker closed), and
    /// weight and floor overrides of stores that left are dropped.
    fn after_change(&self, changed: &Changed) {
        for name in changed.rebound() {
            self.health.forget(&name);
        }
        self.forget_departed();
    }

    /// The traces: what a server ends (`Traces::shutdown`) once it has drained.
    pub fn traces(&self) -> &crate::telemetry::Traces {
        &self.traces
    }

    /// The live roster.
    pub fn roster(&self) -> &Roster {
        &self.roster
    }

    /// The live knobs, as the next search will read them.
    pub fn knobs(&self) -> Arc<Knobs> {
        // A poisoned lock only means a writer panicked between two whole-`Arc` states.
        self.knobs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Puts `knobs` in force from the next search on.
    pub fn set_knobs(&self, knobs: Knobs) {
        *self.knobs.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(knobs);
    }

    /// `POST /configure` [5.3]: checks every field, then applies all of them at once, or none.
    /// A caller with a view may re-weight only the stores it sees, and change no knob of the
    /// whole service. Audited, refused or not.
    pub fn configure(
        &self,
        caller: &Caller,
        request: &crate::api::ConfigureRequest,
    ) -> Result<Configured, Refusal> {
        let configured = self.configure_as(caller, request);
        let mut entry = Entry::new(&caller.actor, Action::Configure, configured.is_ok());
        match &configured {
            Ok(done) => entry.changed = Some(serde_json::Value::Object(done.changed.clone())),
            Err(refusal) => entry.detail = Some(&refusal.detail),
        }
        self.audit.record(&entry);
        configured
    }

    fn configure_as(
        &self,
        caller: &Caller,
        request: &crate::api::ConfigureRequest,
    ) -> Result<Configured, Refusal> {
        may_write(caller)?;
        let fan = self.fan_for(caller);
        // Read, change and swap under the write lock, so two changes at once cannot lose one.
        let mut live = self.knobs.write().unwrap_or_else(PoisonError::into_inner);
        let (knobs, changed) = live.configure(request, &fan.rows)?;
        // A view re-weights its own stores and nothing of the whole service; a service knob
        // given at the value in force (a tuned body whose `k` did not move) changes nothing.
        if let Some(view) = &caller.view {
            let service_moved = Knobs {
                stores: live.stores.clone(),
                ..knobs.clone()
            } != **live;
            if service_moved {
                let named = (request.knobs.iter())
                    .filter(|(_, value)| !value.is_null())
                    .map(|(name, _)| name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(Refusal::forbidden(format!(
                    "forbidden: the view {} may set the weight and floor of its own stores only; {named} is the whole service's",
                    view.name
                )));
            }
        }
        *live = Arc::new(knobs);
        drop(live);
        if !changed.is_empty() {
            tracing::info!(actor = %caller.actor, changed = %serde_json::Value::Object(changed.clone()), "knobs changed");
        }
        Ok(Configured {
            ok: true,
            changed,
            active: fan.bound.len(),
        })
    }

    /// `GET /knobs` [5.3], with the store rows `caller` sees, and for a view none of the server's
    /// own settings ([`crate::api::KnobsAnswer::for_view`]).
    pub fn knobs_answer(&self, caller: &Caller) -> crate::api::KnobsAnswer {
        let error = (self.reloads.read().unwrap_or_else(PoisonError::into_inner))
            .error
            .clone();
        let answer = crate::knobs::answer(
            &self.config(),
            &self.knobs(),
            &self.fan_for(caller).rows,
            error,
        );
        match &caller.view {
            Some(view) => answer.for_view(&view.name),
            None => answer,
        }
    }

    /// The roster as `caller` sees it: the whole of it, or its view's part.
    pub fn fan_for(&self, caller: &Caller) -> Arc<Fan> {
        let fan = self.roster.fan();
        match &caller.view {
            None => fan,
            Some(view) => Arc::new(fan.seen_by(view)),
        }
    }

    /// A search (below) over the stores `caller` sees, counted and timed for `GET /metrics`.
    pub async fn search(
        &self,
        caller: &Caller,
        request: &SearchRequest,
        chain: &Chain,
    ) -> Result<SearchAnswer, Refusal> {
        let started = std::time::Instant::now();
        let answer = self.answer(caller, request, chain, None).await;
        self.metrics.search(started.elapsed(), answer.is_ok());
        answer
    }

    /// A search under `knobs` instead of the live ones, which it leaves as they are: what
    /// `eval --tune` asks to see a setting's answers without putting it in force for anyone
    /// else. Counted and timed as any search.
    pub async fn search_under(
        &self,
        caller: &Caller,
        request: &SearchRequest,
        chain: &Chain,
        knobs: Arc<Knobs>,
    ) -> Result<SearchAnswer, Refusal> {
        let started = std::time::Instant::now();
        let answer = self.answer(caller, request, chain, Some(knobs)).await;
        self.metrics.search(started.elapsed(), answer.is_ok());
        answer
    }

    /// Fans the query out, fuses, shapes the packet, answers. `chain` is where the search stands
    /// among callosums ([`Chain::root`] for a direct caller); `under` is the knobs it runs under,
    /// the live ones when `None`.
    async fn answer(
        &self,
        caller: &Caller,
        request: &SearchRequest,
        chain: &Chain,
        under: Option<Arc<Knobs>>,
    ) -> Result<SearchAnswer, Refusal> {
        let span = self.traces.search(chain);
        let (knobs, n, budget, _searching) =
            check::admit(request, chain, (self.id, &self.searches), || {
                under.unwrap_or_else(|| self.knobs())
            })?;
        let query = request.query.as_str();
        let cut = Cut::new(
            &knobs.shaping,
            knobs.k,
            n,
            request.n_results.is_some(),
            budget,
        );
        let ask = packet::ask(n, knobs.fetch_multiplier, budget);
        let identity = request.identity.unwrap_or(knobs.identity);
        let fan = self.fan_for(caller);
        let aimed = fan.aimed(request.stores.as_deref(), request.exclude_stores.as_deref())?;
        let fan = aimed.as_ref().unwrap_or(&fan);
        let spend = Spend::new(fan, &knobs, chain, self.answers.purse());
        let below = chain.child(self.id, per_store_budget(chain.budget, spend.own_calls));
        let chains = (chain, &below);
        let round = Hop {
            fan,
            knobs: &knobs,
            query,
            cut: &cut,
            identity,
            ask,
            // With identity on, a hit past a store's first `n` may be part of a document among
            // the best `n` (its other stores lift it): every hit is read.
            keep: (cut.rows).filter(|_| cut.is_plain() && !request.explain && !identity.is_on()),
            chains,
            spend: &spend,
            roster: &self.roster,
            health: &self.health,
            metrics: &self.metrics,
            trace: span.as_ref(),
        };
        let results = fan::fan_out(&round, query).await;
        let first_took = spend.started.elapsed();
        let mut first = Round::collect(&round, results);
        let (rows, trace) = if request.explain {
            // As many as `explain_dropped` lists, and as many again as hops and edges may bring
            // back into the packet (those are not left out).
            let shaping = &knobs.shaping;
            let back = shaping.hop_budget + shaping.satellite_budget + shaping.edge_budget;
            let (rows, trace) = first.rank_traced(&cut, MAX_EXPLAIN_DROPPED + back);
            (rows, Some(trace))
        } else {
            (first.rank(&cut), None)
        };
        let (ranked, ranked_cost) = (rows.len(), packet_cost(rows.iter().map(|r| &r.hit)));
        let mut notes = Vec::new();
        if fan.bound.is_empty() {
            let config = self.config();
            notes.push(shape::nothing_fanned(fan, aimed.is_some(), &config.path));
        }
        let rows = follow::follow(
            &round,
            (rows, ranked_cost),
            (&first.answered, first_took),
            &mut notes,
        )
        .await;
        // What follows the ranked rows never changes them: only its own rows are counted again.
        let tokens = ranked_cost + packet_cost(rows[ranked..].iter().map(|row| &row.hit));
        let (hits, explain_dropped) = shape::hits(
            rows,
            trace,
            (&first.answered, &cut, ranked, identity),
            (fan, &knobs),
        );
        let answer = SearchAnswer {
            query: query.to_owned(),
            hits,
            budget_tokens: budget,
            tokens,
            stores_searched: first.answered,
            failed: first.failed,
            skipped: fan.skipped(),
            notes,
            explain_dropped,
        };
        if let Some(span) = &span {
            span.answered(&answer);
        }
        Ok(answer)
    }

    /// Starts every MCP store's session in the background, so the first search finds the
    /// servers up (`serve` and `stdio` call it once the roster is read).
    pub fn warm_up(&self) {
        for bound in &self.roster.fan().bound {
            if let store::Caller::Mcp(mcp) = &bound.caller {
                mcp.warm();
            }
        }
    }

    /// The health of every store `caller` sees, as `GET /health/stores` shows it.
    pub fn health(&self, caller: &Caller) -> HealthAnswer {
        let fan = self.fan_for(caller);
        // The snapshot holds every store with a record, called or not; a view's caller reads
        // its own stores' only.
        let mut stores = self
            .health
            .snapshot(fan.bound.iter().map(|b| b.name.as_str()));
        stores.retain(|row| caller.sees(&row.name));
        let count = |status| stores.iter().filter(|s| s.health_status == status).count();
        HealthAnswer {
            healthy: count(HealthStatus::Healthy),
            degraded: count(HealthStatus::Degraded),
            unhealthy: count(HealthStatus::Unhealthy),
            unknown: count(HealthStatus::Unknown),
            ts: crate::health::unix_now(),
            stores,
        }
    }

    /// The Prometheus exposition of `GET /metrics` (`metrics` owns its names and encoding). It
    /// names every store: the edges show it to callers without a view only.
    pub fn metrics(&self) -> String {
        let fan = self.roster.fan();
        let stores: Vec<&str> = fan.bound.iter().map(|b| b.name.as_str()).collect();
        let max_in_flight = self.config().server.max_in_flight;
        self.metrics.encode(crate::metrics::Scrape {
            stores: &stores,
            health: &self.health,
            in_flight: max_in_flight.saturating_sub(self.searches.available_permits()),
            overlay_writes: self.roster.overlay_writes(),
            audit: self.audit.counts(),
            trace_spans_dropped: self.traces.dropped(),
        })
    }

    /// The roster as `GET /stores` shows it to `caller`, with each active store's breaker state.
    /// A view sees its stores and nothing the operator reads about the rest (why the overlay or
    /// the config file could not be read, what waits for a restart: any of it may name a store).
    pub fn stores(&self, caller: &Caller) -> Stores {
        let fan = self.fan_for(caller);
        let knobs = self.knobs();
        let reloads = match caller.view {
            None => (self.reloads.read())
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            Some(_) => ReloadState::default(),
        };
        let mut rows = fan.rows.clone();
        for row in rows
            .iter_mut()
            .filter(|row| row.status == StoreStatus::Active)
        {
            row.breaker = Some(self.health.breaker(&row.name));
        }
        for row in &mut rows {
            (row.weight, row.floor) = knobs.live(&row.name, row.weight, row.floor);
        }
        Stores {
            stores: rows,
            active: fan.bound.len(),
            k: knobs.k,
            n_results: knobs.n_results,
            shaping: knobs.shaping.clone(),
            fetch_multiplier: knobs.fetch_multiplier,
            identity: knobs.identity,
            supported_knobs: crate::config::supported()
                .map(|knob| knob.name.to_owned())
                .collect(),
            types: store::type_names().into_iter().map(str::to_owned).collect(),
            presets: (store::mcp::preset::PRESETS.iter())
                .map(|p| crate::api::PresetRow {
                    name: p.name.to_owned(),
                    tool: p.tool.to_owned(),
                })
                .collect(),
            overlay_error: fan.overlay_error.clone(),
            config_error: reloads.error,
            restart_needed: reloads.restart_needed,
            view: caller.view.as_ref().map(|view| crate::api::ViewRow {
                name: view.name.clone(),
                stores: view.patterns.clone(),
                write: view.write,
            }),
        }
    }

    /// Adds a managed store; it is fanned from the very next search. A view adds only within
    /// its patterns. Audited, refused or not.
    pub async fn add_store(&self, caller: &Caller, new: NewStore) -> Result<Added, Refusal> {
        let name = new.name.trim().to_owned();
        let kind = new.kind.clone();
        let added = self.add_as(caller, new).await;
        let mut entry = Entry::new(&caller.actor, Action::Add, added.is_ok());
        entry.store = Some(&name);
        match &added {
            Ok(_) => {
                // The url as `GET /stores` shows it: no credentials.
                let url = (self.roster.fan().rows.iter())
                    .find(|row| row.name == name)
                    .map(|row| row.url.clone());
                entry.changed = Some(serde_json::json!({"type": kind, "url": url}));
            }
            Err(refusal) => entry.detail = Some(&refusal.detail),
        }
        self.audit.record(&entry);
        added
    }

    async fn add_as(&self, caller: &Caller, new: NewStore) -> Result<Added, Refusal> {
        may_write(caller)?;
        let name = new.name.trim().to_owned();
        if let Some(view) = &caller.view
            && !view.sees(&name)
        {
            return Err(Refusal::forbidden(format!(
                "forbidden: the view {} may add only stores whose names match its patterns ({})",
                view.name,
                view.patterns_line()
            )));
        }
        let active = self.roster.add(new).await?;
        self.forget_departed();
        Ok(Added {
            ok: true,
            added: name,
            active,
        })
    }

    /// Removes a managed store; it is not fanned from the very next search. A store outside
    /// the caller's view is no store at all to it. Audited, refused or not.
    pub async fn remove_store(&self, caller: &Caller, name: &str) -> Result<Removed, Refusal> {
        let removed = self.remove_as(caller, name).await;
        let mut entry = Entry::new(&caller.actor, Action::Remove, removed.is_ok());
        entry.store = Some(name);
        if let Err(refusal) = &removed {
            entry.detail = Some(&refusal.detail);
        }
        self.audit.record(&entry);
        removed
    }

    async fn remove_as(&self, caller: &Caller, name: &str) -> Result<Removed, Refusal> {
        may_write(caller)?;
        if !caller.sees(name) {
            return Err(crate::roster::no_such_store(name));
        }
        let active = self.roster.remove(name).await?;
        self.forget_departed();
        Ok(Removed {
            ok: true,
            removed: name.to_owned(),
            active,
        })
    }

    /// The audit trail's lines written and failed, for `GET /metrics`.
    pub fn audit_counts(&self) -> (u64, u64) {
        self.audit.counts()
    }

    /// Drops what is kept beside the roster for stores that left it: their health records,
    /// their metric series, and their run-time weight and floor (under the knobs' write lock, so
    /// a `/configure` meanwhile is not lost).
    fn forget_departed(&self) {
        let fan = self.roster.fan();
        let names = || fan.rows.iter().map(|row| row.name.as_str());
        self.health.retain(names());
        self.metrics.retain(names());
        let mut live = self.knobs.write().unwrap_or_else(PoisonError::into_inner);
        if live.stores.keys().any(|name| !names().any(|n| n == name)) {
            let mut kept = (**live).clone();
            kept.stores.retain(|name, _| names().any(|n| n == name));
            *live = Arc::new(kept);
        }
    }

    /// What `GET /` shows. Anyone may read it, so with views configured it names no store
    /// (which stores exist is each view's business).
    pub fn info(&self) -> Info {
        let fan = self.roster.fan();
        let views = self.config().server.views.any();
        Info {
            service: "SerenCorpusCallosum".into(),
            version: crate::VERSION.into(),
            stores: (!views).then(|| fan.bound.iter().map(|b| b.name.clone()).collect()),
            skipped: (!views).then(|| fan.skipped()),
        }
    }
}

/// Refuses a write to a caller whose view has no `write` (contract §6c); anyone else may.
fn may_write(caller: &Caller) -> Result<(), Refusal> {
    caller
        .refuse_write()
        .map_or(Ok(()), |why| Err(Refusal::forbidden(why)))
}
