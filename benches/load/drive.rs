//! The load generator.

use super::*;

/// What a sampled answer must look like.
#[derive(Clone)]
pub(super) enum Expect {
    /// A fused answer of `hits` hits whose `failed` names exactly these stores.
    Fused { hits: usize, failed: Vec<String> },
    /// A packet: some hits, none over `budget` tokens in all, no store failed.
    Packet { budget: u64 },
    /// A stub store's answer.
    Stub,
}

impl Expect {
    /// A service's answer under `packet`: a packet when the stubs carry what it works on, else
    /// a fused answer of 10 hits with these stores failed.
    pub(super) fn answer(packet: Packet, failed: Vec<String>) -> Self {
        if packet.rich_stubs() {
            Expect::Packet {
                budget: PACKET_BUDGET_TOKENS,
            }
        } else {
            Expect::Fused { hits: 10, failed }
        }
    }
}

/// Where one "search" of the load goes: one url (a service, or one stub store), or several at once
/// (the direct fan: the load generator itself asks every stub and waits for all, no fusion).
#[derive(Clone)]
pub(super) struct Target {
    pub(super) urls: Vec<String>,
    pub(super) expect: Expect,
    /// Check every this-many-th answer.
    pub(super) check_every: usize,
}

impl Target {
    pub(super) fn service(base: &str, expect: &Expect, check_every: usize) -> Self {
        Self {
            urls: vec![format!("{base}/search")],
            expect: expect.clone(),
            check_every,
        }
    }
    pub(super) fn stubs(stubs: &[&Stub]) -> Self {
        Self {
            urls: stubs.iter().map(|s| format!("{}/search", s.url)).collect(),
            expect: Expect::Stub,
            check_every: CHECK_EVERY,
        }
    }
}

pub(super) struct Shared {
    pub(super) client: reqwest::Client,
    pub(super) target: Target,
    pub(super) bodies: Vec<Bytes>,
    pub(super) total: usize,
    pub(super) stop_at: Instant,
    pub(super) next: AtomicUsize,
    pub(super) done: AtomicUsize,
}

#[derive(Default)]
pub(super) struct Run {
    /// Latency of every request that succeeded.
    pub(super) latencies: Vec<Duration>,
    pub(super) errors: usize,
    pub(super) first_error: Option<String>,
    /// Requests not sent because the time bound ran out.
    pub(super) unsent: usize,
    pub(super) wall: Duration,
    /// CPU the service used during the run (user + system).
    pub(super) service_cpu: Option<Duration>,
    /// CPU this process (load generator and stub stores) used during the run.
    pub(super) harness_cpu: Option<Duration>,
}

/// `drive`, with the CPU time the service and this process spent on it. The service is the
/// processes `pids` together (none: no service figure; several: a tree of callosums).
pub(super) async fn drive_measured(
    pids: &[u32],
    drive: impl std::future::Future<Output = Run>,
) -> Run {
    let service = |pids: &[u32]| -> Option<Duration> {
        (!pids.is_empty())
            .then(|| pids.iter().map(|pid| cpu_time(&pid.to_string())).sum())
            .flatten()
    };
    let (service0, harness0) = (service(pids), cpu_time("self"));
    let mut run = drive.await;
    run.service_cpu = service(pids)
        .zip(service0)
        .map(|(after, before)| after.saturating_sub(before));
    run.harness_cpu = cpu_time("self")
        .zip(harness0)
        .map(|(after, before)| after.saturating_sub(before));
    run
}

pub(super) fn request_bodies() -> Vec<Bytes> {
    [
        "that CUDA thing on the Xavier",
        "jetpack version",
        "restic backup schedule",
        "why did the nvme fill up",
        "tailscale dns on the router",
        "rust async cancellation",
        "grafana alert for thermal throttling",
        "which kernel does L4T ship",
    ]
    .iter()
    .map(|query| {
        let body = if explain() {
            json!({"query": query, "n_results": 10, "explain": true})
        } else {
            json!({"query": query, "n_results": 10})
        };
        Bytes::from(serde_json::to_vec(&body).expect("JSON"))
    })
    .collect()
}

/// Whether every search asks `explain: true` (`SCC_BENCH_EXPLAIN=1`): what explaining costs, with
/// the same stores and load. A binary from before `explain` ignores the field.
pub(super) fn explain() -> bool {
    std::env::var_os("SCC_BENCH_EXPLAIN").is_some_and(|v| v == "1")
}

pub(super) fn load_client() -> reqwest::Client {
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(30))
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a plain HTTP client builds")
}

