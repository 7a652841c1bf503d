//! The packet a model reads: the fused list shaped into a page [5.3].
//!
//! After fusion, 5.3.0 shapes what a model gets: the most confident store's top hit may lead
//! ([`authority`]), every answering store may be given seats ([`page`], the quota), the list may
//! be packed into a token budget ([`page`]), and edges may follow: a memory's own satellite
//! episodes and the memory it superseded, and memories sharing its topics ([`edges`]), after any
//! hits found by hopping on from the first answer ([`hops`]).
//!
//! Everything here is pure (no IO, no async): the federation calls stores and hands the answers
//! in. With the defaults ([`Shaping::default`]) the packet is the seed's plain RRF cut to
//! `n_results`, and [`rank`] takes fusion's fast path.

pub mod authority;
mod cut;
pub mod edges;
pub mod hops;
pub mod page;
mod row;

pub use cut::Cut;
pub use row::{Also, Row, Seen};

use crate::fusion::{self, Fused, Order, Place, RankedList};

pub use crate::config::Shaping;

impl Shaping {
    /// 5.3.0's defaults, for users who want its answers (docs/packet.md's copy-paste block, which a
    /// test holds to this).
    pub fn python_5_3() -> Self {
        Self {
            authority_margin: 0.035,
            min_per_store: 1,
            satellite_edges: true,
            topic_edges: true,
            ..Self::default()
        }
    }

    /// Whether satellite edges are on and may add any.
    pub fn satellites_on(&self) -> bool {
        self.satellite_edges && self.satellite_budget > 0
    }

    /// Whether topic edges are on and may add any.
    pub fn topics_on(&self) -> bool {
        self.topic_edges && self.edge_budget > 0
    }

    /// Whether later rounds may add hits.
    pub fn hops_on(&self) -> bool {
        self.hops > 1 && self.hop_budget > 0
    }

    /// What is on, in words, for `check` and the log: `["plain RRF"]` with the defaults.
    pub fn describe(&self) -> Vec<String> {
        let mut on = Vec::new();
        if self.authority_margin > 0.0 {
            on.push(format!("authority lead (margin {})", self.authority_margin));
        }
        if self.min_per_store > 0 {
            on.push(format!("{} seat(s) per store", self.min_per_store));
        }
        if let Some(budget) = self.budget_tokens {
            on.push(format!("token page of {budget}"));
        }
        if self.satellites_on() {
            on.push(format!("satellite edges (up to {})", self.satellite_budget));
        }
        if self.topics_on() {
            on.push(format!("topic edges (up to {})", self.edge_budget));
        }
        if self.hops_on() {
            on.push(format!(
                "{} hops ({} terms, up to {} hits)",
                self.hops, self.hop_terms, self.hop_budget
            ));
        }
        if on.is_empty() {
            on.push("plain RRF".to_owned());
        }
        on
    }
}

/// How many hits each store is asked for: `max(n * fetch_multiplier, n)`, and on a page at least
/// one hit per 16 tokens of it [5.3].
pub fn ask(n: usize, fetch_multiplier: usize, budget: Option<usize>) -> usize {
    let ask = n.saturating_mul(fetch_multiplier).max(n);
    match budget {
        Some(budget) => ask.max(budget.div_ceil(page::TOKENS_PER_CANDIDATE)),
        None => ask,
    }
}

/// Fuses the lists and cuts them into one round's ranked packet, in fused order: plain RRF cut
/// to the row cap, or, when any shaping is on, the authority lead first, then the quota and the
/// page.
pub fn rank(lists: Vec<RankedList>, cut: &Cut) -> Vec<Fused> {
    if cut.is_plain() {
        return fusion::fuse(lists, cut.k, cut.rows.unwrap_or(usize::MAX));
    }
    let mut order = Order::new(lists, cut.k);
    let lead = lead(&mut order, cut).map(|lead| lead.place);
    let chosen = page::choose(&mut order, lead, cut);
    order.take(&chosen)
}

