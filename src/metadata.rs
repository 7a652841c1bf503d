//! A hit's `metadata`: one JSON object, kept as its text from decode to answer.
//!
//! The callosum passes a store's metadata through; it never reads inside it. So rather than build a
//! map of owned keys and values for every hit (about ten allocations a hit, and as many frees for
//! every hit fusion discards), a protocol collects the entries it keeps as borrowed slices of the
//! store's answer ([`Raw`]) and writes them once into a [`Metadata`]: one allocation a hit. The
//! answer serializes that text as is.
//!
//! The text is read as a JSON object with sorted, unique keys (the later entry of a duplicate key
//! wins, as with a map), so answers are stable and read the same as before. A protocol that
//! passes a store's whole metadata object on may write it unsorted ([`Metadata::layered`]): its
//! entries in the order given, the object's own text copied in. That is sorted only when it is
//! read as text (an answer writes its hits, a test compares them), so the hits a search drops
//! are never sorted at all.

use schemars::JsonSchema;
use serde::de::{self, Deserializer, MapAccess, Unexpected, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// How deep a value inside metadata may nest. A store answer nested deeper is a decode failure,
/// named like any other; an answer must stay readable by every client (serde_json's own limit is
/// 128 levels, counted from the top of the whole answer).
pub const MAX_DEPTH: usize = crate::limits::MAX_METADATA_DEPTH;

/// A hit's metadata: a JSON object's text. `None` is the empty object, and costs nothing.
#[derive(Clone, Default)]
pub struct Metadata(Option<Text>);

/// The object's text: sorted with unique keys, or as written by [`Metadata::layered`] (entries
/// in order, a key perhaps twice, the later one meant).
#[derive(Clone)]
enum Text {
    Sorted(Box<str>),
    Layered(Box<str>),
}

impl Metadata {
    /// Writes `entries` as one object. For a key given twice, the later value wins.
    pub fn from_entries(entries: &mut [(Cow<'_, str>, Fragment<'_>)]) -> Self {
        if entries.is_empty() {
            return Self(None);
        }
        let mut text = String::with_capacity(
            2 + entries
                .iter()
                .map(|(key, value)| key.len() + value.len_hint() + 4)
                .sum::<usize>(),
        );
        text.push('{');
        for (key, value) in last_of_each(entries) {
            push_json_str(&mut text, key);
            text.push(':');
            value.write(&mut text);
            text.push(',');
        }
        // The last entry's comma closes the object instead.
        text.pop();
        text.push('}');
        Self(Some(Text::Sorted(text.into_boxed_str())))
    }

    /// `before`'s entries, then the entries of `object` (a store's own metadata object, checked
    /// by [`RawMap`]), then `after`'s; for a key given twice, the later value wins. Written as
    /// given, one copy and no parse: sorted only if it is read as text ([`Metadata::as_json`]).
    pub fn layered(
        before: &[(&str, Fragment<'_>)],
        object: Option<RawMap<'_>>,
        after: &[(&str, Fragment<'_>)],
    ) -> Self {
        let inner = object.map_or("", RawMap::inner);
        if before.is_empty() && after.is_empty() && inner.is_empty() {
            return Self(None);
        }
        let hint = |entries: &[(&str, Fragment<'_>)]| {
            (entries.iter())
                .map(|(key, value)| key.len() + value.len_hint() + 4)
                .sum::<usize>()
        };
        let mut text = String::with_capacity(2 + hint(before) + inner.len() + 1 + hint(after));
        text.push('{');
        // Every entry is followed by a comma.
        let entries = |text: &mut String, entries: &[(&str, Fragment<'_>)]| {
            for (key, value) in entries {
                push_json_str(text, key);
                text.push(':');
                value.write(text);
                text.push(',');
            }
        };
        entries(&mut text, before);
        if !inner.is_empty() {
            text.push_str(inner);
            text.push(',');
        }
        entries(&mut text, after);
        // The last entry's comma closes the object instead.
        text.pop();
        text.push('}');
        Self(Some(Text::Layered(text.into_boxed_str())))
    }

    /// Metadata holding this map's entries (tests, benches and callers that already have a map).
    pub fn from_map(map: &Map<String, Value>) -> Self {
        if map.is_empty() {
            return Self(None);
        }
        // A map of JSON values always serializes (string keys, no NaN), and in key order.
        Self(Some(Text::Sorted(
            serde_json::to_string(map)
                .expect("a JSON map serializes")
                .into_boxed_str(),
        )))
    }

    /// The entries as a map, parsed from the text.
    pub fn to_map(&self) -> Map<String, Value> {
        // The text was written by this module as a JSON object within the depth bound; of a key
        // given twice, the map keeps the later value.
        self.raw().map_or_else(Map::new, |text| {
            serde_json::from_str(text).expect("metadata text is a JSON object")
        })
    }

    /// The value at `key`; `None` when absent. It parses the whole object, so it is for the few
    /// rows of a packet, not for every hit a store sends (a text without the key is not parsed).
    pub fn get(&self, key: &str) -> Option<Value> {
        let text = self.raw()?;
        // A key is found as written unless escapes stand in it (a store may escape any letter).
        if !text.contains(key) && !text.contains('\\') {
            return None;
        }
        let mut map: Map<String, Value> = serde_json::from_str(text).ok()?;
        map.remove(key)
    }

    /// The value at `key` as text, the way provenance is shown: a string as itself, null or
    /// absent as "", anything else as its JSON.
    pub fn text(&self, key: &str) -> String {
        match self.get(key) {
            Some(Value::String(s)) => s,
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        }
    }

    /// The strings of the list at `key` (a topic edge's `matched_topics`); anything else is none.
    pub fn strings(&self, key: &str) -> Vec<String> {
        match self.get(key) {
            Some(Value::Array(items)) => (items.into_iter())
                .filter_map(|item| match item {
                    Value::String(s) => Some(s),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// `matched_via.content`: the episode a SerenMemory core was found through, which a reader is
    /// shown with the core.
    pub fn matched_via_content(&self) -> Option<String> {
        match self.get("matched_via")? {
            Value::Object(mut via) => match via.remove("content") {
                Some(Value::String(content)) => Some(content),
                _ => None,
            },
            _ => None,
        }
    }

    /// This metadata with `entries` set (each replacing the key's value, if any).
    pub fn with(&self, entries: impl IntoIterator<Item = (&'static str, Value)>) -> Self {
        let mut map = self.to_map();
        for (key, value) in entries {
            map.insert(key.to_owned(), value);
        }
        Self::from_map(&map)
    }

    /// The object's JSON text, its keys sorted and unique.
    pub fn as_json(&self) -> Cow<'_, str> {
        match &self.0 {
            None => Cow::Borrowed("{}"),
            Some(Text::Sorted(text)) => Cow::Borrowed(text),
            // Written by `layered` from checked parts: always an object of such entries, which
            // serializing sorts (see `Serialize`).
            Some(Text::Layered(_)) => {
                Cow::Owned(serde_json::to_string(self).expect("layered metadata is a JSON object"))
            }
        }
    }

    /// The text as held, sorted or not: what a reader that parses it needs (a map keeps the later
    /// of a key given twice), and its size.
    fn raw(&self) -> Option<&str> {
        match &self.0 {
            None => None,
            Some(Text::Sorted(text) | Text::Layered(text)) => Some(text),
        }
    }

    /// The bytes the text holds.
    pub fn len(&self) -> usize {
        self.raw().map_or(0, str::len)
    }

    /// Whether it is the empty object.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}

impl PartialEq for Metadata {
    fn eq(&self, other: &Self) -> bool {
        self.as_json() == other.as_json()
    }
}

impl Eq for Metadata {}

impl fmt::Debug for Metadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_json())
    }
}

impl Serialize for Metadata {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            None => Map::new().serialize(serializer),
            // Borrowed as a RawValue (checked, not copied), the text is written as it is.
            Some(Text::Sorted(text)) => serde_json::from_str::<&RawValue>(text)
                .map_err(serde::ser::Error::custom)?
                .serialize(serializer),
            // Read once into its entries, each value borrowed as a RawValue and written as it is,
            // in key order: the same bytes as the sorted text, which is never written.
            Some(Text::Layered(text)) => {
                let Entries::<&RawValue>(mut entries) =
                    serde_json::from_str(text).map_err(serde::ser::Error::custom)?;
                let entries = last_of_each(&mut entries);
                let mut map = serializer.serialize_map(Some(entries.clone().count()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

/// `entries` sorted by key, and of a key given twice the later entry only (a map's reading).
fn last_of_each<K: Ord, V>(entries: &mut [(K, V)]) -> impl Iterator<Item = &(K, V)> + Clone {
    // Stable: equal keys keep their order, so the last of each run is the one given last.
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let entries = &*entries;
    (entries.iter().enumerate())
        .filter(|(index, (key, _))| entries.get(index + 1).is_none_or(|next| next.0 != *key))
        .map(|(_, entry)| entry)
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        Ok(Self::from_map(&map))
    }
}

impl JsonSchema for Metadata {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        <Map<String, Value>>::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Map<String, Value>>::json_schema(generator)
    }
}

/// One entry's value, as a protocol hands it over.
#[derive(Debug, Clone, Copy)]
pub enum Fragment<'a> {
    /// A JSON value's text, taken from the store's answer as is.
    Raw(&'a str),
    /// A string, to be written as a JSON string.
    Str(&'a str),
    /// An unsigned number.
    U64(u64),
    /// A number; not finite is written as null.
    F64(f64),
    /// `null`.
    Null,
}

impl Fragment<'_> {
    fn len_hint(&self) -> usize {
        match self {
            Fragment::Raw(text) | Fragment::Str(text) => text.len() + 2,
            Fragment::U64(_) | Fragment::F64(_) => 24,
            Fragment::Null => 4,
        }
    }

    /// Writes the value's JSON text, the bytes serde_json would write.
    fn write(&self, out: &mut String) {
        match *self {
            Fragment::Raw(text) => out.push_str(text),
            Fragment::Str(text) => push_json_str(out, text),
            Fragment::U64(number) => push_display(out, number),
            // serde_json writes a number that is not finite as null, and a finite one as its
            // `Number` displays it.
            Fragment::F64(number) => match serde_json::Number::from_f64(number) {
                Some(number) => push_display(out, number),
                None => out.push_str("null"),
            },
            Fragment::Null => out.push_str("null"),
        }
    }
}

impl<'a> From<Option<Raw<'a>>> for Fragment<'a> {
    fn from(raw: Option<Raw<'a>>) -> Self {
        raw.map_or(Fragment::Null, |raw| Fragment::Raw(raw.text()))
    }
}

impl<'a> From<Option<&'a str>> for Fragment<'a> {
    fn from(text: Option<&'a str>) -> Self {
        text.map_or(Fragment::Null, Fragment::Str)
    }
}

fn push_display(out: &mut String, value: impl fmt::Display) {
    use fmt::Write;
    write!(out, "{value}").expect("writing into a String cannot fail");
}

/// Writes `text` as a JSON string, escaped byte for byte as serde_json escapes it: a quote, a
/// backslash and the control characters, the ones with a short form by it (`\n`), the rest as
/// `\u00xx`. Most text needs none, and is copied in one piece.
fn push_json_str(out: &mut String, text: &str) {
    out.push('"');
    let mut rest = text;
    while let Some(at) = escape_at(rest.as_bytes()) {
        // `at` is an ASCII byte, so both sides of it are whole characters.
        out.push_str(&rest[..at]);
        match rest.as_bytes()[at] {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            0x0c => out.push_str("\\f"),
            b'\r' => out.push_str("\\r"),
            control => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(control >> 4)]));
                out.push(char::from(HEX[usize::from(control & 0xf)]));
            }
        }
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
    out.push('"');
}

/// Where the first byte a JSON string must escape is: a control character, a quote or a
/// backslash. Eight bytes at a time past the ones that need none (most text), then byte by byte.
fn escape_at(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // True exactly when a byte of `word` is below `n` (n <= 128): for `n` = 1, a zero byte.
    let below = |word: u64, n: u64| word.wrapping_sub(ONES * n) & !word & HIGH != 0;
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        if below(word, 0x20)
            || below(word ^ (ONES * u64::from(b'"')), 1)
            || below(word ^ (ONES * u64::from(b'\\')), 1)
        {
            break;
        }
        at += 8;
    }
    let tail = bytes[at..]
        .iter()
        .position(|&b| b < 0x20 || b == b'"' || b == b'\\');
    tail.map(|index| at + index)
}

/// Any JSON value, borrowed from a store's answer as its text, nested at most [`MAX_DEPTH`] deep.
#[derive(Debug, Clone, Copy)]
pub struct Raw<'a>(&'a str);

impl<'a> Raw<'a> {
    /// The value's JSON text.
    pub fn text(self) -> &'a str {
        self.0
    }

    /// True for `null`.
    pub fn is_null(self) -> bool {
        self.0 == "null"
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = <&'a RawValue>::deserialize(deserializer)?;
        let text = raw.get();
        if deeper_than(text, MAX_DEPTH) {
            return Err(de::Error::custom(format!(
                "nested deeper than {MAX_DEPTH} levels"
            )));
        }
        Ok(Raw(text))
    }
}

/// A JSON object from a store's answer, borrowed whole as its text: checked to be an object whose
/// values nest at most [`MAX_DEPTH`] deep, and not read further (see [`Metadata::layered`]).
#[derive(Debug, Clone, Copy)]
pub struct RawMap<'a>(&'a str);

impl<'a> RawMap<'a> {
    /// The text between the braces, trimmed: the entries as the store wrote them.
    fn inner(self) -> &'a str {
        // An object's text starts with `{` and ends with `}` (checked when it was read).
        self.0[1..self.0.len() - 1].trim_matches(|c: char| c.is_ascii_whitespace())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawMap<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <&'a RawValue>::deserialize(deserializer)?.get();
        let unexpected = match text.as_bytes().first() {
            Some(b'{') => None,
            Some(b'[') => Some(Unexpected::Seq),
            Some(b'"') => Some(Unexpected::Other("string")),
            Some(b't' | b'f') => Some(Unexpected::Other("boolean")),
            Some(b'n') => Some(Unexpected::Unit),
            _ => Some(Unexpected::Other("number")),
        };
        if let Some(unexpected) = unexpected {
            return Err(de::Error::invalid_type(unexpected, &"a JSON object"));
        }
        // The object itself is one level: its values may nest MAX_DEPTH deep, as a `RawObject`'s.
        if deeper_than(text, MAX_DEPTH + 1) {
            return Err(de::Error::custom(format!(
                "nested deeper than {MAX_DEPTH} levels"
            )));
        }
        Ok(RawMap(text))
    }
}

/// A JSON object from a store's answer, its keys and values borrowed (a key with escapes is
/// unescaped into an owned string), ready to be written by [`Metadata::from_entries`] with any
/// entries a protocol adds. Anything but an object is refused with serde's own message.
#[derive(Debug, Default)]
pub struct RawObject<'a>(pub Vec<(Cow<'a, str>, Fragment<'a>)>);

impl<'de: 'a, 'a> Deserialize<'de> for RawObject<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Entries::deserialize(deserializer).map(|Entries(entries)| RawObject(entries))
    }
}

