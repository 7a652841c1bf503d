//! The file as written: every field optional so a partial file works, read with serde_yaml so a
//! wrong type names its key and line, and every key nobody reads named in a warning.

use super::knob::{Reader, read_entry};
use super::scalar::Flag;
use super::store::RawStoreEntry;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};
use std::path::Path;

/// Keys the Python 5.3.0 service reads that this service does not implement. A file that holds them
/// still starts; each is named once in a warning.
const PYTHON_ONLY_KEYS: &[&str] = &["updates", "federation.fusion_mode"];

/// The file as written. Every field is optional so a partial file works; defaults come later.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct FileConfig {
    pub(super) server: FileServer,
    pub(super) tls: FileTls,
    pub(super) federation: FileFederation,
    pub(super) telemetry: super::telemetry::FileTelemetry,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct FileServer {
    pub(super) host: Option<String>,
    pub(super) port: Option<u16>,
    pub(super) bearer_token: Option<String>,
    pub(super) bearer_token_env: Option<String>,
    pub(super) bearer_token_keyring: Option<String>,
    /// Which keychain backend `*_keyring` pointers name (`auto` when absent).
    pub(super) keyring: Option<String>,
    pub(super) allow_open_lan: Option<Flag>,
    pub(super) public_metrics: Option<Flag>,
    pub(super) allowed_hosts: Option<Vec<String>>,
    /// The name before the allow-list guarded every route; read as `allowed_hosts`.
    pub(super) mcp_allowed_hosts: Option<Vec<String>>,
    pub(super) allowed_origins: Option<Vec<String>>,
    pub(super) max_connections: Option<usize>,
    pub(super) max_in_flight: Option<usize>,
    pub(super) max_calls_per_store: Option<usize>,
    pub(super) header_timeout_s: Option<f64>,
    pub(super) mcp_format: Option<String>,
    pub(super) access_log: Option<Flag>,
    pub(super) watch: Option<Flag>,
    pub(super) overlay_url: Option<String>,
    pub(super) log_queries: Option<Flag>,
    pub(super) oauth: Option<super::oauth::FileOAuth>,
    pub(super) views: Option<Vec<super::views::FileView>>,
    pub(super) views_by_scope: Option<std::collections::BTreeMap<String, String>>,
    pub(super) audit_log: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct FileTls {
    pub(super) trust_system_store: Option<Flag>,
}

/// The `federation:` block as written: the knobs by name, as the knob table reads them (an
/// unknown key is left for the ignored-key warning), and the settings that are not knobs.
#[derive(Debug, Default)]
pub(super) struct FileFederation {
    pub(super) knobs: Map<String, Value>,
    pub(super) breaker_failures: Option<u32>,
    pub(super) breaker_cooldown_s: Option<f64>,
    pub(super) breaker_max_cooldown_s: Option<f64>,
    pub(super) max_stores: Option<usize>,
    pub(super) stores: Option<Vec<RawStoreEntry>>,
}

impl<'de> Deserialize<'de> for FileFederation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FederationVisitor)
    }
}

struct FederationVisitor;

impl<'de> Visitor<'de> for FederationVisitor {
    type Value = FileFederation;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        // The words serde's derive used, so a `federation:` of the wrong type reads as before.
        f.write_str("struct FileFederation")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FileFederation, A::Error> {
        let mut f = FileFederation::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "breaker_failures" => f.breaker_failures = map.next_value()?,
                "breaker_cooldown_s" => f.breaker_cooldown_s = map.next_value()?,
                "breaker_max_cooldown_s" => f.breaker_max_cooldown_s = map.next_value()?,
                "max_stores" => f.max_stores = map.next_value()?,
                "stores" => f.stores = map.next_value()?,
                name => {
                    if !read_entry(&mut map, name, Reader::File, &mut f.knobs)? {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
        }
        Ok(f)
    }
}

/// Reads `text` as the file at `path`: the file's settings, and a warning for each key nobody
/// reads. An empty text (or one that is only a comment) is an empty file.
pub(super) fn read(
    path: &Path,
    text: &str,
    warnings: &mut Vec<String>,
) -> Result<FileConfig, String> {
    if text.trim().is_empty() {
        return Ok(FileConfig::default());
    }
    let mut ignored = Vec::new();
    let deserializer = serde_yaml::Deserializer::from_str(text);
    let file: Option<FileConfig> = serde_ignored::deserialize(deserializer, |key| {
        // The document root is an `Option`, which serde_ignored renders as `?.`.
        let key = key.to_string();
        ignored.push(key.trim_start_matches("?.").to_owned());
    })
    .map_err(|e| value_free(&e))?;
    for key in ignored {
        if key == "server.max_mcp_sessions" {
            warnings.push(format!(
                "{}: 'server.max_mcp_sessions' is no longer read: MCP over HTTP keeps no sessions; ignored",
                path.display()
            ));
        } else if PYTHON_ONLY_KEYS.contains(&key.as_str()) {
            warnings.push(format!(
                "{}: '{key}' is a Python-service setting this service does not implement; ignored",
                path.display()
            ));
        } else {
            warnings.push(format!("{}: unknown key '{key}' ignored", path.display()));
        }
    }
    Ok(file.unwrap_or_default())
}

/// serde_yaml's message for `error`, worded without the value it met: `invalid type: string
/// "...", expected f64` quotes the value, and a value under the wrong key may be a token. The
/// rule is the one decode errors follow ([`crate::text::without_values`]); the key's path, the
/// line and the column stay, so the message still says where to look.
fn value_free(error: &serde_yaml::Error) -> String {
    let text = error.to_string();
    // serde_yaml writes `<path>: <message> at line L column C`; the mark is split off as written.
    let mark = error
        .location()
        .map(|at| format!(" at line {} column {}", at.line(), at.column()));
    let (head, mark) = match mark.and_then(|mark| Some((text.strip_suffix(&mark)?, mark))) {
        Some((head, mark)) => (head, mark),
        None => (text.as_str(), String::new()),
    };
    // The first place serde's own message starts (at the start, or after the path's `: `).
    let start = [
        "invalid type: ",
        "invalid value: ",
        "unknown variant",
        "unknown field",
    ]
    .iter()
    .filter_map(|marker| {
        head.match_indices(marker)
            .map(|(at, _)| at)
            .find(|at| *at == 0 || head[..*at].ends_with(": "))
    })
    .min();
    match start {
        Some(at) => format!(
            "{}{}{mark}",
            &head[..at],
            crate::text::without_values(&head[at..])
        ),
        // Syntax errors, a missing field, a duplicate key: no value is quoted.
        None => format!("{head}{mark}"),
    }
}
