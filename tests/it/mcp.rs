//! MCP, proven with rmcp's own client: over stdio against the real binary (a spawned process) and
//! over streamable HTTP against a callosum on a loopback port.

use crate::support::mcp::*;
use crate::support::stdio::RawStdio;
use crate::support::*;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};

/// Lists the tools and exercises all four through `client`, against stores on `callosum`'s roster.
async fn exercise_all_tools(client: &Client, callosum: &Callosum, extra_url: &str) {
    let info = client.peer_info().expect("peer info");
    let server = info.server_info.as_ref().expect("server info");
    assert_eq!(server.name, "seren-corpus-callosum");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["add_store", "list_stores", "remove_store", "search"]
    );

    let answer = structured(&call(client, "search", json!({"query": "q", "n_results": 3})).await);
    assert_eq!(order(&answer), ["episodic:m1", "facts:l1", "episodic:m2"]);
    assert_eq!(answer["hits"][0]["store_rank"], 1);

    let stores = structured(&call(client, "list_stores", json!({})).await);
    assert_eq!(stores["active"], 2);
    assert_eq!(
        stores["types"],
        json!(["mcp", "seren_callosum", "seren_loci", "seren_memory"])
    );

    // Bad arguments and refused changes are tool errors with REST's words.
    assert_eq!(
        error_text(&call(client, "search", json!({})).await),
        "invalid arguments: missing field `query`"
    );
    assert_eq!(
        error_text(&call(client, "search", json!({"query": "q", "n_results": 0})).await),
        "n_results must be within 1..=200, got 0"
    );
    assert_eq!(
        error_text(&call(client, "search", json!({"query": "  "})).await),
        "query must not be empty"
    );
    assert_eq!(
        error_text(
            &call(
                client,
                "add_store",
                json!({"name": "episodic", "type": "seren_memory", "url": "http://x"})
            )
            .await
        ),
        "a store named 'episodic' already exists"
    );
    assert!(
        error_text(
            &call(
                client,
                "add_store",
                json!({"name": "z", "type": "quantum", "url": "http://x"})
            )
            .await
        )
        .starts_with("unknown store type 'quantum'; known types: [")
    );
    assert_eq!(
        error_text(
            &call(
                client,
                "add_store",
                json!({"name": "z", "type": "seren_loci", "url": "http://x", "weight": "heavy"})
            )
            .await
        ),
        "invalid arguments: weight: invalid type: string \"heavy\", expected f64"
    );
    assert!(
        error_text(&call(client, "remove_store", json!({"name": "episodic"})).await)
            .contains("is a base (config) store")
    );
    assert_eq!(
        error_text(&call(client, "remove_store", json!({"name": "ghost"})).await),
        "no store named 'ghost'"
    );

    // The live roster: added through MCP, fanned by REST's next search, and back.
    let added = structured(
        &call(
            client,
            "add_store",
            json!({"name": "extra", "type": "seren_memory", "url": extra_url, "weight": 0.5}),
        )
        .await,
    );
    assert_eq!(added, json!({"ok": true, "added": "extra", "active": 3}));
    let (_, rest_answer) = callosum.search("q", Some(10)).await;
    assert!(
        order(&rest_answer).contains(&"extra:x1".to_owned()),
        "{rest_answer}"
    );
    let removed = structured(&call(client, "remove_store", json!({"name": "extra"})).await);
    assert_eq!(
        removed,
        json!({"ok": true, "removed": "extra", "active": 2})
    );
    let (status, _) = callosum
        .post(
            "/stores",
            json!({"name": "from-rest", "type": "seren_memory", "url": extra_url}),
        )
        .await;
    assert_eq!(status, 200);
    let answer = structured(&call(client, "search", json!({"query": "q"})).await);
    assert!(
        order(&answer).contains(&"from-rest:x1".to_owned()),
        "{answer}"
    );
    assert_eq!(callosum.delete("/stores/from-rest").await.0, 200);
}

