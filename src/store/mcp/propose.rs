//! `seren-corpus-callosum propose`: the mapping of an MCP server nobody has written one for,
//! guessed from what the server says of itself and proved by one search.
//!
//! 1. [`pick_tool`]: the search-like tool among those `tools/list` gives (by its name and a
//!    query-like argument), its query, limit and required arguments from its input schema, and a
//!    `json` value for an output-format argument that offers one.
//! 2. One test call with the query the user gives.
//! 3. [`read_result`]: the result's shape (an `<entry>` text block per hit, column-major JSON, or
//!    a JSON hit array, found in the structured content or the first text block), the hit array's
//!    place, and the id, content and score members of its hits (from the first hits, else from
//!    the tool's `outputSchema`).
//! 4. The entry is parsed back as any config entry is, and reads the test answer: the hit count
//!    and the first hit are printed with it, so what is pasted is what was proved.
//!
//! Every guess is bounded by what the server sent: the names looked at are those of one tool's
//! schema and of the first [`SAMPLE`] hits, and the search for a hit array goes [`DEPTH`] levels
//! down. The notes quote the server's own names, cut short, never its values beyond the first
//! hit's content (the user asked for it).

use super::Spec;
use super::client::{self, Link, Probe};
use super::shape::Shape;
use crate::text::cut;
use rmcp::model::{CallToolResult, Tool};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// How many hits are looked at for their members.
const SAMPLE: usize = 10;
/// How deep a hit array is looked for in the result document.
const DEPTH: usize = 3;

/// Tool name words that say "search", strongest first.
const SEARCH_WORDS: &[&str] = &["search", "find", "query", "recall", "retrieve", "lookup"];
/// Tool name words of tools that change the store: never picked without `--tool`.
const WRITE_WORDS: &[&str] = &[
    "add", "create", "delete", "remove", "update", "write", "store", "insert", "save", "edit",
    "upsert", "set",
];
/// Argument names that carry the query, best first.
const QUERY_ARGS: &[&str] = &[
    "query",
    "query_texts",
    "queries",
    "q",
    "search_query",
    "text",
    "question",
    "search",
];
/// Argument names that carry the number of hits wanted, best first.
const LIMIT_ARGS: &[&str] = &[
    "n_results",
    "limit",
    "max_results",
    "max_facts",
    "max_nodes",
    "top_k",
    "page_size",
    "k",
    "num_results",
    "count",
];
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

/// What `propose` is pointed at.
#[derive(Debug, Clone)]
pub struct Target {
    /// The store's name in the printed entry (the server's own name when not given).
    pub name: Option<String>,
    pub link: Link,
    /// The endpoint's keys as they are printed (`command`, `args`, `env` or `url`, `token_env`).
    pub endpoint: Vec<(&'static str, Value)>,
    /// The tool to use, when the user names it.
    pub tool: Option<String>,
    /// Fixed arguments the user gives (a scope: a collection, a project, a group).
    pub arguments: Map<String, Value>,
}

/// One key of the proposed entry and what was guessed to write it.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub key: &'static str,
    pub value: Value,
    /// Why this value, when it was guessed ("" when it was given).
    pub why: String,
}

/// The tool picked, and how it is called.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub keys: Vec<Key>,
    pub tool: String,
    pub query_arg: String,
    pub query_list: bool,
    pub limit_arg: Option<String>,
    /// The fixed arguments: the user's, then the ones guessed.
    pub arguments: Map<String, Value>,
}

impl Call {
    /// The arguments of the test call.
    pub fn test_arguments(&self, query: &str, n: usize) -> Map<String, Value> {
        let mut arguments = self.arguments.clone();
        let query = match self.query_list {
            true => json!([query]),
            false => json!(query),
        };
        arguments.insert(self.query_arg.clone(), query);
        if let Some(limit) = &self.limit_arg {
            arguments.insert(limit.clone(), json!(n));
        }
        arguments
    }
}

/// A proposed entry, proved on one search.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub name: String,
    pub keys: Vec<Key>,
    /// How many hits the entry read from the test answer, and the first one's content.
    pub hits: usize,
    pub first: Option<String>,
    /// What else is worth knowing (other search-like tools, a score left out, ...).
    pub notes: Vec<String>,
}

