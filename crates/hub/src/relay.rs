//! Upstream servers' requests to the agent whose call they serve (sampling, elicitation), run as calls
//! of `mcp:<server>:<method>` in that agent's session: the grants, the server's `sampling` or
//! `elicitation` decision, an operator's approval and the ledger see each one before the agent does.

use async_trait::async_trait;
use portcullis_harness::ToolCallResult;
use portcullis_mcp::client_side::{AgentRoutes, CallOrigin, ClientRelay, RELAYED};
use rmcp::ErrorData as McpError;
use serde_json::Value;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the relay needs of the hub it serves: the routes of the calls upstream servers serve, and a
/// call run in an agent's session. The hub implements it over a weak handle on its state (it holds the
/// relay through its upstream servers), so this module does not know the hub.
#[async_trait]
pub trait RelayedCalls: Send + Sync {
    /// The routes of the calls upstream servers serve now (none once the hub is gone).
    fn routes(&self) -> Option<AgentRoutes>;
    /// Runs `tool` for the agent of `session_id` as the hub runs any call (`None` once the hub is gone).
    async fn call(
        &self,
        session_id: &str,
        call_id: &str,
        tool: &str,
        params: Value,
        owner: &str,
    ) -> Option<ToolCallResult>;
}

/// The hub's relay.
#[derive(Default)]
pub struct HubRelay {
    hub: OnceLock<Box<dyn RelayedCalls>>,
    relayed: AtomicU64,
}

impl HubRelay {
    /// Relays for `hub` from now on (before, requests are refused).
    pub fn attach(&self, hub: Box<dyn RelayedCalls>) {
        let _ = self.hub.set(hub);
    }
}

#[async_trait]
impl ClientRelay for HubRelay {
    async fn relay(
        &self,
        server: &str,
        origin: CallOrigin,
        method: &'static str,
        params: Value,
    ) -> Result<Value, McpError> {
        let not_serving = || McpError::invalid_request("the hub is not serving", None);
        let hub = self.hub.get().ok_or_else(not_serving)?;
        let routes = hub.routes().ok_or_else(not_serving)?;
        let route = routes.get(&origin).ok_or_else(|| {
            McpError::invalid_request(format!("{method}: the call it serves has ended"), None)
        })?;
        let kind = RELAYED.iter().find(|(m, _)| *m == method).map_or("request", |(_, word)| *word);
        let n = self.relayed.fetch_add(1, Ordering::Relaxed) + 1;
        // Its own call id, beside the call it serves (`c3.sampling-7`), in the same session.
        let call_id = format!("{}.{kind}-{n}", origin.call_id);
        let relayed = CallOrigin { session_id: origin.session_id.clone(), call_id: call_id.clone() };
        let _route = routes.enter(relayed, route);
        let tool = format!("mcp:{server}:{method}");
        let owner = format!("upstream server {server}");
        tracing::info!(%server, method, session = %origin.session_id, call = %origin.call_id, "relaying a request of an upstream server to its agent");
        let result =
            hub.call(&origin.session_id, &call_id, &tool, params, &owner).await.ok_or_else(not_serving)?;
        portcullis_mcp::offered::method_result(&result)
    }

    fn declared(&self, origin: &CallOrigin) -> Option<Value> {
        let routes = self.hub.get()?.routes()?;
        Some(routes.get(origin).map_or_else(|| serde_json::json!({}), |r| r.declared()))
    }
}
