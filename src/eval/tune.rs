//! `eval --tune` (contract §8): which store weights and RRF `k` would have ranked the judged
//! queries best. The queries are split in two halves from a fixed seed; the settings are searched
//! on one half, over each query's per-store rankings fused here the way the fusion fuses them
//! (weighted RRF; with identity on, one document's contributions summed), and the caller checks
//! the winner on the other half with real searches. Pure: rankings in, a setting out.
//!
//! The search: every store's weight from [`WEIGHTS`] (and its current weight), `k` from [`KS`]
//! (and the current `k`). Every combination when that costs at most [`MAX_TUNE_WORK`] list
//! entries fused; otherwise coordinate ascent from the current setting (one store's weight, or
//! `k`, at a time, keeping a change only when it is strictly better), until a round changes
//! nothing or the work bound is spent. A setting replaces the best only when strictly better, so
//! the current one stands unless something beats it.

use super::bootstrap::SplitMix64;
use super::judgments::Doc;
use super::metrics::{Ideal, Scores};
use crate::limits::MAX_TUNE_WORK;
use std::collections::HashMap;

/// The weights tried for each store (beside its current one).
pub const WEIGHTS: &[f64] = &[0.25, 0.5, 1.0, 2.0, 4.0];
/// The RRF `k` values tried (beside the current one): the contract's.
pub const KS: &[u32] = &[10, 20, 60, 100];
/// The seed of the split into the half tuned on and the half held out.
pub const SPLIT_SEED: u64 = 0x5eed_7e57_0000_0040;

/// A fusion setting: RRF's `k`, and each store's weight in the stores' order.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub k: u32,
    pub weights: Vec<f64>,
}

/// The indexes (into the judged queries) of the half tuned on and of the half held out, each in
/// the judgments' order: a seeded shuffle, the first `ceil(n / 2)` tuned on.
pub fn split(n: usize) -> (Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..n).collect();
    let mut random = SplitMix64::new(SPLIT_SEED);
    for i in (1..n).rev() {
        order.swap(i, random.below(i + 1));
    }
    let mut held = order.split_off(n.div_ceil(2));
    order.sort_unstable();
    held.sort_unstable();
    (order, held)
}

/// One query as the tuning reads it: each store's ranking, its documents numbered.
#[derive(Debug, Clone)]
pub struct Query {
    /// Each store's ranking (in the stores' order), best first, each document once.
    lists: Vec<Vec<u32>>,
    /// Each numbered document's grade.
    grades: Vec<u32>,
    ideal: Ideal,
}

impl Query {
    /// A query whose stores ranked `lists` (in the stores' order), judged `grades`.
    pub fn new(lists: &[Vec<Doc>], grades: &HashMap<Doc, u32>) -> Self {
        let mut numbers: HashMap<&Doc, u32> = HashMap::new();
        let mut doc_grades = Vec::new();
        let lists = (lists.iter())
            .map(|list| {
                (list.iter())
                    .map(|doc| {
                        *numbers.entry(doc).or_insert_with(|| {
                            doc_grades.push(grades.get(doc).copied().unwrap_or(0));
                            (doc_grades.len() - 1) as u32
                        })
                    })
                    .collect()
            })
            .collect();
        Self {
            lists,
            grades: doc_grades,
            ideal: Ideal::new(grades.values().copied()),
        }
    }

    /// List entries one fusion of it reads: the work it costs.
    fn work(&self) -> usize {
        self.lists.iter().map(Vec::len).sum::<usize>().max(1)
    }

    /// Its measures at `cutoff` under `setting`.
    pub fn scores(&self, setting: &Setting, cutoff: usize) -> Scores {
        let ranked = self.fuse(setting, cutoff);
        self.ideal
            .scores(ranked.iter().map(|doc| self.grades[*doc as usize]), cutoff)
    }

    /// Its documents fused under `setting`, the best `cutoff`, as the fusion orders them: score
    /// descending (the sum, in the stores' order, of `weight / (k + rank)` over the lists that
    /// hold it), ties to the document whose body (its largest contribution, a tie to the earlier
    /// list) is in the earlier list, then to the body's lower rank.
    fn fuse(&self, setting: &Setting, cutoff: usize) -> Vec<u32> {
        // (score, body's contribution, body's list, body's rank) a document.
        let mut rows: Vec<(f64, f64, usize, usize)> =
            vec![(0.0, f64::NEG_INFINITY, usize::MAX, 0); self.grades.len()];
        for (list, docs) in self.lists.iter().enumerate() {
            let weight = setting.weights.get(list).copied().unwrap_or(1.0);
            for (i, doc) in docs.iter().enumerate() {
                let row = &mut rows[*doc as usize];
                let contribution = crate::fusion::rrf_score(weight, setting.k, i + 1);
                row.0 += contribution;
                if contribution.total_cmp(&row.1) == std::cmp::Ordering::Greater {
                    (row.1, row.2, row.3) = (contribution, list, i + 1);
                }
            }
        }
        let mut order: Vec<u32> = (0..rows.len() as u32).collect();
        order.sort_unstable_by(|a, b| {
            let (a, b) = (rows[*a as usize], rows[*b as usize]);
            (b.0.total_cmp(&a.0))
                .then(a.2.cmp(&b.2))
                .then(a.3.cmp(&b.3))
        });
        order.truncate(cutoff);
        order
    }
}

