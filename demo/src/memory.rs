//! The SerenMemory-speaking sample store: episodic memories in three tiers, ranked by BM25, with a
//! few long-term cores that carry satellites and a history.
//!
//! Owns the bundled `memories.json`, its index and links (built once), the `/search` and `/by_topic`
//! requests and answers of SerenMemory 5.4, and the routes `POST /search`, `POST /by_topic`,
//! `GET /health`, `GET /`. It does not own serving (see `mod.rs`), tokenizing or scoring (`bm25.rs`),
//! or anything the real SerenMemory does beyond reading: no writes, no consolidation. The sample's
//! cores, satellites and supersessions are written by hand in the data.
//!
//! The memory graph, as the real store shapes it:
//! - A core is a long-tier memory. A satellite is a short- or near-tier episode attached to one core
//!   (`satellite_of` in the data). A core supersedes the older core whose `superseded_by` names it.
//! - Every core hit carries `surroundings`: its satellite count, the newest satellite's time, and the
//!   ids it supersedes and is superseded by. Only `with_surroundings` adds `recent` (up to three
//!   satellites, newest first) and, when the core replaced one, `supersedes_entry`. Other hits carry
//!   `null`.
//! - Satellites are not hits unless `include_satellites` is asked for. A query that matches a
//!   satellite lifts its core to the satellite's rank instead, with `matched_via` naming the
//!   satellite; a core appears once however many of its satellites match, at its best rank.
//! - `/by_topic` matches tags exactly (the comma-separated, trimmed, lowercased parts of `topic`),
//!   ranked by how many of the asked topics a memory carries, then newest first.
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
//! - A core lifted by a satellite takes the satellite's `raw_distance` (and the score computed from
//!   it), the rank it was found at, so the order above still holds.
//! - A satellite lifts its core only when both their tiers are searched: nothing from a tier left
//!   out shapes the answer.
//! - `/by_topic` breaks ties of overlap and time by the order of `memories.json`.
//! - A link in the data that does not resolve (a `satellite_of` naming no core) is ignored; the
//!   `sample_data_parses` test keeps the bundled sample free of them.

use crate::bm25::{Index, round5};
use crate::request::{Body, Invalid};
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

/// The bundled sample, checked by the `sample_data_parses` test.
const MEMORIES_JSON: &str = include_str!("memories.json");

const N_RESULTS_DEFAULT: i64 = 5;
/// SerenMemory validates `n_results` with `ge=1, le=50` on both routes; the callosum clamps to the
/// same bounds.
const N_RESULTS_MIN: i64 = 1;
const N_RESULTS_MAX: i64 = 50;
/// How many satellites `recent` lists, as the real store does.
const RECENT_MAX: usize = 3;

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
    /// ISO 8601 timestamp in UTC, `YYYY-MM-DDTHH:MM:SSZ`, so that text order is time order.
    pub created_at: String,
    /// The id of the memory that replaced this one; such a memory is hidden unless
    /// `include_superseded` is asked for. A core named here supersedes this one.
    #[serde(default)]
    pub superseded_by: Option<String>,
    /// The id of the long-tier core this episode is a satellite of.
    #[serde(default)]
    pub satellite_of: Option<String>,
}

impl Memory {
    /// The topic's tags: its comma-separated parts, trimmed and lowercased, empty parts dropped.
    fn tags(&self) -> Vec<String> {
        self.topic
            .split(',')
            .map(|tag| tag.trim().to_lowercase())
            .filter(|tag| !tag.is_empty())
            .collect()
    }
}

/// The tiers asked for, in the real store's order.
fn tiers(include_short: bool, include_near: bool, include_long: bool) -> Vec<Tier> {
    [
        (Tier::Short, include_short),
        (Tier::Near, include_near),
        (Tier::Long, include_long),
    ]
    .into_iter()
    .filter_map(|(tier, wanted)| wanted.then_some(tier))
    .collect()
}

/// `n_results`, defaulted and bounded as both routes of the real store do.
fn n_results(body: &Body) -> Result<usize, Invalid> {
    match body.int_or("n_results", N_RESULTS_DEFAULT)? {
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
    }
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
    pub include_satellites: bool,
    pub with_surroundings: bool,
}

