//! `cargo xtask dist`: every release artifact of seren-corpus-callosum, for every platform, built on
//! one Linux x86_64 machine and written into `target/dist/` (contract §7). Per platform
//! (`platform.rs`: Linux x86_64 and aarch64, macOS arm64 and x86_64, Windows x86_64):
//!
//! - a wheel built by maturin (`bindings = "bin"`) with `[profile.packaged]`, tagged for pip and
//!   uv: `manylinux_2_28` (zig links against glibc 2.28), `macosx_11_0`/`macosx_10_15` (zig links
//!   against libSystem alone), `win_amd64` (MinGW-w64, a static C runtime);
//! - the platform's npm package, which carries the binary and is one of the launcher package's
//!   `optionalDependencies`;
//! - an MCP Bundle (`.mcpb`) packed by the official `mcpb` CLI from `mcp-manifests/mcpb/`;
//!
//! then once the npm launcher package (`bin`: `seren-corpus-callosum`) and `server.json` for the
//! MCP Registry (`mcp-manifests/server.json` plus one `mcpb` package per bundle, with its
//! `fileSha256`). Each cross-built binary's headers are checked (`binary.rs`): a Windows `.exe`
//! imports only DLLs Windows ships, a macOS binary loads libSystem and no framework and names its
//! oldest macOS. The host's binary prints its version.
//!
//! `--platform NAME` (a triple or a suffix such as `darwin-arm64`; repeatable) builds some;
//! `--profile NAME` builds with another Cargo profile (CI's `dist-check`: no LTO, so five targets
//! fit its time). `cargo xtask server-json` writes only `server.json`, from the bundles already in
//! `target/dist/`.
//!
//! The tools come pinned: maturin and zig from `xtask/requirements.txt` into `target/xtask-venv`,
//! mcpb from `xtask/package.json` into `xtask/node_modules`. Needs python3, npm, rustup (the
//! targets are added when missing) and, for Windows, MinGW-w64's gcc.

mod binary;
mod bundle;
mod npm;
mod platform;
mod registry;
mod run;

use platform::{Link, Platform};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The command every package installs, and the binary's name.
pub const COMMAND: &str = "seren-corpus-callosum";
/// The distribution name on PyPI and npm. `seren-corpus-callosum` on PyPI is the Python service.
pub const DIST_NAME: &str = "seren-corpus-callosum-rs";
/// The Cargo profile of the published binaries (Cargo.toml says why not `release`).
pub const PROFILE: &str = "packaged";
/// The MinGW-w64 C compiler and linker the Windows build needs.
const MINGW_GCC: &str = "x86_64-w64-mingw32-gcc";
/// The oldest glibc the Linux binary needs, and so the wheel's manylinux policy.
pub const MANYLINUX: &str = "manylinux_2_28";

const USAGE: &str = "usage: cargo xtask <command>

  dist [--platform NAME]... [--profile PROFILE]
                build the wheels, the npm packages, the MCP Bundles and server.json for every
                platform (or those named: linux-x64-gnu, linux-arm64-gnu, darwin-arm64,
                darwin-x64, win32-x64-gnu, or their target triples) into target/dist/, with
                the Cargo profile `packaged` (or PROFILE)
  server-json   write target/dist/server.json from the bundles already in target/dist/";

/// What `dist` was asked to build.
struct DistArgs {
    platforms: Vec<&'static Platform>,
    profile: String,
}

