//! One MCP server's session: started once, shared by every search, started again when it ends.
//!
//! Over stdio the callosum spawns the server (stdin, stdout and stderr piped: nothing it prints
//! reaches our stdout; its stderr goes to our log at debug, rate-limited) in a process group (a
//! job object on Windows) of its own, and ends that whole group when the store goes away. Over streamable HTTP, rmcp's client opens the session and starts a new one
//! by itself when the server answers 404 (a session it has expired or forgotten).
//!
//! A start runs in a task of its own, bounded by [`MCP_START_WAIT`], so a slow server comes up
//! for a later search even when the first search's timeout is shorter; concurrent searches wait
//! on the same start, then share the session (rmcp multiplexes calls on it). A server that
//! cannot start or whose session ends is started again by the next search: at once the first
//! time, then after a growing back-off; the breaker stands in front of all of it.
//!
//! Every failure is a [`Failure`] in words, never a hang past the store's timeout. Its words are
//! the callosum's own ([`cause`] names an error's kind, never its text, which may quote the url
//! called or what the server sent), but for a tool's error: that text is the server's, and only
//! the search that met it sees it ([`Failure::public`] is what the health page and the log get).
//!
//! The rooms: `session` opens one (the spawn or the url, `initialize`, the tool list), `process`
//! is a spawned server's process group and its stderr, `answer` reads a tool's result, `wording`
//! words what went wrong, `probe` is `propose`'s single look. This module keeps the session: the
//! start in its task, the back-off, the calls.

mod answer;
mod probe;
mod process;
mod session;
mod wording;

pub use answer::{read, texts};
pub use probe::Probe;
pub use session::Link;

use super::spec::Spec;
use crate::chain::Chain;
use crate::fusion::Hit;
use crate::ledger::{Ledger, Purse};
use crate::limits::{DEFAULT_BODY_CAP, MCP_MAX_BACKOFF, MCP_START_WAIT};
use crate::store::remote::Failure;
use answer::{refused, result_bytes};
use futures_util::future::{BoxFuture, FutureExt, Shared};
use rmcp::model::{CallToolRequestParams, MetaObject, RequestMetaObject};
use rmcp::service::ServiceError;
use session::{Session, connect};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use wording::cause;

/// An `mcp` store: its mapping, how it is reached, and its session.
pub struct McpStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// The store's name, for the log.
    store: String,
    spec: Spec,
    link: Link,
    /// The process's count of store-answer bytes, which a session's arriving bytes go into.
    answers: Arc<Ledger>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    phase: Phase,
    /// Starts that failed and sessions that ended since the last answered call.
    streak: u32,
    /// When the next start may be made.
    retry_at: Option<Instant>,
    /// Why the last start failed or the last session ended.
    last: Option<String>,
}

#[derive(Default)]
enum Phase {
    #[default]
    Down,
    /// The start, and the handle that cancels it when the store goes away.
    Starting(Pending, tokio::task::AbortHandle),
    Up(Arc<Session>),
}

/// A start under way, awaited by every search that needs the session meanwhile.
type Pending = Shared<BoxFuture<'static, Result<Arc<Session>, Failure>>>;

/// What `check` says about an MCP store's server.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCheck {
    /// The configured tool and query argument.
    pub tool: String,
    pub query_arg: String,
    /// Every tool the server lists, in its order.
    pub tools: Vec<String>,
    /// Whether the configured tool is among them.
    pub has_tool: bool,
    /// Whether the tool's input schema has the query argument (`None`: it names no properties).
    pub takes_query: Option<bool>,
}

impl fmt::Debug for McpStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let transport = match self.inner.link {
            Link::Stdio(_) => "stdio",
            Link::Http { .. } => "http",
        };
        f.debug_struct("McpStore")
            .field("tool", &self.inner.spec.tool)
            .field("transport", &transport)
            .finish_non_exhaustive()
    }
}

