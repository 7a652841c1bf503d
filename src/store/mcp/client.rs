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

use super::Spec;
use super::map::Mapping;
use crate::chain::Chain;
use crate::config::Program;
use crate::fusion::Hit;
use crate::ledger::{Ledger, Purse};
use crate::limits::{
    DEFAULT_BODY_CAP, MCP_MAX_BACKOFF, MCP_MAX_TOOL_BYTES, MCP_MAX_TOOL_PAGES, MCP_MAX_TOOLS,
    MCP_START_WAIT, MCP_STDERR_LINES,
};
use crate::secret::Secret;
use crate::store::Failure;
use crate::store::clients::McpHttp;
use crate::text::cut;
use futures_util::future::{BoxFuture, FutureExt, Shared};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    MetaObject, PaginatedRequestParams, RequestMetaObject, Tool,
};
use rmcp::service::{ClientCacheConfig, RoleClient, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
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
    /// Streamable HTTP at `url`, with a bearer token when the store has one, through `client`
    /// (the shared MCP client, or the store's own for `tls_ca_file`; `store::clients`).
    Http {
        url: url::Url,
        token: Option<Secret>,
        client: McpHttp,
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

/// One initialized session and what the server said it has.
struct Session {
    service: RunningService<RoleClient, ClientConfig>,
    tools: Vec<Tool>,
    /// The spawned server (stdio), with whatever it started. Dropping it ends them all.
    child: Option<Mutex<ServerProcess>>,
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
        // The names are the server's words: `check` lists them, a reason only counts them.
        Err(Failure::Mcp(format!(
            "unknown tool '{name}'; the server lists {} other tools (`seren-corpus-callosum check` names them)",
            self.tools.len()
        )))
    }
}

/// One session opened for a single look at a server (`propose`): its tools, and calls made with
/// arguments given whole. No store state, no retries: what fails is said once.
pub struct Probe {
    session: Session,
}

impl Probe {
    /// Spawns or reaches the server, initializes and lists its tools, within `wait`. Its answers
    /// are counted against a ledger of its own, as one search's are.
    pub async fn open(store: &str, link: &Link, wait: Duration) -> Result<Self, Failure> {
        let answers = Arc::new(Ledger::default());
        match tokio::time::timeout(wait, connect(store, link, answers)).await {
            Ok(session) => Ok(Self { session: session? }),
            Err(_) => Err(Failure::Timeout(wait)),
        }
    }

    /// The tools the server lists, in its order.
    pub fn tools(&self) -> &[Tool] {
        &self.session.tools
    }

    /// The name the server gives itself in `initialize`, if any.
    pub fn server_name(&self) -> Option<String> {
        let info = self.session.service.peer_info()?;
        Some(info.server_info.as_ref()?.name.clone())
    }

    /// Calls `tool` with `arguments`, within `timeout`; the result as the server sent it.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
    ) -> Result<CallToolResult, Failure> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        match tokio::time::timeout(timeout, self.session.service.call_tool(params)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(ServiceError::McpError(error))) => Err(refused(&error)),
            Ok(Err(error)) => Err(Failure::Mcp(cause(&error))),
            Err(_) => Err(Failure::Timeout(timeout)),
        }
    }
}

/// Reads a tool result into hits: an error result is a failure with its text, cut short. Every
/// text block is handed on in order (a `text_entries` shape reads one hit from each); the body cap
/// bounds how many there can be.
pub fn read(result: &CallToolResult, mapping: &Mapping, limit: usize) -> Result<Vec<Hit>, Failure> {
    let texts = texts(result);
    if result.is_error == Some(true) {
        return Err(Failure::Tool(texts.first().map_or_else(
            || "the tool answered an error without text".into(),
            |text| cut(text.trim(), 200),
        )));
    }
    mapping
        .read_answer(result.structured_content.as_ref(), &texts, limit)
        .map_err(Failure::Decode)
}

