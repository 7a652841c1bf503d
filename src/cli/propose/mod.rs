//! `seren-corpus-callosum propose`: the mapping of an MCP server nobody has written one for,
//! guessed from what the server says of itself and proved by one search.
//!
//! 1. [`pick_tool`]: the search-like tool among those `tools/list` gives (by its name and a
//!    query-like argument), its query, limit and required arguments from its input schema, and a
//!    `json` value for an output-format argument that offers one.
//! 2. One test call with the query the user gives.
//! 3. [`read_result`]: the result's shape (an `<entry>` text block per hit, column-major JSON, or
//!    a JSON hit array, found in the structured content or the first text block), the hit array's
//!    place, and the id, content and score members of its hits (from the first hits, else from
//!    the tool's `outputSchema`).
//! 4. The entry is parsed back as any config entry is, and reads the test answer: the hit count
//!    and the first hit are printed with it, so what is pasted is what was proved.
//!
//! Every guess is bounded by what the server sent: the names looked at are those of one tool's
//! schema and of the first `read::SAMPLE` hits, and the search for a hit array goes `read::DEPTH`
//! levels down. The notes quote the server's own names, cut short, never its values beyond the first
//! hit's content (the user asked for it).

mod pick;
mod read;

pub use pick::{Call, Key, pick_tool};
pub use read::{Reading, read_result, reading};

use crate::cli::args::ProposeArgs;
use crate::store::mcp::Spec;
use crate::store::mcp::client::{self, Link, Probe};
use crate::text::cut;
use serde_json::{Map, Value, json};
use std::process::ExitCode;
use std::time::Duration;

/// `propose`: the entry is printed on stdout, a reason it could not be made on stderr (exit 2;
/// 64, EX_USAGE, for a wrong argument).
pub fn run(args: ProposeArgs) -> ExitCode {
    match crate::cli::run::runtime() {
        Ok(runtime) => runtime.block_on(command(args)),
        Err(code) => code,
    }
}

/// The target from the arguments, the proposal, and what is printed of it.
async fn command(args: ProposeArgs) -> ExitCode {
    let target = match target(&args) {
        Ok(target) => target,
        Err(why) => {
            eprintln!("seren-corpus-callosum propose: {why}");
            return ExitCode::from(64);
        }
    };
    let timeout = Duration::from_secs_f64(args.timeout_s.clamp(0.1, 600.0));
    match propose(&target, &args.query, args.n_results.clamp(1, 100), timeout).await {
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
fn target(args: &ProposeArgs) -> Result<Target, String> {
    use crate::config::{self, Program};
    use crate::secret::Secret;
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
            let clients =
                crate::store::clients::Clients::new(false).map_err(|why| why.to_string())?;
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
    Ok(Target {
        name: args.name.clone(),
        link,
        endpoint,
        tool: args.tool.clone(),
        arguments,
    })
}

/// What `propose` is pointed at.
#[derive(Debug, Clone)]
pub struct Target {
    /// The store's name in the printed entry (the server's own name when not given).
    pub name: Option<String>,
    pub link: Link,
    /// The endpoint's keys as they are printed (`command`, `args`, `env` or `url`, `token_env`).
    pub endpoint: Vec<(&'static str, Value)>,
    /// The tool to use, when the user names it.
    pub tool: Option<String>,
    /// Fixed arguments the user gives (a scope: a collection, a project, a group).
    pub arguments: Map<String, Value>,
}

/// A proposed entry, proved on one search.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub name: String,
    pub keys: Vec<Key>,
    /// How many hits the entry read from the test answer, and the first one's content.
    pub hits: usize,
    pub first: Option<String>,
    /// What else is worth knowing (other search-like tools, a score left out, ...).
    pub notes: Vec<String>,
}

/// Opens the server, picks its search tool, calls it once for `query` and proposes the entry.
pub async fn propose(
    target: &Target,
    query: &str,
    n: usize,
    timeout: Duration,
) -> Result<Proposal, String> {
    let shown = target.name.as_deref().unwrap_or("proposed");
    let probe = Probe::open(shown, &target.link, timeout + crate::limits::MCP_START_WAIT)
        .await
        .map_err(|why| format!("the server gave no session: {why}"))?;
    let name = match &target.name {
        Some(name) => name.clone(),
        None => store_name(probe.server_name().as_deref()),
    };
    let (call, mut notes) = pick_tool(probe.tools(), target.tool.as_deref(), &target.arguments)?;
    let tool = probe.tools().iter().find(|t| t.name == call.tool);
    let output_schema = tool.and_then(|t| t.output_schema.as_deref());
    let result = probe
        .call(&call.tool, call.test_arguments(query, n), timeout)
        .await
        .map_err(|why| format!("the test call of {} failed: {why}", call.tool))?;
    let reading = read_result(&result, output_schema.map(|o| o as &Map<String, Value>))?;
    notes.extend(reading.notes);
    let mut keys: Vec<Key> = target
        .endpoint
        .iter()
        .map(|(key, value)| Key {
            key,
            value: value.clone(),
            why: String::new(),
        })
        .collect();
    keys.extend(call.keys);
    keys.extend(reading.keys);
    let options: Map<String, Value> = keys
        .iter()
        .filter(|key| !target.endpoint.iter().any(|(k, _)| k == &key.key))
        .map(|key| (key.key.to_owned(), key.value.clone()))
        .collect();
    // The proof: the entry as the config reads it, reading the answer the server gave.
    let spec =
        Spec::parse(&options).map_err(|why| format!("the proposed entry is refused: {why}"))?;
    let hits = client::read(&result, &spec.mapping, n)
        .map_err(|why| format!("the proposed entry cannot read the test answer: {why}"))?;
    Ok(Proposal {
        name,
        keys,
        hits: hits.len(),
        first: hits.first().map(|hit| cut(&hit.content, 80)),
        notes,
    })
}

/// A store name from the server's own name: the config's name characters, else `mcp`.
pub fn store_name(server: Option<&str>) -> String {
    let name: String = server
        .unwrap_or_default()
        .trim()
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '_' | '-' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .take(64)
        .collect();
    let name = name.trim_matches('-').to_owned();
    if name.is_empty() { "mcp".into() } else { name }
}

impl Proposal {
    /// The entry as YAML lines to paste under `federation: stores:`, with what was guessed in comments.
    /// Every value is written as JSON, which YAML reads as it is, so no text of the server's
    /// can break the block.
    pub fn yaml(&self, query: &str) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# Proposed by `seren-corpus-callosum propose` from a test search for {}:",
            json!(cut(query, 60))
        );
        let first = self.first.as_ref().map_or(String::new(), |first| {
            format!(", the first: {}", json!(first))
        });
        let _ = writeln!(
            out,
            "# this entry read {} hits of its answer{first}.",
            self.hits
        );
        for note in &self.notes {
            let _ = writeln!(out, "# {note}");
        }
        let _ = writeln!(
            out,
            "# Paste it under `federation: stores:`; lines marked guessed are worth a look."
        );
        let _ = writeln!(out, "    - name: {}", self.name);
        let _ = writeln!(out, "      type: mcp");
        for key in &self.keys {
            let line = format!("      {}: {}", key.key, key.value);
            match key.why.is_empty() {
                true => {
                    let _ = writeln!(out, "{line}");
                }
                false => {
                    let _ = writeln!(out, "{line:<44} # {}", key.why);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_name_is_made_from_the_servers() {
        assert_eq!(store_name(Some("Basic Memory")), "basic-memory");
        assert_eq!(store_name(Some("  ")), "mcp");
        assert_eq!(store_name(None), "mcp");
    }
}
