//! What a reload may take in, and what a knob may hold: a duration that rounds to zero is refused
//! everywhere; live knobs and a reloaded file meet by "the later change wins", out loud; a file
//! written slowly in place is never read half; a huge file is refused unread; and `GET /knobs`
//! answers from the config in force, never from the file on disk.

use crate::support::process;
use crate::support::*;
use serde_json::{Value, json};
use seren_corpus_callosum::config::{Config, Env};
use seren_corpus_callosum::reload::{self, Loader};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn loader() -> Loader {
    Arc::new(|running: &Config| running.reread())
}

fn active(stores: &Value) -> BTreeSet<String> {
    rows_where(stores, "status", "active".into())
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

/// A `GET /knobs` federation row's `field` (`live`, `yaml`) for `key`.
fn knob(knobs: &Value, key: &str, field: &str) -> Value {
    knobs["federation"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["key"] == key)
        .map(|row| row[field].clone())
        .unwrap_or_else(|| panic!("no knob {key}: {knobs}"))
}

/// A store entry of the YAML, lines ending in a newline.
fn entry(name: &str, kind: &str, url: &str, extra: &str) -> String {
    format!("    - name: {name}\n      type: {kind}\n      url: {url}\n{extra}")
}

#[tokio::test]
async fn a_timeout_that_rounds_to_zero_is_refused_and_the_knobs_stay_usable() {
    let facts = StubStore::hits(loci_hits(&[("f1", 0.9)])).await;
    let yaml = config_yaml(&[("facts", "seren_loci", &facts.url, "")]);
    let callosum = Callosum::start(&yaml).await;
    for seconds in [json!(1e-300), json!(0.0000001), json!(0), json!(86400)] {
        let (status, body) = callosum
            .post("/configure", json!({"per_store_timeout_s": seconds}))
            .await;
        assert_eq!(status, 422, "{seconds}: {body}");
        let detail = body["detail"].as_str().unwrap();
        assert!(
            detail
                .starts_with("per_store_timeout_s must be a number of seconds within 0.001..=3600"),
            "{detail}"
        );
    }
    // Nothing was stored: another knob alone is taken, and a search still reaches the store.
    let (status, body) = callosum.post("/configure", json!({"k": 30})).await;
    assert_eq!(status, 200, "{body}");
    let (_, knobs) = callosum.get("/knobs").await;
    assert_eq!(knob(&knobs, "per_store_timeout_s", "live"), json!(2.0));
    let (status, answer) = callosum.search("q", None).await;
    assert_eq!(status, 200);
    assert_eq!(order(&answer), ["facts:f1"], "{answer}");
    assert!(failed(&answer).is_empty(), "{answer}");

    // The same rule for the file, at start and at reload, naming the file and the key.
    let store_zero = format!(
        "federation:\n  stores:\n{}",
        entry(
            "facts",
            "seren_loci",
            &facts.url,
            "      timeout_s: 1e-300\n"
        )
    );
    for (bad, key) in [
        (store_zero.as_str(), "store 'facts': timeout_s"),
        (
            "federation:\n  per_store_timeout_s: 0.0000001\n",
            "federation.per_store_timeout_s",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = process::write_config(dir.path(), bad);
        let error = Config::load_from(Path::new(&path), &Env::none())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(&path) && error.contains(key) && error.contains("0.001..=3600"),
            "{error}"
        );
        std::fs::write(callosum.config_path(), bad).unwrap();
        assert!(
            reload::reload(&callosum.federation, &loader())
                .await
                .is_none()
        );
        let (_, stores) = callosum.get("/stores").await;
        let error = stores["config_error"].as_str().unwrap_or_default();
        assert!(error.contains(key), "{key}: {stores}");
        let (_, answer) = callosum.search("q", None).await;
        assert_eq!(order(&answer), ["facts:f1"], "{answer}");
    }
}

#[tokio::test]
async fn a_live_knob_is_kept_unless_the_reloaded_file_changed_that_very_knob() {
    let facts = StubStore::hits(loci_hits(&[("f1", 0.9)])).await;
    let yaml = |federation: &str, store: &str| {
        format!(
            "federation:\n{federation}  stores:\n{}",
            entry("facts", "seren_loci", &facts.url, store)
        )
    };
    let callosum = Callosum::start(&yaml("  per_store_timeout_s: 5\n", "")).await;
    let (status, body) = callosum
        .post(
            "/configure",
            json!({"per_store_timeout_s": 2.5, "budget_tokens": 0,
                   "stores": [{"name": "facts", "weight": 3.0}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // The file changes other knobs (n_results, the store's floor): every live value stays.
    std::fs::write(
        callosum.config_path(),
        yaml(
            "  per_store_timeout_s: 5\n  n_results: 7\n",
            "      floor: 0.1\n",
        ),
    )
    .unwrap();
    let done = reload::reload(&callosum.federation, &loader())
        .await
        .unwrap();
    assert!(done.knobs_replaced.is_empty(), "{done:?}");
    let (_, knobs) = callosum.get("/knobs").await;
    assert_eq!(knob(&knobs, "per_store_timeout_s", "live"), json!(2.5));
    assert_eq!(knob(&knobs, "n_results", "live"), json!(7));
    assert_eq!(knob(&knobs, "budget_tokens", "live"), Value::Null);
    let weight = &knobs["stores"][0]["knobs"][0];
    assert_eq!(
        (weight["key"].clone(), weight["live"].clone()),
        (json!("weight"), json!(3.0)),
        "{knobs}"
    );

    // The file changes that very knob, and the store's weight: the file wins, and says so.
    std::fs::write(
        callosum.config_path(),
        yaml(
            "  per_store_timeout_s: 4\n  n_results: 7\n",
            "      floor: 0.1\n      weight: 2.0\n",
        ),
    )
    .unwrap();
    let done = reload::reload(&callosum.federation, &loader())
        .await
        .unwrap();
    assert_eq!(
        done.knobs_replaced,
        ["per_store_timeout_s", "stores.facts.weight"]
    );
    let (_, knobs) = callosum.get("/knobs").await;
    assert_eq!(knob(&knobs, "per_store_timeout_s", "live"), json!(4.0));
    assert_eq!(knobs["stores"][0]["knobs"][0]["live"], json!(2.0));
    // A page cleared live stays cleared: the file never changed it.
    assert_eq!(knob(&knobs, "budget_tokens", "live"), Value::Null);
}

/// Polls `GET /stores` until its active stores are `done` (at most 15 s), asserting each set seen
/// on the way is `allowed`; the number of polls.
async fn watch_until(
    callosum: &Callosum,
    done: impl Fn(&BTreeSet<String>) -> bool,
    allowed: impl Fn(&BTreeSet<String>) -> bool,
) -> usize {
    let started = Instant::now();
    let mut polls = 0;
    loop {
        let (_, stores) = callosum.get("/stores").await;
        let now = active(&stores);
        polls += 1;
        assert!(
            allowed(&now),
            "poll {polls}: a state never written whole: {stores}"
        );
        if done(&now) {
            return polls;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "not seen within 15 s; /stores: {stores}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_file_written_slowly_in_place_is_never_loaded_half() {
    let stubs: Vec<StubStore> = futures_util::future::join_all(
        ["a", "b", "c"].map(|id| StubStore::hits(loci_hits(&[(id, 0.9)]))),
    )
    .await;
    let head = "federation:\n  stores:\n";
    let a = entry("facts", "seren_loci", &stubs[0].url, "");
    let b = entry("episodes", "seren_loci", &stubs[1].url, "");
    let c = entry("more", "seren_loci", &stubs[2].url, "");
    let callosum = Callosum::start_watching(&format!("{head}{a}{b}")).await;
    let before = set(&["facts", "episodes"]);
    let after = set(&["facts", "episodes", "more"]);
    let (_, stores) = callosum.get("/stores").await;
    assert_eq!(active(&stores), before);

    // The new file, cut after its first store, is valid YAML: loaded, it would drop `episodes`.
    let half = format!("{head}{a}");
    let rest = format!("{b}{c}");
    assert!(Config::parse(Path::new("x.yaml"), &half, &Env::none()).is_ok());
    let path = callosum.config_path();
    let writer = std::thread::spawn(move || {
        // Written in place (same inode, as `cp` or a shell redirect does), pausing mid-file.
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(half.as_bytes()).unwrap();
        file.sync_data().unwrap();
        std::thread::sleep(Duration::from_millis(1200));
        file.write_all(rest.as_bytes()).unwrap();
        file.sync_data().unwrap();
    });
    let polls = watch_until(
        &callosum,
        |now| *now == after,
        |now| *now == before || *now == after,
    )
    .await;
    writer.join().unwrap();
    eprintln!("{polls} polls saw no half file");
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(order(&answer).len(), 3, "{answer}");
}

/// A config file of `size` bytes that would be valid but for its size: a small YAML, then one
/// long comment of spaces.
fn huge_config(path: &Path, yaml: &str, size: usize) {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    file.write_all(yaml.as_bytes()).unwrap();
    file.write_all(b"#").unwrap();
    let spaces = vec![b' '; 1 << 20];
    let mut left = size - yaml.len() - 2;
    while left > 0 {
        let n = left.min(spaces.len());
        file.write_all(&spaces[..n]).unwrap();
        left -= n;
    }
    file.write_all(b"\n").unwrap();
    file.flush().unwrap();
}

#[tokio::test]
async fn a_huge_config_is_refused_unread_and_knobs_come_from_the_config_in_force() {
    const SIZE: usize = 200 * 1024 * 1024;
    let facts = StubStore::hits(loci_hits(&[("f1", 0.9)])).await;
    let good = format!(
        "federation:\n  k: 42\n  stores:\n{}",
        entry("facts", "seren_loci", &facts.url, "")
    );
    let callosum = Callosum::start(&good).await;

    // `GET /knobs` is the config in force: a broken file on disk, not reloaded, changes nothing.
    std::fs::write(callosum.config_path(), "federation: [").unwrap();
    let (status, knobs) = callosum.get("/knobs").await;
    assert_eq!(status, 200);
    assert_eq!(knob(&knobs, "k", "yaml"), json!(42), "{knobs}");
    assert_eq!(knobs["where"]["config_error"], Value::Null, "{knobs}");

    // At reload: refused by its size, naming the file and the cap; the old config stays.
    huge_config(&callosum.config_path(), &good.replace("42", "43"), SIZE);
    assert!(
        reload::reload(&callosum.federation, &loader())
            .await
            .is_none()
    );
    let (_, stores) = callosum.get("/stores").await;
    let error = stores["config_error"].as_str().unwrap_or_default();
    assert!(
        error.contains("seren-corpus-callosum.yaml") && error.contains("1 MiB cap"),
        "{stores}"
    );
    assert_eq!(active(&stores), set(&["facts"]));
    assert_eq!(stores["k"], 42, "{stores}");
    let (_, answer) = callosum.search("q", None).await;
    assert_eq!(order(&answer), ["facts:f1"]);
    // `GET /knobs` still answers from what was loaded, and says why the file was not.
    let (_, knobs) = callosum.get("/knobs").await;
    assert_eq!(knob(&knobs, "k", "yaml"), json!(42), "{knobs}");
    assert!(
        knobs["where"]["config_error"]
            .as_str()
            .unwrap_or_default()
            .contains("1 MiB cap"),
        "{knobs}"
    );

    // At start: `check` refuses it the same way, as a configuration error (exit 78).
    let path = callosum.config_path().display().to_string();
    let output = process::run(process::command(&["check", "-c", &path])).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(78), "{stderr}");
    assert!(
        stderr.contains(&path) && stderr.contains("1 MiB cap"),
        "{stderr}"
    );
}
