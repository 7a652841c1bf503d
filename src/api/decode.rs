//! Decoding JSON off the wire (request bodies, MCP tool arguments, store answers), and its errors
//! worded by the path of the first wrong field, never with a value the sender sent.

use serde::Deserialize;
use serde_json::Value;

/// Decodes `body` as `T`, naming the path of the first wrong field (`hits[2].score: ...`). Used on
/// request bodies and on store answers alike.
pub fn decode_json<'de, T: Deserialize<'de>>(body: &'de [u8]) -> Result<T, String> {
    // The fast path: plain serde_json. Tracking the path costs about a third of a decode (profiled
    // under load), and only an error needs it, so a failed decode is run again to word the error.
    if let Ok(value) = serde_json::from_slice(body) {
        return Ok(value);
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value: T = serde_path_to_error::deserialize(&mut deserializer).map_err(describe)?;
    deserializer
        .end()
        .map_err(|_| "trailing characters after the JSON value".to_owned())?;
    Ok(value)
}

/// Decodes an already parsed JSON value as `T` (MCP tool arguments), with the same messages.
pub fn decode_value<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(describe)
}

fn describe(error: serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = error.path().to_string();
    // serde_json appends "at line L column C"; the path says more, and short reasons read better
    // in a `failed` entry or a tool error.
    let message = error.into_inner().to_string();
    let message = message
        .split(" at line ")
        .next()
        .unwrap_or_default()
        .to_owned();
    if path == "." {
        message
    } else if path.len() > 80 {
        // A deeply nested value makes a path of thousands of `[0]`; the message matters more.
        format!("{}: {message}", crate::text::cut(&path, 60))
    } else {
        format!("{path}: {message}")
    }
}

/// The member names the callosum reads, in store answers and in store entries: a path segment that
/// is one of them is shown, any other key (a metadata key, which the store chose) is shown as `*`.
const KNOWN_FIELDS: &[&str] = &[
    "name",
    "type",
    "url",
    "weight",
    "floor",
    "enabled",
    "token",
    "token_env",
    "token_keyring",
    "bearer_token",
    "bearer_token_env",
    "bearer_token_keyring",
    "timeout_s",
    "tls_ca_file",
    "options",
    "identity_key",
    "hits",
    "id",
    "content",
    "score",
    "raw_distance",
    "metadata",
    "tier",
    "topic",
    "surroundings",
    "matched_via",
    "project",
    "key",
    "value",
    "why",
    "match_kind",
    "source",
    "store",
    "store_rank",
    "base_relevance",
    "native_score",
    "also_from",
];

/// A decode error worded without any value the store sent: `hits[0].score: invalid type: string,
/// expected f64`, never `... string "the query", ...`.
pub fn value_free(path: &serde_path_to_error::Path, message: &str) -> String {
    use serde_path_to_error::Segment;
    let mut shown = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => shown.push_str(&format!("[{index}]")),
            Segment::Map { key } => {
                if !shown.is_empty() {
                    shown.push('.');
                }
                shown.push_str(if KNOWN_FIELDS.contains(&key.as_str()) {
                    key
                } else {
                    "*"
                });
            }
            Segment::Enum { .. } | Segment::Unknown => shown.push_str(".?"),
        }
        if shown.len() > 80 {
            shown.push_str("...");
            break;
        }
    }
    let message =
        crate::text::without_values(message.split(" at line ").next().unwrap_or_default());
    if shown.is_empty() {
        message
    } else {
        format!("{shown}: {message}")
    }
}
