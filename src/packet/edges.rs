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

use super::page::{row_cost, spend};
use super::row::{Row, Seen};
use crate::fusion::{Episode, Hit};
use crate::limits::{MAX_TOPIC_BYTES, MAX_TOPIC_SCAN, MAX_TOPICS, MAX_TOPICS_PER_HIT};
use crate::metadata::Metadata;
use serde_json::{Map, Value, json};
use std::collections::HashSet;

/// The kind of an edge: what it is the edge of. On the wire it is `metadata.source`, in the words
/// [`EdgeKind::wire`] gives; the packet writes it and the compact text reads it back, both here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeKind {
    /// An episode attached to a core of the packet.
    Satellite,
    /// The core a core of the packet superseded.
    Supersedes,
    /// A memory sharing the packet's topic tags, from `/by_topic`.
    Topic,
}

impl EdgeKind {
    /// Every kind, for reading one back.
    pub const ALL: [EdgeKind; 3] = [EdgeKind::Satellite, EdgeKind::Supersedes, EdgeKind::Topic];

    /// The metadata key an edge's kind is written under.
    pub const KEY: &'static str = "source";

    /// The kind as `metadata.source` names it.
    pub const fn wire(self) -> &'static str {
        match self {
            EdgeKind::Satellite => "satellite-edge",
            EdgeKind::Supersedes => "supersedes-edge",
            EdgeKind::Topic => "topic-edge",
        }
    }

    /// The kind a `metadata.source` names; `None` for any other text (a hit that is no edge).
    pub fn from_wire(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.wire() == text)
    }
}

