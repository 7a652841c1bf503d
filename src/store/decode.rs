//! Reading a store's answer: its `hits` list, kept up to what was asked and worded without values
//! when it fails, and the small readings every protocol shares (an id's text, a distance as a
//! relevance). Pure; knows no store type.

use crate::fusion::{Hit, Keep};
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::marker::PhantomData;

/// Reads a store's `{"hits": [...], ...}` answer into the hits `keep` says the search can use,
/// built with `build`, in order. At most `limit` hits are read as `T` (what was asked); a missing
/// or null `hits` is no hits; other members are skipped unread. A hit past what `keep` wants is
/// still read as `T` (a wrong type there fails the answer as before) but never built; past
/// `limit` a hit is checked to be JSON and dropped: it can never make the fused cut, since the
/// store has `limit` better ones.
///
/// A failure names the path and the expected type, never the value: a store may echo the query (or
/// anything else) into a field, and the reason is shown on a public route and in the log.
pub fn decode_kept<'de, T: Deserialize<'de>>(
    body: &'de [u8],
    limit: usize,
    keep: Keep,
    mut build: impl FnMut(T) -> Hit,
) -> Result<Vec<Hit>, String> {
    let mut kept = keep.kept(limit);
    read_hits(body, keep.limit(limit), &mut |hit| {
        if kept.wants() {
            kept.push(build(hit));
        }
    })?;
    Ok(kept.into_hits())
}

/// Hands `each` the first `limit` hits of the answer, read as `T`, in order; `Err` names what
/// was wrong. A failed read may have handed over some hits first.
fn read_hits<'de, T: Deserialize<'de>>(
    body: &'de [u8],
    limit: usize,
    each: &mut impl FnMut(T),
) -> Result<(), String> {
    // A store's answer is almost always UTF-8: checked so once, whole, the parser borrows every
    // string without checking each again. One that is not may still be fine (the bad bytes in a
    // member read over), and is read as bytes, as before. Path tracking only when there is an
    // error to word, as in `decode_json`.
    let read = match std::str::from_utf8(body) {
        Ok(text) => read_whole(serde_json::Deserializer::from_str(text), limit, each),
        Err(_) => read_whole(serde_json::Deserializer::from_slice(body), limit, each),
    };
    if read.is_ok() {
        return Ok(());
    }
    // Read again to word the failure, building nothing.
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let mut track = serde_path_to_error::Track::new();
    let read = Hits::new(limit, &mut |_: T| {}).deserialize(
        serde_path_to_error::Deserializer::new(&mut deserializer, &mut track),
    );
    Err(match read {
        Err(error) => crate::api::value_free(&track.path(), &error.to_string()),
        Ok(()) => "trailing characters after the JSON value".to_owned(),
    })
}

/// The answer read to its end, its hits handed to `each`, nothing tracked.
fn read_whole<'de, R: serde_json::de::Read<'de>, T: Deserialize<'de>>(
    mut plain: serde_json::Deserializer<R>,
    limit: usize,
    each: &mut impl FnMut(T),
) -> serde_json::Result<()> {
    Hits::new(limit, each).deserialize(&mut plain)?;
    plain.end()
}

/// The answer object, read for its `hits` member only.
struct Hits<'f, T, F> {
    limit: usize,
    each: &'f mut F,
    kind: PhantomData<T>,
}

impl<'f, T, F> Hits<'f, T, F> {
    fn new(limit: usize, each: &'f mut F) -> Self {
        Self {
            limit,
            each,
            kind: PhantomData,
        }
    }
}

impl<'de, T: Deserialize<'de>, F: FnMut(T)> DeserializeSeed<'de> for Hits<'_, T, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T: Deserialize<'de>, F: FnMut(T)> Visitor<'de> for Hits<'_, T, F> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an answer object with a hits list")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let mut seen = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "hits" {
                // Its hits are handed on as they are read: a second list cannot replace them.
                if std::mem::replace(&mut seen, true) {
                    return Err(serde::de::Error::duplicate_field("hits"));
                }
                map.next_value_seed(OptionalList::<T, F>(
                    self.limit,
                    &mut *self.each,
                    PhantomData,
                ))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// `null` or a list, its first `limit` items handed on.
struct OptionalList<'f, T, F>(usize, &'f mut F, PhantomData<T>);

impl<'de, T: Deserialize<'de>, F: FnMut(T)> DeserializeSeed<'de> for OptionalList<'_, T, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, T: Deserialize<'de>, F: FnMut(T)> Visitor<'de> for OptionalList<'_, T, F> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of hits")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        let OptionalList(limit, each, _) = self;
        for _ in 0..limit {
            match seq.next_element::<T>()? {
                Some(hit) => each(hit),
                None => return Ok(()),
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
}

/// Renders a JSON value as an id: a string as is, null as "", anything else as its JSON text.
pub(crate) fn id_text(value: Option<Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
    }
}

