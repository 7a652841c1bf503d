//! The configuration's tests: defaults, the Python file, errors naming file, key and line,
//! environment overrides, token precedence, names, urls, caps.

use super::*;
use crate::keychain::Pointer;
use std::time::Duration;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(
        Path::new("/etc/scc/seren-corpus-callosum.yaml"),
        text,
        &crate::config::Env::none(),
    )
}

fn parse_env(text: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::parse(
        Path::new("/etc/scc/seren-corpus-callosum.yaml"),
        text,
        &crate::config::Env::from_fn(move |name: &str| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        }),
    )
}

fn error(text: &str) -> String {
    parse(text)
        .expect_err("the config should be refused")
        .to_string()
}

#[test]
fn empty_file_gives_the_documented_defaults() {
    let config = parse("").unwrap();
    assert_eq!(config.server.host, "127.0.0.1");
    assert_eq!(config.server.port, 7423);
    assert!(config.server.token.is_none());
    assert!(!config.server.allow_open_lan);
    assert_eq!(config.federation.knobs.k, 60);
    assert_eq!(config.federation.knobs.n_results, 10);
    assert_eq!(config.federation.knobs.fetch_multiplier, 2);
    assert_eq!(
        config.federation.knobs.per_store_timeout,
        Duration::from_secs(5)
    );
    assert!(config.federation.stores.is_empty());
    assert_eq!(
        config.overlay_path,
        Path::new("/etc/scc/runtime-stores.json")
    );
    // A document that is only `null` or a comment is empty too.
    assert!(
        parse("# nothing yet\n")
            .unwrap()
            .federation
            .stores
            .is_empty()
    );
    assert!(parse("~\n").unwrap().federation.stores.is_empty());
}

#[test]
fn the_seed_example_parses() {
    let config = parse(
        "federation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://localhost:7422\n    - name: episodic\n      type: seren_memory\n      url: http://localhost:7420/\n    - name: project-xyz          # a dedicated memory\n      type: seren_memory\n      url: http://localhost:7430\n",
    )
    .unwrap();
    let names: Vec<_> = config
        .federation
        .stores
        .iter()
        .map(|s| s.as_ref().unwrap().name.clone())
        .collect();
    assert_eq!(names, ["facts", "episodic", "project-xyz"]);
    let episodic = config.federation.stores[1].as_ref().unwrap();
    assert_eq!(
        episodic.endpoint.url().unwrap().as_str(),
        "http://localhost:7420"
    );
    assert_eq!(episodic.weight, 1.0);
    assert_eq!(episodic.floor, 0.0);
    assert!(episodic.enabled);
}

#[test]
fn a_python_5_3_file_starts_with_warnings() {
    let config = parse(
        "server:\n  host: 127.0.0.1\n  port: 7423\n  bearer_token: \"\"\n  bearer_token_env: \"\"\n  bearer_token_keyring: \"\"\n  allow_open_lan: false\ntls:\n  trust_system_store: false\nupdates:\n  enabled: true\n  check_interval_hours: 6\nfederation:\n  k: 60\n  n_results: 10\n  fetch_multiplier: 2\n  per_store_timeout_s: 5.0\n  fusion_mode: rrf\n  authority_margin: 0.035\n  min_per_store: 1\n  edges_enabled: true\n  edge_budget: 3\n  satellite_edges_enabled: true\n  satellite_budget: 3\n  hops: 1\n  budget_tokens: null\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://localhost:7422\n      weight: 1.0\n      floor: 0.0\n      bearer_token_env: LOCI_TOKEN\n",
    )
    .unwrap();
    let joined = config.warnings.join("\n");
    for key in ["updates", "federation.fusion_mode"] {
        assert!(
            joined.contains(&format!("'{key}'")),
            "no warning for {key}: {joined}"
        );
    }
    // The packet's keys are implemented: read, not warned about, and 5.3.0's packet is on.
    assert!(!joined.contains("federation.hops"), "{joined}");
    assert!(!joined.contains("authority_margin"), "{joined}");
    let shaping = &config.federation.knobs.shaping;
    assert_eq!(
        *shaping,
        crate::packet::Shaping::python_5_3(),
        "the file sets 5.3.0's defaults"
    );
    let facts = config.federation.stores[0].as_ref().unwrap();
    assert_eq!(facts.token_env.as_deref(), Some("LOCI_TOKEN"));
    assert!(
        facts.options.is_empty(),
        "the alias must not land in options"
    );
}

#[test]
fn unknown_keys_are_named_and_store_extras_go_to_options() {
    let config = parse(
        "sever:\n  port: 1\nfederation:\n  kk: 3\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://x\n      project: jetson\n      wieght: 2\n",
    )
    .unwrap();
    let joined = config.warnings.join("\n");
    assert!(joined.contains("unknown key 'sever'"), "{joined}");
    assert!(joined.contains("unknown key 'federation.kk'"), "{joined}");
    assert!(
        joined.contains("'wieght' is not a setting of seren_loci stores"),
        "{joined}"
    );
    assert!(
        !joined.contains("'project'"),
        "project is a Loci option: {joined}"
    );
    let facts = config.federation.stores[0].as_ref().unwrap();
    assert_eq!(facts.options["project"], "jetson");
}

#[test]
fn a_wrong_type_names_file_key_and_line() {
    let message = error("federation:\n  k: sixty\n");
    assert!(
        message.contains("/etc/scc/seren-corpus-callosum.yaml"),
        "{message}"
    );
    assert!(message.contains("federation.k"), "{message}");
    assert!(message.contains("line 2"), "{message}");

    let message = error(
        "federation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://x\n      weight: heavy\n",
    );
    assert!(message.contains("federation.stores[0].weight"), "{message}");
    assert!(message.contains("line 6"), "{message}");

    let message = error("server:\n  port: 99999\n");
    assert!(
        message.contains("server.port") && message.contains("line 2"),
        "{message}"
    );

    let message = error("federation: [1, 2]\n");
    assert!(message.contains("federation"), "{message}");

    let message = error("server:\n  port: [7423\n");
    assert!(message.contains("line"), "{message}");
}

