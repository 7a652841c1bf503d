//! How `propose` reads the test answer: its shape (an `<entry>` text block per hit, column-major
//! JSON, or a JSON hit array, found in the structured content or the first text block), the hit
//! array's place, and the id, content and score members of its hits (from the first hits, else
//! from the tool's `outputSchema`).

use super::pick::{Key, types};
use crate::store::mcp::client;
use crate::store::mcp::shape::Shape;
use crate::text::cut;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};

/// How many hits are looked at for their members.
const SAMPLE: usize = 10;
/// How deep a hit array is looked for in the result document.
const DEPTH: usize = 3;

/// Names of a hit array, best first.
const HIT_ARRAYS: &[&str] = &[
    "hits",
    "results",
    "entities",
    "items",
    "documents",
    "facts",
    "nodes",
    "memories",
    "notes",
    "matches",
    "data",
];
/// Members that identify a hit, best first.
const ID_MEMBERS: &[&str] = &[
    "id",
    "uuid",
    "permalink",
    "key",
    "doc_id",
    "_id",
    "name",
    "title",
];
/// Members that hold a hit's text, best first.
const CONTENT_MEMBERS: &[&str] = &[
    "content",
    "memory",
    "fact",
    "text",
    "document",
    "page_content",
    "summary",
    "observations",
    "value",
    "body",
    "snippet",
    "chunk",
    "description",
];
/// Members that name what a hit is about, put before its content.
const LABEL_MEMBERS: &[&str] = &["title", "name"];
/// Members that hold a relevance (higher is better).
const SCORE_MEMBERS: &[&str] = &[
    "score",
    "relevance",
    "similarity",
    "relevance_score",
    "_score",
];
/// Members that hold a distance (lower is better).
const DISTANCE_MEMBERS: &[&str] = &["distance", "_distance"];

/// How the test answer is read, and notes on what was left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub keys: Vec<Key>,
    pub notes: Vec<String>,
}

/// The shape, hit array and members of a tool's answer.
pub fn read_result(
    result: &CallToolResult,
    output_schema: Option<&Map<String, Value>>,
) -> Result<Reading, String> {
    let texts = client::texts(result);
    if result.is_error == Some(true) {
        let text = texts.first().map_or("no text", |t| t.trim());
        return Err(format!(
            "the test call answered an error: {}",
            cut(text, 200)
        ));
    }
    reading(result.structured_content.as_ref(), &texts, output_schema)
}

