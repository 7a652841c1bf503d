//! The SerenLoci-speaking sample store: facts per project plus fundamentals, found by exact key or
//! by BM25, like Loci's lexical finder.
//!
//! Owns the bundled `facts.json`, its index (built once), the `/search` request and answer of
//! SerenLoci 5.x, and the routes `POST /search`, `GET /health`, `GET /`. It does not own serving
//! (see `mod.rs`), tokenizing or scoring (`bm25.rs`), or anything the real SerenLoci does beyond
//! search: no writes, no history, no hybrid finder.
//!
//! Scoring, as the real lexical finder does it:
//! - A fact whose key equals the trimmed, lowercased query is an exact match: score 1.0.
//! - Any other match scores `round5(0.05 + 0.95 * s / (1 + s))` for BM25 strength `s` over key, value
//!   and why, which stays below 1.0, so an exact key always comes first.
//! - Sorted by that score, descending; equal scores keep the order of `facts.json`. Cut to `n_results`.
//!
//! Every sample fact is live (the sample keeps no history), so `include_superseded` is validated and
//! otherwise has no effect, `live` is always true and `raw_distance` always null (it belongs to the
//! hybrid finder). The project `"*"` holds fundamentals: facts true in every project.

use crate::bm25::{Index, round5};
use crate::request::{Body, Invalid};
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::OnceLock;

/// The bundled sample, checked by the `sample_data_parses` test.
const FACTS_JSON: &str = include_str!("facts.json");

const N_RESULTS_DEFAULT: i64 = 10;
/// The project that holds fundamentals.
const FUNDAMENTALS: &str = "*";

/// One fact as stored in `facts.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fact {
    pub id: String,
    /// A project name, or `"*"` for fundamentals.
    pub project: String,
    /// Lowercase, dotted or dashed, e.g. `xavier.cuda-version`.
    pub key: String,
    /// Usually a string; Loci also holds numbers and lists, and so does the sample.
    pub value: Value,
    #[serde(default)]
    pub why: Option<String>,
    pub source: String,
}

impl Fact {
    /// The text BM25 ranks: key, value (a non-string as its JSON text) and why.
    fn text(&self) -> String {
        let value = match &self.value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        format!(
            "{} {} {}",
            self.key,
            value,
            self.why.as_deref().unwrap_or("")
        )
    }
}

/// A validated SerenLoci `/search` request.
#[derive(Debug, Clone, PartialEq)]
pub struct LociQuery {
    pub query: String,
    pub project: Option<String>,
    pub n_results: usize,
    pub include_fundamentals: bool,
}

impl LociQuery {
    /// Reads a request the way SerenLoci's pydantic model does; extra keys are ignored.
    pub fn from_body(bytes: &[u8]) -> Result<Self, Invalid> {
        let body = Body::parse(bytes)?;
        let query = body.required_str("query")?;
        let project = body.optional_str("project")?;
        let n = body.int_or("n_results", N_RESULTS_DEFAULT)?;
        // Loci sets no upper bound; a negative count has no meaning, so it is refused.
        let n_results = usize::try_from(n).map_err(|_| Invalid::OutOfRange {
            field: "n_results",
            rule: "greater than or equal to 0".to_string(),
        })?;
        let include_fundamentals = body.bool_or("include_fundamentals", true)?;
        // Checked so a mistyped value is refused as the real store would; see the module doc.
        body.bool_or("include_superseded", false)?;
        Ok(Self {
            query,
            project,
            n_results,
            include_fundamentals,
        })
    }

    fn wants(&self, fact: &Fact) -> bool {
        match &self.project {
            None => true,
            Some(project) => {
                fact.project == *project
                    || (self.include_fundamentals && fact.project == FUNDAMENTALS)
            }
        }
    }
}

#[derive(Debug, Serialize)]
pub struct LociAnswer {
    pub query: String,
    pub project: Option<String>,
    pub finder: &'static str,
    pub hits: Vec<LociHit>,
}

#[derive(Debug, Serialize)]
pub struct LociHit {
    pub id: String,
    pub project: String,
    pub key: String,
    pub value: Value,
    pub why: Option<String>,
    pub score: f64,
    pub match_kind: MatchKind,
    pub source: String,
    /// Always `None` (`null`): only the hybrid finder measures a distance.
    pub raw_distance: Option<f64>,
    pub live: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchKind {
    Exact,
    Lexical,
}

/// Facts plus their BM25 index; built once, then only read.
#[derive(Debug)]
pub struct LociStore {
    facts: Vec<Fact>,
    index: Index,
}

impl LociStore {
    pub fn new(facts: Vec<Fact>) -> Self {
        let docs = facts.iter().map(Fact::text).collect();
        Self {
            index: Index::new(docs),
            facts,
        }
    }

