//! The configuration: a YAML file plus `SEREN_SCC_*` environment overrides, parsed once into a
//! validated [`Config`].
//!
//! Parse, don't validate: everything past this module holds checked values (finite weights, a floor
//! within 0..=1, a positive timeout). A file that does not parse, or has a wrong type at a known key,
//! is an error naming the file, the key and the line (serde stops at the first); a value out of
//! range is an error naming the store and the field, and every one in the file is named at once. An
//! unknown key is a warning, never silence: typos must show. Store entries that lack a name, type or
//! url are kept as [`Invalid`] so the roster can report them as skipped.
//!
//! The rooms: `file` (the YAML as written), `store` (one store entry, its name and url rules),
//! `kind` (a store entry's type, by name: what each type does is `store`'s), `secret` (the `Secret`
//! type and where a token comes from), `breaker` and `format` (the settings `health` and the MCP
//! `search` tool run on). This module puts them together with the environment, and owns the
//! environment's rules (a blank variable is no override).
//!
//! It does not read the runtime overlay (see `overlay`) and does not bind stores (see `roster`).

mod breaker;
mod file;
mod format;
mod kind;
mod knob;
mod oauth;
mod scalar;
mod secret;
mod store;
#[cfg(test)]
mod tests;
pub mod trust;

pub use crate::secret::Secret;
pub use breaker::BreakerSettings;
pub use format::TextFormat;
pub use kind::{EntryKind, StoreKind, TypeRules};
pub use secret::{Missing, Pointers};
pub use store::{
    Endpoint, Invalid, Program, RawStoreEntry, StoreEntry, StoreUrl, check_name, weight_and_floor,
};

use crate::keychain::{Keychain, Pointer};
use crate::limits::MAX_CONFIG_BYTES;
use file::{FileFederation, FileServer};
pub use knob::{
    Given, Knob, KnobSeed, Knobs, Override, Reader, Rule, Shaping, TABLE, knob, listed, read_entry,
    read_knobs, supported,
};
pub use oauth::{OAuth, PROTECTED_RESOURCE_PATH};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use store::{checked_seconds, non_blank};

/// The file name looked for in the working directory and in the platform config dir.
pub const FILE_NAME: &str = "seren-corpus-callosum.yaml";
pub use crate::limits::{DEFAULT_MAX_STORES, MAX_MAX_STORES};
/// The overlay's file name, beside the config file.
pub const OVERLAY_FILE_NAME: &str = "runtime-stores.json";

/// Why the configuration could not be loaded. Every message names where the problem is.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is larger than any config file ([`MAX_CONFIG_BYTES`]); it was not read past that.
    #[error(
        "config file {path}: larger than the {} MiB cap on a config file (MAX_CONFIG_BYTES); not read",
        MAX_CONFIG_BYTES / (1024 * 1024)
    )]
    TooLarge { path: PathBuf },
    /// The file is not YAML of the expected shape (serde_yaml names the key, line and column).
    #[error("config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// Values parsed but are out of range: every one of them, one message each.
    #[error("config file {path}: {}", Problems(.messages))]
    Invalid {
        path: PathBuf,
        messages: Vec<String>,
    },
    /// An environment override does not hold a usable value.
    #[error("environment variable {name}: {message}")]
    Env { name: &'static str, message: String },
    /// A config file someone named (`--config`, `SEREN_SCC_CONFIG`) is not there: a typo until
    /// proven otherwise, not an empty federation.
    #[error(
        "config file {path} does not exist ({named_by} names it); check the path, or write a \
         starter file there with `seren-corpus-callosum init -c {path}`"
    )]
    Missing {
        path: PathBuf,
        named_by: &'static str,
    },
}

/// One problem as a sentence; several as a list.
struct Problems<'a>(&'a [String]);