impl MemoryQuery {
    /// Reads a request the way SerenMemory's pydantic model does; extra keys are ignored.
    pub fn from_body(bytes: &[u8]) -> Result<Self, Invalid> {
        let body = Body::parse(bytes)?;
        Ok(Self {
            query: body.required_str("query")?,
            n_results: n_results(&body)?,
            include_short: body.bool_or("include_short", true)?,
            include_near: body.bool_or("include_near", true)?,
            include_long: body.bool_or("include_long", true)?,
            include_superseded: body.bool_or("include_superseded", false)?,
            include_satellites: body.bool_or("include_satellites", false)?,
            with_surroundings: body.bool_or("with_surroundings", false)?,
        })
    }

    fn tiers(&self) -> Vec<Tier> {
        tiers(self.include_short, self.include_near, self.include_long)
    }
}

/// A validated SerenMemory `/by_topic` request.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicQuery {
    /// Trimmed, lowercased and deduplicated, in the order asked, so they compare with tags.
    pub topics: Vec<String>,
    pub n_results: usize,
    pub include_short: bool,
    pub include_near: bool,
    pub include_long: bool,
    pub include_superseded: bool,
    pub include_satellites: bool,
    pub exclude_ids: Vec<String>,
}

impl TopicQuery {
    /// Reads a request the way SerenMemory's pydantic model does; extra keys are ignored.
    pub fn from_body(bytes: &[u8]) -> Result<Self, Invalid> {
        let body = Body::parse(bytes)?;
        let mut topics = Vec::new();
        for topic in body.required_str_list("topics")? {
            let topic = topic.trim().to_lowercase();
            if !topics.contains(&topic) {
                topics.push(topic);
            }
        }
        Ok(Self {
            topics,
            n_results: n_results(&body)?,
            include_short: body.bool_or("include_short", true)?,
            include_near: body.bool_or("include_near", true)?,
            include_long: body.bool_or("include_long", true)?,
            include_superseded: body.bool_or("include_superseded", false)?,
            include_satellites: body.bool_or("include_satellites", false)?,
            exclude_ids: body.str_list_or_empty("exclude_ids")?,
        })
    }

    fn tiers(&self) -> Vec<Tier> {
        tiers(self.include_short, self.include_near, self.include_long)
    }
}

#[derive(Debug, Serialize)]
pub struct MemoryAnswer {
    pub query: String,
    pub searched_tiers: Vec<Tier>,
    pub hits: Vec<MemoryHit>,
}

/// One `/search` hit, its fields in the real store's order.
#[derive(Debug, Serialize)]
pub struct MemoryHit {
    pub tier: Tier,
    pub content: String,
    pub topic: String,
    pub score: f64,
    pub raw_distance: f64,
    pub id: String,
    pub metadata: HitMetadata,
    /// Set on cores only; `null` on every other hit.
    pub surroundings: Option<Surroundings>,
    /// The satellite whose match lifted this core; `null` when the hit matched itself.
    pub matched_via: Option<MatchedVia>,
}

#[derive(Debug, Serialize)]
pub struct HitMetadata {
    pub source: &'static str,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
}

/// A core's neighbourhood. The counts and ids always; `recent` and `supersedes_entry` only when the
/// request asked `with_surroundings` (and, for the second, when the core replaced one).
#[derive(Debug, Serialize)]
pub struct Surroundings {
    pub satellites: usize,
    pub latest_satellite_at: Option<String>,
    pub supersedes: Option<String>,
    pub superseded_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recent: Option<Vec<Entry>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersedes_entry: Option<Entry>,
}

/// A memory named inside `surroundings`.
#[derive(Debug, Serialize)]
pub struct Entry {
    pub id: String,
    pub content: String,
    pub created_at: String,
}

#[derive(Debug, Serialize)]
pub struct MatchedVia {
    pub id: String,
    pub content: String,
    pub created_at: String,
    pub raw_distance: f64,
}

