//! The SerenMemory-speaking sample store: episodic memories in three tiers, ranked by BM25.
//!
//! Owns the bundled `memories.json`, its index (built once), the `/search` request and answer of
//! SerenMemory 5.x, and the routes `POST /search`, `GET /health`, `GET /`. It does not own serving
//! (see `mod.rs`), tokenizing or scoring (`bm25.rs`), or anything the real SerenMemory does beyond
//! search: no writes, no `/by_topic`, no consolidation.
//!
//! How the answer differs from the real store, on purpose:
//! - One index over every memory, filtered by tier and supersession after scoring, where the real
//!   store queries each tier's collection. One index keeps idf comparable across tiers.
//! - A memory's text for ranking is its content plus its topic tags.
//! - `raw_distance = round5(1 / (1 + s))` for BM25 strength `s`, so it reads like a distance (smaller is
//!   closer, in 0..1), and `score = round5(1 / (1 + raw_distance) * tier_weight)` as the real store
//!   computes its score from cosine distance. The list is in BM25 order, not `score` order: the tier
//!   weight would otherwise let a weak short-term hit outrank a strong long-term one, and the
//!   callosum reads ranks, never magnitudes. So `raw_distance` never decreases down the list; `score`
//!   may rise.
//! - `surroundings` and `matched_via` are always `null`: the sample has no satellites or history to
//!   show. `with_surroundings` is validated and otherwise has no effect.

use super::bm25::Index;
use super::request::{Body, Invalid};
use super::round5;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::OnceLock;

/// The bundled sample, checked by the `sample_data_parses` test.
const MEMORIES_JSON: &str = include_str!("memories.json");

const N_RESULTS_DEFAULT: i64 = 5;
/// SerenMemory validates `n_results` with `ge=1, le=50`; the callosum clamps to the same bounds.
const N_RESULTS_MIN: i64 = 1;
const N_RESULTS_MAX: i64 = 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Short,
    Near,
    Long,
}

impl Tier {
    /// The real store's tier weights: recent memories count a little more.
    fn weight(self) -> f64 {
        match self {
            Tier::Short => 1.0,
            Tier::Near => 0.9,
            Tier::Long => 0.8,
        }
    }
}

/// One memory as stored in `memories.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub id: String,
    pub tier: Tier,
    /// Comma-separated tags, e.g. `"xavier, cuda"`.
    pub topic: String,
    pub content: String,
    /// ISO 8601 timestamp.
    pub created_at: String,
    /// The id of the memory that replaced this one; such a memory is hidden unless
    /// `include_superseded` is asked for.
    #[serde(default)]
    pub superseded_by: Option<String>,
}

/// A validated SerenMemory `/search` request.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryQuery {
    pub query: String,
    pub n_results: usize,
    pub include_short: bool,
    pub include_near: bool,
    pub include_long: bool,
    pub include_superseded: bool,
}

impl MemoryQuery {
    /// Reads a request the way SerenMemory's pydantic model does; extra keys are ignored.
    pub fn from_body(bytes: &[u8]) -> Result<Self, Invalid> {
        let body = Body::parse(bytes)?;
        let query = body.required_str("query")?;
        let n = body.int_or("n_results", N_RESULTS_DEFAULT)?;
        let n_results = match n {
            n if n < N_RESULTS_MIN => Err(Invalid::OutOfRange {
                field: "n_results",
                rule: format!("greater than or equal to {N_RESULTS_MIN}"),
            }),
            n if n > N_RESULTS_MAX => Err(Invalid::OutOfRange {
                field: "n_results",
                rule: format!("less than or equal to {N_RESULTS_MAX}"),
            }),
            // Within 1..=50, so the conversion cannot fail; the fallback only satisfies the type.
            n => Ok(usize::try_from(n).unwrap_or(1)),
        }?;
        let include_short = body.bool_or("include_short", true)?;
        let include_near = body.bool_or("include_near", true)?;
        let include_long = body.bool_or("include_long", true)?;
        let include_superseded = body.bool_or("include_superseded", false)?;
        // Checked so a mistyped value is refused as the real store would; see the module doc.
        body.bool_or("with_surroundings", false)?;
        Ok(Self {
            query,
            n_results,
            include_short,
            include_near,
            include_long,
            include_superseded,
        })
    }

    /// The tiers asked for, in the real store's order.
    fn tiers(&self) -> Vec<Tier> {
        [
            (Tier::Short, self.include_short),
            (Tier::Near, self.include_near),
            (Tier::Long, self.include_long),
        ]
        .into_iter()
        .filter_map(|(tier, wanted)| wanted.then_some(tier))
        .collect()
    }
}

#[derive(Debug, Serialize)]
pub struct MemoryAnswer {
    pub query: String,
    pub searched_tiers: Vec<Tier>,
    pub hits: Vec<MemoryHit>,
}

