//! The binary as a process: a clean environment, a config file, and a server whose stderr is read
//! line by line.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_seren-corpus-callosum");

/// The binary with a clean environment: no SEREN_SCC_* of the machine leaks in.
pub fn command(args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command.args(args).env_clear();
    if let Ok(tmp) = std::env::var("TMPDIR") {
        command.env("TMPDIR", tmp);
    }
    command
}

pub fn write_config(dir: &Path, yaml: &str) -> String {
    let path = dir.join("seren-corpus-callosum.yaml");
    std::fs::write(&path, yaml).unwrap();
    path.display().to_string()
}

pub async fn run(mut command: Command) -> Output {
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

/// A running server process whose stderr is read line by line; killed when dropped.
pub struct Server {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Server {
    pub fn start(command: Command) -> Self {
        Self::start_with_stdin(command, Stdio::null())
    }

    /// As [`Server::start`], with `stdin` as the process's standard input: a pipe
    /// (`Stdio::piped()`) stays open, unwritten, as long as the server is held.
    pub fn start_with_stdin(mut command: Command, stdin: Stdio) -> Self {
        let mut child = command
            .stdin(stdin)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits (bounded) for a stderr line containing `needle` and returns it.
    pub fn wait_for(&mut self, needle: &str) -> String {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(_) => panic!("no line with {needle:?}; saw:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the process and returns all it wrote to stderr.
    /// Asks the server to stop (SIGTERM), waits for it to exit (bounded: killed past 20 s), and
    /// returns how it exited (`None`: it had to be killed) with everything it wrote to stderr.
    pub fn terminate(self) -> (Option<std::process::ExitStatus>, String) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.ended(Duration::from_secs(20))
    }

    /// Waits, at most `limit`, for the process to exit (killed past it), and returns how it
    /// exited (`None`: it had to be killed) with everything written to stderr (by it, and by any
    /// process that shares its stderr, until they are gone too).
    pub fn ended(mut self, limit: Duration) -> (Option<std::process::ExitStatus>, String) {
        let began = std::time::Instant::now();
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if began.elapsed() < limit => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        // The reader ends at the pipe's end, once every line the process wrote is read.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(10)) {
            self.seen.push(line);
        }
        (status, self.seen.join("\n"))
    }

    pub fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(10)) {
            self.seen.push(line);
        }
        self.seen.join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `http://127.0.0.1:PORT` a server logged it listens on.
pub fn listening_url(line: &str) -> String {
    let start = line.find("http://").unwrap();
    line[start..]
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_owned()
}

/// Waits, at most `limit`, for `child` to exit: its status and all it wrote to stderr (when piped).
/// The wait runs on a thread of its own and reports through a channel, so nothing polls; a child
/// still running at `limit` is killed, and `None` says so.
pub fn exit_within(
    mut child: Child,
    limit: Duration,
) -> (Option<std::process::ExitStatus>, String) {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let status = child.wait().ok();
        let mut stderr = String::new();
        if let Some(mut pipe) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
        }
        let _ = tx.send((status, stderr));
    });
    match rx.recv_timeout(limit) {
        Ok(exited) => exited,
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            let (_, stderr) = rx.recv().unwrap_or((None, String::new()));
            (None, stderr)
        }
    }
}

/// Sends process `pid` the signal `kill` names `name` (`TERM`, `HUP`, `KILL`), and checks it went.
pub fn signal(pid: &str, name: &str) {
    let sent = std::process::Command::new("kill")
        .args([&format!("-{name}"), pid])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{name} {pid}");
}

/// Whether process `pid` runs. A zombie (exited, not yet reaped) counts as gone. Read from
/// /proc, or from `ps` where there is none (macOS).
pub fn alive(pid: &str) -> bool {
    if !Path::new("/proc/self/stat").exists() {
        return Command::new("ps")
            .args(["-o", "stat=", "-p", pid])
            .output()
            .map(|ps| {
                let stat = String::from_utf8_lossy(&ps.stdout);
                !stat.trim().is_empty() && !stat.trim().starts_with('Z')
            })
            .unwrap_or(false);
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| stat.split_whitespace().nth(2).is_none_or(|s| s != "Z"))
        .unwrap_or(false)
}

/// Waits, at most 10 s, for process `pid` to end; whether it did.
pub async fn ends(pid: &str) -> bool {
    ends_within(pid, Duration::from_secs(10)).await
}

/// Waits, at most `limit`, for process `pid` to end; whether it did.
pub async fn ends_within(pid: &str, limit: Duration) -> bool {
    tokio::time::timeout(limit, async {
        while alive(pid) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .is_ok()
}

/// A callosum in `stdio` mode, for an `mcp` store's `command: /bin/sh` with `args: [-c, script]`:
/// it writes its pid to the returned file first (it then `exec`s, keeping the pid), fanning no
/// stores of its own.
pub fn stdio_callosum(dir: &Path) -> (std::path::PathBuf, String) {
    let pid_file = dir.join("pid");
    let config = write_config(dir, "");
    let script = format!(
        "echo $$ > {}; exec {BIN} stdio -c {config}",
        pid_file.display()
    );
    (pid_file, script)
}

/// The pid a [`stdio_callosum`] wrote.
pub fn pid_in(pid_file: &Path) -> String {
    std::fs::read_to_string(pid_file).unwrap().trim().to_owned()
}

/// `GET url + path` from a server process: its JSON, once it answered 200.
pub async fn get_json(url: &str, path: &str) -> serde_json::Value {
    let answer = super::test_client()
        .get(format!("{url}{path}"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{path}");
    answer.json().await.unwrap()
}

/// A line of `/proc/PID/status` (`VmHWM:` the peak resident memory so far, `VmRSS:` now), in KiB.
/// Where there is no `/proc` (macOS), `ps` gives the resident memory now for either key: a peak
/// read that way is the memory still held after the load, never more than the real peak.
pub fn status_kib(pid: u32, key: &str) -> u64 {
    if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
        let line = status.lines().find(|l| l.starts_with(key)).unwrap();
        return line.split_whitespace().nth(1).unwrap().parse().unwrap();
    }
    let ps = std::process::Command::new("ps")
        .args(["-o", "rss=", "-p", &pid.to_string()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&ps.stdout).trim().parse().unwrap()
}