impl fmt::Display for Problems<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [one] => f.write_str(one),
            all => {
                write!(f, "{} problems", all.len())?;
                for problem in all {
                    write!(f, "\n  - {problem}")?;
                }
                Ok(())
            }
        }
    }
}

/// The environment a configuration is read with: the process's, or one a test brings. A variable
/// set to nothing (an unset template variable, `FOO=` in a unit file) reads as unset: it is no
/// override, and it never turns auth off.
#[derive(Clone)]
pub struct Env(Arc<Lookup>);

/// How an [`Env`] finds a variable.
type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

impl Env {
    /// The process's environment.
    pub fn process() -> Self {
        Self::from_fn(|name| std::env::var(name).ok())
    }

    /// No variables at all.
    pub fn none() -> Self {
        Self::from_fn(|_| None)
    }

    /// These variables and no others.
    pub fn of(pairs: &[(&str, &str)]) -> Self {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Self::from_fn(move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    pub fn from_fn(lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Self(Arc::new(lookup))
    }

    /// A variable's value, `None` when it is unset or blank.
    pub fn var(&self, name: &str) -> Option<String> {
        (self.0)(name).filter(|value| !value.trim().is_empty())
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Env(..)")
    }
}

/// Everything the service needs to start, checked.
#[derive(Debug, Clone)]
pub struct Config {
    /// The config file path (it may not exist: a missing file is an empty federation).
    pub path: PathBuf,
    /// Whether that file existed when it was loaded.
    pub exists: bool,
    /// Whether the file was found in the working directory, nobody having named it (no
    /// `--config`, no `SEREN_SCC_CONFIG`). Such a file may have come with a cloned repository, so
    /// unless the user trusts it ([`trust`]) its stores may not run programs or read secrets.
    pub found_in_working_dir: bool,
    /// Whether the trust list holds that file as it was read (its path and the hash of its bytes).
    pub trusted: bool,
    /// Where the runtime overlay lives.
    pub overlay_path: PathBuf,
    /// The runtime overlay in PostgreSQL instead (`server.overlay_url`, `SEREN_SCC_OVERLAY_URL`):
    /// a `postgres://` url, which may hold a password.
    pub overlay_url: Option<Secret>,
    pub server: Server,
    pub tls: Tls,
    pub federation: Federation,
    /// The keychain `*_keyring` pointers are read from (opened on first use).
    pub keychain: Arc<Keychain>,
    /// The environment it was read with; store tokens named by `token_env` are read from it.
    pub env: Env,
    /// Whether `SEREN_SCC_RUNTIME_STORES` chose the overlay's path.
    pub overlay_from_env: bool,
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
    /// The knobs as the file sets them (the table's defaults for those it does not): the RRF
    /// settings and how the fused list is shaped into the packet a model reads (pages, quota,
    /// authority, edges, hops). The defaults are plain RRF.
    pub knobs: Knobs,
    /// The per-store circuit breaker.
    pub breaker: BreakerSettings,
    /// The most stores the roster holds (config and overlay together); more are skipped, and a
    /// run-time add is refused.
    pub max_stores: usize,
    /// The config file's stores, in file order.
    pub stores: Vec<Result<StoreEntry, Invalid>>,
}

/// Picks the config file: `--config`, else `$SEREN_SCC_CONFIG`, else `./seren-corpus-callosum.yaml`
/// when it exists, else the platform config dir's file. When neither file exists the platform path
/// is used, so that the overlay of a service started from any working directory (an MCP host spawns
/// us wherever it likes) lands in one stable place.
pub fn resolve_path(explicit: Option<&Path>, env: &Env) -> PathBuf {
    if let Some(path) = explicit {
        return expand_home(path);
    }
    if let Some(path) = env.var("SEREN_SCC_CONFIG") {
        return expand_home(Path::new(path.trim()));
    }
    let local = PathBuf::from(FILE_NAME);
    if local.exists() {
        return local;
    }
    platform_path()
}

/// The platform config dir's file (`~/.config/seren-corpus-callosum/seren-corpus-callosum.yaml`
/// on Linux), else the working directory's: where `init` writes when nobody names a path.
pub fn platform_path() -> PathBuf {
    match directories::ProjectDirs::from("", "", "seren-corpus-callosum") {
        Some(dirs) => dirs.config_dir().join(FILE_NAME),
        None => PathBuf::from(FILE_NAME),
    }
}

/// Who named the config file, when someone did: `--config`, else `SEREN_SCC_CONFIG`.
pub fn named_by(explicit: Option<&Path>, env: &Env) -> Option<&'static str> {
    if explicit.is_some() {
        Some("--config")
    } else if env.var("SEREN_SCC_CONFIG").is_some() {
        Some("SEREN_SCC_CONFIG")
    } else {
        None
    }
}

/// The commented starter config `init` writes: every store example commented out, so it loads
/// as a valid federation of no stores.
pub const STARTER: &str = include_str!("starter.yaml");

fn expand_home(path: &Path) -> PathBuf {
    if let Ok(rest) = path.strip_prefix("~")
        && let Some(dirs) = directories::BaseDirs::new()
    {
        return dirs.home_dir().join(rest);
    }
    path.to_path_buf()
}

/// Checks a PostgreSQL overlay url: `postgres://` or `postgresql://`, one this build can use.
/// Worded without the url (it may hold a password).
fn check_overlay_url(url: &str) -> Result<Option<Secret>, String> {
    let url = url.trim();
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err("expected a postgres:// or postgresql:// url".into());
    }
    #[cfg(feature = "postgres")]
    {
        let config: tokio_postgres::Config = url.parse().map_err(|e: tokio_postgres::Error| {
            format!("not a PostgreSQL url this client reads: {e}")
        })?;
        if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
            return Err("sslmode=require is not supported: this build connects without TLS (use a TLS tunnel to a remote server, or sslmode=disable on a private network)".into());
        }
        Ok(Secret::new(url))
    }
    #[cfg(not(feature = "postgres"))]
    Err("this build has no PostgreSQL overlay (it was built without the `postgres` feature)".into())
}

