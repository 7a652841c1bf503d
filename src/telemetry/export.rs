//! How spans leave: the OpenTelemetry SDK's batch processor (its own thread, a capped queue) in
//! front of the OTLP/HTTP exporter, which POSTs protobuf over a reqwest client of ours; and the
//! count of what was dropped on the way, which the SDK keeps to itself.
//!
//! What is counted, exactly ([`Queue`]):
//! - `queue_full`: a span that ended while [`TRACE_QUEUE_CAP`] spans already waited (queued, or
//!   taken by the batch thread and not yet handed to the exporter). It is dropped here, before
//!   the SDK's queue, so that queue is never full and drops nothing we do not see.
//! - `export_failed`: every span of a batch the exporter gave up on (the collector down or
//!   refusing, after the OTLP exporter's own retries within [`TRACE_EXPORT_TIMEOUT`]).
//!
//! Not counted: spans a sampler left out (never recorded), and spans that end after the shutdown
//! (a search still running past the drain), which the SDK drops.
//!
//! The batch thread drives each export to its end on a runtime of its own, so no export runs on
//! (or waits for) the service's runtime, and a shutdown called from anywhere cannot wait on a
//! runtime that it blocks.

use crate::limits::{
    MAX_COLLECTOR_ANSWER_BYTES, TRACE_EXPORT_BATCH, TRACE_EXPORT_TIMEOUT, TRACE_QUEUE_CAP,
};
use opentelemetry::Context;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Span, SpanData, SpanExporter, SpanProcessor,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The spans waiting to be exported, and those dropped on the way.
#[derive(Debug, Default)]
pub(super) struct Queue {
    /// Spans ended and not yet handed to the exporter.
    held: AtomicUsize,
    /// Spans dropped because [`TRACE_QUEUE_CAP`] were already held.
    pub(super) queue_full: AtomicU64,
    /// Spans of batches the exporter failed to send.
    pub(super) export_failed: AtomicU64,
    /// Whether the last export failed: the log says when sending starts failing and when it
    /// works again, not at every batch.
    failing: AtomicBool,
}

/// The batch processor over `exporter`, its queue capped and counted in `queue`.
pub(super) fn processor<E: SpanExporter + 'static>(exporter: E, queue: Arc<Queue>) -> Bounded {
    // The builder starts from the `OTEL_BSP_*` variables (so `OTEL_BSP_SCHEDULE_DELAY` still sets
    // how often a partial batch leaves); the queue and the batch are bounded here whatever they
    // say, as `limits` has them.
    let config = BatchConfigBuilder::default()
        .with_max_queue_size(TRACE_QUEUE_CAP)
        .with_max_export_batch_size(TRACE_EXPORT_BATCH)
        .build();
    let counted = Counted {
        inner: exporter,
        queue: queue.clone(),
    };
    Bounded {
        inner: BatchSpanProcessor::new(counted, config),
        queue,
    }
}

/// The SDK's batch processor, with its queue's cap kept (and its drops counted) in front of it.
#[derive(Debug)]
pub(super) struct Bounded {
    inner: BatchSpanProcessor,
    queue: Arc<Queue>,
}

