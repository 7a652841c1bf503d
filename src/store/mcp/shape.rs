//! How a tool lays its hits out (`shape`, contract §1 `mcp`): as a JSON hit array (`json`, the
//! default), as one text block per hit (`text_entries`, mcp-server-qdrant's `<entry>` blocks), or as
//! column-major JSON (`columns`, chroma-mcp's `{ids: [[..]], documents: [[..]], ...}`).
//!
//! The two later shapes are turned here into the hit objects the `json` shape reads, so one
//! mapping (`id`, `content`, `score`, `distance` pointers and templates) reads all three:
//! - a `text_entries` hit is `{"id": <hash of the content>, "content": C, "metadata": {...}}`;
//! - a `columns` hit is `{"id", "document", "metadata", "distance"}`, from the first row (the
//!   first query's) of each column.
//!
//! Pure, and bounded: at most `limit` hits are built, and each error names a place (a block's
//! index, a column's name), never the text, which is the tool's and may hold anything.

use serde_json::{Map, Value};

/// How a tool result holds its hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// A JSON document with a hit array in it.
    #[default]
    Json,
    /// Every text block after the first is one `<entry>` hit.
    TextEntries,
    /// Column-major JSON: parallel columns, one row per query.
    Columns,
}

impl Shape {
    /// Every shape, by its name in the config.
    const ALL: [(Shape, &'static str); 3] = [
        (Shape::Json, "json"),
        (Shape::TextEntries, "text_entries"),
        (Shape::Columns, "columns"),
    ];

    /// The shape called `text`, or a message naming the known ones.
    pub fn parse(text: &str) -> Result<Shape, String> {
        Self::ALL
            .iter()
            .find(|(_, name)| *name == text)
            .map(|(shape, _)| *shape)
            .ok_or_else(|| {
                format!(
                    "shape must be one of json, text_entries, columns, got {:?}",
                    crate::text::cut(text, 40)
                )
            })
    }

    /// The shape's name in the config.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(shape, _)| *shape == self)
            .map(|(_, name)| *name)
            .expect("every shape is in ALL")
    }

    /// The content a hit of this shape reads when the entry names none.
    pub fn default_content(self) -> &'static str {
        match self {
            Shape::Columns => "/document",
            Shape::Json | Shape::TextEntries => "/content",
        }
    }

    /// The distance a hit of this shape reads when the entry names none.
    pub fn default_distance(self) -> Option<&'static str> {
        match self {
            Shape::Columns => Some("/distance"),
            Shape::Json | Shape::TextEntries => None,
        }
    }

    /// Whether a hit's metadata is its `metadata` member (the shapes built here) rather than its
    /// other members (a server's own hit objects).
    pub fn nests_metadata(self) -> bool {
        self != Shape::Json
    }
}

const ENTRY_OPEN: &str = "<entry><content>";
const ENTRY_MIDDLE: &str = "</content><metadata>";
const ENTRY_CLOSE: &str = "</metadata></entry>";

/// The `text_entries` hits: every block after the first (the header) read as one `<entry>`, at most
/// `limit` of them. No block after the header is no hit (mcp-server-qdrant's "No information found",
/// or no block at all). A result of one text block that is a JSON list of strings is read as those
/// strings: that is how fastmcp 2 (mcp-server-qdrant 0.8) sends a tool's list of texts.
pub fn entries(texts: &[&str], limit: usize) -> Result<Vec<Value>, String> {
    if let [only] = texts
        && only.trim_start().starts_with('[')
        && let Ok(items) = serde_json::from_str::<Vec<String>>(only)
    {
        let items: Vec<&str> = items.iter().map(String::as_str).collect();
        return read_entries(&items, limit, "the text block's list item at index");
    }
    read_entries(texts, limit, "the text block at index")
}

fn read_entries(texts: &[&str], limit: usize, place: &str) -> Result<Vec<Value>, String> {
    let mut hits = Vec::with_capacity(texts.len().saturating_sub(1).min(limit));
    for (index, text) in texts.iter().enumerate().skip(1).take(limit) {
        let hit = entry(text).map_err(|why| format!("{place} {index} {why}"))?;
        hits.push(hit);
    }
    Ok(hits)
}

