//! The OS keychain: where `*_keyring` token pointers are read, and where tokens given to
//! `POST /stores` are kept instead of the overlay file.
//!
//! A pointer is `"service/user"` (split at the first `/`), as the Python family writes it. The
//! backend is the platform's own store, so the callosum reads what Python's `keyring` wrote: the
//! Secret Service on Linux and the BSDs (GNOME Keyring, KWallet, KeePassXC), the login Keychain
//! on macOS (through `/usr/bin/security`: `keychain/login.rs`), the Credential Manager on
//! Windows. A headless Linux box has no Secret Service; there the
//! kernel's key retention service (keyutils, the user keyring) is used for reads. `SEREN_SCC_KEYRING` (or
//! `server.keyring`) picks a backend by name instead.
//!
//! Writes go only to a backend that outlives a reboot: the kernel keyring is memory and a token put
//! there would be gone at the next boot, so with it a token added at run time stays inline in the
//! overlay (mode 0600), unless the operator named `keyutils` explicitly.
//!
//! Every call blocks (D-Bus, the kernel, a system API): async callers run it on a blocking thread.
//! Messages name the pointer and the reason, never the secret. What an entry is (its pointer, the
//! `Store` a backend is, the errors) is `keychain/entry.rs`'s; this module opens a backend and
//! keeps what was read.

mod entry;
#[cfg(any(target_os = "macos", all(test, unix)))]
mod login;

pub use entry::{KeychainError, Pointer, SERVICE, Store};

use crate::secret::Secret;
#[cfg(not(target_os = "macos"))]
use entry::usable;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

/// Which backend to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The platform's store; on Linux the Secret Service when the session bus has one, else keyutils.
    Auto,
    SecretService,
    Keyutils,
    /// The macOS Keychain.
    Keychain,
    /// The Windows Credential Manager.
    Windows,
    /// No keychain: pointers cannot be read, tokens given at run time stay inline.
    None,
}

impl Backend {
    /// Reads a backend name (`auto`, `secret-service`, `keyutils`, `keychain`, `windows`, `none`).
    pub fn parse(name: &str) -> Result<Self, String> {
        Ok(match name.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Self::Auto,
            "secret-service" | "secretservice" => Self::SecretService,
            "keyutils" => Self::Keyutils,
            "keychain" | "macos" => Self::Keychain,
            "windows" => Self::Windows,
            "none" | "off" => Self::None,
            other => {
                return Err(format!(
                    "unknown keychain {other:?}; one of auto, secret-service, keyutils, keychain, windows, none"
                ));
            }
        })
    }
}

/// The keychain handle the configuration carries: a backend opened on first use, and the tokens
/// already read (a roster change rebinds every store; it does not ask the keychain again).
pub struct Keychain {
    backend: Backend,
    opened: OnceLock<Result<Arc<dyn Store>, String>>,
    /// Every read's outcome, failures included: a roster change rebinds every store and must not
    /// ask a keychain (which may prompt) again for each; a fixed entry is read at the next start.
    read: Mutex<HashMap<Pointer, Result<Secret, KeychainError>>>,
}