/// [`read_result`] on the parts of a result.
pub fn reading(
    structured: Option<&Value>,
    texts: &[&str],
    output_schema: Option<&Map<String, Value>>,
) -> Result<Reading, String> {
    let shape_key = |shape: Shape, why: &str| Key {
        key: "shape",
        value: json!(shape.name()),
        why: format!("guessed: {why}"),
    };
    // A header, then `<entry>` blocks: as text blocks, or (fastmcp 2) one block of their list.
    let listed: Option<Vec<String>> = match texts {
        [only] if only.trim_start().starts_with('[') => serde_json::from_str(only).ok(),
        _ => None,
    };
    let blocks: Vec<&str> = match &listed {
        Some(items) => items.iter().map(String::as_str).collect(),
        None => texts.to_vec(),
    };
    if blocks.len() > 1
        && blocks[1..]
            .iter()
            .all(|t| t.trim_start().starts_with("<entry>"))
    {
        return Ok(Reading {
            keys: vec![shape_key(
                Shape::TextEntries,
                "a header block, then one <entry> text block per hit",
            )],
            notes: vec!["an <entry> hit has no id: the callosum makes one from its content".into()],
        });
    }
    // As the mapping reads a result: the structured content, then the first text block's JSON.
    let text = texts
        .first()
        .map(|text| serde_json::from_str::<Value>(text));
    let mut documents: Vec<(&str, &Value)> = Vec::new();
    if let Some(structured) = structured {
        documents.push(("the structured content", structured));
    }
    if let Some(Ok(text)) = &text {
        documents.push(("the first text block's JSON", text));
    }
    if documents.is_empty() {
        return Err(match texts.first() {
            Some(text) => format!(
                "the answer is text that is not JSON, which no shape reads; if the tool has an \
                 argument that asks for JSON, give it with --arg (the text begins: {:?})",
                cut(text.trim(), 60)
            ),
            None => "the answer has no structured content and no text block".into(),
        });
    }
    if let Some((source, _)) = documents.iter().find(|(_, document)| is_columns(document)) {
        return Ok(Reading {
            keys: vec![shape_key(
                Shape::Columns,
                &format!("{source} holds ids and documents as lists of lists"),
            )],
            notes: vec![
                "a columns hit's distance is its raw_distance; relevance is 1 / (1 + distance)"
                    .into(),
            ],
        });
    }
    let found = documents.iter().find_map(|(source, document)| {
        let (pointer, items) = hit_array(document, String::new(), DEPTH)?;
        Some((*source, pointer, items))
    });
    let Some((source, pointer, items)) = found else {
        return Err(format!(
            "no hit array in {}: not an array, and no member (to {DEPTH} levels) is an array \
             of objects",
            documents[0].0
        ));
    };
    let sample: Vec<&Map<String, Value>> = items
        .iter()
        .take(SAMPLE)
        .filter_map(Value::as_object)
        .collect();
    let members = match sample.is_empty() {
        false => members_of(&sample),
        true => match output_schema.and_then(|schema| schema_members(schema, &pointer)) {
            Some(members) => members,
            None => {
                return Err(format!(
                    "the test search found no hits at {} and the tool declares no output schema \
                     for them: search for something the server holds",
                    shown(&pointer)
                ));
            }
        },
    };
    let mut keys = vec![Key {
        key: "hits",
        value: json!(pointer),
        why: format!("guessed: the array of objects in {source}"),
    }];
    let mut notes = Vec::new();
    let id = ID_MEMBERS
        .iter()
        .find(|m| members.iter().any(|(k, _)| k == *m));
    let content = CONTENT_MEMBERS
        .iter()
        .find(|m| members.iter().any(|(k, kind)| k == *m && kind != "number"));
    let Some(content) = content.map(|c| (*c).to_owned()).or_else(|| {
        // Else the first text member that is not the id.
        members
            .iter()
            .find(|(k, kind)| kind == "string" && Some(&k.as_str()) != id)
            .map(|(k, _)| k.clone())
    }) else {
        return Err("no hit member holds text (content, memory, fact, text, ...)".into());
    };
    let label = LABEL_MEMBERS
        .iter()
        .find(|m| **m != content && members.iter().any(|(k, kind)| k == *m && kind == "string"));
    let (template, content_why) = match label {
        Some(label) => (
            format!("{{/{label}}}[: {{/{}}}]", escape(&content)),
            format!("guessed: its {label} then its {content}"),
        ),
        None => (
            format!("/{}", escape(&content)),
            format!("guessed: its {content}"),
        ),
    };
    match id {
        Some(id) => keys.push(Key {
            key: "id",
            value: json!(format!("/{id}")),
            why: format!("guessed: its {id}"),
        }),
        None => {
            keys.push(Key {
                key: "id",
                value: json!(format!("/{}", escape(&content))),
                why: "guessed: no id member, so the content tells hits apart".into(),
            });
        }
    }
    keys.push(Key {
        key: "content",
        value: json!(template),
        why: content_why,
    });
    let numbers = |name: &str| -> Vec<f64> {
        sample
            .iter()
            .filter_map(|hit| hit.get(name)?.as_f64())
            .collect()
    };
    if let Some(score) = SCORE_MEMBERS
        .iter()
        .find(|m| members.iter().any(|(k, _)| k == *m))
    {
        let values = numbers(score);
        if values.iter().any(|v| *v < 0.0) {
            notes.push(format!(
                "its {score} is left out: some are negative (a rank, not a relevance), so order \
                 is what counts and only a floor of 0 keeps its hits"
            ));
        } else if values.windows(2).any(|w| w[1] > w[0]) {
            notes.push(format!(
                "its {score} is left out: it rises down the list, so it is not a relevance"
            ));
        } else {
            keys.push(Key {
                key: "score",
                value: json!(format!("/{score}")),
                why: format!("guessed: its {score} falls down the list"),
            });
        }
    } else if let Some(distance) = DISTANCE_MEMBERS
        .iter()
        .find(|m| members.iter().any(|(k, _)| k == *m))
    {
        keys.push(Key {
            key: "distance",
            value: json!(format!("/{distance}")),
            why: format!("guessed: its {distance} (relevance 1 / (1 + distance))"),
        });
    } else {
        notes.push(
            "no score member: its hits have relevance 0, so only a floor of 0 keeps them".into(),
        );
    }
    Ok(Reading { keys, notes })
}