/// A JSON-RPC error answered to a call: the server's refusal, its message cut short.
fn refused(error: &rmcp::model::ErrorData) -> Failure {
    Failure::Tool(format!(
        "the server refused the call: {} (code {})",
        cut(&error.message, 200),
        error.code.0
    ))
}

/// About what a parsed tool result holds on the heap: its texts and its structured content.
fn result_bytes(result: &CallToolResult) -> usize {
    let texts: usize = texts(result).iter().map(|text| text.len() + 32).sum();
    texts + result.structured_content.as_ref().map_or(0, value_bytes)
}

/// About what a JSON value holds on the heap (its depth is bounded by the parser's).
fn value_bytes(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    const NODE: usize = std::mem::size_of::<Value>();
    NODE + match value {
        Value::String(text) => text.len(),
        Value::Array(items) => items.iter().map(value_bytes).sum(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| k.len() + NODE + value_bytes(v))
            .sum(),
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
    }
}

/// A tool result's text blocks, in order.
pub fn texts(result: &CallToolResult) -> Vec<&str> {
    let blocks = result.content.iter().filter_map(|block| block.as_text());
    blocks.map(|text| text.text.as_str()).collect()
}

/// How the callosum introduces itself to a server.
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("seren-corpus-callosum", env!("CARGO_PKG_VERSION")),
    )
}

/// Opens a session: spawns the server or reaches its url, initializes, lists its tools. What the
/// server sends is counted in `answers` as it arrives.
async fn connect(store: &str, link: &Link, answers: Arc<Ledger>) -> Result<Session, Failure> {
    let (service, child) = match link {
        Link::Stdio(program) => {
            let mut child = spawn(program)?;
            let (Some(stdout), Some(stdin)) = (child.0.stdout().take(), child.0.stdin().take())
            else {
                return Err(Failure::Mcp("the server's stdio could not be piped".into()));
            };
            if let Some(stderr) = child.0.stderr().take() {
                log_stderr(store.to_owned(), stderr);
            }
            // A line of the server's is one answer: capped like an HTTP store's body (rmcp's
            // own default is 16 MiB), so an MCP answer over stdio holds no more than one over HTTP.
            let stdout = super::stdout::Counted::new(stdout, answers);
            let transport = AsyncRwTransport::<RoleClient, _, _>::new(stdout, stdin)
                .with_max_line_length(DEFAULT_BODY_CAP);
            match client_config().serve(transport).await {
                Ok(service) => (service, Some(child)),
                Err(error) => {
                    let why = cause(&error);
                    return Err(Failure::Mcp(unstarted(&mut child, why).await));
                }
            }
        }
        Link::Http { url, token, client } => {
            // One event, or one JSON body, within the cap an HTTP store's body has (rmcp's own
            // default is 16 MiB each).
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .max_json_response_size(DEFAULT_BODY_CAP)
                .max_sse_event_size(DEFAULT_BODY_CAP);
            if let Some(token) = token {
                config = config.auth_header(token.expose());
            }
            let client = super::http::Metered::new(client.clone(), answers);
            let transport = StreamableHttpClientTransport::with_client(client, config);
            let service = client_config()
                .serve(transport)
                .await
                .map_err(|error| Failure::Mcp(format!("initialize: {}", cause(&error))))?;
            (service, None)
        }
    };
    // rmcp keeps up to 512 answers (a server's `ttlMs`, stale ones kept for errors): a server
    // could park hundreds of megabytes there. The callosum lists once a session and never reads a
    // list again, so nothing is cached.
    service
        .peer()
        .set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    let tools = list_tools(&service).await?;
    Ok(Session {
        service,
        tools,
        child: child.map(Mutex::new),
    })
}

