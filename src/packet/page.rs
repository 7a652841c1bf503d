//! The seats and the page [5.3]: which fused rows make the packet.
//!
//! One walk serves both the row trim and the token page. A *reserve* pass gives each store its
//! `min_per_store` seats (its best rows, in fused order), then a *fill* pass takes the rest in
//! fused order; on a page a row that does not fit is skipped, not a stop, so smaller rows further
//! down still fill it. The output keeps fused order, so an authority lead stays first.

use super::cut::Cut;
use crate::fusion::{Hit, Order, Place};
use std::collections::HashSet;

/// Characters per estimated token.
pub const CHARS_PER_TOKEN: usize = 4;
/// The ask is sized to one candidate hit per this many tokens of the page.
pub const TOKENS_PER_CANDIDATE: usize = 16;

/// A text's estimated tokens: a quarter of its characters, rounded up, and never below one.
pub fn est_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(CHARS_PER_TOKEN).max(1)
}

/// What a row costs a model to read: its content, one for the row, and the episode a core was
/// found through (`metadata.matched_via.content`), which a reader is shown with it.
pub fn row_cost(hit: &Hit) -> usize {
    let via = hit
        .metadata
        .matched_via_content()
        .filter(|content| !content.is_empty())
        .map_or(0, |content| est_tokens(&content));
    est_tokens(&hit.content) + 1 + via
}

/// The least a row can cost, from its text's length alone: a character is at most 4 bytes, so the
/// text has at least a quarter of its bytes in characters; the episode it was found through only
/// adds. Never more than [`row_cost`].
fn cost_floor(hit: &Hit) -> usize {
    hit.content
        .len()
        .div_ceil(4)
        .div_ceil(CHARS_PER_TOKEN)
        .max(1)
        + 1
}

/// What a whole packet costs.
pub fn packet_cost<'a>(hits: impl IntoIterator<Item = &'a Hit>) -> usize {
    hits.into_iter().map(row_cost).sum()
}

/// The fewest tokens any row costs (one for its text, one for the row): a page with less left
/// than this is full.
const MIN_ROW: usize = 2;

/// Whether a page with `left` tokens still to fill (`None`: no page) can take no row at all.
pub fn is_full(left: Option<usize>) -> bool {
    left.is_some_and(|left| left < MIN_ROW)
}

/// The packet's rows, in the order they are read: `lead` first (the authority lead, if any), then
/// the fused order without it. Each pass walks it afresh, sorting `order` only as deep as it goes.
struct Walk {
    lead: Option<Place>,
    next: usize,
    led: bool,
}

impl Walk {
    fn new(lead: Option<Place>) -> Self {
        Self {
            lead,
            next: 0,
            led: false,
        }
    }

    fn next(&mut self, order: &mut Order) -> Option<Place> {
        if !self.led {
            self.led = true;
            if self.lead.is_some() {
                return self.lead;
            }
        }
        loop {
            let place = order.at(self.next)?;
            self.next += 1;
            if Some(place) != self.lead {
                return Some(place);
            }
        }
    }
}

/// The places of the rows that make the packet, in reading order (`lead` first, then fused
/// order): each store's seats first, then the fill, under the row cap and the page.
pub fn choose(order: &mut Order, lead: Option<Place>, cut: &Cut) -> Vec<Place> {
    choose_seated(order, lead, cut).0
}

/// [`choose`], and the (list, rank) of every row the seats took.
pub fn choose_seated(
    order: &mut Order,
    lead: Option<Place>,
    cut: &Cut,
) -> (Vec<Place>, HashSet<(usize, usize)>) {
    let mut picks = Picks::new(order, cut);
    if cut.min_per_store > 0 && (picks.budget.is_some() || order.len() > picks.cap) {
        picks.reserve(order, lead, cut.min_per_store);
    }
    picks.fill(order, lead);
    let seated = std::mem::take(&mut picks.taken);
    (picks.into_places(), seated)
}

/// Why a row did not make the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cutoff {
    /// The row cap (`n_results`) was reached before it.
    Rows { cap: usize },
    /// It did not fit the page: it costs `cost` tokens and `left` were left when it was read.
    Page { cost: usize, left: usize },
}

