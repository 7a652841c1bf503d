//! The federation: the one core both edges (REST and MCP) call. It fans a query out to every bound
//! store at once, each call under its own deadline, collects what failed, fuses what answered, and
//! answers. It also carries the roster's add and remove, so both edges change the same live set.
//!
//! A store's failure is data here, never an error: the only `Err` a search returns is a refusal of
//! the request itself (an empty query, an `n_results` out of range).

use crate::api::NewStore;
use crate::api::{
    Added, Configured, HealthAnswer, HealthStatus, Info, NameReason, Refusal, RefusalKind, Removed,
    SearchAnswer, SearchRequest, StoreStatus, Stores,
};
use crate::chain::{Chain, Id, MAX_DEPTH};
use crate::config::Config;
use crate::explain;
use crate::fusion::RankedList;
use crate::health::{Admission, Health, Outcome};
use crate::knobs::Knobs;
use crate::ledger::{Ledger, Purse};
use crate::limits::{MAX_BUDGET_TOKENS, MAX_EXPLAIN_DROPPED};
use crate::packet::page::packet_cost;
use crate::packet::{self, Cut, Row, Seen, edges, hops};
use crate::roster::{Changed, Fan, Roster};
use crate::store::{self, Bound};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::{Duration, Instant};

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

impl Federation {
    /// Binds the configured stores and builds the HTTP clients store calls share (their
    /// connection pools keep connections to each store alive between searches; a store with
    /// `tls_ca_file` gets its own, `store::clients`).
    pub fn new(config: Config) -> Result<Self, BuildError> {
        let clients = crate::store::clients::Clients::new(config.tls.trust_system_store)?;
        let max_searches = config.server.max_in_flight;
        let knobs = RwLock::new(Arc::new(Knobs::from_config(&config)));
        let answers = clients.answers();
        Ok(Self {
            knobs,
            health: Health::new(config.federation.breaker),
            roster: Roster::new(Arc::new(config), clients),
            id: Id::random(),
            searches: tokio::sync::Semaphore::new(max_searches),
            metrics: crate::metrics::Metrics::default(),
            reloads: RwLock::default(),
            answers,
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
        Reloaded {
            added: changed.added(),
            removed: changed.removed(),
            rebound: changed.rebound(),
            knobs_replaced,
            restart_needed,
        }
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
    pub fn configure(&self, request: &crate::api::ConfigureRequest) -> Result<Configured, Refusal> {
        let fan = self.roster.fan();
        // Read, change and swap under the write lock, so two changes at once cannot lose one.
        let mut live = self.knobs.write().unwrap_or_else(PoisonError::into_inner);
        let (knobs, changed) = live.configure(request, &fan.rows)?;
        *live = Arc::new(knobs);
        drop(live);
        if !changed.is_empty() {
            tracing::info!(changed = %serde_json::Value::Object(changed.clone()), "knobs changed");
        }
        Ok(Configured {
            ok: true,
            changed,
            active: fan.bound.len(),
        })
    }

    /// `GET /knobs` [5.3].
    pub fn knobs_answer(&self) -> crate::api::KnobsAnswer {
        let error = (self.reloads.read().unwrap_or_else(PoisonError::into_inner))
            .error
            .clone();
        crate::knobs::answer(
            &self.config(),
            &self.knobs(),
            &self.roster.fan().rows,
            error,
        )
    }

    /// A search (below), counted and timed for `GET /metrics`.
    pub async fn search(
        &self,
        request: &SearchRequest,
        chain: &Chain,
    ) -> Result<SearchAnswer, Refusal> {
        let started = std::time::Instant::now();
        let answer = self.answer(request, chain).await;
        self.metrics.search(started.elapsed(), answer.is_ok());
        answer
    }

    /// Fans the query out, fuses, shapes the packet, answers. `chain` is where the search stands
    /// among callosums ([`Chain::root`] for a direct caller).
    async fn answer(
        &self,
        request: &SearchRequest,
        chain: &Chain,
    ) -> Result<SearchAnswer, Refusal> {
        let (knobs, n, budget, _searching) = self.admit(request, chain)?;
        let query = request.query.as_str();
        let cut = Cut::new(
            &knobs.shaping,
            knobs.k,
            n,
            request.n_results.is_some(),
            budget,
        );
        let ask = packet::ask(n, knobs.fetch_multiplier, budget);
        let fan = self.roster.fan();
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
            ask,
            keep: cut.rows.filter(|_| cut.is_plain() && !request.explain),
            chains,
            spend: &spend,
        };
        let results = self.fan_out(&round, query).await;
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
            notes.push(self.nothing_fanned(fan, aimed.is_some()));
        }
        let rows = self
            .follow(
                &round,
                (rows, ranked_cost),
                (&first.answered, first_took),
                &mut notes,
            )
            .await;
        // What follows the ranked rows never changes them: only its own rows are counted again.
        let tokens = ranked_cost + packet_cost(rows[ranked..].iter().map(|row| &row.hit));
        let (hits, explain_dropped) = match trace {
            None => (rows.into_iter().map(|row| wire(row, None)).collect(), None),
            Some(trace) => {
                let context = explain::Context {
                    trace: &trace,
                    names: &first.answered,
                    cut: &cut,
                    ranked,
                };
                let scale = |name: &str| {
                    (fan.bound.iter().find(|b| b.name == name))
                        .map_or((1.0, 0.0), |bound| knobs.weight_and_floor(bound))
                };
                let explains = explain::hits(&context, &rows, scale);
                let dropped = explain::dropped(&context, &rows, MAX_EXPLAIN_DROPPED);
                let hits = (rows.into_iter().zip(explains))
                    .map(|(row, why)| wire(row, Some(why)))
                    .collect();
                (hits, Some(dropped))
            }
        };
        Ok(SearchAnswer {
            query: query.to_owned(),
            hits,
            budget_tokens: budget,
            tokens,
            stores_searched: first.answered,
            failed: first.failed,
            skipped: fan.skipped(),
            notes,
            explain_dropped,
        })
    }

    /// Lets a search in, or says why not: a loop, a bad request, too many searches at once. It
    /// runs with the knobs read here, whatever changes while it runs, for `n` hits and a page of
    /// `budget` tokens, holding one of the in-flight slots until the permit drops.
    fn admit(
        &self,
        request: &SearchRequest,
        chain: &Chain,
    ) -> Result<
        (
            Arc<Knobs>,
            usize,
            Option<usize>,
            tokio::sync::SemaphorePermit<'_>,
        ),
        Refusal,
    > {
        if chain.passed(self.id) {
            return Err(Refusal::new(
                RefusalKind::Loop,
                "loop: this search has already passed through this callosum",
            ));
        }
        let knobs = self.knobs();
        let n = Self::check_request(&request.query, request.n_results, &knobs)?;
        let budget = check_budget(request.budget_tokens)?.or(knobs.shaping.budget_tokens);
        let Ok(searching) = self.searches.try_acquire() else {
            return Err(Refusal::new(
                RefusalKind::Busy,
                "busy: too many searches in flight; retry shortly",
            ));
        };
        Ok((knobs, n, budget, searching))
    }

    /// Why a search over no stores found nothing, in words a model can act on. `aimed`: the fan
    /// is the part `stores` and `exclude_stores` left.
    fn nothing_fanned(&self, fan: &Fan, aimed: bool) -> String {
        if aimed && fan.rows.is_empty() {
            "no store was searched: stores and exclude_stores leave none of the configured stores"
                .to_owned()
        } else if aimed {
            format!(
                "no store was searched: of the {} stores that stores and exclude_stores leave, \
                 none is active (list_stores says why)",
                fan.rows.len()
            )
        } else if fan.rows.is_empty() {
            format!(
                "no stores are configured, so nothing was searched: add one with the add_store \
                 tool (or POST /stores), or under federation.stores in {}",
                self.config().path.display()
            )
        } else {
            format!(
                "no store was searched: the {} configured are disabled or skipped (list_stores \
                 says why)",
                fan.rows.len()
            )
        }
    }

    /// What follows the first round's ranked `rows` [5.3]: hop hits, then satellite and
    /// supersedes edges, then topic edges, each fitted to what is left of the page. Each later
    /// round of store calls (a hop, the topic edges) runs only while the search's call budget and
    /// deadline leave room for it (a round as long as the first, `first_took`); what did not run
    /// is said in `notes`.
    async fn follow(
        &self,
        round: &Hop<'_>,
        (mut rows, ranked_cost): (Vec<Row>, usize),
        (answered, first_took): (&[String], Duration),
        notes: &mut Vec<String>,
    ) -> Vec<Row> {
        let shaping = &round.knobs.shaping;
        if !(shaping.hops_on() || shaping.satellites_on() || shaping.topics_on()) {
            // Nothing follows: a core's satellites, taken off at decode, are dropped with it.
            return rows;
        }
        let mut seen: Seen = rows.iter().map(|row| row.hit.id.clone()).collect();
        let mut left = round
            .cut
            .budget
            .map(|budget| budget.saturating_sub(ranked_cost));
        if shaping.hops_on() && !rows.is_empty() {
            let hopped = (self.hop(round, &rows, (&mut seen, &mut left), first_took, notes)).await;
            rows.extend(hopped);
        }
        let satellite_budget = if shaping.satellites_on() {
            shaping.satellite_budget
        } else {
            0
        };
        let satellites = edges::satellites(&mut rows, satellite_budget, &mut seen, &mut left);
        rows.extend(satellites);
        if shaping.topics_on() {
            let stores: Vec<&Arc<Bound>> = (round.fan.bound.iter())
                .filter(|b| b.caller.has_topics() && answered.contains(&b.name))
                .collect();
            let topic_edges = (self.topic_edges(round, &stores, &rows, (&mut left, first_took)))
                .await
                .unwrap_or_else(|why| {
                    notes.push(format!("topic edges not asked: {why}"));
                    Vec::new()
                });
            rows.extend(topic_edges);
        }
        rows
    }

    /// Rounds 2 and on [5.3]: each fans a bridge query made of the query and the last round's
    /// best hits, and keeps the hits the packet has not seen. Calls are recorded in health like
    /// any other; they do not change who answered the search.
    async fn hop(
        &self,
        round: &Hop<'_>,
        packet: &[Row],
        (seen, left): (&mut Seen, &mut Option<usize>),
        first_took: Duration,
        notes: &mut Vec<String>,
    ) -> Vec<Row> {
        let shaping = &round.knobs.shaping;
        let mut kept: Vec<Row> = Vec::new();
        // Where the last round's hits start in `kept`; `None` while the frontier is the packet.
        let mut last_round: Option<usize> = None;
        for hop in 2..=shaping.hops {
            let room = shaping.hop_budget.saturating_sub(kept.len());
            if room == 0 || crate::packet::page::is_full(*left) {
                break;
            }
            if let Err(why) = round.spend.room(first_took) {
                let rounds = if hop == shaping.hops {
                    format!("hop round {hop}")
                } else {
                    format!("hop rounds {hop}-{}", shaping.hops)
                };
                notes.push(format!("{rounds} not run: {why}"));
                break;
            }
            let frontier = last_round.map_or(packet, |start| &kept[start..]);
            let bridge = hops::bridge(round.query, frontier, shaping.hop_terms);
            let results = self.fan_out(round, &bridge).await;
            notes.extend(hop_notes(round, hop, &results));
            let ranked = Round::collect(round, results).rank(round.cut);
            let new = hops::keep_new(ranked, hop, &bridge, room, seen, left);
            if new.is_empty() {
                break;
            }
            last_round = Some(kept.len());
            kept.extend(new);
        }
        kept
    }

    /// Topic edges [5.3]: `/by_topic` on every store that speaks it and answered this search, at
    /// once, each under its own deadline (cut to the search's). A store that fails gives no edges
    /// and no `failed` entry, and is not recorded in health (5.3.0 keeps these calls silent too).
    /// `Err` says why none were asked: the search's call budget or deadline left no room.
    async fn topic_edges(
        &self,
        round: &Hop<'_>,
        stores: &[&Arc<Bound>],
        rows: &[Row],
        (left, first_took): (&mut Option<usize>, Duration),
    ) -> Result<Vec<Row>, String> {
        let budget = round.knobs.shaping.edge_budget;
        let topics = edges::topics(rows);
        if topics.is_empty() || stores.is_empty() || crate::packet::page::is_full(*left) {
            return Ok(Vec::new());
        }
        round.spend.room(first_took)?;
        let asked = round.spend.take_calls(stores.len());
        if asked == 0 {
            return Err(Spend::spent(round.chains.0.budget));
        }
        let exclude: Vec<String> = rows.iter().map(|row| row.hit.id.clone()).collect();
        let calls = stores[..asked].iter().map(|bound| async {
            let answer = bound
                .caller
                .by_topic(
                    &topics,
                    budget,
                    &exclude,
                    (round.chains.1, round.call(bound)),
                    &round.spend.purse,
                )
                .await?;
            match answer {
                Ok(hits) => Some((bound.name.clone(), hits)),
                Err(why) => {
                    tracing::debug!(store = %bound.name, reason = %why.public(), "no topic edges");
                    None
                }
            }
        });
        let answers = futures_util::future::join_all(calls).await;
        Ok(edges::topic_edges(
            answers.into_iter().flatten().collect(),
            budget,
            left,
        ))
    }

    /// Checks a search's query and `n_results`, and says how many fused hits it wants.
    fn check_request(query: &str, n_results: Option<i64>, knobs: &Knobs) -> Result<usize, Refusal> {
        if query.len() > MAX_QUERY_BYTES {
            return Err(Refusal::new(
                RefusalKind::TooLarge,
                format!(
                    "query is {} bytes; the limit is {MAX_QUERY_BYTES}",
                    query.len()
                ),
            ));
        }
        if query.trim().is_empty() {
            return Err(Refusal::unprocessable("query must not be empty"));
        }
        match n_results {
            None => Ok(knobs.n_results),
            Some(n) if (1..=MAX_N_RESULTS).contains(&n) => Ok(n as usize),
            Some(n) => Err(Refusal::unprocessable(format!(
                "n_results must be within 1..={MAX_N_RESULTS}, got {n}"
            ))),
        }
    }

    /// Asks every bound store at once, in roster order, for `ask` hits. Every call carries the
    /// chain on (`below`, this callosum added), whatever the store's type (a `seren_memory` url
    /// may be a callosum too); too deep in a chain, or past the search's budget of calls (across
    /// all its rounds), a store is named, not asked.
    async fn fan_out(
        &self,
        round: &Hop<'_>,
        query: &str,
    ) -> Vec<Result<Vec<store::Hit>, Unanswered>> {
        let (fan, (chain, below)) = (round.fan, round.chains);
        // The first round runs under each store's own timeout (the deadline is the largest of
        // them, from now); later rounds are cut to what is left of it.
        let first = round.spend.begin();
        let (asked, not_asked) = if chain.depth >= MAX_DEPTH {
            (0, Unanswered::TooDeep)
        } else {
            let asked = round.spend.take_calls(fan.bound.len());
            (asked, Unanswered::OverBudget(chain.budget))
        };
        let calls = fan.bound[..asked].iter().map(|bound| {
            let call = if first {
                let mut call = round.knobs.call(bound);
                if let Some(hits) = round.keep {
                    let floor = round.knobs.weight_and_floor(bound).1;
                    call.keep = store::Keep { hits, floor };
                }
                call
            } else {
                round.call(bound)
            };
            self.call(bound, query, round.ask, (below, call), round)
        });
        let mut results = futures_util::future::join_all(calls).await;
        results.extend(fan.bound[asked..].iter().map(|_| Err(not_asked.clone())));
        results
    }

    /// One store call, through the breaker, recorded in the store's health. A call that the
    /// search's deadline cut short of the store's own timeout, and that timed out, is no sign
    /// the store is down: it is not recorded, and its reason says what cut it.
    async fn call(
        &self,
        bound: &Bound,
        query: &str,
        ask: usize,
        how: (&Chain, store::Call),
        round: &Hop<'_>,
    ) -> Result<Vec<store::Hit>, Unanswered> {
        let probe = match self.health.admit(&bound.name) {
            Admission::Skip { last_error } => return Err(Unanswered::CircuitOpen(last_error)),
            Admission::Call => None,
            // If this search is dropped mid-probe, the guard lets the next call probe instead.
            Admission::Probe => Some(ProbeGuard {
                health: &self.health,
                store: &bound.name,
            }),
        };
        let started = std::time::Instant::now();
        let cut = how.1.timeout < round.knobs.call(bound).timeout;
        let result = (bound.caller)
            .search(query, ask, how, &round.spend.purse)
            .await;
        if cut && matches!(result, Err(store::Failure::Timeout(_))) {
            // Not the store's fault: a probe under way is handed on (the guard says so).
            drop(probe);
            return Err(Unanswered::Deadline(round.spend.limit));
        }
        // An answer dropped for the memory bound says nothing of the store: counted in metrics,
        // kept off its health record, and a probe it was is handed on (the guard says so).
        let dropped = matches!(result, Err(store::Failure::Memory(_)));
        // A store removed while this call was under way keeps no record (it would come back on
        // the health page, and a new store under its name would inherit it).
        if self.roster.fan().bound.iter().any(|b| b.name == bound.name) {
            if !dropped {
                self.health
                    .record(&bound.name, started.elapsed(), outcome(&result));
            }
            self.metrics
                .store_call(&bound.name, started.elapsed(), &result);
        }
        if !dropped {
            // The outcome is recorded: the probe is finished, not abandoned.
            std::mem::forget(probe);
        }
        result.map_err(Unanswered::Call)
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

    /// Every store's health, as `GET /health/stores` shows it.
    pub fn health(&self) -> HealthAnswer {
        let fan = self.roster.fan();
        let stores = self
            .health
            .snapshot(fan.bound.iter().map(|b| b.name.as_str()));
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

    /// The Prometheus exposition of `GET /metrics` (`metrics` owns its names and encoding).
    pub fn metrics(&self) -> String {
        let fan = self.roster.fan();
        let stores: Vec<&str> = fan.bound.iter().map(|b| b.name.as_str()).collect();
        let max_in_flight = self.config().server.max_in_flight;
        self.metrics.encode(crate::metrics::Scrape {
            stores: &stores,
            health: &self.health,
            in_flight: max_in_flight.saturating_sub(self.searches.available_permits()),
            overlay_writes: self.roster.overlay_writes(),
        })
    }

    /// The roster as `GET /stores` shows it, with each active store's breaker state.
    pub fn stores(&self) -> Stores {
        let fan = self.roster.fan();
        let knobs = self.knobs();
        let reloads = (self.reloads.read())
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
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
        }
    }

    /// Adds a managed store; it is fanned from the very next search.
    pub async fn add_store(&self, new: NewStore) -> Result<Added, Refusal> {
        let name = new.name.trim().to_owned();
        let active = self.roster.add(new).await?;
        self.forget_departed();
        Ok(Added {
            ok: true,
            added: name,
            active,
        })
    }

    /// Removes a managed store; it is not fanned from the very next search.
    pub async fn remove_store(&self, name: &str) -> Result<Removed, Refusal> {
        let active = self.roster.remove(name).await?;
        self.forget_departed();
        Ok(Removed {
            ok: true,
            removed: name.to_owned(),
            active,
        })
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

    /// What `GET /` shows.
    pub fn info(&self) -> Info {
        let fan = self.roster.fan();
        Info {
            service: "SerenCorpusCallosum".into(),
            version: crate::VERSION.into(),
            stores: fan.bound.iter().map(|b| b.name.clone()).collect(),
            skipped: fan.skipped(),
        }
    }
}

/// What every round of a search fans with: the same stores, knobs, query, cut, ask and chain as
/// the first.
struct Hop<'a> {
    fan: &'a Fan,
    knobs: &'a Knobs,
    query: &'a str,
    cut: &'a Cut,
    ask: usize,
    /// How many of each store's hits past its floor the first round can use: `cut.rows` for a
    /// plain cut without `explain` (fusion reads no further, see [`store::Keep`]), else all.
    keep: Option<usize>,
    chains: (&'a Chain, &'a Chain),
    spend: &'a Spend<'a>,
}

impl Hop<'_> {
    /// How this search calls `bound` now: its own timeout, cut to what is left of the search's
    /// deadline.
    fn call(&self, bound: &Bound) -> store::Call {
        let mut call = self.knobs.call(bound);
        if let Some(deadline) = self.spend.deadline.get() {
            let left = deadline.saturating_duration_since(Instant::now());
            call.timeout = call.timeout.min(left);
        }
        call
    }
}

/// What one search may still spend across its rounds (the first fan, each hop, the topic edges):
/// store calls of its own, time, and bytes of store answers.
struct Spend<'a> {
    /// The store calls this callosum may make for this search in all: every round of every
    /// store and the topic edges, at most the chain's budget. Each round takes its calls
    /// before it fans; a store past them is not asked.
    own_calls: usize,
    calls: AtomicUsize,
    /// When the search began.
    started: Instant,
    /// The search's deadline: its largest store timeout after the first round began, so the
    /// first round is never cut and nothing after it outlasts it. Set by the first fan.
    deadline: OnceLock<Instant>,
    /// The largest store timeout.
    limit: Duration,
    /// The search's share of the bytes of store answers held.
    purse: Purse<'a>,
}