/// `1 / (1 + max(distance, 0))`: a distance read as a 0..1 relevance.
pub(crate) fn relevance_from_distance(distance: f64) -> f64 {
    1.0 / (1.0 + distance.max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Probe {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        score: Option<f64>,
    }

    fn hits(body: &str, limit: usize) -> Result<Vec<Probe>, String> {
        let mut hits = Vec::new();
        read_hits(body.as_bytes(), limit, &mut |hit| hits.push(hit)).map(|()| hits)
    }

    #[test]
    fn hits_past_the_limit_are_read_over_not_kept() {
        let body = r#"{"query":"q","hits":[{"id":"a"},{"id":"b"},{"id":"c"},{"id":7,"score":"x"}],"extra":{"deep":[1,2]}}"#;
        let kept = hits(body, 2).unwrap();
        assert_eq!(
            kept.iter()
                .map(|h| h.id.clone().unwrap())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        // Past the limit a hit is not built, so its wrong types do not fail the answer.
        assert_eq!(hits(body, 3).unwrap().len(), 3);
        assert!(hits(body, 4).is_err());
        assert!(hits(r#"{"hits":null}"#, 5).unwrap().is_empty());
        assert!(hits(r#"{"query":"q"}"#, 5).unwrap().is_empty());
        assert!(hits(r#"{"hits":[]}"#, 0).unwrap().is_empty());
        // The rest of the list must still be JSON: the answer is checked whole.
        assert!(hits(r#"{"hits":[{"id":"a"}, nope]}"#, 1).is_err());
        assert!(
            hits(r#"{"hits":[]} trailing"#, 1)
                .unwrap_err()
                .contains("trailing")
        );
        assert!(
            hits(r#"[1, 2]"#, 1)
                .unwrap_err()
                .contains("invalid type: sequence")
        );
    }

    #[test]
    fn an_answer_not_all_utf8_is_read_as_bytes_and_a_second_hits_list_is_refused() {
        // Bytes that are not UTF-8 in a member read over: the answer is still read.
        let mut body = br#"{"note":"x"#.to_vec();
        body.extend_from_slice(&[0xff, 0xfe]);
        body.extend_from_slice(br#"","hits":[{"id":"a"}]}"#);
        let mut ids = Vec::new();
        read_hits(&body, 5, &mut |hit: Probe| ids.push(hit.id.unwrap())).unwrap();
        assert_eq!(ids, ["a"]);
        // In a string a hit is read from, they fail it, named by the path.
        let bad = [br#"{"hits":[{"id":"a"#.as_slice(), &[0xff], br#""}]}"#].concat();
        let reason = read_hits(&bad, 5, &mut |_: Probe| {}).unwrap_err();
        assert!(
            reason.starts_with("hits[0].id: invalid unicode"),
            "{reason}"
        );
        // Hits are handed on as they are read, so a second list cannot quietly replace them.
        assert_eq!(
            hits(r#"{"hits":[{"id":"a"}],"hits":[{"id":"b"}]}"#, 5).unwrap_err(),
            "duplicate field `hits`"
        );
    }

    #[test]
    fn only_the_hits_a_search_keeps_are_built_and_the_rest_still_checked() {
        let hit = |probe: Probe| Hit {
            id: probe.id.unwrap_or_default(),
            content: String::new(),
            base_relevance: probe.score.unwrap_or(0.0),
            raw_distance: None,
            native_score: None,
            metadata: Default::default(),
            satellites: None,
        };
        let body = r#"{"hits":[{"id":"a","score":0.9},{"id":"b","score":0.1},{"id":"c","score":0.8},{"id":"d","score":0.7}]}"#;
        let mut built = 0;
        let two = Keep {
            hits: 2,
            floor: 0.5,
        };
        let kept = decode_kept(body.as_bytes(), 10, two, |probe: Probe| {
            built += 1;
            hit(probe)
        })
        .unwrap();
        let ids: Vec<&str> = kept.iter().map(|h| h.id.as_str()).collect();
        // Two past the floor, with the one below it between them kept for the floor to drop.
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(built, 3, "d is read, never built");
        // With a floor every hit asked is still read as a hit: a wrong type past the kept fails.
        let wrong =
            r#"{"hits":[{"id":"a","score":0.9},{"id":"c","score":0.8},{"id":"d","score":"x"}]}"#;
        assert_eq!(
            decode_kept(wrong.as_bytes(), 10, two, hit).unwrap_err(),
            "hits[2].score: invalid type: string, expected f64"
        );
        let all = decode_kept(body.as_bytes(), 3, Keep::ALL, hit).unwrap();
        assert_eq!(all.len(), 3, "at most the limit asked");
    }

    #[test]
    fn a_reason_never_carries_what_the_store_sent() {
        // A store that echoes the query into a wrong-typed field: the reason names the field and
        // the type, not the query, so a public health page and the log never show it.
        let echo = r#"{"hits":[{"id":"a","score":"what is my bank password"}]}"#;
        let reason = hits(echo, 5).unwrap_err();
        assert_eq!(reason, "hits[0].score: invalid type: string, expected f64");
        let reason = hits(r#"{"hits":[{"id":12}]}"#, 5).unwrap_err();
        assert_eq!(
            reason,
            "hits[0].id: invalid type: integer, expected a string"
        );
        let reason = hits(r#"{"hits":{"the query":1}}"#, 5).unwrap_err();
        assert_eq!(reason, "hits: invalid type: map, expected a list of hits");
        for message in [
            "invalid value: string \"secret\", expected one of a or b",
            "unknown variant `secret`, expected `a`",
            "unknown field `secret`, expected `id`",
        ] {
            assert!(
                !crate::text::without_values(message).contains("secret"),
                "{message}"
            );
        }
    }
}
