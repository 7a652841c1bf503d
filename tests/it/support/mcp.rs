//! An MCP client for tests: rmcp's own, over streamable HTTP.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;

pub type Client = RunningService<RoleClient, ()>;

pub fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("not an object: {other}"),
    }
}

pub async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(object(arguments)))
        .await
        .unwrap_or_else(|e| panic!("{tool} failed at the protocol level: {e}"))
}

/// The structured content, after checking the text block says the same.
pub fn structured(result: &CallToolResult) -> Value {
    assert_ne!(
        result.is_error,
        Some(true),
        "unexpected tool error: {result:?}"
    );
    let structured = result
        .structured_content
        .clone()
        .expect("structured content");
    let text = result.content[0]
        .as_text()
        .expect("a text block")
        .text
        .clone();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), structured);
    structured
}

pub fn error_text(result: &CallToolResult) -> String {
    assert_eq!(
        result.is_error,
        Some(true),
        "expected a tool error: {result:?}"
    );
    result.content[0]
        .as_text()
        .expect("a text block")
        .text
        .clone()
}

pub async fn http_client(url: &str, token: Option<&str>) -> Result<Client, String> {
    // rmcp's default client is a reqwest built without a rustls provider of its own (as the
    // service's is): ring, as the service installs it, when no callosum in this process has yet.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{url}/mcp"));
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .map_err(|e| e.to_string())
}

/// rmcp's client on the real binary's `stdio`, with the config at `config`, a clean environment
/// and `home` as `HOME`; the server's stderr is dropped.
pub async fn stdio_client(config: &str, home: &std::path::Path) -> Client {
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_seren-corpus-callosum"))
        .configure(|c| {
            c.arg("stdio")
                .arg("-c")
                .arg(config)
                .env_clear()
                .env("HOME", home);
        });
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    ().serve(transport).await.unwrap()
}
