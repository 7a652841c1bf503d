//! One store entry: as written (a hand-written `Deserialize` that keeps line numbers and puts
//! unknown keys in `options`), and checked (the one name rule, the one url rule, the ranges).

use super::kind::{EntryKind, StoreKind};
use super::scalar::{Flag, Scalar};
use crate::identity::KeyPath;
use crate::keychain::Pointer;
use crate::limits::MAX_DESCRIPTION_CHARS;
use crate::secret::Secret;
use crate::text::escaped;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

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
    /// Its `type:`, resolved (an unknown one is kept, to be skipped when the store is bound).
    pub kind: EntryKind,
    /// Where the store is reached: a url, or (an `mcp` store from the config file) a program.
    pub endpoint: Endpoint,
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
    /// A PEM file of CA certificates this store's https server is trusted by, beside the usual
    /// roots (read when the store is bound). Only the config file names one.
    pub tls_ca_file: Option<PathBuf>,
    /// What the store holds, in one line, for a model choosing where to aim a search (the MCP
    /// `search` tool's description lists it).
    pub description: Option<String>,
    /// Which field of its hits names the document when a search has `identity: key` (`id` when
    /// not set).
    pub identity_key: Option<KeyPath>,
    /// Adapter extras (`search_path`, `project`, `include_*`) and any unknown key of the entry.
    pub options: Map<String, Value>,
}

/// Where a store is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Endpoint {
    /// Called over HTTP at this base url.
    Url(StoreUrl),
    /// An `mcp` store the callosum spawns and talks to over stdio. Only the config file can name
    /// one: a program is never taken from the network.
    Program(Program),
}

/// A program to spawn: `command`, `args`, `env` of an `mcp` store entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub command: String,
    pub args: Vec<String>,
    /// Set for the child on top of the callosum's environment (minus its own `SEREN_SCC_*`).
    pub env: BTreeMap<String, String>,
}

impl Endpoint {
    /// The url, for a store reached over HTTP.
    pub fn url(&self) -> Option<&StoreUrl> {
        match self {
            Endpoint::Url(url) => Some(url),
            Endpoint::Program(_) => None,
        }
    }

    /// How `GET /stores` shows it: the url without secrets, or `stdio: <program>` (never the
    /// arguments or environment, which may hold a key).
    pub fn shown(&self) -> String {
        match self {
            Endpoint::Url(url) => url.shown(),
            Endpoint::Program(program) => format!("stdio: {}", program.command),
        }
    }
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
        object.insert("type".into(), self.kind.name().into());
        match &self.endpoint {
            // An MCP endpoint keeps its `/`: `/mcp/` and `/mcp` may be different routes.
            Endpoint::Url(url) if self.kind.is(StoreKind::Mcp) => {
                object.insert("url".into(), url.written().into());
            }
            Endpoint::Url(url) => {
                object.insert("url".into(), url.as_str().into());
            }
            Endpoint::Program(program) => {
                object.insert("command".into(), program.command.clone().into());
                object.insert("args".into(), program.args.clone().into());
                let env: Map<String, Value> = (program.env.iter())
                    .map(|(k, v)| (k.clone(), v.clone().into()))
                    .collect();
                object.insert("env".into(), env.into());
            }
        }
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
        if let Some(path) = &self.tls_ca_file {
            object.insert("tls_ca_file".into(), path.to_string_lossy().into());
        }
        if let Some(description) = &self.description {
            object.insert("description".into(), description.clone().into());
        }
        if let Some(key) = &self.identity_key {
            object.insert("identity_key".into(), key.to_string().into());
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
    /// An `mcp` store's program, its arguments and extra environment.
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub env: Option<BTreeMap<String, String>>,
    pub weight: Option<f64>,
    pub floor: Option<f64>,
    pub enabled: Option<bool>,
    pub token: Option<String>,
    pub token_keyring: Option<String>,
    pub token_env: Option<String>,
    pub timeout_s: Option<f64>,
    pub tls_ca_file: Option<String>,
    pub description: Option<String>,
    pub identity_key: Option<String>,
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
        let mut aliases = Aliases::default();
        while let Some(key) = map.next_key::<String>()? {
            entry.read_value(key, &mut aliases, &mut map)?;
        }
        entry.take_aliases(aliases);
        Ok(entry)
    }
}

/// The long names of the token keys (`bearer_token`, ...), read beside the short ones; which of
/// the two is kept is decided once the whole entry is read.
#[derive(Default)]
struct Aliases {
    token: Option<String>,
    token_keyring: Option<String>,
    token_env: Option<String>,
}

