//! `seren_memory`: the SerenMemory search protocol (episodic memory, default port 7420).
//!
//! SerenMemory answers `POST /search` with hits ranked by its own tier-weighted score. We keep that
//! order, read `raw_distance` as the relevance the floor uses, and keep the store's score as
//! provenance only.

use super::decode::{decode_kept, id_text, relevance_from_distance};
use super::protocol::{Context, Options, Protocol, Reach, StoreType, json_body, topic_search_path};
use crate::config::StoreKind;
use crate::fusion::{Episode, Hit, Keep, Satellites};
use crate::metadata::{Fragment, Metadata, Raw, RawMap, RawObject};
use crate::packet::edges::EdgeKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

pub const TYPE: StoreType = StoreType {
    name: StoreKind::Memory.name(),
    options: &[
        "search_path",
        "include_short",
        "include_near",
        "include_long",
        "include_superseded",
        "with_surroundings",
        "topic_search_path",
    ],
    reach: Reach::Http {
        build,
        topics: true,
    },
};

/// SerenMemory rejects `n_results` above this with a 422, so we never ask for more.
pub const MAX_N: usize = 50;

struct Memory {
    include_short: bool,
    include_near: bool,
    include_long: bool,
    include_superseded: bool,
    /// The store's own `with_surroundings`; without it, whether satellite edges are on.
    with_surroundings: Option<bool>,
}

fn build(options: &Options) -> Result<Box<dyn Protocol>, String> {
    topic_search_path(options.0)?;
    Ok(Box::new(Memory {
        include_short: options.flag("include_short", true)?,
        include_near: options.flag("include_near", true)?,
        include_long: options.flag("include_long", true)?,
        include_superseded: options.flag("include_superseded", false)?,
        // Satellite edges need the surroundings; the store's own option wins [5.3].
        with_surroundings: options.maybe_flag("with_surroundings")?,
    }))
}

/// SerenMemory's `/search` request.
#[derive(Serialize)]
struct SearchBody<'a> {
    query: &'a str,
    n_results: usize,
    include_short: bool,
    include_near: bool,
    include_long: bool,
    include_superseded: bool,
    with_surroundings: bool,
}

/// SerenMemory's `/by_topic` request.
#[derive(Serialize)]
struct TopicBody<'a> {
    topics: &'a [String],
    n_results: usize,
    include_short: bool,
    include_near: bool,
    include_long: bool,
    include_superseded: bool,
    exclude_ids: &'a [String],
}

/// One hit as SerenMemory sends it. Only `id`, `content` and the numbers are copied out; what goes
/// into metadata stays borrowed from the answer until it is written once (see [`Metadata`]).
#[derive(Deserialize)]
struct MemoryHit<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tier: Option<Raw<'a>>,
    #[serde(default, borrow)]
    topic: Option<Raw<'a>>,
    #[serde(default)]
    score: Option<f64>,
    /// Lenient on purpose: the contract reads a missing or non-numeric distance as 0.
    #[serde(default)]
    raw_distance: Option<Value>,
    #[serde(default, borrow)]
    metadata: Option<RawMap<'a>>,
    #[serde(default, borrow)]
    surroundings: Option<Raw<'a>>,
    #[serde(default, borrow)]
    matched_via: Option<Raw<'a>>,
}

impl Protocol for Memory {
    fn request(&self, query: &str, n: usize, context: &Context) -> Vec<u8> {
        json_body(&SearchBody {
            query,
            n_results: n.clamp(1, MAX_N),
            include_short: self.include_short,
            include_near: self.include_near,
            include_long: self.include_long,
            include_superseded: self.include_superseded,
            with_surroundings: self.with_surroundings.unwrap_or(context.surroundings),
        })
    }

    fn decode_kept(&self, body: &[u8], limit: usize, keep: Keep) -> Result<Vec<Hit>, String> {
        decode_kept(body, limit, keep, |hit: MemoryHit| {
            let distance = hit
                .raw_distance
                .as_ref()
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            // `recent` and `supersedes_entry` are lifted out whether or not edges are on,
            // so only the counts stay on the core [5.3].
            let (counts, satellites) = lift(hit.surroundings.filter(|v| !v.is_null()));
            let mut after = Vec::new();
            if let Some(counts) = &counts {
                after.push(("surroundings", Fragment::Raw(counts)));
            }
            if let Some(via) = hit.matched_via.filter(|v| !v.is_null()) {
                after.push(("matched_via", Fragment::Raw(via.text())));
            }
            Hit {
                id: id_text(hit.id),
                content: hit.content.map(Cow::into_owned).unwrap_or_default(),
                base_relevance: relevance_from_distance(distance),
                raw_distance: Some(distance),
                native_score: hit.score,
                // The later of two equal keys wins: the store's own metadata wins over `tier` and
                // `topic` (put first), and `surroundings` and `matched_via`, when given, win over it.
                metadata: Metadata::layered(
                    &tier_and_topic(hit.tier, hit.topic),
                    hit.metadata,
                    &after,
                ),
                satellites,
            }
        })
    }

