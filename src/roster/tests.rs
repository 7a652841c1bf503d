//! The roster's tests: a roster built over a config and an overlay written to a temporary folder,
//! then read through its snapshot and changed through its writers.

use super::check::check_new_store;
use super::live::Roster;
use crate::api::{NewStore, RefusalKind};
use crate::config::Config;
use crate::store;
use crate::store::clients::Clients;
use serde_json::Value;
use std::sync::Arc;

fn roster(yaml: &str, overlay: Option<&str>) -> (Roster, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seren-corpus-callosum.yaml");
    if let Some(text) = overlay {
        std::fs::write(dir.path().join("runtime-stores.json"), text).unwrap();
    }
    let config = Config::parse(&path, yaml, &crate::config::Env::none()).unwrap();
    (
        Roster::new(Arc::new(config), Clients::new(false).unwrap()),
        dir,
    )
}

fn statuses(roster: &Roster) -> Vec<(String, bool, String)> {
    roster
        .fan()
        .rows
        .iter()
        .map(|r| (r.name.clone(), r.managed, r.status.to_string()))
        .collect()
}

const TWO: &str = "federation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://127.0.0.1:1\n    - name: episodic\n      type: seren_memory\n      url: http://127.0.0.1:2\n      enabled: false\n    - name: weird\n      type: quantum_brain\n      url: http://127.0.0.1:3\n    - name: facts\n      type: seren_memory\n      url: http://127.0.0.1:4\n";

#[tokio::test]
async fn a_program_in_the_overlay_is_skipped_and_a_store_kept_across_changes_is_the_same() {
    let (roster, _dir) = roster(
        "federation:\n  stores:\n    - name: graph\n      type: mcp\n      url: http://127.0.0.1:9/mcp\n      tool: find\n",
        Some(r#"[{"name":"sneaky","type":"mcp","command":"sh","args":["-c","true"],"tool":"t"}]"#),
    );
    let s = statuses(&roster);
    assert_eq!(s[0], ("graph".into(), false, "active".into()));
    assert_eq!(
        s[1],
        (
            "sneaky".into(),
            true,
            "skipped: invalid entry: runtime overlay entry 0 names a command; a store that runs a program can only be written in the config file".into()
        )
    );
    let before = roster.fan().bound[0].clone();
    roster
        .add(NewStore {
            name: "more".into(),
            kind: "seren_loci".into(),
            url: "http://127.0.0.1:10".into(),
            ..NewStore::default()
        })
        .await
        .unwrap();
    // The MCP store's session (and its server, were it spawned) lives through the change.
    assert!(Arc::ptr_eq(&before, &roster.fan().bound[0]));
}

#[test]
fn binds_in_order_and_reports_why_not() {
    let (roster, _dir) = roster(
        TWO,
        Some(
            r#"[{"name":"extra","type":"seren_memory","url":"http://127.0.0.1:5"},{"name":"facts","type":"seren_loci","url":"http://x"},{"name":"bad","type":"seren_loci"},{"type":7}]"#,
        ),
    );
    let s = statuses(&roster);
    assert_eq!(s[0], ("facts".into(), false, "active".into()));
    assert_eq!(s[1], ("episodic".into(), false, "disabled".into()));
    assert!(
        s[2].2
            .starts_with("skipped: unknown store type 'quantum_brain'"),
        "{s:?}"
    );
    assert!(s[3].2.starts_with("skipped: duplicate name"), "{s:?}");
    assert_eq!(s[4], ("extra".into(), true, "active".into()));
    assert!(
        s[5].1 && s[5].2.starts_with("skipped: duplicate name"),
        "base wins: {s:?}"
    );
    assert_eq!(s[6].2, "skipped: invalid entry: missing url");
    assert!(s[7].2.contains("invalid entry"), "{s:?}");
    let fan = roster.fan();
    let bound: Vec<_> = fan.bound.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(bound, ["facts", "extra"]);
    assert_eq!(fan.skipped().len(), 5, "disabled is not skipped");
}

#[tokio::test]
async fn add_and_remove_write_the_overlay_and_swap_the_fan() {
    let (roster, dir) = roster(TWO, None);
    let new = |name: &str| NewStore {
        name: format!("  {name} "),
        kind: "seren_memory".into(),
        url: "http://127.0.0.1:9/".into(),
        ..NewStore::default()
    };
    assert_eq!(roster.add(new("xyz")).await.unwrap(), 2);
    let file = std::fs::read_to_string(dir.path().join("runtime-stores.json")).unwrap();
    let saved: Value = serde_json::from_str(&file).unwrap();
    assert_eq!(saved[0]["name"], "xyz");
    assert_eq!(saved[0]["url"], "http://127.0.0.1:9");
    assert_eq!(
        roster.add(new("xyz")).await.unwrap_err().kind,
        RefusalKind::Conflict
    );
    assert_eq!(
        roster.add(new("facts")).await.unwrap_err().kind,
        RefusalKind::Conflict
    );
    assert_eq!(
        roster.add(new("episodic")).await.unwrap_err().kind,
        RefusalKind::Conflict,
        "disabled names are taken too"
    );
    assert_eq!(
        roster.remove("facts").await.unwrap_err().kind,
        RefusalKind::BadRequest
    );
    assert_eq!(
        roster.remove("nope").await.unwrap_err().kind,
        RefusalKind::NotFound
    );
    assert_eq!(roster.remove("xyz").await.unwrap(), 1);
    let file = std::fs::read_to_string(dir.path().join("runtime-stores.json")).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&file).unwrap(),
        Value::Array(vec![])
    );
}

