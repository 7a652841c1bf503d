//! What `eval` reports, and its `--json` document as is (docs/evaluation.md gives its shape): for
//! the fusion and for each store alone, each measure's mean over the judged queries with its 95%
//! bootstrap interval; then each query's measures, and the fusion's nDCG@k against the best
//! single store's on that query. Pure: the searches' outcomes come in, the report goes out.

use super::bootstrap::{self, Estimate};
use super::metrics::{Metric, Scores};
use super::tune::Method;
use crate::identity::Identity;
use serde::Serialize;

/// What one query's searches gave, measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub qid: String,
    pub query: String,
    /// How many documents its judgments call relevant.
    pub relevant: usize,
    pub fused: Scores,
    /// Each store alone, in the order of [`report`]'s `stores`.
    pub stores: Vec<Scores>,
    /// The stores that gave nothing to one of its searches, with why.
    pub failed: Vec<Failed>,
}

/// A store that gave nothing (it counts as an empty ranking), and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failed {
    pub name: String,
    pub reason: String,
}

/// The `--json` document.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The cutoff: each search asked for k hits, and every measure is at k.
    pub k: usize,
    /// Which hits the searches took for one document (identity on: the rankings name documents
    /// by their identity key).
    pub identity: Identity,
    /// How many judged queries were run.
    pub queries: usize,
    pub bootstrap: Bootstrap,
    /// The fusion: each measure's mean and interval.
    pub fused: Summary,
    /// Each store alone, in roster order.
    pub stores: Vec<StoreSummary>,
    /// Each query, in the judgments' order.
    pub per_query: Vec<QueryReport>,
    /// The roster's stores that were not searched (disabled, or skipped), with why.
    pub skipped: Vec<Failed>,
    /// With `--tune`: the settings found, checked on the queries held out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tune: Option<Tuning>,
}

/// What `--tune` found (docs/evaluation.md): the best setting on half the queries, and it beside
/// the current one on the other half, by real searches.
#[derive(Debug, Clone, Serialize)]
pub struct Tuning {
    /// The seed of the split (`eval::tune::SPLIT_SEED`).
    pub split_seed: u64,
    /// The qids tuned on, in the judgments' order.
    pub tuned_on: Vec<String>,
    /// The qids held out, on which `current` and `tuned` are measured.
    pub held_out: Vec<String>,
    pub method: Method,
    /// How many settings were tried.
    pub tried: usize,
    /// Whether the work bound (MAX_TUNE_WORK) ended the search early.
    pub bounded: bool,
    /// The grid searched: each store's weights, and RRF's k.
    pub grid: Grid,
    pub current: Setting,
    pub tuned: Setting,
    /// The tuned setting's nDCG@k minus the current one's, query by query on the held-out
    /// queries: the mean, with its bootstrap interval.
    pub delta_ndcg: Estimate,
    /// Whether the tuned setting differs from the current one.
    pub changed: bool,
    /// The config lines that apply the tuned setting.
    pub yaml: String,
    /// The `POST /configure` body that applies it live.
    pub configure: serde_json::Value,
}

/// The grid `--tune` searched.
#[derive(Debug, Clone, Serialize)]
pub struct Grid {
    pub weights: Vec<StoreWeights>,
    pub k: Vec<u32>,
}

/// One store's weights tried.
#[derive(Debug, Clone, Serialize)]
pub struct StoreWeights {
    pub store: String,
    pub weights: Vec<f64>,
}

/// A fusion setting, and how it did.
#[derive(Debug, Clone, Serialize)]
pub struct Setting {
    /// RRF's k.
    pub k: u32,
    pub weights: Vec<StoreWeight>,
    /// Its mean nDCG@k on the queries tuned on (fused as `--tune` fuses them).
    pub tuned_on_ndcg: f64,
    /// Its measures on the held-out queries, by real searches.
    pub held_out: Summary,
}

/// One store's weight.
#[derive(Debug, Clone, Serialize)]
pub struct StoreWeight {
    pub store: String,
    pub weight: f64,
}

/// How the intervals were drawn.
#[derive(Debug, Clone, Serialize)]
pub struct Bootstrap {
    pub resamples: usize,
    pub seed: u64,
    pub level: f64,
}

/// Each measure's mean over the queries, with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub ndcg: Estimate,
    pub recall: Estimate,
    pub mrr: Estimate,
    pub precision: Estimate,
}

impl Summary {
    pub fn get(&self, metric: Metric) -> Estimate {
        match metric {
            Metric::Ndcg => self.ndcg,
            Metric::Recall => self.recall,
            Metric::Mrr => self.mrr,
            Metric::Precision => self.precision,
        }
    }

    /// The summary of one run's scores, a query each.
    pub fn of(scores: &[Scores]) -> Self {
        let estimate = |metric: Metric| {
            let values: Vec<f64> = scores.iter().map(|s| s.get(metric)).collect();
            bootstrap::estimate(&values)
        };
        Self {
            ndcg: estimate(Metric::Ndcg),
            recall: estimate(Metric::Recall),
            mrr: estimate(Metric::Mrr),
            precision: estimate(Metric::Precision),
        }
    }
}

/// One store alone, summarized.
#[derive(Debug, Clone, Serialize)]
pub struct StoreSummary {
    pub store: String,
    #[serde(flatten)]
    pub summary: Summary,
}

/// One query: every run's measures, and the fusion against the best store on it.
#[derive(Debug, Clone, Serialize)]
pub struct QueryReport {
    pub qid: String,
    pub query: String,
    pub relevant: usize,
    pub fused: Scores,
    pub stores: Vec<StoreScores>,
    /// The store whose nDCG@k was highest on this query (the first in roster order on a tie);
    /// null when no store was searched alone.
    pub best_store: Option<String>,
    /// The fusion's nDCG@k minus `best_store`'s: below 0, fusing lost to a store alone.
    pub delta_ndcg: Option<f64>,
    pub failed: Vec<Failed>,
}

