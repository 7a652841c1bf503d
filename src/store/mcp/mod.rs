//! `mcp`: a store that is one tool of an MCP server (contract §1 `mcp`).
//!
//! The callosum calls the tool with the query (and, when the tool takes one, the number of hits
//! it wants) and reads the tool's result as a ranked list: [`map`] says how (JSON pointers and
//! `{pointer}` templates, pure), [`client`] keeps the session (a spawned server over stdio, or a
//! server over streamable HTTP), and [`preset`] holds the mappings of servers we know.
//!
//! [`Spec`] (`spec.rs`) is the checked form of an entry's mapping keys; this module reads an
//! entry's keys into one, over the preset it names. The config file checks it at load, so a bad
//! pointer stops the start naming the store and the key; `POST /stores` checks it too.

pub mod client;
pub mod http;
pub mod map;
pub mod preset;
pub mod shape;
mod spec;
mod stdout;

pub use client::{McpStore, Probe, ToolCheck};
pub use spec::Spec;

use super::protocol::{Options, Reach, StoreType};
use crate::config::StoreKind;
use map::{Mapping, Pointer, Template};
use serde_json::{Map, Value};
use shape::Shape;

pub const TYPE: StoreType = StoreType {
    name: StoreKind::Mcp.name(),
    options: &[
        "preset",
        "tool",
        "query_arg",
        "query_list",
        "limit_arg",
        "limit_max",
        "arguments",
        "shape",
        "hits",
        "id",
        "content",
        "score",
        "distance",
    ],
    reach: Reach::Mcp,
};

impl Spec {
    /// Reads an entry's mapping keys (its `options`), a preset's defaults under them. An error
    /// names the key and what is wrong with it.
    pub fn parse(options: &Map<String, Value>) -> Result<Spec, String> {
        refuse_nul(options)?;
        let given = Given::read(options)?;
        let tool = given.text("tool", |p| Some(p.tool))?.ok_or_else(|| {
            format!(
                "tool is required (the MCP tool to call), or a preset: {}",
                preset::names().join(", ")
            )
        })?;
        Ok(Spec {
            tool,
            query_arg: (given.text("query_arg", |p| Some(p.query_arg))?).unwrap_or("query".into()),
            query_list: given.query_list()?,
            limit_arg: given.text("limit_arg", |p| p.limit_arg)?,
            limit_max: given.limit_max()?,
            arguments: given.arguments()?,
            mapping: given.mapping()?,
        })
    }
}

/// A NUL is text no MCP server names a tool or an argument with, and a PostgreSQL overlay cannot
/// store: refused here, naming the key, rather than failing later (or as a 500).
fn refuse_nul(options: &Map<String, Value>) -> Result<(), String> {
    match TYPE
        .options
        .iter()
        .find(|key| options.get(**key).is_some_and(holds_nul))
    {
        Some(key) => Err(format!("{key} must not contain a NUL character (\\u0000)")),
        None => Ok(()),
    }
}

/// An entry's mapping keys as given, over the preset it names (if any).
struct Given<'a> {
    read: Options<'a>,
    preset: Option<&'static preset::Preset>,
}

impl<'a> Given<'a> {
    /// The entry's keys and the preset its `preset` key names; an unknown preset is refused.
    fn read(options: &'a Map<String, Value>) -> Result<Self, String> {
        let read = Options(options);
        let preset = match read.text("preset")? {
            None => None,
            Some(name) => Some(preset::find(&name)?),
        };
        Ok(Self { read, preset })
    }

    /// A text key, else the preset's value (`from_preset` picks it). A blank value is no value: it
    /// leaves the preset's (a form's empty field must not replace a preset's `/hits` with the
    /// whole result).
    fn text(
        &self,
        key: &str,
        from_preset: impl Fn(&preset::Preset) -> Option<&'static str>,
    ) -> Result<Option<String>, String> {
        let given = self.read.text(key)?.filter(|text| !text.trim().is_empty());
        Ok(given.or_else(|| self.preset.and_then(from_preset).map(str::to_owned)))
    }

