//! OpenTelemetry traces (contract §6d): a search is one span (`search`, kind server), a child per
//! store call (`store.call`, kind client) and per hop round (`hop`); exported over OTLP/HTTP in
//! bounded batches by a thread of the SDK's, never on a search's path (`export`).
//!
//! Off (no `telemetry:` endpoint, nor `OTEL_EXPORTER_OTLP_*`), [`Traces`] is `None` inside and every
//! call here is one check of it: no span, no id, no header, no thread.
//!
//! On, a search's span is the child of the caller's `traceparent` when one came (the chain
//! carries it in), and every store call carries its own `store.call` span's context out, as a
//! header or as `_meta` ([`Span::outbound`]), so a tree of callosums is one trace. What a span
//! says is numbers and names from the configuration: a store's name and type, an outcome, a
//! count. Never the query, a hop's bridge query, a token, a url or a store's words.
//!
//! It does not decide what a call's outcome was (`metrics::CallOutcome` names its kind; the words
//! of §6d are mapped from it here) nor when a call is made (`federation`).

mod export;

use crate::api::SearchAnswer;
use crate::chain::Chain;
use crate::config::Telemetry;
use crate::metrics::{CallOutcome, SpansDropped};
use crate::store::{Failure, Hit};
use crate::traceparent::{Trace, TraceParent};
use export::Queue;
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer, TracerProvider,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The service's traces: off, or a provider exporting where `telemetry:` says.
#[derive(Clone, Default)]
pub struct Traces(Option<Arc<On>>);

struct On {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    queue: Arc<Queue>,
}

impl std::fmt::Debug for Traces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Traces").field(&self.0.is_some()).finish()
    }
}

impl Traces {
    /// No traces.
    pub fn off() -> Self {
        Self(None)
    }

    /// Traces as `settings` say (`None`: off). An exporter that cannot be built (an
    /// `OTEL_EXPORTER_OTLP_*` variable the SDK reads and refuses, say) is said in the log, and
    /// the service runs without traces: like a store that cannot be bound, it fails nothing else.
    pub fn start(settings: Option<&Telemetry>, trust_system_store: bool) -> Self {
        let Some(settings) = settings else {
            return Self::off();
        };
        match On::start(settings, trust_system_store) {
            Ok(on) => {
                tracing::info!(
                    endpoint = %settings.endpoint,
                    service = %settings.service_name,
                    sample_ratio = settings.sample_ratio,
                    "traces: exporting spans over OTLP/HTTP"
                );
                Self(Some(Arc::new(on)))
            }
            Err(why) => {
                tracing::error!("traces are off: the OTLP exporter could not be built: {why}");
                Self::off()
            }
        }
    }

    /// Whether spans are made and exported.
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// A search's span (`search`, kind server), the child of the caller's trace context when
    /// `chain` carries one; `None` when traces are off.
    pub fn search(&self, chain: &Chain) -> Option<Span<'_>> {
        let on = self.0.as_deref()?;
        let parent = match &chain.trace {
            Some(trace) => Context::new().with_remote_span_context(remote(trace)),
            None => Context::new(),
        };
        let span = on
            .tracer
            .span_builder("search")
            .with_kind(SpanKind::Server)
            .with_attributes([KeyValue::new("callosum.depth", i64::from(chain.depth))])
            .start_with_context(&on.tracer, &parent);
        Some(Span::new(Context::new().with_span(span), &on.tracer))
    }

    /// The spans dropped so far, when traces are on.
    pub fn dropped(&self) -> Option<SpansDropped> {
        let queue = &self.0.as_deref()?.queue;
        Some(SpansDropped {
            queue_full: queue.queue_full.load(Ordering::Relaxed),
            export_failed: queue.export_failed.load(Ordering::Relaxed),
        })
    }

    /// Sends what is still queued, waiting at most `limits::TRACE_SHUTDOWN_WAIT`, and stops
    /// the exporter: at the end of a server's life. Blocks a thread of the blocking pool, not the
    /// caller's.
    pub async fn shutdown(&self) {
        let Some(on) = self.0.clone() else {
            return;
        };
        let wait = crate::limits::TRACE_SHUTDOWN_WAIT;
        let shut = tokio::task::spawn_blocking(move || on.provider.shutdown_with_timeout(wait));
        if let Ok(Err(error)) = shut.await {
            tracing::debug!(%error, "traces: the exporter's shutdown");
        }
    }

    /// Sends what is queued now, waiting at most the SDK's 5 s (for a test, or before a
    /// process that searched once ends). Blocks a thread of the blocking pool.
    pub async fn flush(&self) {
        let Some(on) = self.0.clone() else {
            return;
        };
        let _ = tokio::task::spawn_blocking(move || on.provider.force_flush()).await;
    }
}

