//! `eval`, the binary as a process, against stub stores on loopback: the JSON document's numbers
//! worked out by hand, the TREC run files, qrels with their queries.tsv, and judgments that are
//! refused before any store is asked.

use crate::support::process::*;
use crate::support::*;
use serde_json::{Value, json};
use std::path::Path;

/// Two stores answering "alpha" (notes: a1, a2, a3; facts: f1, f2) and a third that is not there.
async fn stores() -> (StubStore, StubStore, tempfile::TempDir, String) {
    let notes = StubStore::start(Behaviour::ByQuery(vec![(
        "alpha",
        memory_hits(&[("a1", 0.1), ("a2", 0.2), ("a3", 0.3)]),
    )]))
    .await;
    let facts = StubStore::start(Behaviour::ByQuery(vec![(
        "alpha",
        loci_hits(&[("f1", 0.9), ("f2", 0.8)]),
    )]))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &config_yaml(&[
            ("notes", "seren_memory", &notes.url, ""),
            ("facts", "seren_loci", &facts.url, ""),
            ("gone", "seren_memory", &closed_port_url(), ""),
        ]),
    );
    (notes, facts, dir, config)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn close(value: &Value, expected: f64) -> bool {
    (value.as_f64().unwrap() - expected).abs() < 1e-12
}

