//! The external load: wrk drives the services and nginx serves the stores' canned answers, both
//! from Debian, the way issue 26 measured. Both are C programs far lighter than this process's
//! reqwest load generator and axum stubs, so on a small machine more of its cores are left to the
//! service measured. The scenarios (`wrk-*`) run when `wrk` and `nginx` are both found, and are
//! skipped with a note otherwise; `.ci/run` installs both.
//!
//! Per scenario: one nginx process (no master, one worker) serves three stores on three loopback
//! ports, each answering `POST /search` (and, for the packet, `POST /by_topic`) with the same
//! canned JSON the in-process stubs send. Each service is started on them with the same config
//! file, warmed up and checked with this process's client (every answer of the warm-up is checked),
//! then driven by one wrk thread for a fixed time. In a full run every scenario goes several
//! rounds, each service once a round, the order reversed every other round (the second of a pair
//! runs a little slower on a shared machine): the throughput rows are each service's round of
//! least CPU per search (best of three), the latency rows' p50 the median of eight rounds.
//!
//! wrk's own CPU is read from this process's reaped-children time around the run; nginx's from
//! its `/proc` entry. Both are the `gen` column of these rows.

use super::*;

/// A scenario driven by wrk against stores served by nginx.
pub(super) struct External {
    pub(super) name: &'static str,
    pub(super) concurrency: usize,
    pub(super) packet: Packet,
    /// Who is driven, and in this order in the first round.
    pub(super) who: &'static [Who],
    /// Rounds in a full run, each service once a round, the order reversed every other round
    /// (`--quick`: one).
    pub(super) rounds: usize,
    /// How a service's rounds make its row.
    pub(super) pick: Pick,
}

/// How a service's rounds make its row.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Pick {
    /// The round with the least CPU per search (issue 42: "best of three each").
    LeastCpu,
    /// All rounds together, but p50 is the median of the rounds' p50s (issue 42: "the median of
    /// eight alternating runs, not the best").
    MedianP50,
}

/// Stores fanned in every external scenario.
const EXTERNAL_STORES: usize = 3;

pub(super) fn external_scenarios() -> Vec<External> {
    const ALL: &[Who] = &[Who::Ours, Who::Minimal, Who::Python];
    vec![
        External {
            name: "wrk-throughput",
            concurrency: 64,
            packet: Packet::Plain,
            who: ALL,
            rounds: 3,
            pick: Pick::LeastCpu,
        },
        External {
            name: "wrk-throughput-packet",
            concurrency: 64,
            packet: Packet::Full,
            who: &[Who::Ours, Who::Python],
            rounds: 3,
            pick: Pick::LeastCpu,
        },
        External {
            name: "wrk-latency",
            concurrency: 1,
            packet: Packet::Plain,
            who: &[Who::Ours, Who::Minimal],
            rounds: 8,
            pick: Pick::MedianP50,
        },
    ]
}

/// The two programs, when both are installed.
pub(super) struct Tools {
    wrk: PathBuf,
    nginx: PathBuf,
}

/// Finds `wrk` and `nginx` on PATH (and nginx in /usr/sbin, where Debian puts it).
pub(super) fn external_tools() -> Result<Tools, String> {
    let find = |name: &str, extra: &[&str]| {
        std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .chain(extra.iter().map(PathBuf::from))
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
            .ok_or_else(|| format!("{name} is not installed (Debian: apt-get install {name})"))
    };
    Ok(Tools {
        wrk: find("wrk", &[])?,
        nginx: find("nginx", &["/usr/sbin"])?,
    })
}

/// nginx serving canned store answers; stopped when dropped.
struct Nginx {
    proc: Proc,
    /// (name, type, url) of each store.
    stores: Vec<(String, &'static str, String)>,
}

impl Nginx {
    fn entries(&self) -> Vec<Entry<'_>> {
        self.stores
            .iter()
            .map(|(name, kind, url)| (name.as_str(), *kind, url.as_str()))
            .collect()
    }
}

