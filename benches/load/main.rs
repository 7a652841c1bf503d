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
//! same stubs with the same config file. One scenario, `tree`, starts several callosums: one
//! fanning 48 stubs, and one fanning three that each fan 16 of them (`tree.rs`).
//!
//! Every loop is bounded in count and in time, and every child process is killed when its guard is
//! dropped (also on panic). The exit code is non-zero when a scenario of ours (or the one-hop
//! reference) saw an error, timed out, or could not start; the Python reference is reported, never
//! judged. Nothing here asserts a target: it prints where each figure lands.

use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The release binary; cargo builds it before this bench and names it here.
const BIN: &str = env!("CARGO_BIN_EXE_seren-corpus-callosum");

/// The service binary to run: `SCC_BENCH_BIN` (another build, say an unstripped one to profile),
/// else the release binary cargo just built.
fn service_binary() -> PathBuf {
    std::env::var_os("SCC_BENCH_BIN").map_or_else(|| PathBuf::from(BIN), PathBuf::from)
}
const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");
const CONFIG_TEMPLATE: &str = include_str!("../../bench/callosum.yaml.template");
/// Hits each stub store answers.
const STUB_HITS: usize = 20;
/// Every this-many-th answer of ours is parsed and checked (the first one always is). Parsing
/// every answer would take CPU from the service on this 2-core machine. Python's answers (a few
/// hundred a second at most) are all checked.
const CHECK_EVERY: usize = 32;
/// The service's log filter: `warn`, except the start-up lines (info) that name the bound port.
/// Nothing on the request path logs at info.
const LOG_FILTER: &str = "warn,seren_corpus_callosum=info";

// The test suite's stub and fault stores, shared rather than copied. The bench uses a few of
// them; the rest is the tests' own, hence the allow.
#[allow(dead_code)]
#[path = "../../tests/it/support/mod.rs"]
mod support;

mod drive;
mod external;
mod landing;
mod minimal;
mod procs;
mod python;
mod report;
mod run;
mod scenarios;
mod stubs;
mod traces;
mod tree;

use drive::*;
use external::*;
use landing::*;
use minimal::*;
use procs::*;
use python::*;
use report::*;
use run::*;
use scenarios::*;
use stubs::*;
use traces::*;
use tree::*;

/// The harness and the minimal fan it starts both allocate as the service does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let options = parse_args();
    if let Some(stores) = &options.minimal_fan {
        return minimal::serve(stores);
    }
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
    if let Some(cpus) = service_cpus() {
        notes.push(format!(
            "the services ran on CPUs {cpus} only (taskset, SCC_BENCH_SERVICE_CPUS); this \
             process, its stubs, wrk and nginx on {}",
            own_cpus()
        ));
    }
    if drive::explain() {
        notes.push("every search asks explain: true (SCC_BENCH_EXPLAIN=1)".into());
    }
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
        let chosen = scenarios(options.quick)
            .into_iter()
            .filter(|scenario| options.runs(scenario.name));
        for scenario in chosen {
            rows.extend(run_scenario(&mut ctx, &scenario).await);
        }
        let external: Vec<External> = external_scenarios()
            .into_iter()
            .filter(|scenario| options.runs(scenario.name))
            .collect();
        if !external.is_empty() {
            match external_tools() {
                Ok(tools) => {
                    for scenario in &external {
                        rows.extend(run_external(&mut ctx, &tools, scenario).await);
                    }
                }
                Err(e) => ctx.notes.push(format!("wrk scenarios: skipped, {e}")),
            }
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