impl SpanProcessor for Bounded {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        // Taken before it is handed on and given back by the exporter (`Counted`), so `held` is
        // never below what the SDK's channel holds, and that channel (as large) is never full.
        if self.queue.held.fetch_add(1, Ordering::AcqRel) >= TRACE_QUEUE_CAP {
            self.queue.held.fetch_sub(1, Ordering::AcqRel);
            self.queue.queue_full.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The exporter, giving back the queue's places of the spans it is handed and counting those of
/// the batches it fails to send.
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    queue: Arc<Queue>,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        self.queue.held.fetch_sub(spans, Ordering::AcqRel);
        let result = self.inner.export(batch).await;
        match &result {
            Err(error) => {
                (self.queue.export_failed).fetch_add(spans as u64, Ordering::Relaxed);
                if !self.queue.failing.swap(true, Ordering::Relaxed) {
                    // The exporter's words name a kind (a network error, a status), no url.
                    tracing::warn!(
                        spans,
                        %error,
                        "traces: the collector did not take a batch; spans are dropped (and counted \
                         in seren_callosum_trace_spans_dropped_total) until it does"
                    );
                }
            }
            Ok(()) => {
                if self.queue.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!("traces: the collector takes spans again");
                }
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn shutdown(&self) -> OTelSdkResult {
        self.inner.shutdown()
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The OTLP exporter's HTTP client: our reqwest (our TLS: ring, the webpki roots, the OS store
/// with `tls.trust_system_store`), each request driven to its end on a current-thread runtime of
/// the batch thread's own, made at its first export.
#[derive(Debug)]
pub(super) struct Collector {
    client: reqwest::Client,
    runtime: OnceLock<std::io::Result<tokio::runtime::Runtime>>,
}

impl Collector {
    pub(super) fn new(trust_system_store: bool) -> Result<Self, String> {
        let client = crate::store::clients::tls_builder(trust_system_store)
            .map_err(|error| error.to_string())?
            .user_agent(concat!("seren-corpus-callosum/", env!("CARGO_PKG_VERSION")))
            .timeout(TRACE_EXPORT_TIMEOUT)
            // A redirect is no collector's answer to an export.
            .redirect(reqwest::redirect::Policy::none())
            // A connection kept between exports would sit undriven (the runtime runs only while
            // an export does) and might be found closed at the next; exports are seconds apart.
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|error| crate::store::transport::describe_reqwest(&error))?;
        Ok(Self {
            client,
            runtime: OnceLock::new(),
        })
    }

    async fn send(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let mut response = self.client.execute(request).await?;
        let status = response.status();
        let headers = std::mem::take(response.headers_mut());
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if body.len() + chunk.len() > MAX_COLLECTOR_ANSWER_BYTES {
                return Err(Box::new(opentelemetry_http::ResponseBodyTooLarge::new()));
            }
            body.extend_from_slice(&chunk);
        }
        let mut answer = Response::builder().status(status).body(Bytes::from(body))?;
        *answer.headers_mut() = headers;
        Ok(answer)
    }
}

impl HttpClient for Collector {
    // The trait is `#[async_trait]`: this is the signature that macro writes, by hand, so the
    // macro's crate is not a dependency of ours.
    fn send_bytes<'life0, 'async_trait>(
        &'life0 self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            // Only the batch thread exports, and it is no runtime's: the request runs to its end
            // here, on the thread's own runtime, bounded by the client's timeout.
            let runtime = self.runtime.get_or_init(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
            });
            match runtime {
                Ok(runtime) => runtime.block_on(self.send(request)),
                Err(error) => Err(format!("no runtime to export on: {}", error.kind()).into()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{Tracer, TracerProvider};
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use std::sync::{Condvar, Mutex};

    /// An exporter that holds every export until the gate opens, then counts what it got.
    #[derive(Debug, Default)]
    struct Gated {
        open: Arc<(Mutex<bool>, Condvar)>,
        exported: Arc<AtomicUsize>,
        fail: bool,
    }

    impl SpanExporter for Gated {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            let (open, changed) = &*self.open;
            let mut guard = open.lock().unwrap();
            while !*guard {
                guard = changed.wait(guard).unwrap();
            }
            if self.fail {
                return Err(opentelemetry_sdk::error::OTelSdkError::InternalFailure(
                    "collector down".into(),
                ));
            }
            self.exported.fetch_add(batch.len(), Ordering::SeqCst);
            Ok(())
        }
    }

    fn run(fail: bool, spans: usize) -> (usize, Arc<Queue>) {
        let gated = Gated {
            fail,
            ..Gated::default()
        };
        let (open, exported) = (gated.open.clone(), gated.exported.clone());
        let queue = Arc::new(Queue::default());
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor(gated, queue.clone()))
            .build();
        let tracer = provider.tracer("test");
        // Never more than the cap waits, plus the batch the exporter holds: the rest are
        // dropped at once, never waited for.
        for _ in 0..spans {
            drop(tracer.start("span"));
        }
        *open.0.lock().unwrap() = true;
        open.1.notify_all();
        provider.shutdown().unwrap();
        (exported.load(Ordering::SeqCst), queue)
    }

    #[test]
    fn a_full_queue_drops_and_counts_and_every_span_is_exported_or_counted() {
        let sent = TRACE_QUEUE_CAP + TRACE_EXPORT_BATCH + 100;
        let (exported, queue) = run(false, sent);
        let full = queue.queue_full.load(Ordering::SeqCst) as usize;
        assert!(full >= 100, "{full} dropped of {sent}");
        assert_eq!(exported + full, sent);
        assert_eq!(queue.export_failed.load(Ordering::SeqCst), 0);
        assert_eq!(queue.held.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_failed_export_counts_its_spans() {
        let (exported, queue) = run(true, 10);
        assert_eq!(exported, 0);
        assert_eq!(queue.export_failed.load(Ordering::SeqCst), 10);
        assert_eq!(queue.queue_full.load(Ordering::SeqCst), 0);
    }
}
