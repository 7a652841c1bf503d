//! The bytes of store answers a search holds, and the process holds, each under its bound.
//!
//! One store's answer is capped (`DEFAULT_BODY_CAP`), but a search asks every store at once and
//! the process runs many searches: 64 stores answering just under the cap are half a gigabyte
//! for one search. So every answer's bytes are counted twice as they arrive, against the search's
//! [`Purse`] and against the process's [`Ledger`]; an answer that would take either past its
//! bound is dropped there and then (its bytes given back at once), and the search says so in
//! `failed`. Once decoded, an answer keeps only what its hits hold (the body is freed), and that
//! stays counted until the search ends, since the hits live that long.
//!
//! Counting is two atomic adds per chunk: no lock, nothing held across an await.

use crate::limits::{MAX_ANSWER_BYTES, MAX_SEARCH_ANSWER_BYTES};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Which bound an answer would have broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// This search's store answers, together.
    Search(usize),
    /// Every search's store answers, in this process.
    Process(usize),
}

impl fmt::Display for Over {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Over::Search(cap) => write!(
                f,
                "answer dropped: this search's store answers reached its {} MiB bound",
                cap / (1024 * 1024)
            ),
            Over::Process(cap) => write!(
                f,
                "answer dropped: the searches under way hold {} MiB of store answers, the \
                 service's bound; retry shortly",
                cap / (1024 * 1024)
            ),
        }
    }
}

/// The process's count of store-answer bytes held by searches under way.
#[derive(Debug)]
pub struct Ledger {
    held: AtomicUsize,
    cap: usize,
}

impl Default for Ledger {
    fn default() -> Self {
        Self::new(MAX_ANSWER_BYTES)
    }
}

impl Ledger {
    pub fn new(cap: usize) -> Self {
        Self {
            held: AtomicUsize::new(0),
            cap,
        }
    }

    /// The bound.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Bytes held now, by every search.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// A purse for one search, bounded by [`MAX_SEARCH_ANSWER_BYTES`].
    pub fn purse(&self) -> Purse<'_> {
        self.purse_of(MAX_SEARCH_ANSWER_BYTES)
    }

    /// A purse for one search, bounded by `cap`.
    pub fn purse_of(&self, cap: usize) -> Purse<'_> {
        Purse {
            ledger: self,
            held: AtomicUsize::new(0),
            cap,
        }
    }

    fn take(&self, n: usize) -> Result<(), Over> {
        take(&self.held, n, self.cap).map_err(|()| Over::Process(self.cap))
    }

    fn give(&self, n: usize) {
        self.held.fetch_sub(n, Ordering::Relaxed);
    }
}

/// One search's count; everything it holds goes back to the ledger when it is dropped.
#[derive(Debug)]
pub struct Purse<'a> {
    ledger: &'a Ledger,
    held: AtomicUsize,
    cap: usize,
}

impl Purse<'_> {
    /// A hold for one store answer.
    pub fn hold(&self) -> Hold<'_> {
        Hold {
            purse: self,
            taken: 0,
        }
    }

    fn take(&self, n: usize) -> Result<(), Over> {
        take(&self.held, n, self.cap).map_err(|()| Over::Search(self.cap))?;
        self.ledger.take(n).inspect_err(|_| {
            self.held.fetch_sub(n, Ordering::Relaxed);
        })
    }

    fn give(&self, n: usize) {
        self.held.fetch_sub(n, Ordering::Relaxed);
        self.ledger.give(n);
    }
}

impl Drop for Purse<'_> {
    fn drop(&mut self) {
        self.ledger.give(*self.held.get_mut());
    }
}

/// The bytes one answer holds while it is read and decoded. Dropped, it gives them all back (a
/// failed or cancelled call keeps nothing); [`Hold::keep`] leaves them with the search.
#[derive(Debug)]
pub struct Hold<'a> {
    purse: &'a Purse<'a>,
    taken: usize,
}

