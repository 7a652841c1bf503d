//! Reading a store's answer: its `hits` list, kept up to what was asked and worded without values
//! when it fails, and the small readings every protocol shares (an id's text, a distance as a
//! relevance). Pure; knows no store type.

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::marker::PhantomData;

/// Reads a store's `{"hits": [...], ...}` answer into at most `limit` hits of type `T`, in order.
/// A missing or null `hits` is no hits; other members are skipped unread. Hits past `limit` are
/// checked to be JSON and dropped, never built: a hit at a rank past what was asked can never
/// make the fused cut, since the store has `limit` better ones.
///
/// A failure names the path and the expected type, never the value: a store may echo the query (or
/// anything else) into a field, and the reason is shown on a public route and in the log.
pub fn decode_hits<'de, T: Deserialize<'de>>(
    body: &'de [u8],
    limit: usize,
) -> Result<Vec<T>, String> {
    // The fast path, as in `decode_json`: path tracking only when there is an error to word.
    let mut plain = serde_json::Deserializer::from_slice(body);
    if let Ok(hits) = Hits::<T>::new(limit).deserialize(&mut plain)
        && plain.end().is_ok()
    {
        return Ok(hits);
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let mut track = serde_path_to_error::Track::new();
    let hits = Hits::<T>::new(limit).deserialize(serde_path_to_error::Deserializer::new(
        &mut deserializer,
        &mut track,
    ));
    match hits {
        Ok(hits) => deserializer
            .end()
            .map(|()| hits)
            .map_err(|_| "trailing characters after the JSON value".to_owned()),
        Err(error) => Err(crate::api::value_free(&track.path(), &error.to_string())),
    }
}

/// The answer object, read for its `hits` member only.
struct Hits<T> {
    limit: usize,
    kind: PhantomData<T>,
}

impl<T> Hits<T> {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            kind: PhantomData,
        }
    }
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Hits<T> {
    type Value = Vec<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<T>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Hits<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an answer object with a hits list")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Vec<T>, M::Error> {
        let mut hits = Vec::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "hits" {
                hits = map
                    .next_value_seed(OptionalList::<T>(self.limit, PhantomData))?
                    .unwrap_or_default();
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(hits)
    }
}

/// `null` or a list, kept up to a limit.
struct OptionalList<T>(usize, PhantomData<T>);

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for OptionalList<T> {
    type Value = Option<Vec<T>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for OptionalList<T> {
    type Value = Option<Vec<T>>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of hits")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
        let limit = self.0;
        let mut kept = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(limit).min(1024));
        while kept.len() < limit {
            match seq.next_element::<T>()? {
                Some(hit) => kept.push(hit),
                None => return Ok(Some(kept)),
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Some(kept))
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
        decode_hits(body.as_bytes(), limit)
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