#[tokio::test]
async fn eval_reports_each_run_and_writes_run_files() {
    let (notes, facts, dir, config) = stores().await;
    let judgments = write(
        dir.path(),
        "judgments.jsonl",
        r#"{"query": "alpha", "relevant": [{"store": "notes", "id": "a2"}, {"store": "facts", "id": "f1", "grade": 1}, {"store": "notes", "id": "a3", "grade": 0}]}"#,
    );
    let runs = dir.path().join("runs");
    let output = run(command(&[
        "eval",
        "-c",
        &config,
        "--judgments",
        &judgments,
        "--k",
        "3",
        "--json",
        "--runs",
        &runs.display().to_string(),
    ]))
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // Not a terminal: no progress line.
    assert!(!stderr.contains("queries"), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["k"], 3);
    assert_eq!(report["queries"], 1);
    assert_eq!(report["bootstrap"]["resamples"], 1000);
    let names: Vec<&str> = (report["stores"].as_array().unwrap().iter())
        .map(|s| s["store"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["notes", "facts", "gone"]);

    // By hand, two relevant documents (a2, f1), ideal DCG 1 + 1/log2(3):
    let (l3, ideal) = (1.0 / 3f64.log2(), 1.0 + 1.0 / 3f64.log2());
    let query = &report["per_query"][0];
    assert_eq!(
        (query["qid"].as_str(), query["relevant"].as_u64()),
        (Some("1"), Some(2))
    );
    // The fusion, k 60: a1 and f1 tie at 1/61 (the store earlier in the roster first), then a2
    // at 1/62: f1 at rank 2, a2 at 3.
    let fused = &query["fused"];
    assert!(close(&fused["ndcg"], (l3 + 0.5) / ideal), "{fused}");
    assert!(
        close(&fused["recall"], 1.0) && close(&fused["mrr"], 0.5),
        "{fused}"
    );
    assert!(close(&fused["precision"], 2.0 / 3.0), "{fused}");
    // notes alone: a2 at rank 2; facts alone: f1 at rank 1; gone: nothing.
    let alone = &query["stores"];
    assert!(close(&alone[0]["ndcg"], l3 / ideal), "{alone}");
    assert!(
        close(&alone[0]["mrr"], 0.5) && close(&alone[0]["recall"], 0.5),
        "{alone}"
    );
    assert!(close(&alone[1]["ndcg"], 1.0 / ideal), "{alone}");
    assert!(
        close(&alone[1]["mrr"], 1.0) && close(&alone[1]["precision"], 1.0 / 3.0),
        "{alone}"
    );
    assert!(close(&alone[2]["ndcg"], 0.0), "{alone}");
    assert_eq!(query["best_store"], "facts");
    assert!(
        close(&query["delta_ndcg"], (l3 + 0.5 - 1.0) / ideal),
        "{query}"
    );
    assert_eq!(query["failed"][0]["name"], "gone", "{query}");
    // One query: each mean is its value, and so is each end of its interval.
    for end in ["mean", "low", "high"] {
        assert!(
            close(&report["fused"]["ndcg"][end], (l3 + 0.5) / ideal),
            "{report}"
        );
    }

    // The run files: one a store and the fusion's, scores falling strictly as trec_eval reads
    // them (a 32-bit float), the tie at 1/61 broken one step down.
    let read = |name: &str| std::fs::read_to_string(runs.join(name)).unwrap();
    let fused_run = read("fused.run");
    let rows: Vec<Vec<&str>> = fused_run.lines().map(|l| l.split(' ').collect()).collect();
    let docids: Vec<&str> = rows.iter().map(|r| r[2]).collect();
    assert_eq!(docids, ["notes/a1", "facts/f1", "notes/a2"], "{fused_run}");
    let scores: Vec<f64> = rows.iter().map(|r| r[4].parse().unwrap()).collect();
    assert_eq!(scores[0], f64::from((1.0f64 / 61.0) as f32), "{fused_run}");
    assert_eq!(scores[1], f64::from(((1.0f64 / 61.0) as f32).next_down()));
    assert!(
        scores.windows(2).all(|w| (w[1] as f32) < (w[0] as f32)),
        "{fused_run}"
    );
    assert!(
        rows.iter().enumerate().all(|(i, r)| r[0] == "1"
            && r[1] == "Q0"
            && r[3] == (i + 1).to_string()
            && r[5] == "fused"),
        "{fused_run}"
    );
    let notes_run = read("store.notes.run");
    let docids: Vec<&str> = (notes_run.lines())
        .map(|l| l.split(' ').nth(2).unwrap())
        .collect();
    assert_eq!(docids, ["notes/a1", "notes/a2", "notes/a3"], "{notes_run}");
    assert!(
        notes_run.lines().all(|l| l.ends_with(" notes")),
        "{notes_run}"
    );
    assert_eq!(read("store.facts.run").lines().count(), 2);
    assert_eq!(read("store.gone.run"), "");
    // Each store was asked once by the fused search and once alone.
    assert_eq!((notes.captured().len(), facts.captured().len()), (2, 2));
    assert_eq!(
        notes.captured()[0].body["n_results"],
        6,
        "ask: k x fetch_multiplier"
    );

    // The table a person reads.
    let output = run(command(&[
        "eval",
        "-c",
        &config,
        "--judgments",
        &judgments,
        "--k",
        "3",
    ]))
    .await;
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{table}");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0],
        "1 judged query, k = 3: each mean with its 95% bootstrap interval (1000 resamples)"
    );
    assert!(
        lines[2].starts_with("run      nDCG@3") && lines[2].ends_with("P@3"),
        "{table}"
    );
    assert!(
        lines[3].starts_with("(fused)  0.693 [0.693, 0.693]"),
        "{table}"
    );
    assert!(
        lines[5].starts_with("facts    0.613 [0.613, 0.613]  0.500"),
        "{table}"
    );
    assert!(
        table.contains("1    +0.080  0.693  0.613  facts  alpha"),
        "{table}"
    );
    assert!(
        table.contains("  qid 1: gone: connect: connection refused"),
        "{table}"
    );
}

