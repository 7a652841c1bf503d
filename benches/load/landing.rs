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