#[test]
fn a_wrong_type_never_quotes_the_value_but_names_file_key_and_line() {
    let store = |line: &str| {
        format!(
            "federation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://x\n      {line}\n"
        )
    };
    let cases = [
        (
            store("weight: \"TOPSECRET123\""),
            "federation.stores[0].weight: invalid type: string, expected f64 at line 6 column 15",
        ),
        (
            "federation:\n  k: \"TOPSECRET123\"\n".to_owned(),
            "federation.k: invalid type: string, expected u32 at line 2 column 6",
        ),
        (
            "server:\n  allow_open_lan: TOPSECRET123\n".to_owned(),
            "server.allow_open_lan: invalid value: string, expected true or false",
        ),
        (
            "server:\n  port: 99999123\n".to_owned(),
            "server.port: invalid value: integer, expected u16 at line 2",
        ),
        // A value that mimics serde's own words, and one that mimics the mark.
        (
            store("weight: 'TOPSECRET123\", expected f64'"),
            "federation.stores[0].weight: invalid type: string, expected f64 at line 6",
        ),
        (
            store("floor: TOPSECRET123 at line 1 column 1"),
            "federation.stores[0].floor: invalid type: string, expected f64 at line 6",
        ),
        // A token pasted where a keychain entry's name goes.
        (
            store("token_keyring: TOPSECRET123"),
            "store 'facts': token_keyring is not a keychain entry; write \"service/user\"",
        ),
        (
            "server:\n  bearer_token_keyring: TOPSECRET123\n".to_owned(),
            "server.bearer_token_keyring is not a keychain entry",
        ),
    ];
    for (yaml, expected) in cases {
        let message = error(&yaml);
        assert!(
            message.starts_with("config file /etc/scc/seren-corpus-callosum.yaml: "),
            "{message}"
        );
        assert!(message.contains(expected), "{expected}: {message}");
        assert!(!message.contains("TOPSECRET"), "{message}");
    }
}

#[test]
fn out_of_range_values_name_the_store_and_field() {
    let store = |extra: &str| {
        error(&format!(
            "federation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://x\n      {extra}\n"
        ))
    };
    for (extra, needle) in [
        ("weight: 0", "store 'facts': weight"),
        ("weight: -1", "store 'facts': weight"),
        ("weight: .nan", "store 'facts': weight"),
        ("weight: .inf", "store 'facts': weight"),
        ("floor: 1.5", "store 'facts': floor"),
        ("floor: -0.1", "store 'facts': floor"),
        ("timeout_s: 0", "store 'facts': timeout_s"),
    ] {
        let message = store(extra);
        assert!(message.contains(needle), "{extra}: {message}");
    }
    assert!(error("federation:\n  k: 0\n").contains("federation.k"));
    assert!(error("federation:\n  k: 1.5\n").contains("federation.k"));
    assert!(error("federation:\n  n_results: 0\n").contains("federation.n_results"));
    assert!(error("federation:\n  per_store_timeout_s: -2\n").contains("per_store_timeout_s"));
    assert!(error("federation:\n  breaker_cooldown_s: 0\n").contains("breaker_cooldown_s"));
    assert!(
        error("server:\n  max_calls_per_store: 0\n")
            .contains("server.max_calls_per_store must be within 1..=1000000, got 0")
    );
    assert!(
        error("server:\n  max_in_flight: 0\n")
            .contains("server.max_in_flight must be within 1..=1000000, got 0")
    );
    // A huge cap once panicked in tokio's semaphore (exit 101) instead of being refused.
    assert!(
        error("server:\n  max_connections: 9000000000000000000\n")
            .contains("server.max_connections must be within 1..=1000000")
    );
    assert!(error("server:\n  header_timeout_s: -1\n").contains("server.header_timeout_s"));
    let message = error("federation:\n  breaker_cooldown_s: 30\n  breaker_max_cooldown_s: 10\n");
    assert!(message.contains("must not be below"), "{message}");
    assert!(error("federation:\n  breaker_failures: -1\n").contains("federation.breaker_failures"));
    let breaker = parse("federation:\n  breaker_failures: 0\n  breaker_cooldown_s: 90\n")
        .unwrap()
        .federation
        .breaker;
    assert_eq!(
        (
            breaker.failures,
            breaker.cooldown.as_secs(),
            breaker.max_cooldown.as_secs()
        ),
        (0, 90, 90)
    );
    let message = error(
        "federation:\n  stores:\n    - name: f\n      type: seren_loci\n      url: ftp://x\n",
    );
    assert!(message.contains("store 'f': url"), "{message}");
}

#[test]
fn entries_missing_a_required_field_are_kept_as_invalid() {
    let config = parse(
        "federation:\n  stores:\n    - name: a\n      type: seren_loci\n    - type: seren_loci\n      url: http://x\n    - name: '  '\n      url: http://x\n      type: t\n",
    )
    .unwrap();
    let invalid: Vec<_> = config
        .federation
        .stores
        .iter()
        .map(|s| s.as_ref().unwrap_err().clone())
        .collect();
    assert_eq!(invalid[0].name, "a");
    assert_eq!(invalid[0].reason, "invalid entry: missing url");
    assert_eq!(invalid[1].name, "federation.stores[1]");
    assert_eq!(invalid[1].reason, "invalid entry: missing name");
    assert_eq!(invalid[2].name, "federation.stores[2]");
}

#[test]
fn yaml_1_2_keeps_off_as_a_name_and_numbers_become_names() {
    let config = parse(
        "federation:\n  stores:\n    - name: off\n      type: seren_loci\n      url: http://x\n    - name: 7\n      type: seren_loci\n      url: http://y\n",
    )
    .unwrap();
    assert_eq!(config.federation.stores[0].as_ref().unwrap().name, "off");
    assert_eq!(config.federation.stores[1].as_ref().unwrap().name, "7");
}

