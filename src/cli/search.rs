//! `search`: one search through the configured stores, printed as a table a person reads (or as
//! JSON, exactly as `POST /search` answers).

use super::args::SearchArgs;
use super::run::{Load, emit, execute};
use crate::api;
use crate::chain::Chain;
use crate::config::Config;
use crate::federation::Federation;
use crate::text::{cut, printable};
use std::process::ExitCode;

/// `search`: exit 0 with the answer on stdout, 2 when the search was refused (said on stderr).
pub fn run(args: SearchArgs) -> ExitCode {
    let config = args.config.clone();
    execute(&config, None, Load::File, |loaded, _| search(loaded, args))
}

async fn search(config: Config, args: SearchArgs) -> anyhow::Result<ExitCode> {
    let federation = Federation::start(config).await?;
    let answer = match federation
        .search(
            &crate::view::Caller::local(),
            &api::SearchRequest {
                query: args.query.clone(),
                n_results: args.n_results,
                budget_tokens: args.budget_tokens,
                stores: (!args.stores.is_empty()).then(|| args.stores.clone()),
                exclude_stores: (!args.exclude_stores.is_empty())
                    .then(|| args.exclude_stores.clone()),
                explain: args.explain,
                identity: args.identity.as_deref().and_then(api::Identity::parse),
            },
            &Chain::root(),
        )
        .await
    {
        Ok(answer) => answer,
        Err(refusal) => {
            eprintln!("seren-corpus-callosum: {refusal}");
            return Ok(ExitCode::from(2));
        }
    };
    let out = if args.json {
        serde_json::to_string_pretty(&answer)? + "\n"
    } else {
        render_table(&answer)
    };
    emit(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes a command's output to stdout. A reader that went away (`| head -1`) is not an error: the
/// The answer as a table a person can read: one line per hit with its provenance, then what
/// answered, failed and was skipped.
fn render_table(answer: &api::SearchAnswer) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let store_width = answer
        .hits
        .iter()
        .map(|h| h.store.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    let number = |value: Option<f64>| value.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "{:>3}  {:<7}  {:<store_width$}  {:>4}  {:>5}  {:>6}  {:>6}  content",
        "#", "rrf", "store", "rank", "rel", "native", "d"
    );
    for (i, hit) in answer.hits.iter().enumerate() {
        // Hop hits and edges say what they are before their text.
        let place = crate::render::place(hit);
        let content = printable(&hit.content);
        let content = if place.starts_with('#') {
            content
        } else {
            format!("[{place}] {content}")
        };
        let content = if content.chars().count() > 72 {
            cut(&content, 69)
        } else {
            content
        };
        let _ = writeln!(
            out,
            "{:>3}  {:<7.5}  {:<store_width$}  {:>4}  {:>5.3}  {:>6}  {:>6}  {content}",
            i + 1,
            hit.score,
            printable(&hit.store),
            format!("#{}", hit.store_rank),
            hit.base_relevance,
            number(hit.native_score),
            number(hit.raw_distance),
        );
        if let Some(also) = crate::render::also(hit) {
            let _ = writeln!(out, "     {}", printable(&also));
        }
        if let Some(explain) = &hit.explain {
            let _ = writeln!(out, "     why: {}", printable(&explain.why));
        }
    }
    for dropped in answer.explain_dropped.iter().flatten() {
        let _ = writeln!(
            out,
            "left out: {} #{} {}: {}",
            printable(&dropped.store),
            dropped.store_rank,
            printable(&dropped.id),
            printable(&dropped.why)
        );
    }
    if answer.hits.is_empty() {
        let _ = writeln!(out, "  (no hits)");
    }
    let _ = match answer.budget_tokens {
        Some(budget) => writeln!(out, "tokens: {} of {budget}", answer.tokens),
        None => writeln!(out, "tokens: {}", answer.tokens),
    };
    let _ = writeln!(out);
    render_stores(answer, &mut out);
    out
}

/// What answered, failed and was skipped, under the table.
fn render_stores(answer: &api::SearchAnswer, out: &mut String) {
    use std::fmt::Write;
    let _ = writeln!(
        out,
        "searched: {}",
        or_none(&answer.stores_searched.join(", "))
    );
    for (word, entries) in [
        ("failed:  ", &answer.failed),
        ("skipped: ", &answer.skipped),
    ] {
        for entry in entries {
            let _ = writeln!(
                out,
                "{word} {}: {}",
                printable(&entry.name),
                printable(&entry.reason)
            );
        }
    }
}

fn or_none(text: &str) -> &str {
    if text.is_empty() { "(none)" } else { text }
}
