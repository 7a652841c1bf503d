//! Evaluation (contract §8): how well the fusion, and each store alone, ranks what people judged
//! relevant. The pure parts, one idea a file; the `eval` command (`cli/eval.rs`) reads the files,
//! runs the searches and writes what a person reads. No IO, no async, no store.
//!
//! - [`judgments`]: the judged queries, from JSON Lines or TREC qrels, every bad line named.
//! - [`metrics`]: nDCG@k, Recall@k, MRR@k and P@k of one ranking, as trec_eval defines them.
//! - [`bootstrap`]: a mean's 95% interval from 1,000 seeded resamples of the queries.
//! - [`runs`]: TREC run files, whose score column falls strictly so other tools see our order.
//! - [`report`]: the means, the intervals and each query's delta: the `--json` document.

pub mod bootstrap;
pub mod judgments;
pub mod metrics;
pub mod report;
pub mod runs;
