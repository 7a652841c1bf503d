//! The `server:` and `tls:` blocks, checked into [`Server`] and [`Tls`]: their `SEREN_SCC_*`
//! overrides, the inbound token read by the one rule of `secret.rs` (and where it came from), and
//! how exposed the bind is. The listener, the guard and the routes read them; none is built here.

use super::env::Env;
use super::error::ConfigError;
use super::exposure::{Exposure, is_loopback};
use super::file::FileServer;
use super::format::{self, TextFormat};
use super::oauth::{self, OAuth};
use super::range::{seconds, within};
use super::scalar;
use super::secret::{self, Missing, Pointers};
use super::store::non_blank;
use super::views::{self, Views};
use crate::keychain::{Keychain, Pointer};
use crate::secret::Secret;
use std::path::Path;
use std::time::Duration;

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
    /// `GET /metrics` needs no token (it is gated like every other route unless this is set).
    pub public_metrics: bool,
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
    /// Calls one store may have under way at once; more wait their turn, inside their timeout.
    pub max_calls_per_store: usize,
    /// How long a connection may take to send a request's headers (and may sit idle between
    /// requests) before it is closed.
    pub header_timeout: Duration,
    /// How the MCP `search` tool writes its text block when the call does not say.
    pub mcp_format: TextFormat,
    /// One line per request at info (`server.access_log`, default on).
    pub access_log: bool,
    /// The config file and the runtime overlay are looked at for changes (`server.watch`, default
    /// on); off, only `SIGHUP` reloads the config, and the overlay is read again before each
    /// change this process makes.
    pub watch: bool,
    /// The request line of a search also carries its query (`server.log_queries`, default off:
    /// a query is what a person asked).
    pub log_queries: bool,
    /// The authorization server whose access tokens are taken beside the static token
    /// (`server.oauth`, contract §6b).
    pub oauth: Option<OAuth>,
    /// The views that limit which stores a caller sees (`server.views`, contract §6c).
    pub views: Views,
    /// Where the audit trail goes (`server.audit_log`); `None`: beside the overlay
    /// (`Config::audit_path`).
    pub audit_log: Option<std::path::PathBuf>,
}

/// The variable that sets the inbound token itself, as `server.bearer_token` does (its source is
/// then [`TokenSource::Inline`]).
pub const BEARER_TOKEN_VAR: &str = "SEREN_SCC_BEARER_TOKEN";

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

/// The inbound token's pointers as the file and the environment name them, before they are read.
#[derive(Default)]
pub(super) struct Asked {
    /// Each view's token pointers.
    pub(super) views: Vec<views::Asked>,
    inline: Option<String>,
    pub(super) keychain: Option<String>,
    env: Option<String>,
    /// Which keychain backend (`server.keyring`).
    pub(super) backend: Option<String>,
}

