//! The command line: an edge over the federation, as REST (`http`) and MCP (`mcp`) are.
//!
//! - [`propose`]: `propose`: an MCP server's mapping, guessed and proved on one search.

pub mod propose;