#[derive(Debug, Serialize)]
pub struct TopicAnswer {
    /// The topics as matched: trimmed, lowercased, deduplicated.
    pub topics: Vec<String>,
    pub searched_tiers: Vec<Tier>,
    pub hits: Vec<TopicHit>,
}

/// One `/by_topic` hit, its fields in the real store's order.
#[derive(Debug, Serialize)]
pub struct TopicHit {
    pub tier: Tier,
    pub content: String,
    pub topic: String,
    /// The asked topics this memory carries, in the order asked.
    pub matched_topics: Vec<String>,
    /// `matched_topics.len()`.
    pub overlap: usize,
    pub id: String,
    pub metadata: HitMetadata,
}

/// Memories plus their BM25 index, tags and links; built once, then only read. Links are positions
/// in `memories`.
#[derive(Debug)]
pub struct MemoryStore {
    memories: Vec<Memory>,
    index: Index,
    tags: Vec<Vec<String>>,
    /// The core each satellite belongs to.
    core_of: Vec<Option<usize>>,
    /// Each core's satellites, newest first (equal times in file order).
    satellites: Vec<Vec<usize>>,
    /// The core each core replaced (the first in the file, should several name it).
    supersedes: Vec<Option<usize>>,
}

impl MemoryStore {
    pub fn new(memories: Vec<Memory>) -> Self {
        let docs = memories
            .iter()
            .map(|m| format!("{} {}", m.content, m.topic))
            .collect();
        let position: HashMap<&str, usize> = memories
            .iter()
            .enumerate()
            .map(|(doc, m)| (m.id.as_str(), doc))
            .collect();
        let is_core = |doc: usize| {
            let m: &Memory = &memories[doc];
            m.tier == Tier::Long && m.satellite_of.is_none()
        };
        let core_of: Vec<Option<usize>> = memories
            .iter()
            .map(|m| {
                let core = *position.get(m.satellite_of.as_deref()?)?;
                (m.tier != Tier::Long && is_core(core)).then_some(core)
            })
            .collect();
        let mut satellites = vec![Vec::new(); memories.len()];
        for (doc, core) in core_of.iter().enumerate() {
            if let Some(core) = *core {
                satellites[core].push(doc);
            }
        }
        for list in &mut satellites {
            // Stable, so equal times keep file order.
            list.sort_by(|&a, &b| memories[b].created_at.cmp(&memories[a].created_at));
        }
        let mut supersedes = vec![None; memories.len()];
        for (doc, m) in memories.iter().enumerate() {
            let newer = m.superseded_by.as_deref().and_then(|id| position.get(id));
            if let Some(&newer) = newer
                && is_core(newer)
                && is_core(doc)
                && supersedes[newer].is_none()
            {
                supersedes[newer] = Some(doc);
            }
        }
        Self {
            index: Index::new(docs),
            tags: memories.iter().map(Memory::tags).collect(),
            core_of,
            satellites,
            supersedes,
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

    fn is_core(&self, doc: usize) -> bool {
        self.memories[doc].tier == Tier::Long && self.core_of[doc].is_none()
    }

    /// Whether `doc` may be shown, by tier and supersession (satellites are the caller's rule).
    fn visible(&self, doc: usize, tiers: &[Tier], include_superseded: bool) -> bool {
        let memory = &self.memories[doc];
        tiers.contains(&memory.tier) && (include_superseded || memory.superseded_by.is_none())
    }

    /// What a match on `doc` shows: the memory itself, or, for a satellite, its core by way of it
    /// (`(core, Some(satellite))`); `None` when nothing may be shown.
    fn shown_for(
        &self,
        doc: usize,
        q: &MemoryQuery,
        tiers: &[Tier],
    ) -> Option<(usize, Option<usize>)> {
        if let Some(core) = self.core_of[doc]
            && !q.include_satellites
        {
            let lifts = tiers.contains(&self.memories[doc].tier)
                && self.visible(core, tiers, q.include_superseded);
            return lifts.then_some((core, Some(doc)));
        }
        self.visible(doc, tiers, q.include_superseded)
            .then_some((doc, None))
    }

    /// Pure search: BM25 order, satellites folded into their cores, filtered by tier and
    /// supersession, cut to `n_results`.
    pub fn search(&self, q: &MemoryQuery) -> MemoryAnswer {
        let tiers = q.tiers();
        let mut placed = HashSet::new();
        let mut hits = Vec::new();
        for (doc, strength) in self.index.search(&q.query) {
            if hits.len() == q.n_results {
                break;
            }
            let Some((shown, via)) = self.shown_for(doc, q, &tiers) else {
                continue;
            };
            // BM25 order, so the first placing of a core is its best rank.
            if placed.insert(shown) {
                hits.push(self.hit(shown, strength, via, q.with_surroundings));
            }
        }
        MemoryAnswer {
            query: q.query.clone(),
            searched_tiers: tiers,
            hits,
        }
    }

    fn hit(
        &self,
        doc: usize,
        strength: f64,
        via: Option<usize>,
        with_surroundings: bool,
    ) -> MemoryHit {
        let memory = &self.memories[doc];
        let raw_distance = round5(1.0 / (1.0 + strength));
        MemoryHit {
            tier: memory.tier,
            content: memory.content.clone(),
            topic: memory.topic.clone(),
            score: round5(1.0 / (1.0 + raw_distance) * memory.tier.weight()),
            raw_distance,
            id: memory.id.clone(),
            metadata: metadata(memory),
            surroundings: self.surroundings(doc, with_surroundings),
            matched_via: via.map(|satellite| {
                let satellite = &self.memories[satellite];
                MatchedVia {
                    id: satellite.id.clone(),
                    content: satellite.content.clone(),
                    created_at: satellite.created_at.clone(),
                    raw_distance,
                }
            }),
        }
    }

    /// A core's surroundings; `None` for any other memory.
    fn surroundings(&self, doc: usize, with_surroundings: bool) -> Option<Surroundings> {
        if !self.is_core(doc) {
            return None;
        }
        let satellites = &self.satellites[doc];
        let older = self.supersedes[doc];
        Some(Surroundings {
            satellites: satellites.len(),
            latest_satellite_at: satellites
                .first()
                .map(|&s| self.memories[s].created_at.clone()),
            supersedes: older.map(|o| self.memories[o].id.clone()),
            superseded_by: self.memories[doc].superseded_by.clone(),
            recent: with_surroundings.then(|| {
                satellites
                    .iter()
                    .take(RECENT_MAX)
                    .map(|&s| self.entry(s))
                    .collect()
            }),
            supersedes_entry: older.filter(|_| with_surroundings).map(|o| self.entry(o)),
        })
    }

    fn entry(&self, doc: usize) -> Entry {
        let memory = &self.memories[doc];
        Entry {
            id: memory.id.clone(),
            content: memory.content.clone(),
            created_at: memory.created_at.clone(),
        }
    }

    /// Pure topic lookup: exact tag matches, most topics matched first, then newest first.
    pub fn by_topic(&self, q: &TopicQuery) -> TopicAnswer {
        let tiers = q.tiers();
        let mut ranked: Vec<(usize, Vec<String>)> = (0..self.memories.len())
            .filter(|&doc| {
                self.visible(doc, &tiers, q.include_superseded)
                    && (q.include_satellites || self.core_of[doc].is_none())
                    && !q.exclude_ids.contains(&self.memories[doc].id)
            })
            .filter_map(|doc| {
                let matched: Vec<String> = q
                    .topics
                    .iter()
                    .filter(|topic| self.tags[doc].contains(topic))
                    .cloned()
                    .collect();
                (!matched.is_empty()).then_some((doc, matched))
            })
            .collect();
        // Stable, so equal overlap and time keep file order.
        ranked.sort_by(|(a, a_matched), (b, b_matched)| {
            b_matched.len().cmp(&a_matched.len()).then_with(|| {
                self.memories[*b]
                    .created_at
                    .cmp(&self.memories[*a].created_at)
            })
        });
        let hits = ranked
            .into_iter()
            .take(q.n_results)
            .map(|(doc, matched_topics)| {
                let memory = &self.memories[doc];
                TopicHit {
                    tier: memory.tier,
                    content: memory.content.clone(),
                    topic: memory.topic.clone(),
                    overlap: matched_topics.len(),
                    matched_topics,
                    id: memory.id.clone(),
                    metadata: metadata(memory),
                }
            })
            .collect();
        TopicAnswer {
            topics: q.topics.clone(),
            searched_tiers: tiers,
            hits,
        }
    }
}

fn metadata(memory: &Memory) -> HitMetadata {
    HitMetadata {
        source: "demo",
        created_at: memory.created_at.clone(),
        superseded_by: memory.superseded_by.clone(),
    }
}

/// The SerenMemory routes over the bundled sample.
pub fn router() -> Router {
    Router::new()
        .route("/search", post(search))
        .route("/by_topic", post(by_topic))
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

async fn by_topic(
    State(store): State<&'static MemoryStore>,
    body: Bytes,
) -> Result<Json<TopicAnswer>, Invalid> {
    let q = TopicQuery::from_body(&body)?;
    let answer = store.by_topic(&q);
    // Counts only, as for search: topics say what a query was about.
    tracing::debug!(
        hits = answer.hits.len(),
        topics = q.topics.len(),
        n_results = q.n_results,
        "memory sample answered by topic"
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
            include_satellites: false,
            with_surroundings: false,
        }
    }

    fn topics(asked: &[&str]) -> TopicQuery {
        TopicQuery {
            topics: asked.iter().map(|t| t.to_string()).collect(),
            n_results: 50,
            include_short: true,
            include_near: true,
            include_long: true,
            include_superseded: false,
            include_satellites: false,
            exclude_ids: Vec::new(),
        }
    }

    fn ids(answer: &MemoryAnswer) -> Vec<&str> {
        answer.hits.iter().map(|h| h.id.as_str()).collect()
    }

    fn memory(id: &str) -> &'static Memory {
        MemoryStore::sample()
            .memories
            .iter()
            .find(|m| m.id == id)
            .unwrap_or_else(|| panic!("{id} is in the sample"))
    }

    /// A memory as `surroundings` names it, built from the data rather than copied from it.
    fn entry(id: &str) -> Value {
        let m = memory(id);
        json!({"id": m.id, "content": m.content, "created_at": m.created_at})
    }

    #[test]
    fn sample_data_parses() {
        let memories: Vec<Memory> =
            serde_json::from_str(MEMORIES_JSON).expect("memories.json is valid");
        assert!((30..=45).contains(&memories.len()), "{}", memories.len());
        let by_id = |id: &str| memories.iter().find(|o| o.id == id);
        for (i, m) in memories.iter().enumerate() {
            assert_eq!(m.id, format!("mem-{:03}", i + 1), "ids run in order");
            assert!(
                !m.content.trim().is_empty() && !m.tags().is_empty(),
                "{}",
                m.id
            );
            // One fixed shape, so that comparing the text compares the time.
            let t = m.created_at.as_bytes();
            assert!(
                t.len() == 20 && t[4] == b'-' && t[10] == b'T' && t[19] == b'Z',
                "{}",
                m.id
            );
            if let Some(newer) = &m.superseded_by {
                assert!(by_id(newer).is_some(), "{} -> {newer}", m.id);
                let rivals = memories
                    .iter()
                    .filter(|o| o.superseded_by == m.superseded_by);
                assert_eq!(rivals.count(), 1, "{newer} supersedes one memory");
            }
            if let Some(core) = &m.satellite_of {
                let core = by_id(core).unwrap_or_else(|| panic!("{} -> {core}", m.id));
                assert!(m.tier != Tier::Long, "{} is an episode", m.id);
                assert!(
                    core.tier == Tier::Long && core.satellite_of.is_none(),
                    "{} is a core",
                    core.id
                );
            }
        }
        for tier in [Tier::Short, Tier::Near, Tier::Long] {
            assert!(
                memories.iter().filter(|m| m.tier == tier).count() >= 8,
                "{tier:?}"
            );
        }
        let store = MemoryStore::sample();
        assert_eq!(store.memories.len(), memories.len());
        // Every link resolved: none was dropped as dangling.
        for (doc, m) in memories.iter().enumerate() {
            assert_eq!(
                store.core_of[doc].is_some(),
                m.satellite_of.is_some(),
                "{}",
                m.id
            );
        }
        let superseded = memories
            .iter()
            .filter(|m| m.superseded_by.is_some())
            .count();
        assert_eq!(store.supersedes.iter().flatten().count(), superseded);
        // The demo needs a core with more satellites than `recent` lists and a history.
        assert!(
            (0..memories.len())
                .any(|doc| store.satellites[doc].len() > RECENT_MAX
                    && store.supersedes[doc].is_some())
        );
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
            // Since the sample has cores, long-tier hits carry surroundings; counts only, as
            // `with_surroundings` was not asked.
            match &h.surroundings {
                Some(s) => {
                    assert_eq!(h.tier, Tier::Long, "{}", h.id);
                    assert!(
                        s.recent.is_none() && s.supersedes_entry.is_none(),
                        "{}",
                        h.id
                    );
                }
                None => assert_ne!(h.tier, Tier::Long, "{}", h.id),
            }
            if let Some(via) = &h.matched_via {
                assert_eq!(via.raw_distance, h.raw_distance, "{}", h.id);
            }
        }
    }

