//! The load harness (issue 6): `cargo bench --bench load -- [--quick] [--python | --no-python]`.
//!
//! `cargo bench` builds the release binary first (the `bench` profile inherits `release`, and cargo
//! builds a package's binaries for its benches), so this program builds nothing: it runs
//! `target/release/seren-corpus-callosum` as a child process, the way a user does.
//!
//! Per scenario it starts K stub stores in this process (real axum servers on `127.0.0.1:0` that
//! answer canned SerenMemory and SerenLoci JSON of 20 hits after a latency L, and one variant that
//! accepts connections and never answers), writes a config from `bench/callosum.yaml.template`,
//! starts the callosum on `--port 0`, and drives `POST /search` with C concurrent workers sharing one
//! client for a fixed number of requests. Two references run in the same process, back to back: the
//! same load straight at one stub store (the ceiling of one HTTP hop on this machine) and the Python
//! SerenCorpusCallosum 5.3.0 (installed into `target/bench-python-venv` on first use) fanning the
//! same stubs with the same config file.
//!
//! Every loop is bounded in count and in time, and every child process is killed when its guard is
//! dropped (also on panic). The exit code is non-zero when a scenario of ours (or the one-hop
//! reference) saw an error, timed out, or could not start; the Python reference is reported, never
//! judged. Nothing here asserts a target: it prints where each figure lands.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio_util::sync::{CancellationToken, DropGuard};

/// The release binary; cargo builds it before this bench and names it here.
const BIN: &str = env!("CARGO_BIN_EXE_seren-corpus-callosum");

/// The service binary to run: `SCC_BENCH_BIN` (another build, say an unstripped one to profile),
/// else the release binary cargo just built.
fn service_binary() -> PathBuf {
    std::env::var_os("SCC_BENCH_BIN").map_or_else(|| PathBuf::from(BIN), PathBuf::from)
}
const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");
const CONFIG_TEMPLATE: &str = include_str!("../bench/callosum.yaml.template");
/// Hits each stub store answers.
const STUB_HITS: usize = 20;
/// Every this-many-th answer of ours is parsed and checked (the first one always is). Parsing
/// every answer would take CPU from the service on this 2-core machine. Python's answers (a few
/// hundred a second at most) are all checked.
const CHECK_EVERY: usize = 32;
/// The service's log filter: `warn`, except the start-up lines (info) that name the bound port.
/// Nothing on the request path logs at info.
const LOG_FILTER: &str = "warn,seren_corpus_callosum=info";

// ---------------------------------------------------------------------------------------------
// Options and scenarios

struct Options {
    quick: bool,
    python: bool,
    /// Run only these scenarios (`--only throughput,added-latency`).
    only: Option<Vec<String>>,
}

fn parse_args() -> Result<Options, String> {
    let (mut quick, mut python, mut no_python) = (false, false, false);
    let mut only = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--only" => {
                let names = args.next().ok_or("--only needs a list of scenario names")?;
                only = Some(names.split(',').map(str::to_owned).collect());
            }
            "--quick" => quick = true,
            "--python" => python = true,
            "--no-python" => no_python = true,
            "--bench" => {} // cargo bench passes it to every bench binary
            "-h" | "--help" => {
                return Err("usage: cargo bench --bench load -- [--quick] [--python | --no-python] [--only A,B]\n  \
                     --quick      a few hundred requests per scenario (seconds); skips Python unless --python\n  \
                     --python     run the Python 5.3.0 reference in quick mode too\n  \
                     --no-python  skip the Python reference in full mode\n  \
                     --only A,B   run only these scenarios (throughput, added-latency, wide-fan, one-hanging, memory-flat)\n\
                     SCC_BENCH_BIN=PATH runs another build of the service (an unstripped one, to profile)"
                    .into());
            }
            other => eprintln!("load: ignoring argument {other:?}"),
        }
    }
    Ok(Options {
        quick,
        python: if quick { python } else { !no_python },
        only,
    })
}

#[derive(Clone)]
struct Scenario {
    name: &'static str,
    /// K: stores fanned, the hanging one included.
    stores: usize,
    /// The last store accepts connections and never answers.
    hanging: bool,
    /// L: each stub's latency.
    latency: Duration,
    /// C: concurrent workers.
    concurrency: usize,
    requests: usize,
    warmup: usize,
    /// Requests sent to the Python reference (0: not run for this scenario).
    python_requests: usize,
    /// Run the one-hop reference (or reuse one of the same L and C).
    one_hop: bool,
    /// Run the direct-fan reference: the load generator asks the K stubs itself.
    direct_fan: bool,
    /// Sample the callosum's RSS during the run (the memory-flatness run).
    track_rss: bool,
}