#[tokio::test]
async fn a_corrupt_overlay_is_never_overwritten() {
    let (roster, dir) = roster(TWO, Some("[{\"name\": oops"));
    let fan = roster.fan();
    assert!(
        fan.overlay_error
            .as_deref()
            .unwrap()
            .contains("not valid JSON")
    );
    let refusal = roster
        .add(NewStore {
            name: "x".into(),
            kind: "seren_memory".into(),
            url: "http://127.0.0.1:9".into(),
            ..NewStore::default()
        })
        .await
        .unwrap_err();
    assert_eq!(refusal.kind, RefusalKind::Conflict);
    assert!(
        refusal.detail.contains("runtime-stores.json"),
        "{}",
        refusal.detail
    );
    assert_eq!(
        roster.remove("x").await.unwrap_err().kind,
        RefusalKind::Conflict
    );
    let text = std::fs::read_to_string(dir.path().join("runtime-stores.json")).unwrap();
    assert_eq!(text, "[{\"name\": oops");
}

#[test]
fn new_stores_are_checked_with_clear_messages() {
    let check = |name: &str, kind: &str, url: &str, weight: Option<f64>, floor: Option<f64>| {
        check_new_store(NewStore {
            name: name.into(),
            kind: kind.into(),
            url: url.into(),
            weight,
            floor,
            token: None,
            ..NewStore::default()
        })
        .map(|e| e.name)
        .map_err(|r| (r.kind, r.detail))
    };
    assert_eq!(
        check(" a.b_c-1 ", "seren_loci", "http://x/", None, None),
        Ok("a.b_c-1".into())
    );
    let refused = |r: Result<String, (RefusalKind, String)>, needle: &str| {
        let (kind, detail) = r.unwrap_err();
        assert_eq!(kind, RefusalKind::BadRequest, "{detail}");
        assert!(detail.contains(needle), "{needle}: {detail}");
    };
    refused(
        check("  ", "seren_loci", "http://x", None, None),
        "name is required",
    );
    refused(check("a", "seren_loci", " ", None, None), "url is required");
    refused(
        check("a b", "seren_loci", "http://x", None, None),
        "must be 1-64 characters",
    );
    refused(
        check(&"a".repeat(65), "seren_loci", "http://x", None, None),
        "1-64",
    );
    refused(
        check("a", "seren_loci", "file:///etc/passwd", None, None),
        "http:// or https://",
    );
    refused(
        check("a", "quantum_brain", "http://x", None, None),
        "unknown store type 'quantum_brain'; known types: [\"mcp\", \"seren_callosum\", \"seren_loci\", \"seren_memory\"]",
    );
    refused(
        check("a", "seren_loci", "http://x", Some(0.0), None),
        "weight",
    );
    refused(
        check("a", "seren_loci", "http://x", Some(f64::NAN), None),
        "weight",
    );
    refused(
        check("a", "seren_loci", "http://x", None, Some(2.0)),
        "floor",
    );
}

#[test]
fn an_overlay_entry_never_names_a_variable_or_a_keychain_entry_not_its_own() {
    let (roster, _dir) = roster(
        "server:\n  keyring: none\nfederation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://127.0.0.1:1\n      token_keyring: seren-corpus-callosum/taken\n",
        Some(
            r#"[{"name":"env","type":"seren_loci","url":"http://127.0.0.1:2","token_env":"HOME"},
                {"name":"alias","type":"seren_loci","url":"http://127.0.0.1:2","token":"t","bearer_token_env":"HOME"},
                {"name":"other","type":"seren_loci","url":"http://127.0.0.1:2","bearer_token_keyring":"seren-test/inbound"},
                {"name":"taken","type":"seren_loci","url":"http://127.0.0.1:2","token_keyring":"seren-corpus-callosum/taken"},
                {"name":"ours","type":"seren_loci","url":"http://127.0.0.1:2","token_keyring":"seren-corpus-callosum/ours"},
                {"name":"blank","type":"seren_loci","url":"http://127.0.0.1:2","token_env":" "}]"#,
        ),
    );
    let s = statuses(&roster);
    let variable = |i: usize, key: &str| {
        format!(
            "skipped: invalid entry: runtime overlay entry {i} names {key}, an environment variable; a store in the runtime overlay never reads the service's environment: write the store in the config file, or add it again with its token"
        )
    };
    let keychain = |i: usize, key: &str, name: &str| {
        format!(
            "skipped: invalid entry: runtime overlay entry {i} names {key}, a keychain entry the callosum did not make for this store; from the runtime overlay only seren-corpus-callosum/{name} is read (when the config does not name it): write the store in the config file, or add it again with its token"
        )
    };
    assert_eq!(s[1], ("env".into(), true, variable(0, "token_env")));
    assert_eq!(
        s[2],
        ("alias".into(), true, variable(1, "bearer_token_env"))
    );
    assert_eq!(
        s[3],
        (
            "other".into(),
            true,
            keychain(2, "bearer_token_keyring", "other")
        )
    );
    assert_eq!(
        s[4],
        ("taken".into(), true, keychain(3, "token_keyring", "taken")),
        "the config's own entry is the config's"
    );
    // The entry the callosum keeps for the store is read (here there is no keychain, so the
    // store is skipped, closed, for that reason); a blank variable names nothing.
    assert!(s[5].2.starts_with("skipped: token_keyring: "), "{s:?}");
    assert_eq!(s[6], ("blank".into(), true, "active".into()));
}

