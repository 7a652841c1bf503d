//! Options and scenarios.

use super::*;

/// `cargo bench --bench load -- [--quick] [--python | --no-python] [--only A,B]`.
/// `SCC_BENCH_BIN=PATH` runs another build of the service (an unstripped one, to profile);
/// `SCC_BENCH_SERVICE_CPUS=LIST` runs the services on those CPUs only (`procs::pinned`).
#[derive(clap::Parser)]
#[command(
    name = "load",
    about = "The load harness: the callosum under load, beside one HTTP hop and the Python service."
)]
pub(super) struct Args {
    /// A few hundred requests per scenario (seconds); skips Python unless --python.
    #[arg(long)]
    quick: bool,
    /// Run the Python 5.3.0 reference in quick mode too.
    #[arg(long, conflicts_with = "no_python")]
    python: bool,
    /// Skip the Python reference in full mode.
    #[arg(long)]
    no_python: bool,
    /// Run only these scenarios (throughput, latency, added-latency, throughput-packet, latency-packet, latency-packet-local, edges-latency, wide-fan, wide-64, one-hanging, memory-flat, tree, traces; driven by wrk against nginx stores: wrk-throughput, wrk-throughput-packet, wrk-latency).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    only: Option<Vec<String>>,
    /// Serve as the minimal fan over these stores (NAME=URL,...): the harness starts itself so.
    #[arg(long, hide = true, value_name = "NAME=URL,...")]
    minimal_fan: Option<String>,
    /// Passed by `cargo bench` to every bench binary; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

pub(super) struct Options {
    pub(super) quick: bool,
    pub(super) python: bool,
    /// Run only these scenarios (`--only throughput,added-latency`).
    pub(super) only: Option<Vec<String>>,
    /// Run as the minimal fan over these stores, not as the harness.
    pub(super) minimal_fan: Option<String>,
}

impl Options {
    /// Whether the scenario named `name` runs (`--only`, else every one).
    pub(super) fn runs(&self, name: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|chosen| chosen == name))
    }
}

/// The command line, read with clap (`--help` says the same as the doc above).
pub(super) fn parse_args() -> Options {
    use clap::Parser;
    let args = Args::parse();
    Options {
        quick: args.quick,
        python: if args.quick {
            args.python
        } else {
            !args.no_python
        },
        only: args.only,
        minimal_fan: args.minimal_fan,
    }
}

#[derive(Clone)]
pub(super) struct Scenario {
    pub(super) name: &'static str,
    /// K: stores fanned, the hanging one included.
    pub(super) stores: usize,
    /// The last store accepts connections and never answers.
    pub(super) hanging: bool,
    /// L: each stub's latency.
    pub(super) latency: Duration,
    /// C: concurrent workers.
    pub(super) concurrency: usize,
    pub(super) requests: usize,
    pub(super) warmup: usize,
    /// Requests sent to the Python reference (0: not run for this scenario).
    pub(super) python_requests: usize,
    /// Run the one-hop reference (or reuse one of the same L and C).
    pub(super) one_hop: bool,
    /// Run the direct-fan reference: the load generator asks the K stubs itself.
    pub(super) direct_fan: bool,
    /// Sample the callosum's RSS during the run (the memory-flatness run).
    pub(super) track_rss: bool,
    /// What of 5.3.0's packet is on (plain RRF, the edges alone, or the whole block).
    pub(super) packet: Packet,
    /// Run the minimal fan (`minimal.rs`) on the same stubs and load.
    pub(super) minimal: bool,
    /// The tree of callosums (`tree.rs`): K stubs fanned flat and through middle callosums, at
    /// each of `TREE_CONCURRENCY`; `concurrency` is the highest of them.
    pub(super) tree: bool,
    /// The traces scenario (`traces.rs`): the same load with traces off and exporting, in turns.
    pub(super) traces: bool,
}

