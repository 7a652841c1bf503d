//! Weighted Reciprocal Rank Fusion: ranked lists in, one fused list out.
//!
//! This module is pure: no IO, no async, no `Result`. It reads each store's rank order and the
//! store's weight, never a magnitude, so stores whose embedders differ still merge correctly. The one
//! place a magnitude is read is the per-store relevance floor, which runs *before* ranking and only
//! when a store asks for it (`floor > 0`).

use crate::metadata::Metadata;
use std::cmp::Ordering;

/// One hit as a store adapter hands it over: the store's own words, before fusion.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The store's id for the hit (a store's ids are its own; no dedup across stores).
    pub id: String,
    /// The text a model will read.
    pub content: String,
    /// The adapter's 0..1-ish relevance, used by the floor and nothing else.
    pub base_relevance: f64,
    /// The store's raw distance, where it reports one.
    pub raw_distance: Option<f64>,
    /// The store's own score, where it reports one.
    pub native_score: Option<f64>,
    /// Whatever else the adapter keeps as provenance, as one JSON object's text.
    pub metadata: Metadata,
    /// What a SerenMemory core brings besides itself (its satellite episodes, the core it
    /// superseded), lifted out of its metadata by the adapter; the packet may add them as edges.
    pub satellites: Option<Box<Satellites>>,
}

/// A SerenMemory core's surroundings, as edges-to-be [5.3].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Satellites {
    /// Its satellite episodes, newest first (`surroundings.recent`).
    pub recent: Vec<Episode>,
    /// The core it superseded (`surroundings.supersedes_entry`).
    pub supersedes: Option<Episode>,
}

/// One memory a core points at.
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    pub id: String,
    pub content: String,
    /// As the store wrote it (an ISO time, or null).
    pub created_at: serde_json::Value,
}

/// One store's answer, ready to fuse. Lists are passed in roster order; that order breaks ties.
#[derive(Debug, Clone)]
pub struct RankedList {
    /// The cross-store trust lever: every score of this store is multiplied by it.
    pub weight: f64,
    /// Hits with `base_relevance` below this are dropped before ranking (0 keeps all).
    pub floor: f64,
    /// The store's hits, best first, exactly as the store ordered them.
    pub hits: Vec<Hit>,
}

/// One hit of the fused answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    /// Index of the hit's list in the input (its store's position in roster order).
    pub list: usize,
    /// 1-based rank within its store's list, counted after the floor.
    pub rank: usize,
    /// The fused score, `weight / (k + rank)`.
    pub score: f64,
    /// The hit itself, moved, not cloned.
    pub hit: Hit,
}

/// Drops the hits below `floor`, keeping order. A floor of 0 (or below) keeps every hit.
///
/// A NaN relevance never passes a floor above 0: `NaN >= x` is false, which is what we want.
pub fn apply_floor(mut hits: Vec<Hit>, floor: f64) -> Vec<Hit> {
    if floor > 0.0 {
        hits.retain(|hit| passes_floor(hit, floor));
    }
    hits
}

/// Whether `hit` stays in its list under `floor` (0 keeps every hit).
fn passes_floor(hit: &Hit, floor: f64) -> bool {
    floor <= 0.0 || hit.base_relevance >= floor
}

/// How much of one store's answer a search can use: its first `hits` past the `floor`, best
/// first. A store's weight is positive, so within its list the fused order is the store's own:
/// a hit with `n` of the same list above it past the floor is never among the best `n`. The
/// plain cut of `n` rows reads no more than that; a protocol builds no [`Hit`] past it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Keep {
    pub hits: usize,
    pub floor: f64,
}

impl Keep {
    /// Every hit (the packet's walks, `explain`, later rounds, topic edges).
    pub const ALL: Keep = Keep {
        hits: usize::MAX,
        floor: 0.0,
    };

    /// How many of an answer's hits to read at all, of the `limit` asked: with no floor every
    /// hit passes, so the first `hits` are the ones kept and the rest is read over (checked as
    /// JSON, never built: a malformed hit there no longer fails the answer).
    pub fn limit(self, limit: usize) -> usize {
        if self.floor <= 0.0 {
            limit.min(self.hits)
        } else {
            limit
        }
    }