/// Every tool the server lists, page after page, within [`MCP_MAX_TOOL_PAGES`] pages,
/// [`MCP_MAX_TOOLS`] tools and [`MCP_MAX_TOOL_BYTES`] bytes of definitions (rmcp's
/// `list_all_tools` follows `nextCursor` for as long as the server gives one). The time bound is
/// the start's, [`MCP_START_WAIT`], and a store removed meanwhile cancels the start.
async fn list_tools(
    service: &RunningService<RoleClient, ClientConfig>,
) -> Result<Vec<Tool>, Failure> {
    let mut tools = Vec::new();
    let mut bytes = 0usize;
    let mut cursor = None;
    for _ in 0..MCP_MAX_TOOL_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let page = service
            .list_tools(Some(params))
            .await
            .map_err(|error| Failure::Mcp(format!("tools/list: {}", cause(&error))))?;
        for tool in page.tools {
            bytes = bytes.saturating_add(tool_bytes(&tool));
            tools.push(tool);
            if tools.len() > MCP_MAX_TOOLS || bytes > MCP_MAX_TOOL_BYTES {
                return Err(Failure::Mcp(format!(
                    "tools/list: the server lists more than {MCP_MAX_TOOLS} tools or {} MiB of them, \
                     the most read from one server",
                    MCP_MAX_TOOL_BYTES / (1024 * 1024)
                )));
            }
        }
        // An empty cursor is no cursor: the spec makes it opaque, and "" cannot page anywhere.
        match page.next_cursor.filter(|next| !next.is_empty()) {
            None => return Ok(tools),
            Some(next) => cursor = Some(next),
        }
    }
    Err(Failure::Mcp(format!(
        "tools/list: the server was still paging after {MCP_MAX_TOOL_PAGES} pages, the most read \
         from one server"
    )))
}

/// About what one tool's definition holds: its JSON.
fn tool_bytes(tool: &Tool) -> usize {
    serde_json::to_vec(tool).map_or(usize::MAX, |json| json.len())
}

/// Why a spawned server gave no session: its exit status when it has exited.
async fn unstarted(child: &mut ServerProcess, why: String) -> String {
    match tokio::time::timeout(Duration::from_millis(200), child.0.inner_mut().wait()).await {
        Ok(Ok(status)) => format!("the server exited before it answered initialize ({status})"),
        _ => format!("initialize: {why}"),
    }
}

/// A spawned MCP server and everything it started: a process group of its own on Unix, a job
/// object on Windows. A server is often a wrapper (`npx`, `uvx`, a shell script) whose real work is
/// a child of its own; ending the server alone would leave that child running. Dropping this ends
/// the whole group (SIGKILL to the group; the job terminated), as a reload that drops the store or
/// the callosum's own exit does. On Windows the job also dies with the callosum however it ends
/// (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`).
struct ServerProcess(Box<dyn process_wrap::tokio::ChildWrapper>);

impl ServerProcess {
    /// The server's own exit status, if it has exited (not its group's).
    fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        self.0.inner_mut().try_wait()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // The group (or job) may be gone already: nothing is left to end then.
        let _ = self.0.start_kill();
    }
}

