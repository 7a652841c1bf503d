//! The `seren-corpus-callosum` command: parse the command line, set up logging on stderr, load the
//! configuration, and run one of `serve` (the default), `search`, `check` or `demo` until done or
//! signalled. `anyhow` lives here and nowhere else; the library's errors are typed.

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use seren_corpus_callosum::api::StoreStatus;
use seren_corpus_callosum::chain::Chain;
use seren_corpus_callosum::config::{self, Config, Exposure};
use seren_corpus_callosum::federation::Federation;
use seren_corpus_callosum::http::{self, AppState};
use seren_corpus_callosum::text::{cut, printable};
use seren_corpus_callosum::{api, demo, launcher, logline, mcp, reload};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// mimalloc instead of the system allocator: under load, tokio frees on one worker what another
/// allocated, and glibc's arena locks showed up as 8% of the service's CPU in a profile; see
/// BENCHMARKS.md for what the switch bought.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// EX_CONFIG from sysexits.h: the configuration does not allow the service to start.
const EXIT_CONFIG: u8 = 78;

#[derive(Parser)]
#[command(
    name = "seren-corpus-callosum",
    version,
    about = "Federates N memory stores into one rank-fused recall list, over MCP and HTTP.",
    long_about = "Federates N memory stores into one rank-fused recall list.\n\n\
        One query fans out to every configured store at once; each store's ranked answer is floored \
        and merged with weighted Reciprocal Rank Fusion (weight / (60 + rank)); one ordered list \
        comes back with full provenance. With no subcommand it serves (like `serve`).",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the HTTP API, the viewer and MCP at /mcp (the default).
    Serve(ServeArgs),
    /// Run one search through the configured stores and print the fused hits.
    Search(SearchArgs),
    /// Validate the configuration and probe every store, one line each.
    Check(ConfigArg),
    /// Start two sample stores in-process and serve the callosum in front of them.
    Demo(ServeArgs),
    /// Serve MCP on stdin/stdout, for hosts that spawn the server (Claude Desktop, VS Code, ...).
    Stdio(StdioArgs),
    /// Write a commented starter config (at --config, else the platform config dir), never over
    /// an existing file, and print the MCP host entries that run this binary with it.
    Init(ConfigArg),
    /// Point at an MCP server nobody has written a mapping for: pick its search tool, call it
    /// once with --query and print the store entry that reads it, saying what was guessed.
    Propose(ProposeArgs),
    /// Trust a config file found in the working directory (a cloned repository may carry one)
    /// to read its stores' token_env and token_keyring and run their command, as it now stands:
    /// an edit needs trust again.
    Trust(TrustArgs),
}

#[derive(Args)]
struct TrustArgs {
    /// The config file (default: ./seren-corpus-callosum.yaml).
    #[arg(value_name = "PATH")]
    path: Option<PathBuf>,
    /// Stop trusting it instead.
    #[arg(long)]
    forget: bool,
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  seren-corpus-callosum propose --query xavier -- basic-memory mcp\n  \
                  seren-corpus-callosum propose --query lab --arg collection_name=lab --url http://127.0.0.1:8000/mcp"
)]
struct ProposeArgs {
    /// A query the server has hits for: the test search.
    #[arg(long, value_name = "TEXT")]
    query: String,
    /// The store's name in the entry (default: the server's own name).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// The tool to read (default: the search-like tool the server lists).
    #[arg(long, value_name = "TOOL")]
    tool: Option<String>,
    /// A fixed argument of every call (a collection, a project, a group), NAME=VALUE; a VALUE
    /// that reads as JSON is that JSON, else text. Repeatable.
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    arguments: Vec<String>,
    /// The server's streamable HTTP endpoint (instead of a command).
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    url: Option<String>,
    /// The environment variable that holds the bearer token for --url.
    #[arg(long, value_name = "VAR", requires = "url")]
    token_env: Option<String>,
    /// An environment variable of the spawned server, NAME=VALUE. Repeatable.
    #[arg(long = "env", value_name = "NAME=VALUE", conflicts_with = "url")]
    env: Vec<String>,
    /// How many hits the test search asks for.
    #[arg(short = 'n', long = "n-results", value_name = "N", default_value_t = 5)]
    n_results: usize,
    /// Seconds the test call may take (the server's start may take 90 more).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    timeout_s: f64,
    /// The program that serves MCP on stdio, and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

#[derive(Args)]
struct StdioArgs {
    #[command(flatten)]
    serve: ServeArgs,
    /// Also serve the REST API, the viewer and /mcp over HTTP (server.host:server.port).
    #[arg(long)]
    http: bool,
}

#[derive(Args, Clone)]
struct ConfigArg {
    /// The config file (default: $SEREN_SCC_CONFIG, ./seren-corpus-callosum.yaml, then the
    /// platform config dir).
    #[arg(short, long, value_name = "PATH")]
    config: Option<PathBuf>,
}

#[derive(Args, Clone)]
struct ServeArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// The address to bind (overrides server.host and SEREN_SCC_HOST).
    #[arg(long, value_name = "HOST")]
    host: Option<String>,
    /// The port to bind (overrides server.port and SEREN_SCC_PORT).
    #[arg(long, value_name = "PORT")]
    port: Option<u16>,
}

