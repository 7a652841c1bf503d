//! The binary itself: exit codes, the open-bind refusal, `search`, `check`, `demo`, and that no
//! token ever reaches a log line.

use crate::support::process::*;
use crate::support::*;
use serde_json::{Value, json};
use std::process::Stdio;

#[tokio::test]
async fn an_open_bind_without_a_token_refuses_to_start_with_78() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let output = run({
        let mut c = command(&["serve", "-c", &config, "--host", "0.0.0.0", "--port", "0"]);
        c.stdin(Stdio::null());
        c
    })
    .await;
    assert_eq!(output.status.code(), Some(78));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("REFUSING TO START"), "{stderr}");
    for way in [
        "bearer_token",
        "127.0.0.1",
        "allow_open_lan",
        "SEREN_SCC_ALLOW_OPEN_LAN",
    ] {
        assert!(stderr.contains(way), "{way}: {stderr}");
    }

    // The same bind, explicitly allowed, starts and says so loudly.
    let mut allowed = command(&["-c", &config, "--host", "0.0.0.0", "--port", "0"]);
    allowed.env("SEREN_SCC_ALLOW_OPEN_LAN", "1");
    let mut server = Server::start(allowed);
    server.wait_for("OPEN ON THE NETWORK");
    server.wait_for("listening on");
    drop(server);

    // And with a token it starts quietly.
    let mut guarded = command(&["serve", "-c", &config, "--host", "0.0.0.0", "--port", "0"]);
    guarded.env("SEREN_SCC_BEARER_TOKEN", "t0ken");
    let mut server = Server::start(guarded);
    server.wait_for("bearer token required");
    server.wait_for("listening on");
}

#[tokio::test]
async fn a_malformed_config_stops_the_start_naming_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "federation:\n  k: 60\n  per_store_timeout_s: soon\n",
    );
    for args in [
        vec!["-c", config.as_str()],
        vec!["check", "-c", config.as_str()],
        vec!["search", "-c", config.as_str(), "q"],
    ] {
        let output = run(command(&args)).await;
        assert_eq!(output.status.code(), Some(78), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&config)
                && stderr.contains("federation.per_store_timeout_s")
                && stderr.contains("line 3"),
            "{stderr}"
        );
    }
    let output = run(command(&["-c", &config, "--port", "http"])).await;
    assert_eq!(output.status.code(), Some(2), "clap refuses a bad port");
}

#[tokio::test]
async fn search_prints_a_table_or_the_json_answer() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1), ("m2", 0.3)])).await;
    let loci = StubStore::hits(loci_hits(&[("l1", 0.7)])).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &config_yaml(&[
            ("episodic", "seren_memory", &memory.url, ""),
            ("facts", "seren_loci", &loci.url, ""),
            ("gone", "seren_memory", &closed_port_url(), ""),
        ]),
    );
    let output = run(command(&[
        "search",
        "-c",
        &config,
        "-n",
        "3",
        "cuda xavier",
    ]))
    .await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let table = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].contains("rrf") && lines[0].contains("store") && lines[0].contains("content"),
        "{table}"
    );
    assert!(
        lines[1].contains("episodic") && lines[1].contains("#1") && lines[1].contains("memory m1"),
        "{table}"
    );
    assert!(
        lines[2].contains("facts") && lines[2].contains("key.l1 = v because w"),
        "{table}"
    );
    assert!(table.contains("searched: episodic, facts"), "{table}");
    assert!(
        table.contains("failed:   gone: connect: connection refused"),
        "{table}"
    );

    let output = run(command(&["search", "-c", &config, "--json", "cuda xavier"])).await;
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(order(&answer), ["episodic:m1", "facts:l1", "episodic:m2"]);
    assert_eq!(answer["failed"][0]["name"], "gone");

    let output = run(command(&["search", "-c", &config, "-n", "0", "q"])).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("n_results must be within 1..=200"));
}

