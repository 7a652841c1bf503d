//! The four measures of one query's ranking at a cutoff k, as trec_eval defines them:
//!
//! - nDCG@k: the ranking's discounted cumulative gain over the first k, gain `2^grade - 1` and
//!   discount `log2(rank + 1)`, over the ideal one: the judged grades best first, cut at k too.
//!   (trec_eval's own `ndcg_cut` takes the grade itself as the gain unless given a gain per
//!   grade; on grades 0 and 1 the two agree. tests/eval/run.sh compares both ways.)
//! - Recall@k: the relevant documents among the first k, over all the query's relevant ones.
//! - MRR@k: one over the rank of the first relevant document among the first k; 0 when none is.
//! - P@k: the relevant documents among the first k, over k: a ranking shorter than k is not
//!   excused.
//!
//! Relevant means a grade of 1 or more; a document nobody judged counts as grade 0. A query with
//! no relevant document judged scores 0 on all four, as trec_eval scores a query whose qrels are
//! all grade 0 (and it counts in the means, as it does there). A ranking names each document once
//! ([`super::runs::distinct`]). Pure.

use super::judgments::Doc;
use serde::Serialize;
use std::collections::HashMap;

/// One of the four measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Ndcg,
    Recall,
    Mrr,
    Precision,
}

impl Metric {
    /// All four, in the order they are shown.
    pub const ALL: [Metric; 4] = [Metric::Ndcg, Metric::Recall, Metric::Mrr, Metric::Precision];

    /// Its key in the `--json` document.
    pub fn key(self) -> &'static str {
        match self {
            Metric::Ndcg => "ndcg",
            Metric::Recall => "recall",
            Metric::Mrr => "mrr",
            Metric::Precision => "precision",
        }
    }

    /// Its name at cutoff `k`, as a table heads it: `nDCG@10`.
    pub fn label(self, k: usize) -> String {
        let name = match self {
            Metric::Ndcg => "nDCG",
            Metric::Recall => "Recall",
            Metric::Mrr => "MRR",
            Metric::Precision => "P",
        };
        format!("{name}@{k}")
    }
}

/// One ranking's four measures.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Scores {
    pub ndcg: f64,
    pub recall: f64,
    pub mrr: f64,
    pub precision: f64,
}

impl Scores {
    pub fn get(&self, metric: Metric) -> f64 {
        match metric {
            Metric::Ndcg => self.ndcg,
            Metric::Recall => self.recall,
            Metric::Mrr => self.mrr,
            Metric::Precision => self.precision,
        }
    }
}

/// A grade's gain: `2^grade - 1` (0 for grade 0, 1 for grade 1, 3, 7, ...).
pub fn gain(grade: u32) -> f64 {
    2f64.powi(grade.min(1023) as i32) - 1.0
}

/// The discount at 1-based `rank`: `log2(rank + 1)` (1 at rank 1).
fn discount(rank: usize) -> f64 {
    (rank as f64 + 1.0).log2()
}

/// The four measures of `ranking` (best first, each document once) at cutoff `k` (at least 1),
/// against `grades`.
pub fn scores(ranking: &[Doc], grades: &HashMap<Doc, u32>, k: usize) -> Scores {
    let ideal = Ideal::new(grades.values().copied());
    let found = ranking
        .iter()
        .map(|doc| grades.get(doc).copied().unwrap_or(0));
    ideal.scores(found, k)
}

/// What a query's judgments say the best ranking is: its relevant grades, best first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ideal {
    grades: Vec<u32>,
}

impl Ideal {
    /// The ideal of a query judged with `grades` (those below 1 are not relevant).
    pub fn new(grades: impl IntoIterator<Item = u32>) -> Self {
        let mut grades: Vec<u32> = grades.into_iter().filter(|g| *g >= 1).collect();
        grades.sort_unstable_by(|a, b| b.cmp(a));
        Self { grades }
    }

