//! Weighted Reciprocal Rank Fusion: ranked lists in, one fused list out.
//!
//! This module is pure: no IO, no async, no `Result`. It reads each store's rank order and the
//! store's weight, never a magnitude, so stores whose embedders differ still merge correctly. The one
//! place a magnitude is read is the per-store relevance floor, which runs *before* ranking and only
//! when a store asks for it (`floor > 0`).
//!
//! With identity on (contract §2c; which hits are one document is `identity`'s to say), the hits of
//! several stores that are one document become one row: its score the sum of each store's
//! contribution `weight / (k + rank)` (a store at most once, at its best rank), its body the hit
//! of the largest contribution. Every row is then a document, and the order, the cut and the
//! packet run over documents exactly as they run over hits without it.

use crate::identity::{By, Document};
use crate::metadata::Metadata;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

/// One hit as a store adapter hands it over: the store's own words, before fusion.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The store's id for the hit (a store's ids are its own: hits of several stores are one
    /// document only with identity on, as `identity` says).
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
    /// How its hits are told apart when a search has identity on; `None` (identity off): each
    /// hit is its own. Identity is on for a fusion when any list has it.
    pub identity: Option<By>,
}

impl RankedList {
    /// A list of `hits` with identity off.
    pub fn new(weight: f64, floor: f64, hits: Vec<Hit>) -> Self {
        Self {
            weight,
            floor,
            hits,
            identity: None,
        }
    }
}

/// One hit of the fused answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    /// Index of the hit's list in the input (its store's position in roster order).
    pub list: usize,
    /// 1-based rank within its store's list, counted after the floor.
    pub rank: usize,
    /// The fused score, `weight / (k + rank)`; with identity on, the sum of that over every
    /// store that returned the document (this hit's and `also`'s).
    pub score: f64,
    /// The hit itself, moved, not cloned: with identity on, the body of its document.
    pub hit: Hit,
    /// With identity on, the other stores' hits of the same document, in roster order (always
    /// empty without it).
    pub also: Vec<Also>,
}

/// Another store's hit of a fused document (identity on).
#[derive(Debug, Clone, PartialEq)]
pub struct Also {
    /// Index of its list in the input.
    pub list: usize,
    /// 1-based rank within its list, after the floor (a store's best, when it returned the
    /// document more than once).
    pub rank: usize,
    /// Its contribution to the document's score, `weight / (k + rank)`.
    pub score: f64,
    /// The store's id for it.
    pub id: String,
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

    /// A store's answer to be kept, its hits offered best first, for `asked` hits: the room for
    /// them is set aside once (at most [`Kept::ROOM`], so an answer that brings fewer costs
    /// little).
    pub fn kept(self, asked: usize) -> Kept {
        Kept {
            keep: self,
            passed: 0,
            hits: Vec::with_capacity(self.limit(asked).min(Kept::ROOM)),
        }
    }
}

/// A store's answer as [`Keep`] keeps it: hits pushed best first while [`Kept::wants`] says so,
/// until `hits` have passed the floor (those below it are kept too, for the floor to drop as it
/// always does). A protocol builds a hit only when it is wanted: what comes after is never built.
#[derive(Debug)]
pub struct Kept {
    keep: Keep,
    passed: usize,
    hits: Vec<Hit>,
}

impl Kept {
    /// The most hits room is set aside for before any is read.
    const ROOM: usize = 32;

    /// Whether the next hit would be kept.
    pub fn wants(&self) -> bool {
        self.passed < self.keep.hits
    }

    /// Keeps `hit`, the next of the answer (asked only while [`Kept::wants`]).
    pub fn push(&mut self, hit: Hit) {
        self.passed += usize::from(passes_floor(&hit, self.keep.floor));
        self.hits.push(hit);
    }

    /// The hits kept, best first.
    pub fn into_hits(self) -> Vec<Hit> {
        self.hits
    }
}

