//! `serve` and `stdio`, and the serve lifecycle they run: the exposure check, the federation
//! started, the bind, the warm-up of MCP stores, the reload watch, `READY=1` to systemd, and the
//! graceful shutdown at a signal or when the npm launcher is gone. [`start`] is that lifecycle as
//! one library call: `serve` and `demo` run it until stopped, and the integration tests start
//! every in-process server with it, stopping it with a token.

use super::args::{ServeArgs, StdioArgs};
use super::run::{EXIT_CONFIG, Load, execute};
use crate::config::{Config, Exposure};
use crate::federation::Federation;
use crate::http::{self, AppState};
use crate::{logline, mcp, reload};
use anyhow::Context;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// `serve`: the HTTP surface (REST, the viewer, `/mcp`) until SIGINT or SIGTERM, or until the npm
/// launcher that started it is gone; the config file is read again on SIGHUP and when it changes.
pub fn run(args: ServeArgs) -> ExitCode {
    let options = Options {
        reload: Some(reloader(args.clone())),
        signals: true,
        ..Options::default()
    };
    execute(&args.config, Some(&args), Load::File, |config, gone| {
        until_stopped(config, options, gone)
    })
}

/// `stdio`: MCP on stdin/stdout until the host closes stdin (or the npm launcher is gone); with
/// `--http`, the HTTP surface beside it on the same live roster.
pub fn stdio(args: StdioArgs) -> ExitCode {
    let loader = reloader(args.serve.clone());
    let http = args.http;
    execute(
        &args.serve.config,
        Some(&args.serve),
        Load::File,
        |config, gone| serve_stdio(config, http, loader, gone),
    )
}

/// How [`start`] serves, beyond what the configuration says.
#[derive(Default)]
pub struct Options {
    /// Said on stderr once the address answers, `{addr}` standing for the address (`demo`'s).
    pub banner: Option<String>,
    /// How the config file is read again, on SIGHUP and when it changes (`server.watch`); none:
    /// it is not read again.
    pub reload: Option<reload::Loader>,
    /// A listener already bound, served instead of binding `server.host:server.port` (a test's
    /// port chosen by the system); the exposure check judges its address.
    pub listener: Option<tokio::net::TcpListener>,
    /// Stop at SIGINT or SIGTERM too (on Windows at Ctrl-C, Ctrl-Break, the console closed, a
    /// log-off or a shutdown), caught from the bind on: what the command does, and what a test
    /// process, whose signals are its own, leaves out.
    pub signals: bool,
}

