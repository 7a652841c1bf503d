//! The configuration: a YAML file plus `SEREN_SCC_*` environment overrides, parsed once into a
//! validated [`Config`].
//!
//! Parse, don't validate: everything past this module holds checked values (finite weights, a floor
//! within 0..=1, a positive timeout). A file that does not parse, or has a wrong type at a known key,
//! is an error naming the file, the key and the line; a value out of range is an error naming the
//! store and the field. An unknown key is a warning, never silence: typos must show. Store entries
//! that lack a name, type or url are kept as [`Invalid`] so the roster can report them as skipped.
//!
//! This module does not read the runtime overlay (see `overlay`) and does not bind stores (see
//! `roster`).

use crate::keychain::{Keychain, Pointer};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The file name looked for in the working directory and in the platform config dir.
pub const FILE_NAME: &str = "seren-corpus-callosum.yaml";
/// How many stores the roster holds unless `federation.max_stores` says otherwise: far more than
/// any fan a model gains from, few enough that one search cannot become a flood of calls.
pub const DEFAULT_MAX_STORES: usize = 64;
/// The highest `federation.max_stores` accepted.
pub const MAX_MAX_STORES: usize = 1024;
/// The overlay's file name, beside the config file.
pub const OVERLAY_FILE_NAME: &str = "runtime-stores.json";

/// Keys the Python 5.3.0 service reads that this service does not implement. A file that holds them
/// still starts; each is named once in a warning.
const PYTHON_ONLY_KEYS: &[&str] = &[
    "updates",
    "federation.fusion_mode",
    "federation.authority_margin",
    "federation.min_per_store",
    "federation.edges_enabled",
    "federation.edge_budget",
    "federation.satellite_edges_enabled",
    "federation.satellite_budget",
    "federation.hops",
    "federation.hop_terms",
    "federation.hop_budget",
    "federation.budget_tokens",
];

/// Why the configuration could not be loaded. Every message names where the problem is.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not YAML of the expected shape (serde_yaml names the key, line and column).
    #[error("config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// A value parsed but is out of range.
    #[error("config file {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    /// An environment override does not hold a usable value.
    #[error("environment variable {name}: {message}")]
    Env { name: &'static str, message: String },
}

/// A secret, such as a bearer token. Its `Debug` never shows the value, so it cannot leak through a
/// log line that formats a whole struct.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a non-empty secret; an empty or blank one means "no secret".
    pub fn new(value: impl Into<String>) -> Option<Self> {
        let value = value.into();
        if value.trim().is_empty() {
            None
        } else {
            Some(Self(value))
        }
    }

    /// The secret itself, for the one place that must send or compare it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A bearer token, checked: surrounding whitespace (a newline from a file or a keychain
    /// entry) is dropped, blank means none, and what is left must be printable ASCII with no
    /// space, since it travels in an `Authorization` header. The message never shows the token.
    pub fn bearer(value: impl Into<String>) -> Result<Option<Self>, String> {
        let value = value.into();
        let token = value.trim();
        if token.is_empty() {
            return Ok(None);
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(
                "has characters a bearer header cannot carry (spaces, control characters or non-ASCII)"
                    .into(),
            );
        }
        Ok(Some(Self(token.to_owned())))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Everything the service needs to start, checked.
#[derive(Debug, Clone)]
pub struct Config {
    /// The config file path (it may not exist: a missing file is an empty federation).
    pub path: PathBuf,
    /// Whether that file existed when it was loaded.
    pub exists: bool,
    /// Where the runtime overlay lives.
    pub overlay_path: PathBuf,
    pub server: Server,
    pub tls: Tls,
    pub federation: Federation,
    /// The keychain `*_keyring` pointers are read from (opened on first use).
    pub keychain: Arc<Keychain>,
    /// Warnings found while loading (unknown keys, unused options), for the caller to log once.
    pub warnings: Vec<String>,
}

/// The `server:` block.
#[derive(Debug, Clone)]
pub struct Server {
    pub host: String,
    pub port: u16,
    /// The inbound bearer token; `None` means no auth (unless `token_error` is set).
    pub token: Option<Secret>,
    /// Why the inbound token the configuration asks for could not be had (a keychain entry that
    /// cannot be read, an unset variable). Nothing may serve HTTP then: `serve` exits 78, and a
    /// router built anyway refuses every gated request.
    pub token_error: Option<String>,
    /// Where the inbound token comes from (never the token).
    pub token_source: TokenSource,
    pub allow_open_lan: bool,
    /// Extra `Host` names every route but `GET /health` accepts besides loopback names, the bound
    /// address and IP literals (a proxy's or a LAN name); `*` turns the check off.
    pub allowed_hosts: Vec<String>,
    /// Web origins (`scheme://host[:port]`, lower case) allowed to call gated routes from a
    /// browser, with CORS; empty means none but the listener's own.
    pub allowed_origins: Vec<String>,
    /// Open connections held at once; more are closed as they arrive.
    pub max_connections: usize,
    /// Requests handled at once; more are answered 503 at once.
    pub max_in_flight: usize,
    /// MCP sessions over HTTP held at once; one more closes the one idle longest.
    pub max_mcp_sessions: usize,
    /// How long a connection may take to send a request's headers (and may sit idle between
    /// requests) before it is closed.
    pub header_timeout: Duration,
}

/// Where the inbound token comes from, as `check` and `GET /knobs` may say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    None,
    Inline,
    Keychain(Pointer),
    Env(String),
}

/// The `tls:` block.
#[derive(Debug, Clone, Default)]
pub struct Tls {
    /// Outbound TLS to stores also trusts the operating system's certificate store.
    pub trust_system_store: bool,
}

/// The `federation:` block.
#[derive(Debug, Clone)]
pub struct Federation {
    /// The RRF constant, a whole number >= 1.
    pub k: u32,
    /// The default number of fused hits, 1..=200.
    pub n_results: usize,
    /// Each store is asked for `n * fetch_multiplier` hits.
    pub fetch_multiplier: usize,
    /// The default bound on one store call.
    pub per_store_timeout: Duration,
    /// The per-store circuit breaker.
    pub breaker: crate::health::BreakerSettings,
    /// The most stores the roster holds (config and overlay together); more are skipped, and a
    /// run-time add is refused.
    pub max_stores: usize,
    /// The config file's stores, in file order.
    pub stores: Vec<Result<StoreEntry, Invalid>>,
}

/// A store entry that cannot be bound (a missing name, type or url): reported as skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// The entry's name if it has one, else where it sits (`federation.stores[3]`).
    pub name: String,
    pub reason: String,
}

/// One store entry, from the config file or the overlay, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreEntry {
    pub name: String,
    pub kind: String,
    /// The base url, checked and parsed.
    pub url: StoreUrl,
    pub weight: f64,
    pub floor: f64,
    pub enabled: bool,
    /// An inline outbound bearer token.
    pub token: Option<Secret>,
    /// The keychain entry holding the outbound token.
    pub token_keyring: Option<Pointer>,
    /// The name of an environment variable holding the outbound token.
    pub token_env: Option<String>,
    /// Overrides `federation.per_store_timeout_s` for this store.
    pub timeout: Option<Duration>,
    /// Adapter extras (`search_path`, `project`, `include_*`) and any unknown key of the entry.
    pub options: Map<String, Value>,
}

impl StoreEntry {
    /// Whether any outbound token pointer is set (what `GET /stores` shows as `auth`).
    pub fn has_auth(&self) -> bool {
        self.token.is_some() || self.token_keyring.is_some() || self.token_env.is_some()
    }