    /// The hits of a store's answer, best first, until `hits` have passed the floor (those
    /// below it are kept too, for the floor to drop as it always does). `hits` is lazy: what
    /// comes after is never built.
    pub fn take(self, hits: impl IntoIterator<Item = Hit>) -> Vec<Hit> {
        let mut hits = hits.into_iter();
        let mut kept = Vec::new();
        let mut passed = 0;
        while passed < self.hits {
            let Some(hit) = hits.next() else { break };
            passed += usize::from(passes_floor(&hit, self.floor));
            kept.push(hit);
        }
        kept
    }
}

/// What the ordering needs of a hit, without the hit: sorting these small keys instead of whole
/// hits keeps the sort in cache, and only the `n` kept hits are ever moved.
#[derive(Debug, Clone, Copy)]
struct Key {
    score: f64,
    list: u32,
    rank: u32,
}

/// Floors every list and scores every hit that is left: the lists, and one key per hit.
fn keyed(lists: Vec<RankedList>, k: u32) -> (Vec<(f64, Vec<Hit>)>, Vec<Key>) {
    let lists: Vec<(f64, Vec<Hit>)> = lists
        .into_iter()
        .map(|list| (list.weight, apply_floor(list.hits, list.floor)))
        .collect();
    let total: usize = lists.iter().map(|(_, hits)| hits.len()).sum();
    let mut keys = Vec::with_capacity(total);
    for (index, (weight, hits)) in lists.iter().enumerate() {
        for position in 0..hits.len() {
            let rank = position + 1;
            keys.push(Key {
                score: rrf_score(*weight, k, rank),
                // Both fit: a fan has far fewer than 2^32 stores, and a store answers far fewer hits.
                list: u32::try_from(index).unwrap_or(u32::MAX),
                rank: u32::try_from(rank).unwrap_or(u32::MAX),
            });
        }
    }
    (lists, keys)
}

/// Fuses the lists with weighted RRF and keeps the best `n`.
///
/// Order: score descending; ties go to the list earlier in the input, then to the lower rank. The
/// key is total (no two hits share a list and a rank), so the result never depends on the sort's
/// stability or on float quirks (scores compare with `total_cmp`).
pub fn fuse(lists: Vec<RankedList>, k: u32, n: usize) -> Vec<Fused> {
    let (mut lists, mut keys) = keyed(lists, k);
    if n == 0 {
        return Vec::new();
    }
    if n < keys.len() {
        // Partition around the n-th best, then order only the n kept: O(total + n log n).
        keys.select_nth_unstable_by(n - 1, compare);
        keys.truncate(n);
    }
    keys.sort_unstable_by(compare);
    keys.into_iter()
        .map(|key| {
            let slot = &mut lists[key.list as usize].1[key.rank as usize - 1];
            Fused {
                list: key.list as usize,
                rank: key.rank as usize,
                score: key.score,
                hit: std::mem::replace(slot, Hit::taken()),
            }
        })
        .collect()
}

/// A hit's place in the fused order: its list, its rank there, its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Place {
    /// Index of the hit's list in the input.
    pub list: usize,
    /// 1-based rank within its list, after the floor.
    pub rank: usize,
    /// `weight / (k + rank)`.
    pub score: f64,
}

/// The fused order of every hit, sorted only as far as it is read.
///
/// The packet's walks (the authority lead, the seats, the page) read the order from the top and
/// usually stop after a few dozen rows, so the keys are sorted in growing chunks as the walk goes
/// (each chunk partitioned out of the rest, then sorted), and only the hits finally kept are
/// moved out. Reading the whole order costs one full sort; reading the top `n` costs about what
/// [`fuse`] does.
pub struct Order {
    lists: Vec<Vec<Hit>>,
    weights: Vec<f64>,
    k: u32,
    keys: Vec<Key>,
    /// `keys[..sorted]` are the best, in order.
    sorted: usize,
}

impl Order {
    /// Floors the lists and scores every hit.
    pub fn new(lists: Vec<RankedList>, k: u32) -> Self {
        let (lists, keys) = keyed(lists, k);
        let (weights, lists) = lists.into_iter().unzip();
        Self {
            lists,
            weights,
            k,
            keys,
            sorted: 0,
        }
    }

