//! The command line: an edge over the federation, as REST (`http`) and MCP (`mcp`) are. One entry
//! per command, each `run(args) -> ExitCode`: what a person reads, and the exit codes, are decided
//! here. `anyhow` lives here and nowhere deeper; the library's errors are typed.
//!
//! - [`args`]: the commands and their arguments, as clap reads them.
//! - [`run`]: how every command runs: logging, the runtime, the configuration loaded once, the
//!   exit codes, stdout.
//! - [`serve`]: `serve` and `stdio`, and the serve lifecycle ([`serve::start`]: bind, warm-up,
//!   reload, graceful shutdown) that the integration tests start their servers with too.
//! - [`demo`]: `demo`, the server in front of two sample stores.
//! - [`search`]: `search`, and the table it prints.
//! - [`eval`]: `eval`, the fusion and each store scored against judged queries, and its table.
//! - [`check`]: `check`: the configuration, each store, each MCP store's tools, the issuer.
//! - [`init`]: `init`, and the MCP host entries it prints.
//! - [`trust`]: `trust`, a config file found in the working directory trusted (or no longer).
//! - [`propose`]: `propose`: an MCP server's mapping, guessed and proved on one search.

pub mod args;
pub mod check;
pub mod demo;
pub mod eval;
pub mod init;
pub mod propose;
pub mod run;
pub mod search;
pub mod serve;
pub mod trust;

pub use args::{
    Cli, Command, ConfigArg, EvalArgs, ProposeArgs, SearchArgs, ServeArgs, StdioArgs, TrustArgs,
};
pub use run::init_logging;