fn scenarios(quick: bool) -> Vec<Scenario> {
    // (full, quick)
    let pick = |full: usize, short: usize| if quick { short } else { full };
    vec![
        Scenario {
            name: "throughput",
            stores: 3,
            hanging: false,
            latency: Duration::ZERO,
            concurrency: 64,
            requests: pick(30_000, 400),
            warmup: pick(2_000, 128),
            python_requests: pick(2_000, 100),
            one_hop: true,
            direct_fan: true,
            track_rss: false,
        },
        Scenario {
            name: "added-latency",
            stores: 3,
            hanging: false,
            latency: Duration::from_millis(20),
            concurrency: 1,
            requests: pick(1_000, 50),
            warmup: pick(50, 5),
            python_requests: pick(500, 30),
            one_hop: true,
            direct_fan: true,
            track_rss: false,
        },
        Scenario {
            name: "wide-fan",
            stores: 16,
            hanging: false,
            latency: Duration::ZERO,
            concurrency: 64,
            requests: pick(10_000, 300),
            warmup: pick(1_000, 128),
            python_requests: pick(200, 50),
            one_hop: true,
            direct_fan: false,
            track_rss: false,
        },
        Scenario {
            name: "one-hanging",
            stores: 3,
            hanging: true,
            latency: Duration::ZERO,
            concurrency: 16,
            requests: pick(160, 48),
            warmup: 0,
            python_requests: pick(64, 16),
            one_hop: false,
            direct_fan: false,
            track_rss: false,
        },
        Scenario {
            name: "memory-flat",
            stores: 3,
            hanging: false,
            latency: Duration::ZERO,
            concurrency: 64,
            requests: pick(100_000, 2_000),
            warmup: pick(2_000, 128),
            python_requests: 0,
            one_hop: true,
            direct_fan: false,
            track_rss: true,
        },
    ]
}

/// The per-store timeout written into every config (the hanging scenario's bound).
const PER_STORE_TIMEOUT_S: u64 = 2;

// ---------------------------------------------------------------------------------------------
// Stub stores

/// A stub store on loopback; it stops when dropped.
struct Stub {
    name: String,
    kind: &'static str,
    url: String,
    _stop: DropGuard,
}

#[derive(Clone)]
struct StubState {
    body: Bytes,
    latency: Duration,
}

const WORDS: &[&str] = &[
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

fn words(seed: usize, count: usize) -> String {
    (0..count)
        .map(|j| WORDS[(seed * 7 + j * 11 + j * j) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// SerenMemory's `/search` answer: 20 hits, best first.
fn memory_answer(store: usize) -> Vec<u8> {
    let tiers = ["short", "near", "long"];
    let hits: Vec<Value> = (0..STUB_HITS)
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

/// SerenLoci's `/search` answer: 20 hits, best first.
fn loci_answer(store: usize) -> Vec<u8> {
    let hits: Vec<Value> = (0..STUB_HITS)
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

async fn stub_search(State(state): State<StubState>, _body: Bytes) -> Response {
    if !state.latency.is_zero() {
        // A thread sleep on the blocking pool rather than `tokio::time::sleep`: tokio's timer has a
        // 1 ms granularity and rounds up, which would put up to a millisecond of the stub's own into
        // every "added over L" figure. A thread sleep overshoots by tens of microseconds.
        let latency = state.latency;
        let _ = tokio::task::spawn_blocking(move || std::thread::sleep(latency)).await;
    }
    ([(CONTENT_TYPE, "application/json")], state.body).into_response()
}

/// The Python memory adapter may ask for topic edges; the config turns them off, but answer anyway.
async fn stub_by_topic(_body: Bytes) -> Response {
    ([(CONTENT_TYPE, "application/json")], r#"{"hits":[]}"#).into_response()
}

async fn start_stub(index: usize, latency: Duration) -> std::io::Result<Stub> {
    let (kind, body) = if index.is_multiple_of(2) {
        ("seren_memory", memory_answer(index))
    } else {
        ("seren_loci", loci_answer(index))
    };
    let state = StubState {
        body: Bytes::from(body),
        latency,
    };
    let router = Router::new()
        .route("/search", post(stub_search))
        .route("/by_topic", post(stub_by_topic))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let stop = CancellationToken::new();
    let cancelled = stop.clone().cancelled_owned();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(cancelled)
            .await;
    });
    Ok(Stub {
        name: format!("s{index:02}-{}", &kind[6..]),
        kind,
        url,
        _stop: stop.drop_guard(),
    })
}

/// A store that accepts every connection, reads what it is sent, and never answers.
async fn start_hanging() -> std::io::Result<Stub> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let stop = CancellationToken::new();
    let token = stop.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = token.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok((socket, _)) => {
                        tokio::spawn(hold(socket, token.clone()));
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
                },
            }
        }
    });
    Ok(Stub {
        name: "hanging".into(),
        kind: "seren_memory",
        url,
        _stop: stop.drop_guard(),
    })
}

/// Holds one connection open until the peer closes it or the stub stops.
async fn hold(mut socket: tokio::net::TcpStream, stop: CancellationToken) {
    let mut buffer = vec![0u8; 4096];
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            read = socket.read(&mut buffer) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            },
        }
    }
}

async fn start_stubs(scenario: &Scenario) -> Result<Vec<Stub>, String> {
    let mut stubs = Vec::with_capacity(scenario.stores);
    for index in 0..scenario.stores {
        let stub = if scenario.hanging && index + 1 == scenario.stores {
            start_hanging().await
        } else {
            start_stub(index, scenario.latency).await
        };
        stubs.push(stub.map_err(|e| format!("cannot start a stub store: {e}"))?);
    }
    Ok(stubs)
}

