//! The docs hold nothing that can go stale unseen. Every relative link and `#anchor` in the
//! repository's Markdown resolves (GitHub's slug rules). Every example in README.md and docs/ is
//! a fenced block marked just before it with `<!-- example: NAME -->`, and
//! `every_example_is_what_the_real_thing_prints` runs, for each, the real thing: the binary as a
//! process (`demo`, `search`, `check`, `init`, `stdio`), real HTTP on loopback, and the demo's
//! sample stores; it compares what they print with the block, making equal only what varies from
//! run to run (ports, pids, temp folders). A marked block that no check reads fails it, and
//! `no_output_is_left_unmarked` fails a block that looks like output (a JSON answer, a terminal)
//! and has no mark.

mod markdown;
mod transcript;

use crate::support::mcp::{call, http_client};
use crate::support::process::{BIN, Server, command, listening_url, run};
use crate::support::stdio::RawStdio;
use markdown::Block;
use serde_json::{Value, json};
use seren_corpus_callosum::config::{Config, Env};
use seren_scc_demo::{self as demo, SampleStore};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;
use transcript::{Step, lines, varying};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let root = root();
    let pages = markdown::all_pages(root);
    let anchors: BTreeMap<String, BTreeSet<String>> = pages
        .iter()
        .map(|page| (page.path.clone(), markdown::anchors(page)))
        .collect();
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in &pages {
        for link in markdown::relative_links(page) {
            checked += 1;
            let (path, anchor) = link.target.split_once('#').unwrap_or((&link.target, ""));
            let base = Path::new(&page.path).parent().unwrap();
            let target = if path.is_empty() {
                Some(PathBuf::from(&page.path))
            } else {
                markdown::normalized(&base.join(path))
            };
            let Some(target) = target.filter(|t| root.join(t).exists()) else {
                broken.push(format!("{}: {} does not exist", link.at, link.target));
                continue;
            };
            if anchor.is_empty() {
                continue;
            }
            let key = target.to_string_lossy().replace('\\', "/");
            match anchors.get(&key) {
                Some(known) if known.contains(anchor) => {}
                Some(known) => broken.push(format!(
                    "{}: {key} has no #{anchor}; it has: {}",
                    link.at,
                    known.iter().cloned().collect::<Vec<_>>().join(", ")
                )),
                None => broken.push(format!(
                    "{}: #{anchor} points into {key}, which is not Markdown",
                    link.at
                )),
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked > 50,
        "only {checked} links found: is the parser blind?"
    );
}

#[test]
fn no_output_is_left_unmarked() {
    let mut problems = Vec::new();
    let mut names = BTreeMap::new();
    for page in markdown::doc_pages(root()) {
        let (blocks, found) = markdown::blocks(&page);
        problems.extend(found);
        for block in blocks {
            match &block.mark {
                Some(name) => {
                    if !name
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || ".-".contains(c))
                    {
                        problems.push(format!(
                            "{}: example name {name:?}: use a-z 0-9 . -",
                            block.at
                        ));
                    }
                    if let Some(first) = names.insert(name.clone(), block.at.clone()) {
                        problems.push(format!("{}: example {name} is also at {first}", block.at));
                    }
                }
                None => problems.extend(unmarked_problem(&block)),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        names.len() >= 10,
        "only {} examples: {names:?}",
        names.len()
    );
}

/// Why an unmarked block must be marked (and so checked), if it must: it shows output.
fn unmarked_problem(block: &Block) -> Option<String> {
    let why = match block.lang.as_str() {
        // A host entry is input: JSON a person pastes, which must at least parse.
        "json" => match serde_json::from_str::<Value>(&block.body) {
            Err(e) => Some(format!("JSON that does not parse ({e})")),
            Ok(Value::Object(o)) if o.keys().all(|k| k == "mcpServers" || k == "servers") => None,
            Ok(_) => Some("JSON that is not a host entry: an answer?".to_owned()),
        },
        "sh" => block.body.lines().find_map(|line| {
            let t = line.trim_start();
            if t.starts_with("$ ") {
                Some("a terminal transcript (`$ ` lines)".to_owned())
            } else if t.starts_with("curl ") {
                Some("a curl command: the test runs curl lines, so mark it".to_owned())
            } else if ["# {", "# [", "# \"", "#  "]
                .iter()
                .any(|p| t.starts_with(p))
            {
                Some(format!("an output line {t:?}"))
            } else {
                None
            }
        }),
        // A config a person pastes must load as one, with no key this version does not read.
        "yaml" => config_problem(&block.body),
        // Queries a person types into Prometheus.
        "promql" => None,
        "" | "text" | "console" | "output" => Some("output by its language".to_owned()),
        other => Some(format!(
            "a block in {other:?}: mark it, or say here why that language is input"
        )),
    }?;
    Some(format!(
        "{}: {why}; mark it <!-- example: NAME --> and check it in tests/it/docs/",
        block.at
    ))
}

/// What is wrong with a YAML block as a config file: it does not load, or it warns.
fn config_problem(yaml: &str) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seren-corpus-callosum.yaml");
    std::fs::write(&path, yaml).unwrap();
    match Config::load_from(&path, &Env::none()) {
        Err(e) => Some(format!("a config that does not load: {e}")),
        Ok(config) if !config.warnings.is_empty() => {
            Some(format!("a config that warns: {:?}", config.warnings))
        }
        Ok(_) => None,
    }
}

/// Every marked block, taken by name by the one check that reads it; what did not match.
struct Examples {
    blocks: BTreeMap<String, Block>,
    taken: BTreeSet<String>,
    mismatches: Vec<String>,
}

impl Examples {
    fn read() -> Self {
        let mut blocks = BTreeMap::new();
        for page in markdown::doc_pages(root()) {
            for block in markdown::blocks(&page).0 {
                if let Some(name) = block.mark.clone() {
                    blocks.insert(name, block);
                }
            }
        }
        Self {
            blocks,
            taken: BTreeSet::new(),
            mismatches: Vec::new(),
        }
    }

    /// The block named `name`, which this check now answers for.
    fn take(&mut self, name: &str) -> Block {
        let block = self
            .blocks
            .get(name)
            .unwrap_or_else(|| panic!("no block is marked <!-- example: {name} -->"))
            .clone();
        assert!(self.taken.insert(name.to_owned()), "{name} taken twice");
        block
    }

    /// Compares text: the example's (as shown) and the real one, each with what varies made equal.
    fn text(&mut self, block: &Block, shown: &str, real: &str) {
        let (shown, real) = (lines(&varying(shown)), lines(&varying(real)));
        if shown != real {
            self.mismatches.push(format!(
                "{}: the example says\n{shown}\n--- and the real thing prints\n{real}\n",
                block.at
            ));
        }
    }

    /// Compares JSON by value (the example may lay it out for reading), with what varies made
    /// equal; a mismatch names every path that differs.
    fn json(&mut self, block: &Block, shown: &str, real: &str) {
        let parse = |text: &str, what: &str| -> Value {
            serde_json::from_str(&varying(text))
                .unwrap_or_else(|e| panic!("{}: {what} is not JSON ({e}): {text}", block.at))
        };
        let (shown, real_value) = (parse(shown, "the example"), parse(real, "the answer"));
        let mut differences = Vec::new();
        json_differences(&shown, &real_value, "", &mut differences);
        if !differences.is_empty() {
            differences.truncate(20);
            // The answer as sent, in its own key order, for pasting.
            self.mismatches.push(format!(
                "{}: the example differs from the real answer at\n  {}\n--- the real answer:\n{}\n",
                block.at,
                differences.join("\n  "),
                varying(real).trim()
            ));
        }
    }

    /// Fails naming every mismatch, and every marked block no check read.
    fn finish(self) {
        let mut problems = self.mismatches;
        for (name, block) in &self.blocks {
            if !self.taken.contains(name) {
                problems.push(format!(
                    "{}: example {name} has no check in tests/it/docs/",
                    block.at
                ));
            }
        }
        assert!(problems.is_empty(), "\n{}", problems.join("\n"));
    }
}

fn json_differences(shown: &Value, real: &Value, at: &str, out: &mut Vec<String>) {
    match (shown, real) {
        (Value::Object(s), Value::Object(r)) => {
            for key in s.keys().chain(r.keys()).collect::<BTreeSet<_>>() {
                let here = format!("{at}/{key}");
                match (s.get(key), r.get(key)) {
                    (Some(s), Some(r)) => json_differences(s, r, &here, out),
                    (Some(_), None) => out.push(format!("{here}: shown, but not in the answer")),
                    (None, Some(r)) => out.push(format!("{here}: {r} is in the answer, not shown")),
                    (None, None) => unreachable!("the key came from one of them"),
                }
            }
        }
        (Value::Array(s), Value::Array(r)) if s.len() == r.len() => {
            for (i, (s, r)) in s.iter().zip(r).enumerate() {
                json_differences(s, r, &format!("{at}/{i}"), out);
            }
        }
        (s, r) if s != r => out.push(format!("{at}: shown {s}, the answer is {r}")),
        _ => {}
    }
}

#[tokio::test]
async fn every_example_is_what_the_real_thing_prints() {
    let mut examples = Examples::read();
    readme_demo(&mut examples).await;
    http_examples(&mut examples).await;
    mcp_over_stdio(&mut examples).await;
    cli_on_the_sample_stores(&mut examples).await;
    cli_eval(&mut examples).await;
    cli_init(&mut examples).await;
    config_error(&mut examples).await;
    views_audit(&mut examples).await;
    examples.finish();
}

/// `demo` as a process on a free port, in an empty folder: the server and its url.
fn start_demo(dir: &Path) -> (Server, String) {
    let mut demo = command(&["demo", "--port", "0"]);
    demo.current_dir(dir);
    let mut server = Server::start(demo);
    let url = listening_url(&server.wait_for("listening on http://"));
    (server, url)
}

/// The README's `demo` banner; its `curl` line answers as printed; the compact `search` text of
/// a host on the demo's `/mcp`.
async fn readme_demo(examples: &mut Examples) {
    let banner = examples.take("demo-banner");
    let compact = examples.take("readme-compact");
    let dir = tempfile::tempdir().unwrap();
    let (mut server, url) = start_demo(dir.path());
    let try_line = server.wait_for("Try:");
    server.wait_for("Stop with Ctrl-C.");
    let (status, answer) = send(
        &url,
        &transcript::curl(&transcript::words(
            try_line.split_once("Try:").unwrap().1.trim(),
        )),
    )
    .await;
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(status, 200, "the banner's curl line: {answer}");
    assert_eq!(answer["hits"].as_array().unwrap().len(), 5, "{answer}");

    let client = http_client(&url, None).await.unwrap();
    let arguments =
        json!({"query": "jetpack version on the xavier", "n_results": 3, "format": "compact"});
    let result = call(&client, "search", arguments).await;
    let text = result.content[0]
        .as_text()
        .expect("a text block")
        .text
        .clone();
    examples.text(&compact, &compact.body, &text);
    client.cancel().await.unwrap();

    let stderr = server.stop();
    let start = stderr
        .find("seren-corpus-callosum demo\n")
        .expect("the banner");
    let end = stderr.find("Stop with Ctrl-C.").unwrap() + "Stop with Ctrl-C.".len();
    let temp = std::env::temp_dir().join("seren-corpus-callosum-demo-");
    let printed = stderr[start..end].replace(
        &temp.display().to_string(),
        "/tmp/seren-corpus-callosum-demo-",
    );
    examples.text(&banner, &banner.body, &printed);
}

/// Sends what a `curl` line of the docs asks to the server at `url`: status and body.
async fn send(url: &str, curl: &transcript::Curl) -> (u16, String) {
    let method = reqwest::Method::from_bytes(curl.method.as_bytes()).unwrap();
    let mut request = crate::support::test_client().request(method, format!("{url}{}", curl.path));
    for (name, value) in &curl.headers {
        request = request.header(name, value);
    }
    if let Some(body) = &curl.body {
        request = request.body(body.clone());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// docs/http-api.md: each `curl` block runs against a fresh `demo`, and each answer is compared
/// with the `# ` lines under its command, or with the `-answer` block after it.
async fn http_examples(examples: &mut Examples) {
    for name in [
        "http-search",
        "http-explain",
        "http-stores",
        "http-add-remove",
        "http-configure",
    ] {
        let block = examples.take(name);
        let answer_block = match name {
            "http-search" | "http-explain" | "http-stores" => {
                Some(examples.take(&format!("{name}-answer")))
            }
            _ => None,
        };
        let dir = tempfile::tempdir().unwrap();
        let (server, url) = start_demo(dir.path());
        for step in transcript::script(&block.body) {
            let (status, body) = send(&url, &transcript::curl(&step.words)).await;
            assert_eq!(status, 200, "{}: {body}", block.at);
            match (&answer_block, step.output.is_empty()) {
                (Some(answer), true) => examples.json(answer, &answer.body, &body),
                (None, false) => examples.json(&block, &step.output, &body),
                _ => panic!(
                    "{}: show each command's answer once, under it or in {name}-answer",
                    block.at
                ),
            }
        }
        server.stop();
    }
}

/// The demo's two sample stores, in this process, until the token is dropped.
async fn sample_stores() -> (SampleStore, SampleStore, tokio_util::sync::DropGuard) {
    let shutdown = CancellationToken::new();
    let memory = demo::spawn_memory_store(shutdown.clone()).await.unwrap();
    let loci = demo::spawn_loci_store(shutdown.clone()).await.unwrap();
    (memory, loci, shutdown.drop_guard())
}

/// A config naming the sample stores (`support::config_yaml`'s, with its short timeout).
fn sample_config(memory: &SampleStore, loci: &SampleStore) -> String {
    crate::support::config_yaml(&[
        (memory.name, memory.kind, &memory.url, ""),
        (loci.name, loci.kind, &loci.url, ""),
    ])
}

/// docs/mcp.md: the `tools/call` request as shown, sent to `stdio` over its stdin; the result's
/// structured content, and its text block, are the JSON shown.
async fn mcp_over_stdio(examples: &mut Examples) {
    let request = examples.take("mcp-stdio-call");
    let result = examples.take("mcp-stdio-result");
    let (memory, loci, _stores) = sample_stores().await;
    let dir = tempfile::tempdir().unwrap();
    let config = crate::support::process::write_config(dir.path(), &sample_config(&memory, &loci));
    let call: Value = serde_json::from_str(&request.body).expect("the request is JSON");
    let id = call["id"].as_u64().expect("the request has an id");
    let answer = tokio::task::spawn_blocking(move || {
        let mut raw = RawStdio::start(&["stdio", "-c", &config]);
        raw.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "docs", "version": "1"}}}),
        );
        raw.answer(0);
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw.send(call);
        let answer = raw.answer(id);
        raw.close();
        answer
    })
    .await
    .unwrap();
    let structured = &answer["result"]["structuredContent"];
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        &serde_json::from_str::<Value>(text).unwrap(),
        structured,
        "the text block holds the same JSON"
    );
    examples.json(&result, &result.body, &structured.to_string());
}

