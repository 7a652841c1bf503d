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
//! `kind` (a store entry's type, by name: what each type does is `store`'s), `secret` (where a
//! token comes from), `server` and `federation` (those blocks, checked; `server` with its
//! environment overrides and the inbound token), `breaker` and `format` (the settings `health` and
//! the MCP `search` tool run on), `telemetry` (where traces go, with the `OTEL_*` variables beside
//! it), `range` (a number against its range), `env` (the environment and
//! its rule that a blank variable is no override), `location` (where the file and the overlay
//! are), `exposure` (how exposed a bind is), `error` (why a load failed). This module puts them
//! together: it loads, reloads and compares a `Config`, and reads a store's token for the roster.
//!
//! It does not read the runtime overlay (see `overlay`) and does not bind stores (see `roster`).

mod breaker;
mod env;
mod error;
mod exposure;
mod federation;
mod file;
mod format;
mod kind;
mod knob;
mod location;
mod oauth;
mod range;
mod scalar;
mod secret;
mod server;
mod store;
mod telemetry;
#[cfg(test)]
mod tests;
pub mod trust;
mod views;

pub use crate::limits::{DEFAULT_MAX_STORES, MAX_MAX_STORES};

/// The audit trail's file name beside the overlay, when `server.audit_log` does not say.
pub const AUDIT_FILE_NAME: &str = "audit.jsonl";
pub use crate::secret::Secret;
pub use breaker::BreakerSettings;
pub use env::Env;
pub use error::ConfigError;
pub use exposure::{Exposure, is_loopback};
pub use federation::Federation;
pub use format::TextFormat;
pub use kind::{EntryKind, StoreKind, TypeRules};
pub use knob::{
    Given, Knob, KnobSeed, Knobs, Override, Reader, Rule, Shaping, TABLE, knob, listed, read_entry,
    read_knobs, supported,
};
pub use location::{
    FILE_NAME, OVERLAY_FILE_NAME, named_by, overlay_path, platform_path, resolve_path,
};
pub use oauth::{OAuth, PROTECTED_RESOURCE_PATH};
pub use secret::{Missing, Pointers};
pub use server::{BEARER_TOKEN_VAR, Server, Tls, TokenSource};
pub use store::{
    Endpoint, Invalid, Program, RawStoreEntry, StoreEntry, StoreUrl, check_name, weight_and_floor,
};
pub use telemetry::{DEFAULT_SERVICE_NAME, Telemetry};
pub use views::{ViewEntry, Views};

use crate::keychain::{Keychain, Pointer};
use crate::limits::MAX_CONFIG_BYTES;
use location::check_overlay_url;
use server::{apply_env, resolve_inbound};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use store::non_blank;

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
    /// Traces (`telemetry:`, contract §6d); `None`: no endpoint, no exporter, no span made.
    pub telemetry: Option<Telemetry>,
    /// The keychain `*_keyring` pointers are read from (opened on first use).
    pub keychain: Arc<Keychain>,
    /// The environment it was read with; store tokens named by `token_env` are read from it.
    pub env: Env,
    /// Whether `SEREN_SCC_RUNTIME_STORES` chose the overlay's path.
    pub overlay_from_env: bool,
    /// Warnings found while loading (unknown keys, unused options), for the caller to log once.
    pub warnings: Vec<String>,
}

/// The commented starter config `init` writes: every store example commented out, so it loads
/// as a valid federation of no stores.
pub const STARTER: &str = include_str!("starter.yaml");

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

    /// Where the audit trail goes (contract §6c): `server.audit_log` (a relative path is taken
    /// from the config file's folder), else `audit.jsonl` beside the overlay.
    pub fn audit_path(&self) -> PathBuf {
        match &self.server.audit_log {
            Some(path) if path.is_relative() => {
                (self.path.parent()).unwrap_or(Path::new(".")).join(path)
            }
            Some(path) => path.clone(),
            None => (self.overlay_path.parent())
                .unwrap_or(Path::new("."))
                .join(AUDIT_FILE_NAME),
        }
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
        let federation = federation::read(file.federation, path, &mut problems, &mut warnings);
        let mut overlay_url = file.server.overlay_url.clone();
        let store_names: Vec<&str> = (federation.stores.iter())
            .map(|entry| match entry {
                Ok(entry) => entry.name.as_str(),
                Err(invalid) => invalid.name.as_str(),
            })
            .collect();
        let (mut server, mut asked) = server::read(
            file.server,
            path,
            &store_names,
            &mut problems,
            &mut warnings,
        );
        let mut tls = Tls {
            trust_system_store: file.tls.trust_system_store.is_some_and(|f| f.0),
        };
        apply_env(env, &mut server, &mut tls, &mut asked)?;
        let telemetry = telemetry::read(file.telemetry, env, &mut problems, &mut warnings)?;
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
        let views_asked = std::mem::take(&mut asked.views);
        views::resolve(
            &mut server.views,
            views_asked,
            server.token.as_ref(),
            &keychain,
            env,
        )
        .map_err(|messages| ConfigError::Invalid {
            path: path.to_owned(),
            messages,
        })?;
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
            telemetry,
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
    /// built once), the breaker's (every store's circuit runs on them), and `telemetry:` (the
    /// exporter is built once).
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
            max_calls_per_store,
            header_timeout,
            mcp_format,
            access_log,
            watch,
            log_queries,
            oauth,
            views,
            audit_log,
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
            (
                "server.max_calls_per_store",
                *max_calls_per_store != b.max_calls_per_store,
            ),
            ("server.oauth", *oauth != b.oauth),
            ("server.views", *views != b.views),
            ("server.audit_log", *audit_log != b.audit_log),
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
            ("telemetry", self.telemetry != new.telemetry),
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
        self.telemetry = running.telemetry.clone();
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
