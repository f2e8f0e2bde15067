//! Connections through the operator API: the agent sessions the hub has open, its upstream MCP
//! servers (and their restart), and the hub at a glance.

use super::types::{AgentSession, HubStatus, UpstreamServer};
use super::{ApiError, ErrorCode, OperatorApi};
use portcullis_hub::RestartRefused;
use serde_json::json;

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
                transport: s.transport.clone(),
                opened_at: s.opened_at,
                calls: s.calls,
            })
            .collect();
        sessions.sort_by_key(|s| s.opened_at);
        sessions
    }

    /// The upstream servers: state, restarts, last error, stderr tail. Running servers in the order they
    /// were started, then those that could not be specified.
    pub fn servers(&self) -> Vec<UpstreamServer> {
        portcullis_hub::servers_of(&self.hub.state.upstreams)
    }

    /// One upstream server; `server_unknown` if the policy declares none with this id.
    pub fn server(&self, id: &str) -> Result<UpstreamServer, ApiError> {
        self.servers().into_iter().find(|s| s.id == id).ok_or_else(|| unknown_server(id))
    }

    /// Restarts an upstream server now: its connection (a stdio server's process group) is closed, calls
    /// in flight on it fail with `upstream_unavailable`, and it connects again at once, without waiting
    /// out a backoff; its `restarts` goes up by one. The restart is under way when this returns: watch
    /// [`OperatorApi::server`] (or the event feed) for `ready`. `server_unknown` for an id the policy does
    /// not declare; `bad_argument` for a server that could not be specified (it is not running).
    pub fn restart_server(&self, id: &str) -> Result<(), ApiError> {
        self.hub.state.upstreams.restart(id).map_err(|refused| match refused {
            RestartRefused::Unknown(id) => unknown_server(&id),
            RestartRefused::Unstartable { ref id, ref why } => {
                ApiError::new(ErrorCode::BadArgument, refused.to_string(), json!({ "id": id, "why": why }))
            }
        })
    }

    /// Where the hub ships its ledger (a team ledger, copies) and how far each stands behind it.
    pub fn shipping(&self) -> Vec<portcullis_ledger::SinkLag> {
        let tail = self.hub.state.tail.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        tail.as_ref().map(portcullis_hub::RunningTail::lags).unwrap_or_default()
    }

    /// The team ledger this hub ships to, if any.
    pub fn team_ledger_setting(&self) -> Option<portcullis_hub::TeamLedgerSetting> {
        match &self.hub.state.config.team_ledger {
            portcullis_hub::TeamLedgerChoice::Named(setting) => Some(setting.clone()),
            _ => None,
        }
    }

    /// The ledger `text` names: a file, or a team ledger whose password is the hub's own team-ledger
    /// setting's file when it names the same URL (else `$PGPASSWORD`).
    pub fn ledger_address(&self, text: &std::path::Path) -> super::ledger::LedgerAddress {
        use super::ledger::LedgerAddress;
        match LedgerAddress::of(text, None) {
            LedgerAddress::Team { url, .. } => {
                let password_file = (self.team_ledger_setting())
                    .filter(|setting| setting.url == url)
                    .and_then(|setting| setting.password_file);
                LedgerAddress::Team { url, password_file }
            }
            file => file,
        }
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

pub(crate) fn unknown_server(id: &str) -> ApiError {
    ApiError::new(ErrorCode::ServerUnknown, format!("no upstream server {id:?}"), json!({ "id": id }))
}

impl OperatorApi {
    /// The upstream tools held back because their definitions changed, by server and tool.
    pub fn tool_changes(&self) -> Vec<super::types::ToolChange> {
        let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
        let policy = self.hub.state.live.current();
        let prompted = |server: &str| {
            policy.servers().iter().any(|e| {
                e.server.id == server
                    && e.server.changed_tools == portcullis_policy::document::ChangedTools::Prompt
            })
        };
        self.hub
            .state
            .pins
            .held()
            .into_iter()
            .map(|((server, tool), held)| super::types::ToolChange {
                prompted: prompted(&server),
                server,
                tool,
                since: held.since,
                diff: super::line_diff::line_diff(
                    &pretty(&held.accepted.value),
                    &pretty(&held.offered.value),
                ),
                accepted_digest: held.accepted.digest,
                offered_digest: held.offered.digest,
                accepted: held.accepted.value,
                offered: held.offered.value,
            })
            .collect()
    }

    /// Accepts the offered definition of a held tool (`digest`: the offered one the operator saw): it is
    /// pinned, the ledger records who accepted, and agents see the tool again. `tool_change_unknown` when
    /// none is waiting; `tool_change_moved` when the server changed it again since (look again).
    pub async fn accept_tool_change(
        &self,
        server: &str,
        tool: &str,
        digest: &str,
        operator: &super::Operator,
    ) -> Result<(), ApiError> {
        let event = self.hub.state.pins.accept(server, tool, digest, operator.name()).map_err(|refused| {
            let code = match refused {
                portcullis_hub::AcceptRefused::Unknown { .. } => ErrorCode::ToolChangeUnknown,
                portcullis_hub::AcceptRefused::Moved { .. } => ErrorCode::ToolChangeMoved,
            };
            ApiError::new(
                code,
                refused.to_string(),
                json!({ "server": server, "tool": tool, "digest": digest }),
            )
        })?;
        tracing::info!(%server, %tool, operator = operator.name(), "an operator accepted a changed tool definition");
        self.hub.state.ledger.record_tool_pin(event).await?;
        self.hub.rebuild_registry();
        Ok(())
    }
}