/// A store a proxy variable covers is called through that proxy (here a stub that answers as
/// the store would), with the same headers as a direct call; one `NO_PROXY` names is called
/// directly. Both ways give the same answer.
#[tokio::test]
async fn a_store_a_proxy_variable_covers_is_called_through_the_proxy() {
    let proxy = StubStore::hits(memory_hits(&[("via-proxy", 0.1)])).await;
    let direct = StubStore::hits(loci_hits(&[("direct", 0.7)])).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &config_yaml(&[
            // No such host: only the proxy can answer for it.
            ("episodic", "seren_memory", "http://memory.invalid:7420", ""),
            ("facts", "seren_loci", &direct.url, ""),
        ]),
    );
    let mut search = command(&["search", "-c", &config, "--json", "cuda"]);
    search
        .env("HTTP_PROXY", &proxy.url)
        .env("NO_PROXY", "127.0.0.1");
    let output = run(search).await;
    let answer: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(order(&answer), ["episodic:via-proxy", "facts:direct"]);
    assert_eq!(answer["failed"], json!([]));
    let (sent, called) = (proxy.captured(), direct.captured());
    assert_eq!((sent.len(), called.len()), (1, 1));
    for captured in [&sent[0], &called[0]] {
        assert_eq!(captured.path, "/search");
        assert_eq!(captured.headers["content-type"], "application/json");
        assert_eq!(captured.headers["accept"], "application/json");
        assert!(
            captured.headers["user-agent"].starts_with("seren-corpus-callosum/"),
            "{:?}",
            captured.headers
        );
    }
    assert_eq!(sent[0].headers["host"], "memory.invalid:7420");
    assert_eq!(sent[0].body["query"], "cuda");
}

#[tokio::test]
async fn check_probes_every_store_one_line_each() {
    let memory = StubStore::hits(json!([])).await;
    let dir = tempfile::tempdir().unwrap();
    let healthy = write_config(
        dir.path(),
        &config_yaml(&[("episodic", "seren_memory", &memory.url, "")]),
    );
    let output = run(command(&["check", "-c", &healthy])).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(&format!("ok       episodic (seren_memory): {}", memory.url)),
        "{stdout}"
    );
    assert!(stdout.contains("(found)"), "{stdout}");

    let other = tempfile::tempdir().unwrap();
    let broken = write_config(
        other.path(),
        &config_yaml(&[
            ("episodic", "seren_memory", &memory.url, ""),
            ("gone", "seren_loci", &closed_port_url(), ""),
            ("weird", "quantum_brain", "http://127.0.0.1:1", ""),
            (
                "resting",
                "seren_loci",
                "http://127.0.0.1:1",
                "enabled: false",
            ),
        ]),
    );
    let output = run(command(&["check", "-c", &broken])).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains("failed   gone (seren_loci): connect: connection refused"),
        "{stdout}"
    );
    assert!(
        stdout.contains("skipped  weird (quantum_brain): unknown store type"),
        "{stdout}"
    );
    assert!(stdout.contains("disabled resting (seren_loci)"), "{stdout}");

    // A file nobody named, found by the search order nowhere: an empty federation (a named
    // one that is not there is a typo, see below).
    let nowhere = tempfile::tempdir().unwrap();
    let mut unnamed = command(&["check"]);
    unnamed
        .current_dir(nowhere.path())
        .env("HOME", nowhere.path())
        .env("XDG_CONFIG_HOME", nowhere.path().join("config"));
    let output = run(unnamed).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("not found: an empty federation")
            && stdout.contains("no stores configured"),
        "{stdout}"
    );
}