fn write_config(dir: &Path, stubs: &[Stub], python_port: u16) -> Result<PathBuf, String> {
    let mut stores = String::new();
    for stub in stubs {
        stores.push_str(&format!(
            "    - name: {}\n      type: {}\n      url: {}\n",
            stub.name, stub.kind, stub.url
        ));
    }
    let yaml = CONFIG_TEMPLATE
        .replace("{{python_port}}", &python_port.to_string())
        .replace("{{per_store_timeout_s}}", &PER_STORE_TIMEOUT_S.to_string())
        .replace("{{stores}}\n", &stores);
    let path = dir.join("seren-corpus-callosum.yaml");
    std::fs::write(&path, yaml).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

// ---------------------------------------------------------------------------------------------
// Child processes

/// A child process that is killed and reaped when dropped, with the tail of its stderr.
struct Proc {
    child: Child,
    tail: Arc<Mutex<VecDeque<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

impl Proc {
    /// Spawns `command` with stderr drained by a thread (a full pipe would stall the child). The
    /// first stderr line holding `listening on http://ADDR` sends ADDR on the returned channel.
    fn spawn(
        mut command: Command,
    ) -> Result<(Self, tokio::sync::oneshot::Receiver<String>), String> {
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("SEREN_SCC_") {
                command.env_remove(&key);
            }
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start {:?}: {e}", command.get_program()))?;
        let stderr = child.stderr.take().expect("piped stderr");
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let lines = tail.clone();
        let reader = std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(at) = line.find("listening on http://") {
                    let rest = &line[at + "listening on http://".len()..];
                    let addr = rest.split_whitespace().next().unwrap_or("").to_owned();
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(addr);
                    }
                }
                let mut lines = lines.lock().expect("tail lock");
                if lines.len() == 40 {
                    lines.pop_front();
                }
                lines.push_back(line);
            }
        });
        Ok((
            Self {
                child,
                tail,
                reader: Some(reader),
            },
            rx,
        ))
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn tail(&self) -> String {
        let lines = self.tail.lock().expect("tail lock");
        lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(format!("exited with {status}")),
            _ => None,
        }
    }
}

/// A field of `/proc/PID/status`, in KiB (`VmRSS`, `VmHWM`).
fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// CPU time (user + system, all threads) a process has used so far, from `/proc/PID/stat`.
fn cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces: state is the
    // first of them (field 3), utime field 14, stime field 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_secs_f64(ticks as f64 / clock_ticks() as f64))
}

/// USER_HZ, the unit of `/proc/PID/stat` times (100 on Linux unless told otherwise).
fn clock_ticks() -> u64 {
    static TICKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100)
    })
}

/// A running service under test: ours or Python's.
struct Service {
    proc: Proc,
    base: String,
    /// exec to the first 200 from `GET /health`.
    start: Duration,
    idle_rss_kib: Option<u64>,
}

impl Service {
    fn rss_kib(&self) -> Option<u64> {
        proc_status_kib(self.proc.pid(), "VmRSS")
    }
    fn peak_kib(&self) -> Option<u64> {
        proc_status_kib(self.proc.pid(), "VmHWM")
    }
}

async fn start_ours(dir: &Path, config: &Path) -> Result<Service, String> {
    let mut command = Command::new(service_binary());
    command
        .arg("serve")
        .arg("-c")
        .arg(config)
        .args(["--port", "0"])
        .env("SEREN_SCC_LOG", LOG_FILTER)
        .env("SEREN_SCC_RUNTIME_STORES", dir.join("runtime-stores.json"))
        .current_dir(dir);
    let began = Instant::now();
    let (mut proc, listening) = Proc::spawn(command)?;
    let addr = match tokio::time::timeout(Duration::from_secs(10), listening).await {
        Ok(Ok(addr)) => addr,
        Ok(Err(_)) => {
            // The reader ended without the line: the process died. Give the thread a moment.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let how = proc.exited().unwrap_or_default();
            return Err(format!(
                "the callosum never said where it listens ({how}):\n{}",
                proc.tail()
            ));
        }
        Err(_) => {
            return Err(format!(
                "no 'listening on' line within 10 s:\n{}",
                proc.tail()
            ));
        }
    };
    Service::ready(
        proc,
        format!("http://{addr}"),
        began,
        Duration::from_secs(10),
    )
    .await
}

async fn start_python(exe: &Path, dir: &Path, config: &Path, port: u16) -> Result<Service, String> {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).map_err(|e| format!("cannot make {}: {e}", home.display()))?;
    let mut command = Command::new(exe);
    command
        .arg("--config")
        .arg(config)
        .env("HOME", &home)
        .env("SEREN_SCC_UPDATES_ENABLED", "false")
        .env("SEREN_SCC_RUNTIME_STORES", dir.join("runtime-stores.json"))
        .current_dir(dir);
    let began = Instant::now();
    let (proc, _listening) = Proc::spawn(command)?;
    Service::ready(
        proc,
        format!("http://127.0.0.1:{port}"),
        began,
        Duration::from_secs(60),
    )
    .await
}

impl Service {
    /// Waits for the first `/health` 200 (the start time), then reads the idle RSS 100 ms later.
    async fn ready(
        mut proc: Proc,
        base: String,
        began: Instant,
        limit: Duration,
    ) -> Result<Self, String> {
        let start = wait_healthy(&mut proc, &base, began, limit).await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let idle_rss_kib = proc_status_kib(proc.pid(), "VmRSS");
        Ok(Self {
            proc,
            base,
            start,
            idle_rss_kib,
        })
    }
}

