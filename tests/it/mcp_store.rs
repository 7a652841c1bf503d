//! The `mcp` store type: a callosum fanning MCP servers, over streamable HTTP and over stdio.
//! The servers are real: another callosum (in-process over HTTP, the binary over stdio), and
//! rmcp's own server scripted to misbehave (`support::mcp_server`). The official knowledge-graph
//! server and SerenLoci are fanned by `tests/mcp-peers` (they need node and Python).

use crate::support::fault::{Fault, FaultStore};
use crate::support::mcp::*;
use crate::support::mcp_server::ProbeServer;
use crate::support::process::{self, BIN, Server};
use crate::support::stdio::RawStdio;
use crate::support::*;
use serde_json::{Value, json};
use std::time::Duration;

/// An inner callosum (in-process) fanning one SerenLoci-shaped stub.
async fn inner_callosum(facts: &StubStore) -> Callosum {
    Callosum::start(&config_yaml(&[("facts", "seren_loci", &facts.url, "")])).await
}

/// An inner callosum's config file (fanning `facts`), for one spawned over stdio; the directory
/// goes when dropped.
fn inner_config(facts: &StubStore) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = process::write_config(
        dir.path(),
        &config_yaml(&[("facts", "seren_loci", &facts.url, "")]),
    );
    (dir, path)
}

async fn facts_stub() -> StubStore {
    StubStore::hits(loci_hits(&[("l1", 0.9), ("l2", 0.7), ("l3", 0.5)])).await
}

/// An outer callosum whose one store is this `mcp` entry (yaml lines under `- name: NAME`).
async fn outer(name: &str, entry: &str) -> Callosum {
    let mut yaml = format!(
        "federation:\n  per_store_timeout_s: 5.0\n  stores:\n    - name: {name}\n      type: mcp\n"
    );
    for line in entry.lines().filter(|l| !l.trim().is_empty()) {
        yaml.push_str(&format!("      {}\n", line.trim()));
    }
    Callosum::start(&yaml).await
}

fn hits_of<'a>(answer: &'a Value, store: &str) -> Vec<&'a Value> {
    answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|hit| hit["store"] == store)
        .collect()
}

