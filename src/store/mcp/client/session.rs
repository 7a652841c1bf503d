//! Opening a session with an MCP server: where it is reached ([`Link`]), the spawn or the url,
//! `initialize`, every tool it lists (bounded), and what an open [`Session`] says of itself (alive,
//! why it ended, whether it has a tool). Keeping the session, starting it again, is `client`'s.

use super::process::{ServerProcess, log_stderr, spawn, unstarted};
use super::wording::cause;
use crate::config::Program;
use crate::ledger::Ledger;
use crate::limits::{DEFAULT_BODY_CAP, MCP_MAX_TOOL_BYTES, MCP_MAX_TOOL_PAGES, MCP_MAX_TOOLS};
use crate::secret::Secret;
use crate::store::clients::McpHttp;
use crate::store::mcp::http::Metered;
use crate::store::mcp::stdout::Counted;
use crate::store::remote::Failure;
use rmcp::ServiceExt;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams, Tool};
use rmcp::service::{ClientCacheConfig, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use std::sync::{Arc, Mutex, PoisonError};

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

/// One initialized session and what the server said it has.
pub(super) struct Session {
    pub(super) service: RunningService<RoleClient, ClientConfig>,
    pub(super) tools: Vec<Tool>,
    /// The spawned server (stdio), with whatever it started. Dropping it ends them all.
    pub(super) child: Option<Mutex<ServerProcess>>,
}

impl Session {
    pub(super) fn alive(&self) -> bool {
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
    pub(super) fn end_reason(&self) -> String {
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

    pub(super) fn check_tool(&self, name: &str) -> Result<(), Failure> {
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

/// How the callosum introduces itself to a server.
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("seren-corpus-callosum", env!("CARGO_PKG_VERSION")),
    )
}

/// Opens a session: spawns the server or reaches its url, initializes, lists its tools. What the
/// server sends is counted in `answers` as it arrives.
pub(super) async fn connect(
    store: &str,
    link: &Link,
    answers: Arc<Ledger>,
) -> Result<Session, Failure> {
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
            let stdout = Counted::new(stdout, answers);
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
            let client = Metered::new(client.clone(), answers);
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
/// the start's, [`MCP_START_WAIT`](crate::limits::MCP_START_WAIT), and a store removed meanwhile
/// cancels the start.
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
