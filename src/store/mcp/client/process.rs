//! A spawned stdio MCP server: started in a process group of its own (a job object on Windows)
//! and ended whole ([`ServerProcess`]), its stderr logged at debug and rate-limited, its exit
//! status read when it gave no session. Speaks no MCP.

use crate::config::Program;
use crate::limits::MCP_STDERR_LINES;
use crate::store::remote::Failure;
use crate::text::cut;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Why a spawned server gave no session: its exit status when it has exited.
pub(super) async fn unstarted(child: &mut ServerProcess, why: String) -> String {
    match tokio::time::timeout(Duration::from_millis(200), child.0.inner_mut().wait()).await {
        Ok(Ok(status)) => format!("the server exited before it answered initialize ({status})"),
        _ => format!("initialize: {why}"),
    }
}

/// A spawned MCP server and everything it started: a process group of its own on Unix, a job
/// object on Windows. A server is often a wrapper (`npx`, `uvx`, a shell script) whose real work is
/// a child of its own; ending the server alone would leave that child running. Dropping this ends
/// the whole group (SIGKILL to the group; the job terminated), as a reload that drops the store or
/// the callosum's own exit does. On Windows the job also dies with the callosum however it ends
/// (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`).
pub(super) struct ServerProcess(pub(super) Box<dyn process_wrap::tokio::ChildWrapper>);

impl ServerProcess {
    /// The server's own exit status, if it has exited (not its group's).
    pub(super) fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        self.0.inner_mut().try_wait()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // The group (or job) may be gone already: nothing is left to end then.
        let _ = self.0.start_kill();
    }
}

/// Spawns the server with its stdio piped, in a group of its own, ended when dropped. It gets
/// the callosum's environment without the callosum's own settings and token (`SEREN_SCC_*`: a
/// callosum spawned as a store reads only its own) and without systemd's `NOTIFY_SOCKET` and
/// `LISTEN_*` (they are the callosum's own), then the entry's `env`.
pub(super) fn spawn(program: &Program) -> Result<ServerProcess, Failure> {
    use process_wrap::tokio::{CommandWrap, KillOnDrop};
    let mut command = tokio::process::Command::new(&program.command);
    command
        .args(&program.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, _) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        if key_text.starts_with("SEREN_SCC_")
            || key_text == "NOTIFY_SOCKET"
            || key_text.starts_with("LISTEN_")
        {
            command.env_remove(key);
        }
    }
    command.envs(&program.env);
    let mut wrapped = CommandWrap::from(command);
    #[cfg(unix)]
    wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
    #[cfg(windows)]
    wrapped.wrap(process_wrap::tokio::JobObject);
    // The server itself is killed when its handle drops, group or no group.
    wrapped.wrap(KillOnDrop);
    wrapped.spawn().map(ServerProcess).map_err(|error| {
        Failure::Mcp(format!(
            "cannot start '{}': {error}",
            cut(&program.command, 80)
        ))
    })
}

/// Logs the server's stderr at debug, at most [`MCP_STDERR_LINES`] lines per ten seconds, each
/// cut to 2 KiB (the rest of a longer line counts as more lines); what is not logged is counted
/// and said. The pipe is always read to its end, so a chatty server never blocks on it.
pub(super) fn log_stderr(store: String, stderr: tokio::process::ChildStderr) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    tokio::spawn(async move {
        let mut reader = tokio::io::BufReader::new(stderr);
        let mut line = Vec::with_capacity(256);
        let mut window = Instant::now();
        let (mut logged, mut dropped) = (0u32, 0u64);
        loop {
            line.clear();
            match (&mut reader).take(2048).read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if window.elapsed() >= Duration::from_secs(10) {
                not_logged(&store, dropped);
                (window, logged, dropped) = (Instant::now(), 0, 0);
            }
            if logged < MCP_STDERR_LINES {
                logged += 1;
                let text = String::from_utf8_lossy(&line);
                tracing::debug!(store = %store, line = %crate::text::escaped(text.trim_end()), "mcp server stderr");
            } else {
                dropped += 1;
            }
        }
        not_logged(&store, dropped);
    });
}

fn not_logged(store: &str, dropped: u64) {
    if dropped > 0 {
        tracing::debug!(store = %store, dropped, "mcp server stderr lines not logged");
    }
}