/// What the ordering needs of a row, without the hit: sorting these small keys instead of whole
/// hits keeps the sort in cache, and only the `n` kept hits are ever moved. With identity on, a
/// row is a document: its summed score, and its body's list and rank.
#[derive(Debug, Clone, Copy)]
struct Key {
    score: f64,
    list: u32,
    rank: u32,
}

/// The lists floored and every row scored: each list's weight and hits, one key per row, and
/// with identity on which hits are one document.
struct Keyed {
    weights: Vec<f64>,
    lists: Vec<Vec<Hit>>,
    keys: Vec<Key>,
    documents: Option<Documents>,
}

/// Both fit: a fan has far fewer than 2^32 stores, and a store answers far fewer hits.
fn small(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Floors every list and scores every hit that is left (with identity on, every document).
fn keyed(lists: Vec<RankedList>, k: u32) -> Keyed {
    let on = lists.iter().any(|list| list.identity.is_some());
    let mut weights = Vec::with_capacity(lists.len());
    let mut identities = Vec::with_capacity(lists.len());
    let lists: Vec<Vec<Hit>> = lists
        .into_iter()
        .map(|list| {
            weights.push(list.weight);
            identities.push(list.identity);
            apply_floor(list.hits, list.floor)
        })
        .collect();
    if on {
        let documents = Documents::new(&lists, &identities, &weights, k);
        let keys = documents.keys();
        return Keyed {
            weights,
            lists,
            keys,
            documents: Some(documents),
        };
    }
    let total: usize = lists.iter().map(Vec::len).sum();
    let mut keys = Vec::with_capacity(total);
    for (index, hits) in lists.iter().enumerate() {
        for position in 0..hits.len() {
            let rank = position + 1;
            keys.push(Key {
                score: rrf_score(weights[index], k, rank),
                list: small(index),
                rank: small(rank),
            });
        }
    }
    Keyed {
        weights,
        lists,
        keys,
        documents: None,
    }
}

/// Which floored hits are one document (identity on), and each document's parts.
///
/// Bounded by what it is given: one pass over the hits (each hit's key read once, one hash-map
/// probe), one over the documents, so O(hits) time and memory beside the hits themselves, which
/// the store calls already bound (`ask` hits a store, the answer's byte cap, the ledger).
#[derive(Debug)]
struct Documents {
    /// For each list, for each floored hit (by rank - 1): the index of its document.
    of: Vec<Vec<u32>>,
    docs: Vec<Doc>,
}

/// One document: the (list, rank) of each store that returned it, in roster order, each store
/// once at its best rank; which of them is the body; and its score, the sum of their
/// contributions.
#[derive(Debug)]
struct Doc {
    parts: Vec<(u32, u32)>,
    body: usize,
    score: f64,
}

impl Documents {
    fn new(lists: &[Vec<Hit>], identities: &[Option<By>], weights: &[f64], k: u32) -> Self {
        let total: usize = lists.iter().map(Vec::len).sum();
        let mut seen: HashMap<Document, u32> = HashMap::with_capacity(total);
        let mut docs: Vec<Doc> = Vec::with_capacity(total);
        let mut of = Vec::with_capacity(lists.len());
        for (list, (hits, by)) in lists.iter().zip(identities).enumerate() {
            let list = small(list);
            let mut mine = Vec::with_capacity(hits.len());
            for (position, hit) in hits.iter().enumerate() {
                let rank = small(position + 1);
                let document =
                    (by.as_ref()).and_then(|by| by.document(&hit.id, &hit.content, &hit.metadata));
                let at = match document.map(|document| seen.entry(document)) {
                    Some(Entry::Occupied(found)) => {
                        let at = *found.get();
                        let parts = &mut docs[at as usize].parts;
                        // Lists come in roster order and ranks best first: a store already
                        // among the parts is the last of them, at its best rank, and its own
                        // duplicate adds nothing.
                        if parts.last().is_none_or(|&(last, _)| last != list) {
                            parts.push((list, rank));
                        }
                        at
                    }
                    vacant => {
                        let at = small(docs.len());
                        if let Some(Entry::Vacant(slot)) = vacant {
                            slot.insert(at);
                        }
                        docs.push(Doc {
                            parts: vec![(list, rank)],
                            body: 0,
                            score: 0.0,
                        });
                        at
                    }
                };
                mine.push(at);
            }
            of.push(mine);
        }
        for doc in &mut docs {
            let contribution =
                |&(list, rank): &(u32, u32)| rrf_score(weights[list as usize], k, rank as usize);
            // Summed in roster order, so equal documents sum to equal bits.
            doc.score = doc.parts.iter().map(contribution).sum();
            // The largest contribution is the body; a tie goes to the store earlier in roster
            // order (the first of the parts).
            let mut best = contribution(&doc.parts[0]);
            for (i, part) in doc.parts.iter().enumerate().skip(1) {
                let score = contribution(part);
                if score.total_cmp(&best) == Ordering::Greater {
                    (doc.body, best) = (i, score);
                }
            }
        }
        Self { of, docs }
    }

    /// One key per document, for the one order every fusion sorts by.
    fn keys(&self) -> Vec<Key> {
        (self.docs.iter())
            .map(|doc| {
                let (list, rank) = doc.parts[doc.body];
                Key {
                    score: doc.score,
                    list,
                    rank,
                }
            })
            .collect()
    }

    /// The document of list `list`'s hit at `rank` (which exists).
    fn doc(&self, list: usize, rank: usize) -> &Doc {
        &self.docs[self.of[list][rank - 1] as usize]
    }

    /// The place of the document that list `list`'s hit at `rank` (which exists) is part of.
    fn place(&self, list: usize, rank: usize) -> Place {
        let doc = self.doc(list, rank);
        let (list, rank) = doc.parts[doc.body];
        Place {
            list: list as usize,
            rank: rank as usize,
            score: doc.score,
        }
    }

    /// The parts of the document whose body is at `place`, but the body.
    fn others(&self, place: Place) -> impl Iterator<Item = (usize, usize)> + '_ {
        let doc = self.doc(place.list, place.rank);
        (doc.parts.iter().enumerate())
            .filter(move |(i, _)| *i != doc.body)
            .map(|(_, &(list, rank))| (list as usize, rank as usize))
    }
}