impl RawStoreEntry {
    /// Reads the value of one key into its field; an unknown key goes to `options`.
    fn read_value<'de, A: MapAccess<'de>>(
        &mut self,
        key: String,
        aliases: &mut Aliases,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match key.as_str() {
            "name" => self.name = map.next_value::<Option<Scalar>>()?.map(|s| s.0),
            "type" => self.kind = map.next_value()?,
            "url" => self.url = map.next_value()?,
            "command" => self.command = map.next_value::<Option<Scalar>>()?.map(|s| s.0),
            "args" => {
                let args: Option<Vec<Scalar>> = map.next_value()?;
                self.args = args.map(|args| args.into_iter().map(|s| s.0).collect());
            }
            "env" => {
                let env: Option<BTreeMap<String, Scalar>> = map.next_value()?;
                self.env = env.map(|env| env.into_iter().map(|(k, v)| (k, v.0)).collect());
            }
            "weight" => self.weight = map.next_value()?,
            "floor" => self.floor = map.next_value()?,
            "enabled" => self.enabled = map.next_value::<Option<Flag>>()?.map(|f| f.0),
            "token" => self.token = map.next_value()?,
            "token_env" => self.token_env = map.next_value()?,
            "token_keyring" => self.token_keyring = map.next_value()?,
            "bearer_token" => aliases.token = map.next_value::<Option<String>>()?,
            "bearer_token_keyring" => {
                aliases.token_keyring = map.next_value::<Option<String>>()?;
            }
            "bearer_token_env" => aliases.token_env = map.next_value::<Option<String>>()?,
            "timeout_s" => self.timeout_s = map.next_value()?,
            "tls_ca_file" => {
                self.tls_ca_file = map.next_value::<Option<Scalar>>()?.map(|s| s.0);
            }
            "description" => {
                self.description = map.next_value::<Option<Scalar>>()?.map(|s| s.0);
            }
            "identity_key" => {
                self.identity_key = map.next_value::<Option<Scalar>>()?.map(|s| s.0);
            }
            "options" => {
                let options: Option<Map<String, Value>> = map.next_value()?;
                // Explicit options win over stray top-level keys merged in earlier.
                for (k, v) in options.unwrap_or_default() {
                    self.options.insert(k, v);
                }
            }
            "managed" => {
                // Managed-ness comes from where an entry lives, never from what it says.
                map.next_value::<de::IgnoredAny>()?;
                self.dropped.push(key);
            }
            _ => {
                let value: Value = map.next_value()?;
                self.options.entry(key).or_insert(value);
            }
        }
        Ok(())
    }

    /// The short key wins over its alias; a losing alias is dropped, not put into options.
    fn take_aliases(&mut self, aliases: Aliases) {
        let pairs = [
            (&mut self.token, aliases.token, "bearer_token"),
            (&mut self.token_env, aliases.token_env, "bearer_token_env"),
            (
                &mut self.token_keyring,
                aliases.token_keyring,
                "bearer_token_keyring",
            ),
        ];
        for (short, alias, alias_key) in pairs {
            if non_blank(short).is_none() {
                *short = alias;
            } else if alias.is_some() {
                self.dropped.push(alias_key.into());
            }
        }
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
        let Some(kind) = non_blank(&self.kind).map(EntryKind::parse) else {
            return skip(&name, "missing type".into());
        };
        let field = |f: &str, why: String| format!("store '{name}': {f} {why}");
        let endpoint = match self.endpoint(&kind) {
            Ok(Ok(endpoint)) => endpoint,
            Ok(Err(reason)) => return skip(&name, reason),
            Err((key, why)) => return Err(field(key, why)),
        };
        let tls_ca_file = non_blank(&self.tls_ca_file).map(PathBuf::from);
        let (weight, floor) =
            weight_and_floor(self.weight, self.floor).map_err(|(f, why)| field(f, why))?;
        let timeout = match self.timeout_s {
            None => None,
            Some(t) => Some(checked_seconds(t).map_err(|why| field("timeout_s", why))?),
        };
        let token_keyring = match non_blank(&self.token_keyring) {
            None => None,
            Some(text) => Some(Pointer::parse(text).map_err(|why| field("token_keyring", why))?),
        };
        let token = match self.token {
            None => None,
            Some(token) => Secret::bearer(token).map_err(|why| field("token", why))?,
        };
        let description =
            check_description(self.description).map_err(|why| field("description", why))?;
        let identity_key = match non_blank(&self.identity_key) {
            None => None,
            Some(path) => Some(KeyPath::parse(path).map_err(|why| field("identity_key", why))?),
        };
        Ok(Ok(StoreEntry {
            name,
            kind,
            endpoint,
            weight,
            floor,
            enabled: self.enabled.unwrap_or(true),
            token,
            token_keyring,
            token_env: non_blank(&self.token_env).map(str::to_owned),
            timeout,
            tls_ca_file,
            description,
            identity_key,
            options: self.options,
        }))
    }