/// Sends `total` searches to `target` from `concurrency` workers; stops early at `limit`.
pub(super) async fn drive(
    client: &reqwest::Client,
    target: &Target,
    concurrency: usize,
    total: usize,
    limit: Duration,
    progress: Option<&Arc<AtomicUsize>>,
) -> Run {
    if total == 0 {
        return Run::default();
    }
    let shared = Arc::new(Shared {
        client: client.clone(),
        target: target.clone(),
        bodies: request_bodies(),
        total,
        stop_at: Instant::now() + limit,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
    });
    let began = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency.min(total) {
        workers.spawn(worker(shared.clone(), progress.cloned()));
    }
    let mut run = Run::default();
    while let Some(joined) = workers.join_next().await {
        match joined {
            Ok(part) => {
                run.latencies.extend(part.latencies);
                run.errors += part.errors;
                if run.first_error.is_none() {
                    run.first_error = part.first_error;
                }
            }
            Err(e) => {
                run.errors += 1;
                run.first_error
                    .get_or_insert_with(|| format!("worker: {e}"));
            }
        }
    }
    run.wall = began.elapsed();
    run.unsent = total.saturating_sub(shared.done.load(Ordering::Relaxed));
    run
}

pub(super) async fn worker(shared: Arc<Shared>, progress: Option<Arc<AtomicUsize>>) -> Run {
    let mut run = Run::default();
    loop {
        if Instant::now() >= shared.stop_at {
            break;
        }
        let index = shared.next.fetch_add(1, Ordering::Relaxed);
        if index >= shared.total {
            break;
        }
        let body = shared.bodies[index % shared.bodies.len()].clone();
        let began = Instant::now();
        let check = index.is_multiple_of(shared.target.check_every.max(1));
        let outcome = if shared.target.urls.len() == 1 {
            search_once(&shared, &shared.target.urls[0], body, check).await
        } else {
            let calls = shared
                .target
                .urls
                .iter()
                .enumerate()
                .map(|(i, url)| search_once(&shared, url, body.clone(), check && i == 0));
            futures_util::future::join_all(calls)
                .await
                .into_iter()
                .collect::<Result<(), String>>()
        };
        let took = began.elapsed();
        shared.done.fetch_add(1, Ordering::Relaxed);
        if let Some(progress) = &progress {
            progress.fetch_add(1, Ordering::Relaxed);
        }
        match outcome {
            Ok(()) => run.latencies.push(took),
            Err(why) => {
                run.errors += 1;
                run.first_error.get_or_insert(why);
            }
        }
    }
    run
}

pub(super) async fn search_once(
    shared: &Shared,
    url: &str,
    body: Bytes,
    check: bool,
) -> Result<(), String> {
    let response = shared
        .client
        .post(url)
        .header(CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| format!("transport: {}", chain(&e)))?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| format!("body: {}", chain(&e)))?;
    if status != reqwest::StatusCode::OK {
        return Err(format!(
            "status {status}: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
        ));
    }
    if check {
        check_answer(&shared.target.expect, &bytes)?;
    }
    Ok(())
}

/// An error and its causes, one after another.
pub(super) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

pub(super) fn check_answer(expect: &Expect, bytes: &[u8]) -> Result<(), String> {
    let answer: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("answer is not JSON: {e}"))?;
    let hits = answer["hits"].as_array().map_or(0, Vec::len);
    match expect {
        Expect::Stub => (hits == STUB_HITS)
            .then_some(())
            .ok_or_else(|| format!("stub answered {hits} hits")),
        Expect::Fused { hits: want, failed } => {
            let names: Vec<&str> = answer["failed"]
                .as_array()
                .map(|list| list.iter().filter_map(|f| f["name"].as_str()).collect())
                .unwrap_or_default();
            if hits != *want {
                return Err(format!("{hits} hits, expected {want}"));
            }
            if names != *failed {
                return Err(format!(
                    "failed = {names:?}, expected {failed:?} ({})",
                    answer["failed"]
                ));
            }
            Ok(())
        }
        Expect::Packet { budget } => {
            let tokens = answer["tokens"].as_u64().unwrap_or(u64::MAX);
            if hits == 0 || tokens > *budget {
                return Err(format!(
                    "a packet of {hits} hits, {tokens} tokens (budget {budget})"
                ));
            }
            match answer["failed"].as_array().map(Vec::len) {
                Some(0) => Ok(()),
                _ => Err(format!("failed = {}", answer["failed"])),
            }
        }
    }
}
