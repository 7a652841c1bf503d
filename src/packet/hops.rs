//! Hops [5.3]: later rounds of search, on a bridge made of the query and the last round's best.
//!
//! Round 1 is the search itself. Each later round fans the bridge query through the same path
//! (breaker, health, deadlines) and keeps only hits whose id the packet has not seen, up to what
//! is left of `hop_budget` and of the page. A kept hit keeps its own score and rank from its
//! round and says where it came from (`metadata.hop`, `metadata.hop_bridge`). Rounds stop early
//! when one adds nothing.

use super::page::{row_cost, spend};
use super::row::{Row, Seen};
use crate::limits::MAX_QUERY_BYTES;
use serde_json::Value;

/// How much of each frontier hit's content goes into the bridge, in characters.
pub const BRIDGE_TERM_CHARS: usize = 200;
/// How much of the bridge a hop hit's `metadata.hop_bridge` shows, in characters.
pub const BRIDGE_SHOWN_CHARS: usize = 120;

/// The next round's query: the query, then the first 200 characters of each of the first
/// `max(1, hop_terms)` hits of the frontier, joined with spaces, cut to the query limit.
pub fn bridge(query: &str, frontier: &[Row], hop_terms: usize) -> String {
    let mut bridge = query.to_owned();
    for row in frontier.iter().take(hop_terms.max(1)) {
        bridge.push(' ');
        bridge.extend(row.hit.content.chars().take(BRIDGE_TERM_CHARS));
    }
    if bridge.len() > MAX_QUERY_BYTES {
        let mut end = MAX_QUERY_BYTES;
        while !bridge.is_char_boundary(end) {
            end -= 1;
        }
        bridge.truncate(end);
    }
    bridge
}

/// The hits of round `hop` the packet keeps: ids the packet had not seen before this round (an
/// empty id cannot be told apart, so it is never added), at most `room` of them, each fitting
/// what is `left` of the page. Two stores' hits of one id in the same round are both kept, as
/// 5.3.0 does (its seen set grows after each round; the parity test holds us to that).
pub fn keep_new(
    round: Vec<Row>,
    hop: usize,
    bridge: &str,
    room: usize,
    seen: &mut Seen,
    left: &mut Option<usize>,
) -> Vec<Row> {
    let shown: String = bridge.chars().take(BRIDGE_SHOWN_CHARS).collect();
    let mut kept: Vec<Row> = Vec::new();
    for mut row in round {
        if kept.len() >= room {
            break;
        }
        if row.hit.id.is_empty() || seen.contains(&row.hit.id) {
            continue;
        }
        row.hit.metadata = row.hit.metadata.with([
            ("hop", Value::from(hop)),
            ("hop_bridge", Value::from(shown.as_str())),
        ]);
        if !spend(row_cost(&row.hit), left) {
            continue;
        }
        kept.push(row);
    }
    seen.extend(kept.iter().map(|row| row.hit.id.clone()));
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fusion::Hit;

    fn row(id: &str, content: &str) -> Row {
        Row {
            store: "s".into(),
            rank: 3,
            score: 0.0155,
            hit: Hit {
                content: content.into(),
                ..Hit::plain(id, 0.5)
            },
            also: Vec::new(),
        }
    }

    #[test]
    fn the_bridge_is_the_query_and_the_frontiers_best_cut_to_the_limit() {
        let long = "é".repeat(300);
        let frontier = [row("a", "first hit"), row("b", &long), row("c", "third")];
        let made = bridge("cuda", &frontier, 2);
        assert_eq!(made, format!("cuda first hit {}", "é".repeat(200)));
        assert_eq!(
            bridge("q", &frontier, 0),
            "q first hit",
            "at least one term"
        );
        let huge = "x".repeat(MAX_QUERY_BYTES);
        let bridged = bridge(&huge, &[row("é", "ééé")], 4);
        assert!(bridged.len() <= MAX_QUERY_BYTES);
    }

    // test_budget.py: test_hop_hits_have_to_fit_the_page_too
    #[test]
    fn a_hop_hit_too_big_for_the_page_is_dropped_and_a_small_one_kept() {
        let round = || vec![row("big", &"w".repeat(400)), row("small", "tiny")];
        let mut seen = Seen::new();
        let kept = keep_new(round(), 2, "q bridge", 5, &mut seen, &mut Some(20));
        assert_eq!(kept.len(), 1);
        let metadata = kept[0].hit.metadata.to_map();
        assert_eq!(kept[0].hit.id, "small");
        assert_eq!(metadata["hop"], 2);
        assert_eq!(metadata["hop_bridge"], "q bridge");
        assert_eq!(
            (kept[0].rank, kept[0].score),
            (3, 0.0155),
            "keeps its own rank and score"
        );
        let kept = keep_new(round(), 2, "q", 5, &mut Seen::new(), &mut None);
        assert_eq!(kept.len(), 2, "without a page both are kept");
    }

    #[test]
    fn only_new_ids_up_to_the_room_left() {
        let round = vec![
            row("seen", "a"),
            row("", "b"),
            row("n1", "c"),
            row("n2", "d"),
            row("n3", "e"),
        ];
        let mut seen: Seen = ["seen".to_owned()].into();
        let kept = keep_new(round, 3, &"b".repeat(300), 2, &mut seen, &mut None);
        assert_eq!(
            kept.iter().map(|r| r.hit.id.as_str()).collect::<Vec<_>>(),
            ["n1", "n2"]
        );
        assert!(seen.contains("n2") && !seen.contains("n3"));
        let shown = kept[0].hit.metadata.get("hop_bridge").unwrap();
        assert_eq!(shown.as_str().unwrap().chars().count(), BRIDGE_SHOWN_CHARS);
        // One id from two stores in the same round: both kept (5.3.0's seen set grows per round).
        let mut other = row("n9", "x");
        other.store = "t".into();
        let kept = keep_new(vec![row("n9", "x"), other], 2, "q", 5, &mut seen, &mut None);
        assert_eq!(kept.len(), 2);
        assert!(seen.contains("n9"));
    }
}
