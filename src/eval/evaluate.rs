//! The searches `eval` measures (contract §8), for the CLI and `POST /eval` alike: each judged
//! query through the search the service answers (`n_results` = k, the same config, knobs and
//! overlay) and through that search aimed at each store alone (`stores: [name]`: the store's own
//! ranked list after its floor, under the same shaping); each ranking measured. With `tune`, the
//! settings are searched on half the queries ([`super::tune`]) and the winner is checked on the
//! other half with real searches under it ([`Federation::search_under`]), the live knobs left as
//! they are.
//!
//! With identity on, a ranking names documents by their identity key (a hit whose store gives
//! none stays `store/id`), and a judgment by `store/id` counts for the document that hit is,
//! once any search of its query returned it.
//!
//! A store that fails a search counts as an empty ranking there, and is named with the query.

use super::judgments::{Doc, Judged, Scope};
use super::metrics::{self, Scores};
use super::report::{
    self, Failed, Grid, Outcome, Report, Setting as SettingReport, StoreWeight, StoreWeights,
    Summary, Tuning,
};
use super::runs;
use super::tune::{self, Setting};
use crate::api::{self, ConfigureRequest, StoreStatus};
use crate::chain::Chain;
use crate::federation::Federation;
use crate::identity::{By, Identity};
use crate::knobs::Knobs;
use crate::view::Caller;
use std::collections::HashMap;
use std::sync::Arc;

/// A ranking as a run file holds it: each document once, with the score it was ranked by.
pub type Ranked = Vec<(Doc, f64)>;

/// What an evaluation runs against: the roster as it stands, and the identity searched with.
#[derive(Debug)]
pub struct Plan {
    /// Every store name the roster holds (what a judgment may name).
    pub roster: Vec<String>,
    /// The stores searched, each alone too, in roster order.
    pub stores: Vec<String>,
    /// How each searched store's hits are told apart (identity on), by name.
    by: HashMap<String, By>,
    /// Each searched store's weight in force.
    weights: Vec<f64>,
    /// RRF's k in force.
    k: u32,
    /// The roster's stores not searched (disabled, or skipped), with why.
    pub skipped: Vec<Failed>,
    pub identity: Identity,
    /// Who the searches are for: a view's caller evaluates its own stores only.
    caller: Caller,
}

impl Plan {
    /// The plan for `federation` as `caller` sees it, with `identity` (default: its knob's).
    pub fn new(federation: &Federation, caller: &Caller, identity: Option<Identity>) -> Self {
        let fan = federation.fan_for(caller);
        let knobs = federation.knobs();
        let identity = identity.unwrap_or(knobs.identity);
        let skipped = (fan.rows.iter())
            .filter_map(|row| {
                let reason = match &row.status {
                    StoreStatus::Active => return None,
                    StoreStatus::Disabled => "disabled".to_owned(),
                    StoreStatus::Skipped(reason) => reason.clone(),
                };
                Some(Failed {
                    name: row.name.clone(),
                    reason,
                })
            })
            .collect();
        let by = (fan.bound.iter())
            .filter_map(|bound| {
                let by = identity.by(bound.entry.identity_key.as_ref())?;
                Some((bound.name.clone(), by))
            })
            .collect();
        Self {
            roster: fan.rows.iter().map(|row| row.name.clone()).collect(),
            stores: fan.bound.iter().map(|bound| bound.name.clone()).collect(),
            by,
            weights: (fan.bound.iter())
                .map(|bound| knobs.weight_and_floor(bound).0)
                .collect(),
            k: knobs.k,
            skipped,
            identity,
            caller: caller.clone(),
        }
    }

    /// What judgments are read against.
    pub fn scope(&self) -> Scope<'_> {
        Scope {
            stores: &self.roster,
            identity: self.identity,
        }
    }

    /// The document a hit of `store` is: its identity key, or `store/id`.
    fn doc(
        &self,
        store: &str,
        id: &str,
        content: &str,
        metadata: &crate::metadata::Metadata,
    ) -> Doc {
        (self.by.get(store))
            .and_then(|by| by.document(id, content, metadata))
            .map_or_else(
                || Doc::new(store, id),
                |document| Doc::Identity(document.key()),
            )
    }

    /// The setting in force.
    fn current(&self) -> Setting {
        Setting {
            k: self.k,
            weights: self.weights.clone(),
        }
    }
}

