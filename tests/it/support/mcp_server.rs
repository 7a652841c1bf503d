//! A scriptable MCP server for the `mcp` store's fault tests: rmcp's own server over streamable
//! HTTP on a loopback port (a real MCP server, speaking the real protocol), whose tools misbehave
//! on purpose: one answers hits, one plain text, one an error result, one never answers. Its
//! sessions can be made to expire after a short idle time, and it counts the sessions opened.

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
