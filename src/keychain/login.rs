//! The macOS login Keychain through `/usr/bin/security`, the command every Mac ships: the
//! generic-password items Python's `keyring` reads and writes (service and account as the pointer
//! names them). A program rather than the Security framework, so the macOS binary links libSystem
//! alone (contract §7) and needs no SDK to be built.
//!
//! The secret never reaches a command line (where `ps` would show it): it is written through
//! `security -i` on standard input, as hex (`-X`), and read back to check that it landed. Reads
//! take `-w`, which prints the password alone. Every call is bounded: at most
//! [`MAX_OUTPUT_BYTES`] read, and a `security` that has not answered in [`CALL_TIMEOUT`] is killed
//! (it may be waiting on a Keychain prompt nobody will see).
//!
//! Compiled on every Unix under test: the tests drive a stand-in `security` that keeps the CLI's
//! words and exit codes, since no Mac is at hand.

use super::entry::{KeychainError, Pointer, Store, usable};
use crate::secret::Secret;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `security`'s exit status for "The specified item could not be found in the keychain."
const NOT_FOUND: i32 = 44;
/// How long one `security` call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);
/// The most of `security`'s output read (a token is far shorter).
const MAX_OUTPUT_BYTES: u64 = 64 * 1024;

/// The login Keychain, reached through the `security` program.
pub struct LoginKeychain {
    program: PathBuf,
}

impl LoginKeychain {
    /// The Keychain through the system's `/usr/bin/security`.
    #[cfg(target_os = "macos")]
    pub fn system() -> Self {
        Self::with_program("/usr/bin/security".into())
    }

    /// The Keychain through `program` (a stand-in, in tests).
    pub fn with_program(program: PathBuf) -> Self {
        Self { program }
    }

    /// Runs `security` with `args` (and `input` on its stdin), within the bounds above.
    fn run(
        &self,
        pointer: &Pointer,
        args: &[&str],
        input: Option<&[u8]>,
    ) -> Result<Ran, KeychainError> {
        let failed = |why: String| KeychainError::Failed {
            pointer: pointer.clone(),
            why,
        };
        let mut child = Command::new(&self.program)
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                failed(format!(
                    "cannot run {}: {}",
                    self.program.display(),
                    e.kind()
                ))
            })?;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            // A `security` that exits early closes the pipe: its status says why.
            let _ = stdin.write_all(bytes);
        }
        let stdout = child.stdout.take();
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(stdout) = stdout {
                let _ = stdout.take(MAX_OUTPUT_BYTES).read_to_end(&mut out);
            }
            out
        });
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() < CALL_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(failed(format!(
                        "security did not answer in {} s (a Keychain prompt no one answered?)",
                        CALL_TIMEOUT.as_secs()
                    )));
                }
                Err(e) => return Err(failed(format!("security: {}", e.kind()))),
            }
        };
        let stdout = reader.join().unwrap_or_default();
        let mut stderr = Vec::new();
        if let Some(err) = child.stderr.take() {
            let _ = err.take(4096).read_to_end(&mut stderr);
        }
        Ok(Ran {
            code: status.code(),
            stdout,
            stderr: String::from_utf8_lossy(&stderr).trim().to_owned(),
        })
    }
}

/// What one `security` call gave.
struct Ran {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
}

impl Ran {
    /// The call's failure in words: `security`'s own first line (it names the item, never the
    /// secret), or its exit status.
    fn why(&self) -> String {
        match self.stderr.lines().next() {
            Some(line) if !line.is_empty() => {
                format!(
                    "security: {}",
                    crate::text::escaped(&crate::text::cut(line, 200))
                )
            }
            _ => format!("security exited with {:?}", self.code),
        }
    }
}

