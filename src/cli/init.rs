//! `init`: a commented starter config, written where it was asked and never over a file, and the
//! entries that make MCP hosts (Claude Desktop, Claude Code, VS Code) run this binary with it.

use super::args::ConfigArg;
use crate::config;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `init`: writes the starter config where it was asked (never over a file that is there), then
/// prints what a host needs to run this binary with it. Exit 73 (EX_CANTCREAT) when the file
/// cannot be written.
pub fn run(arg: &ConfigArg) -> ExitCode {
    let env = config::Env::process();
    let path = match config::named_by(arg.config.as_deref(), &env) {
        Some(_) => config::resolve_path(arg.config.as_deref(), &env),
        None => config::platform_path(),
    };
    let path = std::path::absolute(&path).unwrap_or(path);
    if path.exists() {
        eprintln!(
            "seren-corpus-callosum: {} exists; left as it is (init never writes over a config)",
            path.display()
        );
    } else if let Err(error) = write_starter(&path) {
        eprintln!(
            "seren-corpus-callosum: cannot write {}: {error}",
            path.display()
        );
        return ExitCode::from(73);
    } else {
        println!(
            "Wrote {}: a starter config with no stores yet. Name your stores there (it is read \
             again when it changes), or add them at run time with the add_store tool.\n",
            path.display()
        );
    }
    let exe = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .map(|exe| without_verbatim_prefix(&exe))
        .unwrap_or_else(|_| PathBuf::from("seren-corpus-callosum"));
    let launcher = std::env::var("SEREN_SCC_LAUNCHER").ok();
    print!(
        "{}",
        host_entries(
            &launch(&exe, launcher.as_deref()),
            &without_verbatim_prefix(&path),
            &claude_desktop_config()
        )
    );
    ExitCode::SUCCESS
}

/// Where Claude Desktop reads its config on this system: `%APPDATA%\Claude\` on Windows,
/// `~/Library/Application Support/Claude/` on macOS, `~/.config/Claude/` on Linux (where its
/// unofficial builds look).
fn claude_desktop_config() -> String {
    directories::BaseDirs::new().map_or_else(
        || "claude_desktop_config.json".to_owned(),
        |dirs| {
            dirs.config_dir()
                .join("Claude")
                .join("claude_desktop_config.json")
                .display()
                .to_string()
        },
    )
}

/// `path` without Windows' `\\?\` prefix, which `canonicalize` puts before `C:\...` there and
/// which a host's config should not carry. Other paths are left as they are.
fn without_verbatim_prefix(path: &Path) -> PathBuf {
    let text = path.to_string_lossy();
    match text.strip_prefix(r"\\?\") {
        Some(rest) if rest.as_bytes().get(1) == Some(&b':') => PathBuf::from(rest),
        _ => path.to_path_buf(),
    }
}

/// Creates the file (and its directory) with the starter text, readable by its owner only: it
/// is where tokens may be written later.
fn write_starter(path: &Path) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(config::STARTER.as_bytes())?;
    file.sync_all()
}

/// The PyPI and npm distribution that carries this binary (the PyPI name `seren-corpus-callosum`
/// is the Python service's).
const DIST_NAME: &str = "seren-corpus-callosum-rs";

/// The words a host runs to start this binary: its own path, unless it runs from a cache that a
/// package runner empties at will: then the runner's line, which fetches it again. `uvx` runs a
/// tool from uv's cache (`.../uv/.../archive-v0/<id>/bin/`); the npm package's launcher says
/// `SEREN_SCC_LAUNCHER=npx` when npx runs it from its own cache.
fn launch(exe: &Path, launcher: Option<&str>) -> Vec<String> {
    let words = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect();
    let components: Vec<String> = exe
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_lowercase())
        .collect();
    let in_uv_cache = components.iter().any(|c| c == "uv")
        && components.iter().any(|c| c.starts_with("archive-v"));
    if launcher == Some("npx") {
        words(&["npx", "-y", DIST_NAME])
    } else if in_uv_cache {
        words(&["uvx", "--from", DIST_NAME, "seren-corpus-callosum"])
    } else {
        vec![exe.display().to_string()]
    }
}

