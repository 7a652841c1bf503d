//! The mapping defaults of MCP servers we know, so the common case is three lines of YAML. A
//! preset only fills defaults: every key of the entry still wins over it; its fixed `arguments`
//! sit under the entry's, so a scope (a collection, a project, a group) is the entry's to give.

use super::shape::Shape;
use serde_json::{Map, Value};

/// One known server's tool and mapping.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Preset {
    pub name: &'static str,
    pub tool: &'static str,
    pub query_arg: &'static str,
    /// The query goes as a list of one (chroma-mcp's `query_texts`).
    pub query_list: bool,
    pub limit_arg: Option<&'static str>,
    pub limit_max: Option<usize>,
    pub hits: Option<&'static str>,
    pub id: &'static str,
    pub content: &'static str,
    pub score: Option<&'static str>,
    pub shape: Shape,
    /// Fixed arguments, as a JSON object's text (`{}` for none).
    pub arguments: &'static str,
}

impl Preset {
    /// The preset's fixed arguments.
    pub fn arguments(&self) -> Map<String, Value> {
        serde_json::from_str(self.arguments).expect("a preset's arguments are a JSON object")
    }
}

/// The fields every preset of a JSON hit array shares; each preset names what differs.
const JSON: Preset = Preset {
    name: "",
    tool: "",
    query_arg: "query",
    query_list: false,
    limit_arg: None,
    limit_max: None,
    hits: None,
    id: "/id",
    content: "/content",
    score: None,
    shape: Shape::Json,
    arguments: "{}",
};

