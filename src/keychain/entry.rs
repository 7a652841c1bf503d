//! A keychain entry: its name ([`Pointer`], `service/user`), the [`Store`] every backend is, why
//! a call failed ([`KeychainError`], naming no secret), and a token read from an entry checked.
//! Opens no backend.

use crate::secret::Secret;
use std::fmt;

/// The service name the callosum files its own tokens under (`seren-corpus-callosum/<store>`).
pub const SERVICE: &str = "seren-corpus-callosum";

/// A keychain entry's name: `service/user`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pointer {
    pub service: String,
    pub user: String,
}

impl Pointer {
    /// Reads `"service/user"`; both parts must be non-empty.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().split_once('/') {
            Some((service, user)) if !service.trim().is_empty() && !user.trim().is_empty() => {
                Ok(Self {
                    service: service.trim().to_owned(),
                    user: user.trim().to_owned(),
                })
            }
            // The value is not quoted: a token pasted here by mistake must not reach a message.
            _ => Err("is not a keychain entry; write \"service/user\"".into()),
        }
    }

    /// The entry the callosum keeps a run-time store's token in.
    pub fn for_store(name: &str) -> Self {
        Self {
            service: SERVICE.to_owned(),
            user: name.to_owned(),
        }
    }

    /// Whether the callosum made this entry (and may delete it with its store).
    pub fn is_ours(&self, store: &str) -> bool {
        self.service == SERVICE && self.user == store
    }
}

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.service, self.user)
    }
}

/// Why a keychain call failed, in words that name no secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeychainError {
    /// No backend could be opened.
    #[error("no keychain is available ({0})")]
    Unavailable(String),
    /// The entry does not exist.
    #[error("keychain entry '{0}' not found")]
    NotFound(Pointer),
    /// The backend refused or failed.
    #[error("keychain entry '{pointer}': {why}")]
    Failed { pointer: Pointer, why: String },
}

/// Where keychain entries live. The OS keychain in the service; tests may bring their own.
pub trait Store: Send + Sync {
    fn get(&self, pointer: &Pointer) -> Result<Secret, KeychainError>;
    fn set(&self, pointer: &Pointer, secret: &Secret) -> Result<(), KeychainError>;
    fn delete(&self, pointer: &Pointer) -> Result<(), KeychainError>;
    /// Whether entries survive a reboot (tokens added at run time are written only then).
    fn persistent(&self) -> bool;
    /// The backend's name, for logs and `check`.
    fn name(&self) -> &'static str;
}

/// A token read from a keychain entry, checked as any bearer token is.
pub(super) fn usable(pointer: &Pointer, text: String) -> Result<Secret, KeychainError> {
    let failed = |why: String| KeychainError::Failed {
        pointer: pointer.clone(),
        why,
    };
    Secret::bearer(text)
        .map_err(failed)?
        .ok_or_else(|| failed("the entry is empty".into()))
}