/// Runs the `$ ` commands of a terminal example in `dir`, with `env`, and compares what each
/// prints (stdout, then stderr) with the lines under it, after `shown` maps real text to the
/// example's (a temp folder to the path shown); returns each exit code.
async fn terminal(
    examples: &mut Examples,
    block: &Block,
    dir: &Path,
    env: &[(&str, &Path)],
    shown: impl Fn(&str) -> String,
) -> Vec<Option<i32>> {
    let mut codes = Vec::new();
    for Step { words, output } in transcript::terminal(&block.body) {
        assert_eq!(words[0], "seren-corpus-callosum", "{}", block.at);
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        let mut cli = command(&args);
        cli.current_dir(dir);
        for (name, value) in env {
            cli.env(name, value);
        }
        let out = run(cli).await;
        let printed =
            String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap();
        examples.text(block, &output, &shown(&printed));
        codes.push(out.status.code());
    }
    codes
}

/// docs/configuration.md and docs/packet.md: `search` and `check` with `my.yaml` naming the
/// sample stores and holding docs/packet.md's 5.3.0 block, which is 5.3.0's shaping.
async fn cli_on_the_sample_stores(examples: &mut Examples) {
    let packet = examples.take("packet-5.3.0");
    let (memory, loci, _stores) = sample_stores().await;
    let dir = tempfile::tempdir().unwrap();
    // The block as shown, with the stores under it.
    let yaml = sample_config(&memory, &loci).replacen("federation:\n", &packet.body, 1);
    std::fs::write(dir.path().join("my.yaml"), &yaml).unwrap();
    let config = Config::load_from(&dir.path().join("my.yaml"), &Env::none()).unwrap();
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert_eq!(
        config.federation.knobs.shaping,
        seren_corpus_callosum::packet::Shaping::python_5_3(),
        "{}: the block is 5.3.0's defaults",
        packet.at
    );
    let here = dir.path().display().to_string();
    for name in ["cli-search", "cli-search-page", "cli-check"] {
        let block = examples.take(name);
        let codes = terminal(examples, &block, dir.path(), &[], |s| {
            s.replace(&here, "/home/you")
        })
        .await;
        assert_eq!(codes, [Some(0)], "{}", block.at);
    }
}