/// Moves the row at `place` out of `lists`: the hit (with identity on, its document's body) and
/// its document's other parts.
fn take(
    (lists, weights, k): (&mut [Vec<Hit>], &[f64], u32),
    documents: Option<&Documents>,
    place: Place,
) -> Fused {
    let also = match documents {
        None => Vec::new(),
        Some(documents) => (documents.others(place))
            .map(|(list, rank)| Also {
                list,
                rank,
                score: rrf_score(weights[list], k, rank),
                // Each hit is part of one document, so its id is moved out once.
                id: std::mem::take(&mut lists[list][rank - 1].id),
            })
            .collect(),
    };
    Fused {
        list: place.list,
        rank: place.rank,
        score: place.score,
        hit: std::mem::replace(&mut lists[place.list][place.rank - 1], Hit::taken()),
        also,
    }
}

/// Fuses the lists with weighted RRF and keeps the best `n`.
///
/// Order: score descending; ties go to the list earlier in the input, then to the lower rank. The
/// key is total (no two rows share a list and a rank), so the result never depends on the sort's
/// stability or on float quirks (scores compare with `total_cmp`). With identity on, a row is a
/// document and `n` counts documents.
pub fn fuse(lists: Vec<RankedList>, k: u32, n: usize) -> Vec<Fused> {
    let Keyed {
        weights,
        mut lists,
        mut keys,
        documents,
    } = keyed(lists, k);
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
            let place = Place {
                list: key.list as usize,
                rank: key.rank as usize,
                score: key.score,
            };
            take((&mut lists, &weights, k), documents.as_ref(), place)
        })
        .collect()
}