    /// The four measures at cutoff `k` (at least 1) of a ranking whose documents have `found`'s
    /// grades, best first (0 for a document nobody judged).
    pub fn scores(&self, found: impl IntoIterator<Item = u32>, k: usize) -> Scores {
        let k = k.max(1);
        let mut dcg = 0.0;
        let mut hits = 0usize;
        let mut first = None;
        for (i, grade) in found.into_iter().take(k).enumerate() {
            dcg += gain(grade) / discount(i + 1);
            if grade >= 1 {
                hits += 1;
                first.get_or_insert(i + 1);
            }
        }
        let relevant = self.grades.len();
        let ideal_dcg: f64 = (self.grades.iter().take(k).enumerate())
            .map(|(i, grade)| gain(*grade) / discount(i + 1))
            .sum();
        Scores {
            ndcg: if ideal_dcg > 0.0 {
                dcg / ideal_dcg
            } else {
                0.0
            },
            recall: if relevant > 0 {
                hits as f64 / relevant as f64
            } else {
                0.0
            },
            mrr: first.map_or(0.0, |rank| 1.0 / rank as f64),
            precision: hits as f64 / k as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ranking` as ids of one store; `judged` as (id, grade).
    fn check(ranking: &[&str], judged: &[(&str, u32)], k: usize, expected: Scores) {
        let ranking: Vec<Doc> = ranking.iter().map(|id| Doc::new("s", *id)).collect();
        let grades = (judged.iter())
            .map(|(id, grade)| (Doc::new("s", *id), *grade))
            .collect();
        let got = scores(&ranking, &grades, k);
        for metric in Metric::ALL {
            let (g, e) = (got.get(metric), expected.get(metric));
            assert!(
                (g - e).abs() < 1e-12,
                "{ranking:?} {judged:?} @{k}: {} is {g}, expected {e}",
                metric.key()
            );
        }
    }

    fn s(ndcg: f64, recall: f64, mrr: f64, precision: f64) -> Scores {
        Scores {
            ndcg,
            recall,
            mrr,
            precision,
        }
    }

    #[test]
    fn binary_judgments() {
        // Relevant at ranks 1 and 3 of 4, two relevant judged: DCG = 1 + 1/log2(4) = 1.5,
        // ideal = 1 + 1/log2(3).
        let ideal = 1.0 + 1.0 / 3f64.log2();
        check(
            &["a", "x", "b", "y"],
            &[("a", 1), ("b", 1), ("x", 0)],
            4,
            s(1.5 / ideal, 1.0, 1.0, 0.5),
        );
        // Cut at 2: only "a" counts; the ideal is cut at 2 as well.
        check(
            &["a", "x", "b", "y"],
            &[("a", 1), ("b", 1)],
            2,
            s(1.0 / ideal, 0.5, 1.0, 0.5),
        );
        // The first relevant at rank 3.
        check(
            &["x", "y", "b"],
            &[("a", 1), ("b", 1)],
            3,
            s(0.5 / ideal, 0.5, 1.0 / 3.0, 1.0 / 3.0),
        );
    }

    #[test]
    fn graded_judgments_gain_two_to_the_grade_minus_one() {
        // Grades 1 (c) at rank 1, 0 (b) at 2, 2 (a) at 3: DCG = 1/1 + 0 + 3/2 = 2.5;
        // ideal: 3/1 + 1/log2(3).
        let ideal = 3.0 + 1.0 / 3f64.log2();
        check(
            &["c", "b", "a"],
            &[("a", 2), ("b", 0), ("c", 1)],
            10,
            s(2.5 / ideal, 1.0, 1.0, 0.2),
        );
        // The best first is the ideal itself.
        check(&["a", "c"], &[("a", 3), ("c", 1)], 2, s(1.0, 1.0, 1.0, 1.0));
        assert_eq!([gain(0), gain(1), gain(2), gain(3)], [0.0, 1.0, 3.0, 7.0]);
    }

    #[test]
    fn nothing_relevant_retrieved_scores_zero() {
        check(&["x", "y"], &[("a", 2)], 10, s(0.0, 0.0, 0.0, 0.0));
        check(&[], &[("a", 1)], 10, s(0.0, 0.0, 0.0, 0.0));
    }

    #[test]
    fn fewer_than_k_retrieved_are_not_excused() {
        // One relevant found of two, in a ranking of 2 at k = 10: P = 1/10.
        let ideal = 1.0 + 1.0 / 3f64.log2();
        check(
            &["x", "a"],
            &[("a", 1), ("b", 1)],
            10,
            s((1.0 / 3f64.log2()) / ideal, 0.5, 0.5, 0.1),
        );
    }

    #[test]
    fn a_query_with_nothing_relevant_judged_scores_zero() {
        // Judged, all grade 0: trec_eval scores it 0 on every measure and counts it.
        check(
            &["a", "b"],
            &[("a", 0), ("b", 0)],
            10,
            s(0.0, 0.0, 0.0, 0.0),
        );
    }

    #[test]
    fn documents_of_other_stores_are_other_documents() {
        let ranking = [Doc::new("t", "a"), Doc::new("s", "a")];
        let grades = HashMap::from([(Doc::new("s", "a"), 1)]);
        let got = scores(&ranking, &grades, 2);
        assert_eq!(got.mrr, 0.5);
        assert_eq!(got.ndcg, 1.0 / 3f64.log2());
    }
}
