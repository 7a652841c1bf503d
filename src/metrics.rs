//! The Prometheus metrics of `GET /metrics`: the family names, the buckets, what each call and
//! search adds, and the exposition, written by the Prometheus project's own Rust client
//! (`prometheus-client`) in the text format 0.0.4.
//!
//! What lives elsewhere is read at scrape time, not copied here: the breaker and the calls it
//! skipped (`health`), the searches under way (the federation's search cap), the open connections
//! (`listener`), the overlay writes (`roster` holds a [`Writes`]). So a scrape costs the searches
//! nothing, and a store that leaves the roster leaves the exposition at once: only the stores the
//! federation fans are reported, and their series here are dropped with them ([`Metrics::retain`]).
//!
//! Store names are label values; nothing else a caller sent (a query, a token, a url) is ever
//! written here. This module does not decide what a call's outcome was (that is `store::Failure`'s
//! kind) nor when to count (the federation calls in).

use crate::api::{BreakerState, StoreHealth};
use crate::health::Health;
use crate::store::{Failure, Hit};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};
use std::collections::HashMap;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

/// What `GET /metrics` answers with: the Prometheus text format, version 0.0.4 (what every
/// Prometheus server and `promtool` read; OpenMetrics would add `# EOF` and `_created` series
/// nobody here needs).
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Every family's name starts with this (and `_`).
pub const PREFIX: &str = "seren_callosum";

/// The buckets of a store call's latency, in seconds: stores answer in 1 ms (a local index) to
/// 5 s (the default per-store timeout), roughly three buckets a decade between them, so the p50
/// and p99 that `histogram_quantile` reads are within a bucket of what a store does.
pub const STORE_CALL_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// The buckets of a search's latency, in seconds: a store call's, and 10 s past them, because a
/// search waits on its slowest store and may fan more than one round (hops).
pub const SEARCH_BUCKETS: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// How a store call ended, as a label value: the kind of its [`Failure`], never its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    Ok,
    Timeout,
    /// The store refused the query (400, 413, 414, 422): it is up, the breaker ignores these.
    Refused,
    /// Any other non-2xx status.
    Status,
    Decode,
    Connect,
    Transport,
    TooLarge,
    Mcp,
    Tool,
    /// The answer was dropped to keep the search or the process within its memory bound.
    Memory,
}

impl CallOutcome {
    /// Every outcome of a call made, in the order the exposition lists them. `circuit_open` (a
    /// call not made) follows them, counted by `health`.
    pub const ALL: [CallOutcome; 11] = [
        CallOutcome::Ok,
        CallOutcome::Timeout,
        CallOutcome::Refused,
        CallOutcome::Status,
        CallOutcome::Decode,
        CallOutcome::Connect,
        CallOutcome::Transport,
        CallOutcome::TooLarge,
        CallOutcome::Mcp,
        CallOutcome::Tool,
        CallOutcome::Memory,
    ];

    /// The outcome of a call's result.
    pub fn of(result: &Result<Vec<Hit>, Failure>) -> Self {
        match result {
            Ok(_) => CallOutcome::Ok,
            Err(failure @ Failure::Status(_)) if failure.blames_the_request() => {
                CallOutcome::Refused
            }
            Err(Failure::Status(_)) => CallOutcome::Status,
            Err(Failure::Timeout(_)) => CallOutcome::Timeout,
            Err(Failure::Decode(_)) => CallOutcome::Decode,
            Err(Failure::Connect(_)) => CallOutcome::Connect,
            Err(Failure::Transport(_)) => CallOutcome::Transport,
            Err(Failure::TooLarge(_)) => CallOutcome::TooLarge,
            Err(Failure::Mcp(_)) => CallOutcome::Mcp,
            Err(Failure::Tool(_)) => CallOutcome::Tool,
            Err(Failure::Memory(_)) => CallOutcome::Memory,
        }
    }

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::Timeout => "timeout",
            CallOutcome::Refused => "refused",
            CallOutcome::Status => "status",
            CallOutcome::Decode => "decode",
            CallOutcome::Connect => "connect",
            CallOutcome::Transport => "transport",
            CallOutcome::TooLarge => "too_large",
            CallOutcome::Mcp => "mcp",
            CallOutcome::Tool => "tool",
            CallOutcome::Memory => "memory",
        }
    }
}