    /// `limit_max`: a whole number >= 1, else the preset's.
    fn limit_max(&self) -> Result<Option<usize>, String> {
        match self.read.0.get("limit_max") {
            None | Some(Value::Null) => Ok(self.preset.and_then(|p| p.limit_max)),
            Some(value) => value
                .as_u64()
                .filter(|n| *n >= 1)
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| format!("limit_max must be a whole number >= 1, got {value}")),
        }
    }

    /// `query_list`: true or false, else the preset's.
    fn query_list(&self) -> Result<bool, String> {
        let preset = self.preset.is_some_and(|p| p.query_list);
        self.read.flag("query_list", preset)
    }

    /// `arguments`: the preset's fixed arguments, each one the entry gives over it.
    fn arguments(&self) -> Result<Map<String, Value>, String> {
        let mut arguments = self.preset.map_or_else(Map::new, preset::Preset::arguments);
        match self.read.0.get("arguments") {
            None | Some(Value::Null) => {}
            Some(Value::Object(given)) => arguments.extend(given.clone()),
            Some(other) => return Err(format!("arguments must be a mapping, got {other}")),
        }
        Ok(arguments)
    }

    /// `shape`, else the preset's, else `json`.
    fn shape(&self) -> Result<Shape, String> {
        match self
            .read
            .text("shape")?
            .filter(|text| !text.trim().is_empty())
        {
            Some(text) => Shape::parse(text.trim()),
            None => Ok(self.preset.map_or(Shape::Json, |p| p.shape)),
        }
    }

    /// A key that holds a JSON pointer, else the preset's; an error names the key.
    fn pointer(
        &self,
        key: &str,
        from_preset: impl Fn(&preset::Preset) -> Option<&'static str>,
    ) -> Result<Option<Pointer>, String> {
        (self.text(key, from_preset)?)
            .map(|text| Pointer::parse(&text).map_err(|why| format!("{key}: {why}")))
            .transpose()
    }

    /// How the result becomes hits: `shape`, `hits`, `id`, `content`, `score`, `distance`.
    fn mapping(&self) -> Result<Mapping, String> {
        let shape = self.shape()?;
        let hits = self.pointer("hits", |p| p.hits)?;
        let id = (self.pointer("id", |p| Some(p.id))?)
            .unwrap_or_else(|| Pointer::parse("/id").expect("a valid pointer"));
        let content = (self.text("content", |p| Some(p.content))?)
            .unwrap_or_else(|| shape.default_content().into());
        let content = Template::parse(&content).map_err(|why| format!("content: {why}"))?;
        let score = self.pointer("score", |p| p.score)?;
        let distance = (self.pointer("distance", |_| None)?).or_else(|| {
            let default = shape.default_distance()?;
            Some(Pointer::parse(default).expect("a valid pointer"))
        });
        Ok(Mapping {
            shape,
            hits,
            id,
            content,
            score,
            distance,
        })
    }
}

