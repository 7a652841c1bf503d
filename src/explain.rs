//! Why each hit of a search is where it is (`explain: true`, contract §4): the first round's
//! [`Trace`] and the packet's rows into one [`Explain`] per hit, and the rows the cut left out
//! into `explain_dropped`.
//!
//! Pure, and run only when a search asks: without `explain` the answer path never comes here.
//! The numbers are the ones the packet ranked by (a row's rank and score, its store's weight and
//! floor in this search); the words say which step acted, and only a step that acted is named:
//! the lead when it moved a hit ahead of the fused order's first, a seat when the fused order
//! alone would have left its hit out.

use crate::api::{Contribution, Dropped, Explain, Step, StepKind};
use crate::fusion::rrf_score;
use crate::packet::edges::EdgeKind;
use crate::packet::page::Cutoff;
use crate::packet::{Cut, Row, Trace};

/// What the explanation of one search reads beside its rows.
pub struct Context<'a> {
    /// The first round's trace.
    pub trace: &'a Trace,
    /// The first round's lists by index: the stores that answered, in roster order.
    pub names: &'a [String],
    /// The first round's cut (k, the row cap, the seats, the authority margin).
    pub cut: &'a Cut,
    /// How many of the rows are the first round's ranked rows; hop hits and edges follow them.
    pub ranked: usize,
    /// Whether identity is on in this search: each ranked hit then lists every store's
    /// contribution to its document.
    pub identity: bool,
}

/// One [`Explain`] per row, in the rows' order; `scale` gives a store's weight and floor in
/// this search.
pub fn hits(
    context: &Context<'_>,
    rows: &[Row],
    scale: impl Fn(&str) -> (f64, f64),
) -> Vec<Explain> {
    rows.iter()
        .enumerate()
        .map(|(at, row)| {
            let (weight, floor) = scale(&row.store);
            let k = context.cut.k;
            let edge = edge_step(row);
            let contribution = edge.is_none().then(|| rrf_score(weight, k, row.rank));
            let steps: Vec<Step> = match edge {
                Some(step) => vec![step],
                None if at < context.ranked => ranked_steps(context, row),
                None => hop_step(row).into_iter().collect(),
            };
            let contributions =
                (context.identity && contribution.is_some()).then(|| contributions(row, k, &scale));
            let why = line(
                row,
                (weight, k, contribution),
                contributions.as_deref(),
                &steps,
            );
            Explain {
                store_rank: u32::try_from(row.rank).unwrap_or(u32::MAX),
                weight,
                floor,
                k,
                contribution,
                contributions,
                steps,
                why,
            }
        })
        .collect()
}

/// The rows the first round's cut left out and nothing after it brought back (a hop or an edge
/// of the same store and id is in `rows`), at most `max`, as `explain_dropped` lists them.
pub fn dropped(context: &Context<'_>, rows: &[Row], max: usize) -> Vec<Dropped> {
    let back = |list: usize, id: &str| {
        let store = context.names.get(list).map_or("", String::as_str);
        rows.iter()
            .any(|row| row.hit.id == id && row.store == store)
    };
    (context.trace.dropped.iter())
        .filter(|(place, id, _)| !back(place.list, id))
        .take(max)
        .map(|(place, id, cutoff)| {
            let (why, tokens) = match *cutoff {
                Cutoff::Rows { cap } => (
                    format!("n_results: the packet already held its {cap}"),
                    None,
                ),
                Cutoff::Page { cost, left } => (
                    format!("page: it would cost {cost} tokens and {left} were left"),
                    Some(cost),
                ),
            };
            Dropped {
                store: context.names.get(place.list).cloned().unwrap_or_default(),
                id: id.clone(),
                store_rank: u32::try_from(place.rank).unwrap_or(u32::MAX),
                score: place.score,
                why,
                tokens,
            }
        })
        .collect()
}

/// Every store's contribution to a ranked row's document (identity on): its own, then the
/// others' in roster order. `scale` gives a store's weight and floor in this search.
fn contributions(row: &Row, k: u32, scale: &impl Fn(&str) -> (f64, f64)) -> Vec<Contribution> {
    let one = |store: &str, id: &str, rank: usize| {
        let weight = scale(store).0;
        Contribution {
            store: store.to_owned(),
            id: id.to_owned(),
            store_rank: u32::try_from(rank).unwrap_or(u32::MAX),
            weight,
            contribution: rrf_score(weight, k, rank),
        }
    };
    std::iter::once(one(&row.store, &row.hit.id, row.rank))
        .chain((row.also.iter()).map(|also| one(&also.store, &also.id, also.rank)))
        .collect()
}

/// The steps that acted on a ranked row of the first round: the lead, a seat.
fn ranked_steps(context: &Context<'_>, row: &Row) -> Vec<Step> {
    let (trace, names, cut) = (context.trace, context.names, context.cut);
    let is = |list: usize, rank: usize| {
        rank == row.rank && names.get(list).is_some_and(|name| *name == row.store)
    };
    let mut steps = Vec::new();
    if let Some(lead) = trace
        .lead
        .filter(|lead| is(lead.place.list, lead.place.rank))
    {
        let over = names.get(lead.over.list).map_or("?", String::as_str);
        let mut step = Step::new(
            StepKind::AuthorityLead,
            format!(
                "leads: {} was sure of its top hit (margin {:.3}, authority_margin {}), so it \
                 goes ahead of {over} #{} (score {:.5})",
                row.store, lead.margin, cut.authority_margin, lead.over.rank, lead.over.score
            ),
        );
        step.margin = Some(lead.margin);
        step.authority_margin = Some(cut.authority_margin);
        steps.push(step);
    }
    if trace.seated.iter().any(|&(list, rank)| is(list, rank)) {
        let mut step = Step::new(
            StepKind::Seat,
            format!(
                "kept by a seat: {} is given {} row(s) (min_per_store), and the fused order \
                 alone would have left this one out",
                row.store, cut.min_per_store
            ),
        );
        step.min_per_store = Some(cut.min_per_store);
        steps.push(step);
    }
    steps
}

