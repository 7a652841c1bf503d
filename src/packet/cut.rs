//! How one round's fused list is cut ([`Cut`]): the RRF constant, the row cap, the token page, the
//! authority margin and the seats, taken from the shaping and the search. Cuts nothing itself:
//! `rank` and `page` do.

use crate::config::Shaping;

/// How one round's fused list is cut.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cut {
    /// The RRF constant.
    pub k: u32,
    /// The row cap: `n` without a page; on a page, only a caller's explicit `n_results`.
    pub rows: Option<usize>,
    /// The token page, if any.
    pub budget: Option<usize>,
    /// See [`Shaping::authority_margin`].
    pub authority_margin: f64,
    /// See [`Shaping::min_per_store`].
    pub min_per_store: usize,
}

impl Cut {
    /// The cut for a search asking `n_results` (or the default `n`) under `budget`.
    pub fn new(shaping: &Shaping, k: u32, n: usize, explicit: bool, budget: Option<usize>) -> Self {
        Self {
            k,
            // 5.3.0: on a page the config's default n_results does not cap; a caller's does.
            rows: match budget {
                None => Some(n),
                Some(_) => explicit.then_some(n),
            },
            budget,
            authority_margin: shaping.authority_margin,
            min_per_store: shaping.min_per_store,
        }
    }

    /// No page, seats or lead: the best `rows` of the fused order, and nothing past them read.
    pub fn is_plain(&self) -> bool {
        self.budget.is_none() && self.min_per_store == 0 && self.authority_margin <= 0.0
    }
}
