//! What follows a search's ranked rows [5.3]: hop rounds, then satellite and supersedes edges, then
//! topic edges, each fitted to what is left of the page; a later round of store calls runs only
//! while the search's call budget and deadline leave room for it, and what did not run is said.

use super::fan::{Hop, Unanswered, fan_out};
use super::round::Round;
use super::spend::Spend;
use crate::packet::{Row, Seen, edges, hops};
use crate::store;
use crate::store::Bound;
use std::sync::Arc;
use std::time::Duration;

/// What follows the first round's ranked `rows` [5.3]: hop hits, then satellite and
/// supersedes edges, then topic edges, each fitted to what is left of the page. Each later
/// round of store calls (a hop, the topic edges) runs only while the search's call budget and
/// deadline leave room for it (a round as long as the first, `first_took`); what did not run
/// is said in `notes`.
pub(super) async fn follow(
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
        let hopped = (hop(round, &rows, (&mut seen, &mut left), first_took, notes)).await;
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
        let topic_edges = (topic_edges(round, &stores, &rows, (&mut left, first_took)))
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
        // With traces on, the round is a `hop` span, its store calls that span's children.
        let span = (round.trace).map(|search| search.hop(hop, round.fan.bound.len()));
        let hop_round = Hop {
            trace: span.as_ref(),
            ..*round
        };
        let results = fan_out(&hop_round, &bridge).await;
        notes.extend(hop_notes(round, hop, &results));
        let ranked = Round::collect(round, results).rank(round.cut);
        let new = hops::keep_new(ranked, hop, &bridge, room, seen, left);
        if let Some(span) = &span {
            span.kept(new.len());
        }
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
        let span =
            (round.trace).map(|search| search.store_call(&bound.name, &bound.kind, "by_topic"));
        let traced = span.as_ref().map(|span| span.outbound(round.chains.1));
        let answer = bound
            .by_topic(
                &topics,
                budget,
                &exclude,
                (traced.as_ref().unwrap_or(round.chains.1), round.call(bound)),
                &round.spend.purse,
            )
            .await?;
        if let Some(span) = &span {
            span.called(&answer);
        }
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
