//! The gateway's view of the hub: the tools agents see and call, the upstream servers' resources and
//! prompts they may see (what the grants hide and the policy forbids left out), requests forwarded to
//! those servers, and the single-upstream mode that serves one server under its own names.

use crate::hub::Hub;
use async_trait::async_trait;
use portcullis_harness::disclosure::SEARCH_TOOLS_NAME;
use portcullis_harness::{MCP_PROMPTS_GET, MCP_RESOURCES_READ, ToolCallResult, ToolSpec, mcp_method_of};
use portcullis_mcp::gateway::{ClientIdentity, GatewayBackend, WaitNotes};
use portcullis_mcp::offered::{Naming, ServerOfferings};
use portcullis_mcp::upstream::{Offerings, UpstreamNotice};
use portcullis_policy::{Decision, Policy};
use rmcp::ErrorData as McpError;
use rmcp::model::{ClientRequest, ServerResult};
use serde_json::Value;
use std::sync::{Arc, RwLock};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

/// The gateway's view of the hub.
pub struct HubBackend {
    hub: Hub,
    owners: RwLock<std::collections::HashMap<String, String>>,
    /// The wire-name table and the tool generation it was built for.
    wire_names: std::sync::Mutex<Option<(u64, Arc<portcullis_mcp::wire::WireNames>)>>,
}

impl HubBackend {
    pub fn new(hub: Hub) -> Self {
        HubBackend { hub, owners: RwLock::new(Default::default()), wire_names: std::sync::Mutex::new(None) }
    }

    fn single_upstream(&self) -> Option<&str> {
        self.hub.state.config.single_upstream.as_deref()
    }

    /// Who a session's calls are recorded as.
    fn owner(&self, session_id: &str) -> String {
        self.owners.read().ok().and_then(|o| o.get(session_id).cloned()).unwrap_or_else(|| "agent".into())
    }
}

#[async_trait]
impl GatewayBackend for HubBackend {
    fn visible_tools(&self) -> Vec<ToolSpec> {
        // A server's methods (resources/read, prompts/get) are reached by the methods themselves.
        let tools = self.hub.visible_tools().into_iter().filter(|t| mcp_method_of(&t.name).is_none());
        let tools: Vec<ToolSpec> = match self.single_upstream() {
            Some(server) => {
                let prefix = format!("mcp:{server}:");
                return tools.filter(|t| t.name.starts_with(&prefix)).collect();
            }
            None => tools.collect(),
        };
        let (search, rest): (Vec<ToolSpec>, Vec<ToolSpec>) =
            tools.into_iter().partition(|t| t.name == SEARCH_TOOLS_NAME);
        if rest.len() > self.hub.state.config.search_tools_above && !search.is_empty() {
            return search;
        }
        // How long a call may wait for an operator is the agent's to know (clients time out requests:
        // the TypeScript SDK after 60 s).
        let wait = self.hub.state.broker.timeout().as_secs();
        let note = format!(
            " When the policy asks an operator about a call, the call waits up to {wait} s for the answer (unanswered: denied)."
        );
        rest.into_iter()
            .map(|mut spec| {
                spec.description.push_str(&note);
                spec
            })
            .collect()
    }

    fn registered_names(&self) -> Vec<String> {
        self.hub.state.dispatcher.registry().names().map(str::to_owned).collect()
    }

    fn wire_names(&self) -> Arc<portcullis_mcp::wire::WireNames> {
        // Registry changes bump the tool generation before agents are told, so the cache follows them.
        let generation = *self.hub.state.tools_changed.borrow();
        let mut cache = self.wire_names.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((built_for, names)) = cache.as_ref()
            && *built_for == generation
        {
            return names.clone();
        }
        let registered = self.registered_names();
        let registered = registered.iter().map(String::as_str);
        let names = Arc::new(match self.single_upstream() {
            Some(server) => portcullis_mcp::wire::WireNames::single(server, registered),
            None => portcullis_mcp::wire::WireNames::new(registered),
        });
        *cache = Some((generation, names.clone()));
        names
    }

    async fn open_session(&self, client: ClientIdentity) -> String {
        let id = self
            .hub
            .open_session_linked(
                &client.name,
                &client.version,
                client.transport,
                client.linked_session,
                client.project,
            )
            .await;
        if let Ok(mut owners) = self.owners.write() {
            owners.insert(id.clone(), format!("{} {} ({})", client.name, client.version, client.transport));
        }
        id
    }

