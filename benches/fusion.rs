//! The fusion micro-benchmark (issue 6): `cargo bench --bench fusion -- [--quick]`.
//!
//! Times `fusion::fuse` alone (no IO) over S stores x H hits, keeping the best 10, with a plain timer
//! loop: a warm-up, then many timed calls, each on a fresh copy of the input made outside the timed
//! region (`fuse` takes its lists by value). It prints the median, p99, mean and minimum per call in
//! microseconds. The target, 64 x 100 under 1 ms, is printed beside that case, not asserted.
//!
//! A second table times the other pure step of a search, reading a store's answer
//! (`store::Protocol::decode` on a 20-hit SerenMemory and SerenLoci body, as the load harness's stubs
//! send), beside the same typed decode done with plain `serde_json` and with `serde_path_to_error`,
//! so a profile's finding about decoding can be checked in numbers.
//!
//! A last table times what `GET /metrics` adds to a search (the search counted and timed, and one
//! call per store: the hooks of `federation/`, clock reads included) and what one scrape costs.
//!
//! The exit code is non-zero only when `fuse` or a decode answers wrongly (the wrong length or
//! order), so CI can run `--quick` and never judge a wall-clock figure.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use seren_corpus_callosum::fusion::{self, Fused, Hit, RankedList};
use seren_corpus_callosum::metadata::Metadata;
use seren_corpus_callosum::store;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Fused hits kept per call, as a default search does.
const N: usize = 10;
const K: u32 = 60;

struct Case {
    stores: usize,
    hits: usize,
    /// The target for this case, µs.
    target_us: Option<f64>,
}

const CASES: &[Case] = &[
    // What one search fuses: 3 or 16 stores asked for n_results x fetch_multiplier = 20 hits each.
    Case {
        stores: 3,
        hits: 20,
        target_us: None,
    },
    Case {
        stores: 16,
        hits: 20,
        target_us: None,
    },
    // The cases.
    Case {
        stores: 3,
        hits: 100,
        target_us: None,
    },
    Case {
        stores: 64,
        hits: 100,
        target_us: Some(1000.0),
    },
];

const WORDS: &[&str] = &[
    "xavier", "jetpack", "cuda", "driver", "backup", "restic", "nvme", "kernel", "router", "vlan",
    "grafana", "sqlite", "embedder", "chroma", "tokio", "rust", "l4t", "thermal", "fan", "swap",
];