impl<'a> Spend<'a> {
    fn new(fan: &Fan, knobs: &Knobs, chain: &Chain, purse: Purse<'a>) -> Self {
        let shaping = &knobs.shaping;
        let rounds = if shaping.hops_on() { shaping.hops } else { 1 };
        let topic_stores = if shaping.topics_on() {
            fan.bound.iter().filter(|b| b.caller.has_topics()).count()
        } else {
            0
        };
        let planned = (fan.bound.len())
            .saturating_mul(rounds)
            .saturating_add(topic_stores);
        let own_calls = planned.min(chain.budget as usize);
        Self {
            own_calls,
            calls: AtomicUsize::new(own_calls),
            started: Instant::now(),
            deadline: OnceLock::new(),
            limit: (fan.bound.iter())
                .map(|b| knobs.call(b).timeout)
                .max()
                .unwrap_or_default(),
            purse,
        }
    }

    /// Starts the deadline, at the first round; whether this was the first round.
    fn begin(&self) -> bool {
        let mut first = false;
        self.deadline.get_or_init(|| {
            first = true;
            Instant::now() + self.limit
        });
        first
    }

    /// Takes up to `want` calls from what is left, and says how many it took.
    fn take_calls(&self, want: usize) -> usize {
        let mut taken = 0;
        // Rounds run one after another, so this never contends; the update is atomic only
        // because the search's future must be `Send`.
        let _ = self
            .calls
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                taken = want.min(left);
                Some(left - taken)
            });
        taken
    }

    /// Whether one more round fits: calls are left, and so is as much time as `round` (the first
    /// round's length); otherwise why not, in words.
    fn room(&self, round: Duration) -> Result<(), String> {
        if self.calls.load(Ordering::Relaxed) == 0 {
            return Err(Self::spent(self.own_calls as u32));
        }
        let left = (self.deadline.get())
            .map_or(self.limit, |d| d.saturating_duration_since(Instant::now()));
        if left.is_zero() || left < round {
            return Err(format!(
                "{:.2}s of this search's {:.2}s deadline are left and its first round took {:.2}s",
                left.as_secs_f64(),
                self.limit.as_secs_f64(),
                round.as_secs_f64()
            ));
        }
        Ok(())
    }

    /// The words for a spent call budget.
    fn spent(budget: u32) -> String {
        format!("this search's budget of {budget} store calls is spent")
    }
}