    /// The place of list `list`'s hit at `rank`, if there is one.
    pub fn place(&self, list: usize, rank: usize) -> Option<Place> {
        (rank >= 1 && rank <= self.lists.get(list)?.len()).then(|| Place {
            list,
            rank,
            score: rrf_score(self.weights[list], self.k, rank),
        })
    }

    /// How many lists there are.
    pub fn lists(&self) -> usize {
        self.lists.len()
    }

    /// How many hits there are in all.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The place of the `i`-th best hit (0-based), sorting further if the walk has got that far.
    pub fn at(&mut self, i: usize) -> Option<Place> {
        if i >= self.keys.len() {
            return None;
        }
        while i >= self.sorted {
            // Double what is sorted (at least 64 keys): a walk that goes deep costs a few passes
            // over the rest, never more than about twice a full sort.
            let chunk = self.sorted.max(64).min(self.keys.len() - self.sorted);
            let rest = &mut self.keys[self.sorted..];
            if chunk < rest.len() {
                rest.select_nth_unstable_by(chunk - 1, compare);
            }
            rest[..chunk].sort_unstable_by(compare);
            self.sorted += chunk;
        }
        let key = self.keys[i];
        Some(Place {
            list: key.list as usize,
            rank: key.rank as usize,
            score: key.score,
        })
    }

    /// The hit at `place`.
    pub fn hit(&self, place: Place) -> &Hit {
        &self.lists[place.list][place.rank - 1]
    }

    /// The floored list `list`, best first.
    pub fn list(&self, list: usize) -> &[Hit] {
        &self.lists[list]
    }

    /// The hits at `places`, moved out in that order.
    pub fn take(mut self, places: &[Place]) -> Vec<Fused> {
        places
            .iter()
            .map(|place| Fused {
                list: place.list,
                rank: place.rank,
                score: place.score,
                hit: std::mem::replace(&mut self.lists[place.list][place.rank - 1], Hit::taken()),
            })
            .collect()
    }
}

impl Hit {
    /// An empty hit that costs no allocation, left where a kept hit was moved out.
    fn taken() -> Self {
        Self {
            id: String::new(),
            content: String::new(),
            base_relevance: 0.0,
            raw_distance: None,
            native_score: None,
            metadata: Metadata::default(),
            satellites: None,
        }
    }

    /// A hit of `id` and `relevance` with nothing else, for tests.
    #[cfg(test)]
    pub(crate) fn plain(id: &str, relevance: f64) -> Self {
        Self {
            id: id.to_owned(),
            content: format!("content of {id}"),
            base_relevance: relevance,
            ..Self::taken()
        }
    }
}

/// The score of the hit at 1-based `rank` in a store of weight `weight`.
pub fn rrf_score(weight: f64, k: u32, rank: usize) -> f64 {
    weight / (f64::from(k) + rank as f64)
}

