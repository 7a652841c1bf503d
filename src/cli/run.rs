//! How every command runs: logging on stderr, the async runtime, the configuration loaded once
//! (and the exit code when it cannot be), the npm launcher watched, and output on stdout.

use super::args::{ConfigArg, ServeArgs};
use crate::config::Config;
use crate::{launcher, logline};
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

/// EX_CONFIG from sysexits.h: the configuration does not allow the service to start.
pub(super) const EXIT_CONFIG: u8 = 78;

/// Logs go to stderr only (stdout belongs to MCP in stdio mode and to `search` output), at
/// `default` unless `SEREN_SCC_LOG` takes a tracing filter such as `debug` or
/// `info,seren_corpus_callosum=debug`.
///
/// rmcp's own lines are never written, whatever the filter asks: they quote what rmcp was given
/// and got (at ERROR, a store's url with its user-info and query inside a reqwest error; at WARN
/// and below, a body that is not JSON-RPC, a server's notifications, the requests and answers of
/// a session, queries among them). The callosum logs every store failure itself, in words that
/// carry no value (`Failure::public`), and its own MCP edge's refusals likewise.
pub fn init_logging(default: &str) {
    use std::io::IsTerminal;
    let filter = std::env::var("SEREN_SCC_LOG")
        .ok()
        .and_then(|f| f.parse::<tracing_subscriber::filter::Targets>().ok())
        .unwrap_or_else(|| {
            default
                .parse()
                .unwrap_or_else(|_| tracing_subscriber::filter::Targets::new())
        });
    let no_rmcp = tracing_subscriber::filter::Targets::new()
        .with_default(tracing::Level::TRACE)
        .with_target("rmcp", tracing_subscriber::filter::LevelFilter::OFF);
    use tracing_subscriber::prelude::*;
    let ansi = std::io::stderr().is_terminal();
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(logline::Stderr)
                .with_ansi(ansi)
                .with_target(false),
        )
        .with(filter)
        .with(no_rmcp)
        .init();
    // The access line may then be written as this layer would write it, without its formatter.
    logline::set_plain(!ansi);
}

/// How a command reads its configuration file.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Load {
    /// The file named, or found by the search order; a file named and not there is an error.
    File,
    /// As `File`, but a file named and not there is an empty configuration (`demo`, which brings
    /// its own stores).
    OrEmpty,
}

/// The async runtime a command runs on, or the words and exit code of why there is none.
pub(super) fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Runtime::new().map_err(|e| {
        eprintln!("seren-corpus-callosum: cannot start the async runtime: {e}");
        ExitCode::FAILURE
    })
}

/// Runs a command that starts from the configuration: the runtime; for the commands that serve
/// (`bind`), the npm launcher's variable, read (and a bad value said) first, since such a command
/// stops once the launcher that started it is gone (a launcher killed outright passes no signal
/// on); the configuration, loaded (and its warnings logged) once; then `command`, given the
/// configuration and the token cancelled when the launcher is gone. An error is said on stderr
/// (exit 1).
pub(super) fn execute<F, Fut>(
    config: &ConfigArg,
    bind: Option<&ServeArgs>,
    load: Load,
    command: F,
) -> ExitCode
where
    F: FnOnce(Config, CancellationToken) -> Fut,
    Fut: Future<Output = anyhow::Result<ExitCode>>,
{
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let launcher = bind.and_then(|_| launcher::from_env());
    let config = match load_config(config, bind, load) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let gone = CancellationToken::new();
    let launcher_gone = gone.clone();
    let result = runtime.block_on(async move {
        if let Some(pid) = launcher {
            launcher::watch(pid, launcher_gone.clone());
        }
        command(config, launcher_gone).await
    });
    if gone.is_cancelled() {
        // A stdio session may be reading stdin still (the host holds it open), a read nothing
        // cancels: the runtime's threads are left to the process's exit, not waited on.
        runtime.shutdown_background();
    }
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("seren-corpus-callosum: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Loads the configuration (with `--host` / `--port` applied) or explains, and exits 78, why not.
fn load_config(arg: &ConfigArg, bind: Option<&ServeArgs>, load: Load) -> Result<Config, ExitCode> {
    let loaded = match load {
        Load::File => Config::load(arg.config.as_deref()),
        Load::OrEmpty => Config::load_or_empty(arg.config.as_deref()),
    };
    match loaded {
        Ok(mut config) => {
            if let Some(bind) = bind {
                bind.apply(&mut config);
            }
            // Said at every start: a config found in the working directory (a cloned repository
            // may carry one) decides which urls get the queries and which variables are sent.
            tracing::info!(
                config = %config.path.display(),
                found = config.exists,
                chosen = if arg.config.is_some() { "--config" } else { "search order" },
                "configuration"
            );
            for warning in &config.warnings {
                tracing::warn!("{warning}");
            }
            Ok(config)
        }
        Err(error) => {
            eprintln!("seren-corpus-callosum: {error}");
            Err(ExitCode::from(EXIT_CONFIG))
        }
    }
}

/// Writes a command's output to stdout. A reader that went away (`| head -1`) is not an error: the
/// output was wanted only that far, so the command ends quietly with its own exit code.
pub(super) fn emit(out: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