impl On {
    fn start(settings: &Telemetry, trust_system_store: bool) -> Result<Self, String> {
        use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(export::Collector::new(trust_system_store)?)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(settings.endpoint.as_str())
            .with_timeout(crate::limits::TRACE_EXPORT_TIMEOUT)
            .build()
            .map_err(|error| error.to_string())?;
        let queue = Arc::new(Queue::default());
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(settings.service_name.clone())
            .with_attribute(KeyValue::new("service.version", crate::VERSION))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(export::processor(exporter, queue.clone()))
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
                settings.sample_ratio,
            ))))
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("seren-corpus-callosum");
        Ok(Self {
            provider,
            tracer,
            queue,
        })
    }
}

/// The caller's span, as the remote parent of ours.
fn remote(trace: &Trace) -> SpanContext {
    let state = (trace.state.as_deref())
        .and_then(|state| TraceState::from_str(state).ok())
        .unwrap_or_default();
    SpanContext::new(
        TraceId::from_bytes(trace.parent.trace_id),
        SpanId::from_bytes(trace.parent.parent_id),
        TraceFlags::new(trace.parent.flags),
        true,
        state,
    )
}

/// One span under way: ended when dropped. A search's that ends unanswered (refused, or dropped
/// with its request) says so in its status.
pub struct Span<'a> {
    cx: Context,
    tracer: &'a SdkTracer,
    /// Whether its end was said ([`Span::answered`], [`Span::called`], [`Span::unanswered`]).
    said: AtomicBool,
}

impl Drop for Span<'_> {
    fn drop(&mut self) {
        let span = self.cx.span();
        if !self.said.load(Ordering::Relaxed) {
            span.set_status(Status::error("not answered"));
        }
        span.end();
    }
}

impl<'a> Span<'a> {
    fn new(cx: Context, tracer: &'a SdkTracer) -> Self {
        Self {
            cx,
            tracer,
            said: AtomicBool::new(false),
        }
    }

