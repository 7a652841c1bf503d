//! The runtime overlay, `runtime-stores.json`: the stores added while the service runs.
//!
//! The file is a JSON array of store entries, owned by the machine (the YAML config is never
//! written). This module reads and writes it and nothing more: each entry is a [`Row`], which
//! keeps the JSON as written so an entry this version cannot bind (a hand edit, a newer type) is
//! carried through every rewrite instead of being lost. Writes are atomic: a temp file in the same
//! directory, flushed to disk, then renamed over the old file, so a crash leaves either the old
//! file or the new one.
//!
//! Several processes may share one overlay (a host's `stdio` beside `serve`, replicas on a shared
//! volume). A change is a read-modify-write under [`lock`], an advisory lock on a file beside the
//! overlay (the overlay itself is replaced by each write, so it cannot carry the lock), and the
//! writer reads the file again under it: two processes writing at once both land. Each process sees
//! the others' changes by watching the file's [`Stamp`].

#[cfg(feature = "postgres")]
pub mod postgres;
mod row;

pub use row::Row;

use crate::limits::OVERLAY_LOCK_WAIT;
use row::rows;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Why the overlay could not be read. The file is then left alone until it is fixed or removed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("runtime overlay {place}: {message}")]
pub struct OverlayError {
    /// The file's path, or the PostgreSQL url without its password.
    pub place: String,
    pub message: String,
}

/// Where the overlay lives: a file (the default), or a PostgreSQL table (`server.overlay_url`).
pub enum Backing {
    File(PathBuf),
    #[cfg(feature = "postgres")]
    Postgres {
        table: Box<postgres::Overlay>,
        shown: String,
    },
}

/// A change under way, holding the overlay against every other process until committed or
/// dropped.
pub enum Held {
    File(Lock),
    #[cfg(feature = "postgres")]
    Postgres(postgres::Txn),
}

/// Why a change could not be opened.
#[derive(Debug)]
pub enum BeginError {
    /// Another process holds the overlay, or its server cannot be reached: retry later.
    Busy(String),
    /// The overlay cannot be locked at all (its directory cannot be made).
    Failed(String),
}

impl Backing {
    /// The overlay `config` names.
    pub fn for_config(config: &crate::config::Config) -> Self {
        #[cfg(feature = "postgres")]
        if let Some(url) = &config.overlay_url {
            // The config checked the url with the same parser.
            let table = postgres::Overlay::new(url.expose()).expect("a url the config checked");
            let table = Box::new(table);
            return Backing::Postgres {
                table,
                shown: config.overlay_shown(),
            };
        }
        Backing::File(config.overlay_path.clone())
    }

    /// Where it is, fit for a message.
    pub fn shown(&self) -> String {
        match self {
            Backing::File(path) => path.display().to_string(),
            #[cfg(feature = "postgres")]
            Backing::Postgres { shown, .. } => shown.clone(),
        }
    }

