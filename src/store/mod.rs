//! The store layer: one [`Protocol`] per store type, the one HTTP call every store gets, and how a
//! store entry is bound to either (`bind`).
//!
//! A protocol only knows its wire format: the request body it sends and how it reads the answer
//! into ranked [`Hit`]s. Both are pure functions, so decoding can be tested (and fuzzed) without a
//! network. The call itself, with its bearer header, deadline and body cap, lives in [`remote`] and
//! is the same for every type. Adding a type is one file here, one line in [`TYPES`] and in [`of`],
//! and its name in the config's [`StoreKind`](crate::config::StoreKind) (the config knows the
//! names, this module the rest). The one type that is not an HTTP protocol, `mcp`, calls a tool of
//! an MCP server instead ([`mcp`]); [`Caller`] is how the federation asks either kind.
//!
//! The remote JSON shapes stay private to each protocol's file.
//!
//! This file only composes its rooms: `protocol.rs` the vocabulary every type speaks (the trait,
//! its context and options, a type's entry), `decode.rs` reading an answer's hits, `registry.rs`
//! the known types, `caller.rs` how a bound store is asked, `bind.rs` how an entry is bound.

mod bind;
mod caller;
pub mod callosum;
pub mod clients;
pub(crate) mod decode;
pub mod loci;
pub mod mcp;
pub mod memory;
mod protocol;
mod registry;
pub mod remote;
pub mod transport;

pub use crate::fusion::{Hit, Keep};
pub use bind::Bound;
pub(crate) use bind::bind;
pub use caller::Caller;
pub use decode::decode_kept;
pub use protocol::{
    Builder, Call, Context, Options, Protocol, Reach, StoreType, search_path, topic_search_path,
};
pub use registry::{TYPES, build, of, speaks_topics, type_names};
pub use remote::{Failure, Remote};
