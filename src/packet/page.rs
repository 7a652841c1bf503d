//! The seats and the page [5.3]: which fused rows make the packet.
//!
//! One walk serves both the row trim and the token page. A *reserve* pass gives each store its
//! `min_per_store` seats (its best rows, in fused order), then a *fill* pass takes the rest in
//! fused order; on a page a row that does not fit is skipped, not a stop, so smaller rows further
//! down still fill it. The output keeps fused order, so an authority lead stays first.

use super::Cut;
use crate::fusion::{Fused, Hit};

/// Characters per estimated token.
pub const CHARS_PER_TOKEN: usize = 4;
/// The ask is sized to one candidate hit per this many tokens of the page.
pub const TOKENS_PER_CANDIDATE: usize = 16;

/// A text's estimated tokens: a quarter of its characters, rounded up, and never below one.
pub fn est_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(CHARS_PER_TOKEN).max(1)
}

/// What a row costs a model to read: its content, one for the row, and the episode a core was
/// found through (`metadata.matched_via.content`), which a reader is shown with it.
pub fn row_cost(hit: &Hit) -> usize {
    let via = hit
        .metadata
        .matched_via_content()
        .filter(|content| !content.is_empty())
        .map_or(0, |content| est_tokens(&content));
    est_tokens(&hit.content) + 1 + via
}

/// What a whole packet costs.
pub fn packet_cost<'a>(hits: impl IntoIterator<Item = &'a Hit>) -> usize {
    hits.into_iter().map(row_cost).sum()
}

/// The fewest tokens any row costs (one for its text, one for the row): a page with less left
/// than this is full.
const MIN_ROW: usize = 2;

/// The rows of `fused` that make the packet, in fused order: seats first, then the fill, under
/// the row cap and the page.
pub fn select(fused: Vec<Fused>, cut: &Cut) -> Vec<Fused> {
    let cap = cut.rows.unwrap_or(usize::MAX);
    if cut.budget.is_none() && (cut.min_per_store == 0 || fused.len() <= cap) {
        let mut fused = fused;
        fused.truncate(cap);
        return fused;
    }
    let costs: Vec<usize> = match cut.budget {
        Some(_) => fused.iter().map(|f| row_cost(&f.hit)).collect(),
        None => vec![0; fused.len()],
    };
    let chosen = choose(
        fused.iter().map(|f| f.list),
        &costs,
        cap,
        cut.min_per_store,
        cut.budget,
    );
    fused
        .into_iter()
        .zip(chosen)
        .filter_map(|(row, kept)| kept.then_some(row))
        .collect()
}

/// The reserve and fill passes over rows given as (store, cost), in fused order.
fn choose(
    stores: impl Iterator<Item = usize>,
    costs: &[usize],
    cap: usize,
    min_per_store: usize,
    budget: Option<usize>,
) -> Vec<bool> {
    let stores: Vec<usize> = stores.collect();
    let mut chosen = vec![false; stores.len()];
    let mut taken = 0;
    let mut left = budget.unwrap_or(usize::MAX);
    let fits = |cost: usize, left: usize| budget.is_none() || cost <= left;
    if min_per_store > 0 {
        let mut seats = vec![0usize; stores.iter().max().map_or(0, |m| m + 1)];
        for (i, &store) in stores.iter().enumerate() {
            if taken >= cap || left < MIN_ROW {
                break;
            }
            if seats[store] < min_per_store && fits(costs[i], left) {
                seats[store] += 1;
                chosen[i] = true;
                taken += 1;
                left = left.saturating_sub(costs[i]);
            }
        }
    }
    for i in 0..stores.len() {
        if taken >= cap || left < MIN_ROW {
            break;
        }
        if !chosen[i] && fits(costs[i], left) {
            chosen[i] = true;
            taken += 1;
            left = left.saturating_sub(costs[i]);
        }
    }
    chosen
}

/// Keeps the rows of `rows` that fit in `left` tokens, in order, skipping those that do not;
/// returns the kept rows and what is left. `None` is no page: every row is kept.
pub fn fit<T>(
    rows: Vec<T>,
    left: Option<usize>,
    cost: impl Fn(&T) -> usize,
) -> (Vec<T>, Option<usize>) {
    let Some(mut left) = left else {
        return (rows, None);
    };
    let kept = rows
        .into_iter()
        .filter(|row| {
            let c = cost(row);
            let fits = c <= left;
            if fits {
                left -= c;
            }
            fits
        })
        .collect();
    (kept, Some(left))
}