/// Whether a NUL is anywhere in `value`: a string, or a key or string inside it.
fn holds_nul(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(members) => members
            .iter()
            .any(|(key, value)| key.contains('\0') || holds_nul(value)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(options: Value) -> Result<Spec, String> {
        Spec::parse(options.as_object().unwrap())
    }

    #[test]
    fn a_preset_fills_defaults_and_every_key_overrides_it() {
        let graph = spec(json!({"preset": "server-memory"})).unwrap();
        assert_eq!(graph.tool, "search_nodes");
        assert_eq!(graph.mapping.hits.as_ref().unwrap().as_str(), "/entities");
        assert_eq!(graph.mapping.id.as_str(), "/name");
        assert_eq!(graph.limit_arg, None);
        let custom =
            spec(json!({"preset": "server-memory", "id": "/entityType", "tool": "open_nodes"}))
                .unwrap();
        assert_eq!(custom.tool, "open_nodes");
        assert_eq!(custom.mapping.id.as_str(), "/entityType");
        assert_eq!(custom.mapping.content, graph.mapping.content);
        // A blank key keeps the preset's value.
        let blank = spec(json!({"preset": "callosum", "tool": "", "hits": " "})).unwrap();
        assert_eq!(blank.tool, "search");
        assert_eq!(blank.mapping.hits.unwrap().as_str(), "/hits");
    }

    #[test]
    fn defaults_without_a_preset() {
        let plain = spec(json!({"tool": "find"})).unwrap();
        assert_eq!(plain.query_arg, "query");
        assert_eq!(plain.limit_arg, None);
        assert_eq!(plain.mapping.hits, None);
        assert_eq!(plain.mapping.id.as_str(), "/id");
        assert_eq!(plain.mapping.content.as_str(), "/content");
        assert_eq!(plain.mapping.score, None);
        assert_eq!(
            plain.arguments("q", 7),
            *json!({"query": "q"}).as_object().unwrap()
        );
    }

    #[test]
    fn the_query_and_limit_go_over_fixed_arguments_and_the_limit_is_capped() {
        let recall = spec(json!({
            "preset": "seren-memory",
            "arguments": {"query": "fixed", "include_long": false, "n_results": 3}
        }))
        .unwrap();
        assert_eq!(
            recall.arguments("what now", 120),
            *json!({"query": "what now", "include_long": false, "n_results": 50})
                .as_object()
                .unwrap()
        );
    }

    #[test]
    fn the_new_presets_read_their_servers_shapes_and_take_a_scope() {
        let chroma =
            spec(json!({"preset": "chroma-mcp", "arguments": {"collection_name": "lab"}})).unwrap();
        assert_eq!(chroma.mapping.shape, Shape::Columns);
        assert_eq!(chroma.mapping.content.as_str(), "/document");
        assert_eq!(
            chroma.mapping.distance.as_ref().unwrap().as_str(),
            "/distance"
        );
        assert_eq!(
            chroma.arguments("xavier", 4),
            *json!({"collection_name": "lab", "query_texts": ["xavier"], "n_results": 4})
                .as_object()
                .unwrap()
        );
        let notes =
            spec(json!({"preset": "basic-memory", "arguments": {"project": "work"}})).unwrap();
        assert_eq!(
            notes.arguments("x", 3),
            *json!({"output_format": "json", "project": "work", "query": "x", "page_size": 3})
                .as_object()
                .unwrap()
        );
        // The entry's arguments win over the preset's.
        let text = spec(json!({"preset": "basic-memory", "arguments": {"output_format": "text"}}))
            .unwrap();
        assert_eq!(text.arguments("x", 3)["output_format"], "text");
        let qdrant = spec(json!({"preset": "mcp-server-qdrant"})).unwrap();
        assert_eq!(qdrant.mapping.shape, Shape::TextEntries);
        assert_eq!(qdrant.limit_arg, None);
        // A shape given over a preset's wins; the default content follows the shape.
        let plain = spec(json!({"tool": "q", "shape": "columns"})).unwrap();
        assert_eq!(plain.mapping.content.as_str(), "/document");
    }

    #[test]
    fn a_wrong_value_names_its_key() {
        let cases = [
            (
                json!({}),
                "tool is required (the MCP tool to call), or a preset: server-memory, seren-loci, seren-memory, callosum, basic-memory, mcp-server-qdrant, chroma-mcp, graphiti-facts, graphiti-nodes, mem0",
            ),
            (json!({"tool": "  "}), "tool is required"),
            (
                json!({"preset": "neo4j"}),
                "unknown preset 'neo4j'; known presets: server-memory, seren-loci, seren-memory, callosum, basic-memory, mcp-server-qdrant, chroma-mcp, graphiti-facts, graphiti-nodes, mem0",
            ),
            (json!({"tool": "t", "hits": "entities"}), "hits: "),
            (json!({"tool": "t", "id": "/a~2"}), "id: "),
            (json!({"tool": "t", "content": "{/name"}), "content: "),
            (
                json!({"tool": "t", "score": 5}),
                "score must be a string, got 5",
            ),
            (
                json!({"tool": "t", "arguments": [1]}),
                "arguments must be a mapping, got [1]",
            ),
            (
                json!({"tool": "t", "limit_max": 0}),
                "limit_max must be a whole number >= 1, got 0",
            ),
            (json!({"tool": 7}), "tool must be a string, got 7"),
            (
                json!({"tool": "t", "shape": "xml"}),
                "shape must be one of json, text_entries, columns, got \"xml\"",
            ),
            (
                json!({"tool": "t", "shape": 3}),
                "shape must be a string, got 3",
            ),
            (
                json!({"tool": "t", "query_list": "yes"}),
                "query_list must be",
            ),
            (json!({"tool": "t", "distance": "d"}), "distance: "),
            (
                json!({"tool": "find\0"}),
                "tool must not contain a NUL character (\\u0000)",
            ),
            (
                json!({"preset": "callosum", "arguments": {"scope": ["a", "b\0"]}}),
                "arguments must not contain a NUL",
            ),
        ];
        for (options, expected) in cases {
            let error = spec(options.clone()).unwrap_err();
            assert!(error.starts_with(expected), "{options}: {error}");
        }
    }
}