/// Takes every row's satellites out (they never reach the wire as such) and, up to `budget`,
/// turns them into edges after the packet: round-robin across cores, skipping an item whose id
/// is empty or already in the packet, and on a page one that does not fit what is `left`.
pub fn satellites(
    packet: &mut [Row],
    budget: usize,
    seen: &mut Seen,
    left: &mut Option<usize>,
) -> Vec<Row> {
    let mut queues: Vec<(usize, std::vec::IntoIter<(Episode, EdgeKind)>)> = Vec::new();
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
            .map(|e| (e, EdgeKind::Satellite))
            .collect();
        items.extend(satellites.supersedes.map(|e| (e, EdgeKind::Supersedes)));
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
fn satellite_edge(core: &Row, episode: Episode, kind: EdgeKind, rank: usize) -> Row {
    let core_id = Value::from(core.hit.id.as_str());
    let (edge_kind, of_core, superseded_by) = if kind == EdgeKind::Satellite {
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
    metadata.insert(EdgeKind::KEY.into(), json!(kind.wire()));
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
        also: Vec::new(),
    }
}

/// Whether `row` fits what is `left` of the page, spending it if so.
fn take(row: &Row, left: &mut Option<usize>) -> bool {
    spend(row_cost(&row.hit), left)
}

/// The packet's topic tags: every comma-separated tag of `metadata.topic`, trimmed, lower case,
/// once each, in first-seen order, bounded so that one store's answer cannot make this long or
/// the `/by_topic` requests large: a hit's topic is read for its first [`MAX_TOPIC_SCAN`] bytes
/// and [`MAX_TOPICS_PER_HIT`] tags, a tag longer than [`MAX_TOPIC_BYTES`] is passed over, and the
/// packet keeps its first [`MAX_TOPICS`]. Linear in what it reads (a set, not a list scan).
pub fn topics(rows: &[Row]) -> Vec<String> {
    let mut topics: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for row in rows {
        let Some(Value::String(topic)) = row.hit.metadata.get("topic") else {
            continue;
        };
        let mut of_hit = 0;
        for tag in scanned(&topic).split(',') {
            if topics.len() >= MAX_TOPICS {
                return topics;
            }
            if of_hit >= MAX_TOPICS_PER_HIT {
                break;
            }
            let tag = tag.trim();
            if tag.is_empty() || tag.len() > MAX_TOPIC_BYTES {
                continue;
            }
            of_hit += 1;
            let tag = tag.to_lowercase();
            if seen.insert(tag.clone()) {
                topics.push(tag);
            }
        }
    }
    topics
}

/// The part of a topic that is read: all of it, or its first [`MAX_TOPIC_SCAN`] bytes without
/// the tag the cut went through.
fn scanned(topic: &str) -> &str {
    if topic.len() <= MAX_TOPIC_SCAN {
        return topic;
    }
    let mut end = MAX_TOPIC_SCAN;
    while !topic.is_char_boundary(end) {
        end -= 1;
    }
    topic[..end].rsplit_once(',').map_or("", |(whole, _)| whole)
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
                also: Vec::new(),
            };
            if take(&edge, left) {
                edges.push(edge);
            }
        }
    }
    edges
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fusion::Satellites;

    fn episode(id: &str, content: &str) -> Episode {
        Episode {
            id: id.into(),
            content: content.into(),
            created_at: json!(format!("2025-10-{id}")),
        }
    }

    fn core(id: &str, topic: Value, recent: &[&str], supersedes: Option<&str>) -> Row {
        let Value::Object(metadata) = json!({"tier": "long", "topic": topic}) else {
            unreachable!()
        };
        Row {
            store: "episodic".into(),
            rank: 1,
            score: 0.016,
            hit: Hit {
                metadata: Metadata::from_map(&metadata),
                satellites: Some(Box::new(Satellites {
                    recent: recent
                        .iter()
                        .map(|id| episode(id, &format!("episode {id}")))
                        .collect(),
                    supersedes: supersedes.map(|id| episode(id, &format!("old {id}"))),
                })),
                ..Hit::plain(id, 0.5)
            },
            also: Vec::new(),
        }
    }

    fn ids(rows: &[Row]) -> Vec<&str> {
        rows.iter().map(|r| r.hit.id.as_str()).collect()
    }

    fn seen(packet: &[Row]) -> Seen {
        packet.iter().map(|r| r.hit.id.clone()).collect()
    }

    // test_honest_fan.py: test_a_core_brings_its_surroundings_as_marked_edges
    #[test]
    fn satellites_ride_round_robin_newest_first_and_marked() {
        let mut packet = vec![
            core(
                "a",
                json!("cuda, xavier"),
                &["s3", "s2", "s1"],
                Some("old1"),
            ),
            core("b", json!(null), &["t1"], None),
        ];
        let edges = {
            let mut ids = seen(&packet);
            satellites(&mut packet, 3, &mut ids, &mut None)
        };
        assert_eq!(ids(&edges), ["s3", "t1", "s2"]);
        assert!(
            packet.iter().all(|r| r.hit.satellites.is_none()),
            "taken off the cores"
        );
        let first = &edges[0];
        assert_eq!(
            (first.score, first.rank, first.store.as_str()),
            (0.0, 1, "episodic")
        );
        assert_eq!(first.hit.base_relevance, 0.0);
        assert_eq!(
            (first.hit.raw_distance, first.hit.native_score),
            (None, None)
        );
        assert_eq!(
            first.hit.metadata.to_map(),
            json!({"tier": "long", "kind": "satellite", "core_id": "a", "superseded_by": null,
                   "topic": "cuda, xavier", "created_at": "2025-10-s3", "source": "satellite-edge",
                   "edge_of": "a"})
            .as_object()
            .unwrap()
            .clone()
        );
        assert_eq!(edges[1].hit.metadata.get("topic"), Some(Value::Null));
        assert_eq!(edges.iter().map(|e| e.rank).collect::<Vec<_>>(), [1, 2, 3]);
    }

    // test_the_superseded_core_rides_as_an_edge_after_the_satellites
    #[test]
    fn the_superseded_core_rides_after_its_satellites() {
        let mut packet = vec![
            core("a", json!("cuda"), &["s3", "s2", "s1"], Some("old1")),
            core("b", json!("cuda"), &["t1"], None),
        ];
        let edges = {
            let mut ids = seen(&packet);
            satellites(&mut packet, 10, &mut ids, &mut None)
        };
        assert_eq!(ids(&edges), ["s3", "t1", "s2", "s1", "old1"]);
        let old = edges[4].hit.metadata.to_map();
        assert_eq!(old["source"], "supersedes-edge");
        assert_eq!(old["kind"], "core");
        assert_eq!(old["superseded_by"], "a");
        assert_eq!(old["core_id"], Value::Null);
        assert_eq!(old["edge_of"], "a");
    }

    // test_satellite_edges_off_strips_the_content_and_adds_nothing
    #[test]
    fn off_adds_nothing_and_still_strips() {
        let mut packet = vec![core("a", json!("cuda"), &["s1"], Some("old1"))];
        let mut ids = seen(&packet);
        assert!(satellites(&mut packet, 0, &mut ids, &mut None).is_empty());
        assert!(packet[0].hit.satellites.is_none());
    }

    #[test]
    fn an_item_already_in_the_packet_or_without_id_is_skipped() {
        let mut packet = vec![
            core("a", json!("x"), &["b", "", "s1"], None),
            core("b", json!("x"), &[], None),
        ];
        let edges = {
            let mut ids = seen(&packet);
            satellites(&mut packet, 5, &mut ids, &mut None)
        };
        assert_eq!(ids(&edges), ["s1"]);
    }

    // test_satellite_edges_are_packed_into_what_the_page_has_left
    #[test]
    fn on_a_page_a_short_satellite_rides_and_a_long_one_is_left_out() {
        let long = "w".repeat(2000);
        let build = || {
            let mut row = core("a", json!("x"), &[], None);
            row.hit.satellites = Some(Box::new(Satellites {
                recent: vec![episode("big", &long), episode("small", "short episode")],
                supersedes: None,
            }));
            vec![row]
        };
        let mut packet = build();
        let edges = {
            let mut ids = seen(&packet);
            satellites(&mut packet, 3, &mut ids, &mut Some(60))
        };
        assert_eq!(ids(&edges), ["small"]);
        let mut packet = build();
        let edges = {
            let mut ids = seen(&packet);
            satellites(&mut packet, 3, &mut ids, &mut None)
        };
        assert_eq!(ids(&edges), ["big", "small"], "without a page both ride");
    }

    // test_edges.py: test_topics_and_exclude_threaded (the topics half)
    #[test]
    fn topics_are_every_tag_once_trimmed_and_lower_case() {
        let row = |topic: Value| {
            let mut row = core("x", topic, &[], None);
            row.hit.satellites = None;
            row
        };
        let rows = [
            row(json!("CFT, iam")),
            row(json!(" lambda ,cft")),
            row(json!(null)),
            row(json!(7)),
            row(json!("")),
        ];
        assert_eq!(topics(&rows), ["cft", "iam", "lambda"]);
        assert!(topics(&[row(json!(null))]).is_empty(), "no topics, no join");
    }

    #[test]
    fn topics_are_bounded_whatever_a_store_answers() {
        let row = |topic: String| {
            let mut row = core("x", json!(topic), &[], None);
            row.hit.satellites = None;
            row
        };
        // 100,000 distinct tags in one hit: the hit gives its first MAX_TOPICS_PER_HIT.
        let many = (0..100_000).map(|i| format!("t{i}")).collect::<Vec<_>>();
        let got = topics(&[row(many.join(","))]);
        assert_eq!(got.len(), MAX_TOPICS_PER_HIT);
        assert_eq!(got[..2], ["t0", "t1"]);
        // Many hits: the packet keeps its first MAX_TOPICS, in first-seen order.
        let rows: Vec<Row> = (0..10)
            .map(|h| {
                row((0..20)
                    .map(|i| format!("h{h}t{i}"))
                    .collect::<Vec<_>>()
                    .join(","))
            })
            .collect();
        let got = topics(&rows);
        assert_eq!(got.len(), MAX_TOPICS);
        assert_eq!(got[20], "h1t0");
        // A tag past MAX_TOPIC_BYTES is passed over; the tag a scan cut goes through is dropped.
        let long = "x".repeat(MAX_TOPIC_BYTES + 1);
        assert_eq!(topics(&[row(format!("a,{long},b"))]), ["a", "b"]);
        let filler = "y".repeat(MAX_TOPIC_SCAN - 4);
        assert_eq!(
            topics(&[row(format!("{filler},zzzzzzzz"))]),
            Vec::<String>::new(),
            "the filler is over MAX_TOPIC_BYTES, the last tag is cut"
        );
        assert_eq!(
            topics(&[row(format!("ab,{}", "é".repeat(MAX_TOPIC_SCAN)))]),
            ["ab"]
        );
        // The same tag many times over costs a set lookup each, and counts once.
        assert_eq!(topics(&[row("dup,".repeat(1000))]), ["dup"]);
    }

    // test_edges.py: test_edges_appended_and_marked, test_edge_budget_caps
    #[test]
    fn topic_edges_are_cut_to_the_budget_in_store_order_and_fitted() {
        let answers = || {
            vec![
                (
                    "m1".to_owned(),
                    vec![Hit::plain("e1", 0.0), Hit::plain("e2", 0.0)],
                ),
                ("m2".to_owned(), vec![Hit::plain("e3", 0.0)]),
            ]
        };
        let edges = topic_edges(answers(), 2, &mut None);
        assert_eq!(ids(&edges), ["e1", "e2"]);
        assert_eq!(
            edges.iter().map(|e| (e.rank, e.score)).collect::<Vec<_>>(),
            [(1, 0.0), (2, 0.0)]
        );
        let edges = topic_edges(answers(), 5, &mut None);
        assert_eq!(
            edges.iter().map(|e| e.store.as_str()).collect::<Vec<_>>(),
            ["m1", "m1", "m2"]
        );
        // "content of e1" is 13 characters: 4 tokens and one for the row.
        let mut left = Some(11);
        let edges = topic_edges(answers(), 5, &mut left);
        assert_eq!(ids(&edges), ["e1", "e2"]);
        assert_eq!(left, Some(1));
    }
}
