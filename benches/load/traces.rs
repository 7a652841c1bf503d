//! The traces scenario: what exporting every span costs a search. Two callosums over the same
//! instant stubs, one without `telemetry:` (traces off: one `Option` check per search, call and
//! round) and one with `sample_ratio: 1.0` exporting every span to a live OTLP/HTTP receiver in
//! this process, driven in turns (off, on, off, on) at C=1 and at C=64 so that the machine's drift
//! falls on both; the note gives on/off ratios of throughput, p50 and the service's CPU per
//! search, and what the receiver got (every export must arrive: no span dropped).
//!
//! `SCC_BENCH_BEFORE_BIN=PATH` adds a third callosum, the build at PATH (the last commit before
//! traces, `b5c4917`), driven in the same turns (before, off, on): the off/before ratios show
//! what traces cost when they are off.

use super::*;

/// The concurrencies each is driven at: one search at a time (latency), and the throughput load.
const TRACES_CONCURRENCY: [usize; 2] = [1, 64];
/// Turns of (off, on) at each concurrency; of (before, off, on) when a build before traces is
/// named, whose off/before difference is the smaller one to see.
const TURNS: usize = 2;
const TURNS_WITH_BEFORE: usize = 4;

/// An OTLP/HTTP receiver that counts what it is sent and answers an empty success, as a
/// collector does; it decodes nothing, so its own CPU stays out of the callosum's way.
struct Collector {
    url: String,
    exports: Arc<AtomicUsize>,
    bytes: Arc<AtomicUsize>,
    _stop: tokio_util::sync::DropGuard,
}

async fn collector() -> Collector {
    let (exports, bytes) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let counts = (exports.clone(), bytes.clone());
    let router = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: Bytes| {
            let (exports, bytes) = counts.clone();
            async move {
                exports.fetch_add(1, Ordering::Relaxed);
                bytes.fetch_add(body.len(), Ordering::Relaxed);
                ([(CONTENT_TYPE, "application/x-protobuf")], Bytes::new())
            }
        }),
    );
    let stop = tokio_util::sync::CancellationToken::new();
    let url = support::serve_loopback(router, stop.clone()).await;
    Collector {
        url,
        exports,
        bytes,
        _stop: stop.drop_guard(),
    }
}

pub(super) async fn run_traces(ctx: &mut Context, scenario: &Scenario) -> Vec<Row> {
    eprintln!(
        "load: {} (K={}, L={} ms, traces off and on in {TURNS} turns each, or with the build \
         before traces in {TURNS_WITH_BEFORE}, at C={:?}, {} requests each)",
        scenario.name,
        scenario.stores,
        scenario.latency.as_millis(),
        TRACES_CONCURRENCY,
        scenario.requests
    );
    let mut rows = Vec::new();
    if let Err(e) = traces(ctx, scenario, &mut rows).await {
        ctx.failures.push(format!("{}: {e}", scenario.name));
    }
    rows
}

/// The build before traces to compare "off" with (`SCC_BENCH_BEFORE_BIN`), if one is named.
fn before_binary() -> Option<PathBuf> {
    std::env::var_os("SCC_BENCH_BEFORE_BIN").map(PathBuf::from)
}

async fn start(
    ctx: &mut Context,
    root: &Path,
    label: &str,
    stubs: &[Stub],
    telemetry: Option<&str>,
    binary: &Path,
) -> Result<Service, String> {
    let dir = root.join(label);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    let port = free_port().map_err(|e| format!("no free port: {e}"))?;
    let config = write_config(&dir, stubs, port, Packet::Plain)?;
    if let Some(endpoint) = telemetry {
        let mut yaml = std::fs::read_to_string(&config).map_err(|e| e.to_string())?;
        yaml.push_str(&format!(
            "telemetry:\n  otlp_endpoint: {endpoint}\n  service_name: bench\n  sample_ratio: 1.0\n"
        ));
        std::fs::write(&config, yaml).map_err(|e| e.to_string())?;
    }
    let service = start_build(binary, &dir, &config)
        .await
        .map_err(|e| format!("the {label} callosum did not start: {e}"))?;
    ctx.starts.push(service.start);
    Ok(service)
}

/// The dropped-span counters of `service`'s `/metrics`: (queue_full, export_failed).
async fn dropped(ctx: &Context, service: &Service) -> Result<(f64, f64), String> {
    let text = (ctx.client.get(format!("{}/metrics", service.base)))
        .send()
        .await
        .map_err(|e| chain(&e))?
        .text()
        .await
        .map_err(|e| chain(&e))?;
    let value = |reason: &str| {
        let series = format!("seren_callosum_trace_spans_dropped_total{{reason=\"{reason}\"}} ");
        (text.lines())
            .find_map(|line| line.strip_prefix(&series)?.parse::<f64>().ok())
            .ok_or_else(|| format!("no {series}in /metrics"))
    };
    Ok((value("queue_full")?, value("export_failed")?))
}