    /// The file's path, when the overlay is a file.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Backing::File(path) => Some(path),
            #[cfg(feature = "postgres")]
            Backing::Postgres { .. } => None,
        }
    }

    /// Told when another process changed the overlay, for an overlay that says so (PostgreSQL's
    /// NOTIFY); a file is looked at instead (`reload`).
    pub fn changes(&self) -> Option<Arc<tokio::sync::Notify>> {
        match self {
            Backing::File(_) => None,
            #[cfg(feature = "postgres")]
            Backing::Postgres { table, .. } => Some(table.changes()),
        }
    }

    /// Reads the overlay now, at start: a file is read (blocking); a table is read by the first
    /// [`Backing::read`] instead (it needs the network), so it is empty until then.
    pub fn read_at_start(&self) -> Result<Vec<Row>, OverlayError> {
        self.path()
            .map_or(Ok(Vec::new()), |path| load(path).map(rows))
    }

    /// Reads the overlay as it stands.
    pub async fn read(&self) -> Result<Vec<Row>, OverlayError> {
        match self {
            Backing::File(path) => {
                let path = path.clone();
                let read = tokio::task::spawn_blocking(move || load(&path).map(rows)).await;
                read.unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))
            }
            #[cfg(feature = "postgres")]
            Backing::Postgres { table, shown } => {
                table.read().await.map_err(|message| OverlayError {
                    place: shown.clone(),
                    message: format!("cannot be read: {message}"),
                })
            }
        }
    }

    /// Opens a change: the overlay held against every other process (waiting for one that holds
    /// it, within [`OVERLAY_LOCK_WAIT`]), and what it holds as read under that hold.
    pub async fn begin(&self) -> Result<(Held, Result<Vec<Row>, OverlayError>), BeginError> {
        let busy = || {
            BeginError::Busy(format!(
                "another process has held the runtime overlay {} for {} s",
                self.shown(),
                OVERLAY_LOCK_WAIT.as_secs()
            ))
        };
        match self {
            Backing::File(path) => {
                let path = path.clone();
                let locked = tokio::time::timeout(
                    OVERLAY_LOCK_WAIT,
                    tokio::task::spawn_blocking(move || {
                        lock(&path).map(|lock| (lock, load(&path).map(rows)))
                    }),
                )
                .await
                .map_err(|_| busy())?;
                match locked {
                    Ok(Ok((lock, read))) => Ok((Held::File(lock), read)),
                    Ok(Err(e)) => Err(BeginError::Failed(format!("its lock cannot be taken: {e}"))),
                    Err(join) => std::panic::resume_unwind(join.into_panic()),
                }
            }
            #[cfg(feature = "postgres")]
            Backing::Postgres { table, .. } => {
                let wait = OVERLAY_LOCK_WAIT + std::time::Duration::from_secs(5);
                match tokio::time::timeout(wait, table.begin()).await {
                    Err(_) => Err(busy()),
                    Ok(Err(why)) => Err(BeginError::Busy(format!(
                        "the PostgreSQL overlay {}: {why}",
                        self.shown()
                    ))),
                    Ok(Ok((txn, entries))) => Ok((Held::Postgres(txn), Ok(entries))),
                }
            }
        }
    }

    /// Replaces the overlay with `entries` and lets go of it. On error nothing changed.
    pub async fn commit(&self, held: Held, entries: &[Row]) -> Result<(), String> {
        match (self, held) {
            (Backing::File(path), Held::File(lock)) => {
                let path = path.clone();
                let entries: Vec<Value> = entries.iter().map(Row::raw).cloned().collect();
                let saved = tokio::task::spawn_blocking(move || {
                    let saved = save(&path, &entries);
                    drop(lock);
                    saved
                })
                .await;
                match saved {
                    Ok(saved) => saved.map_err(|e| e.to_string()),
                    Err(join) => Err(format!("the writer stopped: {join}")),
                }
            }
            #[cfg(feature = "postgres")]
            (Backing::Postgres { table, .. }, Held::Postgres(txn)) => {
                table.commit(txn, entries).await
            }
            #[cfg(feature = "postgres")]
            _ => Err("a change held on another overlay".into()),
        }
    }
}

/// Reads the overlay. A missing file is an empty overlay.
pub fn load(path: &Path) -> Result<Vec<Value>, OverlayError> {
    let error = |message: String| OverlayError {
        place: path.display().to_string(),
        message,
    };
    let text = match std::fs::read(path) {
        Ok(text) => text,
        // A path whose directory does not exist (or is a file) holds no overlay yet either.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(Vec::new());
        }
        Err(e) => return Err(error(format!("cannot be read: {e}"))),
    };
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    match serde_json::from_slice::<Value>(&text) {
        Ok(Value::Array(entries)) => Ok(entries),
        Ok(other) => Err(error(format!(
            "expected a JSON array of store entries, found {}",
            match other {
                Value::Object(_) => "an object",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                _ => "null",
            }
        ))),
        Err(e) => Err(error(format!("is not valid JSON: {e}"))),
    }
}

/// Held while a process reads, changes and writes the overlay: an exclusive advisory lock
/// (`flock`) on `.<overlay>.lock` beside it. Released when dropped, and by the kernel when the
/// process dies, so a killed writer never leaves the overlay locked.
#[derive(Debug)]
pub struct Lock {
    _file: std::fs::File,
}

