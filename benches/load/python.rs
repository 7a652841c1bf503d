//! The Python reference's venv.

use super::*;

pub(super) fn target_dir() -> PathBuf {
    // BIN is TARGET/release/seren-corpus-callosum.
    Path::new(BIN)
        .parent()
        .and_then(Path::parent)
        .map_or_else(|| Path::new(MANIFEST_DIR).join("target"), Path::to_path_buf)
}

/// Runs a command to completion within `limit`, killing it past that.
pub(super) fn run_bounded(command: &mut Command, limit: Duration) -> Result<(), String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    let began = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("{:?} {status}", command.get_program())),
            Ok(None) if began.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{:?} took over {limit:?}", command.get_program()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The Python service's executable, installing it into `target/bench-python-venv` if missing.
pub(super) fn python_reference() -> Result<PathBuf, String> {
    let venv = target_dir().join("bench-python-venv");
    let exe = venv.join("bin").join("seren-corpus-callosum");
    if exe.exists() {
        return Ok(exe);
    }
    let requirements = Path::new(MANIFEST_DIR).join("bench/python-reference/requirements.txt");
    eprintln!(
        "load: installing the Python reference into {} (once)",
        venv.display()
    );
    if !venv.join("bin").join("pip").exists() {
        run_bounded(
            Command::new("python3").arg("-m").arg("venv").arg(&venv),
            Duration::from_secs(120),
        )?;
    }
    run_bounded(
        Command::new(venv.join("bin").join("pip"))
            .args(["install", "--disable-pip-version-check", "-q"])
            .args(["--retries", "1", "--timeout", "20", "-r"])
            .arg(&requirements),
        Duration::from_secs(600),
    )?;
    if exe.exists() {
        Ok(exe)
    } else {
        Err(format!("pip finished but {} is missing", exe.display()))
    }
}