async fn traces(ctx: &mut Context, scenario: &Scenario, rows: &mut Vec<Row>) -> Result<(), String> {
    let stubs = start_stubs(scenario).await?;
    let collector = collector().await;
    let root = tempfile::Builder::new()
        .prefix("scc-bench-traces-")
        .tempdir()
        .map_err(|e| format!("no temp dir: {e}"))?;
    let ours = service_binary();
    let off = start(ctx, root.path(), "off", &stubs, None, &ours).await?;
    let on = start(ctx, root.path(), "on", &stubs, Some(&collector.url), &ours).await?;
    let before = match before_binary() {
        Some(binary) => Some(start(ctx, root.path(), "before", &stubs, None, &binary).await?),
        None => None,
    };
    let expect = Expect::Fused {
        hits: 10,
        failed: Vec::new(),
    };
    for concurrency in TRACES_CONCURRENCY {
        let at = Scenario {
            concurrency,
            ..scenario.clone()
        };
        let load = (at.warmup, at.requests);
        let (mut befores, mut offs, mut ons) = (Vec::new(), Vec::new(), Vec::new());
        let turns = if before.is_some() {
            TURNS_WITH_BEFORE
        } else {
            TURNS
        };
        for _ in 0..turns {
            if let Some(before) = &before {
                let target = Target::service(&before.base, &expect, CHECK_EVERY);
                befores.push(measure(ctx, &at, Who::Before, &[before], &target, load).await);
            }
            let target = Target::service(&off.base, &expect, CHECK_EVERY);
            offs.push(measure(ctx, &at, Who::Ours, &[&off], &target, load).await);
            let target = Target::service(&on.base, &expect, CHECK_EVERY);
            ons.push(measure(ctx, &at, Who::Traced, &[&on], &target, load).await);
        }
        ctx.notes
            .push(turns_note(concurrency, ("off", "on"), &offs, &ons));
        if !befores.is_empty() {
            ctx.notes
                .push(turns_note(concurrency, ("before", "off"), &befores, &offs));
        }
        rows.extend(befores);
        rows.extend(offs.into_iter().zip(ons).flat_map(|(a, b)| [a, b]));
    }
    // Every span queued is sent within the batch delay (5 s): wait for the last batch.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let (queue_full, export_failed) = dropped(ctx, &on).await?;
    let (exports, bytes) = (
        collector.exports.load(Ordering::Relaxed),
        collector.bytes.load(Ordering::Relaxed),
    );
    ctx.notes.push(format!(
        "traces: the receiver got {exports} exports, {:.1} MiB of protobuf; spans dropped: \
         {queue_full} for a full queue, {export_failed} in failed exports",
        bytes as f64 / (1024.0 * 1024.0)
    ));
    if exports == 0 || queue_full + export_failed > 0.0 {
        ctx.failures.push(format!(
            "traces: {exports} exports arrived, {queue_full} + {export_failed} spans dropped"
        ));
    }
    drop(stubs);
    Ok(())
}

/// The ratios of `names.1`'s rows over `names.0`'s (on over off, say) at one concurrency, over
/// all turns: throughput, p50 and p99, CPU per search (means of the turns').
fn turns_note(concurrency: usize, names: (&str, &str), a_rows: &[Row], b_rows: &[Row]) -> String {
    let (a, b) = names;
    let mean = |rows: &[Row], f: &dyn Fn(&Row) -> f64| {
        rows.iter().map(f).sum::<f64>() / rows.len().max(1) as f64
    };
    let rps = |rows: &[Row]| mean(rows, &|r| r.rps);
    let p50 = |rows: &[Row]| mean(rows, &|r| r.p50.as_secs_f64() * 1e3);
    let p99 = |rows: &[Row]| mean(rows, &|r| r.p99.as_secs_f64() * 1e3);
    let cpu = |rows: &[Row]| mean(rows, &|r| r.cpu_us.unwrap_or(f64::NAN));
    let turns: Vec<String> = (a_rows.iter().zip(b_rows))
        .map(|(a, b)| format!("{:.0}/{:.0}", a.rps, b.rps))
        .collect();
    format!(
        "traces C={concurrency}: {b}/{a} throughput {:.3} ({:.0} vs {:.0} searches/s; turns {a}/{b} \
         {}), p50 {:.3} ({:.3} vs {:.3} ms), p99 {:.3}, cpu per search {:.3} ({:.0} vs {:.0} us)",
        rps(b_rows) / rps(a_rows),
        rps(b_rows),
        rps(a_rows),
        turns.join(", "),
        p50(b_rows) / p50(a_rows),
        p50(b_rows),
        p50(a_rows),
        p99(b_rows) / p99(a_rows),
        cpu(b_rows) / cpu(a_rows),
        cpu(b_rows),
        cpu(a_rows),
    )
}
