//! How a bound store is asked: over HTTP with its protocol ([`Remote`]), or through a tool of an
//! MCP server ([`McpStore`]). Dispatch only; each way's call lives in its own room.

use super::mcp::McpStore;
use super::protocol::Call;
use super::remote::{Failure, Remote};
use crate::chain::Chain;
use crate::fusion::Hit;
use crate::ledger::Purse;

/// One bound store's way of being asked: over HTTP with its protocol, or through an MCP tool.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one per bound store, behind an Arc: its size costs nothing"
)]
pub enum Caller {
    Http(Remote),
    Mcp(McpStore),
}

impl Caller {
    /// Asks the store for `n` hits, carrying `chain`.
    pub async fn search(
        &self,
        query: &str,
        n: usize,
        (chain, call): (&Chain, Call),
        purse: &Purse<'_>,
    ) -> Result<Vec<Hit>, Failure> {
        match self {
            Caller::Http(remote) => remote.search(query, n, (chain, call), purse).await,
            // Boxed: an MCP call's future is about 4.4 KB against an HTTP call's 1.2, and an
            // unboxed one would make every store call of every search that large, moved as such
            // into the fan. One allocation is nothing beside an MCP round trip.
            Caller::Mcp(store) => {
                Box::pin(store.search(query, n, (chain, call.timeout), purse)).await
            }
        }
    }

    /// Whether this store answers topic searches.
    pub fn has_topics(&self) -> bool {
        matches!(self, Caller::Http(remote) if remote.has_topics())
    }

    /// A topic search ([`Remote::by_topic`]); `None` for a store without one.
    pub async fn by_topic(
        &self,
        topics: &[String],
        n: usize,
        exclude: &[String],
        (chain, call): (&Chain, Call),
        purse: &Purse<'_>,
    ) -> Option<Result<Vec<Hit>, Failure>> {
        match self {
            Caller::Http(remote) => {
                remote
                    .by_topic(topics, n, exclude, (chain, call), purse)
                    .await
            }
            Caller::Mcp(_) => None,
        }
    }
}
