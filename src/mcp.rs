//! The MCP edge: the four tools (`search`, `list_stores`, `add_store`, `remove_store`) as thin
//! adapters over the shared [`Federation`], served over stdio and over streamable HTTP at `/mcp`.
//!
//! This is the only module that knows rmcp. Every tool works on the live roster, so a store added
//! through any surface is fanned by every surface on its next search. Tool arguments are decoded
//! here (not by rmcp's extractor) so that a bad argument is a tool error the model can read and fix,
//! with the same message REST gives, never a protocol error.

use crate::api::NewStore;
use crate::api::{
    Added, Refusal, RemoveRequest, Removed, SearchAnswer, SearchToolRequest, Stores, TextFormat,
    decode_value,
};
use crate::chain::Chain;
use crate::federation::Federation;
use crate::oauth::Access;
use crate::view::Caller;
use rmcp::handler::server::common::schema_for_input;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Json;
use rmcp::model::{CallToolResult, ContentBlock, Extensions, Tool};
use rmcp::model::{
    Implementation, JsonObject, RequestMetaObject, ServerCapabilities, ServerConfig,
};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use std::borrow::Cow;
use std::sync::{Arc, LazyLock};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// What the server tells a host about itself when it connects.
const INSTRUCTIONS: &str = "seren-corpus-callosum federates several memory stores (facts, episodes, \
other callosums) into one ranked recall list. Call `search` first for anything the user may have told \
you before or that may be on record; it goes broad across every store at once and says where each hit \
came from. Reach for a single store's own tool (recall, search_loci) only when you know which one you \
want. `list_stores` shows what is fanned; `add_store` and `remove_store` change that live.";

/// The MCP server: a handle on the shared federation. Cloned per session; cheap.
#[derive(Clone)]
pub struct CallosumMcp {
    federation: Arc<Federation>,
}

impl CallosumMcp {
    pub fn new(federation: Arc<Federation>) -> Self {
        Self { federation }
    }
}

/// A tool's input schema, checked to be object-rooted, in its portable form. The check runs once,
/// when [`TOOLS`] is first used; a unit test lists the tools so a bad schema fails the tests, not a
/// host.
fn input_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    portable(&schema_for_input::<T>().unwrap_or_else(|e| panic!("bad input schema: {e}")))
}

/// A tool's output schema, in its portable form.
fn output_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    portable(&rmcp::handler::server::tool::schema_for_output::<T>())
}

/// Rewrites a generated schema into the subset every host reads: a nullable `type: [T, "null"]`
/// becomes `anyOf: [{type: T}, {type: null}]` (single-type dialects, such as the OpenAPI subset some
/// model providers use, reject type arrays), Rust's integer and float `format`s (`uint32`,
/// `double`, ...), which JSON Schema does not define, are dropped, and so is a `default: null` on
/// a property that cannot be null.
fn portable(schema: &JsonObject) -> Arc<JsonObject> {
    fn tidy(value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::Object(map) => {
                let rust_format = map.get("format").and_then(Value::as_str).is_some_and(|f| {
                    matches!(
                        f,
                        "uint"
                            | "uint8"
                            | "uint16"
                            | "uint32"
                            | "uint64"
                            | "int8"
                            | "int16"
                            | "int32"
                            | "int64"
                            | "float"
                            | "double"
                    )
                });
                if rust_format {
                    map.remove("format");
                }
                let nullable_pair = match map.get("type") {
                    Some(Value::Array(types)) if types.len() == 2 => {
                        let other: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                        (other.len() == 1).then(|| other[0].clone())
                    }
                    _ => None,
                };
                if let Some(other) = nullable_pair
                    && !map.contains_key("anyOf")
                {
                    map.remove("type");
                    map.insert(
                        "anyOf".into(),
                        serde_json::json!([{ "type": other }, { "type": "null" }]),
                    );
                }
                let may_be_null =
                    map.contains_key("anyOf") || map.get("type") == Some(&Value::from("null"));
                if map.get("default") == Some(&Value::Null) && !may_be_null {
                    map.remove("default");
                }
                map.values_mut().for_each(tidy);
            }
            Value::Array(items) => items.iter_mut().for_each(tidy),
            _ => {}
        }
    }
    let mut value = serde_json::Value::Object(schema.clone());
    tidy(&mut value);
    match value {
        serde_json::Value::Object(object) => Arc::new(object),
        // `tidy` keeps an object an object.
        _ => unreachable!("a schema object stays an object"),
    }
}

