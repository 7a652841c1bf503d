//! Hostile MCP servers, as someone who controls one `mcp` store would write them: a `tools/list`
//! that pages forever. Each attack is cut off at a bound it names, and removing the store ends
//! the work it caused at once.

use crate::support::mcp_server::PagingServer;
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
