//! The roster: the live set of stores (the config file's, then the overlay's) and how each is bound.
//!
//! Readers take a cheap snapshot ([`Roster::fan`], an `Arc<Fan>`) and never wait on a writer for
//! longer than a pointer swap. Writers (add, remove) are serialized by one async mutex that also
//! guards the overlay file, so the file and the live roster change together or not at all: the
//! file is written first, and only when that succeeds is the new fan swapped in.
//!
//! Other processes may share the overlay. A change takes the file's advisory lock too and reads
//! the file again under it, so it builds on what any process last wrote; [`Roster::refresh`]
//! (called when the file changes) brings in what others wrote; [`Roster::reload`] puts a newly
//! read config file in force. Each keeps every store whose entry did not change, bound as it was.

use crate::api::NewStore;
use crate::api::{NameReason, Refusal, RefusalKind, StoreRow, StoreStatus};
use crate::config::Endpoint;
use crate::config::{Config, Invalid, RawStoreEntry, StoreEntry, StoreKind, TypeRules};
use crate::keychain::Pointer;
use crate::limits::{KEYCHAIN_WAIT, MAX_FILTER_NAMES};
use crate::overlay;
use crate::store::clients::Clients;
use crate::store::mcp::McpStore;
use crate::store::mcp::client::Link;
use crate::store::{self, Caller, Remote};
use std::collections::HashSet;
use std::sync::{Arc, RwLock};

/// A store that is fanned.
#[derive(Debug)]
pub struct Bound {
    pub name: String,
    pub kind: String,
    pub weight: f64,
    pub floor: f64,
    /// The entry it was bound from: a rebuild keeps a store whose entry did not change (its MCP
    /// session, its connections) instead of binding it again.
    pub entry: StoreEntry,
    pub caller: Caller,
}

/// One snapshot of the roster. Immutable: a change builds a new one.
#[derive(Debug)]
pub struct Fan {
    /// Every configured store, in roster order, as `GET /stores` shows it.
    pub rows: Vec<StoreRow>,
    /// The stores that are fanned, in roster order.
    pub bound: Vec<Arc<Bound>>,
    /// Why the overlay could not be read, if it could not.
    pub overlay_error: Option<String>,
}