/// Every preset, in the order they are listed in messages.
pub const PRESETS: &[Preset] = &[
    // The official knowledge-graph server (`@modelcontextprotocol/server-memory`): `search_nodes`
    // answers `{entities: [{name, entityType, observations}], relations}`, unranked (file order)
    // and unscored, so its hits pass only a floor of 0.
    Preset {
        name: "server-memory",
        tool: "search_nodes",
        query_arg: "query",
        limit_arg: None,
        limit_max: None,
        hits: Some("/entities"),
        id: "/name",
        content: "{/name} ({/entityType}): {/observations}",
        score: None,
        ..JSON
    },
    // SerenLoci's `search_loci`: the same hits as its REST `/search`, worded as the `seren_loci`
    // type words them.
    Preset {
        name: "seren-loci",
        tool: "search_loci",
        query_arg: "query",
        limit_arg: Some("n_results"),
        limit_max: None,
        hits: Some("/hits"),
        id: "/id",
        content: "{/key} = {/value}[ because {/why}]",
        score: Some("/score"),
        ..JSON
    },
    // SerenMemory's `recall` (`{query, hits: [{tier, content, topic, score, id}], searched_tiers}`);
    // it refuses more than 50 hits.
    Preset {
        name: "seren-memory",
        tool: "recall",
        query_arg: "query",
        limit_arg: Some("n_results"),
        limit_max: Some(50),
        hits: Some("/hits"),
        id: "/id",
        content: "/content",
        score: Some("/score"),
        ..JSON
    },
    // Another callosum's `search` tool: its fused list, each hit's `base_relevance` as the score
    // (what the `seren_callosum` type reads too).
    Preset {
        name: "callosum",
        tool: "search",
        query_arg: "query",
        limit_arg: Some("n_results"),
        limit_max: Some(crate::store::callosum::MAX_N),
        hits: Some("/hits"),
        id: "/id",
        content: "/content",
        score: Some("/base_relevance"),
        ..JSON
    },
    // basic-memory's `search_notes` (PyPI `basic-memory` 0.24.1, `mcp/tools/search.py`): with
    // `output_format: json` its text is `{results: [{title, permalink, content, score,
    // file_path, ...}]}` (its structured content wraps the same as `{result: ...}`, where
    // `/results` is not: the text is read), `content` the note's body. Its scores are negative
    // full-text ranks (bm25, lower first), so they are not read: order is what counts, and its
    // hits pass only a floor of 0. The permalink is the note's, kept in its frontmatter. A
    // project other than the default is the entry's `arguments: {project: ...}`.
    Preset {
        name: "basic-memory",
        tool: "search_notes",
        limit_arg: Some("page_size"),
        hits: Some("/results"),
        id: "/permalink",
        content: "{/title}[: {/content}]",
        arguments: r#"{"output_format": "json"}"#,
        ..JSON
    },
    // mcp-server-qdrant's `qdrant-find` (0.8.1, `mcp_server.py` `find`, `format_entry`): a header,
    // then one `<entry>` per hit, without ids or scores, as text blocks or (fastmcp 2) as one
    // block holding their JSON list; its limit is the server's QDRANT_SEARCH_LIMIT. The
    // collection is `arguments: {collection_name: ...}` unless the server has COLLECTION_NAME.
    Preset {
        name: "mcp-server-qdrant",
        tool: "qdrant-find",
        shape: Shape::TextEntries,
        ..JSON
    },
    // chroma-mcp's `chroma_query_documents(collection_name, query_texts: [..], n_results)` (0.2.6,
    // `server.py`): chromadb's column-major `{ids, documents, metadatas, distances, ...}` as
    // text; the distance is `raw_distance`, and its relevance `1 / (1 + distance)`. The
    // collection is the entry's `arguments: {collection_name: ...}`.
    Preset {
        name: "chroma-mcp",
        tool: "chroma_query_documents",
        query_arg: "query_texts",
        query_list: true,
        limit_arg: Some("n_results"),
        shape: Shape::Columns,
        content: "/document",
        ..JSON
    },
    // Graphiti's `search_memory_facts` (getzep/graphiti `mcp_server/src/graphiti_mcp_server.py`):
    // `{message, facts: [{uuid, fact, name, valid_at, invalid_at, ...}]}` as text (and wrapped as
    // `{result: ...}` structured content), in its ranking, unscored. Groups are
    // `arguments: {group_ids: [...]}`, else the server's default group.
    Preset {
        name: "graphiti-facts",
        tool: "search_memory_facts",
        limit_arg: Some("max_facts"),
        hits: Some("/facts"),
        id: "/uuid",
        content: "/fact",
        ..JSON
    },
    // Graphiti's `search_nodes`: `{message, nodes: [{uuid, name, summary, ...}]}`, unscored.
    Preset {
        name: "graphiti-nodes",
        tool: "search_nodes",
        limit_arg: Some("max_nodes"),
        hits: Some("/nodes"),
        id: "/uuid",
        content: "{/name}[: {/summary}]",
        ..JSON
    },
    // mem0's `search_memories` (PyPI `mem0-mcp-server` 0.2.1): `{results: [{id, memory, score,
    // ...}]}` as JSON text (its structured content holds the same as a string), scored. A user
    // other than the server's MEM0_DEFAULT_USER_ID is `arguments: {filters: {user_id: ...}}`.
    Preset {
        name: "mem0",
        tool: "search_memories",
        limit_arg: Some("limit"),
        hits: Some("/results"),
        id: "/id",
        content: "/memory",
        score: Some("/score"),
        ..JSON
    },
];

/// The presets' names, in order.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

/// The preset called `name`, or a message listing the known ones.
pub fn find(name: &str) -> Result<&'static Preset, String> {
    PRESETS.iter().find(|p| p.name == name).ok_or_else(|| {
        format!(
            "unknown preset '{}'; known presets: {}",
            crate::text::cut(name, 40),
            names().join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_has_a_name_a_tool_and_readable_arguments() {
        for preset in PRESETS {
            assert!(
                !preset.name.is_empty() && !preset.tool.is_empty(),
                "{preset:?}"
            );
            preset.arguments();
            assert_eq!(find(preset.name), Ok(preset));
        }
        let why = find("qdrant").expect_err("no such preset");
        assert!(
            why.starts_with("unknown preset 'qdrant'; known presets: server-memory, seren-loci"),
            "{why}"
        );
    }
}
