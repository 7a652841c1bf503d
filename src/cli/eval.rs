//! `eval`: the fusion, and each store alone, scored against judged queries (contract §8). The
//! judgments are read whole and checked against the roster before anything is searched. Then each
//! query runs through the same search the service answers (`n_results` = k, under the same
//! config, knobs and overlay) and through that search aimed at each store alone (`stores:
//! [name]`: the store's own ranked list after its floor, under the same shaping); each ranking is
//! measured (`eval::metrics`), written to run files with `--runs`, and the report printed: a
//! table a person reads, or one JSON document (`--json`, docs/evaluation.md).
//!
//! A store that fails a search counts as an empty ranking there, and is named with the query.

use super::args::EvalArgs;
use super::run::{Load, emit, execute};
use crate::config::Config;
use crate::eval::evaluate::{MIN_TUNE_QUERIES, Options, Plan, Ranked, Step, evaluate};
use crate::eval::judgments::{self, Format, Judged, Scope};
use crate::eval::metrics::Metric;
use crate::eval::report::{Failed, Report, Tuning};
use crate::eval::runs;
use crate::eval::tune::Method;
use crate::federation::Federation;
use crate::identity::Identity;
use crate::limits::MAX_JUDGMENTS_BYTES;
use crate::text::{cut, printable};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// EX_DATAERR from sysexits.h: the judgments are not valid.
const EXIT_DATA: u8 = 65;
/// EX_NOINPUT: the judgments (or the `queries.tsv` beside qrels) cannot be read.
const EXIT_NO_INPUT: u8 = 66;
/// EX_CANTCREAT: a run file cannot be written.
const EXIT_CANT_CREATE: u8 = 73;
/// The bad lines said, at most; the rest are counted. Twenty show what is wrong; a file wrong on
/// every line would otherwise print itself back.
const BAD_SHOWN: usize = 20;
/// The per-query lines of the table, at most (`--json` has every query).
const QUERIES_SHOWN: usize = 20;
/// The store failures the table lists, at most (`--json` has each with its query).
const FAILED_SHOWN: usize = 20;

/// `eval`: exit 0 with the report on stdout; 65, 66, 73 or 78 (said on stderr) otherwise.
pub fn run(args: EvalArgs) -> ExitCode {
    let config = args.config.clone();
    execute(&config, None, Load::File, |loaded, _| eval(loaded, args))
}

