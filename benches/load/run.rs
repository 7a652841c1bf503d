//! Running a scenario.

use super::*;

pub(super) struct Context {
    pub(super) quick: bool,
    pub(super) python: Option<PathBuf>,
    pub(super) client: reqwest::Client,
    pub(super) limit: Duration,
    /// One-hop runs by (L, C), reused across scenarios.
    pub(super) hops: HashMap<(Duration, usize), (f64, Duration, Duration)>,
    pub(super) starts: Vec<Duration>,
    pub(super) python_starts: Vec<Duration>,
    pub(super) notes: Vec<String>,
    pub(super) failures: Vec<String>,
}

/// Starts a scenario's stubs and writes its config.
pub(super) async fn prepare(
    scenario: &Scenario,
) -> Result<(Vec<Stub>, tempfile::TempDir, u16, PathBuf), String> {
    let stubs = start_stubs(scenario).await?;
    let dir = tempfile::Builder::new()
        .prefix("scc-bench-")
        .tempdir()
        .map_err(|e| format!("no temp dir: {e}"))?;
    let python_port = free_port().map_err(|e| format!("no free port: {e}"))?;
    let config = write_config(dir.path(), &stubs, python_port, scenario.packet)?;
    Ok((stubs, dir, python_port, config))
}

/// Warms a running service up, drives the measured load at it, and makes its row. Errors of ours
/// are failures; Python's are notes. `services` is the service asked, then any it fans that the
/// row counts with it (a tree's middle callosums): their CPU and memory are summed.
pub(super) async fn measure(
    ctx: &mut Context,
    scenario: &Scenario,
    who: Who,
    services: &[&Service],
    target: &Target,
    (warmup, requests): (usize, usize),
) -> Row {
    let service = services[0];
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
    let pids: Vec<u32> = services.iter().map(|s| s.proc.pid()).collect();
    let sampler = (scenario.track_rss && who == Who::Ours)
        .then(|| spawn_rss_sampler(pid, progress.clone(), ctx.limit));
    let mut run = drive_measured(
        &pids,
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
    let peak = services.iter().map(|s| s.peak_kib()).sum();
    let idle = services.iter().map(|s| s.idle_rss_kib).sum();
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
        Some((idle, peak)),
    )
}

/// Drives a reference that is not a service (one stub, or the direct fan) and makes its row.
pub(super) async fn measure_stubs(
    ctx: &mut Context,
    scenario: &Scenario,
    who: Who,
    target: &Target,
) -> Row {
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
        &[],
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

pub(super) async fn run_scenario(ctx: &mut Context, scenario: &Scenario) -> Vec<Row> {
    if scenario.tree {
        return run_tree(ctx, scenario).await;
    }
    if scenario.traces {
        return run_traces(ctx, scenario).await;
    }
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
    let failed = if scenario.hanging {
        vec!["hanging".into()]
    } else {
        Vec::new()
    };
    let expect = Expect::answer(scenario.packet, failed);

    // Ours.
    match start_ours(dir.path(), &config).await {
        Ok(service) => {
            ctx.starts.push(service.start);
            let target = Target::service(&service.base, &expect, CHECK_EVERY);
            let before = accepted(&stubs);
            let row = measure(
                ctx,
                scenario,
                Who::Ours,
                &[&service],
                &target,
                (scenario.warmup, scenario.requests),
            )
            .await;
            // Keep-alive to every store: connections opened against searches made.
            if !scenario.hanging {
                ctx.notes.push(format!(
                    "{}: the stubs accepted {} connections from the callosum over {} searches \
                     (warm-up included) of {} stores at C={}",
                    scenario.name,
                    accepted(&stubs) - before,
                    scenario.warmup + row.requests,
                    scenario.stores,
                    scenario.concurrency
                ));
            }
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

    // The minimal fan on the same stubs, as a process of its own (`minimal.rs`).
    if scenario.minimal {
        match start_minimal(&entries(&stubs)).await {
            Ok(service) => {
                let target = Target::service(&service.base, &expect, CHECK_EVERY);
                let row = measure(
                    ctx,
                    scenario,
                    Who::Minimal,
                    &[&service],
                    &target,
                    (scenario.warmup, scenario.requests),
                )
                .await;
                rows.push(row);
            }
            Err(e) => ctx.failures.push(format!("{}: {e}", scenario.name)),
        }
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
                    &[&service],
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
pub(super) fn spawn_rss_sampler(
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

pub(super) fn rss_note(
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