impl fmt::Debug for Keychain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keychain")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl Keychain {
    /// A keychain on `backend`, opened when first used.
    pub fn new(backend: Backend) -> Self {
        Self {
            backend,
            opened: OnceLock::new(),
            read: Mutex::new(HashMap::new()),
        }
    }

    /// A keychain over a store the caller brings (tests).
    pub fn with_store(store: Arc<dyn Store>) -> Self {
        let keychain = Self::new(Backend::Auto);
        // A fresh OnceLock is empty, so this set cannot fail.
        let _ = keychain.opened.set(Ok(store));
        keychain
    }

    fn store(&self) -> Result<&Arc<dyn Store>, KeychainError> {
        self.opened
            .get_or_init(|| open(self.backend))
            .as_ref()
            .map_err(|why| KeychainError::Unavailable(why.clone()))
    }

    /// The backend's name, or why there is none.
    pub fn describe(&self) -> String {
        match self.store() {
            Ok(store) => store.name().to_owned(),
            Err(e) => e.to_string(),
        }
    }

    /// Reads a token, once per process (see `read`). Blocks.
    pub fn get(&self, pointer: &Pointer) -> Result<Secret, KeychainError> {
        if let Some(read) = self.cache().get(pointer) {
            return read.clone();
        }
        let read = self.store().and_then(|store| store.get(pointer));
        self.cache().insert(pointer.clone(), read.clone());
        read
    }

    /// Writes an entry (what `keyring set` does in Python's CLI). Blocks.
    pub fn set(&self, pointer: &Pointer, secret: &Secret) -> Result<(), KeychainError> {
        self.store()?.set(pointer, secret)?;
        self.cache().insert(pointer.clone(), Ok(secret.clone()));
        Ok(())
    }

    /// Keeps a token for a store added at run time: `Ok(Some(pointer))` when it is in the
    /// keychain, `Ok(None)` when no persistent keychain is at hand, or when the entry already
    /// holds a different token (another process's store of that name, say: it is not overwritten).
    /// The caller keeps the token inline then. Blocks.
    pub fn keep(
        &self,
        store_name: &str,
        secret: &Secret,
    ) -> Result<Option<Pointer>, KeychainError> {
        let store = match self.store() {
            Ok(store) if store.persistent() || self.backend == Backend::Keyutils => store,
            _ => return Ok(None),
        };
        let pointer = Pointer::for_store(store_name);
        match store.get(&pointer) {
            Ok(held) if held != *secret => return Ok(None),
            Ok(_) | Err(KeychainError::NotFound(_)) => {}
            Err(other) => return Err(other),
        }
        self.set(&pointer, secret)?;
        Ok(Some(pointer))
    }

    /// Deletes an entry the callosum made. A missing entry is not an error. Blocks.
    pub fn forget(&self, pointer: &Pointer) -> Result<(), KeychainError> {
        self.cache().remove(pointer);
        match self.store()?.delete(pointer) {
            Err(KeychainError::NotFound(_)) => Ok(()),
            other => other,
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<Pointer, Result<Secret, KeychainError>>> {
        // Only whole inserts and removes happen under this lock: a poisoned map is still whole.
        self.read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Opens a backend, or says why it could not.
fn open(backend: Backend) -> Result<Arc<dyn Store>, String> {
    #[cfg(not(target_os = "macos"))]
    let os = |store: Result<Arc<keyring_core::CredentialStore>, keyring_core::Error>,
              name: &'static str,
              persistent: bool| {
        store
            .map(|store| {
                Arc::new(Os {
                    store,
                    name,
                    persistent,
                }) as Arc<dyn Store>
            })
            .map_err(|e| format!("{name}: {}", words(&e)))
    };
    match backend {
        Backend::None => Err("server.keyring is none".into()),
        #[cfg(all(
            unix,
            not(any(target_os = "macos", target_os = "ios", target_os = "android"))
        ))]
        Backend::SecretService => os(
            zbus_secret_service_keyring_store::Store::new().map(|s| s as _),
            "Secret Service",
            true,
        ),
        #[cfg(target_os = "linux")]
        Backend::Keyutils => Ok(Arc::new(kernel::UserKeyring) as Arc<dyn Store>),
        #[cfg(target_os = "macos")]
        Backend::Keychain => Ok(Arc::new(login::LoginKeychain::system()) as Arc<dyn Store>),
        #[cfg(target_os = "windows")]
        Backend::Windows => os(
            windows_native_keyring_store::Store::new().map(|s| s as _),
            "Windows Credential Manager",
            true,
        ),
        Backend::Auto => open_auto(),
        #[allow(unreachable_patterns)]
        other => Err(format!("{other:?} is not available on this platform")),
    }
}

/// The platform's own store: the Keychain on macOS, the Credential Manager on Windows; on Linux
/// and the BSDs the Secret Service when the session bus has one, else (Linux) the kernel keyring.
fn open_auto() -> Result<Arc<dyn Store>, String> {
    #[cfg(target_os = "macos")]
    return open(Backend::Keychain);
    #[cfg(target_os = "windows")]
    return open(Backend::Windows);
    #[cfg(all(
        unix,
        not(any(target_os = "macos", target_os = "ios", target_os = "android"))
    ))]
    {
        let secret_service = open(Backend::SecretService);
        #[cfg(target_os = "linux")]
        if let Err(why) = &secret_service {
            tracing::debug!(%why, "no Secret Service; using the kernel keyring");
            return open(Backend::Keyutils);
        }
        return secret_service;
    }
    #[allow(unreachable_code)]
    Err("this platform has no keychain the callosum knows".into())
}

/// A backend of the keyring crates (not on macOS: `login.rs` is the Keychain there).
#[cfg(not(target_os = "macos"))]
struct Os {
    store: Arc<keyring_core::CredentialStore>,
    name: &'static str,
    persistent: bool,
}

