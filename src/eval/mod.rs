//! Evaluation (contract §8): how well the fusion, and each store alone, ranks what people judged
//! relevant. One idea a file, all pure but [`evaluate`], which runs the searches; the edges
//! (`cli/eval.rs`, `POST /eval`) read the judgments and write what a person or a viewer reads.
//!
//! - [`evaluate`]: each judged query through the fusion and each store alone, measured; with
//!   `--tune`, the tuned setting checked on the held-out queries.
//! - [`judgments`]: the judged queries, from JSON Lines or TREC qrels, every bad line named.
//! - [`metrics`]: nDCG@k, Recall@k, MRR@k and P@k of one ranking, as trec_eval defines them.
//! - [`bootstrap`]: a mean's 95% interval from 1,000 seeded resamples of the queries.
//! - [`runs`]: TREC run files, whose score column falls strictly so other tools see our order.
//! - [`report`]: the means, the intervals and each query's delta: the `--json` document.
//! - [`tune`]: `--tune`'s search for the store weights and RRF `k` that rank best.

pub mod bootstrap;
pub mod evaluate;
pub mod judgments;
pub mod metrics;
pub mod report;
pub mod runs;
pub mod tune;
