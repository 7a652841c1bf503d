//! Results.

use super::*;

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Who {
    Ours,
    OneHop,
    DirectFan,
    /// The minimal fan (`minimal.rs`): reqwest and RRF, nothing else.
    Minimal,
    Python,
    /// A callosum fanning callosums (the tree scenario's top), counted with the ones it fans.
    Tree,
    /// One of the tree's middle callosums asked alone: one level.
    Middle,
    /// A callosum exporting every span (the traces scenario); `callosum` is the same with traces off.
    Traced,
    /// The build before traces existed (`SCC_BENCH_BEFORE_BIN`, the traces scenario's baseline).
    Before,
}

impl Who {
    pub(super) fn label(self) -> &'static str {
        match self {
            Who::Ours => "callosum",
            Who::OneHop => "one-hop",
            Who::DirectFan => "fan-direct",
            Who::Minimal => "min-fan",
            Who::Python => "python",
            Who::Tree => "tree",
            Who::Middle => "middle",
            Who::Traced => "traced",
            Who::Before => "before",
        }
    }
}

pub(super) struct Row {
    pub(super) scenario: &'static str,
    pub(super) who: Who,
    pub(super) stores: usize,
    pub(super) latency: Duration,
    pub(super) concurrency: usize,
    pub(super) requests: usize,
    pub(super) rps: f64,
    pub(super) p50: Duration,
    pub(super) p99: Duration,
    pub(super) max: Duration,
    pub(super) errors: usize,
    pub(super) idle_kib: Option<u64>,
    pub(super) peak_kib: Option<u64>,
    pub(super) vs_hop: Option<f64>,
    pub(super) vs_python: Option<f64>,
    /// The service's CPU per search, µs.
    pub(super) cpu_us: Option<f64>,
    /// This process's CPU (load generator + stubs) per search, µs.
    pub(super) harness_us: Option<f64>,
}

pub(super) fn percentile(sorted: &[Duration], pct: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((pct / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub(super) fn row_from(
    scenario: &Scenario,
    who: Who,
    run: &mut Run,
    warmup_errors: usize,
    memory: Option<(Option<u64>, Option<u64>)>,
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
        idle_kib: memory.and_then(|(idle, _)| idle),
        peak_kib: memory.and_then(|(_, peak)| peak),
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

pub(super) fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

pub(super) fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(|| "-".into(), |k| format!("{:.1}", k as f64 / 1024.0))
}

pub(super) fn added(row: &Row) -> String {
    if row.latency.is_zero() {
        return "-".into();
    }
    let over = |d: Duration| (d.as_secs_f64() - row.latency.as_secs_f64()) * 1e3;
    format!("+{:.2}/+{:.2}", over(row.p50), over(row.p99))
}

pub(super) fn micros(us: Option<f64>) -> String {
    us.map_or_else(|| "-".into(), |us| format!("{us:.0}"))
}

pub(super) fn ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "-".into(), |r| format!("{r:.2}x"))
}

pub(super) fn print_table(rows: &[Row]) {
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
    if rows.iter().any(|r| r.who == Who::Tree) {
        println!(
            "(tree: a callosum fanning three middle callosums of K/3 stubs each, its idle, peak and \
             cpu summed over the four processes; middle: one of them asked alone; callosum in the \
             tree scenario: the flat fan of the same K stubs)"
        );
    }
}
