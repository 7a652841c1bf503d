//! The live roster and its writers: the snapshot in force, and the changes (add, remove, refresh,
//! reload) made one at a time under the overlay's lock, the overlay written before the new fan is
//! swapped in. How a fan is built is `fan.rs`'s, and what an entry must be is `check.rs`'s.

use super::check::{check_new_store, our_pointer};
use super::fan::{Fan, build_fan};
use crate::api::{NewStore, Refusal, RefusalKind};
use crate::config::{Config, StoreEntry};
use crate::keychain::Pointer;
use crate::limits::KEYCHAIN_WAIT;
use crate::overlay;
use crate::store::clients::Clients;
use std::sync::{Arc, RwLock};

/// What the overlay mutex guards: the overlay's entries as last read or written. When the file
/// stops parsing while the service runs, `entries` keeps the last good read (its stores stay
/// fanned) and `error` says why nothing more is read or written.
struct OverlayState {
    entries: Vec<overlay::Row>,
    error: Option<String>,
}

/// The refusal for a name the roster does not hold (and for one a caller's view does not see:
/// the two must read the same).
pub fn no_such_store(name: &str) -> Refusal {
    Refusal::new(RefusalKind::NotFound, format!("no store named '{name}'"))
}

/// A roster change another party made (the overlay written by another process, a config file
/// reloaded): the snapshots before and after, for the bookkeeping kept beside the roster.
pub struct Changed {
    pub before: Arc<Fan>,
    pub after: Arc<Fan>,
}

impl Changed {
    /// The stores fanned after and not before, by name.
    pub fn added(&self) -> Vec<String> {
        Self::missing(&self.after, &self.before)
    }

    /// The stores fanned before and not after.
    pub fn removed(&self) -> Vec<String> {
        Self::missing(&self.before, &self.after)
    }

    /// The stores bound again: fanned before and after under one name, from another entry.
    pub fn rebound(&self) -> Vec<String> {
        (self.after.bound.iter())
            .filter(|now| {
                (self.before.bound.iter()).any(|was| was.name == now.name && !Arc::ptr_eq(was, now))
            })
            .map(|bound| bound.name.clone())
            .collect()
    }

    fn log(&self, what: &str) {
        tracing::info!(
            added = ?self.added(),
            removed = ?self.removed(),
            active = self.after.bound.len(),
            "{what}"
        );
    }

    fn missing(of: &Fan, from: &Fan) -> Vec<String> {
        (of.bound.iter())
            .filter(|b| !from.bound.iter().any(|other| other.name == b.name))
            .map(|b| b.name.clone())
            .collect()
    }
}

/// The live roster. Cheap to share: the state lives behind one `Arc`, so that a change runs to its
/// end in a task of its own even when the request that asked for it goes away.
pub struct Roster {
    inner: Arc<Inner>,
}

struct Inner {
    /// The config in force: swapped whole by a reload.
    config: RwLock<Arc<Config>>,
    /// Where the overlay lives (a file, or a PostgreSQL table): fixed at start.
    backing: overlay::Backing,
    overlay: tokio::sync::Mutex<OverlayState>,
    live: RwLock<Arc<Fan>>,
    /// The overlay writes made, and those that failed, for `GET /metrics`.
    writes: crate::metrics::Writes,
    /// The shared store clients, and what a store's own is built from: fixed at start (`tls:`
    /// is a start-only setting).
    clients: Clients,
}

impl Roster {
    /// Reads the overlay and binds every store. An unreadable overlay is not fatal: it is logged,
    /// shown on `GET /stores`, and never overwritten. Every store is called through `clients`
    /// (a store with `tls_ca_file`, through its own client built from them).
    pub fn new(config: Arc<Config>, clients: Clients) -> Self {
        Self {
            inner: Arc::new(Inner::new(config, clients)),
        }
    }

    /// The configuration in force (the one last loaded).
    pub fn config(&self) -> Arc<Config> {
        self.inner.config()
    }

    /// The current snapshot.
    pub fn fan(&self) -> Arc<Fan> {
        self.inner.fan()
    }

    /// The overlay writes this roster made, and those that failed.
    pub fn overlay_writes(&self) -> &crate::metrics::Writes {
        &self.inner.writes
    }

    /// Adds a managed store: checks it, writes the overlay, then fans it from the next search.
    /// The change runs in its own task: a caller that goes away cannot stop it half done (the
    /// overlay written but the fan not swapped, or a keychain entry left behind).
    pub async fn add(&self, new: NewStore) -> Result<usize, Refusal> {
        let inner = self.inner.clone();
        finish(tokio::spawn(async move { inner.add(new).await })).await
    }