#[tokio::test]
async fn demo_serves_a_fused_answer_from_both_sample_stores() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let mut demo = command(&["demo", "-c", &config, "--port", "0"]);
    demo.env("SEREN_SCC_RUNTIME_STORES", dir.path().join("overlay.json"));
    let mut server = Server::start(demo);
    let try_line = server.wait_for("Try:");
    let url = listening_url(&try_line);
    let base = url.trim_end_matches("/search");
    // The curl line works as printed: same url, same body.
    let body = try_line
        .split("-d '")
        .nth(1)
        .unwrap()
        .trim_end_matches('\'');
    let answer: Value = reqwest::Client::new()
        .post(format!("{base}/search"))
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer["stores_searched"],
        json!(["episodic", "facts"]),
        "{answer}"
    );
    let stores: Vec<&str> = answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["store"].as_str().unwrap())
        .collect();
    assert!(
        stores.contains(&"episodic") && stores.contains(&"facts"),
        "{answer}"
    );
    assert_eq!(answer["hits"].as_array().unwrap().len(), 5);
    let viewer = reqwest::get(format!("{base}/viewer")).await.unwrap();
    assert_eq!(viewer.status(), 200);
    assert!(viewer.text().await.unwrap().contains("The Bridge"));
    // The configured store list is not fanned by the demo; the overlay went where it was told.
    let added = reqwest::Client::new()
        .post(format!("{base}/stores"))
        .json(&json!({"name": "more", "type": "seren_memory", "url": "http://127.0.0.1:9"}))
        .send()
        .await
        .unwrap();
    assert_eq!(added.status(), 200);
    assert!(dir.path().join("overlay.json").exists());
    assert!(!dir.path().join("runtime-stores.json").exists());
}

#[tokio::test]
async fn no_token_reaches_a_log_line() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &config_yaml(&[(
            "episodic",
            "seren_memory",
            &memory.url,
            "token: outbound-SECRET-1",
        )]),
    );
    let mut serve = command(&["serve", "-c", &config, "--port", "0"]);
    serve
        .env("SEREN_SCC_BEARER_TOKEN", "inbound-SECRET-2")
        .env("SEREN_SCC_LOG", "debug");
    let mut server = Server::start(serve);
    let url = listening_url(&server.wait_for("listening on"));
    let client = reqwest::Client::new();
    let wrong = client
        .post(format!("{url}/search"))
        .bearer_auth("guess-SECRET-3")
        .json(&json!({"query": "q"}));
    assert_eq!(wrong.send().await.unwrap().status(), 401);
    let search = client
        .post(format!("{url}/search"))
        .bearer_auth("inbound-SECRET-2")
        .json(&json!({"query": "q"}));
    assert_eq!(search.send().await.unwrap().status(), 200);
    let add = client
        .post(format!("{url}/stores"))
        .bearer_auth("inbound-SECRET-2")
        .json(&json!({"name": "dead", "type": "seren_loci", "url": format!("{}/", closed_port_url()), "token": "outbound-SECRET-4"}));
    assert_eq!(add.send().await.unwrap().status(), 200);
    let search = client
        .post(format!("{url}/search"))
        .bearer_auth("inbound-SECRET-2")
        .json(&json!({"query": "q"}));
    let answer: Value = search.send().await.unwrap().json().await.unwrap();
    assert_eq!(answer["failed"][0]["name"], "dead");
    server.wait_for("store failing");
    let logs = server.stop();
    assert!(
        logs.contains("status=200"),
        "debug request logs are on: {logs}"
    );
    assert!(
        !logs.contains("SECRET"),
        "a secret reached the logs:\n{logs}"
    );
    assert_eq!(
        memory.captured()[0].authorization.as_deref(),
        Some("Bearer outbound-SECRET-1")
    );
}

#[tokio::test]
async fn store_text_cannot_act_on_the_terminal() {
    // A title escape, concealed text, a clipboard write (OSC 52) and a carriage return that would
    // overwrite the line: once printed raw by `search`.
    let hostile =
        "see\u{1b}]0;owned\u{7}\u{1b}[8mhidden\u{1b}]52;c;ZWNobyBoaQ==\u{7}\rfake line\u{202e}txt";
    let store =
        StubStore::hits(json!([{"id": "x", "content": hostile, "raw_distance": 0.1}])).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &config_yaml(&[("episodic", "seren_memory", &store.url, "")]),
    );
    let output = run(command(&["search", "-c", &config, "q"])).await;
    assert!(output.status.success());
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(table.contains("see "), "{table}");
    for forbidden in ['\u{1b}', '\u{7}', '\r', '\u{202e}'] {
        assert!(
            !table.contains(forbidden),
            "{forbidden:?} reached the terminal: {table:?}"
        );
    }
    // `--json` is JSON: the text is escaped there, as it should be.
    let output = run(command(&["search", "-c", &config, "--json", "q"])).await;
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["hits"][0]["content"], hostile);
}