    /// The entry as the overlay stores it. An inline token is written as given (the overlay file is
    /// written with mode 0600); a token kept in the keychain is written as its pointer only.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("name".into(), self.name.clone().into());
        object.insert("type".into(), self.kind.clone().into());
        object.insert("url".into(), self.url.as_str().into());
        object.insert("weight".into(), self.weight.into());
        object.insert("floor".into(), self.floor.into());
        if !self.enabled {
            object.insert("enabled".into(), false.into());
        }
        if let Some(token) = &self.token {
            object.insert("token".into(), token.expose().into());
        }
        if let Some(pointer) = &self.token_keyring {
            object.insert("token_keyring".into(), pointer.to_string().into());
        }
        if let Some(name) = &self.token_env {
            object.insert("token_env".into(), name.clone().into());
        }
        if let Some(timeout) = self.timeout {
            object.insert("timeout_s".into(), timeout.as_secs_f64().into());
        }
        if !self.options.is_empty() {
            object.insert("options".into(), Value::Object(self.options.clone()));
        }
        Value::Object(object)
    }
}

/// A store entry as written, before its required fields and ranges are checked. Its `Deserialize`
/// is hand-written so that serde_yaml keeps line numbers for type errors, and so that unknown keys
/// land in `options` (as the Python service does) instead of being lost.
#[derive(Debug, Default, Clone)]
pub struct RawStoreEntry {
    pub name: Option<String>,
    pub kind: Option<String>,
    pub url: Option<String>,
    pub weight: Option<f64>,
    pub floor: Option<f64>,
    pub enabled: Option<bool>,
    pub token: Option<String>,
    pub token_keyring: Option<String>,
    pub token_env: Option<String>,
    pub timeout_s: Option<f64>,
    pub options: Map<String, Value>,
    /// Keys that were read and deliberately dropped (aliases that lost to the short key, `managed`).
    pub dropped: Vec<String>,
}

impl<'de> Deserialize<'de> for RawStoreEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RawStoreEntryVisitor)
    }
}

struct RawStoreEntryVisitor;

impl<'de> Visitor<'de> for RawStoreEntryVisitor {
    type Value = RawStoreEntry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a store entry (a mapping with name, type and url)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawStoreEntry, A::Error> {
        let mut entry = RawStoreEntry::default();
        let (mut alias_token, mut alias_token_keyring, mut alias_token_env) = (None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "name" => entry.name = map.next_value::<Option<Scalar>>()?.map(|s| s.0),
                "type" => entry.kind = map.next_value()?,
                "url" => entry.url = map.next_value()?,
                "weight" => entry.weight = map.next_value()?,
                "floor" => entry.floor = map.next_value()?,
                "enabled" => entry.enabled = map.next_value::<Option<Flag>>()?.map(|f| f.0),
                "token" => entry.token = map.next_value()?,
                "token_env" => entry.token_env = map.next_value()?,
                "token_keyring" => entry.token_keyring = map.next_value()?,
                "bearer_token" => alias_token = map.next_value::<Option<String>>()?,
                "bearer_token_keyring" => {
                    alias_token_keyring = map.next_value::<Option<String>>()?;
                }
                "bearer_token_env" => alias_token_env = map.next_value::<Option<String>>()?,
                "timeout_s" => entry.timeout_s = map.next_value()?,
                "options" => {
                    let options: Option<Map<String, Value>> = map.next_value()?;
                    // Explicit options win over stray top-level keys merged in earlier.
                    for (k, v) in options.unwrap_or_default() {
                        entry.options.insert(k, v);
                    }
                }
                "managed" => {
                    // Managed-ness comes from where an entry lives, never from what it says.
                    map.next_value::<de::IgnoredAny>()?;
                    entry.dropped.push(key);
                }
                _ => {
                    let value: Value = map.next_value()?;
                    entry.options.entry(key).or_insert(value);
                }
            }
        }
        // The short key wins over its alias; a losing alias is dropped, not put into options.
        if non_blank(&entry.token).is_none() {
            entry.token = alias_token;
        } else if alias_token.is_some() {
            entry.dropped.push("bearer_token".into());
        }
        if non_blank(&entry.token_env).is_none() {
            entry.token_env = alias_token_env;
        } else if alias_token_env.is_some() {
            entry.dropped.push("bearer_token_env".into());
        }
        if non_blank(&entry.token_keyring).is_none() {
            entry.token_keyring = alias_token_keyring;
        } else if alias_token_keyring.is_some() {
            entry.dropped.push("bearer_token_keyring".into());
        }
        Ok(entry)
    }
}

impl RawStoreEntry {
    /// Checks the entry. `Ok(Err(_))` is an entry to skip (a missing required field); `Err(_)` is a
    /// value out of range, which the caller turns into a hard error (config) or a skip (overlay).
    pub fn check(self, place: &str) -> Result<Result<StoreEntry, Invalid>, String> {
        let name = non_blank(&self.name).map(str::to_owned);
        let skip = |name: &str, reason: String| {
            Ok(Err(Invalid {
                name: name.to_owned(),
                reason: format!("invalid entry: {reason}"),
            }))
        };
        let Some(name) = name else {
            return skip(place, "missing name".into());
        };
        // A name that breaks the rule is never echoed as the row's name: it may hold a newline
        // that forges a log line, or bidi controls that make it read as something else.
        if let Err(why) = check_name(&name) {
            return skip(place, why);
        }
        let Some(kind) = non_blank(&self.kind).map(str::to_owned) else {
            return skip(&name, "missing type".into());
        };
        let Some(url) = non_blank(&self.url) else {
            return skip(&name, "missing url".into());
        };
        let field = |f: &str, why: String| format!("store '{name}': {f} {why}");
        let url = StoreUrl::parse(url).map_err(|why| field("url", why))?;
        let weight = self.weight.unwrap_or(1.0);
        if !(weight.is_finite() && weight > 0.0) {
            return Err(field(
                "weight",
                format!("must be a finite number > 0, got {weight}"),
            ));
        }
        let floor = self.floor.unwrap_or(0.0);
        if !(floor.is_finite() && (0.0..=1.0).contains(&floor)) {
            return Err(field("floor", format!("must be within 0..=1, got {floor}")));
        }
        let timeout = match self.timeout_s {
            None => None,
            Some(t) => Some(positive_seconds(t).map_err(|why| field("timeout_s", why))?),
        };
        let token_keyring = match non_blank(&self.token_keyring) {
            None => None,
            Some(text) => Some(Pointer::parse(text).map_err(|why| field("token_keyring", why))?),
        };
        let token = match self.token {
            None => None,
            Some(token) => Secret::bearer(token).map_err(|why| field("token", why))?,
        };
        Ok(Ok(StoreEntry {
            name,
            kind,
            url,
            weight,
            floor,
            enabled: self.enabled.unwrap_or(true),
            token,
            token_keyring,
            token_env: non_blank(&self.token_env).map(str::to_owned),
            timeout,
            options: self.options,
        }))
    }
}

