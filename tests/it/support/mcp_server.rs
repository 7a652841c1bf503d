//! A scriptable MCP server for the `mcp` store's fault tests: rmcp's own server over streamable
//! HTTP on a loopback port (a real MCP server, speaking the real protocol), whose tools misbehave
//! on purpose: one answers hits, one plain text, one an error result, one never answers, and two
//! quote the query in an error (a result, a JSON-RPC error). Its sessions can be made to expire
//! after a short idle time, and it counts the sessions opened. [`EchoServer`] speaks JSON-RPC by
//! hand up to the tool call, and answers that with something that is not JSON-RPC.

use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, JsonObject, ServerCapabilities, ServerConfig,
};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Clone)]
struct Probe;

fn query_of(args: &JsonObject) -> String {
    args.get("query")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

#[tool_router]
impl Probe {
    /// `{results: [{id, text, score, lang}]}`: `n_results` hits (default 3) about the query.
    #[tool(name = "find", description = "Finds notes.")]
    async fn find(&self, args: JsonObject) -> Result<CallToolResult, String> {
        let query = query_of(&args);
        let n = args.get("n_results").and_then(Value::as_u64).unwrap_or(3);
        let results: Vec<Value> = (1..=n)
            .map(|i| {
                json!({"id": format!("p{i}"), "text": format!("note {i} on {query}"),
                       "score": 1.0 / i as f64, "lang": "en"})
            })
            .collect();
        Ok(CallToolResult::structured(json!({"results": results})))
    }

    /// Answers text that is not JSON.
    #[tool(name = "plain", description = "Answers prose.")]
    async fn plain(&self, _args: JsonObject) -> Result<CallToolResult, String> {
        Ok(CallToolResult::success(vec![ContentBlock::text(
            "Here are your notes: none.",
        )]))
    }

    /// Answers an error result.
    #[tool(name = "broken", description = "Always fails.")]
    async fn broken(&self, _args: JsonObject) -> Result<CallToolResult, String> {
        Err("the index is offline".into())
    }

    /// Answers an error result that quotes the query (as a server's "nothing found" may).
    #[tool(name = "echo_error", description = "Fails, quoting the query.")]
    async fn echo_error(&self, args: JsonObject) -> Result<CallToolResult, String> {
        Err(format!("no results for '{}'", query_of(&args)))
    }

    /// Answers a JSON-RPC error whose message quotes the query.
    #[tool(name = "refuse", description = "Refuses, quoting the query.")]
    async fn refuse(&self, args: JsonObject) -> Result<CallToolResult, rmcp::ErrorData> {
        Err(rmcp::ErrorData::invalid_params(
            format!("no results for '{}'", query_of(&args)),
            None,
        ))
    }

    /// Never answers.
    #[tool(name = "hang", description = "Never answers.")]
    async fn hang(&self, _args: JsonObject) -> Result<CallToolResult, String> {
        std::future::pending::<()>().await;
        unreachable!()
    }
}

#[tool_handler(router = Probe::tool_router())]
impl ServerHandler for Probe {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("probe", "1.0.0"))
    }
}

/// The probe server on a loopback port; stopped when dropped.
pub struct ProbeServer {
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    sessions: Arc<AtomicUsize>,
    stop: CancellationToken,
}

impl Drop for ProbeServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl ProbeServer {
    /// Starts the server; its sessions expire after `idle` without a request, when given.
    pub async fn start(idle: Option<Duration>) -> Self {
        let stop = CancellationToken::new();
        let sessions = Arc::new(AtomicUsize::new(0));
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = idle;
        let config = StreamableHttpServerConfig::default().with_cancellation_token(stop.clone());
        let opened = sessions.clone();
        let service = StreamableHttpService::new(
            move || {
                opened.fetch_add(1, Ordering::SeqCst);
                Ok(Probe)
            },
            manager.into(),
            config,
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        let url = format!("{}/mcp", super::serve_loopback(router, stop.clone()).await);
        Self {
            url,
            sessions,
            stop,
        }
    }

    /// How many sessions clients have opened.
    pub fn sessions(&self) -> usize {
        self.sessions.load(Ordering::SeqCst)
    }
}

/// How [`EchoServer`] answers a `tools/call`: each quotes the call's `query` argument.
#[derive(Clone, Copy, Debug)]
pub enum Echo {
    /// 200, `application/json`, a JSON object that is not a JSON-RPC message.
    Json,
    /// 500, `application/json`, the same object.
    Status,
    /// 200, `text/plain`, the query in prose.
    Text,
}

impl Echo {
    fn path(self) -> &'static str {
        match self {
            Echo::Json => "json",
            Echo::Status => "status",
            Echo::Text => "text",
        }
    }
}

/// An MCP server over streamable HTTP written by hand: it answers `initialize` and `tools/list`
/// (one tool, `find`) as JSON, any notification with 202, and a `tools/call` at
/// `/{json,status,text}/mcp` as [`Echo`] says. Stopped when dropped.
pub struct EchoServer {
    base: String,
    _stop: tokio_util::sync::DropGuard,
}

impl EchoServer {
    pub async fn start() -> Self {
        use axum::routing::post;
        let mut router = axum::Router::new();
        for echo in [Echo::Json, Echo::Status, Echo::Text] {
            router = router.route(
                &format!("/{}/mcp", echo.path()),
                post(move |body: axum::Json<Value>| echo_answer(echo, body.0)),
            );
        }
        let stop = CancellationToken::new();
        let base = super::serve_loopback(router, stop.clone()).await;
        Self {
            base,
            _stop: stop.drop_guard(),
        }
    }