#[derive(Debug, Serialize)]
pub struct MemoryHit {
    pub id: String,
    pub content: String,
    pub tier: Tier,
    pub topic: String,
    pub score: f64,
    pub raw_distance: f64,
    pub metadata: HitMetadata,
    /// Always `None`, serialized as `null`; see the module doc.
    pub surroundings: Option<Value>,
    pub matched_via: Option<Value>,
}

#[derive(Debug, Serialize)]
pub struct HitMetadata {
    pub source: &'static str,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
}

/// Memories plus their BM25 index; built once, then only read.
#[derive(Debug)]
pub struct MemoryStore {
    memories: Vec<Memory>,
    index: Index,
}

impl MemoryStore {
    pub fn new(memories: Vec<Memory>) -> Self {
        let docs = memories
            .iter()
            .map(|m| format!("{} {}", m.content, m.topic))
            .collect();
        Self {
            index: Index::new(docs),
            memories,
        }
    }

    /// The bundled sample, parsed and indexed on first use.
    pub fn sample() -> &'static MemoryStore {
        static SAMPLE: OnceLock<MemoryStore> = OnceLock::new();
        SAMPLE.get_or_init(|| {
            // The file is compiled in, so a parse failure is a build-time bug that the
            // `sample_data_parses` test catches before any release.
            let memories: Vec<Memory> = serde_json::from_str(MEMORIES_JSON)
                .expect("memories.json parses; the sample_data_parses test checks it");
            MemoryStore::new(memories)
        })
    }

    /// Pure search: BM25 order, filtered by tier and supersession, cut to `n_results`.
    pub fn search(&self, q: &MemoryQuery) -> MemoryAnswer {
        let tiers = q.tiers();
        let hits = self
            .index
            .search(&q.query)
            .into_iter()
            .filter_map(|(doc, strength)| {
                let memory = &self.memories[doc];
                let visible = tiers.contains(&memory.tier)
                    && (q.include_superseded || memory.superseded_by.is_none());
                visible.then(|| hit(memory, strength))
            })
            .take(q.n_results)
            .collect();
        MemoryAnswer {
            query: q.query.clone(),
            searched_tiers: tiers,
            hits,
        }
    }
}

fn hit(memory: &Memory, strength: f64) -> MemoryHit {
    let raw_distance = round5(1.0 / (1.0 + strength));
    MemoryHit {
        id: memory.id.clone(),
        content: memory.content.clone(),
        tier: memory.tier,
        topic: memory.topic.clone(),
        score: round5(1.0 / (1.0 + raw_distance) * memory.tier.weight()),
        raw_distance,
        metadata: HitMetadata {
            source: "demo",
            created_at: memory.created_at.clone(),
            superseded_by: memory.superseded_by.clone(),
        },
        surroundings: None,
        matched_via: None,
    }
}

/// The SerenMemory routes over the bundled sample.
pub fn router() -> Router {
    Router::new()
        .route("/search", post(search))
        .route("/health", get(health))
        .route("/", get(root))
        .with_state(MemoryStore::sample())
}

async fn search(
    State(store): State<&'static MemoryStore>,
    body: Bytes,
) -> Result<Json<MemoryAnswer>, Invalid> {
    let q = MemoryQuery::from_body(&body)?;
    let answer = store.search(&q);
    // Counts only: a query may be private, and logs must not carry it.
    tracing::debug!(
        hits = answer.hits.len(),
        n_results = q.n_results,
        "memory sample answered"
    );
    Ok(Json(answer))
}

async fn health() -> Json<Value> {
    Json(json!({ "ok": true }))
}

