//! Why a configuration could not be loaded ([`ConfigError`]): every message names the file, the
//! key or the variable, and several problems are listed one to a line. Finds none of them.

use crate::limits::MAX_CONFIG_BYTES;
use std::fmt;
use std::path::PathBuf;

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
