//! `seren_callosum`: another callosum, read through the very `POST /search` this service serves.
//!
//! The inner callosum's fused list is one ranked list to us. Its hits keep their provenance: the
//! inner store, rank and score move into `metadata` as `origin_*`, so a hit fanned twice still says
//! where it came from.

use super::decode::decode_kept;
use super::protocol::{Context, Options, Protocol, Reach, StoreType, json_body};
use crate::config::StoreKind;
use crate::fusion::{Hit, Keep};
use crate::metadata::{Fragment, Metadata, RawMap};
use serde::Deserialize;
use std::borrow::Cow;

pub const TYPE: StoreType = StoreType {
    name: StoreKind::Callosum.name(),
    options: &["search_path"],
    reach: Reach::Http {
        build,
        topics: false,
    },
};

/// A callosum answers at most this many hits per search (its `n_results` range: this one's, and
/// the Python service's, are the same).
pub const MAX_N: usize = crate::limits::MAX_N_RESULTS as usize;

struct Callosum;

fn build(_options: &Options) -> Result<Box<dyn Protocol>, String> {
    Ok(Box::new(Callosum))
}

#[derive(Deserialize)]
struct InnerHit<'a> {
    #[serde(default, borrow)]
    store: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    score: Option<f64>,
    #[serde(default)]
    store_rank: Option<u64>,
    #[serde(default)]
    base_relevance: Option<f64>,
    #[serde(default)]
    native_score: Option<f64>,
    #[serde(default)]
    raw_distance: Option<f64>,
    #[serde(default, borrow)]
    metadata: Option<RawMap<'a>>,
}

impl Protocol for Callosum {
    fn request(&self, query: &str, n: usize, _context: &Context) -> Vec<u8> {
        #[derive(serde::Serialize)]
        struct SearchBody<'a> {
            query: &'a str,
            n_results: usize,
        }
        json_body(&SearchBody {
            query,
            n_results: n.clamp(1, MAX_N),
        })
    }

    fn decode_kept(&self, body: &[u8], limit: usize, keep: Keep) -> Result<Vec<Hit>, String> {
        decode_kept(body, limit, keep, |hit: InnerHit| {
            // The inner hit's provenance wins over metadata keys of the same name.
            let origin = [
                ("origin_store", Fragment::from(hit.store.as_deref())),
                (
                    "origin_rank",
                    hit.store_rank.map_or(Fragment::Null, Fragment::U64),
                ),
                (
                    "origin_score",
                    hit.score.map_or(Fragment::Null, Fragment::F64),
                ),
            ];
            Hit {
                id: hit.id.unwrap_or_default(),
                content: hit.content.unwrap_or_default(),
                base_relevance: hit.base_relevance.unwrap_or(0.0),
                raw_distance: hit.raw_distance,
                native_score: hit.native_score,
                metadata: Metadata::layered(&[], hit.metadata, &origin),
                satellites: None,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::protocol::body_of;
    use serde_json::{Value, json};

    #[test]
    fn request_and_decode() {
        let c = Callosum;
        assert_eq!(
            body_of(c.request("q", 20, &Default::default())),
            json!({"query": "q", "n_results": 20})
        );
        assert_eq!(
            body_of(c.request("q", 900, &Default::default()))["n_results"],
            200
        );
        let hits = c
            .decode(br#"{"query":"q","hits":[{"store":"facts","id":"f1","content":"k = v","score":0.0164,
                "store_rank":1,"base_relevance":0.9,"native_score":0.9,"raw_distance":null,"metadata":{"key":"k"}}],
                "stores_searched":["facts"],"failed":[],"skipped":[]}"#, 100)
            .unwrap();
        assert_eq!(hits[0].id, "f1");
        assert_eq!(hits[0].base_relevance, 0.9);
        assert_eq!(
            Value::Object(hits[0].metadata.to_map()),
            json!({"key": "k", "origin_store": "facts", "origin_rank": 1, "origin_score": 0.0164})
        );
        let err = c
            .decode(br#"{"hits":[{"store_rank":"first"}]}"#, 100)
            .unwrap_err();
        assert!(err.contains("hits[0].store_rank"), "{err}");
    }
}
