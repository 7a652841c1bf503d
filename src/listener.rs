//! The accept loop: HTTP/1.1 connections with keep-alive, bounded in number and in patience.
//!
//! Each connection is a task bounded by the connection's life. At most `max_connections` are open.
//! When one more arrives and every slot is taken, the connection that has been idle longest (no
//! request under way: a keep-alive client between requests, or a client that never finished its
//! request head) is closed to make room, as nginx reuses its idle keep-alive connections. So a
//! flood of idle or slow connections cannot lock real clients out until the header timeout frees
//! a slot. A request under way is never cut: when no connection is idle, the newcomer is closed.

use axum::Router;
use axum::body::{Body, Bytes};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// What one listener holds at once, so a flood of clients cannot take the service down.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Open connections. One more closes the longest-idle open connection, or is itself closed
    /// when every connection has a request under way.
    pub max_connections: usize,
    /// A connection that has not sent a whole request head within this time (slow headers, or
    /// idle between requests) is closed; and a request's body must arrive within this time after
    /// its head, or reading it fails (the handler answers 408), so a body that never comes cannot
    /// hold an in-flight slot.
    pub header_timeout: Duration,
    /// How long shutdown waits for open requests before it stops anyway.
    pub drain: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: crate::limits::DEFAULT_MAX_CONNECTIONS,
            header_timeout: crate::limits::DEFAULT_HEADER_TIMEOUT,
            drain: crate::limits::DRAIN,
        }
    }
}

impl Limits {
    /// The limits a configuration asks for.
    pub fn from_config(server: &crate::config::Server) -> Self {
        Self {
            max_connections: server.max_connections,
            header_timeout: server.header_timeout,
            ..Self::default()
        }
    }
}

/// Serves `router` on `listener` with default [`Limits`] until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, router, Limits::default(), shutdown).await
}

/// Serves `router` on `listener` until `shutdown` resolves, then stops accepting and lets open
/// requests finish (for at most `limits.drain`). See the module docs for the limits.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use hyper_util::rt::TokioIo;
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let builder = http1_builder(&limits);
    let service = hyper_util::service::TowerToHyperService::new(router);
    let mut gate = Gate::new(limits.max_connections);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                Err(error) => {
                    // Out of file descriptors, say: back off briefly instead of spinning.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Refused connections are dropped here, which closes them.
        let Some(permit) = gate.admit().await else {
            continue;
        };
        // Small JSON answers: send them now rather than wait for Nagle.
        let _ = stream.set_nodelay(true);
        let (id, entry) = gate.table.open();
        let tracked = Tracked {
            inner: service.clone(),
            entry: entry.clone(),
            body_timeout: limits.header_timeout,
        };
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), tracked));
        let open = Open {
            table: gate.table.clone(),
            id,
            _slot: permit,
        };
        let task = tokio::spawn(run_connection(connection, open));
        // Set before the next `gate.admit`, the only caller of eviction: every entry it can
        // pick has its task.
        let _ = entry.task.set(task.abort_handle());
    }
    drop(listener);
    drain(graceful, limits.drain).await;
    Ok(())
}

/// The HTTP/1.1 settings every connection is served with: keep-alive, the header timeout and
/// the cap on a request head.
fn http1_builder(limits: &Limits) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        // A request head fits in 32 KiB; see `limits`.
        .max_buf_size(crate::limits::MAX_HEAD_BYTES)
        .keep_alive(true);
    builder
}

/// Lets open requests finish after the listener is closed, for at most `wait`, then stops anyway
/// (and says so).
async fn drain(graceful: hyper_util::server::graceful::GracefulShutdown, wait: Duration) {
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(wait) => {
            tracing::warn!(seconds = wait.as_secs(), "open requests did not finish in time; stopping anyway");
        }
    }
}

/// Serves one connection until it ends. Eviction aborts this task, which drops the connection
/// (closing it) and `open` (giving the slot back) at once, so nothing is polled per wake-up to
/// watch for it.
async fn run_connection(
    connection: impl std::future::Future<Output = Result<(), hyper::Error>>,
    open: Open,
) {
    if let Err(error) = connection.await {
        tracing::debug!(%error, "connection ended with an error");
    }
    drop(open);
}

/// An open connection's place: taken out of the table, then its slot given back, when its task
/// ends or is aborted.
struct Open {
    table: Arc<Table>,
    id: u64,
    _slot: tokio::sync::OwnedSemaphorePermit,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.table.close(self.id);
    }
}

/// The connection cap: a slot per open connection, and what to do when none is free.
struct Gate {
    slots: Arc<Semaphore>,
    table: Arc<Table>,
    max: usize,
    refused: u64,
    evicted: u64,
}

impl Gate {
    /// A gate with `max` free slots and no connection open.
    fn new(max: usize) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(max)),
            table: Arc::new(Table::new()),
            max,
            refused: 0,
            evicted: 0,
        }
    }

    /// A slot for a new connection: a free one, or the one of the connection idle longest, which
    /// is closed to make room; `None` when every connection has a request under way.
    async fn admit(&mut self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        if let Ok(permit) = self.slots.clone().try_acquire_owned() {
            return Some(permit);
        }
        if !self.table.evict_longest_idle() {
            count_and_warn(
                &mut self.refused,
                self.max,
                "connection limit reached and every connection is busy; closing new connections",
            );
            return None;
        }
        count_and_warn(
            &mut self.evicted,
            self.max,
            "connection limit reached; closing the longest-idle connections",
        );
        // The evicted task is dropped as soon as the runtime gets to it, which gives its slot
        // back; bounded anyway.
        match tokio::time::timeout(EVICTION_WAIT, self.slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Some(permit),
            _ => None,
        }
    }
}