    /// Where the entry is reached: its url, or (an `mcp` store's only) the program to run, with
    /// the keys that go with one and not the other checked. `Ok(Err(_))` is a missing endpoint
    /// (the entry is skipped); `Err((key, why))` a key given where it does not belong.
    fn endpoint(
        &self,
        kind: &EntryKind,
    ) -> Result<Result<Endpoint, String>, (&'static str, String)> {
        let mcp = kind.is(StoreKind::Mcp);
        let endpoint = match (non_blank(&self.url), non_blank(&self.command)) {
            (Some(_), Some(_)) => return Err(("url", "and command: give exactly one".into())),
            (Some(url), None) => Endpoint::Url(StoreUrl::parse(url).map_err(|why| ("url", why))?),
            (None, Some(command)) if mcp => Endpoint::Program(Program {
                command: command.to_owned(),
                args: self.args.clone().unwrap_or_default(),
                env: self.env.clone().unwrap_or_default(),
            }),
            (None, Some(_)) => {
                return Err((
                    "command",
                    format!("is only for stores of type mcp, not {kind}"),
                ));
            }
            (None, None) if mcp => {
                return Ok(Err(
                    "missing url (or command, for a server over stdio)".into()
                ));
            }
            (None, None) => return Ok(Err("missing url".into())),
        };
        if non_blank(&self.tls_ca_file).is_some() {
            match &endpoint {
                Endpoint::Url(url) if url.exact().scheme() == "https" => {}
                Endpoint::Url(_) => {
                    return Err((
                        "tls_ca_file",
                        "goes with an https:// url; this store's url is http://, which has no certificate to check".into(),
                    ));
                }
                Endpoint::Program(_) => {
                    return Err((
                        "tls_ca_file",
                        "goes with an https:// url, not command (a server over stdio has no certificate)".into(),
                    ));
                }
            }
        }
        if !matches!(endpoint, Endpoint::Program(_)) {
            for (key, given) in [("args", self.args.is_some()), ("env", self.env.is_some())] {
                if given {
                    return Err((
                        key,
                        "goes with command (a server over stdio), not url".into(),
                    ));
                }
            }
        }
        Ok(Ok(endpoint))
    }
}

/// A store's `description`: trimmed, one line of at most [`MAX_DESCRIPTION_CHARS`] characters
/// with no control character (it is written into a tool description a model reads, where a
/// newline could pass for another instruction); blank is none.
pub fn check_description(description: Option<String>) -> Result<Option<String>, String> {
    let Some(text) = description else {
        return Ok(None);
    };
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let chars = text.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "must be one line of at most {MAX_DESCRIPTION_CHARS} characters, got {chars}"
        ));
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(format!(
            "must be one line without control characters, got {}",
            c.escape_unicode()
        ));
    }
    Ok(Some(text.to_owned()))
}

/// A store's weight (finite, > 0; default 1) and floor (0..=1; default 0), or the field that is
/// out of range and why.
pub fn weight_and_floor(
    weight: Option<f64>,
    floor: Option<f64>,
) -> Result<(f64, f64), (&'static str, String)> {
    let weight = weight.unwrap_or(1.0);
    if !(weight.is_finite() && weight > 0.0) {
        return Err((
            "weight",
            format!("must be a finite number > 0, got {weight}"),
        ));
    }
    let floor = floor.unwrap_or(0.0);
    if !(floor.is_finite() && (0.0..=1.0).contains(&floor)) {
        return Err(("floor", format!("must be within 0..=1, got {floor}")));
    }
    Ok((weight, floor))
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

/// A store's base url, parsed as it will be called. The text is kept as given (trimmed, trailing
/// `/` dropped) for the overlay; messages and `GET /stores` show [`StoreUrl::shown`], with any
/// user-info and query hidden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreUrl {
    text: String,
    /// As given, trailing `/` included.
    written: String,
    parsed: url::Url,
}