impl Hold<'_> {
    /// Counts `n` more bytes, or says which bound they would break (and counts none of them).
    pub fn take(&mut self, n: usize) -> Result<(), Over> {
        self.purse.take(n)?;
        self.taken += n;
        Ok(())
    }

    /// Makes the hold `n` bytes: what a decoded answer keeps, once its body is freed.
    pub fn settle(&mut self, n: usize) -> Result<(), Over> {
        if n <= self.taken {
            self.purse.give(self.taken - n);
            self.taken = n;
            Ok(())
        } else {
            self.take(n - self.taken)
        }
    }

    /// Leaves the bytes held with the search, until it ends.
    pub fn keep(mut self) {
        self.taken = 0;
    }

    /// Settles the hold to what decoded `hits` keep (their body freed) and leaves that with the
    /// search; `Err` (nothing kept) when that breaks a bound.
    pub fn keep_hits(mut self, hits: &[crate::fusion::Hit]) -> Result<(), Over> {
        self.settle(hits.iter().map(hit_bytes).sum())?;
        self.keep();
        Ok(())
    }
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        if self.taken > 0 {
            self.purse.give(self.taken);
        }
    }
}

/// Bytes of a message still arriving on a transport no search owns (an `mcp` store's session: a
/// line of its server's stdout, an event of its HTTP stream, a JSON body), counted against the
/// process's bound as they arrive. [`Inflow::release`] gives them back once the message is whole
/// and handed on (its reader then counts what the search keeps, in its purse); dropped, it gives
/// back whatever it holds, so a transport that fails or is closed keeps nothing.
#[derive(Debug)]
pub struct Inflow {
    ledger: std::sync::Arc<Ledger>,
    held: AtomicUsize,
}

impl Inflow {
    pub fn new(ledger: std::sync::Arc<Ledger>) -> Self {
        Self {
            ledger,
            held: AtomicUsize::new(0),
        }
    }

    /// Counts `n` more bytes arriving, or says that the process's bound would break (and counts
    /// none of them).
    pub fn take(&self, n: usize) -> Result<(), Over> {
        self.ledger.take(n)?;
        self.held.fetch_add(n, Ordering::Relaxed);
        Ok(())
    }

    /// The bytes counted since the last release: the message under way.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Gives back every byte counted: the message is whole and handed on.
    pub fn release(&self) {
        self.ledger.give(self.held.swap(0, Ordering::Relaxed));
    }
}

impl Drop for Inflow {
    fn drop(&mut self) {
        self.release();
    }
}

/// Adds `n` to `held` unless that passes `cap`.
fn take(held: &AtomicUsize, n: usize, cap: usize) -> Result<(), ()> {
    held.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
        now.checked_add(n).filter(|&after| after <= cap)
    })
    .map(drop)
    .map_err(drop)
}

/// About what a decoded hit keeps on the heap: its texts and the hit itself.
pub fn hit_bytes(hit: &crate::fusion::Hit) -> usize {
    let satellites = hit.satellites.as_ref().map_or(0, |s| {
        (s.recent.iter().chain(&s.supersedes))
            .map(|e| e.id.len() + e.content.len() + 64)
            .sum()
    });
    std::mem::size_of::<crate::fusion::Hit>()
        + hit.id.len()
        + hit.content.len()
        + hit.metadata.len()
        + satellites
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_and_the_process_are_each_bounded_and_given_back() {
        let ledger = Ledger::new(100);
        let a = ledger.purse_of(60);
        let b = ledger.purse_of(60);
        let mut one = a.hold();
        one.take(50).unwrap();
        assert_eq!(
            one.take(20),
            Err(Over::Search(60)),
            "past the search's bound"
        );
        one.take(10).unwrap();
        let mut two = b.hold();
        assert_eq!(two.take(50), Err(Over::Process(100)), "past the process's");
        assert_eq!(ledger.held(), 60, "a refused take counts nothing");
        two.take(40).unwrap();
        drop(two);
        assert_eq!(ledger.held(), 60, "a dropped hold gives its bytes back");
        one.settle(5).unwrap();
        assert_eq!(
            ledger.held(),
            5,
            "a decoded answer keeps what its hits hold"
        );
        one.keep();
        assert_eq!(ledger.held(), 5, "kept with the search");
        drop(a);
        assert_eq!(ledger.held(), 0, "and given back when it ends");
        drop(b);
    }

    #[test]
    fn settle_can_take_more_and_is_refused_past_the_bound() {
        let ledger = Ledger::new(100);
        let purse = ledger.purse_of(100);
        let mut hold = purse.hold();
        hold.take(10).unwrap();
        hold.settle(30).unwrap();
        assert_eq!(ledger.held(), 30);
        assert_eq!(hold.settle(200), Err(Over::Search(100)));
        assert_eq!(ledger.held(), 30);
    }
}
