//! Hot reload: the config file read again on `SIGHUP` and when it changes, and the runtime overlay
//! read again when another process writes it.
//!
//! Both files are looked at every [`WATCH_EVERY`] by their stamp (size, time, inode), which works
//! the same on a local disk, a shared volume and a Kubernetes ConfigMap (a symlink swapped whole),
//! where change notifications do not all arrive. A file is read only once it has stood still: a
//! file put in place whole (a new inode: renamed over, a symlink swapped) for one more look, a
//! config file written in place (or newly made) for [`CONFIG_SETTLE`] from the last change seen (a
//! writer pausing mid-file leaves a half file that may parse). The overlay is always written
//! whole, by rename, and is read one look after it stands still. Its stamp is taken again after the read, and a file that
//! moved meanwhile is not loaded: it is read again once it stands still. A config that does not
//! load changes nothing: it is logged at warn and shown on `GET /stores` until a good one
//! replaces it.

use crate::config::{Config, ConfigError};
use crate::federation::{Federation, Reloaded};
use crate::limits::{CONFIG_SETTLE, WATCH_EVERY};
use crate::overlay::{Stamp, stamp};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Reads the config again the way the process first read it (its command-line overrides
/// included), from the config in force.
pub type Loader = Arc<dyn Fn(&Config) -> Result<Config, ConfigError> + Send + Sync>;

/// Watches the config file and the overlay, and takes `SIGHUP`, until `shutdown`.
pub fn spawn(
    federation: Arc<Federation>,
    loader: Loader,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    // The files as they stand now, before the task first runs: a change made from here on is seen.
    let config = federation.config();
    let watch = config.server.watch;
    let mut watched = [
        Watched::new(config.path.clone(), CONFIG_SETTLE),
        // The overlay is written whole (a temp file renamed into place, by this process and
        // every other sharing it), and one that does not parse is refused and kept as it is:
        // it is read one look after it stands still, as a file put in place whole.
        Watched::new(config.overlay_path.clone(), Duration::ZERO),
    ];
    let mut hangups = hangups();
    // A PostgreSQL overlay says when it changed (LISTEN/NOTIFY); a file is looked at.
    let told = federation.roster().overlay_changes();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(WATCH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = notified(told.as_deref()) => federation.refresh_overlay().await,
                _ = hangups.recv() => {
                    tracing::info!("SIGHUP: reading the config file again");
                    watched[0].settle();
                    if let Read::Moved(now) = read(&federation, &loader).await {
                        watched[0].moved(now);
                    }
                    watched[1].settle();
                    federation.refresh_overlay().await;
                }
                _ = tick.tick(), if watch => {
                    if watched[0].changed() {
                        tracing::info!(path = %watched[0].path.display(), "config file changed; reading it again");
                        if let Read::Moved(now) = read(&federation, &loader).await {
                            watched[0].moved(now);
                        }
                    }
                    if watched[1].changed() {
                        federation.refresh_overlay().await;
                    }
                }
            }
        }
    })
}

/// Loads the config again and, when it loads, puts it in force; `None` when it did not (it was
/// refused, or it changed while it was read).
pub async fn reload(federation: &Federation, loader: &Loader) -> Option<Reloaded> {
    match read(federation, loader).await {
        Read::Loaded(done) => Some(done),
        Read::Refused | Read::Moved(_) => None,
    }
}

/// What came of reading the config file.
enum Read {
    Loaded(Reloaded),
    Refused,
    /// The file changed while it was read (its stamp now): what was read may be half of it, and
    /// nothing was done with it, not even a refusal shown.
    Moved(Option<Stamp>),
}

