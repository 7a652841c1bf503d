//! The audit trail (contract §6c): one JSON line per write (a store added or removed, knobs
//! configured, a reload), appended to `server.audit_log` (default `audit.jsonl` beside the
//! overlay), mode 0600 on Unix. It names who did it ([`Actor`]), never a secret or a query: what
//! it is handed is names, store types, shown urls (no credentials) and the knobs that changed.
//!
//! A write that cannot be audited is still applied (the trail records changes; it does not gate
//! them): the failure is logged and counted, and `GET /metrics` shows the count.

use crate::view::Actor;
use serde::Serialize;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// What was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Add,
    Remove,
    Configure,
    Reload,
}

/// One line of the trail.
#[derive(Debug, Serialize)]
pub struct Entry<'a> {
    /// Unix seconds, as `GET /health`'s `ts`.
    pub ts: f64,
    pub actor: String,
    pub action: Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<Value>,
    pub ok: bool,
    /// Why a refused write was refused (the refusal's own words, which never hold a secret).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<&'a str>,
}

impl<'a> Entry<'a> {
    /// A line for `action` by `actor`, stamped now.
    pub fn new(actor: &Actor, action: Action, ok: bool) -> Self {
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        Self {
            ts,
            actor: actor.to_string(),
            action,
            store: None,
            changed: None,
            ok,
            detail: None,
        }
    }
}

/// The trail's file and its counts.
#[derive(Debug)]
pub struct Audit {
    path: PathBuf,
    /// Held while one line is appended, so two writes at once never interleave their bytes.
    /// Never held across an await (`record` is synchronous).
    writing: Mutex<()>,
    written: AtomicU64,
    failed: AtomicU64,
}

impl Audit {
    /// A trail at `path` (created on its first line).
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            writing: Mutex::new(()),
            written: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    /// Where the trail is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `entry`. The file is opened for each line (writes are rare), so a trail moved away
    /// by a log rotation is started again at the path. A failure is logged and counted, never
    /// returned: the write it records has happened.
    pub fn record(&self, entry: &Entry<'_>) {
        // An Entry is strings, numbers and JSON values: it always serializes.
        let mut line = serde_json::to_vec(entry).expect("an audit entry serializes");
        line.push(b'\n');
        // A poisoned lock only means another append panicked; the file is still whole lines.
        let _writing = self
            .writing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match append(&self.path, &line) {
            Ok(()) => {
                self.written.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    path = %self.path.display(),
                    error = %error.kind(),
                    action = ?entry.action,
                    actor = %entry.actor,
                    "the audit trail could not be written; the change itself was applied"
                );
            }
        }
    }

    /// Lines written, and lines that could not be.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.written.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }
}

/// Appends `line` to the file at `path`, creating it (and its folder) when missing: mode 0600 on
/// Unix, as the overlay, since who changed what is the operator's business.
fn append(path: &Path, line: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    // One write of the whole line: with O_APPEND, another process's lines never land inside it.
    file.write_all(line)?;
    file.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_appended_and_failures_counted() {
        let dir = tempfile::tempdir().unwrap();
        let audit = Audit::new(dir.path().join("sub").join("audit.jsonl"));
        let mut entry = Entry::new(&Actor::View("research".into()), Action::Add, true);
        entry.store = Some("papers");
        audit.record(&entry);
        audit.record(&Entry::new(&Actor::Reload, Action::Reload, true));
        let text = std::fs::read_to_string(audit.path()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["actor"], "research");
        assert_eq!(lines[0]["action"], "add");
        assert_eq!(lines[0]["store"], "papers");
        assert_eq!(lines[0]["ok"], true);
        assert!(lines[0].get("detail").is_none());
        assert_eq!(lines[1]["actor"], "reload");
        assert_eq!(audit.counts(), (2, 0));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(audit.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // A path that is a folder cannot take a line: counted, not raised.
        let blocked = Audit::new(dir.path().to_owned());
        blocked.record(&Entry::new(&Actor::Token, Action::Remove, true));
        assert_eq!(blocked.counts(), (0, 1));
    }
}