/// The label value of calls the breaker skipped.
const CIRCUIT_OPEN: &str = "circuit_open";

/// A breaker state as the gauge's value: 0 closed, 1 probing (half-open), 2 open; so
/// `max_over_time(...) == 2` says "was open", and an alert reads `> 0`.
fn breaker_value(state: BreakerState) -> i64 {
    match state {
        BreakerState::Closed => 0,
        BreakerState::Probing => 1,
        BreakerState::Open => 2,
    }
}

/// One store's calls: their latencies and a count per outcome.
#[derive(Debug, Clone)]
struct StoreSeries {
    duration: Histogram,
    calls: [Counter; CallOutcome::ALL.len()],
}

impl StoreSeries {
    fn new() -> Self {
        Self {
            duration: Histogram::new(STORE_CALL_BUCKETS),
            calls: Default::default(),
        }
    }

    fn observe(&self, took: Duration, outcome: CallOutcome) {
        self.duration.observe(took.as_secs_f64());
        self.calls[outcome as usize].inc();
    }
}

/// The overlay writes a roster made: written, and failed (nothing changed then). The roster holds
/// one and counts into it; [`Metrics::encode`] reads it.
#[derive(Debug, Default)]
pub struct Writes {
    ok: Counter,
    failed: Counter,
}

impl Writes {
    /// Counts one write that succeeded (`true`) or failed.
    pub fn count(&self, ok: bool) {
        if ok { &self.ok } else { &self.failed }.inc();
    }
}

/// The searches' and the store calls' own numbers, kept by the federation.
#[derive(Debug)]
pub struct Metrics {
    answered: Counter,
    refused: Counter,
    search_duration: Histogram,
    /// By store name. Read-locked per call (a map lookup, then atomics and the histogram's own
    /// short lock); write-locked only when a store is first called or leaves. Never held across
    /// an await.
    stores: RwLock<HashMap<String, StoreSeries>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            answered: Counter::default(),
            refused: Counter::default(),
            search_duration: Histogram::new(SEARCH_BUCKETS),
            stores: RwLock::default(),
        }
    }
}

/// The spans the trace exporter dropped (`telemetry`), by why: the queue was full, or the
/// collector did not take their batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpansDropped {
    pub queue_full: u64,
    pub export_failed: u64,
}

/// What a scrape reads from the rest of the service, besides [`Metrics`] itself.
pub struct Scrape<'a> {
    /// The stores fanned now, by name: only these are reported.
    pub stores: &'a [&'a str],
    /// Their breakers and the calls the breakers skipped.
    pub health: &'a Health,
    /// Searches under way, from every surface.
    pub in_flight: usize,
    pub overlay_writes: &'a Writes,
    /// The audit trail's lines written, and those that could not be.
    pub audit: (u64, u64),
    /// The spans dropped on the way to the collector; `None` when traces are off (the family is
    /// then left out).
    pub trace_spans_dropped: Option<SpansDropped>,
}

impl Metrics {
    /// Counts a search that was answered (`true`) or refused, and how long it took.
    pub fn search(&self, took: Duration, answered: bool) {
        self.search_duration.observe(took.as_secs_f64());
        if answered {
            &self.answered
        } else {
            &self.refused
        }
        .inc();
    }

    /// Counts a call to `store` that took `took` and ended in `result`.
    pub fn store_call(&self, store: &str, took: Duration, result: &Result<Vec<Hit>, Failure>) {
        let outcome = CallOutcome::of(result);
        if let Some(series) = self.read().get(store) {
            series.observe(took, outcome);
            return;
        }
        self.write()
            .entry(store.to_owned())
            .or_insert_with(StoreSeries::new)
            .observe(took, outcome);
    }