/// A value read as its JSON text, nested at most [`MAX_DEPTH`] deep ([`Raw`]).
impl<'de: 'a, 'a> Deserialize<'de> for Fragment<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Raw::deserialize(deserializer).map(|raw| Fragment::Raw(raw.text()))
    }
}

/// A JSON object's entries in order, its keys borrowed (unescaped into an owned string when they
/// hold escapes) and its values read as `V`. Anything but an object is refused with serde's own
/// message.
struct Entries<'a, V>(Vec<(Cow<'a, str>, V)>);

impl<'de: 'a, 'a, V: Deserialize<'de>> Deserialize<'de> for Entries<'a, V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor<'a, V>(std::marker::PhantomData<(&'a (), V)>);

        impl<'de: 'a, 'a, V: Deserialize<'de>> Visitor<'de> for EntriesVisitor<'a, V> {
            type Value = Entries<'a, V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(key) = map.next_key::<Key<'a>>()? {
                    entries.push((key.0, map.next_value::<V>()?));
                }
                Ok(Entries(entries))
            }
        }

        deserializer.deserialize_map(EntriesVisitor(std::marker::PhantomData))
    }
}

/// An object key: borrowed unless it holds escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor<'a>(std::marker::PhantomData<&'a ()>);

        impl<'de: 'a, 'a> Visitor<'de> for KeyVisitor<'a> {
            type Value = Key<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }

            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(key)))
            }

            fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }

            fn visit_string<E: de::Error>(self, key: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(key)))
            }
        }

        deserializer.deserialize_str(KeyVisitor(std::marker::PhantomData))
    }
}

