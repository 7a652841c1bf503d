//! The traces scenario: what exporting every span costs a search. Two callosums over the same
//! instant stubs, one without `telemetry:` (traces off: one `Option` check per search, call and
//! round) and one with `sample_ratio: 1.0` exporting every span to a live OTLP/HTTP receiver in
//! this process, driven in turns (off, on, off, on) at C=1 and at C=64 so that the machine's drift
//! falls on both; the note gives on/off ratios of throughput, p50 and the service's CPU per
//! search, and what the receiver got (every export must arrive: no span dropped).
//!
//! Off against the service before traces existed is not measured here (it would be another
//! build): off runs no code of the SDK at all, so this on/off ratio bounds what traces can cost.

use super::*;

/// The concurrencies each is driven at: one search at a time (latency), and the throughput load.
const TRACES_CONCURRENCY: [usize; 2] = [1, 64];
/// Turns of (off, on) at each concurrency.
const TURNS: usize = 2;

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
        "load: {} (K={}, L={} ms, traces off and on in {TURNS} turns each at C={:?}, {} requests \
         each)",
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

async fn start(
    ctx: &mut Context,
    root: &Path,
    label: &str,
    stubs: &[Stub],
    telemetry: Option<&str>,
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
    let service = start_ours(&dir, &config)
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
    let off = start(ctx, root.path(), "off", &stubs, None).await?;
    let on = start(ctx, root.path(), "on", &stubs, Some(&collector.url)).await?;
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
        let (mut offs, mut ons) = (Vec::new(), Vec::new());
        for _ in 0..TURNS {
            let target = Target::service(&off.base, &expect, CHECK_EVERY);
            offs.push(measure(ctx, &at, Who::Ours, &[&off], &target, load).await);
            let target = Target::service(&on.base, &expect, CHECK_EVERY);
            ons.push(measure(ctx, &at, Who::Traced, &[&on], &target, load).await);
        }
        ctx.notes.push(turns_note(concurrency, &offs, &ons));
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

/// The on/off ratios at one concurrency, over all turns: throughput (summed searches over summed
/// wall time is the mean rate), p50 and p99 (means of the turns'), CPU per search (means).
fn turns_note(concurrency: usize, offs: &[Row], ons: &[Row]) -> String {
    let mean = |rows: &[Row], f: &dyn Fn(&Row) -> f64| {
        rows.iter().map(f).sum::<f64>() / rows.len().max(1) as f64
    };
    let rps = |rows: &[Row]| mean(rows, &|r| r.rps);
    let p50 = |rows: &[Row]| mean(rows, &|r| r.p50.as_secs_f64() * 1e3);
    let p99 = |rows: &[Row]| mean(rows, &|r| r.p99.as_secs_f64() * 1e3);
    let cpu = |rows: &[Row]| mean(rows, &|r| r.cpu_us.unwrap_or(f64::NAN));
    let turns: Vec<String> = (offs.iter().zip(ons))
        .map(|(off, on)| format!("{:.0}/{:.0}", off.rps, on.rps))
        .collect();
    format!(
        "traces C={concurrency}: on/off throughput {:.3} ({:.0} vs {:.0} searches/s; turns off/on \
         {}), p50 {:.3} ({:.3} vs {:.3} ms), p99 {:.3}, cpu per search {:.3} ({:.0} vs {:.0} us)",
        rps(ons) / rps(offs),
        rps(ons),
        rps(offs),
        turns.join(", "),
        p50(ons) / p50(offs),
        p50(ons),
        p50(offs),
        p99(ons) / p99(offs),
        cpu(ons) / cpu(offs),
        cpu(ons),
        cpu(offs),
    )
}
