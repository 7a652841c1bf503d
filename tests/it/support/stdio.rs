//! The binary over raw stdio: its stdin and stdout as pipes, every stdout line checked to be
//! JSON-RPC.

use serde_json::{Value, json};

/// A raw stdio session: the binary's stdin and stdout as pipes, for checks rmcp's client hides.
pub struct RawStdio {
    child: std::process::Child,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl RawStdio {
    pub fn start(args: &[&str]) -> Self {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_seren-corpus-callosum"))
            .args(args)
            .env_clear()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        Self { child, stdout }
    }

    pub fn send(&mut self, message: Value) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Reads stdout lines until the answer with `id`; every line must be JSON-RPC.
    pub fn answer(&mut self, id: u64) -> Value {
        self.answer_to(json!(id))
    }

    pub fn send_raw(&mut self, line: &[u8]) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// As [`RawStdio::answer`], for any id (a JSON-RPC error to a parse error has a null id).
    pub fn answer_to(&mut self, id: Value) -> Value {
        use std::io::BufRead;
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "stdout closed"
            );
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not JSON-RPC on stdout: {line:?}: {e}"));
            assert_eq!(message["jsonrpc"], "2.0", "{message}");
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Closes stdin and waits for the process to exit (bounded), returning its status and stderr.
    pub fn close(mut self) -> (std::process::ExitStatus, String) {
        drop(self.child.stdin.take());
        let (status, stderr) =
            crate::support::process::exit_within(self.child, std::time::Duration::from_secs(20));
        let status = status
            .unwrap_or_else(|| panic!("the server did not exit after stdin closed: {stderr}"));
        (status, stderr)
    }
}