/// How the settings were searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Every combination of the grid.
    Exhaustive,
    /// One knob at a time, from the current setting.
    CoordinateAscent,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The best setting: the current one unless another was strictly better.
    pub best: Setting,
    /// Its mean nDCG at the cutoff over the queries tuned on.
    pub best_ndcg: f64,
    /// The current setting's.
    pub current_ndcg: f64,
    pub method: Method,
    /// How many settings were tried.
    pub tried: usize,
    /// Whether the work bound ended the search before it was done.
    pub bounded: bool,
}

/// The settings tried for `current` (its own values among them): each store's weights, then
/// `k`'s, each ascending.
pub fn grid(current: &Setting) -> (Vec<Vec<f64>>, Vec<u32>) {
    let weights = (current.weights.iter())
        .map(|now| {
            let mut all: Vec<f64> = WEIGHTS.iter().copied().chain([*now]).collect();
            all.sort_unstable_by(f64::total_cmp);
            all.dedup();
            all
        })
        .collect();
    let mut ks: Vec<u32> = KS.iter().copied().chain([current.k]).collect();
    ks.sort_unstable();
    ks.dedup();
    (weights, ks)
}

/// The setting that ranks `queries` best at `cutoff` (mean nDCG), starting from `current`.
pub fn search(queries: &[Query], current: &Setting, cutoff: usize) -> Found {
    search_within(queries, current, cutoff, MAX_TUNE_WORK)
}

/// [`search`] under another work bound.
pub fn search_within(queries: &[Query], current: &Setting, cutoff: usize, work: usize) -> Found {
    let per_setting: usize = queries.iter().map(Query::work).sum::<usize>().max(1);
    let mut tally = Tally::default();
    let measure = |setting: &Setting, tally: &mut Tally| {
        tally.spent = tally.spent.saturating_add(per_setting);
        tally.tried += 1;
        let total: f64 = (queries.iter())
            .map(|q| q.scores(setting, cutoff).ndcg)
            .sum();
        total / queries.len().max(1) as f64
    };
    let current_ndcg = measure(current, &mut tally);
    let (weights, ks) = grid(current);
    let combinations = (weights.iter())
        .map(Vec::len)
        .try_fold(ks.len(), usize::checked_mul);
    let mut best = (current.clone(), current_ndcg);
    let consider = |setting: Setting, best: &mut (Setting, f64), ndcg: f64| {
        if ndcg > best.1 + 1e-12 {
            *best = (setting, ndcg);
        }
    };
    let exhaustive = combinations.and_then(|c| c.checked_mul(per_setting));
    let (method, bounded) = if exhaustive.is_some_and(|cost| cost <= work) {
        let mut digits = vec![0usize; weights.len()];
        for &k in &ks {
            loop {
                let setting = Setting {
                    k,
                    weights: (digits.iter().zip(&weights)).map(|(d, w)| w[*d]).collect(),
                };
                if setting != *current {
                    let ndcg = measure(&setting, &mut tally);
                    consider(setting, &mut best, ndcg);
                }
                // The next combination, the last store's weight turning fastest.
                let Some(turn) = (0..digits.len())
                    .rev()
                    .find(|i| digits[*i] + 1 < weights[*i].len())
                else {
                    break;
                };
                digits[turn] += 1;
                digits[turn + 1..].fill(0);
            }
            digits.fill(0);
        }
        (Method::Exhaustive, false)
    } else {
        let mut bounded = false;
        'rounds: loop {
            let before = best.1;
            // One knob at a time: each store's weight, then k.
            for knob in 0..=weights.len() {
                let values = if knob < weights.len() {
                    weights[knob].len()
                } else {
                    ks.len()
                };
                for value in 0..values {
                    if tally.spent.saturating_add(per_setting) > work {
                        bounded = true;
                        break 'rounds;
                    }
                    let mut setting = best.0.clone();
                    if knob < weights.len() {
                        setting.weights[knob] = weights[knob][value];
                    } else {
                        setting.k = ks[value];
                    }
                    if setting != best.0 {
                        let ndcg = measure(&setting, &mut tally);
                        consider(setting, &mut best, ndcg);
                    }
                }
            }
            if best.1 <= before {
                break;
            }
        }
        (Method::CoordinateAscent, bounded)
    };
    Found {
        best: best.0,
        best_ndcg: best.1,
        current_ndcg,
        method,
        tried: tally.tried,
        bounded,
    }
}