/// Counts one more, and logs it the 1st, 2nd, 4th, 8th... time, so a flood writes few lines.
fn count_and_warn(count: &mut u64, max: usize, message: &str) {
    *count += 1;
    if count.is_power_of_two() {
        tracing::warn!(max, count = *count, "{message}");
    }
}

/// How long a newcomer waits for the slot of the connection it evicted.
const EVICTION_WAIT: Duration = Duration::from_millis(500);

/// Connections open in this process, over every listener: what `GET /metrics` reports. One count
/// for the process, not one per listener, because the router that answers `/metrics` is built
/// before the listener that serves it and knows nothing of it; a process serves one listener
/// (`serve`, or `stdio --http`), so the two are the same there.
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// How many connections are open in this process now.
pub fn open_connections() -> usize {
    OPEN.load(Ordering::Relaxed)
}

/// The open connections, for eviction.
struct Table {
    entries: Mutex<HashMap<u64, Arc<Entry>>>,
    next: AtomicU64,
    /// What `idle_since` counts from.
    epoch: Instant,
}

/// One open connection: whether a request is under way, and since when it has been idle.
struct Entry {
    in_flight: AtomicUsize,
    /// Milliseconds since the table's epoch when the connection last became idle.
    idle_since: AtomicU64,
    /// The connection's task, aborted to evict it (set right after the task is spawned).
    task: OnceLock<tokio::task::AbortHandle>,
    epoch: Instant,
}

impl Entry {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

impl Table {
    fn new() -> Self {
        Self {
            entries: Mutex::default(),
            next: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }

    fn open(&self) -> (u64, Arc<Entry>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(Entry {
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            task: OnceLock::new(),
            epoch: self.epoch,
        });
        entry.idle_since.store(entry.now(), Ordering::Relaxed);
        self.lock().insert(id, entry.clone());
        OPEN.fetch_add(1, Ordering::Relaxed);
        (id, entry)
    }

    /// Called once per connection, when its task ends (an evicted one too: eviction only takes it
    /// out of the table early).
    fn close(&self, id: u64) {
        self.lock().remove(&id);
        OPEN.fetch_sub(1, Ordering::Relaxed);
    }

    /// Evicts the connection idle longest; false when every connection has a request under way.
    fn evict_longest_idle(&self) -> bool {
        let mut entries = self.lock();
        let longest = entries
            .iter()
            .filter(|(_, entry)| entry.in_flight.load(Ordering::Acquire) == 0)
            .min_by_key(|(id, entry)| (entry.idle_since.load(Ordering::Relaxed), **id))
            .map(|(id, _)| *id);
        match longest.and_then(|id| entries.remove(&id)) {
            Some(entry) => {
                if let Some(task) = entry.task.get() {
                    task.abort();
                }
                true
            }
            None => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Entry>>> {
        // A panic while holding this lock leaves the map consistent (inserts and removes only).
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The service of one connection, marking the connection busy while a request is under way, and
/// giving each request's body its deadline.
#[derive(Clone)]
struct Tracked<S> {
    inner: S,
    entry: Arc<Entry>,
    body_timeout: Duration,
}

impl<S, B> hyper::service::Service<hyper::Request<B>> for Tracked<S>
where
    S: hyper::service::Service<hyper::Request<Deadline<B>>, Response = hyper::Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = hyper::Response<Body>;
    type Error = S::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, S::Error>> + Send + 'static>,
    >;

    fn call(&self, request: hyper::Request<B>) -> Self::Future {
        let busy = Busy::new(self.entry.clone());
        let timeout = self.body_timeout;
        let future = self
            .inner
            .call(request.map(|body| Deadline::new(body, timeout)));
        Box::pin(async move {
            // Busy until the answer's body is sent (or dropped): an MCP event stream stays busy
            // for as long as it is open.
            let response = future.await?;
            Ok(response.map(|body| Body::new(Guarded { body, _busy: busy })))
        })
    }
}

/// A response body that holds its connection busy until it is dropped.
struct Guarded {
    body: Body,
    _busy: Busy,
}

impl HttpBody for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A request body that must end within a deadline of the request's head.
pub struct Deadline<B> {
    body: B,
    timeout: Duration,
    expires: std::pin::Pin<Box<tokio::time::Sleep>>,
    ended: bool,
}

impl<B> Deadline<B> {
    fn new(body: B, timeout: Duration) -> Self {
        Self {
            body,
            timeout,
            expires: Box::pin(tokio::time::sleep(timeout)),
            ended: false,
        }
    }
}

/// The error a late request body fails with; the REST handlers answer it with 408.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {:.1} s of its head", .0.as_secs_f64())]
pub struct BodyTimeout(pub Duration);

impl<B> HttpBody for Deadline<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, axum::BoxError>>> {
        use std::task::Poll;
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        match std::pin::Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(None) => {
                this.ended = true;
                Poll::Ready(None)
            }
            Poll::Ready(Some(frame)) => Poll::Ready(Some(frame.map_err(Into::into))),
            Poll::Pending => match this.expires.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.ended = true;
                    Poll::Ready(Some(Err(Box::new(BodyTimeout(this.timeout)))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A request under way on a connection; dropped (answered or cancelled), the connection is idle
/// again from that moment.
struct Busy(Arc<Entry>);

impl Busy {
    fn new(entry: Arc<Entry>) -> Self {
        entry.in_flight.fetch_add(1, Ordering::AcqRel);
        Self(entry)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.idle_since.store(self.0.now(), Ordering::Relaxed);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}