#[test]
fn environment_overrides_win_and_bad_values_are_named() {
    let config = parse_env(
        "server:\n  port: 1000\n  bearer_token_env: MY_TOKEN\n",
        &[
            ("SEREN_SCC_PORT", "9999"),
            ("SEREN_SCC_HOST", "0.0.0.0"),
            ("SEREN_SCC_ALLOW_OPEN_LAN", "yes"),
            ("MY_TOKEN", "s3cret"),
            ("SEREN_SCC_RUNTIME_STORES", "/tmp/o.json"),
        ],
    )
    .unwrap();
    assert_eq!(config.server.port, 9999);
    assert_eq!(config.server.host, "0.0.0.0");
    assert!(config.server.allow_open_lan);
    assert_eq!(config.server.token.as_ref().unwrap().expose(), "s3cret");
    let hosts = parse_env(
        "server:\n  allowed_hosts: [a.example]\n",
        &[("SEREN_SCC_ALLOWED_HOSTS", " b.example, ,c.example")],
    )
    .unwrap();
    assert_eq!(hosts.server.allowed_hosts, ["b.example", "c.example"]);
    assert_eq!(config.overlay_path, Path::new("/tmp/o.json"));

    let inline = parse_env(
        "server:\n  bearer_token: file\n",
        &[("SEREN_SCC_BEARER_TOKEN", "env")],
    )
    .unwrap();
    assert_eq!(inline.server.token.unwrap().expose(), "env");

    let err = parse_env("", &[("SEREN_SCC_PORT", "http")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("SEREN_SCC_PORT") && err.contains("\"http\""),
        "{err}"
    );
    let err = parse_env("", &[("SEREN_SCC_ALLOW_OPEN_LAN", "maybe")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("SEREN_SCC_ALLOW_OPEN_LAN"), "{err}");

    // A variable the file names but nobody set fails closed: no token, and an error that
    // stops `serve` (a service that silently runs open is the hole this guards).
    let unset = parse("server:\n  bearer_token_env: NOPE_NOT_SET\n").unwrap();
    assert!(unset.server.token.is_none());
    assert_eq!(
        unset.server.token_error.as_deref(),
        Some("server.bearer_token_env names NOPE_NOT_SET, which is not set")
    );
}

#[test]
fn an_empty_variable_is_no_override() {
    // `SEREN_SCC_BEARER_TOKEN=` (an unset template variable) once replaced the file's token
    // with nothing, which turned auth off.
    let config = parse_env(
        "server:\n  bearer_token: file-token\n  allow_open_lan: true\n  allowed_hosts: [a.example]\n",
        &[
            ("SEREN_SCC_BEARER_TOKEN", ""),
            ("SEREN_SCC_BEARER_TOKEN_ENV", "  "),
            ("SEREN_SCC_ALLOW_OPEN_LAN", ""),
            ("SEREN_SCC_ALLOWED_HOSTS", ""),
            ("SEREN_SCC_HOST", " "),
            ("SEREN_SCC_PORT", ""),
            ("SEREN_SCC_RUNTIME_STORES", ""),
        ],
    )
    .unwrap();
    assert_eq!(config.server.token.unwrap().expose(), "file-token");
    assert!(config.server.allow_open_lan);
    assert_eq!(config.server.allowed_hosts, ["a.example"]);
    assert_eq!(config.server.host, "127.0.0.1");
    assert_eq!(config.server.port, 7423);
}

#[test]
fn the_host_and_origin_lists() {
    let config = parse(
        "server:\n  mcp_allowed_hosts: [old.example]\n  allowed_hosts: [new.example]\n  allowed_origins: ['https://App.example/', 'http://localhost:3000']\n",
    )
    .unwrap();
    assert_eq!(config.server.allowed_hosts, ["new.example", "old.example"]);
    assert!(
        config
            .warnings
            .iter()
            .any(|w| w.contains("mcp_allowed_hosts is now server.allowed_hosts")),
        "{:?}",
        config.warnings
    );
    assert_eq!(
        config.server.allowed_origins,
        ["https://app.example", "http://localhost:3000"]
    );
    let old = parse_env("", &[("SEREN_SCC_MCP_ALLOWED_HOSTS", "x.lan")]).unwrap();
    assert_eq!(old.server.allowed_hosts, ["x.lan"]);
    let message = error("server:\n  allowed_origins: ['app.example']\n");
    assert!(
        message.contains("server.allowed_origins") && message.contains("scheme://host"),
        "{message}"
    );
    let message = error("server:\n  allowed_origins: ['*']\n");
    assert!(message.contains("every web page"), "{message}");
    let err = parse_env(
        "",
        &[("SEREN_SCC_ALLOWED_ORIGINS", "https://ok.example,/nope")],
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("SEREN_SCC_ALLOWED_ORIGINS") && err.contains("/nope"),
        "{err}"
    );
}

/// A keychain in memory, for the precedence rules; the real backends are tested against the
/// kernel keyring and GNOME Keyring in `tests/it/keychain.rs` and `tests/keychain/`.
struct Memory(std::sync::Mutex<std::collections::HashMap<Pointer, String>>);

impl crate::keychain::Store for Memory {
    fn get(&self, pointer: &Pointer) -> Result<Secret, crate::keychain::KeychainError> {
        self.0
            .lock()
            .unwrap()
            .get(pointer)
            .and_then(|s| Secret::new(s.clone()))
            .ok_or_else(|| crate::keychain::KeychainError::NotFound(pointer.clone()))
    }
    fn set(
        &self,
        pointer: &Pointer,
        secret: &Secret,
    ) -> Result<(), crate::keychain::KeychainError> {
        self.0
            .lock()
            .unwrap()
            .insert(pointer.clone(), secret.expose().to_owned());
        Ok(())
    }
    fn delete(&self, pointer: &Pointer) -> Result<(), crate::keychain::KeychainError> {
        self.0.lock().unwrap().remove(pointer);
        Ok(())
    }
    fn persistent(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "memory"
    }
}

fn with_keychain(text: &str, vars: &[(&str, &str)], entries: &[(&str, &str)]) -> Config {
    let map = entries
        .iter()
        .map(|(p, s)| (Pointer::parse(p).unwrap(), s.to_string()))
        .collect();
    let keychain = Arc::new(Keychain::with_store(Arc::new(Memory(
        std::sync::Mutex::new(map),
    ))));
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::parse_with(
        Path::new("/etc/scc/seren-corpus-callosum.yaml"),
        text,
        &crate::config::Env::from_fn(move |name: &str| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        }),
        Some(keychain),
    )
    .unwrap()
}

#[test]
fn inbound_token_precedence_is_inline_then_keychain_then_env() {
    let keyed = &[("scc/inbound", "from-keychain")];
    let env = &[("MY_TOKEN", "from-env")];
    let all = "server:\n  bearer_token: inline\n  bearer_token_keyring: scc/inbound\n  bearer_token_env: MY_TOKEN\n";
    let token = |c: Config| {
        (
            c.server.token.map(|t| t.expose().to_owned()),
            c.server.token_error,
        )
    };
    assert_eq!(
        token(with_keychain(all, env, keyed)),
        (Some("inline".into()), None)
    );
    let no_inline = "server:\n  bearer_token_keyring: scc/inbound\n  bearer_token_env: MY_TOKEN\n";
    let config = with_keychain(no_inline, env, keyed);
    assert_eq!(
        config.server.token_source,
        TokenSource::Keychain(Pointer::parse("scc/inbound").unwrap())
    );
    assert_eq!(token(config), (Some("from-keychain".into()), None));
    // The keychain entry is missing: that fails closed, and never falls through to the env.
    assert_eq!(
        token(with_keychain(no_inline, env, &[])),
        (
            None,
            Some("server.bearer_token_keyring: keychain entry 'scc/inbound' not found".into())
        )
    );
    let env_only = "server:\n  bearer_token_env: MY_TOKEN\n";
    assert_eq!(
        token(with_keychain(env_only, env, keyed)),
        (Some("from-env".into()), None)
    );
    // The environment names the pointer too, and wins over the file's.
    let config = with_keychain(
        "server:\n  bearer_token_keyring: scc/nope\n",
        &[("SEREN_SCC_BEARER_TOKEN_KEYRING", "scc/inbound")],
        keyed,
    );
    assert_eq!(token(config), (Some("from-keychain".into()), None));
    let message = error("server:\n  bearer_token_keyring: just-a-name\n");
    assert!(
        message.contains("server.bearer_token_keyring") && message.contains("service/user"),
        "{message}"
    );
    let message = error("server:\n  keyring: vault\n");
    assert!(message.contains("server.keyring"), "{message}");
}

#[test]
fn store_keychain_pointers_are_read_with_their_alias() {
    let config = parse(
        "federation:\n  stores:\n    - name: a\n      type: seren_loci\n      url: http://x\n      bearer_token_keyring: loci/a\n    - name: b\n      type: seren_loci\n      url: http://x\n      token_keyring: loci/b\n      bearer_token_keyring: loci/ignored\n",
    )
    .unwrap();
    let stores: Vec<_> = config
        .federation
        .stores
        .iter()
        .map(|s| s.as_ref().unwrap())
        .collect();
    assert_eq!(
        stores[0].token_keyring,
        Some(Pointer::parse("loci/a").unwrap())
    );
    assert_eq!(
        stores[1].token_keyring,
        Some(Pointer::parse("loci/b").unwrap())
    );
    assert!(stores[0].has_auth() && stores[0].options.is_empty());
    assert!(
        config
            .warnings
            .iter()
            .any(|w| w.contains("'bearer_token_keyring' ignored")),
        "{:?}",
        config.warnings
    );
    let message = error(
        "federation:\n  stores:\n    - name: a\n      type: seren_loci\n      url: http://x\n      token_keyring: nope\n",
    );
    assert!(message.contains("store 'a': token_keyring"), "{message}");
    assert_eq!(
        stores[0].to_json()["token_keyring"],
        "loci/a",
        "the overlay keeps the pointer"
    );
}

#[test]
fn one_name_rule_for_every_store() {
    for good in ["facts", "a.b_c-1", "7", "off", "_x", "A"] {
        assert!(check_name(good).is_ok(), "{good}");
    }
    for bad in [
        ".",
        "..",
        ".hidden",
        "",
        "a b",
        "a\nb",
        "a\u{202e}b",
        "<b>x</b>",
        "é",
    ] {
        assert!(check_name(bad).is_err(), "{bad:?}");
    }
    assert!(check_name(&"a".repeat(64)).is_ok());
    assert!(check_name(&"a".repeat(65)).is_err());
    // In the YAML, a bad name skips the entry; the row is labelled by its place and the name
    // is quoted escaped, so a newline cannot forge a log line.
    let config = parse(
        "federation:\n  stores:\n    - name: \"evil\\nINFO forged\"\n      type: seren_loci\n      url: http://x\n    - name: \"a\\u202eb\"\n      type: seren_loci\n      url: http://x\n    - name: '..'\n      type: seren_loci\n      url: http://x\n",
    )
    .unwrap();
    let invalid: Vec<_> = config
        .federation
        .stores
        .iter()
        .map(|s| s.as_ref().unwrap_err().clone())
        .collect();
    assert_eq!(invalid[0].name, "federation.stores[0]");
    assert_eq!(
        invalid[0].reason,
        "invalid entry: name 'evil\\u{a}INFO forged' must be 1-64 characters of A-Z a-z 0-9 . _ - and not start with '.'"
    );
    assert!(
        invalid[1].reason.contains("'a\\u{202e}b'"),
        "{}",
        invalid[1].reason
    );
    assert_eq!(invalid[2].name, "federation.stores[2]");
    for entry in &invalid {
        assert!(!entry.reason.contains('\n') && !entry.reason.contains('\u{202e}'));
    }
}

#[test]
fn store_urls_are_called_as_they_read() {
    let url = |text: &str| StoreUrl::parse(text);
    // A backslash reads as part of the name but is called as a path separator.
    assert_eq!(
        url("http://127.0.0.1:18004\\@evil").unwrap_err(),
        "must not contain a backslash"
    );
    let with_query = url("http://host:9/base/?api_key=X").unwrap();
    assert_eq!(with_query.as_str(), "http://host:9/base/?api_key=X");
    assert_eq!(with_query.shown(), "http://host:9/base?***");
    assert_eq!(
        with_query.join("/search").as_str(),
        "http://host:9/base/search?api_key=X"
    );
    let with_user = url("https://user:pw@host/").unwrap();
    assert_eq!(with_user.as_str(), "https://user:pw@host");
    assert_eq!(with_user.shown(), "https://***@host");
    assert_eq!(with_user.join("/search").path(), "/search");
    assert_eq!(url("http://h/p@x").unwrap().shown(), "http://h/p@x");
    assert_eq!(
        url("http://h").unwrap().join("/search").as_str(),
        "http://h/search"
    );
    for (bad, why) in [
        ("ftp://x", "http:// or https://"),
        ("http://", "http:// or https://"),
        ("http://:80", "valid url"),
        ("http://a b", "spaces"),
        ("http://h/#frag", "fragment"),
        ("http://[::1", "valid url"),
    ] {
        let error = url(bad).unwrap_err();
        assert!(error.contains(why), "{bad}: {error}");
    }
    let message = error(
        "federation:\n  stores:\n    - name: f\n      type: seren_loci\n      url: 'http://a\\@b'\n",
    );
    assert!(
        message.contains("store 'f': url must not contain a backslash"),
        "{message}"
    );
}

#[test]
fn tokens_must_fit_a_bearer_header() {
    assert_eq!(
        Secret::bearer(" tok-en\n").unwrap().unwrap().expose(),
        "tok-en"
    );
    assert!(Secret::bearer("  ").unwrap().is_none());
    for bad in ["sec ret", "sec\r\nX-Injected: 1", "sëcret"] {
        let why = Secret::bearer(bad).unwrap_err();
        assert!(why.contains("bearer header"), "{bad:?}: {why}");
        assert!(!why.contains("sec"), "the token is not quoted: {why}");
    }
    let message = error(
        "federation:\n  stores:\n    - name: f\n      type: seren_loci\n      url: http://x\n      token: 'a b'\n",
    );
    assert!(
        message.contains("store 'f': token has characters"),
        "{message}"
    );
    let config = parse_env("", &[("SEREN_SCC_BEARER_TOKEN", "two words")]).unwrap();
    assert!(config.server.token.is_none());
    assert!(
        config
            .server
            .token_error
            .unwrap()
            .starts_with("server.bearer_token has characters")
    );
}

#[test]
fn the_roster_cap_is_a_checked_setting() {
    assert_eq!(parse("").unwrap().federation.max_stores, DEFAULT_MAX_STORES);
    assert!(error("federation:\n  max_stores: 0\n").contains("federation.max_stores"));
    assert!(error("federation:\n  max_stores: 5000\n").contains("1..=1024"));
}

#[test]
fn the_old_mcp_session_cap_is_named_as_no_longer_read() {
    // MCP over HTTP keeps no sessions now; a file from before still starts, and says so.
    let config = parse("server:\n  max_mcp_sessions: 0\n").unwrap();
    let joined = config.warnings.join("\n");
    assert!(
        joined.contains("'server.max_mcp_sessions' is no longer read"),
        "{joined}"
    );
}

#[test]
fn truthy_words_are_accepted_for_flags() {
    assert!(
        parse("server:\n  allow_open_lan: \"on\"\n")
            .unwrap()
            .server
            .allow_open_lan
    );
    assert!(
        parse("tls:\n  trust_system_store: 1\n")
            .unwrap()
            .tls
            .trust_system_store
    );
    let message = error("server:\n  allow_open_lan: perhaps\n");
    assert!(
        message.contains("server.allow_open_lan") && message.contains("line 2"),
        "{message}"
    );
}

#[test]
fn secrets_never_show_in_debug_output() {
    let config = parse("server:\n  bearer_token: hunter2\n").unwrap();
    assert!(!format!("{config:?}").contains("hunter2"));
}

#[test]
fn loopback_hosts() {
    for host in [
        "127.0.0.1",
        "127.9.9.9",
        "localhost",
        "LOCALHOST",
        "::1",
        "[::1]",
    ] {
        assert!(is_loopback(host), "{host}");
    }
    for host in ["0.0.0.0", "192.168.1.4", "::", "example.com"] {
        assert!(!is_loopback(host), "{host}");
    }
}

#[test]
fn path_resolution_order() {
    let none = Env::none();
    let explicit = resolve_path(
        Some(Path::new("/x/c.yaml")),
        &Env::from_fn(|_| Some("/y/d.yaml".into())),
    );
    assert_eq!(explicit, Path::new("/x/c.yaml"));
    let from_env = resolve_path(
        None,
        &Env::from_fn(|n: &str| (n == "SEREN_SCC_CONFIG").then(|| "/y/d.yaml".into())),
    );
    assert_eq!(from_env, Path::new("/y/d.yaml"));
    let fallback = resolve_path(None, &none);
    assert!(fallback.ends_with(FILE_NAME));
    // With neither, a file in the working directory, else the platform's config directory.
    // The expectation is worked out by hand from the XDG rule (Linux), not with the crate the
    // code uses, so the test can tell the code wrong.
    let expected = if Path::new(FILE_NAME).exists() {
        PathBuf::from(FILE_NAME)
    } else if cfg!(target_os = "linux") {
        let config_home = std::env::var("XDG_CONFIG_HOME")
            .ok()
            .filter(|dir| Path::new(dir).is_absolute())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".config"));
        config_home.join("seren-corpus-callosum").join(FILE_NAME)
    } else {
        fallback.clone()
    };
    assert_eq!(fallback, expected);
    assert_eq!(
        overlay_path(Path::new("c.yaml"), &none),
        Path::new("runtime-stores.json")
    );
}