/// docs/evaluation.md: `eval` and `eval --tune` over the sample stores, with `my.yaml` naming
/// them and the judgments shown in `judged.jsonl`.
async fn cli_eval(examples: &mut Examples) {
    let judgments = examples.take("eval-judgments");
    let (memory, loci, _stores) = sample_stores().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("my.yaml"), sample_config(&memory, &loci)).unwrap();
    std::fs::write(dir.path().join("judged.jsonl"), &judgments.body).unwrap();
    for name in ["cli-eval", "cli-eval-tune"] {
        let block = examples.take(name);
        let codes = terminal(examples, &block, dir.path(), &[], str::to_owned).await;
        assert_eq!(codes, [Some(0)], "{}", block.at);
    }
}

/// docs/configuration.md: `init` with a fresh home writes the starter there and prints the host
/// entries for this binary, shown as installed by `cargo install`.
async fn cli_init(examples: &mut Examples) {
    let block = examples.take("cli-init");
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().canonicalize().unwrap();
    let binary = Path::new(BIN).canonicalize().unwrap();
    let (home_shown, binary_shown) = (
        home_path.display().to_string(),
        binary.display().to_string(),
    );
    let codes = terminal(examples, &block, &home_path, &[("HOME", &home_path)], |s| {
        s.replace(&binary_shown, "/home/you/.cargo/bin/seren-corpus-callosum")
            .replace(&home_shown, "/home/you")
    })
    .await;
    assert_eq!(codes, [Some(0)], "{}", block.at);
    let written = home_path.join(".config/seren-corpus-callosum/seren-corpus-callosum.yaml");
    assert!(written.exists(), "{}", written.display());
}

