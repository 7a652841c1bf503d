//! One row of the packet ([`Row`]): a hit, the store it came from, its rank and score there, and
//! with identity on the other stores that returned the same document ([`Also`]); and the ids a
//! packet already holds ([`Seen`]), which no hop or edge repeats.

use crate::fusion::Fused;

/// The ids already in a packet: a hop or an edge never repeats one.
pub type Seen = std::collections::HashSet<String>;

/// One row of the packet: a hit, the store it came from, and its rank and score there (0.0 for
/// an edge; with identity on, the sum over its document's stores).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub store: String,
    /// 1-based: within its store's floored list, or among its kind of edge.
    pub rank: usize,
    pub score: f64,
    pub hit: crate::fusion::Hit,
    /// With identity on, the other stores' hits of the same document, in roster order (always
    /// empty for an edge, and without identity).
    pub also: Vec<Also>,
}

/// Another store's hit of a row's document (identity on).
#[derive(Debug, Clone, PartialEq)]
pub struct Also {
    pub store: String,
    pub id: String,
    /// Its rank in that store's floored list.
    pub rank: usize,
    /// Its contribution to the row's score, `weight / (k + rank)`.
    pub score: f64,
}

impl Row {
    /// One fused hit of a round, whose lists are the stores `names`, by index.
    pub fn fused(fused: Fused, names: &[String]) -> Self {
        let name = |list: usize| names.get(list).cloned().unwrap_or_default();
        Self {
            store: name(fused.list),
            rank: fused.rank,
            score: fused.score,
            hit: fused.hit,
            also: (fused.also.into_iter())
                .map(|also| Also {
                    store: name(also.list),
                    id: also.id,
                    rank: also.rank,
                    score: also.score,
                })
                .collect(),
        }
    }
}
