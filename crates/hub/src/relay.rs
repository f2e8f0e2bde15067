//! Upstream servers' requests to the agent whose call they serve (sampling, elicitation), run as calls
//! of `mcp:<server>:<method>` in that agent's session: the grants, the server's `sampling` or
//! `elicitation` decision, an operator's approval and the ledger see each one before the agent does.

use crate::hub::Hub;
use crate::state::HubState;
use async_trait::async_trait;
use portcullis_mcp::client_side::{CallOrigin, ClientRelay, RELAYED};
use rmcp::ErrorData as McpError;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use tokio_util::sync::CancellationToken;

/// The hub's relay; it holds the hub weakly (the hub holds it through its upstream servers).
#[derive(Default)]
pub struct HubRelay {
    hub: OnceLock<Weak<HubState>>,
    relayed: AtomicU64,
}

impl HubRelay {
    /// Relays for `hub` from now on (before, requests are refused).
    pub fn attach(&self, hub: &Hub) {
        let _ = self.hub.set(Arc::downgrade(&hub.state));
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
        let state = self
            .hub
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| McpError::invalid_request("the hub is not serving", None))?;
        let hub = Hub { state };
        let routes = hub.state.upstreams.routes();
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
            hub.call(&origin.session_id, &call_id, &tool, params, &owner, CancellationToken::new()).await;
        portcullis_mcp::offered::method_result(&result)
    }

    fn declared(&self, origin: &CallOrigin) -> Option<Value> {
        let state = self.hub.get().and_then(Weak::upgrade)?;
        Some(state.upstreams.routes().get(origin).map_or_else(|| serde_json::json!({}), |r| r.declared()))
    }
}
