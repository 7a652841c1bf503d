//! Hostile MCP servers, as someone who controls one `mcp` store would write them: a `tools/list`
//! that pages forever. Each attack is cut off at a bound it names, and removing the store ends
//! the work it caused at once.

use crate::support::mcp_server::{FloodServer, PagingServer};
use crate::support::*;
use serde_json::json;
use std::time::Duration;

/// A callosum whose one store is an `mcp` store at `url`, calling `find`.
async fn fanning(url: &str) -> Callosum {
    Callosum::start(&format!(
        "federation:\n  stores:\n    - name: pager\n      type: mcp\n      url: {url}\n      tool: find\n"
    ))
    .await
}

#[tokio::test]
async fn a_tools_list_that_pages_forever_is_cut_off_at_32_pages() {
    let pager = PagingServer::start(Duration::ZERO, 16).await;
    let callosum = fanning(&pager.url).await;
    let (status, answer) = callosum.search("q", None).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        reason_of(&answer, "pager"),
        "tools/list: the server was still paging after 32 pages, the most read from one server"
    );
    assert_eq!(pager.pages(), 32);
}

#[tokio::test]
async fn a_tools_list_of_megabyte_pages_is_cut_off_at_8_mib() {
    let pager = PagingServer::start(Duration::ZERO, 1024 * 1024).await;
    let callosum = fanning(&pager.url).await;
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(
        reason_of(&answer, "pager"),
        "tools/list: the server lists more than 2048 tools or 8 MiB of them, the most read from one server"
    );
    // A tool of a MiB and some a page: the eighth passes the bound.
    assert_eq!(pager.pages(), 8);
}

#[tokio::test]
async fn removing_a_store_stops_its_paging_at_once() {
    let pager = PagingServer::start(Duration::from_millis(50), 16).await;
    let callosum = Callosum::start("federation:\n  per_store_timeout_s: 0.2\n  stores: []\n").await;
    let add = json!({"name": "pager", "type": "mcp", "url": pager.url, "tool": "find"});
    let (status, added) = callosum.post("/stores", add).await;
    assert_eq!(status, 200, "{added}");
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(
        reason_of(&answer, "pager"),
        "timeout after 0.20s: the server is still starting"
    );
    // The start pages on in its own task, a page every 50 ms...
    tokio::time::timeout(Duration::from_secs(10), async {
        while pager.pages() < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the start pages on");
    let (status, removed) = callosum.delete("/stores/pager").await;
    assert_eq!(status, 200, "{removed}");
    // ...until the store is removed: the page asked for then is the last.
    let at_removal = pager.pages();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        pager.pages() <= at_removal + 1,
        "{} pages asked for after the removal",
        pager.pages() - at_removal
    );
}

/// The YAML of `n` `mcp` stores, `flood0`..., on the server at `url`.
fn flood_stores(url: &str, n: usize) -> String {
    (0..n)
        .map(|i| {
            format!("    - name: flood{i}\n      type: mcp\n      url: {url}\n      tool: find\n")
        })
        .collect()
}

#[tokio::test]
async fn tool_answers_of_megabytes_at_once_are_counted_in_the_ledger_and_given_back() {
    // Three stores on one hostile server, forty searches: each call answered with an event of
    // 7 MiB arriving a MiB every 100 ms. rmcp sends at most 16 calls of a session at once, so 48
    // answers arrive together, 336 MiB, past the process's 256 MiB bound on store answers.
    // Uncounted, every one was held whole; counted as they arrive, those that would pass the
    // bound are dropped with the reason.
    let flood = FloodServer::start(7 * 1024 * 1024, Duration::from_millis(100)).await;
    let stores = flood_stores(&flood.url, 3);
    let callosum = Callosum::start(&format!(
        "federation:\n  per_store_timeout_s: 60\n  stores:\n{stores}"
    ))
    .await;
    let searches = (0..40).map(|i| {
        let callosum = &callosum;
        async move { callosum.search(&format!("q{i}"), None).await }
    });
    let answers = futures_util::future::join_all(searches).await;
    assert_eq!(flood.calls(), 120);
    let reasons: Vec<String> = answers
        .iter()
        .flat_map(|(status, answer)| {
            assert_eq!(*status, 200, "{answer}");
            failed(answer).into_iter().map(|(_, why)| why)
        })
        .collect();
    let dropped = reasons
        .iter()
        .filter(|why| why.contains("the searches under way hold 256 MiB of store answers"))
        .count();
    assert!(dropped > 0, "no answer was dropped: {reasons:?}");
    assert!(dropped < 120, "every answer was dropped: {reasons:?}");
    // A dropped answer fails its own call: the session goes on for the others.
    assert!(
        reasons.iter().all(|why| why.starts_with("answer dropped")
            || why.starts_with("decode: the tool's text is not JSON")),
        "{reasons:?}"
    );
    // Every byte is given back once the searches end (a stream goes when rmcp drops it, just
    // after its call is answered).
    let given_back = tokio::time::timeout(Duration::from_secs(10), async {
        while callosum.federation.answer_bytes_held() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    assert!(
        given_back.await.is_ok(),
        "{} bytes still held",
        callosum.federation.answer_bytes_held()
    );
}

#[tokio::test]
async fn the_memory_tool_answers_take_is_bounded_and_given_back() {
    // The attack above against the binary as a process: its peak and what stays resident after.
    use crate::support::process::{self, Server};
    let flood = FloodServer::start(7 * 1024 * 1024, Duration::from_millis(100)).await;
    let dir = tempfile::tempdir().unwrap();
    let stores = flood_stores(&flood.url, 3);
    let yaml = format!(
        "server:\n  port: 0\n  watch: false\nfederation:\n  per_store_timeout_s: 60\n  stores:\n{stores}"
    );
    let config = process::write_config(dir.path(), &yaml);
    let mut server = Server::start(process::command(&["serve", "-c", &config]));
    let url = process::listening_url(&server.wait_for("listening on"));
    let client = test_client();
    let idle = process::status_kib(server.pid(), "VmHWM:");
    let search = |i: usize| {
        let (client, url) = (&client, &url);
        async move {
            let response = client
                .post(format!("{url}/search"))
                .json(&json!({"query": format!("q{i}")}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
        }
    };
    futures_util::future::join_all((0..40).map(search)).await;
    let peak = process::status_kib(server.pid(), "VmHWM:");
    tokio::time::sleep(Duration::from_secs(10)).await;
    let after = process::status_kib(server.pid(), "VmRSS:");
    eprintln!(
        "mcp flood: {} MiB idle, {} MiB peak, {} MiB resident 10 s after forty searches",
        idle / 1024,
        peak / 1024,
        after / 1024
    );
    assert_eq!(flood.calls(), 120);
    // 336 MiB arrive at once; the ledger's 256 MiB, the parsed results and the allocator's
    // slack are what the peak may hold.
    assert!(peak < 512 * 1024, "peak RSS {} MiB", peak / 1024);
    drop(server);
}
