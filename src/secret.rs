//! [`Secret`]: a token or password whose `Debug` never shows the value. Below everything that
//! holds one (the configuration, the keychain, the store calls, the auth layer), so that none of
//! them imports another for it.

use std::fmt;

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

/// Compares without an early exit (`subtle`), so the time taken does not tell how much of a guess
/// was right. (The length is not hidden; a token's length is not the secret.)
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.ct_eq(b).into()
}
