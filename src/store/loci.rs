//! `seren_loci`: the SerenLoci search protocol (structured facts, default port 7422).
//!
//! Loci answers with facts `{project, key, value, why}` scored 0..1 (an exact key is 1.0). We render
//! each fact as one line a model can read, `key = value because why`, and keep Loci's score as the
//! relevance the floor uses.

use super::decode::{decode_kept, id_text, relevance_from_distance};
use super::protocol::{Context, Options, Protocol, Reach, StoreType, json_body};
use crate::config::StoreKind;
use crate::fusion::{Hit, Keep};
use crate::metadata::{Fragment, Metadata, Raw};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

pub const TYPE: StoreType = StoreType {
    name: StoreKind::Loci.name(),
    options: &[
        "search_path",
        "project",
        "include_fundamentals",
        "include_superseded",
    ],
    reach: Reach::Http {
        build,
        topics: false,
    },
};

struct Loci {
    project: Option<String>,
    include_fundamentals: bool,
    include_superseded: bool,
}

fn build(options: &Options) -> Result<Box<dyn Protocol>, String> {
    Ok(Box::new(Loci {
        project: options.text("project")?,
        include_fundamentals: options.flag("include_fundamentals", true)?,
        include_superseded: options.flag("include_superseded", false)?,
    }))
}

/// SerenLoci's `/search` request: `project` only when the entry scopes one.
#[derive(Serialize)]
struct SearchBody<'a> {
    query: &'a str,
    n_results: usize,
    include_fundamentals: bool,
    include_superseded: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    project: Option<&'a str>,
}

/// One fact as SerenLoci sends it, borrowed from the answer where it only passes through.
#[derive(Deserialize)]
struct Fact<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default, borrow)]
    project: Option<Raw<'a>>,
    #[serde(default, borrow)]
    key: Option<Cow<'a, str>>,
    /// Any JSON: Loci can hold a number or a list, which we render as its JSON text.
    #[serde(default)]
    value: Option<Value>,
    #[serde(default, borrow)]
    why: Option<Cow<'a, str>>,
    #[serde(default)]
    score: Option<f64>,
    #[serde(default, borrow)]
    match_kind: Option<Raw<'a>>,
    #[serde(default, borrow)]
    source: Option<Raw<'a>>,
    #[serde(default)]
    raw_distance: Option<f64>,
}

impl Protocol for Loci {
    fn request(&self, query: &str, n: usize, _context: &Context) -> Vec<u8> {
        json_body(&SearchBody {
            query,
            n_results: n,
            include_fundamentals: self.include_fundamentals,
            include_superseded: self.include_superseded,
            project: self.project.as_deref(),
        })
    }

    fn decode_kept(&self, body: &[u8], limit: usize, keep: Keep) -> Result<Vec<Hit>, String> {
        decode_kept(body, limit, keep, |fact: Fact| {
            let content = render(fact.key.as_deref(), fact.value, fact.why.as_deref());
            let base_relevance = fact
                .score
                .unwrap_or_else(|| relevance_from_distance(fact.raw_distance.unwrap_or(0.0)));
            let mut entries = [
                (Cow::Borrowed("project"), Fragment::from(fact.project)),
                (Cow::Borrowed("key"), Fragment::from(fact.key.as_deref())),
                (Cow::Borrowed("why"), Fragment::from(fact.why.as_deref())),
                (Cow::Borrowed("match_kind"), Fragment::from(fact.match_kind)),
                (Cow::Borrowed("source"), Fragment::from(fact.source)),
            ];
            Hit {
                id: id_text(fact.id),
                content,
                base_relevance,
                raw_distance: fact.raw_distance,
                native_score: fact.score,
                metadata: Metadata::from_entries(&mut entries),
                satellites: None,
            }
        })
    }
}