/// What the overlay mutex guards: the overlay's entries as last read or written. When the file
/// stops parsing while the service runs, `entries` keeps the last good read (its stores stay
/// fanned) and `error` says why nothing more is read or written.
struct OverlayState {
    entries: Vec<overlay::Row>,
    error: Option<String>,
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
            return Err(Refusal::new(
                RefusalKind::NotFound,
                format!("no store named '{name}'"),
            ));
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

/// The keychain entry the callosum made for the store `name`, which goes with it; one a person made
/// (any other pointer), or one the config also names, stays.
fn our_pointer(entries: &[overlay::Row], config: &Config, name: &str) -> Option<Pointer> {
    entries
        .iter()
        .filter(|entry| entry.is_named(name))
        .filter_map(overlay::Row::token_keyring)
        .filter_map(|text| Pointer::parse(text).ok())
        .find(|pointer| pointer.is_ours(name) && !config.names_pointer(pointer))
}

/// Checks a store to add, in the order the Python service checks (blank fields first). The rules
/// themselves (name, url, ranges) are the config's, so a store added at run time and one written
/// in the YAML are held to the same ones.
pub fn check_new_store(new: NewStore) -> Result<StoreEntry, Refusal> {
    let name = new.name.trim().to_owned();
    let url = new.url.trim().to_owned();
    let kind = new.kind.trim().to_owned();
    if let Some(key) = new.mcp.program_key() {
        return Err(Refusal::bad_request(format!(
            "{key} is refused here: a store that runs a program can only be written in the config file, never added over the network; give an mcp store a url instead"
        )));
    }
    if new.unknown.contains_key("tls_ca_file") {
        return Err(Refusal::bad_request(
            "tls_ca_file is refused here: a store added over the network never makes the service read a file; write a store that needs a private CA in the config file",
        ));
    }
    if let Some(key) = new.unknown_key() {
        return Err(Refusal::bad_request(refused_key(key)));
    }
    if name.is_empty() {
        return Err(Refusal::bad_request("name is required"));
    }
    if url.is_empty() {
        return Err(Refusal::bad_request("url is required"));
    }
    crate::config::check_name(&name).map_err(Refusal::bad_request)?;
    crate::config::StoreUrl::parse(&url)
        .map_err(|why| Refusal::bad_request(format!("url {why}")))?;
    let kind = StoreKind::parse(&kind).map_err(Refusal::bad_request)?;
    let options = new.mcp.options();
    if kind != StoreKind::Mcp
        && let Some(key) = options.keys().next()
    {
        return Err(Refusal::bad_request(format!(
            "{key} is a setting of mcp stores, not of {kind} stores"
        )));
    }
    kind.check_options(&options).map_err(Refusal::bad_request)?;
    let raw = RawStoreEntry {
        name: Some(name),
        kind: Some(kind.name().to_owned()),
        url: Some(url),
        weight: new.weight,
        floor: new.floor,
        token: new.token,
        description: new.description,
        options,
        ..RawStoreEntry::default()
    };
    match raw.check("store") {
        Ok(Ok(entry)) => Ok(entry),
        Ok(Err(invalid)) => Err(Refusal::bad_request(invalid.reason)),
        Err(message) => Err(Refusal::bad_request(message)),
    }
}

/// Why a key `POST /stores` and `add_store` do not take is refused, in words a model can act on:
/// the key, why, and every key that is taken. Nothing is dropped in silence: a store that seemed
/// to take a `timeout_s` or a `token_env` would not do what its caller thinks.
fn refused_key(key: &str) -> String {
    let taken = format!(
        "a store added here takes {}, and for type mcp also {}",
        NewStore::KEYS.join(", "),
        store::mcp::TYPE.options.join(", ")
    );
    let shown = crate::text::escaped(key);
    match key {
        "token_env" | "bearer_token_env" | "token_keyring" | "bearer_token_keyring" => format!(
            "{shown} is refused: a store added at run time never reads the service's environment or keychain by name; give the token itself as token (it is kept in the OS keychain when one is at hand); {taken}"
        ),
        "bearer_token" => format!("{shown} is not taken here: give the token as token; {taken}"),
        _ => format!(
            "unknown key {shown}; {taken}; any other setting (timeout_s, enabled, options, ...) is written in the config file"
        ),
    }
}

/// Binds the config's stores then the overlay's, first name wins. A store `before` had bound from
/// the very same entry is kept as it was (an MCP server keeps running through a change of others).
fn build_fan(
    config: &Config,
    clients: &Clients,
    overlay: &[overlay::Row],
    overlay_error: Option<String>,
    before: Option<&Fan>,
) -> Fan {
    let mut fan = Fan {
        rows: Vec::new(),
        bound: Vec::new(),
        overlay_error,
    };
    let mut names = HashSet::new();
    let entries = config
        .federation
        .stores
        .iter()
        .cloned()
        .map(|entry| (false, entry))
        .chain(
            overlay
                .iter()
                .enumerate()
                .map(|(i, row)| (true, overlay_entry(config, i, row))),
        );
    for (managed, entry) in entries {
        let row = match entry {
            Ok(entry) => {
                let status = fan.admit((config, clients), &entry, &mut names, before);
                row(entry, managed, status)
            }
            Err(invalid) => StoreRow {
                name: invalid.name,
                kind: String::new(),
                url: String::new(),
                weight: 1.0,
                floor: 0.0,
                enabled: true,
                managed,
                auth: false,
                description: None,
                status: StoreStatus::Skipped(invalid.reason),
                breaker: None,
            },
        };
        fan.rows.push(row);
    }
    fan
}

/// One overlay entry, checked. It is worded without values (a mistyped `token` must not be quoted
/// on `GET /` or in the log) and labelled by its name only when the name keeps the name rule,
/// else by its place.
fn overlay_entry(config: &Config, i: usize, row: &overlay::Row) -> Result<StoreEntry, Invalid> {
    let place = format!("runtime overlay entry {i}");
    let entry = (row.parse::<RawStoreEntry>())
        .map_err(|e| crate::api::value_free(e.path(), &e.inner().to_string()))
        .and_then(|raw| raw.check(&place))
        .map(|checked| {
            checked
                .and_then(|entry| program_refused(entry, &place))
                .and_then(|entry| file_refused(entry, &place))
                .and_then(|entry| pointer_refused(config, entry, row, &place))
        });
    entry.unwrap_or_else(|message| {
        Err(Invalid {
            name: row
                .name()
                .filter(|n| crate::config::check_name(n).is_ok())
                .map_or(place, str::to_owned),
            reason: format!("invalid entry: {message}"),
        })
    })
}

/// A program comes only from the config file: an overlay entry that names one is skipped. The
/// overlay is what the network surfaces write, so it never makes the callosum run a program.
fn program_refused(entry: StoreEntry, place: &str) -> Result<StoreEntry, Invalid> {
    match entry.endpoint {
        Endpoint::Program(_) => Err(Invalid {
            name: entry.name,
            reason: format!(
                "invalid entry: {place} names a command; a store that runs a program can only be written in the config file"
            ),
        }),
        Endpoint::Url(_) => Ok(entry),
    }
}

/// A file to read comes only from the config file, as a program does: an overlay entry that names
/// a `tls_ca_file` is skipped before anything is read, so no network surface makes the callosum
/// open a path of the writer's choosing.
fn file_refused(entry: StoreEntry, place: &str) -> Result<StoreEntry, Invalid> {
    if entry.tls_ca_file.is_some() {
        return Err(Invalid {
            name: entry.name,
            reason: format!(
                "invalid entry: {place} names a tls_ca_file; a file the callosum reads can only be named in the config file"
            ),
        });
    }
    Ok(entry)
}

/// A token comes into the overlay only as itself, or as the keychain entry the callosum made for
/// that store: an overlay entry that names an environment variable (`token_env`), or any other
/// keychain entry (`token_keyring`), is skipped before anything is read. The overlay is what the
/// network surfaces write; a pointer in it would send whatever it leads to (any variable of the
/// service's environment, the inbound token's keychain entry) to a url of the writer's choosing.
fn pointer_refused(
    config: &Config,
    entry: StoreEntry,
    row: &overlay::Row,
    place: &str,
) -> Result<StoreEntry, Invalid> {
    // The key as written, so the reason names what is in the file.
    let refused = if entry.token_env.is_some() {
        Some(format!(
            "{place} names {}, an environment variable; a store in the runtime overlay never reads the service's environment: write the store in the config file, or add it again with its token",
            row.env_key()
        ))
    } else if let Some(pointer) = &entry.token_keyring
        && (!pointer.is_ours(&entry.name) || config.names_pointer(pointer))
    {
        Some(format!(
            "{place} names {}, a keychain entry the callosum did not make for this store; from the runtime overlay only {} is read (when the config does not name it): write the store in the config file, or add it again with its token",
            row.keyring_key(),
            Pointer::for_store(&entry.name)
        ))
    } else {
        None
    };
    match refused {
        Some(why) => Err(Invalid {
            name: entry.name,
            reason: format!("invalid entry: {why}"),
        }),
        None => Ok(entry),
    }
}

/// A checked entry as `GET /stores` lists it.
fn row(entry: StoreEntry, managed: bool, status: StoreStatus) -> StoreRow {
    StoreRow {
        auth: entry.has_auth(),
        url: entry.endpoint.shown(),
        description: entry.description,
        name: entry.name,
        kind: entry.kind.name().to_owned(),
        weight: entry.weight,
        floor: entry.floor,
        enabled: entry.enabled,
        managed,
        status,
        breaker: None,
    }
}

impl Fan {
    /// Decides an entry's status in roster order, binding it when it is to be fanned: a name seen
    /// before is a duplicate, past the cap the roster is full, a disabled entry is listed only.
    fn admit(
        &mut self,
        (config, clients): (&Config, &Clients),
        entry: &StoreEntry,
        names: &mut HashSet<String>,
        before: Option<&Fan>,
    ) -> StoreStatus {
        let cap = config.federation.max_stores;
        if !names.insert(entry.name.clone()) {
            return StoreStatus::Skipped(format!(
                "duplicate name: a store named '{}' comes earlier",
                entry.name
            ));
        }
        if self.rows.len() >= cap {
            return StoreStatus::Skipped(format!(
                "the roster is full: federation.max_stores is {cap}"
            ));
        }
        if !entry.enabled {
            return StoreStatus::Disabled;
        }
        let kept = before.and_then(|fan| {
            fan.bound
                .iter()
                .find(|bound| bound.name == entry.name && bound.entry == *entry)
        });
        if let Some(bound) = kept {
            self.bound.push(bound.clone());
            return StoreStatus::Active;
        }
        match bind(config, clients, entry) {
            Ok(bound) => {
                self.bound.push(Arc::new(bound));
                StoreStatus::Active
            }
            Err(reason) => StoreStatus::Skipped(reason),
        }
    }

