//! How an MCP tool's result becomes ranked hits: the `hits`, `id`, `content` and `score` options of
//! an `mcp` store, parsed once, and the pure reading of one result document with them.
//!
//! This file owns the mapping only: JSON pointers (RFC 6901), content templates, and the rules of
//! the contract's `mcp` section (which array holds the hits, how a value renders, which members
//! become metadata). It does no IO and knows nothing of rmcp or of how the tool was called; the
//! caller hands it the result's structured content or first text block.
//!
//! Every error names a place or a kind of value, never a value: a tool may echo the query (or
//! anything else) into its result, and a reason is shown on a public route and in the log.

use super::shape::{self, Shape};
use crate::fusion::Hit;
use crate::metadata::{MAX_DEPTH, Metadata};
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// The members searched for the hit array when no `hits` pointer is set, in order of preference.
const DEFAULT_ARRAYS: [&str; 5] = ["hits", "results", "entities", "items", "documents"];

/// An RFC 6901 JSON pointer, parsed once: `""` is the whole value, `"/a/0/b~1c"` the member `b/c`
/// of the first item of `a`. In a token `~0` is `~` and `~1` is `/`. Against an array a token is
/// an index: digits without a leading zero, or `0`.
#[derive(Debug, Clone, PartialEq)]
pub struct Pointer {
    /// As written.
    text: String,
    /// The unescaped reference tokens, outermost first.
    tokens: Vec<String>,
}

impl Pointer {
    /// Parses `text`; an error says what is wrong and where (1-based character positions).
    pub fn parse(text: &str) -> Result<Pointer, String> {
        if !text.is_empty() && !text.starts_with('/') {
            return Err(format!("must be empty or start with '/', got {text:?}"));
        }
        let mut tokens = Vec::new();
        // The leading '/' opens the first token; each later one closes a token and opens the next.
        let mut chars = text.chars().enumerate().skip(1);
        let mut token = String::new();
        while let Some((at, c)) = chars.next() {
            match c {
                '/' => tokens.push(std::mem::take(&mut token)),
                '~' => match chars.next() {
                    Some((_, '0')) => token.push('~'),
                    Some((_, '1')) => token.push('/'),
                    _ => {
                        return Err(format!(
                            "'~' at character {} must be followed by 0 or 1 (~0 is '~', ~1 is '/')",
                            at + 1
                        ));
                    }
                },
                c => token.push(c),
            }
        }
        if !text.is_empty() {
            tokens.push(token);
        }
        Ok(Pointer {
            text: text.to_owned(),
            tokens,
        })
    }

    /// The value this pointer leads to inside `value`; `None` when there is none.
    pub fn get<'a>(&self, value: &'a Value) -> Option<&'a Value> {
        self.tokens
            .iter()
            .try_fold(value, |value, token| match value {
                Value::Object(members) => members.get(token),
                Value::Array(items) => items.get(array_index(token)?),
                _ => None,
            })
    }

    /// The pointer as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The member this pointer names when it is exactly one token deep (`"/name"` names `name`).
    fn top_member(&self) -> Option<&str> {
        match self.tokens.as_slice() {
            [only] => Some(only),
            _ => None,
        }
    }
}

/// A token read as an array index: `0`, or digits without a leading zero (so `-`, `01` and `+1`
/// find nothing, as RFC 6901 says).
fn array_index(token: &str) -> Option<usize> {
    let digits = !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit());
    if !digits || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    // Digits too many for a usize index no array can have.
    token.parse().ok()
}

/// A hit's content: a bare pointer (`"/content"`), or text with `{pointer}` fields, e.g.
/// `"{/name}: {/observations}"`, and optional parts in `[ ]` that are dropped whole when a field
/// inside them renders empty: `"{/key} = {/value}[ because {/why}]"`.
///
/// A field renders a string as is, an array as its items joined with `"; "` (a string item as is,
/// any other as its JSON text), a number, boolean or object as its JSON text, and a missing value
/// or null as nothing. Literal braces and brackets are written `\{ \} \[ \]`; a backslash before
/// anything else is itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    /// As written.
    text: String,
    form: Form,
}

#[derive(Debug, Clone, PartialEq)]
enum Form {
    /// The whole content is one value.
    Bare(Pointer),
    /// Text and fields, in order.
    Parts(Vec<Part>),
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Field(Pointer),
    /// `[ ... ]`: text and fields only (the parser refuses a nested `[`).
    Optional(Vec<Part>),
}

impl Part {
    fn fields<'a>(&'a self, found: &mut Vec<&'a Pointer>) {
        match self {
            Part::Text(_) => {}
            Part::Field(pointer) => found.push(pointer),
            Part::Optional(parts) => parts.iter().for_each(|part| part.fields(found)),
        }
    }
}

