//! What one search may spend across its rounds (the first fan, each hop, the topic edges): its own
//! store calls, one deadline and one purse of answer bytes; and the calls each store it asks may
//! cause below it in a chain of callosums.

use crate::chain::Chain;
use crate::knobs::Knobs;
use crate::ledger::Purse;
use crate::roster::Fan;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What one search may still spend across its rounds (the first fan, each hop, the topic edges):
/// store calls of its own, time, and bytes of store answers.
pub(super) struct Spend<'a> {
    /// The store calls this callosum may make for this search in all: every round of every
    /// store and the topic edges, at most the chain's budget. Each round takes its calls
    /// before it fans; a store past them is not asked.
    pub(super) own_calls: usize,
    calls: AtomicUsize,
    /// When the search began.
    pub(super) started: Instant,
    /// The search's deadline: its largest store timeout after the first round began, so the
    /// first round is never cut and nothing after it outlasts it. Set by the first fan.
    pub(super) deadline: OnceLock<Instant>,
    /// The largest store timeout.
    pub(super) limit: Duration,
    /// The search's share of the bytes of store answers held.
    pub(super) purse: Purse<'a>,
}

impl<'a> Spend<'a> {
    pub(super) fn new(fan: &Fan, knobs: &Knobs, chain: &Chain, purse: Purse<'a>) -> Self {
        let shaping = &knobs.shaping;
        let rounds = if shaping.hops_on() { shaping.hops } else { 1 };
        let topic_stores = if shaping.topics_on() {
            fan.bound.iter().filter(|b| b.caller.has_topics()).count()
        } else {
            0
        };
        let planned = (fan.bound.len())
            .saturating_mul(rounds)
            .saturating_add(topic_stores);
        let own_calls = planned.min(chain.budget as usize);
        Self {
            own_calls,
            calls: AtomicUsize::new(own_calls),
            started: Instant::now(),
            deadline: OnceLock::new(),
            limit: (fan.bound.iter())
                .map(|b| knobs.call(b).timeout)
                .max()
                .unwrap_or_default(),
            purse,
        }
    }

    /// Starts the deadline, at the first round; whether this was the first round.
    pub(super) fn begin(&self) -> bool {
        let mut first = false;
        self.deadline.get_or_init(|| {
            first = true;
            Instant::now() + self.limit
        });
        first
    }

    /// Takes up to `want` calls from what is left, and says how many it took.
    pub(super) fn take_calls(&self, want: usize) -> usize {
        let mut taken = 0;
        // Rounds run one after another, so this never contends; the update is atomic only
        // because the search's future must be `Send`.
        let _ = self
            .calls
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                taken = want.min(left);
                Some(left - taken)
            });
        taken
    }

    /// Whether one more round fits: calls are left, and so is as much time as `round` (the first
    /// round's length); otherwise why not, in words.
    pub(super) fn room(&self, round: Duration) -> Result<(), String> {
        if self.calls.load(Ordering::Relaxed) == 0 {
            return Err(Self::spent(self.own_calls as u32));
        }
        let left = (self.deadline.get())
            .map_or(self.limit, |d| d.saturating_duration_since(Instant::now()));
        if left.is_zero() || left < round {
            return Err(format!(
                "{:.2}s of this search's {:.2}s deadline are left and its first round took {:.2}s",
                left.as_secs_f64(),
                self.limit.as_secs_f64(),
                round.as_secs_f64()
            ));
        }
        Ok(())
    }

    /// The words for a spent call budget.
    pub(super) fn spent(budget: u32) -> String {
        format!("this search's budget of {budget} store calls is spent")
    }
}

/// The calls each of `asked` stores may cause below it, out of `budget` for this whole level: what
/// is left after this level's own calls, shared evenly, so the whole tree stays within `budget`.
pub(super) fn per_store_budget(budget: u32, asked: usize) -> u32 {
    let asked = u32::try_from(asked).unwrap_or(u32::MAX).max(1);
    budget.saturating_sub(asked) / asked
}