    /// Removes a managed store from the overlay and unbinds it at once; see [`Roster::add`].
    pub async fn remove(&self, name: &str) -> Result<usize, Refusal> {
        let inner = self.inner.clone();
        let name = name.to_owned();
        finish(tokio::spawn(async move { inner.remove(&name).await })).await
    }

    /// Told when another process changed the overlay, when the overlay tells (PostgreSQL).
    pub fn overlay_changes(&self) -> Option<Arc<tokio::sync::Notify>> {
        self.inner.backing.changes()
    }

    /// Reads the overlay again and, when another process changed it, fans what it now holds.
    /// `None` when nothing changed.
    pub async fn refresh(&self) -> Option<Changed> {
        let inner = self.inner.clone();
        let changed = tokio::spawn(async move { inner.refresh().await }).await;
        changed.unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))
    }

    /// Puts a newly loaded config in force: the roster is bound again over it (keeping every
    /// store whose entry did not change) together with the overlay, read again too.
    pub async fn reload(&self, config: Arc<Config>) -> Changed {
        let inner = self.inner.clone();
        let changed = tokio::spawn(async move { inner.reload(config).await }).await;
        changed.unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))
    }
}

/// Awaits a roster change. The change reports every problem as a refusal; a panic in it is a bug,
/// passed on as such.
async fn finish(change: tokio::task::JoinHandle<Result<usize, Refusal>>) -> Result<usize, Refusal> {
    change
        .await
        .unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))
}

impl Inner {
    fn new(config: Arc<Config>, clients: Clients) -> Self {
        let backing = overlay::Backing::for_config(&config);
        // A file is read now; a table is read by the first `refresh` (it needs the network).
        let read = backing.read_at_start();
        let state = match read {
            Ok(entries) => OverlayState {
                entries,
                error: None,
            },
            Err(e) => {
                tracing::error!(error = %e, "runtime overlay not loaded; its stores are not fanned and the file will not be overwritten");
                OverlayState {
                    entries: Vec::new(),
                    error: Some(e.to_string()),
                }
            }
        };
        let fan = build_fan(&config, &clients, &state.entries, state.error.clone(), None);
        for skip in fan.skipped() {
            tracing::warn!(store = %skip.name, reason = %skip.reason, "store skipped");
        }
        Self {
            config: RwLock::new(config),
            backing,
            overlay: tokio::sync::Mutex::new(state),
            live: RwLock::new(Arc::new(fan)),
            writes: crate::metrics::Writes::default(),
            clients,
        }
    }