impl Template {
    /// Parses `text`. A text starting with `/` and holding no `{` is a bare pointer, and so is the
    /// empty text (the whole hit, for a tool whose hits are strings). Anything else is a template;
    /// an unclosed `{` or `[`, a nested `{` or `[`, an unmatched `}` or `]`, a bad pointer in a
    /// field, or no field at all is an error naming the position.
    pub fn parse(text: &str) -> Result<Template, String> {
        let form = if text.is_empty() || (text.starts_with('/') && !text.contains('{')) {
            Form::Bare(Pointer::parse(text)?)
        } else {
            let parts = TemplateParser::default().parse(text)?;
            let mut fields = Vec::new();
            parts.iter().for_each(|part| part.fields(&mut fields));
            if fields.is_empty() {
                return Err(format!(
                    "{text:?} has no {{pointer}} field, so every hit would read the same; write a \
                     pointer such as \"/content\" or a template such as \"{{/name}}: {{/text}}\""
                ));
            }
            Form::Parts(parts)
        };
        Ok(Template {
            text: text.to_owned(),
            form,
        })
    }

    /// The content this template gives `hit`; empty when nothing in it rendered.
    pub fn render(&self, hit: &Value) -> String {
        let mut out = String::new();
        match &self.form {
            Form::Bare(pointer) => push_value(&mut out, pointer.get(hit)),
            Form::Parts(parts) => {
                render_parts(parts, hit, &mut out);
            }
        }
        out
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Every pointer the template reads, in order.
    fn pointers(&self) -> Vec<&Pointer> {
        let mut found = Vec::new();
        match &self.form {
            Form::Bare(pointer) => found.push(pointer),
            Form::Parts(parts) => parts.iter().for_each(|part| part.fields(&mut found)),
        }
        found
    }
}

/// Appends `parts` rendered for `hit` to `out`; false when a field among them rendered empty.
fn render_parts(parts: &[Part], hit: &Value, out: &mut String) -> bool {
    let mut complete = true;
    for part in parts {
        match part {
            Part::Text(text) => out.push_str(text),
            Part::Field(pointer) => {
                let before = out.len();
                push_value(out, pointer.get(hit));
                complete &= out.len() > before;
            }
            Part::Optional(inner) => {
                let before = out.len();
                if !render_parts(inner, hit, out) {
                    out.truncate(before);
                }
            }
        }
    }
    complete
}

/// Appends one field's value, rendered as the template rules say.
fn push_value(out: &mut String, value: Option<&Value>) {
    match value {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => out.push_str(text),
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str("; ");
                }
                match item {
                    Value::String(text) => out.push_str(text),
                    other => push_json(out, other),
                }
            }
        }
        Some(other) => push_json(out, other),
    }
}

fn push_json(out: &mut String, value: &Value) {
    // Writing into a String cannot fail, and a JSON value always displays.
    write!(out, "{value}").expect("a JSON value writes into a String");
}

/// The state of one template parse: the parts so far, the open `[` if any, and the text not yet
/// made a part.
#[derive(Default)]
struct TemplateParser {
    parts: Vec<Part>,
    /// The open optional part: where its `[` stands (1-based) and its parts so far.
    optional: Option<(usize, Vec<Part>)>,
    literal: String,
}

impl TemplateParser {
    fn parse(mut self, text: &str) -> Result<Vec<Part>, String> {
        let mut chars = text.chars().enumerate().peekable();
        while let Some((at, c)) = chars.next() {
            let at = at + 1;
            match c {
                '\\' => match chars.peek() {
                    Some(&(_, escaped @ ('{' | '}' | '[' | ']'))) => {
                        chars.next();
                        self.literal.push(escaped);
                    }
                    _ => self.literal.push('\\'),
                },
                '{' => {
                    let pointer = field(&mut chars, at)?;
                    self.push(Part::Field(pointer));
                }
                '[' => {
                    if let Some((open, _)) = self.optional {
                        return Err(format!(
                            "a '[' at character {at} inside the optional part opened at character \
                             {open} (optional parts do not nest; write \\[ for a literal '[')"
                        ));
                    }
                    self.flush();
                    self.optional = Some((at, Vec::new()));
                }
                ']' => {
                    self.flush();
                    let Some((_, inner)) = self.optional.take() else {
                        return Err(unmatched(']', at));
                    };
                    self.parts.push(Part::Optional(inner));
                }
                '}' => return Err(unmatched('}', at)),
                c => self.literal.push(c),
            }
        }
        if let Some((open, _)) = self.optional {
            return Err(format!(
                "the '[' at character {open} is never closed (write \\[ for a literal '[')"
            ));
        }
        self.flush();
        Ok(self.parts)
    }

    /// Adds `part` where the parse stands: inside the open optional part, else at the top.
    fn push(&mut self, part: Part) {
        self.flush();
        match &mut self.optional {
            Some((_, inner)) => inner.push(part),
            None => self.parts.push(part),
        }
    }

    /// Makes the pending literal text a part.
    fn flush(&mut self) {
        if self.literal.is_empty() {
            return;
        }
        let text = Part::Text(std::mem::take(&mut self.literal));
        match &mut self.optional {
            Some((_, inner)) => inner.push(text),
            None => self.parts.push(text),
        }
    }
}

