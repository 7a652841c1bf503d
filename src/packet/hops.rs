//! Hops [5.3]: later rounds of search, on a bridge made of the query and the last round's best.
//!
//! Round 1 is the search itself. Each later round fans the bridge query through the same path
//! (breaker, health, deadlines) and keeps only hits whose id the packet has not seen, up to what
//! is left of `hop_budget` and of the page. A kept hit keeps its own score and rank from its
//! round and says where it came from (`metadata.hop`, `metadata.hop_bridge`). Rounds stop early
//! when one adds nothing.

use super::page::row_cost;
use super::{Row, Seen};
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

/// The hits of round `hop` the packet keeps: ids not yet seen (an empty id cannot be told apart,
/// so it is never added), at most `room` of them, each fitting what is `left` of the page.
pub fn keep_new(
    round: Vec<Row>,
    hop: usize,
    bridge: &str,
    room: usize,
    seen: &mut Seen,
    left: &mut Option<usize>,
) -> Vec<Row> {
    let shown: String = bridge.chars().take(BRIDGE_SHOWN_CHARS).collect();
    let mut kept = Vec::new();
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
        if let Some(left) = left {
            let cost = row_cost(&row.hit);
            if cost > *left {
                continue;
            }
            *left -= cost;
        }
        seen.insert(row.hit.id.clone());
        kept.push(row);
    }
    kept
}