    /// The bundled sample, parsed and indexed on first use.
    pub fn sample() -> &'static LociStore {
        static SAMPLE: OnceLock<LociStore> = OnceLock::new();
        SAMPLE.get_or_init(|| {
            // The file is compiled in, so a parse failure is a build-time bug that the
            // `sample_data_parses` test catches before any release.
            let facts: Vec<Fact> = serde_json::from_str(FACTS_JSON)
                .expect("facts.json parses; the sample_data_parses test checks it");
            LociStore::new(facts)
        })
    }

    /// Pure search: exact key first, then BM25, within the project filter; see the module doc.
    pub fn search(&self, q: &LociQuery) -> LociAnswer {
        let wanted_key = q.query.trim().to_lowercase();
        let mut scored: Vec<(usize, f64, MatchKind)> = Vec::new();
        for (doc, fact) in self.facts.iter().enumerate() {
            if fact.key == wanted_key && q.wants(fact) {
                scored.push((doc, 1.0, MatchKind::Exact));
            }
        }
        for (doc, strength) in self.index.search(&q.query) {
            let fact = &self.facts[doc];
            if fact.key != wanted_key && q.wants(fact) {
                let score = round5(0.05 + 0.95 * strength / (1.0 + strength));
                scored.push((doc, score, MatchKind::Lexical));
            }
        }
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let hits = scored
            .into_iter()
            .take(q.n_results)
            .map(|(doc, score, match_kind)| hit(&self.facts[doc], score, match_kind))
            .collect();
        LociAnswer {
            query: q.query.clone(),
            project: q.project.clone(),
            finder: "lexical",
            hits,
        }
    }
}

fn hit(fact: &Fact, score: f64, match_kind: MatchKind) -> LociHit {
    LociHit {
        id: fact.id.clone(),
        project: fact.project.clone(),
        key: fact.key.clone(),
        value: fact.value.clone(),
        why: fact.why.clone(),
        score,
        match_kind,
        source: fact.source.clone(),
        raw_distance: None,
        live: true,
    }
}

/// The SerenLoci routes over the bundled sample.
pub fn router() -> Router {
    Router::new()
        .route("/search", post(search))
        .route("/health", get(health))
        .route("/", get(root))
        .with_state(LociStore::sample())
}

async fn search(
    State(store): State<&'static LociStore>,
    body: Bytes,
) -> Result<Json<LociAnswer>, Invalid> {
    let q = LociQuery::from_body(&body)?;
    let answer = store.search(&q);
    // Counts only: a query may be private, and logs must not carry it.
    tracing::debug!(
        hits = answer.hits.len(),
        n_results = q.n_results,
        "loci sample answered"
    );
    Ok(Json(answer))
}

async fn health() -> Json<Value> {
    Json(json!({ "ok": true, "finder": "lexical" }))
}