/// How the overlay file is kept from other users, in words for a log line: mode 0600 on Unix; on
/// Windows the ACL its directory passes down (under `%APPDATA%`: the user, SYSTEM and
/// Administrators), and tokens given at run time go to the Credential Manager, not the file.
pub const PRIVACY: &str = if cfg!(unix) {
    "mode 0600"
} else {
    "readable as its directory allows"
};

/// Takes the overlay's lock, waiting for another process that holds it. Blocking: call it off the
/// async threads.
///
/// The lock file is opened without following a link: one planted at its path (pointing at a file
/// of the user's, or where none is yet) would otherwise be opened for writing, or created, where
/// it points. A link, or anything but a plain file, is refused, naming the path.
pub fn lock(path: &Path) -> std::io::Result<Lock> {
    let (dir, file_name) = dir_and_name(path);
    std::fs::create_dir_all(&dir)?;
    let lock_path = dir.join(format!(".{file_name}.lock"));
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    #[cfg(windows)]
    {
        // FILE_FLAG_OPEN_REPARSE_POINT: open a link itself, never where it points.
        use std::os::windows::fs::OpenOptionsExt;
        options.custom_flags(0x0020_0000);
    }
    let not_plain = || {
        std::io::Error::other(format!(
            "{} is a link or not a plain file, and the overlay's lock file must be a plain file; remove it",
            lock_path.display()
        ))
    };
    let file = match options.open(&lock_path) {
        Ok(file) => file,
        // O_NOFOLLOW's refusal (ELOOP) said in words.
        Err(_)
            if std::fs::symlink_metadata(&lock_path).is_ok_and(|m| m.file_type().is_symlink()) =>
        {
            return Err(not_plain());
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if meta.file_type().is_symlink() || !meta.is_file() {
        return Err(not_plain());
    }
    file.lock()?;
    Ok(Lock { _file: file })
}

/// What tells one version of the overlay (or of the config file) from the next without reading
/// it: size, modification time and, on Unix, the inode a rename brings. `None` is no file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

impl Stamp {
    /// Whether `other` is another file put in this one's place (a rename over it, a symlink
    /// swapped), not this file written again in place. Never on a system without inodes.
    pub fn replaced_by(&self, other: &Stamp) -> bool {
        cfg!(unix) && self.inode != other.inode
    }
}

/// The file's stamp now. The path is followed through symlinks, so a Kubernetes ConfigMap (whose
/// files are symlinks swapped whole) is seen changing too.
pub fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = {
        use std::os::unix::fs::MetadataExt;
        meta.ino() ^ meta.dev().rotate_left(32)
    };
    #[cfg(not(unix))]
    let inode = 0;
    Some(Stamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        inode,
    })
}

