//! The stdio relay: an MCP server on stdin/stdout whose tools are a running hub's, reached over
//! Streamable HTTP with the agents' token. `list_changed` and progress are relayed to the agent (progress
//! under the agent's own token), and an agent's cancel is relayed to the hub, which cancels the run.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, Implementation, InitializeRequestParams, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerConfig,
    ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{
    ClientHandler, ErrorData as McpError, Peer, RoleClient, RoleServer, ServerHandler, ServiceError,
    ServiceExt,
};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use tokio::sync::Mutex;

/// The hub side of the relay: forwards the hub's list_changed to the agent.
#[derive(Clone)]
struct RelayToHub {
    info: ClientConfig,
    downstream: Arc<OnceLock<Peer<RoleServer>>>,
    /// The hub's progress token of a call in flight → the agent's token for it.
    progress: ProgressTokens,
}

type ProgressTokens = Arc<std::sync::Mutex<HashMap<ProgressToken, ProgressToken>>>;

impl ClientHandler for RelayToHub {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(peer) = self.downstream.get()
            && let Err(e) = peer.notify_tool_list_changed().await
        {
            tracing::debug!(error = %e, "list_changed not relayed");
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let token = self
            .progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&params.progress_token)
            .cloned();
        if let (Some(token), Some(peer)) = (token, self.downstream.get()) {
            let mut relayed = ProgressNotificationParam::new(token, params.progress);
            if let Some(total) = params.total {
                relayed = relayed.with_total(total);
            }
            if let Some(message) = params.message {
                relayed = relayed.with_message(message);
            }
            if let Err(e) = peer.notify_progress(relayed).await {
                tracing::debug!(error = %e, "progress not relayed");
            }
        }
    }
}

/// The agent side of the relay: an MCP server whose tools are the hub's.
#[derive(Clone)]
struct Relay {
    url: String,
    token: String,
    /// The agent's own session (`claude-<id>`) and project folder, named to the hub in
    /// [`crate::agent_names::AGENT_SESSION_HEADER`] and [`crate::agent_names::AGENT_PROJECT_HEADER`].
    agent: crate::agent_names::AgentNames,
    hub: Arc<Mutex<Option<RunningService<RoleClient, RelayToHub>>>>,
    downstream: Arc<OnceLock<Peer<RoleServer>>>,
    progress: ProgressTokens,
}

fn relay_error(e: ServiceError) -> McpError {
    match e {
        ServiceError::McpError(e) => e,
        other => McpError::internal_error(format!("the hub did not answer: {other}"), None),
    }
}

impl Relay {
    async fn hub(&self) -> Result<Peer<RoleClient>, McpError> {
        let guard = self.hub.lock().await;
        guard
            .as_ref()
            .map(|s| s.peer().clone())
            .ok_or_else(|| McpError::internal_error("not connected to the hub (initialize first)", None))
    }
}

impl ServerHandler for Relay {
    fn get_info(&self) -> ServerConfig {
        crate::gateway::server_config()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        crate::gateway::session_protocol_versions()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        let _ = self.downstream.set(context.peer.clone());
        // The hub records the agent's own name and version for this session.
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(request.client_info.name.clone(), request.client_info.version.clone()),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25);
        let client =
            RelayToHub { info, downstream: self.downstream.clone(), progress: self.progress.clone() };
        let mut headers = HashMap::new();
        let named = [
            (crate::agent_names::AGENT_SESSION_HEADER, &self.agent.session),
            (crate::agent_names::AGENT_PROJECT_HEADER, &self.agent.project),
        ];
        for (name, value) in named {
            if let Some(value) = value.as_deref().and_then(|v| http::HeaderValue::from_str(v).ok()) {
                headers.insert(http::HeaderName::from_static(name), value);
            }
        }
        let config = StreamableHttpClientTransportConfig::with_uri(self.url.clone())
            .auth_header(self.token.clone())
            .custom_headers(headers);
        let service =
            client.serve(StreamableHttpClientTransport::from_config(config)).await.map_err(|e| {
                McpError::internal_error(format!("cannot reach the hub at {}: {e}", self.url), None)
            })?;
        service.peer().set_response_cache_config(rmcp::ClientCacheConfig::disabled()).await;
        *self.hub.lock().await = Some(service);
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.hub().await?.list_tools(request).await.map_err(relay_error)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let hub = self.hub().await?;
        // rmcp took the request's `_meta` apart: its idempotency key goes on to the hub (SEP-3182; over
        // stdio `_meta` is where a key travels, rmcp's typed params keep no other field).
        let mut request = request;
        if let Some(key) = context.meta.get(IDEMPOTENCY_META_KEY).cloned() {
            let mut meta = request.meta.take().unwrap_or_default();
            meta.0.0.insert(IDEMPOTENCY_META_KEY.to_owned(), key);
            request.meta = Some(meta);
        }
        let Some(agent_token) = context.meta.get_progress_token() else {
            return tokio::select! {
                result = hub.call_tool(request) => result.map(Into::into).map_err(relay_error),
                // Dropping the request sends `notifications/cancelled` to the hub, which cancels the run.
                () = context.ct.cancelled() => Err(McpError::internal_error("cancelled by the client", None)),
            };
        };
        // The agent wants progress: the hub's progress for this call is relayed under the agent's token.
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(request));
        let handle = hub
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(relay_error)?;
        let hub_token = handle.progress_token.clone();
        self.progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(hub_token.clone(), agent_token);
        let (peer, id) = (handle.peer.clone(), handle.id.clone());
        let result = tokio::select! {
            result = handle.await_response() => Some(result),
            () = context.ct.cancelled() => None,
        };
        self.progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&hub_token);
        match result {
            None => {
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(
                        Some(id),
                        Some("cancelled by the client".into()),
                    ))
                    .await;
                Err(McpError::internal_error("cancelled by the client", None))
            }
            Some(Ok(ServerResult::CallToolResult(result))) => Ok(result.into()),
            Some(Ok(_)) => {
                Err(McpError::internal_error("the hub answered tools/call with something else", None))
            }
            Some(Err(e)) => Err(relay_error(e)),
        }
    }
}

/// Where a key travels in `_meta` (see [`crate::idempotency`]).
const IDEMPOTENCY_META_KEY: &str = "idempotencyKey";

/// Serves MCP on stdin/stdout, relaying every request to the hub's gateway at `url` with `token`, until
/// the client closes stdin. `agent` names the agent's own session and project to the hub.
pub async fn relay(url: String, token: String, agent: crate::agent_names::AgentNames) -> Result<(), String> {
    let relay = Relay {
        url,
        token,
        agent,
        hub: Arc::new(Mutex::new(None)),
        downstream: Arc::new(OnceLock::new()),
        progress: ProgressTokens::default(),
    };
    let hub = relay.hub.clone();
    let served = relay.serve(rmcp::transport::stdio()).await;
    let outcome = match served {
        Ok(service) => service.waiting().await.map(|_| ()).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    if let Some(service) = hub.lock().await.take() {
        let _ = service.cancel().await;
    }
    outcome.map_err(|e| format!("stdio session failed: {e}"))
}
