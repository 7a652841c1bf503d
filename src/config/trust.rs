//! Which config files found by search the user trusts with secrets, and with programs.
//!
//! A config file nobody named (no `--config`, no `SEREN_SCC_CONFIG`) but found in the working
//! directory may have come with a cloned repository or a shared folder. Such a file decides which
//! urls get the queries; left alone it would also decide which environment variable or keychain
//! entry is sent to them as a bearer (`token_env: AWS_SECRET_ACCESS_KEY`), and which program runs.
//! So, as git's `safe.directory` and direnv's `allow` do, it is trusted with those only once the
//! user says so: `seren-corpus-callosum trust` records the file's absolute path and the SHA-256 of
//! its bytes in the trust list, in the user's config dir. An edit changes the hash, and the file
//! needs trust again.
//!
//! The list is JSON, `{"trusted": [{"path": ..., "sha256": ...}]}`, read within
//! [`MAX_TRUST_LIST_BYTES`] and [`MAX_TRUSTED`] entries, written whole to a temporary file and
//! renamed into place. One that cannot be read trusts nothing and is never written over.

use crate::limits::{MAX_TRUST_LIST_BYTES, MAX_TRUSTED};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The trust list's file name, in the platform config dir.
pub const LIST_FILE_NAME: &str = "trusted-configs.json";

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct List {
    trusted: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    path: String,
    sha256: String,
}

/// What `trust` recorded.
#[derive(Debug)]
pub struct Trusted {
    /// The config file, absolute.
    pub file: PathBuf,
    /// The SHA-256 of its bytes, in hex.
    pub sha256: String,
    /// The trust list it went into.
    pub list: PathBuf,
}

/// Where the trust list lives: the platform config dir (`~/.config/seren-corpus-callosum/` on
/// Linux, `%APPDATA%\seren-corpus-callosum\config\` on Windows), or nowhere without a home.
pub fn list_path() -> Option<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "seren-corpus-callosum")?;
    Some(dirs.config_dir().join(LIST_FILE_NAME))
}

/// The SHA-256 of `bytes`, in lowercase hex.
pub fn sha256(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the list at `list` trusts the config file at `file` whose bytes are `text`. `Err` says
/// why the list could not be read (it then trusts nothing).
pub fn holds(list: &Path, file: &Path, text: &[u8]) -> Result<bool, String> {
    let Some(read) = read(list)? else {
        return Ok(false);
    };
    let wanted = Entry {
        path: key(file),
        sha256: sha256(text),
    };
    Ok(read.trusted.contains(&wanted))
}

/// Trusts the config file at `file` as its bytes now stand, in the list at `list`; the file's
/// older hashes go. `Err` says why nothing was recorded.
pub fn trust(list: &Path, file: &Path) -> Result<Trusted, String> {
    let text = std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    if text.len() as u64 > crate::limits::MAX_CONFIG_BYTES {
        return Err(format!(
            "{} is larger than a config file may be ({} KiB)",
            file.display(),
            crate::limits::MAX_CONFIG_BYTES / 1024
        ));
    }
    let entry = Entry {
        path: key(file),
        sha256: sha256(&text),
    };
    let mut read = read(list)?.unwrap_or_default();
    read.trusted.retain(|e| e.path != entry.path);
    if read.trusted.len() >= MAX_TRUSTED {
        return Err(format!(
            "{} already trusts {MAX_TRUSTED} files, the most it holds; remove some with `trust --forget`",
            list.display()
        ));
    }
    read.trusted.push(entry.clone());
    write(list, &read)?;
    Ok(Trusted {
        file: PathBuf::from(entry.path),
        sha256: entry.sha256,
        list: list.to_owned(),
    })
}

/// Stops trusting the config file at `file`, whatever its hash; whether it was trusted.
pub fn forget(list: &Path, file: &Path) -> Result<bool, String> {
    let Some(mut read) = read(list)? else {
        return Ok(false);
    };
    let path = key(file);
    let before = read.trusted.len();
    read.trusted.retain(|e| e.path != path);
    if read.trusted.len() == before {
        return Ok(false);
    }
    write(list, &read)?;
    Ok(true)
}

/// The file's path as the list keys it: absolute, links resolved when it exists.
fn key(file: &Path) -> String {
    let absolute = std::fs::canonicalize(file)
        .or_else(|_| std::path::absolute(file))
        .unwrap_or_else(|_| file.to_owned());
    absolute.display().to_string()
}

/// The list, `None` when there is none yet.
fn read(list: &Path) -> Result<Option<List>, String> {
    use std::io::Read;
    let file = match std::fs::File::open(list) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "the trust list {} cannot be read: {e}",
                list.display()
            ));
        }
    };
    let mut bytes = Vec::new();
    file.take(MAX_TRUST_LIST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("the trust list {} cannot be read: {e}", list.display()))?;
    if bytes.len() as u64 > MAX_TRUST_LIST_BYTES {
        return Err(format!(
            "the trust list {} is over {} KiB; it trusts nothing until it is fixed",
            list.display(),
            MAX_TRUST_LIST_BYTES / 1024
        ));
    }
    let parsed: List = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "the trust list {} is not what `trust` writes ({}); it trusts nothing until it is fixed",
            list.display(),
            crate::text::without_values(&e.to_string())
        )
    })?;
    if parsed.trusted.len() > MAX_TRUSTED {
        return Err(format!(
            "the trust list {} names more than {MAX_TRUSTED} files; it trusts nothing until it is fixed",
            list.display()
        ));
    }
    Ok(Some(parsed))
}