/// The first `max` rows in reading order that [`choose_seated`] left out, with why: its fill pass
/// replayed over what it chose (`chosen`, `seated` among them), so each row sees the row count
/// and the page as the fill saw them when it read that row.
pub fn dropped(
    order: &mut Order,
    lead: Option<Place>,
    cut: &Cut,
    (chosen, seated): (&[Place], &HashSet<(usize, usize)>),
    max: usize,
) -> Vec<(Place, Cutoff)> {
    let cap = cut.rows.unwrap_or(usize::MAX);
    let cost = |order: &Order, place: Place| cut.budget.map_or(0, |_| row_cost(order.hit(place)));
    let mut left = cut.budget.unwrap_or(usize::MAX);
    let mut count = 0;
    for &place in chosen {
        if seated.contains(&(place.list, place.rank)) {
            left = left.saturating_sub(cost(order, place));
            count += 1;
        }
    }
    let filled: HashSet<(usize, usize)> = chosen.iter().map(|p| (p.list, p.rank)).collect();
    let mut out = Vec::new();
    let mut walk = Walk::new(lead);
    while out.len() < max {
        let Some(place) = walk.next(order) else { break };
        let key = (place.list, place.rank);
        if seated.contains(&key) {
            continue;
        }
        if filled.contains(&key) {
            left = left.saturating_sub(cost(order, place));
            count += 1;
            continue;
        }
        let why = if count >= cap {
            Cutoff::Rows { cap }
        } else {
            Cutoff::Page {
                cost: cost(order, place),
                left,
            }
        };
        out.push((place, why));
    }
    out
}

/// What the two passes of [`choose`] share: the rows taken so far, the seats' rows among them,
/// and what is left of the row cap and the page.
struct Picks {
    cap: usize,
    budget: Option<usize>,
    /// On a page, no row costs less than the cheapest row's floor: once less is left, it is full,
    /// and a walk need not read the rest of the order to find that nothing fits.
    cheapest: usize,
    left: usize,
    /// (reading position, place) of every row taken.
    chosen: Vec<(usize, Place)>,
    /// The (list, rank) of every row the seats took, so the fill does not take it again.
    taken: HashSet<(usize, usize)>,
}

impl Picks {
    /// Nothing taken yet, with the cap and the page `cut` asks for.
    fn new(order: &Order, cut: &Cut) -> Self {
        let budget = cut.budget;
        let cheapest = match budget {
            Some(_) => (0..order.lists())
                .flat_map(|list| order.list(list))
                .map(cost_floor)
                .min()
                .unwrap_or(MIN_ROW),
            None => 0,
        };
        Self {
            cap: cut.rows.unwrap_or(usize::MAX),
            budget,
            cheapest,
            left: budget.unwrap_or(usize::MAX),
            chosen: Vec::new(),
            taken: HashSet::new(),
        }
    }

    /// Whether no more rows can be taken: the row cap is reached, or the page has too little left.
    fn is_full(&self) -> bool {
        self.chosen.len() >= self.cap
            || (self.budget.is_some() && self.left < self.cheapest.max(MIN_ROW))
    }

    /// Whether a row fits what is left, and what it costs (nothing without a page). The exact
    /// count reads the text; most rows that cannot fit are told by their length alone.
    fn fits(&self, order: &Order, place: Place) -> Option<usize> {
        if self.budget.is_none() {
            return Some(0);
        }
        let hit = order.hit(place);
        if cost_floor(hit) > self.left {
            return None;
        }
        Some(row_cost(hit)).filter(|&cost| cost <= self.left)
    }

    /// The reserve pass: each store's best rows that fit, up to `min_per_store` of them.
    fn reserve(&mut self, order: &mut Order, lead: Option<Place>, min_per_store: usize) {
        let mut seats = vec![0usize; order.lists()];
        let mut walk = Walk::new(lead);
        let mut at = 0;
        while !self.is_full() {
            let Some(place) = walk.next(order) else { break };
            if seats[place.list] < min_per_store
                && let Some(cost) = self.fits(order, place)
            {
                seats[place.list] += 1;
                self.left -= cost;
                self.taken.insert((place.list, place.rank));
                self.chosen.push((at, place));
            }
            at += 1;
        }
    }

    /// The fill pass: every row the seats did not take, in reading order, while it fits.
    fn fill(&mut self, order: &mut Order, lead: Option<Place>) {
        let mut walk = Walk::new(lead);
        let mut at = 0;
        while !self.is_full() {
            let Some(place) = walk.next(order) else { break };
            if !self.taken.contains(&(place.list, place.rank))
                && let Some(cost) = self.fits(order, place)
            {
                self.left -= cost;
                self.chosen.push((at, place));
            }
            at += 1;
        }
    }

    /// The places taken, in reading order.
    fn into_places(mut self) -> Vec<Place> {
        self.chosen.sort_unstable_by_key(|(at, _)| *at);
        self.chosen.into_iter().map(|(_, place)| place).collect()
    }
}