async fn root(State(store): State<&'static LociStore>) -> Json<Value> {
    Json(json!({
        "service": "SerenLoci (demo sample)",
        "facts": store.facts.len(),
        "finder": "lexical",
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(text: &str) -> LociQuery {
        LociQuery {
            query: text.to_string(),
            project: None,
            n_results: 10,
            include_fundamentals: true,
        }
    }

    fn in_project(text: &str, project: &str, include_fundamentals: bool) -> LociQuery {
        LociQuery {
            project: Some(project.to_string()),
            include_fundamentals,
            ..query(text)
        }
    }

    fn ids(answer: &LociAnswer) -> Vec<&str> {
        answer.hits.iter().map(|h| h.id.as_str()).collect()
    }

    #[test]
    fn sample_data_parses() {
        let facts: Vec<Fact> = serde_json::from_str(FACTS_JSON).expect("facts.json is valid");
        assert!((30..=45).contains(&facts.len()), "{}", facts.len());
        let mut keys = std::collections::HashSet::new();
        for (i, f) in facts.iter().enumerate() {
            assert_eq!(f.id, format!("fact-{:03}", i + 1), "ids run in order");
            assert!(
                !f.key.is_empty()
                    && f.key.chars().all(|c| c.is_ascii_lowercase()
                        || c.is_ascii_digit()
                        || c == '.'
                        || c == '-'),
                "keys are lowercase dotted or dashed: {}",
                f.key
            );
            assert!(keys.insert((&f.project, &f.key)), "one live value per key");
        }
        let mut projects: Vec<&str> = facts.iter().map(|f| f.project.as_str()).collect();
        projects.sort_unstable();
        projects.dedup();
        assert!(projects.contains(&FUNDAMENTALS) && projects.len() >= 4);
        assert!(facts.iter().any(|f| f.value.is_number()));
        assert!(facts.iter().any(|f| f.value.is_array()));
        assert!(facts.iter().any(|f| f.why.is_none()));
        assert_eq!(LociStore::sample().facts.len(), facts.len());
    }

    /// Asserts the top ids of a query over the bundled sample.
    fn check(q: LociQuery, expected_top: &[&str]) {
        let answer = LociStore::sample().search(&q);
        let got = ids(&answer);
        assert!(
            got.len() >= expected_top.len() && got[..expected_top.len()] == *expected_top,
            "{:?} in {:?}: got {got:?}, expected to start with {expected_top:?}",
            q.query,
            q.project
        );
    }

    #[test]
    fn ranks_the_bundled_sample() {
        let cases = [
            (query("xavier.cuda-version"), &["fact-001"][..]),
            (query("  Xavier.CUDA-Version "), &["fact-001"][..]),
            (query("nvcc"), &["fact-003"][..]),
            (query("timezone"), &["fact-033"][..]),
            (in_project("backup", "novel", false), &["fact-030"][..]),
        ];
        for (q, expected) in cases {
            check(q, expected);
        }
    }

    #[test]
    fn exact_key_scores_one_and_comes_first() {
        let answer = LociStore::sample().search(&query("xavier.cuda-version"));
        let first = &answer.hits[0];
        assert_eq!((first.score, first.match_kind), (1.0, MatchKind::Exact));
        assert!(
            answer.hits.len() > 1,
            "the words of the key also match lexically"
        );
        for h in &answer.hits[1..] {
            assert_eq!(h.match_kind, MatchKind::Lexical);
            assert!(h.score > 0.05 && h.score < 1.0, "{}: {}", h.id, h.score);
        }
    }

    #[test]
    fn scores_sort_and_fields_carry_over() {
        let answer = LociStore::sample().search(&query("backup"));
        assert_eq!(answer.finder, "lexical");
        assert!(answer.hits.len() >= 5);
        for pair in answer.hits.windows(2) {
            assert!(pair[0].score >= pair[1].score);
        }
        for h in &answer.hits {
            assert!(h.live && h.raw_distance.is_none());
        }
        let retention = LociStore::sample().search(&query("homelab.backup-retention"));
        assert_eq!(retention.hits[0].value, json!([7, 4, 12]));
        let dns = LociStore::sample().search(&query("homelab.dns"));
        assert_eq!(dns.hits[0].why, None);
    }

    #[test]
    fn filters_by_project() {
        let store = LociStore::sample();
        let broad = "rust cuda backup xavier editor travel kyoto";
        let only = store.search(&LociQuery {
            n_results: 100,
            ..in_project(broad, "wren", false)
        });
        assert!(!only.hits.is_empty());
        assert!(only.hits.iter().all(|h| h.project == "wren"));
        assert_eq!(only.project.as_deref(), Some("wren"));

        let with_fundamentals = store.search(&LociQuery {
            n_results: 100,
            ..in_project(broad, "wren", true)
        });
        assert!(
            with_fundamentals
                .hits
                .iter()
                .any(|h| h.project == FUNDAMENTALS)
        );
        assert!(
            with_fundamentals
                .hits
                .iter()
                .all(|h| h.project == "wren" || h.project == FUNDAMENTALS)
        );

        let everything = store.search(&LociQuery {
            n_results: 100,
            ..query(broad)
        });
        let mut projects: Vec<&str> = everything.hits.iter().map(|h| h.project.as_str()).collect();
        projects.sort_unstable();
        projects.dedup();
        assert!(projects.len() >= 4, "{projects:?}");

        // An exact key outside the project is not found.
        let elsewhere = store.search(&in_project("xavier.cuda-version", "novel", false));
        assert!(
            elsewhere
                .hits
                .iter()
                .all(|h| h.match_kind != MatchKind::Exact)
        );
    }

    #[test]
    fn cuts_to_n() {
        let store = LociStore::sample();
        for n in [0, 1, 3] {
            let answer = store.search(&LociQuery {
                n_results: n,
                ..query("xavier")
            });
            assert_eq!(answer.hits.len(), n);
        }
        assert!(store.search(&query("zeppelin")).hits.is_empty());
        assert!(store.search(&query("   ")).hits.is_empty());
    }

    #[test]
    fn reads_requests_like_serenloci() {
        assert_eq!(
            LociQuery::from_body(br#"{"query": "cuda"}"#),
            Ok(query("cuda"))
        );
        assert_eq!(
            LociQuery::from_body(
                br#"{"query": "q", "project": "wren", "n_results": 0,
                     "include_fundamentals": false, "include_superseded": true, "x": 1}"#
            ),
            Ok(LociQuery {
                n_results: 0,
                ..in_project("q", "wren", false)
            })
        );
        assert_eq!(
            LociQuery::from_body(br#"{"query": "q", "project": null, "n_results": 500}"#),
            Ok(LociQuery {
                n_results: 500,
                ..query("q")
            })
        );
        let refused: &[(&[u8], &str)] = &[
            (br#"{"query": "q", "n_results": -1}"#, "n_results"),
            (br#"{"project": "wren"}"#, "query"),
            (br#"{"query": null}"#, "query"),
            (br#"{"query": "q", "project": 3}"#, "project"),
            (
                br#"{"query": "q", "include_fundamentals": 1}"#,
                "include_fundamentals",
            ),
            (b"{", "body"),
        ];
        for (bytes, field) in refused {
            let err = LociQuery::from_body(bytes).expect_err("refused");
            assert!(
                err.to_string().starts_with(&format!("{field}:")),
                "{} gave {err}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
}
