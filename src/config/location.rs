//! Where the config file and the runtime overlay are: the file's search order and names, `~`
//! expanded, the overlay's path beside the file, and a PostgreSQL overlay url checked. Reads no
//! file.

use super::env::Env;
use crate::secret::Secret;
use std::path::{Path, PathBuf};

/// The file name looked for in the working directory and in the platform config dir.
pub const FILE_NAME: &str = "seren-corpus-callosum.yaml";
/// The overlay's file name, beside the config file.
pub const OVERLAY_FILE_NAME: &str = "runtime-stores.json";

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
pub(super) fn check_overlay_url(url: &str) -> Result<Option<Secret>, String> {
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
