//! The npm launcher's child. `xtask/npm/launcher.js` runs this binary and names itself in
//! `SEREN_SCC_LAUNCHER_PID`; it passes on every signal it can catch, but nothing catches SIGKILL
//! (nor a Windows process ended outright), and a launcher gone that way would leave the service
//! running with nobody to stop it. So a process that serves watches its launcher and stops, as at
//! SIGTERM, once it is gone: on Unix when its parent is no longer that pid (looked at every
//! [`LAUNCHER_LOOK_EVERY`]); on Windows when the named pipe the launcher holds open breaks.

use crate::limits::LAUNCHER_LOOK_EVERY;
use std::ffi::OsStr;
use tokio_util::sync::CancellationToken;

/// The variable the launcher puts its process id in.
pub const PID_VAR: &str = "SEREN_SCC_LAUNCHER_PID";

/// The highest process id there is: `pid_t` is an `i32` on Unix, a `DWORD` on Windows.
#[cfg(unix)]
const MAX_PID: u64 = i32::MAX as u64;
#[cfg(not(unix))]
const MAX_PID: u64 = u32::MAX as u64;

/// The launcher's pid, from [`PID_VAR`]: `None` when the variable is unset or set to nothing, or
/// when its value is no process id (said at warn, with what is wrong with it, then ignored).
pub fn from_env() -> Option<u32> {
    let value = std::env::var_os(PID_VAR)?;
    if value.is_empty() {
        return None;
    }
    match parse(&value) {
        Ok(pid) => Some(pid),
        Err(why) => {
            tracing::warn!(
                "{PID_VAR} ignored: {why}; this process will not stop by itself when the npm \
                 launcher that started it is killed"
            );
            None
        }
    }
}

/// A process id as the launcher writes it: decimal digits, 1 to [`MAX_PID`]. The error names
/// the value (escaped, cut) and what is wrong with it.
pub fn parse(value: &OsStr) -> Result<u32, String> {
    let Some(text) = value.to_str() else {
        return Err(format!(
            "{} is not UTF-8, so no process id",
            crate::text::escaped(&value.to_string_lossy())
        ));
    };
    let quoted = crate::text::escaped(text);
    if text.is_empty() {
        return Err("the value is empty, so no process id".into());
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{quoted} is not a process id (decimal digits only)"
        ));
    }
    let pid = text
        .parse::<u64>()
        .ok()
        .filter(|pid| *pid <= MAX_PID)
        .and_then(|pid| u32::try_from(pid).ok());
    match pid {
        Some(0) => Err(format!("{quoted} is not a process id (0 is none)")),
        Some(pid) => Ok(pid),
        None => Err(format!(
            "{quoted} is not a process id (the highest is {MAX_PID})"
        )),
    }
}

/// Starts watching the launcher `pid` (on the current runtime): `gone` is cancelled once the
/// launcher is gone, which is said at info.
pub fn watch(pid: u32, gone: CancellationToken) {
    tokio::spawn(async move {
        if watching(pid).await {
            tracing::info!(
                launcher = pid,
                "the npm launcher that started this process is gone (killed?); stopping"
            );
            gone.cancel();
        }
    });
}

/// Returns once the parent is no longer `pid` (true); looks at once, then every
/// [`LAUNCHER_LOOK_EVERY`]. A parent other than `pid` at the first look is a launcher gone before
/// this process looked (or a variable the launcher did not set).
#[cfg(unix)]
async fn watching(pid: u32) -> bool {
    let mut every = tokio::time::interval(LAUNCHER_LOOK_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if std::os::unix::process::parent_id() != pid {
            return true;
        }
    }
}