#[derive(Args)]
struct SearchArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// What to search for.
    query: String,
    /// How many fused hits to print (default: federation.n_results).
    #[arg(short = 'n', long = "n-results", value_name = "N")]
    n_results: Option<i64>,
    /// Pack the answer into a page of at most N tokens (default: federation.budget_tokens).
    #[arg(long = "budget-tokens", value_name = "N")]
    budget_tokens: Option<i64>,
    /// Search only this store (repeat for more): a name `check` or GET /stores lists.
    #[arg(long = "store", value_name = "NAME")]
    stores: Vec<String>,
    /// Leave this store out (repeat for more).
    #[arg(long = "exclude-store", value_name = "NAME")]
    exclude_stores: Vec<String>,
    /// Say why each hit is where it is (a `why` line under each hit; with --json, the answer's
    /// `explain` and `explain_dropped`).
    #[arg(long)]
    explain: bool,
    /// Print the answer as JSON, exactly as POST /search gives it.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let code = run(Cli::parse());
    // Anything a server's last moments logged (see `logline`).
    logline::stderr().flush();
    code
}

fn run(cli: Cli) -> ExitCode {
    // stdout is the answer (search, check) or the MCP channel (stdio): logs stay on stderr, and
    // the one-shot commands log only errors.
    let quiet = matches!(
        cli.command,
        Some(Command::Search(_) | Command::Check(_) | Command::Propose(_))
    );
    init_logging(if quiet { "error" } else { "info" });
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("seren-corpus-callosum: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let command = cli.command.unwrap_or(Command::Serve(cli.serve));
    if let Command::Init(arg) = &command {
        return init(arg);
    }
    if let Command::Trust(args) = &command {
        return trust(args);
    }
    if let Command::Propose(args) = command {
        return runtime.block_on(propose(args));
    }
    // The commands that serve stop once the npm launcher that started them is gone (a launcher
    // killed outright passes no signal on); its variable is read, and a bad value said, first.
    let launcher = command.bind().and_then(|_| launcher::from_env());
    // Every command starts from the configuration, loaded (and its warnings logged) here, once.
    let config = match load_config(&command) {
        Ok(config) => config,
        Err(code) => return code,
    };
    // `serve` and `stdio` read the file again when it changes, the way it was first read.
    let loader = command.bind().cloned().map(reloader);
    let gone = CancellationToken::new();
    let launcher_gone = gone.clone();
    let result = runtime.block_on(async move {
        if let Some(pid) = launcher {
            launcher::watch(pid, launcher_gone.clone());
        }
        match command {
            Command::Serve(_) => run_server(config, None, loader, launcher_gone).await,
            Command::Search(args) => search(config, args).await,
            Command::Check(_) => check(config).await,
            Command::Demo(_) => run_demo(config, launcher_gone).await,
            Command::Stdio(args) => stdio(config, args.http, loader, launcher_gone).await,
            Command::Init(_) | Command::Propose(_) | Command::Trust(_) => {
                unreachable!("init, propose and trust run before any config is loaded")
            }
        }
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

/// Logs go to stderr only (stdout belongs to MCP in stdio mode and to `search` output).
/// `SEREN_SCC_LOG` takes a tracing filter such as `debug` or `info,seren_corpus_callosum=debug`.
///
/// rmcp's own lines are never written, whatever the filter asks: they quote what rmcp was given
/// and got (at ERROR, a store's url with its user-info and query inside a reqwest error; at WARN
/// and below, a body that is not JSON-RPC, a server's notifications, the requests and answers of
/// a session, queries among them). The callosum logs every store failure itself, in words that
/// carry no value (`Failure::public`), and its own MCP edge's refusals likewise.
fn init_logging(default: &str) {
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
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(logline::Stderr)
                .with_ansi(std::io::stderr().is_terminal())
                .with_target(false),
        )
        .with(filter)
        .with(no_rmcp)
        .init();
}

impl Command {
    /// Which config file the command names.
    fn config(&self) -> &ConfigArg {
        match self {
            Command::Serve(args) | Command::Demo(args) => &args.config,
            Command::Stdio(args) => &args.serve.config,
            Command::Search(args) => &args.config,
            Command::Check(args) | Command::Init(args) => args,
            Command::Propose(_) | Command::Trust(_) => unreachable!("they read no config"),
        }
    }

    /// The bind address the command overrides, for the commands that listen.
    fn bind(&self) -> Option<&ServeArgs> {
        match self {
            Command::Serve(args) | Command::Demo(args) => Some(args),
            Command::Stdio(args) => Some(&args.serve),
            Command::Search(_)
            | Command::Check(_)
            | Command::Init(_)
            | Command::Propose(_)
            | Command::Trust(_) => None,
        }
    }
}

/// Loads the configuration (with `--host` / `--port` applied) or explains, and exits 78, why not.
fn load_config(command: &Command) -> Result<Config, ExitCode> {
    let (arg, bind) = (command.config(), command.bind());
    // `demo` brings its own stores: a named file that is not there is no file, not a typo.
    let loaded = if matches!(command, Command::Demo(_)) {
        Config::load_or_empty(arg.config.as_deref())
    } else {
        Config::load(arg.config.as_deref())
    };
    match loaded {
        Ok(mut config) => {
            if let Some(bind) = bind {
                apply_bind_overrides(&mut config, bind);
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

/// `init`: writes the starter config where it was asked (never over a file that is there), then
/// prints what a host needs to run this binary with it. Exit 73 (EX_CANTCREAT) when the file
/// cannot be written.
fn init(arg: &ConfigArg) -> ExitCode {
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

/// `trust`: records the file in the trust list (or takes it out), and says what that allows.
/// Exit 66 (EX_NOINPUT) when the file cannot be read, 73 (EX_CANTCREAT) when the list cannot be
/// written (or read: it is never written over then).
fn trust(args: &TrustArgs) -> ExitCode {
    use config::trust;
    let file = args
        .path
        .clone()
        .unwrap_or_else(|| PathBuf::from(config::FILE_NAME));
    let Some(list) = trust::list_path() else {
        eprintln!(
            "seren-corpus-callosum: no home directory, so no trust list; name the file with --config instead"
        );
        return ExitCode::from(73);
    };
    if args.forget {
        return match trust::forget(&list, &file) {
            Ok(true) => {
                println!(
                    "{} is no longer trusted ({}).",
                    file.display(),
                    list.display()
                );
                ExitCode::SUCCESS
            }
            Ok(false) => {
                println!("{} was not trusted; nothing changed.", file.display());
                ExitCode::SUCCESS
            }
            Err(why) => {
                eprintln!("seren-corpus-callosum: {why}");
                ExitCode::from(73)
            }
        };
    }
    if !file.is_file() {
        eprintln!(
            "seren-corpus-callosum: {} is not a file; nothing trusted",
            file.display()
        );
        return ExitCode::from(66);
    }
    match trust::trust(&list, &file) {
        Ok(trusted) => {
            println!(
                "Trusted {} as it stands (sha256 {}), in {}.\nFound in the working directory, its \
                 stores may now read their token_env and token_keyring and run their command. An \
                 edit needs trust again.",
                trusted.file.display(),
                trusted.sha256,
                trusted.list.display()
            );
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("seren-corpus-callosum: {why}");
            ExitCode::from(73)
        }
    }
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
fn without_verbatim_prefix(path: &std::path::Path) -> PathBuf {
    let text = path.to_string_lossy();
    match text.strip_prefix(r"\\?\") {
        Some(rest) if rest.as_bytes().get(1) == Some(&b':') => PathBuf::from(rest),
        _ => path.to_path_buf(),
    }
}

/// Creates the file (and its directory) with the starter text, readable by its owner only: it
/// is where tokens may be written later.
fn write_starter(path: &std::path::Path) -> std::io::Result<()> {
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
fn launch(exe: &std::path::Path, launcher: Option<&str>) -> Vec<String> {
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
fn host_entries(launch: &[String], path: &std::path::Path, claude_config: &str) -> String {
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

/// How a running service reads its config file again: as at start, `--host` and `--port` included.
fn reloader(bind: ServeArgs) -> reload::Loader {
    Arc::new(move |running: &Config| {
        let mut config = running.reread()?;
        apply_bind_overrides(&mut config, &bind);
        Ok(config)
    })
}

fn apply_bind_overrides(config: &mut Config, args: &ServeArgs) {
    if let Some(host) = &args.host {
        config.server.host = host.clone();
    }
    if let Some(port) = args.port {
        config.server.port = port;
    }
}

/// Refuses an open bind with no token, or a token the configuration asks for and that cannot be
/// read (exit 78), and says plainly how exposed any other bind is.
fn check_exposure(config: &Config) -> Result<(), ExitCode> {
    let server = &config.server;
    if let Some(why) = &server.token_error {
        eprintln!(
            "REFUSING TO START: the inbound bearer token cannot be had: {why}.\n\
             Fix the keychain entry or the variable, or remove the setting to serve without a token."
        );
        return Err(ExitCode::from(EXIT_CONFIG));
    }
    let at = format!("{}:{}", server.host, server.port);
    match server.exposure() {
        Exposure::Loopback => {
            tracing::info!("binding {at} (this machine only)");
        }
        Exposure::Guarded => {
            tracing::info!("binding {at}, open to the network, bearer token required");
        }
        Exposure::OpenByChoice => {
            tracing::warn!(
                "*** OPEN ON THE NETWORK *** binding {at} with NO token: anyone who can reach this \
                 port can search every store and add or remove stores"
            );
        }
        Exposure::Refused => {
            eprintln!(
                "REFUSING TO START: {at} is reachable from the network and no bearer token is set.\n\
                 Fix it one of three ways:\n\
                 \x20 1. set a token: server.bearer_token / server.bearer_token_env, or SEREN_SCC_BEARER_TOKEN\n\
                 \x20    (or take access tokens from an authorization server: server.oauth)\n\
                 \x20 2. bind loopback: server.host: 127.0.0.1 (or --host 127.0.0.1)\n\
                 \x20 3. accept an open service: server.allow_open_lan: true, or SEREN_SCC_ALLOW_OPEN_LAN=1"
            );
            return Err(ExitCode::from(EXIT_CONFIG));
        }
    }
    Ok(())
}

/// Binds, serves until SIGINT or SIGTERM (or until `launcher_gone`: the npm launcher that started
/// it is gone), and shuts down gracefully; with a `loader`, the config file is read again on
/// SIGHUP and when it changes.
async fn run_server(
    config: Config,
    banner: Option<String>,
    loader: Option<reload::Loader>,
    launcher_gone: CancellationToken,
) -> anyhow::Result<ExitCode> {
    if let Err(code) = check_exposure(&config) {
        return Ok(code);
    }
    let federation = Arc::new(Federation::start(config).await?);
    let shutdown = CancellationToken::new();
    let (addr, serving) = bind_http(federation.clone(), &shutdown).await?;
    let stop = stop_requested();
    federation.warm_up();
    {
        // Scoped: a snapshot held here would keep its stores (and their servers) for the life of
        // the process, past any reload that removes them.
        let fan = federation.roster().fan();
        tracing::info!(
            config = %federation.config().path.display(),
            overlay = %federation.config().overlay_shown(),
            stores = fan.bound.len(),
            "fanning {} store(s): {}",
            fan.bound.len(),
            fan.bound.iter().map(|b| b.name.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    tracing::info!("listening on http://{addr} (viewer: http://{addr}/viewer)");
    // Printed only once the router is built, so an address on screen is one that answers.
    if let Some(banner) = banner {
        eprintln!("{}", banner.replace("{addr}", &addr.to_string()));
    }
    // From here a line per request may follow: they leave in batches (`logline`) until the
    // server returns.
    let _batched = logline::stderr().batch();
    if let Some(loader) = loader {
        reload::spawn(federation.clone(), loader, shutdown.clone());
    }
    notify_systemd(&format!("READY=1\nSTATUS=listening on http://{addr}"));
    let signal = shutdown.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = stop => {}
            () = launcher_gone.cancelled() => {}
        }
        tracing::info!("shutting down");
        notify_systemd("STOPPING=1");
        signal.cancel();
    });
    serving.await?;
    Ok(ExitCode::SUCCESS)
}

/// Binds the configured host and port, and builds the HTTP surface (REST, viewer, `/mcp`) over
/// `federation`: the bound address, and the future that serves until `shutdown` is cancelled.
async fn bind_http(
    federation: Arc<Federation>,
    shutdown: &CancellationToken,
) -> anyhow::Result<(
    std::net::SocketAddr,
    impl std::future::Future<Output = std::io::Result<()>> + Send + 'static,
)> {
    let server = &federation.config().server;
    let (host, port) = (server.host.clone(), server.port);
    let limits = http::Limits::from_config(server);
    let listener = tokio::net::TcpListener::bind((host.as_str(), port))
        .await
        .with_context(|| format!("cannot listen on {host}:{port}"))?;
    let addr = listener.local_addr()?;
    let router = http::router(AppState {
        federation,
        shutdown: shutdown.clone(),
    });
    let serving = http::serve_with(listener, router, limits, shutdown.clone().cancelled_owned());
    Ok((addr, serving))
}

/// MCP on stdin/stdout until the host closes stdin (or until `launcher_gone`: the npm launcher
/// that started it is gone); with `--http`, the HTTP surface beside it on the same live roster.
async fn stdio(
    config: Config,
    http: bool,
    loader: Option<reload::Loader>,
    launcher_gone: CancellationToken,
) -> anyhow::Result<ExitCode> {
    if http && let Err(code) = check_exposure(&config) {
        return Ok(code);
    }
    let federation = Arc::new(Federation::start(config).await?);
    federation.warm_up();
    let shutdown = CancellationToken::new();
    let sidecar = if http {
        let (addr, serving) = bind_http(federation.clone(), &shutdown).await?;
        tracing::info!("HTTP sidecar listening on http://{addr}");
        Some(tokio::spawn(serving))
    } else {
        None
    };
    if let Some(loader) = loader {
        reload::spawn(federation.clone(), loader, shutdown.clone());
    }
    let _batched = logline::stderr().batch();
    let served = tokio::select! {
        served = mcp::serve_stdio(federation) => served,
        () = launcher_gone.cancelled() => Ok(()),
    };
    shutdown.cancel();
    if let Some(sidecar) = sidecar {
        sidecar.await??;
    }
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Tells systemd (a `Type=notify` unit, `$NOTIFY_SOCKET`) how the service stands: `READY=1` once
/// the listener answers, `STOPPING=1` as it drains. Without the variable, or off Unix, nothing.
fn notify_systemd(state: &str) {
    #[cfg(unix)]
    {
        let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
            return;
        };
        let sent = (|| -> std::io::Result<usize> {
            let socket = std::os::unix::net::UnixDatagram::unbound()?;
            let bytes = path.as_encoded_bytes();
            #[cfg(target_os = "linux")]
            if let Some(name) = bytes.strip_prefix(b"@") {
                use std::os::linux::net::SocketAddrExt;
                let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
                return socket.send_to_addr(state.as_bytes(), &addr);
            }
            let _ = bytes;
            socket.send_to(state.as_bytes(), &path)
        })();
        if let Err(error) = sent {
            tracing::warn!(%error, "could not notify systemd ($NOTIFY_SOCKET)");
        }
    }
    #[cfg(not(unix))]
    let _ = state;
}

/// The first request to stop: SIGINT (Ctrl-C) or SIGTERM on Unix; on Windows Ctrl-C,
/// Ctrl-Break, the console window closed, the user logging off or the system shutting down (what a
/// service wrapper such as WinSW or NSSM sends to stop a console program). They are caught from
/// the call on, before the future is first polled: a signal that comes as the server starts to
/// listen stops it gracefully too, instead of ending it by the signal's default action. In-flight
/// requests then drain (at most `limits::DRAIN`); the overlay needs no flush, every change was
/// written whole when it was made. Windows ends a process about five seconds after a console
/// close: a longer drain is cut there, never a half-written overlay.
fn stop_requested() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let signals = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        );
        async move {
            let (Ok(mut int), Ok(mut term)) = signals else {
                let _ = tokio::signal::ctrl_c().await;
                return;
            };
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
    }
    #[cfg(windows)]
    {
        use tokio::signal::windows;
        let signals = (
            windows::ctrl_c(),
            windows::ctrl_break(),
            windows::ctrl_close(),
            windows::ctrl_logoff(),
            windows::ctrl_shutdown(),
        );
        async move {
            let (Ok(mut c), Ok(mut brk), Ok(mut close), Ok(mut logoff), Ok(mut shutdown)) = signals
            else {
                let _ = tokio::signal::ctrl_c().await;
                return;
            };
            tokio::select! {
                _ = c.recv() => {}
                _ = brk.recv() => {}
                _ = close.recv() => {}
                _ = logoff.recv() => {}
                _ = shutdown.recv() => {}
            }
        }
    }
    #[cfg(not(any(unix, windows)))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

async fn search(config: Config, args: SearchArgs) -> anyhow::Result<ExitCode> {
    let federation = Federation::start(config).await?;
    let answer = match federation
        .search(
            &api::SearchRequest {
                query: args.query.clone(),
                n_results: args.n_results,
                budget_tokens: args.budget_tokens,
                stores: (!args.stores.is_empty()).then(|| args.stores.clone()),
                exclude_stores: (!args.exclude_stores.is_empty())
                    .then(|| args.exclude_stores.clone()),
                explain: args.explain,
            },
            &Chain::root(),
        )
        .await
    {
        Ok(answer) => answer,
        Err(refusal) => {
            eprintln!("seren-corpus-callosum: {refusal}");
            return Ok(ExitCode::from(2));
        }
    };
    let out = if args.json {
        serde_json::to_string_pretty(&answer)? + "\n"
    } else {
        render_table(&answer)
    };
    emit(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes a command's output to stdout. A reader that went away (`| head -1`) is not an error: the
/// output was wanted only that far, so the command ends quietly with its own exit code.
fn emit(out: &str) -> std::io::Result<()> {
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

/// The answer as a table a person can read: one line per hit with its provenance, then what
/// answered, failed and was skipped.
fn render_table(answer: &api::SearchAnswer) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let store_width = answer
        .hits
        .iter()
        .map(|h| h.store.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    let number = |value: Option<f64>| value.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "{:>3}  {:<7}  {:<store_width$}  {:>4}  {:>5}  {:>6}  {:>6}  content",
        "#", "rrf", "store", "rank", "rel", "native", "d"
    );
    for (i, hit) in answer.hits.iter().enumerate() {
        // Hop hits and edges say what they are before their text.
        let place = seren_corpus_callosum::render::place(hit);
        let content = printable(&hit.content);
        let content = if place.starts_with('#') {
            content
        } else {
            format!("[{place}] {content}")
        };
        let content = if content.chars().count() > 72 {
            cut(&content, 69)
        } else {
            content
        };
        let _ = writeln!(
            out,
            "{:>3}  {:<7.5}  {:<store_width$}  {:>4}  {:>5.3}  {:>6}  {:>6}  {content}",
            i + 1,
            hit.score,
            printable(&hit.store),
            format!("#{}", hit.store_rank),
            hit.base_relevance,
            number(hit.native_score),
            number(hit.raw_distance),
        );
        if let Some(explain) = &hit.explain {
            let _ = writeln!(out, "     why: {}", printable(&explain.why));
        }
    }
    for dropped in answer.explain_dropped.iter().flatten() {
        let _ = writeln!(
            out,
            "left out: {} #{} {}: {}",
            printable(&dropped.store),
            dropped.store_rank,
            printable(&dropped.id),
            printable(&dropped.why)
        );
    }
    if answer.hits.is_empty() {
        let _ = writeln!(out, "  (no hits)");
    }
    let _ = match answer.budget_tokens {
        Some(budget) => writeln!(out, "tokens: {} of {budget}", answer.tokens),
        None => writeln!(out, "tokens: {}", answer.tokens),
    };
    let _ = writeln!(out);
    render_stores(answer, &mut out);
    out
}

/// What answered, failed and was skipped, under the table.
fn render_stores(answer: &api::SearchAnswer, out: &mut String) {
    use std::fmt::Write;
    let _ = writeln!(
        out,
        "searched: {}",
        or_none(&answer.stores_searched.join(", "))
    );
    for (word, entries) in [
        ("failed:  ", &answer.failed),
        ("skipped: ", &answer.skipped),
    ] {
        for entry in entries {
            let _ = writeln!(
                out,
                "{word} {}: {}",
                printable(&entry.name),
                printable(&entry.reason)
            );
        }
    }
}

fn or_none(text: &str) -> &str {
    if text.is_empty() { "(none)" } else { text }
}

/// Exit codes of `check`: 0 all bound stores answered, 2 some store failed or was skipped,
/// 78 the configuration is invalid (an inbound token it asks for cannot be read, say).
async fn check(config: Config) -> anyhow::Result<ExitCode> {
    let mut out = check_header(&config);
    let token_error = config.server.token_error.is_some();
    let federation = Federation::start(config).await?;
    let answer = match federation
        .search(
            &api::SearchRequest {
                n_results: Some(1),
                ..api::SearchRequest::new("seren-corpus-callosum check")
            },
            &Chain::root(),
        )
        .await
    {
        Ok(answer) => answer,
        Err(refusal) => anyhow::bail!("the probe search was refused: {refusal}"),
    };
    let mut healthy = check_stores(&federation.stores(), &answer, &mut out);
    healthy &= check_mcp_tools(&federation, &mut out).await;
    healthy &= check_issuer(&federation.config(), &mut out).await;
    emit(&out)?;
    Ok(if token_error {
        ExitCode::from(EXIT_CONFIG)
    } else if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// Whether `server.oauth`'s issuer gives its signing keys (true when no issuer is set).
async fn check_issuer(config: &Config, out: &mut String) -> bool {
    use std::fmt::Write;
    let Some(oauth) = &config.server.oauth else {
        return true;
    };
    let verifier =
        seren_corpus_callosum::oauth::Verifier::new(oauth.clone(), config.tls.trust_system_store);
    match verifier.probe().await {
        Ok((_, 0)) => {
            let _ = writeln!(
                out,
                "oauth:   FAIL the issuer publishes no signing key this server can use"
            );
            false
        }
        Ok((uri, keys)) => {
            let _ = writeln!(out, "oauth:   ok {keys} signing key(s) from {uri}");
            true
        }
        Err(why) => {
            let _ = writeln!(
                out,
                "oauth:   FAIL cannot read the issuer's signing keys: {why}"
            );
            false
        }
    }
}

/// What `check` says of the configuration itself: the files, where the token comes from, what is
/// wrong with it, and the warnings.
fn check_header(config: &Config) -> String {
    use seren_corpus_callosum::config::TokenSource;
    use std::fmt::Write;
    // Writing to a String cannot fail.
    let mut out = String::new();
    let found = match (config.exists, config.found_in_working_dir, config.trusted) {
        (false, _, _) => "not found: an empty federation",
        (true, false, _) => "found",
        (true, true, true) => "found in the working directory, trusted",
        (true, true, false) => {
            "found in the working directory, not trusted: no secrets read, no programs run"
        }
    };
    let _ = writeln!(out, "config:  {} ({found})", config.path.display());
    let _ = writeln!(out, "overlay: {}", config.overlay_shown());
    let auth = match &config.server.token_source {
        TokenSource::None => "none (no inbound token)".to_owned(),
        TokenSource::Inline => "inbound token inline".to_owned(),
        TokenSource::Keychain(pointer) => format!(
            "inbound token from the keychain entry '{pointer}' ({})",
            config.keychain.describe()
        ),
        TokenSource::Env(name) => format!("inbound token from ${name}"),
    };
    let _ = writeln!(out, "auth:    {auth}");
    if let Some(oauth) = &config.server.oauth {
        let _ = writeln!(
            out,
            "oauth:   access tokens from {} for {} (read: {}, write: {}); metadata at {}",
            oauth.issuer,
            oauth.resource,
            oauth.read_scope,
            oauth.write_scope,
            oauth.metadata_url()
        );
    }
    let _ = writeln!(
        out,
        "packet:  {}",
        config.federation.knobs.shaping.describe().join("; ")
    );
    if let Some(why) = &config.server.token_error {
        let _ = writeln!(out, "error:   {why}; serve refuses to start");
    }
    for warning in &config.warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    out
}

/// One line per store, as the probe search found it; true when every store answered or is
/// disabled, and the overlay could be read.
fn check_stores(stores: &api::Stores, answer: &api::SearchAnswer, out: &mut String) -> bool {
    use std::fmt::Write;
    if let Some(error) = &stores.overlay_error {
        let _ = writeln!(out, "overlay error: {error}");
    }
    let mut healthy = stores.overlay_error.is_none();
    for row in &stores.stores {
        let kind = if row.kind.is_empty() { "?" } else { &row.kind };
        let (word, detail) = if answer.stores_searched.contains(&row.name) {
            ("ok", row.url.clone())
        } else if let Some(failed) = answer.failed.iter().find(|f| f.name == row.name) {
            ("failed", failed.reason.clone())
        } else {
            match &row.status {
                StoreStatus::Skipped(reason) => ("skipped", reason.clone()),
                StoreStatus::Disabled => ("disabled", row.url.clone()),
                // Every active store is asked, so it answered or failed; this is not reached.
                StoreStatus::Active => ("failed", "not asked".to_owned()),
            }
        };
        healthy &= matches!(word, "ok" | "disabled");
        let _ = writeln!(out, "{word:<8} {} ({kind}): {detail}", row.name);
    }
    if stores.stores.is_empty() {
        let _ = writeln!(out, "no stores configured");
    }
    healthy
}

/// For each MCP store, the server's tools and whether the configured one is there and takes the
/// query; true when every one is.
async fn check_mcp_tools(federation: &Federation, out: &mut String) -> bool {
    use seren_corpus_callosum::store::{Caller, mcp::McpStore};
    use std::fmt::Write;
    let fan = federation.roster().fan();
    let mut healthy = true;
    for bound in &fan.bound {
        let Caller::Mcp(store) = &bound.caller else {
            continue;
        };
        let timeout = federation.knobs().call(bound).timeout;
        let line = match store.check_tools(timeout).await {
            Ok(check) => {
                healthy &= McpStore::fits(&check);
                let takes = match check.takes_query {
                    Some(true) => format!("takes '{}'", check.query_arg),
                    Some(false) => format!("does NOT take '{}' (set query_arg)", check.query_arg),
                    None => format!("has no argument schema (sent '{}')", check.query_arg),
                };
                let tool = if check.has_tool {
                    format!("'{}' is listed and {takes}", check.tool)
                } else {
                    format!("'{}' is NOT listed (set tool)", check.tool)
                };
                format!("tools: {}; {tool}", check.tools.join(", "))
            }
            Err(why) => {
                healthy = false;
                format!("tools: not listed: {why}")
            }
        };
        let _ = writeln!(out, "         {}: {line}", bound.name);
    }
    healthy
}

async fn run_demo(
    mut config: Config,
    launcher_gone: CancellationToken,
) -> anyhow::Result<ExitCode> {
    let stores_down = CancellationToken::new();
    let _stop_stores_on_exit = stores_down.clone().drop_guard();
    let memory = demo::spawn_memory_store(stores_down.clone()).await?;
    let loci = demo::spawn_loci_store(stores_down.clone()).await?;
    demo::use_sample_stores(&mut config, &[&memory, &loci])?;
    let token_note = if config.server.token.is_some() {
        " -H \"Authorization: Bearer $SEREN_SCC_BEARER_TOKEN\""
    } else {
        ""
    };
    let banner = format!(
        "\nseren-corpus-callosum demo\n\
         \x20 sample stores (a demo fixture, not part of the callosum; they live as long as this process):\n\
         \x20   {:<9} {:<13} {}\n\
         \x20   {:<9} {:<13} {}\n\
         \x20 runtime overlay: {}\n\n\
         \x20 The Bridge:  http://{{addr}}/viewer\n\
         \x20 Try:         curl -s http://{{addr}}/search -H 'content-type: application/json'{token_note} -d '{{\"query\": \"that CUDA thing on the Xavier\", \"n_results\": 5}}'\n\
         \x20 Or:          seren-corpus-callosum search -c <config> \"jetpack\"  (against your own stores)\n\
         \x20 Stop with Ctrl-C.\n",
        memory.name,
        memory.kind,
        memory.url,
        loci.name,
        loci.kind,
        loci.url,
        config.overlay_path.display(),
    );
    // The demo's roster is its two sample stores, not the file's: nothing is reloaded.
    run_server(config, Some(banner), None, launcher_gone).await
}

/// `propose`: the entry is printed on stdout, a reason it could not be made on stderr (exit 2;
/// 64, EX_USAGE, for a wrong argument).
async fn propose(args: ProposeArgs) -> ExitCode {
    use seren_corpus_callosum::cli::propose;
    let target = match propose_target(&args) {
        Ok(target) => target,
        Err(why) => {
            eprintln!("seren-corpus-callosum propose: {why}");
            return ExitCode::from(64);
        }
    };
    let timeout = std::time::Duration::from_secs_f64(args.timeout_s.clamp(0.1, 600.0));
    match propose::propose(&target, &args.query, args.n_results.clamp(1, 100), timeout).await {
        Ok(proposal) => {
            print!("{}", proposal.yaml(&args.query));
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("seren-corpus-callosum propose: {why}");
            ExitCode::from(2)
        }
    }
}

/// What `propose` is pointed at, from its arguments; an error names the argument.
fn propose_target(
    args: &ProposeArgs,
) -> Result<seren_corpus_callosum::cli::propose::Target, String> {
    use serde_json::{Value, json};
    use seren_corpus_callosum::config::Program;
    use seren_corpus_callosum::secret::Secret;
    use seren_corpus_callosum::store::mcp::client::Link;
    let pair = |flag: &str, text: &str| -> Result<(String, String), String> {
        match text.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => {
                Ok((name.trim().to_owned(), value.to_owned()))
            }
            _ => Err(format!(
                "--{flag} takes NAME=VALUE, got {}",
                json!(cut(text, 60))
            )),
        }
    };
    let mut arguments = serde_json::Map::new();
    for text in &args.arguments {
        let (name, value) = pair("arg", text)?;
        let value = serde_json::from_str(&value).unwrap_or(Value::String(value));
        arguments.insert(name, value);
    }
    if let Some(name) = &args.name {
        config::check_name(name).map_err(|why| format!("--name: {why}"))?;
    }
    let (link, endpoint) = match (&args.url, args.command.split_first()) {
        (Some(url), _) => {
            let parsed = url::Url::parse(url).map_err(|why| format!("--url: {why}"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(format!(
                    "--url must be http:// or https://, got {}",
                    parsed.scheme()
                ));
            }
            let mut endpoint = vec![("url", json!(url))];
            let token = match &args.token_env {
                Some(var) => {
                    let value = std::env::var(var)
                        .map_err(|_| format!("--token-env: ${var} is not set"))?;
                    endpoint.push(("token_env", json!(var)));
                    Secret::bearer(value).map_err(|why| format!("--token-env: ${var} {why}"))?
                }
                None => None,
            };
            let clients = seren_corpus_callosum::store::clients::Clients::new(false)
                .map_err(|why| why.to_string())?;
            let client = clients.mcp(None)?;
            (
                Link::Http {
                    url: parsed,
                    token,
                    client,
                },
                endpoint,
            )
        }
        (None, Some((command, rest))) => {
            let mut env = std::collections::BTreeMap::new();
            for text in &args.env {
                let (name, value) = pair("env", text)?;
                env.insert(name, value);
            }
            let mut endpoint = vec![("command", json!(command)), ("args", json!(rest))];
            if !env.is_empty() {
                endpoint.push(("env", json!(env)));
            }
            let program = Program {
                command: command.clone(),
                args: rest.to_vec(),
                env,
            };
            (Link::Stdio(program), endpoint)
        }
        (None, None) => {
            return Err(
                "say where the server is: --url URL, or -- COMMAND ARGS... to spawn it".into(),
            );
        }
    };
    Ok(seren_corpus_callosum::cli::propose::Target {
        name: args.name.clone(),
        link,
        endpoint,
        tool: args.tool.clone(),
        arguments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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