/// One round's answers: who answered (their lists, in roster order) and who gave nothing.
struct Round<'a> {
    answered: Vec<String>,
    lists: Vec<RankedList>,
    bound: Vec<&'a Bound>,
    failed: Vec<NameReason>,
}

impl<'a> Round<'a> {
    fn collect(round: &Hop<'a>, results: Vec<Result<Vec<store::Hit>, Unanswered>>) -> Self {
        let fan = round.fan;
        let mut collected = Round {
            answered: Vec::new(),
            lists: Vec::new(),
            bound: Vec::new(),
            failed: Vec::new(),
        };
        for (bound, result) in fan.bound.iter().zip(results) {
            match result {
                Ok(hits) => {
                    let (weight, floor) = round.knobs.weight_and_floor(bound);
                    collected.answered.push(bound.name.clone());
                    collected.bound.push(bound);
                    collected.lists.push(RankedList {
                        weight,
                        floor,
                        hits,
                    });
                }
                Err(why) => {
                    // Per search at debug only: the first failure of a run, and the breaker's
                    // openings, are logged at warn by `health`, so a dead store does not write
                    // a line per search.
                    tracing::debug!(store = %bound.name, reason = %why.public(), "store gave nothing");
                    collected.failed.push(NameReason {
                        name: bound.name.clone(),
                        reason: why.to_string(),
                    });
                }
            }
        }
        collected
    }

