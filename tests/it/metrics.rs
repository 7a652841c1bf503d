//! `GET /metrics`: the exposition parsed line by line after searches against a healthy, a failing
//! and a hanging store; its gate (the token, or `server.public_metrics`); a removed store gone
//! from it; and nothing a caller sent (query, token) in it.

use crate::support::fault::{Fault, FaultStore};
use crate::support::*;
use serde_json::json;
use std::collections::HashMap;

const TOKEN: &str = "m3trics-t0ken";
const QUERY: &str = "what the user asked, word for word";

/// One scrape: its samples by series (name and labels, as written), and its `# TYPE` lines.
struct Exposition {
    text: String,
    samples: HashMap<String, f64>,
    types: HashMap<String, String>,
}

impl Exposition {
    /// Parses the text format 0.0.4: every line a comment (`# HELP`, `# TYPE`) or a sample
    /// `series value`; panics naming the first line that is neither.
    fn parse(text: String) -> Self {
        let mut samples = HashMap::new();
        let mut types = HashMap::new();
        let mut helped = Vec::new();
        for line in text.lines() {
            if let Some(help) = line.strip_prefix("# HELP ") {
                helped.push(help.split(' ').next().unwrap().to_owned());
            } else if let Some(kind) = line.strip_prefix("# TYPE ") {
                let (name, kind) = kind.split_once(' ').unwrap();
                assert_eq!(helped.last().map(String::as_str), Some(name), "HELP first");
                types.insert(name.to_owned(), kind.to_owned());
            } else {
                // The value follows the last space: a label value may hold spaces, never the
                // value's own.
                let (series, value) = line
                    .rsplit_once(' ')
                    .unwrap_or_else(|| panic!("not a sample: {line:?}"));
                let name = series.split('{').next().unwrap();
                assert!(
                    name.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':'),
                    "{line:?}"
                );
                let value: f64 = value
                    .parse()
                    .unwrap_or_else(|_| panic!("not a value: {line:?}"));
                assert!(
                    samples.insert(series.to_owned(), value).is_none(),
                    "a series written twice: {line:?}"
                );
            }
        }
        Self {
            text,
            samples,
            types,
        }
    }

    fn at(&self, series: &str) -> f64 {
        *self
            .samples
            .get(series)
            .unwrap_or_else(|| panic!("no {series} in\n{}", self.text))
    }

    fn store_calls(&self, store: &str, outcome: &str) -> f64 {
        self.at(&format!(
            r#"seren_callosum_store_calls_total{{store="{store}",outcome="{outcome}"}}"#
        ))
    }
}

async fn scrape(callosum: &Callosum, token: Option<&str>) -> (u16, String, String) {
    let mut request = callosum.client.get(format!("{}/metrics", callosum.url));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    (status, content_type, response.text().await.unwrap())
}

async fn search(callosum: &Callosum, query: &str) -> u16 {
    let response = callosum
        .client
        .post(format!("{}/search", callosum.url))
        .bearer_auth(TOKEN)
        .json(&json!({ "query": query }))
        .send()
        .await
        .unwrap();
    response.status().as_u16()
}