#[tokio::test]
async fn qrels_with_their_queries_tsv_are_judgments_too() {
    let (_notes, _facts, dir, config) = stores().await;
    let judgments = dir.path().join("judged");
    std::fs::create_dir(&judgments).unwrap();
    let qrels = write(
        &judgments,
        "alpha.qrels",
        "a 0 notes/a2 1\nb 0 facts/f9 2\na 0 facts/f1 1\n",
    );
    write(
        &judgments,
        "queries.tsv",
        "a\talpha\nb\tbeta\nc\tnever judged\n",
    );
    let output = run(command(&[
        "eval",
        "-c",
        &config,
        "--judgments",
        &qrels,
        "--k",
        "3",
        "--json",
    ]))
    .await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let queries: Vec<(&str, &str, u64)> = (report["per_query"].as_array().unwrap().iter())
        .map(|q| {
            (
                q["qid"].as_str().unwrap(),
                q["query"].as_str().unwrap(),
                q["relevant"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(queries, [("a", "alpha", 2), ("b", "beta", 1)]);
    let ideal = 1.0 + 1.0 / 3f64.log2();
    assert!(close(
        &report["per_query"][0]["fused"]["ndcg"],
        (1.0 / 3f64.log2() + 0.5) / ideal
    ));
    assert!(close(&report["per_query"][1]["fused"]["ndcg"], 0.0));

    // Without its queries.tsv, qrels cannot be run.
    std::fs::remove_file(judgments.join("queries.tsv")).unwrap();
    let output = run(command(&["eval", "-c", &config, "--judgments", &qrels])).await;
    assert_eq!(output.status.code(), Some(66));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("queries.tsv: cannot read it"), "{stderr}");
}

#[tokio::test]
async fn bad_judgments_are_refused_before_any_store_is_asked() {
    let (notes, facts, dir, config) = stores().await;
    let good = json!({"query": "alpha", "relevant": [{"store": "notes", "id": "a1"}]});
    let judgments = write(
        dir.path(),
        "bad.jsonl",
        &format!(
            "{good}\n{}\n{}\n{{\"query\": \"x\", \"relevant\": [{{\"store\": \"notes\", \"id\": \"a\", \"grade\": 1.5}}]}}\nnot json\n",
            json!({"relevant": [{"store": "notes", "id": "a1"}]}),
            json!({"query": "alpha", "relevant": [{"store": "elsewhere", "id": "a1"}]}),
        ),
    );
    let output = run(command(&["eval", "-c", &config, "--judgments", &judgments])).await;
    assert_eq!(output.status.code(), Some(65));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for line in [
        "bad.jsonl: 4 problems; nothing was searched",
        "  line 2: query: missing",
        "  line 3: relevant[0].store: unknown store 'elsewhere': not in the roster (its stores: notes, facts, gone)",
        "  line 4: relevant[0].grade: must be an integer within 0..=10, got 1.5",
        "  line 5: not JSON: expected ident at column 2",
    ] {
        assert!(stderr.contains(line), "{line}: {stderr}");
    }
    assert!(output.stdout.is_empty());

    // Nor does a --runs folder that cannot be made, nor a file that is not there.
    let good = write(dir.path(), "good.jsonl", &format!("{good}\n"));
    let in_the_way = write(dir.path(), "a-file", "");
    let output = run(command(&[
        "eval",
        "-c",
        &config,
        "--judgments",
        &good,
        "--runs",
        &format!("{in_the_way}/runs"),
    ]))
    .await;
    assert_eq!(output.status.code(), Some(73));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--runs: cannot write"));
    let missing = dir.path().join("missing.jsonl").display().to_string();
    let output = run(command(&["eval", "-c", &config, "--judgments", &missing])).await;
    assert_eq!(output.status.code(), Some(66));
    // A k a search does not take is clap's usage error.
    let output = run(command(&[
        "eval",
        "-c",
        &config,
        "--judgments",
        &good,
        "--k",
        "0",
    ]))
    .await;
    assert_eq!(output.status.code(), Some(2));

    assert!(notes.captured().is_empty() && facts.captured().is_empty());
}

/// Six queries that two stores answer alike: `noise` (first in the roster) ranks junk first, and
/// `good` ranks the one relevant document first. Under even weights a tie at rank 1 goes to the
/// store earlier in the roster, so the relevant document is second in the fusion.
async fn noise_and_good() -> (StubStore, StubStore, tempfile::TempDir, String, String) {
    let noise = StubStore::start(Behaviour::ByQuery(vec![(
        "",
        memory_hits(&[("n1", 0.1), ("n2", 0.2), ("n3", 0.3)]),
    )]))
    .await;
    let good = StubStore::start(Behaviour::ByQuery(vec![("", memory_hits(&[("g1", 0.1)]))])).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &config_yaml(&[
            ("noise", "seren_memory", &noise.url, ""),
            ("good", "seren_memory", &good.url, ""),
        ]),
    );
    let lines: Vec<String> = (1..=6)
        .map(|q| {
            json!({"qid": format!("q{q}"), "query": format!("query {q}"),
                   "relevant": [{"store": "good", "id": "g1"}]})
            .to_string()
        })
        .collect();
    let judgments = write(dir.path(), "judgments.jsonl", &lines.join("\n"));
    (noise, good, dir, config, judgments)
}

#[tokio::test]
async fn tune_finds_weights_that_beat_the_current_on_the_held_out_half() {
    let (_noise, _good, dir, config, judgments) = noise_and_good().await;
    let output = run(command(&[
        "eval",
        "-c",
        &config,
        "--judgments",
        &judgments,
        "--k",
        "3",
        "--json",
        "--tune",
    ]))
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let tune = &report["tune"];
    assert_eq!(tune["method"], "exhaustive", "{tune}");
    assert_eq!(tune["tried"], 100, "5 weights x 5 weights x 4 k: {tune}");
    let (tuned_on, held_out) = (
        tune["tuned_on"].as_array().unwrap(),
        tune["held_out"].as_array().unwrap(),
    );
    assert_eq!((tuned_on.len(), held_out.len()), (3, 3), "{tune}");
    // The relevant document second under the current setting: nDCG@3 1/log2(3).
    let second = 1.0 / 3f64.log2();
    assert!(close(&tune["current"]["tuned_on_ndcg"], second), "{tune}");
    assert!(close(&tune["current"]["held_out"]["ndcg"]["mean"], second));
    assert_eq!(tune["current"]["k"], 60);
    assert_eq!(tune["changed"], true);
    // Tuned: noise weighs less than good, and the held-out searches, run for real under it, put
    // the relevant document first.
    let weights = &tune["tuned"]["weights"];
    assert_eq!(weights[0]["store"], "noise");
    assert!(
        weights[0]["weight"].as_f64() < weights[1]["weight"].as_f64(),
        "{weights}"
    );
    assert!(close(&tune["tuned"]["tuned_on_ndcg"], 1.0), "{tune}");
    assert!(
        close(&tune["tuned"]["held_out"]["ndcg"]["mean"], 1.0),
        "{tune}"
    );
    assert!(close(&tune["delta_ndcg"]["mean"], 1.0 - second), "{tune}");
    // What applies it: the /configure body names k and every store's weight, and the YAML the
    // same.
    let body = &tune["configure"];
    assert_eq!(body["k"], tune["tuned"]["k"]);
    assert_eq!(body["stores"][0]["name"], "noise");
    assert_eq!(body["stores"][0]["weight"], weights[0]["weight"]);
    let yaml: serde_yaml::Value = serde_yaml::from_str(tune["yaml"].as_str().unwrap()).unwrap();
    assert_eq!(
        yaml["federation"]["stores"][1]["weight"].as_f64(),
        weights[1]["weight"].as_f64()
    );
    // The config file is as it was: --tune changes nothing.
    let after = std::fs::read_to_string(&config).unwrap();
    assert!(!after.contains("weight"), "{after}");

    // The table says the same, and how to apply it.
    let output = run(command(&[
        "eval",
        "-c",
        &config,
        "--judgments",
        &judgments,
        "--k",
        "3",
        "--tune",
    ]))
    .await;
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{table}");
    assert!(table.contains("--tune: each store's weight"), "{table}");
    assert!(table.contains("POST /configure"), "{table}");
    assert!(table.contains("held out (split seed"), "{table}");
    drop(dir);
}

#[tokio::test]
async fn tune_with_one_query_is_refused_and_nothing_is_searched() {
    let (noise, good, dir, config, _) = noise_and_good().await;
    let one = write(
        dir.path(),
        "one.jsonl",
        r#"{"query": "alpha", "relevant": [{"store": "good", "id": "g1"}]}"#,
    );
    let output = run(command(&[
        "eval",
        "-c",
        &config,
        "--judgments",
        &one,
        "--tune",
    ]))
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(65), "{stderr}");
    assert!(
        stderr.contains("--tune needs at least 2 judged queries"),
        "{stderr}"
    );
    assert!(noise.captured().is_empty() && good.captured().is_empty());
}

#[tokio::test]
async fn identity_merges_one_document_of_two_stores_and_judges_it_once() {
    // Both stores hold "x" (lexical at 2, dense at 1); each has one of its own.
    let lexical = StubStore::start(Behaviour::ByQuery(vec![(
        "",
        memory_hits(&[("l1", 0.1), ("x", 0.2)]),
    )]))
    .await;
    let dense = StubStore::start(Behaviour::ByQuery(vec![(
        "",
        memory_hits(&[("x", 0.1), ("d1", 0.2)]),
    )]))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &config_yaml(&[
            ("lexical", "seren_memory", &lexical.url, "identity_key: id"),
            ("dense", "seren_memory", &dense.url, "identity_key: id"),
        ]),
    );
    // One query judged by identity, one by a store's id (counted for the document it is).
    let judgments = write(
        dir.path(),
        "judgments.jsonl",
        concat!(
            r#"{"qid": "by-key", "query": "alpha", "relevant": [{"identity": "x"}]}"#,
            "\n",
            r#"{"qid": "by-id", "query": "beta", "relevant": [{"store": "lexical", "id": "x"}, {"store": "dense", "id": "x", "grade": 2}]}"#,
        ),
    );
    let runs = dir.path().join("runs");
    let output = run(command(&[
        "eval",
        "-c",
        &config,
        "--judgments",
        &judgments,
        "--k",
        "3",
        "--json",
        "--identity",
        "key",
        "--runs",
        &runs.display().to_string(),
    ]))
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["identity"], "key");
    // Fused: x sums 1/62 + 1/61 and leads; one relevant document, found first.
    for query in report["per_query"].as_array().unwrap() {
        assert_eq!(
            query["relevant"],
            if query["qid"] == "by-key" { 1 } else { 2 }
        );
        assert!(close(&query["fused"]["ndcg"], 1.0), "{query}");
        assert!(close(&query["fused"]["recall"], 1.0), "{query}");
        // lexical alone has it second; dense first.
        assert!(close(&query["stores"][0]["mrr"], 0.5), "{query}");
        assert!(close(&query["stores"][1]["mrr"], 1.0), "{query}");
    }
    // The run files name it by its key.
    let fused = std::fs::read_to_string(runs.join("fused.run")).unwrap();
    let first: Vec<&str> = fused.lines().next().unwrap().split(' ').collect();
    assert_eq!(&first[..4], ["by-key", "Q0", "x", "1"], "{fused}");
    let lexical_run = std::fs::read_to_string(runs.join("store.lexical.run")).unwrap();
    assert!(lexical_run.contains("by-key Q0 l1 1 "), "{lexical_run}");

    // Without identity, a judgment by identity is refused, naming the line and the field.
    let output = run(command(&[
        "eval",
        "-c",
        &config,
        "--judgments",
        &judgments,
        "--identity",
        "none",
    ]))
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(65), "{stderr}");
    assert!(
        stderr.contains("line 1: relevant[0].identity: identity is off"),
        "{stderr}"
    );
}