/// A hop hit's step, read back from the metadata the hop wrote (`hop`, `hop_bridge`).
fn hop_step(row: &Row) -> Option<Step> {
    let round = row.hit.metadata.get("hop")?.as_u64()?;
    let bridge = row.hit.metadata.text("hop_bridge");
    let mut step = Step::new(
        StepKind::Hop,
        format!("found by hop round {round}, which searched {bridge:?}"),
    );
    step.round = usize::try_from(round).ok();
    step.bridge = Some(bridge);
    Some(step)
}

/// An edge's step, read back from the metadata the edge was written with (`source`,
/// `edge_of`, `matched_topics`); `None` for a row that is no edge.
fn edge_step(row: &Row) -> Option<Step> {
    let metadata = &row.hit.metadata;
    let kind = EdgeKind::from_wire(&metadata.text(EdgeKind::KEY))?;
    let core = metadata.text("edge_of");
    let mut step = match kind {
        EdgeKind::Satellite => Step::new(
            StepKind::SatelliteEdge,
            format!("an episode attached to {core}, a hit of this packet"),
        ),
        EdgeKind::Supersedes => Step::new(
            StepKind::SupersedesEdge,
            format!("the memory {core}, a hit of this packet, superseded"),
        ),
        EdgeKind::Topic => {
            let topics = metadata.strings("matched_topics");
            let mut step = Step::new(
                StepKind::TopicEdge,
                format!("shares the packet's topic tags ({})", topics.join(", ")),
            );
            step.topics = Some(topics);
            return Some(step);
        }
    };
    step.core = Some(core);
    Some(step)
}

/// The one short line: the arithmetic (with identity on and other stores in the document, each
/// store's and the sum), then each step's words.
fn line(
    row: &Row,
    (weight, k, contribution): (f64, u32, Option<f64>),
    contributions: Option<&[Contribution]>,
    steps: &[Step],
) -> String {
    let mut parts = Vec::with_capacity(steps.len() + 1);
    if let Some(all) = contributions.filter(|all| all.len() > 1) {
        let each: Vec<String> = (all.iter())
            .map(|c| {
                format!(
                    "#{} in {}: {}/({k}+{}) = {:.5}",
                    c.store_rank, c.store, c.weight, c.store_rank, c.contribution
                )
            })
            .collect();
        parts.push(format!(
            "one document from {} stores: {}; sum {:.5}",
            all.len(),
            each.join(" + "),
            row.score
        ));
    } else if let Some(score) = contribution {
        parts.push(format!(
            "#{} in {}: {weight}/({k}+{}) = {score:.5}",
            row.rank, row.store, row.rank
        ));
    } else {
        parts.push(format!("edge from {}, not ranked", row.store));
    }
    parts.extend(steps.iter().map(|step| step.why.clone()));
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fusion::{Hit, RankedList};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_ranked_hits_contribution_is_its_score_and_weight_over_k_plus_rank(
            sizes in prop::collection::vec(0usize..30, 1..5),
            weights in prop::collection::vec(prop::sample::select(vec![0.25, 1.0, 3.0]), 5),
            k in 1u32..200,
            rows in 1usize..40,
            min_per_store in 0usize..3,
        ) {
            let names: Vec<String> = (0..sizes.len()).map(|i| format!("s{i}")).collect();
            let lists: Vec<RankedList> = (sizes.iter().enumerate())
                .map(|(list, &n)| RankedList {
                    weight: weights[list],
                    floor: 0.0,
                    identity: None,
                    hits: (0..n).map(|r| Hit::plain(&format!("{list}-{r}"), 0.5)).collect(),
                })
                .collect();
            let cut = Cut { k, rows: Some(rows), budget: None, authority_margin: 0.0, min_per_store };
            let (fused, trace) = crate::packet::rank_traced(lists, &cut, 25);
            let rows: Vec<Row> = fused.into_iter().map(|f| Row::fused(f, &names)).collect();
            let context = Context { trace: &trace, names: &names, cut: &cut, ranked: rows.len(), identity: false };
            let scale = |name: &str| {
                let list = names.iter().position(|n| n == name).unwrap();
                (weights[list], 0.0)
            };
            let explains = hits(&context, &rows, scale);
            prop_assert_eq!(explains.len(), rows.len());
            for (row, explain) in rows.iter().zip(&explains) {
                let list = names.iter().position(|n| *n == row.store).unwrap();
                prop_assert_eq!(explain.contribution, Some(row.score));
                prop_assert_eq!(row.score, weights[list] / (f64::from(k) + row.rank as f64));
                prop_assert_eq!(explain.k, k);
                prop_assert_eq!(explain.store_rank as usize, row.rank);
            }
            prop_assert!(dropped(&context, &rows, 25).len() <= 25);
        }
    }
}
