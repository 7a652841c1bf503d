//! What an `mcp` store says and what its url holds stay where they belong. A server's own text
//! (an error quoting the query, a body that is not JSON-RPC) reaches only the search that met it:
//! never the public `GET /health/stores`, `GET /stores`, another search's reasons, or the log.
//! A url's password and query reach none of them either, rmcp's own log lines included. The
//! callosum is the real binary, logging at debug; the servers are real, on loopback.

use crate::support::mcp_server::{Echo, EchoServer, ProbeServer};
use crate::support::process::{self, Server, listening_url};
use crate::support::*;
use serde_json::{Value, json};

/// A query a careless server would quote back.
const QUERY: &str = "find sk-live-QUERYSECRET-7f3a";

/// The binary serving `stores` (yaml list items under `stores:`), logging at debug, with every
/// store's circuit opening at its first failure.
fn serve(dir: &tempfile::TempDir, stores: &str) -> (Server, String) {
    let yaml = process::write_config(
        dir.path(),
        &format!(
            "federation:\n  per_store_timeout_s: 5.0\n  breaker_failures: 1\n  stores:\n{stores}"
        ),
    );
    let mut command = process::command(&["serve", "-c", &yaml, "--port", "0"]);
    command.env("SEREN_SCC_LOG", "debug");
    let mut server = Server::start(command);
    let url = listening_url(&server.wait_for("listening on"));
    (server, url)
}

/// One `mcp` store entry, for [`serve`].
fn entry(name: &str, url: &str, tool: &str) -> String {
    format!("    - name: {name}\n      type: mcp\n      url: '{url}'\n      tool: {tool}\n")
}

async fn search(url: &str, query: &str) -> Value {
    let answer = test_client()
        .post(format!("{url}/search"))
        .json(&json!({"query": query}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    answer.json().await.unwrap()
}

/// A page's text as served.
async fn page(url: &str, path: &str) -> String {
    let answer = test_client()
        .get(format!("{url}{path}"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{path}");
    answer.text().await.unwrap()
}

/// The names of the stores in a search's `failed`, sorted.
fn failed_names(answer: &Value) -> Vec<String> {
    let mut names: Vec<String> = failed(answer).into_iter().map(|(name, _)| name).collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_server_quoting_the_query_is_quoted_only_to_the_search_that_sent_it() {
    let probe = ProbeServer::start(None).await;
    let echo = EchoServer::start().await;
    let stores = [
        entry("result", &probe.url, "echo_error"),
        entry("jsonrpc", &probe.url, "refuse"),
        entry("json", &echo.url(Echo::Json), "find"),
        entry("status", &echo.url(Echo::Status), "find"),
        entry("text", &echo.url(Echo::Text), "find"),
    ]
    .concat();
    let dir = tempfile::tempdir().unwrap();
    let (mut server, url) = serve(&dir, &stores);

    let all = ["json", "jsonrpc", "result", "status", "text"];
    let first = search(&url, QUERY).await;
    assert_eq!(failed_names(&first), all, "{first}");
    // The caller sent the query: a tool's own words may go back to it.
    assert!(reason_of(&first, "result").contains(QUERY), "{first}");
    assert!(reason_of(&first, "jsonrpc").contains(QUERY), "{first}");
    // A body that is not JSON-RPC is named, not quoted, even to the caller.
    for name in ["json", "status", "text"] {
        assert!(!reason_of(&first, name).contains("QUERYSECRET"), "{first}");
    }
    assert_eq!(reason_of(&first, "status"), "transport: status 500");
    // Another search meets the open circuits, whose reason is the public one.
    let other = search(&url, "something else").await;
    assert_eq!(failed_names(&other), all, "{other}");
    assert!(
        reason_of(&other, "json").starts_with("circuit open: "),
        "{other}"
    );
    assert!(!other.to_string().contains("QUERYSECRET"), "{other}");

    let health = page(&url, "/health/stores").await;
    assert!(!health.contains("QUERYSECRET"), "{health}");
    let health: Value = serde_json::from_str(&health).unwrap();
    for row in health["stores"].as_array().unwrap() {
        assert!(row["last_error"].is_string(), "a reason is kept: {row}");
    }
    let stores = page(&url, "/stores").await;
    assert!(!stores.contains("QUERYSECRET"), "{stores}");

    server.wait_for("store failing");
    let log = server.stop();
    assert!(
        log.contains("store gave nothing"),
        "failures are logged:\n{log}"
    );
    assert!(
        !log.contains("QUERYSECRET"),
        "the query reached the log:\n{log}"
    );
}

#[tokio::test]
async fn a_store_urls_password_and_query_reach_no_page_and_no_log() {
    let v6_port = {
        let listener = std::net::TcpListener::bind("[::1]:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let v4_port = closed_port_url().rsplit(':').next().unwrap().to_owned();
    let probe = ProbeServer::start(None).await;
    let secret =
        |host_port: &str| format!("http://user:PASSW0RD@{host_port}/mcp?api_key=SECRETKEY");
    let live = probe
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let stores = [
        entry("v6", &secret(&format!("[::1]:{v6_port}")), "find"),
        entry("v4", &secret(&format!("127.0.0.1:{v4_port}")), "find"),
        // Up and answering, but without the tool: the session's url is called and fails later.
        entry("live", &secret(&live), "nope"),
    ]
    .concat();
    let dir = tempfile::tempdir().unwrap();
    let (mut server, url) = serve(&dir, &stores);

    for query in ["q", "again"] {
        let answer = search(&url, query).await;
        assert_eq!(failed_names(&answer), ["live", "v4", "v6"], "{answer}");
        assert!(
            reason_of(&answer, "v6").contains("connection refused"),
            "{answer}"
        );
        for secret in ["PASSW0RD", "SECRETKEY"] {
            assert!(!answer.to_string().contains(secret), "{answer}");
        }
    }
    let health = page(&url, "/health/stores").await;
    let stores = page(&url, "/stores").await;
    for secret in ["PASSW0RD", "SECRETKEY"] {
        assert!(!health.contains(secret), "{health}");
        assert!(!stores.contains(secret), "{stores}");
    }
    let shown: Value = serde_json::from_str(&stores).unwrap();
    let v6 = shown["stores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == "v6")
        .unwrap();
    assert_eq!(v6["url"], format!("http://***@[::1]:{v6_port}/mcp?***"));

    server.wait_for("store failing");
    let log = server.stop();
    assert!(log.contains("mcp server not started"), "{log}");
    for secret in ["PASSW0RD", "SECRETKEY"] {
        assert!(!log.contains(secret), "{secret} reached the log:\n{log}");
    }
}