/// Connects to the launcher's pipe and returns once it breaks (true); false when it cannot be
/// watched (said at warn). No pipe by that name is a launcher gone before this process looked
/// (or a variable the launcher did not set).
#[cfg(windows)]
async fn watching(pid: u32) -> bool {
    use tokio::io::AsyncReadExt;
    use tokio::net::windows::named_pipe::ClientOptions;
    /// ERROR_PIPE_BUSY: every instance of the pipe is taken for now.
    const PIPE_BUSY: i32 = 231;
    let name = pipe_name(pid);
    let mut pipe = loop {
        match ClientOptions::new().open(&name) {
            Ok(pipe) => break pipe,
            Err(error) if error.raw_os_error() == Some(PIPE_BUSY) => {
                tokio::time::sleep(LAUNCHER_LOOK_EVERY).await;
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return true,
            Err(error) => {
                tracing::warn!(
                    %error,
                    "cannot watch the npm launcher's pipe {name}; this process will not stop by \
                     itself when the launcher is killed"
                );
                return false;
            }
        }
    };
    // The launcher writes nothing: whatever comes is read and passed over, until the pipe ends.
    let mut bytes = [0u8; 64];
    loop {
        match pipe.read(&mut bytes).await {
            Ok(0) | Err(_) => return true,
            Ok(_) => {}
        }
    }
}

#[cfg(not(any(unix, windows)))]
async fn watching(_pid: u32) -> bool {
    std::future::pending().await
}

/// The pipe the launcher serves on Windows, by its pid.
#[cfg(any(windows, test))]
fn pipe_name(pid: u32) -> String {
    format!(r"\\.\pipe\seren-corpus-callosum-launcher-{pid}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(value: &str) -> String {
        parse(OsStr::new(value)).expect_err(value)
    }

    #[test]
    fn a_pid_is_read_and_anything_else_is_named_with_its_problem() {
        assert_eq!(parse(OsStr::new("4242")), Ok(4242));
        assert_eq!(parse(OsStr::new("1")), Ok(1));
        assert!(why("abc").contains("'abc' is not a process id (decimal digits only)"));
        assert!(why("-5").contains("decimal digits only"));
        assert!(why(" 12").contains("decimal digits only"));
        assert!(why("12\n").contains(r"'12\u{a}'"), "{}", why("12\n"));
        assert!(why("0").contains("0 is none"));
        assert!(why("").contains("empty"));
        assert!(why("99999999999").contains("the highest is"));
        assert!(why("99999999999999999999999").contains("the highest is"));
        #[cfg(unix)]
        assert!(why("2147483648").contains("the highest is 2147483647"));
    }

    #[test]
    fn the_windows_pipe_is_named_by_the_launchers_pid() {
        assert_eq!(pipe_name(42), r"\\.\pipe\seren-corpus-callosum-launcher-42");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_parent_other_than_the_launcher_is_a_launcher_gone() {
        let parent = std::os::unix::process::parent_id();
        let gone = CancellationToken::new();
        watch(parent.wrapping_add(1), gone.clone());
        tokio::time::timeout(LAUNCHER_LOOK_EVERY / 2, gone.cancelled())
            .await
            .expect("seen at the first look");
        // The parent it was given: past a second look, nothing is gone.
        let stays = CancellationToken::new();
        watch(parent, stays.clone());
        let waited = tokio::time::timeout(LAUNCHER_LOOK_EVERY * 3 / 2, stays.cancelled()).await;
        assert!(waited.is_err());
    }

    /// The launcher's pipe, served here as launcher.js serves it: the watch holds on while it is
    /// up, and ends once it is closed; no pipe by that name at all is a launcher gone too.
    #[cfg(windows)]
    #[tokio::test]
    async fn a_broken_or_missing_pipe_is_a_launcher_gone() {
        use tokio::net::windows::named_pipe::ServerOptions;
        let pid = std::process::id();
        let server = ServerOptions::new()
            .first_pipe_instance(true)
            .create(pipe_name(pid))
            .unwrap();
        let watched = tokio::spawn(watching(pid));
        server.connect().await.unwrap();
        tokio::time::sleep(LAUNCHER_LOOK_EVERY).await;
        assert!(!watched.is_finished(), "the pipe is up");
        drop(server);
        let gone = tokio::time::timeout(LAUNCHER_LOOK_EVERY * 5, watched).await;
        assert!(gone.expect("seen once the pipe broke").unwrap());
        assert!(watching(pid.wrapping_add(1)).await, "no pipe");
    }
}