/// What a search has spent: list entries fused, settings tried.
#[derive(Debug, Default)]
struct Tally {
    spent: usize,
    tried: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(store: &str, ids: &[&str]) -> Vec<Doc> {
        ids.iter().map(|id| Doc::new(store, *id)).collect()
    }

    fn judged(pairs: &[(&str, &str, u32)]) -> HashMap<Doc, u32> {
        (pairs.iter())
            .map(|(store, id, grade)| (Doc::new(*store, *id), *grade))
            .collect()
    }

    #[test]
    fn the_split_is_seeded_halves_in_file_order() {
        let (tune, held) = split(7);
        assert_eq!(tune.len(), 4);
        assert_eq!(held.len(), 3);
        let mut all: Vec<usize> = tune.iter().chain(&held).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..7).collect::<Vec<_>>());
        assert!(tune.is_sorted() && held.is_sorted());
        assert_eq!(split(7), (tune, held), "the same split every run");
        assert_eq!(split(1), (vec![0], vec![]));
        assert_eq!(split(0), (vec![], vec![]));
        // Not simply the first half.
        assert_ne!(split(40).0, (0..20).collect::<Vec<_>>());
    }

    #[test]
    fn fusing_sums_weight_over_k_plus_rank() {
        // k = 10: a at 1 in "a" (2/11) and 3 in "b" (1/13); b at 2 in "a" (2/12); c at 1 in "b"
        // (1/11). Sums: a 0.2587, b 0.1667, c 0.0909.
        let lists = [
            vec![Doc::Identity("a".into()), Doc::Identity("b".into())],
            vec![
                Doc::Identity("c".into()),
                Doc::Identity("x".into()),
                Doc::Identity("a".into()),
            ],
        ];
        let query = Query::new(&lists, &HashMap::new());
        let setting = Setting {
            k: 10,
            weights: vec![2.0, 1.0],
        };
        assert_eq!(query.fuse(&setting, 10), [0, 1, 2, 3]);
        // Weights turned round: a 1/11 + 2/13 = 0.2448, c 2/11, x 2/12, b 1/12.
        let turned = Setting {
            k: 10,
            weights: vec![1.0, 2.0],
        };
        assert_eq!(query.fuse(&turned, 2), [0, 2]);
    }

    #[test]
    fn equal_sums_go_by_their_bodys_list_as_the_fusion_orders_them() {
        // m: a#1 + b#2, n: b#1 + a#2, equal sums; m's body is a's (1/61 > 1/62), n's is b's.
        let m = Doc::Identity("m".into());
        let n = Doc::Identity("n".into());
        let lists = [vec![m.clone(), n.clone()], vec![n, m]];
        let query = Query::new(&lists, &HashMap::new());
        let even = Setting {
            k: 60,
            weights: vec![1.0, 1.0],
        };
        assert_eq!(query.fuse(&even, 2), [0, 1], "m (body in a) first");
        // Weigh b more: n's body, b#1, is now the largest of all, and n's sum leads.
        let b_heavy = Setting {
            k: 60,
            weights: vec![1.0, 2.0],
        };
        assert_eq!(query.fuse(&b_heavy, 2), [1, 0]);
        // Equal sums where the first list and the body's list differ: q is a#2 + c#1, p is
        // b#1 + c#2 (both 1/61 + 1/62). q's first list is a, but its body is c#1; p's body is
        // b#1, an earlier list: p first, as the fusion has it.
        let (z, q, p) = (
            Doc::Identity("z".into()),
            Doc::Identity("q".into()),
            Doc::Identity("p".into()),
        );
        let lists = [vec![z, q.clone()], vec![p.clone()], vec![q, p]];
        let query = Query::new(&lists, &HashMap::new());
        let even = Setting {
            k: 60,
            weights: vec![1.0, 1.0, 1.0],
        };
        assert_eq!(query.fuse(&even, 3), [2, 1, 0]);
    }

    #[test]
    fn it_orders_as_the_fusion_does_on_random_lists_ties_included() {
        use crate::fusion::{Hit, RankedList, fuse};
        use crate::identity::{By, KeyPath};
        let mut random = SplitMix64::new(40);
        for round in 0..300 {
            let stores = 1 + random.below(3);
            // Few documents and symmetric weights, so equal sums are common.
            let lists: Vec<Vec<Doc>> = (0..stores)
                .map(|_| {
                    let mut ids: Vec<usize> = (0..6).collect();
                    for i in (1..ids.len()).rev() {
                        ids.swap(i, random.below(i + 1));
                    }
                    ids.truncate(1 + random.below(6));
                    (ids.iter())
                        .map(|id| Doc::Identity(format!("d{id}")))
                        .collect()
                })
                .collect();
            let weights: Vec<f64> = (0..stores)
                .map(|_| [0.5, 1.0, 1.0, 2.0][random.below(4)])
                .collect();
            let k = [1, 10, 60][random.below(3)];
            let setting = Setting {
                k,
                weights: weights.clone(),
            };
            let query = Query::new(&lists, &HashMap::new());
            let mut names: Vec<&Doc> = Vec::new();
            for doc in lists.iter().flatten() {
                if !names.contains(&doc) {
                    names.push(doc);
                }
            }
            let ours: Vec<&Doc> = (query.fuse(&setting, 10).iter())
                .map(|i| names[*i as usize])
                .collect();
            let ranked = (lists.iter().zip(&weights))
                .map(|(docs, weight)| RankedList {
                    weight: *weight,
                    floor: 0.0,
                    hits: (docs.iter())
                        .map(|doc| Hit {
                            id: doc.to_string(),
                            content: String::new(),
                            base_relevance: 1.0,
                            raw_distance: None,
                            native_score: None,
                            metadata: Default::default(),
                            satellites: None,
                        })
                        .collect(),
                    identity: Some(By::Key(KeyPath::Id)),
                })
                .collect();
            let theirs: Vec<String> = (fuse(ranked, k, 10).into_iter())
                .map(|fused| fused.hit.id)
                .collect();
            let ours: Vec<String> = ours.iter().map(|doc| doc.to_string()).collect();
            assert_eq!(ours, theirs, "round {round}: {lists:?} {weights:?} k {k}");
        }
    }

    #[test]
    fn ties_go_to_the_earlier_list_then_the_lower_rank() {
        let lists = [docs("a", &["a1", "a2"]), docs("b", &["b1", "b2"])];
        let query = Query::new(&lists, &HashMap::new());
        let even = Setting {
            k: 60,
            weights: vec![1.0, 1.0],
        };
        // a1 and b1 tie at 1/61: a1 (list 0) first; then a2 and b2 at 1/62.
        assert_eq!(query.fuse(&even, 4), [0, 2, 1, 3]);
    }

    #[test]
    fn the_search_finds_the_store_that_ranks_well() {
        // "good" ranks the relevant document first, "noise" ranks junk above it.
        let queries: Vec<Query> = (0..6)
            .map(|q| {
                let good = docs("good", &[&format!("g{q}"), "g-x"]);
                let noise = docs("noise", &["n1", "n2", "n3"]);
                Query::new(&[good, noise], &judged(&[("good", &format!("g{q}"), 1)]))
            })
            .collect();
        let current = Setting {
            k: 60,
            weights: vec![1.0, 1.0],
        };
        let found = search(&queries, &current, 1);
        assert_eq!(found.method, Method::Exhaustive);
        // Already first at even weights (a tie goes to the earlier list): nothing beats it.
        assert_eq!(found.best, current);
        assert_eq!((found.current_ndcg, found.best_ndcg), (1.0, 1.0));
        // With the junk store first in the roster, only a lower weight for it helps.
        let queries: Vec<Query> = (0..6)
            .map(|q| {
                let good = docs("good", &[&format!("g{q}")]);
                let noise = docs("noise", &["n1", "n2", "n3"]);
                Query::new(&[noise, good], &judged(&[("good", &format!("g{q}"), 1)]))
            })
            .collect();
        let found = search(&queries, &current, 1);
        assert_eq!(found.current_ndcg, 0.0);
        assert_eq!(found.best_ndcg, 1.0);
        assert!(found.best.weights[0] < found.best.weights[1], "{found:?}");
        // Five weights a store (1.0 among them) and four k (60 among them).
        assert_eq!(
            found.tried,
            5 * 5 * 4,
            "every combination, the current once"
        );
    }

    #[test]
    fn a_small_work_bound_turns_to_coordinate_ascent_and_stops() {
        let queries: Vec<Query> = (0..4)
            .map(|q| {
                let good = docs("good", &[&format!("g{q}")]);
                let noise = docs("noise", &["n1", "n2", "n3"]);
                Query::new(&[noise, good], &judged(&[("good", &format!("g{q}"), 1)]))
            })
            .collect();
        let current = Setting {
            k: 60,
            weights: vec![1.0, 1.0],
        };
        let per_setting = 4 * 4;
        let found = search_within(&queries, &current, 1, per_setting * 40);
        assert_eq!(found.method, Method::CoordinateAscent);
        assert_eq!(found.best_ndcg, 1.0);
        assert!(!found.bounded);
        let bounded = search_within(&queries, &current, 1, per_setting * 3);
        assert!(bounded.bounded);
        assert!(bounded.tried <= 3, "{bounded:?}");
    }
}
