//! How the MCP `search` tool writes its text block (`server.mcp_format`, and a call's own
//! `format`): the setting's values and how the file's text is read. The config reads it, so it lives
//! here; `api` re-exports it for the tool's arguments.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the MCP `search` tool writes its text block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TextFormat {
    /// The whole answer as JSON, as the Python service writes it.
    #[default]
    Json,
    /// One numbered line per hit: store, rank, content, what an edge belongs to.
    Compact,
}

impl TextFormat {
    /// Reads a config value, naming the allowed ones when it is none of them.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "json" => Ok(Self::Json),
            "compact" => Ok(Self::Compact),
            other => Err(format!(
                "must be \"json\" or \"compact\", got {:?}",
                crate::text::cut(other, 40)
            )),
        }
    }
}

/// `server.mcp_format` as the file gives it: absent or blank is the default; a value that is
/// neither is a problem (and the default stands in).
pub(super) fn read(text: Option<&str>, problems: &mut Vec<String>) -> TextFormat {
    match text.map(str::trim) {
        None | Some("") => TextFormat::default(),
        Some(text) => TextFormat::parse(text).unwrap_or_else(|why| {
            problems.push(format!("server.mcp_format {why}"));
            TextFormat::default()
        }),
    }
}