/// Whether a document is column-major JSON (`ids` and `documents` lists of lists).
fn is_columns(document: &Value) -> bool {
    let column = |name: &str| {
        document
            .get(name)
            .and_then(Value::as_array)
            .and_then(|rows| rows.first())
            .is_some_and(Value::is_array)
    };
    column("ids") && column("documents")
}

/// The first hit array in `document`: the document itself, else a member by the known names,
/// else any array of objects, breadth first to `depth` levels. Its pointer and items.
fn hit_array(document: &Value, at: String, depth: usize) -> Option<(String, &[Value])> {
    match document {
        Value::Array(items) if items.is_empty() || items.iter().any(Value::is_object) => {
            Some((at, items.as_slice()))
        }
        Value::Object(members) if depth > 0 => {
            let arrays = members.iter().filter_map(|(name, value)| {
                let items = value.as_array()?;
                (items.is_empty() || items.iter().any(Value::is_object)).then_some((name, items))
            });
            let mut arrays: Vec<(&String, &Vec<Value>)> = arrays.collect();
            arrays.sort_by_key(|(name, items)| {
                let known = HIT_ARRAYS
                    .iter()
                    .position(|n| n == name)
                    .unwrap_or(HIT_ARRAYS.len());
                (known, items.is_empty())
            });
            if let Some((name, items)) = arrays.first() {
                return Some((format!("{at}/{}", escape(name)), items.as_slice()));
            }
            members
                .iter()
                .filter(|(_, value)| value.is_object())
                .take(SAMPLE)
                .find_map(|(name, value)| {
                    hit_array(value, format!("{at}/{}", escape(name)), depth - 1)
                })
        }
        _ => None,
    }
}

/// Every member name of the sampled hits with its JSON kind, in first-seen order.
fn members_of(sample: &[&Map<String, Value>]) -> Vec<(String, String)> {
    let mut members: Vec<(String, String)> = Vec::new();
    for hit in sample {
        for (name, value) in hit.iter().take(64) {
            if !members.iter().any(|(n, _)| n == name) {
                members.push((name.clone(), kind(value).into()));
            }
        }
    }
    members
}

