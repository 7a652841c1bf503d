//! How one `mcp` store is asked: the tool, its query and limit arguments, the fixed ones, and the
//! mapping its result is read by ([`Spec`]), and the arguments of one call. Reading an entry's keys
//! into a `Spec` is `mcp`'s own (with the presets); calling the tool is `client`'s.

use super::map::Mapping;
use serde_json::{Map, Value};

/// How one `mcp` store is asked and read.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The tool to call.
    pub tool: String,
    /// The argument that takes the query.
    pub query_arg: String,
    /// Whether the query goes as a list of one (chroma-mcp's `query_texts: [query]`).
    pub query_list: bool,
    /// The argument that takes the number of hits wanted, if the tool takes one.
    pub limit_arg: Option<String>,
    /// The most the tool accepts in `limit_arg` (SerenMemory's `recall` refuses more than 50).
    pub limit_max: Option<usize>,
    /// Fixed extra arguments, under the query and the limit.
    pub arguments: Map<String, Value>,
    /// How the result becomes hits.
    pub mapping: Mapping,
}

impl Spec {
    /// The tool's arguments for one search: the fixed ones, then the query, then the limit.
    pub fn arguments(&self, query: &str, n: usize) -> Map<String, Value> {
        let mut arguments = self.arguments.clone();
        let query = match self.query_list {
            true => Value::Array(vec![query.into()]),
            false => query.into(),
        };
        arguments.insert(self.query_arg.clone(), query);
        if let Some(limit) = &self.limit_arg {
            let n = self.limit_max.map_or(n, |max| n.min(max)).max(1);
            arguments.insert(limit.clone(), n.into());
        }
        arguments
    }
}