fn ids(hits: &[&Value]) -> Vec<String> {
    hits.iter()
        .map(|hit| hit["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_callosum_over_mcp_http_ranks_as_its_own_search_tool_answers() {
    let facts = facts_stub().await;
    let inner = inner_callosum(&facts).await;
    let outer = outer(
        "inner",
        &format!("preset: callosum\nurl: {}/mcp", inner.url),
    )
    .await;

    let (status, answer) = outer.search("braces", Some(5)).await;
    assert_eq!(status, 200, "{answer}");
    assert!(failed(&answer).is_empty(), "{answer}");
    let fused = hits_of(&answer, "inner");
    // What an MCP client of its own gets from the inner callosum's search tool, same arguments.
    let client = http_client(&inner.url, None).await.unwrap();
    let direct = structured(
        &call(
            &client,
            "search",
            json!({"query": "braces", "n_results": 10}),
        )
        .await,
    );
    let direct: Vec<&Value> = direct["hits"].as_array().unwrap().iter().collect();
    assert_eq!(ids(&fused), ids(&direct[..fused.len()]));
    assert_eq!(ids(&fused), ["l1", "l2", "l3"]);
    assert_eq!(fused[0]["content"], direct[0]["content"]);
    assert_eq!(fused[0]["base_relevance"], direct[0]["base_relevance"]);
    assert_eq!(fused[0]["native_score"], direct[0]["base_relevance"]);
    // Provenance: the inner hit's other members, its store among them.
    assert_eq!(fused[0]["metadata"]["store"], "facts");
    assert_eq!(fused[0]["metadata"]["store_rank"], 1);
    // The outer ask, max(5 * 2, 5), went through as the tool's n_results; the inner callosum
    // asked its own store for twice that.
    assert_eq!(facts.captured()[0].body["n_results"], 20);
}

#[tokio::test]
async fn a_callosum_over_stdio_is_spawned_once_and_ranks_as_over_rest() {
    let facts = facts_stub().await;
    let (_dir, inner_yaml) = inner_config(&facts);
    let outer = outer(
        "inner",
        &format!("preset: callosum\ncommand: {BIN}\nargs: [stdio, -c, {inner_yaml}]"),
    )
    .await;
    let rest = inner_callosum(&facts).await;
    for query in ["braces", "cuda", "tabs"] {
        let (_, answer) = outer.search(query, Some(3)).await;
        assert!(failed(&answer).is_empty(), "{answer}");
        let (_, direct) = rest.search(query, Some(6)).await;
        let direct: Vec<&Value> = direct["hits"].as_array().unwrap().iter().collect();
        assert_eq!(ids(&hits_of(&answer, "inner")), ids(&direct[..3]));
    }
    // One server for every search: each callosum adds its own random id to the chain, and the
    // stub saw the outer's searches all come through the same inner one.
    let inner_ids: std::collections::HashSet<String> = facts
        .captured()
        .iter()
        .filter_map(|c| c.headers.get("x-seren-callosum-via"))
        .filter(|via| via.contains(','))
        .cloned()
        .collect();
    assert_eq!(inner_ids.len(), 1, "one inner process: {inner_ids:?}");
    // The outer's store list shows the program, not its arguments.
    let (_, stores) = outer.get("/stores").await;
    assert_eq!(stores["stores"][0]["url"], format!("stdio: {BIN}"));
}

#[tokio::test]
async fn a_loop_through_mcp_stops() {
    // a fans b over MCP, b fans a over MCP: the chain rides in `_meta`, so a sees its own id.
    let a = Callosum::start("federation:\n  per_store_timeout_s: 5.0\n").await;
    let b = outer("a", &format!("preset: callosum\nurl: {}/mcp", a.url)).await;
    let (status, added) = a
        .post(
            "/stores",
            json!({"name": "b", "type": "mcp", "url": format!("{}/mcp", b.url), "preset": "callosum"}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    let (status, answer) = a.search("anything", None).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["stores_searched"], json!(["b"]), "{answer}");
    let (_, health) = b.get("/health/stores").await;
    let last = health["stores"][0]["last_error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // a refused b's call with a tool error ("loop: ..."): a server's own words, which only the
    // search that met them gets; the health page says what kind of failure it was.
    assert_eq!(
        last, "tool error (its text went only to the search that met it)",
        "{health}"
    );
}

#[tokio::test]
async fn any_mcp_tool_is_read_by_its_mapping() {
    let probe = ProbeServer::start(None).await;
    let outer = outer(
        "notes",
        &format!(
            "url: {}\ntool: find\nlimit_arg: n_results\ncontent: \"{{/text}}!\"\nscore: /score",
            probe.url
        ),
    )
    .await;
    let (_, answer) = outer.search("tabs", Some(2)).await;
    assert!(failed(&answer).is_empty(), "{answer}");
    let hits = hits_of(&answer, "notes");
    assert_eq!(ids(&hits), ["p1", "p2"]);
    assert_eq!(hits[0]["content"], "note 1 on tabs!");
    assert_eq!(hits[1]["base_relevance"], 0.5);
    assert_eq!(hits[1]["raw_distance"], Value::Null);
    // `text`, `id` and `score` were read; what is left is provenance (a member a template reads
    // is left out too).
    assert_eq!(hits[0]["metadata"], json!({"lang": "en"}));
}

/// The reason an outer callosum gives for its one `mcp` store, after one search.
async fn reason(entry: &str) -> String {
    let outer = outer("s", entry).await;
    let (status, answer) = outer.search("q", None).await;
    assert_eq!(status, 200, "{answer}");
    reason_of(&answer, "s")
}

#[tokio::test]
async fn every_way_a_tool_fails_is_a_reason_in_words() {
    let probe = ProbeServer::start(None).await;
    let at = |extra: &str| format!("url: {}\n{extra}", probe.url);
    assert_eq!(
        reason(&at("tool: broken")).await,
        "tool error: the index is offline"
    );
    assert_eq!(
        reason(&at("tool: plain")).await,
        "decode: the tool's text is not JSON (line 1, column 1)"
    );
    assert_eq!(
        reason(&at("tool: find\nhits: /nothing")).await,
        "decode: no hit array at /nothing (found nothing)"
    );
    // The tools' names are the server's words: `check` lists them, a reason counts them.
    assert_eq!(
        reason(&at("tool: search")).await,
        "unknown tool 'search'; the server lists 6 other tools (`seren-corpus-callosum check` names them)"
    );
    assert_eq!(
        reason(&at("tool: hang\ntimeout_s: 0.5")).await,
        "timeout after 0.50s"
    );
    let wrong_path = reason(&format!(
        "url: {}\ntool: find",
        probe.url.trim_end_matches("/mcp")
    ))
    .await;
    assert_eq!(wrong_path, "initialize: status 404");
    let refused = reason(&format!("url: {}\ntool: find", closed_port_url())).await;
    // The error's kind, never its text (reqwest's quotes the url).
    assert_eq!(refused, "initialize: connection refused");
    assert!(
        !refused.contains("127.0.0.1"),
        "no url in a reason: {refused}"
    );
}

#[tokio::test]
async fn a_server_that_will_not_start_is_a_reason() {
    let exits =
        reason("tool: find\ncommand: /bin/sh\nargs: [-c, 'echo starting >&2; exit 3']").await;
    assert_eq!(
        exits,
        "the server exited before it answered initialize (exit status: 3)"
    );
    let missing = reason("tool: find\ncommand: /nonexistent/mcp-server").await;
    assert!(
        missing.starts_with("cannot start '/nonexistent/mcp-server': "),
        "{missing}"
    );
}

#[tokio::test]
async fn a_server_slower_to_start_than_the_timeout_comes_up_for_a_later_search() {
    let facts = facts_stub().await;
    let (_dir, inner_yaml) = inner_config(&facts);
    // The server takes a second to come up; the store's timeout is a quarter of that.
    let outer = outer(
        "slow",
        &format!("preset: callosum\ncommand: /bin/sh\nargs: [-c, 'sleep 1; exec {BIN} stdio -c {inner_yaml}']\ntimeout_s: 0.25"),
    )
    .await;
    let (_, answer) = outer.search("q", None).await;
    assert_eq!(
        reason_of(&answer, "slow"),
        "timeout after 0.25s: the server is still starting"
    );
    // The start went on in its own task; once it is up, searches are answered.
    let up = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let (_, answer) = outer.search("q", None).await;
            if failed(&answer).is_empty() {
                return answer;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .expect("the slow server came up");
    assert_eq!(ids(&hits_of(&up, "slow")), ["l1", "l2", "l3"]);
}

#[tokio::test]
async fn a_server_that_keeps_failing_is_started_again_after_a_growing_wait() {
    let outer = outer("s", "tool: find\ncommand: /bin/sh\nargs: [-c, 'exit 3']").await;
    // The first failure is retried at once, the second waits half a second.
    for _ in 0..2 {
        let (_, answer) = outer.search("q", None).await;
        assert!(reason_of(&answer, "s").starts_with("the server exited before"));
    }
    let (_, answer) = outer.search("q", None).await;
    let waiting = reason_of(&answer, "s");
    assert!(
        waiting.starts_with("the server exited before it answered initialize (exit status: 3); the next start is in 0."),
        "{waiting}"
    );
}

#[tokio::test]
async fn an_http_session_the_server_expired_is_opened_again_within_the_search() {
    let probe = ProbeServer::start(Some(Duration::from_millis(200))).await;
    let outer = outer(
        "s",
        &format!("url: {}\ntool: find\ncontent: /text", probe.url),
    )
    .await;
    let (_, answer) = outer.search("q", Some(1)).await;
    assert!(failed(&answer).is_empty(), "{answer}");
    assert_eq!(probe.sessions(), 1);
    // Idle past the server's keep-alive: the session is gone and the next call meets a 404.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (_, answer) = outer.search("q", Some(1)).await;
    assert!(failed(&answer).is_empty(), "{answer}");
    assert_eq!(ids(&hits_of(&answer, "s")), ["p1"]);
    assert_eq!(probe.sessions(), 2, "a new session was initialized");
}

#[tokio::test]
async fn a_server_killed_mid_call_fails_that_search_and_is_respawned_for_the_next() {
    let store = FaultStore::start(Fault::Hang).await;
    let dir = tempfile::tempdir().unwrap();
    let inner_yaml = process::write_config(
        dir.path(),
        &format!(
            "federation:\n  per_store_timeout_s: 30\n  stores:\n    - name: facts\n      type: seren_loci\n      url: {}\n",
            store.url
        ),
    );
    let pid_file = dir.path().join("pid");
    let script = format!(
        "echo $$ > {}; exec {BIN} stdio -c {inner_yaml}",
        pid_file.display()
    );
    let outer = std::sync::Arc::new(
        outer(
            "inner",
            &format!("preset: callosum\ncommand: /bin/sh\nargs: [-c, '{script}']\ntimeout_s: 20"),
        )
        .await,
    );
    let searching = tokio::spawn({
        let outer = outer.clone();
        async move { outer.search("q", None).await }
    });
    // The inner callosum is mid-call once its store has the connection.
    assert!(store.wait_for_connections(1, Duration::from_secs(30)).await);
    let first_pid = process::pid_in(&pid_file);
    process::signal(&first_pid, "KILL");
    let (_, answer) = searching.await.unwrap();
    let why = reason_of(&answer, "inner");
    assert!(why.starts_with("the server "), "not a timeout: {why}");
    assert!(!why.contains("timeout"), "{why}");

    store.set(Fault::Body(
        json!({"hits": loci_hits(&[("l1", 0.9)])})
            .to_string()
            .into_bytes(),
    ));
    let (_, answer) = outer.search("q", None).await;
    assert!(failed(&answer).is_empty(), "{answer}");
    assert_eq!(ids(&hits_of(&answer, "inner")), ["l1"]);
    let second_pid = process::pid_in(&pid_file);
    assert_ne!(first_pid, second_pid, "a new server process");
}

#[tokio::test]
async fn no_program_is_taken_from_the_network() {
    let probe = ProbeServer::start(None).await;
    let callosum = Callosum::start("").await;
    for key in ["command", "args", "env"] {
        let mut body = json!({"name": "x", "type": "mcp", "url": probe.url, "tool": "find"});
        body[key] = json!(if key == "env" {
            json!({"A": "1"})
        } else {
            json!("sh")
        });
        let (status, refused) = callosum.post("/stores", body.clone()).await;
        assert_eq!(status, 400, "{refused}");
        assert_eq!(
            refused["detail"],
            format!(
                "{key} is refused here: a store that runs a program can only be written in the config file, never added over the network; give an mcp store a url instead"
            )
        );
        let client = http_client(&callosum.url, None).await.unwrap();
        assert_eq!(
            error_text(&call(&client, "add_store", body).await),
            refused["detail"].as_str().unwrap()
        );
    }
    // Without a url too, the program is what is refused.
    let (status, refused) = callosum
        .post(
            "/stores",
            json!({"name": "x", "type": "mcp", "command": "node", "tool": "t"}),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        refused["detail"]
            .as_str()
            .unwrap()
            .starts_with("command is refused here")
    );
    // A url is fine, and so is a mapping; a bad pointer or a stray mapping key is refused.
    let (status, refused) = callosum
        .post("/stores", json!({"name": "x", "type": "mcp", "url": probe.url, "tool": "find", "hits": "results"}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        refused["detail"],
        "hits: must be empty or start with '/', got \"results\""
    );
    let (status, refused) = callosum
        .post(
            "/stores",
            json!({"name": "x", "type": "seren_loci", "url": probe.url, "tool": "find"}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        refused["detail"],
        "tool is a setting of mcp stores, not of seren_loci stores"
    );
    let (status, added) = callosum
        .post("/stores", json!({"name": "notes", "type": "mcp", "url": probe.url, "tool": "find", "content": "/text"}))
        .await;
    assert_eq!(status, 200, "{added}");
    let (_, answer) = callosum.search("tabs", Some(2)).await;
    assert_eq!(ids(&hits_of(&answer, "notes")), ["p1", "p2"]);
    // The overlay keeps the mapping, so a restart fans it the same way.
    let overlay = read_json(&callosum.overlay_path());
    assert_eq!(overlay[0]["options"]["tool"], "find");
    assert_eq!(overlay[0]["url"], probe.url);
}

// Multi-threaded: the raw session reads the process's stdout with blocking reads, and the stub
// store must answer meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_store_inside_stdio_mode_leaves_stdout_pure_json_rpc() {
    let facts = facts_stub().await;
    let (_dir, inner_yaml) = inner_config(&facts);
    // The outer callosum in stdio mode; its store is another callosum over stdio, which logs at
    // debug (its stderr goes to the outer's log, never to stdout).
    let outer_dir = tempfile::tempdir().unwrap();
    let outer_yaml = process::write_config(
        outer_dir.path(),
        &format!(
            "federation:\n  stores:\n    - name: inner\n      type: mcp\n      preset: callosum\n      command: /bin/sh\n      args: [-c, 'echo noise on stdout? no: stderr >&2; RUST_LOG=debug exec {BIN} stdio -c {inner_yaml}']\n"
        ),
    );
    let mut session = RawStdio::start(&["stdio", "-c", &outer_yaml]);
    session.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
    session.answer(1);
    session.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    session.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "braces", "n_results": 2}}}));
    let answer = session.answer(2);
    let hits = &answer["result"]["structuredContent"]["hits"];
    assert_eq!(hits[0]["store"], "inner", "{answer}");
    assert_eq!(hits[0]["metadata"]["store"], "facts");
    let (status, _) = session.close();
    assert!(status.success());
}

#[tokio::test]
async fn check_lists_each_mcp_servers_tools() {
    let probe = ProbeServer::start(None).await;
    let dir = tempfile::tempdir().unwrap();
    let yaml = process::write_config(
        dir.path(),
        &format!(
            "federation:\n  stores:\n    - name: notes\n      type: mcp\n      url: {url}\n      tool: find\n      content: /text\n    - name: wrong\n      type: mcp\n      url: {url}\n      tool: lookup\n",
            url = probe.url
        ),
    );
    let output = process::run(process::command(&["check", "-c", &yaml])).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let notes = stdout
        .lines()
        .find(|line| line.trim_start().starts_with("notes: tools: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    for tool in ["broken", "find", "hang", "plain"] {
        assert!(notes.contains(tool), "{notes}");
    }
    assert!(
        notes.ends_with("'find' is listed and has no argument schema (sent 'query')"),
        "{notes}"
    );
    assert!(stdout.contains("wrong: tools: "), "{stdout}");
    assert!(
        stdout.contains("'lookup' is NOT listed (set tool)"),
        "{stdout}"
    );
    assert_eq!(output.status.code(), Some(2), "{stdout}");
}

#[tokio::test]
async fn a_stdio_server_is_gone_when_its_callosum_stops() {
    let dir = tempfile::tempdir().unwrap();
    let (pid_file, script) = process::stdio_callosum(dir.path());
    let outer_dir = tempfile::tempdir().unwrap();
    let outer_yaml = process::write_config(
        outer_dir.path(),
        &format!(
            "server:\n  port: 0\nfederation:\n  stores:\n    - name: inner\n      type: mcp\n      preset: callosum\n      command: /bin/sh\n      args: [-c, '{script}']\n"
        ),
    );
    let mut server = Server::start(process::command(&["serve", "-c", &outer_yaml]));
    // `serve` starts MCP servers as it comes up.
    server.wait_for("mcp server up");
    let pid = process::pid_in(&pid_file);
    assert!(process::alive(&pid));
    process::signal(&server.pid().to_string(), "TERM");
    server.wait_for("shutting down");
    assert!(
        process::ends(&pid).await,
        "the stdio server {pid} outlived its callosum"
    );
}

/// A server is often a wrapper (`npx`, `uvx`, a shell script) whose real work is a process of its
/// own: that process goes with the server, when a reload drops the store and when the callosum
/// stops.
#[tokio::test]
async fn what_a_stdio_server_started_ends_with_it_on_reload_and_on_stop() {
    let dir = tempfile::tempdir().unwrap();
    let (pid_file, script) = process::stdio_callosum(dir.path());
    let helper_file = dir.path().join("helper");
    // The helper is started and its pid written before the server execs, so it is there once the
    // server is up.
    let script = format!("sleep 300 & echo $! > {}; {script}", helper_file.display());
    let outer_dir = tempfile::tempdir().unwrap();
    let head = "server:\n  port: 0\n  watch: false\nfederation:\n  stores:\n";
    let entry = format!(
        "    - name: inner\n      type: mcp\n      preset: callosum\n      command: /bin/sh\n      args: [-c, '{script}']\n"
    );
    let outer_yaml = process::write_config(outer_dir.path(), &format!("{head}{entry}"));
    let mut server = Server::start(process::command(&["serve", "-c", &outer_yaml]));
    let url = process::listening_url(&server.wait_for("listening on"));
    server.wait_for("mcp server up");
    let helper = process::pid_in(&helper_file);
    assert!(process::alive(&helper) && process::alive(&process::pid_in(&pid_file)));

    // A reload that drops the store ends the server's helper too.
    let empty = "server:\n  port: 0\n  watch: false\nfederation:\n  stores: []\n";
    std::fs::write(&outer_yaml, empty).unwrap();
    process::signal(&server.pid().to_string(), "HUP");
    server.wait_for("config reloaded");
    assert!(
        process::ends(&helper).await,
        "the helper {helper} of a dropped store's server still runs"
    );

    // Back in the config (a search starts it), then the callosum stopped: the new helper goes
    // with it.
    std::fs::write(&outer_yaml, format!("{head}{entry}")).unwrap();
    process::signal(&server.pid().to_string(), "HUP");
    server.wait_for("config reloaded");
    let searched = test_client()
        .post(format!("{url}/search"))
        .json(&json!({"query": "q"}))
        .send()
        .await
        .unwrap();
    assert_eq!(searched.status(), 200);
    server.wait_for("mcp server up");
    let helper = process::pid_in(&helper_file);
    assert!(process::alive(&helper));
    process::signal(&server.pid().to_string(), "TERM");
    server.wait_for("shutting down");
    assert!(
        process::ends(&helper).await,
        "the helper {helper} outlived its callosum"
    );
}

#[tokio::test]
async fn a_config_found_in_the_working_directory_runs_no_program() {
    // A cloned repository may carry a seren-corpus-callosum.yaml; an MCP host starts us there.
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    process::write_config(
        dir.path(),
        &format!(
            "federation:\n  stores:\n    - name: planted\n      type: mcp\n      tool: t\n      command: /bin/sh\n      args: [-c, 'touch {}']\n",
            marker.display()
        ),
    );
    let mut found = process::command(&["check"]);
    found.current_dir(dir.path());
    let output = process::run(found).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("skipped  planted (mcp): not started: seren-corpus-callosum.yaml was found in the working directory and is not trusted to run programs; if the file is yours, run `seren-corpus-callosum trust` there, or name it with --config or SEREN_SCC_CONFIG"),
        "{stdout}"
    );
    assert!(!marker.exists(), "the planted program ran");
    assert!(
        stdout.contains(
            "config:  seren-corpus-callosum.yaml (found in the working directory, not trusted: no secrets read, no programs run)"
        ),
        "{stdout}"
    );
    // Named, the same file may.
    let mut named = process::command(&["check", "-c", "seren-corpus-callosum.yaml"]);
    named.current_dir(dir.path());
    let output = process::run(named).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("failed   planted (mcp): "), "{stdout}");
    assert!(marker.exists(), "a named config's program runs");
}

#[tokio::test]
async fn a_chatty_server_is_logged_at_debug_within_a_rate() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = process::write_config(
        dir.path(),
        "server:\n  port: 0\nfederation:\n  stores:\n    - name: chatty\n      type: mcp\n      tool: t\n      command: /bin/sh\n      args: [-c, 'i=0; while [ $i -lt 100 ]; do echo \"line $i\" >&2; i=$((i+1)); done']\n",
    );
    let mut command = process::command(&["serve", "-c", &yaml]);
    command.env("SEREN_SCC_LOG", "info,seren_corpus_callosum=debug");
    let mut server = Server::start(command);
    let summary = server.wait_for("stderr lines not logged");
    assert!(summary.contains("dropped=80"), "{summary}");
    let log = server.stop();
    let logged: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("mcp server stderr"))
        .collect();
    assert_eq!(logged.len(), 21, "20 lines and the count:\n{log}");
    assert!(
        logged[0].contains("line 0") && logged[19].contains("line 19"),
        "{log}"
    );
}