/// Polls `GET /health` until a 200, the process dies, or the deadline passes.
async fn wait_healthy(
    proc: &mut Proc,
    base: &str,
    began: Instant,
    limit: Duration,
) -> Result<Duration, String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .map_err(|e| e.to_string())?;
    let url = format!("{base}/health");
    while began.elapsed() < limit {
        if let Ok(response) = client.get(&url).send().await
            && response.status() == reqwest::StatusCode::OK
        {
            return Ok(began.elapsed());
        }
        if let Some(how) = proc.exited() {
            return Err(format!(
                "the service {how} before answering /health:\n{}",
                proc.tail()
            ));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Err(format!(
        "no 200 from {url} within {limit:?}:\n{}",
        proc.tail()
    ))
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

// ---------------------------------------------------------------------------------------------
// The Python reference's venv

fn target_dir() -> PathBuf {
    // BIN is TARGET/release/seren-corpus-callosum.
    Path::new(BIN)
        .parent()
        .and_then(Path::parent)
        .map_or_else(|| Path::new(MANIFEST_DIR).join("target"), Path::to_path_buf)
}

/// Runs a command to completion within `limit`, killing it past that.
fn run_bounded(command: &mut Command, limit: Duration) -> Result<(), String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    let began = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("{:?} {status}", command.get_program())),
            Ok(None) if began.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{:?} took over {limit:?}", command.get_program()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The Python service's executable, installing it into `target/bench-python-venv` if missing.
fn python_reference() -> Result<PathBuf, String> {
    let venv = target_dir().join("bench-python-venv");
    let exe = venv.join("bin").join("seren-corpus-callosum");
    if exe.exists() {
        return Ok(exe);
    }
    let requirements = Path::new(MANIFEST_DIR).join("bench/python-reference/requirements.txt");
    eprintln!(
        "load: installing the Python reference into {} (once)",
        venv.display()
    );
    if !venv.join("bin").join("pip").exists() {
        run_bounded(
            Command::new("python3").arg("-m").arg("venv").arg(&venv),
            Duration::from_secs(120),
        )?;
    }
    run_bounded(
        Command::new(venv.join("bin").join("pip"))
            .args(["install", "--disable-pip-version-check", "-q"])
            .args(["--retries", "1", "--timeout", "20", "-r"])
            .arg(&requirements),
        Duration::from_secs(600),
    )?;
    if exe.exists() {
        Ok(exe)
    } else {
        Err(format!("pip finished but {} is missing", exe.display()))
    }
}

// ---------------------------------------------------------------------------------------------
// The load generator

/// What a sampled answer must look like.
#[derive(Clone)]
enum Expect {
    /// A fused answer of `hits` hits whose `failed` names exactly these stores.
    Fused { hits: usize, failed: Vec<String> },
    /// A stub store's answer.
    Stub,
}

/// Where one "search" of the load goes: one url (a service, or one stub store), or several at once
/// (the direct fan: the load generator itself asks every stub and waits for all, no fusion).
#[derive(Clone)]
struct Target {
    urls: Vec<String>,
    expect: Expect,
    /// Check every this-many-th answer.
    check_every: usize,
}

impl Target {
    fn service(base: &str, expect: &Expect, check_every: usize) -> Self {
        Self {
            urls: vec![format!("{base}/search")],
            expect: expect.clone(),
            check_every,
        }
    }
    fn stubs(stubs: &[&Stub]) -> Self {
        Self {
            urls: stubs.iter().map(|s| format!("{}/search", s.url)).collect(),
            expect: Expect::Stub,
            check_every: CHECK_EVERY,
        }
    }
}

struct Shared {
    client: reqwest::Client,
    target: Target,
    bodies: Vec<Bytes>,
    total: usize,
    stop_at: Instant,
    next: AtomicUsize,
    done: AtomicUsize,
}

#[derive(Default)]
struct Run {
    /// Latency of every request that succeeded.
    latencies: Vec<Duration>,
    errors: usize,
    first_error: Option<String>,
    /// Requests not sent because the time bound ran out.
    unsent: usize,
    wall: Duration,
    /// CPU the service used during the run (user + system).
    service_cpu: Option<Duration>,
    /// CPU this process (load generator and stub stores) used during the run.
    harness_cpu: Option<Duration>,
}

/// `drive`, with the CPU time the service (`pid`) and this process spent on it.
async fn drive_measured(pid: Option<u32>, drive: impl std::future::Future<Output = Run>) -> Run {
    let service = |pid: Option<u32>| pid.and_then(|pid| cpu_time(&pid.to_string()));
    let (service0, harness0) = (service(pid), cpu_time("self"));
    let mut run = drive.await;
    run.service_cpu = service(pid)
        .zip(service0)
        .map(|(after, before)| after.saturating_sub(before));
    run.harness_cpu = cpu_time("self")
        .zip(harness0)
        .map(|(after, before)| after.saturating_sub(before));
    run
}

fn request_bodies() -> Vec<Bytes> {
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
        Bytes::from(serde_json::to_vec(&json!({"query": query, "n_results": 10})).expect("JSON"))
    })
    .collect()
}

fn load_client() -> reqwest::Client {
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(30))
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a plain HTTP client builds")
}