impl StoreUrl {
    /// Checks a url: `http` or `https`, a host, no backslash (WHATWG parsers read it as `/`, so
    /// `http://a\@b` would be called at `a` while it reads as `b`), no whitespace or control
    /// character, no `#fragment`. A query is kept and sent; a path is kept and the search path
    /// goes after it.
    pub fn parse(text: &str) -> Result<Self, String> {
        // A trailing `/` of the path is dropped; one inside a query is the query's own. The url is
        // parsed as written, though: an MCP endpoint (`/mcp/`) is called exactly there, while
        // `join` puts a search path after the path without its `/`.
        let written = text.trim();
        let text = if written.contains('?') {
            written
        } else {
            written.trim_end_matches('/')
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
        let parsed = url::Url::parse(written).map_err(|e| format!("is not a valid url ({e})"))?;
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err("has no host".into());
        }
        if parsed.fragment().is_some() {
            return Err("must not have a #fragment".into());
        }
        Ok(Self {
            text: text.to_owned(),
            written: written.to_owned(),
            parsed,
        })
    }

    /// The url as written (trimmed, without a trailing `/`).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The url to call as is (an MCP endpoint), trailing `/` included.
    pub fn exact(&self) -> &url::Url {
        &self.parsed
    }

    /// The url exactly as given (trimmed), trailing `/` included.
    pub fn written(&self) -> &str {
        &self.written
    }

    /// The url fit for a message: `scheme://[***@]host[:port]/path[?***]`.
    pub fn shown(&self) -> String {
        shown(&self.parsed)
    }

    /// The url to call: this one's path, then `path` (which starts with `/`), then its query.
    pub fn join(&self, path: &str) -> url::Url {
        let mut url = self.parsed.clone();
        let joined = format!("{}{path}", url.path().trim_end_matches('/'));
        url.set_path(&joined);
        url
    }
}

/// Any url fit for a message: `scheme://[***@]host[:port]/path[?***]` (no user, password or
/// query value is ever shown). It reads the parsed url's parts, so an IPv6 host (`[::1]`), a
/// user-info with `@` or `:` in it, or a query after a `]` are taken apart as the url is called.
pub fn shown(url: &url::Url) -> String {
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

pub(super) fn non_blank(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// The one duration rule, for every `*_s` setting (a store's `timeout_s` here, the
/// `federation:` and `server:` ones and `POST /configure` through `range.rs`'s `seconds`): a finite
/// number of seconds within `MIN_SECONDS..=MAX_SECONDS` (see `limits`), so no value rounds to a
/// zero `Duration`.
pub(super) fn checked_seconds(seconds: f64) -> Result<Duration, String> {
    use crate::limits::{MAX_SECONDS, MIN_SECONDS};
    if seconds.is_finite() && (MIN_SECONDS..=MAX_SECONDS).contains(&seconds) {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        // `1e-300` is shown so, not as three hundred zeros.
        let shown = seconds.to_string();
        let shown = if shown.len() > 20 {
            format!("{seconds:e}")
        } else {
            shown
        };
        Err(format!(
            "must be a number of seconds within {MIN_SECONDS}..={MAX_SECONDS} (1 ms to an hour), got {shown}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_user_info_or_query() {
        let check = |text: &str, expected: &str| {
            let url = url::Url::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let seen = shown(&url);
            assert_eq!(seen, expected, "{text}");
            for secret in ["PASSW0RD", "SECRETKEY", "user"] {
                assert!(!seen.contains(secret), "{text} shows {secret}: {seen}");
            }
        };
        check("http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp");
        check("http://[::1]:8080/mcp", "http://[::1]:8080/mcp");
        check(
            "http://user:PASSW0RD@[::1]:8080/mcp?api_key=SECRETKEY",
            "http://***@[::1]:8080/mcp?***",
        );
        check(
            "http://user:PASSW0RD@127.0.0.1:8080/mcp?api_key=SECRETKEY",
            "http://***@127.0.0.1:8080/mcp?***",
        );
        check(
            "http://[::1]/mcp?api_key=SECRETKEY]x",
            "http://[::1]/mcp?***",
        );
        check(
            "http://[2001:db8::7]:9/a/b/?k=SECRETKEY&x=1",
            "http://[2001:db8::7]:9/a/b?***",
        );
        check("http://user@host.example/", "http://***@host.example");
        check("http://:PASSW0RD@host.example", "http://***@host.example");
        check(
            "http://us%40er:PASS%3AW0RD@host.example/p",
            "http://***@host.example/p",
        );
        // The scheme's own port is not written; any other is.
        check("https://host.example:443/s", "https://host.example/s");
        check("http://host.example:443/s", "http://host.example:443/s");
        // An empty query still hides that there is one.
        check("http://host.example/s?", "http://host.example/s?***");
        check("https://HOST.example", "https://host.example");
    }

    #[test]
    fn a_store_url_is_shown_as_shown_says() {
        let url = StoreUrl::parse("http://user:PASSW0RD@[::1]:9/mcp/?api_key=SECRETKEY").unwrap();
        assert_eq!(url.shown(), "http://***@[::1]:9/mcp?***");
    }
}
