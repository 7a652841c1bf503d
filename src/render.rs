//! The answer as compact text, for the MCP `search` tool's text block when `format` is
//! "compact": one numbered line per hit (store, rank, id, content; what an edge belongs to; which
//! hop found it), a head line with the page's cost, and who failed or was skipped. A model reads
//! the same facts as in the JSON for a fraction of the tokens; the structured content stays whole.

use crate::api::{Hit, NameReason, SearchAnswer};
use crate::packet::edges::EdgeKind;
use std::fmt::Write;

/// Renders `answer` as compact lines.
pub fn compact(answer: &SearchAnswer) -> String {
    let mut out = String::new();
    let page = match answer.budget_tokens {
        Some(budget) => format!("{} of {budget} tokens", answer.tokens),
        None => format!("{} tokens", answer.tokens),
    };
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "{} hits for {:?} ({page}) from {}",
        answer.hits.len(),
        answer.query,
        list(&answer.stores_searched)
    );
    for (i, hit) in answer.hits.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}. [{} {} {}] {}",
            i + 1,
            hit.store,
            place(hit),
            hit.id,
            one_line(&hit.content)
        );
        if let Some(also) = also(hit) {
            let _ = writeln!(out, "   {also}");
        }
        if let Some(explain) = &hit.explain {
            let _ = writeln!(out, "   why: {}", one_line(&explain.why));
        }
    }
    for dropped in answer.explain_dropped.iter().flatten() {
        let _ = writeln!(
            out,
            "left out: [{} #{} {}] {}",
            dropped.store, dropped.store_rank, dropped.id, dropped.why
        );
    }
    for (label, entries) in [("failed", &answer.failed), ("skipped", &answer.skipped)] {
        if !entries.is_empty() {
            let _ = writeln!(out, "{label}: {}", reasons(entries));
        }
    }
    for note in &answer.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

/// Where a hit stands: `#rank`, or which hop found it (`hop 2 #3`), or what it is the edge of
/// (`satellite of m1`, `superseded by m1`, `topic edge (cuda, xavier)`).
pub fn place(hit: &Hit) -> String {
    let metadata = &hit.metadata;
    match EdgeKind::from_wire(&metadata.text(EdgeKind::KEY)) {
        Some(EdgeKind::Satellite) => format!("satellite of {}", metadata.text("edge_of")),
        Some(EdgeKind::Supersedes) => format!("superseded by {}", metadata.text("edge_of")),
        Some(EdgeKind::Topic) => {
            format!(
                "topic edge ({})",
                metadata.strings("matched_topics").join(", ")
            )
        }
        None => match metadata.get("hop") {
            Some(hop) => format!("hop {hop} #{}", hit.store_rank),
            None => format!("#{}", hit.store_rank),
        },
    }
}

/// The other stores that returned a hit's document (identity on), as `also in b #2 (id x), c
/// #1`; `None` when there are none. An id is named only where it differs from the hit's.
pub fn also(hit: &Hit) -> Option<String> {
    let others = hit.also_from.as_deref().filter(|also| !also.is_empty())?;
    let each: Vec<String> = (others.iter())
        .map(|also| {
            if also.id == hit.id {
                format!("{} #{}", also.store, also.store_rank)
            } else {
                format!("{} #{} (id {})", also.store, also.store_rank, also.id)
            }
        })
        .collect();
    Some(format!("also in {}", each.join(", ")))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "no store".to_owned()
    } else {
        names.join(", ")
    }
}

fn reasons(entries: &[NameReason]) -> String {
    entries
        .iter()
        .map(|e| format!("{} ({})", e.name, e.reason))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::Metadata;
    use serde_json::{Value, json};

    fn hit(store: &str, id: &str, rank: u32, score: f64, metadata: Value) -> Hit {
        let Value::Object(map) = metadata else {
            unreachable!()
        };
        Hit {
            store: store.into(),
            id: id.into(),
            content: format!("text of {id}\nsecond line"),
            score,
            store_rank: rank,
            base_relevance: 0.5,
            native_score: None,
            raw_distance: None,
            metadata: Metadata::from_map(&map),
            also_from: None,
            explain: None,
        }
    }

    #[test]
    fn one_line_per_hit_marking_hops_and_edges() {
        let answer = SearchAnswer {
            query: "cuda".into(),
            hits: vec![
                hit("facts", "f1", 1, 0.016, json!({})),
                hit(
                    "episodic",
                    "m2",
                    3,
                    0.015,
                    json!({"hop": 2, "hop_bridge": "cuda x"}),
                ),
                hit(
                    "episodic",
                    "s1",
                    1,
                    0.0,
                    json!({"source": "satellite-edge", "edge_of": "m1"}),
                ),
                hit(
                    "episodic",
                    "o1",
                    2,
                    0.0,
                    json!({"source": "supersedes-edge", "edge_of": "m1"}),
                ),
                hit(
                    "episodic",
                    "t1",
                    1,
                    0.0,
                    json!({"source": "topic-edge", "matched_topics": ["cuda", "xavier"]}),
                ),
            ],
            budget_tokens: Some(800),
            tokens: 40,
            stores_searched: vec!["facts".into(), "episodic".into()],
            failed: vec![NameReason {
                name: "dead".into(),
                reason: "timeout after 5.00s".into(),
            }],
            skipped: vec![],
            notes: vec![],
            explain_dropped: None,
        };
        assert_eq!(
            compact(&answer),
            "5 hits for \"cuda\" (40 of 800 tokens) from facts, episodic\n\
             1. [facts #1 f1] text of f1 second line\n\
             2. [episodic hop 2 #3 m2] text of m2 second line\n\
             3. [episodic satellite of m1 s1] text of s1 second line\n\
             4. [episodic superseded by m1 o1] text of o1 second line\n\
             5. [episodic topic edge (cuda, xavier) t1] text of t1 second line\n\
             failed: dead (timeout after 5.00s)\n"
        );
    }

    #[test]
    fn an_empty_answer_says_so() {
        let answer = SearchAnswer {
            query: "q".into(),
            hits: vec![],
            budget_tokens: None,
            tokens: 0,
            stores_searched: vec![],
            failed: vec![],
            notes: vec!["hop round 2 not run: why".into()],
            explain_dropped: None,
            skipped: vec![NameReason {
                name: "weird".into(),
                reason: "unknown store type".into(),
            }],
        };
        assert_eq!(
            compact(&answer),
            "0 hits for \"q\" (0 tokens) from no store\nskipped: weird (unknown store type)\n\
             note: hop round 2 not run: why\n"
        );
    }
}
