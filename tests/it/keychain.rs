//! Keychain tokens against a real backend: the Linux kernel's key retention service (keyutils),
//! which every Linux box has, headless CI included. The Secret Service (GNOME Keyring, with tokens
//! written by Python's `keyring`) is tested by `tests/keychain/run.sh`, which `.ci/run` runs inside
//! a D-Bus session.
//!
//! Every test uses entries under a service name of its own, and deletes them when done.

use crate::support::process::*;
use crate::support::*;
use serde_json::{Value, json};
use seren_corpus_callosum::config::{Config, Secret};
use seren_corpus_callosum::keychain::{Backend, Keychain, Pointer};
use std::path::Path;
use std::sync::Arc;

/// Entries made by one test, deleted when it ends (pass or fail).
struct Entries {
    keychain: Keychain,
    made: Vec<Pointer>,
    service: String,
}

impl Entries {
    fn new(test: &str) -> Self {
        Self {
            keychain: Keychain::new(Backend::Keyutils),
            made: Vec::new(),
            service: format!("scc-test-{test}-{}", std::process::id()),
        }
    }

    /// `service/user` under this test's own service.
    fn pointer(&self, user: &str) -> String {
        format!("{}/{user}", self.service)
    }

    fn set(&mut self, user: &str, secret: &str) {
        let pointer = Pointer::parse(&self.pointer(user)).unwrap();
        self.keychain
            .set(&pointer, &Secret::new(secret).unwrap())
            .expect("the kernel keyring takes an entry");
        self.made.push(pointer);
    }
}

impl Drop for Entries {
    fn drop(&mut self) {
        for pointer in &self.made {
            let _ = self.keychain.forget(pointer);
        }
    }
}

/// A config read with the kernel keyring as its keychain (no process environment involved).
fn config(dir: &Path, yaml: &str) -> Config {
    let path = dir.join("seren-corpus-callosum.yaml");
    std::fs::write(&path, yaml).unwrap();
    Config::parse_with(
        &path,
        yaml,
        &seren_corpus_callosum::config::Env::none(),
        Some(Arc::new(Keychain::new(Backend::Keyutils))),
    )
    .unwrap()
}

#[tokio::test]
async fn an_unreadable_inbound_keychain_token_stops_the_start_with_78() {
    let mut entries = Entries::new("inbound");
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "server:\n  bearer_token_keyring: {}\n",
        entries.pointer("inbound")
    );
    let path = write_config(dir.path(), &yaml);
    let serve = |extra: &[(&str, &str)]| {
        let mut c = command(&["serve", "-c", &path, "--port", "0"]);
        c.env("SEREN_SCC_KEYRING", "keyutils");
        for (k, v) in extra {
            c.env(k, v);
        }
        c
    };
    // No such entry: exit 78, naming the key and why. The env variable does not stand in for it.
    let output = run({
        let mut c = serve(&[
            ("SEREN_SCC_BEARER_TOKEN_ENV", "FALLBACK"),
            ("FALLBACK", "x"),
        ]);
        c.stdin(std::process::Stdio::null());
        c
    })
    .await;
    assert_eq!(output.status.code(), Some(78));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "server.bearer_token_keyring: keychain entry '{}' not found",
            entries.pointer("inbound")
        )),
        "{stderr}"
    );
    // `check` says the same, and exits 78 too.
    let output = run({
        let mut c = command(&["check", "-c", &path]);
        c.env("SEREN_SCC_KEYRING", "keyutils");
        c
    })
    .await;
    assert_eq!(output.status.code(), Some(78));
    assert!(String::from_utf8_lossy(&output.stdout).contains("not found"));

    // With the entry there, the service starts and wants exactly that token.
    entries.set("inbound", "from-the-keychain");
    let mut server = Server::start(serve(&[]));
    let url = listening_url(&server.wait_for("listening on http://"));
    let client = test_client();
    let status = |token: Option<&'static str>| {
        let mut request = client.get(format!("{url}/stores"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(status(None).await, 401);
    assert_eq!(status(Some("wrong")).await, 401);
    assert_eq!(status(Some("from-the-keychain")).await, 200);
    let log = server.stop();
    assert!(
        !log.contains("from-the-keychain"),
        "the token is never logged"
    );

    // An inline token wins over the keychain, as in the Python family.
    let mut server = Server::start(serve(&[("SEREN_SCC_BEARER_TOKEN", "inline-wins")]));
    let url = listening_url(&server.wait_for("listening on http://"));
    let response = client
        .get(format!("{url}/stores"))
        .bearer_auth("inline-wins")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    drop(server);
}

#[tokio::test]
async fn a_store_whose_keychain_token_cannot_be_read_is_skipped_never_called_bare() {
    let mut entries = Entries::new("store");
    let store = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let yaml = config_yaml(&[
        (
            "locked",
            "seren_memory",
            &store.url,
            &format!("token_keyring: {}", entries.pointer("missing")),
        ),
        (
            "keyed",
            "seren_memory",
            &store.url,
            &format!("bearer_token_keyring: {}", entries.pointer("keyed")),
        ),
    ]);
    entries.set("keyed", "store-token-1");
    let callosum = Callosum::start_with(dir.clone(), config(dir.path(), &yaml)).await;
    let (status, answer) = callosum.search("q", None).await;
    assert_eq!(status, 200);
    assert_eq!(answer["stores_searched"], json!(["keyed"]));
    assert_eq!(
        answer["skipped"],
        json!([{"name": "locked", "reason": format!(
            "token_keyring: keychain entry '{}' not found", entries.pointer("missing"))}])
    );
    // The store was called once, by `keyed`, with its token; `locked` never called it.
    let calls = store.captured();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        calls[0].authorization.as_deref(),
        Some("Bearer store-token-1")
    );
    let (_, roster) = callosum.get("/stores").await;
    let locked = &roster["stores"][0];
    assert_eq!(locked["auth"], true);
    assert!(
        locked["status"]
            .as_str()
            .unwrap()
            .starts_with("skipped: token_keyring")
    );
}