async fn two_stores() -> (StubStore, StubStore, StubStore) {
    (
        StubStore::hits(memory_hits(&[("m1", 0.1), ("m2", 0.2)])).await,
        StubStore::hits(loci_hits(&[("l1", 0.9)])).await,
        StubStore::hits(memory_hits(&[("x1", 0.1)])).await,
    )
}

#[tokio::test]
async fn all_four_tools_over_streamable_http() {
    let (memory, loci, extra) = two_stores().await;
    let callosum = Callosum::start(&config_yaml(&[
        ("episodic", "seren_memory", &memory.url, ""),
        ("facts", "seren_loci", &loci.url, ""),
    ]))
    .await;
    let client = http_client(&callosum.url, None).await.unwrap();
    exercise_all_tools(&client, &callosum, &extra.url).await;
    client.cancel().await.unwrap();
    // The Python service's address, with the trailing slash, answers too.
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp/", callosum.url));
    config = config.auth_header("unused");
    let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    assert_eq!(client.list_all_tools().await.unwrap().len(), 4);
}

#[tokio::test]
async fn mcp_over_http_is_behind_the_token() {
    let (memory, loci, _) = two_stores().await;
    let yaml = format!(
        "server:\n  bearer_token: mcp-SECRET\n{}",
        config_yaml(&[
            ("episodic", "seren_memory", &memory.url, ""),
            ("facts", "seren_loci", &loci.url, "")
        ])
    );
    let callosum = Callosum::start(&yaml).await;
    let refused = callosum
        .client
        .post(format!("{}/mcp", callosum.url))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    assert_eq!(refused.headers()["www-authenticate"], "Bearer");
    assert!(
        http_client(&callosum.url, None).await.is_err(),
        "no token, no session"
    );
    assert!(http_client(&callosum.url, Some("wrong")).await.is_err());
    let client = http_client(&callosum.url, Some("mcp-SECRET"))
        .await
        .unwrap();
    let answer = structured(&call(&client, "search", json!({"query": "q"})).await);
    assert_eq!(answer["stores_searched"], json!(["episodic", "facts"]));
}

#[tokio::test]
async fn a_foreign_host_header_is_refused() {
    let callosum = Callosum::start("").await;
    let response = callosum
        .client
        .post(format!("{}/mcp", callosum.url))
        .header("host", "evil.example")
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
}

#[tokio::test]
async fn all_four_tools_over_stdio_against_the_real_binary() {
    let (memory, loci, extra) = two_stores().await;
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let yaml = config_yaml(&[
        ("episodic", "seren_memory", &memory.url, ""),
        ("facts", "seren_loci", &loci.url, ""),
    ]);
    let config_path = dir.path().join("seren-corpus-callosum.yaml");
    std::fs::write(&config_path, &yaml).unwrap();
    // The REST side of the same roster: a callosum on the same config and overlay file.
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_seren-corpus-callosum"))
        .configure(|c| {
            c.arg("stdio")
                .arg("-c")
                .arg(&config_path)
                .env_clear()
                .env("SEREN_SCC_LOG", "warn");
        });
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 4);
    let answer = structured(&call(&client, "search", json!({"query": "q", "n_results": 3})).await);
    assert_eq!(order(&answer), ["episodic:m1", "facts:l1", "episodic:m2"]);
    // A store added over stdio lands in the overlay file, so it persists and REST sees it.
    structured(
        &call(
            &client,
            "add_store",
            json!({"name": "extra", "type": "seren_memory", "url": extra.url}),
        )
        .await,
    );
    let overlay = read_json(&dir.path().join("runtime-stores.json"));
    assert_eq!(overlay[0]["name"], "extra");
    let rest = Callosum::start_in(dir.clone(), &yaml).await;
    let (_, answer) = rest.search("q", None).await;
    assert!(order(&answer).contains(&"extra:x1".to_owned()), "{answer}");
    assert_eq!(
        error_text(&call(&client, "search", json!({"n_results": 2})).await),
        "invalid arguments: missing field `query`"
    );
    // Closing stdin ends the server promptly, and it wrote nothing but MCP to stdout.
    client.cancel().await.unwrap();
    if let Some(mut stderr) = stderr {
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut text)
            .await
            .unwrap();
        assert!(!text.contains("panicked"), "{text}");
    }
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
}

