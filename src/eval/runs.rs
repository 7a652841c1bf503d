//! TREC run files, as trec_eval, ranx and ir_measures read them: a line per retrieved document,
//! `qid Q0 docid rank score tag`, the docid `store/id`.
//!
//! Those tools order a query's lines by score (ties by docid), not by the rank column, and
//! trec_eval holds a score as a 32-bit float (two scores 1e-9 apart at 0.016 are one to it). So
//! the score column falls strictly, in f32, as rank grows ([`falling`]): each line's score is its
//! own (the fused score, or a store's own order-preserving one), or one f32 step below the line
//! before when its own is not below it (an exact tie, or a tie once rounded to f32). It is
//! written as the f64 that f32 is, digit for digit, so a tool that reads it as a double holds
//! exactly what trec_eval holds. Pure.

use super::judgments::Doc;
use std::collections::HashSet;

/// The fusion's run file, in the `--runs` folder.
pub const FUSED_FILE: &str = "fused.run";
/// The fusion's tag (the last column).
pub const FUSED_TAG: &str = "fused";

/// A store's run file: `store.NAME.run` (a store's name holds no `/` and starts with no `.`; no
/// store's file is the fusion's).
pub fn store_file(name: &str) -> String {
    format!("store.{name}.run")
}

/// A document's docid in a run file: `store/id`, or the identity's key (identity on), with
/// whitespace (or a control character) written as `%XX` of its UTF-8 bytes (`%20` for a space),
/// since the tools split a line at whitespace. Nothing else is escaped: a qrels docid is taken
/// as written.
pub fn docid(doc: &Doc) -> String {
    let (store, id) = match doc {
        Doc::Stored { store, id } => (Some(store.as_str()), id.as_str()),
        Doc::Identity(key) => (None, key.as_str()),
    };
    let mut out = String::with_capacity(store.map_or(0, |s| s.len() + 1) + id.len());
    if let Some(store) = store {
        out.push_str(store);
        out.push('/');
    }
    for c in id.chars() {
        if c.is_whitespace() || c.is_control() {
            let mut bytes = [0u8; 4];
            for byte in c.encode_utf8(&mut bytes).bytes() {
                out.push_str(&format!("%{byte:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The first `k` distinct documents of a ranking, each with its score, in order: a document met
/// again further down (a store that answers one id twice) is passed over, as trec_eval refuses
/// a run that names one document twice.
pub fn distinct(ranked: impl IntoIterator<Item = (Doc, f64)>, k: usize) -> Vec<(Doc, f64)> {
    let mut seen = HashSet::new();
    ranked
        .into_iter()
        .filter(|(doc, _)| seen.insert(doc.clone()))
        .take(k)
        .collect()
}

/// The score column for `scores` (best first): each its own as an f32, or one f32 step below
/// the one before when it is not below it. A score that is not a number is taken as a tie.
pub fn falling(scores: impl IntoIterator<Item = f64>) -> Vec<f32> {
    let mut out: Vec<f32> = Vec::new();
    for score in scores {
        // f32's nearest; one past f32's range is its largest (a fused score is far below).
        let own = if score.is_nan() {
            None
        } else {
            Some((score as f32).clamp(f32::MIN, f32::MAX))
        };
        let next = match (out.last(), own) {
            (None, Some(own)) => own,
            (None, None) => 0.0,
            (Some(&before), Some(own)) if own < before => own,
            (Some(&before), _) => before.next_down(),
        };
        out.push(next);
    }
    out
}

/// One query's lines of a run file: `qid Q0 docid rank score tag`, rank from 1, the score column
/// [`falling`].
pub fn lines(qid: &str, ranked: &[(Doc, f64)], tag: &str) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let scores = falling(ranked.iter().map(|(_, score)| *score));
    for (rank, ((doc, _), score)) in ranked.iter().zip(scores).enumerate() {
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "{qid} Q0 {} {} {} {tag}",
            docid(doc),
            rank + 1,
            f64::from(score)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_fall_strictly_in_f32_and_keep_the_order() {
        let check = |scores: &[f64], expected: &[f32]| {
            assert_eq!(falling(scores.iter().copied()), expected, "{scores:?}");
        };
        let a = 1.0 / 61.0;
        let a32 = a as f32;
        // Ties (exact, and the same once in f32) step down one f32 each.
        check(
            &[a, a, a - 1e-12, 1.0 / 62.0],
            &[
                a32,
                a32.next_down(),
                a32.next_down().next_down(),
                (1.0f64 / 62.0) as f32,
            ],
        );
        // A score above the one before (a hop hit after the ranked rows) goes below it.
        check(&[0.5, 0.7, 0.1], &[0.5, 0.5f32.next_down(), 0.1]);
        // Edges score 0: still falling, through zero.
        check(&[0.0, 0.0], &[0.0, 0.0f32.next_down()]);
        check(&[f64::NAN, 0.2], &[0.0, 0.0f32.next_down()]);
        check(&[], &[]);
    }

    #[test]
    fn lines_read_as_the_tools_read_them() {
        let ranked = [
            (Doc::new("notes", "n1"), 1.0 / 61.0),
            (Doc::new("facts", "f 1"), 1.0 / 61.0),
            (Doc::new("notes", "n2"), 1.0 / 62.0),
        ];
        let text = lines("q7", &ranked, FUSED_TAG);
        let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0][..4], ["q7", "Q0", "notes/n1", "1"]);
        assert_eq!(rows[1][..4], ["q7", "Q0", "facts/f%201", "2"]);
        assert_eq!(rows[2][..4], ["q7", "Q0", "notes/n2", "3"]);
        assert!(rows.iter().all(|row| row[5] == "fused" && row.len() == 6));
        // Read back as a double, then as trec_eval's float: the same strictly falling values.
        let read: Vec<f64> = rows.iter().map(|row| row[4].parse().unwrap()).collect();
        let as_f32: Vec<f32> = read.iter().map(|s| *s as f32).collect();
        assert!(read.windows(2).all(|w| w[0] > w[1]), "{read:?}");
        assert!(as_f32.windows(2).all(|w| w[0] > w[1]), "{as_f32:?}");
        assert!(read.iter().zip(&as_f32).all(|(d, f)| *d == f64::from(*f)));
    }

    #[test]
    fn a_document_counts_once() {
        let ranked = [
            (Doc::new("s", "a"), 0.3),
            (Doc::new("s", "b"), 0.2),
            (Doc::new("s", "a"), 0.1),
            (Doc::new("t", "a"), 0.05),
        ];
        let kept: Vec<String> = (distinct(ranked.clone(), 10).iter())
            .map(|(doc, _)| docid(doc))
            .collect();
        assert_eq!(kept, ["s/a", "s/b", "t/a"]);
        assert_eq!(distinct(ranked, 2).len(), 2);
    }

    #[test]
    fn file_names_never_meet() {
        assert_eq!(store_file("fused"), "store.fused.run");
        assert_ne!(store_file("fused"), FUSED_FILE);
        assert_eq!(docid(&Doc::new("s", "a\tb\u{a0}c")), "s/a%09b%C2%A0c");
    }
}