/// Opens the server, picks its search tool, calls it once for `query` and proposes the entry.
pub async fn propose(
    target: &Target,
    query: &str,
    n: usize,
    timeout: Duration,
) -> Result<Proposal, String> {
    let shown = target.name.as_deref().unwrap_or("proposed");
    let probe = Probe::open(shown, &target.link, timeout + crate::limits::MCP_START_WAIT)
        .await
        .map_err(|why| format!("the server gave no session: {why}"))?;
    let name = match &target.name {
        Some(name) => name.clone(),
        None => store_name(probe.server_name().as_deref()),
    };
    let (call, mut notes) = pick_tool(probe.tools(), target.tool.as_deref(), &target.arguments)?;
    let tool = probe.tools().iter().find(|t| t.name == call.tool);
    let output_schema = tool.and_then(|t| t.output_schema.as_deref());
    let result = probe
        .call(&call.tool, call.test_arguments(query, n), timeout)
        .await
        .map_err(|why| format!("the test call of {} failed: {why}", call.tool))?;
    let reading = read_result(&result, output_schema.map(|o| o as &Map<String, Value>))?;
    notes.extend(reading.notes);
    let mut keys: Vec<Key> = target
        .endpoint
        .iter()
        .map(|(key, value)| Key {
            key,
            value: value.clone(),
            why: String::new(),
        })
        .collect();
    keys.extend(call.keys);
    keys.extend(reading.keys);
    let options: Map<String, Value> = keys
        .iter()
        .filter(|key| !target.endpoint.iter().any(|(k, _)| k == &key.key))
        .map(|key| (key.key.to_owned(), key.value.clone()))
        .collect();
    // The proof: the entry as the config reads it, reading the answer the server gave.
    let spec =
        Spec::parse(&options).map_err(|why| format!("the proposed entry is refused: {why}"))?;
    let hits = client::read(&result, &spec.mapping, n)
        .map_err(|why| format!("the proposed entry cannot read the test answer: {why}"))?;
    Ok(Proposal {
        name,
        keys,
        hits: hits.len(),
        first: hits.first().map(|hit| cut(&hit.content, 80)),
        notes,
    })
}

/// A store name from the server's own name: the config's name characters, else `mcp`.
pub fn store_name(server: Option<&str>) -> String {
    let name: String = server
        .unwrap_or_default()
        .trim()
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '_' | '-' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .take(64)
        .collect();
    let name = name.trim_matches('-').to_owned();
    if name.is_empty() { "mcp".into() } else { name }
}

/// The search-like tool (or the one named), and its query, limit and fixed arguments, with the
/// notes on what else could have been picked.
pub fn pick_tool(
    tools: &[Tool],
    wanted: Option<&str>,
    given: &Map<String, Value>,
) -> Result<(Call, Vec<String>), String> {
    let mut notes = Vec::new();
    let names = || {
        tools
            .iter()
            .take(40)
            .map(|t| cut(&t.name, 40))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (tool, why) = match wanted {
        Some(wanted) => match tools.iter().find(|t| t.name == wanted) {
            Some(tool) => (tool, String::new()),
            None => {
                return Err(format!(
                    "the server lists no tool '{}'; it has: {}",
                    cut(wanted, 40),
                    names()
                ));
            }
        },
        None => {
            let mut ranked: Vec<(u32, &Tool)> = tools
                .iter()
                .filter_map(|tool| Some((search_rank(tool)?, tool)))
                .collect();
            // Stable: among equals the server's first.
            ranked.sort_by_key(|(rank, _)| std::cmp::Reverse(*rank));
            let Some((_, tool)) = ranked.first() else {
                return Err(format!(
                    "no tool looks like a search (a name with search, find, query, recall or \
                     retrieve and a query argument); name one with --tool. The server has: {}",
                    names()
                ));
            };
            if ranked.len() > 1 {
                let others: Vec<String> = ranked[1..]
                    .iter()
                    .take(8)
                    .map(|(_, t)| cut(&t.name, 40))
                    .collect();
                notes.push(format!(
                    "also search-like: {} (--tool picks another)",
                    others.join(", ")
                ));
            }
            (
                *tool,
                "guessed: its name says search and it takes a query".into(),
            )
        }
    };
    let properties = properties(&tool.input_schema);
    let required = required(&tool.input_schema);
    let Some((query_arg, query_list)) = query_argument(&properties) else {
        return Err(format!(
            "the tool {} takes no query-like argument ({}); its arguments: {}",
            cut(&tool.name, 40),
            QUERY_ARGS.join(", "),
            argument_names(&properties)
        ));
    };
    let limit_arg = LIMIT_ARGS
        .iter()
        .find(|name| properties.get(**name).is_some_and(is_number))
        .map(|name| (*name).to_owned());
    let mut arguments = given.clone();
    let mut guessed_arguments = Vec::new();
    for (name, schema) in &properties {
        let format_like = name.contains("format");
        if format_like && !arguments.contains_key(name) && offers(schema, "json") {
            arguments.insert(name.clone(), json!("json"));
            guessed_arguments.push(format!("{name} offers \"json\""));
        }
    }
    let missing: Vec<&str> = required
        .iter()
        .map(String::as_str)
        .filter(|name| *name != query_arg && Some(*name) != limit_arg.as_deref())
        .filter(|name| !arguments.contains_key(*name))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the tool {} requires {} with no default: give each with --arg NAME=VALUE (a collection, \
             a project, a group: the entry's `arguments`)",
            cut(&tool.name, 40),
            missing.join(", ")
        ));
    }
    let mut keys = vec![
        Key {
            key: "tool",
            value: json!(tool.name),
            why,
        },
        Key {
            key: "query_arg",
            value: json!(query_arg),
            why: format!(
                "its argument {query_arg} is {}",
                describe(&properties[&query_arg])
            ),
        },
    ];
    if query_list {
        keys.push(Key {
            key: "query_list",
            value: json!(true),
            why: format!("{query_arg} takes a list: the query goes as a list of one"),
        });
    }
    match &limit_arg {
        Some(limit) => keys.push(Key {
            key: "limit_arg",
            value: json!(limit),
            why: format!("its number argument {limit}"),
        }),
        None => notes
            .push("no limit argument found: the callosum cuts the tool's answer to the ask".into()),
    }
    if !arguments.is_empty() {
        let why = match guessed_arguments.is_empty() {
            true => String::new(),
            false => format!("guessed: {}", guessed_arguments.join(", ")),
        };
        keys.push(Key {
            key: "arguments",
            value: Value::Object(arguments.clone()),
            why,
        });
    }
    let call = Call {
        keys,
        tool: tool.name.to_string(),
        query_arg,
        query_list,
        limit_arg,
        arguments,
    };
    Ok((call, notes))
}

