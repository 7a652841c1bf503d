//! One row of the packet ([`Row`]): a hit, the store it came from, its rank and score there; and
//! the ids a packet already holds ([`Seen`]), which no hop or edge repeats.

use crate::fusion::Fused;

/// The ids already in a packet: a hop or an edge never repeats one.
pub type Seen = std::collections::HashSet<String>;

/// One row of the packet: a hit, the store it came from, and its rank and score there (0.0 for
/// an edge).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub store: String,
    /// 1-based: within its store's floored list, or among its kind of edge.
    pub rank: usize,
    pub score: f64,
    pub hit: crate::fusion::Hit,
}

impl Row {
    /// One fused hit of a round, from the store named `store`.
    pub fn fused(store: &str, fused: Fused) -> Self {
        Self {
            store: store.to_owned(),
            rank: fused.rank,
            score: fused.score,
            hit: fused.hit,
        }
    }
}