/// The authority lead, when the cut asks for one and one store's top hit earns it.
fn lead(order: &mut Order, cut: &Cut) -> Option<authority::Lead> {
    (cut.authority_margin > 0.0)
        .then(|| authority::lead(order, cut.authority_margin))
        .flatten()
}

/// What one round's cut did, for `explain`: the lead and why, the rows only a seat kept, and
/// the best rows left out, with why. Lists are named by their index in the input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    pub lead: Option<authority::Lead>,
    /// The (list, rank) of each row a seat kept that the fused order alone would have left out.
    pub seated: Vec<(usize, usize)>,
    /// At most `max_dropped` of the rows the cut left out, best first: place, id, why.
    pub dropped: Vec<(Place, String, page::Cutoff)>,
}

/// [`rank`], and what each step of it did ([`Trace`]). Always the shaped walk (which the tests
/// hold equal to plain RRF's fast path when nothing is on): the rows left out must be read.
pub fn rank_traced(lists: Vec<RankedList>, cut: &Cut, max_dropped: usize) -> (Vec<Fused>, Trace) {
    let mut order = Order::new(lists, cut.k);
    let lead = lead(&mut order, cut);
    let at = lead.map(|lead| lead.place);
    let (chosen, seated) = page::choose_seated(&mut order, at, cut);
    let mut kept_by_seat = Vec::new();
    if !seated.is_empty() {
        let alone = page::choose(
            &mut order,
            at,
            &Cut {
                min_per_store: 0,
                ..*cut
            },
        );
        kept_by_seat = (chosen.iter())
            .filter(|p| seated.contains(&(p.list, p.rank)) && !alone.contains(p))
            .map(|p| (p.list, p.rank))
            .collect();
    }
    let dropped = page::dropped(&mut order, at, cut, (&chosen, &seated), max_dropped)
        .into_iter()
        .map(|(place, why)| (place, order.hit(place).id.clone(), why))
        .collect();
    let trace = Trace {
        lead,
        seated: kept_by_seat,
        dropped,
    };
    (order.take(&chosen), trace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fusion::Hit;
    use page::packet_cost;
    use proptest::prelude::*;

    fn lists_strategy() -> impl Strategy<Value = Vec<RankedList>> {
        let hit = (0usize..240, 0.0f64..=1.0);
        let list = (
            prop::sample::select(vec![0.5, 1.0, 2.0]),
            prop::collection::vec(hit, 0..48),
        );
        prop::collection::vec(list, 1..5).prop_map(|lists| {
            lists
                .into_iter()
                .enumerate()
                .map(|(store, (weight, hits))| RankedList {
                    weight,
                    floor: 0.0,
                    identity: None,
                    hits: hits
                        .into_iter()
                        .enumerate()
                        .map(|(rank, (chars, relevance))| Hit {
                            content: "c".repeat(chars),
                            native_score: Some(relevance),
                            raw_distance: Some(1.0 / relevance.max(1e-9) - 1.0),
                            ..Hit::plain(&format!("{store}-{rank}"), relevance)
                        })
                        .collect(),
                })
                .collect()
        })
    }

    /// `lists` with `floor` on each, and the first store's top hit an exact key, which now and
    /// then leads.
    fn floored_with_an_exact_top(mut lists: Vec<RankedList>, floor: f64) -> Vec<RankedList> {
        for list in &mut lists {
            list.floor = floor;
        }
        if let Some(first) = lists.first_mut().and_then(|l| l.hits.first_mut()) {
            first.base_relevance = 1.0;
        }
        lists
    }

    fn keys(rows: &[Fused]) -> Vec<(usize, usize)> {
        rows.iter().map(|f| (f.list, f.rank)).collect()
    }

    fn is_subsequence(small: &[(usize, usize)], big: &[(usize, usize)]) -> bool {
        let mut big = big.iter();
        small.iter().all(|x| big.any(|y| y == x))
    }

    /// The packet the slow way, as 5.3.0 writes it: the whole fused order, the lead moved to the
    /// front, then the reserve and fill passes over it. An oracle for the lazy walk.
    fn naive(lists: Vec<RankedList>, cut: &Cut) -> Vec<(usize, usize)> {
        let floored: Vec<Vec<Hit>> = lists
            .iter()
            .map(|l| crate::fusion::apply_floor(l.hits.clone(), l.floor))
            .collect();
        let mut fused = crate::fusion::fuse(lists, cut.k, usize::MAX);
        if cut.authority_margin > 0.0 {
            let mut best: Option<(usize, f64)> = None;
            for (list, hits) in floored.iter().enumerate() {
                let margin = match hits.as_slice() {
                    [] => None,
                    [top, ..] if top.base_relevance >= 0.999 => Some(top.base_relevance),
                    [_] => None,
                    [top, second, ..] => Some(top.base_relevance - second.base_relevance),
                };
                if let Some(m) = margin
                    && m >= cut.authority_margin
                    && best.is_none_or(|(_, b)| m > b)
                {
                    best = Some((list, m));
                }
            }
            if let Some((list, _)) = best
                && let Some(at) = fused.iter().position(|f| f.list == list && f.rank == 1)
                && at > 0
                && fused[at].score >= fused[0].score - 1e-9
            {
                let lead = fused.remove(at);
                fused.insert(0, lead);
            }
        }
        let cap = cut.rows.unwrap_or(usize::MAX);
        let mut left = cut.budget.unwrap_or(usize::MAX);
        let cost = |f: &Fused| cut.budget.map_or(0, |_| page::row_cost(&f.hit));
        let mut chosen = vec![false; fused.len()];
        let mut count = 0;
        let mut seats = std::collections::HashMap::new();
        if cut.min_per_store > 0 {
            for (i, f) in fused.iter().enumerate() {
                if count >= cap {
                    break;
                }
                let seat = seats.entry(f.list).or_insert(0);
                if *seat < cut.min_per_store && cost(f) <= left {
                    *seat += 1;
                    left -= cost(f);
                    chosen[i] = true;
                    count += 1;
                }
            }
        }
        for (i, f) in fused.iter().enumerate() {
            if count >= cap {
                break;
            }
            if !chosen[i] && cost(f) <= left {
                left -= cost(f);
                chosen[i] = true;
                count += 1;
            }
        }
        fused
            .iter()
            .zip(chosen)
            .filter(|(_, c)| *c)
            .map(|(f, _)| (f.list, f.rank))
            .collect()
    }

    proptest! {
        #[test]
        fn the_lazy_walk_agrees_with_the_whole_order(
            lists in lists_strategy(),
            budget in prop::option::of(1usize..600),
            rows in prop::option::of(1usize..30),
            min_per_store in 0usize..3,
            authority_margin in prop::sample::select(vec![0.0, 0.035, 0.3]),
            floor in prop::sample::select(vec![0.0, 0.4]),
        ) {
            let lists = floored_with_an_exact_top(lists, floor);
            let cut = Cut { k: 60, rows: rows.or(Some(10)).filter(|_| budget.is_none()).or(rows), budget, authority_margin, min_per_store };
            prop_assert_eq!(keys(&rank(lists.clone(), &cut)), naive(lists, &cut));
        }

        #[test]
        fn a_page_never_costs_more_than_its_budget_and_keeps_fused_order(
            lists in lists_strategy(),
            budget in 1usize..600,
            rows in prop::option::of(1usize..30),
            min_per_store in 0usize..3,
        ) {
            let cut = Cut { k: 60, rows, budget: Some(budget), authority_margin: 0.0, min_per_store };
            let page = rank(lists.clone(), &cut);
            prop_assert!(packet_cost(page.iter().map(|f| &f.hit)) <= budget);
            prop_assert!(rows.is_none_or(|cap| page.len() <= cap));
            let unbudgeted = crate::fusion::fuse(lists, 60, usize::MAX);
            prop_assert!(is_subsequence(&keys(&page), &keys(&unbudgeted)));
        }

        #[test]
        fn margin_0_and_quota_0_are_plain_rrf(lists in lists_strategy(), n in 1usize..30) {
            let shaped = rank(lists.clone(), &Cut {
                k: 60, rows: Some(n), budget: None, authority_margin: 0.0, min_per_store: 0,
            });
            // The shaped path, forced: a full sort and the row trim, no fast path.
            let mut full = crate::fusion::fuse(lists.clone(), 60, usize::MAX);
            full.truncate(n);
            let plain = crate::fusion::fuse(lists, 60, n);
            prop_assert_eq!(keys(&shaped), keys(&plain));
            prop_assert_eq!(keys(&full), keys(&plain));
        }

        #[test]
        fn rescaling_a_stores_magnitudes_leaves_the_packet_unchanged_when_authority_is_off(
            lists in lists_strategy(),
            factor in 0.01f64..100.0,
            which in 0usize..4,
            budget in prop::option::of(1usize..600),
            min_per_store in 0usize..3,
        ) {
            let cut = Cut { k: 60, rows: Some(10), budget, authority_margin: 0.0, min_per_store };
            let mut rescaled = lists.clone();
            if let Some(list) = rescaled.get_mut(which) {
                for hit in &mut list.hits {
                    hit.base_relevance *= factor;
                    hit.native_score = hit.native_score.map(|s| s * factor);
                    hit.raw_distance = hit.raw_distance.map(|d| d * factor);
                }
            }
            prop_assert_eq!(keys(&rank(lists, &cut)), keys(&rank(rescaled, &cut)));
        }
    }

    proptest! {
        #[test]
        fn the_trace_agrees_with_the_numbers_and_names_a_step_only_when_it_acted(
            lists in lists_strategy(),
            budget in prop::option::of(1usize..600),
            rows in prop::option::of(1usize..30),
            min_per_store in 0usize..3,
            authority_margin in prop::sample::select(vec![0.0, 0.035, 0.3]),
            floor in prop::sample::select(vec![0.0, 0.4]),
            k in prop::sample::select(vec![1u32, 60, 1000]),
        ) {
            let lists = floored_with_an_exact_top(lists, floor);
            let weights: Vec<f64> = lists.iter().map(|l| l.weight).collect();
            let total: usize = lists
                .iter()
                .map(|l| crate::fusion::apply_floor(l.hits.clone(), l.floor).len())
                .sum();
            let cut = Cut { k, rows: rows.or(Some(10)).filter(|_| budget.is_none()).or(rows), budget, authority_margin, min_per_store };
            let (traced, trace) = rank_traced(lists.clone(), &cut, usize::MAX);
            let kept = keys(&traced);
            // Explaining changes nothing, and every row's score is its contribution.
            prop_assert_eq!(&kept, &keys(&rank(lists.clone(), &cut)));
            for row in &traced {
                prop_assert_eq!(row.score, fusion::rrf_score(weights[row.list], k, row.rank));
            }
            // The lead: none, and the packet is what it is without authority; one, and it leads
            // (or the page had no room for it), having won by its margin.
            let unled = keys(&rank(lists.clone(), &Cut { authority_margin: 0.0, ..cut }));
            match trace.lead {
                None => prop_assert_eq!(&kept, &unled),
                Some(lead) => {
                    prop_assert!(lead.margin >= authority_margin && authority_margin > 0.0);
                    let at = (lead.place.list, lead.place.rank);
                    let cut_by_page = trace.dropped.iter().any(|(p, _, why)| {
                        (p.list, p.rank) == at && matches!(why, page::Cutoff::Page { .. })
                    });
                    prop_assert!(kept.first() == Some(&at) || cut_by_page);
                }
            }
            // A seat is named only for a row the order alone would have left out.
            let unseated = keys(&rank(lists.clone(), &Cut { min_per_store: 0, ..cut }));
            prop_assert!(min_per_store > 0 || trace.seated.is_empty());
            for seat in &trace.seated {
                prop_assert!(kept.contains(seat) && !unseated.contains(seat));
            }
            // Every row left out is listed once, with a reason that holds.
            prop_assert_eq!(trace.dropped.len(), total - kept.len());
            for (place, _, why) in &trace.dropped {
                prop_assert!(!kept.contains(&(place.list, place.rank)));
                match *why {
                    page::Cutoff::Rows { cap } => prop_assert!(cut.rows == Some(cap) && kept.len() == cap),
                    page::Cutoff::Page { cost, left } => prop_assert!(budget.is_some() && cost > left),
                }
            }
        }
    }

    #[test]
    fn with_identity_the_packet_runs_on_documents_and_seats_go_by_the_bodys_store() {
        use crate::identity::{By, KeyPath};
        let list = |weight, ids: &[&str]| RankedList {
            identity: Some(By::Key(KeyPath::Id)),
            ..RankedList::new(
                weight,
                0.0,
                ids.iter().map(|id| Hit::plain(id, 0.5)).collect(),
            )
        };
        let lists = vec![
            list(1.0, &["x", "y", "z"]),
            list(1.0, &["x"]),
            list(0.5, &["w"]),
        ];
        let cut = Cut {
            k: 60,
            rows: Some(2),
            budget: None,
            authority_margin: 0.0,
            min_per_store: 1,
        };
        let rows = |rows: &[Fused]| {
            (rows.iter())
                .map(|f| (f.list, f.hit.id.clone(), f.also.len()))
                .collect::<Vec<_>>()
        };
        // x is a's and b's, its body a's: b holds no body and so no seat, and the two rows are
        // a's x (with b's part) and c's w, which its seat keeps over a's y.
        let expected = vec![(0, "x".to_owned(), 1), (2, "w".to_owned(), 0)];
        assert_eq!(rows(&rank(lists.clone(), &cut)), expected);
        let (traced, trace) = rank_traced(lists, &cut, 10);
        assert_eq!(rows(&traced), expected);
        assert_eq!(traced[0].score, 2.0 / 61.0);
        assert_eq!(trace.seated, [(2, 1)]);
        // What was left out are documents: a's y and z, never b's x.
        let dropped: Vec<&str> = (trace.dropped.iter())
            .map(|(_, id, _)| id.as_str())
            .collect();
        assert_eq!(dropped, ["y", "z"]);
    }

    #[test]
    fn the_ask_is_sized_by_the_page() {
        // test_a_budget_sizes_the_ask_and_the_report_says_what_the_page_cost: 1000 tokens -> 63.
        assert_eq!(ask(10, 2, Some(1000)), 63);
        // test_without_a_budget_the_ask_and_the_packet_are_as_before: n x multiplier.
        assert_eq!(ask(10, 2, None), 20);
        assert_eq!(ask(10, 2, Some(16)), 20, "a small page never asks for less");
    }

    #[test]
    fn a_page_is_capped_only_by_an_explicit_n_results() {
        let shaping = Shaping::default();
        assert_eq!(Cut::new(&shaping, 60, 10, false, None).rows, Some(10));
        assert_eq!(Cut::new(&shaping, 60, 10, false, Some(800)).rows, None);
        assert_eq!(Cut::new(&shaping, 60, 4, true, Some(800)).rows, Some(4));
    }

    #[test]
    fn check_says_what_is_on() {
        assert_eq!(Shaping::default().describe(), ["plain RRF"]);
        let on = Shaping::python_5_3().describe().join("; ");
        assert_eq!(
            on,
            "authority lead (margin 0.035); 1 seat(s) per store; satellite edges (up to 3); topic edges (up to 3)"
        );
    }
}