/// The request line of a `search` tool call (over stdio there is no HTTP request to log), as
/// `server.access_log` and `server.log_queries` say.
fn log_search(federation: &Federation, query: &str, answer: &SearchAnswer, started: Instant) {
    let server = &federation.config().server;
    if !server.access_log {
        return;
    }
    let ms = crate::text::millis(started.elapsed());
    let query = server.log_queries.then(|| crate::text::logged_query(query));
    tracing::info!(
        tool = "search",
        ms,
        stores_asked = answer.stores_searched.len() + answer.failed.len(),
        stores_failed = answer.failed.len(),
        query,
        "mcp tool call"
    );
}

/// Decodes tool arguments, as a tool error naming the field when they do not fit.
fn arguments<T: serde::de::DeserializeOwned>(arguments: JsonObject) -> Result<T, String> {
    decode_value(serde_json::Value::Object(arguments))
        .map_err(|why| format!("invalid arguments: {why}"))
}

/// The `search` tool's arguments: the search's own fields decoded apart from `format`, since
/// serde loses a field's path inside a flattened struct and a refusal must name the field
/// (`invalid arguments: identity: unknown variant ...`, as `POST /search` words it).
fn search_arguments(mut args: JsonObject) -> Result<SearchToolRequest, String> {
    let format = args.remove("format").filter(|format| !format.is_null());
    let search = arguments(args)?;
    let format = (format.map(decode_value))
        .transpose()
        .map_err(|why| format!("invalid arguments: format: {why}"))?;
    Ok(SearchToolRequest { search, format })
}

fn refused(refusal: Refusal) -> String {
    refusal.detail
}

/// Which of `server.oauth`'s scopes a tool needs.
#[derive(Clone, Copy)]
enum Scope {
    Read,
    Write,
}

impl CallosumMcp {
    /// Who is calling: over HTTP, the caller the auth layer found (its view included); over
    /// stdio, the local user. Refuses a call over HTTP whose access token does not grant the
    /// scope `tool` needs (with the static token, a view's token, or no auth set, every tool may
    /// be called; a view's own limits are the core's to apply).
    fn authorized(
        &self,
        extensions: &Extensions,
        tool: &str,
        scope: Scope,
    ) -> Result<Caller, String> {
        let Some(parts) = extensions.get::<axum::http::request::Parts>() else {
            return Ok(Caller::local());
        };
        // The auth layer puts a caller on every request it lets through; one without is refused
        // rather than taken as everyone.
        let caller = (parts.extensions.get::<Caller>())
            .cloned()
            .ok_or_else(|| "forbidden: the request came in without a caller".to_owned())?;
        let access = parts.extensions.get::<Access>();
        let (Some(access), Some(oauth)) = (access, &self.federation.config().server.oauth) else {
            return Ok(caller);
        };
        let needed = match scope {
            Scope::Read => &oauth.read_scope,
            Scope::Write => &oauth.write_scope,
        };
        if access.allows(needed) {
            return Ok(caller);
        }
        Err(format!(
            "forbidden: {tool} needs the scope {needed}, which this access token does not grant; \
             sign in again asking for {needed}"
        ))
    }
}