/// Whether arrays and objects in a JSON text nest deeper than `limit`. Nesting that deep takes more
/// than `limit` opening brackets, and almost every value a store sends (a scalar, a flat object)
/// has far fewer: counting them is one branch-free pass, and only a text with that many is walked.
fn deeper_than(text: &str, limit: usize) -> bool {
    let opening = text.bytes().filter(|b| matches!(b, b'[' | b'{')).count();
    opening > limit && depth(text) > limit
}

/// The deepest nesting of arrays and objects in a JSON text (brackets inside strings not counted).
fn depth(text: &str) -> usize {
    // A scalar (most metadata values: strings, numbers) nests nothing: no need to walk it.
    if !matches!(text.as_bytes().first(), Some(b'[' | b'{')) {
        return 0;
    }
    let (mut deepest, mut current) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                current += 1;
                deepest = deepest.max(current);
            }
            b']' | b'}' => current = current.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    proptest! {
        #[test]
        fn a_value_is_written_as_serde_json_writes_it(
            text in "(\\PC|[\\x00-\\x1f\"\\\\\\x7f\u{2028}])*",
            number: u64,
            float: f64,
        ) {
            let written = |fragment: Fragment<'_>| {
                let mut out = String::new();
                fragment.write(&mut out);
                out
            };
            prop_assert_eq!(written(Fragment::Str(&text)), serde_json::to_string(&text).unwrap());
            prop_assert_eq!(written(Fragment::U64(number)), serde_json::to_string(&number).unwrap());
            prop_assert_eq!(written(Fragment::F64(float)), serde_json::to_string(&float).unwrap());
        }
    }

    #[test]
    fn the_first_byte_to_escape_is_found_wherever_it_stands() {
        for len in 0..20 {
            for at in 0..len {
                for byte in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                    // Non-ASCII before it (bytes of 0x80 and above) must not hide it.
                    let mut text = "é".repeat(len).into_bytes();
                    text.truncate(len);
                    text.resize(len, b'a');
                    text[at] = byte;
                    text[at + 1..].fill(b'"');
                    assert_eq!(escape_at(&text), Some(at), "{len} {at} {byte}");
                }
            }
            assert_eq!(escape_at("é~ {}".repeat(len).as_bytes()), None, "{len}");
        }
    }

    #[test]
    fn numbers_and_escapes_are_written_as_serde_json_writes_them() {
        let written = |fragment: Fragment<'_>| {
            let mut out = String::new();
            fragment.write(&mut out);
            out
        };
        for float in [
            0.0,
            -0.0,
            1.0,
            0.1,
            1e21,
            1e-7,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
        ] {
            assert_eq!(
                written(Fragment::F64(float)),
                serde_json::to_string(&float).unwrap(),
                "{float}"
            );
        }
        assert_eq!(written(Fragment::F64(f64::NEG_INFINITY)), "null");
        assert_eq!(
            written(Fragment::Str("a\"b\\c\u{8}\t\n\u{c}\r\u{1}\u{1f}\u{7f}é")),
            "\"a\\\"b\\\\c\\b\\t\\n\\f\\r\\u0001\\u001f\u{7f}é\""
        );
    }

    #[test]
    fn entries_are_sorted_and_the_later_duplicate_wins() {
        let mut entries = vec![
            (Cow::Borrowed("tier"), Fragment::Str("default")),
            (Cow::Borrowed("b"), Fragment::Raw("[1, 2]")),
            (Cow::Borrowed("tier"), Fragment::Raw("\"mine\"")),
            (Cow::Borrowed("a\"q"), Fragment::U64(7)),
            (Cow::Borrowed("n"), Fragment::F64(f64::NAN)),
            (Cow::Borrowed("x"), Fragment::F64(0.5)),
            (Cow::Borrowed("z"), Fragment::Null),
        ];
        let metadata = Metadata::from_entries(&mut entries);
        assert_eq!(
            metadata.as_json(),
            r#"{"a\"q":7,"b":[1, 2],"n":null,"tier":"mine","x":0.5,"z":null}"#
        );
        assert_eq!(
            Value::Object(metadata.to_map()),
            json!({"a\"q": 7, "b": [1, 2], "n": null, "tier": "mine", "x": 0.5, "z": null})
        );
        assert_eq!(metadata.to_map()["tier"], json!("mine"));
        assert_eq!(
            serde_json::to_string(&metadata).unwrap(),
            r#"{"a\"q":7,"b":[1, 2],"n":null,"tier":"mine","x":0.5,"z":null}"#
        );
    }

    #[test]
    fn empty_metadata_is_an_empty_object_everywhere() {
        let empty = Metadata::default();
        assert_eq!(serde_json::to_string(&empty).unwrap(), "{}");
        assert_eq!(serde_json::to_value(&empty).unwrap(), json!({}));
        assert_eq!(Metadata::from_entries(&mut []), empty);
        assert_eq!(Metadata::from_map(&Map::new()), empty);
        assert!(empty.to_map().is_empty());
    }

    #[test]
    fn a_map_round_trips_through_serde() {
        let map = json!({"k": {"deep": [1, "two", null]}, "s": "é\n"});
        let Value::Object(map) = map else {
            unreachable!()
        };
        let metadata = Metadata::from_map(&map);
        assert_eq!(metadata.to_map(), map);
        let back: Metadata = serde_json::from_value(serde_json::to_value(&metadata).unwrap())
            .expect("deserializes from a value");
        assert_eq!(back, metadata);
    }

    #[test]
    fn raw_objects_borrow_and_refuse_what_is_not_an_object() {
        let object: RawObject =
            serde_json::from_str(r#"{"a": [1, {"b": 2}], "e\u0073c": "v"}"#).expect("an object");
        assert_eq!(object.0.len(), 2);
        assert!(matches!(object.0[0].0, Cow::Borrowed("a")));
        assert!(matches!(object.0[0].1, Fragment::Raw(r#"[1, {"b": 2}]"#)));
        assert_eq!(object.0[1].0, "esc", "an escaped key is unescaped");
        for (bad, needle) in [
            ("[1]", "expected a JSON object"),
            ("\"s\"", "expected a JSON object"),
            ("{\"a\": tru}", "expected ident"),
        ] {
            let err = serde_json::from_str::<RawObject>(bad).expect_err(bad);
            assert!(err.to_string().contains(needle), "{bad}: {err}");
        }
    }

    /// What `layered` writes reads, as text, exactly as the same entries written sorted.
    #[test]
    fn layered_metadata_reads_as_the_same_entries_sorted() {
        type Entries<'a> = &'a [(&'a str, Fragment<'a>)];
        let cases: [(Entries, &str, Entries); 6] = [
            (
                &[
                    ("tier", Fragment::Raw("\"long\"")),
                    ("topic", Fragment::Null),
                ],
                r#"{"source": "s", "tier": "mine", "e\u0073c": [1, {"b": 2}]}"#,
                &[("surroundings", Fragment::Raw(r#"{"satellites":2}"#))],
            ),
            (&[("tier", Fragment::Str("a\"b"))], "{}", &[]),
            (&[], "{ \n }", &[("z", Fragment::U64(3))]),
            (&[], r#"{"k": 1, "k": 2}"#, &[]),
            (
                &[("x", Fragment::F64(f64::NAN))],
                r#"{"x": "store"}"#,
                &[("x", Fragment::F64(0.5))],
            ),
            (&[], "{}", &[]),
        ];
        for (before, object, after) in cases {
            let map: RawMap = serde_json::from_str(object).expect(object);
            let layered = Metadata::layered(before, Some(map), after);
            let mut entries: Vec<(Cow<str>, Fragment)> = (before.iter())
                .map(|(key, value)| (Cow::Borrowed(*key), *value))
                .chain(serde_json::from_str::<RawObject>(object).unwrap().0)
                .chain(
                    after
                        .iter()
                        .map(|(key, value)| (Cow::Borrowed(*key), *value)),
                )
                .collect();
            let sorted = Metadata::from_entries(&mut entries);
            assert_eq!(layered.as_json(), sorted.as_json(), "{object}");
            assert_eq!(layered, sorted, "{object}");
            assert_eq!(layered.to_map(), sorted.to_map(), "{object}");
            // Written without its sorted text: the same bytes, and the same value for MCP.
            assert_eq!(
                serde_json::to_string(&layered).unwrap(),
                serde_json::to_string(&sorted).unwrap()
            );
            assert_eq!(
                serde_json::to_value(&layered).unwrap(),
                serde_json::to_value(&sorted).unwrap()
            );
        }
        let layered = Metadata::layered(
            &[("tier", Fragment::Str("default"))],
            serde_json::from_str(r#"{"tier": "mine"}"#).ok(),
            &[],
        );
        assert_eq!(
            layered.get("tier"),
            Some(json!("mine")),
            "the later key wins"
        );
        assert_eq!(layered.text("tier"), "mine");
        assert_eq!(Metadata::layered(&[], None, &[]), Metadata::default());
        let escaped = Metadata::layered(&[], serde_json::from_str(r#"{"e\u0073c": 1}"#).ok(), &[]);
        assert_eq!(
            escaped.get("esc"),
            Some(json!(1)),
            "found under its escapes"
        );
        let quoted = Metadata::from_entries(&mut [(Cow::Borrowed("a\"q"), Fragment::U64(7))]);
        assert_eq!(quoted.get("a\"q"), Some(json!(7)), "a key written escaped");
    }

    #[test]
    fn a_raw_map_is_an_object_and_refuses_anything_else_by_its_type() {
        let map: RawMap = serde_json::from_str(r#" {"a": [1]} "#).expect("an object");
        assert_eq!(map.inner(), r#""a": [1]"#);
        for (bad, needle) in [
            ("[1]", "invalid type: sequence, expected a JSON object"),
            (
                "\"the query\"",
                "invalid type: string, expected a JSON object",
            ),
            ("true", "invalid type: boolean, expected a JSON object"),
            ("-1.5", "invalid type: number, expected a JSON object"),
            ("null", "invalid type: null, expected a JSON object"),
            ("{\"a\": tru}", "expected ident"),
        ] {
            let err = serde_json::from_str::<RawMap>(bad).expect_err(bad);
            assert!(err.to_string().contains(needle), "{bad}: {err}");
            assert!(!err.to_string().contains("the query"), "{err}");
        }
        // Values may nest as deep as a `RawObject`'s: MAX_DEPTH, one level more for the object.
        let nested =
            |levels: usize| format!(r#"{{"a": {}1{}}}"#, "[".repeat(levels), "]".repeat(levels));
        assert!(serde_json::from_str::<RawMap>(&nested(MAX_DEPTH)).is_ok());
        assert!(serde_json::from_str::<RawObject>(&nested(MAX_DEPTH)).is_ok());
        let err = serde_json::from_str::<RawMap>(&nested(MAX_DEPTH + 1)).expect_err("too deep");
        assert!(err.to_string().contains("nested deeper than 64"), "{err}");
        assert!(serde_json::from_str::<RawObject>(&nested(MAX_DEPTH + 1)).is_err());
    }

    #[test]
    fn depth_is_bounded_and_strings_do_not_count() {
        let deep = format!(
            "{}1{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        let err = serde_json::from_str::<Raw>(&deep).expect_err("too deep");
        assert!(err.to_string().contains("nested deeper than 64"), "{err}");
        let ok = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(serde_json::from_str::<Raw>(&ok).is_ok());
        assert_eq!(depth(r#"["[[[[", {"a": "\"{{"}]"#), 2);
        assert_eq!(depth("null"), 0);
        // Many brackets, inside strings or side by side, are not depth: the count only decides
        // whether to walk.
        let flat = format!(
            r#"{{"a": "{}", "b": [{}]}}"#,
            "[".repeat(100),
            "[],".repeat(99) + "[]"
        );
        assert_eq!(depth(&flat), 3);
        assert!(!deeper_than(&flat, 3));
        assert!(deeper_than(&flat, 2));
        assert!(serde_json::from_str::<RawMap>(&flat).is_ok());
    }
}
