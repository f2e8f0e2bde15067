//! What the gateway serves and who implements it: [`GatewayBackend`] (the hub), the [`ClientIdentity`]
//! a connection opens its ledger session with, and [`WaitNotes`]. A layer below the gateway's handler
//! (`gateway.rs`), so that what the handler is built on (the stateless clients' ledger sessions, calls
//! run in rounds) can reach the backend without naming the handler.

use crate::client_side::AgentRoutes;
use crate::offered::{Naming, ServerOfferings};
use crate::upstream::UpstreamNotice;
use crate::wire::WireNames;
use async_trait::async_trait;
use portcullis_harness::{EventSubscription, McpRequest, ToolCallResult, ToolSpec};
use rmcp::ErrorData as McpError;
use rmcp::model::{ClientRequest, ServerResult};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;

/// Where a backend says what a call is waiting for before it runs (one line each).
pub type WaitNotes = mpsc::UnboundedSender<String>;

/// Who connected, as the client said in `initialize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    pub name: String,
    pub version: String,
    /// `http` or `stdio`.
    pub transport: &'static str,
    /// The agent's own session this connection belongs to, as the stdio relay names it
    /// ([`crate::agent_names::AGENT_SESSION_HEADER`]): the hub records the calls under it, beside the same session's hook
    /// calls. Checked for shape only; it labels rows, it grants nothing.
    pub linked_session: Option<String>,
    /// The folder the agent works in, as the stdio relay names it ([`crate::agent_names::AGENT_PROJECT_HEADER`]): the
    /// session's recorded folder. An absolute path, or nothing.
    pub project: Option<String>,
}

/// What the gateway serves: the hub implements it.
#[async_trait]
pub trait GatewayBackend: Send + Sync + 'static {
    /// The tools an agent may see now (grants applied), in registry order.
    fn visible_tools(&self) -> Vec<ToolSpec>;
    /// Every registered tool name (visible or not), so a call of a hidden tool is refused by name
    /// (`tool_denied`) rather than as unknown.
    fn registered_names(&self) -> Vec<String>;
    /// The wire-name table of every registered name; backends may cache it until the tools change.
    fn wire_names(&self) -> std::sync::Arc<WireNames> {
        let registered = self.registered_names();
        std::sync::Arc::new(WireNames::new(registered.iter().map(String::as_str)))
    }
    /// A client finished `initialize`: opens its ledger session and returns the session id.
    async fn open_session(&self, client: ClientIdentity) -> String;
    /// The connection ended.
    async fn close_session(&self, session_id: String);
    /// Runs one call through the pipeline; `cancel` fires when the client cancels the request or is
    /// gone (its session ended, its connection closed). Notes on what the call waits for before it runs
    /// (an operator's approval, and how long it may take) go to `waiting`, when given: the gateway sends
    /// them as MCP progress to a client that gave a progress token. `request` is what the agent's request
    /// said besides the tool and its arguments (kept with the call's records).
    #[allow(clippy::too_many_arguments)] // the call's parts, and how it is run
    async fn call(
        &self,
        session_id: &str,
        call_id: &str,
        tool: &str,
        arguments: Value,
        request: McpRequest,
        cancel: CancellationToken,
        waiting: Option<WaitNotes>,
    ) -> ToolCallResult;
    /// Records a `tools/call` whose params were malformed (no tool name, a name that is not a string,
    /// arguments that are not an object) as one blocked call (`invalid_arguments`) and returns it.
    async fn refuse_malformed(
        &self,
        session_id: &str,
        call_id: &str,
        tool: &str,
        arguments: Value,
        message: String,
    ) -> ToolCallResult;
    /// Changes whenever the visible tool list may have changed (grants, policy, registry).
    fn tools_changed(&self) -> watch::Receiver<u64>;
    /// The pipeline's events (progress of calls is forwarded to clients that asked for it).
    fn events(&self) -> Option<EventSubscription> {
        None
    }
    /// How agents see upstream names (tools, resources, prompts).
    fn naming(&self) -> Naming {
        Naming::Namespaced
    }
    /// The upstream servers' resources, templates and prompts agents may see now: what the grants
    /// hide and what the policy forbids left out (only servers [`Self::naming`] shows).
    fn offerings(&self) -> Vec<ServerOfferings> {
        Vec::new()
    }
    /// Sends a request that is not a call (completion, logging level, subscriptions) to a server.
    async fn forward(&self, server: &str, request: ClientRequest) -> Result<ServerResult, McpError> {
        let _ = request;
        Err(McpError::invalid_request(format!("no upstream server {server:?}"), None))
    }
    /// The upstream servers' notifications (resource updates, log messages).
    fn notices(&self) -> Option<broadcast::Receiver<UpstreamNotice>> {
        None
    }
    /// Where the gateway says which agent each call in flight came from, so upstream servers' requests
    /// during a call (sampling, elicitation) reach that agent; none: they are not relayed.
    fn agent_routes(&self) -> Option<AgentRoutes> {
        None
    }
}
