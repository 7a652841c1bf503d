//! One session opened for a single look at a server (`propose`): its tools, its name, and calls
//! made with arguments given whole. No store state, no retries.

use super::answer::refused;
use super::session::{Link, Session, connect};
use super::wording::cause;
use crate::ledger::Ledger;
use crate::store::remote::Failure;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::ServiceError;
use std::sync::Arc;
use std::time::Duration;

/// One session opened for a single look at a server (`propose`): its tools, and calls made with
/// arguments given whole. No store state, no retries: what fails is said once.
pub struct Probe {
    session: Session,
}

impl Probe {
    /// Spawns or reaches the server, initializes and lists its tools, within `wait`. Its answers
    /// are counted against a ledger of its own, as one search's are.
    pub async fn open(store: &str, link: &Link, wait: Duration) -> Result<Self, Failure> {
        let answers = Arc::new(Ledger::default());
        match tokio::time::timeout(wait, connect(store, link, answers)).await {
            Ok(session) => Ok(Self { session: session? }),
            Err(_) => Err(Failure::Timeout(wait)),
        }
    }

    /// The tools the server lists, in its order.
    pub fn tools(&self) -> &[Tool] {
        &self.session.tools
    }

    /// The name the server gives itself in `initialize`, if any.
    pub fn server_name(&self) -> Option<String> {
        let info = self.session.service.peer_info()?;
        Some(info.server_info.as_ref()?.name.clone())
    }

    /// Calls `tool` with `arguments`, within `timeout`; the result as the server sent it.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
    ) -> Result<CallToolResult, Failure> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        match tokio::time::timeout(timeout, self.session.service.call_tool(params)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(ServiceError::McpError(error))) => Err(refused(&error)),
            Ok(Err(error)) => Err(Failure::Mcp(cause(&error))),
            Err(_) => Err(Failure::Timeout(timeout)),
        }
    }
}
