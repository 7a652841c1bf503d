//! One round's answers: who answered (their ranked lists, in roster order) and who gave nothing
//! and why, and those lists fused and cut into the packet's rows.

use super::fan::{Hop, Unanswered};
use crate::api::NameReason;
use crate::fusion::RankedList;
use crate::packet::{self, Cut, Row};
use crate::store;

/// One round's answers: who answered (their lists, in roster order) and who gave nothing.
pub(super) struct Round {
    pub(super) answered: Vec<String>,
    lists: Vec<RankedList>,
    pub(super) failed: Vec<NameReason>,
}

impl Round {
    pub(super) fn collect(
        round: &Hop<'_>,
        results: Vec<Result<Vec<store::Hit>, Unanswered>>,
    ) -> Self {
        let fan = round.fan;
        let mut collected = Round {
            answered: Vec::new(),
            lists: Vec::new(),
            failed: Vec::new(),
        };
        for (bound, result) in fan.bound.iter().zip(results) {
            match result {
                Ok(hits) => {
                    let (weight, floor) = round.knobs.weight_and_floor(bound);
                    collected.answered.push(bound.name.clone());
                    collected.lists.push(RankedList {
                        weight,
                        floor,
                        hits,
                        identity: round.identity.by(bound.entry.identity_key.as_ref()),
                    });
                }
                Err(why) => {
                    // Per search at debug only: the first failure of a run, and the breaker's
                    // openings, are logged at warn by `health`, so a dead store does not write
                    // a line per search.
                    tracing::debug!(store = %bound.name, reason = %why.public(), "store gave nothing");
                    collected.failed.push(NameReason {
                        name: bound.name.clone(),
                        reason: why.to_string(),
                    });
                }
            }
        }
        collected
    }

    /// The round's lists fused and cut into rows (the lists are used up).
    pub(super) fn rank(&mut self, cut: &Cut) -> Vec<Row> {
        let names = &self.answered;
        packet::rank(std::mem::take(&mut self.lists), cut)
            .into_iter()
            .map(|fused| Row::fused(fused, names))
            .collect()
    }

    /// [`Round::rank`], and what each step of the cut did (for `explain`), naming at most
    /// `max_dropped` of the rows it left out.
    pub(super) fn rank_traced(
        &mut self,
        cut: &Cut,
        max_dropped: usize,
    ) -> (Vec<Row>, packet::Trace) {
        let names = &self.answered;
        let (fused, trace) = packet::rank_traced(std::mem::take(&mut self.lists), cut, max_dropped);
        let rows = (fused.into_iter())
            .map(|fused| Row::fused(fused, names))
            .collect();
        (rows, trace)
    }
}
