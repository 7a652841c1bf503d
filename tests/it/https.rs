//! Stores over `https://`: every store type behind a TLS-terminating front on loopback
//! (`support::tls`), whose certificate a private CA issued. Trusted through the store's own
//! `tls_ca_file`, each answers; without it, each is a `failed` entry saying the certificate is not
//! trusted. A bad `tls_ca_file` skips its store or stops the start, and nothing added over the
//! network may name one.

use crate::support::mcp::*;
use crate::support::mcp_server::ProbeServer;
use crate::support::tls::{H2Store, TlsFront};
use crate::support::*;
use serde_json::json;

const UNTRUSTED: &str = "connect: tls: the server's certificate is not trusted (unknown issuer; a private CA goes in tls_ca_file)";

#[tokio::test]
async fn every_store_type_answers_over_https_trusted_through_its_own_ca_file() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let loci = StubStore::hits(loci_hits(&[("l1", 0.9)])).await;
    let inner_facts = StubStore::hits(loci_hits(&[("c1", 0.8)])).await;
    let inner = Callosum::start(&config_yaml(&[(
        "facts",
        "seren_loci",
        &inner_facts.url,
        "",
    )]))
    .await;
    let probe = ProbeServer::start(None).await;
    let fronts = [
        (
            "memory",
            "seren_memory",
            TlsFront::start(&memory.url).await,
            "",
        ),
        ("loci", "seren_loci", TlsFront::start(&loci.url).await, ""),
        (
            "inner",
            "seren_callosum",
            TlsFront::start(&inner.url).await,
            "",
        ),
        (
            "notes",
            "mcp",
            TlsFront::start(&probe.url).await,
            "tool: find\nlimit_arg: n_results\ncontent: /text\nscore: /score",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut stores = Vec::new();
    for (name, kind, front, extra) in &fronts {
        // Each front has a CA of its own: a store trusts its own CA, and no other store's.
        let ca = front.write_ca(dir.path(), &format!("{name}-ca.pem"));
        stores.push((
            name.to_string(),
            kind.to_string(),
            front.url.clone(),
            format!("tls_ca_file: {}\n{extra}", ca.display()),
        ));
        stores.push((
            format!("{name}-untrusted"),
            kind.to_string(),
            front.url.clone(),
            extra.to_string(),
        ));
    }
    let rows: Vec<(&str, &str, &str, &str)> = (stores.iter())
        .map(|(n, k, u, e)| (n.as_str(), k.as_str(), u.as_str(), e.as_str()))
        .collect();
    let callosum = Callosum::start(&config_yaml(&rows)).await;
    let (status, answer) = callosum.search("tabs", Some(20)).await;
    assert_eq!(status, 200, "{answer}");
    let mut searched: Vec<&str> = (answer["stores_searched"].as_array().unwrap().iter())
        .map(|name| name.as_str().unwrap())
        .collect();
    searched.sort_unstable();
    assert_eq!(searched, ["inner", "loci", "memory", "notes"], "{answer}");
    for id in ["memory:m1", "loci:l1", "inner:c1", "notes:p1"] {
        assert!(order(&answer).contains(&id.to_owned()), "{id}: {answer}");
    }
    for (name, _, _, _) in &fronts {
        let reason = reason_of(&answer, &format!("{name}-untrusted"));
        // An MCP server's start says which step met it.
        let expected = if *name == "notes" {
            UNTRUSTED.replace("connect: ", "initialize: ")
        } else {
            UNTRUSTED.to_owned()
        };
        assert_eq!(reason, expected, "{name}");
    }
    // The inner callosum was reached through its front once, by the trusting store alone.
    assert_eq!(inner_facts.captured().len(), 1);
}

/// A store that offers HTTP/2 (ALPN `h2`, nothing else) is called over it, and answers.
#[tokio::test]
async fn a_store_that_speaks_http2_only_is_called_over_http2() {
    let answer =
        serde_json::to_vec(&json!({"hits": memory_hits(&[("m1", 0.1), ("m2", 0.2)])})).unwrap();
    let store = H2Store::start(answer.into()).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("h2-ca.pem");
    std::fs::write(&ca, &store.ca_pem).unwrap();
    let callosum = Callosum::start(&config_yaml(&[(
        "episodic",
        "seren_memory",
        &store.url,
        &format!("tls_ca_file: {}", ca.display()),
    )]))
    .await;
    for _ in 0..2 {
        let (status, answer) = callosum.search("tabs", None).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(order(&answer), ["episodic:m1", "episodic:m2"], "{answer}");
    }
    assert_eq!(
        *store.versions.lock().unwrap(),
        [axum::http::Version::HTTP_2; 2]
    );
}

#[tokio::test]
async fn a_ca_file_that_cannot_be_used_skips_its_store_naming_the_key_and_the_file() {
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let front = TlsFront::start(&memory.url).await;
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pem");
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "this is not a certificate\n").unwrap();
    let broken = dir.path().join("broken.pem");
    std::fs::write(
        &broken,
        "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let good = front.write_ca(dir.path(), "ca.pem");
    let line = |path: &std::path::Path| format!("tls_ca_file: {}", path.display());
    let callosum = Callosum::start(&config_yaml(&[
        ("gone", "seren_memory", &front.url, &line(&missing)),
        ("junk", "seren_memory", &front.url, &line(&garbage)),
        (
            "torn",
            "mcp",
            &front.url,
            &format!("{}\ntool: find", line(&broken)),
        ),
        ("good", "seren_memory", &front.url, &line(&good)),
    ]))
    .await;
    let (_, stores) = callosum.get("/stores").await;
    let status = |name: &str| {
        (stores["stores"].as_array().unwrap().iter())
            .find(|row| row["name"] == name)
            .map(|row| row["status"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert_eq!(
        status("gone"),
        format!(
            "skipped: tls_ca_file {}: cannot be read (entity not found)",
            missing.display()
        )
    );
    assert_eq!(
        status("junk"),
        format!(
            "skipped: tls_ca_file {}: holds no certificate (a PEM file of -----BEGIN CERTIFICATE----- blocks)",
            garbage.display()
        )
    );
    assert_eq!(
        status("torn"),
        format!(
            "skipped: tls_ca_file {}: is not PEM: a block in it cannot be read",
            broken.display()
        )
    );
    assert_eq!(status("good"), "active");
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(answer["stores_searched"], json!(["good"]), "{answer}");

    // With an http:// url there is no certificate to check: the start stops, naming the store.
    let path = dir.path().join("plain.yaml");
    std::fs::write(
        &path,
        config_yaml(&[("plain", "seren_memory", &memory.url, &line(&good))]),
    )
    .unwrap();
    let error = seren_corpus_callosum::config::Config::load_from(
        &path,
        &seren_corpus_callosum::config::Env::none(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains(
            "store 'plain': tls_ca_file goes with an https:// url; this store's url is http://"
        ),
        "{error}"
    );
}

#[tokio::test]
async fn no_ca_file_is_taken_from_the_network() {
    let probe = ProbeServer::start(None).await;
    let callosum = Callosum::start("").await;
    let detail = "tls_ca_file is refused here: a store added over the network never makes the service read a file; write a store that needs a private CA in the config file";
    for body in [
        json!({"name": "x", "type": "seren_memory", "url": "https://127.0.0.1:9", "tls_ca_file": "/etc/passwd"}),
        json!({"name": "x", "type": "mcp", "url": probe.url, "tool": "find", "tls_ca_file": "/etc/passwd"}),
    ] {
        let (status, refused) = callosum.post("/stores", body.clone()).await;
        assert_eq!(status, 400, "{refused}");
        assert_eq!(refused["detail"], detail);
        let client = http_client(&callosum.url, None).await.unwrap();
        assert_eq!(error_text(&call(&client, "add_store", body).await), detail);
    }
    // Nor from an overlay entry, which the network surfaces write.
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    std::fs::write(
        dir.path().join("runtime-stores.json"),
        r#"[{"name":"sneaky","type":"seren_memory","url":"https://127.0.0.1:9","tls_ca_file":"/etc/passwd"}]"#,
    )
    .unwrap();
    let callosum = Callosum::start_in(dir, "").await;
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(
        stores["stores"][0]["status"],
        "skipped: invalid entry: runtime overlay entry 0 names a tls_ca_file; a file the callosum reads can only be named in the config file"
    );
}

#[tokio::test]
async fn check_reaches_https_stores_with_their_own_ca_file() {
    use crate::support::process::{command, run, write_config};
    let memory = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let probe = ProbeServer::start(None).await;
    let (memory_front, probe_front) = (
        TlsFront::start(&memory.url).await,
        TlsFront::start(&probe.url).await,
    );
    let dir = tempfile::tempdir().unwrap();
    let memory_ca = memory_front.write_ca(dir.path(), "memory-ca.pem");
    // A relative path is read beside the config file.
    probe_front.write_ca(dir.path(), "notes-ca.pem");
    let config = write_config(
        dir.path(),
        &config_yaml(&[
            (
                "episodic",
                "seren_memory",
                &memory_front.url,
                &format!("tls_ca_file: {}", memory_ca.display()),
            ),
            (
                "notes",
                "mcp",
                &probe_front.url,
                "tls_ca_file: notes-ca.pem\ntool: find\ncontent: /text",
            ),
        ]),
    );
    let output = run(command(&["check", "-c", &config])).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "ok       episodic (seren_memory): {}",
            memory_front.url
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("ok       notes (mcp): {}", probe_front.url)),
        "{stdout}"
    );
    assert!(stdout.contains("notes: tools: "), "{stdout}");
    assert!(stdout.contains("'find' is listed"), "{stdout}");
}
