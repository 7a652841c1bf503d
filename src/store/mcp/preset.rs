//! The mapping defaults of MCP servers we know, so the common case is three lines of YAML. A
//! preset only fills defaults: every key of the entry still wins over it.

/// One known server's tool and mapping.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Preset {
    pub name: &'static str,
    pub tool: &'static str,
    pub query_arg: &'static str,
    pub limit_arg: Option<&'static str>,
    pub limit_max: Option<usize>,
    pub hits: Option<&'static str>,
    pub id: &'static str,
    pub content: &'static str,
    pub score: Option<&'static str>,
}

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