#[test]
fn a_file_with_three_mistakes_says_three_things() {
    let message = error(
        "federation:\n  k: 0\n  n_results: 500\n  stores:\n    - name: f\n      type: seren_loci\n      url: http://x\n      weight: -1\nserver:\n  max_in_flight: 0\n",
    );
    assert!(message.contains("4 problems"), "{message}");
    for problem in [
        "federation.k must be a whole number >= 1, got 0",
        "federation.n_results must be within 1..=200, got 500",
        "store 'f': weight must be a finite number > 0, got -1",
        "server.max_in_flight must be within 1..=1000000, got 0",
    ] {
        assert!(
            message.contains(&format!("\n  - {problem}")),
            "{problem}: {message}"
        );
    }
    // One mistake is one sentence, as before.
    assert_eq!(
        error("federation:\n  k: 0\n"),
        "config file /etc/scc/seren-corpus-callosum.yaml: federation.k must be a whole number >= 1, got 0"
    );
}

#[test]
fn a_stores_token_variable_is_read_from_the_injected_environment() {
    let config = parse_env(
        "federation:\n  stores:\n    - name: f\n      type: seren_loci\n      url: http://x\n      token_env: F_TOKEN\n",
        &[("F_TOKEN", "from-the-test")],
    )
    .unwrap();
    let entry = config.federation.stores[0].as_ref().unwrap();
    assert_eq!(
        config.store_token(entry).unwrap().unwrap().expose(),
        "from-the-test"
    );
    let bare = parse(
        "federation:\n  stores:\n    - name: f\n      type: seren_loci\n      url: http://x\n      token_env: F_TOKEN\n",
    )
    .unwrap();
    let entry = bare.federation.stores[0].as_ref().unwrap();
    assert_eq!(
        bare.store_token(entry).unwrap_err(),
        "token_env F_TOKEN is not set"
    );
}

