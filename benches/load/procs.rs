//! Child processes.

use super::*;

/// A child process that is killed and reaped when dropped, with the tail of its stderr.
pub(super) struct Proc {
    pub(super) child: Child,
    pub(super) tail: Arc<Mutex<VecDeque<String>>>,
    pub(super) reader: Option<std::thread::JoinHandle<()>>,
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
    pub(super) fn spawn(
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

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(super) fn tail(&self) -> String {
        let lines = self.tail.lock().expect("tail lock");
        lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    pub(super) fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(format!("exited with {status}")),
            _ => None,
        }
    }
}

/// A field of `/proc/PID/status`, in KiB (`VmRSS`, `VmHWM`).
pub(super) fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// CPU time (user + system, all threads) a process has used so far, from `/proc/PID/stat`.
pub(super) fn cpu_time(pid: &str) -> Option<Duration> {
    stat_times(pid, 14)
}

/// CPU time of a process's children that it has waited for (`cutime + cstime`).
pub(super) fn children_cpu_time(pid: &str) -> Option<Duration> {
    stat_times(pid, 16)
}

/// Fields `field` and `field + 1` of `/proc/PID/stat` (1-based, as proc(5) numbers them), added
/// and read as clock ticks.
fn stat_times(pid: &str, field: usize) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces: `rest` starts
    // at field 3 (the state).
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace().skip(field - 3);
    let ticks: u64 = fields.next()?.parse::<u64>().ok()? + fields.next()?.parse::<u64>().ok()?;
    Some(Duration::from_secs_f64(ticks as f64 / clock_ticks() as f64))
}

/// USER_HZ, the unit of `/proc/PID/stat` times (100 on Linux unless told otherwise).
pub(super) fn clock_ticks() -> u64 {
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
pub(super) struct Service {
    pub(super) proc: Proc,
    pub(super) base: String,
    /// exec to the first 200 from `GET /health`.
    pub(super) start: Duration,
    pub(super) idle_rss_kib: Option<u64>,
}

impl Service {
    pub(super) fn rss_kib(&self) -> Option<u64> {
        proc_status_kib(self.proc.pid(), "VmRSS")
    }
    pub(super) fn peak_kib(&self) -> Option<u64> {
        proc_status_kib(self.proc.pid(), "VmHWM")
    }
}

pub(super) async fn start_ours(dir: &Path, config: &Path) -> Result<Service, String> {
    start_build(&service_binary(), dir, config).await
}

/// Starts the build at `binary` as [`start_ours`] starts the service under test.
pub(super) async fn start_build(
    binary: &Path,
    dir: &Path,
    config: &Path,
) -> Result<Service, String> {
    let mut command = Command::new(binary);
    command
        .arg("serve")
        .arg("-c")
        .arg(config)
        .args(["--port", "0"])
        .env("SEREN_SCC_LOG", LOG_FILTER)
        .env("SEREN_SCC_RUNTIME_STORES", dir.join("runtime-stores.json"))
        .current_dir(dir);
    start_listening(command, "the callosum").await
}

/// Spawns `command` (a service that names where it listens on stderr, `what`), and waits for
/// that line and then for its first `/health` 200.
pub(super) async fn start_listening(command: Command, what: &str) -> Result<Service, String> {
    let began = Instant::now();
    let (mut proc, listening) = Proc::spawn(pinned(command))?;
    let addr = match tokio::time::timeout(Duration::from_secs(10), listening).await {
        Ok(Ok(addr)) => addr,
        Ok(Err(_)) => {
            // The reader ended without the line: the process died. Give the thread a moment.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let how = proc.exited().unwrap_or_default();
            return Err(format!(
                "{what} never said where it listens ({how}):\n{}",
                proc.tail()
            ));
        }
        Err(_) => {
            return Err(format!(
                "{what}: no 'listening on' line within 10 s:\n{}",
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

pub(super) async fn start_python(
    exe: &Path,
    dir: &Path,
    config: &Path,
    port: u16,
) -> Result<Service, String> {
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
    let (proc, _listening) = Proc::spawn(pinned(command))?;
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
    pub(super) async fn ready(
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
pub(super) async fn wait_healthy(
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

pub(super) fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// `SCC_BENCH_SERVICE_CPUS=LIST` (a taskset CPU list, such as `1`): every service (ours, the
/// minimal fan, Python) runs on these CPUs only. Run the harness itself with `taskset -c OTHERS`,
/// and the load generator and the stores (wrk and nginx too) keep to the others: figures per
/// service core, nearer a machine where the stores are elsewhere.
pub(super) fn service_cpus() -> Option<String> {
    std::env::var("SCC_BENCH_SERVICE_CPUS")
        .ok()
        .filter(|cpus| !cpus.trim().is_empty())
}

/// The CPUs this process may run on (`Cpus_allowed_list`).
pub(super) fn own_cpus() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
                .map(|list| list.trim().to_owned())
        })
        .unwrap_or_else(|| "?".into())
}

/// `command` run through `taskset -c LIST` when [`service_cpus`] names CPUs; else as it is.
pub(super) fn pinned(command: Command) -> Command {
    let Some(cpus) = service_cpus() else {
        return command;
    };
    let mut wrapped = Command::new("taskset");
    wrapped
        .arg("-c")
        .arg(cpus)
        .arg(command.get_program())
        .args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped
}