impl DistArgs {
    fn parse(args: &[&str]) -> Result<DistArgs> {
        let mut parsed = DistArgs {
            platforms: Vec::new(),
            profile: PROFILE.to_owned(),
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut value = |flag: &str| {
                args.next()
                    .map(|v| v.to_string())
                    .ok_or(format!("{flag} needs a value"))
            };
            match *arg {
                "--platform" => {
                    let platform = Platform::named(&value("--platform")?)?;
                    if !parsed.platforms.iter().any(|p| p.triple == platform.triple) {
                        parsed.platforms.push(platform);
                    }
                }
                "--profile" => parsed.profile = value("--profile")?,
                other => return Err(format!("{USAGE}\n\nunknown argument to dist: {other:?}")),
            }
        }
        if parsed.platforms.is_empty() {
            parsed.platforms = platform::ALL.iter().collect();
        }
        Ok(parsed)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["dist", ref rest @ ..] => {
            DistArgs::parse(rest).and_then(|dist| Workspace::find()?.dist(&dist))
        }
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

    fn dist(&self, args: &DistArgs) -> Result<()> {
        let names: Vec<_> = args.platforms.iter().map(|p| p.suffix()).collect();
        println!(
            "xtask: seren-corpus-callosum {} for {} (profile {}) into {}",
            self.version,
            names.join(", "),
            args.profile,
            self.dist.display()
        );
        fresh_dir(&self.dist)?;
        let host = Platform::host_triple()?;
        for platform in &args.platforms {
            let started = std::time::Instant::now();
            let binary = self.wheel(platform, &args.profile)?;
            check_binary(platform, &binary, &host, &self.version)?;
            npm::platform_package(self, platform, &binary)?;
            bundle::pack(self, platform, &binary)?;
            println!(
                "xtask: {} built and checked in {:.0} s",
                platform.suffix(),
                started.elapsed().as_secs_f64()
            );
        }
        npm::launcher(self)?;
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

    /// Builds `platform`'s wheel with maturin and returns the binary it packed.
    fn wheel(&self, platform: &Platform, profile: &str) -> Result<PathBuf> {
        let venv = run::tools_venv(self)?;
        run::rust_target(platform.triple)?;
        let before = files_in(&self.dist, |name| name.ends_with(".whl"))?;
        let mut maturin = run::venv_command(&venv, "maturin");
        maturin
            .current_dir(&self.root)
            .args(["build", "--profile", profile, "--locked", "--target"])
            .arg(platform.triple)
            .arg("--out")
            .arg(&self.dist);
        match &platform.link {
            Link::Manylinux => {
                maturin.args(["--zig", "--compatibility", MANYLINUX]);
            }
            Link::MacOs { min_os, .. } => {
                maturin
                    .args(["--zig", "--no-default-features"])
                    .env("MACOSX_DEPLOYMENT_TARGET", min_os);
            }
            Link::WindowsGnu => {
                run::output(
                    std::process::Command::new(MINGW_GCC).arg("--version"),
                    &format!(
                        "{MINGW_GCC} (the Windows build's C compiler and linker: Debian's \
                         gcc-mingw-w64-x86-64)"
                    ),
                )?;
            }
        }
        run::status(
            &mut maturin,
            &format!("maturin build for {}", platform.triple),
        )?;
        let binary = self
            .target
            .join(platform.triple)
            .join(profile)
            .join(platform.exe(COMMAND));
        if !binary.is_file() {
            return Err(format!(
                "maturin reported success but {} is not there",
                binary.display()
            ));
        }
        let wheels = files_in(&self.dist, |name| name.ends_with(".whl"))?;
        let new: Vec<_> = wheels.iter().filter(|w| !before.contains(w)).collect();
        let tag = format!("-{}.whl", platform.wheel_tag());
        match &new[..] {
            [wheel] if wheel.to_string_lossy().ends_with(&tag) => Ok(binary),
            _ => Err(format!(
                "expected one new wheel ending in {tag} in target/dist, found {new:?}"
            )),
        }
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

/// The built binary is what `platform` runs: the host's prints the crate's version; a cross-built
/// one's headers say it needs only what its OS ships.
fn check_binary(platform: &Platform, binary: &Path, host: &str, version: &str) -> Result<()> {
    if platform.triple == host {
        return run::check_version(binary, version);
    }
    let bytes =
        std::fs::read(binary).map_err(|e| format!("cannot read {}: {e}", binary.display()))?;
    let what = match &platform.link {
        Link::Manylinux => return Ok(()), // maturin checked it against manylinux_2_28
        Link::MacOs { min_os, cpu } => {
            let macho = binary::check_macos(&bytes, cpu, min_os)?;
            format!("macOS {min_os}+, {cpu}, loads {:?}", macho.dylibs)
        }
        Link::WindowsGnu => {
            let pe = binary::check_windows(&bytes)?;
            format!("imports {:?}", pe.dlls)
        }
    };
    println!("xtask: {}: {what}", binary.display());
    Ok(())
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
    fn dist_arguments_name_platforms_and_a_profile_or_say_what_is_wrong() {
        let all = DistArgs::parse(&[]).unwrap();
        assert_eq!(all.platforms.len(), 5);
        assert_eq!(all.profile, PROFILE);
        let some = DistArgs::parse(&[
            "--platform",
            "darwin-arm64",
            "--platform",
            "aarch64-apple-darwin",
            "--platform",
            "x86_64-pc-windows-gnu",
            "--profile",
            "dist-check",
        ])
        .unwrap();
        let triples: Vec<_> = some.platforms.iter().map(|p| p.triple).collect();
        assert_eq!(triples, ["aarch64-apple-darwin", "x86_64-pc-windows-gnu"]);
        assert_eq!(some.profile, "dist-check");
        let error = DistArgs::parse(&["--platform", "beos-x86"]).err().unwrap();
        assert!(
            error.contains("\"beos-x86\"") && error.contains("win32-x64-gnu"),
            "{error}"
        );
        let error = DistArgs::parse(&["--profile"]).err().unwrap();
        assert!(error.contains("--profile needs a value"), "{error}");
        let error = DistArgs::parse(&["--release"]).err().unwrap();
        assert!(
            error.contains("unknown argument to dist: \"--release\""),
            "{error}"
        );
    }

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