#[tokio::test]
async fn a_token_given_at_run_time_goes_to_the_keychain_and_the_overlay_holds_a_pointer() {
    let store = StubStore::hits(memory_hits(&[("m1", 0.1)])).await;
    let dir = Arc::new(tempfile::tempdir().unwrap());
    // The operator chose the kernel keyring by name, so run-time tokens go there too (see
    // `Keychain::keep`: with `auto`, only a keychain that outlives a reboot takes them).
    let callosum = Callosum::start_with(dir.clone(), config(dir.path(), "")).await;
    let name = format!("rt-{}", std::process::id());
    let pointer = Pointer::for_store(&name);
    let token = format!("run-time-secret-{}", std::process::id());
    let (status, answer) = callosum
        .post(
            "/stores",
            json!({"name": name, "type": "seren_memory", "url": store.url, "token": token}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let keychain = Keychain::new(Backend::Keyutils);
    let cleanup = scopeguard(&keychain, &pointer);
    let overlay = std::fs::read_to_string(callosum.overlay_path()).unwrap();
    assert!(
        !overlay.contains(&token),
        "the token is not in the overlay: {overlay}"
    );
    let saved: Value = serde_json::from_str(&overlay).unwrap();
    assert_eq!(
        saved[0]["token_keyring"],
        format!("seren-corpus-callosum/{name}")
    );
    assert!(saved[0].get("token").is_none());
    // It is in the keychain, and the store is called with it.
    assert_eq!(keychain.get(&pointer).unwrap().expose(), token);
    callosum.search("q", None).await;
    assert_eq!(
        store.captured()[0].authorization,
        Some(format!("Bearer {token}"))
    );
    // Removing the store removes the entry it made.
    assert_eq!(callosum.delete(&format!("/stores/{name}")).await.0, 200);
    assert!(
        Keychain::new(Backend::Keyutils).get(&pointer).is_err(),
        "the keychain entry is gone with its store"
    );
    drop(cleanup);
}

#[tokio::test]
async fn without_a_persistent_keychain_a_run_time_token_stays_inline_at_0600() {
    let store = StubStore::hits(json!([])).await;
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let path = dir.path().join("seren-corpus-callosum.yaml");
    let config = Config::parse_with(
        &path,
        "",
        &seren_corpus_callosum::config::Env::none(),
        Some(Arc::new(Keychain::new(Backend::None))),
    )
    .unwrap();
    let callosum = Callosum::start_with(dir.clone(), config).await;
    let (status, _) = callosum
        .post(
            "/stores",
            json!({"name": "inline", "type": "seren_memory", "url": store.url, "token": "kept-inline"}),
        )
        .await;
    assert_eq!(status, 200);
    let saved = read_json(&callosum.overlay_path());
    assert_eq!(saved[0]["token"], "kept-inline");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(callosum.overlay_path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

/// Deletes a keychain entry when dropped, so a failed assertion leaves nothing behind.
fn scopeguard<'a>(keychain: &'a Keychain, pointer: &'a Pointer) -> impl Drop + 'a {
    struct Guard<'a>(&'a Keychain, &'a Pointer);
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            let _ = self.0.forget(self.1);
        }
    }
    Guard(keychain, pointer)
}

#[tokio::test]
async fn a_run_time_token_never_overwrites_or_deletes_an_entry_it_does_not_own() {
    let store = StubStore::hits(json!([])).await;
    let keychain = Keychain::new(Backend::Keyutils);
    let (taken, named) = (
        format!("taken-{}", std::process::id()),
        format!("named-{}", std::process::id()),
    );
    // An entry under a store's name that holds another token (another process's store, say).
    let taken_pointer = Pointer::for_store(&taken);
    keychain
        .set(&taken_pointer, &Secret::new("someone-elses").unwrap())
        .unwrap();
    let _taken_guard = scopeguard(&keychain, &taken_pointer);
    // And one the config itself names, for the inbound token.
    let named_pointer = Pointer::for_store(&named);
    keychain
        .set(&named_pointer, &Secret::new("the-inbound-token").unwrap())
        .unwrap();
    let _named_guard = scopeguard(&keychain, &named_pointer);
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let callosum = Callosum::start_with(
        dir.clone(),
        config(
            dir.path(),
            &format!("server:\n  bearer_token_keyring: {named_pointer}\n"),
        ),
    )
    .await;
    let add = |name: &str, token: &str| {
        let body = json!({"name": name, "type": "seren_memory", "url": store.url, "token": token});
        let client = callosum.client.clone();
        let url = format!("{}/stores", callosum.url);
        async move {
            client
                .post(url)
                .bearer_auth("the-inbound-token")
                .json(&body)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    assert_eq!(add(&taken, "mine-1").await, 200);
    assert_eq!(add(&named, "mine-2").await, 200);
    // Both were kept inline, and the entries are as they were.
    let saved = read_json(&callosum.overlay_path());
    assert_eq!(saved[0]["token"], "mine-1", "{saved}");
    assert_eq!(saved[1]["token"], "mine-2", "{saved}");
    let fresh = Keychain::new(Backend::Keyutils);
    assert_eq!(fresh.get(&taken_pointer).unwrap().expose(), "someone-elses");
    assert_eq!(
        fresh.get(&named_pointer).unwrap().expose(),
        "the-inbound-token"
    );
    // Removing the stores leaves the entries alone too.
    for name in [&taken, &named] {
        let status = callosum
            .client
            .delete(format!("{}/stores/{name}", callosum.url))
            .bearer_auth("the-inbound-token")
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 200);
    }
    let fresh = Keychain::new(Backend::Keyutils);
    assert!(fresh.get(&taken_pointer).is_ok());
    assert!(fresh.get(&named_pointer).is_ok());
}

#[tokio::test]
async fn a_failed_overlay_write_takes_the_keychain_entry_back() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    // The overlay's directory is a file: the write fails after the token went to the keychain.
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let overlay = blocker.join("runtime-stores.json").display().to_string();
    let path = dir.path().join("seren-corpus-callosum.yaml");
    std::fs::write(&path, "").unwrap();
    let config = Config::parse_with(
        &path,
        "",
        &seren_corpus_callosum::config::Env::from_fn(move |name: &str| {
            (name == "SEREN_SCC_RUNTIME_STORES").then(|| overlay.clone())
        }),
        Some(Arc::new(Keychain::new(Backend::Keyutils))),
    )
    .unwrap();
    let callosum = Callosum::start_with(dir, config).await;
    let name = format!("rolled-back-{}", std::process::id());
    let (status, answer) = callosum
        .post(
            "/stores",
            json!({"name": name, "type": "seren_memory", "url": "http://127.0.0.1:9", "token": "t-1"}),
        )
        .await;
    assert_eq!(status, 500, "{answer}");
    assert!(
        Keychain::new(Backend::Keyutils)
            .get(&Pointer::for_store(&name))
            .is_err(),
        "nothing changed, the keychain included"
    );
}