    fn config(&self) -> Arc<Config> {
        // As `fan` below: the value is always a whole `Arc`.
        self.config
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn fan(&self) -> Arc<Fan> {
        // A poisoned lock only means a writer panicked between two whole-`Arc` states; the value
        // inside is still a complete snapshot, so reading it is safe.
        self.live
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn swap(&self, fan: Fan) {
        // See `fan` on poisoning: the write replaces the whole value, so there is no half state.
        *self
            .live
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(fan);
    }

    async fn add(&self, new: NewStore) -> Result<usize, Refusal> {
        let mut entry = check_new_store(new)?;
        let mut state = self.overlay.lock().await;
        let held = self.lock_and_sync(&mut state).await?;
        self.refuse_if_overlay_unreadable(&state)?;
        let config = self.config();
        let fan = self.fan();
        if fan.rows.iter().any(|row| row.name == entry.name) {
            return Err(Refusal::new(
                RefusalKind::Conflict,
                format!("a store named '{}' already exists", entry.name),
            ));
        }
        let cap = config.federation.max_stores;
        if fan.rows.len() >= cap {
            return Err(Refusal::new(
                RefusalKind::Conflict,
                format!(
                    "the roster is full: {cap} stores (federation.max_stores); remove one first, or raise the cap in {}",
                    config.path.display()
                ),
            ));
        }
        let kept = self.keep_token(&mut entry).await;
        let mut entries = state.entries.clone();
        entries.push(overlay::Row::new(entry.to_json()));
        let written = self.write_overlay(held, entries).await;
        let Ok(written) = written else {
            // Nothing changed, so the keychain entry made for this store must go too.
            if let Some(pointer) = kept {
                self.forget_token(pointer).await;
            }
            return written.map(|_| 0);
        };
        state.entries = written;
        let fan = self.rebuild(&state.entries, None).await;
        let active = fan.bound.len();
        self.swap(fan);
        tracing::info!(store = %entry.name, kind = %entry.kind, active, "store added");
        Ok(active)
    }

    async fn remove(&self, name: &str) -> Result<usize, Refusal> {
        let mut state = self.overlay.lock().await;
        let held = self.lock_and_sync(&mut state).await?;
        let config = self.config();
        self.check_removable(&state, &config, name)?;
        let ours = our_pointer(&state.entries, &config, name);
        let entries: Vec<overlay::Row> = state
            .entries
            .iter()
            .filter(|entry| !entry.is_named(name))
            .cloned()
            .collect();
        state.entries = self.write_overlay(held, entries).await?;
        let fan = self.rebuild(&state.entries, None).await;
        let active = fan.bound.len();
        self.swap(fan);
        if let Some(pointer) = ours {
            self.forget_token(pointer).await;
        }
        tracing::info!(store = %name, active, "store removed");
        Ok(active)
    }

    /// Refuses to remove `name` unless it is a store of the overlay's, with an entry there by
    /// that name: a base store is the config's, an unreadable overlay is never written, and an
    /// entry that cannot be read has no name to remove it by.
    fn check_removable(
        &self,
        state: &OverlayState,
        config: &Config,
        name: &str,
    ) -> Result<(), Refusal> {
        let managed = self
            .fan()
            .rows
            .iter()
            .find(|row| row.name == name)
            .map(|row| row.managed);
        if managed == Some(false) {
            return Err(Refusal::bad_request(format!(
                "'{name}' is a base (config) store - remove it from {}, not from here",
                config.path.display()
            )));
        }
        self.refuse_if_overlay_unreadable(state)?;
        if managed.is_none() {
            return Err(no_such_store(name));
        }
        if !state.entries.iter().any(|entry| entry.is_named(name)) {
            // A row labelled by its place: an overlay entry that cannot be read has no name to
            // remove it by.
            return Err(Refusal::new(
                RefusalKind::NotFound,
                format!(
                    "no overlay entry is named '{name}'; an entry that cannot be read is removed by editing {}",
                    self.backing.shown()
                ),
            ));
        }
        Ok(())
    }

    /// Holds the overlay against every other process (the file's lock, or the table's, waiting
    /// within [`crate::limits::OVERLAY_LOCK_WAIT`]) and reads it again under that hold: what
    /// another process wrote since is fanned first, and a change then builds on it.
    async fn lock_and_sync(&self, state: &mut OverlayState) -> Result<overlay::Held, Refusal> {
        let (held, read) = self.backing.begin().await.map_err(|e| match e {
            overlay::BeginError::Busy(why) => Refusal::new(
                RefusalKind::Busy,
                format!("busy: {why}; nothing changed, retry shortly"),
            ),
            overlay::BeginError::Failed(why) => Refusal::new(
                RefusalKind::Internal,
                format!(
                    "could not write the runtime overlay {}: {why}; nothing changed",
                    self.backing.shown()
                ),
            ),
        })?;
        if let Some(changed) = self.sync(state, read).await {
            changed.log("runtime overlay changed by another process; roster updated");
        }
        Ok(held)
    }

    /// Takes in an overlay just read: when it differs from what this process last read or wrote,
    /// the roster is bound again over it. An overlay that no longer parses keeps the stores last
    /// read (nothing is dropped for a half-made edit) and is shown, and refused, until fixed.
    async fn sync(
        &self,
        state: &mut OverlayState,
        read: Result<Vec<overlay::Row>, overlay::OverlayError>,
    ) -> Option<Changed> {
        match read {
            Ok(entries) if entries == state.entries && state.error.is_none() => return None,
            Ok(entries) => {
                if state.error.take().is_some() {
                    tracing::info!("runtime overlay readable again");
                }
                state.entries = entries;
            }
            Err(e) => {
                let error = e.to_string();
                if state.error.as_ref() == Some(&error) {
                    return None;
                }
                tracing::error!(%error, "runtime overlay no longer readable; the stores it held stay fanned, and it will not be overwritten until it is fixed");
                state.error = Some(error);
            }
        }
        let before = self.fan();
        let fan = self.rebuild(&state.entries, state.error.clone()).await;
        self.swap(fan);
        Some(Changed {
            before,
            after: self.fan(),
        })
    }

    async fn refresh(&self) -> Option<Changed> {
        let mut state = self.overlay.lock().await;
        let read = self.backing.read().await;
        let changed = self.sync(&mut state, read).await;
        if let Some(changed) = &changed {
            changed.log("runtime overlay changed by another process; roster updated");
        }
        changed
    }

    async fn reload(&self, config: Arc<Config>) -> Changed {
        let mut state = self.overlay.lock().await;
        *self
            .config
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = config.clone();
        let read = self.backing.read().await;
        if let Some(changed) = self.sync(&mut state, read).await {
            return changed;
        }
        let before = self.fan();
        let fan = self.rebuild(&state.entries, state.error.clone()).await;
        self.swap(fan);
        Changed {
            before,
            after: self.fan(),
        }
    }

    /// Binds every store again over `entries`, off the async threads: binding may read the
    /// keychain, which blocks (D-Bus, a system API).
    async fn rebuild(&self, entries: &[overlay::Row], overlay_error: Option<String>) -> Fan {
        let config = self.config();
        let clients = self.clients.clone();
        let entries = entries.to_vec();
        let before = self.fan();
        let built = tokio::task::spawn_blocking(move || {
            build_fan(&config, &clients, &entries, overlay_error, Some(&before))
        })
        .await;
        // The closure does not panic (binding reports every problem as a skip); were it to, the
        // panic is the bug to see, so it is passed on.
        built.unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))
    }