fn compare(a: &Key, b: &Key) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then(a.list.cmp(&b.list))
        .then(a.rank.cmp(&b.rank))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hit(id: &str, relevance: f64) -> Hit {
        Hit {
            id: id.to_owned(),
            content: format!("content of {id}"),
            base_relevance: relevance,
            raw_distance: Some(1.0 / relevance - 1.0),
            native_score: Some(relevance),
            metadata: Metadata::default(),
            satellites: None,
        }
    }

    fn list(weight: f64, floor: f64, hits: &[(&str, f64)]) -> RankedList {
        RankedList {
            weight,
            floor,
            hits: hits.iter().map(|(id, rel)| hit(id, *rel)).collect(),
        }
    }

    /// Fuses and renders the answer as `list:id@rank` so tables read like the expected order.
    fn check(lists: Vec<RankedList>, n: usize, expected: &[&str]) {
        let got: Vec<String> = fuse(lists, 60, n)
            .iter()
            .map(|f| format!("{}:{}@{}", f.list, f.hit.id, f.rank))
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn interleaves_by_rank_and_breaks_ties_by_roster_order() {
        check(
            vec![
                list(1.0, 0.0, &[("a1", 0.9), ("a2", 0.8), ("a3", 0.7)]),
                list(1.0, 0.0, &[("b1", 0.5), ("b2", 0.4)]),
            ],
            10,
            &["0:a1@1", "1:b1@1", "0:a2@2", "1:b2@2", "0:a3@3"],
        );
        // The same lists in the other roster order: the tie goes the other way.
        check(
            vec![
                list(1.0, 0.0, &[("b1", 0.5), ("b2", 0.4)]),
                list(1.0, 0.0, &[("a1", 0.9), ("a2", 0.8), ("a3", 0.7)]),
            ],
            10,
            &["0:b1@1", "1:a1@1", "0:b2@2", "1:a2@2", "1:a3@3"],
        );
    }

    #[test]
    fn weight_lets_one_store_outrank_another() {
        // 2/(60+1) beats 1/(60+1) and even 2/(60+2) beats 1/(60+1).
        check(
            vec![
                list(1.0, 0.0, &[("a1", 0.99), ("a2", 0.98)]),
                list(2.0, 0.0, &[("b1", 0.1), ("b2", 0.05)]),
            ],
            10,
            &["1:b1@1", "1:b2@2", "0:a1@1", "0:a2@2"],
        );
    }

    #[test]
    fn floor_drops_weak_hits_before_ranking() {
        // b's first hit is under the floor, so b2 becomes b's rank 1 and ties with a1.
        check(
            vec![
                list(1.0, 0.0, &[("a1", 0.2), ("a2", 0.1)]),
                list(1.0, 0.3, &[("b1", 0.29), ("b2", 0.5), ("b3", 0.3)]),
            ],
            10,
            &["0:a1@1", "1:b2@1", "0:a2@2", "1:b3@2"],
        );
    }

    #[test]
    fn floor_zero_keeps_everything_and_nan_never_passes_a_floor() {
        let nan = list(1.0, 0.0, &[("x", f64::NAN), ("y", 0.5)]);
        assert_eq!(apply_floor(nan.hits.clone(), 0.0).len(), 2);
        let kept: Vec<String> = apply_floor(nan.hits, 0.1)
            .into_iter()
            .map(|h| h.id)
            .collect();
        assert_eq!(kept, ["y"]);
    }

    #[test]
    fn cuts_to_n_and_handles_empty_input() {
        check(
            vec![list(1.0, 0.0, &[("a1", 0.9), ("a2", 0.8), ("a3", 0.7)])],
            2,
            &["0:a1@1", "0:a2@2"],
        );
        check(vec![], 10, &[]);
        check(
            vec![list(1.0, 0.0, &[]), list(1.0, 0.0, &[("b1", 0.5)])],
            10,
            &["1:b1@1"],
        );
        check(vec![list(1.0, 0.0, &[("a1", 0.9)])], 0, &[]);
    }

    #[test]
    fn scores_are_weight_over_k_plus_rank() {
        let fused = fuse(vec![list(1.5, 0.0, &[("a", 1.0), ("b", 1.0)])], 60, 10);
        assert_eq!(fused[0].score, 1.5 / 61.0);
        assert_eq!(fused[1].score, 1.5 / 62.0);
        let fused = fuse(vec![list(1.0, 0.0, &[("a", 1.0)])], 1, 10);
        assert_eq!(fused[0].score, 0.5);
    }

    /// The seed's promise: rescale one store's magnitudes by any positive factor and the fused
    /// answer (order, ranks and scores) is byte-identical.
    #[test]
    fn test_embedder_change_does_not_perturb_order() {
        let before = vec![
            list(1.0, 0.0, &[("m1", 0.61), ("m2", 0.52), ("m3", 0.33)]),
            list(1.3, 0.0, &[("l1", 0.99), ("l2", 0.41)]),
        ];
        let mut after = before.clone();
        for hit in &mut after[1].hits {
            hit.base_relevance *= 1000.0;
            hit.native_score = hit.native_score.map(|s| s * 1000.0);
            hit.raw_distance = hit.raw_distance.map(|d| d * 1000.0);
        }
        let render = |lists| {
            format!(
                "{:?}",
                fuse(lists, 60, 10)
                    .iter()
                    .map(|f| (f.list, f.rank, f.score.to_bits(), f.hit.id.clone()))
                    .collect::<Vec<_>>()
            )
        };
        assert_eq!(render(before), render(after));
    }

    #[test]
    fn keep_builds_no_hit_past_the_ones_it_needs() {
        let built = std::cell::Cell::new(0);
        let hits = [0.9, 0.1, 0.8, 0.7, 0.6].iter().map(|rel| {
            built.set(built.get() + 1);
            hit("h", *rel)
        });
        // Two past a floor of 0.5: 0.9 and 0.8, with 0.1 (below it) kept for the floor to drop.
        let kept = Keep {
            hits: 2,
            floor: 0.5,
        }
        .take(hits);
        let relevance: Vec<f64> = kept.iter().map(|h| h.base_relevance).collect();
        assert_eq!(relevance, [0.9, 0.1, 0.8]);
        assert_eq!(built.get(), 3, "the fourth hit is never built");
        assert!(
            Keep {
                hits: 0,
                floor: 0.0
            }
            .take([hit("h", 1.0)])
            .is_empty()
        );
        assert_eq!(Keep::ALL.take(vec![hit("a", 0.0), hit("b", -1.0)]).len(), 2);
    }

    fn arb_lists() -> impl Strategy<Value = Vec<RankedList>> {
        let hits = prop::collection::vec(0.0001f64..1.0, 0..12);
        let one = (0.1f64..5.0, hits).prop_map(|(weight, rels)| RankedList {
            weight,
            floor: 0.0,
            hits: rels
                .iter()
                .enumerate()
                .map(|(i, rel)| hit(&format!("h{i}"), *rel))
                .collect(),
        });
        prop::collection::vec(one, 0..6)
    }

    proptest! {
        #[test]
        fn rescaling_any_store_never_changes_the_answer(
            lists in arb_lists(),
            which in 0usize..6,
            factor in 0.001f64..1000.0,
            n in 0usize..80,
        ) {
            let mut scaled = lists.clone();
            if let Some(list) = scaled.get_mut(which) {
                for hit in &mut list.hits {
                    hit.base_relevance *= factor;
                    hit.native_score = hit.native_score.map(|s| s * factor);
                    hit.raw_distance = hit.raw_distance.map(|d| d * factor);
                }
            }
            let key = |f: &Fused| (f.list, f.rank, f.score.to_bits(), f.hit.id.clone());
            let a: Vec<_> = fuse(lists, 60, n).iter().map(key).collect();
            let b: Vec<_> = fuse(scaled, 60, n).iter().map(key).collect();
            prop_assert_eq!(a, b);
        }

        /// What a protocol builds under [`Keep`] fuses to the very answer of every hit: the
        /// plain cut never reads a hit with `n` of its own list above it past the floor.
        #[test]
        fn keeping_n_past_the_floor_never_changes_the_top_n(
            mut lists in arb_lists(),
            floors in prop::collection::vec(prop_oneof![Just(0.0), 0.0f64..1.0], 6),
            n in 0usize..30,
        ) {
            for (list, floor) in lists.iter_mut().zip(&floors) {
                list.floor = *floor;
            }
            let kept: Vec<RankedList> = lists
                .iter()
                .map(|list| RankedList {
                    hits: Keep { hits: n, floor: list.floor }.take(list.hits.clone()),
                    ..list.clone()
                })
                .collect();
            let key = |f: &Fused| (f.list, f.rank, f.score.to_bits(), f.hit.id.clone());
            let all: Vec<_> = fuse(lists, 60, n).iter().map(key).collect();
            let some: Vec<_> = fuse(kept, 60, n).iter().map(key).collect();
            prop_assert_eq!(all, some);
        }

        #[test]
        fn output_is_sorted_and_ranks_are_dense(lists in arb_lists(), n in 0usize..80) {
            let total: usize = lists.iter().map(|l| l.hits.len()).sum();
            let fused = fuse(lists, 60, n);
            prop_assert_eq!(fused.len(), total.min(n));
            let key = |f: &Fused| Key { score: f.score, list: f.list as u32, rank: f.rank as u32 };
            for pair in fused.windows(2) {
                prop_assert!(compare(&key(&pair[0]), &key(&pair[1])) == Ordering::Less);
            }
        }
    }
}
