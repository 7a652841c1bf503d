//! The `seren-corpus-callosum` command: parse the command line, set up logging on stderr, and run
//! one command (`serve` when none is named) through its entry in the library's `cli` module, which
//! loads the configuration, runs until done or signalled, and says the exit code.

use clap::Parser;
use seren_corpus_callosum::cli::{self, Cli, Command};
use seren_corpus_callosum::logline;
use std::process::ExitCode;

/// mimalloc instead of the system allocator: under load, tokio frees on one worker what another
/// allocated, and glibc's arena locks showed up as 8% of the service's CPU in a profile; see
/// docs/bench/history.md ("What each change bought") for what the switch bought.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let command = Cli::parse().into_command();
    // stdout is the answer (search, check, propose, eval) or the MCP channel (stdio): logs stay on
    // stderr, and the commands that answer on stdout log only errors.
    cli::init_logging(if command.answers_on_stdout() {
        "error"
    } else {
        "info"
    });
    let code = match command {
        Command::Serve(args) => cli::serve::run(args),
        Command::Stdio(args) => cli::serve::stdio(args),
        Command::Demo(args) => cli::demo::run(args),
        Command::Search(args) => cli::search::run(args),
        Command::Check(arg) => cli::check::run(&arg),
        Command::Eval(args) => cli::eval::run(args),
        Command::Init(arg) => cli::init::run(&arg),
        Command::Trust(args) => cli::trust::run(&args),
        Command::Propose(args) => cli::propose::run(args),
    };
    // Anything a server's last moments logged (see `logline`).
    logline::stderr().flush();
    code
}