    /// The round's lists fused and cut into rows (the lists are used up).
    fn rank(&mut self, cut: &Cut) -> Vec<Row> {
        let bound = &self.bound;
        packet::rank(std::mem::take(&mut self.lists), cut)
            .into_iter()
            .map(|fused| Row::fused(&bound[fused.list].name, fused))
            .collect()
    }

    /// [`Round::rank`], and what each step of the cut did (for `explain`), naming at most
    /// `max_dropped` of the rows it left out.
    fn rank_traced(&mut self, cut: &Cut, max_dropped: usize) -> (Vec<Row>, packet::Trace) {
        let bound = &self.bound;
        let (fused, trace) = packet::rank_traced(std::mem::take(&mut self.lists), cut, max_dropped);
        let rows = (fused.into_iter())
            .map(|fused| Row::fused(&bound[fused.list].name, fused))
            .collect();
        (rows, trace)
    }
}

/// What a hop round could not do, for the answer's `notes`: stores its call budget left unasked,
/// and stores that gave no answer within the search's deadline.
fn hop_notes(
    round: &Hop<'_>,
    hop: usize,
    results: &[Result<Vec<store::Hit>, Unanswered>],
) -> Vec<String> {
    let stores = round.fan.bound.len();
    let count = |what: fn(&Unanswered) -> bool| {
        (results.iter())
            .filter(|r| r.as_ref().is_err_and(what))
            .count()
    };
    let (not_asked, late) = (
        count(Unanswered::not_asked),
        count(|why| matches!(why, Unanswered::Deadline(_))),
    );
    let mut notes = Vec::new();
    if not_asked > 0 {
        notes.push(format!(
            "hop round {hop} asked {} of {stores} stores: {}",
            stores - not_asked,
            Spend::spent(round.chains.0.budget)
        ));
    }
    if late > 0 {
        notes.push(format!(
            "hop round {hop}: {late} of {stores} stores gave no answer within this search's \
             {:.2}s deadline",
            round.spend.limit.as_secs_f64()
        ));
    }
    notes
}