fn dir_and_name(path: &Path) -> (PathBuf, String) {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = path.file_name().map_or_else(
        || crate::config::OVERLAY_FILE_NAME.to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    (dir, file_name)
}

/// Replaces the overlay with `entries`, atomically. On error the old file is untouched.
pub fn save(path: &Path, entries: &[Value]) -> std::io::Result<()> {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let (dir, file_name) = dir_and_name(path);
    std::fs::create_dir_all(&dir)?;
    let temp = dir.join(format!(
        ".{file_name}.tmp-{}-{}",
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    ));
    let result = write_then_rename(&temp, path, entries);
    if result.is_err() {
        // Best effort: a temp file left behind is ignored at start anyway.
        let _ = std::fs::remove_file(&temp);
    }
    result
}

fn write_then_rename(temp: &Path, path: &Path, entries: &[Value]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        // The overlay can hold outbound store tokens: readable by its owner only.
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(temp)?;
    let mut text = serde_json::to_vec_pretty(entries).map_err(std::io::Error::other)?;
    text.push(b'\n');
    file.write_all(&text)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(temp, path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_and_blank_files_are_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runtime-stores.json");
        assert!(load(&path).unwrap().is_empty());
        std::fs::write(&path, "  \n").unwrap();
        assert!(load(&path).unwrap().is_empty());
    }

    #[test]
    fn round_trip_keeps_every_entry_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/dir/runtime-stores.json");
        let entries = vec![
            json!({"name": "a", "type": "seren_memory", "url": "http://x"}),
            json!({"name": "future", "type": "quantum_brain", "url": "http://y", "shiny": [1, 2]}),
        ];
        save(&path, &entries).unwrap();
        assert_eq!(load(&path).unwrap(), entries);
        save(&path, &entries[1..]).unwrap();
        assert_eq!(load(&path).unwrap(), entries[1..]);
        // No temp file is left beside it.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["runtime-stores.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_private_to_its_owner() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runtime-stores.json");
        save(&path, &[json!({"name": "a", "token": "t"})]).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_planted_at_the_lock_files_path_is_refused_and_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runtime-stores.json");
        let lock_path = dir.path().join(".runtime-stores.json.lock");
        // A link to where no file is yet: followed, the lock would create it there.
        let elsewhere = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&elsewhere, &lock_path).unwrap();
        let refused = lock(&path).unwrap_err().to_string();
        assert!(
            refused.contains(".runtime-stores.json.lock is a link or not a plain file"),
            "{refused}"
        );
        assert!(!elsewhere.exists(), "the planted link was followed");
        // A link to a file of the user's: not opened for writing.
        let theirs = dir.path().join("theirs");
        std::fs::write(&theirs, "kept").unwrap();
        std::fs::remove_file(&lock_path).unwrap();
        std::os::unix::fs::symlink(&theirs, &lock_path).unwrap();
        assert!(lock(&path).is_err());
        // Not a plain file: a directory in its place.
        std::fs::remove_file(&lock_path).unwrap();
        std::fs::create_dir(&lock_path).unwrap();
        assert!(lock(&path).is_err());
        // The user's file is as it was.
        assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "kept");
    }

    #[test]
    fn the_lock_is_exclusive_between_holders_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runtime-stores.json");
        let held = lock(&path).unwrap();
        // A second open file description (as another process has) cannot take it meanwhile.
        let (tx, rx) = std::sync::mpsc::channel();
        let other = path.clone();
        let waiter = std::thread::spawn(move || {
            let second = lock(&other).unwrap();
            tx.send(()).unwrap();
            drop(second);
        });
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(200))
                .is_err(),
            "the lock was taken twice"
        );
        drop(held);
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the lock was not handed on");
        waiter.join().unwrap();
        // The lock file is hidden beside the overlay, which it never becomes.
        assert!(dir.path().join(".runtime-stores.json.lock").exists());
        assert!(load(&path).unwrap().is_empty());
    }

    #[test]
    fn a_write_changes_the_stamp_and_a_missing_file_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runtime-stores.json");
        assert_eq!(stamp(&path), None);
        save(&path, &[json!({"name": "a"})]).unwrap();
        let first = stamp(&path).unwrap();
        assert_eq!(stamp(&path), Some(first));
        // The same size and, on a coarse clock, the same time: the rename's new inode tells.
        save(&path, &[json!({"name": "b"})]).unwrap();
        assert_ne!(stamp(&path), Some(first));
    }

    #[test]
    fn corrupt_files_are_errors_that_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runtime-stores.json");
        for (text, needle) in [
            ("[{\"name\": ", "not valid JSON"),
            ("{\"name\": \"a\"}", "found an object"),
            ("\"stores\"", "found a string"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = load(&path).unwrap_err().to_string();
            assert!(
                err.contains(needle) && err.contains("runtime-stores.json"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_failed_write_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runtime-stores.json");
        save(&path, &[json!({"name": "kept"})]).unwrap();
        // A directory where the temp file's directory should be: the parent is a file.
        let blocked = path.join("child.json");
        assert!(save(&blocked, &[json!({})]).is_err());
        assert_eq!(load(&path).unwrap(), [json!({"name": "kept"})]);
        // A non-empty directory in the target's place: the temp file is written, the rename
        // fails, and the temp file is removed.
        let taken = dir.path().join("taken.json");
        std::fs::create_dir_all(taken.join("inside")).unwrap();
        assert!(save(&taken, &[json!({})]).is_err());
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        assert_eq!(load(&path).unwrap(), [json!({"name": "kept"})]);
    }
}