    async fn close_session(&self, session_id: String) {
        if let Ok(mut owners) = self.owners.write() {
            owners.remove(&session_id);
        }
        self.hub.close_session(session_id).await;
    }

    async fn call(
        &self,
        session_id: &str,
        call_id: &str,
        tool: &str,
        arguments: Value,
        request: portcullis_harness::McpRequest,
        cancel: CancellationToken,
        waiting: Option<WaitNotes>,
    ) -> ToolCallResult {
        let owner = self.owner(session_id);
        // Following before the call runs, so the approval it may ask is not missed.
        let _follower = waiting.map(|notes| {
            let approvals = self.hub.broker().watch();
            crate::waiting::follow_approval(approvals, session_id.to_owned(), call_id.to_owned(), notes)
        });
        let request = Some(Arc::new(request));
        self.hub.call_requested(session_id, call_id, tool, arguments, &owner, cancel, request).await
    }

    async fn refuse_malformed(
        &self,
        session_id: &str,
        call_id: &str,
        tool: &str,
        arguments: Value,
        message: String,
    ) -> ToolCallResult {
        let owner = self.owner(session_id);
        self.hub.refuse_malformed(session_id, call_id, tool, arguments, &owner, message).await
    }

    fn tools_changed(&self) -> watch::Receiver<u64> {
        self.hub.state.tools_changed.subscribe()
    }

    fn events(&self) -> Option<portcullis_harness::EventSubscription> {
        Some(self.hub.state.dispatcher.events().subscribe())
    }

    fn naming(&self) -> Naming {
        match self.single_upstream() {
            Some(server) => Naming::Single(server.to_owned()),
            None => Naming::Namespaced,
        }
    }

    fn offerings(&self) -> Vec<ServerOfferings> {
        let naming = self.naming();
        let grants = self.hub.grants();
        let policy = self.hub.state.live.current();
        self.hub
            .state
            .upstreams
            .offerings()
            .into_iter()
            .filter(|(server, _)| naming.shows(server))
            .map(|(server, offerings)| {
                let prompt_names = offerings.prompts.iter().map(|p| p.name.clone()).collect();
                let permits = |method: &str| grants.permits(&format!("mcp:{server}:{method}"));
                let offerings = visible(
                    &policy,
                    &server,
                    offerings,
                    permits(MCP_RESOURCES_READ),
                    permits(MCP_PROMPTS_GET),
                );
                ServerOfferings { server, offerings, prompt_names }
            })
            .collect()
    }

    async fn forward(&self, server: &str, request: ClientRequest) -> Result<ServerResult, McpError> {
        let Some(upstream) = self.hub.state.upstreams.get(server).filter(|_| self.naming().shows(server))
        else {
            return Err(McpError::invalid_request(format!("no upstream server {server:?}"), None));
        };
        upstream.forward(request).await.map_err(|e| {
            McpError::new(
                rmcp::model::ErrorCode::INTERNAL_ERROR,
                e.message.clone(),
                Some(serde_json::json!({ "portcullis": { "error": e.code } })),
            )
        })
    }

    fn notices(&self) -> Option<broadcast::Receiver<UpstreamNotice>> {
        Some(self.hub.state.upstreams.notices())
    }

    fn agent_routes(&self) -> Option<portcullis_mcp::client_side::AgentRoutes> {
        Some(self.hub.state.upstreams.routes())
    }
}

/// What of a server's offerings agents may see: nothing of resources or prompts whose method the
/// grants refuse, and no resource or prompt the policy forbids (templates stay: each read of one is
/// judged by its URI).
fn visible(
    policy: &Policy,
    server: &str,
    mut offerings: Offerings,
    resources: bool,
    prompts: bool,
) -> Offerings {
    let forbidden = |method: &str, target: &str| {
        policy.evaluate_mcp(&format!("mcp:{server}:{method}"), Some(target)).decision == Decision::Forbidden
    };
    if resources {
        offerings.resources.retain(|r| !forbidden(MCP_RESOURCES_READ, &r.uri));
    } else {
        offerings.resources.clear();
        offerings.templates.clear();
    }
    if prompts {
        offerings.prompts.retain(|p| !forbidden(MCP_PROMPTS_GET, &p.name));
    } else {
        offerings.prompts.clear();
    }
    offerings
}