pub(super) fn scenarios(quick: bool) -> Vec<Scenario> {
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
            minimal: true,
            track_rss: false,
            packet: Packet::Plain,
            tree: false,
            traces: false,
        },
        // The callosum's own time at C=1, the stores answering at once: beside the minimal fan.
        Scenario {
            name: "latency",
            stores: 3,
            hanging: false,
            latency: Duration::ZERO,
            concurrency: 1,
            requests: pick(3_000, 200),
            warmup: pick(200, 20),
            python_requests: pick(300, 30),
            one_hop: true,
            direct_fan: true,
            minimal: true,
            track_rss: false,
            packet: Packet::Plain,
            tree: false,
            traces: false,
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
            minimal: true,
            track_rss: false,
            packet: Packet::Plain,
            tree: false,
            traces: false,
        },
        // 5.3.0's whole packet block on both sides (authority, seats, satellite and topic edges,
        // two hops, an 800-token page), the stubs' answers carrying what it works on.
        Scenario {
            name: "throughput-packet",
            stores: 3,
            hanging: false,
            latency: Duration::ZERO,
            concurrency: 64,
            requests: pick(20_000, 400),
            warmup: pick(2_000, 128),
            python_requests: pick(1_000, 100),
            one_hop: false,
            direct_fan: false,
            minimal: false,
            track_rss: false,
            packet: Packet::Full,
            tree: false,
            traces: false,
        },
        Scenario {
            name: "latency-packet",
            stores: 3,
            hanging: false,
            latency: Duration::ZERO,
            concurrency: 1,
            requests: pick(3_000, 200),
            warmup: pick(200, 20),
            python_requests: pick(300, 30),
            one_hop: false,
            direct_fan: false,
            minimal: false,
            track_rss: false,
            packet: Packet::Full,
            tree: false,
            traces: false,
        },
        // The packet's own work: the same block without the calls it adds (topic edges, hops).
        Scenario {
            name: "latency-packet-local",
            stores: 3,
            hanging: false,
            latency: Duration::ZERO,
            concurrency: 1,
            requests: pick(3_000, 200),
            warmup: pick(200, 20),
            python_requests: 0,
            one_hop: false,
            direct_fan: false,
            minimal: false,
            track_rss: false,
            packet: Packet::Local,
            tree: false,
            traces: false,
        },
        // added-latency with 5.3.0's edges on: the topic join is a second round trip.
        Scenario {
            name: "edges-latency",
            stores: 3,
            hanging: false,
            latency: Duration::from_millis(20),
            concurrency: 1,
            requests: pick(1_000, 50),
            warmup: pick(50, 5),
            python_requests: 0,
            one_hop: false,
            direct_fan: false,
            minimal: false,
            track_rss: false,
            packet: Packet::Edges,
            tree: false,
            traces: false,
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
            minimal: false,
            track_rss: false,
            packet: Packet::Plain,
            tree: false,
            traces: false,
        },
        // Memory with a wide fan: 64 stores of 20 hits each, C=64.
        Scenario {
            name: "wide-64",
            stores: 64,
            hanging: false,
            latency: Duration::ZERO,
            concurrency: 64,
            requests: pick(3_000, 128),
            warmup: pick(256, 64),
            python_requests: 0,
            one_hop: false,
            direct_fan: false,
            minimal: false,
            track_rss: false,
            packet: Packet::Plain,
            tree: false,
            traces: false,
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
            minimal: false,
            track_rss: false,
            packet: Packet::Plain,
            tree: false,
            traces: false,
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
            minimal: false,
            track_rss: true,
            packet: Packet::Plain,
            tree: false,
            traces: false,
        },
        // A callosum fanning three callosums of 16 stores each, against the flat 48-store fan;
        // `requests` at each concurrency, for each of flat, tree and one middle alone.
        Scenario {
            name: "tree",
            stores: TREE_STORES,
            hanging: false,
            latency: Duration::ZERO,
            concurrency: TREE_CONCURRENCY[TREE_CONCURRENCY.len() - 1],
            requests: pick(2_000, 150),
            warmup: pick(200, 32),
            python_requests: 0,
            one_hop: false,
            direct_fan: false,
            minimal: false,
            track_rss: false,
            packet: Packet::Plain,
            tree: true,
            traces: false,
        },
        // What exporting every span costs: three instant stores, traces off and on in turns, at
        // C=1 and C=64 (`traces.rs`).
        Scenario {
            name: "traces",
            stores: 3,
            hanging: false,
            latency: Duration::ZERO,
            concurrency: 64,
            requests: pick(20_000, 2_000),
            warmup: pick(1_000, 200),
            python_requests: 0,
            one_hop: false,
            direct_fan: false,
            minimal: false,
            track_rss: false,
            packet: Packet::Plain,
            tree: false,
            traces: true,
        },
    ]
}

/// The packet's page in the packet scenarios' config (`budget_tokens`).
pub(super) const PACKET_BUDGET_TOKENS: u64 = 800;

/// The per-store timeout written into every config (the hanging scenario's bound).
pub(super) const PER_STORE_TIMEOUT_S: u64 = 2;

/// What of 5.3.0's packet block a scenario's config turns on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Packet {
    /// Plain RRF: the seed's defaults, edges off.
    Plain,
    /// Satellite and topic edges only: every search also asks each SerenMemory stub `/by_topic`
    /// (which answers after the same latency). The stubs' answers are the plain ones.
    Edges,
    /// The block without the calls it adds: authority, seats, satellite edges, the page.
    Local,
    /// The whole block: authority, seats, satellite and topic edges, two hops, the page.
    Full,
}

impl Packet {
    /// The stubs answer with what the packet works on (surroundings, an exact key, topic hits).
    pub(super) fn rich_stubs(self) -> bool {
        matches!(self, Packet::Local | Packet::Full)
    }

    /// The `federation` lines of this block, for the config template.
    pub(super) fn config_lines(self) -> String {
        let lines: &[&str] = match self {
            Packet::Plain => &["edges_enabled: false", "satellite_edges_enabled: false"],
            Packet::Edges => &["edges_enabled: true", "satellite_edges_enabled: true"],
            Packet::Local => &[
                "authority_margin: 0.035",
                "min_per_store: 1",
                "edges_enabled: false",
                "satellite_edges_enabled: true",
                "satellite_budget: 5",
                "hops: 1",
            ],
            Packet::Full => &[
                "authority_margin: 0.035",
                "min_per_store: 1",
                "edges_enabled: true",
                "edge_budget: 3",
                "satellite_edges_enabled: true",
                "satellite_budget: 5",
                "hops: 2",
                "hop_terms: 2",
                "hop_budget: 3",
            ],
        };
        let mut text: String = lines.iter().map(|line| format!("  {line}\n")).collect();
        if self.rich_stubs() {
            text.push_str(&format!("  budget_tokens: {PACKET_BUDGET_TOKENS}\n"));
        }
        text
    }
}