/// A row's place in the fused order: its list, its rank there, its score. With identity on, the
/// place of a document's body, and the document's score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Place {
    /// Index of the hit's list in the input.
    pub list: usize,
    /// 1-based rank within its list, after the floor.
    pub rank: usize,
    /// `weight / (k + rank)` (with identity on, summed over the document's stores).
    pub score: f64,
}

/// The fused order of every row, sorted only as far as it is read.
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
    /// With identity on, which hits are one document.
    documents: Option<Documents>,
}

impl Order {
    /// Floors the lists and scores every hit (with identity on, every document).
    pub fn new(lists: Vec<RankedList>, k: u32) -> Self {
        let Keyed {
            weights,
            lists,
            keys,
            documents,
        } = keyed(lists, k);
        Self {
            lists,
            weights,
            k,
            keys,
            sorted: 0,
            documents,
        }
    }

    /// The place of list `list`'s hit at `rank`, if there is one; with identity on, the place of
    /// the document it is part of.
    pub fn place(&self, list: usize, rank: usize) -> Option<Place> {
        (rank >= 1 && rank <= self.lists.get(list)?.len()).then(|| match &self.documents {
            None => Place {
                list,
                rank,
                score: rrf_score(self.weights[list], self.k, rank),
            },
            Some(documents) => documents.place(list, rank),
        })
    }

    /// How many lists there are.
    pub fn lists(&self) -> usize {
        self.lists.len()
    }

    /// How many rows there are in all: hits, or with identity on, documents.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The place of the `i`-th best row (0-based), sorting further if the walk has got that far.
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

