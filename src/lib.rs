//! seren-corpus-callosum: a read-only fan that federates N memory stores into one ranked recall
//! list.
//!
//! One query goes out in parallel to every bound store; each store's ranked answer is floored and
//! merged with weighted Reciprocal Rank Fusion; one ordered list comes back with full provenance.
//! The crate owns no data: it reads ranks, never magnitudes, and a slow or dead store degrades the
//! answer without failing it.
//!
//! The modules, in reading order, from the bottom up: each imports only those above it
//! (ARCHITECTURE.md has the map and the invariants):
//! - [`limits`]: every bound the service holds to, with its reason.
//! - [`logline`]: log lines on stderr, gathered into batches while a server runs.
//! - [`text`]: text made fit to show: cut short, escaped, printable, worded without values.
//! - [`hosts`]: host names and web origins as settings and headers give them.
//! - [`secret`]: a token or password whose `Debug` never shows it.
//! - [`view`]: who is asking and which stores they see: a view's patterns, the audit trail's actor.
//! - [`traceparent`]: W3C Trace Context: the `traceparent` and `tracestate` values, read and written.
//! - [`keychain`]: the OS keychain that `*_keyring` token pointers name.
//! - [`metadata`]: a hit's metadata kept as one JSON text, written once, passed through.
//! - [`chain`]: where a search stands among callosums: via ids, depth, call budget.
//! - [`jsonrpc`]: JSON-RPC framing in front of rmcp (answers what rmcp leaves out).
//! - [`identity`]: which hits of several stores are one document (a search's identity, a store's
//!   `identity_key`, a content's normal form).
//! - [`config`]: the YAML file plus `SEREN_SCC_*` overrides, parsed into a validated [`config::Config`]; the knob table.
//! - [`fusion`]: pure weighted RRF over ranked lists.
//! - [`eval`]: judged queries, the measures of a ranking, bootstrap intervals, TREC run files (pure).
//! - [`api`]: the wire types both edges speak.
//! - [`packet`]: the packet a model reads: pages, seats, the authority lead, edges, hops (pure).
//! - [`guard`]: what keeps web pages out: the Host allow-list, the Origin check, JSON-only bodies.
//! - [`listener`]: the accept loop: connection cap with idle eviction, header timeout, graceful drain.
//! - [`ledger`]: the bytes of store answers a search and the process hold, each bounded.
//! - [`audit`]: the audit trail: one JSON line per write, naming who made it.
//! - [`overlay`]: the machine-managed `runtime-stores.json` (or table) beside the config.
//! - [`store`]: one [`store::Protocol`] per store type, the `mcp` type, the shared HTTP call to a store,
//!   and how a store entry is bound.
//! - [`health`]: per-store call records and the circuit breaker that reads them.
//! - [`render`]: the answer as compact text.
//! - [`explain`]: why each hit is where it is, for a search that asks (`explain: true`).
//! - [`oauth`]: the OAuth 2.1 resource server: access tokens checked against the issuer's keys.
//! - [`metrics`]: the Prometheus families of `GET /metrics`: names, buckets, the exposition.
//! - [`telemetry`]: OpenTelemetry traces: a search's spans, exported over OTLP/HTTP in bounded
//!   batches off the search's path (nothing at all when `telemetry:` is unset).
//! - [`roster`]: the live set of stores (config + overlay) and each one's status.
//! - [`knobs`]: the live knobs, read once per search, changed by `/configure` and a reload.
//! - [`federation`]: the one core both edges call: fan out, collect failures, fuse, answer.
//! - [`reload`]: hot reload of the config file and the overlay.
//! - [`mcp`]: the four MCP tools over stdio and streamable HTTP.
//! - [`http`]: the REST routes, auth, and request ids.
//! - [`launcher`]: the npm launcher's child, which stops once the launcher is gone.
//! - [`cli`]: the command line, an edge like `http` and `mcp`: one entry per command, and the serve
//!   lifecycle (bind, warm-up, reload, graceful shutdown) the binary and the tests both run.

pub mod api;
pub mod audit;
pub mod chain;
pub mod cli;
pub mod config;
pub mod eval;
pub mod explain;
pub mod federation;
pub mod fusion;
pub mod guard;
pub mod health;
pub mod hosts;
pub mod http;
pub mod identity;
pub mod jsonrpc;
pub mod keychain;
pub mod knobs;
pub mod launcher;
pub mod ledger;
pub mod limits;
pub mod listener;
pub mod logline;
pub mod mcp;
pub mod metadata;
pub mod metrics;
pub mod oauth;
pub mod overlay;
pub mod packet;
pub mod reload;
pub mod render;
pub mod roster;
pub mod secret;
pub mod store;
pub mod telemetry;
pub mod text;
pub mod traceparent;
pub mod view;

/// The crate's version, as Cargo knows it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