/// How search-like a tool is: `None` for a tool that changes the store or has no query.
fn search_rank(tool: &Tool) -> Option<u32> {
    let name = tool.name.to_ascii_lowercase();
    let words: Vec<&str> = name.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    if words.iter().any(|w| WRITE_WORDS.contains(w)) {
        return None;
    }
    let by_name = SEARCH_WORDS
        .iter()
        .position(|word| words.contains(word) || name.contains(word))?;
    let properties = properties(&tool.input_schema);
    let (query_arg, _) = query_argument(&properties)?;
    let by_query = QUERY_ARGS.iter().position(|a| *a == query_arg).unwrap_or(9);
    Some(100 - 10 * by_name as u32 - by_query as u32)
}

fn properties(schema: &Map<String, Value>) -> Map<String, Value> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn required(schema: &Map<String, Value>) -> Vec<String> {
    let names = schema.get("required").and_then(Value::as_array);
    names
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .take(64)
        .map(str::to_owned)
        .collect()
}

/// The query argument and whether it takes a list.
fn query_argument(properties: &Map<String, Value>) -> Option<(String, bool)> {
    QUERY_ARGS.iter().find_map(|name| {
        let schema = properties.get(*name)?;
        let types = types(schema);
        if types.iter().any(|t| t == "string") || types.is_empty() {
            Some(((*name).to_owned(), false))
        } else if types.iter().any(|t| t == "array") {
            Some(((*name).to_owned(), true))
        } else {
            None
        }
    })
}

/// The JSON types a property schema allows: `type` (a name or a list), and those of its
/// `anyOf`/`oneOf` branches, one level down.
fn types(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut add = |schema: &Value| match schema.get("type") {
        Some(Value::String(t)) => found.push(t.clone()),
        Some(Value::Array(ts)) => {
            found.extend(ts.iter().filter_map(Value::as_str).map(str::to_owned))
        }
        _ => {}
    };
    add(schema);
    for branches in ["anyOf", "oneOf"] {
        for branch in schema
            .get(branches)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            add(branch);
        }
    }
    found
}

fn is_number(schema: &Value) -> bool {
    types(schema)
        .iter()
        .any(|t| t == "integer" || t == "number")
}

/// Whether a property offers `value` among its `enum` or `const` values (one level of branches).
fn offers(schema: &Value, value: &str) -> bool {
    let has = |schema: &Value| {
        schema.get("const").and_then(Value::as_str) == Some(value)
            || (schema.get("enum").and_then(Value::as_array))
                .is_some_and(|values| values.iter().any(|v| v.as_str() == Some(value)))
    };
    has(schema)
        || ["anyOf", "oneOf"].iter().any(|key| {
            (schema.get(*key).and_then(Value::as_array))
                .is_some_and(|branches| branches.iter().any(has))
        })
}

fn describe(schema: &Value) -> String {
    match types(schema).as_slice() {
        [] => "untyped".into(),
        types => format!("a {}", types.join(" or ")),
    }
}

fn argument_names(properties: &Map<String, Value>) -> String {
    let names: Vec<String> = properties.keys().take(20).map(|k| cut(k, 40)).collect();
    match names.is_empty() {
        true => "none".into(),
        false => names.join(", "),
    }
}

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