/// The least number of judged queries `--tune` takes: one to tune on, one to check on.
pub const MIN_TUNE_QUERIES: usize = 2;

/// How an evaluation runs.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// The cutoff (1..=200).
    pub k: usize,
    /// Whether to search the weights and k (at least [`MIN_TUNE_QUERIES`] queries).
    pub tune: bool,
}

/// Where an evaluation is, for a progress bar and the run files.
pub enum Step<'a> {
    /// A query's searches are done and measured: `done` of `total` (`total` counts the tuned
    /// setting's searches on the held-out queries too).
    Measured {
        done: usize,
        total: usize,
        qid: &'a str,
        fused: &'a Ranked,
        alone: &'a [Ranked],
    },
    /// A held-out query searched under the tuned setting.
    Checked { done: usize, total: usize },
}

/// Runs every judged query (read against [`Plan::scope`]) and measures it; `step` hears of each,
/// and an error it returns ends the evaluation with it.
pub async fn evaluate<E>(
    federation: &Federation,
    plan: &Plan,
    judged: &[Judged],
    options: Options,
    mut step: impl FnMut(Step) -> Result<(), E>,
) -> Result<Report, E> {
    let k = options.k;
    let tuning = options.tune && judged.len() >= MIN_TUNE_QUERIES;
    let (tune_on, held_out) = if tuning {
        tune::split(judged.len())
    } else {
        (Vec::new(), Vec::new())
    };
    let total = judged.len() + held_out.len();
    let mut outcomes = Vec::with_capacity(judged.len());
    let mut tune_queries = Vec::with_capacity(tune_on.len());
    let mut held_grades: HashMap<usize, HashMap<Doc, u32>> = HashMap::new();
    for (i, query) in judged.iter().enumerate() {
        let mut failed = Vec::new();
        let mut seen = HashMap::new();
        let fused = search(
            federation,
            plan,
            (query, k),
            None,
            None,
            &mut seen,
            &mut failed,
        )
        .await;
        let mut alone = Vec::with_capacity(plan.stores.len());
        for store in &plan.stores {
            let ranked = search(
                federation,
                plan,
                (query, k),
                Some(store),
                None,
                &mut seen,
                &mut failed,
            )
            .await;
            alone.push(ranked);
        }
        let grades = resolve(&query.grades, &seen);
        let measured = |ranked: &Ranked| measure(ranked, &grades, k);
        outcomes.push(Outcome {
            qid: query.qid.clone(),
            query: query.query.clone(),
            relevant: query.relevant(),
            fused: measured(&fused),
            stores: alone.iter().map(measured).collect(),
            failed,
        });
        if tune_on.binary_search(&i).is_ok() {
            let lists: Vec<Vec<Doc>> = (alone.iter())
                .map(|ranked| ranked.iter().map(|(doc, _)| doc.clone()).collect())
                .collect();
            tune_queries.push(tune::Query::new(&lists, &grades));
        } else if tuning {
            held_grades.insert(i, grades);
        }
        step(Step::Measured {
            done: i + 1,
            total,
            qid: &query.qid,
            fused: &fused,
            alone: &alone,
        })?;
    }
    let mut report = report::report(
        k,
        plan.identity,
        &plan.stores,
        outcomes,
        plan.skipped.clone(),
    );
    if tuning {
        let tuned = tuning_report(
            federation,
            plan,
            (judged, &report, k),
            Halves {
                tune_on,
                held_out,
                queries: tune_queries,
                held_grades,
            },
            |done| {
                step(Step::Checked {
                    done: judged.len() + done,
                    total,
                })
            },
        )
        .await?;
        report.tune = Some(tuned);
    }
    Ok(report)
}

/// The queries split for `--tune`, as the first searches left them.
struct Halves {
    /// The indexes of the queries tuned on, and of those held out.
    tune_on: Vec<usize>,
    held_out: Vec<usize>,
    /// The queries tuned on, as the search reads them.
    queries: Vec<tune::Query>,
    /// Each held-out query's judgments, resolved (with identity on) by its first searches.
    held_grades: HashMap<usize, HashMap<Doc, u32>>,
}

