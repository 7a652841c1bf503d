//! Running the tools the xtask drives, each pinned: maturin and zig in a venv of their own, npm
//! and the mcpb CLI from `xtask/package.json`.

use crate::{Result, Workspace};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `command`, its output shown as it comes; an error names `what` and the exit status.
pub fn status(command: &mut Command, what: &str) -> Result<()> {
    let status = command
        .status()
        .map_err(|e| format!("cannot run {what} ({:?}): {e}", command.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// Runs `command` and returns its standard output.
pub fn output(command: &mut Command, what: &str) -> Result<String> {
    let output = command
        .output()
        .map_err(|e| format!("cannot run {what} ({:?}): {e}", command.get_program()))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "{what} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// The binary prints the crate's version: what every package carries is what was built.
pub fn check_version(binary: &Path, version: &str) -> Result<()> {
    let printed = output(
        Command::new(binary).arg("--version"),
        "the built binary's --version",
    )?;
    let expected = format!("{} {version}", crate::COMMAND);
    if printed.trim() == expected {
        Ok(())
    } else {
        Err(format!(
            "{} --version printed {:?}, not {expected:?}",
            binary.display(),
            printed.trim()
        ))
    }
}

/// Adds the Rust standard library for `triple` with rustup when it is missing (the host's is
/// always there). Without rustup, cargo will say what is missing.
pub fn rust_target(triple: &str) -> Result<()> {
    let Ok(installed) = output(
        Command::new("rustup").args(["target", "list", "--installed"]),
        "rustup target list",
    ) else {
        return Ok(());
    };
    if installed.lines().any(|line| line.trim() == triple) {
        return Ok(());
    }
    println!("xtask: rustup target add {triple}");
    status(
        Command::new("rustup").args(["target", "add", triple]),
        &format!("rustup target add {triple}"),
    )
}

/// `target/xtask-venv` with `xtask/requirements.txt` installed; made again when the pins change.
pub fn tools_venv(ws: &Workspace) -> Result<PathBuf> {
    let venv = ws.target.join("xtask-venv");
    let requirements = ws.root.join("xtask").join("requirements.txt");
    let stamp = venv.join("installed-requirements.txt");
    let wanted = crate::read(&requirements)?;
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(venv);
    }
    if !venv_bin(&venv).join(exe("python")).is_file() {
        let python = std::env::var("PYTHON")
            .unwrap_or_else(|_| if cfg!(windows) { "python" } else { "python3" }.to_owned());
        println!("xtask: creating {}", venv.display());
        status(
            Command::new(python).args(["-m", "venv"]).arg(&venv),
            "python -m venv",
        )?;
    }
    println!("xtask: installing xtask/requirements.txt into it");
    status(
        venv_command(&venv, "python")
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--quiet",
                "-r",
            ])
            .arg(&requirements),
        "pip install -r xtask/requirements.txt",
    )?;
    crate::write(&stamp, &wanted)?;
    Ok(venv)
}

/// A program of the venv, with the venv's bin directory first on `PATH` (so maturin finds the
/// venv's python, and through it zig).
pub fn venv_command(venv: &Path, program: &str) -> Command {
    let bin = venv_bin(venv);
    let mut command = Command::new(bin.join(exe(program)));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let paths = std::iter::once(bin).chain(std::env::split_paths(&path));
    if let Ok(joined) = std::env::join_paths(paths) {
        command.env("PATH", joined);
    }
    command.env("VIRTUAL_ENV", venv);
    command
}

fn venv_bin(venv: &Path) -> PathBuf {
    venv.join(if cfg!(windows) { "Scripts" } else { "bin" })
}

fn exe(name: &str) -> String {
    if cfg!(windows) {
        format!("{name}.exe")
    } else {
        name.to_owned()
    }
}

/// `npm` (on Windows the `npm.cmd` shim, which only a shell runs).
pub fn npm() -> Command {
    if cfg!(windows) {
        let mut command = Command::new("cmd");
        command.args(["/C", "npm"]);
        command
    } else {
        Command::new("npm")
    }
}

/// The pinned mcpb CLI, from `xtask/node_modules` (installed by `npm ci` when it is missing).
pub fn mcpb(ws: &Workspace) -> Result<Command> {
    let dir = ws.root.join("xtask");
    let script = dir
        .join("node_modules")
        .join("@anthropic-ai")
        .join("mcpb")
        .join("package.json");
    if !script.is_file() {
        println!("xtask: npm ci in xtask/ (the mcpb CLI)");
        status(
            npm()
                .current_dir(&dir)
                .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"]),
            "npm ci in xtask/",
        )?;
    }
    let bin = dir
        .join("node_modules")
        .join(".bin")
        .join(if cfg!(windows) { "mcpb.cmd" } else { "mcpb" });
    Ok(if cfg!(windows) {
        let mut command = Command::new("cmd");
        command.arg("/C").arg(bin);
        command
    } else {
        Command::new(bin)
    })
}