#[test]
fn a_key_a_store_added_here_does_not_take_is_refused_by_name() {
    let check = |body: Value| {
        let new: NewStore = crate::api::decode_value(body).unwrap();
        check_new_store(new)
            .map(|entry| entry.name)
            .map_err(|r| (r.kind, r.detail))
    };
    let base = serde_json::json!({"name": "a", "type": "seren_loci", "url": "http://x"});
    let with = |key: &str, value: Value| {
        let mut body = base.clone();
        body[key] = value;
        body
    };
    let taken = "a store added here takes name, type, url, weight, floor, token, description, identity_key, and for type mcp also preset, tool, query_arg, query_list, limit_arg, limit_max, arguments, shape, hits, id, content, score, distance";
    for key in [
        "token_env",
        "bearer_token_env",
        "token_keyring",
        "bearer_token_keyring",
    ] {
        assert_eq!(
            check(with(key, "HOME".into())),
            Err((
                RefusalKind::BadRequest,
                format!(
                    "'{key}' is refused: a store added at run time never reads the service's environment or keychain by name; give the token itself as token (it is kept in the OS keychain when one is at hand); {taken}"
                )
            ))
        );
    }
    for key in ["timeout_s", "options", "enabled", "made_up\n"] {
        let (kind, detail) = check(with(key, 1.into())).unwrap_err();
        assert_eq!(kind, RefusalKind::BadRequest);
        assert_eq!(
            detail,
            format!(
                "unknown key {}; {taken}; any other setting (timeout_s, enabled, options, ...) is written in the config file",
                crate::text::escaped(key)
            )
        );
    }
    assert!(
        check(with("bearer_token", "t".into()))
            .unwrap_err()
            .1
            .starts_with("'bearer_token' is not taken here: give the token as token")
    );
    // Every key that is taken still is, mcp mapping keys included.
    assert_eq!(check(with("token", "t".into())), Ok("a".into()));
    let mcp = serde_json::json!({"name": "m", "type": "mcp", "url": "http://x/mcp", "preset": "callosum",
        "tool": "search", "query_arg": "q", "limit_arg": "n", "limit_max": 5, "arguments": {},
        "hits": "/hits", "id": "/id", "content": "/content", "score": "/score", "weight": 1, "floor": 0,
        "query_list": false, "shape": "json", "distance": "/d"});
    assert_eq!(check(mcp), Ok("m".into()));
}

#[test]
fn the_keys_refusals_name_are_the_keys_the_schema_shows() {
    let schema = serde_json::to_value(schemars::schema_for!(NewStore)).unwrap();
    let mut shown: Vec<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut named: Vec<&str> = (NewStore::KEYS.iter())
        .chain(store::mcp::TYPE.options)
        .copied()
        .collect();
    shown.sort_unstable();
    named.sort_unstable();
    assert_eq!(shown, named);
}

#[test]
fn a_mistyped_overlay_entry_is_skipped_without_quoting_its_value() {
    let (roster, _dir) = roster(
        "",
        Some(r#"[{"name":"x","type":"seren_loci","url":"http://x","token":84736251}]"#),
    );
    let fan = roster.fan();
    assert_eq!(
        fan.skipped()[0].reason,
        "invalid entry: token: invalid type: integer, expected a string"
    );
}

#[tokio::test]
async fn the_roster_holds_at_most_max_stores() {
    let (roster, _dir) = roster(
        "federation:\n  max_stores: 2\n  stores:\n    - name: a\n      type: seren_loci\n      url: http://127.0.0.1:1\n    - name: b\n      type: seren_loci\n      url: http://127.0.0.1:1\n    - name: c\n      type: seren_loci\n      url: http://127.0.0.1:1\n",
        None,
    );
    let s = statuses(&roster);
    assert_eq!(
        s[2].2,
        "skipped: the roster is full: federation.max_stores is 2"
    );
    assert_eq!(roster.fan().bound.len(), 2);
    let refusal = roster
        .add(NewStore {
            name: "d".into(),
            kind: "seren_memory".into(),
            url: "http://127.0.0.1:9".into(),
            ..NewStore::default()
        })
        .await
        .unwrap_err();
    assert_eq!(refusal.kind, RefusalKind::Conflict);
    assert!(
        refusal
            .detail
            .starts_with("the roster is full: 2 stores (federation.max_stores)"),
        "{}",
        refusal.detail
    );
}