    /// Moves a new store's inline token into the keychain when a persistent one is at hand, so the
    /// overlay holds only the pointer. Without one, or when the keychain refuses, the token stays
    /// inline (the overlay is mode 0600): it is never dropped.
    async fn keep_token(&self, entry: &mut StoreEntry) -> Option<Pointer> {
        let secret = entry.token.clone()?;
        let config = self.config();
        if config.names_pointer(&Pointer::for_store(&entry.name)) {
            tracing::info!(store = %entry.name, "the config names this store's keychain entry itself: the token is kept in the runtime overlay ({})", crate::overlay::PRIVACY);
            return None;
        }
        let keychain = config.keychain.clone();
        let name = entry.name.clone();
        let kept = tokio::time::timeout(
            KEYCHAIN_WAIT,
            tokio::task::spawn_blocking(move || keychain.keep(&name, &secret)),
        )
        .await;
        let Ok(kept) = kept else {
            tracing::warn!(store = %entry.name, "the keychain did not answer within 10 s; the token is kept in the runtime overlay ({})", crate::overlay::PRIVACY);
            return None;
        };
        match kept {
            Ok(Ok(Some(pointer))) => {
                entry.token = None;
                entry.token_keyring = Some(pointer.clone());
                Some(pointer)
            }
            Ok(Ok(None)) => {
                tracing::info!(store = %entry.name, "no persistent keychain, or its entry for this store holds another token: the store's token is kept in the runtime overlay ({})", crate::overlay::PRIVACY);
                None
            }
            Ok(Err(error)) => {
                tracing::warn!(store = %entry.name, %error, "the keychain did not take the store's token; it is kept in the runtime overlay ({})", crate::overlay::PRIVACY);
                None
            }
            Err(join) => {
                tracing::warn!(store = %entry.name, error = %join, "the keychain writer stopped; the token is kept in the runtime overlay ({})", crate::overlay::PRIVACY);
                None
            }
        }
    }

    /// Deletes a keychain entry the callosum made, best effort: a failure is logged, not fatal.
    async fn forget_token(&self, pointer: Pointer) {
        let keychain = self.config().keychain.clone();
        let target = pointer.clone();
        let forgot = tokio::time::timeout(
            KEYCHAIN_WAIT,
            tokio::task::spawn_blocking(move || keychain.forget(&target)),
        )
        .await;
        match forgot {
            Ok(Ok(Ok(()))) => tracing::debug!(entry = %pointer, "keychain entry removed"),
            Ok(Ok(Err(error))) => tracing::warn!(%error, "keychain entry not removed"),
            Ok(Err(join)) => {
                tracing::warn!(entry = %pointer, error = %join, "keychain entry not removed")
            }
            Err(_) => {
                tracing::warn!(entry = %pointer, "keychain entry not removed: no answer within 10 s")
            }
        }
    }

    fn refuse_if_overlay_unreadable(&self, state: &OverlayState) -> Result<(), Refusal> {
        match &state.error {
            Some(error) => Err(Refusal::new(
                RefusalKind::Conflict,
                format!(
                    "{error}; fix or remove that file (it is never overwritten while it cannot be read); the service reads it again within a second"
                ),
            )),
            None => Ok(()),
        }
    }

    /// Writes `entries` as the overlay and hands them back, or refuses with nothing changed.
    async fn write_overlay(
        &self,
        held: overlay::Held,
        entries: Vec<overlay::Row>,
    ) -> Result<Vec<overlay::Row>, Refusal> {
        let written = self.backing.commit(held, &entries).await;
        self.writes.count(written.is_ok());
        let Err(error) = written else {
            return Ok(entries);
        };
        let place = self.backing.shown();
        tracing::error!(overlay = %place, %error, "runtime overlay not written; nothing changed");
        Err(Refusal::new(
            RefusalKind::Internal,
            format!("could not write the runtime overlay {place}: {error}; nothing changed"),
        ))
    }
}