    /// The stores that are never asked, with why (a disabled store is not skipped).
    pub fn skipped(&self) -> Vec<NameReason> {
        self.rows
            .iter()
            .filter_map(|row| match &row.status {
                StoreStatus::Skipped(reason) => Some(NameReason {
                    name: row.name.clone(),
                    reason: reason.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// The part of this fan one search aims at: only the stores `only` names (all, when `None`),
    /// less those `exclude` names; `None` when that is the whole fan. A name the roster does not
    /// hold is refused, naming it and the names it does hold.
    pub fn aimed(
        &self,
        only: Option<&[String]>,
        exclude: Option<&[String]>,
    ) -> Result<Option<Fan>, Refusal> {
        let exclude = exclude.unwrap_or_default();
        if only.is_none() && exclude.is_empty() {
            return Ok(None);
        }
        for (field, names) in [
            ("stores", only.unwrap_or_default()),
            ("exclude_stores", exclude),
        ] {
            if names.len() > MAX_FILTER_NAMES {
                return Err(Refusal::bad_request(format!(
                    "{field} lists {} names; the limit is {MAX_FILTER_NAMES}",
                    names.len()
                )));
            }
            if let Some(unknown) = names
                .iter()
                .find(|name| !self.rows.iter().any(|row| row.name == **name))
            {
                return Err(Refusal::bad_request(format!(
                    "{field}: no store is named {}; the stores are: {}",
                    crate::text::escaped(unknown),
                    self.names()
                )));
            }
        }
        if only.is_some_and(<[String]>::is_empty) {
            return Err(Refusal::bad_request(
                "stores must name at least one store; leave it out to search every store",
            ));
        }
        let wanted = |name: &str| {
            only.is_none_or(|only| only.iter().any(|n| n == name))
                && !exclude.iter().any(|n| n == name)
        };
        Ok(Some(Fan {
            rows: (self.rows.iter())
                .filter(|row| wanted(&row.name))
                .cloned()
                .collect(),
            bound: (self.bound.iter())
                .filter(|bound| wanted(&bound.name))
                .cloned()
                .collect(),
            overlay_error: self.overlay_error.clone(),
        }))
    }

    /// Every store's name, in roster order, for a message (the first 32, then how many more).
    fn names(&self) -> String {
        const SHOWN: usize = 32;
        let mut names: Vec<&str> = self
            .rows
            .iter()
            .take(SHOWN)
            .map(|r| r.name.as_str())
            .collect();
        let more = self.rows.len().saturating_sub(SHOWN);
        let more = format!("and {more} more");
        if self.rows.len() > SHOWN {
            names.push(&more);
        }
        if names.is_empty() {
            return "(none configured)".to_owned();
        }
        names.join(", ")
    }
}

fn bind(config: &Config, clients: &Clients, entry: &StoreEntry) -> Result<Bound, String> {
    // The config's one rule (inline, keychain, env; failing closed): a pointer that leads
    // nowhere skips the store, which is never called without the token it needs.
    let token = config.store_token(entry)?;
    // A relative `tls_ca_file` is read beside the config file that names it (only the config
    // file may: the overlay's entries are refused one).
    let ca_file = entry
        .tls_ca_file
        .as_ref()
        .map(|path| match config.path.parent() {
            Some(folder) if path.is_relative() => folder.join(path),
            _ => path.clone(),
        });
    let ca_file = ca_file.as_deref();
    let kind = entry.kind.known()?;
    let caller = match (&entry.endpoint, kind) {
        (endpoint, StoreKind::Mcp) => {
            let spec = store::mcp::Spec::parse(&entry.options)?;
            let link = match endpoint {
                Endpoint::Url(url) => Link::Http {
                    url: url.exact().clone(),
                    token,
                    client: clients.mcp(ca_file)?,
                },
                Endpoint::Program(_) if config.untrusted() => {
                    return Err(format!(
                        "not started: {}",
                        config.untrusted_reason("run programs")
                    ));
                }
                Endpoint::Program(program) => Link::Stdio(program.clone()),
            };
            Caller::Mcp(McpStore::new(&entry.name, spec, link, clients.answers()))
        }
        (Endpoint::Url(url), _) => {
            let protocol = store::build(kind, &entry.options)?;
            let path = store::search_path(&entry.options)?;
            let remote = Remote::new(url.join(&path), token, protocol, clients.http(ca_file)?);
            Caller::Http(if store::speaks_topics(kind) {
                remote.with_topics(url.join(&store::topic_search_path(&entry.options)?))
            } else {
                remote
            })
        }
        // The config refuses a program for any other type.
        (Endpoint::Program(_), _) => {
            return Err(format!("{kind} stores are reached at a url"));
        }
    };
    Ok(Bound {
        name: entry.name.clone(),
        kind: kind.name().to_owned(),
        weight: entry.weight,
        floor: entry.floor,
        entry: entry.clone(),
        caller,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn roster(yaml: &str, overlay: Option<&str>) -> (Roster, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seren-corpus-callosum.yaml");
        if let Some(text) = overlay {
            std::fs::write(dir.path().join("runtime-stores.json"), text).unwrap();
        }
        let config = Config::parse(&path, yaml, &crate::config::Env::none()).unwrap();
        (
            Roster::new(Arc::new(config), Clients::new(false).unwrap()),
            dir,
        )
    }

    fn statuses(roster: &Roster) -> Vec<(String, bool, String)> {
        roster
            .fan()
            .rows
            .iter()
            .map(|r| (r.name.clone(), r.managed, r.status.to_string()))
            .collect()
    }

    const TWO: &str = "federation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://127.0.0.1:1\n    - name: episodic\n      type: seren_memory\n      url: http://127.0.0.1:2\n      enabled: false\n    - name: weird\n      type: quantum_brain\n      url: http://127.0.0.1:3\n    - name: facts\n      type: seren_memory\n      url: http://127.0.0.1:4\n";

    #[tokio::test]
    async fn a_program_in_the_overlay_is_skipped_and_a_store_kept_across_changes_is_the_same() {
        let (roster, _dir) = roster(
            "federation:\n  stores:\n    - name: graph\n      type: mcp\n      url: http://127.0.0.1:9/mcp\n      tool: find\n",
            Some(
                r#"[{"name":"sneaky","type":"mcp","command":"sh","args":["-c","true"],"tool":"t"}]"#,
            ),
        );
        let s = statuses(&roster);
        assert_eq!(s[0], ("graph".into(), false, "active".into()));
        assert_eq!(
            s[1],
            (
                "sneaky".into(),
                true,
                "skipped: invalid entry: runtime overlay entry 0 names a command; a store that runs a program can only be written in the config file".into()
            )
        );
        let before = roster.fan().bound[0].clone();
        roster
            .add(NewStore {
                name: "more".into(),
                kind: "seren_loci".into(),
                url: "http://127.0.0.1:10".into(),
                ..NewStore::default()
            })
            .await
            .unwrap();
        // The MCP store's session (and its server, were it spawned) lives through the change.
        assert!(Arc::ptr_eq(&before, &roster.fan().bound[0]));
    }

    #[test]
    fn binds_in_order_and_reports_why_not() {
        let (roster, _dir) = roster(
            TWO,
            Some(
                r#"[{"name":"extra","type":"seren_memory","url":"http://127.0.0.1:5"},{"name":"facts","type":"seren_loci","url":"http://x"},{"name":"bad","type":"seren_loci"},{"type":7}]"#,
            ),
        );
        let s = statuses(&roster);
        assert_eq!(s[0], ("facts".into(), false, "active".into()));
        assert_eq!(s[1], ("episodic".into(), false, "disabled".into()));
        assert!(
            s[2].2
                .starts_with("skipped: unknown store type 'quantum_brain'"),
            "{s:?}"
        );
        assert!(s[3].2.starts_with("skipped: duplicate name"), "{s:?}");
        assert_eq!(s[4], ("extra".into(), true, "active".into()));
        assert!(
            s[5].1 && s[5].2.starts_with("skipped: duplicate name"),
            "base wins: {s:?}"
        );
        assert_eq!(s[6].2, "skipped: invalid entry: missing url");
        assert!(s[7].2.contains("invalid entry"), "{s:?}");
        let fan = roster.fan();
        let bound: Vec<_> = fan.bound.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(bound, ["facts", "extra"]);
        assert_eq!(fan.skipped().len(), 5, "disabled is not skipped");
    }

    #[tokio::test]
    async fn add_and_remove_write_the_overlay_and_swap_the_fan() {
        let (roster, dir) = roster(TWO, None);
        let new = |name: &str| NewStore {
            name: format!("  {name} "),
            kind: "seren_memory".into(),
            url: "http://127.0.0.1:9/".into(),
            ..NewStore::default()
        };
        assert_eq!(roster.add(new("xyz")).await.unwrap(), 2);
        let file = std::fs::read_to_string(dir.path().join("runtime-stores.json")).unwrap();
        let saved: Value = serde_json::from_str(&file).unwrap();
        assert_eq!(saved[0]["name"], "xyz");
        assert_eq!(saved[0]["url"], "http://127.0.0.1:9");
        assert_eq!(
            roster.add(new("xyz")).await.unwrap_err().kind,
            RefusalKind::Conflict
        );
        assert_eq!(
            roster.add(new("facts")).await.unwrap_err().kind,
            RefusalKind::Conflict
        );
        assert_eq!(
            roster.add(new("episodic")).await.unwrap_err().kind,
            RefusalKind::Conflict,
            "disabled names are taken too"
        );
        assert_eq!(
            roster.remove("facts").await.unwrap_err().kind,
            RefusalKind::BadRequest
        );
        assert_eq!(
            roster.remove("nope").await.unwrap_err().kind,
            RefusalKind::NotFound
        );
        assert_eq!(roster.remove("xyz").await.unwrap(), 1);
        let file = std::fs::read_to_string(dir.path().join("runtime-stores.json")).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&file).unwrap(),
            Value::Array(vec![])
        );
    }

    #[tokio::test]
    async fn a_corrupt_overlay_is_never_overwritten() {
        let (roster, dir) = roster(TWO, Some("[{\"name\": oops"));
        let fan = roster.fan();
        assert!(
            fan.overlay_error
                .as_deref()
                .unwrap()
                .contains("not valid JSON")
        );
        let refusal = roster
            .add(NewStore {
                name: "x".into(),
                kind: "seren_memory".into(),
                url: "http://127.0.0.1:9".into(),
                ..NewStore::default()
            })
            .await
            .unwrap_err();
        assert_eq!(refusal.kind, RefusalKind::Conflict);
        assert!(
            refusal.detail.contains("runtime-stores.json"),
            "{}",
            refusal.detail
        );
        assert_eq!(
            roster.remove("x").await.unwrap_err().kind,
            RefusalKind::Conflict
        );
        let text = std::fs::read_to_string(dir.path().join("runtime-stores.json")).unwrap();
        assert_eq!(text, "[{\"name\": oops");
    }

    #[test]
    fn new_stores_are_checked_with_clear_messages() {
        let check = |name: &str, kind: &str, url: &str, weight: Option<f64>, floor: Option<f64>| {
            check_new_store(NewStore {
                name: name.into(),
                kind: kind.into(),
                url: url.into(),
                weight,
                floor,
                token: None,
                ..NewStore::default()
            })
            .map(|e| e.name)
            .map_err(|r| (r.kind, r.detail))
        };
        assert_eq!(
            check(" a.b_c-1 ", "seren_loci", "http://x/", None, None),
            Ok("a.b_c-1".into())
        );
        let refused = |r: Result<String, (RefusalKind, String)>, needle: &str| {
            let (kind, detail) = r.unwrap_err();
            assert_eq!(kind, RefusalKind::BadRequest, "{detail}");
            assert!(detail.contains(needle), "{needle}: {detail}");
        };
        refused(
            check("  ", "seren_loci", "http://x", None, None),
            "name is required",
        );
        refused(check("a", "seren_loci", " ", None, None), "url is required");
        refused(
            check("a b", "seren_loci", "http://x", None, None),
            "must be 1-64 characters",
        );
        refused(
            check(&"a".repeat(65), "seren_loci", "http://x", None, None),
            "1-64",
        );
        refused(
            check("a", "seren_loci", "file:///etc/passwd", None, None),
            "http:// or https://",
        );
        refused(
            check("a", "quantum_brain", "http://x", None, None),
            "unknown store type 'quantum_brain'; known types: [\"mcp\", \"seren_callosum\", \"seren_loci\", \"seren_memory\"]",
        );
        refused(
            check("a", "seren_loci", "http://x", Some(0.0), None),
            "weight",
        );
        refused(
            check("a", "seren_loci", "http://x", Some(f64::NAN), None),
            "weight",
        );
        refused(
            check("a", "seren_loci", "http://x", None, Some(2.0)),
            "floor",
        );
    }

    #[test]
    fn an_overlay_entry_never_names_a_variable_or_a_keychain_entry_not_its_own() {
        let (roster, _dir) = roster(
            "server:\n  keyring: none\nfederation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://127.0.0.1:1\n      token_keyring: seren-corpus-callosum/taken\n",
            Some(
                r#"[{"name":"env","type":"seren_loci","url":"http://127.0.0.1:2","token_env":"HOME"},
                    {"name":"alias","type":"seren_loci","url":"http://127.0.0.1:2","token":"t","bearer_token_env":"HOME"},
                    {"name":"other","type":"seren_loci","url":"http://127.0.0.1:2","bearer_token_keyring":"seren-test/inbound"},
                    {"name":"taken","type":"seren_loci","url":"http://127.0.0.1:2","token_keyring":"seren-corpus-callosum/taken"},
                    {"name":"ours","type":"seren_loci","url":"http://127.0.0.1:2","token_keyring":"seren-corpus-callosum/ours"},
                    {"name":"blank","type":"seren_loci","url":"http://127.0.0.1:2","token_env":" "}]"#,
            ),
        );
        let s = statuses(&roster);
        let variable = |i: usize, key: &str| {
            format!(
                "skipped: invalid entry: runtime overlay entry {i} names {key}, an environment variable; a store in the runtime overlay never reads the service's environment: write the store in the config file, or add it again with its token"
            )
        };
        let keychain = |i: usize, key: &str, name: &str| {
            format!(
                "skipped: invalid entry: runtime overlay entry {i} names {key}, a keychain entry the callosum did not make for this store; from the runtime overlay only seren-corpus-callosum/{name} is read (when the config does not name it): write the store in the config file, or add it again with its token"
            )
        };
        assert_eq!(s[1], ("env".into(), true, variable(0, "token_env")));
        assert_eq!(
            s[2],
            ("alias".into(), true, variable(1, "bearer_token_env"))
        );
        assert_eq!(
            s[3],
            (
                "other".into(),
                true,
                keychain(2, "bearer_token_keyring", "other")
            )
        );
        assert_eq!(
            s[4],
            ("taken".into(), true, keychain(3, "token_keyring", "taken")),
            "the config's own entry is the config's"
        );
        // The entry the callosum keeps for the store is read (here there is no keychain, so the
        // store is skipped, closed, for that reason); a blank variable names nothing.
        assert!(s[5].2.starts_with("skipped: token_keyring: "), "{s:?}");
        assert_eq!(s[6], ("blank".into(), true, "active".into()));
    }

    #[test]
    fn a_key_a_store_added_here_does_not_take_is_refused_by_name() {
        let check = |body: Value| {
            let new: NewStore = crate::api::decode_value(body).unwrap();
            check_new_store(new)
                .map(|entry| entry.name)
                .map_err(|r| (r.kind, r.detail))
        };
        let base = serde_json::json!({"name": "a", "type": "seren_loci", "url": "http://x"});
        let with = |key: &str, value: Value| {
            let mut body = base.clone();
            body[key] = value;
            body
        };
        let taken = "a store added here takes name, type, url, weight, floor, token, description, and for type mcp also preset, tool, query_arg, query_list, limit_arg, limit_max, arguments, shape, hits, id, content, score, distance";
        for key in [
            "token_env",
            "bearer_token_env",
            "token_keyring",
            "bearer_token_keyring",
        ] {
            assert_eq!(
                check(with(key, "HOME".into())),
                Err((
                    RefusalKind::BadRequest,
                    format!(
                        "'{key}' is refused: a store added at run time never reads the service's environment or keychain by name; give the token itself as token (it is kept in the OS keychain when one is at hand); {taken}"
                    )
                ))
            );
        }
        for key in ["timeout_s", "options", "enabled", "made_up\n"] {
            let (kind, detail) = check(with(key, 1.into())).unwrap_err();
            assert_eq!(kind, RefusalKind::BadRequest);
            assert_eq!(
                detail,
                format!(
                    "unknown key {}; {taken}; any other setting (timeout_s, enabled, options, ...) is written in the config file",
                    crate::text::escaped(key)
                )
            );
        }
        assert!(
            check(with("bearer_token", "t".into()))
                .unwrap_err()
                .1
                .starts_with("'bearer_token' is not taken here: give the token as token")
        );
        // Every key that is taken still is, mcp mapping keys included.
        assert_eq!(check(with("token", "t".into())), Ok("a".into()));
        let mcp = serde_json::json!({"name": "m", "type": "mcp", "url": "http://x/mcp", "preset": "callosum",
            "tool": "search", "query_arg": "q", "limit_arg": "n", "limit_max": 5, "arguments": {},
            "hits": "/hits", "id": "/id", "content": "/content", "score": "/score", "weight": 1, "floor": 0,
            "query_list": false, "shape": "json", "distance": "/d"});
        assert_eq!(check(mcp), Ok("m".into()));
    }

    #[test]
    fn the_keys_refusals_name_are_the_keys_the_schema_shows() {
        let schema = serde_json::to_value(schemars::schema_for!(NewStore)).unwrap();
        let mut shown: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut named: Vec<&str> = (NewStore::KEYS.iter())
            .chain(store::mcp::TYPE.options)
            .copied()
            .collect();
        shown.sort_unstable();
        named.sort_unstable();
        assert_eq!(shown, named);
    }

    #[test]
    fn a_mistyped_overlay_entry_is_skipped_without_quoting_its_value() {
        let (roster, _dir) = roster(
            "",
            Some(r#"[{"name":"x","type":"seren_loci","url":"http://x","token":84736251}]"#),
        );
        let fan = roster.fan();
        assert_eq!(
            fan.skipped()[0].reason,
            "invalid entry: token: invalid type: integer, expected a string"
        );
    }

    #[tokio::test]
    async fn the_roster_holds_at_most_max_stores() {
        let (roster, _dir) = roster(
            "federation:\n  max_stores: 2\n  stores:\n    - name: a\n      type: seren_loci\n      url: http://127.0.0.1:1\n    - name: b\n      type: seren_loci\n      url: http://127.0.0.1:1\n    - name: c\n      type: seren_loci\n      url: http://127.0.0.1:1\n",
            None,
        );
        let s = statuses(&roster);
        assert_eq!(
            s[2].2,
            "skipped: the roster is full: federation.max_stores is 2"
        );
        assert_eq!(roster.fan().bound.len(), 2);
        let refusal = roster
            .add(NewStore {
                name: "d".into(),
                kind: "seren_memory".into(),
                url: "http://127.0.0.1:9".into(),
                ..NewStore::default()
            })
            .await
            .unwrap_err();
        assert_eq!(refusal.kind, RefusalKind::Conflict);
        assert!(
            refusal
                .detail
                .starts_with("the roster is full: 2 stores (federation.max_stores)"),
            "{}",
            refusal.detail
        );
    }
}
