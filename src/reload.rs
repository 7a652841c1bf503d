//! Hot reload: the config file read again on `SIGHUP` and when it changes, and the runtime overlay
//! read again when another process writes it.
//!
//! Both files are looked at every [`WATCH_EVERY`] by their stamp (size, time, inode), which works
//! the same on a local disk, a shared volume and a Kubernetes ConfigMap (a symlink swapped whole),
//! where change notifications do not all arrive. A change is taken in once the file has stood
//! still for one more look. A config that does not load changes nothing: it is logged at warn and
//! shown on `GET /stores` until a good one replaces it.

use crate::config::{Config, ConfigError};
use crate::federation::{Federation, Reloaded};
use crate::limits::WATCH_EVERY;
use crate::overlay::{Stamp, stamp};
use std::path::PathBuf;
use std::sync::Arc;
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
        Watched::new(config.path.clone()),
        Watched::new(config.overlay_path.clone()),
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
                    reload(&federation, &loader).await;
                    watched[1].settle();
                    federation.refresh_overlay().await;
                }
                _ = tick.tick(), if watch => {
                    if watched[0].changed() {
                        tracing::info!(path = %watched[0].path.display(), "config file changed; reading it again");
                        reload(&federation, &loader).await;
                    }
                    if watched[1].changed() {
                        federation.refresh_overlay().await;
                    }
                }
            }
        }
    })
}

/// Loads the config again and, when it loads, puts it in force.
pub async fn reload(federation: &Federation, loader: &Loader) -> Option<Reloaded> {
    let running = federation.config();
    let read = {
        let loader = loader.clone();
        tokio::task::spawn_blocking(move || loader(&running)).await
    };
    let read = read.unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()));
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
            Some(done)
        }
        Err(error) => {
            let error = error.to_string();
            tracing::warn!(%error, "config file not reloaded; the config last loaded stays in force");
            federation.reload_failed(error);
            None
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
    /// A new stamp seen once, waiting for the file to stand still.
    pending: Option<Option<Stamp>>,
}

impl Watched {
    fn new(path: PathBuf) -> Self {
        let seen = stamp(&path);
        Self {
            path,
            seen,
            pending: None,
        }
    }

    /// Whether the file changed and has since stood still for one look.
    fn changed(&mut self) -> bool {
        let now = stamp(&self.path);
        if now == self.seen {
            self.pending = None;
            return false;
        }
        if self.pending == Some(now) {
            self.seen = now;
            self.pending = None;
            return true;
        }
        self.pending = Some(now);
        false
    }

    /// Takes the file as it stands as seen (it is being read now).
    fn settle(&mut self) {
        self.seen = stamp(&self.path);
        self.pending = None;
    }
}

/// `SIGHUP`s, where there are signals; elsewhere a stream that never yields.
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
        Hangups(None)
    }
}

struct Hangups(
    #[cfg(unix)] Option<tokio::signal::unix::Signal>,
    #[cfg(not(unix))] Option<()>,
);

impl Hangups {
    async fn recv(&mut self) -> Option<()> {
        #[cfg(unix)]
        if let Some(stream) = &mut self.0 {
            return stream.recv().await;
        }
        std::future::pending().await
    }
}
