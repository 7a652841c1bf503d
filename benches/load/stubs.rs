//! Stub stores: the test suite's own (`tests/it/support`), with canned answers of 20 hits (4 in the
//! tree scenario).

use super::*;

/// Connections the stubs accepted so far, all together (the hanging one's not counted).
pub(super) fn accepted(stubs: &[Stub]) -> usize {
    stubs
        .iter()
        .map(|stub| match &stub.store {
            Running::Canned(store) => store.accepted(),
            Running::Hanging(_) => 0,
        })
        .sum()
}

/// A stub store on loopback; it stops when dropped.
pub(super) struct Stub {
    pub(super) name: String,
    pub(super) kind: &'static str,
    pub(super) url: String,
    pub(super) store: Running,
}

/// The store behind a [`Stub`], held so that it lives as long as the stub (and asked how many
/// connections it accepted).
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

/// SerenMemory's `/search` answer: `count` hits (20 but in the tree scenario), best first. With
/// `rich`, every fifth hit is a core with its surroundings (three satellite episodes and the core
/// it superseded), for the packet's satellite edges.
pub(super) fn memory_answer(store: usize, count: usize, rich: bool) -> Vec<u8> {
    let tiers = ["short", "near", "long"];
    let hits: Vec<Value> = (0..count)
        .map(|i| {
            let distance = 0.12 + 0.031 * i as f64;
            let id = format!("{store:08x}{i:024x}");
            let surroundings = (rich && i % 5 == 0).then(|| surroundings(&id, store * 31 + i));
            json!({
                "tier": tiers[i % 3],
                "content": format!("{} (episode {store}-{i}).", words(store * 31 + i, 24)),
                "topic": "bench, load",
                "score": 1.0 / (1.0 + distance),
                "raw_distance": distance,
                "id": id,
                "metadata": {"created_at": "2025-10-13T08:47:00Z", "source": "bench", "tier": tiers[i % 3]},
                "surroundings": surroundings,
                "matched_via": null,
            })
        })
        .collect();
    let answer = json!({"query": "bench", "searched_tiers": tiers, "hits": hits});
    serde_json::to_vec(&answer).expect("JSON")
}

/// A SerenMemory core's surroundings, as `with_surroundings: true` sends them.
fn surroundings(core: &str, seed: usize) -> Value {
    json!({
        "satellites": 3,
        "latest_satellite_at": "2025-10-19T10:00:00Z",
        "supersedes": format!("{core}-old"),
        "superseded_by": null,
        "recent": (0..3).map(|j| json!({
            "id": format!("{core}-s{j}"),
            "content": format!("{} (satellite {j}).", words(seed + j, 16)),
            "created_at": format!("2025-10-1{}T10:00:00Z", 9 - j),
        })).collect::<Vec<_>>(),
        "supersedes_entry": {
            "id": format!("{core}-old"),
            "content": format!("{} (the core it replaced).", words(seed + 7, 16)),
            "created_at": "2025-09-01T10:00:00Z",
        },
    })
}

/// SerenMemory's `/by_topic` answer for the packet runs: eight memories tagged `bench` or `load`.
pub(super) fn topic_answer(store: usize) -> Vec<u8> {
    let hits: Vec<Value> = (0..8)
        .map(|i| {
            let tag = ["bench", "load"][i % 2];
            json!({
                "id": format!("{store:08x}t{i:023x}"),
                "content": format!("{} (topic memory {store}-{i}).", words(store * 5 + i, 20)),
                "tier": "near",
                "topic": tag,
                "matched_topics": [tag],
                "overlap": 1,
                "metadata": {"created_at": "2025-10-12T08:00:00Z", "source": "bench"},
            })
        })
        .collect();
    let answer = json!({"topics": ["bench", "load"], "searched_tiers": ["short", "near", "long"], "hits": hits});
    serde_json::to_vec(&answer).expect("JSON")
}

/// SerenLoci's `/search` answer: `count` hits, best first. With `rich`, the first is an exact key
/// match (the packet's authority lead).
pub(super) fn loci_answer(store: usize, count: usize, rich: bool) -> Vec<u8> {
    let hits: Vec<Value> = (0..count)
        .map(|i| {
            json!({
                "id": format!("fact-{store:02}-{i:03}"),
                "project": "bench",
                "key": format!("bench.{}-{i:02}", WORDS[(store + i) % WORDS.len()]),
                "value": words(store * 17 + i, 12),
                "why": words(store * 13 + i + 5, 10),
                "score": 0.95 - 0.03 * i as f64,
                "match_kind": if rich && i == 0 { "exact" } else { "lexical" },
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
/// SerenLoci. `rich`: what the packet works on (see [`memory_answer`], [`loci_answer`]).
pub(super) fn stub_answer(index: usize, count: usize, rich: bool) -> (&'static str, Vec<u8>) {
    if index.is_multiple_of(2) {
        ("seren_memory", memory_answer(index, count, rich))
    } else {
        ("seren_loci", loci_answer(index, count, rich))
    }
}

pub(super) async fn start_stub(
    index: usize,
    latency: Duration,
    count: usize,
    rich: bool,
) -> std::io::Result<Stub> {
    let (kind, body) = stub_answer(index, count, rich);
    let store = if rich {
        let topics = Bytes::from(topic_answer(index));
        support::StubStore::canned_with_topics(Bytes::from(body), topics, latency).await
    } else {
        support::StubStore::canned(Bytes::from(body), latency).await
    };
    Ok(Stub {
        name: format!("s{index:02}-{}", &kind[6..]),
        kind,
        url: store.url.clone(),
        store: Running::Canned(store),
    })
}

/// A store that accepts every connection, reads what it is sent, and never answers.
pub(super) async fn start_hanging() -> std::io::Result<Stub> {
    let store = support::fault::FaultStore::start(support::fault::Fault::Hang).await;
    Ok(Stub {
        name: "hanging".into(),
        kind: "seren_memory",
        url: store.url.clone(),
        store: Running::Hanging(store),
    })
}

pub(super) async fn start_stubs(scenario: &Scenario) -> Result<Vec<Stub>, String> {
    let mut stubs = Vec::with_capacity(scenario.stores);
    for index in 0..scenario.stores {
        let stub = if scenario.hanging && index + 1 == scenario.stores {
            start_hanging().await
        } else {
            start_stub(
                index,
                scenario.latency,
                STUB_HITS,
                scenario.packet.rich_stubs(),
            )
            .await
        };
        stubs.push(stub.map_err(|e| format!("cannot start a stub store: {e}"))?);
    }
    Ok(stubs)
}

pub(super) fn write_config(
    dir: &Path,
    stubs: &[Stub],
    python_port: u16,
    packet: Packet,
) -> Result<PathBuf, String> {
    write_config_for(dir, &entries(stubs), python_port, packet)
}

/// The stubs as store entries of a config.
pub(super) fn entries(stubs: &[Stub]) -> Vec<Entry<'_>> {
    stubs
        .iter()
        .map(|stub| (stub.name.as_str(), stub.kind, stub.url.as_str()))
        .collect()
}

/// A store entry of a config: name, type, url.
pub(super) type Entry<'a> = (&'a str, &'a str, &'a str);

/// Writes the config template into `dir`, fanning these stores in this order.
pub(super) fn write_config_for(
    dir: &Path,
    entries: &[Entry],
    python_port: u16,
    packet: Packet,
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
        .replace("{{packet}}\n", &packet.config_lines());
    let path = dir.join("seren-corpus-callosum.yaml");
    std::fs::write(&path, yaml).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}