#[tokio::test]
async fn a_reader_that_goes_away_is_not_a_crash() {
    // `check | head -1` once panicked with exit 101 when head closed the pipe.
    let store = StubStore::hits(json!([])).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &config_yaml(&[("episodic", "seren_memory", &store.url, "")]),
    );
    for args in [
        vec!["check", "-c", &config],
        vec!["search", "-c", &config, "q"],
    ] {
        let mut child = command(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before a line is written.
        drop(child.stdout.take());
        let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[tokio::test]
async fn one_request_line_per_request_and_the_query_only_when_asked() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let dir = tempfile::tempdir().unwrap();
    let stores = config_yaml(&[
        ("episodic", "seren_memory", &memory.url, ""),
        ("dead", "seren_loci", &closed_port_url(), ""),
    ]);
    let run_with = |server_yaml: &str| {
        let config = write_config(dir.path(), &format!("server:\n{server_yaml}{stores}"));
        let mut serve = command(&["serve", "-c", &config, "--port", "0"]);
        serve.env("SEREN_SCC_BEARER_TOKEN", "inbound-SECRET-2");
        Server::start(serve)
    };
    let search = |url: String| async move {
        let response = reqwest::Client::new()
            .post(format!("{url}/search"))
            .bearer_auth("inbound-SECRET-2")
            .header("x-request-id", "rid-42")
            .json(&json!({"query": "my private QUESTION"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    };
    // The default: one line at info, without the query or the token.
    let mut server = run_with("  access_log: true\n");
    search(listening_url(&server.wait_for("listening on"))).await;
    let line = server.wait_for("rid=rid-42");
    for part in [
        " INFO ",
        "method=POST",
        "path='/search'",
        "status=200",
        "stores_asked=2",
        "stores_failed=1",
    ] {
        assert!(line.contains(part), "{part} in {line}");
    }
    let logs = server.stop();
    assert!(
        !logs.contains("QUESTION") && !logs.contains("SECRET"),
        "{logs}"
    );
    // With log_queries, the query too.
    let mut server = run_with("  log_queries: true\n");
    search(listening_url(&server.wait_for("listening on"))).await;
    let line = server.wait_for("rid=rid-42");
    assert!(line.contains("my private QUESTION"), "{line}");
    server.stop();
    // With the access log off, no request line at info.
    let mut server = run_with("  access_log: false\n");
    let url = listening_url(&server.wait_for("listening on"));
    search(url.clone()).await;
    // A second request after the first is answered: its line would come after the first's.
    search(url).await;
    let logs = server.stop();
    assert!(!logs.contains("rid=rid-42"), "{logs}");
}

#[tokio::test]
async fn every_request_line_reaches_stderr_under_load_and_through_a_graceful_stop() {
    // Lines leave in batches while the server runs (`logline`): none may be lost or torn, the
    // last ones included, which may still wait in a batch when SIGTERM comes.
    use futures_util::StreamExt;
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &config_yaml(&[("episodic", "seren_memory", &memory.url, "")]),
    );
    let mut server = Server::start(command(&["serve", "-c", &config, "--port", "0"]));
    let url = listening_url(&server.wait_for("listening on"));
    let client = reqwest::Client::new();
    let searches = (0..400).map(|i| {
        let (client, url) = (&client, &url);
        async move {
            let response = client
                .post(format!("{url}/search"))
                .header("x-request-id", format!("load-{i:04}"))
                .json(&json!({"query": "q"}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
        }
    });
    futures_util::stream::iter(searches)
        .buffer_unordered(32)
        .collect::<Vec<()>>()
        .await;
    let (status, logs) = server.terminate();
    assert!(status.is_some_and(|s| s.success()), "{status:?}: {logs}");
    for i in 0..400 {
        let rid = format!("rid=load-{i:04} ");
        let lines: Vec<&str> = logs.lines().filter(|l| l.contains(&rid)).collect();
        assert_eq!(lines.len(), 1, "{rid}: {lines:?}");
        assert!(
            lines[0].contains("method=POST") && lines[0].contains("status=200"),
            "a torn line: {}",
            lines[0]
        );
    }
    let shutting = logs.find("shutting down").expect("the stop is logged");
    assert!(
        logs.rfind("rid=load-").unwrap() < shutting,
        "request lines after the stop's: {logs}"
    );
}

#[tokio::test]
async fn init_writes_a_starter_that_loads_prints_the_host_entries_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new dir").join("callosum.yaml");
    let shown = path.display().to_string();
    let output = run(command(&["init", "-c", &shown])).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let bin = std::fs::canonicalize(BIN).unwrap().display().to_string();
    assert!(stdout.starts_with(&format!("Wrote {shown}: ")), "{stdout}");
    // Each host's entry runs this very binary over stdio with the file just written.
    let args = format!("\"args\": [\"stdio\", \"-c\", {}]", json!(shown));
    assert!(
        stdout.contains(&format!(
            "\"seren-corpus-callosum\": {{\"command\": {}, {args}}}",
            json!(bin)
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "claude mcp add seren-corpus-callosum -- {bin} stdio -c '{shown}'"
        )),
        "the path with a space is quoted for the shell: {stdout}"
    );
    assert!(stdout.contains("\"type\": \"stdio\""), "{stdout}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let starter = std::fs::read_to_string(&path).unwrap();
    assert!(
        starter.contains("# stores:"),
        "the examples are there, commented"
    );

    // The starter loads: a federation of no stores, every example commented out.
    let checked = run(command(&["check", "-c", &shown])).await;
    assert_eq!(checked.status.code(), Some(0), "{checked:?}");
    assert!(String::from_utf8_lossy(&checked.stdout).contains("no stores configured"));

    // A second init leaves an edited file as it is, and still prints the entries.
    std::fs::write(&path, "federation:\n  k: 30\n").unwrap();
    let again = run(command(&["init", "-c", &shown])).await;
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists; left as it is"));
    assert!(String::from_utf8_lossy(&again.stdout).contains("claude mcp add"));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "federation:\n  k: 30\n"
    );

    // A path that cannot be written is exit 73, naming it.
    let blocked = dir.path().join("file");
    std::fs::write(&blocked, "").unwrap();
    let under_a_file = blocked.join("x.yaml").display().to_string();
    let refused = run(command(&["init", "-c", &under_a_file])).await;
    assert_eq!(refused.status.code(), Some(73), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains(&under_a_file));
}

#[tokio::test]
async fn a_named_config_that_is_not_there_is_a_typo_not_an_empty_federation() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("typo").join("seren.yaml");
    let shown = missing.display().to_string();
    for args in [
        vec!["serve", "-c", shown.as_str(), "--port", "0"],
        vec!["stdio", "-c", shown.as_str()],
        vec!["check", "-c", shown.as_str()],
        vec!["search", "-c", shown.as_str(), "q"],
    ] {
        let mut c = command(&args);
        c.stdin(Stdio::null());
        let output = run(c).await;
        assert_eq!(output.status.code(), Some(78), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!(
                "config file {shown} does not exist (--config names it)"
            )) && stderr.contains(&format!("seren-corpus-callosum init -c {shown}")),
            "{args:?}: {stderr}"
        );
    }
    let mut by_env = command(&["check"]);
    by_env.env("SEREN_SCC_CONFIG", &shown);
    let output = run(by_env).await;
    assert_eq!(output.status.code(), Some(78));
    assert!(String::from_utf8_lossy(&output.stderr).contains("(SEREN_SCC_CONFIG names it)"));
    // Nothing was created on the way (an add_store would have made the mistyped directories).
    assert!(!dir.path().join("typo").exists());
}
