//! The fan under one budget: what every round of a search fans with ([`Hop`]), one round's calls to
//! every bound store at once, each through the breaker and recorded in the store's health, and why
//! a store gave nothing ([`Unanswered`]).

use super::spend::Spend;
use crate::chain::{Chain, MAX_DEPTH};
use crate::health::{Admission, Health, Outcome};
use crate::identity::Identity;
use crate::knobs::Knobs;
use crate::metrics::Metrics;
use crate::packet::Cut;
use crate::roster::{Fan, Roster};
use crate::store;
use crate::store::Bound;
use crate::telemetry::Span;
use std::time::{Duration, Instant};

/// What every round of a search fans with: the same stores, knobs, query, cut, ask and chain as
/// the first, and the same records of its calls.
pub(super) struct Hop<'a> {
    pub(super) fan: &'a Fan,
    pub(super) knobs: &'a Knobs,
    pub(super) query: &'a str,
    pub(super) cut: &'a Cut,
    /// Which hits are one document in this search (the knob, or the search's own `identity`).
    pub(super) identity: Identity,
    pub(super) ask: usize,
    /// How many of each store's hits past its floor the first round can use: `cut.rows` for a
    /// plain cut without `explain` (fusion reads no further, see [`store::Keep`]), else all.
    pub(super) keep: Option<usize>,
    pub(super) chains: (&'a Chain, &'a Chain),
    pub(super) spend: &'a Spend<'a>,
    /// The live roster: a store removed while its call was under way keeps no record.
    pub(super) roster: &'a Roster,
    /// The stores' health records and breakers, which every call goes through.
    pub(super) health: &'a Health,
    /// The store calls' numbers, for `GET /metrics`.
    pub(super) metrics: &'a Metrics,
    /// The span this round's store calls are children of (the search's, or a hop round's);
    /// `None` when traces are off.
    pub(super) trace: Option<&'a Span<'a>>,
}

impl Hop<'_> {
    /// How this search calls `bound` now: its own timeout, cut to what is left of the search's
    /// deadline.
    pub(super) fn call(&self, bound: &Bound) -> store::Call {
        let mut call = self.knobs.call(bound);
        if let Some(deadline) = self.spend.deadline.get() {
            let left = deadline.saturating_duration_since(Instant::now());
            call.timeout = call.timeout.min(left);
        }
        call
    }
}

/// Asks every bound store at once, in roster order, for `ask` hits. Every call carries the
/// chain on (`below`, this callosum added), whatever the store's type (a `seren_memory` url
/// may be a callosum too); too deep in a chain, or past the search's budget of calls (across
/// all its rounds), a store is named, not asked.
pub(super) async fn fan_out(
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
        call_store(bound, query, round.ask, (below, call), round)
    });
    let mut results = futures_util::future::join_all(calls).await;
    results.extend(fan.bound[asked..].iter().map(|_| Err(not_asked.clone())));
    results
}

/// One store call, through the breaker, recorded in the store's health. A call that the
/// search's deadline cut short of the store's own timeout, and that timed out, is no sign
/// the store is down: it is not recorded, and its reason says what cut it. With traces on, it is
/// a `store.call` span, whose context the call carries out.
async fn call_store(
    bound: &Bound,
    query: &str,
    ask: usize,
    how: (&Chain, store::Call),
    round: &Hop<'_>,
) -> Result<Vec<store::Hit>, Unanswered> {
    let span = (round.trace).map(|parent| parent.store_call(&bound.name, &bound.kind, "search"));
    let probe = match round.health.admit(&bound.name) {
        Admission::Skip { last_error } => {
            if let Some(span) = &span {
                span.unanswered("circuit_open");
            }
            return Err(Unanswered::CircuitOpen(last_error));
        }
        Admission::Call => None,
        // If this search is dropped mid-probe, the guard lets the next call probe instead.
        Admission::Probe => Some(ProbeGuard {
            health: round.health,
            store: &bound.name,
        }),
    };
    let started = std::time::Instant::now();
    let cut = how.1.timeout < round.knobs.call(bound).timeout;
    let traced = span.as_ref().map(|span| span.outbound(how.0));
    let chain = traced.as_ref().unwrap_or(how.0);
    let result = bound
        .search(query, ask, (chain, how.1), &round.spend.purse)
        .await;
    if let Some(span) = &span {
        match &result {
            Err(store::Failure::Timeout(_)) if cut => span.unanswered("timeout"),
            result => span.called(result),
        }
    }
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
    if round
        .roster
        .fan()
        .bound
        .iter()
        .any(|b| b.name == bound.name)
    {
        if !dropped {
            round
                .health
                .record(&bound.name, started.elapsed(), outcome(&result));
        }
        round
            .metrics
            .store_call(&bound.name, started.elapsed(), &result);
    }
    if !dropped {
        // The outcome is recorded: the probe is finished, not abandoned.
        std::mem::forget(probe);
    }
    result.map_err(Unanswered::Call)
}

/// Why a store gave nothing to one search. Typed until the answer is written: its text is the
/// `failed` reason.
#[derive(Debug, Clone)]
pub(super) enum Unanswered {
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
    pub(super) fn not_asked(&self) -> bool {
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
    pub(super) fn public(&self) -> String {
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