/// The one name rule, for config, overlay and run-time stores alike: 1-64 of `A-Z a-z 0-9 . _ -`,
/// not starting with `.` (so never `.` or `..`, which a url path or a file system reads as a
/// step). It keeps names safe in urls, files, logs and the viewer.
pub fn check_name(name: &str) -> Result<(), String> {
    let fits = (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if fits {
        Ok(())
    } else {
        Err(format!(
            "name {} must be 1-64 characters of A-Z a-z 0-9 . _ - and not start with '.'",
            escaped(name)
        ))
    }
}

/// Text fit to quote in a message or a log line: printable ASCII as is, anything else (a newline,
/// a bidi control, a tag) as `\u{..}`, cut at 80 characters.
pub fn escaped(text: &str) -> String {
    let mut out = String::from("'");
    for (i, c) in text.chars().enumerate() {
        if i == 80 {
            out.push_str("...");
            break;
        }
        if c.is_ascii_graphic() || c == ' ' {
            out.push(c);
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    out.push('\'');
    out
}

/// A store's base url, parsed as it will be called. The text is kept as given (trimmed, trailing
/// `/` dropped) for the overlay; messages and `GET /stores` show [`StoreUrl::shown`], with any
/// user-info and query hidden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreUrl {
    text: String,
    parsed: url::Url,
}

impl StoreUrl {
    /// Checks a url: `http` or `https`, a host, no backslash (WHATWG parsers read it as `/`, so
    /// `http://a\@b` would be called at `a` while it reads as `b`), no whitespace or control
    /// character, no `#fragment`. A query is kept and sent; a path is kept and the search path
    /// goes after it.
    pub fn parse(text: &str) -> Result<Self, String> {
        // A trailing `/` of the path is dropped; one inside a query is the query's own.
        let text = text.trim();
        let text = if text.contains('?') {
            text
        } else {
            text.trim_end_matches('/')
        };
        if text.contains('\\') {
            return Err("must not contain a backslash".into());
        }
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("must not contain spaces or control characters".into());
        }
        if !(text.starts_with("http://") || text.starts_with("https://")) {
            return Err("must start with http:// or https://".into());
        }
        let parsed = url::Url::parse(text).map_err(|e| format!("is not a valid url ({e})"))?;
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err("has no host".into());
        }
        if parsed.fragment().is_some() {
            return Err("must not have a #fragment".into());
        }
        Ok(Self {
            text: text.to_owned(),
            parsed,
        })
    }

    /// The url as written (trimmed, without a trailing `/`).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The url fit for a message: `scheme://[***@]host[:port]/path[?***]`.
    pub fn shown(&self) -> String {
        let url = &self.parsed;
        let user_info = if url.username().is_empty() && url.password().is_none() {
            ""
        } else {
            "***@"
        };
        let host = url.host_str().unwrap_or_default();
        let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
        let path = url.path().trim_end_matches('/');
        let query = if url.query().is_some() { "?***" } else { "" };
        format!("{}://{user_info}{host}{port}{path}{query}", url.scheme())
    }

    /// The url to call: this one's path, then `path` (which starts with `/`), then its query.
    pub fn join(&self, path: &str) -> url::Url {
        let mut url = self.parsed.clone();
        let joined = format!("{}{path}", url.path().trim_end_matches('/'));
        url.set_path(&joined);
        url
    }
}

fn non_blank(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

fn positive_seconds(seconds: f64) -> Result<Duration, String> {
    if seconds.is_finite() && seconds > 0.0 && seconds <= 3600.0 {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(format!(
            "must be a number of seconds in (0, 3600], got {seconds}"
        ))
    }
}

/// A YAML scalar read as text: `name: 7` is the store "7", as in the Python service.
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ScalarVisitor;
        impl Visitor<'_> for ScalarVisitor {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
        }
        deserializer.deserialize_any(ScalarVisitor)
    }
}

