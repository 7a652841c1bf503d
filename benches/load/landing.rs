//! Where each figure lands against its target, and the machine it ran on.

use super::*;

pub(super) fn machine() -> String {
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

pub(super) fn median(mut values: Vec<Duration>) -> Option<Duration> {
    values.sort_unstable();
    values.get(values.len().saturating_sub(1) / 2).copied()
}

pub(super) fn landing(rows: &[Row], ctx: &Context) -> Vec<String> {
    let find =
        |scenario: &str, who: Who| rows.iter().find(|r| r.scenario == scenario && r.who == who);
    let mut lines = Vec::new();
    let mark = |ok: bool| if ok { "meets" } else { "misses" };
    for (scenario, what) in [
        ("throughput", "plain RRF"),
        ("throughput-packet", "5.3.0's packet"),
    ] {
        let Some(ours) = find(scenario, Who::Ours) else {
            continue;
        };
        match ours.vs_python {
            Some(x) => lines.push(format!(
                "{scenario} K=3 L=0 C=64 ({what}): {:.0}/s = {x:.1}x Python in the same run \
                 (target >= 100x): {}",
                ours.rps,
                mark(x >= 100.0)
            )),
            None => lines.push(format!(
                "{scenario} K=3 L=0 C=64 ({what}): {:.0}/s; no Python reference in this run",
                ours.rps
            )),
        }
    }
    if let (Some(ours), Some(min)) = (
        find("throughput", Who::Ours),
        find("throughput", Who::Minimal),
    ) && min.rps > 0.0
    {
        lines.push(format!(
            "throughput C=64: {:.0}/s against the minimal fan's {:.0}/s = {:.2}x; CPU per search {} \
             against {} us",
            ours.rps,
            min.rps,
            ours.rps / min.rps,
            micros(ours.cpu_us),
            micros(min.cpu_us)
        ));
    }
    let p50_ratio = |a: &Row, b: &Row| a.p50.as_secs_f64() / b.p50.as_secs_f64().max(1e-9);
    if let (Some(ours), Some(min)) = (find("latency", Who::Ours), find("latency", Who::Minimal)) {
        let x = p50_ratio(ours, min);
        lines.push(format!(
            "latency K=3 L=0 C=1: p50 {} ms against the minimal fan's {} ms = {x:.2}x (target <= 1.2x): {}",
            ms(ours.p50),
            ms(min.p50),
            mark(x <= 1.2)
        ));
    }
    if let Some(plain) = find("latency", Who::Ours) {
        if let Some(local) = find("latency-packet-local", Who::Ours) {
            let x = p50_ratio(local, plain);
            lines.push(format!(
                "the packet's own work at C=1 (its block without the calls it adds): p50 {} ms \
                 against plain {} ms = {x:.2}x (target <= 1.3x): {}",
                ms(local.p50),
                ms(plain.p50),
                mark(x <= 1.3)
            ));
        }
        if let Some(full) = find("latency-packet", Who::Ours) {
            lines.push(format!(
                "the whole packet at C=1 (with its topic-edge and two hop rounds of store calls): \
                 p50 {} ms against plain {} ms = {:.2}x",
                ms(full.p50),
                ms(plain.p50),
                p50_ratio(full, plain)
            ));
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
    lines.extend(landing_external(rows));
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
    if let Some(peak) = find("wide-64", Who::Ours).and_then(|r| r.peak_kib) {
        lines.push(format!(
            "RSS under C=64 with 64 stores of 20 hits: peak {} MiB (the bound on store answers \
             held at once by all searches: {} MiB)",
            mib(Some(peak)),
            seren_corpus_callosum::limits::MAX_ANSWER_BYTES >> 20
        ));
    }
    if let Some(ours) = find("memory-flat", Who::Ours) {
        lines.push(format!(
            "flat after {} searches: see the memory-flat note above (VmRSS along the run)",
            ours.requests
        ));
    }
    let tree = |who: Who| {
        rows.iter()
            .find(|r| r.scenario == "tree" && r.who == who && r.concurrency == 1)
    };
    if let (Some(flat), Some(top), Some(middle)) =
        (tree(Who::Ours), tree(Who::Tree), tree(Who::Middle))
    {
        let over = |a: Duration, b: Duration| (a.as_secs_f64() - b.as_secs_f64()) * 1e3;
        lines.push(format!(
            "tree of callosums, C=1: one more level adds {:+.2} ms at p50 over the flat {}-store \
             fan ({} vs {} ms); one level of {} alone answers in {} ms",
            over(top.p50, flat.p50),
            flat.stores,
            ms(top.p50),
            ms(flat.p50),
            middle.stores,
            ms(middle.p50)
        ));
    }
    if let Some(start) = median(ctx.starts.clone()) {
        let worst = ctx.starts.iter().max().copied().unwrap_or_default();
        lines.push(format!(
            "start (exec to first /health 200): median {} ms, worst {} ms over {} starts (target < 150): {}",
            ms(start),
            ms(worst),
            ctx.starts.len(),
            mark(start < Duration::from_millis(150))
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

/// The wrk scenarios' lines: against Python and against the minimal fan, in CPU per search (what
/// holds between machines, issue 42) and in searches/s.
fn landing_external(rows: &[Row]) -> Vec<String> {
    let find =
        |scenario: &str, who: Who| rows.iter().find(|r| r.scenario == scenario && r.who == who);
    let mark = |ok: bool| if ok { "meets" } else { "misses" };
    let cpu = |row: &Row| row.cpu_us.unwrap_or(f64::NAN);
    let mut lines = Vec::new();
    for (scenario, what, python_target) in [
        ("wrk-throughput", "plain RRF", 45.0),
        ("wrk-throughput-packet", "5.3.0's packet", 35.0),
    ] {
        let Some(ours) = find(scenario, Who::Ours) else {
            continue;
        };
        let load = format!(
            "{scenario} (wrk, nginx stores) C=64 ({what}): {:.0}/s, {} us of CPU a search",
            ours.rps,
            micros(ours.cpu_us)
        );
        lines.push(match find(scenario, Who::Python) {
            Some(python) => {
                let per_cpu = cpu(python) / cpu(ours);
                format!(
                    "{load}; Python {:.0}/s, {} us a search: {per_cpu:.1}x Python per CPU \
                     (target >= {python_target}x): {}; {:.1}x its searches/s",
                    python.rps,
                    micros(python.cpu_us),
                    mark(per_cpu >= python_target),
                    ours.rps / python.rps.max(1e-9),
                )
            }
            None => format!("{load}; no Python reference in this run"),
        });
        if let Some(min) = find(scenario, Who::Minimal).filter(|m| m.rps > 0.0) {
            let x = cpu(ours) / cpu(min);
            lines.push(format!(
                "{scenario}: CPU a search {} against the minimal fan's {} us = {x:.2}x (target \
                 <= 1.25x): {}; {:.2}x its {:.0}/s",
                micros(ours.cpu_us),
                micros(min.cpu_us),
                mark(x <= 1.25),
                ours.rps / min.rps,
                min.rps,
            ));
        }
    }
    if let (Some(ours), Some(min)) = (
        find("wrk-latency", Who::Ours),
        find("wrk-latency", Who::Minimal),
    ) {
        let x = ours.p50.as_secs_f64() / min.p50.as_secs_f64().max(1e-9);
        lines.push(format!(
            "wrk-latency C=1: p50 {} ms against the minimal fan's {} ms = {x:.2}x (target <= \
             1.2x): {}",
            ms(ours.p50),
            ms(min.p50),
            mark(x <= 1.2)
        ));
    }
    lines
}