#[tokio::test]
async fn the_exposition_counts_each_store_by_outcome_and_reads_each_breaker() {
    let healthy = StubStore::hits(memory_hits(&[("m1", 0.1), ("m2", 0.2)])).await;
    let failing = StubStore::start(Behaviour::Status(500)).await;
    let hanging = FaultStore::start(Fault::Hang).await;
    let mut yaml = format!("server:\n  bearer_token: {TOKEN}\n");
    yaml.push_str(
        &config_yaml(&[
            ("a.b-c_d", "seren_memory", &healthy.url, ""),
            ("failing", "seren_memory", &failing.url, ""),
            ("hanging", "seren_memory", &hanging.url, ""),
        ])
        .replace("per_store_timeout_s: 2.0", "per_store_timeout_s: 0.3"),
    );
    let callosum = Callosum::start(&yaml).await;
    // Four searches one after another: the failing and the hanging store fail three times (the
    // breaker's default), and the fourth search skips them.
    for _ in 0..4 {
        assert_eq!(search(&callosum, QUERY).await, 200);
    }
    assert_eq!(search(&callosum, "  ").await, 422);

    let (status, content_type, text) = scrape(&callosum, Some(TOKEN)).await;
    assert_eq!(status, 200);
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    let scraped = Exposition::parse(text);
    for (family, kind) in [
        ("seren_callosum_build_info", "gauge"),
        ("seren_callosum_searches_total", "counter"),
        ("seren_callosum_search_duration_seconds", "histogram"),
        ("seren_callosum_in_flight_searches", "gauge"),
        ("seren_callosum_connections", "gauge"),
        ("seren_callosum_store_calls_total", "counter"),
        ("seren_callosum_store_call_duration_seconds", "histogram"),
        ("seren_callosum_store_breaker_state", "gauge"),
        ("seren_callosum_overlay_writes_total", "counter"),
    ] {
        assert_eq!(
            scraped.types.get(family).map(String::as_str),
            Some(kind),
            "{family}"
        );
    }
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        scraped.at(&format!(
            r#"seren_callosum_build_info{{version="{version}"}}"#
        )),
        1.0
    );
    assert_eq!(
        scraped.at(r#"seren_callosum_searches_total{outcome="answered"}"#),
        4.0
    );
    assert_eq!(
        scraped.at(r#"seren_callosum_searches_total{outcome="refused"}"#),
        1.0
    );
    assert_eq!(
        scraped.at("seren_callosum_search_duration_seconds_count"),
        5.0
    );
    assert_eq!(scraped.at("seren_callosum_in_flight_searches"), 0.0);
    assert!(
        scraped.at("seren_callosum_connections") >= 1.0,
        "this scrape's own"
    );

    // The store name with dots, a dash and an underscore is a label value as it is.
    assert_eq!(scraped.store_calls("a.b-c_d", "ok"), 4.0);
    assert_eq!(scraped.store_calls("failing", "status"), 3.0);
    assert_eq!(scraped.store_calls("failing", "circuit_open"), 1.0);
    assert_eq!(scraped.store_calls("hanging", "timeout"), 3.0);
    assert_eq!(scraped.store_calls("hanging", "circuit_open"), 1.0);
    for (store, outcome) in [
        ("a.b-c_d", "timeout"),
        ("a.b-c_d", "circuit_open"),
        ("failing", "ok"),
        ("hanging", "refused"),
    ] {
        assert_eq!(
            scraped.store_calls(store, outcome),
            0.0,
            "{store} {outcome}"
        );
    }
    let duration = |store: &str, series: &str| {
        scraped.at(&format!(
            r#"seren_callosum_store_call_duration_seconds_{series}{{store="{store}"{}}}"#,
            if series == "bucket" {
                r#",le="+Inf""#
            } else {
                ""
            }
        ))
    };
    assert_eq!(duration("a.b-c_d", "count"), 4.0);
    assert_eq!(duration("a.b-c_d", "bucket"), 4.0);
    assert_eq!(duration("hanging", "count"), 3.0);
    // A timeout takes at least the store's timeout (0.3 s).
    assert_eq!(
        scraped
            .at(r#"seren_callosum_store_call_duration_seconds_bucket{store="hanging",le="0.25"}"#),
        0.0
    );
    assert!(duration("hanging", "sum") >= 0.9);
    for (store, state) in [("a.b-c_d", 0.0), ("failing", 2.0), ("hanging", 2.0)] {
        assert_eq!(
            scraped.at(&format!(
                r#"seren_callosum_store_breaker_state{{store="{store}"}}"#
            )),
            state,
            "{store}"
        );
    }
    // Nothing the callers sent, and no store url.
    for secret in [QUERY, TOKEN, healthy.url.as_str(), "127.0.0.1"] {
        assert!(
            !scraped.text.contains(secret),
            "{secret} in\n{}",
            scraped.text
        );
    }

    // The health page's p50 over the last calls: the hanging store's is its timeout.
    let (_, health) = callosum.get("/health/stores").await;
    let row = |name: &str| {
        health["stores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["name"] == name)
            .unwrap()
            .clone()
    };
    assert!(
        row("hanging")["p50_latency"].as_f64().unwrap() >= 0.3,
        "{health}"
    );
    assert!(
        row("a.b-c_d")["p50_latency"].as_f64().unwrap() > 0.0,
        "{health}"
    );
}

#[tokio::test]
async fn metrics_need_the_token_unless_public_metrics_is_set() {
    let gated = Callosum::start(&format!("server:\n  bearer_token: {TOKEN}\n")).await;
    assert_eq!(scrape(&gated, None).await.0, 401);
    assert_eq!(scrape(&gated, Some("wrong")).await.0, 401);
    assert_eq!(scrape(&gated, Some(TOKEN)).await.0, 200);

    let yaml = format!("server:\n  bearer_token: {TOKEN}\n  public_metrics: true\n");
    let public = Callosum::start(&yaml).await;
    let (status, _, text) = scrape(&public, None).await;
    assert_eq!(status, 200);
    assert!(text.contains("seren_callosum_build_info"), "{text}");
    // Only /metrics opens: every other gated route still needs the token.
    let (status, _) = public.post("/search", json!({"query": "q"})).await;
    assert_eq!(status, 401);
    let (status, _) = public.get("/stores").await;
    assert_eq!(status, 401);

    // The same from the environment.
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let path = dir.path().join("seren-corpus-callosum.yaml");
    std::fs::write(&path, format!("server:\n  bearer_token: {TOKEN}\n")).unwrap();
    let env = seren_corpus_callosum::config::Env::of(&[("SEREN_SCC_PUBLIC_METRICS", "yes")]);
    let config = seren_corpus_callosum::config::Config::load_from(&path, &env).unwrap();
    let from_env = Callosum::start_with(dir, config).await;
    assert_eq!(scrape(&from_env, None).await.0, 200);
    assert_eq!(from_env.get("/stores").await.0, 401);
}

#[tokio::test]
async fn a_removed_store_leaves_the_exposition_and_overlay_writes_are_counted() {
    let store = StubStore::hits(memory_hits(&[("x1", 0.1)])).await;
    let callosum = Callosum::start(&config_yaml(&[("base", "seren_memory", &store.url, "")])).await;
    let add = json!({"name": "extra.1", "type": "seren_memory", "url": store.url});
    assert_eq!(callosum.post("/stores", add).await.0, 200);
    assert_eq!(callosum.search("q", None).await.0, 200);
    let (_, _, text) = scrape(&callosum, None).await;
    let scraped = Exposition::parse(text);
    assert_eq!(scraped.store_calls("extra.1", "ok"), 1.0);
    assert_eq!(
        scraped.at(r#"seren_callosum_store_breaker_state{store="extra.1"}"#),
        0.0
    );

    assert_eq!(callosum.delete("/stores/extra.1").await.0, 200);
    let (_, _, text) = scrape(&callosum, None).await;
    let scraped = Exposition::parse(text);
    assert!(!scraped.text.contains("extra.1"), "{}", scraped.text);
    assert_eq!(scraped.store_calls("base", "ok"), 1.0);
    assert_eq!(
        scraped.at(r#"seren_callosum_overlay_writes_total{result="ok"}"#),
        2.0
    );
    assert_eq!(
        scraped.at(r#"seren_callosum_overlay_writes_total{result="failed"}"#),
        0.0
    );

    // Added again under the same name, it starts afresh, as its health record does.
    let add = json!({"name": "extra.1", "type": "seren_memory", "url": store.url});
    assert_eq!(callosum.post("/stores", add).await.0, 200);
    let (_, _, text) = scrape(&callosum, None).await;
    assert_eq!(Exposition::parse(text).store_calls("extra.1", "ok"), 0.0);
}
