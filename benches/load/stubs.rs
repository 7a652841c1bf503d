//! Stub stores: the test suite's own (`tests/it/support`), with canned answers of 20 hits (4 in the
//! tree scenario).

use super::*;

/// A stub store on loopback; it stops when dropped.
pub(super) struct Stub {
    pub(super) name: String,
    pub(super) kind: &'static str,
    pub(super) url: String,
    pub(super) _store: Running,
}

/// The store behind a [`Stub`], held (never read) so that it lives as long as the stub.
#[allow(dead_code)]
pub(super) enum Running {
    Canned(support::StubStore),
    Hanging(support::fault::FaultStore),
}

pub(super) const WORDS: &[&str] = &[
    "xavier",
    "jetpack",
    "cuda",
    "driver",
    "backup",
    "restic",
    "nvme",
    "kernel",
    "router",
    "vlan",
    "grafana",
    "sqlite",
    "embedder",
    "chroma",
    "tokio",
    "rust",
    "l4t",
    "thermal",
    "fan",
    "swap",
    "docker",
    "compose",
    "zfs",
    "snapshot",
    "tailscale",
    "dns",
    "caddy",
    "certs",
    "cron",
    "rsync",
];

pub(super) fn words(seed: usize, count: usize) -> String {
    (0..count)
        .map(|j| WORDS[(seed * 7 + j * 11 + j * j) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// SerenMemory's `/search` answer: `count` hits (20 but in the tree scenario), best first.
pub(super) fn memory_answer(store: usize, count: usize) -> Vec<u8> {
    let tiers = ["short", "near", "long"];
    let hits: Vec<Value> = (0..count)
        .map(|i| {
            let distance = 0.12 + 0.031 * i as f64;
            json!({
                "tier": tiers[i % 3],
                "content": format!("{} (episode {store}-{i}).", words(store * 31 + i, 24)),
                "topic": "bench, load",
                "score": 1.0 / (1.0 + distance),
                "raw_distance": distance,
                "id": format!("{store:08x}{i:024x}"),
                "metadata": {"created_at": "2025-10-13T08:47:00Z", "source": "bench", "tier": tiers[i % 3]},
                "surroundings": null,
                "matched_via": null,
            })
        })
        .collect();
    let answer = json!({"query": "bench", "searched_tiers": tiers, "hits": hits});
    serde_json::to_vec(&answer).expect("JSON")
}

/// SerenLoci's `/search` answer: `count` hits, best first.
pub(super) fn loci_answer(store: usize, count: usize) -> Vec<u8> {
    let hits: Vec<Value> = (0..count)
        .map(|i| {
            json!({
                "id": format!("fact-{store:02}-{i:03}"),
                "project": "bench",
                "key": format!("bench.{}-{i:02}", WORDS[(store + i) % WORDS.len()]),
                "value": words(store * 17 + i, 12),
                "why": words(store * 13 + i + 5, 10),
                "score": 0.95 - 0.03 * i as f64,
                "match_kind": "lexical",
                "source": "user",
                "raw_distance": null,
                "live": true,
                "superseded_at": null,
                "why_changed": null,
                "figures": 0,
                "recheck": null,
            })
        })
        .collect();
    let answer = json!({"query": "bench", "project": null, "finder": "lexical", "hits": hits});
    serde_json::to_vec(&answer).expect("JSON")
}

/// Stub `index`'s type and canned answer of `count` hits: even ones speak SerenMemory, odd ones
/// SerenLoci.
pub(super) fn stub_answer(index: usize, count: usize) -> (&'static str, Vec<u8>) {
    if index.is_multiple_of(2) {
        ("seren_memory", memory_answer(index, count))
    } else {
        ("seren_loci", loci_answer(index, count))
    }
}

pub(super) async fn start_stub(
    index: usize,
    latency: Duration,
    count: usize,
) -> std::io::Result<Stub> {
    let (kind, body) = stub_answer(index, count);
    let store = support::StubStore::canned(Bytes::from(body), latency).await;
    Ok(Stub {
        name: format!("s{index:02}-{}", &kind[6..]),
        kind,
        url: store.url.clone(),
        _store: Running::Canned(store),
    })
}

/// A store that accepts every connection, reads what it is sent, and never answers.
pub(super) async fn start_hanging() -> std::io::Result<Stub> {
    let store = support::fault::FaultStore::start(support::fault::Fault::Hang).await;
    Ok(Stub {
        name: "hanging".into(),
        kind: "seren_memory",
        url: store.url.clone(),
        _store: Running::Hanging(store),
    })
}

pub(super) async fn start_stubs(scenario: &Scenario) -> Result<Vec<Stub>, String> {
    let mut stubs = Vec::with_capacity(scenario.stores);
    for index in 0..scenario.stores {
        let stub = if scenario.hanging && index + 1 == scenario.stores {
            start_hanging().await
        } else {
            start_stub(index, scenario.latency, STUB_HITS).await
        };
        stubs.push(stub.map_err(|e| format!("cannot start a stub store: {e}"))?);
    }
    Ok(stubs)
}

pub(super) fn write_config(
    dir: &Path,
    stubs: &[Stub],
    python_port: u16,
    edges: bool,
) -> Result<PathBuf, String> {
    let entries: Vec<Entry> = stubs
        .iter()
        .map(|stub| (stub.name.as_str(), stub.kind, stub.url.as_str()))
        .collect();
    write_config_for(dir, &entries, python_port, edges)
}

/// A store entry of a config: name, type, url.
pub(super) type Entry<'a> = (&'a str, &'a str, &'a str);

/// Writes the config template into `dir`, fanning these stores in this order.
pub(super) fn write_config_for(
    dir: &Path,
    entries: &[Entry],
    python_port: u16,
    edges: bool,
) -> Result<PathBuf, String> {
    let mut stores = String::new();
    for (name, kind, url) in entries {
        stores.push_str(&format!(
            "    - name: {name}\n      type: {kind}\n      url: {url}\n"
        ));
    }
    let yaml = CONFIG_TEMPLATE
        .replace("{{python_port}}", &python_port.to_string())
        .replace("{{per_store_timeout_s}}", &PER_STORE_TIMEOUT_S.to_string())
        .replace("{{stores}}\n", &stores)
        .replace("{{edges}}", if edges { "true" } else { "false" });
    let path = dir.join("seren-corpus-callosum.yaml");
    std::fs::write(&path, yaml).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}
