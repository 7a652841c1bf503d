//! The one rule for where a token comes from (inline, then the OS keychain, then a named
//! variable, failing closed), for the inbound token and every store's alike.

use super::env::Env;
use crate::keychain::{Keychain, KeychainError, Pointer};
use crate::secret::Secret;

/// Where a token may come from, as an entry names them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pointers<'a> {
    pub inline: Option<&'a Secret>,
    pub keychain: Option<&'a Pointer>,
    /// The name of an environment variable.
    pub env: Option<&'a str>,
}

/// Why a token an entry names could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// The keychain entry cannot be read.
    Keychain(KeychainError),
    /// The variable is not set.
    EnvUnset(String),
    /// The variable holds something a bearer header cannot carry.
    EnvUnfit { name: String, why: String },
}

/// The token `pointers` lead to: inline first, then the keychain, then the variable, as in the
/// Python family. Unlike Python it fails closed: a pointer that leads nowhere is an error, never
/// "no token" (and never the next pointer in line).
pub fn resolve(
    pointers: Pointers<'_>,
    keychain: &Keychain,
    env: &Env,
) -> Result<Option<Secret>, Missing> {
    if let Some(token) = pointers.inline {
        return Ok(Some(token.clone()));
    }
    if let Some(pointer) = pointers.keychain {
        return keychain.get(pointer).map(Some).map_err(Missing::Keychain);
    }
    let Some(name) = pointers.env else {
        return Ok(None);
    };
    match env.var(name).map(Secret::bearer) {
        Some(Ok(Some(token))) => Ok(Some(token)),
        Some(Err(why)) => Err(Missing::EnvUnfit {
            name: name.to_owned(),
            why,
        }),
        _ => Err(Missing::EnvUnset(name.to_owned())),
    }
}