#[tokio::test]
async fn over_stdio_every_bad_line_gets_a_json_rpc_answer() {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::support::process::write_config(dir.path(), "");
    let session = tokio::task::spawn_blocking(move || {
        let mut raw = RawStdio::start(&["stdio", "-c", &config]);
        raw.send(initialize());
        raw.answer(1);
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        // Not JSON: once ignored, now -32700 with a null id (JSON-RPC 2.0, section 5.1).
        raw.send_raw(b"{this is not json");
        let parse = raw.answer_to(Value::Null);
        assert_eq!(parse["error"]["code"], -32700, "{parse}");
        // A line over the cap: once dropped with no answer, so the client waited forever.
        let mut long = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search","arguments":{"query":""#.to_vec();
        long.extend(std::iter::repeat_n(b'x', 2 * 1024 * 1024));
        long.extend(br#""}}}"#);
        raw.send_raw(&long);
        let too_long = raw.answer(5);
        assert_eq!(too_long["error"]["code"], -32600, "{too_long}");
        assert!(
            too_long["error"]["message"]
                .as_str()
                .unwrap()
                .contains("line limit")
        );
        // Arguments that are not an object: -32602 (invalid params), not -32601.
        raw.send(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "search", "arguments": "jetpack"}}));
        let params = raw.answer(6);
        assert_eq!(params["error"]["code"], -32602, "{params}");
        // And the session goes on.
        raw.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}));
        assert_eq!(
            raw.answer(7)["result"]["tools"].as_array().unwrap().len(),
            4
        );
        raw.close()
    });
    let (status, stderr) = session.await.unwrap();
    assert!(status.success(), "{status:?}: {stderr}");
}

#[tokio::test]
async fn stdio_speaks_only_json_rpc_on_stdout_and_exits_when_stdin_closes() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.yaml");
    // A warning-worthy config, so the process has something to log (to stderr).
    std::fs::write(
        &config,
        format!(
            "{}unknown_key: 1\n",
            config_yaml(&[("episodic", "seren_memory", &memory.url, "")])
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let session = tokio::task::spawn_blocking(move || {
        let mut raw = RawStdio::start(&["stdio", "-c", &config]);
        raw.send(initialize());
        let init = raw.answer(1);
        assert_eq!(
            init["result"]["serverInfo"]["name"],
            "seren-corpus-callosum"
        );
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "q"}}}));
        let answer = raw.answer(2);
        assert_eq!(
            answer["result"]["structuredContent"]["hits"][0]["id"], "m1",
            "{answer}"
        );
        raw.close()
    });
    let (status, stderr) = session.await.unwrap();
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(
        stderr.contains("unknown key 'unknown_key'"),
        "logs go to stderr: {stderr}"
    );
}

#[tokio::test]
async fn stdio_with_http_shares_one_live_roster() {
    let extra = StubStore::hits(memory_hits(&[("x1", 0.1)])).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.yaml");
    std::fs::write(&config, "").unwrap();
    let config = config.display().to_string();
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut raw = RawStdio::start(&[
        "stdio",
        "-c",
        &config,
        "--http",
        "--port",
        &port.to_string(),
    ]);
    let (raw_sent, raw) = tokio::task::spawn_blocking(move || {
        raw.send(initialize());
        raw.answer(1);
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        (true, raw)
    })
    .await
    .unwrap();
    assert!(raw_sent);
    // The sidecar answers once it is bound; the MCP answer above came after the bind.
    let client = reqwest::Client::new();
    let added = client
        .post(format!("http://127.0.0.1:{port}/stores"))
        .json(&json!({"name": "extra", "type": "seren_memory", "url": extra.url}))
        .send()
        .await
        .unwrap();
    assert_eq!(added.status(), 200);
    let (status, stderr) = tokio::task::spawn_blocking(move || {
        let mut raw = raw;
        raw.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "q"}}}));
        let answer = raw.answer(2);
        assert_eq!(answer["result"]["structuredContent"]["stores_searched"], json!(["extra"]), "{answer}");
        raw.close()
    })
    .await
    .unwrap();
    assert!(status.success(), "{stderr}");
    assert!(
        client
            .get(format!("http://127.0.0.1:{port}/health"))
            .send()
            .await
            .is_err(),
        "the sidecar stops with the stdio session"
    );
}