    fn topic_request(&self, topics: &[String], n: usize, exclude: &[String]) -> Option<Vec<u8>> {
        Some(json_body(&TopicBody {
            topics,
            n_results: n.clamp(1, MAX_N),
            include_short: self.include_short,
            include_near: self.include_near,
            include_long: self.include_long,
            include_superseded: self.include_superseded,
            exclude_ids: exclude,
        }))
    }

    fn decode_topic(&self, body: &[u8], limit: usize) -> Result<Vec<Hit>, String> {
        decode_kept(body, limit, Keep::ALL, |hit: TopicHit| {
            let after = [
                (
                    "matched_topics",
                    hit.matched_topics
                        .filter(|v| !v.is_null())
                        .map_or(Fragment::Raw("[]"), |v| Fragment::Raw(v.text())),
                ),
                ("overlap", hit.overlap.map_or(Fragment::Null, Fragment::F64)),
                // Overwrites any `source` of the store's own [5.3].
                (EdgeKind::KEY, Fragment::Str(EdgeKind::Topic.wire())),
            ];
            Hit {
                id: id_text(hit.id),
                content: hit.content.map(Cow::into_owned).unwrap_or_default(),
                base_relevance: 0.0,
                raw_distance: None,
                native_score: hit.overlap,
                metadata: Metadata::layered(
                    &tier_and_topic(hit.tier, hit.topic),
                    hit.metadata,
                    &after,
                ),
                satellites: None,
            }
        })
    }
}

/// `tier` and `topic`, which go before a hit's own metadata, so the store's own keys of those
/// names win (the later of two equal keys wins).
fn tier_and_topic<'a>(
    tier: Option<Raw<'a>>,
    topic: Option<Raw<'a>>,
) -> [(&'static str, Fragment<'a>); 2] {
    [
        ("tier", Fragment::from(tier)),
        ("topic", Fragment::from(topic)),
    ]
}

/// One hit of a `/by_topic` answer.
#[derive(Deserialize)]
struct TopicHit<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tier: Option<Raw<'a>>,
    #[serde(default, borrow)]
    topic: Option<Raw<'a>>,
    #[serde(default, borrow)]
    matched_topics: Option<Raw<'a>>,
    #[serde(default)]
    overlap: Option<f64>,
    #[serde(default, borrow)]
    metadata: Option<RawMap<'a>>,
}

/// Splits a core's `surroundings` into what stays in its metadata (the counts) and what becomes
/// edges (`recent`, `supersedes_entry`). A value that is not an object stays as it is.
/// The counts come back as JSON text.
fn lift(surroundings: Option<Raw<'_>>) -> (Option<String>, Option<Box<Satellites>>) {
    let Some(raw) = surroundings else {
        return (None, None);
    };
    let Ok(RawObject(mut entries)) = serde_json::from_str::<RawObject>(raw.text()) else {
        return (Some(raw.text().to_owned()), None);
    };
    let mut satellites = Satellites::default();
    entries.retain(|(key, value)| {
        let Fragment::Raw(text) = value else {
            return true;
        };
        match key.as_ref() {
            "recent" => {
                if let Ok(Value::Array(items)) = serde_json::from_str(text) {
                    satellites.recent = items.into_iter().filter_map(episode).collect();
                }
                false
            }
            "supersedes_entry" => {
                satellites.supersedes = serde_json::from_str(text).ok().and_then(episode);
                false
            }
            _ => true,
        }
    });
    let counts = Metadata::from_entries(&mut entries).as_json().into_owned();
    let satellites = (!satellites.recent.is_empty() || satellites.supersedes.is_some())
        .then(|| Box::new(satellites));
    (Some(counts), satellites)
}

