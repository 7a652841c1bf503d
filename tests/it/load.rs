//! A bounded load test on loopback: a fixed number of searches at a fixed concurrency, against
//! three healthy stores, one dead one and one that hangs, first with the circuit breaker off and
//! then on. Every search must answer 200; the latency distribution is printed (run with
//! `--nocapture`), and compared only as ratios of the configured store timeout.

use crate::support::fault::{Fault, FaultStore};
use crate::support::*;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SEARCHES: usize = 160;
const CONCURRENCY: usize = 16;
const TIMEOUT_S: f64 = 0.5;

struct Run {
    errors: usize,
    latencies: Vec<Duration>,
    wall: Duration,
}

impl Run {
    fn percentile(&self, p: f64) -> Duration {
        let index = ((self.latencies.len() as f64 - 1.0) * p).round() as usize;
        self.latencies[index]
    }

    fn report(&self, label: &str) {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{label:<14} searches {SEARCHES}  concurrency {CONCURRENCY}  errors {}  p50 {:8.1} ms  p99 {:8.1} ms  max {:8.1} ms  {:6.1} searches/s",
            self.errors,
            ms(self.percentile(0.5)),
            ms(self.percentile(0.99)),
            ms(*self.latencies.last().unwrap()),
            SEARCHES as f64 / self.wall.as_secs_f64()
        );
    }
}

async fn drive(callosum: Arc<Callosum>) -> Run {
    let started = Instant::now();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers = (0..CONCURRENCY).map(|_| {
        let callosum = callosum.clone();
        let next = next.clone();
        tokio::spawn(async move {
            let mut seen = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < SEARCHES {
                let sent = Instant::now();
                let response = callosum
                    .client
                    .post(format!("{}/search", callosum.url))
                    .json(&json!({"query": "load", "n_results": 10}))
                    .send()
                    .await;
                let ok = match response {
                    Ok(response) if response.status() == 200 => {
                        let body: serde_json::Value = response.json().await.unwrap_or_default();
                        body["stores_searched"].as_array().map_or(0, Vec::len) == 3
                    }
                    _ => false,
                };
                seen.push((sent.elapsed(), ok));
            }
            seen
        })
    });
    let mut latencies = Vec::new();
    let mut errors = 0;
    for worker in futures_util::future::join_all(workers).await {
        for (latency, ok) in worker.unwrap() {
            latencies.push(latency);
            errors += usize::from(!ok);
        }
    }
    latencies.sort_unstable();
    Run {
        errors,
        latencies,
        wall: started.elapsed(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_store_costs_every_search_until_the_breaker_opens() {
    let healthy = [
        StubStore::hits(memory_hits(&[("a1", 0.1), ("a2", 0.2), ("a3", 0.3)])).await,
        StubStore::hits(loci_hits(&[("b1", 0.9), ("b2", 0.8)])).await,
        // The load bench's kind of store: canned bytes, nothing recorded.
        StubStore::canned(
            serde_json::to_vec(&json!({"hits": memory_hits(&[("c1", 0.1)])}))
                .unwrap()
                .into(),
            Duration::from_millis(2),
        )
        .await,
    ];
    let hanging = FaultStore::start(Fault::Hang).await;
    let dead = closed_port_url();
    let stores = |breaker: &str| {
        format!(
            "server:\n  max_in_flight: 512\nfederation:\n  per_store_timeout_s: {TIMEOUT_S}\n{breaker}  stores:\n{}",
            [
                ("one", "seren_memory", healthy[0].url.as_str()),
                ("two", "seren_loci", healthy[1].url.as_str()),
                ("three", "seren_memory", healthy[2].url.as_str()),
                ("dead", "seren_memory", dead.as_str()),
                ("hanging", "seren_loci", hanging.url.as_str()),
            ]
            .iter()
            .map(|(n, k, u)| format!("    - name: {n}\n      type: {k}\n      url: {u}\n"))
            .collect::<String>()
        )
    };
    let without = drive(Arc::new(
        Callosum::start(&stores("  breaker_failures: 0\n")).await,
    ))
    .await;
    without.report("breaker off");
    let with = drive(Arc::new(
        Callosum::start(&stores("  breaker_failures: 3\n  breaker_cooldown_s: 30\n")).await,
    ))
    .await;
    with.report("breaker on");

    assert_eq!(
        without.errors, 0,
        "every search answers 200 with the three healthy stores"
    );
    assert_eq!(with.errors, 0);
    let timeout = Duration::from_secs_f64(TIMEOUT_S);
    // Without the breaker, every search waits out the hanging store.
    assert!(
        without.percentile(0.5) >= timeout.mul_f64(0.9),
        "p50 {:?}",
        without.percentile(0.5)
    );
    // With it, only the first few do; the typical search no longer pays the timeout.
    assert!(
        with.percentile(0.5) < timeout / 2,
        "p50 {:?}",
        with.percentile(0.5)
    );
}

/// Keep-alive to every store: searches one after another reuse one connection per store, and
/// concurrent ones at most one each, never one a search.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_reuse_their_connections_to_the_stores() {
    let body = |id: &str| -> axum::body::Bytes {
        serde_json::to_vec(&json!({"hits": memory_hits(&[(id, 0.1)])}))
            .unwrap()
            .into()
    };
    let stores = [
        StubStore::canned(body("a"), Duration::ZERO).await,
        StubStore::canned(body("b"), Duration::ZERO).await,
    ];
    let config = format!(
        "federation:\n  stores:\n    - name: one\n      type: seren_memory\n      url: {}\n    - name: two\n      type: seren_memory\n      url: {}\n",
        stores[0].url, stores[1].url
    );
    let callosum = Arc::new(Callosum::start(&config).await);
    let search = |callosum: Arc<Callosum>| async move {
        let answer: serde_json::Value = (callosum.client)
            .post(format!("{}/search", callosum.url))
            .json(&json!({"query": "keep-alive"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(answer["hits"].as_array().map(Vec::len), Some(2), "{answer}");
    };
    for _ in 0..20 {
        search(callosum.clone()).await;
    }
    let accepted: Vec<usize> = stores.iter().map(StubStore::accepted).collect();
    assert_eq!(
        accepted,
        [1, 1],
        "20 searches in a row, one connection to each store"
    );
    futures_util::future::join_all((0..8).map(|_| search(callosum.clone()))).await;
    for store in &stores {
        assert!(
            (1..=8).contains(&store.accepted()),
            "8 searches at once open at most 8 connections to a store: {}",
            store.accepted()
        );
    }
}