/// The judged queries a `POST /eval` may run, at most: each costs a search per store and one
/// more while the request waits, and one evaluation runs at a time. More: the `eval` command.
pub const MAX_HTTP_JUDGED_QUERIES: usize = 200;
/// The default cutoff, as the `eval` command's.
pub const DEFAULT_K: usize = 10;
/// The problems with a judgments body a refusal lists, at most (the rest are counted).
const PROBLEMS_SHOWN: usize = 20;

/// `POST /eval`: the request's judgments read and checked whole (a refusal names every problem,
/// and nothing is searched), then run as the `eval` command runs them.
pub async fn requested(
    federation: &Federation,
    caller: &Caller,
    request: &api::EvalRequest,
) -> Result<Report, api::Refusal> {
    let k = match request.k {
        None => DEFAULT_K,
        Some(k) if (1..=crate::limits::MAX_N_RESULTS).contains(&k) => k as usize,
        Some(k) => {
            return Err(api::Refusal::unprocessable(format!(
                "k: must be within 1..={}, got {k}",
                crate::limits::MAX_N_RESULTS
            )));
        }
    };
    let text = judgments_text(&request.judgments)?;
    let plan = Plan::new(federation, caller, request.identity);
    let judged = super::judgments::json_lines(&text, plan.scope()).map_err(|bad| {
        let mut words: Vec<String> = bad
            .iter()
            .take(PROBLEMS_SHOWN)
            .map(ToString::to_string)
            .collect();
        if bad.len() > PROBLEMS_SHOWN {
            words.push(format!("and {} more", bad.len() - PROBLEMS_SHOWN));
        }
        api::Refusal::unprocessable(format!(
            "judgments: {} problem{}; nothing was searched: {}",
            bad.len(),
            if bad.len() == 1 { "" } else { "s" },
            words.join("; ")
        ))
    })?;
    if judged.len() > MAX_HTTP_JUDGED_QUERIES {
        return Err(api::Refusal::new(
            api::RefusalKind::TooLarge,
            format!(
                "judgments: {} judged queries; POST /eval runs at most {MAX_HTTP_JUDGED_QUERIES} \
                 (MAX_HTTP_JUDGED_QUERIES): run `seren-corpus-callosum eval` for more",
                judged.len()
            ),
        ));
    }
    if request.tune && judged.len() < MIN_TUNE_QUERIES {
        return Err(api::Refusal::unprocessable(format!(
            "tune: needs at least {MIN_TUNE_QUERIES} judged queries (half to tune on, half to \
             check on); judgments has {}",
            judged.len()
        )));
    }
    let options = Options {
        k,
        tune: request.tune,
    };
    let report = evaluate(federation, &plan, &judged, options, |_| {
        Ok::<(), std::convert::Infallible>(())
    })
    .await;
    Ok(report.unwrap_or_else(|never| match never {}))
}

/// A `POST /eval` body's `judgments` as JSON Lines: an array's items a line each (so a problem's
/// "line N" is the array's N-th item), or the text as given.
fn judgments_text(judgments: &serde_json::Value) -> Result<String, api::Refusal> {
    match judgments {
        serde_json::Value::String(text) => Ok(text.clone()),
        serde_json::Value::Array(items) => {
            let lines: Vec<String> = items.iter().map(ToString::to_string).collect();
            Ok(lines.join("\n"))
        }
        other => Err(api::Refusal::unprocessable(format!(
            "judgments: must be an array of judged queries or their JSON Lines text, got {}",
            match other {
                serde_json::Value::Null => "null",
                serde_json::Value::Bool(_) => "a boolean",
                serde_json::Value::Number(_) => "a number",
                _ => "an object",
            }
        ))),
    }
}

