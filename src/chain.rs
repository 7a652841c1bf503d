//! The chain a search travels: which callosums it has passed through, how deep it is, and how many
//! store calls it may still cause. Read from the headers of an inbound search and written onto
//! every outbound store call, whatever the store's type: a `seren_memory` entry whose url is a
//! callosum is a callosum to the chain, and so is one that points back at this very listener.
//!
//! Three guards, each enough alone for a case the others miss:
//! - **via**: every callosum adds its own random id; one that meets its id again answers 508 at
//!   once, so a loop (a store pointed at itself, A → B → A) costs one extra call, not a tree.
//! - **depth**: past [`MAX_DEPTH`] callosums in a chain no store is asked (a chain of distinct
//!   callosums that forget the via header, say).
//! - **budget**: the store calls one search may cause in all, split among the stores asked at each
//!   level, so no tree of callosums, however wide, turns one search into a flood.
//!
//! Beside them rides the W3C trace context ([`Trace`]): read from an inbound search's
//! `traceparent` and `tracestate` (headers, or `_meta` members over MCP), and written on an
//! outbound call only when `telemetry` has put its own store call span there
//! ([`Chain::traced`]); a chain one level down starts without one.

use crate::traceparent::Trace;
use std::fmt;

/// Tells a callosum how deep in a chain of callosums its caller is.
pub const DEPTH_HEADER: &str = "x-seren-callosum-depth";
/// The ids of the callosums a search has passed through, comma-separated, oldest first.
pub const VIA_HEADER: &str = "x-seren-callosum-via";
/// How many store calls the search may still cause below the callosum that receives it.
pub const BUDGET_HEADER: &str = "x-seren-callosum-budget";
/// The `_meta` member of an MCP tool call that carries the chain.
pub const META_KEY: &str = "seren-corpus-callosum/chain";
pub use crate::limits::{DEFAULT_CALL_BUDGET as DEFAULT_BUDGET, MAX_CHAIN_DEPTH as MAX_DEPTH};

/// One callosum's id in a chain: random per process, so two processes never share one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Id(u64);

impl Id {
    /// A fresh id.
    pub fn random() -> Self {
        use std::hash::{BuildHasher, Hasher};
        // RandomState is seeded randomly per process; no other dependency is needed for 64 bits
        // that differ between processes.
        let mut hasher = std::hash::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        Self(hasher.finish())
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// Where a search stands in its chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    /// Callosums before this one (0 for a direct caller).
    pub depth: u32,
    /// Their ids, oldest first.
    pub via: Vec<Id>,
    /// Store calls this callosum and everything below it may still make.
    pub budget: u32,
    /// The caller's trace context, inbound; outbound, the store call's span (`None` unless
    /// traces are on).
    pub trace: Option<Trace>,
}

impl Default for Chain {
    fn default() -> Self {
        Self::root()
    }
}

impl Chain {
    /// A search that starts here (REST without chain headers, MCP, the CLI).
    pub fn root() -> Self {
        Self {
            depth: 0,
            via: Vec::new(),
            budget: DEFAULT_BUDGET,
            trace: None,
        }
    }

    /// Reads the chain headers through `header` (a lookup by name), and the trace context
    /// (`traceparent`, `tracestate`). Absent or unreadable values fall back to a root's; a number
    /// too large for `u32` saturates, it never wraps to 0.
    pub fn from_headers<'a>(header: impl Fn(&str) -> Option<&'a str>) -> Self {
        let number = |name: &str, default: u32| {
            header(name)
                .map(str::trim)
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .map_or(default, |v| v.parse::<u64>().map_or(u32::MAX, saturate))
        };
        let via = header(VIA_HEADER)
            .unwrap_or_default()
            .split(',')
            .filter_map(|id| u64::from_str_radix(id.trim(), 16).ok().map(Id))
            // More ids than a chain may be long cannot come from callosums that keep to the rule.
            .take(MAX_DEPTH as usize + 1)
            .collect();
        Self {
            depth: number(DEPTH_HEADER, 0),
            via,
            budget: number(BUDGET_HEADER, DEFAULT_BUDGET).min(DEFAULT_BUDGET),
            trace: Trace::read(&header),
        }
    }