impl Config {
    /// Where the overlay lives, as logs and `GET /knobs` may show it: the file's path, or the
    /// PostgreSQL url without its password.
    pub fn overlay_shown(&self) -> String {
        match &self.overlay_url {
            None => self.overlay_path.display().to_string(),
            Some(url) => url::Url::parse(url.expose())
                .map_or_else(|_| "postgres://***".to_owned(), |url| store::shown(&url)),
        }
    }
}

/// Where the overlay lives: `$SEREN_SCC_RUNTIME_STORES`, else beside the config path.
pub fn overlay_path(config_path: &Path, env: &Env) -> PathBuf {
    if let Some(path) = env.var("SEREN_SCC_RUNTIME_STORES") {
        return expand_home(Path::new(path.trim()));
    }
    match config_path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(OVERLAY_FILE_NAME),
        _ => PathBuf::from(OVERLAY_FILE_NAME),
    }
}

/// The inbound token's pointers as the file and the environment name them, before they are read.
#[derive(Default)]
struct Asked {
    inline: Option<String>,
    keychain: Option<String>,
    env: Option<String>,
    /// Which keychain backend (`server.keyring`).
    backend: Option<String>,
}

impl Config {
    /// Loads the configuration from the resolved path and the process environment.
    pub fn load(explicit: Option<&Path>) -> Result<Self, ConfigError> {
        let env = Env::process();
        let path = resolve_path(explicit, &env);
        if let Some(named_by) = named_by(explicit, &env)
            && !path.exists()
        {
            return Err(ConfigError::Missing { path, named_by });
        }
        Self::load_found(explicit, path, &env)
    }