/// Writes the list whole: a temporary file beside it, renamed into place.
fn write(list: &Path, value: &List) -> Result<(), String> {
    let failed = |e: std::io::Error| format!("cannot write the trust list {}: {e}", list.display());
    if let Some(dir) = list.parent() {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    let mut json = serde_json::to_vec_pretty(value).map_err(|e| failed(e.into()))?;
    json.push(b'\n');
    let temp = list.with_extension("json.tmp");
    std::fs::write(&temp, json).map_err(failed)?;
    std::fs::rename(&temp, list).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        failed(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_trusted_as_it_stood_and_an_edit_needs_trust_again() {
        let dir = tempfile::tempdir().unwrap();
        let (list, file) = (dir.path().join("list.json"), dir.path().join("c.yaml"));
        std::fs::write(&file, "federation: {}\n").unwrap();
        assert_eq!(holds(&list, &file, b"federation: {}\n"), Ok(false));
        let trusted = trust(&list, &file).unwrap();
        assert_eq!(trusted.sha256, sha256(b"federation: {}\n"));
        assert_eq!(holds(&list, &file, b"federation: {}\n"), Ok(true));
        assert_eq!(
            holds(&list, &file, b"federation: {stores: []}\n"),
            Ok(false)
        );
        // Trusted again after the edit: one entry for the file, the new hash.
        std::fs::write(&file, "federation: {stores: []}\n").unwrap();
        trust(&list, &file).unwrap();
        assert_eq!(holds(&list, &file, b"federation: {}\n"), Ok(false));
        assert_eq!(read(&list).unwrap().unwrap().trusted.len(), 1);
        assert_eq!(forget(&list, &file), Ok(true));
        assert_eq!(forget(&list, &file), Ok(false));
        assert_eq!(
            holds(&list, &file, b"federation: {stores: []}\n"),
            Ok(false)
        );
    }

    #[test]
    fn a_list_that_cannot_be_read_trusts_nothing_and_is_never_written_over() {
        let dir = tempfile::tempdir().unwrap();
        let (list, file) = (dir.path().join("list.json"), dir.path().join("c.yaml"));
        std::fs::write(&file, "x: 1\n").unwrap();
        for (text, why) in [
            (
                "{\"trusted\": 3}",
                "is not what `trust` writes (invalid type",
            ),
            (
                "{\"trusted\": [], \"all\": true}",
                "is not what `trust` writes (unknown field",
            ),
            ("not json", "is not what `trust` writes"),
        ] {
            std::fs::write(&list, text).unwrap();
            let refused = holds(&list, &file, b"x: 1\n").unwrap_err();
            assert!(refused.contains(why), "{refused}");
            assert!(trust(&list, &file).unwrap_err().contains(why));
            assert_eq!(std::fs::read_to_string(&list).unwrap(), text);
        }
        std::fs::write(&list, vec![b' '; MAX_TRUST_LIST_BYTES as usize + 1]).unwrap();
        assert!(
            holds(&list, &file, b"x: 1\n")
                .unwrap_err()
                .contains("is over")
        );
    }

    #[test]
    fn the_hash_is_sha256() {
        assert_eq!(
            sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
