//! The authority lead [5.3]: when one store is sure of its top hit, that hit leads the packet.
//!
//! This is the one place the packet reads a magnitude (a store's `base_relevance`), which is why
//! it is off unless `authority_margin > 0`. It never overrides a deliberate weight gap: the
//! confident hit moves to the front only when its fused score is not strictly below the leader's.

use crate::fusion::{Hit, Order, Place};

/// A top relevance at or above this is an exact match (SerenLoci's exact key is 1.0), confident on
/// its own.
pub const EXACT: f64 = 0.999;

/// How far a store's top hit stands above its runner-up, counted on its floored list: an exact
/// top is confident by its own value; a lone hit below exact, or no hit, abstains.
pub fn margin(floored: &[Hit]) -> Option<f64> {
    let top = floored.first()?.base_relevance;
    if top >= EXACT {
        return Some(top);
    }
    floored.get(1).map(|second| top - second.base_relevance)
}

/// The hit that leads instead of the fused order's first: the most confident store's rank-1 hit,
/// when some store's margin reaches `threshold` (ties go to the store earlier in roster order),
/// it is not already first, and leading does not go against the weights (`score >= leader -
/// 1e-9`). Everything else keeps its order.
pub fn lead(order: &mut Order, threshold: f64) -> Option<Lead> {
    let mut best: Option<(usize, f64)> = None;
    for list in 0..order.lists() {
        if let Some(margin) = margin(order.list(list))
            && margin >= threshold
            && best.is_none_or(|(_, top)| margin > top)
        {
            best = Some((list, margin));
        }
    }
    let (list, margin) = best?;
    let candidate = order.place(list, 1)?;
    let leader = order.at(0)?;
    (candidate != leader && candidate.score >= leader.score - 1e-9).then_some(Lead {
        place: candidate,
        margin,
        over: leader,
    })
}

/// A lead, and why: the margin it won by, and the fused order's first row it went ahead of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lead {
    pub place: Place,
    pub margin: f64,
    pub over: Place,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fusion::RankedList;
    use crate::packet::{Cut, rank};

    fn list(weight: f64, relevances: &[f64]) -> RankedList {
        RankedList {
            weight,
            floor: 0.0,
            identity: None,
            hits: relevances
                .iter()
                .enumerate()
                .map(|(i, r)| Hit::plain(&format!("{i}"), *r))
                .collect(),
        }
    }

    /// The fused order as `list:rank` labels, a = list 0, b = list 1, ...
    fn order(lists: Vec<RankedList>, threshold: f64) -> Vec<String> {
        let cut = Cut {
            k: 60,
            rows: None,
            budget: None,
            authority_margin: threshold,
            min_per_store: 0,
        };
        rank(lists, &cut)
            .iter()
            .map(|f| format!("{}{}", (b'a' + f.list as u8) as char, f.rank))
            .collect()
    }

    // 5.3.0 test_fusion.py: test_store_margin_regimes
    #[test]
    fn store_margin_regimes() {
        let cases: &[(&[f64], Option<f64>)] = &[
            (&[0.9, 0.5], Some(0.9 - 0.5)),
            (&[1.0], Some(1.0)),
            (&[0.8], None),
            (&[], None),
            (&[1.0, 0.99], Some(1.0)),
        ];
        for (relevances, expected) in cases {
            let got = margin(&list(1.0, relevances).hits);
            match (got, expected) {
                (Some(g), Some(e)) => assert!((g - e).abs() < 1e-12, "{relevances:?}: {g}"),
                (g, e) => assert_eq!(g, *e, "{relevances:?}"),
            }
        }
        // Counted after the floor: the floored runner-up is no runner-up.
        let floored = crate::fusion::apply_floor(list(1.0, &[0.9, 0.2]).hits, 0.5);
        assert_eq!(margin(&floored), None);
    }

    // test_most_confident_store_picks_widest_margin
    #[test]
    fn the_widest_margin_at_or_above_the_threshold_wins() {
        let margins = [Some(0.1), Some(0.3), Some(0.3), None];
        let lists = vec![
            list(1.0, &[0.6, 0.5]),
            list(1.0, &[0.6, 0.3]),
            list(1.0, &[0.5, 0.2]),
            list(1.0, &[]),
        ];
        assert_eq!(
            lists
                .iter()
                .map(|l| margin(&l.hits).map(|m| (m * 10.0).round() / 10.0))
                .collect::<Vec<_>>(),
            margins
        );
        // b and c tie at 0.3: the earlier store wins.
        assert_eq!(order(lists.clone(), 0.035)[0], "b1");
        // None clears 0.5: plain order.
        assert_eq!(order(lists, 0.5)[0], "a1");
    }

    #[test]
    fn ported_authority_cases() {
        struct Case {
            name: &'static str,
            lists: Vec<RankedList>,
            threshold: f64,
            expected: &'static [&'static str],
        }
        let cases = [
            // test_authority_disabled_is_plain_rrf
            Case {
                name: "margin 0 is plain RRF",
                lists: vec![list(1.0, &[0.5, 0.49]), list(1.0, &[1.0, 0.1])],
                threshold: 0.0,
                expected: &["a1", "b1", "a2", "b2"],
            },
            // test_authority_promotes_buried_confident_top
            Case {
                name: "a buried confident top leads, the other top next",
                lists: vec![list(1.0, &[0.50, 0.49, 0.48]), list(1.0, &[0.95, 0.40])],
                threshold: 0.035,
                expected: &["b1", "a1", "a2", "b2", "a3"],
            },
            // test_lone_exact_key_hit_leads
            Case {
                name: "a lone exact key leads a memory list",
                lists: vec![list(1.0, &[0.6, 0.59, 0.58]), list(1.0, &[1.0])],
                threshold: 0.035,
                expected: &["b1", "a1", "a2", "a3"],
            },
            // test_lone_weak_hit_does_not_lead
            Case {
                name: "a lone weak hit abstains",
                lists: vec![list(1.0, &[0.6, 0.59]), list(1.0, &[0.45])],
                threshold: 0.035,
                expected: &["a1", "b1", "a2"],
            },
            // test_exact_key_outranks_merely_confident_store
            Case {
                name: "an exact key beats a wide gap",
                lists: vec![list(1.0, &[0.9, 0.2]), list(1.0, &[1.0, 0.9])],
                threshold: 0.035,
                expected: &["b1", "a1", "a2", "b2"],
            },
            // test_authority_defers_to_weight_gap
            Case {
                name: "a deliberate weight gap keeps the lead",
                lists: vec![list(2.0, &[0.5, 0.49]), list(1.0, &[1.0, 0.2])],
                threshold: 0.035,
                expected: &["a1", "a2", "b1", "b2"],
            },
        ];
        for case in cases {
            assert_eq!(
                order(case.lists, case.threshold),
                case.expected,
                "{}",
                case.name
            );
        }
    }
}