/// A server that started: where it listens, its federation, and its end.
pub struct Started {
    /// The address bound (with the port the system chose, for port 0).
    pub addr: SocketAddr,
    /// The federation it serves, as its routes see it.
    pub federation: Arc<Federation>,
    /// Ends once the server stopped and its requests drained (at most `limits::DRAIN`), with what
    /// serving returned.
    pub finished: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Started {
    /// The server's base url, `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Why [`start`] did not start a server.
#[derive(Debug, thiserror::Error)]
pub enum NotStarted {
    /// The configuration does not allow it: an open bind with no token, or an inbound token that
    /// cannot be had. Already said on stderr; the command exits 78.
    #[error("the configuration does not allow the server to start")]
    Refused,
    /// The federation or the bind failed.
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// The serve lifecycle: refuses a bind the configuration does not allow, starts the federation,
/// binds, warms up the MCP stores, logs what it fans and where it listens (and says `banner`),
/// watches the config file (with `options.reload`), tells systemd `READY=1`, and serves until
/// `stop` is cancelled (or, with `options.signals`, a signal comes): then `STOPPING=1`, every MCP
/// session and stream ends, in-flight requests drain, and the spans still queued are sent
/// (`telemetry`). Lines logged while it serves leave in batches (`logline`).
pub async fn start(
    config: Config,
    options: Options,
    stop: CancellationToken,
) -> Result<Started, NotStarted> {
    let Options {
        banner,
        reload: loader,
        listener,
        signals,
    } = options;
    let bound = match &listener {
        Some(listener) => Some(listener.local_addr().context("the listener given")?),
        None => None,
    };
    check_exposure(&config, bound)?;
    let federation = Arc::new(
        Federation::start(config)
            .await
            .map_err(anyhow::Error::from)?,
    );
    let shutdown = CancellationToken::new();
    let (addr, serving) = bind_http(federation.clone(), listener, &shutdown).await?;
    let signalled = signals.then(stop_requested);
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
    // SIGHUP is taken before the address is said: a reload asked for as soon as the server is up
    // (a test, `systemctl reload` at READY) must reload, not end the process by SIGHUP's default.
    if let Some(loader) = loader {
        reload::spawn(federation.clone(), loader, shutdown.clone());
    }
    tracing::info!("listening on http://{addr} (viewer: http://{addr}/viewer)");
    // Said only once the router is built, so an address on screen is one that answers.
    if let Some(banner) = banner {
        eprintln!("{}", banner.replace("{addr}", &addr.to_string()));
    }
    // From here a line per request may follow: they leave in batches (`logline`) until the
    // server returns.
    let batched = logline::stderr().batch();
    notify_systemd(&format!("READY=1\nSTATUS=listening on http://{addr}"));
    let signal = shutdown.clone();
    tokio::spawn(async move {
        match signalled {
            Some(signalled) => tokio::select! {
                () = signalled => {}
                () = stop.cancelled() => {}
            },
            None => stop.cancelled().await,
        }
        tracing::info!("shutting down");
        notify_systemd("STOPPING=1");
        signal.cancel();
    });
    let traces = federation.traces().clone();
    let finished = tokio::spawn(async move {
        let _batched = batched;
        let served = serving.await;
        // The spans of the searches just drained leave before the server counts as stopped.
        traces.shutdown().await;
        served
    });
    Ok(Started {
        addr,
        federation,
        finished,
    })
}

/// [`start`], then waits for the server's end: exit 0, or 78 when the configuration refused it.
pub(super) async fn until_stopped(
    config: Config,
    options: Options,
    stop: CancellationToken,
) -> anyhow::Result<ExitCode> {
    match start(config, options, stop).await {
        Ok(started) => {
            started.finished.await??;
            Ok(ExitCode::SUCCESS)
        }
        Err(NotStarted::Refused) => Ok(ExitCode::from(EXIT_CONFIG)),
        Err(NotStarted::Failed(error)) => Err(error),
    }
}

/// How a running service reads its config file again: as at start, `--host` and `--port` included.
pub fn reloader(bind: ServeArgs) -> reload::Loader {
    Arc::new(move |running: &Config| {
        let mut config = running.reread()?;
        bind.apply(&mut config);
        Ok(config)
    })
}

impl ServeArgs {
    /// Puts `--host` and `--port` over what the configuration says.
    pub fn apply(&self, config: &mut Config) {
        if let Some(host) = &self.host {
            config.server.host = host.clone();
        }
        if let Some(port) = self.port {
            config.server.port = port;
        }
    }
}

/// Refuses an open bind with no token, or a token the configuration asks for and that cannot be
/// read (said on stderr: the error is `Refused`), and says plainly how exposed any other bind is.
/// `bound` is a listener's address, judged instead of `server.host:server.port`.
fn check_exposure(config: &Config, bound: Option<SocketAddr>) -> Result<(), NotStarted> {
    let mut server = config.server.clone();
    if let Some(why) = &server.token_error {
        eprintln!(
            "REFUSING TO START: the inbound bearer token cannot be had: {why}.\n\
             Fix the keychain entry or the variable, or remove the setting to serve without a token."
        );
        return Err(NotStarted::Refused);
    }
    if let Some(bound) = bound {
        (server.host, server.port) = (bound.ip().to_string(), bound.port());
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
            return Err(NotStarted::Refused);
        }
    }
    Ok(())
}

/// Binds the configured host and port (or takes `listener`), and builds the HTTP surface (REST,
/// viewer, `/mcp`) over `federation`: the bound address, and the future that serves until
/// `shutdown` is cancelled.
async fn bind_http(
    federation: Arc<Federation>,
    listener: Option<tokio::net::TcpListener>,
    shutdown: &CancellationToken,
) -> anyhow::Result<(
    SocketAddr,
    impl Future<Output = std::io::Result<()>> + Send + 'static,
)> {
    let server = &federation.config().server;
    let limits = http::Limits::from_config(server);
    let listener = match listener {
        Some(listener) => listener,
        None => {
            let (host, port) = (server.host.clone(), server.port);
            tokio::net::TcpListener::bind((host.as_str(), port))
                .await
                .with_context(|| format!("cannot listen on {host}:{port}"))?
        }
    };
    let addr = listener.local_addr()?;
    let router = http::router(AppState::with_shutdown(federation, shutdown.clone()));
    let serving = http::serve_with(listener, router, limits, shutdown.clone().cancelled_owned());
    Ok((addr, serving))
}

/// MCP on stdin/stdout until the host closes stdin (or until `launcher_gone`: the npm launcher
/// that started it is gone); with `--http`, the HTTP surface beside it on the same live roster.
async fn serve_stdio(
    config: Config,
    http: bool,
    loader: reload::Loader,
    launcher_gone: CancellationToken,
) -> anyhow::Result<ExitCode> {
    if http && check_exposure(&config, None).is_err() {
        return Ok(ExitCode::from(EXIT_CONFIG));
    }
    let federation = Arc::new(Federation::start(config).await?);
    federation.warm_up();
    let shutdown = CancellationToken::new();
    // Before the sidecar's address is said, as in `start`.
    reload::spawn(federation.clone(), loader, shutdown.clone());
    let sidecar = if http {
        let (addr, serving) = bind_http(federation.clone(), None, &shutdown).await?;
        tracing::info!("HTTP sidecar listening on http://{addr}");
        Some(tokio::spawn(serving))
    } else {
        None
    };
    let traces = federation.traces().clone();
    let _batched = logline::stderr().batch();
    let served = tokio::select! {
        served = mcp::serve_stdio(federation) => served,
        () = launcher_gone.cancelled() => Ok(()),
    };
    shutdown.cancel();
    if let Some(sidecar) = sidecar {
        sidecar.await??;
    }
    traces.shutdown().await;
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
fn stop_requested() -> impl Future<Output = ()> + Send + 'static {
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