    fn child(&self, name: &'static str, kind: SpanKind, attributes: Vec<KeyValue>) -> Span<'a> {
        let span = (self.tracer.span_builder(name))
            .with_kind(kind)
            .with_attributes(attributes)
            .start_with_context(self.tracer, &self.cx);
        Span::new(self.cx.with_span(span), self.tracer)
    }

    /// A call to a store (`store.call`, kind client): `operation` is `search` or `by_topic`.
    pub fn store_call(&self, store: &str, kind: &str, operation: &'static str) -> Span<'a> {
        self.child(
            "store.call",
            SpanKind::Client,
            vec![
                KeyValue::new("store.name", store.to_owned()),
                KeyValue::new("store.type", kind.to_owned()),
                KeyValue::new("store.operation", operation),
            ],
        )
    }

    /// A hop round (`hop`, internal): its number (2 and on) and the stores it fans.
    pub fn hop(&self, round: usize, stores: usize) -> Span<'a> {
        self.child(
            "hop",
            SpanKind::Internal,
            vec![
                KeyValue::new("hop.round", count(round)),
                KeyValue::new("hop.stores", count(stores)),
            ],
        )
    }

    /// `chain` carrying this span's context: what a store call sends (`traceparent`, and
    /// `tracestate` when the trace has one), so the store's spans are this one's children.
    pub fn outbound(&self, chain: &Chain) -> Chain {
        let span = self.cx.span();
        let context = span.span_context();
        let state = context.trace_state().header();
        chain.traced(Trace {
            parent: TraceParent {
                trace_id: context.trace_id().to_bytes(),
                parent_id: context.span_id().to_bytes(),
                flags: context.trace_flags().to_u8(),
            },
            state: (!state.is_empty()).then(|| state.into_boxed_str()),
        })
    }

    /// How a store call ended: `outcome` (§6d's words), `hits`, and for a failure `error.type`
    /// (the kind `GET /metrics` counts it under) and an error status of the same word.
    pub fn called(&self, result: &Result<Vec<Hit>, Failure>) {
        let kind = CallOutcome::of(result);
        match result {
            Ok(hits) => self.end_call("ok", None, hits.len()),
            Err(_) => self.end_call(outcome(kind), Some(kind.label()), 0),
        }
    }

    /// A store call that was not made or not waited for: the breaker skipped it
    /// (`circuit_open`), or the search's deadline cut it (`timeout`).
    pub fn unanswered(&self, outcome: &'static str) {
        self.end_call(outcome, Some(outcome), 0);
    }

    fn end_call(&self, outcome: &'static str, error: Option<&'static str>, hits: usize) {
        let span = self.cx.span();
        span.set_attribute(KeyValue::new("outcome", outcome));
        span.set_attribute(KeyValue::new("hits", count(hits)));
        if let Some(error) = error {
            span.set_attribute(KeyValue::new("error.type", error));
            span.set_status(Status::error(error));
        }
        self.said.store(true, Ordering::Relaxed);
    }

    /// A search answered: how many hits it gave, and how many stores answered or failed.
    pub fn answered(&self, answer: &SearchAnswer) {
        let span = self.cx.span();
        span.set_attributes([
            KeyValue::new("hits", count(answer.hits.len())),
            KeyValue::new("stores.answered", count(answer.stores_searched.len())),
            KeyValue::new("stores.failed", count(answer.failed.len())),
        ]);
        self.said.store(true, Ordering::Relaxed);
    }

    /// A hop round that ran: how many hits it kept.
    pub fn kept(&self, hits: usize) {
        self.cx
            .span()
            .set_attribute(KeyValue::new("hits", count(hits)));
        self.said.store(true, Ordering::Relaxed);
    }
}

/// §6d's outcome of a failed call, from the kind `GET /metrics` counts it under: the contract's
/// four ways a store gives nothing (it timed out, could not be reached, answered a status,
/// answered what cannot be read), and the breaker's skip beside them.
fn outcome(kind: CallOutcome) -> &'static str {
    match kind {
        CallOutcome::Ok => "ok",
        CallOutcome::Timeout => "timeout",
        // No connection, a connection broken mid-way, an MCP server that would not start or
        // whose session ended: the store could not be reached.
        CallOutcome::Connect | CallOutcome::Transport | CallOutcome::Mcp => "refused",
        // A non-2xx status, a refusal of the query (400, 413, 414, 422), an MCP tool's error: the
        // store answered, and said no.
        CallOutcome::Status | CallOutcome::Refused | CallOutcome::Tool => "status",
        // A body that is not the answer, over the cap, or over the memory bound while read.
        CallOutcome::Decode | CallOutcome::TooLarge | CallOutcome::Memory => "decode",
    }
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failure_kind_has_one_of_the_contract_s_outcomes() {
        let words = ["ok", "timeout", "refused", "status", "decode"];
        for kind in CallOutcome::ALL {
            assert!(words.contains(&outcome(kind)), "{kind:?}");
        }
        assert_eq!(outcome(CallOutcome::Connect), "refused");
        assert_eq!(outcome(CallOutcome::Refused), "status");
        assert_eq!(outcome(CallOutcome::TooLarge), "decode");
    }

    #[test]
    fn off_makes_nothing() {
        let traces = Traces::off();
        assert!(!traces.is_on());
        assert!(traces.search(&Chain::root()).is_none());
        assert!(traces.dropped().is_none());
    }
}