/// Starts one nginx serving `count` stores' canned answers (`rich`: what the packet works on) from
/// files under `dir`, and waits until every store answers.
async fn start_nginx(nginx: &Path, dir: &Path, count: usize, rich: bool) -> Result<Nginx, String> {
    let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
    let mut servers = String::new();
    let mut stores = Vec::new();
    for index in 0..count {
        let (kind, body) = stub_answer(index, STUB_HITS, rich);
        let root = dir.join(format!("store-{index}"));
        std::fs::create_dir_all(&root).map_err(|e| io("store dir", e))?;
        std::fs::write(root.join("search"), body).map_err(|e| io("canned answer", e))?;
        if rich && kind == "seren_memory" {
            std::fs::write(root.join("by_topic"), topic_answer(index))
                .map_err(|e| io("canned answer", e))?;
        }
        let port = free_port()?;
        // A POST to a static file is a 405; `error_page 405 =200 $uri` answers it with the file
        // (nginx redirects the error as a GET), the request body read and discarded.
        servers.push_str(&format!(
            "    server {{\n        listen 127.0.0.1:{port};\n        root {};\n        \
             default_type application/json;\n        error_page 405 =200 $uri;\n    }}\n",
            root.display()
        ));
        stores.push((
            format!("s{index:02}-{}", &kind[6..]),
            kind,
            format!("http://127.0.0.1:{port}"),
        ));
    }
    let temp = dir.join("nginx-temp");
    std::fs::create_dir_all(&temp).map_err(|e| io("nginx temp dir", e))?;
    let t = temp.display();
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\nerror_log stderr warn;\n\
         pid {}/nginx.pid;\nevents {{\n    worker_connections 4096;\n}}\nhttp {{\n    \
         access_log off;\n    sendfile off;\n    open_file_cache max=64;\n    \
         keepalive_requests 100000000;\n    keepalive_timeout 75s;\n    \
         client_body_buffer_size 64k;\n    client_body_temp_path {t}/body;\n    \
         proxy_temp_path {t}/proxy;\n    fastcgi_temp_path {t}/fastcgi;\n    \
         uwsgi_temp_path {t}/uwsgi;\n    scgi_temp_path {t}/scgi;\n{servers}}}\n",
        dir.display()
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).map_err(|e| io("nginx.conf", e))?;
    let mut command = Command::new(nginx);
    command
        .arg("-p")
        .arg(dir)
        .arg("-e")
        .arg("stderr")
        .arg("-c")
        .arg(&path);
    let (mut proc, _) = Proc::spawn(command)?;
    let client = reqwest::Client::new();
    let began = Instant::now();
    for (_, _, url) in &stores {
        loop {
            let answer = client.post(format!("{url}/search")).body("{}").send().await;
            if let Ok(response) = answer
                && response.status() == reqwest::StatusCode::OK
            {
                let bytes = response.bytes().await.map_err(|e| e.to_string())?;
                check_answer(&Expect::Stub, &bytes)?;
                break;
            }
            if let Some(how) = proc.exited() {
                return Err(format!("nginx {how}:\n{}", proc.tail()));
            }
            if began.elapsed() > Duration::from_secs(10) {
                return Err(format!(
                    "nginx did not answer within 10 s:\n{}",
                    proc.tail()
                ));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    Ok(Nginx { proc, stores })
}

/// What one wrk run reported.
#[derive(Default, Clone, Copy)]
struct WrkRun {
    requests: usize,
    seconds: f64,
    p50: Duration,
    p99: Duration,
    max: Duration,
    /// Non-2xx answers and socket errors.
    errors: usize,
    /// CPU of the load (wrk and nginx together) and of the service during the run.
    load_cpu: Duration,
    service_cpu: Duration,
}

/// A wrk latency such as `812.00us`, `1.23ms` or `2.01s`.
fn wrk_duration(text: &str) -> Option<Duration> {
    let (number, scale) = if let Some(n) = text.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else {
        return None;
    };
    let value: f64 = number.parse().ok()?;
    Some(Duration::from_secs_f64(value * scale))
}

/// Reads wrk's report (`--latency`): requests and seconds, p50, p99, max, errors.
fn parse_wrk(out: &str) -> Result<WrkRun, String> {
    let mut run = WrkRun::default();
    let field = |line: &str, at: usize| line.split_whitespace().nth(at).map(str::to_owned);
    for line in out.lines().map(str::trim) {
        if line.starts_with("Latency ") && !line.contains("Distribution") {
            run.max = field(line, 3)
                .and_then(|t| wrk_duration(&t))
                .unwrap_or_default();
        } else if let Some(rest) = line.strip_prefix("50%") {
            run.p50 = wrk_duration(rest.trim()).ok_or("no p50 in wrk's report")?;
        } else if let Some(rest) = line.strip_prefix("99%") {
            run.p99 = wrk_duration(rest.trim()).ok_or("no p99 in wrk's report")?;
        } else if line.contains(" requests in ") {
            // `68950 requests in 10.00s, 43.92MB read`
            run.requests = field(line, 0).and_then(|n| n.parse().ok()).unwrap_or(0);
            run.seconds = field(line, 3)
                .and_then(|t| wrk_duration(t.trim_end_matches(',')))
                .map_or(0.0, |d| d.as_secs_f64());
        } else if let Some(rest) = line.strip_prefix("Non-2xx or 3xx responses:") {
            run.errors += rest.trim().parse::<usize>().unwrap_or(1);
        } else if let Some(rest) = line.strip_prefix("Socket errors:") {
            // `connect 0, read 0, write 0, timeout 0`
            run.errors += rest
                .split(',')
                .filter_map(|part| part.split_whitespace().nth(1)?.parse::<usize>().ok())
                .sum::<usize>();
        }
    }
    if run.requests == 0 || run.seconds <= 0.0 {
        return Err(format!("wrk reported no requests:\n{out}"));
    }
    Ok(run)
}

/// The Lua script that makes wrk send the load's request bodies in turn.
fn wrk_script(dir: &Path) -> Result<PathBuf, String> {
    let mut script = String::from("local bodies = {\n");
    for body in request_bodies() {
        let text = String::from_utf8(body.to_vec()).map_err(|e| e.to_string())?;
        script.push_str(&format!("  [==[{text}]==],\n"));
    }
    script.push_str(
        "}\nlocal requests = {}\nlocal n = 0\n\
         init = function(args)\n  for i, body in ipairs(bodies) do\n    \
         requests[i] = wrk.format(\"POST\", nil, {[\"Content-Type\"] = \"application/json\"}, body)\n  \
         end\nend\n\
         request = function()\n  n = n % #requests + 1\n  return requests[n]\nend\n",
    );
    let path = dir.join("search.lua");
    std::fs::write(&path, script).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// Runs wrk (one thread, `concurrency` connections) at `url` for `seconds`.
fn run_wrk(
    tools: &Tools,
    script: &Path,
    url: &str,
    concurrency: usize,
    seconds: u64,
    pids: (u32, u32),
) -> Result<WrkRun, String> {
    let cpu = |pid: u32| cpu_time(&pid.to_string()).unwrap_or_default();
    // wrk's CPU is this process's reaped-children time: wrk is the only child it waits for here.
    let load = || cpu(pids.1) + children_cpu_time("self").unwrap_or_default();
    let (service0, load0) = (cpu(pids.0), load());
    let output = Command::new(&tools.wrk)
        .args(["-t1", &format!("-c{concurrency}"), &format!("-d{seconds}s")])
        .args(["--latency", "--timeout", "10s", "-s"])
        .arg(script)
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run wrk: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "wrk exited with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let mut run = parse_wrk(&String::from_utf8_lossy(&output.stdout))?;
    run.service_cpu = cpu(pids.0).saturating_sub(service0);
    run.load_cpu = load().saturating_sub(load0);
    Ok(run)
}

/// Starts `who` on the config, warms it up (every answer checked), and drives it with wrk.
async fn measure_external(
    ctx: &mut Context,
    tools: &Tools,
    (scenario, who): (&External, Who),
    (dir, config, python_port): (&Path, &Path, u16),
    nginx: &Nginx,
    seconds: u64,
) -> Result<(WrkRun, Option<u64>, Option<u64>), String> {
    let service = match who {
        Who::Ours => start_ours(dir, config).await?,
        Who::Minimal => start_minimal(&nginx.entries()).await?,
        Who::Python => {
            let exe = ctx.python.clone().ok_or("no Python reference")?;
            start_python(&exe, dir, config, python_port).await?
        }
        _ => return Err(format!("{} is not driven by wrk", who.label())),
    };
    if who == Who::Ours {
        ctx.starts.push(service.start);
    }
    let expect = Expect::answer(scenario.packet, Vec::new());
    let target = Target::service(&service.base, &expect, 1);
    let warm = drive(
        &ctx.client,
        &target,
        scenario.concurrency,
        if who == Who::Python { 32 } else { 256 },
        ctx.limit,
        None,
    )
    .await;
    if warm.errors + warm.unsent > 0 {
        return Err(format!(
            "{} errors in the warm-up; first: {}",
            warm.errors + warm.unsent,
            warm.first_error.unwrap_or_default()
        ));
    }
    let script = wrk_script(dir)?;
    let url = format!("{}/search", service.base);
    let pids = (service.proc.pid(), nginx.proc.pid());
    let run = run_wrk(tools, &script, &url, scenario.concurrency, seconds, pids)?;
    // A sampled answer after the load: still a whole one.
    drive(&ctx.client, &target, 1, 4, ctx.limit, None)
        .await
        .first_error
        .map_or(Ok(()), Err)?;
    Ok((run, service.idle_rss_kib, service.peak_kib()))
}

/// One service's rounds of a scenario, and the most memory it held in any of them.
struct Rounds {
    who: Who,
    runs: Vec<WrkRun>,
    idle: Option<u64>,
    peak: Option<u64>,
}

/// One service's rounds made into one, as `pick` says.
fn pick_rounds(runs: &[WrkRun], pick: Pick) -> WrkRun {
    let cpu_per = |r: &WrkRun| r.service_cpu.as_secs_f64() / r.requests.max(1) as f64;
    match pick {
        // Every round's errors count, whichever round is kept.
        Pick::LeastCpu => WrkRun {
            errors: runs.iter().map(|r| r.errors).sum(),
            ..(runs.iter())
                .min_by(|a, b| cpu_per(a).total_cmp(&cpu_per(b)))
                .copied()
                .unwrap_or_default()
        },
        Pick::MedianP50 => {
            let mut p50s: Vec<Duration> = runs.iter().map(|r| r.p50).collect();
            p50s.sort();
            // The median; of an even count, the mean of the middle two.
            let n = p50s.len();
            let p50 = if n == 0 {
                Duration::ZERO
            } else if n % 2 == 1 {
                p50s[n / 2]
            } else {
                (p50s[n / 2 - 1] + p50s[n / 2]) / 2
            };
            WrkRun {
                p50,
                ..combine(runs)
            }
        }
    }
}

/// Every round of one service, in the order run: searches/s, CPU µs per search and p50 ms.
fn rounds_note(scenario: &External, who: Who, runs: &[WrkRun]) -> String {
    let each: Vec<String> = (runs.iter())
        .map(|r| {
            format!(
                "{:.0}/s {:.0} us {:.3} ms",
                r.requests as f64 / r.seconds.max(1e-9),
                r.service_cpu.as_secs_f64() * 1e6 / r.requests.max(1) as f64,
                r.p50.as_secs_f64() * 1e3
            )
        })
        .collect();
    let kept = match scenario.pick {
        Pick::LeastCpu => "the row is the round of least CPU per search",
        Pick::MedianP50 => "the row's p50 is the median",
    };
    format!(
        "{} {} rounds ({kept}): {}",
        scenario.name,
        who.label(),
        each.join("; ")
    )
}

/// Rounds of one service taken together: requests over seconds, the latencies averaged.
fn combine(runs: &[WrkRun]) -> WrkRun {
    let n = runs.len().max(1) as u32;
    let mean = |f: fn(&WrkRun) -> Duration| runs.iter().map(f).sum::<Duration>() / n;
    WrkRun {
        requests: runs.iter().map(|r| r.requests).sum(),
        seconds: runs.iter().map(|r| r.seconds).sum(),
        p50: mean(|r| r.p50),
        p99: mean(|r| r.p99),
        max: runs.iter().map(|r| r.max).max().unwrap_or_default(),
        errors: runs.iter().map(|r| r.errors).sum(),
        load_cpu: runs.iter().map(|r| r.load_cpu).sum(),
        service_cpu: runs.iter().map(|r| r.service_cpu).sum(),
    }
}

pub(super) async fn run_external(
    ctx: &mut Context,
    tools: &Tools,
    scenario: &External,
) -> Vec<Row> {
    let seconds = if ctx.quick { 2 } else { 10 };
    let rounds = if ctx.quick { 1 } else { scenario.rounds };
    eprintln!(
        "load: {} (wrk, K={EXTERNAL_STORES} nginx stores, C={}, {seconds} s x {rounds})",
        scenario.name, scenario.concurrency
    );
    let prepared = async {
        let dir = tempfile::Builder::new()
            .prefix("scc-bench-wrk-")
            .tempdir()
            .map_err(|e| format!("no temp dir: {e}"))?;
        let nginx = start_nginx(
            &tools.nginx,
            dir.path(),
            EXTERNAL_STORES,
            scenario.packet.rich_stubs(),
        )
        .await?;
        let python_port = free_port()?;
        let config = write_config_for(dir.path(), &nginx.entries(), python_port, scenario.packet)?;
        Ok::<_, String>((dir, nginx, python_port, config))
    };
    let (dir, nginx, python_port, config) = match prepared.await {
        Ok(prepared) => prepared,
        Err(e) => {
            ctx.failures.push(format!("{}: {e}", scenario.name));
            return Vec::new();
        }
    };
    let who: Vec<Who> = scenario
        .who
        .iter()
        .copied()
        .filter(|who| *who != Who::Python || ctx.python.is_some())
        .collect();
    let mut runs: Vec<Rounds> = who
        .iter()
        .map(|who| Rounds {
            who: *who,
            runs: Vec::new(),
            idle: None,
            peak: None,
        })
        .collect();
    for round in 0..rounds {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..who.len()).collect()
        } else {
            (0..who.len()).rev().collect()
        };
        for i in order {
            let places = (dir.path(), config.as_path(), python_port);
            match measure_external(ctx, tools, (scenario, who[i]), places, &nginx, seconds).await {
                Ok((run, idle, peak)) => {
                    let rounds = &mut runs[i];
                    rounds.runs.push(run);
                    rounds.idle = rounds.idle.max(idle);
                    rounds.peak = rounds.peak.max(peak);
                }
                Err(e) => {
                    let text = format!("{} {}: {e}", scenario.name, who[i].label());
                    if who[i] == Who::Python {
                        ctx.notes.push(format!("{text} (not judged)"));
                    } else {
                        ctx.failures.push(text);
                    }
                }
            }
        }
    }
    let mut rows: Vec<Row> = runs
        .iter()
        .filter(|rounds| !rounds.runs.is_empty())
        .map(
            |Rounds {
                 who,
                 runs,
                 idle,
                 peak,
             }| {
                let run = pick_rounds(runs, scenario.pick);
                if runs.len() > 1 {
                    ctx.notes.push(rounds_note(scenario, *who, runs));
                }
                let per = |cpu: Duration| Some(cpu.as_secs_f64() * 1e6 / run.requests as f64);
                if run.errors > 0 && *who != Who::Python {
                    ctx.failures.push(format!(
                        "{} {}: wrk saw {} errors",
                        scenario.name,
                        who.label(),
                        run.errors
                    ));
                }
                Row {
                    scenario: scenario.name,
                    who: *who,
                    stores: EXTERNAL_STORES,
                    latency: Duration::ZERO,
                    concurrency: scenario.concurrency,
                    requests: run.requests,
                    rps: run.requests as f64 / run.seconds,
                    p50: run.p50,
                    p99: run.p99,
                    max: run.max,
                    errors: run.errors,
                    idle_kib: *idle,
                    peak_kib: *peak,
                    vs_hop: None,
                    vs_python: None,
                    cpu_us: per(run.service_cpu),
                    harness_us: per(run.load_cpu),
                }
            },
        )
        .collect();
    let python = rows
        .iter()
        .find(|r| r.who == Who::Python && r.errors == 0)
        .map(|r| r.rps);
    if let Some(python) = python.filter(|rps| *rps > 0.0)
        && let Some(ours) = rows.iter_mut().find(|r| r.who == Who::Ours)
    {
        ours.vs_python = Some(ours.rps / python);
    }
    drop(nginx);
    rows
}