#[test]
fn an_mcp_store_reads_its_program_and_mapping() {
    let config = parse(
        "federation:\n  stores:\n    - name: graph\n      type: mcp\n      preset: server-memory\n      command: node\n      args: [/opt/kg/dist/index.js, 8080]\n      env: {MEMORY_FILE_PATH: /data/m.jsonl, WORKERS: 2}\n    - name: notes\n      type: mcp\n      url: http://127.0.0.1:9/mcp/\n      tool: find\n",
    )
    .unwrap();
    let graph = config.federation.stores[0].as_ref().unwrap();
    let Endpoint::Program(program) = &graph.endpoint else {
        panic!("not a program: {graph:?}");
    };
    assert_eq!(program.command, "node");
    assert_eq!(program.args, ["/opt/kg/dist/index.js", "8080"]);
    assert_eq!(program.env["WORKERS"], "2");
    assert_eq!(graph.options["preset"], "server-memory");
    assert_eq!(graph.endpoint.shown(), "stdio: node");
    let notes = config.federation.stores[1].as_ref().unwrap();
    // An MCP endpoint is called exactly as written, its `/` too.
    assert_eq!(
        notes.endpoint.url().unwrap().exact().as_str(),
        "http://127.0.0.1:9/mcp/"
    );
    assert_eq!(notes.to_json()["url"], "http://127.0.0.1:9/mcp/");
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn a_wrong_mcp_entry_stops_the_start_naming_the_store_and_key() {
    let store = |lines: &str| {
        error(&format!(
            "federation:\n  stores:\n    - name: graph\n      type: {lines}\n"
        ))
    };
    let cases = [
        (
            "mcp\n      url: http://h/mcp\n      tool: t\n      hits: entities",
            "store 'graph': hits: must be empty or start with '/', got \"entities\"",
        ),
        (
            "mcp\n      url: http://h/mcp\n      tool: t\n      content: \"{/name\"",
            "store 'graph': content: ",
        ),
        (
            "mcp\n      url: http://h/mcp",
            "store 'graph': tool is required (the MCP tool to call), or a preset: ",
        ),
        (
            "mcp\n      url: http://h/mcp\n      command: node\n      tool: t",
            "store 'graph': url and command: give exactly one",
        ),
        (
            "seren_loci\n      command: node",
            "store 'graph': command is only for stores of type mcp, not seren_loci",
        ),
        (
            "mcp\n      url: http://h/mcp\n      tool: t\n      args: [x]",
            "store 'graph': args goes with command (a server over stdio), not url",
        ),
        (
            "mcp\n      command: node\n      args: {a: 1}\n      tool: t",
            "args: invalid type: map",
        ),
        (
            "mcp\n      url: http://h/mcp\n      tool: t\n      tls_ca_file: /etc/ca.pem",
            "store 'graph': tls_ca_file goes with an https:// url; this store's url is http://",
        ),
        (
            "mcp\n      command: node\n      tool: t\n      tls_ca_file: /etc/ca.pem",
            "store 'graph': tls_ca_file goes with an https:// url, not command",
        ),
        (
            "seren_memory\n      url: http://h\n      tls_ca_file: ca.pem",
            "store 'graph': tls_ca_file goes with an https:// url; this store's url is http://",
        ),
    ];
    for (lines, expected) in cases {
        let message = store(lines);
        assert!(message.contains(expected), "{lines}\n{message}");
    }
    // An https url is taken for an mcp store, with or without its own CA file.
    for lines in [
        "mcp\n      url: https://h/mcp\n      tool: t",
        "mcp\n      url: https://h/mcp\n      tool: t\n      tls_ca_file: /etc/ca.pem",
    ] {
        let yaml = format!("federation:\n  stores:\n    - name: graph\n      type: {lines}\n");
        let config = parse(&yaml).unwrap_or_else(|e| panic!("{lines}: {e}"));
        let entry = config.federation.stores[0].as_ref().unwrap();
        assert_eq!(entry.endpoint.shown(), "https://h/mcp");
        assert!(
            entry.options.get("tls_ca_file").is_none(),
            "a key of its own"
        );
    }
    // Without url or command, the entry is skipped, as one without a url is.
    let config =
        parse("federation:\n  stores:\n    - name: graph\n      type: mcp\n      tool: t\n")
            .unwrap();
    assert_eq!(
        config.federation.stores[0].as_ref().unwrap_err().reason,
        "invalid entry: missing url (or command, for a server over stdio)"
    );
}

#[test]
fn docs_mcp_snippet_binds() {
    // docs/stores.md's MCP block, as printed: four stores, each a preset with its tool and transport.
    let page = include_str!("../../docs/stores.md");
    let section = &page[page.find("### Fanning any MCP server").unwrap()..];
    let start = section.find("```yaml\n").unwrap() + "```yaml\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    let config = parse(block).unwrap();
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let stores: Vec<&StoreEntry> = (config.federation.stores.iter())
        .map(|s| s.as_ref().unwrap())
        .collect();
    let tools: Vec<(String, bool)> = stores
        .iter()
        .map(|entry| {
            let spec = crate::store::mcp::Spec::parse(&entry.options).unwrap();
            (spec.tool, matches!(entry.endpoint, Endpoint::Program(_)))
        })
        .collect();
    assert_eq!(
        tools,
        [
            ("search_nodes".to_owned(), true),
            ("search_loci".to_owned(), false),
            ("recall".to_owned(), false),
            ("search".to_owned(), false)
        ]
    );
    assert_eq!(stores[3].token_env.as_deref(), Some("TEAM_CALLOSUM_TOKEN"));
}

#[test]
fn docs_memory_server_presets_snippet_binds() {
    // docs/stores.md's block of the memory servers people run: each preset with its scope.
    let page = include_str!("../../docs/stores.md");
    let section = &page[page.find("A preset's fixed arguments sit under").unwrap()..];
    let start = section.find("```yaml\n").unwrap() + "```yaml\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    let config = parse(block).unwrap();
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let specs: Vec<(String, String)> = (config.federation.stores.iter())
        .map(|s| s.as_ref().unwrap())
        .map(|entry| {
            let spec = crate::store::mcp::Spec::parse(&entry.options).unwrap();
            let scope = spec.arguments("q", 5);
            let mut scope: Vec<&str> = scope.keys().map(String::as_str).collect();
            scope.sort_unstable();
            (spec.tool, scope.join(","))
        })
        .collect();
    assert_eq!(
        specs,
        [
            (
                "search_notes".into(),
                "output_format,page_size,project,query".into()
            ),
            (
                "chroma_query_documents".into(),
                "collection_name,n_results,query_texts".into()
            ),
            ("qdrant-find".into(), "collection_name,query".into()),
            (
                "search_memory_facts".into(),
                "group_ids,max_facts,query".into()
            ),
            ("search_memories".into(), "limit,query".into()),
        ]
    );
}

#[cfg(feature = "postgres")]
#[test]
fn the_overlay_url_must_be_postgres_and_is_never_shown_with_its_password() {
    let config =
        parse("server:\n  overlay_url: postgres://scc:hunter2@db.example:5433/scc\n").unwrap();
    assert_eq!(config.overlay_shown(), "postgres://***@db.example:5433/scc");
    let from_env = parse_env(
        "",
        &[(
            "SEREN_SCC_OVERLAY_URL",
            "postgresql://db.example/scc?sslmode=disable",
        )],
    )
    .unwrap();
    assert_eq!(from_env.overlay_shown(), "postgresql://db.example/scc?***");
    assert!(parse("").unwrap().overlay_url.is_none());
    for (url, needle) in [
        (
            "http://db.example/scc",
            "expected a postgres:// or postgresql:// url",
        ),
        (
            "postgres://h/db?sslmode=require&password=hunter2",
            "sslmode=require is not supported",
        ),
        (
            "postgres://h:notaport/db?password=hunter2",
            "not a PostgreSQL url",
        ),
    ] {
        let error = parse(&format!("server:\n  overlay_url: '{url}'\n"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("server.overlay_url") && error.contains(needle),
            "{error}"
        );
        assert!(!error.contains("hunter2"), "{error}");
    }
}

/// The one duration rule, as every `*_s` key reads it: `(seconds, Ok(duration) or the error's
/// words)`. A value that rounds to a zero `Duration` is refused, not stored as 0.
#[test]
fn every_duration_goes_through_one_rule_with_a_floor_and_a_ceiling() {
    fn check(seconds: f64, expected: Result<Duration, &str>) {
        match (store::checked_seconds(seconds), expected) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{seconds:e}"),
            (Err(got), Err(want)) => assert!(got.contains(want), "{seconds:e}: {got}"),
            (got, want) => panic!("{seconds:e}: got {got:?}, want {want:?}"),
        }
    }
    let range = "must be a number of seconds within 0.001..=3600 (1 ms to an hour)";
    check(5.0, Ok(Duration::from_secs(5)));
    check(0.001, Ok(Duration::from_millis(1)));
    check(0.25, Ok(Duration::from_millis(250)));
    check(3600.0, Ok(Duration::from_secs(3600)));
    check(1e-300, Err(&format!("{range}, got 1e-300")));
    check(5e-324, Err(&format!("{range}, got 5e-324")));
    check(0.0000001, Err(&format!("{range}, got 0.0000001")));
    check(0.000999, Err(range));
    check(0.0, Err(&format!("{range}, got 0")));
    check(-0.0, Err(range));
    check(-1.0, Err(&format!("{range}, got -1")));
    check(3600.001, Err(range));
    check(1e300, Err(&format!("{range}, got 1e300")));
    check(f64::NAN, Err(&format!("{range}, got NaN")));
    check(f64::INFINITY, Err(&format!("{range}, got inf")));
}

/// Each `*_s` key of the file is read through that rule, and named with its file and key.
#[test]
fn every_duration_key_of_the_file_refuses_what_rounds_to_zero() {
    let store =
        "federation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://x\n";
    for (yaml, key) in [
        (
            format!("{store}      timeout_s: 1e-300\n"),
            "store 'facts': timeout_s",
        ),
        (
            "federation:\n  per_store_timeout_s: 0.0000001\n".to_owned(),
            "federation.per_store_timeout_s",
        ),
        (
            "federation:\n  breaker_cooldown_s: 1e-300\n".to_owned(),
            "federation.breaker_cooldown_s",
        ),
        (
            "federation:\n  breaker_max_cooldown_s: 1e-300\n".to_owned(),
            "federation.breaker_max_cooldown_s",
        ),
        (
            "server:\n  header_timeout_s: 0.0000001\n".to_owned(),
            "server.header_timeout_s",
        ),
        (
            "federation:\n  per_store_timeout_s: 86400\n".to_owned(),
            "federation.per_store_timeout_s",
        ),
    ] {
        let message = error(&yaml);
        assert!(
            message.contains("/etc/scc/seren-corpus-callosum.yaml")
                && message.contains(key)
                && message.contains("0.001..=3600"),
            "{yaml}: {message}"
        );
    }
}

/// A config file past the cap is refused, read no further than one byte past it, naming the file
/// and the cap; one at the cap is read.
#[test]
fn a_config_file_past_the_cap_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seren-corpus-callosum.yaml");
    let head = "federation:\n  k: 7\n#";
    let at_cap = format!(
        "{head}{}",
        " ".repeat(MAX_CONFIG_BYTES as usize - head.len())
    );
    std::fs::write(&path, &at_cap).unwrap();
    assert_eq!(
        Config::load_from(&path, &Env::none())
            .unwrap()
            .federation
            .knobs
            .k,
        7
    );
    std::fs::write(&path, format!("{at_cap} ")).unwrap();
    let message = Config::load_from(&path, &Env::none())
        .unwrap_err()
        .to_string();
    assert!(
        message.contains(&path.display().to_string()) && message.contains("1 MiB cap"),
        "{message}"
    );
}

