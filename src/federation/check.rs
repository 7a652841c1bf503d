//! Checking a search before it runs: not a loop, a query and `n_results` within bounds, a page of
//! `budget_tokens` within bounds, and a free in-flight slot. The words of each refusal are here;
//! its HTTP status is `http.rs`'s.

use crate::api::{Refusal, RefusalKind, SearchRequest};
use crate::chain::{Chain, Id};
use crate::knobs::Knobs;
use crate::limits::{MAX_BUDGET_TOKENS, MAX_N_RESULTS, MAX_QUERY_BYTES};
use std::sync::Arc;
use tokio::sync::{Semaphore, SemaphorePermit};

/// Lets a search in, or says why not: a loop, a bad request, too many searches at once. It
/// runs with the knobs `knobs` reads here, whatever changes while it runs, for `n` hits and a page
/// of `budget` tokens, holding one of the in-flight slots (`searches`) until the permit drops. `id`
/// is this callosum's in chains of callosums.
pub(super) fn admit<'a>(
    request: &SearchRequest,
    chain: &Chain,
    (id, searches): (Id, &'a Semaphore),
    knobs: impl FnOnce() -> Arc<Knobs>,
) -> Result<(Arc<Knobs>, usize, Option<usize>, SemaphorePermit<'a>), Refusal> {
    if chain.passed(id) {
        return Err(Refusal::new(
            RefusalKind::Loop,
            "loop: this search has already passed through this callosum",
        ));
    }
    let knobs = knobs();
    let n = check_request(&request.query, request.n_results, &knobs)?;
    let budget = check_budget(request.budget_tokens)?.or(knobs.shaping.budget_tokens);
    let Ok(searching) = searches.try_acquire() else {
        return Err(Refusal::new(
            RefusalKind::Busy,
            "busy: too many searches in flight; retry shortly",
        ));
    };
    Ok((knobs, n, budget, searching))
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