/// Whether a row costing `cost` fits what is `left` of the page, spending it if so. `None` is no
/// page: everything fits. Hops and edges are fitted this way, one row at a time.
pub fn spend(cost: usize, left: &mut Option<usize>) -> bool {
    match left {
        None => true,
        Some(left) if cost <= *left => {
            *left -= cost;
            true
        }
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fusion::{Fused, RankedList};
    use crate::metadata::Metadata;
    use crate::packet::{Cut, rank};
    use serde_json::json;

    /// A hit whose content costs exactly `tokens` tokens (4 characters each), so its row costs
    /// `tokens + 1`.
    fn sized(id: &str, tokens: usize) -> Hit {
        Hit {
            content: "x".repeat(tokens * CHARS_PER_TOKEN),
            ..Hit::plain(id, 0.5)
        }
    }

    fn list(weight: f64, hits: Vec<Hit>) -> RankedList {
        RankedList {
            weight,
            floor: 0.0,
            hits,
            identity: None,
        }
    }

    /// A list of `n` hits costing `tokens` each, ids `{prefix}{rank}`.
    fn uniform(prefix: &str, weight: f64, n: usize, tokens: usize) -> RankedList {
        list(
            weight,
            (1..=n)
                .map(|r| sized(&format!("{prefix}{r}"), tokens))
                .collect(),
        )
    }

    fn cut(rows: Option<usize>, budget: Option<usize>, min_per_store: usize) -> Cut {
        Cut {
            k: 60,
            rows,
            budget,
            authority_margin: 0.0,
            min_per_store,
        }
    }

    fn ids(rows: &[Fused]) -> Vec<&str> {
        rows.iter().map(|f| f.hit.id.as_str()).collect()
    }

    // test_budget.py: test_est_tokens_four_chars_each_never_below_one
    #[test]
    fn four_characters_a_token_never_below_one() {
        for (text, tokens) in [
            ("", 1),
            ("abcd", 1),
            ("abcde", 2),
            ("ééééé", 2),
            ("x".repeat(400).as_str(), 100),
        ] {
            assert_eq!(est_tokens(text), tokens, "{text:?}");
        }
    }

    // test_row_cost_counts_the_satellite_a_core_matched_through
    #[test]
    fn a_row_costs_its_text_one_more_and_the_episode_it_was_found_through() {
        let mut hit = sized("core", 10);
        assert_eq!(row_cost(&hit), 11);
        let via = |v: serde_json::Value| {
            let serde_json::Value::Object(map) = json!({ "matched_via": v, "tier": "long" }) else {
                unreachable!()
            };
            Metadata::from_map(&map)
        };
        hit.metadata = via(json!({"id": "s1", "content": "y".repeat(20)}));
        assert_eq!(row_cost(&hit), 16);
        hit.metadata = via(json!({"id": "s1", "content": ""}));
        assert_eq!(row_cost(&hit), 11, "an empty via costs nothing");
        hit.metadata = via(json!("not an object"));
        assert_eq!(row_cost(&hit), 11);
    }

    #[test]
    fn ported_page_cases() {
        struct Case {
            name: &'static str,
            lists: Vec<RankedList>,
            cut: Cut,
            expected: &'static [&'static str],
        }
        let cases = [
            // test_page_is_packed_head_first_and_an_oversize_row_is_skipped_not_a_stop
            Case {
                name: "an oversize row is skipped, smaller ones still fill the page",
                lists: vec![list(
                    1.0,
                    vec![
                        sized("a", 50),
                        sized("big", 200),
                        sized("b", 50),
                        sized("c", 50),
                        sized("d", 2),
                    ],
                )],
                cut: cut(None, Some(160), 0),
                // 51 + 51 + 51 = 153; d (3) still fits: 156 <= 160.
                expected: &["a", "b", "c", "d"],
            },
            // test_the_diversity_floor_seats_a_downweighted_store_on_the_page
            Case {
                name: "a seat puts a half-weight store on the page",
                lists: vec![uniform("m", 1.0, 6, 10), uniform("l", 0.5, 3, 10)],
                cut: cut(None, Some(44), 1),
                expected: &["m1", "m2", "m3", "l1"],
            },
            Case {
                name: "without seats the page is one store",
                lists: vec![uniform("m", 1.0, 6, 10), uniform("l", 0.5, 3, 10)],
                cut: cut(None, Some(44), 0),
                expected: &["m1", "m2", "m3", "m4"],
            },
            // test_the_reserved_seat_goes_to_the_stores_next_row_that_fits
            Case {
                name: "a store's top row too big gives its seat to its next row that fits",
                lists: vec![
                    uniform("m", 1.0, 6, 10),
                    list(0.5, vec![sized("l1", 100), sized("l2", 5)]),
                ],
                cut: cut(None, Some(40), 1),
                expected: &["m1", "m2", "m3", "l2"],
            },
            // test_n_results_beside_a_budget_is_a_second_cap
            Case {
                name: "an explicit n_results caps the rows on a page",
                lists: vec![uniform("m", 1.0, 6, 3)],
                cut: cut(Some(2), Some(1000), 0),
                expected: &["m1", "m2"],
            },
            Case {
                name: "and the budget caps too",
                lists: vec![uniform("m", 1.0, 6, 9)],
                cut: cut(Some(5), Some(25), 0),
                expected: &["m1", "m2"],
            },
            // test_pack_and_fit_helpers_edges: a budget of 5 keeps only the 2-token row
            Case {
                name: "a tiny page keeps only what fits",
                lists: vec![list(1.0, vec![sized("big", 10), sized("small", 1)])],
                cut: cut(None, Some(5), 0),
                expected: &["small"],
            },
            // test_fusion.py quota cases
            Case {
                name: "quota is a no-op when RRF is already balanced",
                lists: vec![uniform("m", 1.0, 3, 1), uniform("l", 1.0, 3, 1)],
                cut: cut(Some(4), None, 1),
                expected: &["m1", "l1", "m2", "l2"],
            },
            Case {
                name: "quota 0 is the plain top n",
                lists: vec![uniform("m", 3.0, 5, 1), uniform("l", 1.0, 3, 1)],
                cut: cut(Some(3), None, 0),
                expected: &["m1", "m2", "m3"],
            },
            Case {
                name: "quota rescues a down-weighted store",
                lists: vec![uniform("m", 3.0, 5, 1), uniform("l", 1.0, 3, 1)],
                cut: cut(Some(3), None, 1),
                expected: &["m1", "m2", "l1"],
            },
            Case {
                name: "quota seats every store when n allows",
                lists: vec![
                    uniform("a", 3.0, 3, 1),
                    uniform("b", 2.0, 3, 1),
                    uniform("c", 1.0, 3, 1),
                ],
                cut: cut(Some(3), None, 1),
                expected: &["a1", "b1", "c1"],
            },
            Case {
                name: "quota is best effort when there are too few seats",
                lists: vec![
                    uniform("a", 3.0, 3, 1),
                    uniform("b", 2.0, 3, 1),
                    uniform("c", 1.0, 3, 1),
                ],
                cut: cut(Some(2), None, 1),
                expected: &["a1", "b1"],
            },
            Case {
                name: "two seats each",
                lists: vec![uniform("m", 3.0, 5, 1), uniform("l", 1.0, 3, 1)],
                cut: cut(Some(4), None, 2),
                expected: &["m1", "m2", "l1", "l2"],
            },
            // test_trim_with_quota_helper_edges: len <= n is a no-op
            Case {
                name: "fewer rows than n are all kept",
                lists: vec![uniform("m", 3.0, 2, 1), uniform("l", 1.0, 1, 1)],
                cut: cut(Some(5), None, 2),
                expected: &["m1", "m2", "l1"],
            },
        ];
        for case in cases {
            let packet = rank(case.lists, &case.cut);
            assert_eq!(ids(&packet), case.expected, "{}", case.name);
            if let Some(budget) = case.cut.budget {
                let cost = packet_cost(packet.iter().map(|f| &f.hit));
                assert!(cost <= budget, "{}: {cost} > {budget}", case.name);
            }
        }
    }

    // test_no_budget_is_the_row_count_trim
    #[test]
    fn no_page_is_the_row_trim() {
        let lists = || vec![uniform("m", 2.0, 8, 30), uniform("l", 1.0, 8, 30)];
        let trimmed = rank(lists(), &cut(Some(5), None, 1));
        assert_eq!(ids(&trimmed), ["m1", "m2", "m3", "m4", "l1"]);
        // Budget None and a page that holds everything agree.
        let paged = rank(lists(), &cut(Some(5), Some(100_000), 1));
        assert_eq!(ids(&trimmed), ids(&paged));
    }

    // test_the_authority_lead_still_leads_the_page
    #[test]
    fn the_authority_lead_still_leads_the_page() {
        let mut facts = uniform("l", 1.0, 1, 5);
        facts.hits[0].base_relevance = 1.0;
        let lists = vec![uniform("m", 1.0, 6, 5), facts];
        let cut = Cut {
            authority_margin: 0.035,
            ..cut(None, Some(20), 1)
        };
        let packet = rank(lists, &cut);
        assert_eq!(ids(&packet), ["l1", "m1", "m2"]);
    }

    // test_pack_and_fit_helpers_edges: fitting keeps what fits and says what is left; 0 keeps
    // nothing
    #[test]
    fn spending_keeps_what_fits_and_says_what_is_left() {
        let kept = |costs: &[usize], mut left: Option<usize>| {
            let kept: Vec<usize> = costs
                .iter()
                .copied()
                .filter(|c| spend(*c, &mut left))
                .collect();
            (kept, left)
        };
        assert_eq!(kept(&[3, 10, 2, 4], Some(9)), (vec![3, 2, 4], Some(0)));
        assert_eq!(kept(&[3, 10], Some(0)), (vec![], Some(0)));
        assert_eq!(kept(&[3, 10], None), (vec![3, 10], None));
    }
}
