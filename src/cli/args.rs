//! The command line as clap reads it: the commands and their arguments. Every word here is the
//! binary's `--help`.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

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
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Subcommand)]
pub enum Command {
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
    /// Score the fusion, and each store alone, against judged queries: nDCG, Recall, MRR and P
    /// at k, each mean with a 95% bootstrap interval, and where fusing lost to a store alone.
    Eval(EvalArgs),
    /// Trust a config file found in the working directory (a cloned repository may carry one)
    /// to read its stores' token_env and token_keyring and run their command, as it now stands:
    /// an edit needs trust again.
    Trust(TrustArgs),
}

#[derive(Args)]
pub struct TrustArgs {
    /// The config file (default: ./seren-corpus-callosum.yaml).
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
    /// Stop trusting it instead.
    #[arg(long)]
    pub forget: bool,
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  seren-corpus-callosum propose --query xavier -- basic-memory mcp\n  \
                  seren-corpus-callosum propose --query lab --arg collection_name=lab --url http://127.0.0.1:8000/mcp"
)]
pub struct ProposeArgs {
    /// A query the server has hits for: the test search.
    #[arg(long, value_name = "TEXT")]
    pub query: String,
    /// The store's name in the entry (default: the server's own name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The tool to read (default: the search-like tool the server lists).
    #[arg(long, value_name = "TOOL")]
    pub tool: Option<String>,
    /// A fixed argument of every call (a collection, a project, a group), NAME=VALUE; a VALUE
    /// that reads as JSON is that JSON, else text. Repeatable.
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    pub arguments: Vec<String>,
    /// The server's streamable HTTP endpoint (instead of a command).
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub url: Option<String>,
    /// The environment variable that holds the bearer token for --url.
    #[arg(long, value_name = "VAR", requires = "url")]
    pub token_env: Option<String>,
    /// An environment variable of the spawned server, NAME=VALUE. Repeatable.
    #[arg(long = "env", value_name = "NAME=VALUE", conflicts_with = "url")]
    pub env: Vec<String>,
    /// How many hits the test search asks for.
    #[arg(short = 'n', long = "n-results", value_name = "N", default_value_t = 5)]
    pub n_results: usize,
    /// Seconds the test call may take (the server's start may take 90 more).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub timeout_s: f64,
    /// The program that serves MCP on stdio, and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Args)]
pub struct StdioArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Also serve the REST API, the viewer and /mcp over HTTP (server.host:server.port).
    #[arg(long)]
    pub http: bool,
}

#[derive(Args, Clone, Default)]
pub struct ConfigArg {
    /// The config file (default: $SEREN_SCC_CONFIG, ./seren-corpus-callosum.yaml, then the
    /// platform config dir).
    #[arg(short, long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

#[derive(Args, Clone, Default)]
pub struct ServeArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    /// The address to bind (overrides server.host and SEREN_SCC_HOST).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// The port to bind (overrides server.port and SEREN_SCC_PORT).
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
}

#[derive(Args)]
pub struct SearchArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    /// What to search for.
    pub query: String,
    /// How many fused hits to print (default: federation.n_results).
    #[arg(short = 'n', long = "n-results", value_name = "N")]
    pub n_results: Option<i64>,
    /// Pack the answer into a page of at most N tokens (default: federation.budget_tokens).
    #[arg(long = "budget-tokens", value_name = "N")]
    pub budget_tokens: Option<i64>,
    /// Search only this store (repeat for more): a name `check` or GET /stores lists.
    #[arg(long = "store", value_name = "NAME")]
    pub stores: Vec<String>,
    /// Leave this store out (repeat for more).
    #[arg(long = "exclude-store", value_name = "NAME")]
    pub exclude_stores: Vec<String>,
    /// Say why each hit is where it is (a `why` line under each hit; with --json, the answer's
    /// `explain` and `explain_dropped`).
    #[arg(long)]
    pub explain: bool,
    /// Which hits of several stores are one document, for this search (default:
    /// federation.identity): none, key (equal identity_key values) or content (equal texts).
    #[arg(long, value_name = "HOW", value_parser = ["none", "key", "content"])]
    pub identity: Option<String>,
    /// Print the answer as JSON, exactly as POST /search gives it.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
#[command(
    after_help = "The judgments file is JSON Lines, one judged query a line:\n  \
                  {\"qid\": \"q1\", \"query\": \"xavier cuda\", \"relevant\": [{\"store\": \"notes\", \"id\": \"n42\", \"grade\": 2}]}\n\
                  or TREC qrels (qid 0 store/id grade) with a queries.tsv (qid TAB query) beside them:\n\
                  a file whose first line starts with { is JSON Lines.\n\n\
                  Exit codes: 0 scored; 65 the judgments are invalid (each bad line named); 66 they \
                  cannot be read; 73 --runs cannot be written; 78 the configuration is invalid."
)]
pub struct EvalArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    /// The judged queries: JSON Lines, or TREC qrels with a queries.tsv beside them.
    #[arg(long, value_name = "FILE")]
    pub judgments: PathBuf,
    /// The cutoff: every search asks for K hits, and every measure is at K.
    #[arg(long, value_name = "K", default_value_t = 10,
          value_parser = clap::value_parser!(u16).range(1..=crate::limits::MAX_N_RESULTS))]
    pub k: u16,
    /// Print the report as one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Write TREC run files here (fused.run, and store.NAME.run for each store), for trec_eval,
    /// ranx or ir_measures to read.
    #[arg(long, value_name = "DIR")]
    pub runs: Option<PathBuf>,
    /// Search each store's weight and the RRF k on half the queries, and check the best on the
    /// other half beside the current setting; print the YAML and the POST /configure body that
    /// apply it. Changes nothing itself.
    #[arg(long)]
    pub tune: bool,
    /// Which hits of several stores are one document in these searches (default:
    /// federation.identity): none, key (equal identity_key values) or content (equal texts).
    /// With it on, a judgment may name {"identity": KEY}.
    #[arg(long, value_name = "HOW", value_parser = ["none", "key", "content"])]
    pub identity: Option<String>,
}

impl Cli {
    /// The command to run: `serve` when none is named.
    pub fn into_command(self) -> Command {
        self.command.unwrap_or(Command::Serve(self.serve))
    }
}

impl Command {
    /// Whether stdout is the command's answer (`search`, `check`, `propose`, `eval`): it then logs only
    /// errors (on stderr, as every command does).
    pub fn answers_on_stdout(&self) -> bool {
        matches!(
            self,
            Command::Search(_) | Command::Check(_) | Command::Propose(_) | Command::Eval(_)
        )
    }
}