/// The members the output schema gives a hit at `pointer` (`properties` down the pointer, then
/// `items`), when it says.
fn schema_members(schema: &Map<String, Value>, pointer: &str) -> Option<Vec<(String, String)>> {
    let mut at = Value::Object(schema.clone());
    for token in pointer.split('/').skip(1) {
        at = at
            .get("properties")?
            .get(token.replace("~1", "/").replace("~0", "~"))?
            .clone();
    }
    let item = at.get("items")?.get("properties")?.as_object()?;
    Some(
        item.iter()
            .take(64)
            .map(|(name, schema)| {
                let kind = types(schema).into_iter().next().unwrap_or_default();
                (name.clone(), kind)
            })
            .collect(),
    )
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A member name as a JSON pointer token.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

fn shown(pointer: &str) -> &str {
    if pointer.is_empty() {
        "the root"
    } else {
        pointer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value_of<'a>(keys: &'a [Key], key: &str) -> Option<&'a Value> {
        keys.iter().find(|k| k.key == key).map(|k| &k.value)
    }

    #[test]
    fn a_json_hit_array_is_found_and_its_members_guessed() {
        let doc = json!({"result": {"results": [
            {"title": "Jetson", "permalink": "lab/jetson", "content": "x", "score": -3.5},
            {"title": "NAS", "permalink": "lab/nas", "content": "y", "score": -1.0}]}});
        let reading = super::reading(Some(&doc), &[], None).expect("a reading");
        assert_eq!(
            value_of(&reading.keys, "hits"),
            Some(&json!("/result/results"))
        );
        assert_eq!(value_of(&reading.keys, "id"), Some(&json!("/permalink")));
        assert_eq!(
            value_of(&reading.keys, "content"),
            Some(&json!("{/title}[: {/content}]"))
        );
        assert_eq!(value_of(&reading.keys, "score"), None);
        assert!(reading.notes[0].starts_with("its score is left out: some are negative"));
        let mem0 = r#"{"results": [{"id": "m1", "memory": "likes tea", "score": 0.9}]}"#;
        let reading = super::reading(None, &[mem0], None).expect("a reading");
        assert_eq!(value_of(&reading.keys, "content"), Some(&json!("/memory")));
        assert_eq!(value_of(&reading.keys, "score"), Some(&json!("/score")));
    }

    #[test]
    fn entries_columns_and_an_empty_answer_read_from_the_output_schema() {
        let entry = "<entry><content>a</content><metadata>{}</metadata></entry>";
        let header = "Results for the query 'q'";
        let reading = super::reading(None, &[header, entry], None).expect("entries");
        assert_eq!(
            value_of(&reading.keys, "shape"),
            Some(&json!("text_entries"))
        );
        let listed = json!([header, entry]).to_string();
        let reading = super::reading(None, &[&listed], None).expect("listed entries");
        assert_eq!(
            value_of(&reading.keys, "shape"),
            Some(&json!("text_entries"))
        );
        let columns = json!({"ids": [["a"]], "documents": [["x"]], "distances": [[0.1]]});
        let reading = super::reading(Some(&columns), &[], None).expect("columns");
        assert_eq!(value_of(&reading.keys, "shape"), Some(&json!("columns")));
        let empty = json!({"message": "none", "facts": []});
        let why = super::reading(Some(&empty), &[], None).expect_err("nothing to read");
        assert!(
            why.starts_with("the test search found no hits at /facts"),
            "{why}"
        );
        let schema = json!({"properties": {"facts": {"type": "array", "items": {"properties": {
            "uuid": {"type": "string"}, "fact": {"type": "string"}}}}}});
        let reading = super::reading(Some(&empty), &[], schema.as_object()).expect("schema");
        assert_eq!(value_of(&reading.keys, "id"), Some(&json!("/uuid")));
        assert_eq!(value_of(&reading.keys, "content"), Some(&json!("/fact")));
    }

    #[test]
    fn an_answer_no_shape_reads_is_named() {
        let why = super::reading(None, &["# Search results\n\n- a note"], None).expect_err("text");
        assert!(why.contains("which no shape reads"), "{why}");
        // A structured content without hits, and a text block with them: FastMCP's wrapper.
        let wrapped = json!({"result": "{\"results\": [{\"id\": \"m\", \"memory\": \"tea\"}]}"});
        let text = r#"{"results": [{"id": "m", "memory": "tea"}]}"#;
        let reading = super::reading(Some(&wrapped), &[text], None).expect("the text's hits");
        assert_eq!(value_of(&reading.keys, "hits"), Some(&json!("/results")));
        let why = super::reading(Some(&json!({"count": 3})), &[], None).expect_err("no array");
        assert!(
            why.starts_with("no hit array in the structured content"),
            "{why}"
        );
        let why = super::reading(Some(&json!([{"n": 1}])), &[], None).expect_err("no text");
        assert_eq!(
            why,
            "no hit member holds text (content, memory, fact, text, ...)"
        );
    }
}