/// A packet row as the wire shows it: the one place the packet's rows become `api` hits, so
/// the packet never imports `api`.
fn wire(row: Row, explain: Option<crate::api::Explain>) -> crate::api::Hit {
    crate::api::Hit {
        store: row.store,
        id: row.hit.id,
        content: row.hit.content,
        score: row.score,
        store_rank: u32::try_from(row.rank).unwrap_or(u32::MAX),
        base_relevance: row.hit.base_relevance,
        native_score: row.hit.native_score,
        raw_distance: row.hit.raw_distance,
        metadata: row.hit.metadata,
        explain,
    }
}

/// Checks a search's `budget_tokens`: null, or within 1..=[`MAX_BUDGET_TOKENS`].
fn check_budget(budget: Option<i64>) -> Result<Option<usize>, Refusal> {
    match budget {
        None => Ok(None),
        Some(b) if b >= 1 && b as u64 <= MAX_BUDGET_TOKENS as u64 => Ok(Some(b as usize)),
        Some(b) => Err(Refusal::unprocessable(format!(
            "budget_tokens must be within 1..={MAX_BUDGET_TOKENS}, got {b}"
        ))),
    }
}

/// Why a store gave nothing to one search. Typed until the answer is written: its text is the
/// `failed` reason.
#[derive(Debug, Clone)]
enum Unanswered {
    /// The call failed.
    Call(store::Failure),
    /// The breaker skipped it; the last failure that kept the circuit open.
    CircuitOpen(Option<String>),
    /// Not asked: too many callosums stand before this one in the chain.
    TooDeep,
    /// Not asked: the search's budget of store calls is spent.
    OverBudget(u32),
    /// Asked in a later round, and not answered within the search's deadline (its largest store
    /// timeout).
    Deadline(Duration),
}