/// A `{id, content, created_at}` object as an episode; anything else is none.
fn episode(value: Value) -> Option<Episode> {
    let Value::Object(mut item) = value else {
        return None;
    };
    Some(Episode {
        id: id_text(item.remove("id")),
        content: match item.remove("content") {
            Some(Value::String(content)) => content,
            _ => String::new(),
        },
        created_at: item.remove("created_at").unwrap_or(Value::Null),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::protocol::body_of;
    use serde_json::json;

    fn memory(options: Value) -> Box<dyn Protocol> {
        let Value::Object(options) = options else {
            panic!("options must be an object")
        };
        build(&Options(&options)).expect("valid options")
    }

    #[test]
    fn request_sends_every_key_and_clamps_n() {
        let m = memory(json!({}));
        assert_eq!(
            body_of(m.request("cuda", 20, &Default::default())),
            json!({"query": "cuda", "n_results": 20, "include_short": true, "include_near": true,
                   "include_long": true, "include_superseded": false, "with_surroundings": false})
        );
        assert_eq!(
            body_of(m.request("q", 75, &Default::default()))["n_results"],
            50
        );
        assert_eq!(
            body_of(m.request("q", 0, &Default::default()))["n_results"],
            1
        );
        let m = memory(json!({"include_near": false, "with_surroundings": true}));
        let body = body_of(m.request("q", 5, &Default::default()));
        assert_eq!(body["include_near"], false);
        assert_eq!(body["with_surroundings"], true);
    }

    #[test]
    fn bad_options_are_named() {
        let Value::Object(options) = json!({"include_long": "yes"}) else {
            unreachable!()
        };
        let err = build(&Options(&options)).err().expect("refused");
        assert!(err.contains("include_long"), "{err}");
    }

    #[test]
    fn decode_maps_the_real_shape() {
        let body = br#"{"query":"q","searched_tiers":["short"],"hits":[
            {"tier":"long","content":"one","topic":"a, b","score":0.65,"raw_distance":0.5,"id":"x1",
             "metadata":{"source":"s","tier":"mine"},"surroundings":{"satellites":2},"matched_via":null},
            {"tier":"short","content":"two","topic":null,"score":null,"id":7},
            {"content":"three","raw_distance":"far"},
            {"content":"four","raw_distance":-3}
        ]}"#;
        let hits = memory(json!({})).decode(body, 100).unwrap();
        assert_eq!(hits.len(), 4);
        assert_eq!(hits[0].id, "x1");
        assert_eq!(hits[0].content, "one");
        assert!((hits[0].base_relevance - 1.0 / 1.5).abs() < 1e-12);
        assert_eq!(hits[0].raw_distance, Some(0.5));
        assert_eq!(hits[0].native_score, Some(0.65));
        let metadata = hits[0].metadata.to_map();
        assert_eq!(metadata["tier"], "mine", "the store's metadata wins");
        assert_eq!(metadata["topic"], "a, b");
        assert_eq!(metadata["surroundings"], json!({"satellites": 2}));
        assert!(!metadata.contains_key("matched_via"));
        assert_eq!(
            hits[0].metadata.as_json(),
            r#"{"source":"s","surroundings":{"satellites":2},"tier":"mine","topic":"a, b"}"#
        );
        assert_eq!(
            hits[1].metadata.as_json(),
            r#"{"tier":"short","topic":null}"#,
            "no metadata still says tier and topic"
        );
        assert_eq!(hits[1].id, "7");
        assert_eq!(hits[1].native_score, None);
        assert_eq!(hits[2].raw_distance, Some(0.0));
        assert_eq!(hits[2].base_relevance, 1.0);
        assert_eq!(hits[2].id, "");
        assert_eq!(
            hits[3].base_relevance, 1.0,
            "a negative distance clamps to 0"
        );
    }

    #[test]
    fn missing_or_null_hits_is_no_hits() {
        let m = memory(json!({}));
        assert!(m.decode(br#"{"query":"q"}"#, 100).unwrap().is_empty());
        assert!(m.decode(br#"{"hits":null}"#, 100).unwrap().is_empty());
        assert!(m.decode(br#"{"hits":[]}"#, 100).unwrap().is_empty());
    }

    #[test]
    fn wrong_shapes_are_named() {
        let m = memory(json!({}));
        for (body, needle) in [
            (&b"not json"[..], "expected"),
            (br#"{"hits":{"a":1}}"#, "hits"),
            (br#"{"hits":[{"content":5}]}"#, "hits[0].content"),
            (br#"{"hits":[{"score":"high"}]}"#, "hits[0].score"),
            (br#"{"hits":[{"metadata":[1]}]}"#, "hits[0].metadata"),
            (br#"[1,2]"#, "invalid type"),
            (br#"{"hits":[]} trailing"#, "trailing"),
        ] {
            let err = m.decode(body, 100).expect_err("refused");
            assert!(err.contains(needle), "{needle}: {err}");
        }
    }

    // test_honest_fan.py: test_a_core_brings_its_surroundings_as_marked_edges (the core's half),
    // test_a_memory_without_surroundings_is_unchanged, test_a_core_found_through_its_episode_says_so
    #[test]
    fn surroundings_are_lifted_off_the_core_and_only_the_counts_stay() {
        let body = br#"{"hits":[
            {"id":"c1","content":"core","tier":"long","topic":"cuda","raw_distance":0.2,
             "surroundings":{"satellites":3,"latest_satellite_at":"2025-10-19","supersedes":"old1",
                             "superseded_by":null,
                             "recent":[{"id":"s3","content":"third","created_at":"2025-10-19"},
                                       {"id":7,"content":"second"},"junk"],
                             "supersedes_entry":{"id":"old1","content":"the old core","created_at":null}},
             "matched_via":{"id":"s3","content":"third","created_at":"2025-10-19","raw_distance":0.1}},
            {"id":"plain","content":"no surroundings","raw_distance":0.3},
            {"id":"odd","content":"odd","surroundings":"not an object"}
        ]}"#;
        let hits = memory(json!({})).decode(body, 10).unwrap();
        let metadata = hits[0].metadata.to_map();
        assert_eq!(
            metadata["surroundings"],
            json!({"satellites": 3, "latest_satellite_at": "2025-10-19", "supersedes": "old1",
                   "superseded_by": null})
        );
        assert_eq!(
            metadata["matched_via"]["id"], "s3",
            "matched_via stays on the core"
        );
        let satellites = hits[0].satellites.as_deref().expect("lifted");
        let recent: Vec<_> = satellites
            .recent
            .iter()
            .map(|e| (e.id.as_str(), e.content.as_str()))
            .collect();
        assert_eq!(recent, [("s3", "third"), ("7", "second")]);
        assert_eq!(satellites.recent[1].created_at, Value::Null);
        assert_eq!(satellites.supersedes.as_ref().unwrap().id, "old1");
        assert!(hits[1].satellites.is_none());
        assert!(!hits[1].metadata.to_map().contains_key("surroundings"));
        assert_eq!(hits[2].metadata.to_map()["surroundings"], "not an object");
        assert!(hits[2].satellites.is_none());
    }

    #[test]
    fn surroundings_are_asked_for_when_satellite_edges_are_on_unless_the_store_says() {
        let on = Context { surroundings: true };
        let build_with = |options: Value| {
            let Value::Object(options) = options else {
                unreachable!()
            };
            build(&Options(&options)).unwrap()
        };
        assert_eq!(
            body_of(build_with(json!({})).request("q", 5, &on))["with_surroundings"],
            true
        );
        // Read per request: satellite edges turned off live are off at the next search.
        assert_eq!(
            body_of(build_with(json!({})).request("q", 5, &Default::default()))["with_surroundings"],
            false
        );
        assert_eq!(
            body_of(build_with(json!({"with_surroundings": false})).request("q", 5, &on))["with_surroundings"],
            false
        );
        let Value::Object(bad) = json!({"topic_search_path": "by_topic"}) else {
            unreachable!()
        };
        let err = build(&Options(&bad)).err().unwrap();
        assert!(err.contains("topic_search_path"), "{err}");
    }

    // test_edges.py: test_edges_appended_and_marked (the adapter's half), test_topics_and_exclude_threaded,
    // test_honest_fan.py: test_memory_is_asked_for_no_more_than_it_accepts (the /by_topic half)
    #[test]
    fn topic_search_asks_like_serenmemory_and_marks_its_hits() {
        let m = memory(json!({"include_near": false}));
        let topics = ["cft".to_owned(), "iam".to_owned()];
        let body = body_of(m.topic_request(&topics, 75, &["a".to_owned()]).unwrap());
        assert_eq!(
            body,
            json!({"topics": ["cft", "iam"], "n_results": 50, "include_short": true,
                   "include_near": false, "include_long": true, "include_superseded": false,
                   "exclude_ids": ["a"]})
        );
        let answer = br#"{"topics":["cft"],"hits":[
            {"id":"e1","content":"edge","tier":"near","topic":"cft, aws","matched_topics":["cft"],
             "overlap":1,"metadata":{"source":"user","created_at":"2025"}},
            {"id":"e2","content":"edge two","matched_topics":null}
        ]}"#;
        let hits = m.decode_topic(answer, 10).unwrap();
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].base_relevance, 0.0);
        assert_eq!(hits[0].raw_distance, None);
        assert_eq!(hits[0].native_score, Some(1.0));
        let metadata = hits[0].metadata.to_map();
        assert_eq!(
            metadata["source"], "topic-edge",
            "overwrites the store's source"
        );
        assert_eq!(metadata["matched_topics"], json!(["cft"]));
        assert_eq!(metadata["overlap"], 1.0);
        assert_eq!(metadata["tier"], "near");
        assert_eq!(metadata["created_at"], "2025");
        assert_eq!(hits[1].metadata.to_map()["matched_topics"], json!([]));
        let err = m
            .decode_topic(br#"{"hits":[{"overlap":"lots"}]}"#, 10)
            .unwrap_err();
        assert!(
            err.starts_with("hits[0]") && err.contains("expected f64"),
            "{err}"
        );
    }
}