    /// [`Config::load`], with a named file that is not there read as no file at all (`demo`,
    /// whose sample stores need no config).
    pub fn load_or_empty(explicit: Option<&Path>) -> Result<Self, ConfigError> {
        let env = Env::process();
        let path = resolve_path(explicit, &env);
        Self::load_found(explicit, path, &env)
    }

    fn load_found(explicit: Option<&Path>, path: PathBuf, env: &Env) -> Result<Self, ConfigError> {
        let found = explicit.is_none()
            && env.var("SEREN_SCC_CONFIG").is_none()
            && path == Path::new(FILE_NAME);
        let trust_list = found.then(trust::list_path).flatten();
        Self::load_with(&path, env, None, trust_list.as_deref().map(Some))
    }

    /// Loads from `path` with `env` as the environment; tests pass their own environment.
    pub fn load_from(path: &Path, env: &Env) -> Result<Self, ConfigError> {
        Self::load_with(path, env, None, None)
    }

    /// [`Config::load_from`] for a file found in the working directory, trusted as the list at
    /// `trust_list` says (`None`: no list at hand, nothing trusted).
    pub fn load_found_from(
        path: &Path,
        env: &Env,
        trust_list: Option<&Path>,
    ) -> Result<Self, ConfigError> {
        Self::load_with(path, env, None, Some(trust_list))
    }

    /// Whether the file was found by search and is not trusted: its stores may not read
    /// `token_env` or `token_keyring`, nor run a program.
    pub fn untrusted(&self) -> bool {
        self.found_in_working_dir && !self.trusted
    }

    /// Why an untrusted file's store is not bound, and how to trust the file: `what` is what it
    /// may not do.
    pub fn untrusted_reason(&self, what: &str) -> String {
        format!(
            "{} was found in the working directory and is not trusted to {what}; if the file is \
             yours, run `seren-corpus-callosum trust` there, or name it with --config or \
             SEREN_SCC_CONFIG",
            self.path.display()
        )
    }

    /// Reads this config's file again, as it now stands, with the same environment and keychain
    /// (a reload). Checked in full: any problem is an error and the caller keeps this one.
    ///
    /// A file that was there and is gone is an error too, not an empty config: a file deleted on
    /// the way to being written again must not unbind every store meanwhile.
    pub fn reread(&self) -> Result<Self, ConfigError> {
        if self.exists && !self.path.exists() {
            return Err(ConfigError::Parse {
                path: self.path.clone(),
                message: "the file is gone; the config last loaded stays in force (write the file again, or restart to run without one)".into(),
            });
        }
        // An edit needs trust again: the file's new bytes are looked up afresh.
        let found = self.found_in_working_dir.then(trust::list_path);
        Self::load_with(
            &self.path,
            &self.env,
            Some(self.keychain.clone()),
            found.as_ref().map(Option::as_deref),
        )
    }

    /// `found`: the file was found by search, to be trusted as the list there says (`Some(None)`:
    /// no list at hand).
    fn load_with(
        path: &Path,
        env: &Env,
        keychain: Option<Arc<Keychain>>,
        found: Option<Option<&Path>>,
    ) -> Result<Self, ConfigError> {
        let text = read_capped(path)?;
        let exists = text.is_some();
        let mut config = Self::parse_with(path, text.as_deref().unwrap_or(""), env, keychain)?;
        config.exists = exists;
        if let Some(list) = found {
            config.found_in_working_dir = true;
            config.trusted = match (list, text.as_deref()) {
                (Some(list), Some(text)) => trust::holds(list, path, text.as_bytes())
                    .unwrap_or_else(|why| {
                        config.warnings.push(why);
                        false
                    }),
                _ => false,
            };
        }
        Ok(config)
    }

    /// Parses `text` as the file at `path` (the path is used for messages and the overlay).
    pub fn parse(path: &Path, text: &str, env: &Env) -> Result<Self, ConfigError> {
        Self::parse_with(path, text, env, None)
    }