    /// The rows at `places`, moved out in that order.
    pub fn take(mut self, places: &[Place]) -> Vec<Fused> {
        let documents = self.documents.take();
        places
            .iter()
            .map(|&place| {
                take(
                    (&mut self.lists, &self.weights, self.k),
                    documents.as_ref(),
                    place,
                )
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
    use crate::identity::KeyPath;
    use proptest::prelude::*;

    /// `hits` kept as a protocol keeps an answer's: the next hit is built only while one is
    /// wanted.
    fn take(keep: Keep, hits: impl IntoIterator<Item = Hit>) -> Vec<Hit> {
        let mut kept = keep.kept(5);
        let mut hits = hits.into_iter();
        while kept.wants() {
            let Some(hit) = hits.next() else { break };
            kept.push(hit);
        }
        kept.into_hits()
    }

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
        RankedList::new(
            weight,
            floor,
            hits.iter().map(|(id, rel)| hit(id, *rel)).collect(),
        )
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

    /// `list` with identity on, told apart by `by`.
    fn told(by: By, mut list: RankedList) -> RankedList {
        list.identity = Some(by);
        list
    }

    fn by_id(list: RankedList) -> RankedList {
        told(By::Key(KeyPath::Id), list)
    }

    /// Fuses lists of weight 1 with identity on and renders each row as `list:id@rank` and its
    /// other parts as ` +list:id@rank`, with its score.
    fn merged(lists: Vec<RankedList>, n: usize) -> Vec<(String, f64)> {
        fuse(lists, 60, n)
            .iter()
            .map(|f| {
                let mut row = format!("{}:{}@{}", f.list, f.hit.id, f.rank);
                for also in &f.also {
                    row.push_str(&format!(" +{}:{}@{}", also.list, also.id, also.rank));
                    assert_eq!(also.score, 1.0 / (60.0 + also.rank as f64));
                }
                (row, f.score)
            })
            .collect()
    }

    fn rows(expected: &[(&str, f64)]) -> Vec<(String, f64)> {
        (expected.iter())
            .map(|(row, score)| ((*row).to_owned(), *score))
            .collect()
    }

    #[test]
    fn a_document_scores_the_sum_of_its_stores_contributions() {
        // x: a#1 + b#2; z: b#1 alone beats y: a#2 alone.
        assert_eq!(
            merged(
                vec![
                    by_id(list(1.0, 0.0, &[("x", 0.9), ("y", 0.8)])),
                    by_id(list(1.0, 0.0, &[("z", 0.9), ("x", 0.8)])),
                ],
                10
            ),
            rows(&[
                ("0:x@1 +1:x@2", 1.0 / 61.0 + 1.0 / 62.0),
                ("1:z@1", 1.0 / 61.0),
                ("0:y@2", 1.0 / 62.0),
            ])
        );
    }

    #[test]
    fn the_body_is_the_largest_contribution_and_a_tie_goes_to_roster_order() {
        // q: a#2 gives 1/62, b#1 gives 3/61: b's hit is the body, a's is `also`.
        let fused = fuse(
            vec![
                by_id(list(1.0, 0.0, &[("p", 0.9), ("q", 0.8)])),
                by_id(list(3.0, 0.0, &[("q", 0.9)])),
            ],
            60,
            10,
        );
        let rendered: Vec<(usize, &str, usize, f64)> = (fused.iter())
            .map(|f| (f.list, f.hit.id.as_str(), f.rank, f.score))
            .collect();
        assert_eq!(
            rendered,
            [
                (1, "q", 1, 1.0 / 62.0 + 3.0 / 61.0),
                (0, "p", 1, 1.0 / 61.0)
            ]
        );
        assert_eq!(
            fused[0].also,
            [Also {
                list: 0,
                rank: 2,
                score: 1.0 / 62.0,
                id: "q".into()
            }]
        );
        // Equal contributions: the store earlier in roster order is the body.
        assert_eq!(
            merged(
                vec![
                    by_id(list(1.0, 0.0, &[("d", 0.1)])),
                    by_id(list(1.0, 0.0, &[("d", 0.9)])),
                ],
                10
            ),
            rows(&[("0:d@1 +1:d@1", 2.0 / 61.0)])
        );
    }

    #[test]
    fn documents_with_equal_sums_go_by_their_bodys_roster_order_then_rank() {
        // m: a#1 + b#2, n: b#1 + a#2: equal sums. m's body is a's, n's is b's: m first.
        assert_eq!(
            merged(
                vec![
                    by_id(list(1.0, 0.0, &[("m", 0.9), ("n", 0.8)])),
                    by_id(list(1.0, 0.0, &[("n", 0.9), ("m", 0.8)])),
                ],
                10
            ),
            rows(&[
                ("0:m@1 +1:m@2", 1.0 / 61.0 + 1.0 / 62.0),
                ("1:n@1 +0:n@2", 1.0 / 62.0 + 1.0 / 61.0),
            ])
        );
        // The same in the other roster order: the tie goes the other way.
        assert_eq!(
            merged(
                vec![
                    by_id(list(1.0, 0.0, &[("n", 0.9), ("m", 0.8)])),
                    by_id(list(1.0, 0.0, &[("m", 0.9), ("n", 0.8)])),
                ],
                10
            )[0]
            .0,
            "0:n@1 +1:n@2"
        );
        // A heavier store between them leads alone (2/61), and the tie still goes by the bodies'
        // stores. (Equal sums with bodies in one store go to the lower rank: the comparator is
        // the plain order's, whose tests hold it.)
        assert_eq!(
            merged(
                vec![
                    by_id(list(1.0, 0.0, &[("s", 0.9), ("t", 0.8)])),
                    by_id(list(2.0, 0.0, &[("u", 0.9)])),
                    by_id(list(1.0, 0.0, &[("t", 0.9), ("s", 0.8)])),
                ],
                10
            ),
            rows(&[
                ("1:u@1", 2.0 / 61.0),
                ("0:s@1 +2:s@2", 1.0 / 61.0 + 1.0 / 62.0),
                ("2:t@1 +0:t@2", 1.0 / 62.0 + 1.0 / 61.0),
            ])
        );
    }

    #[test]
    fn a_stores_own_duplicate_keeps_its_best_rank_and_is_no_row() {
        // a returns d twice: its #1 counts, its #3 adds nothing and is not a row of its own;
        // e keeps its rank 2.
        assert_eq!(
            merged(
                vec![
                    by_id(list(1.0, 0.0, &[("d", 0.9), ("e", 0.8), ("d", 0.7)])),
                    by_id(list(1.0, 0.0, &[("d", 0.9)])),
                ],
                10
            ),
            rows(&[("0:d@1 +1:d@1", 2.0 / 61.0), ("0:e@2", 1.0 / 62.0)])
        );
        // Its duplicate ranked better in the other store changes nothing of that.
        assert_eq!(
            merged(
                vec![
                    by_id(list(1.0, 0.0, &[("e", 0.9), ("d", 0.8), ("d", 0.7)])),
                    by_id(list(1.0, 0.0, &[("d", 0.9)])),
                ],
                10
            ),
            rows(&[
                ("1:d@1 +0:d@2", 1.0 / 62.0 + 1.0 / 61.0),
                ("0:e@1", 1.0 / 61.0)
            ])
        );
    }

    #[test]
    fn a_hit_without_an_identity_key_is_its_own_and_each_store_has_its_own_key() {
        let with_path = |id: &str, path: Option<&str>| Hit {
            metadata: match path {
                Some(path) => {
                    Metadata::from_map(serde_json::json!({ "path": path }).as_object().unwrap())
                }
                None => Metadata::default(),
            },
            ..hit(id, 0.5)
        };
        let path = By::Key(KeyPath::Metadata("path".into()));
        // a is keyed by metadata.path, b by its ids: a's "n1" (path "notes/x") is b's "notes/x";
        // a's "n2" has no path, so it is not b's "n2".
        let a = RankedList::new(
            1.0,
            0.0,
            vec![with_path("n1", Some("notes/x")), with_path("n2", None)],
        );
        let b = list(1.0, 0.0, &[("n2", 0.9), ("notes/x", 0.8)]);
        assert_eq!(
            merged(vec![told(path, a), by_id(b)], 10),
            rows(&[
                ("0:n1@1 +1:notes/x@2", 1.0 / 61.0 + 1.0 / 62.0),
                ("1:n2@1", 1.0 / 61.0),
                ("0:n2@2", 1.0 / 62.0),
            ])
        );
    }

    #[test]
    fn floors_apply_per_store_before_identity_and_n_counts_documents() {
        // a's x is under its floor: a's rank 1 is y, and x is b's alone.
        assert_eq!(
            merged(
                vec![
                    by_id(list(1.0, 0.5, &[("x", 0.4), ("y", 0.9)])),
                    by_id(list(1.0, 0.0, &[("x", 0.1), ("y", 0.1)])),
                ],
                10
            ),
            rows(&[
                ("0:y@1 +1:y@2", 1.0 / 61.0 + 1.0 / 62.0),
                ("1:x@1", 1.0 / 61.0)
            ])
        );
        // Three stores of the same two documents: six hits, two documents, and n = 1 keeps one
        // document, with all three of its stores.
        let three = || {
            (0..3)
                .map(|_| by_id(list(1.0, 0.0, &[("u", 0.9), ("v", 0.8)])))
                .collect::<Vec<_>>()
        };
        assert_eq!(merged(three(), 10).len(), 2);
        assert_eq!(
            merged(three(), 1),
            rows(&[("0:u@1 +1:u@1 +2:u@1", 1.0 / 61.0 + 1.0 / 61.0 + 1.0 / 61.0)])
        );
        let mut order = Order::new(three(), 60);
        assert_eq!(order.len(), 2);
        // Any hit of a document is at the document's place.
        assert_eq!(order.place(2, 2), order.at(1));
    }

    #[test]
    fn content_identity_merges_forms_of_one_text_and_never_different_texts() {
        let texts = |texts: &[&str]| {
            let hits = (texts.iter().enumerate())
                .map(|(i, text)| Hit {
                    content: (*text).to_owned(),
                    ..hit(&format!("h{i}"), 0.5)
                })
                .collect();
            told(By::Content, RankedList::new(1.0, 0.0, hits))
        };
        assert_eq!(
            merged(
                vec![
                    texts(&["The Straße café", "a different note"]),
                    texts(&["the  STRASSE\ncafe\u{301}", "a different note!"]),
                ],
                10
            ),
            rows(&[
                ("0:h0@1 +1:h0@1", 2.0 / 61.0),
                ("0:h1@2", 1.0 / 62.0),
                ("1:h1@2", 1.0 / 62.0),
            ])
        );
    }

    #[test]
    fn keep_builds_no_hit_past_the_ones_it_needs() {
        let built = std::cell::Cell::new(0);
        let hits = [0.9, 0.1, 0.8, 0.7, 0.6].iter().map(|rel| {
            built.set(built.get() + 1);
            hit("h", *rel)
        });
        // Two past a floor of 0.5: 0.9 and 0.8, with 0.1 (below it) kept for the floor to drop.
        let keep = Keep {
            hits: 2,
            floor: 0.5,
        };
        let relevance: Vec<f64> = take(keep, hits).iter().map(|h| h.base_relevance).collect();
        assert_eq!(relevance, [0.9, 0.1, 0.8]);
        assert_eq!(built.get(), 3, "the fourth hit is never built");
        let none = Keep {
            hits: 0,
            floor: 0.0,
        };
        assert!(!none.kept(5).wants());
        assert!(take(none, [hit("h", 1.0)]).is_empty());
        assert_eq!(
            take(Keep::ALL, vec![hit("a", 0.0), hit("b", -1.0)]).len(),
            2
        );
    }

    fn arb_lists() -> impl Strategy<Value = Vec<RankedList>> {
        let hits = prop::collection::vec(0.0001f64..1.0, 0..12);
        let one = (0.1f64..5.0, hits).prop_map(|(weight, rels)| {
            RankedList::new(
                weight,
                0.0,
                rels.iter()
                    .enumerate()
                    .map(|(i, rel)| hit(&format!("h{i}"), *rel))
                    .collect(),
            )
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
                    hits: take(Keep { hits: n, floor: list.floor }, list.hits.clone()),
                    ..list.clone()
                })
                .collect();
            let key = |f: &Fused| (f.list, f.rank, f.score.to_bits(), f.hit.id.clone());
            let all: Vec<_> = fuse(lists, 60, n).iter().map(key).collect();
            let some: Vec<_> = fuse(kept, 60, n).iter().map(key).collect();
            prop_assert_eq!(all, some);
        }

        /// Identity on, with no document in two stores, is the answer without it (and every
        /// row's `also` is empty).
        #[test]
        fn identity_with_nothing_shared_is_the_answer_without_it(
            lists in arb_lists(),
            n in 0usize..80,
        ) {
            let key = |f: &Fused| (f.list, f.rank, f.score.to_bits(), f.hit.id.clone(), f.also.len());
            let plain: Vec<_> = fuse(lists.clone(), 60, n).iter().map(key).collect();
            let unique = (lists.into_iter().enumerate())
                .map(|(i, mut list)| {
                    for hit in &mut list.hits {
                        hit.id = format!("{i}-{}", hit.id);
                    }
                    by_id(list)
                })
                .collect();
            let on: Vec<_> = fuse(unique, 60, n)
                .iter()
                .map(key)
                .map(|(list, rank, score, id, also)| {
                    (list, rank, score, id.split_once('-').unwrap().1.to_owned(), also)
                })
                .collect();
            prop_assert_eq!(plain, on);
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
