//! The npm launcher (`xtask/npm/launcher.js`) run by node, as npm installs it, in front of the real
//! binary: the launcher ends as the binary ended (its code, or the signal that killed it), every
//! signal it can catch reaches the binary, SIGUSR1 opens no inspector, and a launcher killed
//! outright (SIGKILL) leaves no binary behind. Node is needed: without it these fail, saying so.

use crate::support::process::{self, BIN, Server};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The launcher as the package ships it.
const LAUNCHER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/xtask/npm/launcher.js");

/// How long a process may take to end after what should end it.
const END: Duration = Duration::from_secs(20);

/// `node` on PATH; these tests fail (they do not skip) without it.
fn node() -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("node"))
        .find(|node| node.is_file())
        .expect(
            "the npm launcher tests run xtask/npm/launcher.js with node, and no `node` is on \
             PATH: install Node.js 18 or newer",
        )
}

/// A signal's number on this system, as Node has it.
fn number(signal: &str) -> i32 {
    let listed = Command::new(node())
        .args([
            "-p",
            &format!("require('os').constants.signals.SIG{signal}"),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&listed.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("SIG{signal}'s number: {listed:?}"))
}

/// An install as npm lays it out, in a temporary directory: the launcher package, and this
/// platform's package whose binary is a script that writes its pid, then `exec`s the real binary
/// (which keeps the pid and the launcher as its parent).
struct Install {
    dir: tempfile::TempDir,
    launcher: PathBuf,
    pid_file: PathBuf,
    config: String,
}

impl Install {
    fn new() -> Self {
        Self::running(&format!("exec '{BIN}' \"$@\""))
    }

    /// The same layout, with `script` standing in for the binary (after the line that writes the
    /// pid).
    fn running(script: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let modules = dir.path().join("node_modules");
        let source = std::fs::read_to_string(LAUNCHER).unwrap();
        let launcher = modules.join("seren-corpus-callosum-rs/bin/seren-corpus-callosum.js");
        std::fs::create_dir_all(launcher.parent().unwrap()).unwrap();
        std::fs::write(&launcher, &source).unwrap();
        // The platform package the launcher itself names for this machine.
        let platform = format!(
            "\"{}-{}\": \"",
            match std::env::consts::OS {
                "macos" => "darwin",
                os => os,
            },
            match std::env::consts::ARCH {
                "x86_64" => "x64",
                "aarch64" => "arm64",
                arch => arch,
            }
        );
        let at = source
            .find(&platform)
            .expect("the launcher names this platform")
            + platform.len();
        let package = &source[at..at + source[at..].find('"').unwrap()];
        let bin = modules.join(package).join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(modules.join(package).join("package.json"), "{}").unwrap();
        let pid_file = dir.path().join("pid");
        let exe = bin.join("seren-corpus-callosum");
        std::fs::write(
            &exe,
            format!("#!/bin/sh\necho $$ > '{}'\n{script}\n", pid_file.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let config = process::write_config(dir.path(), "server:\n  port: 0\n");
        Self {
            dir,
            launcher,
            pid_file,
            config,
        }
    }

    /// `node launcher.js args...`, with a clean environment, in the install's directory (where a
    /// core dump of a process ended by SIGQUIT would land).
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(node());
        command
            .arg(&self.launcher)
            .args(args)
            .env_clear()
            .current_dir(self.dir.path());
        if let Ok(tmp) = std::env::var("TMPDIR") {
            command.env("TMPDIR", tmp);
        }
        command
    }

    /// The launcher serving on an ephemeral port, once the binary says it listens; and the
    /// binary's pid.
    fn serving(&self) -> (Server, Binary) {
        let mut launcher = Server::start(self.command(&["serve", "-c", &self.config]));
        launcher.wait_for("listening on");
        (launcher, self.binary())
    }

    fn binary(&self) -> Binary {
        let pid = process::pid_in(&self.pid_file);
        assert!(process::alive(&pid), "the binary {pid} runs");
        Binary(pid)
    }
}

/// The binary's pid; the process is killed when this drops, should a test fail with it running.
struct Binary(String);

impl Drop for Binary {
    fn drop(&mut self) {
        if process::alive(&self.0) {
            let _ = Command::new("kill").args(["-KILL", &self.0]).status();
        }
    }
}

#[tokio::test]
async fn the_launcher_exits_with_the_binarys_exit_code() {
    let install = Install::new();
    let missing = install.dir.path().join("missing.yaml");
    let (status, stderr) =
        Server::start(install.command(&["serve", "-c", &missing.display().to_string()])).ended(END);
    assert_eq!(status.and_then(|s| s.code()), Some(78), "{stderr}");
}

/// Killed by a signal, the binary ends its launcher by the same signal: what a shell, a
/// supervisor or an MCP host sees is how the binary ended (it read exit 0 for SIGPIPE, and an
/// abort in Node's inspector for SIGUSR1).
#[tokio::test]
async fn a_binary_killed_by_a_signal_ends_its_launcher_by_that_signal() {
    let install = Install::new();
    for signal in ["QUIT", "USR1", "TERM", "KILL"] {
        let (launcher, binary) = install.serving();
        process::signal(&binary.0, signal);
        let (status, stderr) = launcher.ended(END);
        let status = status.unwrap_or_else(|| panic!("SIG{signal}: the launcher still ran"));
        if signal == "TERM" {
            // The binary stops gracefully, and exits 0.
            assert_eq!(status.code(), Some(0), "SIG{signal}: {status:?} {stderr}");
        } else {
            assert_eq!(
                status.signal(),
                Some(number(signal)),
                "SIG{signal}: the launcher ended {status:?}: {stderr}"
            );
        }
        assert!(!stderr.contains("Debugger"), "SIG{signal}: {stderr}");
    }
}

/// The binary ignores SIGPIPE (as every Rust program does: a closed pipe is an error to it, not a
/// death), so a stand-in that ends itself by SIGPIPE shows the launcher ends by it too (it exited
/// 0). And SIGPIPE passed on by the launcher leaves the real binary serving, as when sent to it.
#[tokio::test]
async fn a_child_ended_by_sigpipe_ends_its_launcher_by_sigpipe() {
    let stand_in = Install::running("kill -PIPE $$; sleep 10");
    let (status, stderr) = Server::start(stand_in.command(&[])).ended(END);
    let status = status.unwrap_or_else(|| panic!("the launcher still ran: {stderr}"));
    assert_eq!(status.signal(), Some(number("PIPE")), "{status:?} {stderr}");

    let install = Install::new();
    let (launcher, binary) = install.serving();
    process::signal(&launcher.pid().to_string(), "PIPE");
    process::signal(&binary.0, "PIPE");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(process::alive(&binary.0) && process::alive(&launcher.pid().to_string()));
    let (status, stderr) = launcher.terminate();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{stderr}");
}

/// SIGUSR1 to the launcher opens no inspector (Node's default: a debugger port anyone on the
/// machine could attach to); it is passed on like the others, so the binary ends of it, as it
/// would without the launcher, and the launcher ends as it did.
#[tokio::test]
async fn sigusr1_to_the_launcher_opens_no_inspector_and_reaches_the_binary() {
    let install = Install::new();
    let (launcher, binary) = install.serving();
    process::signal(&launcher.pid().to_string(), "USR1");
    let (status, stderr) = launcher.ended(END);
    assert!(!stderr.contains("Debugger listening"), "{stderr}");
    let status = status.unwrap_or_else(|| panic!("the launcher still ran: {stderr}"));
    assert_eq!(status.signal(), Some(number("USR1")), "{status:?} {stderr}");
    assert!(
        process::ends(&binary.0).await,
        "the binary {} still runs",
        binary.0
    );
}

/// A signal the launcher can catch, and that would end it, reaches the binary: none leaves the
/// binary running behind a launcher that is gone (SIGQUIT and SIGUSR2 did).
#[tokio::test]
async fn a_signal_to_the_launcher_ends_the_binary_too() {
    let install = Install::new();
    for signal in ["QUIT", "USR2", "TERM", "INT"] {
        let (launcher, binary) = install.serving();
        process::signal(&launcher.pid().to_string(), signal);
        assert!(
            process::ends_within(&binary.0, END).await,
            "SIG{signal} to the launcher: the binary {} still runs",
            binary.0
        );
        let (status, stderr) = launcher.ended(END);
        let status = status.unwrap_or_else(|| panic!("SIG{signal}: the launcher still ran"));
        if matches!(signal, "TERM" | "INT") {
            // The binary stops gracefully on these, exits 0, and so does the launcher.
            assert_eq!(status.code(), Some(0), "SIG{signal}: {status:?} {stderr}");
            assert!(stderr.contains("shutting down"), "SIG{signal}: {stderr}");
        } else {
            assert_eq!(
                status.signal(),
                Some(number(signal)),
                "SIG{signal}: the launcher ended {status:?}: {stderr}"
            );
        }
    }
}

/// SIGKILL to the launcher passes nothing on: the binary notices its parent is gone
/// (SEREN_SCC_LAUNCHER_PID) and stops by itself, as at SIGTERM.
#[tokio::test]
async fn a_server_whose_launcher_is_killed_stops_by_itself() {
    let install = Install::new();
    let (mut launcher, binary) = install.serving();
    process::signal(&launcher.pid().to_string(), "KILL");
    assert!(
        process::ends_within(&binary.0, END).await,
        "the binary {} still runs, its launcher killed",
        binary.0
    );
    launcher.wait_for("the npm launcher that started this process is gone");
    launcher.wait_for("shutting down");
}

/// The same in stdio mode, with the host still holding stdin open: the session ends, and the
/// process with it (a read of stdin under way does not hold it).
#[tokio::test]
async fn a_stdio_server_whose_launcher_is_killed_stops_by_itself() {
    let install = Install::new();
    let mut launcher = Server::start_with_stdin(
        install.command(&["stdio", "-c", &install.config]),
        Stdio::piped(),
    );
    launcher.wait_for("configuration");
    // Past the start: the session is up and reading stdin.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let binary = install.binary();
    process::signal(&launcher.pid().to_string(), "KILL");
    assert!(
        process::ends_within(&binary.0, END).await,
        "the stdio binary {} still runs, its launcher killed",
        binary.0
    );
    launcher.wait_for("the npm launcher that started this process is gone");
}

/// A value the launcher would never write is said at warn, with what is wrong with it, and the
/// service runs on as without it.
#[tokio::test]
async fn a_bad_launcher_pid_is_warned_about_and_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let config = process::write_config(dir.path(), "server:\n  port: 0\n");
    let mut command = process::command(&["serve", "-c", &config]);
    command.env("SEREN_SCC_LAUNCHER_PID", "12ab");
    let mut server = Server::start(command);
    let line = server.wait_for("SEREN_SCC_LAUNCHER_PID ignored");
    assert!(
        line.contains("WARN") && line.contains("'12ab' is not a process id (decimal digits only)"),
        "{line}"
    );
    let url = process::listening_url(&server.wait_for("listening on"));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    process::get_json(&url, "/health").await;
    let (status, stderr) = server.terminate();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{stderr}");
}