    /// This chain with the trace context `header` gives when it has none of its own: an MCP
    /// call's `_meta.traceparent` stands before the header of the HTTP request that carried it.
    pub fn or_trace_from<'a>(mut self, header: impl Fn(&str) -> Option<&'a str>) -> Self {
        if self.trace.is_none() {
            self.trace = Trace::read(header);
        }
        self
    }

    /// This chain carrying `trace` instead (a store call's span, outbound).
    pub fn traced(&self, trace: Trace) -> Self {
        Self {
            trace: Some(trace),
            ..self.clone()
        }
    }

    /// Whether `id` already stands in this chain: the search came back around.
    pub fn passed(&self, id: Id) -> bool {
        self.via.contains(&id)
    }

    /// The chain one level down, through `id`, with `budget` calls for what lies below.
    pub fn child(&self, id: Id, budget: u32) -> Self {
        let mut via = self.via.clone();
        via.push(id);
        Self {
            depth: self.depth.saturating_add(1),
            via,
            budget,
            trace: None,
        }
    }

    /// The chain as MCP request `_meta` ([`META_KEY`]: the three headers by name), for a store
    /// called through an MCP tool: a callosum reached that way reads it back with
    /// [`Chain::from_meta`], so a loop through MCP stops as one through HTTP does. The trace
    /// context, when there is one, is `_meta.traceparent` and `_meta.tracestate`, where any MCP
    /// server that follows the convention looks.
    pub fn meta(&self) -> serde_json::Map<String, serde_json::Value> {
        let headers: serde_json::Map<String, serde_json::Value> = self
            .headers()
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value.into()))
            .collect();
        let mut meta = serde_json::Map::new();
        meta.insert(META_KEY.to_owned(), headers.into());
        for (name, value) in self.trace_headers() {
            meta.insert(name.to_owned(), value.into());
        }
        meta
    }

    /// Reads the chain from an MCP request's `_meta`; without it, a root. The trace context is
    /// read from `_meta.traceparent` and `_meta.tracestate`.
    pub fn from_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Self {
        let chain = meta.get(META_KEY).and_then(serde_json::Value::as_object);
        Self {
            trace: Trace::read(|name| meta.get(name)?.as_str()),
            ..Self::from_headers(|name| chain?.get(name)?.as_str())
        }
    }

    /// The trace context's headers for an outbound call: none unless traces put a span there.
    pub fn trace_headers(&self) -> impl Iterator<Item = (&'static str, String)> + '_ {
        self.trace.iter().flat_map(Trace::values)
    }

    /// The headers to send with an outbound call.
    pub fn headers(&self) -> [(&'static str, String); 3] {
        use std::fmt::Write as _;
        // One string for the ids (16 hex digits and a comma each), not one per id joined.
        let mut via = String::with_capacity(17 * self.via.len());
        for (i, id) in self.via.iter().enumerate() {
            if i > 0 {
                via.push(',');
            }
            // Writing into a String cannot fail.
            let _ = write!(via, "{id}");
        }
        [
            (DEPTH_HEADER, self.depth.to_string()),
            (VIA_HEADER, via),
            (BUDGET_HEADER, self.budget.to_string()),
        ]
    }
}

fn saturate(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Chain {
        Chain::from_headers(|name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v))
    }

    #[test]
    fn headers_round_trip_and_absent_ones_are_a_root() {
        assert_eq!(read(&[]), Chain::root());
        let id = Id(0xabc);
        let child = Chain::root().child(id, 40);
        let sent = child.headers();
        let back = read(
            &sent
                .iter()
                .map(|(n, v)| (*n, v.as_str()))
                .collect::<Vec<_>>(),
        );
        assert_eq!(back, child);
        assert!(back.passed(id));
        assert!(!back.passed(Id(1)));
        assert_eq!(back.depth, 1);
    }

    #[test]
    fn the_chain_round_trips_through_mcp_meta() {
        let child = Chain::root().child(Id(0xabc), 12).child(Id(7), 3);
        assert_eq!(
            child.headers()[1],
            (VIA_HEADER, "0000000000000abc,0000000000000007".to_owned())
        );
        assert_eq!(Chain::from_meta(&child.meta()), child);
        assert_eq!(Chain::from_meta(&serde_json::Map::new()), Chain::root());
        let junk = serde_json::json!({META_KEY: {DEPTH_HEADER: 3}});
        assert_eq!(Chain::from_meta(junk.as_object().unwrap()).depth, 0);
    }

    #[test]
    fn a_huge_depth_saturates_instead_of_wrapping() {
        // `4294967295 + 1` once wrapped to 0 and turned the depth guard off.
        let chain = read(&[(DEPTH_HEADER, "4294967295")]);
        assert_eq!(chain.depth, u32::MAX);
        assert_eq!(chain.child(Id(1), 0).depth, u32::MAX);
        assert_eq!(
            read(&[(DEPTH_HEADER, "99999999999999999999999")]).depth,
            u32::MAX
        );
        assert_eq!(read(&[(DEPTH_HEADER, "-1")]).depth, 0);
        assert_eq!(read(&[(DEPTH_HEADER, "eight")]).depth, 0);
    }

    #[test]
    fn a_caller_cannot_raise_the_budget_and_via_is_bounded() {
        assert_eq!(read(&[(BUDGET_HEADER, "100000")]).budget, DEFAULT_BUDGET);
        assert_eq!(read(&[(BUDGET_HEADER, "3")]).budget, 3);
        assert_eq!(read(&[(BUDGET_HEADER, "0")]).budget, 0);
        let many = vec!["1"; 100].join(",");
        assert_eq!(
            read(&[(VIA_HEADER, &many)]).via.len(),
            MAX_DEPTH as usize + 1
        );
        assert_eq!(read(&[(VIA_HEADER, "zz, 10 ,")]).via, [Id(16)]);
    }

    #[test]
    fn the_trace_context_comes_in_but_goes_out_only_when_traced() {
        use crate::traceparent::{TRACEPARENT, TRACESTATE};
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let inbound = read(&[(TRACEPARENT, parent), (TRACESTATE, "v=1")]);
        let trace = inbound.trace.clone().expect("read with the chain");
        assert_eq!(trace.parent.to_string(), parent);
        // One level down the inbound context is gone: only a store call's own span is sent.
        let below = inbound.child(Id(1), 5);
        assert_eq!(below.trace, None);
        assert_eq!(below.trace_headers().count(), 0);
        assert!(!below.meta().contains_key(TRACEPARENT));
        let traced = below.traced(trace.clone());
        assert_eq!((traced.depth, traced.budget), (below.depth, below.budget));
        let sent: Vec<_> = traced.trace_headers().collect();
        assert_eq!(
            sent,
            [
                (TRACEPARENT, parent.to_owned()),
                (TRACESTATE, "v=1".to_owned())
            ]
        );
        // Over MCP it is `_meta.traceparent`, beside the chain's own member, and read back.
        let meta = traced.meta();
        assert_eq!(meta[TRACEPARENT], parent);
        assert_eq!(Chain::from_meta(&meta), traced);
        // `_meta` stands before the HTTP header that carried the request; the header fills in.
        let other = "00-11111111111111111111111111111111-2222222222222222-00";
        let header = |name: &str| (name == TRACEPARENT).then_some(other);
        assert_eq!(
            Chain::from_meta(&meta).or_trace_from(header).trace,
            Some(trace)
        );
        let filled = Chain::from_meta(&serde_json::Map::new()).or_trace_from(header);
        assert_eq!(filled.trace.unwrap().parent.to_string(), other);
    }
}
