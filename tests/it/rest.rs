//! The REST API: request checks, auth, request ids, and live roster changes that persist.

use crate::support::*;
use serde_json::{Value, json};
use std::sync::Arc;

#[tokio::test]
async fn bad_search_requests_name_the_field() {
    let callosum = Callosum::start("").await;
    for (body, status, needle) in [
        (json!({}), 422, "missing field `query`"),
        (
            json!({"query": 5}),
            422,
            "query: invalid type: integer `5`, expected a string",
        ),
        (json!({"query": "   "}), 422, "query must not be empty"),
        (
            json!({"query": "q", "n_results": 0}),
            422,
            "n_results must be within 1..=200, got 0",
        ),
        (
            json!({"query": "q", "n_results": 201}),
            422,
            "n_results must be within 1..=200, got 201",
        ),
        (
            json!({"query": "q", "n_results": "ten"}),
            422,
            "n_results: invalid type",
        ),
        (
            json!({"query": "q", "n_results": 2.5}),
            422,
            "n_results: invalid type",
        ),
        (
            json!(["query"]),
            422,
            "invalid body: expected a JSON object",
        ),
        (
            json!({"query": "x".repeat(8 * 1024 + 1)}),
            413,
            "the limit is 8192",
        ),
    ] {
        let (got, answer) = callosum.post("/search", body.clone()).await;
        assert_eq!(got, status, "{body}: {answer}");
        let detail = answer["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(needle), "{needle}: {detail}");
    }
    // Not JSON at all (said to be JSON), and a body over the 64 KiB cap.
    let client = &callosum.client;
    let response = client
        .post(format!("{}/search", callosum.url))
        .header("content-type", "application/json")
        .body("query=cuda")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let detail: Value = response.json().await.unwrap();
    assert_eq!(detail["detail"], "invalid body: expected a JSON object");
    let response = client
        .post(format!("{}/search", callosum.url))
        .header("content-type", "application/json")
        .body(vec![b' '; 70 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let detail: Value = response.json().await.unwrap();
    assert_eq!(detail["detail"], "request body over the 65536-byte limit");
    // Unknown routes and methods answer JSON too.
    assert_eq!(
        callosum.get("/nope").await,
        (404, json!({"detail": "not found"}))
    );
    assert_eq!(
        callosum.get("/search").await,
        (405, json!({"detail": "method not allowed"}))
    );
}

#[tokio::test]
async fn health_and_request_ids() {
    let callosum = Callosum::start("").await;
    let (status, health) = callosum.get("/health").await;
    assert_eq!(status, 200);
    assert_eq!(health["ok"], true);
    assert!(health["ts"].as_f64().unwrap() > 1.7e9);
    let response = callosum
        .client
        .get(format!("{}/health", callosum.url))
        .header("x-request-id", "trace-42")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "trace-42");
    let viewer = callosum
        .client
        .get(format!("{}/viewer", callosum.url))
        .send()
        .await
        .unwrap();
    let csp = viewer.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.starts_with("default-src 'none'") && csp.contains("connect-src 'self'"),
        "{csp}"
    );
    assert_eq!(viewer.headers()["x-content-type-options"], "nosniff");
    let page = viewer.text().await.unwrap();
    assert!(
        page.contains("The Bridge") && !page.contains("src=\"http"),
        "self-contained"
    );
    let minted = callosum
        .client
        .get(format!("{}/nope", callosum.url))
        .send()
        .await
        .unwrap();
    let id = minted.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(id.len(), 16, "{id}");
}

#[tokio::test]
async fn adding_a_store_fans_it_at_once_and_survives_a_restart() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let xyz = StubStore::hits(memory_hits(&[("x1", 0.1)])).await;
    let yaml = config_yaml(&[("episodic", "seren_memory", &memory.url, "")]);
    let callosum = Callosum::start(&yaml).await;
    let (status, added) = callosum
        .post(
            "/stores",
            json!({"name": " project-xyz ", "type": "seren_memory", "url": format!("{}/", xyz.url), "weight": 0.5, "token": "xyz-secret"}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(
        added,
        json!({"ok": true, "added": "project-xyz", "active": 2})
    );
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(order(&answer), ["episodic:m1", "project-xyz:x1"]);
    assert_eq!(
        xyz.captured()[0].authorization.as_deref(),
        Some("Bearer xyz-secret")
    );

    let overlay = read_json(&callosum.overlay_path());
    assert_eq!(overlay[0]["name"], "project-xyz");
    assert_eq!(overlay[0]["url"], xyz.url, "trailing slash dropped");
    assert_eq!(overlay[0]["weight"], 0.5);
    let (_, stores) = callosum.get("/stores").await;
    let row = &stores["stores"][1];
    assert_eq!(row["managed"], true);
    assert_eq!(row["status"], "active");
    assert_eq!(row["auth"], true);
    assert!(
        !stores.to_string().contains("xyz-secret"),
        "the token never shows: {stores}"
    );
    // The config file was not touched.
    assert_eq!(
        std::fs::read_to_string(callosum.config_path()).unwrap(),
        yaml
    );

    // A restart in the same directory fans it again, from the overlay.
    let dir = Arc::clone(&callosum.dir);
    drop(callosum);
    let again = Callosum::start_in(dir, &yaml).await;
    let (_, answer) = again.search("q", None).await;
    assert_eq!(order(&answer), ["episodic:m1", "project-xyz:x1"]);
    let (status, removed) = again.delete("/stores/project-xyz").await;
    assert_eq!(status, 200);
    assert_eq!(
        removed,
        json!({"ok": true, "removed": "project-xyz", "active": 1})
    );
    let (_, answer) = again.search("q", None).await;
    assert_eq!(order(&answer), ["episodic:m1"], "unbound at once");
    assert_eq!(read_json(&again.overlay_path()), json!([]));
}

#[tokio::test]
async fn roster_changes_are_refused_with_the_documented_codes() {
    let memory = StubStore::hits(json!([])).await;
    let callosum = Callosum::start(&config_yaml(&[(
        "episodic",
        "seren_memory",
        &memory.url,
        "",
    )]))
    .await;
    let add = |body: Value| callosum.post("/stores", body);
    let ok = json!({"name": "extra", "type": "seren_loci", "url": "http://127.0.0.1:9"});
    assert_eq!(add(ok.clone()).await.0, 200);
    for (body, status, detail) in [
        (ok.clone(), 409, "a store named 'extra' already exists".to_owned()),
        (json!({"name": "episodic", "type": "seren_loci", "url": "http://x"}), 409, "a store named 'episodic' already exists".into()),
        (json!({"name": "  ", "type": "seren_loci", "url": "http://x"}), 400, "name is required".into()),
        (json!({"name": "a", "type": "seren_loci", "url": " "}), 400, "url is required".into()),
        (json!({"name": "a", "type": "quantum_brain", "url": "http://x"}), 400,
            "unknown store type 'quantum_brain'; known types: [\"mcp\", \"seren_callosum\", \"seren_loci\", \"seren_memory\"]".into()),
        (json!({"name": "a", "type": "seren_loci", "url": "gopher://x"}), 400, "url must start with http:// or https://".into()),
        (json!({"name": "a/b", "type": "seren_loci", "url": "http://x"}), 400, "name 'a/b' must be 1-64 characters of A-Z a-z 0-9 . _ - and not start with '.'".into()),
        // `.` and `..` once passed, and the viewer could not remove them (a path step).
        (json!({"name": "..", "type": "seren_loci", "url": "http://x"}), 400, "name '..' must be 1-64 characters of A-Z a-z 0-9 . _ - and not start with '.'".into()),
        (json!({"name": "a\nINFO forged", "type": "seren_loci", "url": "http://x"}), 400, "name 'a\\u{a}INFO forged' must be 1-64 characters of A-Z a-z 0-9 . _ - and not start with '.'".into()),
        (json!({"name": "a", "type": "seren_loci", "url": "http://127.0.0.1:18004\\@evil"}), 400, "url must not contain a backslash".into()),
        (json!({"name": "a", "type": "seren_loci", "url": "http://x", "token": "a\r\nX-Evil: 1"}), 400,
            "store 'a': token has characters a bearer header cannot carry (spaces, control characters or non-ASCII)".into()),
        (json!({"name": "a", "type": "seren_loci", "url": "http://x", "weight": -1}), 400, "store 'a': weight must be a finite number > 0, got -1".into()),
        (json!({"name": "a", "type": "seren_loci", "url": "http://x", "floor": 3}), 400, "store 'a': floor must be within 0..=1, got 3".into()),
        (json!({"name": "a", "type": "seren_loci", "url": "http://x", "weight": "heavy"}), 422, "invalid body: weight: invalid type: string \"heavy\", expected f64".into()),
        (json!({"type": "seren_loci", "url": "http://x"}), 422, "invalid body: missing field `name`".into()),
    ] {
        let (got, answer) = add(body.clone()).await;
        assert_eq!((got, answer["detail"].as_str().unwrap_or_default()), (status, detail.as_str()), "{body}");
    }
    let (status, answer) = callosum.delete("/stores/episodic").await;
    assert_eq!(status, 400);
    let expected = format!(
        "'episodic' is a base (config) store - remove it from {}, not from here",
        callosum.config_path().display()
    );
    assert_eq!(answer["detail"], expected);
    assert_eq!(
        callosum.delete("/stores/ghost").await,
        (404, json!({"detail": "no store named 'ghost'"}))
    );
    assert_eq!(callosum.delete("/stores/extra").await.0, 200);
}

#[tokio::test]
async fn a_corrupt_overlay_is_shown_and_left_alone() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    std::fs::write(dir.path().join("runtime-stores.json"), "[{\"name\": \"half").unwrap();
    let callosum = Callosum::start_in(dir, "").await;
    let (_, stores) = callosum.get("/stores").await;
    assert!(
        stores["overlay_error"]
            .as_str()
            .unwrap()
            .contains("is not valid JSON"),
        "{stores}"
    );
    let (status, answer) = callosum
        .post(
            "/stores",
            json!({"name": "a", "type": "seren_loci", "url": "http://x"}),
        )
        .await;
    assert_eq!(status, 409);
    assert!(
        answer["detail"]
            .as_str()
            .unwrap()
            .contains("fix or remove that file"),
        "{answer}"
    );
    assert_eq!(
        std::fs::read_to_string(callosum.overlay_path()).unwrap(),
        "[{\"name\": \"half"
    );
}

#[tokio::test]
async fn a_failed_overlay_write_answers_500_and_changes_nothing() {
    // The overlay's directory is a file, so no temp file can be created beside it.
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let path = dir.path().join("seren-corpus-callosum.yaml");
    std::fs::write(&path, "").unwrap();
    let overlay = blocker.join("runtime-stores.json");
    let overlay_text = overlay.display().to_string();
    let config = seren_corpus_callosum::config::Config::load_from(
        &path,
        &seren_corpus_callosum::config::Env::from_fn(move |name: &str| {
            (name == "SEREN_SCC_RUNTIME_STORES").then(|| overlay_text.clone())
        }),
    )
    .unwrap();
    let callosum = Callosum::start_with(dir, config).await;
    let (status, answer) = callosum
        .post(
            "/stores",
            json!({"name": "a", "type": "seren_loci", "url": "http://x"}),
        )
        .await;
    assert_eq!(status, 500, "{answer}");
    assert!(
        answer["detail"]
            .as_str()
            .unwrap()
            .starts_with("could not write the runtime overlay"),
        "{answer}"
    );
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(stores["stores"], json!([]), "the live roster is unchanged");
}

#[tokio::test]
async fn with_a_token_every_gated_route_needs_it() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let yaml = format!(
        "server:\n  bearer_token: s3cret-token\n{}",
        config_yaml(&[("episodic", "seren_memory", &memory.url, "")])
    );
    let callosum = Callosum::start(&yaml).await;
    let client = &callosum.client;
    let url = |path: &str| format!("{}{path}", callosum.url);
    let gated = [
        client.post(url("/search")).json(&json!({"query": "q"})),
        client.get(url("/stores")),
        client
            .post(url("/stores"))
            .json(&json!({"name": "a", "type": "seren_loci", "url": "http://x"})),
        client.delete(url("/stores/episodic")),
        client.get(url("/anything-else")),
        client.post(url("/")),
    ];
    for request in gated {
        let request = request.build().unwrap();
        let description = format!("{} {}", request.method(), request.url().path());
        let wrong = reqwest::Request::try_clone(&request).unwrap();
        let response = client.execute(request).await.unwrap();
        assert_eq!(response.status(), 401, "{description}");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        assert_eq!(
            response.json::<Value>().await.unwrap(),
            json!({"detail": "unauthorized"})
        );
        let mut wrong = wrong;
        wrong
            .headers_mut()
            .insert("authorization", "Bearer s3cret-tokeN".parse().unwrap());
        assert_eq!(
            client.execute(wrong).await.unwrap().status(),
            401,
            "{description} with a wrong token"
        );
    }
    for path in ["/", "/health", "/viewer", "/viewer/"] {
        let response = client.get(url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path} is public");
        let text = response.text().await.unwrap();
        assert!(!text.contains("s3cret-token"), "{path} leaks the token");
    }
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let response = client
            .post(url("/search"))
            .header("authorization", format!("{scheme} s3cret-token"))
            .json(&json!({"query": "q"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{scheme}");
        let text = response.text().await.unwrap();
        assert!(!text.contains("s3cret-token"));
    }
    let response = client
        .get(url("/stores"))
        .bearer_auth("s3cret-token")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(!response.text().await.unwrap().contains("s3cret-token"));
}

#[tokio::test]
async fn a_search_over_no_stores_says_so_in_words() {
    let callosum = Callosum::start("").await;
    let (status, answer) = callosum.search("anything", None).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["hits"], json!([]));
    let config = callosum.config_path().display().to_string();
    assert_eq!(
        answer["notes"],
        json!([format!(
            "no stores are configured, so nothing was searched: add one with the add_store tool \
             (or POST /stores), or under federation.stores in {config}"
        )])
    );
    // Stores that are there but all disabled: said differently.
    let callosum = Callosum::start(&config_yaml(&[(
        "off",
        "seren_loci",
        "http://127.0.0.1:1",
        "enabled: false",
    )]))
    .await;
    let (_, answer) = callosum.search("anything", None).await;
    assert_eq!(
        answer["notes"],
        json!([
            "no store was searched: the 1 configured are disabled or skipped (list_stores says why)"
        ])
    );
}