/// The `server:` block, checked, and the inbound token's pointers as the file names them (the
/// views' too). `stores` are the file's store names, which the views' patterns are checked
/// against.
pub(super) fn read(
    mut s: FileServer,
    path: &Path,
    stores: &[&str],
    problems: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> (Server, Asked) {
    let (views, views_asked) = views::read(
        s.views.take(),
        s.views_by_scope.take(),
        stores,
        problems,
        warnings,
    );
    if s.mcp_allowed_hosts.is_some() {
        warnings.push(format!(
            "{}: server.mcp_allowed_hosts is now server.allowed_hosts (it guards every route, not only /mcp); read as such",
            path.display()
        ));
    }
    let allowed_origins = check_origins(s.allowed_origins.iter().flatten().map(String::as_str))
        .unwrap_or_else(|why| {
            problems.push(format!("server.allowed_origins: {why}"));
            Vec::new()
        });
    let server = Server {
        host: non_blank(&s.host).unwrap_or("127.0.0.1").to_owned(),
        port: s.port.unwrap_or(7423),
        token: None,
        token_error: None,
        token_source: TokenSource::None,
        allow_open_lan: s.allow_open_lan.is_some_and(|f| f.0),
        public_metrics: s.public_metrics.is_some_and(|f| f.0),
        allowed_hosts: allowed_hosts(s.allowed_hosts, s.mcp_allowed_hosts),
        allowed_origins,
        max_connections: server_cap(
            "server.max_connections",
            s.max_connections,
            crate::limits::DEFAULT_MAX_CONNECTIONS,
            problems,
        ),
        max_in_flight: server_cap(
            "server.max_in_flight",
            s.max_in_flight,
            crate::limits::DEFAULT_MAX_IN_FLIGHT,
            problems,
        ),
        max_calls_per_store: server_cap(
            "server.max_calls_per_store",
            s.max_calls_per_store,
            crate::limits::DEFAULT_MAX_CALLS_PER_STORE,
            problems,
        ),
        header_timeout: header_timeout(s.header_timeout_s, problems),
        mcp_format: format::read(s.mcp_format.as_deref(), problems),
        access_log: s.access_log.is_none_or(|f| f.0),
        watch: s.watch.is_none_or(|f| f.0),
        log_queries: s.log_queries.is_some_and(|f| f.0),
        oauth: s.oauth.and_then(|block| oauth::read(block, problems)),
        views: Views::default(),
        audit_log: non_blank(&s.audit_log).map(std::path::PathBuf::from),
    };
    let server = Server { views, ..server };
    let asked = Asked {
        views: views_asked,
        inline: s.bearer_token,
        keychain: s.bearer_token_keyring,
        env: s.bearer_token_env,
        backend: s.keyring,
    };
    (server, asked)
}

/// `server.allowed_hosts`, and what the old name (`mcp_allowed_hosts`) lists after it: trimmed,
/// blanks dropped.
fn allowed_hosts(hosts: Option<Vec<String>>, old_name: Option<Vec<String>>) -> Vec<String> {
    (hosts.into_iter().chain(old_name).flatten())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .collect()
}

/// A `server:` cap (connections, requests in flight): 1..=`MAX_SERVER_CAP`, `default` when absent.
fn server_cap(
    key: &str,
    value: Option<usize>,
    default: usize,
    problems: &mut Vec<String>,
) -> usize {
    within(
        key,
        value.unwrap_or(default),
        1..=crate::limits::MAX_SERVER_CAP,
        problems,
    )
}

/// `server.header_timeout_s` by the one duration rule, `DEFAULT_HEADER_TIMEOUT` when absent.
fn header_timeout(seconds_given: Option<f64>, problems: &mut Vec<String>) -> Duration {
    seconds(
        "server.header_timeout_s",
        Some(seconds_given.unwrap_or(crate::limits::DEFAULT_HEADER_TIMEOUT.as_secs_f64())),
        crate::limits::DEFAULT_HEADER_TIMEOUT,
        problems,
    )
}

/// The `SEREN_SCC_*` overrides: later wins over the file; a bad value stops the start naming the
/// variable.
pub(super) fn apply_env(
    env: &Env,
    server: &mut Server,
    tls: &mut Tls,
    asked: &mut Asked,
) -> Result<(), ConfigError> {
    if let Some(host) = env.var("SEREN_SCC_HOST") {
        server.host = host.trim().to_owned();
    }
    if let Some(port) = env.var("SEREN_SCC_PORT") {
        server.port = port.trim().parse().map_err(|_| ConfigError::Env {
            name: "SEREN_SCC_PORT",
            message: format!("expected a port number 0..=65535, got {port:?}"),
        })?;
    }
    if let Some(hosts) = env
        .var("SEREN_SCC_ALLOWED_HOSTS")
        .or_else(|| env.var("SEREN_SCC_MCP_ALLOWED_HOSTS"))
    {
        server.allowed_hosts = comma_list(&hosts);
    }
    if let Some(origins) = env.var("SEREN_SCC_ALLOWED_ORIGINS") {
        server.allowed_origins = check_origins(comma_list(&origins).iter().map(String::as_str))
            .map_err(|message| ConfigError::Env {
                name: "SEREN_SCC_ALLOWED_ORIGINS",
                message,
            })?;
    }
    for (name, target) in [
        (BEARER_TOKEN_VAR, &mut asked.inline),
        ("SEREN_SCC_BEARER_TOKEN_KEYRING", &mut asked.keychain),
        ("SEREN_SCC_BEARER_TOKEN_ENV", &mut asked.env),
        ("SEREN_SCC_KEYRING", &mut asked.backend),
    ] {
        if let Some(value) = env.var(name) {
            *target = Some(value);
        }
    }
    for (name, target) in [
        ("SEREN_SCC_ALLOW_OPEN_LAN", &mut server.allow_open_lan),
        ("SEREN_SCC_PUBLIC_METRICS", &mut server.public_metrics),
        ("SEREN_SCC_TRUST_SYSTEM_STORE", &mut tls.trust_system_store),
    ] {
        if let Some(value) = env.var(name) {
            *target = scalar::parse_flag(&value).ok_or_else(|| ConfigError::Env {
                name,
                message: format!("expected 1/true/yes/on or 0/false/no/off, got {value:?}"),
            })?;
        }
    }
    Ok(())
}

/// Reads the inbound token the file and the environment ask for, by the one rule of
/// [`secret::resolve`]. A token that cannot be had is `token_error`, never "no auth".
pub(super) fn resolve_inbound(
    server: &mut Server,
    asked: &Asked,
    pointer: Option<Pointer>,
    keychain: &Keychain,
    env: &Env,
) {
    let inline = match non_blank(&asked.inline).map(Secret::bearer) {
        Some(Err(why)) => {
            server.token_source = TokenSource::Inline;
            server.token_error = Some(format!("server.bearer_token {why}"));
            return;
        }
        Some(Ok(token)) => token,
        None => None,
    };
    let env_name = non_blank(&asked.env);
    server.token_source = match (&inline, &pointer, env_name) {
        (Some(_), _, _) => TokenSource::Inline,
        (None, Some(pointer), _) => TokenSource::Keychain(pointer.clone()),
        (None, None, Some(name)) => TokenSource::Env(name.to_owned()),
        (None, None, None) => TokenSource::None,
    };
    let pointers = Pointers {
        inline: inline.as_ref(),
        keychain: pointer.as_ref(),
        env: env_name,
    };
    match secret::resolve(pointers, keychain, env) {
        Ok(token) => server.token = token,
        Err(missing) => {
            server.token_error = Some(match missing {
                Missing::Keychain(e) => format!("server.bearer_token_keyring: {e}"),
                Missing::EnvUnset(name) => {
                    format!("server.bearer_token_env names {name}, which is not set")
                }
                Missing::EnvUnfit { name, why } => format!("server.bearer_token_env {name} {why}"),
            });
        }
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
        .map(crate::hosts::check_origin_setting)
        .collect()
}

impl Server {
    /// Decides how exposed this bind is (§6 of the contract).
    pub fn exposure(&self) -> Exposure {
        if is_loopback(&self.host) {
            Exposure::Loopback
        } else if self.token.is_some() || self.oauth.is_some() || self.views.any() {
            Exposure::Guarded
        } else if self.allow_open_lan {
            Exposure::OpenByChoice
        } else {
            Exposure::Refused
        }
    }
}