#[test]
fn the_starter_loads_as_it_is_and_with_its_examples_uncommented() {
    let config = parse(STARTER).unwrap();
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert!(config.federation.stores.is_empty());
    // Uncommented as the file says (drop the `[]`, uncomment the entries), every example binds.
    let mut examples = String::new();
    let mut below = false;
    for line in STARTER.lines() {
        if line == "  stores: []" {
            continue;
        }
        if line.starts_with("  # Uncomment") {
            below = true;
            continue;
        }
        match line.strip_prefix("  # ") {
            Some(entry) if below => examples.push_str(&format!("  {entry}\n")),
            _ => examples.push_str(&format!("{line}\n")),
        }
    }
    let config = parse(&examples).unwrap();
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let names: Vec<String> = (config.federation.stores.iter())
        .map(|s| s.as_ref().unwrap().name.clone())
        .collect();
    assert_eq!(names, ["facts", "episodic", "graph"]);
}

#[test]
fn docs_https_snippet_parses() {
    // docs/stores.md's `tls_ca_file` entry.
    let page = include_str!("../../docs/stores.md");
    let section = &page[page.find("### Stores over https").unwrap()..];
    let start = section.find("```yaml\n").unwrap() + "```yaml\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    let config = parse(block).unwrap();
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let entry = config.federation.stores[0].as_ref().unwrap();
    assert_eq!(entry.endpoint.shown(), "https://notes.internal:8443/mcp");
    assert_eq!(
        entry.tls_ca_file.as_deref(),
        Some(std::path::Path::new("/etc/seren/internal-ca.pem"))
    );
}