#[tokio::test]
async fn post_eval_answers_the_cli_document_and_leaves_the_live_knobs_alone() {
    let (_noise, _good, dir, config, judgments) = noise_and_good().await;
    let yaml = std::fs::read_to_string(&config).unwrap();
    let callosum = Callosum::start(&yaml).await;
    let lines: Vec<Value> = (std::fs::read_to_string(&judgments).unwrap().lines())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let (_, knobs_before) = callosum.get("/knobs").await;

    // The same document the command prints, from an array of objects or from the text.
    let (status, answer) = callosum
        .post("/eval", json!({"judgments": lines, "k": 3, "tune": true}))
        .await;
    assert_eq!(status, 200, "{answer}");
    let output = run(command(&[
        "eval",
        "-c",
        &config,
        "--judgments",
        &judgments,
        "--k",
        "3",
        "--json",
        "--tune",
    ]))
    .await;
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer, printed);
    assert_eq!(answer["tune"]["changed"], true);
    let text = std::fs::read_to_string(&judgments).unwrap();
    let (status, from_text) = callosum
        .post("/eval", json!({"judgments": text, "k": 3}))
        .await;
    assert_eq!(status, 200, "{from_text}");
    assert_eq!(from_text["per_query"], answer["per_query"]);
    assert!(from_text.get("tune").is_none(), "{from_text}");
    // --tune searched under its own knobs: the live ones are as they were.
    let (_, knobs_after) = callosum.get("/knobs").await;
    assert_eq!(knobs_before, knobs_after);
    // Its body applies the tuned setting, as it says.
    let (status, applied) = callosum
        .post("/configure", answer["tune"]["configure"].clone())
        .await;
    assert_eq!(status, 200, "{applied}");
    let (_, knobs) = callosum.get("/knobs").await;
    let live_k = (knobs["federation"].as_array().unwrap().iter())
        .find(|knob| knob["key"] == "k")
        .map(|knob| knob["live"].clone());
    assert_eq!(
        live_k.as_ref(),
        Some(&answer["tune"]["tuned"]["k"]),
        "{knobs}"
    );
    for (i, store) in knobs["stores"].as_array().unwrap().iter().enumerate() {
        assert_eq!(store["knobs"][0]["key"], "weight");
        assert_eq!(
            store["knobs"][0]["live"], answer["tune"]["tuned"]["weights"][i]["weight"],
            "{store}"
        );
    }

    // Each wrong body is refused, naming what is wrong, and nothing is searched.
    for (body, words) in [
        (
            json!({"judgments": 7}),
            "judgments: must be an array of judged queries or their JSON Lines text, got a number",
        ),
        (
            json!({"judgments": lines, "k": 0}),
            "k: must be within 1..=200, got 0",
        ),
        (
            json!({"judgments": [{"query": "q", "relevant": [{"store": "nope", "id": "1"}]}]}),
            "judgments: 1 problem; nothing was searched: line 1: relevant[0].store: unknown store 'nope'",
        ),
        (
            json!({"judgments": [lines[0]], "tune": true}),
            "tune: needs at least 2 judged queries",
        ),
        (json!({"judgments": lines, "tunes": true}), "tunes"),
        (json!({"judgments": lines, "identity": "maybe"}), "identity"),
    ] {
        let (status, refused) = callosum.post("/eval", body.clone()).await;
        assert_eq!(status, 422, "{body}: {refused}");
        let detail = refused["detail"].as_str().unwrap();
        assert!(detail.contains(words), "{body}: {detail}");
    }
    let many: Vec<Value> = (0..201)
        .map(|q| json!({"query": format!("q{q}"), "relevant": [{"store": "good", "id": "g1"}]}))
        .collect();
    let (status, refused) = callosum.post("/eval", json!({"judgments": many})).await;
    assert_eq!(status, 413, "{refused}");
    assert!(
        refused["detail"].as_str().unwrap().contains("at most 200"),
        "{refused}"
    );
    drop(dir);
}
