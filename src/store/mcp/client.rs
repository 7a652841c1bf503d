//! One MCP server's session: started once, shared by every search, started again when it ends.
//!
//! Over stdio the callosum spawns the server (stdin, stdout and stderr piped: nothing it prints
//! reaches our stdout; its stderr goes to our log at debug, rate-limited) and kills it when the
//! store goes away. Over streamable HTTP, rmcp's client opens the session and starts a new one
//! by itself when the server answers 404 (a session it has expired or forgotten).
//!
//! A start runs in a task of its own, bounded by [`MCP_START_WAIT`], so a slow server comes up
//! for a later search even when the first search's timeout is shorter; concurrent searches wait
//! on the same start, then share the session (rmcp multiplexes calls on it). A server that
//! cannot start or whose session ends is started again by the next search: at once the first
//! time, then after a growing back-off; the breaker stands in front of all of it.
//!
//! Every failure is a [`Failure`] in words, never a hang past the store's timeout, and never a
//! url (a reqwest error quotes the url it called; [`scrub`] takes it out).

use super::Spec;
use super::map::Mapping;
use crate::chain::Chain;
use crate::config::{Program, Secret};
use crate::fusion::Hit;
use crate::limits::{DEFAULT_BODY_CAP, MCP_MAX_BACKOFF, MCP_START_WAIT, MCP_STDERR_LINES};
use crate::store::Failure;
use crate::text::cut;
use futures_util::future::{BoxFuture, FutureExt, Shared};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    MetaObject, RequestMetaObject, Tool,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use std::fmt;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Where an MCP server is reached.
#[derive(Debug, Clone)]
pub enum Link {
    /// Spawned by the callosum, spoken to over its stdin and stdout.
    Stdio(Program),
    /// Streamable HTTP at `url`, with a bearer token when the store has one.
    Http {
        url: url::Url,
        token: Option<Secret>,
    },
}

/// An `mcp` store: its mapping, how it is reached, and its session.
pub struct McpStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// The store's name, for the log.
    store: String,
    spec: Spec,
    link: Link,
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
    Starting(Pending),
    Up(Arc<Session>),
}

/// A start under way, awaited by every search that needs the session meanwhile.
type Pending = Shared<BoxFuture<'static, Result<Arc<Session>, Failure>>>;