#[cfg(not(target_os = "macos"))]
impl Os {
    /// The entries a pointer may name, in the order Python's `keyring` looks them up.
    fn entries(&self, pointer: &Pointer) -> Result<Vec<keyring_core::Entry>, KeychainError> {
        let failed = |e: keyring_core::Error| failure(pointer, &e);
        // Python's Windows backend files an entry under the target name `service` (when it was the
        // first for that service) or `user@service`; the keyring crate's default is `user.service`.
        #[cfg(target_os = "windows")]
        {
            let compound = format!("{}@{}", pointer.user, pointer.service);
            return [pointer.service.as_str(), compound.as_str()]
                .into_iter()
                .map(|target| {
                    let modifiers = HashMap::from([("target", target)]);
                    keyring_core::Entry::new_in_store_with_modifiers(
                        &self.store,
                        &pointer.service,
                        &pointer.user,
                        &modifiers,
                    )
                    .map_err(failed)
                })
                .collect();
        }
        #[allow(unreachable_code)]
        keyring_core::Entry::new_in_store(&self.store, &pointer.service, &pointer.user)
            .map(|entry| vec![entry])
            .map_err(failed)
    }

    /// Whether `entry` holds another user's secret: on Windows an entry under the bare service
    /// name is any user's, and says whose in its user name. Elsewhere an entry is one user's.
    fn holds_another_user(entry: &keyring_core::Entry, pointer: &Pointer) -> bool {
        cfg!(target_os = "windows")
            && entry
                .get_attributes()
                .ok()
                .and_then(|a| a.get("username").cloned())
                .is_some_and(|user| user != pointer.user)
    }

    /// The entry that holds, or is to hold, `pointer`'s secret: the first that is not another
    /// user's, as Python's `keyring` chooses (on Windows the bare service name while it is free
    /// or this user's, else `user@service`).
    fn own_entry(&self, pointer: &Pointer) -> Result<keyring_core::Entry, KeychainError> {
        let mut entries = self.entries(pointer)?.into_iter();
        let first = entries
            .next()
            .ok_or_else(|| KeychainError::NotFound(pointer.clone()))?;
        if Self::holds_another_user(&first, pointer) {
            return entries
                .next()
                .ok_or_else(|| KeychainError::NotFound(pointer.clone()));
        }
        Ok(first)
    }
}

#[cfg(not(target_os = "macos"))]
impl Store for Os {
    fn get(&self, pointer: &Pointer) -> Result<Secret, KeychainError> {
        for entry in self.entries(pointer)? {
            if Self::holds_another_user(&entry, pointer) {
                continue;
            }
            match entry.get_password() {
                Ok(password) => return usable(pointer, password),
                Err(keyring_core::Error::NoEntry) => continue,
                Err(e) => return Err(failure(pointer, &e)),
            }
        }
        Err(KeychainError::NotFound(pointer.clone()))
    }

    fn set(&self, pointer: &Pointer, secret: &Secret) -> Result<(), KeychainError> {
        let entry = self.own_entry(pointer)?;
        entry
            .set_password(secret.expose())
            .map_err(|e| failure(pointer, &e))?;
        // An entry named by its target alone is written with no user name: it is given this
        // user's, or a later read (ours or Python's) would take it for nobody's.
        if cfg!(target_os = "windows") {
            entry
                .update_attributes(&HashMap::from([("username", pointer.user.as_str())]))
                .map_err(|e| failure(pointer, &e))?;
        }
        Ok(())
    }

    /// Deletes the entry `get` reads.
    fn delete(&self, pointer: &Pointer) -> Result<(), KeychainError> {
        for entry in self.entries(pointer)? {
            if Self::holds_another_user(&entry, pointer) {
                continue;
            }
            match entry.delete_credential() {
                Ok(()) => return Ok(()),
                Err(keyring_core::Error::NoEntry) => continue,
                Err(e) => return Err(failure(pointer, &e)),
            }
        }
        Err(KeychainError::NotFound(pointer.clone()))
    }

    fn persistent(&self) -> bool {
        self.persistent
    }

    fn name(&self) -> &'static str {
        self.name
    }
}

/// The Linux kernel's key retention service, on the user keyring (`@u`): every process of the
/// user sees it (a systemd service too, whose session keyring is its own), it needs no daemon, and
/// it lives until reboot. Entries are `user` keys described as the keyring crates' keyutils store
/// names them, `keyring:<user>@<service>`, so `keyctl padd user 'keyring:facts@seren-loci' @u`
/// provisions one.
///
/// The keyring crates' own keyutils store also links every key into the persistent keyring, and
/// fails where that link is refused (seen in containers and micro-VMs), so this small store is the
/// callosum's own.
#[cfg(target_os = "linux")]
mod kernel {
    use super::entry::{KeychainError, Pointer, Store, usable};
    use crate::secret::Secret;
    use linux_keyutils::{KeyError, KeyRing, KeyRingIdentifier};