    /// Drops the series of stores not in `names`, as their health records are dropped.
    pub fn retain<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        let keep: std::collections::HashSet<&str> = names.into_iter().collect();
        self.write().retain(|name, _| keep.contains(name.as_str()));
    }

    fn read(&self) -> RwLockReadGuard<'_, HashMap<String, StoreSeries>> {
        // A panic under this lock can only have left a counter or a bucket short by one: these
        // are statistics, and carrying on beats failing every store call.
        self.stores
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, HashMap<String, StoreSeries>> {
        // See `read`.
        self.stores
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The exposition: every family, the per-store ones for `scrape.stores` only, sorted by name.
    pub fn encode(&self, scrape: Scrape<'_>) -> String {
        let health = scrape.health.snapshot(scrape.stores.iter().copied());
        let series = self.read();
        let stores = health
            .into_iter()
            .filter(|row| scrape.stores.contains(&row.name.as_str()))
            .map(|row| {
                let series = series.get(&row.name).cloned();
                (row, series.unwrap_or_else(StoreSeries::new))
            })
            .collect();
        drop(series);
        let families = Families {
            searches: [
                ("answered", self.answered.get()),
                ("refused", self.refused.get()),
            ],
            search_duration: self.search_duration.clone(),
            in_flight: i64::try_from(scrape.in_flight).unwrap_or(i64::MAX),
            connections: i64::try_from(crate::listener::open_connections()).unwrap_or(i64::MAX),
            stores,
            overlay_writes: [
                ("ok", scrape.overlay_writes.ok.get()),
                ("failed", scrape.overlay_writes.failed.get()),
            ],
            audit_writes: [("ok", scrape.audit.0), ("failed", scrape.audit.1)],
            trace_spans_dropped: scrape.trace_spans_dropped,
        };
        let mut registry = Registry::with_prefix(PREFIX);
        registry.register_collector(Box::new(families));
        let mut text = String::new();
        // Writing into a String cannot fail, and the encoder's one other error (a histogram with
        // native buckets only) cannot arise: every histogram here has classic buckets.
        prometheus_client::encoding::prometheus_text::encode(&mut text, &registry)
            .expect("the exposition encodes into a String");
        text
    }
}