/// Sends `total` searches to `target` from `concurrency` workers; stops early at `limit`.
async fn drive(
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

async fn worker(shared: Arc<Shared>, progress: Option<Arc<AtomicUsize>>) -> Run {
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

async fn search_once(shared: &Shared, url: &str, body: Bytes, check: bool) -> Result<(), String> {
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
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn check_answer(expect: &Expect, bytes: &[u8]) -> Result<(), String> {
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
    }
}

// ---------------------------------------------------------------------------------------------
// Results

#[derive(Clone, Copy, PartialEq)]
enum Who {
    Ours,
    OneHop,
    DirectFan,
    Python,
}

impl Who {
    fn label(self) -> &'static str {
        match self {
            Who::Ours => "callosum",
            Who::OneHop => "one-hop",
            Who::DirectFan => "fan-direct",
            Who::Python => "python",
        }
    }
}

struct Row {
    scenario: &'static str,
    who: Who,
    stores: usize,
    latency: Duration,
    concurrency: usize,
    requests: usize,
    rps: f64,
    p50: Duration,
    p99: Duration,
    max: Duration,
    errors: usize,
    idle_kib: Option<u64>,
    peak_kib: Option<u64>,
    vs_hop: Option<f64>,
    vs_python: Option<f64>,
    /// The service's CPU per search, µs.
    cpu_us: Option<f64>,
    /// This process's CPU (load generator + stubs) per search, µs.
    harness_us: Option<f64>,
}

fn percentile(sorted: &[Duration], pct: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((pct / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn row_from(
    scenario: &Scenario,
    who: Who,
    run: &mut Run,
    warmup_errors: usize,
    service: Option<(&Service, Option<u64>)>,
) -> Row {
    run.latencies.sort_unstable();
    let ok = run.latencies.len();
    let done = ok + run.errors;
    Row {
        scenario: scenario.name,
        who,
        stores: if who == Who::OneHop {
            1
        } else {
            scenario.stores
        },
        latency: scenario.latency,
        concurrency: scenario.concurrency,
        requests: done,
        rps: if run.wall.is_zero() {
            0.0
        } else {
            done as f64 / run.wall.as_secs_f64()
        },
        p50: percentile(&run.latencies, 50.0),
        p99: percentile(&run.latencies, 99.0),
        max: run.latencies.last().copied().unwrap_or_default(),
        errors: run.errors + run.unsent + warmup_errors,
        idle_kib: service.and_then(|(s, _)| s.idle_rss_kib),
        peak_kib: service.and_then(|(_, peak)| peak),
        vs_hop: None,
        vs_python: None,
        cpu_us: run
            .service_cpu
            .filter(|_| done > 0)
            .map(|cpu| cpu.as_secs_f64() * 1e6 / done as f64),
        harness_us: run
            .harness_cpu
            .filter(|_| done > 0)
            .map(|cpu| cpu.as_secs_f64() * 1e6 / done as f64),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(|| "-".into(), |k| format!("{:.1}", k as f64 / 1024.0))
}

fn added(row: &Row) -> String {
    if row.latency.is_zero() {
        return "-".into();
    }
    let over = |d: Duration| (d.as_secs_f64() - row.latency.as_secs_f64()) * 1e3;
    format!("+{:.2}/+{:.2}", over(row.p50), over(row.p99))
}

fn micros(us: Option<f64>) -> String {
    us.map_or_else(|| "-".into(), |us| format!("{us:.0}"))
}

fn ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "-".into(), |r| format!("{r:.2}x"))
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<14} {:<10} {:>3} {:>4} {:>3} {:>7} {:>9} {:>7} {:>7} {:>8} {:>13} {:>4} {:>6} {:>6} {:>6} {:>6} {:>8} {:>8}",
        "scenario",
        "who",
        "K",
        "L ms",
        "C",
        "reqs",
        "search/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "+L p50/p99",
        "err",
        "idle",
        "peak",
        "cpu",
        "gen",
        "vs hop",
        "vs py"
    );
    for row in rows {
        println!(
            "{:<14} {:<10} {:>3} {:>4} {:>3} {:>7} {:>9.0} {:>7} {:>7} {:>8} {:>13} {:>4} {:>6} {:>6} {:>6} {:>6} {:>8} {:>8}",
            row.scenario,
            row.who.label(),
            row.stores,
            row.latency.as_millis(),
            row.concurrency,
            row.requests,
            row.rps,
            ms(row.p50),
            ms(row.p99),
            ms(row.max),
            added(row),
            row.errors,
            mib(row.idle_kib),
            mib(row.peak_kib),
            micros(row.cpu_us),
            micros(row.harness_us),
            ratio(row.vs_hop),
            ratio(row.vs_python),
        );
    }
    println!(
        "(idle and peak: the service's VmRSS before load and VmHWM after it, MiB; +L: p50 and p99 \
         minus the stubs' latency L, ms; cpu: the service's CPU time per search, us; gen: this \
         process's (load generator and stub stores) CPU per search, us; vs hop / vs py: our \
         searches/s over the reference's)"
    );
}

// ---------------------------------------------------------------------------------------------
// Running a scenario

struct Context {
    quick: bool,
    python: Option<PathBuf>,
    client: reqwest::Client,
    limit: Duration,
    /// One-hop runs by (L, C), reused across scenarios.
    hops: HashMap<(Duration, usize), (f64, Duration, Duration)>,
    starts: Vec<Duration>,
    python_starts: Vec<Duration>,
    notes: Vec<String>,
    failures: Vec<String>,
}

/// Starts a scenario's stubs and writes its config.
async fn prepare(
    scenario: &Scenario,
) -> Result<(Vec<Stub>, tempfile::TempDir, u16, PathBuf), String> {
    let stubs = start_stubs(scenario).await?;
    let dir = tempfile::Builder::new()
        .prefix("scc-bench-")
        .tempdir()
        .map_err(|e| format!("no temp dir: {e}"))?;
    let python_port = free_port().map_err(|e| format!("no free port: {e}"))?;
    let config = write_config(dir.path(), &stubs, python_port)?;
    Ok((stubs, dir, python_port, config))
}

/// Warms a running service up, drives the measured load at it, and makes its row. Errors of ours
/// are failures; Python's are notes.
async fn measure(
    ctx: &mut Context,
    scenario: &Scenario,
    who: Who,
    service: &Service,
    target: &Target,
    (warmup, requests): (usize, usize),
) -> Row {
    let warm = drive(
        &ctx.client,
        target,
        scenario.concurrency,
        warmup,
        ctx.limit,
        None,
    )
    .await;
    let progress = Arc::new(AtomicUsize::new(0));
    let pid = service.proc.pid();
    let sampler = (scenario.track_rss && who == Who::Ours)
        .then(|| spawn_rss_sampler(pid, progress.clone(), ctx.limit));
    let mut run = drive_measured(
        Some(pid),
        drive(
            &ctx.client,
            target,
            scenario.concurrency,
            requests,
            ctx.limit,
            Some(&progress),
        ),
    )
    .await;
    let peak = service.peak_kib();
    if let Some((stop, handle)) = sampler {
        stop.store(true, Ordering::Relaxed);
        let samples = handle.await.unwrap_or_default();
        tokio::time::sleep(Duration::from_millis(500)).await;
        ctx.notes.push(rss_note(
            scenario,
            &samples,
            service.idle_rss_kib,
            service.rss_kib(),
        ));
    }
    let errors = warm.errors + warm.unsent + run.errors + run.unsent;
    if errors > 0 {
        let text = format!(
            "{} {}: {} errors ({} in the warm-up, {} not sent within the time bound); first: {}",
            scenario.name,
            who.label(),
            errors,
            warm.errors + warm.unsent,
            run.unsent,
            run.first_error
                .as_deref()
                .or(warm.first_error.as_deref())
                .unwrap_or("-")
        );
        if who == Who::Python {
            ctx.notes.push(format!("{text} (not judged)"));
        } else {
            ctx.failures.push(text);
        }
    }
    row_from(
        scenario,
        who,
        &mut run,
        warm.errors + warm.unsent,
        Some((service, peak)),
    )
}

/// Drives a reference that is not a service (one stub, or the direct fan) and makes its row.
async fn measure_stubs(ctx: &mut Context, scenario: &Scenario, who: Who, target: &Target) -> Row {
    let requests = scenario.requests.min(if ctx.quick { 400 } else { 30_000 });
    let warm = drive(
        &ctx.client,
        target,
        scenario.concurrency,
        scenario.warmup,
        ctx.limit,
        None,
    )
    .await;
    let mut run = drive_measured(
        None,
        drive(
            &ctx.client,
            target,
            scenario.concurrency,
            requests,
            ctx.limit,
            None,
        ),
    )
    .await;
    let errors = warm.errors + warm.unsent + run.errors + run.unsent;
    if errors > 0 {
        ctx.failures.push(format!(
            "{} {}: {errors} errors; first: {}",
            scenario.name,
            who.label(),
            run.first_error
                .as_deref()
                .or(warm.first_error.as_deref())
                .unwrap_or("-")
        ));
    }
    let mut row = row_from(scenario, who, &mut run, warm.errors + warm.unsent, None);
    if who == Who::OneHop {
        row.stores = 1;
    }
    row
}

async fn run_scenario(ctx: &mut Context, scenario: &Scenario) -> Vec<Row> {
    eprintln!(
        "load: {} (K={}{}, L={} ms, C={}, {} requests)",
        scenario.name,
        scenario.stores,
        if scenario.hanging {
            ", one hanging"
        } else {
            ""
        },
        scenario.latency.as_millis(),
        scenario.concurrency,
        scenario.requests
    );
    let mut rows: Vec<Row> = Vec::new();
    let (stubs, dir, python_port, config) = match prepare(scenario).await {
        Ok(prepared) => prepared,
        Err(e) => {
            ctx.failures.push(format!("{}: {e}", scenario.name));
            return rows;
        }
    };
    let expect = Expect::Fused {
        hits: 10,
        failed: if scenario.hanging {
            vec!["hanging".into()]
        } else {
            Vec::new()
        },
    };

    // Ours.
    match start_ours(dir.path(), &config).await {
        Ok(service) => {
            ctx.starts.push(service.start);
            let target = Target::service(&service.base, &expect, CHECK_EVERY);
            let row = measure(
                ctx,
                scenario,
                Who::Ours,
                &service,
                &target,
                (scenario.warmup, scenario.requests),
            )
            .await;
            rows.push(row);
        }
        Err(e) => ctx.failures.push(format!(
            "{}: the callosum did not start: {e}",
            scenario.name
        )),
    }

    // One hop straight at a stub store (reused across scenarios of the same L and C).
    if scenario.one_hop {
        let key = (scenario.latency, scenario.concurrency);
        let hop = match ctx.hops.get(&key) {
            Some(hop) => *hop,
            None => {
                let target = Target::stubs(&[&stubs[0]]);
                let row = measure_stubs(ctx, scenario, Who::OneHop, &target).await;
                let hop = (row.rps, row.p50, row.p99);
                ctx.hops.insert(key, hop);
                rows.push(row);
                hop
            }
        };
        if let Some(ours) = rows.first_mut().filter(|r| r.who == Who::Ours)
            && hop.0 > 0.0
        {
            ours.vs_hop = Some(ours.rps / hop.0);
        }
    }

    // The direct fan: the load generator asks every stub at once and waits for all of them.
    if scenario.direct_fan {
        let all: Vec<&Stub> = stubs.iter().collect();
        let row = measure_stubs(ctx, scenario, Who::DirectFan, &Target::stubs(&all)).await;
        if let Some(ours) = rows.first().filter(|r| r.who == Who::Ours) {
            ctx.notes.push(format!(
                "{}: the callosum vs the load generator fanning the {} stubs itself: p50 {} vs {} ms \
                 (+{} ms), p99 {} vs {} ms, {:.0} vs {:.0} searches/s",
                scenario.name,
                scenario.stores,
                ms(ours.p50),
                ms(row.p50),
                ms(ours.p50.saturating_sub(row.p50)),
                ms(ours.p99),
                ms(row.p99),
                ours.rps,
                row.rps,
            ));
        }
        rows.push(row);
    }

    // The Python reference on the same stubs and the same config file.
    if let Some(exe) = ctx.python.clone()
        && scenario.python_requests > 0
    {
        eprintln!("load: {} (python reference)", scenario.name);
        match start_python(&exe, dir.path(), &config, python_port).await {
            Ok(service) => {
                ctx.python_starts.push(service.start);
                let target = Target::service(&service.base, &expect, 1);
                let warmup = if scenario.warmup == 0 { 0 } else { 16 };
                let row = measure(
                    ctx,
                    scenario,
                    Who::Python,
                    &service,
                    &target,
                    (warmup, scenario.python_requests),
                )
                .await;
                // A ratio to a reference whose answers failed would flatter us: none then.
                if let Some(ours) = rows.first_mut().filter(|r| r.who == Who::Ours)
                    && row.rps > 0.0
                    && row.errors == 0
                {
                    ours.vs_python = Some(ours.rps / row.rps);
                }
                rows.push(row);
            }
            Err(e) => ctx.notes.push(format!(
                "{} python: did not start (not judged): {e}",
                scenario.name
            )),
        }
    }
    drop(stubs);
    rows
}

type Samples = Vec<(usize, u64)>;

/// Samples the service's VmRSS every 100 ms with the count of searches done so far.
fn spawn_rss_sampler(
    pid: u32,
    progress: Arc<AtomicUsize>,
    limit: Duration,
) -> (Arc<AtomicBool>, tokio::task::JoinHandle<Samples>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = tokio::spawn(async move {
        let began = Instant::now();
        let mut samples = Vec::new();
        while !flag.load(Ordering::Relaxed) && began.elapsed() < limit {
            if let Some(rss) = proc_status_kib(pid, "VmRSS") {
                samples.push((progress.load(Ordering::Relaxed), rss));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        samples
    });
    (stop, handle)
}

fn rss_note(
    scenario: &Scenario,
    samples: &Samples,
    idle: Option<u64>,
    after: Option<u64>,
) -> String {
    let at = |fraction: f64| {
        let mark = (scenario.requests as f64 * fraction) as usize;
        samples
            .iter()
            .find(|(done, _)| *done >= mark)
            .or(samples.last())
            .map(|(done, rss)| format!("{done}: {}", mib(Some(*rss))))
            .unwrap_or_else(|| "-".into())
    };
    let max = samples.iter().map(|(_, rss)| *rss).max();
    let first_tenth = samples
        .iter()
        .find(|(done, _)| *done >= scenario.requests / 10)
        .map(|(_, rss)| *rss);
    let last = samples.last().map(|(_, rss)| *rss);
    let growth = match (first_tenth, last) {
        (Some(a), Some(b)) => format!("{:+.2} MiB", (b as f64 - a as f64) / 1024.0),
        _ => "-".into(),
    };
    // Least-squares slope of VmRSS over searches done, past the first 10% (the warm-up of pools
    // and allocator arenas): a leak shows as a steady slope, allocator noise does not.
    let tail: Vec<(f64, f64)> = samples
        .iter()
        .filter(|(done, _)| *done >= scenario.requests / 10)
        .map(|(done, rss)| (*done as f64, *rss as f64))
        .collect();
    let slope = if tail.len() >= 3 {
        let n = tail.len() as f64;
        let (mx, my) = (
            tail.iter().map(|p| p.0).sum::<f64>() / n,
            tail.iter().map(|p| p.1).sum::<f64>() / n,
        );
        let sxy: f64 = tail.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let sxx: f64 = tail.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
        if sxx > 0.0 {
            format!("{:+.1} KiB per 10,000 searches", sxy / sxx * 10_000.0)
        } else {
            "-".into()
        }
    } else {
        "-".into()
    };
    format!(
        "{}: VmRSS (MiB) idle {}; after N searches -> {}, {}, {}, {}, {}; max {}; 0.5 s after the \
         load {}; from 10% to the end {growth}; fitted slope past 10%: {slope} ({} samples)",
        scenario.name,
        mib(idle),
        at(0.1),
        at(0.25),
        at(0.5),
        at(0.75),
        at(1.0),
        mib(max),
        mib(after),
        samples.len()
    )
}

// ---------------------------------------------------------------------------------------------

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "rustc ?".into());
    format!("{cores} cores, {cpu}, {rustc}")
}

fn median(mut values: Vec<Duration>) -> Option<Duration> {
    values.sort_unstable();
    values.get(values.len().saturating_sub(1) / 2).copied()
}

fn landing(rows: &[Row], ctx: &Context) -> Vec<String> {
    let find =
        |scenario: &str, who: Who| rows.iter().find(|r| r.scenario == scenario && r.who == who);
    let mut lines = Vec::new();
    let mark = |ok: bool| if ok { "meets" } else { "misses" };
    if let Some(ours) = find("throughput", Who::Ours) {
        match ours.vs_python {
            Some(x) => lines.push(format!(
                "throughput K=3 L=0 C=64: {:.0}/s = {x:.1}x Python (target >= 30x, aim 50x): {}",
                ours.rps,
                mark(x >= 30.0)
            )),
            None => lines.push(format!(
                "throughput K=3 L=0 C=64: {:.0}/s; no Python reference in this run",
                ours.rps
            )),
        }
    }
    if let Some(ours) = find("added-latency", Who::Ours) {
        let over = |d: Duration| (d.as_secs_f64() - ours.latency.as_secs_f64()) * 1e3;
        let (p50, p99) = (over(ours.p50), over(ours.p99));
        lines.push(format!(
            "added latency K=3 L=20 C=1: p50 +{p50:.2} ms (target < 1): {}; p99 +{p99:.2} ms (target < 3): {}",
            mark(p50 < 1.0),
            mark(p99 < 3.0)
        ));
    }
    let idle = rows
        .iter()
        .filter(|r| r.who == Who::Ours)
        .filter_map(|r| r.idle_kib)
        .max();
    if let Some(idle) = idle {
        lines.push(format!(
            "idle RSS: at most {} MiB over all scenarios (target < 15): {}",
            mib(Some(idle)),
            mark(idle < 15 * 1024)
        ));
    }
    if let Some(peak) = find("throughput", Who::Ours).and_then(|r| r.peak_kib) {
        let wide = find("wide-fan", Who::Ours)
            .and_then(|r| r.peak_kib)
            .map(|k| format!("; the K=16 wide fan at C=64 peaked at {} MiB", mib(Some(k))))
            .unwrap_or_default();
        lines.push(format!(
            "RSS under the C=64 load (K=3): peak {} MiB (target < 64): {}{wide}",
            mib(Some(peak)),
            mark(peak < 64 * 1024)
        ));
    }
    if let Some(ours) = find("memory-flat", Who::Ours) {
        lines.push(format!(
            "flat after {} searches: see the memory-flat note above (VmRSS along the run)",
            ours.requests
        ));
    }
    if let Some(start) = median(ctx.starts.clone()) {
        let worst = ctx.starts.iter().max().copied().unwrap_or_default();
        lines.push(format!(
            "start (exec to first /health 200): median {} ms, worst {} ms over {} starts (target < 100): {}",
            ms(start),
            ms(worst),
            ctx.starts.len(),
            mark(start < Duration::from_millis(100))
        ));
    }
    if let Some(start) = median(ctx.python_starts.clone()) {
        lines.push(format!(
            "python start: median {} ms over {} starts",
            ms(start),
            ctx.python_starts.len()
        ));
    }
    lines
}

fn main() -> ExitCode {
    let options = match parse_args() {
        Ok(options) => options,
        Err(usage) => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    let began = Instant::now();
    if !service_binary().exists() {
        eprintln!(
            "load: {} is missing; run `cargo bench --bench load` (it builds the binary)",
            service_binary().display()
        );
        return ExitCode::FAILURE;
    }
    let mut notes = Vec::new();
    let python = if options.python {
        match python_reference() {
            Ok(exe) => Some(exe),
            Err(e) => {
                let note = format!("python reference: could not be installed, skipped: {e}");
                eprintln!("load: {note}");
                notes.push(note);
                None
            }
        }
    } else {
        notes.push(if options.quick {
            "python reference: skipped in --quick mode (add --python to run it)".into()
        } else {
            "python reference: skipped (--no-python)".into()
        });
        None
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let ok = runtime.block_on(async move {
        let mut ctx = Context {
            quick: options.quick,
            python,
            client: load_client(),
            limit: if options.quick {
                Duration::from_secs(60)
            } else {
                Duration::from_secs(600)
            },
            hops: HashMap::new(),
            starts: Vec::new(),
            python_starts: Vec::new(),
            notes,
            failures: Vec::new(),
        };
        let mut rows = Vec::new();
        let chosen = scenarios(options.quick).into_iter().filter(|scenario| {
            options
                .only
                .as_ref()
                .is_none_or(|only| only.iter().any(|name| name == scenario.name))
        });
        for scenario in chosen {
            rows.extend(run_scenario(&mut ctx, &scenario).await);
        }
        println!();
        println!(
            "seren-corpus-callosum load harness ({} mode), {}",
            if options.quick { "quick" } else { "full" },
            machine()
        );
        println!("binary: {}", service_binary().display());
        println!();
        print_table(&rows);
        println!();
        for note in &ctx.notes {
            println!("note: {note}");
        }
        println!();
        println!("where we land (reported, not asserted):");
        for line in landing(&rows, &ctx) {
            println!("  {line}");
        }
        for failure in &ctx.failures {
            println!("FAILED: {failure}");
        }
        ctx.failures.is_empty()
    });
    println!("total time {:.1} s", began.elapsed().as_secs_f64());
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