/// Spawns the server with its stdio piped, in a group of its own, ended when dropped. It gets
/// the callosum's environment without the callosum's own settings and token (`SEREN_SCC_*`: a
/// callosum spawned as a store reads only its own) and without systemd's `NOTIFY_SOCKET` and
/// `LISTEN_*` (they are the callosum's own), then the entry's `env`.
fn spawn(program: &Program) -> Result<ServerProcess, Failure> {
    use process_wrap::tokio::{CommandWrap, KillOnDrop};
    let mut command = tokio::process::Command::new(&program.command);
    command
        .args(&program.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
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
    let mut wrapped = CommandWrap::from(command);
    #[cfg(unix)]
    wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
    #[cfg(windows)]
    wrapped.wrap(process_wrap::tokio::JobObject);
    // The server itself is killed when its handle drops, group or no group.
    wrapped.wrap(KillOnDrop);
    wrapped.spawn().map(ServerProcess).map_err(|error| {
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

/// What went wrong, in the callosum's own words: the kind of error rmcp, reqwest or the system
/// met, never its text. Their texts quote what they were given and got: reqwest the url it
/// called (user-info and query included), rmcp a preview of a body that is not JSON-RPC or a
/// JSON-RPC error's message, serde a value it could not read. The server may have put the query
/// in any of them, and the reason goes to the health page and the log, so nothing is copied.
fn cause(error: &(dyn std::error::Error + 'static)) -> String {
    words(error).unwrap_or_else(|| "the transport failed".into())
}

/// The words for the first error in `error`'s chain whose type is known.
fn words(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    use rmcp::transport::DynamicTransportError;
    if let Some(init) = error.downcast_ref::<rmcp::service::ClientInitializeError>() {
        return init_words(init);
    }
    if let Some(service) = error.downcast_ref::<ServiceError>() {
        return service_words(service);
    }
    if let Some(transport) = error.downcast_ref::<DynamicTransportError>() {
        return words(transport.error.as_ref());
    }
    if let Some(words) = http_words(error) {
        return Some(words);
    }
    // A failed handshake sits in the chain as an IO error of kind "invalid data": read for
    // what rustls met instead.
    if let Some(words) = crate::store::clients::rejected(error) {
        return Some(words);
    }
    if let Some(io) = error.downcast_ref::<std::io::Error>() {
        // The kind's own words ("connection refused"), never the message an error may carry.
        return Some(io.kind().to_string());
    }
    if let Some(json) = error.downcast_ref::<serde_json::Error>() {
        return Some(format!(
            "the server's answer is not JSON-RPC (line {}, column {})",
            json.line(),
            json.column()
        ));
    }
    error.source().and_then(words)
}

/// The words for a session that could not be started (rmcp's `ClientInitializeError`).
fn init_words(init: &rmcp::service::ClientInitializeError) -> Option<String> {
    use rmcp::service::ClientInitializeError as Init;
    Some(match init {
        // rmcp holds the transport's error in a field it does not name as the source.
        Init::TransportError { error, .. } => return words(error),
        Init::ConnectionClosed(_) => "the server closed the connection".into(),
        Init::JsonRpcError(error) => {
            format!("the server refused initialize (code {})", error.code.0)
        }
        Init::ExpectedInitResponse(_) | Init::ExpectedInitResult(_) => {
            "the server's answer is not an initialize result".into()
        }
        Init::ConflictInitResponseId(..) | Init::UncorrelatedErrorResponse { .. } => {
            "the server answered with another request's id".into()
        }
        Init::NoCompatibleProtocolVersion { .. } => {
            "the server speaks no protocol version the callosum does".into()
        }
        Init::Cancelled => "cancelled".into(),
        _ => "the server could not be initialized".into(),
    })
}

/// The words for a call in a started session that failed (rmcp's `ServiceError`).
fn service_words(service: &ServiceError) -> Option<String> {
    Some(match service {
        ServiceError::TransportSend(error) => return words(error),
        ServiceError::McpError(error) => {
            format!("the server answered an error (code {})", error.code.0)
        }
        ServiceError::TransportClosed => "the server closed the session".into(),
        ServiceError::UnexpectedResponse => {
            "the server answered with the wrong kind of response".into()
        }
        ServiceError::Timeout { timeout } => Failure::Timeout(*timeout).to_string(),
        ServiceError::Cancelled { .. } => "cancelled".into(),
        _ => "the call failed".into(),
    })
}

/// The words for rmcp's HTTP transport error, `StreamableHttpError<E>`, `E` the error of the
/// reqwest [`super::http::Metered`] calls with.
fn http_words(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    use rmcp::transport::streamable_http_client::StreamableHttpError as Http;
    let http = error.downcast_ref::<Http<reqwest::Error>>()?;
    Some(match http {
        // The client's error: its source chain ends in an IO error (refused, reset) or not.
        Http::Client(error) => {
            return words(error).or_else(|| Some("the request failed".into()));
        }
        Http::Io(error) => return words(error),
        Http::HttpStatus(status) => format!("status {}", status.status),
        // rmcp words a refused POST as `HTTP <status>: <the body>`; only the status is kept.
        Http::UnexpectedServerResponse(text) => match status_in(text) {
            Some(code) => format!("status {code}"),
            None => "the server's answer is not JSON-RPC".into(),
        },
        Http::UnexpectedContentType(_) => {
            "the server's answer is neither JSON nor an event stream".into()
        }
        Http::ResponseBodyTooLarge { max_size } => Failure::TooLarge(*max_size).to_string(),
        Http::Deserialize(_) => "the server's answer is not JSON-RPC".into(),
        Http::Sse(_) | Http::UnexpectedEndOfStream => "the server's event stream broke off".into(),
        Http::SessionExpired => "the server expired the session".into(),
        Http::AuthRequired(_) => "the server asks for authorization (status 401)".into(),
        Http::InsufficientScope(_) => "the token's scope is not enough (status 403)".into(),
        _ => "the transport failed".into(),
    })
}

/// The status of rmcp's `HTTP 404 Not Found: ...` (its words for a POST answered with an error
/// status): the three digits after `HTTP `, nothing else of the text.
fn status_in(text: &str) -> Option<u16> {
    let digits = text.strip_prefix("HTTP ")?.get(..3)?;
    digits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| digits.parse().ok())
        .flatten()
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
    fn a_status_is_read_from_rmcp_words_and_nothing_else() {
        let check =
            |text: &str, expected: Option<u16>| assert_eq!(status_in(text), expected, "{text}");
        check("HTTP 404 Not Found: ", Some(404));
        check(
            "HTTP 500 Internal Server Error: no results for 'SECRET'",
            Some(500),
        );
        check("HTTP 5", None);
        check("HTTP abc: 404", None);
        check("could not parse JSON response: HTTP 404", None);
        check("", None);
    }

    /// rmcp's HTTP transport errors quoting `secret`, and their words (`E` is the error of the
    /// client the sessions run on, as in [`http_words`]).
    fn http_errors<C: rmcp::transport::streamable_http_client::StreamableHttpClient>(
        secret: &str,
    ) -> Vec<(Box<dyn std::error::Error>, &'static str)> {
        use rmcp::transport::streamable_http_client::StreamableHttpError as Http;
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, secret.to_owned());
        let errors: Vec<(Http<C::Error>, &str)> = vec![
            (
                Http::UnexpectedServerResponse(secret.to_owned().into()),
                "the server's answer is not JSON-RPC",
            ),
            (
                Http::UnexpectedServerResponse(format!("HTTP 502 Bad Gateway: {secret}").into()),
                "status 502",
            ),
            (
                Http::UnexpectedContentType(Some(secret.to_owned())),
                "the server's answer is neither JSON nor an event stream",
            ),
            (Http::Io(refused), "connection refused"),
            (Http::SessionExpired, "the server expired the session"),
        ];
        errors
            .into_iter()
            .map(|(error, words)| (Box::new(error) as Box<dyn std::error::Error>, words))
            .collect()
    }

    #[test]
    fn an_error_is_worded_by_its_kind_never_by_its_text() {
        let check = |error: &(dyn std::error::Error + 'static), expected: &str| {
            assert_eq!(cause(error), expected);
        };
        let secret = "http://user:PASSW0RD@[::1]:9/mcp?api_key=SECRETKEY no results for 'SECRET'";
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, secret);
        check(&refused, "connection refused");
        for (error, expected) in http_errors::<super::super::http::Metered>(secret) {
            check(error.as_ref(), expected);
        }
        let json = serde_json::from_str::<u32>(&format!("\"{secret}\"")).unwrap_err();
        assert!(
            json.to_string().contains("SECRET"),
            "serde quotes the value: {json}"
        );
        check(
            &json,
            "the server's answer is not JSON-RPC (line 1, column 76)",
        );
        #[derive(Debug)]
        struct Unknown;
        impl std::fmt::Display for Unknown {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("no results for 'SECRET'")
            }
        }
        impl std::error::Error for Unknown {}
        check(&Unknown, "the transport failed");
    }
}