/// One scrape's values, encoded family by family in a fixed order.
#[derive(Debug)]
struct Families {
    searches: [(&'static str, u64); 2],
    search_duration: Histogram,
    in_flight: i64,
    connections: i64,
    /// Sorted by name: each fanned store's health row and its series.
    stores: Vec<(StoreHealth, StoreSeries)>,
    overlay_writes: [(&'static str, u64); 2],
    audit_writes: [(&'static str, u64); 2],
    trace_spans_dropped: Option<SpansDropped>,
}

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let build = Info::new([("version", crate::VERSION)]);
        build.encode(encoder.encode_descriptor(
            "build",
            "The running build: its version, as a label",
            None,
            MetricType::Info,
        )?)?;

        let mut family = encoder.encode_descriptor(
            "searches",
            "Searches from every surface (REST, MCP, CLI) by outcome: answered (200, perhaps with failed stores) or refused (a bad request, busy, a loop)",
            None,
            MetricType::Counter,
        )?;
        for (outcome, count) in &self.searches {
            ConstCounter::new(*count).encode(family.encode_family(&[("outcome", *outcome)])?)?;
        }

        self.search_duration.encode(encoder.encode_descriptor(
            "search_duration",
            "How long a search took, refused ones included",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?)?;

        ConstGauge::new(self.in_flight).encode(encoder.encode_descriptor(
            "in_flight_searches",
            "Searches under way now, from every surface (capped by server.max_in_flight)",
            None,
            MetricType::Gauge,
        )?)?;

        ConstGauge::new(self.connections).encode(encoder.encode_descriptor(
            "connections",
            "HTTP connections open now (capped by server.max_connections)",
            None,
            MetricType::Gauge,
        )?)?;

        if !self.stores.is_empty() {
            self.encode_stores(&mut encoder)?;
        }

        let mut family = encoder.encode_descriptor(
            "overlay_writes",
            "Writes of the runtime overlay (runtime-stores.json) by result: ok, or failed (nothing changed)",
            None,
            MetricType::Counter,
        )?;
        for (result, count) in &self.overlay_writes {
            ConstCounter::new(*count).encode(family.encode_family(&[("result", *result)])?)?;
        }

        let mut family = encoder.encode_descriptor(
            "audit_writes",
            "Lines of the audit trail (server.audit_log) by result: ok, or failed (the change was applied all the same)",
            None,
            MetricType::Counter,
        )?;
        for (result, count) in &self.audit_writes {
            ConstCounter::new(*count).encode(family.encode_family(&[("result", *result)])?)?;
        }

        if let Some(dropped) = self.trace_spans_dropped {
            let mut family = encoder.encode_descriptor(
                "trace_spans_dropped",
                "Spans not exported (telemetry on), by reason: queue_full (ended while the export queue was at its cap) or export_failed (their batch was not taken by the collector)",
                None,
                MetricType::Counter,
            )?;
            for (reason, count) in [
                ("queue_full", dropped.queue_full),
                ("export_failed", dropped.export_failed),
            ] {
                ConstCounter::new(count).encode(family.encode_family(&[("reason", reason)])?)?;
            }
        }
        Ok(())
    }
}

impl Families {
    /// The per-store families: written only when a store is fanned, as a family with no series
    /// says nothing.
    fn encode_stores(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(
            "store_calls",
            "Calls to each fanned store by outcome: ok, or the kind of failure; circuit_open counts calls the breaker skipped",
            None,
            MetricType::Counter,
        )?;
        for (row, series) in &self.stores {
            let store = row.name.as_str();
            for (outcome, counter) in CallOutcome::ALL.iter().zip(&series.calls) {
                let labels = [("store", store), ("outcome", outcome.label())];
                ConstCounter::new(counter.get()).encode(family.encode_family(&labels)?)?;
            }
            let labels = [("store", store), ("outcome", CIRCUIT_OPEN)];
            ConstCounter::new(row.short_circuited).encode(family.encode_family(&labels)?)?;
        }

        let mut family = encoder.encode_descriptor(
            "store_call_duration",
            "How long each call to a fanned store took, failed ones included (a timeout at the store's timeout)",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for (row, series) in &self.stores {
            let labels = [("store", row.name.as_str())];
            series.duration.encode(family.encode_family(&labels)?)?;
        }

        let mut family = encoder.encode_descriptor(
            "store_breaker_state",
            "Each fanned store's circuit breaker: 0 closed, 1 probing (half-open), 2 open",
            None,
            MetricType::Gauge,
        )?;
        for (row, _) in &self.stores {
            let labels = [("store", row.name.as_str())];
            ConstGauge::new(breaker_value(row.breaker)).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::{BreakerSettings, Outcome};

    const MS: Duration = Duration::from_millis(1);

    fn scrape(metrics: &Metrics, stores: &[&str], health: &Health) -> String {
        metrics.encode(Scrape {
            stores,
            health,
            in_flight: 3,
            overlay_writes: &Writes::default(),
            audit: (0, 0),
            trace_spans_dropped: None,
        })
    }

    /// The value of the sample `series` (name and labels, as written), if it is there.
    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
            .map(|v| v.parse().unwrap())
    }

    #[test]
    fn each_failure_kind_has_its_own_outcome() {
        let check = |result: Result<Vec<Hit>, Failure>, expected: &str| {
            assert_eq!(CallOutcome::of(&result).label(), expected, "{result:?}");
        };
        check(Ok(Vec::new()), "ok");
        check(Err(Failure::Timeout(Duration::from_secs(5))), "timeout");
        for code in [400, 413, 414, 422] {
            check(Err(Failure::Status(code)), "refused");
        }
        for code in [401, 404, 500, 503, 508] {
            check(Err(Failure::Status(code)), "status");
        }
        check(Err(Failure::Decode("x".into())), "decode");
        check(
            Err(Failure::Connect("connection refused".into())),
            "connect",
        );
        check(Err(Failure::Transport("reset".into())), "transport");
        check(Err(Failure::TooLarge(1024)), "too_large");
        check(Err(Failure::Mcp("exited".into())), "mcp");
        check(Err(Failure::Tool("status 400".into())), "tool");
        // The index into a store's counters is the outcome's place in `ALL`.
        for (i, outcome) in CallOutcome::ALL.iter().enumerate() {
            assert_eq!(*outcome as usize, i);
        }
    }

    #[test]
    fn calls_are_counted_by_store_and_outcome_and_timed() {
        let metrics = Metrics::default();
        let health = Health::new(BreakerSettings::default());
        metrics.store_call("a.b-c_d", Duration::from_millis(3), &Ok(Vec::new()));
        metrics.store_call("a.b-c_d", Duration::from_millis(30), &Ok(Vec::new()));
        metrics.store_call("down", 5 * MS, &Err(Failure::Status(500)));
        metrics.search(Duration::from_millis(40), true);
        metrics.search(MS, false);
        let text = scrape(&metrics, &["a.b-c_d", "down", "never"], &health);
        let at = |series: &str| value(&text, series).unwrap_or_else(|| panic!("{series}\n{text}"));
        assert_eq!(
            at(r#"seren_callosum_store_calls_total{store="a.b-c_d",outcome="ok"}"#),
            2.0
        );
        assert_eq!(
            at(r#"seren_callosum_store_calls_total{store="down",outcome="status"}"#),
            1.0
        );
        assert_eq!(
            at(r#"seren_callosum_store_calls_total{store="never",outcome="ok"}"#),
            0.0,
            "a store never called is reported, at zero"
        );
        assert_eq!(
            at(r#"seren_callosum_store_call_duration_seconds_bucket{store="a.b-c_d",le="0.005"}"#),
            1.0
        );
        assert_eq!(
            at(r#"seren_callosum_store_call_duration_seconds_bucket{store="a.b-c_d",le="0.05"}"#),
            2.0
        );
        assert_eq!(
            at(r#"seren_callosum_store_call_duration_seconds_bucket{store="a.b-c_d",le="+Inf"}"#),
            2.0
        );
        assert_eq!(
            at(r#"seren_callosum_store_call_duration_seconds_count{store="a.b-c_d"}"#),
            2.0
        );
        assert_eq!(
            at(r#"seren_callosum_searches_total{outcome="answered"}"#),
            1.0
        );
        assert_eq!(
            at(r#"seren_callosum_searches_total{outcome="refused"}"#),
            1.0
        );
        assert_eq!(at("seren_callosum_search_duration_seconds_count"), 2.0);
        assert_eq!(at("seren_callosum_in_flight_searches"), 3.0);
        assert_eq!(
            at(&format!(
                r#"seren_callosum_build_info{{version="{}"}}"#,
                crate::VERSION
            )),
            1.0
        );
        for (family, kind) in [
            ("seren_callosum_searches_total", "counter"),
            ("seren_callosum_search_duration_seconds", "histogram"),
            ("seren_callosum_store_calls_total", "counter"),
            ("seren_callosum_store_call_duration_seconds", "histogram"),
            ("seren_callosum_store_breaker_state", "gauge"),
            ("seren_callosum_in_flight_searches", "gauge"),
            ("seren_callosum_connections", "gauge"),
            ("seren_callosum_overlay_writes_total", "counter"),
            ("seren_callosum_audit_writes_total", "counter"),
            ("seren_callosum_build_info", "gauge"),
        ] {
            assert!(
                text.contains(&format!("# TYPE {family} {kind}\n")),
                "{family}\n{text}"
            );
        }
    }

    #[test]
    fn the_breaker_and_its_skips_come_from_health() {
        let metrics = Metrics::default();
        let health = Health::new(BreakerSettings::default());
        for _ in 0..3 {
            health.record("down", MS, Outcome::Failed("status 500".into()));
        }
        let _ = health.admit("down");
        let _ = health.admit("down");
        health.record("up", MS, Outcome::Answered);
        let text = scrape(&metrics, &["down", "up"], &health);
        assert_eq!(
            value(&text, r#"seren_callosum_store_breaker_state{store="down"}"#),
            Some(2.0)
        );
        assert_eq!(
            value(&text, r#"seren_callosum_store_breaker_state{store="up"}"#),
            Some(0.0)
        );
        assert_eq!(
            value(
                &text,
                r#"seren_callosum_store_calls_total{store="down",outcome="circuit_open"}"#
            ),
            Some(2.0)
        );
    }

    #[test]
    fn only_fanned_stores_are_reported_and_a_removed_one_is_gone() {
        let metrics = Metrics::default();
        let health = Health::new(BreakerSettings::default());
        for store in ["kept", "gone"] {
            metrics.store_call(store, MS, &Ok(Vec::new()));
            health.record(store, MS, Outcome::Answered);
        }
        let text = scrape(&metrics, &["kept"], &health);
        assert!(text.contains(r#"store="kept""#));
        assert!(!text.contains("gone"), "{text}");
        metrics.retain(["kept"]);
        assert_eq!(metrics.read().len(), 1);
    }

    #[test]
    fn label_values_are_escaped() {
        // Store names cannot hold these (`config::check_name`); the encoder escapes anyway.
        let metrics = Metrics::default();
        let health = Health::new(BreakerSettings::default());
        let name = "q\"uo\\te\nd";
        metrics.store_call(name, MS, &Ok(Vec::new()));
        let text = scrape(&metrics, &[name], &health);
        assert!(
            text.contains(r#"{store="q\"uo\\te\nd",outcome="ok"} 1"#),
            "{text}"
        );
        assert!(!text.contains(name));
    }

    #[test]
    fn overlay_writes_are_counted_by_result() {
        let metrics = Metrics::default();
        let writes = Writes::default();
        writes.count(true);
        writes.count(true);
        writes.count(false);
        let text = metrics.encode(Scrape {
            stores: &[],
            health: &Health::default(),
            in_flight: 0,
            overlay_writes: &writes,
            audit: (0, 0),
            trace_spans_dropped: None,
        });
        assert_eq!(
            value(&text, r#"seren_callosum_overlay_writes_total{result="ok"}"#),
            Some(2.0)
        );
        assert_eq!(
            value(
                &text,
                r#"seren_callosum_overlay_writes_total{result="failed"}"#
            ),
            Some(1.0)
        );
    }

    #[test]
    fn dropped_spans_are_written_only_while_traces_are_on() {
        let metrics = Metrics::default();
        let scrape = |dropped| {
            metrics.encode(Scrape {
                stores: &[],
                health: &Health::default(),
                in_flight: 0,
                overlay_writes: &Writes::default(),
                audit: (0, 0),
                trace_spans_dropped: dropped,
            })
        };
        assert!(!scrape(None).contains("trace_spans_dropped"));
        let text = scrape(Some(SpansDropped {
            queue_full: 3,
            export_failed: 7,
        }));
        let at = |reason: &str| {
            let series =
                format!(r#"seren_callosum_trace_spans_dropped_total{{reason="{reason}"}}"#);
            value(&text, &series)
        };
        assert_eq!(
            (at("queue_full"), at("export_failed")),
            (Some(3.0), Some(7.0))
        );
        assert!(
            text.contains("# TYPE seren_callosum_trace_spans_dropped_total counter"),
            "{text}"
        );
    }
}
