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
use crate::api::{self, StoreStatus};
use crate::chain::Chain;
use crate::config::Config;
use crate::eval::judgments::{self, Doc, Format, Judged};
use crate::eval::metrics::{self, Metric};
use crate::eval::report::{self, Failed, Outcome, Report};
use crate::eval::runs;
use crate::federation::Federation;
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
    let fan = federation.roster().fan();
    let roster: Vec<String> = fan.rows.iter().map(|row| row.name.clone()).collect();
    let stores: Vec<String> = fan.bound.iter().map(|bound| bound.name.clone()).collect();
    let skipped = (fan.rows.iter())
        .filter_map(|row| {
            let reason = match &row.status {
                StoreStatus::Active => return None,
                StoreStatus::Disabled => "disabled".to_owned(),
                StoreStatus::Skipped(reason) => reason.clone(),
            };
            Some(Failed {
                name: row.name.clone(),
                reason,
            })
        })
        .collect();
    let judged = match read(&args.judgments, &roster) {
        Ok(judged) => judged,
        Err(code) => return Ok(code),
    };
    let k = usize::from(args.k);
    let mut files = match args
        .runs
        .as_deref()
        .map(|dir| RunFiles::create(dir, &stores))
    {
        None => None,
        Some(Ok(files)) => Some(files),
        Some(Err(error)) => return Ok(cannot_write(&error)),
    };
    let progress = Progress::new(judged.len());
    let mut outcomes = Vec::with_capacity(judged.len());
    for (done, query) in judged.iter().enumerate() {
        progress.show(done);
        let (outcome, fused, alone) = measure(&federation, query, &stores, k).await;
        if let Some(files) = files.as_mut()
            && let Err(error) = files.write(&query.qid, &fused, &alone)
        {
            progress.clear();
            return Ok(cannot_write(&error));
        }
        outcomes.push(outcome);
    }
    progress.clear();
    if let Some(Err(error)) = files.map(RunFiles::finish) {
        return Ok(cannot_write(&error));
    }
    let report = report::report(k, &stores, outcomes, skipped);
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
fn read(path: &Path, roster: &[String]) -> Result<Vec<Judged>, ExitCode> {
    let text = read_capped(path)?;
    let parsed = match Format::of(&text) {
        Format::JsonLines => judgments::json_lines(&text, roster),
        Format::Qrels => {
            let queries = path.with_file_name("queries.tsv");
            judgments::qrels(&text, &read_capped(&queries)?, roster)
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

/// A ranking as a run file holds it: each document once, with the score it was ranked by.
type Ranked = Vec<(Doc, f64)>;

/// One query's searches: the fusion's, then each store's alone, each measured; and the rankings.
async fn measure(
    federation: &Federation,
    query: &Judged,
    stores: &[String],
    k: usize,
) -> (Outcome, Ranked, Vec<Ranked>) {
    let mut failed = Vec::new();
    let fused = search(federation, &query.query, k, None, &mut failed).await;
    let mut alone = Vec::with_capacity(stores.len());
    for store in stores {
        alone.push(search(federation, &query.query, k, Some(store), &mut failed).await);
    }
    let measured = |ranked: &Ranked| {
        let docs: Vec<Doc> = ranked.iter().map(|(doc, _)| doc.clone()).collect();
        metrics::scores(&docs, &query.grades, k)
    };
    let outcome = Outcome {
        qid: query.qid.clone(),
        query: query.query.clone(),
        relevant: query.relevant(),
        fused: measured(&fused),
        stores: alone.iter().map(measured).collect(),
        failed,
    };
    (outcome, fused, alone)
}

/// The search the service answers for `query`, `k` hits, aimed at `store` alone when named: its
/// first `k` distinct documents. A store that failed is added to `failed` (once a query); a
/// refused search is an empty ranking, named there too.
async fn search(
    federation: &Federation,
    query: &str,
    k: usize,
    store: Option<&String>,
    failed: &mut Vec<Failed>,
) -> Ranked {
    let mut request = api::SearchRequest::new(query);
    request.n_results = Some(k as i64);
    request.stores = store.map(|name| vec![name.clone()]);
    let mut note = |name: String, reason: String| {
        if !failed.iter().any(|f| f.name == name) {
            failed.push(Failed { name, reason });
        }
    };
    match federation.search(&request, &Chain::root()).await {
        Ok(answer) => {
            for entry in answer.failed {
                note(entry.name, entry.reason);
            }
            let hits =
                (answer.hits.into_iter()).map(|hit| (Doc::new(hit.store, hit.id), hit.score));
            runs::distinct(hits, k)
        }
        Err(refusal) => {
            let name = store.map_or_else(|| "(every store)".to_owned(), Clone::clone);
            note(name, format!("search refused: {refusal}"));
            Vec::new()
        }
    }
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

/// How far the queries are, on stderr, when stderr is a terminal (a log or a pipe gets none).
struct Progress {
    total: usize,
    on: bool,
}

impl Progress {
    fn new(total: usize) -> Self {
        use std::io::IsTerminal;
        Self {
            total,
            on: std::io::stderr().is_terminal(),
        }
    }

    /// `done` queries of the total are measured: one line, written over.
    fn show(&self, done: usize) {
        if self.on {
            let width = 24;
            let filled = done * width / self.total.max(1);
            eprint!(
                "\reval [{}{}] {done}/{} queries",
                "#".repeat(filled),
                " ".repeat(width - filled),
                self.total
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
        "{} judged quer{}, k = {k}: each mean with its {:.0}% bootstrap interval ({} resamples)",
        report.queries,
        if report.queries == 1 { "y" } else { "ies" },
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