#[tokio::test]
async fn shutdown_does_not_wait_on_open_mcp_streams() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.yaml");
    std::fs::write(&config, "").unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_seren-corpus-callosum"))
        .args(["serve", "-c", &config.display().to_string(), "--port", "0"])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let url = wait_listening(&mut child).await;
    // An MCP session with its server-push stream open (rmcp's client opens the GET stream).
    let client = http_client(&url, None).await.unwrap();
    assert_eq!(client.list_all_tools().await.unwrap().len(), 4);
    crate::support::process::signal(&child.id().to_string(), "TERM");
    let (exited, _) = tokio::task::spawn_blocking(move || {
        crate::support::process::exit_within(child, std::time::Duration::from_secs(20))
    })
    .await
    .unwrap();
    let status = exited.expect("the server hung on an open MCP stream after SIGTERM");
    assert!(status.success(), "{status:?}");
    drop(client);
}

/// Initializes as a client on a revision before 2026-07-28 (session mode) would, over raw HTTP,
/// and checks the server kept no session: it names none, so any replica can serve what follows.
async fn initialize_legacy(callosum: &Callosum) {
    let response = callosum
        .client
        .post(format!("{}/mcp", callosum.url))
        .header("accept", "application/json, text/event-stream")
        .json(&initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers().get("mcp-session-id").is_none(),
        "a session was kept: {:?}",
        response.headers()
    );
    // Read the answer through, so the exchange is complete.
    response.bytes().await.unwrap();
}

/// A legacy client's POST to `/mcp`, carrying `session` as its `Mcp-Session-Id` when given.
fn legacy_post(
    callosum: &Callosum,
    session: Option<&str>,
    body: impl Into<reqwest::Body>,
) -> reqwest::RequestBuilder {
    let mut post = callosum
        .client
        .post(format!("{}/mcp", callosum.url))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18");
    if let Some(id) = session {
        post = post.header("mcp-session-id", id);
    }
    post.body(body)
}

/// The status a legacy client's `notifications/initialized` and then `tools/list` get.
async fn list_in(callosum: &Callosum, session: Option<&str>) -> u16 {
    let initialized = legacy_post(
        callosum,
        session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .send()
    .await
    .unwrap();
    if initialized.status() != 202 {
        return initialized.status().as_u16();
    }
    let response = legacy_post(
        callosum,
        session,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    )
    .send()
    .await
    .unwrap();
    let status = response.status().as_u16();
    response.bytes().await.unwrap();
    status
}

#[tokio::test]
async fn over_http_a_bad_message_gets_the_json_rpc_answer_it_should() {
    let callosum = Callosum::start("").await;
    initialize_legacy(&callosum).await;
    assert_eq!(list_in(&callosum, None).await, 200);
    let post = |body: &'static str| legacy_post(&callosum, None, body).send();
    // rmcp answers non-object arguments with -32601 (method not found), over HTTP as over stdio.
    let response = post(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search","arguments":"jetpack"}}"#)
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let response = post("{not json").await.unwrap();
    assert_eq!(response.status(), 400);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    // A batch and an object id were a 415 in plain text; they are invalid requests.
    for body in [
        r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
        r#"{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}"#,
    ] {
        let response = post(body).await.unwrap();
        assert_eq!(response.status(), 400, "{body}");
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["error"]["code"], -32600, "{body}: {answer}");
        assert_eq!(answer["id"], Value::Null, "{body}: {answer}");
    }
    // A good call still goes through.
    let response = post(r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"list_stores","arguments":{}}}"#)
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.text().await.unwrap().contains("\"id\":10"));
}

