//! Connections through the operator API: the agent sessions the hub has open, its upstream MCP
//! servers, and the hub at a glance.

use super::OperatorApi;
use super::types::{AgentSession, HubStatus, UpstreamServer};

impl OperatorApi {
    /// The agent sessions open now, oldest first.
    pub fn sessions(&self) -> Vec<AgentSession> {
        let open = self.hub.state.open_sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut sessions: Vec<AgentSession> = open
            .iter()
            .map(|(id, s)| AgentSession {
                id: id.clone(),
                client: s.client.clone(),
                version: s.version.clone(),
                opened_at: s.opened_at,
            })
            .collect();
        sessions.sort_by_key(|s| s.opened_at);
        sessions
    }

    /// The upstream servers and their states, in policy order.
    pub fn servers(&self) -> Vec<UpstreamServer> {
        self.hub
            .upstream_states()
            .into_iter()
            .map(|s| UpstreamServer { id: s.id, status: serde_json::to_value(&s.status).unwrap_or_default() })
            .collect()
    }

    /// The hub at a glance.
    pub fn status(&self) -> HubStatus {
        HubStatus {
            version: env!("CARGO_PKG_VERSION").into(),
            project: self.hub.project().display().to_string(),
            policies: self.hub.policy_sources(),
            tools: self.hub.visible_tools().into_iter().map(|t| t.name).collect(),
            pending_approvals: self.hub.broker().pending().len(),
            sessions: self
                .hub
                .state
                .open_sessions
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .len(),
            servers: self.servers(),
        }
    }
}