/// docs/configuration.md: the file shown, checked, stops with exit 78 and the message shown.
async fn config_error(examples: &mut Examples) {
    let file = examples.take("config-error-file");
    let block = examples.take("config-error");
    let dir = tempfile::tempdir().unwrap();
    let shown_path = "/etc/scc/seren-corpus-callosum.yaml";
    let real_path = dir.path().join("seren-corpus-callosum.yaml");
    std::fs::write(&real_path, &file.body).unwrap();
    let real = real_path.display().to_string();
    // The example names the file where it would live; the test's lives in a temp folder.
    let block_here = Block {
        body: block.body.replacen(shown_path, &real, 1),
        ..block.clone()
    };
    let codes = terminal(examples, &block_here, dir.path(), &[], |s| {
        s.replace(&real, shown_path)
    })
    .await;
    assert_eq!(codes, [Some(78)], "{}", block.at);
}

/// docs/security.md: the views config loads (with its variables set), and the audit lines shown
/// are what a callosum on it writes for the writes the page names.
async fn views_audit(examples: &mut Examples) {
    let config = examples.take("views-config");
    let audit = examples.take("views-audit");
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let path = dir.path().join("seren-corpus-callosum.yaml");
    std::fs::write(&path, &config.body).unwrap();
    let env = Env::of(&[
        ("SCC_ADMIN_TOKEN", "admin-token-1"),
        ("RESEARCH_TOKEN", "research-token-1"),
        ("EDITORS_TOKEN", "editors-token-1"),
    ]);
    let loaded = Config::load_from(&path, &env).unwrap_or_else(|e| panic!("{}: {e}", config.at));
    assert!(
        loaded.warnings.is_empty(),
        "{}: {:?}",
        config.at,
        loaded.warnings
    );
    assert_eq!(loaded.server.views.entries.len(), 2, "{}", config.at);
    let callosum = crate::support::Callosum::start_with(dir.clone(), loaded).await;
    let ask = |token: &'static str, method: reqwest::Method, path: &str, body: Option<Value>| {
        let mut request = (callosum.client)
            .request(method, format!("{}{path}", callosum.url))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send()
    };
    let new = json!({"name": "drafts-1", "type": "seren_memory", "url": "http://127.0.0.1:7450"});
    ask(
        "editors-token-1",
        reqwest::Method::POST,
        "/stores",
        Some(new),
    )
    .await
    .unwrap();
    ask(
        "research-token-1",
        reqwest::Method::DELETE,
        "/stores/notes",
        None,
    )
    .await
    .unwrap();
    ask(
        "editors-token-1",
        reqwest::Method::DELETE,
        "/stores/diary",
        None,
    )
    .await
    .unwrap();
    let real = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    let (shown, real): (Vec<&str>, Vec<&str>) =
        (audit.body.lines().collect(), real.lines().collect());
    assert_eq!(shown.len(), real.len(), "{}: {real:?}", audit.at);
    // The time stamps differ from run to run: made equal, the rest compared by value.
    let stamped = |line: &str| {
        let mut value: Value = serde_json::from_str(line).unwrap();
        value["ts"] = json!(0);
        value.to_string()
    };
    for (shown, real) in shown.into_iter().zip(real) {
        examples.json(&audit, &stamped(shown), &stamped(real));
    }
}
