//! Property-based fuzzing of every parser that reads outside input: the config file, the runtime
//! overlay, and each store protocol's answer decoding. The property is always the same: any input
//! gives a value or a clear error, never a panic. `PROPTEST_CASES` sets how many inputs each runs
//! (256 by default, as in CI).

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use seren_corpus_callosum::config::Config;
use seren_corpus_callosum::roster::Roster;
use seren_corpus_callosum::store;
use std::path::Path;
use std::sync::Arc;

/// Any JSON value, a few levels deep, with the numbers and strings stores get wrong.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[a-z0-9 ._/-]{0,12}".prop_map(Value::String),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A JSON object shaped like a store hit: the real keys, with any values.
fn hit_like() -> impl Strategy<Value = Value> {
    let keys = prop::sample::subsequence(
        vec![
            "id",
            "content",
            "tier",
            "topic",
            "score",
            "raw_distance",
            "metadata",
            "surroundings",
            "matched_via",
            "project",
            "key",
            "value",
            "why",
            "match_kind",
            "source",
            "store",
            "store_rank",
            "base_relevance",
            "native_score",
        ],
        0..19,
    );
    (keys, prop::collection::vec(json_value(), 19)).prop_map(|(keys, values)| {
        Value::Object(
            keys.into_iter()
                .map(str::to_owned)
                .zip(values)
                .collect::<Map<_, _>>(),
        )
    })
}

/// YAML text built from the config's real keys with wrong and right values mixed.
fn yamlish() -> impl Strategy<Value = String> {
    let scalar = prop_oneof![
        Just("60".to_owned()),
        Just("-1".to_owned()),
        Just("0".to_owned()),
        Just("1.5".to_owned()),
        Just(".nan".to_owned()),
        Just("true".to_owned()),
        Just("off".to_owned()),
        Just("~".to_owned()),
        Just("\"http://127.0.0.1:9\"".to_owned()),
        Just("[1, 2]".to_owned()),
        Just("{a: 1}".to_owned()),
        "[a-z]{0,8}",
    ];
    let key = prop::sample::select(vec![
        "host",
        "port",
        "bearer_token",
        "allow_open_lan",
        "k",
        "n_results",
        "fetch_multiplier",
        "per_store_timeout_s",
        "breaker_failures",
        "name",
        "type",
        "url",
        "weight",
        "floor",
        "enabled",
        "token_env",
        "timeout_s",
        "options",
        "max_in_flight",
        "header_timeout_s",
    ]);
    let section = prop::sample::select(vec!["server", "tls", "federation", "updates"]);
    let entry = prop::collection::vec((key.clone(), scalar.clone()), 0..6);
    (
        prop::collection::vec((section, prop::collection::vec((key, scalar), 0..5)), 0..4),
        prop::collection::vec(entry, 0..3),
    )
        .prop_map(|(sections, stores)| {
            let mut text = String::new();
            for (section, pairs) in sections {
                text.push_str(&format!("{section}:\n"));
                for (k, v) in pairs {
                    text.push_str(&format!("  {k}: {v}\n"));
                }
            }
            if !stores.is_empty() {
                text.push_str("federation:\n  stores:\n");
                for entry in stores {
                    text.push_str("    -");
                    if entry.is_empty() {
                        text.push_str(" {}\n");
                    }
                    for (i, (k, v)) in entry.iter().enumerate() {
                        let indent = if i == 0 { " " } else { "      " };
                        text.push_str(&format!("{indent}{k}: {v}\n"));
                    }
                }
            }
            text
        })
}

proptest! {
    #[test]
    fn the_config_parser_never_panics_on_any_text(text in any::<String>()) {
        let _ = Config::parse(Path::new("fuzz.yaml"), &text, &seren_corpus_callosum::config::Env::none());
    }

    #[test]
    fn the_config_parser_never_panics_on_near_miss_yaml(text in yamlish()) {
        match Config::parse(Path::new("fuzz.yaml"), &text, &seren_corpus_callosum::config::Env::none()) {
            Ok(config) => {
                // Whatever it accepted is in range.
                prop_assert!(config.federation.knobs.k >= 1);
                prop_assert!((1..=200).contains(&config.federation.knobs.n_results));
                for entry in config.federation.stores.iter().flatten() {
                    prop_assert!(entry.weight.is_finite() && entry.weight > 0.0);
                    prop_assert!((0.0..=1.0).contains(&entry.floor));
                }
            }
            Err(error) => prop_assert!(error.to_string().contains("fuzz.yaml")),
        }
    }

    #[test]
    fn any_overlay_file_binds_what_it_can_and_reports_the_rest(entries in prop::collection::vec(
        prop_oneof![json_value(), hit_like(), Just(json!({"name": "ok", "type": "seren_memory", "url": "http://127.0.0.1:9"}))],
        0..8,
    )) {
        let dir = tempfile::tempdir().unwrap();
        let overlay = dir.path().join("runtime-stores.json");
        std::fs::write(&overlay, serde_json::to_vec(&entries).unwrap()).unwrap();
        let config = Config::parse(&dir.path().join("c.yaml"), "", &seren_corpus_callosum::config::Env::none()).unwrap();
        let roster = Roster::new(Arc::new(config), seren_corpus_callosum::store::clients::Clients::new(false).unwrap());
        let fan = roster.fan();
        prop_assert!(fan.overlay_error.is_none());
        prop_assert_eq!(fan.rows.len(), entries.len(), "every entry shows as a row");
        prop_assert!(fan.bound.len() <= 1, "only the one valid name can bind (once)");
    }

    #[test]
    fn any_overlay_bytes_are_loaded_or_refused(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let dir = tempfile::tempdir().unwrap();
        let overlay = dir.path().join("runtime-stores.json");
        std::fs::write(&overlay, &bytes).unwrap();
        let _ = seren_corpus_callosum::overlay::load(&overlay);
    }

    #[test]
    fn every_protocol_decodes_any_bytes_without_panicking(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        for kind in http_types() {
            let protocol = store::build(kind, &Map::new()).unwrap();
            let _ = protocol.decode(&bytes, 100);
        }
    }

    #[test]
    fn every_mcp_preset_reads_any_result_without_panicking(
        document in json_value(),
        hits in prop::collection::vec(prop_oneof![hit_like(), json_value()], 0..8),
    ) {
        for preset in store::mcp::preset::names() {
            let options = json!({"preset": preset});
            let spec = store::mcp::Spec::parse(options.as_object().unwrap()).unwrap();
            let _ = spec.mapping.read(&document, 100);
            let wrapped = json!({"hits": hits.clone(), "entities": hits.clone()});
            if let Ok(read) = spec.mapping.read(&wrapped, 100) {
                prop_assert!(read.len() <= hits.len());
            }
        }
    }

    #[test]
    fn every_protocol_decodes_any_answer_shape(
        hits in prop::collection::vec(prop_oneof![hit_like(), json_value()], 0..8),
        extra in json_value(),
    ) {
        let body = serde_json::to_vec(&json!({"query": "q", "hits": hits, "extra": extra})).unwrap();
        for kind in http_types() {
            let protocol = store::build(kind, &Map::new()).unwrap();
            match protocol.decode(&body, 100) {
                Ok(decoded) => prop_assert_eq!(decoded.len(), hits.len()),
                Err(reason) => prop_assert!(!reason.is_empty()),
            }
        }
    }
}

/// The store types that speak an HTTP protocol (every type but `mcp`).
fn http_types() -> Vec<&'static str> {
    store::TYPES
        .iter()
        .filter(|t| matches!(t.reach, store::Reach::Http { .. }))
        .map(|t| t.name)
        .collect()
}