    #[test]
    fn cores_carry_their_surroundings() {
        let counts = json!({"satellites": 4, "latest_satellite_at": "2025-10-19T09:30:00Z",
                            "supersedes": "mem-023", "superseded_by": null});
        let mut full = counts.clone();
        full["recent"] = json!([entry("mem-042"), entry("mem-041"), entry("mem-040")]);
        full["supersedes_entry"] = entry("mem-023");
        let superseded = MemoryQuery {
            include_superseded: true,
            with_surroundings: true,
            ..query("cuda version tied jetpack")
        };
        let cases = [
            (
                "counts only without with_surroundings",
                query("cuda xavier"),
                "mem-038",
                counts,
            ),
            (
                "recent newest first, at most three, and the replaced core",
                MemoryQuery {
                    with_surroundings: true,
                    ..query("cuda xavier")
                },
                "mem-038",
                full,
            ),
            (
                "no supersedes_entry for a core that replaced none",
                MemoryQuery {
                    with_surroundings: true,
                    ..query("wren staging xavier")
                },
                "mem-043",
                json!({"satellites": 2, "latest_satellite_at": "2025-10-12T18:20:00Z",
                       "supersedes": null, "superseded_by": null,
                       "recent": [entry("mem-044"), entry("mem-010")]}),
            ),
            (
                "a core with no satellites",
                query("household finance"),
                "mem-028",
                json!({"satellites": 0, "latest_satellite_at": null,
                       "supersedes": null, "superseded_by": null}),
            ),
            (
                "a superseded core names both sides of its history",
                superseded,
                "mem-023",
                json!({"satellites": 0, "latest_satellite_at": null,
                       "supersedes": "mem-037", "superseded_by": "mem-038",
                       "recent": [], "supersedes_entry": entry("mem-037")}),
            ),
        ];
        for (why, q, core, expected) in cases {
            let answer = MemoryStore::sample().search(&MemoryQuery { n_results: 50, ..q });
            let hit = answer
                .hits
                .iter()
                .find(|h| h.id == core)
                .unwrap_or_else(|| panic!("{why}: {core} in {:?}", ids(&answer)));
            let got = serde_json::to_value(&hit.surroundings).expect("serializes");
            assert_eq!(got, expected, "{why}");
        }
    }

