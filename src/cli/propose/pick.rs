//! Which tool `propose` calls, and how: the search-like tool among those `tools/list` gives (by
//! its name and a query-like argument), its query, limit and required arguments from its input
//! schema, and a `json` value for an output-format argument that offers one.

use crate::text::cut;
use rmcp::model::Tool;
use serde_json::{Map, Value, json};

/// One key of the proposed entry and what was guessed to write it.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub key: &'static str,
    pub value: Value,
    /// Why this value, when it was guessed ("" when it was given).
    pub why: String,
}

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
pub(super) fn types(schema: &Value) -> Vec<String> {
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
}
