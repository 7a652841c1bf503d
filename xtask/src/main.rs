//! `cargo xtask dist`: every release artifact of seren-corpus-callosum for the platform it runs on,
//! written into `target/dist/` (contract §7):
//!
//! - a wheel built by maturin (`bindings = "bin"`) with `[profile.packaged]`; on Linux linked by zig
//!   against glibc 2.28 and tagged `manylinux_2_28`, so `uvx` and `pip` install it on the
//!   distributions people have;
//! - the npm packages: the launcher package (`bin`: `seren-corpus-callosum`) and this platform's
//!   package, which carries the binary and is one of the launcher's `optionalDependencies`;
//! - an MCP Bundle (`.mcpb`) packed by the official `mcpb` CLI from `mcp-manifests/mcpb/`;
//! - `server.json` for the MCP Registry: `mcp-manifests/server.json` plus one `mcpb` package per
//!   bundle in `target/dist/`, with its `fileSha256`.
//!
//! `cargo xtask server-json` writes only the last, from the bundles already in `target/dist/`: the
//! release workflow gathers every platform's bundle there and runs it once.
//!
//! The tools come pinned: maturin and zig from `xtask/requirements.txt` into `target/xtask-venv`,
//! mcpb from `xtask/package.json` into `xtask/node_modules`. Needs python3 and npm; no Rust target
//! but the host's.

mod bundle;
mod npm;
mod platform;
mod registry;
mod run;

use platform::Platform;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The command every package installs, and the binary's name.
pub const COMMAND: &str = "seren-corpus-callosum";
/// The distribution name on PyPI and npm. `seren-corpus-callosum` on PyPI is the Python service.
pub const DIST_NAME: &str = "seren-corpus-callosum-rs";
/// The Cargo profile of the published binaries (Cargo.toml says why not `release`).
pub const PROFILE: &str = "packaged";
/// The oldest glibc the Linux binary needs, and so the wheel's manylinux policy.
pub const MANYLINUX: &str = "manylinux_2_28";

const USAGE: &str = "usage: cargo xtask <command>

  dist          build the wheel, the npm packages, the MCP Bundle and server.json for this
                platform into target/dist/
  server-json   write target/dist/server.json from the bundles already in target/dist/";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["dist"] => Workspace::find().and_then(|ws| ws.dist()),
        ["server-json"] => Workspace::find().and_then(|ws| ws.server_json().map(drop)),
        ["help" | "--help" | "-h"] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(format!("{USAGE}\n\nunknown arguments: {args:?}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error}");
            ExitCode::FAILURE
        }
    }
}

/// A failure, worded for the person running the xtask.
pub type Result<T> = std::result::Result<T, String>;

/// The checkout: where the sources are and where the artifacts go.
pub struct Workspace {
    pub root: PathBuf,
    pub target: PathBuf,
    pub dist: PathBuf,
    pub version: String,
}