impl McpStore {
    pub fn new(store: &str, spec: Spec, link: Link, answers: Arc<Ledger>) -> Self {
        Self {
            inner: Arc::new(Inner {
                store: store.to_owned(),
                spec,
                link,
                answers,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Whether the configured tool is listed and takes the query argument (as far as its
    /// schema says).
    pub fn fits(check: &ToolCheck) -> bool {
        check.has_tool && check.takes_query != Some(false)
    }

    /// Starts the session now, without waiting for it, so the first search finds it up. Nothing
    /// but the store holds the start: removing the store cancels it (the start logs its outcome).
    pub fn warm(&self) {
        let _ = self.inner.pending();
    }

    /// Calls the tool for `n` hits of `query`, carrying `chain` in `_meta`, within `timeout`;
    /// the result is counted in the search's `purse` while it is read, and its hits after.
    pub async fn search(
        &self,
        query: &str,
        n: usize,
        (chain, timeout): (&Chain, Duration),
        purse: &Purse<'_>,
    ) -> Result<Vec<Hit>, Failure> {
        match tokio::time::timeout(timeout, self.inner.ask(query, n, chain, purse)).await {
            Ok(answer) => answer,
            // The start goes on; the reason says so, since a later search will find it up.
            Err(_) if self.inner.starting() => Err(Failure::Mcp(format!(
                "timeout after {:.2}s: the server is still starting",
                timeout.as_secs_f64()
            ))),
            Err(_) => Err(Failure::Timeout(timeout)),
        }
    }

    /// Lists the server's tools and checks the configured one, within `timeout` plus the time a
    /// start may take.
    pub async fn check_tools(&self, timeout: Duration) -> Result<ToolCheck, Failure> {
        let wait = timeout + MCP_START_WAIT;
        let checked = tokio::time::timeout(wait, async {
            let session = self.inner.session().await?;
            let spec = &self.inner.spec;
            let tool = session.tools.iter().find(|t| t.name == spec.tool);
            Ok(ToolCheck {
                tool: spec.tool.clone(),
                query_arg: spec.query_arg.clone(),
                tools: session.tools.iter().map(|t| t.name.to_string()).collect(),
                has_tool: tool.is_some(),
                // A schema that names no properties says nothing either way.
                takes_query: tool.and_then(|tool| {
                    let properties = tool.input_schema.get("properties")?.as_object()?;
                    (!properties.is_empty()).then(|| properties.contains_key(&spec.query_arg))
                }),
            })
        });
        checked.await.unwrap_or(Err(Failure::Timeout(wait)))
    }
}

impl Inner {
    async fn ask(
        self: &Arc<Self>,
        query: &str,
        n: usize,
        chain: &Chain,
        purse: &Purse<'_>,
    ) -> Result<Vec<Hit>, Failure> {
        let session = self.session().await?;
        let spec = &self.spec;
        session.check_tool(&spec.tool)?;
        let mut params =
            CallToolRequestParams::new(spec.tool.clone()).with_arguments(spec.arguments(query, n));
        params.meta = Some(RequestMetaObject(MetaObject(chain.meta())));
        match session.service.call_tool(params).await {
            Ok(result) => {
                self.answered();
                // Its bytes were counted while they arrived (`http`, `stdout`); the parsed
                // result is counted in the search's purse until its hits are read, and then
                // what they keep, like an HTTP store's answer.
                let mut hold = purse.hold();
                hold.take(result_bytes(&result)).map_err(Failure::Memory)?;
                let hits = read(&result, &spec.mapping, n)?;
                drop(result);
                hold.keep_hits(&hits).map_err(Failure::Memory)?;
                Ok(hits)
            }
            Err(error) => Err(self.call_failed(&session, error)),
        }
    }

    /// The live session, started (or waited for) when there is none.
    async fn session(self: &Arc<Self>) -> Result<Arc<Session>, Failure> {
        match self.pending()? {
            Ok(session) => Ok(session),
            Err(pending) => pending.await,
        }
    }

    /// The live session (`Ok`), or the start to wait for (`Err`), begun when none is under way;
    /// an error while the back-off after failed starts runs.
    fn pending(self: &Arc<Self>) -> Result<Result<Arc<Session>, Pending>, Failure> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Phase::Up(session) = &state.phase {
            if session.alive() {
                return Ok(Ok(session.clone()));
            }
            let why = session.end_reason();
            state.failed(why);
        }
        if let Phase::Starting(pending, _) = &state.phase {
            return Ok(Err(pending.clone()));
        }
        let now = Instant::now();
        if let Some(at) = state.retry_at.filter(|at| *at > now) {
            let last = state.last.as_deref().unwrap_or("the server failed");
            return Err(Failure::Mcp(format!(
                "{last}; the next start is in {:.1}s",
                (at - now).as_secs_f64()
            )));
        }
        let (pending, abort) = self.start();
        state.phase = Phase::Starting(pending.clone(), abort);
        Ok(Err(pending))
    }

    /// Starts the server in a task of its own; the task settles the state when it is done, and
    /// is aborted when the store is dropped first (removed, or dropped by a reload).
    fn start(self: &Arc<Self>) -> (Pending, tokio::task::AbortHandle) {
        let weak = Arc::downgrade(self);
        let (store, link, answers) = (self.store.clone(), self.link.clone(), self.answers.clone());
        let task = tokio::spawn(async move {
            let started = tokio::time::timeout(MCP_START_WAIT, connect(&store, &link, answers))
                .await
                .unwrap_or_else(|_| {
                    Err(Failure::Mcp(format!(
                        "the server did not finish starting within {}s",
                        MCP_START_WAIT.as_secs()
                    )))
                })
                .map(Arc::new);
            match &started {
                Ok(session) => {
                    tracing::info!(store = %store, tools = session.tools.len(), "mcp server up")
                }
                Err(why) => {
                    tracing::warn!(store = %store, reason = %why.public(), "mcp server not started")
                }
            }
            // A store removed meanwhile is gone: the session drops with this task.
            if let Some(inner) = weak.upgrade() {
                inner.settle(&started);
            }
            started
        });
        let abort = task.abort_handle();
        let pending = task
            .map(|joined| {
                joined.unwrap_or_else(|join| {
                    let how = if join.is_panic() {
                        "panicked"
                    } else {
                        "was cancelled"
                    };
                    Err(Failure::Mcp(format!("the start {how}")))
                })
            })
            .boxed()
            .shared();
        (pending, abort)
    }

    fn settle(&self, started: &Result<Arc<Session>, Failure>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match started {
            Ok(session) => state.phase = Phase::Up(session.clone()),
            Err(why) => state.failed(why.to_string()),
        }
    }

    fn starting(&self) -> bool {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        matches!(state.phase, Phase::Starting(..))
    }

    fn answered(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.streak = 0;
        state.retry_at = None;
    }

    /// Words a failed call; a session whose connection is gone is marked ended, so the next
    /// search starts another.
    fn call_failed(&self, session: &Arc<Session>, error: ServiceError) -> Failure {
        match error {
            ServiceError::McpError(error) => match super::http::dropped_bound(&error) {
                Some("memory") => Failure::Memory(crate::ledger::Over::Process(self.answers.cap())),
                Some(_) => Failure::TooLarge(DEFAULT_BODY_CAP),
                None => refused(&error),
            },
            ServiceError::Timeout { timeout } => Failure::Timeout(timeout),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let why = match &error {
                    ServiceError::TransportSend(_) if session.child.is_none() => {
                        format!("transport: {}", cause(&error))
                    }
                    _ => session.end_reason(),
                };
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                if matches!(&state.phase, Phase::Up(up) if Arc::ptr_eq(up, session)) {
                    state.failed(why.clone());
                }
                Failure::Mcp(why)
            }
            other => Failure::Mcp(cause(&other)),
        }
    }
}

impl Drop for Inner {
    /// A store that goes away while its server starts stops the start there: no more pages are
    /// read, and a spawned server is ended with its group.
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Phase::Starting(_, abort) = &state.phase {
            abort.abort();
        }
    }
}

impl State {
    /// A start failed or a session ended: down, with the back-off of the streak.
    fn failed(&mut self, why: String) {
        self.phase = Phase::Down;
        self.streak = self.streak.saturating_add(1);
        self.retry_at = Some(Instant::now() + backoff(self.streak));
        self.last = Some(why);
    }
}

/// The wait before the next start after `streak` failures in a row: none after the first (a
/// server that ran and exited is started again at once), then 0.5 s doubling to the cap.
fn backoff(streak: u32) -> Duration {
    if streak <= 1 {
        return Duration::ZERO;
    }
    let doublings = (streak - 2).min(16);
    (Duration::from_millis(500) * 2u32.pow(doublings)).min(MCP_MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_grows_from_nothing_to_its_cap() {
        let waits: Vec<u64> = (1..=9).map(|s| backoff(s).as_millis() as u64).collect();
        assert_eq!(waits, [0, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
        assert_eq!(backoff(u32::MAX), MCP_MAX_BACKOFF);
    }
}