/// Reads a field's pointer, the `{` at `open` (1-based) already taken, up to its closing `}`.
fn field(
    chars: &mut std::iter::Peekable<impl Iterator<Item = (usize, char)>>,
    open: usize,
) -> Result<Pointer, String> {
    let mut text = String::new();
    loop {
        match chars.next() {
            None => {
                return Err(format!(
                    "the '{{' at character {open} is never closed (write \\{{ for a literal '{{')"
                ));
            }
            Some((_, '}')) => break,
            Some((at, '{')) => {
                return Err(format!(
                    "a '{{' at character {} inside the field opened at character {open}",
                    at + 1
                ));
            }
            Some((_, '\\')) => match chars.peek() {
                Some(&(_, escaped @ ('{' | '}' | '[' | ']'))) => {
                    chars.next();
                    text.push(escaped);
                }
                _ => text.push('\\'),
            },
            Some((_, c)) => text.push(c),
        }
    }
    Pointer::parse(&text).map_err(|why| format!("the field at character {open}: {why}"))
}

fn unmatched(c: char, at: usize) -> String {
    format!("an unmatched '{c}' at character {at} (write \\{c} for a literal '{c}')")
}

/// How one tool result becomes hits: how the result lays them out, where the hit array is, and
/// where in each hit its id, content, score and distance are.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    /// How the result holds its hits (`json` unless the entry says otherwise).
    pub shape: Shape,
    /// The hit array in the result; `None` looks for it (the result itself when it is an array,
    /// else its first array member named `hits`, `results`, `entities`, `items` or `documents`).
    pub hits: Option<Pointer>,
    /// The hit's id: a string as is, a number as its text, missing or null as "".
    pub id: Pointer,
    /// The text a model reads; a hit whose content renders blank is dropped.
    pub content: Template,
    /// The hit's `base_relevance` and `native_score`; `None`, or no number there, gives 0 and null.
    pub score: Option<Pointer>,
    /// The hit's `raw_distance` (smaller is closer); without a score it also gives the
    /// `base_relevance` `1 / (1 + distance)`, so a floor can cut far hits.
    pub distance: Option<Pointer>,
}

impl Mapping {
    /// Reads a tool result (its structured content, if any, and its text blocks in order) into at
    /// most `limit` hits, as the shape says. The structured content is read first; when the hits
    /// are not where the mapping looks in it, the first text block's JSON is read instead, so one
    /// mapping reads a server that wraps its answer as structured content (FastMCP's
    /// `{"result": ...}`, or a JSON string in it) and the same server's text alike.
    pub fn read_answer(
        &self,
        structured: Option<&Value>,
        texts: &[&str],
        limit: usize,
    ) -> Result<Vec<Hit>, String> {
        if self.shape == Shape::TextEntries {
            return self.read_items(&shape::entries(texts, limit)?, limit);
        }
        let first_text = texts.first().copied();
        let Some(structured) = structured else {
            return self.read(&document(first_text)?, limit);
        };
        let in_structured = match self.read(structured, limit) {
            Ok(hits) => return Ok(hits),
            Err(why) => why,
        };
        match first_text.map(document_of_text) {
            Some(Ok(text)) => self.read(&text, limit),
            Some(Err(why)) => Err(format!(
                "{in_structured} in the structured content, and {why}"
            )),
            None => Err(in_structured),
        }
    }

    /// Reads the result document into at most `limit` hits, in array order. Hits without content
    /// are skipped and do not count; hits past the limit are never built. An error says why there
    /// is no hit array, or which hit could not be kept, naming kinds and places, never values.
    pub fn read(&self, document: &Value, limit: usize) -> Result<Vec<Hit>, String> {
        match self.shape {
            Shape::Columns => {
                let table = match &self.hits {
                    Some(pointer) => pointer.get(document).ok_or_else(|| {
                        format!("no columns at {} (found nothing)", pointer.as_str())
                    })?,
                    None => document,
                };
                self.read_items(&shape::columns(table, limit)?, limit)
            }
            Shape::Json | Shape::TextEntries => self.read_items(self.hit_array(document)?, limit),
        }
    }

    /// Reads hit objects, in order, into at most `limit` hits.
    fn read_items(&self, items: &[Value], limit: usize) -> Result<Vec<Hit>, String> {
        let consumed = self.consumed_members();
        let mut hits = Vec::with_capacity(items.len().min(limit));
        for (index, item) in items.iter().enumerate() {
            if hits.len() >= limit {
                break;
            }
            let content = self.content.render(item);
            if content.trim().is_empty() {
                continue;
            }
            let metadata = match self.shape.nests_metadata() {
                true => metadata(item.get("metadata").unwrap_or(&Value::Null), &[]),
                false => metadata(item, &consumed),
            }
            .map_err(|why| format!("the hit at index {index}: {why}"))?;
            let score = number(self.score.as_ref(), item);
            let distance = number(self.distance.as_ref(), item);
            let relevance = score.or(distance.map(crate::store::decode::relevance_from_distance));
            hits.push(Hit {
                id: crate::store::decode::id_text(self.id.get(item).cloned()),
                content,
                base_relevance: relevance.unwrap_or(0.0),
                raw_distance: distance,
                native_score: score,
                metadata,
                satellites: None,
            });
        }
        Ok(hits)
    }