async fn root(State(store): State<&'static MemoryStore>) -> Json<Value> {
    Json(json!({ "service": "SerenMemory (demo sample)", "memories": store.memories.len() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(text: &str) -> MemoryQuery {
        MemoryQuery {
            query: text.to_string(),
            n_results: 5,
            include_short: true,
            include_near: true,
            include_long: true,
            include_superseded: false,
        }
    }

    fn ids(answer: &MemoryAnswer) -> Vec<&str> {
        answer.hits.iter().map(|h| h.id.as_str()).collect()
    }

    #[test]
    fn sample_data_parses() {
        let memories: Vec<Memory> =
            serde_json::from_str(MEMORIES_JSON).expect("memories.json is valid");
        assert!((30..=45).contains(&memories.len()), "{}", memories.len());
        for (i, m) in memories.iter().enumerate() {
            assert_eq!(m.id, format!("mem-{:03}", i + 1), "ids run in order");
            assert!(
                !m.content.trim().is_empty() && !m.topic.trim().is_empty(),
                "{}",
                m.id
            );
            assert!(
                m.created_at.len() >= 10 && m.created_at.as_bytes()[4] == b'-',
                "{}",
                m.id
            );
            if let Some(newer) = &m.superseded_by {
                assert!(
                    memories.iter().any(|o| &o.id == newer),
                    "{} -> {newer}",
                    m.id
                );
            }
        }
        for tier in [Tier::Short, Tier::Near, Tier::Long] {
            assert!(
                memories.iter().filter(|m| m.tier == tier).count() >= 8,
                "{tier:?}"
            );
        }
        assert_eq!(MemoryStore::sample().memories.len(), memories.len());
    }

    /// Asserts the top ids of a query over the bundled sample.
    fn check(q: MemoryQuery, expected_top: &[&str]) {
        let answer = MemoryStore::sample().search(&q);
        let got = ids(&answer);
        assert!(
            got.len() >= expected_top.len() && got[..expected_top.len()] == *expected_top,
            "{:?}: got {got:?}, expected to start with {expected_top:?}",
            q.query
        );
    }

    #[test]
    fn ranks_the_bundled_sample() {
        let long_only = MemoryQuery {
            include_short: false,
            include_near: false,
            ..query("backup")
        };
        let cases = [
            (query("nvcc path"), &["mem-024", "mem-001"][..]),
            (query("kyoto ryokan"), &["mem-009"][..]),
            (long_only, &["mem-025"][..]),
        ];
        for (q, expected) in cases {
            check(q, expected);
        }
    }

    #[test]
    fn search_shapes_the_answer() {
        let store = MemoryStore::sample();
        let answer = store.search(&query("cuda xavier"));
        assert_eq!(answer.query, "cuda xavier");
        assert_eq!(answer.searched_tiers, [Tier::Short, Tier::Near, Tier::Long]);
        assert_eq!(answer.hits.len(), 5);
        for pair in answer.hits.windows(2) {
            assert!(pair[0].raw_distance <= pair[1].raw_distance, "BM25 order");
        }
        for h in &answer.hits {
            assert!(h.raw_distance > 0.0 && h.raw_distance < 1.0);
            let expected = round5(1.0 / (1.0 + h.raw_distance) * h.tier.weight());
            assert_eq!(h.score, expected, "{}", h.id);
            assert!(h.surroundings.is_none() && h.matched_via.is_none());
        }
    }

    #[test]
    fn filters_tiers_and_superseded() {
        let store = MemoryStore::sample();
        let near_only = MemoryQuery {
            include_short: false,
            include_long: false,
            n_results: 50,
            ..query("xavier cuda jetpack backup rust")
        };
        let answer = store.search(&near_only);
        assert_eq!(answer.searched_tiers, [Tier::Near]);
        assert!(!answer.hits.is_empty());
        assert!(answer.hits.iter().all(|h| h.tier == Tier::Near));

        let none = MemoryQuery {
            include_short: false,
            include_near: false,
            include_long: false,
            ..query("cuda")
        };
        let answer = store.search(&none);
        assert!(answer.searched_tiers.is_empty() && answer.hits.is_empty());

        let old = "jetpack 4.6 cuda 10.2";
        let hidden = store.search(&query(old));
        assert!(ids(&hidden).iter().all(|id| *id != "mem-037"));
        let shown = store.search(&MemoryQuery {
            include_superseded: true,
            ..query(old)
        });
        assert_eq!(ids(&shown).first(), Some(&"mem-037"));
        assert_eq!(
            shown.hits[0].metadata.superseded_by.as_deref(),
            Some("mem-023")
        );
    }

    #[test]
    fn cuts_to_n_and_drops_non_matches() {
        let store = MemoryStore::sample();
        for n in [1, 2, 7] {
            let answer = store.search(&MemoryQuery {
                n_results: n,
                ..query("xavier")
            });
            assert_eq!(answer.hits.len(), n);
        }
        assert!(store.search(&query("zeppelin")).hits.is_empty());
        assert!(store.search(&query("")).hits.is_empty());
    }

    #[test]
    fn reads_requests_like_serenmemory() {
        let ok = MemoryQuery::from_body(br#"{"query": "cuda", "extra": [1]}"#);
        assert_eq!(ok, Ok(query("cuda")));
        let full = MemoryQuery::from_body(
            br#"{"query": "q", "n_results": 50, "include_short": false, "include_near": true,
                 "include_long": false, "include_superseded": true, "with_surroundings": true}"#,
        );
        assert_eq!(
            full,
            Ok(MemoryQuery {
                query: "q".to_string(),
                n_results: 50,
                include_short: false,
                include_near: true,
                include_long: false,
                include_superseded: true,
            })
        );
        let refused: &[(&[u8], &str)] = &[
            (br#"{"query": "q", "n_results": 51}"#, "n_results"),
            (br#"{"query": "q", "n_results": 0}"#, "n_results"),
            (br#"{"query": "q", "n_results": "5"}"#, "n_results"),
            (br#"{"n_results": 5}"#, "query"),
            (br#"{"query": 7}"#, "query"),
            (br#"{"query": "q", "include_long": "yes"}"#, "include_long"),
            (
                br#"{"query": "q", "with_surroundings": null}"#,
                "with_surroundings",
            ),
            (b"cuda xavier", "body"),
        ];
        for (bytes, field) in refused {
            let err = MemoryQuery::from_body(bytes).expect_err("refused");
            assert!(
                err.to_string().starts_with(&format!("{field}:")),
                "{} gave {err}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
}