    /// As [`Config::parse`], reading keychain pointers from `keychain` (tests bring their own)
    /// instead of the backend `server.keyring` names.
    pub fn parse_with(
        path: &Path,
        text: &str,
        env: &Env,
        keychain: Option<Arc<Keychain>>,
    ) -> Result<Self, ConfigError> {
        let mut warnings = Vec::new();
        let file = file::read(path, text, &mut warnings).map_err(|message| ConfigError::Parse {
            path: path.to_owned(),
            message,
        })?;
        let mut problems = Vec::new();
        let federation = read_federation(file.federation, path, &mut problems, &mut warnings);
        let mut overlay_url = file.server.overlay_url.clone();
        let (mut server, mut asked) = read_server(file.server, path, &mut problems, &mut warnings);
        let mut tls = Tls {
            trust_system_store: file.tls.trust_system_store.is_some_and(|f| f.0),
        };
        apply_env(env, &mut server, &mut tls, &mut asked)?;
        if let Some(url) = env.var("SEREN_SCC_OVERLAY_URL") {
            overlay_url = Some(url);
        }
        let overlay_url = match non_blank(&overlay_url) {
            None => None,
            Some(url) => check_overlay_url(url).unwrap_or_else(|why| {
                problems.push(format!("server.overlay_url: {why}"));
                None
            }),
        };
        let keychain = match keychain {
            Some(keychain) => keychain,
            None => {
                let name = asked.backend.as_deref().unwrap_or("");
                let backend = crate::keychain::Backend::parse(name).unwrap_or_else(|why| {
                    problems.push(format!("server.keyring: {why}"));
                    crate::keychain::Backend::None
                });
                Arc::new(Keychain::new(backend))
            }
        };
        let pointer = match non_blank(&asked.keychain) {
            None => None,
            Some(text) => Pointer::parse(text)
                .map_err(|why| problems.push(format!("server.bearer_token_keyring {why}")))
                .ok(),
        };
        if !problems.is_empty() {
            return Err(ConfigError::Invalid {
                path: path.to_owned(),
                messages: problems,
            });
        }
        resolve_inbound(&mut server, &asked, pointer, &keychain, env);
        Ok(Config {
            path: path.to_owned(),
            exists: false,
            found_in_working_dir: false,
            trusted: false,
            overlay_path: overlay_path(path, env),
            overlay_url,
            overlay_from_env: env.var("SEREN_SCC_RUNTIME_STORES").is_some(),
            server,
            tls,
            federation,
            keychain,
            env: env.clone(),
            warnings,
        })
    }