#[tokio::test]
async fn legacy_clients_are_served_statelessly_so_any_replica_can_answer() {
    // Behind a balancer, a session kept by one replica was unknown to the next: "Session
    // terminated" after a few calls. Now nothing is kept, so nothing can be unknown.
    let callosum = Callosum::start("").await;
    initialize_legacy(&callosum).await;
    // With no session id, with the id another replica (or an older build) once gave, again and
    // again: every request is served whole.
    for session in [None, Some("4f1c2d0e-made-up-by-another-replica")] {
        for _ in 0..3 {
            assert_eq!(list_in(&callosum, session).await, 200, "{session:?}");
        }
    }
    // No stream to open and no session to end: both are 405 (the contract's answer where
    // sessions are not kept), and say what is allowed.
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let response = callosum
            .client
            .request(method.clone(), format!("{}/mcp", callosum.url))
            .header("accept", "text/event-stream")
            .header("mcp-session-id", "4f1c2d0e-made-up-by-another-replica")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{method}");
        assert_eq!(response.headers()["allow"], "POST", "{method}");
    }
    // The old cap's key is taken and named, not refused: nothing is held to cap.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.yaml");
    std::fs::write(&config, "server:\n  max_mcp_sessions: 4\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_seren-corpus-callosum"))
        .args(["check", "-c", &config.display().to_string()])
        .env_clear()
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("'server.max_mcp_sessions' is no longer read"),
        "{stdout}"
    );
}

#[tokio::test]
async fn mcp_tool_calls_share_the_in_flight_cap_with_rest() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    // A store that counts the searches it is serving at once, and the most it ever saw.
    #[derive(Clone, Default)]
    struct Gauge {
        now: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
        /// Told each time the store finishes a search.
        done: Arc<tokio::sync::Notify>,
    }
    let gauge = Gauge::default();
    let router = axum::Router::new()
        .fallback(axum::routing::post(
            |axum::extract::State(g): axum::extract::State<Gauge>| async move {
                let now = g.now.fetch_add(1, Ordering::SeqCst) + 1;
                g.most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(800)).await;
                g.now.fetch_sub(1, Ordering::SeqCst);
                g.done.notify_waiters();
                axum::Json(json!({"hits": []}))
            },
        ))
        .with_state(gauge.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let store = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let callosum = Callosum::start(&format!(
        "server:\n  max_in_flight: 4\n{}",
        config_yaml(&[("slow", "seren_memory", &store, "")])
    ))
    .await;
    // Once, tool calls in one MCP session were not counted: a client that posts a call and hangs
    // up on its event stream frees the request's slot at once while rmcp runs the call on in the
    // session's task, so 600 of them hit the store at once.
    initialize_legacy(&callosum).await;
    assert_eq!(list_in(&callosum, None).await, 200);
    for i in 0..24 {
        let call = json!({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
                          "params": {"name": "search", "arguments": {"query": format!("q{i}")}}});
        // Sent, and hung up on before the answer comes.
        let response = tokio::time::timeout(
            std::time::Duration::from_millis(200),
            legacy_post(&callosum, None, call.to_string()).send(),
        )
        .await;
        if let Ok(response) = response {
            assert_eq!(response.unwrap().status(), 200);
        }
    }
    // The calls run on; wait (told by the store, bounded) until it has nothing under way.
    let idle = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            let done = gauge.done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if gauge.most.load(Ordering::SeqCst) > 0 && gauge.now.load(Ordering::SeqCst) == 0 {
                return;
            }
            done.await;
        }
    })
    .await;
    assert!(idle.is_ok(), "the calls never ended");
    let most = gauge.most.load(Ordering::SeqCst);
    assert!(most <= 4, "the store saw {most} searches at once");
}
