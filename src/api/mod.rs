//! The wire both edges speak, gathered: what `POST /search`, `GET /stores` and friends take and
//! answer, and what the MCP tools take and return as structured content. One definition, so REST
//! and MCP cannot drift; every item is re-exported here, so `api::Item` is the one path to it.
//!
//! The types are plain (derives and constructors): `search.rs` (a search and its answer),
//! `stores.rs` (the roster, health, adding and removing a store), `knobs.rs` (`/configure` and
//! `/knobs`), `refusal.rs` ([`Refusal`]: a request the core will not carry out, and the message
//! both edges show; no HTTP status). What reading the wire does is beside them: `decode.rs` (a
//! body decoded, its error worded by path and without values), `configure.rs` (a `/configure`
//! body read against the knob table), `status.rs` (a store's status as one string) and
//! `new_store.rs` (what a new store's keys say). `eval.rs` is `POST /eval`'s body.

mod configure;
mod decode;
mod eval;
mod knobs;
mod new_store;
mod refusal;
mod search;
mod status;
mod stores;

pub use crate::config::TextFormat;
pub use crate::identity::Identity;
pub use decode::{decode_json, decode_value, value_free};
pub use eval::EvalRequest;
pub use knobs::{
    ConfigureRequest, Configured, KnobRow, KnobSources, KnobsAnswer, ServerKnobs, StoreKnob,
    StoreKnobRows, TlsKnobs,
};
pub use refusal::{Refusal, RefusalKind};
pub use search::{
    AlsoFrom, Contribution, Dropped, Explain, Hit, NameReason, SearchAnswer, SearchRequest,
    SearchToolRequest, Step, StepKind,
};
pub use stores::{
    Added, BreakerState, HealthAnswer, HealthStatus, Info, NewMcpStore, NewStore, PresetRow,
    RemoveRequest, Removed, StoreHealth, StoreRow, StoreStatus, Stores, ViewRow,
};