    /// The MCP endpoint answering a tool call as `echo` says.
    pub fn url(&self, echo: Echo) -> String {
        format!("{}/{}/mcp", self.base, echo.path())
    }
}

async fn echo_answer(echo: Echo, message: Value) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let json = |value: Value| axum::Json(value).into_response();
    let Some(id) = message.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    match message["method"].as_str().unwrap_or_default() {
        "initialize" => json(json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo", "version": "1.0.0"}}})),
        "tools/list" => json(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
            {"name": "find", "inputSchema": {"type": "object"}}]}})),
        "tools/call" => {
            let query = message["params"]["arguments"]["query"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let echoed = json!({"error": format!("no results for '{query}'"), "query": query});
            match echo {
                Echo::Json => json(echoed),
                Echo::Status => {
                    (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(echoed)).into_response()
                }
                Echo::Text => (
                    [("content-type", "text/plain")],
                    format!("no results for '{query}'"),
                )
                    .into_response(),
            }
        }
        _ => json(json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": "method not found"}})),
    }
}

/// A hostile MCP server over streamable HTTP, written by hand: `initialize` as any server, then a
/// `tools/list` that never ends (every page carries one more tool, its description `description`
/// bytes long, and another `nextCursor`, after `delay`). It counts the pages asked for. Stopped
/// when dropped.
pub struct PagingServer {
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    pages: Arc<AtomicUsize>,
    _stop: tokio_util::sync::DropGuard,
}

impl PagingServer {
    pub async fn start(delay: Duration, description: usize) -> Self {
        use axum::routing::post;
        let pages = Arc::new(AtomicUsize::new(0));
        let counted = pages.clone();
        let router = axum::Router::new().route(
            "/mcp",
            post(move |body: axum::Json<Value>| {
                let counted = counted.clone();
                async move { page_answer(body.0, &counted, delay, description).await }
            }),
        );
        let stop = CancellationToken::new();
        let url = format!("{}/mcp", super::serve_loopback(router, stop.clone()).await);
        Self {
            url,
            pages,
            _stop: stop.drop_guard(),
        }
    }

    /// How many `tools/list` pages have been asked for.
    pub fn pages(&self) -> usize {
        self.pages.load(Ordering::SeqCst)
    }
}

async fn page_answer(
    message: Value,
    pages: &AtomicUsize,
    delay: Duration,
    description: usize,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let Some(id) = message.get("id").cloned() else {
        return axum::http::StatusCode::ACCEPTED.into_response();
    };
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({"protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "pager", "version": "1.0.0"}}),
        "tools/list" => {
            let page = pages.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(delay).await;
            json!({"tools": [{"name": format!("t{page}"), "description": "x".repeat(description),
                              "inputSchema": {"type": "object"}}],
                   "nextCursor": format!("c{}", page + 1)})
        }
        _ => {
            return axum::Json(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "method not found"}}))
            .into_response();
        }
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// A hostile MCP server over streamable HTTP, written by hand: `initialize` and `tools/list` (one
/// tool, `find`) as any server, then every `tools/call` answered with one event of an event
/// stream holding a text block of `size` bytes, sent a MiB at a time with `pause` between (so
/// that many answers are arriving at once). It counts the calls. Stopped when dropped.
pub struct FloodServer {
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    calls: Arc<AtomicUsize>,
    _stop: tokio_util::sync::DropGuard,
}

impl FloodServer {
    pub async fn start(size: usize, pause: Duration) -> Self {
        use axum::routing::post;
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let router = axum::Router::new().route(
            "/mcp",
            post(move |body: axum::Json<Value>| {
                let counted = counted.clone();
                async move { flood_answer(body.0, &counted, size, pause) }
            }),
        );
        let stop = CancellationToken::new();
        let url = format!("{}/mcp", super::serve_loopback(router, stop.clone()).await);
        Self {
            url,
            calls,
            _stop: stop.drop_guard(),
        }
    }

    /// How many `tools/call` requests have come in.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

fn flood_answer(
    message: Value,
    calls: &AtomicUsize,
    size: usize,
    pause: Duration,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let Some(id) = message.get("id").cloned() else {
        return axum::http::StatusCode::ACCEPTED.into_response();
    };
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({"protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "flood", "version": "1.0.0"}}),
        "tools/list" => json!({"tools": [{"name": "find",
            "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}}}]}),
        "tools/call" => {
            calls.fetch_add(1, Ordering::SeqCst);
            return flood_events(id, size, pause);
        }
        _ => {
            return axum::Json(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "method not found"}}))
            .into_response();
        }
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// One event, `size` bytes of text in a tool result, sent a MiB at a time.
fn flood_events(id: Value, size: usize, pause: Duration) -> axum::response::Response {
    const MIB: usize = 1024 * 1024;
    let head = format!(
        "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\""
    );
    let tail = "\"}]}}\n\n";
    let mut parts = vec![axum::body::Bytes::from(head)];
    let mut left = size;
    while left > 0 {
        let n = left.min(MIB);
        parts.push(axum::body::Bytes::from(vec![b'x'; n]));
        left -= n;
    }
    parts.push(axum::body::Bytes::from_static(tail.as_bytes()));
    let stream = futures_util::stream::unfold(
        (parts.into_iter(), true),
        move |(mut parts, first)| async move {
            let part = parts.next()?;
            if !first {
                tokio::time::sleep(pause).await;
            }
            Some((Ok::<_, std::io::Error>(part), (parts, false)))
        },
    );
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from_stream(stream))
        .unwrap()
}