    fn hit_array<'a>(&self, document: &'a Value) -> Result<&'a [Value], String> {
        let Some(pointer) = &self.hits else {
            return default_array(document);
        };
        match pointer.get(document) {
            Some(Value::Array(items)) => Ok(items),
            found => {
                let place = match pointer.as_str() {
                    "" => "the result's root",
                    text => text,
                };
                Err(format!("no hit array at {place} (found {})", kind(found)))
            }
        }
    }

    /// The members a hit's metadata leaves out: those the id, content, score or distance read
    /// whole (a pointer one token deep). A deeper pointer reads part of a member, so it stays.
    fn consumed_members(&self) -> Vec<&str> {
        let mut pointers = self.content.pointers();
        pointers.push(&self.id);
        pointers.extend(self.score.as_ref());
        pointers.extend(self.distance.as_ref());
        pointers
            .into_iter()
            .filter_map(Pointer::top_member)
            .collect()
    }
}

/// The finite number `pointer` leads to in `hit`, if any.
fn number(pointer: Option<&Pointer>, hit: &Value) -> Option<f64> {
    pointer
        .and_then(|pointer| pointer.get(hit))
        .and_then(Value::as_f64)
        .filter(|number| number.is_finite())
}

/// The hit array of a document read without a `hits` pointer.
fn default_array(document: &Value) -> Result<&[Value], String> {
    match document {
        Value::Array(items) => Ok(items),
        Value::Object(members) => DEFAULT_ARRAYS
            .iter()
            .find_map(|name| members.get(*name)?.as_array())
            .map(Vec::as_slice)
            .ok_or_else(|| {
                "no hit array: the result is an object without an array named hits, results, \
                 entities, items or documents"
                    .to_owned()
            }),
        other => Err(format!("no hit array: the result is {}", kind(Some(other)))),
    }
}

/// A hit object's members but the consumed ones; a hit that is not an object has none.
fn metadata(hit: &Value, consumed: &[&str]) -> Result<Metadata, String> {
    let Value::Object(members) = hit else {
        return Ok(Metadata::default());
    };
    let mut kept = Map::new();
    for (key, value) in members {
        if consumed.contains(&key.as_str()) {
            continue;
        }
        // As for every store: metadata a client could not read back is a failure, not a hit.
        if deeper_than(value, MAX_DEPTH) {
            return Err(format!(
                "a metadata member nests deeper than {MAX_DEPTH} levels"
            ));
        }
        kept.insert(key.clone(), value.clone());
    }
    Ok(Metadata::from_map(&kept))
}

/// Whether `value` nests arrays and objects more than `levels` deep (a scalar is 0 deep, `[1]`
/// one). The recursion stops at `levels`, so it is bounded whatever the value.
fn deeper_than(value: &Value, levels: usize) -> bool {
    match value {
        Value::Array(items) => levels == 0 || items.iter().any(|v| deeper_than(v, levels - 1)),
        Value::Object(members) => {
            levels == 0 || members.values().any(|v| deeper_than(v, levels - 1))
        }
        _ => false,
    }
}

/// The kind of a value, for a reason that must not show the value.
fn kind(value: Option<&Value>) -> &'static str {
    match value {
        None => "nothing",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "a boolean",
        Some(Value::Number(_)) => "a number",
        Some(Value::String(_)) => "a string",
        Some(Value::Array(_)) => "an array",
        Some(Value::Object(_)) => "an object",
    }
}

/// The result document of a tool result without structured content: its first text block parsed
/// as JSON. A text that is not JSON is named by line and column only: the text is the tool's, and
/// may hold anything.
fn document(first_text: Option<&str>) -> Result<Value, String> {
    let text = first_text.ok_or("the tool result has no structured content and no text block")?;
    document_of_text(text)
}