impl Proposal {
    /// The entry as YAML lines to paste under `federation: stores:`, with what was guessed in comments.
    /// Every value is written as JSON, which YAML reads as it is, so no text of the server's
    /// can break the block.
    pub fn yaml(&self, query: &str) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# Proposed by `seren-corpus-callosum propose` from a test search for {}:",
            json!(cut(query, 60))
        );
        let first = self.first.as_ref().map_or(String::new(), |first| {
            format!(", the first: {}", json!(first))
        });
        let _ = writeln!(
            out,
            "# this entry read {} hits of its answer{first}.",
            self.hits
        );
        for note in &self.notes {
            let _ = writeln!(out, "# {note}");
        }
        let _ = writeln!(
            out,
            "# Paste it under `federation: stores:`; lines marked guessed are worth a look."
        );
        let _ = writeln!(out, "    - name: {}", self.name);
        let _ = writeln!(out, "      type: mcp");
        for key in &self.keys {
            let line = format!("      {}: {}", key.key, key.value);
            match key.why.is_empty() {
                true => {
                    let _ = writeln!(out, "{line}");
                }
                false => {
                    let _ = writeln!(out, "{line:<44} # {}", key.why);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(value: Value) -> Tool {
        serde_json::from_value(value).expect("a tool")
    }

    fn tools() -> Vec<Tool> {
        vec![
            tool(
                json!({"name": "write_note", "inputSchema": {"type": "object", "properties": {
                "title": {"type": "string"}, "content": {"type": "string"}}}}),
            ),
            tool(
                json!({"name": "search_notes", "inputSchema": {"type": "object",
                "required": ["query"], "properties": {
                "query": {"type": "string"},
                "page_size": {"type": "integer", "default": 10},
                "output_format": {"enum": ["text", "json"], "default": "text"},
                "project": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}}),
            ),
            tool(
                json!({"name": "find_by_tag", "inputSchema": {"type": "object", "properties": {
                "q": {"type": "string"}}}}),
            ),
        ]
    }

    fn value_of<'a>(keys: &'a [Key], key: &str) -> Option<&'a Value> {
        keys.iter().find(|k| k.key == key).map(|k| &k.value)
    }

    #[test]
    fn the_search_tool_is_picked_by_name_and_query_and_asks_for_json() {
        let (call, notes) = pick_tool(&tools(), None, &Map::new()).expect("a tool");
        assert_eq!(call.tool, "search_notes");
        assert_eq!(call.query_arg, "query");
        assert_eq!(call.limit_arg.as_deref(), Some("page_size"));
        assert_eq!(
            call.arguments,
            json!({"output_format": "json"})
                .as_object()
                .cloned()
                .unwrap()
        );
        assert_eq!(
            Value::Object(call.test_arguments("xavier", 5)),
            json!({"output_format": "json", "query": "xavier", "page_size": 5})
        );
        assert_eq!(
            notes,
            ["also search-like: find_by_tag (--tool picks another)"]
        );
    }

    #[test]
    fn a_named_tool_a_list_query_and_a_missing_scope() {
        let chroma = vec![tool(
            json!({"name": "chroma_query_documents", "inputSchema": {
            "type": "object", "required": ["collection_name", "query_texts"], "properties": {
            "collection_name": {"type": "string"},
            "query_texts": {"type": "array", "items": {"type": "string"}},
            "n_results": {"type": "integer", "default": 5}}}}),
        )];
        let why = pick_tool(&chroma, None, &Map::new()).expect_err("a scope is missing");
        assert!(
            why.contains("requires collection_name with no default"),
            "{why}"
        );
        let given = json!({"collection_name": "lab"})
            .as_object()
            .cloned()
            .unwrap();
        let (call, _) = pick_tool(&chroma, Some("chroma_query_documents"), &given).expect("a tool");
        assert!(call.query_list);
        assert_eq!(
            Value::Object(call.test_arguments("q", 3)),
            json!({"collection_name": "lab", "query_texts": ["q"], "n_results": 3})
        );
        let why = pick_tool(&chroma, Some("nope"), &given).expect_err("no such tool");
        assert_eq!(
            why,
            "the server lists no tool 'nope'; it has: chroma_query_documents"
        );
        let why = pick_tool(&tools()[..1], None, &Map::new()).expect_err("no search tool");
        assert!(why.starts_with("no tool looks like a search"), "{why}");
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

    #[test]
    fn a_store_name_is_made_from_the_servers() {
        assert_eq!(store_name(Some("Basic Memory")), "basic-memory");
        assert_eq!(store_name(Some("  ")), "mcp");
        assert_eq!(store_name(None), "mcp");
    }
}