    /// The top hit's id and the satellite it was found by, if any; `None` for no hits.
    type Top = Option<(&'static str, Option<&'static str>)>;

    #[test]
    fn satellites_lift_their_cores() {
        let store = MemoryStore::sample();
        let with = |f: fn(&mut MemoryQuery), text: &str| {
            let mut q = query(text);
            f(&mut q);
            q
        };
        // (why, query, expected top hit and the satellite it was found by)
        let cases: &[(&str, MemoryQuery, Top)] = &[
            (
                "a satellite's match shows its core",
                query("transcribes audio"),
                Some(("mem-038", Some("mem-041"))),
            ),
            (
                "another core, another satellite",
                query("deployed rc1 by hand"),
                Some(("mem-043", Some("mem-044"))),
            ),
            (
                "include_satellites lists the satellite itself",
                with(|q| q.include_satellites = true, "transcribes audio"),
                Some(("mem-041", None)),
            ),
            (
                "the satellite's tier is not searched",
                with(|q| q.include_short = false, "transcribes audio"),
                None,
            ),
            (
                "the core's tier is not searched",
                with(|q| q.include_long = false, "transcribes audio"),
                None,
            ),
        ];
        for (why, q, expected) in cases {
            let answer = store.search(q);
            let top = answer
                .hits
                .first()
                .map(|h| (h.id.as_str(), h.matched_via.as_ref().map(|v| v.id.as_str())));
            assert_eq!(top, *expected, "{why}: {:?}", ids(&answer));
            if let Some(via) = answer.hits.first().and_then(|h| h.matched_via.as_ref()) {
                let satellite = memory(&via.id);
                assert_eq!(
                    (via.content.as_str(), via.created_at.as_str()),
                    (satellite.content.as_str(), satellite.created_at.as_str()),
                    "{why}"
                );
            }
        }

        // Many satellites match: each core appears once, no satellite is a hit, and a lifted core
        // sits at its best satellite's rank.
        let answer = store.search(&MemoryQuery {
            n_results: 50,
            ..query("cuda xavier")
        });
        let got = ids(&answer);
        let unique: HashSet<&str> = got.iter().copied().collect();
        assert_eq!(unique.len(), got.len(), "{got:?}");
        assert!(got.contains(&"mem-038"), "{got:?}");
        for id in [
            "mem-039", "mem-040", "mem-041", "mem-042", "mem-044", "mem-010",
        ] {
            assert!(!got.contains(&id), "{id} is a satellite: {got:?}");
        }
        let all = store.search(&MemoryQuery {
            n_results: 50,
            include_satellites: true,
            ..query("cuda xavier")
        });
        assert!(all.hits.iter().all(|h| h.matched_via.is_none()));
        let first_of_038 = all
            .hits
            .iter()
            .position(|h| {
                h.id == "mem-038" || memory(&h.id).satellite_of.as_deref() == Some("mem-038")
            })
            .expect("mem-038 or one of its satellites matches");
        let core = &answer.hits[got.iter().position(|id| *id == "mem-038").expect("listed")];
        assert_eq!(core.raw_distance, all.hits[first_of_038].raw_distance);
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
    fn by_topic_ranks_by_overlap_then_recency() {
        let cuda = ["xavier", "cuda", "jetpack"];
        let cases: Vec<(&str, TopicQuery, &[&str])> = vec![
            (
                "three tags, then two newest first, then one; no satellite, nothing superseded",
                topics(&cuda),
                &[
                    "mem-038", "mem-024", "mem-013", "mem-001", "mem-014", "mem-003", "mem-002",
                    "mem-043", "mem-022", "mem-035",
                ],
            ),
            (
                "exclude_ids drops the named memories",
                TopicQuery {
                    exclude_ids: vec!["mem-038".to_string(), "mem-013".to_string()],
                    ..topics(&cuda)
                },
                &[
                    "mem-024", "mem-001", "mem-014", "mem-003", "mem-002", "mem-043", "mem-022",
                    "mem-035",
                ],
            ),
            (
                "n_results cuts",
                TopicQuery {
                    n_results: 3,
                    ..topics(&cuda)
                },
                &["mem-038", "mem-024", "mem-013"],
            ),
            (
                "include_superseded brings the history in, by time",
                TopicQuery {
                    n_results: 4,
                    include_superseded: true,
                    ..topics(&cuda)
                },
                &["mem-038", "mem-023", "mem-037", "mem-024"],
            ),
            (
                "include_satellites lists the episodes too",
                TopicQuery {
                    n_results: 3,
                    include_satellites: true,
                    ..topics(&["wren", "xavier"])
                },
                &["mem-044", "mem-043", "mem-010"],
            ),
            (
                "without satellites, the core, then single tags newest first",
                TopicQuery {
                    n_results: 3,
                    ..topics(&["wren", "xavier"])
                },
                &["mem-043", "mem-038", "mem-024"],
            ),
            (
                "tiers filter",
                TopicQuery {
                    include_near: false,
                    include_long: false,
                    ..topics(&["xavier"])
                },
                &["mem-001", "mem-003", "mem-002"],
            ),
            ("no such tag", topics(&["zeppelin"]), &[]),
            ("a tag is matched whole", topics(&["xav"]), &[]),
        ];
        let store = MemoryStore::sample();
        for (why, q, expected) in cases {
            let answer = store.by_topic(&q);
            let got: Vec<&str> = answer.hits.iter().map(|h| h.id.as_str()).collect();
            assert_eq!(got, expected, "{why}");
            assert_eq!(answer.topics, q.topics, "{why}");
            assert_eq!(answer.searched_tiers, q.tiers(), "{why}");
            for h in &answer.hits {
                let tags = memory(&h.id).tags();
                let asked: Vec<&String> = q.topics.iter().filter(|t| tags.contains(t)).collect();
                assert_eq!(h.matched_topics.iter().collect::<Vec<_>>(), asked, "{why}");
                assert_eq!(h.overlap, h.matched_topics.len(), "{why}");
                assert_eq!(h.topic, memory(&h.id).topic, "{why}");
            }
        }
    }

    #[test]
    fn reads_requests_like_serenmemory() {
        let ok = MemoryQuery::from_body(br#"{"query": "cuda", "extra": [1]}"#);
        assert_eq!(ok, Ok(query("cuda")));
        let full = MemoryQuery::from_body(
            br#"{"query": "q", "n_results": 50, "include_short": false, "include_near": true,
                 "include_long": false, "include_superseded": true, "include_satellites": true,
                 "with_surroundings": true}"#,
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
                include_satellites: true,
                with_surroundings: true,
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
                br#"{"query": "q", "include_satellites": 1}"#,
                "include_satellites",
            ),
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

    #[test]
    fn reads_topic_requests_like_serenmemory() {
        let ok = TopicQuery::from_body(br#"{"topics": [" CUDA ", "xavier", "cuda"], "extra": 1}"#);
        assert_eq!(
            ok,
            Ok(TopicQuery {
                n_results: 5,
                ..topics(&["cuda", "xavier"])
            }),
            "trimmed, lowercased, deduplicated; defaults"
        );
        let full = TopicQuery::from_body(
            br#"{"topics": ["wren"], "n_results": 50, "include_short": false, "include_near": false,
                 "include_long": true, "include_superseded": true, "include_satellites": true,
                 "exclude_ids": ["mem-043"]}"#,
        );
        assert_eq!(
            full,
            Ok(TopicQuery {
                include_short: false,
                include_near: false,
                include_superseded: true,
                include_satellites: true,
                exclude_ids: vec!["mem-043".to_string()],
                ..topics(&["wren"])
            })
        );
        let refused: &[(&[u8], &str)] = &[
            (br#"{"n_results": 5}"#, "topics"),
            (br#"{"topics": "cuda"}"#, "topics"),
            (br#"{"topics": null}"#, "topics"),
            (br#"{"topics": []}"#, "topics"),
            (br#"{"topics": ["cuda", 7]}"#, "topics.1"),
            (br#"{"topics": ["cuda"], "n_results": 0}"#, "n_results"),
            (br#"{"topics": ["cuda"], "n_results": 51}"#, "n_results"),
            (
                br#"{"topics": ["cuda"], "exclude_ids": "mem-001"}"#,
                "exclude_ids",
            ),
            (
                br#"{"topics": ["cuda"], "exclude_ids": null}"#,
                "exclude_ids",
            ),
            (
                br#"{"topics": ["cuda"], "exclude_ids": [1]}"#,
                "exclude_ids.0",
            ),
            (
                br#"{"topics": ["cuda"], "include_satellites": "no"}"#,
                "include_satellites",
            ),
            (b"[\"cuda\"]", "body"),
        ];
        for (bytes, field) in refused {
            let err = TopicQuery::from_body(bytes).expect_err("refused");
            assert!(
                err.to_string().starts_with(&format!("{field}:")),
                "{} gave {err}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
}
