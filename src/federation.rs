//! The federation: the one core both edges (REST and MCP) call. It fans a query out to every bound
//! store at once, each call under its own deadline, collects what failed, fuses what answered, and
//! answers. It also carries the roster's add and remove, so both edges change the same live set.
//!
//! A store's failure is data here, never an error: the only `Err` a search returns is a refusal of
//! the request itself (an empty query, an `n_results` out of range).

use crate::api::NewStore;
use crate::api::{
    self, Added, HealthAnswer, HealthStatus, Info, NameReason, Refusal, RefusalKind, Removed,
    SearchAnswer, StoreStatus, Stores,
};
use crate::chain::{Chain, Id, MAX_DEPTH};
use crate::config::Config;
use crate::fusion::{self, RankedList};
use crate::health::{Admission, Health, Outcome};
use crate::roster::{Bound, Fan, Roster};
use crate::store;
use std::sync::Arc;
use std::time::Duration;

pub use crate::limits::{MAX_N_RESULTS, MAX_QUERY_BYTES};

/// Why the federation could not be built.
#[derive(Debug, thiserror::Error)]
#[error("could not build the HTTP client for stores: {0}")]
pub struct BuildError(#[from] reqwest::Error);

/// The shared core.
pub struct Federation {
    roster: Roster,
    client: reqwest::Client,
    health: Health,
    /// This process's id in chains of callosums (see `chain`).
    id: Id,
    /// Searches under way, from every surface, capped at `server.max_in_flight`: REST's in-flight
    /// cap does not see MCP tool calls, which rmcp runs in each session's own task.
    searches: tokio::sync::Semaphore,
}

impl Federation {
    /// Binds the configured stores and builds the one HTTP client every store call shares (its
    /// connection pool keeps connections to each store alive between searches).
    pub fn new(config: Config) -> Result<Self, BuildError> {
        let client = reqwest::Client::builder()
            .user_agent(concat!("seren-corpus-callosum/", env!("CARGO_PKG_VERSION")))
            .tls_built_in_webpki_certs(true)
            .tls_built_in_native_certs(config.tls.trust_system_store)
            // A redirect would send the query (and perhaps a token) somewhere not configured.
            .redirect(reqwest::redirect::Policy::none())
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(90))
            .build()?;
        let max_searches = config.server.max_in_flight;
        Ok(Self {
            health: Health::new(config.federation.breaker),
            roster: Roster::new(Arc::new(config)),
            client,
            id: Id::random(),
            searches: tokio::sync::Semaphore::new(max_searches),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        self.roster.config()
    }

    /// The live roster.
    pub fn roster(&self) -> &Roster {
        &self.roster
    }

    /// Fans `query` out, fuses, answers. `chain` is where the search stands among callosums
    /// ([`Chain::root`] for a direct caller).
    pub async fn search(
        &self,
        query: &str,
        n_results: Option<i64>,
        chain: &Chain,
    ) -> Result<SearchAnswer, Refusal> {
        if chain.passed(self.id) {
            return Err(Refusal::new(
                RefusalKind::Loop,
                "loop: this search has already passed through this callosum",
            ));
        }
        let n = self.check_request(query, n_results)?;
        let Ok(_searching) = self.searches.try_acquire() else {
            return Err(Refusal::new(
                RefusalKind::Busy,
                "busy: too many searches in flight; retry shortly",
            ));
        };
        let federation = &self.config().federation;
        let ask = n.saturating_mul(federation.fetch_multiplier).max(n);
        let fan = self.roster.fan();
        let results = self.fan_out(&fan, query, ask, chain).await;
        Ok(answer(query, &fan, results, federation.k, n))
    }

    /// Checks a search's query and `n_results`, and says how many fused hits it wants.
    fn check_request(&self, query: &str, n_results: Option<i64>) -> Result<usize, Refusal> {
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
            None => Ok(self.config().federation.n_results),
            Some(n) if (1..=MAX_N_RESULTS).contains(&n) => Ok(n as usize),
            Some(n) => Err(Refusal::unprocessable(format!(
                "n_results must be within 1..={MAX_N_RESULTS}, got {n}"
            ))),
        }
    }

    /// Asks every bound store at once, in roster order, for `ask` hits. Every call carries the
    /// chain on, whatever the store's type (a `seren_memory` url may be a callosum too); too deep
    /// in a chain, or out of budget, a store is named, not asked.
    async fn fan_out(
        &self,
        fan: &Fan,
        query: &str,
        ask: usize,
        chain: &Chain,
    ) -> Vec<Result<Vec<store::Hit>, Unanswered>> {
        let (asked, not_asked) = if chain.depth >= MAX_DEPTH {
            (0, Unanswered::TooDeep)
        } else {
            let asked = fan.bound.len().min(chain.budget as usize);
            (asked, Unanswered::OverBudget(chain.budget))
        };
        let below = chain.child(self.id, per_store_budget(chain.budget, asked));
        let calls = fan.bound[..asked]
            .iter()
            .map(|bound| self.call(bound, query, ask, &below));
        let mut results = futures_util::future::join_all(calls).await;
        results.extend(fan.bound[asked..].iter().map(|_| Err(not_asked.clone())));
        results
    }

    /// One store call, through the breaker, recorded in the store's health.
    async fn call(
        &self,
        bound: &Bound,
        query: &str,
        ask: usize,
        chain: &Chain,
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
        let result = bound.remote.search(&self.client, query, ask, chain).await;
        // A store removed while this call was under way keeps no record (it would come back on
        // the health page, and a new store under its name would inherit it).
        if self.roster.fan().bound.iter().any(|b| b.name == bound.name) {
            self.health
                .record(&bound.name, started.elapsed(), outcome(&result));
        }
        // The outcome is recorded: the probe is finished, not abandoned.
        std::mem::forget(probe);
        result.map_err(Unanswered::Call)
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

    /// The roster as `GET /stores` shows it, with each active store's breaker state.
    pub fn stores(&self) -> Stores {
        let fan = self.roster.fan();
        let federation = &self.config().federation;
        let mut rows = fan.rows.clone();
        for row in rows
            .iter_mut()
            .filter(|row| row.status == StoreStatus::Active)
        {
            row.breaker = Some(self.health.breaker(&row.name));
        }
        Stores {
            stores: rows,
            active: fan.bound.len(),
            k: federation.k,
            n_results: federation.n_results,
            types: store::type_names().into_iter().map(str::to_owned).collect(),
            overlay_error: fan.overlay_error.clone(),
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

    /// Drops the health records of stores that left the roster.
    fn forget_departed(&self) {
        let fan = self.roster.fan();
        self.health
            .retain(fan.rows.iter().map(|row| row.name.as_str()));
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

/// The answer to a search: what each store gave, in roster order, fused and cut to `n`, with the
/// stores that gave nothing named.
fn answer(
    query: &str,
    fan: &Fan,
    results: Vec<Result<Vec<store::Hit>, Unanswered>>,
    k: u32,
    n: usize,
) -> SearchAnswer {
    let mut answered = Vec::new();
    let mut lists = Vec::new();
    let mut failed = Vec::new();
    for (bound, result) in fan.bound.iter().zip(results) {
        match result {
            Ok(hits) => {
                answered.push(bound);
                lists.push(RankedList {
                    weight: bound.weight,
                    floor: bound.floor,
                    hits,
                });
            }
            Err(why) => {
                // Per search at debug only: the first failure of a run, and the breaker's
                // openings, are logged at warn by `health`, so a dead store does not write
                // a line per search.
                tracing::debug!(store = %bound.name, reason = %why, "store gave nothing");
                failed.push(NameReason {
                    name: bound.name.clone(),
                    reason: why.to_string(),
                });
            }
        }
    }
    let hits = fusion::fuse(lists, k, n)
        .into_iter()
        .map(|fused| api::Hit {
            store: answered[fused.list].name.clone(),
            id: fused.hit.id,
            content: fused.hit.content,
            score: fused.score,
            store_rank: u32::try_from(fused.rank).unwrap_or(u32::MAX),
            base_relevance: fused.hit.base_relevance,
            native_score: fused.hit.native_score,
            raw_distance: fused.hit.raw_distance,
            metadata: fused.hit.metadata,
        })
        .collect();
    SearchAnswer {
        query: query.to_owned(),
        hits,
        stores_searched: answered.iter().map(|b| b.name.clone()).collect(),
        failed,
        skipped: fan.skipped(),
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
        }
    }
}

/// What a call's result means to the store's health record.
fn outcome(result: &Result<Vec<store::Hit>, store::Failure>) -> Outcome {
    match result {
        Ok(_) => Outcome::Answered,
        Err(failure) if failure.blames_the_request() => Outcome::Refused(failure.to_string()),
        Err(failure) => Outcome::Failed(failure.to_string()),
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