impl Unanswered {
    /// Whether the store was never asked.
    fn not_asked(&self) -> bool {
        matches!(self, Unanswered::TooDeep | Unanswered::OverBudget(_))
    }
}

impl std::fmt::Display for Unanswered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unanswered::Call(failure) => failure.fmt(f),
            Unanswered::CircuitOpen(last) => {
                write!(f, "circuit open: {}", last.as_deref().unwrap_or("failing"))
            }
            Unanswered::TooDeep => write!(
                f,
                "not asked: {MAX_DEPTH} callosums already stand in this chain (a loop?)"
            ),
            Unanswered::OverBudget(budget) => write!(
                f,
                "not asked: this search's budget of {budget} store calls is spent"
            ),
            Unanswered::Deadline(limit) => write!(
                f,
                "no answer within this search's deadline of {:.2}s",
                limit.as_secs_f64()
            ),
        }
    }
}

impl Unanswered {
    /// The reason for the log: a call's failure in its public words ([`store::Failure::public`]).
    fn public(&self) -> String {
        match self {
            Unanswered::Call(failure) => failure.public(),
            other => other.to_string(),
        }
    }
}

/// What a call's result means to the store's health record.
fn outcome(result: &Result<Vec<store::Hit>, store::Failure>) -> Outcome {
    match result {
        Ok(_) => Outcome::Answered,
        // The record is read by everyone (the health page, other searches' `circuit open`):
        // it keeps the public words, never a store's own text.
        Err(failure) if failure.blames_the_request() => Outcome::Refused(failure.public()),
        Err(failure) => Outcome::Failed(failure.public()),
    }
}

/// The calls each of `asked` stores may cause below it, out of `budget` for this whole level: what
/// is left after this level's own calls, shared evenly, so the whole tree stays within `budget`.
fn per_store_budget(budget: u32, asked: usize) -> u32 {
    let asked = u32::try_from(asked).unwrap_or(u32::MAX).max(1);
    budget.saturating_sub(asked) / asked
}

/// Held while a probe call is under way. Dropped unfinished (the search was cancelled), it tells the
/// breaker, so the next call probes instead of the circuit waiting on a probe that is gone.
struct ProbeGuard<'a> {
    health: &'a Health,
    store: &'a str,
}

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        self.health.abandon_probe(self.store);
    }
}