/// `key = value because why`, dropping the parts that are missing (an empty string is missing).
fn render(key: Option<&str>, value: Option<Value>, why: Option<&str>) -> String {
    let key = key.filter(|k| !k.is_empty());
    let why = why.filter(|w| !w.is_empty());
    let value = match value {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    };
    let value = match (key, value, why) {
        (key, None, _) => return key.unwrap_or_default().to_owned(),
        (None, Some(value), None) => return value,
        (_, Some(value), _) => value,
    };
    // Pieces pushed into one string sized once: this runs for every fact a search keeps.
    let mut text = String::with_capacity(
        key.map_or(0, |k| k.len() + 3) + value.len() + why.map_or(0, |w| w.len() + 9),
    );
    if let Some(key) = key {
        text.push_str(key);
        text.push_str(" = ");
    }
    text.push_str(&value);
    if let Some(why) = why {
        text.push_str(" because ");
        text.push_str(why);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::protocol::body_of;
    use serde_json::json;

    fn loci(options: Value) -> Box<dyn Protocol> {
        let Value::Object(options) = options else {
            panic!("options must be an object")
        };
        build(&Options(&options)).expect("valid options")
    }

    #[test]
    fn request_scopes_a_project_only_when_set() {
        assert_eq!(
            body_of(loci(json!({})).request("cuda", 20, &Default::default())),
            json!({"query": "cuda", "n_results": 20, "include_fundamentals": true, "include_superseded": false})
        );
        let scoped = body_of(
            loci(json!({"project": "jetson", "include_fundamentals": false})).request(
                "q",
                75,
                &Default::default(),
            ),
        );
        assert_eq!(
            scoped,
            json!({"query": "q", "n_results": 75, "include_fundamentals": false, "include_superseded": false, "project": "jetson"})
        );
    }

    #[test]
    fn content_recipe() {
        let check = |key: Option<&str>, value: Value, why: Option<&str>, expected: &str| {
            let value = (!value.is_null()).then_some(value);
            assert_eq!(render(key, value, why), expected);
        };
        check(
            Some("cuda"),
            json!("12.2"),
            Some("nvcc says so"),
            "cuda = 12.2 because nvcc says so",
        );
        check(Some("cuda"), json!("12.2"), None, "cuda = 12.2");
        check(Some("cuda"), json!("12.2"), Some(""), "cuda = 12.2");
        check(None, json!("12.2"), Some("w"), "12.2 because w");
        check(Some(""), json!("12.2"), None, "12.2");
        check(Some("cuda"), Value::Null, Some("w"), "cuda");
        check(Some("cuda"), json!(""), None, "cuda");
        check(None, Value::Null, None, "");
        check(
            Some("ports"),
            json!([7420, 7422]),
            None,
            "ports = [7420,7422]",
        );
        check(
            Some("cores"),
            json!(8),
            Some("lscpu"),
            "cores = 8 because lscpu",
        );
    }

    #[test]
    fn decode_maps_the_real_shape() {
        let body = br#"{"query":"q","project":null,"finder":"lexical","hits":[
            {"id":"f1","project":"jetson","key":"xavier.cuda","value":"12.2","why":"nvcc","score":1.0,
             "match_kind":"exact","source":"user","raw_distance":null,"live":true,"figures":0},
            {"id":2,"project":"*","key":"k","value":"v","score":null,"raw_distance":0.25},
            {"key":"k2","value":"v2"}
        ]}"#;
        let hits = loci(json!({})).decode(body, 100).unwrap();
        assert_eq!(hits[0].content, "xavier.cuda = 12.2 because nvcc");
        assert_eq!(hits[0].base_relevance, 1.0);
        assert_eq!(hits[0].native_score, Some(1.0));
        assert_eq!(hits[0].raw_distance, None);
        assert_eq!(
            Value::Object(hits[0].metadata.to_map()),
            json!({"project": "jetson", "key": "xavier.cuda", "why": "nvcc", "match_kind": "exact", "source": "user"})
        );
        assert_eq!(
            hits[2].metadata.as_json(),
            r#"{"key":"k2","match_kind":null,"project":null,"source":null,"why":null}"#
        );
        assert_eq!(hits[1].id, "2");
        assert_eq!(hits[1].base_relevance, 0.8, "no score: 1/(1+raw_distance)");
        assert_eq!(hits[2].base_relevance, 1.0, "no score, no distance");
    }

    #[test]
    fn wrong_shapes_are_named() {
        let l = loci(json!({}));
        for (body, needle) in [
            (&br#"{"hits":[{"score":"1.0"}]}"#[..], "hits[0].score"),
            (br#"{"hits":[{"key":["a"]}]}"#, "hits[0].key"),
            (br#"{"hits":"none"}"#, "hits"),
            (b"<html>", "expected"),
        ] {
            let err = l.decode(body, 100).expect_err("refused");
            assert!(err.contains(needle), "{needle}: {err}");
        }
    }
}
