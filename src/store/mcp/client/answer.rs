//! A tool's answer: its result read into hits by a mapping (an error result, or a refused call, is
//! the server's words cut short), its text blocks, and about what it holds on the heap.

use crate::fusion::Hit;
use crate::store::mcp::map::Mapping;
use crate::store::remote::Failure;
use crate::text::cut;
use rmcp::model::CallToolResult;

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
pub(super) fn refused(error: &rmcp::model::ErrorData) -> Failure {
    Failure::Tool(format!(
        "the server refused the call: {} (code {})",
        cut(&error.message, 200),
        error.code.0
    ))
}

/// About what a parsed tool result holds on the heap: its texts and its structured content.
pub(super) fn result_bytes(result: &CallToolResult) -> usize {
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