/// One initialized session and what the server said it has.
struct Session {
    service: RunningService<RoleClient, ClientConfig>,
    tools: Vec<Tool>,
    /// The spawned server (stdio). Dropping it kills the process.
    child: Option<Mutex<tokio::process::Child>>,
}

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
    pub fn new(store: &str, spec: Spec, link: Link) -> Self {
        Self {
            inner: Arc::new(Inner {
                store: store.to_owned(),
                spec,
                link,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Whether the configured tool is listed and takes the query argument (as far as its
    /// schema says).
    pub fn fits(check: &ToolCheck) -> bool {
        check.has_tool && check.takes_query != Some(false)
    }

    /// Starts the session now, without waiting for it, so the first search finds it up.
    pub fn warm(&self) {
        let inner = self.inner.clone();
        tokio::spawn(async move {
            if let Err(why) = inner.session().await {
                tracing::warn!(store = %inner.store, reason = %why, "mcp server not started");
            }
        });
    }

    /// Calls the tool for `n` hits of `query`, carrying `chain` in `_meta`, within `timeout`.
    pub async fn search(
        &self,
        query: &str,
        n: usize,
        chain: &Chain,
        timeout: Duration,
    ) -> Result<Vec<Hit>, Failure> {
        match tokio::time::timeout(timeout, self.inner.ask(query, n, chain)).await {
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
                read(&result, &spec.mapping, n)
            }
            Err(error) => Err(self.call_failed(&session, error)),
        }
    }

    /// The live session, started (or waited for) when there is none.
    async fn session(self: &Arc<Self>) -> Result<Arc<Session>, Failure> {
        let pending = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if let Phase::Up(session) = &state.phase {
                if session.alive() {
                    return Ok(session.clone());
                }
                let why = session.end_reason();
                state.failed(why);
            }
            match &state.phase {
                Phase::Starting(pending) => pending.clone(),
                _ => {
                    let now = Instant::now();
                    if let Some(at) = state.retry_at.filter(|at| *at > now) {
                        let last = state.last.as_deref().unwrap_or("the server failed");
                        return Err(Failure::Mcp(format!(
                            "{last}; the next start is in {:.1}s",
                            (at - now).as_secs_f64()
                        )));
                    }
                    let pending = self.start();
                    state.phase = Phase::Starting(pending.clone());
                    pending
                }
            }
        };
        pending.await
    }

    /// Starts the server in a task of its own; the task settles the state when it is done.
    fn start(self: &Arc<Self>) -> Pending {
        let weak = Arc::downgrade(self);
        let (store, link) = (self.store.clone(), self.link.clone());
        let task = tokio::spawn(async move {
            let started = tokio::time::timeout(MCP_START_WAIT, connect(&store, &link))
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
                Err(why) => tracing::warn!(store = %store, reason = %why, "mcp server not started"),
            }
            // A store removed meanwhile is gone: the session drops with this task.
            if let Some(inner) = weak.upgrade() {
                inner.settle(&started);
            }
            started
        });
        task.map(|joined| {
            joined.unwrap_or_else(|join| Err(Failure::Mcp(format!("the start stopped: {join}"))))
        })
        .boxed()
        .shared()
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
        matches!(state.phase, Phase::Starting(_))
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
            ServiceError::McpError(error) => Failure::Tool(format!(
                "the server refused the call: {} (code {})",
                cut(&error.message, 200),
                error.code.0
            )),
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

impl Session {
    fn alive(&self) -> bool {
        if self.service.peer().is_transport_closed() {
            return false;
        }
        match &self.child {
            None => true,
            Some(child) => matches!(
                child
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .try_wait(),
                Ok(None)
            ),
        }
    }

    /// Why the session ended, in words.
    fn end_reason(&self) -> String {
        let Some(child) = &self.child else {
            return "the server closed the session".into();
        };
        match child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .try_wait()
        {
            Ok(Some(status)) => format!("the server exited ({status})"),
            _ => "the server closed its stdout".into(),
        }
    }

    fn check_tool(&self, name: &str) -> Result<(), Failure> {
        if self.tools.iter().any(|t| t.name == name) {
            return Ok(());
        }
        let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_ref()).collect();
        Err(Failure::Mcp(format!(
            "unknown tool '{name}'; the server has: {}",
            cut(&names.join(", "), 300)
        )))
    }
}

/// Reads a tool result into hits: an error result is a failure with its text, cut short.
fn read(result: &CallToolResult, mapping: &Mapping, limit: usize) -> Result<Vec<Hit>, Failure> {
    let text = result
        .content
        .iter()
        .find_map(|block| block.as_text())
        .map(|text| text.text.as_str());
    if result.is_error == Some(true) {
        return Err(Failure::Tool(text.map_or_else(
            || "the tool answered an error without text".into(),
            |text| cut(text.trim(), 200),
        )));
    }
    let document =
        super::map::document(result.structured_content.as_ref(), text).map_err(Failure::Decode)?;
    mapping.read(&document, limit).map_err(Failure::Decode)
}

/// How the callosum introduces itself to a server.
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("seren-corpus-callosum", env!("CARGO_PKG_VERSION")),
    )
}

/// Opens a session: spawns the server or reaches its url, initializes, lists its tools.
async fn connect(store: &str, link: &Link) -> Result<Session, Failure> {
    let (service, child) = match link {
        Link::Stdio(program) => {
            let mut child = spawn(program)?;
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                return Err(Failure::Mcp("the server's stdio could not be piped".into()));
            };
            if let Some(stderr) = child.stderr.take() {
                log_stderr(store.to_owned(), stderr);
            }
            match client_config().serve((stdout, stdin)).await {
                Ok(service) => (service, Some(child)),
                Err(error) => {
                    let why = cause(&error);
                    return Err(Failure::Mcp(unstarted(&mut child, why).await));
                }
            }
        }
        Link::Http { url, token } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .max_json_response_size(DEFAULT_BODY_CAP);
            if let Some(token) = token {
                config = config.auth_header(token.expose());
            }
            let transport = StreamableHttpClientTransport::from_config(config);
            let service = client_config()
                .serve(transport)
                .await
                .map_err(|error| Failure::Mcp(format!("initialize: {}", cause(&error))))?;
            (service, None)
        }
    };
    let tools = service
        .list_all_tools()
        .await
        .map_err(|error| Failure::Mcp(format!("tools/list: {}", cause(&error))))?;
    Ok(Session {
        service,
        tools,
        child: child.map(Mutex::new),
    })
}