/// `--tune`: the search on the tuned-on queries, and the winner beside the current setting on
/// the held-out ones.
async fn tuning_report<E>(
    federation: &Federation,
    plan: &Plan,
    (judged, report, k): (&[Judged], &Report, usize),
    halves: Halves,
    mut checked: impl FnMut(usize) -> Result<(), E>,
) -> Result<Tuning, E> {
    let Halves {
        tune_on,
        held_out,
        queries,
        mut held_grades,
    } = halves;
    let current = plan.current();
    let found = tune::search(&queries, &current, k);
    let (weights, ks) = tune::grid(&current);
    let changed = found.best != current;
    let body = configure_body(plan, &found.best);
    // The knobs the body gives, read as `POST /configure` reads it: what is checked on the
    // held-out queries is what applying it would put in force.
    let knobs = serde_json::from_value::<ConfigureRequest>(body.clone())
        .map_err(|e| e.to_string())
        .and_then(|request| {
            let rows = federation.fan_for(&plan.caller).rows.clone();
            (federation.knobs().configure(&request, &rows))
                .map(|(knobs, _)| knobs)
                .map_err(|refusal| refusal.to_string())
        });
    let current_scores: Vec<Scores> = held_out
        .iter()
        .map(|i| report.per_query[*i].fused)
        .collect();
    let mut tuned_scores = Vec::with_capacity(held_out.len());
    match (changed, knobs) {
        (true, Ok(knobs)) => {
            let knobs = Arc::new(knobs);
            for (done, i) in held_out.iter().enumerate() {
                let query = &judged[*i];
                let mut seen = HashMap::new();
                let mut failed = Vec::new();
                let ranked = search(
                    federation,
                    plan,
                    (query, k),
                    None,
                    Some(knobs.clone()),
                    &mut seen,
                    &mut failed,
                )
                .await;
                let grades = held_grades.remove(i).unwrap_or_default();
                tuned_scores.push(measure(&ranked, &grades, k));
                checked(done + 1)?;
            }
        }
        // Nothing to search again: the current setting's own answers are the tuned one's. (A body
        // the knobs refuse cannot come from this grid; were it to, the same holds.)
        _ => tuned_scores.clone_from(&current_scores),
    }
    let deltas: Vec<f64> = (tuned_scores.iter().zip(&current_scores))
        .map(|(tuned, current)| tuned.ndcg - current.ndcg)
        .collect();
    let setting = |setting: &Setting, ndcg: f64, scores: &[Scores]| SettingReport {
        k: setting.k,
        weights: (plan.stores.iter().zip(&setting.weights))
            .map(|(store, weight)| StoreWeight {
                store: store.clone(),
                weight: *weight,
            })
            .collect(),
        tuned_on_ndcg: ndcg,
        held_out: Summary::of(scores),
    };
    let qids = |indexes: &[usize]| indexes.iter().map(|i| judged[*i].qid.clone()).collect();
    Ok(Tuning {
        split_seed: tune::SPLIT_SEED,
        tuned_on: qids(&tune_on),
        held_out: qids(&held_out),
        method: found.method,
        tried: found.tried,
        bounded: found.bounded,
        grid: Grid {
            weights: (plan.stores.iter().zip(weights))
                .map(|(store, weights)| StoreWeights {
                    store: store.clone(),
                    weights,
                })
                .collect(),
            k: ks,
        },
        current: setting(&current, found.current_ndcg, &current_scores),
        tuned: setting(&found.best, found.best_ndcg, &tuned_scores),
        delta_ndcg: super::bootstrap::estimate(&deltas),
        changed,
        yaml: yaml(plan, &found.best),
        configure: body,
    })
}

/// The `POST /configure` body that puts `setting` in force: `k`, and every searched store's
/// weight.
fn configure_body(plan: &Plan, setting: &Setting) -> serde_json::Value {
    serde_json::json!({"k": setting.k, "stores": store_weights(plan, setting)})
}

/// Each searched store's weight under `setting`, as `{name, weight}`: the `/configure` body's
/// `stores`, and the config's store entries.
fn store_weights(plan: &Plan, setting: &Setting) -> Vec<serde_json::Value> {
    (plan.stores.iter().zip(&setting.weights))
        .map(|(name, weight)| serde_json::json!({"name": name, "weight": weight}))
        .collect()
}

/// The config lines that put `setting` in force: `federation.k`, and each store's `weight` in
/// its entry under `federation.stores` (a store added at run time takes it through
/// `POST /configure`).
fn yaml(plan: &Plan, setting: &Setting) -> String {
    let value = serde_json::json!({
        "federation": {"k": setting.k, "stores": store_weights(plan, setting)},
    });
    let lines = serde_yaml::to_string(&value).unwrap_or_default();
    format!(
        "# eval --tune: set federation.k, and each store's weight in its entry\n\
         # (a store added at run time: POST /configure)\n{lines}"
    )
}

