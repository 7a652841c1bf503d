//! `POST /eval` (contract §8): judged queries in, the `eval --json` document out. The request is
//! plain; reading its judgments is `eval::judgments`'s, running them `eval::evaluate`'s.

use crate::identity::Identity;
use serde::Deserialize;

/// A `POST /eval` body.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalRequest {
    /// The judged queries: an array of judged-query objects (`{"qid"?, "query", "relevant":
    /// [{"store", "id", "grade"?} | {"identity", "grade"?}]}`), or their JSON Lines text.
    pub judgments: serde_json::Value,
    /// The cutoff: every search asks for k hits, and every measure is at k (1..=200; default 10).
    pub k: Option<i64>,
    /// Search each store's weight and RRF's k on half the queries, checked on the other half
    /// (at least 2 judged queries). Changes nothing.
    #[serde(default)]
    pub tune: bool,
    /// Which hits of several stores are one document in these searches (default: the service's).
    pub identity: Option<Identity>,
}