/// A text block parsed as JSON, or where it is not JSON.
fn document_of_text(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|error| {
        format!(
            "the tool's text is not JSON (line {}, column {})",
            error.line(),
            error.column()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn pointer(text: &str) -> Pointer {
        Pointer::parse(text).unwrap_or_else(|why| panic!("{text:?}: {why}"))
    }

    fn mapping(hits: Option<&str>, id: &str, content: &str, score: Option<&str>) -> Mapping {
        Mapping {
            shape: Shape::Json,
            hits: hits.map(pointer),
            id: pointer(id),
            content: Template::parse(content).unwrap_or_else(|why| panic!("{content:?}: {why}")),
            score: score.map(pointer),
            distance: None,
        }
    }

    /// The hits as `id|content|base_relevance|native_score|metadata` lines, one a hit.
    fn lines(hits: &[Hit]) -> Vec<String> {
        hits.iter()
            .map(|hit| {
                assert_eq!(hit.raw_distance, None);
                assert_eq!(hit.satellites, None);
                format!(
                    "{}|{}|{}|{:?}|{}",
                    hit.id,
                    hit.content,
                    hit.base_relevance,
                    hit.native_score,
                    hit.metadata.as_json()
                )
            })
            .collect()
    }

    fn check(mapping: &Mapping, document: Value, limit: usize, expected: &[&str]) {
        let hits = mapping
            .read(&document, limit)
            .unwrap_or_else(|why| panic!("{document}: {why}"));
        assert_eq!(lines(&hits), expected, "{document}");
    }

    fn check_error(mapping: &Mapping, document: Value, expected: &str) {
        let why = mapping.read(&document, 10).expect_err(expected);
        assert_eq!(why, expected, "{document}");
    }

    #[test]
    fn hits_not_in_the_structured_content_are_read_from_the_text() {
        let mapping = mapping(Some("/results"), "/id", "/memory", Some("/score"));
        let text = r#"{"results": [{"id": "m1", "memory": "tea", "score": 0.5}]}"#;
        // FastMCP's wrapper: the same answer as a string, or as an object, under `result`.
        for structured in [json!({"result": text}), json!({"result": {"results": []}})] {
            let hits = mapping.read_answer(Some(&structured), &[text], 10).unwrap();
            assert_eq!(lines(&hits), ["m1|tea|0.5|Some(0.5)|{}"], "{structured}");
        }
        // Hits in the structured content are read from it, whatever the text says.
        let structured = json!({"results": [{"id": "s", "memory": "structured"}]});
        let hits = mapping
            .read_answer(Some(&structured), &["not json"], 10)
            .unwrap();
        assert_eq!(hits[0].id, "s");
        // Neither: both places are named.
        let why = mapping
            .read_answer(Some(&json!({"result": "cut"})), &["{\"results\": [{"], 10)
            .unwrap_err();
        assert_eq!(
            why,
            "no hit array at /results (found nothing) in the structured content, and the tool's text is not JSON (line 1, column 14)"
        );
        let why = mapping.read_answer(Some(&json!({})), &[], 10).unwrap_err();
        assert_eq!(why, "no hit array at /results (found nothing)");
    }

    #[test]
    fn pointers_unescape_and_find_values() {
        let doc = json!({
            "a": [{"b/c": 1, "m~n": 2}, "second"],
            "": {"": "empty keys"},
            "0": "a key that looks like an index",
            "a/b": 3,
        });
        for (text, expected) in [
            ("", Some(&doc)),
            ("/a/0/b~1c", Some(&json!(1))),
            ("/a/0/m~0n", Some(&json!(2))),
            ("/a/1", Some(&json!("second"))),
            ("/a~1b", Some(&json!(3))),
            ("/", Some(&json!({"": "empty keys"}))),
            ("//", Some(&json!("empty keys"))),
            ("/0", Some(&json!("a key that looks like an index"))),
            ("/a/01", None),
            ("/a/-", None),
            ("/a/+1", None),
            ("/a/2", None),
            ("/a/99999999999999999999999", None),
            ("/a/1/x", None),
            ("/missing", None),
        ] {
            let parsed = pointer(text);
            assert_eq!(parsed.get(&doc), expected, "{text:?}");
            assert_eq!(parsed.as_str(), text);
        }
        // "~01" is "~1" unescaped once, never "/".
        assert_eq!(
            pointer("/~01").get(&json!({"~1": true})),
            Some(&json!(true))
        );
    }

    #[test]
    fn a_bad_pointer_says_what_and_where() {
        for (text, expected) in [
            ("hits", "must be empty or start with '/', got \"hits\""),
            (
                "/a~2",
                "'~' at character 3 must be followed by 0 or 1 (~0 is '~', ~1 is '/')",
            ),
            (
                "/a/b~",
                "'~' at character 5 must be followed by 0 or 1 (~0 is '~', ~1 is '/')",
            ),
        ] {
            assert_eq!(Pointer::parse(text).unwrap_err(), expected, "{text:?}");
        }
    }

    #[test]
    fn templates_render_each_kind_of_value() {
        let hit = json!({
            "s": "text", "n": 4.5, "i": 7, "b": true, "z": null, "e": "",
            "list": ["a", 2, null, {"k": "v"}, ["x"]], "o": {"k": [1]},
        });
        let whole = hit.to_string();
        for (template, expected) in [
            ("/s", "text"),
            ("/list", "a; 2; null; {\"k\":\"v\"}; [\"x\"]"),
            ("{/s}, {/n}, {/i}, {/b}", "text, 4.5, 7, true"),
            ("<{/z}{/missing}{/e}>", "<>"),
            ("{/o}", "{\"k\":[1]}"),
            ("{/s}[ and {/i}]", "text and 7"),
            ("{/s}[ and {/z}]", "text"),
            ("{/s}[ and {/e}][ or {/missing}]", "text"),
            ("[{/s} and {/n} ]end", "text and 4.5 end"),
            ("[{/s} and {/e}]end", "end"),
            ("[fixed ]{/s}", "fixed text"),
            ("{}", whole.as_str()),
        ] {
            let parsed = Template::parse(template).expect(template);
            assert_eq!(parsed.render(&hit), expected, "{template:?}");
            assert_eq!(parsed.as_str(), template);
        }
    }

    #[test]
    fn template_escapes_are_literal() {
        let hit = json!({"name": "Alice", "a{b}": "braced key", "[x]": "bracketed"});
        for (template, expected) in [
            (r"\{{/name}\}", "{Alice}"),
            (r"\[{/name}\] \[not optional\]", "[Alice] [not optional]"),
            (r"C:\dir\ {/name}", r"C:\dir\ Alice"),
            (r"{/name}\n\", r"Alice\n\"),
            (r"[\[{/name}\]]", "[Alice]"),
            (r"{/a\{b\}}", "braced key"),
            ("{/[x]}", "bracketed"),
        ] {
            let parsed = Template::parse(template).expect(template);
            assert_eq!(parsed.render(&hit), expected, "{template:?}");
        }
    }

    #[test]
    fn a_bare_pointer_is_a_template_of_one_value() {
        let bare = Template::parse("/content").unwrap();
        assert_eq!(bare.form, Form::Bare(pointer("/content")));
        // No '{': the whole text is a pointer, brackets and all.
        let odd = Template::parse("/a[0]").unwrap();
        assert_eq!(odd.render(&json!({"a[0]": "x", "a": ["y"]})), "x");
        // The empty text is the pointer to the whole hit.
        let whole = Template::parse("").unwrap();
        assert_eq!(whole.render(&json!("a string hit")), "a string hit");
        assert_eq!(whole.render(&json!(["a", "b"])), "a; b");
    }

    #[test]
    fn a_bad_template_names_the_position() {
        for (template, expected) in [
            (
                "{/a",
                "the '{' at character 1 is never closed (write \\{ for a literal '{')",
            ),
            (
                "x [{/a}",
                "the '[' at character 3 is never closed (write \\[ for a literal '[')",
            ),
            (
                "[{/a} [{/b}]]",
                "a '[' at character 7 inside the optional part opened at character 1 (optional \
                 parts do not nest; write \\[ for a literal '[')",
            ),
            (
                "{/a{/b}}",
                "a '{' at character 4 inside the field opened at character 1",
            ),
            (
                "{/a}}",
                "an unmatched '}' at character 5 (write \\} for a literal '}')",
            ),
            (
                "{/a}]",
                "an unmatched ']' at character 5 (write \\] for a literal ']')",
            ),
            (
                "{/a}: {name}",
                "the field at character 7: must be empty or start with '/', got \"name\"",
            ),
            (
                "{/a~x}",
                "the field at character 1: '~' at character 3 must be followed by 0 or 1 (~0 is \
                 '~', ~1 is '/')",
            ),
            (
                "/a~",
                "'~' at character 3 must be followed by 0 or 1 (~0 is '~', ~1 is '/')",
            ),
        ] {
            assert_eq!(
                Template::parse(template).unwrap_err(),
                expected,
                "{template:?}"
            );
        }
        let constant = Template::parse("content").unwrap_err();
        assert!(constant.contains("has no {pointer} field"), "{constant}");
        assert!(Template::parse(r"literal \{/a\}").is_err());
    }

    #[test]
    fn server_memory_entities() {
        let graph = json!({
            "entities": [
                {"name": "Alice", "entityType": "person",
                 "observations": ["likes rust", "lives in Oslo"]},
                {"name": "Oslo", "entityType": "city", "observations": [], "since": 2020},
            ],
            "relations": [{"from": "Alice", "to": "Oslo", "relationType": "lives in"}],
        });
        let map = mapping(
            Some("/entities"),
            "/name",
            "{/name} ({/entityType}): {/observations}",
            None,
        );
        check(
            &map,
            graph,
            10,
            &[
                "Alice|Alice (person): likes rust; lives in Oslo|0|None|{}",
                "Oslo|Oslo (city): |0|None|{\"since\":2020}",
            ],
        );
    }

    #[test]
    fn seren_loci_facts_with_an_optional_why() {
        let answer = json!({"hits": [
            {"id": "1", "key": "k", "value": "v", "why": "w", "score": 0.9},
            {"id": "2", "key": "k2", "value": "v2", "why": "", "score": 0.5, "project": "p"},
        ]});
        let map = mapping(
            Some("/hits"),
            "/id",
            "{/key} = {/value}[ because {/why}]",
            Some("/score"),
        );
        check(
            &map,
            answer.clone(),
            10,
            &[
                "1|k = v because w|0.9|Some(0.9)|{}",
                "2|k2 = v2|0.5|Some(0.5)|{\"project\":\"p\"}",
            ],
        );
        // The same answer found without a `hits` pointer.
        let found = Mapping { hits: None, ..map };
        assert_eq!(found.read(&answer, 10).unwrap().len(), 2);
    }

    #[test]
    fn without_a_hits_pointer_the_array_is_looked_for_in_order() {
        let map = mapping(None, "/id", "/content", None);
        let one = |id: &str| json!([{"id": id, "content": "c"}]);
        for (document, expected) in [
            (json!([{"id": "top", "content": "c"}]), "top"),
            (json!({"hits": one("h"), "results": one("r")}), "h"),
            (
                json!({"documents": one("d"), "items": one("i"), "results": one("r")}),
                "r",
            ),
            (json!({"documents": one("d"), "entities": one("e")}), "e"),
            (json!({"documents": one("d"), "items": one("i")}), "i"),
            (
                json!({"hits": null, "results": {"a": 1}, "documents": one("d")}),
                "d",
            ),
            (json!({"other": one("o"), "documents": one("d")}), "d"),
        ] {
            let hits = map.read(&document, 10).unwrap();
            assert_eq!(hits[0].id, expected, "{document}");
        }
        let object = "no hit array: the result is an object without an array named hits, \
                      results, entities, items or documents";
        check_error(&map, json!({"hits": {"the query": 1}, "other": []}), object);
        check_error(&map, json!({}), object);
        check_error(
            &map,
            json!("a secret"),
            "no hit array: the result is a string",
        );
        check_error(&map, json!(null), "no hit array: the result is null");
    }

    #[test]
    fn a_hits_pointer_must_lead_to_an_array() {
        let map = mapping(Some("/entities"), "/id", "/content", None);
        for (document, expected) in [
            (
                json!({"entities": {"secret": 1}}),
                "no hit array at /entities (found an object)",
            ),
            (
                json!({"entities": "secret"}),
                "no hit array at /entities (found a string)",
            ),
            (
                json!({"entities": 3}),
                "no hit array at /entities (found a number)",
            ),
            (
                json!({"entities": false}),
                "no hit array at /entities (found a boolean)",
            ),
            (
                json!({"entities": null}),
                "no hit array at /entities (found null)",
            ),
            (
                json!({"hits": []}),
                "no hit array at /entities (found nothing)",
            ),
            (json!([]), "no hit array at /entities (found nothing)"),
        ] {
            check_error(&map, document, expected);
        }
        let root = mapping(Some(""), "/id", "/content", None);
        check_error(
            &root,
            json!({"hits": []}),
            "no hit array at the result's root (found an object)",
        );
        check(&root, json!([{"content": "c"}]), 10, &["|c|0|None|{}"]);
        // The hits pointer overrides the search: an empty array is an empty answer.
        let empty = mapping(Some("/a/0"), "/id", "/content", None);
        check(
            &empty,
            json!({"a": [[]], "hits": [{"content": "c"}]}),
            10,
            &[],
        );
    }

    #[test]
    fn the_limit_counts_kept_hits_and_stops_the_read() {
        let map = mapping(None, "/id", "/content", None);
        let document = json!([
            {"id": "a", "content": "1"},
            {"id": "b"},
            {"id": "c", "content": "3"},
            {"id": "d", "content": "4"},
        ]);
        check(
            &map,
            document.clone(),
            2,
            &["a|1|0|None|{}", "c|3|0|None|{}"],
        );
        check(&map, document.clone(), 0, &[]);
        assert_eq!(map.read(&document, 100).unwrap().len(), 3);
        // A hit past the limit is never built, so what would fail it does not fail the read.
        let deep = (0..=MAX_DEPTH).fold(json!(1), |inner, _| json!([inner]));
        let document = json!([{"id": "a", "content": "1"}, {"id": "b", "content": "2", "x": deep}]);
        check(&map, document.clone(), 1, &["a|1|0|None|{}"]);
        assert_eq!(
            map.read(&document, 2).unwrap_err(),
            format!("the hit at index 1: a metadata member nests deeper than {MAX_DEPTH} levels")
        );
    }

    #[test]
    fn metadata_nested_to_the_limit_is_kept() {
        let map = mapping(None, "/id", "/content", None);
        let deepest = (1..MAX_DEPTH).fold(json!([]), |inner, _| json!([inner]));
        let hits = map
            .read(&json!([{"content": "c", "x": deepest.clone()}]), 1)
            .unwrap();
        assert_eq!(hits[0].metadata.get("x"), Some(deepest));
    }

    #[test]
    fn hits_without_content_are_dropped() {
        let map = mapping(None, "/id", "/content", None);
        let document = json!([
            {"id": "missing"},
            {"id": "null", "content": null},
            {"id": "empty", "content": ""},
            {"id": "blank", "content": " \n\t"},
            {"id": "no items", "content": []},
            {"id": "kept", "content": " x "},
        ]);
        check(&map, document, 10, &["kept| x |0|None|{}"]);
        // A template's literal text alone is not content either.
        let template = mapping(None, "/id", "  {/a}  ", None);
        check(
            &template,
            json!([{"id": "1"}, {"id": "2", "a": "x"}]),
            10,
            &["2|  x  |0|None|{}"],
        );
    }

    #[test]
    fn ids_render_as_text() {
        let map = mapping(None, "/id", "/c", None);
        let document = json!([
            {"id": 42, "c": "c"},
            {"id": 1.5, "c": "c"},
            {"id": -3, "c": "c"},
            {"id": "s", "c": "c"},
            {"id": null, "c": "c"},
            {"c": "c"},
            {"id": true, "c": "c"},
            {"id": [1, "a"], "c": "c"},
            {"id": {"k": 1}, "c": "c"},
        ]);
        let ids: Vec<String> = map
            .read(&document, 20)
            .unwrap()
            .into_iter()
            .map(|hit| hit.id)
            .collect();
        assert_eq!(
            ids,
            [
                "42",
                "1.5",
                "-3",
                "s",
                "",
                "",
                "true",
                "[1,\"a\"]",
                "{\"k\":1}"
            ]
        );
    }

    #[test]
    fn a_score_must_be_a_number() {
        let map = mapping(None, "/id", "/c", Some("/meta/score"));
        let document = json!([
            {"id": "n", "c": "c", "meta": {"score": 0.25}},
            {"id": "i", "c": "c", "meta": {"score": 3}},
            {"id": "s", "c": "c", "meta": {"score": "0.9"}},
            {"id": "z", "c": "c", "meta": {"score": null}},
            {"id": "m", "c": "c"},
        ]);
        let scores: Vec<(f64, Option<f64>)> = map
            .read(&document, 10)
            .unwrap()
            .iter()
            .map(|hit| (hit.base_relevance, hit.native_score))
            .collect();
        assert_eq!(
            scores,
            [
                (0.25, Some(0.25)),
                (3.0, Some(3.0)),
                (0.0, None),
                (0.0, None),
                (0.0, None)
            ]
        );
    }

    #[test]
    fn metadata_is_the_members_not_read_whole() {
        let hit =
            json!([{"id": "1", "name": "n", "a": {"b": "deep"}, "score": 1, "why": "w", "x": [1]}]);
        for (id, content, score, expected) in [
            // One-token pointers consume their member, optional parts included.
            (
                "/id",
                "{/name}[ ({/why})]",
                Some("/score"),
                r#"{"a":{"b":"deep"},"x":[1]}"#,
            ),
            // A deeper pointer reads part of a member, which stays.
            (
                "/a/b",
                "/name",
                None,
                r#"{"a":{"b":"deep"},"id":"1","score":1,"why":"w","x":[1]}"#,
            ),
            (
                "/x/0",
                "{/a/b}",
                Some("/missing"),
                r#"{"a":{"b":"deep"},"id":"1","name":"n","score":1,"why":"w","x":[1]}"#,
            ),
            // The whole-value pointer names no member.
            (
                "",
                "{}",
                None,
                r#"{"a":{"b":"deep"},"id":"1","name":"n","score":1,"why":"w","x":[1]}"#,
            ),
        ] {
            let map = mapping(None, id, content, score);
            let hits = map.read(&hit, 1).unwrap();
            assert_eq!(hits[0].metadata.as_json(), expected, "{id} {content}");
        }
    }

    #[test]
    fn hits_that_are_not_objects_have_no_metadata() {
        let whole = mapping(None, "", "", None);
        check(
            &whole,
            json!(["plain text", 7, ["a", "b"], null, ""]),
            10,
            &[
                "plain text|plain text|0|None|{}",
                "7|7|0|None|{}",
                "[\"a\",\"b\"]|a; b|0|None|{}",
            ],
        );
        // Pointers into a scalar find nothing.
        let fields = mapping(None, "/id", "{/content}", Some("/score"));
        check(&fields, json!(["plain text", 7]), 10, &[]);
        let indexed = mapping(None, "/0", "{/1}", None);
        check(
            &indexed,
            json!([["id", "text"]]),
            10,
            &["id|text|0|None|{}"],
        );
    }

    #[test]
    fn the_document_is_structured_content_else_the_text() {
        let structured = json!({"hits": []});
        let any = mapping(None, "/id", "/content", None);
        assert_eq!(
            any.read_answer(Some(&structured), &["not json"], 10),
            Ok(Vec::new())
        );
        assert_eq!(document(Some(r#"{"hits": [1]}"#)), Ok(json!({"hits": [1]})));
        assert_eq!(document(Some("[]")), Ok(json!([])));
        let secret = "my password is hunter2";
        let why = document(Some(secret)).unwrap_err();
        assert_eq!(why, "the tool's text is not JSON (line 1, column 1)");
        let why = document(Some("{\"a\": 1}\nhunter2")).unwrap_err();
        assert_eq!(why, "the tool's text is not JSON (line 2, column 1)");
        assert_eq!(
            document(None).unwrap_err(),
            "the tool result has no structured content and no text block"
        );
    }

    /// Strings built from the characters the grammars care about, and some they do not.
    fn grammar_text() -> impl Strategy<Value = String> {
        let chars = prop::sample::select(vec![
            '{', '}', '[', ']', '\\', '/', '~', '0', '1', 'a', 'é', ' ',
        ]);
        prop_oneof![
            prop::collection::vec(chars, 0..24).prop_map(|c| c.into_iter().collect()),
            any::<String>(),
        ]
    }

    fn escape(token: &str) -> String {
        token.replace('~', "~0").replace('/', "~1")
    }

    proptest! {
        #[test]
        fn parsing_never_panics_and_keeps_the_text(text in grammar_text()) {
            let hit = json!({"a": ["x", 1], "": "e", "~": {"/": null}});
            if let Ok(template) = Template::parse(&text) {
                prop_assert_eq!(template.as_str(), text.as_str());
                let _ = template.render(&hit);
                let _ = template.render(&json!("string hit"));
            }
            if let Ok(parsed) = Pointer::parse(&text) {
                prop_assert_eq!(parsed.as_str(), text.as_str());
                prop_assert_eq!(Pointer::parse(parsed.as_str()), Ok(parsed.clone()));
            }
        }

        #[test]
        fn escaped_tokens_round_trip(tokens in prop::collection::vec(grammar_text(), 0..5)) {
            let text: String = tokens.iter().map(|t| format!("/{}", escape(t))).collect();
            let parsed = Pointer::parse(&text).expect("an escaped pointer parses");
            prop_assert_eq!(&parsed.tokens, &tokens);
            prop_assert_eq!(Pointer::parse(parsed.as_str()), Ok(parsed.clone()));
            let nested = tokens
                .iter()
                .rev()
                .fold(json!("leaf"), |inner, token| {
                    let mut member = Map::new();
                    member.insert(token.clone(), inner);
                    Value::Object(member)
                });
            prop_assert_eq!(parsed.get(&nested), Some(&json!("leaf")));
        }
    }
}