/// A ranking's measures against `grades`.
fn measure(ranked: &Ranked, grades: &HashMap<Doc, u32>, k: usize) -> Scores {
    let docs: Vec<Doc> = ranked.iter().map(|(doc, _)| doc.clone()).collect();
    metrics::scores(&docs, grades, k)
}

/// A query's judgments with each `store/id` that a search showed to be a document with an
/// identity counted as that document (`seen`), the highest grade kept where two meet.
fn resolve(grades: &HashMap<Doc, u32>, seen: &HashMap<Doc, Doc>) -> HashMap<Doc, u32> {
    let mut resolved = HashMap::with_capacity(grades.len());
    for (doc, grade) in grades {
        let doc = seen.get(doc).unwrap_or(doc).clone();
        let slot = resolved.entry(doc).or_insert(0);
        *slot = (*slot).max(*grade);
    }
    resolved
}

/// The search the service answers for `query`, `k` hits, aimed at `store` alone when named, under
/// `knobs` (the live ones when `None`): its first `k` distinct documents. Each hit's `store/id`
/// that is a document with an identity is noted in `seen` (with its other stores' hits); a store
/// that failed is added to `failed` (once a query), and a refused search is an empty ranking,
/// named there too.
async fn search(
    federation: &Federation,
    plan: &Plan,
    (query, k): (&Judged, usize),
    store: Option<&String>,
    knobs: Option<Arc<Knobs>>,
    seen: &mut HashMap<Doc, Doc>,
    failed: &mut Vec<Failed>,
) -> Ranked {
    let mut request = api::SearchRequest::new(&query.query);
    request.n_results = Some(k as i64);
    request.stores = store.map(|name| vec![name.clone()]);
    request.identity = Some(plan.identity);
    let mut note = |name: String, reason: String| {
        if !failed.iter().any(|f| f.name == name) {
            failed.push(Failed { name, reason });
        }
    };
    let chain = Chain::root();
    let answer = match knobs {
        Some(knobs) => (federation.search_under(&plan.caller, &request, &chain, knobs)).await,
        None => federation.search(&plan.caller, &request, &chain).await,
    };
    match answer {
        Ok(answer) => {
            for entry in answer.failed {
                note(entry.name, entry.reason);
            }
            let hits = answer.hits.into_iter().map(|hit| {
                let doc = plan.doc(&hit.store, &hit.id, &hit.content, &hit.metadata);
                if let Doc::Identity(_) = doc {
                    for also in hit.also_from.iter().flatten() {
                        seen.insert(Doc::new(&also.store, &also.id), doc.clone());
                    }
                    seen.insert(Doc::new(hit.store, hit.id), doc.clone());
                }
                (doc, hit.score)
            });
            runs::distinct(hits, k)
        }
        Err(refusal) => {
            let name = store.map_or_else(|| "(every store)".to_owned(), Clone::clone);
            note(name, format!("search refused: {refusal}"));
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_id_judgment_counts_for_the_document_its_hit_is() {
        let grades: HashMap<Doc, u32> = [
            (Doc::new("lex", "a"), 1),
            (Doc::new("dense", "a"), 2),
            (Doc::new("lex", "never"), 1),
            (Doc::Identity("b".into()), 1),
        ]
        .into_iter()
        .collect();
        let seen: HashMap<Doc, Doc> = [
            (Doc::new("lex", "a"), Doc::Identity("a".into())),
            (Doc::new("dense", "a"), Doc::Identity("a".into())),
        ]
        .into_iter()
        .collect();
        let resolved = resolve(&grades, &seen);
        assert_eq!(resolved.len(), 3);
        assert_eq!(resolved[&Doc::Identity("a".into())], 2, "the higher grade");
        assert_eq!(
            resolved[&Doc::new("lex", "never")],
            1,
            "never seen: its own"
        );
        assert_eq!(resolved[&Doc::Identity("b".into())], 1);
    }
}