/// A hit shaped like what the store adapters hand over: ~170 characters of content and a few
/// metadata entries.
fn hit(store: usize, rank: usize) -> Hit {
    let content = (0..24)
        .map(|j| WORDS[(store * 7 + rank * 3 + j * j) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ");
    let distance = 0.1 + 0.01 * rank as f64;
    let mut metadata = Map::new();
    metadata.insert("created_at".into(), json!("2025-10-13T08:47:00Z"));
    metadata.insert("source".into(), json!("bench"));
    metadata.insert("tier".into(), json!(["short", "near", "long"][rank % 3]));
    metadata.insert("topic".into(), Value::String("bench, load".into()));
    Hit {
        id: format!("{store:04x}-{rank:08x}"),
        content,
        base_relevance: 1.0 / (1.0 + distance),
        raw_distance: Some(distance),
        native_score: Some(1.0 / (1.0 + distance)),
        metadata: Metadata::from_map(&metadata),
        satellites: None,
    }
}

fn lists(stores: usize, hits: usize) -> Vec<RankedList> {
    (0..stores)
        .map(|store| RankedList {
            // Mixed weights, as a real roster may have; a floor of 0 keeps every hit.
            weight: if store % 4 == 0 { 1.5 } else { 1.0 },
            floor: 0.0,
            identity: None,
            hits: (0..hits).map(|rank| hit(store, rank)).collect(),
        })
        .collect()
}

/// The answer must be N hits, best first, in the fusion order.
fn check(fused: &[Fused], stores: usize, hits: usize) -> Result<(), String> {
    let want = N.min(stores * hits);
    if fused.len() != want {
        return Err(format!("{} hits, expected {want}", fused.len()));
    }
    for pair in fused.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let ordered =
            a.score > b.score || (a.score == b.score && (a.list, a.rank) < (b.list, b.rank));
        if !ordered {
            return Err(format!(
                "out of order: ({}, {}, {}) before ({}, {}, {})",
                a.list, a.rank, a.score, b.list, b.rank, b.score
            ));
        }
    }
    Ok(())
}

fn percentile(sorted: &[Duration], pct: f64) -> Duration {
    let rank = ((pct / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// A SerenMemory answer of 20 hits, shaped as the load harness's stub sends it.
fn memory_body() -> Vec<u8> {
    let tiers = ["short", "near", "long"];
    let hits: Vec<Value> = (0..20)
        .map(|i| {
            let distance = 0.12 + 0.031 * i as f64;
            let content = (0..24)
                .map(|j| WORDS[(i * 3 + j * j) % WORDS.len()])
                .collect::<Vec<_>>()
                .join(" ");
            json!({
                "tier": tiers[i % 3], "content": content, "topic": "bench, load",
                "score": 1.0 / (1.0 + distance), "raw_distance": distance,
                "id": format!("{i:032x}"),
                "metadata": {"created_at": "2025-10-13T08:47:00Z", "source": "bench", "tier": tiers[i % 3]},
                "surroundings": null, "matched_via": null,
            })
        })
        .collect();
    serde_json::to_vec(&json!({"query": "bench", "searched_tiers": tiers, "hits": hits}))
        .expect("JSON")
}

/// A SerenLoci answer of 20 hits.
fn loci_body() -> Vec<u8> {
    let hits: Vec<Value> = (0..20)
        .map(|i| {
            json!({
                "id": format!("fact-{i:03}"), "project": "bench", "key": format!("bench.key-{i:02}"),
                "value": WORDS[..12].join(" "), "why": WORDS[8..18].join(" "),
                "score": 0.95 - 0.03 * i as f64, "match_kind": "lexical", "source": "user",
                "raw_distance": null, "live": true, "superseded_at": null, "why_changed": null,
                "figures": 0, "recheck": null,
            })
        })
        .collect();
    serde_json::to_vec(
        &json!({"query": "bench", "project": null, "finder": "lexical", "hits": hits}),
    )
    .expect("JSON")
}

/// The typed shape the SerenMemory protocol read before metadata stayed raw (every field owned,
/// metadata a map), to time that decode with and without `serde_path_to_error` beside today's.
#[derive(Deserialize)]
#[allow(dead_code)] // only decoded, to be timed
struct MemoryAnswer {
    #[serde(default)]
    hits: Option<Vec<MemoryHit>>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct MemoryHit {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tier: Option<Value>,
    #[serde(default)]
    topic: Option<Value>,
    #[serde(default)]
    score: Option<f64>,
    #[serde(default)]
    raw_distance: Option<Value>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    surroundings: Option<Value>,
    #[serde(default)]
    matched_via: Option<Value>,
}

/// The packet table: fusion with the 5.3.0 shaping on (the authority lead, a seat per store, a
/// token page) over 64 stores x 100 hits, beside plain RRF through the same entry point. False
/// when a page costs more than its budget or comes back empty.
fn packet_table(warmup: usize, iterations: usize, bound: Duration) -> bool {
    use seren_corpus_callosum::packet::{self, Cut, page::packet_cost};
    let plain = Cut {
        k: K,
        rows: Some(N),
        budget: None,
        authority_margin: 0.0,
        min_per_store: 0,
    };
    let cases = [
        ("plain RRF, n 10", plain),
        (
            "quota 1, n 10",
            Cut {
                min_per_store: 1,
                ..plain
            },
        ),
        (
            "authority + quota 1 + page 800",
            Cut {
                rows: None,
                budget: Some(800),
                authority_margin: 0.035,
                min_per_store: 1,
                ..plain
            },
        ),
        (
            "authority + quota 1 + page 8000",
            Cut {
                rows: None,
                budget: Some(8000),
                authority_margin: 0.035,
                min_per_store: 1,
                ..plain
            },
        ),
    ];
    let input = lists(64, 100);
    println!();
    println!(
        "the packet over 64 stores x 100 hits (packet::rank: fuse, then authority, seats, page):"
    );
    println!(
        "{:<42} {:>5} {:>7} {:>7} {:>9} {:>9} {:>9}  target",
        "cut", "rows", "tokens", "calls", "median", "p99", "min"
    );
    let mut ok = true;
    // Each cut as a search without `explain` ranks it, then as one with it (the whole order read
    // for the trace, the best 25 rows left out named).
    let ranked = |input: Vec<RankedList>, cut: &Cut, traced: bool| {
        if traced {
            packet::rank_traced(input, cut, 25).0
        } else {
            packet::rank(input, cut)
        }
    };
    for (name, cut, traced) in cases.into_iter().flat_map(|(name, cut)| {
        [
            (name.to_owned(), cut, false),
            (format!("{name} +explain"), cut, true),
        ]
    }) {
        let packet = ranked(input.clone(), &cut, traced);
        let tokens = packet_cost(packet.iter().map(|f| &f.hit));
        if packet.is_empty()
            || cut.budget.is_some_and(|b| tokens > b)
            || packet != packet::rank(input.clone(), &cut)
        {
            println!("FAILED {name}: {} rows, {tokens} tokens", packet.len());
            ok = false;
            continue;
        }
        for _ in 0..warmup.min(200) {
            black_box(ranked(black_box(input.clone()), &cut, traced));
        }
        let mut times = Vec::with_capacity(iterations);
        let began = Instant::now();
        while times.len() < iterations && began.elapsed() < bound {
            let copy = input.clone();
            let start = Instant::now();
            let packet = ranked(black_box(copy), &cut, traced);
            let took = start.elapsed();
            black_box(&packet);
            drop(packet);
            times.push(took);
        }
        times.sort_unstable();
        let median = percentile(&times, 50.0);
        println!(
            "{:<42} {:>5} {:>7} {:>7} {:>9.1} {:>9.1} {:>9.1}  < 1000 us: {}",
            name,
            packet.len(),
            tokens,
            times.len(),
            us(median),
            us(percentile(&times, 99.0)),
            us(times[0]),
            if us(median) < 1000.0 {
                "meets"
            } else {
                "misses"
            }
        );
    }
    ok
}

/// The decode table; false when a decode answers wrongly.
fn decode_table(warmup: usize, iterations: usize, bound: Duration) -> bool {
    let memory = memory_body();
    let loci = loci_body();
    let no_options = Map::new();
    let memory_protocol = store::build("seren_memory", &no_options).expect("memory protocol");
    let loci_protocol = store::build("seren_loci", &no_options).expect("loci protocol");
    let typed_plain = |body: &[u8]| {
        serde_json::from_slice::<MemoryAnswer>(body)
            .ok()
            .and_then(|a| a.hits)
            .map_or(0, |h| h.len())
    };
    let typed_tracked = |body: &[u8]| {
        let mut deserializer = serde_json::Deserializer::from_slice(body);
        serde_path_to_error::deserialize::<_, MemoryAnswer>(&mut deserializer)
            .ok()
            .and_then(|a| a.hits)
            .map_or(0, |h| h.len())
    };
    // Name, bytes, hits expected, the call.
    type Case<'a> = (&'a str, usize, usize, Box<dyn Fn() -> usize + 'a>);
    let ten = store::Keep {
        hits: 10,
        floor: 0.0,
    };
    let cases: Vec<Case> = vec![
        (
            "seren_memory Protocol::decode",
            memory.len(),
            20,
            Box::new(|| {
                memory_protocol
                    .decode(&memory, usize::MAX)
                    .map_or(0, |h| h.len())
            }),
        ),
        (
            "seren_memory decode_kept, 10 of 20",
            memory.len(),
            10,
            Box::new(|| {
                memory_protocol
                    .decode_kept(&memory, usize::MAX, ten)
                    .map_or(0, |h| h.len())
            }),
        ),
        (
            "seren_loci Protocol::decode",
            loci.len(),
            20,
            Box::new(|| {
                loci_protocol
                    .decode(&loci, usize::MAX)
                    .map_or(0, |h| h.len())
            }),
        ),
        (
            "seren_loci decode_kept, 10 of 20",
            loci.len(),
            10,
            Box::new(|| {
                loci_protocol
                    .decode_kept(&loci, usize::MAX, ten)
                    .map_or(0, |h| h.len())
            }),
        ),
        (
            "memory owned maps, path tracking",
            memory.len(),
            20,
            Box::new(|| typed_tracked(&memory)),
        ),
        (
            "memory owned maps, plain serde_json",
            memory.len(),
            20,
            Box::new(|| typed_plain(&memory)),
        ),
    ];
    println!();
    println!("reading one store's answer (20 hits), per call (the variants timed round-robin):");
    println!(
        "{:<36} {:>6} {:>7} {:>9} {:>9} {:>9}",
        "decode", "bytes", "calls", "median", "p99", "min"
    );
    let mut ok = true;
    for (name, _, want, call) in &cases {
        let got = call();
        if got != *want {
            println!("FAILED {name}: {got} hits, expected {want}");
            ok = false;
        }
    }
    if !ok {
        return false;
    }
    // Round-robin: each round times one call of every variant, so a drift of this shared machine
    // touches them all alike and their ratios hold.
    for _ in 0..warmup {
        for (_, _, _, call) in &cases {
            black_box(call());
        }
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(iterations); cases.len()];
    let began = Instant::now();
    while times[0].len() < iterations && began.elapsed() < bound {
        for ((_, _, _, call), times) in cases.iter().zip(times.iter_mut()) {
            let start = Instant::now();
            black_box(call());
            times.push(start.elapsed());
        }
    }
    for ((name, bytes, _, _), times) in cases.iter().zip(times.iter_mut()) {
        times.sort_unstable();
        println!(
            "{:<36} {:>6} {:>7} {:>9.1} {:>9.1} {:>9.1}",
            name,
            bytes,
            times.len(),
            us(percentile(times, 50.0)),
            us(percentile(times, 99.0)),
            us(times[0]),
        );
    }
    ok
}

/// What the metrics add to a search over 3 stores, and what a scrape of 3 or 64 stores costs.
fn metrics_table(iterations: usize) {
    use seren_corpus_callosum::health::Health;
    use seren_corpus_callosum::metrics::{Metrics, Scrape, Writes};
    let metrics = Metrics::default();
    let answered: Result<Vec<store::Hit>, store::Failure> = Ok(Vec::new());
    let names: Vec<String> = (0..64).map(|i| format!("store-{i}")).collect();
    let stores: Vec<&str> = names.iter().map(String::as_str).collect();
    // Each hook as federation/ runs it: one more clock read, then the count.
    let search = |metrics: &Metrics| {
        for store in &stores[..3] {
            let started = Instant::now();
            metrics.store_call(black_box(store), started.elapsed(), &answered);
        }
        let started = Instant::now();
        metrics.search(started.elapsed(), true);
    };
    for _ in 0..1_000 {
        search(&metrics);
    }
    let rounds = iterations * 10;
    let began = Instant::now();
    for _ in 0..rounds {
        search(black_box(&metrics));
    }
    let per_search = began.elapsed() / rounds as u32;
    println!(
        "\nmetrics: the hooks of one search over 3 stores (a search and 3 calls counted and timed): \
         {:.3} us, mean of {rounds}",
        us(per_search)
    );
    let health = Health::default();
    let writes = Writes::default();
    for store in &stores {
        metrics.store_call(store, Duration::from_millis(3), &answered);
    }
    for count in [3, 64] {
        let scrape = || {
            metrics.encode(Scrape {
                stores: &stores[..count],
                health: &health,
                in_flight: 1,
                overlay_writes: &writes,
                audit: (0, 0),
                trace_spans_dropped: None,
            })
        };
        let bytes = scrape().len();
        let mut times: Vec<Duration> = (0..200)
            .map(|_| {
                let start = Instant::now();
                black_box(scrape());
                start.elapsed()
            })
            .collect();
        times.sort_unstable();
        println!(
            "metrics: one scrape of {count} stores ({bytes} bytes): {:.1} us median",
            us(percentile(&times, 50.0))
        );
    }
}

fn main() -> ExitCode {
    let quick = std::env::args().any(|arg| arg == "--quick");
    // Per case: warm-up calls, timed calls, and a time bound on the timed loop.
    let (warmup, iterations, bound) = if quick {
        (50, 500, Duration::from_secs(2))
    } else {
        (1_000, 20_000, Duration::from_secs(20))
    };
    println!(
        "fusion::fuse micro-benchmark ({} mode): k = {K}, keep n = {N}, {} warm-up + up to {} timed calls per case",
        if quick { "quick" } else { "full" },
        warmup,
        iterations
    );
    println!(
        "{:>6} {:>5} {:>7} {:>9} {:>9} {:>9} {:>9} {:>11}  target",
        "stores", "hits", "calls", "median", "p99", "mean", "min", "input drop"
    );
    let mut ok = true;
    for case in CASES {
        let input = lists(case.stores, case.hits);
        match check(&fusion::fuse(input.clone(), K, N), case.stores, case.hits) {
            Ok(()) => {}
            Err(e) => {
                println!("FAILED {}x{}: {e}", case.stores, case.hits);
                ok = false;
                continue;
            }
        }
        for _ in 0..warmup {
            black_box(fusion::fuse(black_box(input.clone()), K, N));
        }
        let mut times = Vec::with_capacity(iterations);
        // The part of a call that is only freeing the input: dropping a fresh copy, unfused.
        let mut drops = Vec::with_capacity(iterations / 4 + 1);
        let began = Instant::now();
        while times.len() < iterations && began.elapsed() < bound {
            let copy = input.clone();
            let start = Instant::now();
            let fused = fusion::fuse(black_box(copy), K, N);
            let took = start.elapsed();
            black_box(&fused);
            drop(fused);
            times.push(took);
            if times.len().is_multiple_of(4) {
                let copy = black_box(input.clone());
                let start = Instant::now();
                drop(copy);
                drops.push(start.elapsed());
            }
        }
        times.sort_unstable();
        drops.sort_unstable();
        let mean = times.iter().sum::<Duration>() / times.len() as u32;
        let median = percentile(&times, 50.0);
        let target = match case.target_us {
            Some(target) => format!(
                "< {target:.0} us: {}",
                if us(median) < target {
                    "meets"
                } else {
                    "misses"
                }
            ),
            None => "-".into(),
        };
        println!(
            "{:>6} {:>5} {:>7} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>11}  {target}",
            case.stores,
            case.hits,
            times.len(),
            us(median),
            us(percentile(&times, 99.0)),
            us(mean),
            us(times[0]),
            if drops.is_empty() {
                "-".to_owned()
            } else {
                format!("{:.1}", us(percentile(&drops, 50.0)))
            },
        );
    }
    println!(
        "(microseconds per call; the input copy is made outside the timed region; input drop: the \
         median time to free one copy of the input, unfused, which fuse also pays as it discards)"
    );
    ok &= packet_table(warmup, iterations, bound);
    ok &= decode_table(warmup, iterations, bound);
    println!("(microseconds per call)");
    metrics_table(iterations);
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