/// A service or account name `security -i` reads as one word: no white space, quote or
/// backslash (its line splitter would take them as syntax).
fn plain_word(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| !c.is_whitespace() && !c.is_control() && !matches!(c, '"' | '\'' | '\\'))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Store for LoginKeychain {
    fn get(&self, pointer: &Pointer) -> Result<Secret, KeychainError> {
        let ran = self.run(
            pointer,
            &[
                "find-generic-password",
                "-s",
                &pointer.service,
                "-a",
                &pointer.user,
                "-w",
            ],
            None,
        )?;
        match ran.code {
            Some(0) => {
                let text = String::from_utf8(ran.stdout).map_err(|_| KeychainError::Failed {
                    pointer: pointer.clone(),
                    why: "the entry is not UTF-8 text".into(),
                })?;
                // `-w` ends the password with one newline of its own.
                let text = text.strip_suffix('\n').unwrap_or(&text).to_owned();
                usable(pointer, text)
            }
            Some(NOT_FOUND) => Err(KeychainError::NotFound(pointer.clone())),
            _ => Err(KeychainError::Failed {
                pointer: pointer.clone(),
                why: ran.why(),
            }),
        }
    }

    fn set(&self, pointer: &Pointer, secret: &Secret) -> Result<(), KeychainError> {
        if !plain_word(&pointer.service) || !plain_word(&pointer.user) {
            return Err(KeychainError::Failed {
                pointer: pointer.clone(),
                why: "the callosum writes Keychain entries whose service and account have no \
                      space, quote or backslash"
                    .into(),
            });
        }
        // `-U` updates an item that exists; the line goes through stdin, never argv.
        let line = format!(
            "add-generic-password -U -s {} -a {} -X {}\n",
            pointer.service,
            pointer.user,
            hex(secret.expose().as_bytes())
        );
        let ran = self.run(pointer, &["-i"], Some(line.as_bytes()))?;
        if ran.code != Some(0) {
            return Err(KeychainError::Failed {
                pointer: pointer.clone(),
                why: ran.why(),
            });
        }
        // `security -i` may exit 0 although its command failed: read the entry back.
        match self.get(pointer) {
            Ok(held) if held == *secret => Ok(()),
            Ok(_) => Err(KeychainError::Failed {
                pointer: pointer.clone(),
                why: "security took the entry, but it reads back different".into(),
            }),
            Err(KeychainError::NotFound(_)) => Err(KeychainError::Failed {
                pointer: pointer.clone(),
                why: format!("security did not write the entry ({})", ran.why()),
            }),
            Err(other) => Err(other),
        }
    }

    fn delete(&self, pointer: &Pointer) -> Result<(), KeychainError> {
        let ran = self.run(
            pointer,
            &[
                "delete-generic-password",
                "-s",
                &pointer.service,
                "-a",
                &pointer.user,
            ],
            None,
        )?;
        match ran.code {
            Some(0) => Ok(()),
            Some(NOT_FOUND) => Err(KeychainError::NotFound(pointer.clone())),
            _ => Err(KeychainError::Failed {
                pointer: pointer.clone(),
                why: ran.why(),
            }),
        }
    }

    fn persistent(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "macOS login Keychain"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in `security`: the three verbs and `-i`, their exit codes, items kept in a JSON
    /// file beside it. Python, as the tests' other stand-ins.
    const STAND_IN: &str = r#"#!/usr/bin/env python3
import json, os, shlex, sys
db = os.path.join(os.path.dirname(os.path.abspath(__file__)), "items.json")
items = json.load(open(db)) if os.path.exists(db) else {}
def save(): json.dump(items, open(db, "w"))
def opts(args):
    out, i = {}, 0
    while i < len(args):
        if args[i] in ("-U", "-w"): out[args[i]] = True; i += 1
        else: out[args[i]] = args[i + 1]; i += 2
    return out
def run(argv):
    verb, o = argv[0], opts(argv[1:])
    key = o["-s"] + "\x00" + o["-a"]
    if verb == "find-generic-password":
        if key not in items:
            print("security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.", file=sys.stderr); return 44
        if "-w" in o: sys.stdout.write(items[key] + "\n")
        return 0
    if verb == "add-generic-password":
        if key in items and "-U" not in o:
            print("security: The specified item already exists in the keychain.", file=sys.stderr); return 45
        items[key] = bytes.fromhex(o["-X"]).decode() if "-X" in o else o["-w"]; save(); return 0
    if verb == "delete-generic-password":
        if key not in items:
            print("security: The specified item could not be found in the keychain.", file=sys.stderr); return 44
        del items[key]; save(); return 0
    print("unknown verb", file=sys.stderr); return 1
open(db + ".argv", "a").write(json.dumps(sys.argv[1:]) + "\n")
if sys.argv[1:] == ["-i"]:
    for line in sys.stdin:
        if line.strip(): run(shlex.split(line))
    sys.exit(0)
sys.exit(run(sys.argv[1:]))
"#;

    fn keychain(dir: &std::path::Path) -> LoginKeychain {
        use std::os::unix::fs::PermissionsExt;
        let program = dir.join("security");
        std::fs::write(&program, STAND_IN).unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        LoginKeychain::with_program(program)
    }

    #[test]
    fn an_entry_is_written_read_and_deleted_with_the_secret_off_the_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let keychain = keychain(dir.path());
        let pointer = Pointer::for_store("facts");
        assert_eq!(
            keychain.get(&pointer),
            Err(KeychainError::NotFound(pointer.clone()))
        );
        let secret = Secret::new("tok-\"quoted\"-'and'-a-long-tail-0123456789abcdef").unwrap();
        keychain.set(&pointer, &secret).unwrap();
        assert_eq!(keychain.get(&pointer).unwrap(), secret);
        // -U: a second write replaces the first.
        keychain
            .set(&pointer, &Secret::new("second").unwrap())
            .unwrap();
        assert_eq!(
            keychain.get(&pointer).unwrap(),
            Secret::new("second").unwrap()
        );
        keychain.delete(&pointer).unwrap();
        assert_eq!(
            keychain.delete(&pointer),
            Err(KeychainError::NotFound(pointer.clone()))
        );
        assert!(keychain.persistent());
        // What every call put on its command line, where `ps` shows it: never the secret.
        let argv = std::fs::read_to_string(dir.path().join("items.json.argv")).unwrap();
        assert_eq!(argv.lines().count(), 9, "{argv}");
        assert!(
            argv.contains("find-generic-password") && argv.contains("[\"-i\"]"),
            "{argv}"
        );
        for word in ["tok-", "second", &hex(b"second")] {
            assert!(!argv.contains(word), "{word} on a command line: {argv}");
        }
    }

    #[test]
    fn a_failing_or_missing_security_is_named_without_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let pointer = Pointer::parse("svc/user").unwrap();
        let missing = LoginKeychain::with_program(dir.path().join("no-such-program"));
        let error = missing.get(&pointer).unwrap_err().to_string();
        assert!(
            error.contains("cannot run") && error.contains("svc/user"),
            "{error}"
        );
        let keychain = keychain(dir.path());
        let spaced = Pointer::parse("my service/user").unwrap();
        let error = keychain
            .set(&spaced, &Secret::new("SECRET").unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("no space") && !error.contains("SECRET"),
            "{error}"
        );
    }
}