/// One `<entry><content>C</content><metadata>{json}</metadata></entry>` block as a hit object. The
/// content runs to the last `</content><metadata>`, so a content holding those words is kept
/// whole; an empty metadata part is no metadata.
fn entry(text: &str) -> Result<Value, String> {
    let inner = text
        .trim()
        .strip_prefix(ENTRY_OPEN)
        .ok_or("does not start with <entry><content>")?
        .strip_suffix(ENTRY_CLOSE)
        .ok_or("does not end with </metadata></entry>")?;
    let (content, metadata) = inner
        .rsplit_once(ENTRY_MIDDLE)
        .ok_or("has no </content><metadata> between its parts")?;
    let metadata = match metadata.trim() {
        "" => Map::new(),
        json => match serde_json::from_str(json) {
            Ok(Value::Object(members)) => members,
            Ok(_) => return Err("has metadata that is not a JSON object".into()),
            Err(error) => {
                return Err(format!(
                    "has metadata that is not JSON (column {})",
                    error.column()
                ));
            }
        },
    };
    let mut hit = Map::new();
    hit.insert("id".into(), content_id(content).into());
    hit.insert("content".into(), content.into());
    hit.insert("metadata".into(), Value::Object(metadata));
    Ok(Value::Object(hit))
}

/// A stable id for a hit that has none: the first 16 hex digits of the SHA-256 of its content,
/// so the same hit has the same id in every search, on every machine, in every release.
pub fn content_id(content: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, content.as_bytes());
    digest.as_ref()[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The columns a `columns` hit is zipped from: (column, the hit's member).
const COLUMNS: [(&str, &str); 3] = [
    ("documents", "document"),
    ("metadatas", "metadata"),
    ("distances", "distance"),
];

/// The `columns` hits: the first row of `ids` zipped with the first rows of `documents`,
/// `metadatas` and `distances` (each optional: chroma leaves out what `include` does not name, or
/// answers null for it), at most `limit` of them. A column that is not a list of lists, or whose
/// row is shorter than the ids', is an error naming it.
pub fn columns(document: &Value, limit: usize) -> Result<Vec<Value>, String> {
    let Value::Object(members) = document else {
        return Err("no columns: the result is not an object with an ids column".into());
    };
    let ids = match first_row(members, "ids")? {
        Some(ids) => ids,
        // An empty outer list: no query row, so no hit.
        None if members.get("ids").is_some_and(Value::is_array) => return Ok(Vec::new()),
        None => return Err("no columns: the result has no ids column".into()),
    };
    let rows: Vec<(&str, Option<&Vec<Value>>)> = COLUMNS
        .iter()
        .map(|(column, member)| Ok((*member, first_row(members, column)?)))
        .collect::<Result<_, String>>()?;
    for (column, row) in COLUMNS.iter().zip(&rows) {
        if let Some(row) = row.1
            && row.len() < ids.len()
        {
            return Err(format!(
                "the {} column has {} items for {} ids",
                column.0,
                row.len(),
                ids.len()
            ));
        }
    }
    let hits = ids
        .iter()
        .take(limit)
        .enumerate()
        .map(|(index, id)| {
            let mut hit = Map::new();
            hit.insert("id".into(), id.clone());
            for (member, row) in &rows {
                if let Some(row) = row {
                    hit.insert((*member).into(), row[index].clone());
                }
            }
            Value::Object(hit)
        })
        .collect();
    Ok(hits)
}

/// The first row of column `name`: `None` when the column is absent or null (or its outer list is
/// empty, as for no query); an error when it is not a list of lists.
fn first_row<'a>(
    members: &'a Map<String, Value>,
    name: &str,
) -> Result<Option<&'a Vec<Value>>, String> {
    match members.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(rows)) => match rows.first() {
            None => Ok(None),
            Some(Value::Array(row)) => Ok(Some(row)),
            Some(Value::Null) => Ok(None),
            Some(_) => Err(format!("the {name} column is not a list of lists")),
        },
        Some(_) => Err(format!("the {name} column is not a list of lists")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_shape_is_named_and_an_unknown_one_is_refused() {
        for (shape, name) in Shape::ALL {
            assert_eq!(Shape::parse(name), Ok(shape));
            assert_eq!(shape.name(), name);
        }
        assert_eq!(
            Shape::parse("xml").unwrap_err(),
            "shape must be one of json, text_entries, columns, got \"xml\""
        );
    }

    #[test]
    fn entries_are_the_blocks_after_the_header() {
        let texts = [
            "Results for the query 'xavier'",
            "<entry><content>Xavier runs JetPack 5</content><metadata>{\"rack\": 2}</metadata></entry>",
            " <entry><content>a </content><metadata> inside</content><metadata></metadata></entry>\n",
            "<entry><content>third</content><metadata>{}</metadata></entry>",
        ];
        let hits = entries(&texts, 10).unwrap();
        assert_eq!(hits.len(), 3);
        assert_eq!(hits[0]["content"], "Xavier runs JetPack 5");
        assert_eq!(hits[0]["metadata"], json!({"rack": 2}));
        assert_eq!(hits[0]["id"], content_id("Xavier runs JetPack 5"));
        // The content runs to the last separator; an empty metadata part is none.
        assert_eq!(hits[1]["content"], "a </content><metadata> inside");
        assert_eq!(hits[1]["metadata"], json!({}));
        // The limit stops the read; a header alone is no hit.
        assert_eq!(entries(&texts, 1).unwrap().len(), 1);
        assert!(
            entries(&["No information found for the query 'x'"], 10)
                .unwrap()
                .is_empty()
        );
        assert!(entries(&[], 10).unwrap().is_empty());
    }

    #[test]
    fn one_block_holding_a_list_of_strings_is_read_as_blocks() {
        let list = r#"[
  "Results for the query 'xavier'",
  "<entry><content>Xavier runs JetPack 5</content><metadata>{\"rack\": 2}</metadata></entry>",
  "<entry><content>second</content><metadata></metadata></entry>"
]"#;
        let hits = entries(&[list], 10).unwrap();
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0]["content"], "Xavier runs JetPack 5");
        assert_eq!(hits[0]["id"], content_id("Xavier runs JetPack 5"));
        let broken = r#"["header", "<entry><content>x<metadata>{}</metadata></entry>"]"#;
        assert_eq!(
            entries(&[broken], 10).unwrap_err(),
            "the text block's list item at index 1 has no </content><metadata> between its parts"
        );
        // A list of something else is not a list of texts: one block, a header, no hit.
        assert!(entries(&["[1, 2]"], 10).unwrap().is_empty());
    }

    #[test]
    fn an_id_is_a_stable_hash_of_the_content() {
        // SHA-256("abc") begins ba7816bf8f01cfea: the id must never change between releases.
        assert_eq!(content_id("abc"), "ba7816bf8f01cfea");
        assert_eq!(content_id("abc"), content_id("abc"));
        assert_ne!(content_id("abc"), content_id("abd"));
    }

    #[test]
    fn a_malformed_entry_is_named_by_its_block() {
        for (block, expected) in [
            (
                "plain text",
                "the text block at index 1 does not start with <entry><content>",
            ),
            (
                "<entry><content>x</content><metadata>{}</metadata>",
                "the text block at index 1 does not end with </metadata></entry>",
            ),
            (
                "<entry><content>x</metadata></entry>",
                "the text block at index 1 has no </content><metadata> between its parts",
            ),
            (
                "<entry><content>x</content><metadata>{secret</metadata></entry>",
                "the text block at index 1 has metadata that is not JSON (column 2)",
            ),
            (
                "<entry><content>x</content><metadata>[1]</metadata></entry>",
                "the text block at index 1 has metadata that is not a JSON object",
            ),
        ] {
            assert_eq!(
                entries(&["header", block], 10).unwrap_err(),
                expected,
                "{block}"
            );
        }
    }

    #[test]
    fn columns_zip_the_first_row() {
        let document = json!({
            "ids": [["a", "b", "c"]],
            "documents": [["first", "second", null]],
            "metadatas": [[{"source": "x"}, null, {"source": "z"}]],
            "distances": [[0.1, 0.25, 0.5]],
            "embeddings": null,
            "included": ["documents", "metadatas", "distances"],
        });
        let hits = columns(&document, 10).unwrap();
        assert_eq!(
            hits[0],
            json!({"id": "a", "document": "first", "metadata": {"source": "x"}, "distance": 0.1})
        );
        assert_eq!(hits[2]["document"], Value::Null);
        assert_eq!(columns(&document, 2).unwrap().len(), 2);
        // Columns left out of `include` are left out of the hits.
        let ids_only = columns(&json!({"ids": [["a"]], "documents": null}), 10).unwrap();
        assert_eq!(ids_only, vec![json!({"id": "a"})]);
        // No query row is no hit.
        assert!(columns(&json!({"ids": []}), 10).unwrap().is_empty());
    }

    #[test]
    fn malformed_columns_are_named() {
        for (document, expected) in [
            (
                json!([1]),
                "no columns: the result is not an object with an ids column",
            ),
            (
                json!({"documents": [["x"]]}),
                "no columns: the result has no ids column",
            ),
            (
                json!({"ids": ["a"]}),
                "the ids column is not a list of lists",
            ),
            (
                json!({"ids": [["a", "b"]], "documents": [["x"]]}),
                "the documents column has 1 items for 2 ids",
            ),
            (
                json!({"ids": [["a"]], "distances": 0.5}),
                "the distances column is not a list of lists",
            ),
        ] {
            assert_eq!(columns(&document, 10).unwrap_err(), expected, "{document}");
        }
    }
}