/// A boolean that also takes the Python service's truthy strings (1/true/yes/on, 0/false/no/off).
/// Read through a visitor (not via an intermediate value) so a bad word is reported at its own
/// key and line.
#[derive(Clone, Copy, Debug)]
struct Flag(bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FlagVisitor;
        impl Visitor<'_> for FlagVisitor {
            type Value = Flag;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true or false (or 1/yes/on, 0/no/off)")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Flag, E> {
                Ok(Flag(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Flag, E> {
                Ok(Flag(v != 0))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Flag, E> {
                Ok(Flag(v != 0))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Flag, E> {
                parse_flag(v)
                    .map(Flag)
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
            }
        }
        deserializer.deserialize_any(FlagVisitor)
    }
}

/// Reads a truthy or falsy word; `None` when it is neither.
pub fn parse_flag(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

/// The file as written. Every field is optional so a partial file works; defaults come later.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FileConfig {
    server: FileServer,
    tls: FileTls,
    federation: FileFederation,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FileServer {
    host: Option<String>,
    port: Option<u16>,
    bearer_token: Option<String>,
    bearer_token_env: Option<String>,
    bearer_token_keyring: Option<String>,
    /// Which keychain backend `*_keyring` pointers name (`auto` when absent).
    keyring: Option<String>,
    allow_open_lan: Option<Flag>,
    allowed_hosts: Option<Vec<String>>,
    /// The name before the allow-list guarded every route; read as `allowed_hosts`.
    mcp_allowed_hosts: Option<Vec<String>>,
    allowed_origins: Option<Vec<String>>,
    max_connections: Option<usize>,
    max_in_flight: Option<usize>,
    max_mcp_sessions: Option<usize>,
    header_timeout_s: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FileTls {
    trust_system_store: Option<Flag>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FileFederation {
    k: Option<u32>,
    n_results: Option<usize>,
    fetch_multiplier: Option<usize>,
    per_store_timeout_s: Option<f64>,
    breaker_failures: Option<u32>,
    breaker_cooldown_s: Option<f64>,
    breaker_max_cooldown_s: Option<f64>,
    max_stores: Option<usize>,
    stores: Option<Vec<RawStoreEntry>>,
}

/// Picks the config file: `--config`, else `$SEREN_SCC_CONFIG`, else `./seren-corpus-callosum.yaml`
/// when it exists, else the platform config dir's file. When neither file exists the platform path
/// is used, so that the overlay of a service started from any working directory (an MCP host spawns
/// us wherever it likes) lands in one stable place.
pub fn resolve_path(explicit: Option<&Path>, env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(path) = explicit {
        return expand_home(path);
    }
    if let Some(path) = env("SEREN_SCC_CONFIG").filter(|p| !p.trim().is_empty()) {
        return expand_home(Path::new(path.trim()));
    }
    let local = PathBuf::from(FILE_NAME);
    if local.exists() {
        return local;
    }
    match directories::ProjectDirs::from("", "", "seren-corpus-callosum") {
        Some(dirs) => dirs.config_dir().join(FILE_NAME),
        None => local,
    }
}

fn expand_home(path: &Path) -> PathBuf {
    if let Ok(rest) = path.strip_prefix("~")
        && let Some(dirs) = directories::BaseDirs::new()
    {
        return dirs.home_dir().join(rest);
    }
    path.to_path_buf()
}

/// Where the overlay lives: `$SEREN_SCC_RUNTIME_STORES`, else beside the config path.
pub fn overlay_path(config_path: &Path, env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(path) = env("SEREN_SCC_RUNTIME_STORES").filter(|p| !p.trim().is_empty()) {
        return expand_home(Path::new(path.trim()));
    }
    match config_path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(OVERLAY_FILE_NAME),
        _ => PathBuf::from(OVERLAY_FILE_NAME),
    }
}

impl Config {
    /// Loads the configuration from the resolved path and the process environment.
    pub fn load(explicit: Option<&Path>) -> Result<Self, ConfigError> {
        let env = |name: &str| std::env::var(name).ok();
        let path = resolve_path(explicit, &env);
        Self::load_from(&path, &env)
    }

    /// Loads from `path` with `env` as the environment; tests pass their own environment.
    pub fn load_from(
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let exists = text.is_some();
        let mut config = Self::parse(path, text.as_deref().unwrap_or(""), env)?;
        config.exists = exists;
        Ok(config)
    }

    /// Parses `text` as the file at `path` (the path is used for messages and the overlay).
    pub fn parse(
        path: &Path,
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        Self::parse_with(path, text, env, None)
    }

    /// As [`Config::parse`], reading keychain pointers from `keychain` (tests bring their own)
    /// instead of the backend `server.keyring` names.
    pub fn parse_with(
        path: &Path,
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
        keychain: Option<Arc<Keychain>>,
    ) -> Result<Self, ConfigError> {
        let parse_error = |message: String| ConfigError::Parse {
            path: path.to_owned(),
            message,
        };
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        };
        let mut warnings = Vec::new();
        let file: FileConfig = if text.trim().is_empty() {
            FileConfig::default()
        } else {
            let mut ignored = Vec::new();
            let deserializer = serde_yaml::Deserializer::from_str(text);
            let file: Option<FileConfig> = serde_ignored::deserialize(deserializer, |key| {
                // The document root is an `Option`, which serde_ignored renders as `?.`.
                let key = key.to_string();
                ignored.push(key.trim_start_matches("?.").to_owned());
            })
            .map_err(|e| parse_error(e.to_string()))?;
            for key in ignored {
                if PYTHON_ONLY_KEYS.contains(&key.as_str()) {
                    warnings.push(format!(
                        "{}: '{key}' is a Python-service setting this service does not implement; ignored",
                        path.display()
                    ));
                } else {
                    warnings.push(format!("{}: unknown key '{key}' ignored", path.display()));
                }
            }
            file.unwrap_or_default()
        };

        let federation = {
            let f = file.federation;
            let k = f.k.unwrap_or(60);
            if k == 0 {
                return Err(invalid(
                    "federation.k must be a whole number >= 1, got 0".into(),
                ));
            }
            let n_results = f.n_results.unwrap_or(10);
            if !(1..=200).contains(&n_results) {
                return Err(invalid(format!(
                    "federation.n_results must be within 1..=200, got {n_results}"
                )));
            }
            let fetch_multiplier = f.fetch_multiplier.unwrap_or(2);
            if !(1..=100).contains(&fetch_multiplier) {
                return Err(invalid(format!(
                    "federation.fetch_multiplier must be within 1..=100, got {fetch_multiplier}"
                )));
            }
            let per_store_timeout = positive_seconds(f.per_store_timeout_s.unwrap_or(5.0))
                .map_err(|why| invalid(format!("federation.per_store_timeout_s {why}")))?;
            let defaults = crate::health::BreakerSettings::default();
            let cooldown = match f.breaker_cooldown_s {
                None => defaults.cooldown,
                Some(s) => positive_seconds(s)
                    .map_err(|why| invalid(format!("federation.breaker_cooldown_s {why}")))?,
            };
            let max_cooldown = match f.breaker_max_cooldown_s {
                None => defaults.max_cooldown.max(cooldown),
                Some(s) => positive_seconds(s)
                    .map_err(|why| invalid(format!("federation.breaker_max_cooldown_s {why}")))?,
            };
            if max_cooldown < cooldown {
                return Err(invalid(format!(
                    "federation.breaker_max_cooldown_s ({}) must not be below breaker_cooldown_s ({})",
                    max_cooldown.as_secs_f64(),
                    cooldown.as_secs_f64()
                )));
            }
            let breaker = crate::health::BreakerSettings {
                failures: f.breaker_failures.unwrap_or(defaults.failures),
                cooldown,
                max_cooldown,
            };
            let mut stores = Vec::new();
            for (i, raw) in f.stores.unwrap_or_default().into_iter().enumerate() {
                let place = format!("federation.stores[{i}]");
                for key in &raw.dropped {
                    warnings.push(format!("{}: {place}: '{key}' ignored", path.display()));
                }
                let entry = raw.check(&place).map_err(invalid)?;
                if let Ok(entry) = &entry
                    && let Some(known) = crate::store::known_options(&entry.kind)
                {
                    for key in entry
                        .options
                        .keys()
                        .filter(|k| !known.contains(&k.as_str()))
                    {
                        warnings.push(format!(
                            "{}: {place} ('{}'): '{key}' is not a setting of {} stores; ignored",
                            path.display(),
                            entry.name,
                            entry.kind
                        ));
                    }
                }
                stores.push(entry);
            }
            let max_stores = f.max_stores.unwrap_or(DEFAULT_MAX_STORES);
            if !(1..=MAX_MAX_STORES).contains(&max_stores) {
                return Err(invalid(format!(
                    "federation.max_stores must be within 1..={MAX_MAX_STORES}, got {max_stores}"
                )));
            }
            if stores.len() > max_stores {
                warnings.push(format!(
                    "{}: {} stores but federation.max_stores is {max_stores}: the ones past it are skipped",
                    path.display(),
                    stores.len()
                ));
            }
            Federation {
                k,
                n_results,
                fetch_multiplier,
                per_store_timeout,
                breaker,
                max_stores,
                stores,
            }
        };

        let s = file.server;
        let mut server = Server {
            host: non_blank(&s.host).unwrap_or("127.0.0.1").to_owned(),
            port: s.port.unwrap_or(7423),
            token: None,
            token_error: None,
            token_source: TokenSource::None,
            allow_open_lan: s.allow_open_lan.is_some_and(|f| f.0),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_connections: s.max_connections.unwrap_or(1024),
            max_in_flight: s.max_in_flight.unwrap_or(256),
            max_mcp_sessions: s.max_mcp_sessions.unwrap_or(256),
            header_timeout: positive_seconds(s.header_timeout_s.unwrap_or(10.0))
                .map_err(|why| invalid(format!("server.header_timeout_s {why}")))?,
        };
        for (key, value) in [
            ("server.max_connections", server.max_connections),
            ("server.max_in_flight", server.max_in_flight),
            ("server.max_mcp_sessions", server.max_mcp_sessions),
        ] {
            // Far above what one process serves, far below what makes tokio's semaphore panic.
            if !(1..=1_000_000).contains(&value) {
                return Err(invalid(format!(
                    "{key} must be within 1..=1000000, got {value}"
                )));
            }
        }
        if s.mcp_allowed_hosts.is_some() {
            warnings.push(format!(
                "{}: server.mcp_allowed_hosts is now server.allowed_hosts (it guards every route, not only /mcp); read as such",
                path.display()
            ));
        }
        server.allowed_hosts = s
            .allowed_hosts
            .into_iter()
            .chain(s.mcp_allowed_hosts)
            .flatten()
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .collect();
        let origins = s.allowed_origins.unwrap_or_default();
        server.allowed_origins = check_origins(origins.iter().map(String::as_str))
            .map_err(|why| invalid(format!("server.allowed_origins: {why}")))?;
        let mut inline = s.bearer_token;
        let mut token_keyring = s.bearer_token_keyring;
        let mut token_env = s.bearer_token_env;
        let mut keyring = s.keyring;
        let mut tls = Tls {
            trust_system_store: file.tls.trust_system_store.is_some_and(|f| f.0),
        };

        // Environment overrides: later wins over the file. A variable set to nothing (an unset
        // template variable, `FOO=` in a unit file) is no override: it must never turn auth off.
        let var = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        if let Some(host) = var("SEREN_SCC_HOST") {
            server.host = host.trim().to_owned();
        }
        if let Some(port) = var("SEREN_SCC_PORT") {
            server.port = port.trim().parse().map_err(|_| ConfigError::Env {
                name: "SEREN_SCC_PORT",
                message: format!("expected a port number 0..=65535, got {port:?}"),
            })?;
        }
        if let Some(hosts) =
            var("SEREN_SCC_ALLOWED_HOSTS").or_else(|| var("SEREN_SCC_MCP_ALLOWED_HOSTS"))
        {
            server.allowed_hosts = comma_list(&hosts);
        }
        if let Some(origins) = var("SEREN_SCC_ALLOWED_ORIGINS") {
            server.allowed_origins = check_origins(comma_list(&origins).iter().map(String::as_str))
                .map_err(|message| ConfigError::Env {
                    name: "SEREN_SCC_ALLOWED_ORIGINS",
                    message,
                })?;
        }
        if let Some(token) = var("SEREN_SCC_BEARER_TOKEN") {
            inline = Some(token);
        }
        if let Some(pointer) = var("SEREN_SCC_BEARER_TOKEN_KEYRING") {
            token_keyring = Some(pointer);
        }
        if let Some(name) = var("SEREN_SCC_BEARER_TOKEN_ENV") {
            token_env = Some(name);
        }
        if let Some(name) = var("SEREN_SCC_KEYRING") {
            keyring = Some(name);
        }
        for (name, target) in [
            ("SEREN_SCC_ALLOW_OPEN_LAN", &mut server.allow_open_lan),
            ("SEREN_SCC_TRUST_SYSTEM_STORE", &mut tls.trust_system_store),
        ] {
            if let Some(value) = var(name) {
                *target = parse_flag(&value).ok_or_else(|| ConfigError::Env {
                    name,
                    message: format!("expected 1/true/yes/on or 0/false/no/off, got {value:?}"),
                })?;
            }
        }

        let keychain = match keychain {
            Some(keychain) => keychain,
            None => {
                let backend = crate::keychain::Backend::parse(keyring.as_deref().unwrap_or(""))
                    .map_err(|why| invalid(format!("server.keyring: {why}")))?;
                Arc::new(Keychain::new(backend))
            }
        };
        let token_keyring = match non_blank(&token_keyring) {
            None => None,
            Some(text) => Some(
                Pointer::parse(text)
                    .map_err(|why| invalid(format!("server.bearer_token_keyring: {why}")))?,
            ),
        };
        // Token precedence, as in the Python family: inline, then the keychain, then the named
        // variable. Unlike Python it fails closed: a token the file asks for and that cannot be
        // had is an error (`serve` refuses to start), never a service without auth.
        server.token_source = if non_blank(&inline).is_some() {
            TokenSource::Inline
        } else if let Some(pointer) = token_keyring {
            TokenSource::Keychain(pointer)
        } else if let Some(name) = non_blank(&token_env) {
            TokenSource::Env(name.to_owned())
        } else {
            TokenSource::None
        };
        let resolved = match &server.token_source {
            TokenSource::None => Ok(None),
            TokenSource::Inline => inline
                .map_or(Ok(None), Secret::bearer)
                .map_err(|e| format!("server.bearer_token {e}")),
            TokenSource::Keychain(pointer) => keychain
                .get(pointer)
                .map(Some)
                .map_err(|e| format!("server.bearer_token_keyring: {e}")),
            TokenSource::Env(name) => match var(name).map(Secret::bearer) {
                Some(Ok(Some(token))) => Ok(Some(token)),
                Some(Err(why)) => Err(format!("server.bearer_token_env {name} {why}")),
                _ => Err(format!(
                    "server.bearer_token_env names {name}, which is not set"
                )),
            },
        };
        match resolved {
            Ok(token) => server.token = token,
            Err(why) => server.token_error = Some(why),
        }

        Ok(Config {
            path: path.to_owned(),
            exists: false,
            overlay_path: overlay_path(path, env),
            server,
            tls,
            federation,
            keychain,
            warnings,
        })
    }

    /// Whether the configuration itself names `pointer` (the inbound token, or a config store's):
    /// such an entry is a person's, and a store added at run time must neither overwrite nor
    /// delete it.
    pub fn names_pointer(&self, pointer: &Pointer) -> bool {
        self.server.token_source == TokenSource::Keychain(pointer.clone())
            || self
                .federation
                .stores
                .iter()
                .flatten()
                .any(|store| store.token_keyring.as_ref() == Some(pointer))
    }

    /// An empty configuration (no file, no environment), for tests.
    pub fn empty(path: &Path) -> Self {
        // Parsing an empty document with an empty environment cannot fail: every default is valid.
        Self::parse(path, "", &|_| None).expect("the defaults are a valid configuration")
    }
}

/// Splits a comma-separated list, dropping blanks.
fn comma_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Checks and normalizes configured web origins.
fn check_origins<'a>(origins: impl Iterator<Item = &'a str>) -> Result<Vec<String>, String> {
    origins
        .filter(|o| !o.trim().is_empty())
        .map(crate::guard::check_origin_setting)
        .collect()
}

/// Reads a `server.host` as loopback when it is `localhost`, `::1` or any `127.*` address.
pub fn is_loopback(host: &str) -> bool {
    let host = crate::guard::host_of(host);
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// How exposed a bind is, and whether the service may start on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Loopback: this machine only.
    Loopback,
    /// Open to the network, behind a token.
    Guarded,
    /// Open to the network with no token, because the operator said so.
    OpenByChoice,
    /// Open to the network with no token, and nobody said so: refuse to start.
    Refused,
}

impl Server {
    /// Decides how exposed this bind is (§6 of the contract).
    pub fn exposure(&self) -> Exposure {
        if is_loopback(&self.host) {
            Exposure::Loopback
        } else if self.token.is_some() {
            Exposure::Guarded
        } else if self.allow_open_lan {
            Exposure::OpenByChoice
        } else {
            Exposure::Refused
        }
    }
}

/// What `POST /stores` and `add_store` take, before it becomes a [`StoreEntry`].
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NewStore {
    /// The store's name: 1-64 of `A-Z a-z 0-9 . _ -`, not starting with `.`; it labels every hit
    /// the store returns.
    pub name: String,
    /// The store protocol: one of the known types (`list_stores` shows them).
    #[serde(rename = "type")]
    pub kind: String,
    /// The store's base url, `http://` or `https://`.
    pub url: String,
    /// Cross-store trust: every score of this store is multiplied by it. Default 1.0.
    // The schema says "number" (not "number or null"): type arrays trip some MCP hosts.
    #[serde(default)]
    #[schemars(with = "f64")]
    pub weight: Option<f64>,
    /// Relevance floor applied before ranking, 0..=1. Default 0 (trust the store's order).
    #[serde(default)]
    #[schemars(with = "f64", range(min = 0.0, max = 1.0))]
    pub floor: Option<f64>,
    /// Outbound bearer token the callosum sends to this store (printable ASCII, no spaces). Kept in
    /// the OS keychain when one is at hand, else in the runtime overlay file (mode 0600); never
    /// shown again.
    #[serde(default)]
    #[schemars(with = "String")]
    pub token: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(
            Path::new("/etc/scc/seren-corpus-callosum.yaml"),
            text,
            &|_| None,
        )
    }

    fn parse_env(text: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::parse(
            Path::new("/etc/scc/seren-corpus-callosum.yaml"),
            text,
            &move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
        )
    }

    fn error(text: &str) -> String {
        parse(text)
            .expect_err("the config should be refused")
            .to_string()
    }

    #[test]
    fn empty_file_gives_the_documented_defaults() {
        let config = parse("").unwrap();
        assert_eq!(config.server.host, "127.0.0.1");
        assert_eq!(config.server.port, 7423);
        assert!(config.server.token.is_none());
        assert!(!config.server.allow_open_lan);
        assert_eq!(config.federation.k, 60);
        assert_eq!(config.federation.n_results, 10);
        assert_eq!(config.federation.fetch_multiplier, 2);
        assert_eq!(config.federation.per_store_timeout, Duration::from_secs(5));
        assert!(config.federation.stores.is_empty());
        assert_eq!(
            config.overlay_path,
            Path::new("/etc/scc/runtime-stores.json")
        );
        // A document that is only `null` or a comment is empty too.
        assert!(
            parse("# nothing yet\n")
                .unwrap()
                .federation
                .stores
                .is_empty()
        );
        assert!(parse("~\n").unwrap().federation.stores.is_empty());
    }

    #[test]
    fn the_seed_example_parses() {
        let config = parse(
            "federation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://localhost:7422\n    - name: episodic\n      type: seren_memory\n      url: http://localhost:7420/\n    - name: project-xyz          # a dedicated memory\n      type: seren_memory\n      url: http://localhost:7430\n",
        )
        .unwrap();
        let names: Vec<_> = config
            .federation
            .stores
            .iter()
            .map(|s| s.as_ref().unwrap().name.clone())
            .collect();
        assert_eq!(names, ["facts", "episodic", "project-xyz"]);
        let episodic = config.federation.stores[1].as_ref().unwrap();
        assert_eq!(episodic.url.as_str(), "http://localhost:7420");
        assert_eq!(episodic.weight, 1.0);
        assert_eq!(episodic.floor, 0.0);
        assert!(episodic.enabled);
    }

    #[test]
    fn a_python_5_3_file_starts_with_warnings() {
        let config = parse(
            "server:\n  host: 127.0.0.1\n  port: 7423\n  bearer_token: \"\"\n  bearer_token_env: \"\"\n  bearer_token_keyring: \"\"\n  allow_open_lan: false\ntls:\n  trust_system_store: false\nupdates:\n  enabled: true\n  check_interval_hours: 6\nfederation:\n  k: 60\n  n_results: 10\n  fetch_multiplier: 2\n  per_store_timeout_s: 5.0\n  fusion_mode: rrf\n  authority_margin: 0.035\n  min_per_store: 1\n  edges_enabled: true\n  edge_budget: 3\n  satellite_edges_enabled: true\n  satellite_budget: 3\n  hops: 1\n  budget_tokens: null\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://localhost:7422\n      weight: 1.0\n      floor: 0.0\n      bearer_token_env: LOCI_TOKEN\n",
        )
        .unwrap();
        let joined = config.warnings.join("\n");
        for key in ["updates", "federation.fusion_mode", "federation.hops"] {
            assert!(
                joined.contains(&format!("'{key}'")),
                "no warning for {key}: {joined}"
            );
        }
        let facts = config.federation.stores[0].as_ref().unwrap();
        assert_eq!(facts.token_env.as_deref(), Some("LOCI_TOKEN"));
        assert!(
            facts.options.is_empty(),
            "the alias must not land in options"
        );
    }

    #[test]
    fn unknown_keys_are_named_and_store_extras_go_to_options() {
        let config = parse(
            "sever:\n  port: 1\nfederation:\n  kk: 3\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://x\n      project: jetson\n      wieght: 2\n",
        )
        .unwrap();
        let joined = config.warnings.join("\n");
        assert!(joined.contains("unknown key 'sever'"), "{joined}");
        assert!(joined.contains("unknown key 'federation.kk'"), "{joined}");
        assert!(
            joined.contains("'wieght' is not a setting of seren_loci stores"),
            "{joined}"
        );
        assert!(
            !joined.contains("'project'"),
            "project is a Loci option: {joined}"
        );
        let facts = config.federation.stores[0].as_ref().unwrap();
        assert_eq!(facts.options["project"], "jetson");
    }

    #[test]
    fn a_wrong_type_names_file_key_and_line() {
        let message = error("federation:\n  k: sixty\n");
        assert!(
            message.contains("/etc/scc/seren-corpus-callosum.yaml"),
            "{message}"
        );
        assert!(message.contains("federation.k"), "{message}");
        assert!(message.contains("line 2"), "{message}");

        let message = error(
            "federation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://x\n      weight: heavy\n",
        );
        assert!(message.contains("federation.stores[0].weight"), "{message}");
        assert!(message.contains("line 6"), "{message}");

        let message = error("server:\n  port: 99999\n");
        assert!(
            message.contains("server.port") && message.contains("line 2"),
            "{message}"
        );

        let message = error("federation: [1, 2]\n");
        assert!(message.contains("federation"), "{message}");

        let message = error("server:\n  port: [7423\n");
        assert!(message.contains("line"), "{message}");
    }

    #[test]
    fn out_of_range_values_name_the_store_and_field() {
        let store = |extra: &str| {
            error(&format!(
                "federation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://x\n      {extra}\n"
            ))
        };
        for (extra, needle) in [
            ("weight: 0", "store 'facts': weight"),
            ("weight: -1", "store 'facts': weight"),
            ("weight: .nan", "store 'facts': weight"),
            ("weight: .inf", "store 'facts': weight"),
            ("floor: 1.5", "store 'facts': floor"),
            ("floor: -0.1", "store 'facts': floor"),
            ("timeout_s: 0", "store 'facts': timeout_s"),
        ] {
            let message = store(extra);
            assert!(message.contains(needle), "{extra}: {message}");
        }
        assert!(error("federation:\n  k: 0\n").contains("federation.k"));
        assert!(error("federation:\n  k: 1.5\n").contains("federation.k"));
        assert!(error("federation:\n  n_results: 0\n").contains("federation.n_results"));
        assert!(error("federation:\n  per_store_timeout_s: -2\n").contains("per_store_timeout_s"));
        assert!(error("federation:\n  breaker_cooldown_s: 0\n").contains("breaker_cooldown_s"));
        assert!(
            error("server:\n  max_in_flight: 0\n")
                .contains("server.max_in_flight must be within 1..=1000000, got 0")
        );
        // A huge cap once panicked in tokio's semaphore (exit 101) instead of being refused.
        assert!(
            error("server:\n  max_connections: 9000000000000000000\n")
                .contains("server.max_connections must be within 1..=1000000")
        );
        assert!(error("server:\n  header_timeout_s: -1\n").contains("server.header_timeout_s"));
        let message =
            error("federation:\n  breaker_cooldown_s: 30\n  breaker_max_cooldown_s: 10\n");
        assert!(message.contains("must not be below"), "{message}");
        assert!(
            error("federation:\n  breaker_failures: -1\n").contains("federation.breaker_failures")
        );
        let breaker = parse("federation:\n  breaker_failures: 0\n  breaker_cooldown_s: 90\n")
            .unwrap()
            .federation
            .breaker;
        assert_eq!(
            (
                breaker.failures,
                breaker.cooldown.as_secs(),
                breaker.max_cooldown.as_secs()
            ),
            (0, 90, 90)
        );
        let message = error(
            "federation:\n  stores:\n    - name: f\n      type: seren_loci\n      url: ftp://x\n",
        );
        assert!(message.contains("store 'f': url"), "{message}");
    }

    #[test]
    fn entries_missing_a_required_field_are_kept_as_invalid() {
        let config = parse(
            "federation:\n  stores:\n    - name: a\n      type: seren_loci\n    - type: seren_loci\n      url: http://x\n    - name: '  '\n      url: http://x\n      type: t\n",
        )
        .unwrap();
        let invalid: Vec<_> = config
            .federation
            .stores
            .iter()
            .map(|s| s.as_ref().unwrap_err().clone())
            .collect();
        assert_eq!(invalid[0].name, "a");
        assert_eq!(invalid[0].reason, "invalid entry: missing url");
        assert_eq!(invalid[1].name, "federation.stores[1]");
        assert_eq!(invalid[1].reason, "invalid entry: missing name");
        assert_eq!(invalid[2].name, "federation.stores[2]");
    }

    #[test]
    fn yaml_1_2_keeps_off_as_a_name_and_numbers_become_names() {
        let config = parse(
            "federation:\n  stores:\n    - name: off\n      type: seren_loci\n      url: http://x\n    - name: 7\n      type: seren_loci\n      url: http://y\n",
        )
        .unwrap();
        assert_eq!(config.federation.stores[0].as_ref().unwrap().name, "off");
        assert_eq!(config.federation.stores[1].as_ref().unwrap().name, "7");
    }

    #[test]
    fn environment_overrides_win_and_bad_values_are_named() {
        let config = parse_env(
            "server:\n  port: 1000\n  bearer_token_env: MY_TOKEN\n",
            &[
                ("SEREN_SCC_PORT", "9999"),
                ("SEREN_SCC_HOST", "0.0.0.0"),
                ("SEREN_SCC_ALLOW_OPEN_LAN", "yes"),
                ("MY_TOKEN", "s3cret"),
                ("SEREN_SCC_RUNTIME_STORES", "/tmp/o.json"),
            ],
        )
        .unwrap();
        assert_eq!(config.server.port, 9999);
        assert_eq!(config.server.host, "0.0.0.0");
        assert!(config.server.allow_open_lan);
        assert_eq!(config.server.token.as_ref().unwrap().expose(), "s3cret");
        let hosts = parse_env(
            "server:\n  allowed_hosts: [a.example]\n",
            &[("SEREN_SCC_ALLOWED_HOSTS", " b.example, ,c.example")],
        )
        .unwrap();
        assert_eq!(hosts.server.allowed_hosts, ["b.example", "c.example"]);
        assert_eq!(config.overlay_path, Path::new("/tmp/o.json"));

        let inline = parse_env(
            "server:\n  bearer_token: file\n",
            &[("SEREN_SCC_BEARER_TOKEN", "env")],
        )
        .unwrap();
        assert_eq!(inline.server.token.unwrap().expose(), "env");

        let err = parse_env("", &[("SEREN_SCC_PORT", "http")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("SEREN_SCC_PORT") && err.contains("\"http\""),
            "{err}"
        );
        let err = parse_env("", &[("SEREN_SCC_ALLOW_OPEN_LAN", "maybe")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("SEREN_SCC_ALLOW_OPEN_LAN"), "{err}");

        // A variable the file names but nobody set fails closed: no token, and an error that
        // stops `serve` (a service that silently runs open is the hole this guards).
        let unset = parse("server:\n  bearer_token_env: NOPE_NOT_SET\n").unwrap();
        assert!(unset.server.token.is_none());
        assert_eq!(
            unset.server.token_error.as_deref(),
            Some("server.bearer_token_env names NOPE_NOT_SET, which is not set")
        );
    }

    #[test]
    fn an_empty_variable_is_no_override() {
        // `SEREN_SCC_BEARER_TOKEN=` (an unset template variable) once replaced the file's token
        // with nothing, which turned auth off.
        let config = parse_env(
            "server:\n  bearer_token: file-token\n  allow_open_lan: true\n  allowed_hosts: [a.example]\n",
            &[
                ("SEREN_SCC_BEARER_TOKEN", ""),
                ("SEREN_SCC_BEARER_TOKEN_ENV", "  "),
                ("SEREN_SCC_ALLOW_OPEN_LAN", ""),
                ("SEREN_SCC_ALLOWED_HOSTS", ""),
                ("SEREN_SCC_HOST", " "),
                ("SEREN_SCC_PORT", ""),
                ("SEREN_SCC_RUNTIME_STORES", ""),
            ],
        )
        .unwrap();
        assert_eq!(config.server.token.unwrap().expose(), "file-token");
        assert!(config.server.allow_open_lan);
        assert_eq!(config.server.allowed_hosts, ["a.example"]);
        assert_eq!(config.server.host, "127.0.0.1");
        assert_eq!(config.server.port, 7423);
    }

    #[test]
    fn the_host_and_origin_lists() {
        let config = parse(
            "server:\n  mcp_allowed_hosts: [old.example]\n  allowed_hosts: [new.example]\n  allowed_origins: ['https://App.example/', 'http://localhost:3000']\n",
        )
        .unwrap();
        assert_eq!(config.server.allowed_hosts, ["new.example", "old.example"]);
        assert!(
            config
                .warnings
                .iter()
                .any(|w| w.contains("mcp_allowed_hosts is now server.allowed_hosts")),
            "{:?}",
            config.warnings
        );
        assert_eq!(
            config.server.allowed_origins,
            ["https://app.example", "http://localhost:3000"]
        );
        let old = parse_env("", &[("SEREN_SCC_MCP_ALLOWED_HOSTS", "x.lan")]).unwrap();
        assert_eq!(old.server.allowed_hosts, ["x.lan"]);
        let message = error("server:\n  allowed_origins: ['app.example']\n");
        assert!(
            message.contains("server.allowed_origins") && message.contains("scheme://host"),
            "{message}"
        );
        let message = error("server:\n  allowed_origins: ['*']\n");
        assert!(message.contains("every web page"), "{message}");
        let err = parse_env(
            "",
            &[("SEREN_SCC_ALLOWED_ORIGINS", "https://ok.example,/nope")],
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("SEREN_SCC_ALLOWED_ORIGINS") && err.contains("/nope"),
            "{err}"
        );
    }

    /// A keychain in memory, for the precedence rules; the real backends are tested against the
    /// kernel keyring and GNOME Keyring in `tests/keychain.rs` and `tests/keychain/`.
    struct Memory(std::sync::Mutex<std::collections::HashMap<Pointer, String>>);

    impl crate::keychain::Store for Memory {
        fn get(&self, pointer: &Pointer) -> Result<Secret, crate::keychain::KeychainError> {
            self.0
                .lock()
                .unwrap()
                .get(pointer)
                .and_then(|s| Secret::new(s.clone()))
                .ok_or_else(|| crate::keychain::KeychainError::NotFound(pointer.clone()))
        }
        fn set(
            &self,
            pointer: &Pointer,
            secret: &Secret,
        ) -> Result<(), crate::keychain::KeychainError> {
            self.0
                .lock()
                .unwrap()
                .insert(pointer.clone(), secret.expose().to_owned());
            Ok(())
        }
        fn delete(&self, pointer: &Pointer) -> Result<(), crate::keychain::KeychainError> {
            self.0.lock().unwrap().remove(pointer);
            Ok(())
        }
        fn persistent(&self) -> bool {
            true
        }
        fn name(&self) -> &'static str {
            "memory"
        }
    }

    fn with_keychain(text: &str, vars: &[(&str, &str)], entries: &[(&str, &str)]) -> Config {
        let map = entries
            .iter()
            .map(|(p, s)| (Pointer::parse(p).unwrap(), s.to_string()))
            .collect();
        let keychain = Arc::new(Keychain::with_store(Arc::new(Memory(
            std::sync::Mutex::new(map),
        ))));
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::parse_with(
            Path::new("/etc/scc/seren-corpus-callosum.yaml"),
            text,
            &move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
            Some(keychain),
        )
        .unwrap()
    }

    #[test]
    fn inbound_token_precedence_is_inline_then_keychain_then_env() {
        let keyed = &[("scc/inbound", "from-keychain")];
        let env = &[("MY_TOKEN", "from-env")];
        let all = "server:\n  bearer_token: inline\n  bearer_token_keyring: scc/inbound\n  bearer_token_env: MY_TOKEN\n";
        let token = |c: Config| {
            (
                c.server.token.map(|t| t.expose().to_owned()),
                c.server.token_error,
            )
        };
        assert_eq!(
            token(with_keychain(all, env, keyed)),
            (Some("inline".into()), None)
        );
        let no_inline =
            "server:\n  bearer_token_keyring: scc/inbound\n  bearer_token_env: MY_TOKEN\n";
        let config = with_keychain(no_inline, env, keyed);
        assert_eq!(
            config.server.token_source,
            TokenSource::Keychain(Pointer::parse("scc/inbound").unwrap())
        );
        assert_eq!(token(config), (Some("from-keychain".into()), None));
        // The keychain entry is missing: that fails closed, and never falls through to the env.
        assert_eq!(
            token(with_keychain(no_inline, env, &[])),
            (
                None,
                Some("server.bearer_token_keyring: keychain entry 'scc/inbound' not found".into())
            )
        );
        let env_only = "server:\n  bearer_token_env: MY_TOKEN\n";
        assert_eq!(
            token(with_keychain(env_only, env, keyed)),
            (Some("from-env".into()), None)
        );
        // The environment names the pointer too, and wins over the file's.
        let config = with_keychain(
            "server:\n  bearer_token_keyring: scc/nope\n",
            &[("SEREN_SCC_BEARER_TOKEN_KEYRING", "scc/inbound")],
            keyed,
        );
        assert_eq!(token(config), (Some("from-keychain".into()), None));
        let message = error("server:\n  bearer_token_keyring: just-a-name\n");
        assert!(
            message.contains("server.bearer_token_keyring") && message.contains("service/user"),
            "{message}"
        );
        let message = error("server:\n  keyring: vault\n");
        assert!(message.contains("server.keyring"), "{message}");
    }

    #[test]
    fn store_keychain_pointers_are_read_with_their_alias() {
        let config = parse(
            "federation:\n  stores:\n    - name: a\n      type: seren_loci\n      url: http://x\n      bearer_token_keyring: loci/a\n    - name: b\n      type: seren_loci\n      url: http://x\n      token_keyring: loci/b\n      bearer_token_keyring: loci/ignored\n",
        )
        .unwrap();
        let stores: Vec<_> = config
            .federation
            .stores
            .iter()
            .map(|s| s.as_ref().unwrap())
            .collect();
        assert_eq!(
            stores[0].token_keyring,
            Some(Pointer::parse("loci/a").unwrap())
        );
        assert_eq!(
            stores[1].token_keyring,
            Some(Pointer::parse("loci/b").unwrap())
        );
        assert!(stores[0].has_auth() && stores[0].options.is_empty());
        assert!(
            config
                .warnings
                .iter()
                .any(|w| w.contains("'bearer_token_keyring' ignored")),
            "{:?}",
            config.warnings
        );
        let message = error(
            "federation:\n  stores:\n    - name: a\n      type: seren_loci\n      url: http://x\n      token_keyring: nope\n",
        );
        assert!(message.contains("store 'a': token_keyring"), "{message}");
        assert_eq!(
            stores[0].to_json()["token_keyring"],
            "loci/a",
            "the overlay keeps the pointer"
        );
    }

    #[test]
    fn one_name_rule_for_every_store() {
        for good in ["facts", "a.b_c-1", "7", "off", "_x", "A"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            ".",
            "..",
            ".hidden",
            "",
            "a b",
            "a\nb",
            "a\u{202e}b",
            "<b>x</b>",
            "é",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_name(&"a".repeat(64)).is_ok());
        assert!(check_name(&"a".repeat(65)).is_err());
        // In the YAML, a bad name skips the entry; the row is labelled by its place and the name
        // is quoted escaped, so a newline cannot forge a log line.
        let config = parse(
            "federation:\n  stores:\n    - name: \"evil\\nINFO forged\"\n      type: seren_loci\n      url: http://x\n    - name: \"a\\u202eb\"\n      type: seren_loci\n      url: http://x\n    - name: '..'\n      type: seren_loci\n      url: http://x\n",
        )
        .unwrap();
        let invalid: Vec<_> = config
            .federation
            .stores
            .iter()
            .map(|s| s.as_ref().unwrap_err().clone())
            .collect();
        assert_eq!(invalid[0].name, "federation.stores[0]");
        assert_eq!(
            invalid[0].reason,
            "invalid entry: name 'evil\\u{a}INFO forged' must be 1-64 characters of A-Z a-z 0-9 . _ - and not start with '.'"
        );
        assert!(
            invalid[1].reason.contains("'a\\u{202e}b'"),
            "{}",
            invalid[1].reason
        );
        assert_eq!(invalid[2].name, "federation.stores[2]");
        for entry in &invalid {
            assert!(!entry.reason.contains('\n') && !entry.reason.contains('\u{202e}'));
        }
    }

    #[test]
    fn store_urls_are_called_as_they_read() {
        let url = |text: &str| StoreUrl::parse(text);
        // A backslash reads as part of the name but is called as a path separator.
        assert_eq!(
            url("http://127.0.0.1:18004\\@evil").unwrap_err(),
            "must not contain a backslash"
        );
        let with_query = url("http://host:9/base/?api_key=X").unwrap();
        assert_eq!(with_query.as_str(), "http://host:9/base/?api_key=X");
        assert_eq!(with_query.shown(), "http://host:9/base?***");
        assert_eq!(
            with_query.join("/search").as_str(),
            "http://host:9/base/search?api_key=X"
        );
        let with_user = url("https://user:pw@host/").unwrap();
        assert_eq!(with_user.as_str(), "https://user:pw@host");
        assert_eq!(with_user.shown(), "https://***@host");
        assert_eq!(with_user.join("/search").path(), "/search");
        assert_eq!(url("http://h/p@x").unwrap().shown(), "http://h/p@x");
        assert_eq!(
            url("http://h").unwrap().join("/search").as_str(),
            "http://h/search"
        );
        for (bad, why) in [
            ("ftp://x", "http:// or https://"),
            ("http://", "http:// or https://"),
            ("http://:80", "valid url"),
            ("http://a b", "spaces"),
            ("http://h/#frag", "fragment"),
            ("http://[::1", "valid url"),
        ] {
            let error = url(bad).unwrap_err();
            assert!(error.contains(why), "{bad}: {error}");
        }
        let message = error(
            "federation:\n  stores:\n    - name: f\n      type: seren_loci\n      url: 'http://a\\@b'\n",
        );
        assert!(
            message.contains("store 'f': url must not contain a backslash"),
            "{message}"
        );
    }

    #[test]
    fn tokens_must_fit_a_bearer_header() {
        assert_eq!(
            Secret::bearer(" tok-en\n").unwrap().unwrap().expose(),
            "tok-en"
        );
        assert!(Secret::bearer("  ").unwrap().is_none());
        for bad in ["sec ret", "sec\r\nX-Injected: 1", "sëcret"] {
            let why = Secret::bearer(bad).unwrap_err();
            assert!(why.contains("bearer header"), "{bad:?}: {why}");
            assert!(!why.contains("sec"), "the token is not quoted: {why}");
        }
        let message = error(
            "federation:\n  stores:\n    - name: f\n      type: seren_loci\n      url: http://x\n      token: 'a b'\n",
        );
        assert!(
            message.contains("store 'f': token has characters"),
            "{message}"
        );
        let config = parse_env("", &[("SEREN_SCC_BEARER_TOKEN", "two words")]).unwrap();
        assert!(config.server.token.is_none());
        assert!(
            config
                .server
                .token_error
                .unwrap()
                .starts_with("server.bearer_token has characters")
        );
    }

    #[test]
    fn the_roster_cap_is_a_checked_setting() {
        assert_eq!(parse("").unwrap().federation.max_stores, DEFAULT_MAX_STORES);
        assert!(error("federation:\n  max_stores: 0\n").contains("federation.max_stores"));
        assert!(error("federation:\n  max_stores: 5000\n").contains("1..=1024"));
        assert!(error("server:\n  max_mcp_sessions: 0\n").contains("server.max_mcp_sessions"));
    }

    #[test]
    fn truthy_words_are_accepted_for_flags() {
        assert!(
            parse("server:\n  allow_open_lan: \"on\"\n")
                .unwrap()
                .server
                .allow_open_lan
        );
        assert!(
            parse("tls:\n  trust_system_store: 1\n")
                .unwrap()
                .tls
                .trust_system_store
        );
        let message = error("server:\n  allow_open_lan: perhaps\n");
        assert!(
            message.contains("server.allow_open_lan") && message.contains("line 2"),
            "{message}"
        );
    }

    #[test]
    fn secrets_never_show_in_debug_output() {
        let config = parse("server:\n  bearer_token: hunter2\n").unwrap();
        assert!(!format!("{config:?}").contains("hunter2"));
    }

    #[test]
    fn loopback_hosts() {
        for host in [
            "127.0.0.1",
            "127.9.9.9",
            "localhost",
            "LOCALHOST",
            "::1",
            "[::1]",
        ] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["0.0.0.0", "192.168.1.4", "::", "example.com"] {
            assert!(!is_loopback(host), "{host}");
        }
    }

    #[test]
    fn path_resolution_order() {
        let none = |_: &str| None;
        let explicit = resolve_path(Some(Path::new("/x/c.yaml")), &|_| Some("/y/d.yaml".into()));
        assert_eq!(explicit, Path::new("/x/c.yaml"));
        let from_env = resolve_path(None, &|n| {
            (n == "SEREN_SCC_CONFIG").then(|| "/y/d.yaml".into())
        });
        assert_eq!(from_env, Path::new("/y/d.yaml"));
        let fallback = resolve_path(None, &none);
        assert!(fallback.ends_with(FILE_NAME));
        // With neither, a file in the working directory, else the platform's config directory.
        let expected = if Path::new(FILE_NAME).exists() {
            PathBuf::from(FILE_NAME)
        } else {
            directories::ProjectDirs::from("", "", "seren-corpus-callosum")
                .expect("a home directory")
                .config_dir()
                .join(FILE_NAME)
        };
        assert_eq!(fallback, expected);
        assert_eq!(
            overlay_path(Path::new("c.yaml"), &none),
            Path::new("runtime-stores.json")
        );
    }
}