async fn read(federation: &Federation, loader: &Loader) -> Read {
    let running = federation.config();
    let path = running.path.clone();
    let read = {
        let loader = loader.clone();
        tokio::task::spawn_blocking(move || {
            let before = stamp(&running.path);
            let read = loader(&running);
            (before, read, stamp(&running.path))
        })
        .await
    };
    let (before, read, after) =
        read.unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()));
    if before != after {
        tracing::info!(path = %path.display(), "config file changed while it was read; not loaded, read again once it stands still (save by rename for instant pickup)");
        return Read::Moved(after);
    }
    match read {
        Ok(config) => {
            let done = federation.reload(config).await;
            tracing::info!(
                added = ?done.added,
                removed = ?done.removed,
                rebound = ?done.rebound,
                knobs_replaced = ?done.knobs_replaced,
                active = federation.roster().fan().bound.len(),
                "config reloaded"
            );
            if !done.restart_needed.is_empty() {
                tracing::warn!(settings = ?done.restart_needed, "the config file changes settings that take effect only at the next start; the running ones are kept");
            }
            Read::Loaded(done)
        }
        Err(error) => {
            let error = error.to_string();
            tracing::warn!(%error, "config file not reloaded; the config last loaded stays in force");
            federation.reload_failed(error);
            Read::Refused
        }
    }
}

/// Waits for `told`, or forever when there is nothing to be told by.
async fn notified(told: Option<&tokio::sync::Notify>) {
    match told {
        Some(told) => told.notified().await,
        None => std::future::pending().await,
    }
}

/// One file looked at by its stamp.
struct Watched {
    path: PathBuf,
    /// The stamp last taken in.
    seen: Option<Stamp>,
    /// The stamp at the last look, and when it was first seen so.
    last: Option<Stamp>,
    since: Instant,
    /// `last` came by a file put in place whole (a new inode where there was a file), which is
    /// complete as it stands; a file written in place may be half written.
    whole: bool,
    /// How long a file written in place must stand still before it is read.
    stand_still: Duration,
}

impl Watched {
    fn new(path: PathBuf, stand_still: Duration) -> Self {
        let seen = stamp(&path);
        Self {
            path,
            seen,
            last: seen,
            since: Instant::now(),
            whole: false,
            stand_still,
        }
    }

    /// Whether the file changed since it was last taken in and has since stood still: a file put
    /// in place whole for one look, one written in place for [`CONFIG_SETTLE`] since the last
    /// change seen. When it says yes the file is taken as read (see [`Watched::moved`]).
    fn changed(&mut self) -> bool {
        let now = stamp(&self.path);
        if now != self.last {
            self.whole =
                matches!((self.last, now), (Some(was), Some(now)) if was.replaced_by(&now));
            self.last = now;
            self.since = Instant::now();
            return false;
        }
        if now == self.seen || !(self.whole || self.since.elapsed() >= self.stand_still) {
            return false;
        }
        self.seen = now;
        true
    }

    /// Takes the file as it stands as seen (it is being read now).
    fn settle(&mut self) {
        self.seen = stamp(&self.path);
        self.last = self.seen;
        self.since = Instant::now();
        self.whole = false;
    }

    /// The file moved while it was read (`now` is its stamp after): a change written in place,
    /// to be read once it has stood still again.
    fn moved(&mut self, now: Option<Stamp>) {
        self.seen = None;
        self.last = now;
        self.since = Instant::now();
        self.whole = false;
    }
}

/// `SIGHUP`s, where there are signals. Windows has none: there the file watch alone reloads.
fn hangups() -> Hangups {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::hangup()) {
            Ok(stream) => Hangups(Some(stream)),
            Err(error) => {
                tracing::warn!(%error, "SIGHUP not handled; the config file is still watched");
                Hangups(None)
            }
        }
    }
    #[cfg(not(unix))]
    {
        Hangups
    }
}

#[cfg(unix)]
struct Hangups(Option<tokio::signal::unix::Signal>);
#[cfg(not(unix))]
struct Hangups;

impl Hangups {
    /// The next `SIGHUP`; never, where there is none to wait for.
    async fn recv(&mut self) -> Option<()> {
        #[cfg(unix)]
        if let Some(stream) = &mut self.0 {
            return stream.recv().await;
        }
        std::future::pending().await
    }
}
