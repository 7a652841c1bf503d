//! What the service refuses to take from where it does not belong: a token pointer in the
//! runtime overlay, a key `POST /stores` and `add_store` do not take, a NUL in an `mcp` store's
//! mapping, and the value of a mistyped config key in any message.

use crate::support::mcp::*;
use crate::support::process::{self, Server};
use crate::support::*;
use serde_json::{Value, json};
use seren_corpus_callosum::config::{Config, Env};
use std::sync::Arc;

const SECRET: &str = "s3cret-from-the-service-env";

/// The `status` of the `GET /stores` row named `name`.
fn status_of(stores: &Value, name: &str) -> String {
    stores["stores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == name)
        .unwrap_or_else(|| panic!("no row {name}: {stores}"))["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn an_overlay_row_that_names_a_variable_or_a_keychain_entry_is_skipped_and_never_called() {
    // The variable is set in the service's environment: a config store reads it (the control),
    // while overlay rows naming it, or a keychain entry, are skipped and their store never called.
    let trusted = StubStore::hits(memory_hits(&[("t1", 0.1)])).await;
    let target = StubStore::hits(memory_hits(&[("x1", 0.1)])).await;
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let row = |name: &str, key: &str, value: &str| json!({"name": name, "type": "seren_memory", "url": target.url, key: value});
    let overlay = json!([
        row("by-env", "token_env", "SCC_TEST_SECRET"),
        row("by-env-alias", "bearer_token_env", "SCC_TEST_SECRET"),
        row("by-keychain", "token_keyring", "login/root"),
        row("by-keychain-alias", "bearer_token_keyring", "login/root"),
    ]);
    std::fs::write(dir.path().join("runtime-stores.json"), overlay.to_string()).unwrap();
    let path = dir.path().join("seren-corpus-callosum.yaml");
    std::fs::write(
        &path,
        config_yaml(&[(
            "trusted",
            "seren_memory",
            &trusted.url,
            "token_env: SCC_TEST_SECRET",
        )]),
    )
    .unwrap();
    let env = Env::of(&[("SCC_TEST_SECRET", SECRET)]);
    let callosum = Callosum::start_with(dir, Config::load_from(&path, &env).unwrap()).await;

    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(status_of(&stores, "trusted"), "active", "{stores}");
    for (i, (name, key)) in [
        ("by-env", "token_env"),
        ("by-env-alias", "bearer_token_env"),
    ]
    .into_iter()
    .enumerate()
    {
        assert_eq!(
            status_of(&stores, name),
            format!(
                "skipped: invalid entry: runtime overlay entry {i} names {key}, an environment variable; a store in the runtime overlay never reads the service's environment: write the store in the config file, or add it again with its token"
            )
        );
    }
    for (i, (name, key)) in [
        ("by-keychain", "token_keyring"),
        ("by-keychain-alias", "bearer_token_keyring"),
    ]
    .into_iter()
    .enumerate()
    {
        // Skipped for what it names, before any keychain is asked (a read would fail otherwise).
        let status = status_of(&stores, name);
        assert!(
            status.starts_with(&format!(
                "skipped: invalid entry: runtime overlay entry {} names {key}, a keychain entry the callosum did not make for this store",
                i + 2
            )),
            "{status}"
        );
    }
    assert_eq!(stores["active"], 1);

    let (status, answer) = callosum.search("q", None).await;
    assert_eq!(status, 200);
    assert_eq!(answer["stores_searched"], json!(["trusted"]), "{answer}");
    assert_eq!(answer["skipped"].as_array().unwrap().len(), 4, "{answer}");
    let control = trusted.captured();
    assert_eq!(control.len(), 1);
    assert_eq!(
        control[0].authorization,
        Some(format!("Bearer {SECRET}")),
        "the variable is there to be read"
    );
    assert!(
        target.captured().is_empty(),
        "the overlay's url is never called: {:?}",
        target.captured()
    );
}

#[tokio::test]
async fn post_stores_and_add_store_refuse_a_key_they_do_not_take_by_name() {
    let callosum = Callosum::start("").await;
    let (status, _) = callosum
        .post(
            "/stores",
            json!({"name": "kept", "type": "seren_memory", "url": "http://127.0.0.1:9"}),
        )
        .await;
    assert_eq!(status, 200);
    let before = std::fs::read_to_string(callosum.overlay_path()).unwrap();
    let refused = [
        ("token_env", json!("HOME")),
        ("bearer_token_env", json!("HOME")),
        ("token_keyring", json!("login/root")),
        ("timeout_s", json!(30)),
        ("options", json!({"search_path": "/elsewhere"})),
        ("frobnicate", json!(true)),
    ];
    for (key, value) in &refused {
        let mut body = json!({"name": "new", "type": "seren_memory", "url": "http://127.0.0.1:9"});
        body[key] = value.clone();
        let (status, answer) = callosum.post("/stores", body).await;
        assert_eq!(status, 400, "{key}: {answer}");
        let detail = answer["detail"].as_str().unwrap();
        assert!(detail.contains(&format!("'{key}'")), "{detail}");
        assert!(
            detail.contains(
                "takes name, type, url, weight, floor, token, description, identity_key, and for type mcp also preset, tool"
            ),
            "the keys that are taken: {detail}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(callosum.overlay_path()).unwrap(),
        before,
        "the overlay is unchanged"
    );
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(stores["active"], 1, "{stores}");

    // The same words over MCP, as a tool error.
    let client = http_client(&callosum.url, None).await.unwrap();
    for key in ["token_env", "frobnicate"] {
        let mut args = json!({"name": "new", "type": "seren_memory", "url": "http://127.0.0.1:9"});
        args[key] = json!("HOME");
        let text = error_text(&call(&client, "add_store", args).await);
        assert!(
            text.starts_with(&format!("'{key}' "))
                || text.starts_with(&format!("unknown key '{key}'")),
            "{text}"
        );
        assert!(text.contains("takes name, type, url"), "{text}");
    }
    assert_eq!(
        std::fs::read_to_string(callosum.overlay_path()).unwrap(),
        before
    );
    // What is taken still is, an mcp store's mapping keys among them.
    let added = structured(
        &call(
            &client,
            "add_store",
            json!({"name": "graph", "type": "mcp", "url": "http://127.0.0.1:9/mcp", "tool": "find",
                   "limit_arg": "n", "limit_max": 5, "hits": "/hits", "weight": 0.5}),
        )
        .await,
    );
    assert_eq!(added["added"], "graph");
    let overlay = read_json(&callosum.overlay_path());
    assert_eq!(overlay[1]["options"]["limit_max"], 5, "{overlay}");
}

#[tokio::test]
async fn a_nul_in_an_mcp_stores_mapping_is_refused_naming_the_field() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    std::fs::write(
        dir.path().join("runtime-stores.json"),
        json!([{"name": "by-hand", "type": "mcp", "url": "http://127.0.0.1:9/mcp", "tool": "find\u{0}"}])
            .to_string(),
    )
    .unwrap();
    let callosum = Callosum::start_in(dir, "").await;
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(
        status_of(&stores, "by-hand"),
        "skipped: tool must not contain a NUL character (\\u0000)"
    );
    for (key, value) in [
        ("tool", json!("find\u{0}")),
        ("arguments", json!({"scope\u{0}": "a"})),
        ("content", json!("{/name}\u{0}")),
    ] {
        let mut body =
            json!({"name": "m", "type": "mcp", "url": "http://127.0.0.1:9/mcp", "tool": "find"});
        body[key] = value;
        let (status, answer) = callosum.post("/stores", body).await;
        assert_eq!(status, 400, "{key}: {answer}");
        assert_eq!(
            answer["detail"],
            format!("{key} must not contain a NUL character (\\u0000)")
        );
    }
    let client = http_client(&callosum.url, None).await.unwrap();
    let text = error_text(
        &call(
            &client,
            "add_store",
            json!({"name": "m", "type": "mcp", "url": "http://127.0.0.1:9/mcp", "tool": "a\u{0}b"}),
        )
        .await,
    );
    assert_eq!(text, "tool must not contain a NUL character (\\u0000)");
    let overlay = read_json(&callosum.overlay_path());
    assert_eq!(
        overlay.as_array().unwrap().len(),
        1,
        "nothing added: {overlay}"
    );
}

/// A config whose one store has `weight` quoted as a string that looks like a token.
const SECRET_WEIGHT: &str = "TOPSECRET123";

fn mistyped(head: &str) -> String {
    format!(
        "{head}federation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://127.0.0.1:9\n      weight: \"{SECRET_WEIGHT}\"\n"
    )
}

/// Holds `message` to naming the file, the key and its line, and never the value.
fn names_where_not_what(message: &str, file: &str) {
    assert!(message.contains(file), "the file: {message}");
    assert!(
        message
            .contains("federation.stores[0].weight: invalid type: string, expected f64 at line 9"),
        "the key and line: {message}"
    );
    assert!(!message.contains(SECRET_WEIGHT), "the value: {message}");
}

#[tokio::test]
async fn a_mistyped_config_value_is_never_quoted_at_start_check_reload_or_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let head = "server:\n  port: 0\n  watch: false\n";
    let config = process::write_config(dir.path(), &mistyped(head));
    for args in [
        vec!["check", "-c", config.as_str()],
        vec!["serve", "-c", config.as_str()],
    ] {
        let output = process::run(process::command(&args)).await;
        assert_eq!(output.status.code(), Some(78), "{args:?}");
        names_where_not_what(&String::from_utf8_lossy(&output.stderr), &config);
    }

    // Running, then edited into the mistake and told to reload: the log, `/stores` and `/knobs`.
    std::fs::write(&config, head).unwrap();
    let mut server = Server::start(process::command(&["serve", "-c", &config]));
    let url = process::listening_url(&server.wait_for("listening on"));
    std::fs::write(&config, mistyped(head)).unwrap();
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    names_where_not_what(&server.wait_for("config file not reloaded"), &config);
    let stores = process::get_json(&url, "/stores").await;
    names_where_not_what(stores["config_error"].as_str().unwrap(), &config);
    let knobs = process::get_json(&url, "/knobs").await;
    names_where_not_what(knobs["where"]["config_error"].as_str().unwrap(), &config);
    let log = server.stop();
    assert!(!log.contains(SECRET_WEIGHT), "{log}");
}

/// The binary run in `dir` with the trust list under `home` (its config dir on every system the
/// tests run on) and `SCC_TEST_SECRET` set.
fn in_planted_dir(
    dir: &std::path::Path,
    home: &std::path::Path,
    args: &[&str],
) -> std::process::Command {
    let mut command = process::command(args);
    command
        .current_dir(dir)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("SCC_TEST_SECRET", SECRET);
    command
}

#[tokio::test]
async fn a_config_found_in_the_working_directory_sends_no_secret_until_trusted() {
    // A cloned repository carries a seren-corpus-callosum.yaml naming a variable of the user's
    // environment and a url of the attacker's: found by search, the store is skipped and never
    // called; trusted, it reads the variable; edited, it needs trust again; named, it is the
    // user's own choice.
    let target = StubStore::hits(memory_hits(&[("x1", 0.1)])).await;
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let yaml = format!(
        "federation:\n  stores:\n    - name: planted\n      type: seren_memory\n      url: {}\n      token_env: SCC_TEST_SECRET\n",
        target.url
    );
    process::write_config(dir.path(), &yaml);
    let search = || in_planted_dir(dir.path(), home.path(), &["search", "anything"]);
    let output = process::run(search()).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        format!("{stdout}{stderr}").contains(
            "not called: seren-corpus-callosum.yaml was found in the working directory and is not trusted to read its token_env; if the file is yours, run `seren-corpus-callosum trust` there"
        ),
        "{stdout}{stderr}"
    );
    assert_eq!(target.accepted(), 0, "the planted store was called");

    // Trusted as it stands: the store reads its variable.
    let output = process::run(in_planted_dir(dir.path(), home.path(), &["trust"])).await;
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        said.contains("Trusted ") && said.contains("sha256 "),
        "{said}"
    );
    let output = process::run(search()).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let sent: Vec<_> = target
        .captured()
        .into_iter()
        .filter_map(|c| c.authorization)
        .collect();
    assert_eq!(sent, vec![format!("Bearer {SECRET}")]);

    // Edited, it is a new file: not trusted until the user says so again.
    process::write_config(dir.path(), &format!("{yaml}# one more line\n"));
    let output = process::run(search()).await;
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("is not trusted to read its token_env")
            || String::from_utf8_lossy(&output.stdout)
                .contains("is not trusted to read its token_env"),
        "{output:?}"
    );
    assert_eq!(
        target.captured().len(),
        1,
        "the edited file's store was called"
    );

    // Named, the file is the user's own choice.
    let output = process::run(in_planted_dir(
        dir.path(),
        home.path(),
        &["search", "-c", "seren-corpus-callosum.yaml", "anything"],
    ))
    .await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(target.captured().len(), 2);

    // Forgotten: skipped again, and forgetting twice says so.
    process::run(in_planted_dir(dir.path(), home.path(), &["trust"])).await;
    for said in ["is no longer trusted", "was not trusted; nothing changed"] {
        let forget = in_planted_dir(dir.path(), home.path(), &["trust", "--forget"]);
        let output = process::run(forget).await;
        assert!(
            String::from_utf8_lossy(&output.stdout).contains(said),
            "{output:?}"
        );
    }
    process::run(search()).await;
    assert_eq!(
        target.captured().len(),
        2,
        "a forgotten file's store was called"
    );
}

#[tokio::test]
async fn trust_names_what_it_could_not_do() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    // No file to trust.
    let output = process::run(in_planted_dir(dir.path(), home.path(), &["trust"])).await;
    assert_eq!(output.status.code(), Some(66));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("seren-corpus-callosum.yaml is not a file; nothing trusted"),
        "{output:?}"
    );
    // A trust list that cannot be read is never written over.
    process::write_config(dir.path(), "federation:\n  stores: []\n");
    let list_dir = home.path().join(".config/seren-corpus-callosum");
    std::fs::create_dir_all(&list_dir).unwrap();
    std::fs::write(list_dir.join("trusted-configs.json"), "{not json").unwrap();
    let output = process::run(in_planted_dir(dir.path(), home.path(), &["trust"])).await;
    assert_eq!(output.status.code(), Some(73), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("trusted-configs.json"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(list_dir.join("trusted-configs.json")).unwrap(),
        "{not json"
    );
}