impl Workspace {
    fn find() -> Result<Workspace> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .ok_or("xtask has no parent directory")?
            .to_path_buf();
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .map(|dir| {
                if dir.is_absolute() {
                    dir
                } else {
                    root.join(dir)
                }
            })
            .unwrap_or_else(|| root.join("target"));
        let manifest = read(&root.join("Cargo.toml"))?;
        let version = package_version(&manifest).ok_or("Cargo.toml has no [package] version")?;
        Ok(Workspace {
            dist: target.join("dist"),
            root,
            target,
            version,
        })
    }

    fn dist(&self) -> Result<()> {
        let platform = Platform::host()?;
        println!(
            "xtask: seren-corpus-callosum {} for {} into {}",
            self.version,
            platform.triple,
            self.dist.display()
        );
        fresh_dir(&self.dist)?;
        let binary = self.wheel(platform)?;
        run::check_version(&binary, &self.version)?;
        npm::packages(self, platform, &binary)?;
        bundle::pack(self, platform, &binary)?;
        self.server_json()?;
        println!("xtask: done; {}:", self.dist.display());
        let mut artifacts = files_in(&self.dist, |_| true)?;
        artifacts.sort();
        for artifact in artifacts {
            let size = std::fs::metadata(&artifact).map_or(0, |m| m.len());
            println!(
                "  {:>10}  {}",
                format_size(size),
                artifact.file_name().unwrap_or_default().to_string_lossy()
            );
        }
        Ok(())
    }

    /// Builds the wheel with maturin and returns the binary it packed.
    fn wheel(&self, platform: &Platform) -> Result<PathBuf> {
        let venv = run::tools_venv(self)?;
        let mut maturin = run::venv_command(&venv, "maturin");
        maturin
            .current_dir(&self.root)
            .args(["build", "--profile", PROFILE, "--locked", "--target"])
            .arg(platform.triple)
            .arg("--out")
            .arg(&self.dist);
        if platform.is_linux() {
            maturin.args(["--zig", "--compatibility", MANYLINUX]);
        }
        run::status(&mut maturin, "maturin build")?;
        let binary = self
            .target
            .join(platform.triple)
            .join(PROFILE)
            .join(platform.exe(COMMAND));
        if !binary.is_file() {
            return Err(format!(
                "maturin reported success but {} is not there",
                binary.display()
            ));
        }
        let wheels = files_in(&self.dist, |name| name.ends_with(".whl"))?;
        if wheels.len() != 1 {
            return Err(format!(
                "expected one wheel in target/dist, found {wheels:?}"
            ));
        }
        Ok(binary)
    }

    /// Writes `target/dist/server.json`: the checked-in entry plus the bundles in `target/dist/`.
    fn server_json(&self) -> Result<PathBuf> {
        let template = read(&self.root.join("mcp-manifests").join("server.json"))?;
        let mut bundles = files_in(&self.dist, |name| name.ends_with(".mcpb"))?;
        bundles.sort();
        let server = registry::server_json(&template, &self.version, &bundles)?;
        let path = self.dist.join("server.json");
        write(&path, &server)?;
        println!(
            "xtask: {} lists {} bundle(s)",
            path.display(),
            bundles.len()
        );
        Ok(path)
    }
}

/// `version = "..."` of the `[package]` table: the first `version` key after `[package]` and
/// before the next table.
fn package_version(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package
            && let Some(value) = line.strip_prefix("version")
            && let Some(value) = value.trim_start().strip_prefix('=')
        {
            return Some(value.trim().trim_matches('"').to_owned());
        }
    }
    None
}

pub fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

pub fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `value` as indented JSON with a final newline, the way the files it replaces are written.
pub fn write_json(path: &Path, value: &serde_json::Value) -> Result<()> {
    write(path, &format!("{}\n", pretty(value)))
}

pub fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).expect("JSON values serialize")
}

/// `path` as an empty directory: what an earlier run left there is removed.
pub fn fresh_dir(path: &Path) -> Result<()> {
    if path.exists() {
        std::fs::remove_dir_all(path)
            .map_err(|e| format!("cannot clear {}: {e}", path.display()))?;
    }
    mkdir(path)
}

pub fn mkdir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|e| format!("cannot create {}: {e}", path.display()))
}

pub fn copy(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

/// The files directly in `dir` whose names pass `keep`; none when `dir` is absent.
pub fn files_in(dir: &Path, keep: impl Fn(&str) -> bool) -> Result<Vec<PathBuf>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let path = entry.path();
        if path.is_file() && path.file_name().is_some_and(|n| keep(&n.to_string_lossy())) {
            files.push(path);
        }
    }
    Ok(files)
}

fn format_size(bytes: u64) -> String {
    if bytes < 1024 * 1024 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_version_is_read_from_its_own_table() {
        let manifest = "[workspace]\nversion = \"9\"\n[package]\nname = \"x\"\nversion = \"1.2.3\"\n[dependencies]\nversion = \"4\"\n";
        assert_eq!(package_version(manifest).as_deref(), Some("1.2.3"));
        assert_eq!(
            package_version("[package]\nname = \"x\"\n[deps]\nversion = \"1\""),
            None
        );
    }
}
