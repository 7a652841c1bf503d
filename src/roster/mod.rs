//! The roster: the live set of stores (the config file's, then the overlay's) and each one's status.
//!
//! Readers take a cheap snapshot ([`Roster::fan`], an `Arc<Fan>`) and never wait on a writer for
//! longer than a pointer swap. Writers (add, remove) are serialized by one async mutex that also
//! guards the overlay file, so the file and the live roster change together or not at all: the
//! file is written first, and only when that succeeds is the new fan swapped in.
//!
//! Other processes may share the overlay. A change takes the file's advisory lock too and reads
//! the file again under it, so it builds on what any process last wrote; [`Roster::refresh`]
//! (called when the file changes) brings in what others wrote; [`Roster::reload`] puts a newly
//! read config file in force. Each keeps every store whose entry did not change, bound as it was.
//!
//! This file only composes its rooms: `live.rs` the roster and its writers (add, remove, refresh,
//! reload under the overlay's lock), `fan.rs` the snapshot readers take and how it is built,
//! `check.rs` what a new store or an overlay entry must be to be taken. How one store is bound is
//! the store layer's ([`crate::store::Bound`]).

mod check;
mod fan;
mod live;
#[cfg(test)]
mod tests;

pub use check::check_new_store;
pub use fan::Fan;
pub use live::{Changed, Roster, no_such_store};