/// Why a spawned server gave no session: its exit status when it has exited.
async fn unstarted(child: &mut tokio::process::Child, why: String) -> String {
    match tokio::time::timeout(Duration::from_millis(200), child.wait()).await {
        Ok(Ok(status)) => format!("the server exited before it answered initialize ({status})"),
        _ => format!("initialize: {why}"),
    }
}

/// Spawns the server with its stdio piped, killed when dropped. It gets the callosum's
/// environment without the callosum's own settings and token (`SEREN_SCC_*`: a callosum spawned
/// as a store reads only its own) and without systemd's `NOTIFY_SOCKET` and `LISTEN_*` (they are
/// the callosum's own), then the entry's `env`.
fn spawn(program: &Program) -> Result<tokio::process::Child, Failure> {
    let mut command = tokio::process::Command::new(&program.command);
    command
        .args(&program.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (key, _) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        if key_text.starts_with("SEREN_SCC_")
            || key_text == "NOTIFY_SOCKET"
            || key_text.starts_with("LISTEN_")
        {
            command.env_remove(key);
        }
    }
    command.envs(&program.env);
    command.spawn().map_err(|error| {
        Failure::Mcp(format!(
            "cannot start '{}': {error}",
            cut(&program.command, 80)
        ))
    })
}

/// Logs the server's stderr at debug, at most [`MCP_STDERR_LINES`] lines per ten seconds, each
/// cut to 2 KiB (the rest of a longer line counts as more lines); what is not logged is counted
/// and said. The pipe is always read to its end, so a chatty server never blocks on it.
fn log_stderr(store: String, stderr: tokio::process::ChildStderr) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    tokio::spawn(async move {
        let mut reader = tokio::io::BufReader::new(stderr);
        let mut line = Vec::with_capacity(256);
        let mut window = Instant::now();
        let (mut logged, mut dropped) = (0u32, 0u64);
        loop {
            line.clear();
            match (&mut reader).take(2048).read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if window.elapsed() >= Duration::from_secs(10) {
                not_logged(&store, dropped);
                (window, logged, dropped) = (Instant::now(), 0, 0);
            }
            if logged < MCP_STDERR_LINES {
                logged += 1;
                let text = String::from_utf8_lossy(&line);
                tracing::debug!(store = %store, line = %crate::text::escaped(text.trim_end()), "mcp server stderr");
            } else {
                dropped += 1;
            }
        }
        not_logged(&store, dropped);
    });
}

fn not_logged(store: &str, dropped: u64) {
    if dropped > 0 {
        tracing::debug!(store = %store, dropped, "mcp server stderr lines not logged");
    }
}

/// What went wrong, in words: the innermost cause of `error` (the outer layers name rmcp's
/// transport types, not the problem), without any url.
fn cause(error: &dyn std::error::Error) -> String {
    let mut inner = error;
    while let Some(source) = inner.source() {
        inner = source;
    }
    let text = inner.to_string();
    // rmcp words a transport failure as `Send message error Transport [<its Rust type>] error:
    // <what happened>`: only what happened is worth reading.
    let text = match text.split_once("] error: ") {
        Some((_, what)) => what,
        None => &text,
    };
    scrub(text)
}

/// An error's text without any url in it (reqwest quotes the url it called, query included).
fn scrub(text: &str) -> String {
    let words: Vec<String> = text
        .split(' ')
        .map(|word| {
            let Some(at) = word.find("http://").or_else(|| word.find("https://")) else {
                return word.to_owned();
            };
            // The url ends at the punctuation around it, which stays.
            let end = word[at..]
                .find([')', ']', '>', '"', '\'', ','])
                .map_or(word.len(), |end| at + end);
            format!("{}<url>{}", &word[..at], &word[end..])
        })
        .collect();
    cut(&words.join(" "), 200)
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

    #[test]
    fn a_scrubbed_error_has_no_url() {
        let text = "error sending request for url (http://user:pw@host:9/mcp?key=SECRET): connection refused";
        let clean = scrub(text);
        assert_eq!(
            clean,
            "error sending request for url (<url>): connection refused"
        );
        assert!(!clean.contains("SECRET"));
    }
}
