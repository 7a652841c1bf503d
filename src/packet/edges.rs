//! Edges [5.3]: what follows the ranked packet without being ranked.
//!
//! - *Satellite edges*: a SerenMemory core brings the episodes attached to it (`recent`) and the
//!   core it superseded (`supersedes_entry`). The budget is spent round-robin across cores in
//!   packet order, one item per core per pass, so every core shows its newest episode before any
//!   shows a second.
//! - *Topic edges*: memories sharing the packet's topic tags, from `/by_topic` on every store that
//!   speaks it; the federation calls, this module picks the topics and cuts the answers.
//!
//! Edges are never floored, fused or counted against `n_results`; on the wire `score` 0.0 marks
//! one, and `metadata.source` says which kind. On a page each must fit what is left.

use super::page::row_cost;
use super::{Row, Seen};
use crate::fusion::{Episode, Hit};
use crate::metadata::Metadata;
use serde_json::{Map, Value, json};

/// The kind of a satellite edge, as `metadata.source` names it.
const SATELLITE: &str = "satellite-edge";
const SUPERSEDES: &str = "supersedes-edge";
/// `metadata.source` of a topic edge.
pub const TOPIC: &str = "topic-edge";

/// Takes every row's satellites out (they never reach the wire as such) and, up to `budget`,
/// turns them into edges after the packet: round-robin across cores, skipping an item whose id
/// is empty or already in the packet, and on a page one that does not fit what is `left`.
pub fn satellites(
    packet: &mut [Row],
    budget: usize,
    seen: &mut Seen,
    left: &mut Option<usize>,
) -> Vec<Row> {
    let mut queues: Vec<(usize, std::vec::IntoIter<(Episode, &'static str)>)> = Vec::new();
    for (at, row) in packet.iter_mut().enumerate() {
        let Some(satellites) = row.hit.satellites.take() else {
            continue;
        };
        if budget == 0 {
            continue;
        }
        let mut items: Vec<_> = satellites
            .recent
            .into_iter()
            .map(|e| (e, SATELLITE))
            .collect();
        items.extend(satellites.supersedes.map(|e| (e, SUPERSEDES)));
        queues.push((at, items.into_iter()));
    }
    let mut edges = Vec::new();
    while edges.len() < budget && !queues.is_empty() {
        queues.retain_mut(|(at, items)| {
            if edges.len() >= budget {
                return true;
            }
            let core = &packet[*at];
            for (episode, kind) in items.by_ref() {
                if episode.id.is_empty() || seen.contains(&episode.id) {
                    continue;
                }
                let edge = satellite_edge(core, episode, kind, edges.len() + 1);
                if !take(&edge, left) {
                    continue;
                }
                seen.insert(edge.hit.id.clone());
                edges.push(edge);
                return true;
            }
            false
        });
    }
    edges
}

/// One satellite or supersedes edge of `core`, `rank` among the packet's satellite edges.
fn satellite_edge(core: &Row, episode: Episode, kind: &'static str, rank: usize) -> Row {
    let core_id = Value::from(core.hit.id.as_str());
    let (edge_kind, of_core, superseded_by) = if kind == SATELLITE {
        ("satellite", core_id.clone(), Value::Null)
    } else {
        ("core", Value::Null, core_id.clone())
    };
    let mut metadata = Map::new();
    metadata.insert("tier".into(), json!("long"));
    metadata.insert("kind".into(), json!(edge_kind));
    metadata.insert("core_id".into(), of_core);
    metadata.insert("superseded_by".into(), superseded_by);
    metadata.insert(
        "topic".into(),
        core.hit.metadata.get("topic").unwrap_or(Value::Null),
    );
    metadata.insert("created_at".into(), episode.created_at);
    metadata.insert("source".into(), json!(kind));
    metadata.insert("edge_of".into(), core_id);
    Row {
        store: core.store.clone(),
        rank,
        score: 0.0,
        hit: Hit {
            id: episode.id,
            content: episode.content,
            base_relevance: 0.0,
            raw_distance: None,
            native_score: None,
            metadata: Metadata::from_map(&metadata),
            satellites: None,
        },
    }
}

/// Whether `row` fits what is `left` of the page, spending it if so.
fn take(row: &Row, left: &mut Option<usize>) -> bool {
    match left {
        None => true,
        Some(left) => {
            let cost = row_cost(&row.hit);
            let fits = cost <= *left;
            if fits {
                *left -= cost;
            }
            fits
        }
    }
}

/// The packet's topic tags: every comma-separated tag of `metadata.topic`, trimmed, lower case,
/// once each, in first-seen order.
pub fn topics(rows: &[Row]) -> Vec<String> {
    let mut topics: Vec<String> = Vec::new();
    for row in rows {
        let Some(Value::String(topic)) = row.hit.metadata.get("topic") else {
            continue;
        };
        for tag in topic.split(',') {
            let tag = tag.trim().to_lowercase();
            if !tag.is_empty() && !topics.contains(&tag) {
                topics.push(tag);
            }
        }
    }
    topics
}

/// The topic edges: each store's `/by_topic` answer in store order, cut to `budget`, each fitted
/// to what is `left` of the page. No dedup beyond what the stores were told to exclude [5.3].
pub fn topic_edges(
    answers: Vec<(String, Vec<Hit>)>,
    budget: usize,
    left: &mut Option<usize>,
) -> Vec<Row> {
    let mut edges = Vec::new();
    for (store, hits) in answers {
        for hit in hits {
            if edges.len() >= budget {
                return edges;
            }
            let edge = Row {
                store: store.clone(),
                rank: edges.len() + 1,
                score: 0.0,
                hit,
            };
            if take(&edge, left) {
                edges.push(edge);
            }
        }
    }
    edges
}