async fn eval(config: Config, args: EvalArgs) -> anyhow::Result<ExitCode> {
    let federation = Federation::start(config).await?;
    let identity = args.identity.as_deref().and_then(Identity::parse);
    let plan = Plan::new(&federation, &crate::view::Caller::local(), identity);
    let judged = match read(&args.judgments, plan.scope()) {
        Ok(judged) => judged,
        Err(code) => return Ok(code),
    };
    if args.tune && judged.len() < MIN_TUNE_QUERIES {
        eprintln!(
            "seren-corpus-callosum: --tune needs at least {MIN_TUNE_QUERIES} judged queries (half \
             to tune on, half to check on); {} has {}",
            args.judgments.display(),
            judged.len()
        );
        return Ok(ExitCode::from(EXIT_DATA));
    }
    let options = Options {
        k: usize::from(args.k),
        tune: args.tune,
    };
    let mut files = match args
        .runs
        .as_deref()
        .map(|dir| RunFiles::create(dir, &plan.stores))
    {
        None => None,
        Some(Ok(files)) => Some(files),
        Some(Err(error)) => return Ok(cannot_write(&error)),
    };
    let progress = Progress::new();
    let report = evaluate(&federation, &plan, &judged, options, |step| {
        let (done, total) = match step {
            Step::Measured {
                done,
                total,
                qid,
                fused,
                alone,
            } => {
                if let Some(files) = files.as_mut() {
                    files.write(qid, fused, alone)?;
                }
                (done, total)
            }
            Step::Checked { done, total } => (done, total),
        };
        progress.show(done, total);
        Ok(())
    })
    .await;
    progress.clear();
    let report = match report {
        Ok(report) => report,
        Err(error) => return Ok(cannot_write(&error)),
    };
    if let Some(Err(error)) = files.map(RunFiles::finish) {
        return Ok(cannot_write(&error));
    }
    let out = if args.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        table(&report, &judged)
    };
    emit(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Reads the judgments (and, for qrels, the `queries.tsv` beside them), each file at most
/// [`MAX_JUDGMENTS_BYTES`], and checks them against the roster's names; says on stderr what is
/// wrong otherwise, with the exit code.
fn read(path: &Path, scope: Scope) -> Result<Vec<Judged>, ExitCode> {
    let text = read_capped(path)?;
    let parsed = match Format::of(&text) {
        Format::JsonLines => judgments::json_lines(&text, scope),
        Format::Qrels => {
            let queries = path.with_file_name("queries.tsv");
            judgments::qrels(&text, &read_capped(&queries)?, scope)
        }
    };
    parsed.map_err(|bad| {
        eprintln!(
            "seren-corpus-callosum: judgments {}: {} problem{}; nothing was searched",
            path.display(),
            bad.len(),
            if bad.len() == 1 { "" } else { "s" }
        );
        for problem in bad.iter().take(BAD_SHOWN) {
            eprintln!("  {}", printable(&problem.to_string()));
        }
        if bad.len() > BAD_SHOWN {
            eprintln!("  ... and {} more", bad.len() - BAD_SHOWN);
        }
        ExitCode::from(EXIT_DATA)
    })
}

/// A file's text, read through a reader that stops one byte past [`MAX_JUDGMENTS_BYTES`].
fn read_capped(path: &Path) -> Result<String, ExitCode> {
    use std::io::Read;
    let say = |why: &str, code: u8| {
        eprintln!("seren-corpus-callosum: judgments {}: {why}", path.display());
        ExitCode::from(code)
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_JUDGMENTS_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| say(&format!("cannot read it: {e}"), EXIT_NO_INPUT))?;
    if bytes.len() as u64 > MAX_JUDGMENTS_BYTES {
        return Err(say(
            &format!(
                "larger than {} MiB (MAX_JUDGMENTS_BYTES); not read",
                MAX_JUDGMENTS_BYTES / (1024 * 1024)
            ),
            EXIT_DATA,
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        say(
            &format!("not UTF-8 (byte {})", e.utf8_error().valid_up_to()),
            EXIT_DATA,
        )
    })
}

/// The `--runs` folder's files, open while the queries run: `fused.run` and one a store.
struct RunFiles {
    dir: PathBuf,
    fused: std::io::BufWriter<std::fs::File>,
    stores: Vec<(String, std::io::BufWriter<std::fs::File>)>,
}

/// Why a run file could not be written, said (exit 73).
fn cannot_write(error: &RunError) -> ExitCode {
    eprintln!(
        "seren-corpus-callosum: --runs: cannot write {}: {}",
        error.0.display(),
        error.1
    );
    ExitCode::from(EXIT_CANT_CREATE)
}

/// A run file, and what writing it met.
struct RunError(PathBuf, std::io::Error);

impl RunFiles {
    /// Makes `dir` (and its parents) and creates its files, over any there.
    fn create(dir: &Path, stores: &[String]) -> Result<Self, RunError> {
        std::fs::create_dir_all(dir).map_err(|e| RunError(dir.to_owned(), e))?;
        let open = |name: &str| {
            let path = dir.join(name);
            std::fs::File::create(&path)
                .map(std::io::BufWriter::new)
                .map_err(|e| RunError(path, e))
        };
        let fused = open(runs::FUSED_FILE)?;
        let stores = (stores.iter())
            .map(|name| Ok((name.clone(), open(&runs::store_file(name))?)))
            .collect::<Result<_, RunError>>()?;
        Ok(Self {
            dir: dir.to_owned(),
            fused,
            stores,
        })
    }

    /// One query's lines, in each file.
    fn write(&mut self, qid: &str, fused: &Ranked, alone: &[Ranked]) -> Result<(), RunError> {
        let dir = &self.dir;
        (self.fused)
            .write_all(runs::lines(qid, fused, runs::FUSED_TAG).as_bytes())
            .map_err(|e| RunError(dir.join(runs::FUSED_FILE), e))?;
        for ((name, file), ranked) in self.stores.iter_mut().zip(alone) {
            file.write_all(runs::lines(qid, ranked, name).as_bytes())
                .map_err(|e| RunError(dir.join(runs::store_file(name)), e))?;
        }
        Ok(())
    }

    /// Every file flushed.
    fn finish(mut self) -> Result<(), RunError> {
        let dir = &self.dir;
        (self.fused.flush()).map_err(|e| RunError(dir.join(runs::FUSED_FILE), e))?;
        for (name, file) in &mut self.stores {
            (file.flush()).map_err(|e| RunError(dir.join(runs::store_file(name)), e))?;
        }
        Ok(())
    }
}

/// How far the searches are, on stderr, when stderr is a terminal (a log or a pipe gets none).
struct Progress {
    on: bool,
}

impl Progress {
    fn new() -> Self {
        use std::io::IsTerminal;
        Self {
            on: std::io::stderr().is_terminal(),
        }
    }

    /// `done` queries of `total` are measured: one line, written over.
    fn show(&self, done: usize, total: usize) {
        if self.on {
            let width = 24;
            let filled = (done * width / total.max(1)).min(width);
            eprint!(
                "\reval [{}{}] {done}/{total} queries",
                "#".repeat(filled),
                " ".repeat(width - filled),
            );
        }
    }

    /// The line taken away.
    fn clear(&self) {
        if self.on {
            eprint!("\r{}\r", " ".repeat(80));
        }
    }
}

/// The report as a person reads it: each run's means with their intervals, the queries where
/// fusing lost the most to a store alone, the queries that judge nothing relevant, and what
/// failed.
fn table(report: &Report, judged: &[Judged]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let k = report.k;
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "{} judged quer{}, k = {k}{}: each mean with its {:.0}% bootstrap interval ({} resamples)",
        report.queries,
        if report.queries == 1 { "y" } else { "ies" },
        if report.identity.is_on() {
            format!(", identity {}", report.identity.name())
        } else {
            String::new()
        },
        report.bootstrap.level * 100.0,
        report.bootstrap.resamples
    );
    let _ = writeln!(out);
    const FUSED: &str = "(fused)";
    let width = (report.stores.iter())
        .map(|s| s.store.chars().count())
        .chain([FUSED.len()])
        .max()
        .unwrap_or(0);
    let mut line = format!("{:<width$}", "run");
    for metric in Metric::ALL {
        let _ = write!(line, "  {:<20}", metric.label(k));
    }
    let _ = writeln!(out, "{}", line.trim_end());
    let runs = std::iter::once((FUSED, &report.fused))
        .chain(report.stores.iter().map(|s| (s.store.as_str(), &s.summary)));
    for (name, summary) in runs {
        let mut line = format!("{name:<width$}");
        for metric in Metric::ALL {
            let e = summary.get(metric);
            let shown = format!("{:.3} [{:.3}, {:.3}]", e.mean, e.low, e.high);
            let _ = write!(line, "  {shown:<20}");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    per_query(report, &mut out);
    let nothing: Vec<&str> = (judged.iter())
        .filter(|j| j.relevant() == 0)
        .map(|j| j.qid.as_str())
        .collect();
    if !nothing.is_empty() {
        let _ = writeln!(
            out,
            "\njudging nothing relevant, so 0 in every run (as trec_eval scores them): qid {}",
            nothing.join(", ")
        );
    }
    failures(report, &mut out);
    if let Some(tuning) = &report.tune {
        tuned(tuning, k, &mut out);
    }
    for skipped in &report.skipped {
        let _ = writeln!(
            out,
            "not searched: {}: {}",
            printable(&skipped.name),
            printable(&skipped.reason)
        );
    }
    out
}

/// The queries where fusing lost the most to the best store alone, worst first.
fn per_query(report: &Report, out: &mut String) {
    use std::fmt::Write;
    if report.stores.is_empty() {
        let _ = writeln!(out, "\nno store was searched alone: no delta to show");
        return;
    }
    let queries = report.worst_first();
    let shown = queries.len().min(QUERIES_SHOWN);
    let _ = writeln!(
        out,
        "\nper query, the fusion's nDCG@{} minus the best store's alone, worst first{}:",
        report.k,
        if shown < queries.len() {
            format!(" ({shown} of {})", queries.len())
        } else {
            String::new()
        }
    );
    let qid_width = (queries.iter().take(shown))
        .map(|q| q.qid.chars().count())
        .chain([3])
        .max()
        .unwrap_or(3);
    let store_width = (report.stores.iter())
        .map(|s| s.store.chars().count())
        .chain([5])
        .max()
        .unwrap_or(5);
    let _ = writeln!(
        out,
        "{:<qid_width$}  {:>6}  {:>5}  {:>5}  {:<store_width$}  query",
        "qid", "delta", "fused", "best", "store"
    );
    for query in queries.into_iter().take(shown) {
        let best = (query.stores.iter())
            .find(|s| query.best_store.as_ref() == Some(&s.store))
            .map_or(0.0, |s| s.scores.ndcg);
        let text = printable(&query.query);
        let _ = writeln!(
            out,
            "{:<qid_width$}  {:>+6.3}  {:>5.3}  {:>5.3}  {:<store_width$}  {}",
            printable(&query.qid),
            query.delta_ndcg.unwrap_or(0.0),
            query.fused.ndcg,
            best,
            query.best_store.as_deref().unwrap_or("-"),
            if text.chars().count() > 60 {
                cut(&text, 57)
            } else {
                text
            }
        );
    }
}

/// What `--tune` found: the current and the tuned setting on the held-out queries, and how to
/// apply the tuned one.
fn tuned(tuning: &Tuning, k: usize, out: &mut String) {
    use std::fmt::Write;
    let method = match tuning.method {
        Method::Exhaustive => "every combination",
        Method::CoordinateAscent => "one knob at a time",
    };
    let _ = writeln!(
        out,
        "\n--tune: each store's weight and RRF's k searched on {} queries ({method}, {} settings{}), \
         then checked on the {} held out with real searches:",
        tuning.tuned_on.len(),
        tuning.tried,
        if tuning.bounded {
            ", stopped at MAX_TUNE_WORK"
        } else {
            ""
        },
        tuning.held_out.len()
    );
    let names: Vec<String> = (tuning.current.weights.iter())
        .map(|w| printable(&w.store))
        .collect();
    let widths: Vec<usize> = names.iter().map(|n| n.chars().count().max(6)).collect();
    let mut head = format!("{:<8}  {:>4}", "setting", "k");
    for (name, width) in names.iter().zip(&widths) {
        let _ = write!(head, "  {name:>width$}");
    }
    let _ = write!(
        head,
        "  {:>12}  {:<20}  {:<20}",
        format!("nDCG@{k} tuned"),
        format!("nDCG@{k} held out"),
        format!("Recall@{k} held out")
    );
    let _ = writeln!(out, "{}", head.trim_end());
    for (label, setting) in [("current", &tuning.current), ("tuned", &tuning.tuned)] {
        let mut line = format!("{label:<8}  {:>4}", setting.k);
        for (weight, width) in setting.weights.iter().zip(&widths) {
            let _ = write!(line, "  {:>width$}", weight.weight);
        }
        let (ndcg, recall) = (setting.held_out.ndcg, setting.held_out.recall);
        let _ = write!(
            line,
            "  {:>12.3}  {:<20}  {:<20}",
            setting.tuned_on_ndcg,
            format!("{:.3} [{:.3}, {:.3}]", ndcg.mean, ndcg.low, ndcg.high),
            format!("{:.3} [{:.3}, {:.3}]", recall.mean, recall.low, recall.high)
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let delta = tuning.delta_ndcg;
    if !tuning.changed {
        let _ = writeln!(
            out,
            "no setting tried beat the current one on the queries tuned on: it stays"
        );
    } else {
        let _ = writeln!(
            out,
            "held out, the tuned nDCG@{k} minus the current, query by query: {:+.3} [{:+.3}, {:+.3}]",
            delta.mean, delta.low, delta.high
        );
        let _ = writeln!(
            out,
            "to apply it, in the config (nothing was changed):\n{}",
            indent(&tuning.yaml)
        );
        let _ = writeln!(
            out,
            "or live, as POST /configure's body:\n  {}",
            tuning.configure
        );
    }
    let shown: Vec<String> = (tuning.held_out.iter().take(QUERIES_SHOWN))
        .map(|q| printable(q))
        .collect();
    let _ = writeln!(
        out,
        "held out (split seed {:#x}): qid {}{}",
        tuning.split_seed,
        shown.join(", "),
        if tuning.held_out.len() > shown.len() {
            format!(
                ", ... ({} in all; --json lists each)",
                tuning.held_out.len()
            )
        } else {
            String::new()
        }
    );
}

/// `text`'s lines, each two spaces in.
fn indent(text: &str) -> String {
    (text.lines())
        .map(|line| format!("  {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each store that gave nothing to a query's search, bounded.
fn failures(report: &Report, out: &mut String) {
    use std::fmt::Write;
    let all: Vec<(&str, &Failed)> = (report.per_query.iter())
        .flat_map(|q| q.failed.iter().map(move |f| (q.qid.as_str(), f)))
        .collect();
    if all.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nfailed, each counted as an empty ranking:");
    for (qid, failed) in all.iter().take(FAILED_SHOWN) {
        let _ = writeln!(
            out,
            "  qid {qid}: {}: {}",
            printable(&failed.name),
            printable(&failed.reason)
        );
    }
    if all.len() > FAILED_SHOWN {
        let _ = writeln!(
            out,
            "  ... and {} more (--json has each)",
            all.len() - FAILED_SHOWN
        );
    }
}