#[test]
fn identity_is_a_knob_and_identity_key_a_checked_store_path() {
    let config = parse(
        "federation:\n  identity: key\n  stores:\n    - name: notes\n      type: seren_loci\n      url: http://x\n      identity_key: metadata.path\n    - name: facts\n      type: seren_loci\n      url: http://y\n",
    )
    .unwrap();
    assert_eq!(
        config.federation.knobs.identity,
        crate::identity::Identity::Key
    );
    let keys: Vec<Option<String>> = (config.federation.stores.iter())
        .map(|entry| {
            let entry = entry.as_ref().unwrap();
            assert!(entry.options.is_empty(), "identity_key is no option");
            entry.identity_key.as_ref().map(ToString::to_string)
        })
        .collect();
    assert_eq!(keys, [Some("metadata.path".to_owned()), None]);
    assert_eq!(
        parse("").unwrap().federation.knobs.identity,
        crate::identity::Identity::None
    );
    let message = error("federation:\n  identity: fuzzy\n");
    assert!(
        message.contains("unknown federation.identity 'fuzzy'; valid: ['none', 'key', 'content']"),
        "{message}"
    );
    for bad in ["meta.path", "metadata.", "path"] {
        let message = error(&format!(
            "federation:\n  stores:\n    - name: notes\n      type: seren_loci\n      url: http://x\n      identity_key: {bad}\n"
        ));
        assert!(
            message.contains("store 'notes': identity_key must be id, content or metadata.<name>"),
            "{bad}: {message}"
        );
    }
}