#[tool_router]
impl CallosumMcp {
    /// Search every connected memory store at once and get one ranked list.
    #[tool(
        name = "search",
        description = "Search every memory store this callosum fans (facts, episodic memories, other \
callosums) at once and get ONE ranked list. Call this first, before a single store's own recall tool: \
it goes broad and tells you where each hit came from. Each hit has `content` (the text), `store` (which \
store), `store_rank` (its rank there), `score` (the fused rank score it was ordered by) and the store's \
own numbers. `failed` and `skipped` name stores that did not answer and why, so you know what the list \
may be missing; `notes`, when present, say what the search itself could not do (no store to search, a \
hop round its deadline or call budget had no room for). Edges follow the ranked hits (`score` 0, `metadata.source` says which kind: \
satellite-edge, supersedes-edge, topic-edge); hop hits carry `metadata.hop`. Say how much you can read \
with `budget_tokens` (about 4 characters a token): rows are packed best first and `tokens` says what \
the page cost. `format: \"compact\"` makes the text block numbered lines instead of JSON, a few times \
fewer tokens. `explain: true` says why each hit is where it is (its rank, weight and RRF contribution, \
and the shaping steps that moved it) and which hits were left out. Read-only.",
        input_schema = input_schema::<SearchToolRequest>(),
        output_schema = output_schema::<SearchAnswer>(),
        annotations(
            title = "Search all memory stores",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn search(
        &self,
        args: JsonObject,
        meta: RequestMetaObject,
        extensions: Extensions,
    ) -> Result<CallToolResult, String> {
        let caller = self.authorized(&extensions, "search", Scope::Read)?;
        let args = search_arguments(args)?;
        // A callosum that fans this one through MCP says where the search stands in `_meta`;
        // the trace context comes there too, or as the `/mcp` request's own header.
        let http = extensions.get::<axum::http::request::Parts>();
        let chain = Chain::from_meta(&meta.0.0)
            .or_trace_from(|name| http?.headers.get(name)?.to_str().ok());
        let started = Instant::now();
        let answer = self
            .federation
            .search(&caller, &args.search, &chain)
            .await
            .map_err(refused)?;
        log_search(&self.federation, &args.search.query, &answer, started);
        let format = args
            .format
            .unwrap_or(self.federation.config().server.mcp_format);
        // A SearchAnswer is strings, numbers and JSON objects: it always serializes.
        let value = serde_json::to_value(&answer).expect("an answer serializes");
        let mut result = CallToolResult::structured(value);
        if format == TextFormat::Compact {
            result.content = vec![ContentBlock::text(crate::render::compact(&answer))];
        }
        Ok(result)
    }

    /// List the stores and whether each is fanned.
    #[tool(
        name = "list_stores",
        output_schema = output_schema::<Stores>(),
        description = "List every configured memory store: its name, type, url, weight, floor, whether \
it is fanned (`status`: active, disabled, or skipped with a reason) and whether it was added at run \
time (`managed`, removable with remove_store). Also the known store `types` and the mcp `presets` \
for add_store. Read-only.",
        annotations(
            title = "List memory stores",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_stores(&self, extensions: Extensions) -> Result<Json<Stores>, String> {
        let caller = self.authorized(&extensions, "list_stores", Scope::Read)?;
        Ok(Json(self.federation.stores(&caller)))
    }

    /// Add a store to the fan, live.
    #[tool(
        name = "add_store",
        description = "Add a memory store to the fan, live: it is searched from the very next search, \
and kept across restarts (in the runtime overlay, never in the config file). `type` is one of the types \
list_stores shows (seren_memory for a SerenMemory, seren_loci for a SerenLoci, seren_callosum for \
another callosum, mcp for one tool of any MCP server reached at its http(s):// url: give a `preset` \
(server-memory, seren-loci, seren-memory, callosum, basic-memory, mcp-server-qdrant, chroma-mcp, \
graphiti-facts, graphiti-nodes, mem0; a scope such as collection_name goes in `arguments`) or a `tool` \
and the JSON pointers that map its result). A program (`command`) is never taken here, nor a token by name (`token_env`), nor a file \
to read (`tls_ca_file`): give `token` itself. Only changes which stores are read, never what is in them. Fails with a clear message on a \
duplicate name, an unknown type, a key not in this schema, a bad pointer, or a url that is not http(s).",
        input_schema = input_schema::<NewStore>(),
        output_schema = output_schema::<Added>(),
        annotations(
            title = "Add a memory store",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn add_store(
        &self,
        args: JsonObject,
        extensions: Extensions,
    ) -> Result<Json<Added>, String> {
        let caller = self.authorized(&extensions, "add_store", Scope::Write)?;
        let new: NewStore = arguments(args)?;
        self.federation
            .add_store(&caller, new)
            .await
            .map(Json)
            .map_err(refused)
    }

    /// Remove a store that was added at run time.
    #[tool(
        name = "remove_store",
        description = "Stop fanning a store that was added at run time (managed: true in list_stores). \
It is not searched from the next search on and is dropped from the runtime overlay. Stores from the \
config file cannot be removed here. The store's data is untouched.",
        input_schema = input_schema::<RemoveRequest>(),
        output_schema = output_schema::<Removed>(),
        annotations(
            title = "Remove a memory store",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn remove_store(
        &self,
        args: JsonObject,
        extensions: Extensions,
    ) -> Result<Json<Removed>, String> {
        let caller = self.authorized(&extensions, "remove_store", Scope::Write)?;
        let args: RemoveRequest = arguments(args)?;
        self.federation
            .remove_store(&caller, args.name.trim())
            .await
            .map(Json)
            .map_err(refused)
    }
}

/// The tools, built once. Building them generates and rewrites every schema, and rmcp's default
/// would rebuild them for each `tools/list` and each tool call.
static TOOLS: LazyLock<ToolRouter<CallosumMcp>> = LazyLock::new(CallosumMcp::tool_router);

impl CallosumMcp {
    /// The tools as a host lists them: the `search` tool's description names the stores it can
    /// be aimed at, as the live roster holds them.
    fn tools(&self, caller: &Caller) -> Vec<Tool> {
        let mut tools = TOOLS.list_all();
        for tool in tools.iter_mut().filter(|tool| tool.name == "search") {
            let stores = aim_line(&self.federation.stores(caller));
            tool.description = tool
                .description
                .take()
                .map(|words| Cow::Owned(format!("{words} {stores}")));
        }
        tools
    }
}

/// The stores a search can be aimed at, as one paragraph of the `search` tool's description:
/// each active store's name, type and `description`, the first [`AIMED_SHOWN`] of them.
fn aim_line(stores: &Stores) -> String {
    use std::fmt::Write;
    const AIMED_SHOWN: usize = 64;
    let active: Vec<&crate::api::StoreRow> = (stores.stores.iter())
        .filter(|row| row.status == crate::api::StoreStatus::Active)
        .collect();
    if active.is_empty() {
        return "No store is searched now (list_stores says why).".to_owned();
    }
    let mut line = String::from(
        "Aim a search with `stores` (only these) or `exclude_stores` (not these), by name; the \
         stores now:",
    );
    for (i, row) in active.iter().take(AIMED_SHOWN).enumerate() {
        let sep = if i == 0 { " " } else { "; " };
        // Writing to a String cannot fail.
        let _ = write!(line, "{sep}{} ({})", row.name, row.kind);
        if let Some(description) = &row.description {
            let _ = write!(line, ": {description}");
        }
    }
    if active.len() > AIMED_SHOWN {
        let _ = write!(
            line,
            "; and {} more (list_stores names them)",
            active.len() - AIMED_SHOWN
        );
    }
    line.push('.');
    line
}

#[tool_handler(router = TOOLS)]
impl ServerHandler for CallosumMcp {
    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let hints = context
            .protocol_version()
            .is_some_and(|version| version >= rmcp::model::ProtocolVersion::V_2026_07_28);
        // The search tool's words name the stores: a view's caller reads only its own. Listing
        // tools needs no scope, so the scope asked here is one every caller holds.
        let caller = match context.extensions.get::<axum::http::request::Parts>() {
            None => Caller::local(),
            Some(parts) => (parts.extensions.get::<Caller>().cloned())
                .ok_or_else(|| rmcp::ErrorData::invalid_request("no caller", None))?,
        };
        Ok(rmcp::model::ListToolsResult {
            result_type: Some(rmcp::model::ResultType::COMPLETE),
            tools: self.tools(&caller),
            meta: None,
            next_cursor: None,
            // The search tool's description follows the roster: never fresh for long.
            ttl_ms: hints.then_some(0),
            cache_scope: hints.then_some(rmcp::model::CacheScope::Private),
        })
    }

    // rmcp reads a tool's schema here on every HTTP call: the static tool, not the roster's words.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        TOOLS.get(name).cloned()
    }

    fn get_info(&self) -> ServerConfig {
        // Named explicitly: left alone, rmcp reports itself ("rmcp") as the server.
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "seren-corpus-callosum",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }
}

/// Why MCP over stdio stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[error("MCP over stdio: {0}")]
pub struct StdioError(String);

/// Serves MCP on stdin/stdout until the host closes stdin. A host that closes stdin before any
/// request (a probe, or a client that only asked `server/discover`) is a normal end, not an error.
pub async fn serve_stdio(federation: Arc<Federation>) -> Result<(), StdioError> {
    serve_lines(federation, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves MCP over newline-delimited JSON-RPC on `input` and `output`, through the framing of
/// `jsonrpc.rs` (which answers the lines rmcp would leave unanswered).
pub async fn serve_lines<R, W>(
    federation: Arc<Federation>,
    input: R,
    output: W,
) -> Result<(), StdioError>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    // Two in-memory pipes; dropping one end is end of file at the other (split halves would not
    // pass that on).
    let (server_in, to_server) = tokio::io::duplex(64 * 1024);
    let (from_server, server_out) = tokio::io::duplex(64 * 1024);
    let (answers, answered) = tokio::sync::mpsc::channel(64);
    // Both tasks end with the session: the reader at end of input (which ends the server's input),
    // the writer when the server's output ends and the reader dropped its sender.
    let reader = tokio::spawn(crate::jsonrpc::read_host(input, to_server, answers));
    let writer = tokio::spawn(crate::jsonrpc::write_host(from_server, output, answered));
    let served = serve_session(federation, server_in, server_out).await;
    reader.abort();
    let _ = writer.await;
    served
}

async fn serve_session(
    federation: Arc<Federation>,
    input: tokio::io::DuplexStream,
    output: tokio::io::DuplexStream,
) -> Result<(), StdioError> {
    let running = match CallosumMcp::new(federation).serve((input, output)).await {
        Ok(running) => running,
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(during)) => {
            tracing::info!(%during, "stdin closed before an MCP session began");
            return Ok(());
        }
        Err(e) => return Err(StdioError(e.to_string())),
    };
    let reason = running
        .waiting()
        .await
        .map_err(|e| StdioError(e.to_string()))?;
    tracing::info!(?reason, "MCP stdio session ended");
    Ok(())
}

/// MCP over streamable HTTP, as a service to mount at `/mcp` (it answers on any path it is given).
///
/// Stateless for every client, of either protocol era: a client on a revision before 2026-07-28
/// (session mode) gets no `Mcp-Session-Id`, so each of its requests is served whole by whichever
/// replica it reaches, and a balancer in front of N of them needs nothing sticky. Nothing this
/// server sends needs a server-to-client stream (no sampling, no elicitation, no notifications
/// of its own), so no session is kept: `GET` and `DELETE` are 405, and no per-session memory
/// exists to be piled up. Cancelling `shutdown` ends every request under way, so the server's
/// graceful shutdown never waits on them.
pub fn http_service(
    federation: Arc<Federation>,
    shutdown: CancellationToken,
) -> StreamableHttpService<CallosumMcp, NeverSessionManager> {
    // The Host and Origin checks are the guard's (`guard.rs`), which wraps `/mcp` like every
    // other route: one list, one check, so rmcp's own copies are turned off.
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown)
        .with_max_request_body_bytes(crate::limits::MAX_BODY_BYTES)
        .with_legacy_session_mode(false)
        // A plain JSON answer for a call that sends nothing before its result: no event stream
        // to frame, and clients read it as they read any JSON body.
        .with_json_response(true)
        .disable_allowed_hosts()
        .disable_allowed_origins();
    StreamableHttpService::new(
        move || Ok(CallosumMcp::new(federation.clone())),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_lists_with_an_object_schema_and_honest_annotations() {
        let tools = CallosumMcp::tool_router().list_all();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names.len(), 4);
        for name in ["search", "list_stores", "add_store", "remove_store"] {
            assert!(names.contains(&name), "{name}: {names:?}");
        }
        for tool in &tools {
            assert_eq!(
                tool.input_schema.get("type").and_then(|t| t.as_str()),
                Some("object")
            );
            assert!(
                tool.output_schema.is_some(),
                "{} has an output schema",
                tool.name
            );
            assert!(tool.description.as_ref().is_some_and(|d| d.len() > 80));
            let annotations = tool.annotations.as_ref().expect("annotations");
            let read_only = annotations.read_only_hint == Some(true);
            match tool.name.as_ref() {
                "search" | "list_stores" => assert!(read_only),
                "remove_store" => assert_eq!(annotations.destructive_hint, Some(true)),
                _ => assert!(!read_only),
            }
        }
        // Portable schemas: no type arrays, no Rust formats, no null default on a non-null field.
        for tool in &tools {
            let text = format!(
                "{} {}",
                serde_json::Value::Object(tool.input_schema.as_ref().clone()),
                serde_json::Value::Object(tool.output_schema.as_ref().unwrap().as_ref().clone())
            );
            assert!(!text.contains("\"type\":["), "{}: {text}", tool.name);
            assert!(!text.contains("uint"), "{}: {text}", tool.name);
            assert!(!text.contains("\"default\":null"), "{}: {text}", tool.name);
        }
        let search = tools.iter().find(|t| t.name == "search").unwrap();
        let schema = serde_json::Value::Object(search.input_schema.as_ref().clone());
        assert_eq!(schema["required"], serde_json::json!(["query"]));
        assert_eq!(schema["properties"]["n_results"]["type"], "integer");
    }
}