    pub struct UserKeyring;

    fn description(pointer: &Pointer) -> String {
        format!("keyring:{}@{}", pointer.user, pointer.service)
    }

    fn failed(pointer: &Pointer, error: KeyError) -> KeychainError {
        match error {
            KeyError::KeyDoesNotExist => KeychainError::NotFound(pointer.clone()),
            other => KeychainError::Failed {
                pointer: pointer.clone(),
                why: format!("kernel keyring: {other}"),
            },
        }
    }

    fn user(pointer: &Pointer) -> Result<KeyRing, KeychainError> {
        KeyRing::from_special_id(KeyRingIdentifier::User, true).map_err(|e| failed(pointer, e))
    }

    impl Store for UserKeyring {
        fn get(&self, pointer: &Pointer) -> Result<Secret, KeychainError> {
            let key = user(pointer)?
                .search(&description(pointer))
                .map_err(|e| failed(pointer, e))?;
            let bytes = key.read_to_vec().map_err(|e| failed(pointer, e))?;
            let text = String::from_utf8(bytes).map_err(|_| KeychainError::Failed {
                pointer: pointer.clone(),
                why: "the stored value is not UTF-8 text".into(),
            })?;
            usable(pointer, text)
        }

        fn set(&self, pointer: &Pointer, secret: &Secret) -> Result<(), KeychainError> {
            user(pointer)?
                .add_key(&description(pointer), secret.expose())
                .map(drop)
                .map_err(|e| failed(pointer, e))
        }

        fn delete(&self, pointer: &Pointer) -> Result<(), KeychainError> {
            let key = user(pointer)?
                .search(&description(pointer))
                .map_err(|e| failed(pointer, e))?;
            key.invalidate().map_err(|e| failed(pointer, e))
        }

        fn persistent(&self) -> bool {
            false
        }

        fn name(&self) -> &'static str {
            "kernel keyring (keyutils, @u)"
        }
    }
}

#[cfg(not(target_os = "macos"))]
fn failure(pointer: &Pointer, error: &keyring_core::Error) -> KeychainError {
    match error {
        keyring_core::Error::NoEntry => KeychainError::NotFound(pointer.clone()),
        other => KeychainError::Failed {
            pointer: pointer.clone(),
            why: words(other),
        },
    }
}

/// A keyring error in words. The variants that carry the stored bytes are named, never shown.
#[cfg(not(target_os = "macos"))]
fn words(error: &keyring_core::Error) -> String {
    use keyring_core::Error as E;
    let text = match error {
        E::BadEncoding(_) => "the stored value is not UTF-8 text".into(),
        E::BadDataFormat(..) => "the stored value is malformed".into(),
        E::Ambiguous(items) => format!("{} entries match; keep one", items.len()),
        other => other.to_string(),
    };
    crate::text::cut(&text, 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_split_at_the_first_slash() {
        assert_eq!(
            Pointer::parse(" seren-loci/bearer/x ").unwrap(),
            Pointer {
                service: "seren-loci".into(),
                user: "bearer/x".into()
            }
        );
        for bad in ["", "noslash", "/user", "service/", " / "] {
            assert!(
                Pointer::parse(bad).unwrap_err().contains("service/user"),
                "{bad}"
            );
        }
        assert_eq!(
            Pointer::for_store("facts").to_string(),
            "seren-corpus-callosum/facts"
        );
        assert!(Pointer::for_store("facts").is_ours("facts"));
        assert!(!Pointer::parse("seren-loci/facts").unwrap().is_ours("facts"));
    }

    #[test]
    fn backends_are_named() {
        assert_eq!(Backend::parse("").unwrap(), Backend::Auto);
        assert_eq!(
            Backend::parse("Secret-Service").unwrap(),
            Backend::SecretService
        );
        assert_eq!(Backend::parse("keyutils").unwrap(), Backend::Keyutils);
        assert_eq!(Backend::parse("none").unwrap(), Backend::None);
        assert!(Backend::parse("vault").unwrap_err().contains("one of auto"));
    }

    #[test]
    fn no_backend_means_every_read_fails_and_writes_stay_inline() {
        let keychain = Keychain::new(Backend::None);
        let pointer = Pointer::for_store("x");
        assert!(matches!(
            keychain.get(&pointer),
            Err(KeychainError::Unavailable(_))
        ));
        let secret = Secret::new("s").unwrap();
        assert_eq!(keychain.keep("x", &secret), Ok(None));
    }
}
