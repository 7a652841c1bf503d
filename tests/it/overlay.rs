//! Nothing lost in the overlay: concurrent changes from REST and MCP, failed writes, and files a
//! crash or a person left behind.

use crate::support::mcp::*;
use crate::support::*;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;

fn managed_names(stores: &Value) -> BTreeSet<String> {
    rows_where(stores, "managed", true.into())
}

fn overlay_names(overlay: &Value) -> BTreeSet<String> {
    overlay
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_hundred_concurrent_changes_over_rest_and_mcp_lose_nothing() {
    let callosum = Arc::new(Callosum::start("").await);
    let client = Arc::new(http_client(&callosum.url, None).await.unwrap());
    for i in 0..50 {
        let (status, _) = callosum
            .post("/stores", json!({"name": format!("s{i}"), "type": "seren_memory", "url": "http://127.0.0.1:9"}))
            .await;
        assert_eq!(status, 200);
    }
    // 100 changes at once: remove s0..s49 and add s50..s99, half over REST and half over MCP.
    let changes = (0..100).map(|i| {
        let callosum = callosum.clone();
        let client = client.clone();
        tokio::spawn(async move {
            let name = format!("s{i}");
            let over_mcp = i % 2 == 1;
            match (i < 50, over_mcp) {
                (true, false) => callosum.delete(&format!("/stores/{name}")).await.0 == 200,
                (true, true) => {
                    let result = call(&client, "remove_store", json!({"name": name})).await;
                    result.is_error != Some(true)
                }
                (false, false) => {
                    let body =
                        json!({"name": name, "type": "seren_loci", "url": "http://127.0.0.1:9"});
                    callosum.post("/stores", body).await.0 == 200
                }
                (false, true) => {
                    let args =
                        json!({"name": name, "type": "seren_loci", "url": "http://127.0.0.1:9"});
                    call(&client, "add_store", args).await.is_error != Some(true)
                }
            }
        })
    });
    for (i, change) in futures_util::future::join_all(changes)
        .await
        .into_iter()
        .enumerate()
    {
        assert!(change.unwrap(), "change {i} was refused");
    }
    let expected: BTreeSet<String> = (50..100).map(|i| format!("s{i}")).collect();
    let overlay = read_json(&callosum.overlay_path());
    assert_eq!(overlay_names(&overlay), expected, "the overlay file");
    assert_eq!(
        overlay.as_array().unwrap().len(),
        50,
        "no duplicates in the file"
    );
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(
        managed_names(&stores),
        expected,
        "the live roster equals the file"
    );
    // A restart reads back exactly that.
    let dir = callosum.dir.clone();
    let again = Callosum::start_in(dir, "").await;
    let (_, stores) = again.get("/stores").await;
    assert_eq!(managed_names(&stores), expected);
}

#[tokio::test]
async fn a_leftover_temp_file_from_a_crash_is_ignored() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    std::fs::write(
        dir.path().join("runtime-stores.json"),
        r#"[{"name": "kept", "type": "seren_memory", "url": "http://127.0.0.1:9"}]"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".runtime-stores.json.tmp-4242-0"),
        "[{\"name\": \"half-writ",
    )
    .unwrap();
    let callosum = Callosum::start_in(dir, "").await;
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(managed_names(&stores), BTreeSet::from(["kept".to_owned()]));
    assert!(stores.get("overlay_error").is_none(), "{stores}");
    let (status, _) = callosum
        .post(
            "/stores",
            json!({"name": "more", "type": "seren_memory", "url": "http://127.0.0.1:9"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(overlay_names(&read_json(&callosum.overlay_path())).len(), 2);
}

#[tokio::test]
async fn entries_this_version_cannot_bind_survive_every_rewrite() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let future =
        json!({"name": "future", "type": "quantum_brain", "url": "http://q", "entanglement": 7});
    let broken =
        json!({"name": "broken", "type": "seren_loci", "url": "http://x", "weight": "heavy"});
    std::fs::write(
        dir.path().join("runtime-stores.json"),
        serde_json::to_string(&json!([future, broken])).unwrap(),
    )
    .unwrap();
    let callosum = Callosum::start_in(dir, "").await;
    let (_, stores) = callosum.get("/stores").await;
    let status: Vec<&str> = stores["stores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert!(
        status[0].starts_with("skipped: unknown store type 'quantum_brain'"),
        "{status:?}"
    );
    assert!(
        status[1] == "skipped: invalid entry: weight: invalid type: string, expected f64",
        "{status:?}"
    );
    callosum
        .post(
            "/stores",
            json!({"name": "new", "type": "seren_memory", "url": "http://127.0.0.1:9"}),
        )
        .await;
    let overlay = read_json(&callosum.overlay_path());
    assert_eq!(overlay[0], future, "kept as written");
    assert_eq!(overlay[1], broken, "kept as written");
    assert_eq!(overlay[2]["name"], "new");
}

/// A full disk, simulated: the server runs with a file-size limit of 0 (and SIGXFSZ ignored), so
/// every write of the overlay fails the way a full disk fails a write.
#[tokio::test]
async fn a_failed_write_answers_500_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.yaml");
    std::fs::write(&config, "").unwrap();
    let overlay = dir.path().join("runtime-stores.json");
    let original = r#"[{"name": "kept", "type": "seren_memory", "url": "http://127.0.0.1:9"}]"#;
    std::fs::write(&overlay, original).unwrap();
    let mut command = std::process::Command::new("bash");
    command
        .args(["-c", r#"trap '' XFSZ; ulimit -f 0; exec "$0" "$@""#])
        .arg(env!("CARGO_BIN_EXE_seren-corpus-callosum"))
        .args(["serve", "-c", &config.display().to_string(), "--port", "0"])
        .env_clear();
    // Killed when dropped, also when an assertion below fails.
    let mut server = crate::support::process::Server::start(command);
    let url = crate::support::process::listening_url(&server.wait_for("listening on"));
    let client = reqwest::Client::new();
    let response = client
        .post(format!("{url}/stores"))
        .json(&json!({"name": "lost", "type": "seren_memory", "url": "http://127.0.0.1:9"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("could not write the runtime overlay")
            && detail.contains("nothing changed"),
        "{detail}"
    );
    let removal = client
        .delete(format!("{url}/stores/kept"))
        .send()
        .await
        .unwrap();
    assert_eq!(removal.status(), 500);
    let stores: Value = client
        .get(format!("{url}/stores"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        managed_names(&stores),
        BTreeSet::from(["kept".to_owned()]),
        "the live roster is as it was"
    );
    assert_eq!(
        std::fs::read_to_string(&overlay).unwrap(),
        original,
        "the file is as it was"
    );
    // The config, the overlay, the overlay's lock file (empty, kept for the next change) and
    // the audit trail: created, but the full disk took none of its lines.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        4,
        "no temp file left behind: {leftovers:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap(),
        ""
    );
    // An audit line that cannot be written is counted (and never stops the write it records).
    let metrics = client
        .get(format!("{url}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(r#"seren_callosum_audit_writes_total{result="failed"} 2"#),
        "{metrics}"
    );
}