/// The entries that make MCP hosts spawn `launch` over stdio with the config at `path`; Claude
/// Desktop's own config is at `claude_config`.
fn host_entries(launch: &[String], path: &Path, claude_config: &str) -> String {
    let path = path.display().to_string();
    let json = |s: &str| serde_json::Value::from(s).to_string();
    let (command, lead) = launch.split_first().expect("a launch line has a command");
    let args: Vec<String> = lead
        .iter()
        .map(String::as_str)
        .chain(["stdio", "-c", &path])
        .map(json)
        .collect();
    let args = format!("[{}]", args.join(", "));
    let shell = |s: &str| {
        if s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c))
        {
            s.to_owned()
        } else {
            format!("'{}'", s.replace('\'', r"'\''"))
        }
    };
    let line = launch
        .iter()
        .map(|w| shell(w))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "Claude Desktop ({claude_config}, under \"mcpServers\"):\n  \
         \"seren-corpus-callosum\": {{\"command\": {command_json}, \"args\": {args}}}\n\n\
         Claude Code:\n  claude mcp add seren-corpus-callosum -- {line} stdio -c {path_sh}\n\n\
         VS Code (.vscode/mcp.json, under \"servers\"):\n  \
         \"seren-corpus-callosum\": {{\"type\": \"stdio\", \"command\": {command_json}, \"args\": {args}}}\n\n\
         Check it: {line} check -c {path_sh}\n",
        command_json = json(command),
        path_sh = shell(&path),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_names_the_runner_when_the_binary_lives_in_its_cache() {
        let uvx = Path::new("/home/a/.cache/uv/archive-v0/Xy12/bin/seren-corpus-callosum");
        assert_eq!(
            launch(uvx, None),
            [
                "uvx",
                "--from",
                "seren-corpus-callosum-rs",
                "seren-corpus-callosum"
            ]
        );
        let npx = Path::new("/home/a/.npm/_npx/ab12/node_modules/x/bin/seren-corpus-callosum");
        assert_eq!(
            launch(npx, Some("npx")),
            ["npx", "-y", "seren-corpus-callosum-rs"]
        );
        // A tool uv installed for good, or any other path, is named as it is.
        let kept = Path::new("/home/a/.local/share/uv/tools/x/bin/seren-corpus-callosum");
        assert_eq!(launch(kept, None), [kept.display().to_string()]);
        assert_eq!(launch(kept, Some("other")), [kept.display().to_string()]);
    }

    #[test]
    fn a_windows_verbatim_prefix_is_dropped_from_a_drive_path_only() {
        assert_eq!(
            without_verbatim_prefix(Path::new(r"\\?\C:\Users\a\s.exe")),
            Path::new(r"C:\Users\a\s.exe")
        );
        for kept in [r"\\?\UNC\server\share\s.exe", "/home/a/s", r"C:\a"] {
            assert_eq!(without_verbatim_prefix(Path::new(kept)), Path::new(kept));
        }
    }

    #[test]
    fn host_entries_put_the_runner_words_before_stdio() {
        let entries = host_entries(
            &launch(Path::new("/c/uv/archive-v0/1/bin/s"), None),
            Path::new("/home/a b/c.yaml"),
            r"C:\Users\a\AppData\Roaming\Claude\claude_desktop_config.json",
        );
        assert!(
            entries.starts_with(
                r#"Claude Desktop (C:\Users\a\AppData\Roaming\Claude\claude_desktop_config.json, under "mcpServers")"#
            ),
            "{entries}"
        );
        assert!(
            entries.contains(
                r#""command": "uvx", "args": ["--from", "seren-corpus-callosum-rs", "seren-corpus-callosum", "stdio", "-c", "/home/a b/c.yaml"]"#
            ),
            "{entries}"
        );
        assert!(
            entries.contains(
                "claude mcp add seren-corpus-callosum -- uvx --from seren-corpus-callosum-rs seren-corpus-callosum stdio -c '/home/a b/c.yaml'"
            ),
            "{entries}"
        );
    }
}