/// One store's measures on one query.
#[derive(Debug, Clone, Serialize)]
pub struct StoreScores {
    pub store: String,
    #[serde(flatten)]
    pub scores: Scores,
}

/// The report over `outcomes` (in the judgments' order) at cutoff `k`; `stores` names the
/// stores searched alone, in the order of each outcome's `stores`.
/// `identity` is what the searches ran with.
pub fn report(
    k: usize,
    identity: Identity,
    stores: &[String],
    outcomes: Vec<Outcome>,
    skipped: Vec<Failed>,
) -> Report {
    let fused: Vec<Scores> = outcomes.iter().map(|o| o.fused).collect();
    let store_summaries = (stores.iter().enumerate())
        .map(|(i, name)| {
            let scores: Vec<Scores> = outcomes.iter().map(|o| o.stores[i]).collect();
            StoreSummary {
                store: name.clone(),
                summary: Summary::of(&scores),
            }
        })
        .collect();
    let per_query = outcomes
        .into_iter()
        .map(|outcome| {
            let mut best: Option<(usize, f64)> = None;
            for (i, scores) in outcome.stores.iter().enumerate() {
                if best.is_none_or(|(_, ndcg)| scores.ndcg > ndcg) {
                    best = Some((i, scores.ndcg));
                }
            }
            QueryReport {
                qid: outcome.qid,
                query: outcome.query,
                relevant: outcome.relevant,
                fused: outcome.fused,
                stores: (stores.iter().zip(outcome.stores))
                    .map(|(name, scores)| StoreScores {
                        store: name.clone(),
                        scores,
                    })
                    .collect(),
                best_store: best.map(|(i, _)| stores[i].clone()),
                delta_ndcg: best.map(|(_, ndcg)| outcome.fused.ndcg - ndcg),
                failed: outcome.failed,
            }
        })
        .collect();
    Report {
        k,
        identity,
        queries: fused.len(),
        bootstrap: Bootstrap {
            resamples: bootstrap::RESAMPLES,
            seed: bootstrap::SEED,
            level: bootstrap::LEVEL,
        },
        fused: Summary::of(&fused),
        stores: store_summaries,
        per_query,
        skipped,
        tune: None,
    }
}

impl Report {
    /// The queries, worst delta first (fusing lost the most to a store alone there); ties and
    /// queries with no store to compare keep the judgments' order.
    pub fn worst_first(&self) -> Vec<&QueryReport> {
        let mut queries: Vec<&QueryReport> = self.per_query.iter().collect();
        queries.sort_by(|a, b| {
            let key = |q: &QueryReport| q.delta_ndcg.unwrap_or(f64::INFINITY);
            key(a).total_cmp(&key(b))
        });
        queries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scores(ndcg: f64) -> Scores {
        Scores {
            ndcg,
            recall: ndcg / 2.0,
            mrr: 1.0,
            precision: 0.1,
        }
    }

    fn outcome(qid: &str, fused: f64, stores: &[f64]) -> Outcome {
        Outcome {
            qid: qid.to_owned(),
            query: format!("query {qid}"),
            relevant: 1,
            fused: scores(fused),
            stores: stores.iter().map(|s| scores(*s)).collect(),
            failed: Vec::new(),
        }
    }

    #[test]
    fn means_intervals_and_deltas() {
        let names = ["notes".to_owned(), "facts".to_owned()];
        let report = report(
            10,
            Identity::None,
            &names,
            vec![
                outcome("1", 0.5, &[0.25, 0.75]),
                outcome("2", 1.0, &[0.5, 0.5]),
                outcome("3", 0.0, &[0.0, 0.0]),
            ],
            Vec::new(),
        );
        assert_eq!(report.queries, 3);
        assert_eq!(report.fused.ndcg.mean, 0.5);
        assert_eq!(report.fused.recall.mean, 0.25);
        assert_eq!(report.stores[1].store, "facts");
        assert!((report.stores[1].summary.ndcg.mean - 1.25 / 3.0).abs() < 1e-12);
        let q = &report.per_query;
        assert_eq!(
            (q[0].best_store.as_deref(), q[0].delta_ndcg),
            (Some("facts"), Some(-0.25))
        );
        // A tie goes to the store first in roster order.
        assert_eq!(
            (q[1].best_store.as_deref(), q[1].delta_ndcg),
            (Some("notes"), Some(0.5))
        );
        assert_eq!(
            (q[2].best_store.as_deref(), q[2].delta_ndcg),
            (Some("notes"), Some(0.0))
        );
        let order: Vec<&str> = report
            .worst_first()
            .iter()
            .map(|q| q.qid.as_str())
            .collect();
        assert_eq!(order, ["1", "3", "2"]);
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["stores"][0]["store"], "notes");
        assert!(json["stores"][0]["ndcg"]["low"].is_number());
        assert_eq!(json["per_query"][0]["stores"][1]["ndcg"], 0.75);
        assert_eq!(json["bootstrap"]["resamples"], 1000);
    }

    #[test]
    fn no_store_alone_leaves_no_delta() {
        let report = report(
            5,
            Identity::None,
            &[],
            vec![outcome("1", 0.5, &[])],
            Vec::new(),
        );
        assert_eq!(report.per_query[0].best_store, None);
        assert_eq!(report.per_query[0].delta_ndcg, None);
        assert!(report.stores.is_empty());
    }
}