    /// A store's outbound token, by the one rule of [`secret::resolve`]; the reason when its
    /// pointer leads nowhere, worded for the store's `skipped` entry. Blocks on the keychain.
    pub fn store_token(&self, entry: &StoreEntry) -> Result<Option<Secret>, String> {
        // A file found by search names pointers only once trusted: it could name any variable or
        // entry, and the url it goes to.
        if self.untrusted() && entry.token.is_none() {
            let pointer = match (&entry.token_keyring, &entry.token_env) {
                (Some(_), _) => Some("token_keyring"),
                (None, Some(_)) => Some("token_env"),
                (None, None) => None,
            };
            if let Some(key) = pointer {
                return Err(format!(
                    "not called: {}",
                    self.untrusted_reason(&format!("read its {key}"))
                ));
            }
        }
        let pointers = Pointers {
            inline: entry.token.as_ref(),
            keychain: entry.token_keyring.as_ref(),
            env: entry.token_env.as_deref(),
        };
        secret::resolve(pointers, &self.keychain, &self.env).map_err(|missing| match missing {
            Missing::Keychain(e) => format!("token_keyring: {e}"),
            Missing::EnvUnset(name) => format!("token_env {name} is not set"),
            Missing::EnvUnfit { name, why } => format!("token_env {name} {why}"),
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

    /// The settings `new` sets otherwise than this config that only a start applies, by their
    /// YAML names: every `server:` and `tls:` setting (the listener, the token and the guard are
    /// built once), and the breaker's (every store's circuit runs on them).
    pub fn needs_restart(&self, new: &Config) -> Vec<String> {
        // Taken apart field by field, so a `server:` setting added later does not compile until
        // it is named here: `keep_start_settings` keeps the whole block, and a setting it kept
        // without saying so would look live and be ignored.
        let Server {
            host,
            port,
            token,
            token_error,
            token_source,
            allow_open_lan,
            public_metrics,
            allowed_hosts,
            allowed_origins,
            max_connections,
            max_in_flight,
            header_timeout,
            mcp_format,
            access_log,
            watch,
            log_queries,
            oauth,
        } = &self.server;
        let b = &new.server;
        let same_token = token.as_ref().map(Secret::expose) == b.token.as_ref().map(Secret::expose)
            && *token_source == b.token_source
            && *token_error == b.token_error;
        let checks = [
            ("server.host", *host != b.host),
            ("server.port", *port != b.port),
            ("server.bearer_token", !same_token),
            ("server.allow_open_lan", *allow_open_lan != b.allow_open_lan),
            ("server.public_metrics", *public_metrics != b.public_metrics),
            ("server.allowed_hosts", *allowed_hosts != b.allowed_hosts),
            (
                "server.allowed_origins",
                *allowed_origins != b.allowed_origins,
            ),
            (
                "server.max_connections",
                *max_connections != b.max_connections,
            ),
            ("server.max_in_flight", *max_in_flight != b.max_in_flight),
            ("server.oauth", *oauth != b.oauth),
            (
                "server.header_timeout_s",
                *header_timeout != b.header_timeout,
            ),
            ("server.mcp_format", *mcp_format != b.mcp_format),
            ("server.access_log", *access_log != b.access_log),
            ("server.watch", *watch != b.watch),
            ("server.log_queries", *log_queries != b.log_queries),
            (
                "server.overlay_url",
                self.overlay_url.as_ref().map(Secret::expose)
                    != new.overlay_url.as_ref().map(Secret::expose),
            ),
            (
                "tls.trust_system_store",
                self.tls.trust_system_store != new.tls.trust_system_store,
            ),
            (
                "federation.breaker_*",
                self.federation.breaker != new.federation.breaker,
            ),
        ];
        checks
            .into_iter()
            .filter(|(_, differs)| *differs)
            .map(|(name, _)| name.to_owned())
            .collect()
    }

    /// Copies the start-only settings (see [`Config::needs_restart`]) from `running` into this
    /// config, so a reloaded config changes only what can change live.
    pub fn keep_start_settings(&mut self, running: &Config) {
        self.overlay_url = running.overlay_url.clone();
        self.server = running.server.clone();
        self.tls = running.tls.clone();
        self.federation.breaker = running.federation.breaker;
        self.keychain = running.keychain.clone();
    }

    /// An empty configuration (no file, no environment): every default.
    pub fn empty(path: &Path) -> Self {
        // Parsing an empty document with an empty environment cannot fail: every default is valid.
        Self::parse(path, "", &Env::none()).expect("the defaults are a valid configuration")
    }
}

/// The config file's text, `None` when there is no file. Read through a bounded reader that stops
/// one byte past [`MAX_CONFIG_BYTES`], so a huge file (or a device that never ends) costs a
/// mebibyte, not its size; a file past the cap is refused, unread past it.
fn read_capped(path: &Path) -> Result<Option<String>, ConfigError> {
    use std::io::Read;
    let failed = |source| ConfigError::Read {
        path: path.to_owned(),
        source,
    };
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(failed(source)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge {
            path: path.to_owned(),
        });
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| failed(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

/// Checks a number against a range, naming the key when it is out of it.
fn within<T: PartialOrd + fmt::Display + Copy>(
    key: &str,
    value: T,
    range: std::ops::RangeInclusive<T>,
    problems: &mut Vec<String>,
) -> T {
    if !range.contains(&value) {
        problems.push(format!(
            "{key} must be within {}..={}, got {value}",
            range.start(),
            range.end()
        ));
    }
    value
}

/// Seconds read as a duration by the one rule ([`store::checked_seconds`]), or the default (and a
/// problem naming `key`) when out of its range.
fn seconds(
    key: &str,
    value: Option<f64>,
    default: Duration,
    problems: &mut Vec<String>,
) -> Duration {
    match value {
        None => default,
        Some(s) => checked_seconds(s).unwrap_or_else(|why| {
            problems.push(format!("{key} {why}"));
            default
        }),
    }
}

/// The `federation:` block, checked; every problem is noted, the defaults stand in for them.
fn read_federation(
    f: FileFederation,
    path: &Path,
    problems: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Federation {
    let knobs = read_knobs(&f.knobs, &Knobs::default(), "federation.", problems);
    let breaker = breaker::read(
        f.breaker_failures,
        (f.breaker_cooldown_s, f.breaker_max_cooldown_s),
        problems,
    );
    let max_stores = within(
        "federation.max_stores",
        f.max_stores.unwrap_or(DEFAULT_MAX_STORES),
        1..=MAX_MAX_STORES,
        problems,
    );
    let stores = read_stores(f.stores.unwrap_or_default(), path, problems, warnings);
    if stores.len() > max_stores {
        warnings.push(format!(
            "{}: {} stores but federation.max_stores is {max_stores}: the ones past it are skipped",
            path.display(),
            stores.len()
        ));
    }
    Federation {
        knobs,
        breaker,
        max_stores,
        stores,
    }
}

/// The file's store entries, in order: each checked, and warned about for what it holds that its
/// type does not read.
fn read_stores(
    raw: Vec<RawStoreEntry>,
    path: &Path,
    problems: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Vec<Result<StoreEntry, Invalid>> {
    let mut stores = Vec::new();
    for (i, raw) in raw.into_iter().enumerate() {
        let place = format!("federation.stores[{i}]");
        for key in &raw.dropped {
            warnings.push(format!("{}: {place}: '{key}' ignored", path.display()));
        }
        let entry = match raw.check(&place) {
            Ok(entry) => entry,
            Err(problem) => {
                problems.push(problem);
                continue;
            }
        };
        if let Ok(entry) = &entry
            && let EntryKind::Known(kind) = entry.kind
        {
            if let Err(why) = kind.check_options(&entry.options) {
                problems.push(format!("store '{}': {why}", entry.name));
                continue;
            }
            let known = kind.options();
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
    stores
}

/// The `server:` block, checked, and the inbound token's pointers as the file names them.
fn read_server(
    s: FileServer,
    path: &Path,
    problems: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> (Server, Asked) {
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
        header_timeout: header_timeout(s.header_timeout_s, problems),
        mcp_format: format::read(s.mcp_format.as_deref(), problems),
        access_log: s.access_log.is_none_or(|f| f.0),
        watch: s.watch.is_none_or(|f| f.0),
        log_queries: s.log_queries.is_some_and(|f| f.0),
        oauth: s.oauth.and_then(|block| oauth::read(block, problems)),
    };
    let asked = Asked {
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
fn apply_env(
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
        ("SEREN_SCC_BEARER_TOKEN", &mut asked.inline),
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
fn resolve_inbound(
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

/// Reads a `server.host` as loopback when it is `localhost`, `::1` or any `127.*` address.
pub fn is_loopback(host: &str) -> bool {
    let host = crate::hosts::host_of(host);
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
    /// Open to the network, behind a token (the static one, or the authorization server's).
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
        } else if self.token.is_some() || self.oauth.is_some() {
            Exposure::Guarded
        } else if self.allow_open_lan {
            Exposure::OpenByChoice
        } else {
            Exposure::Refused
        }
    }
}
