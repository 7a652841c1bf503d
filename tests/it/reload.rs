//! Hot reload and a shared overlay: an edited config file is in force for the next search, with
//! the health of unchanged stores kept; a bad edit changes nothing and says why; processes sharing
//! one overlay see each other's stores and lose none of each other's writes.

use crate::support::process::{self, Server};
use crate::support::*;
use serde_json::{Value, json};
use seren_corpus_callosum::config::{Config, Env};
use seren_corpus_callosum::reload::{self, Loader};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn loader() -> Loader {
    Arc::new(|running: &Config| running.reread())
}

fn names(stores: &Value, status: &str) -> BTreeSet<String> {
    rows_where(stores, "status", status.into())
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

/// Waits, at most 10 s, for `done` to hold of `GET /stores`; the time it took.
async fn until(callosum: &Callosum, done: impl Fn(&Value) -> bool) -> Duration {
    let started = Instant::now();
    loop {
        let (_, stores) = callosum.get("/stores").await;
        if done(&stores) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "not seen within 10 s; /stores: {stores}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn breaker_of(stores: &Value, name: &str) -> String {
    stores["stores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == name)
        .map(|row| row["breaker"].as_str().unwrap_or("").to_owned())
        .unwrap_or_default()
}

fn calls_of(health: &Value, name: &str) -> u64 {
    health["stores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == name)
        .and_then(|row| row["total_calls"].as_u64())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_valid_edit_is_in_force_for_the_next_search_and_unchanged_stores_keep_their_health() {
    let facts = StubStore::hits(loci_hits(&[("f1", 0.9)])).await;
    let episodes = StubStore::hits(memory_hits(&[("e1", 0.8)])).await;
    let dead = closed_port_url();
    let base = [
        ("facts", "seren_loci", facts.url.as_str(), ""),
        ("down", "seren_memory", dead.as_str(), ""),
    ];
    let breaker = "  breaker_failures: 1\n  breaker_cooldown_s: 60\n  breaker_max_cooldown_s: 60\n";
    let yaml = |stores: &[(&str, &str, &str, &str)]| config_yaml(stores) + breaker;
    let callosum = Callosum::start(&yaml(&base)).await;
    for _ in 0..3 {
        callosum.search("q", None).await;
    }
    let (_, health) = callosum.get("/health/stores").await;
    let facts_calls = calls_of(&health, "facts");
    assert_eq!(facts_calls, 3, "{health}");
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(breaker_of(&stores, "down"), "open", "{stores}");

    // The file gains a store, and the facts store's weight changes; `down` is as it was.
    let edited = [
        ("facts", "seren_loci", facts.url.as_str(), "weight: 2.0"),
        ("down", "seren_memory", dead.as_str(), ""),
        ("episodes", "seren_memory", episodes.url.as_str(), ""),
    ];
    std::fs::write(callosum.config_path(), yaml(&edited)).unwrap();
    let done = reload::reload(&callosum.federation, &loader())
        .await
        .expect("a valid file loads");
    assert_eq!(done.added, ["episodes"]);
    assert_eq!(done.rebound, ["facts"]);
    assert!(
        done.removed.is_empty() && done.restart_needed.is_empty(),
        "{done:?}"
    );

    let (status, answer) = callosum.search("q", None).await;
    assert_eq!(status, 200);
    assert_eq!(order(&answer), ["facts:f1", "episodes:e1"]);
    assert_eq!(answer["hits"][0]["score"], json!(2.0 / 61.0));
    // The unchanged store kept its open breaker (it was skipped, not called); the changed one
    // starts a fresh record.
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(breaker_of(&stores, "down"), "open", "{stores}");
    assert!(
        reason_of(&answer, "down").starts_with("circuit open"),
        "{answer}"
    );
    let (_, health) = callosum.get("/health/stores").await;
    assert_eq!(calls_of(&health, "facts"), 1, "{health}");
    assert_eq!(calls_of(&health, "episodes"), 1, "{health}");
    assert!(stores.get("config_error").is_none(), "{stores}");
}

#[tokio::test]
async fn a_bad_edit_changes_nothing_and_says_why_until_it_is_fixed() {
    let facts = StubStore::hits(loci_hits(&[("f1", 0.9)])).await;
    let good = config_yaml(&[("facts", "seren_loci", &facts.url, "")]);
    let callosum = Callosum::start(&good).await;
    let loader = loader();
    let bad_files = [
        ("federation:\n  k: [oops\n", "seren-corpus-callosum.yaml"),
        ("federation:\n  k: 0\n", "federation.k"),
        (
            "federation:\n  stores:\n    - name: x\n      type: seren_loci\n      url: http://127.0.0.1:1\n      weight: -1\n",
            "weight",
        ),
    ];
    for (bad, named) in bad_files {
        std::fs::write(callosum.config_path(), bad).unwrap();
        assert!(
            reload::reload(&callosum.federation, &loader)
                .await
                .is_none()
        );
        let (_, stores) = callosum.get("/stores").await;
        let error = stores["config_error"].as_str().unwrap_or_default();
        assert!(error.contains(named), "{named}: {stores}");
        assert_eq!(names(&stores, "active"), set(&["facts"]), "{stores}");
        let (status, answer) = callosum.search("q", None).await;
        assert_eq!((status, order(&answer)), (200, vec!["facts:f1".to_owned()]));
    }
    std::fs::write(callosum.config_path(), &good).unwrap();
    assert!(
        reload::reload(&callosum.federation, &loader)
            .await
            .is_some()
    );
    let (_, stores) = callosum.get("/stores").await;
    assert!(stores.get("config_error").is_none(), "{stores}");
}

#[tokio::test]
async fn settings_only_a_start_applies_are_named_and_kept() {
    let callosum = Callosum::start("server:\n  port: 0\n").await;
    std::fs::write(
        callosum.config_path(),
        "server:\n  port: 7999\n  bearer_token: now-a-token\n  allowed_origins: ['http://x.example']\nfederation:\n  breaker_failures: 9\n  n_results: 4\n",
    )
    .unwrap();
    let done = reload::reload(&callosum.federation, &loader())
        .await
        .unwrap();
    assert_eq!(
        done.restart_needed,
        [
            "server.port",
            "server.bearer_token",
            "server.allowed_origins",
            "federation.breaker_*"
        ]
    );
    // Still served without a token, and the live knob did change.
    let (status, stores) = callosum.get("/stores").await;
    assert_eq!(status, 200);
    assert_eq!(stores["n_results"], 4);
    assert_eq!(
        stores["restart_needed"].as_array().unwrap().len(),
        4,
        "{stores}"
    );
    assert_eq!(callosum.federation.config().server.port, 0);
}

#[tokio::test]
async fn the_later_change_wins_between_configure_and_the_file() {
    let facts = StubStore::hits(loci_hits(&[("f1", 0.9)])).await;
    let yaml = |extra: &str, weight: &str| {
        format!(
            "federation:\n  k: 60\n  n_results: 10\n{extra}  stores:\n    - name: facts\n      type: seren_loci\n      url: {}\n      weight: {weight}\n",
            facts.url
        )
    };
    let callosum = Callosum::start(&yaml("", "1.0")).await;
    let (status, _) = callosum
        .post(
            "/configure",
            json!({"k": 10, "n_results": 5, "stores": [{"name": "facts", "weight": 3.0}]}),
        )
        .await;
    assert_eq!(status, 200);
    // The file changes n_results (so the file wins there) and nothing else.
    std::fs::write(
        callosum.config_path(),
        yaml("  n_results: 7\n", "1.0").replace("  n_results: 10\n", ""),
    )
    .unwrap();
    let done = reload::reload(&callosum.federation, &loader())
        .await
        .unwrap();
    assert_eq!(done.knobs_replaced, ["n_results"]);
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(
        (stores["k"].clone(), stores["n_results"].clone()),
        (json!(10), json!(7))
    );
    assert_eq!(stores["stores"][0]["weight"], 3.0, "the override stays");
    // Now the file changes the store's own weight: its override gives way.
    std::fs::write(callosum.config_path(), yaml("", "2.0")).unwrap();
    let done = reload::reload(&callosum.federation, &loader())
        .await
        .unwrap();
    assert_eq!(done.knobs_replaced, ["stores.facts.weight"], "{done:?}");
    let (_, answer) = callosum.search("q", None).await;
    // k is still the live 10 (the file never changed it): 2 / (10 + 1).
    let score = answer["hits"][0]["score"].as_f64().unwrap();
    assert!((score - 2.0 / 11.0).abs() < 1e-12, "{answer}");
}

#[tokio::test]
async fn a_file_change_is_seen_without_a_signal() {
    let facts = StubStore::hits(loci_hits(&[("f1", 0.9)])).await;
    let episodes = StubStore::hits(memory_hits(&[("e1", 0.8)])).await;
    let callosum =
        Callosum::start_watching(&config_yaml(&[("facts", "seren_loci", &facts.url, "")])).await;
    // An editor's save: a temp file renamed over the config.
    let temp = callosum.dir.path().join(".seren-corpus-callosum.yaml.swp");
    std::fs::write(
        &temp,
        config_yaml(&[
            ("facts", "seren_loci", &facts.url, ""),
            ("episodes", "seren_memory", &episodes.url, ""),
        ]),
    )
    .unwrap();
    std::fs::rename(&temp, callosum.config_path()).unwrap();
    let took = until(&callosum, |s| names(s, "active").contains("episodes")).await;
    eprintln!("config change seen in {took:?}");
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(order(&answer), ["facts:f1", "episodes:e1"]);
}

#[tokio::test]
async fn sighup_reloads_and_a_removed_stdio_servers_process_ends() {
    let dir = tempfile::tempdir().unwrap();
    let (pid_file, script) = process::stdio_callosum(dir.path());
    let facts = StubStore::hits(loci_hits(&[("f1", 0.9)])).await;
    let outer_dir = tempfile::tempdir().unwrap();
    let inner_entry = format!(
        "    - name: inner\n      type: mcp\n      preset: callosum\n      command: /bin/sh\n      args: [-c, '{script}']\n"
    );
    let facts_entry = format!(
        "    - name: facts\n      type: seren_loci\n      url: {}\n",
        facts.url
    );
    // `watch: false`: only the signal reloads, so the signal is what is tested.
    let head = "server:\n  port: 0\n  watch: false\nfederation:\n  stores:\n";
    let outer_yaml = process::write_config(outer_dir.path(), &format!("{head}{inner_entry}"));
    let mut server = Server::start(process::command(&["serve", "-c", &outer_yaml]));
    let url = process::listening_url(&server.wait_for("listening on"));
    server.wait_for("mcp server up");
    let pid = process::pid_in(&pid_file);
    assert!(process::alive(&pid));

    std::fs::write(&outer_yaml, format!("{head}{facts_entry}")).unwrap();
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let line = server.wait_for("config reloaded");
    assert!(line.contains("facts") && line.contains("inner"), "{line}");
    let answer: Value = test_client()
        .post(format!("{url}/search"))
        .json(&json!({"query": "q"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["stores_searched"], json!(["facts"]), "{answer}");
    assert!(
        process::ends(&pid).await,
        "the removed store's server {pid} still runs"
    );
    // A bad file on SIGHUP: said at warn, the process goes on as it was.
    std::fs::write(&outer_yaml, "federation: [").unwrap();
    std::process::Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .unwrap();
    let line = server.wait_for("config file not reloaded");
    assert!(
        line.contains("WARN") && line.contains("seren-corpus-callosum.yaml"),
        "{line}"
    );
    let stores: Value = test_client()
        .get(format!("{url}/stores"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(names(&stores, "active"), set(&["facts"]));
    assert!(stores["config_error"].is_string(), "{stores}");
}

/// Two callosums in one process sharing one overlay file, each watching it: as two processes
/// on one host are (the lock is taken per open file, so the two exclude each other as processes
/// do).
async fn two_on_one_overlay() -> (Callosum, Callosum) {
    let shared = tempfile::tempdir().unwrap();
    let overlay = shared.path().join("runtime-stores.json");
    let mut pair = Vec::new();
    for _ in 0..2 {
        let dir = Arc::new(tempfile::tempdir().unwrap());
        let path = dir.path().join("seren-corpus-callosum.yaml");
        let mut config = Config::load_from(&path, &Env::none()).unwrap();
        config.overlay_path = overlay.clone();
        config.federation.max_stores = 200;
        pair.push(Callosum::start_watching_with(dir, config).await);
    }
    // The shared directory lives as long as the callosums (their temp dirs are their own).
    std::mem::forget(shared);
    let b = pair.pop().unwrap();
    let a = pair.pop().unwrap();
    (a, b)
}

fn store(name: &str, url: &str) -> Value {
    json!({"name": name, "type": "seren_loci", "url": url})
}

#[tokio::test]
async fn two_processes_on_one_overlay_see_and_keep_each_others_stores() {
    let (a, b) = two_on_one_overlay().await;
    let facts = StubStore::hits(loci_hits(&[("f1", 0.9)])).await;
    let more = StubStore::hits(loci_hits(&[("m1", 0.9)])).await;
    // The everyday case that lost a store: one added through each.
    assert_eq!(a.post("/stores", store("facts", &facts.url)).await.0, 200);
    assert_eq!(b.post("/stores", store("more", &more.url)).await.0, 200);
    let overlay = read_json(&a.overlay_path_shared());
    let written: BTreeSet<String> = overlay
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(written, set(&["facts", "more"]));
    // Each fans the other's store, without a restart.
    let took = until(&a, |s| names(s, "active") == set(&["facts", "more"])).await;
    eprintln!("a store added elsewhere seen in {took:?}");
    let (_, answer) = a.search("q", None).await;
    assert_eq!(order(&answer), ["facts:f1", "more:m1"]);
    until(&b, |s| names(s, "active") == set(&["facts", "more"])).await;
    // A remove through one leaves the other's roster too.
    assert_eq!(b.delete("/stores/facts").await.0, 200);
    until(&a, |s| names(s, "active") == set(&["more"])).await;
}

#[tokio::test]
async fn a_hundred_concurrent_adds_over_two_processes_lose_none() {
    let (a, b) = two_on_one_overlay().await;
    let (a, b) = (Arc::new(a), Arc::new(b));
    let adds = (0..100).map(|i| {
        let through = if i % 2 == 0 { a.clone() } else { b.clone() };
        tokio::spawn(async move {
            through
                .post("/stores", store(&format!("s{i}"), "http://127.0.0.1:9"))
                .await
                .0
        })
    });
    let statuses: Vec<u16> = futures_util::future::join_all(adds)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert!(statuses.iter().all(|&s| s == 200), "{statuses:?}");
    let all: BTreeSet<String> = (0..100).map(|i| format!("s{i}")).collect();
    let overlay = read_json(&a.overlay_path_shared());
    assert_eq!(overlay.as_array().unwrap().len(), 100);
    until(&a, |s| names(s, "active") == all).await;
    until(&b, |s| names(s, "active") == all).await;
}

#[tokio::test]
async fn an_overlay_broken_by_hand_while_running_is_refused_not_overwritten() {
    let (a, b) = two_on_one_overlay().await;
    let facts = StubStore::hits(loci_hits(&[("f1", 0.9)])).await;
    assert_eq!(a.post("/stores", store("facts", &facts.url)).await.0, 200);
    until(&b, |s| names(s, "active") == set(&["facts"])).await;
    let path = a.overlay_path_shared();
    let broken = "[{\"name\": \"facts\", \"type\": \"seren_loci\", \"url\": ";
    std::fs::write(&path, broken).unwrap();
    // Refused by the process that last wrote it as by the other, with the file named.
    for callosum in [&a, &b] {
        let (status, body) = callosum
            .post("/stores", store("x", "http://127.0.0.1:9"))
            .await;
        assert_eq!(status, 409, "{body}");
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .contains("runtime-stores.json"),
            "{body}"
        );
        assert_eq!(callosum.delete("/stores/facts").await.0, 409);
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
    // The stores it held stay fanned, and the error is shown, on both.
    for callosum in [&a, &b] {
        let stores = until(callosum, |s| s["overlay_error"].is_string()).await;
        let _ = stores;
        let (_, answer) = callosum.search("q", None).await;
        assert_eq!(order(&answer), ["facts:f1"]);
    }
    // Fixed by hand: both read it again, and changes go through.
    std::fs::write(&path, "[]").unwrap();
    until(&b, |s| {
        s.get("overlay_error").is_none() && names(s, "active").is_empty()
    })
    .await;
    assert_eq!(b.post("/stores", store("x", &facts.url)).await.0, 200);
}

impl Callosum {
    /// The overlay the config names (shared in these tests, so not the one in `dir`).
    fn overlay_path_shared(&self) -> std::path::PathBuf {
        self.federation.config().overlay_path.clone()
    }
}

#[tokio::test]
async fn a_config_file_that_is_gone_is_refused_not_taken_as_empty() {
    let facts = StubStore::hits(loci_hits(&[("f1", 0.9)])).await;
    let callosum = Callosum::start(&config_yaml(&[("facts", "seren_loci", &facts.url, "")])).await;
    std::fs::remove_file(callosum.config_path()).unwrap();
    assert!(
        reload::reload(&callosum.federation, &loader())
            .await
            .is_none()
    );
    let (_, stores) = callosum.get("/stores").await;
    assert!(
        stores["config_error"]
            .as_str()
            .unwrap()
            .contains("the file is gone"),
        "{stores}"
    );
    assert_eq!(names(&stores, "active"), set(&["facts"]));
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_postgres_overlay_that_cannot_be_reached_is_said_without_its_password() {
    let closed = closed_port_url().replace("http://", "");
    let yaml =
        format!("server:\n  overlay_url: postgres://scc:hunter2@{closed}/scc?sslmode=disable\n");
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let path = dir.path().join("seren-corpus-callosum.yaml");
    std::fs::write(&path, yaml).unwrap();
    let config = Config::load_from(&path, &Env::none()).unwrap();
    let callosum = Callosum::start_with(dir, config).await;
    callosum.federation.refresh_overlay().await;
    let (_, stores) = callosum.get("/stores").await;
    let error = stores["overlay_error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        error.contains(&format!("postgres://***@{closed}/scc")),
        "{stores}"
    );
    let (status, body) = callosum
        .post("/stores", store("x", "http://127.0.0.1:9"))
        .await;
    assert_eq!(status, 503, "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("PostgreSQL overlay") && detail.contains("nothing changed"),
        "{detail}"
    );
    for text in [&error, &detail.to_owned(), &stores.to_string()] {
        assert!(!text.contains("hunter2"), "{text}");
    }
    // The search goes on, on the config's stores.
    assert_eq!(callosum.search("q", None).await.0, 200);
}
