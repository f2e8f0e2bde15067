//! `portcullis mcp`: an MCP server on stdin/stdout for clients that only spawn stdio servers. With a hub
//! running (its runtime file names a live process) it relays to the hub's gateway, so the hub's operator
//! answers prompts and its ledger records the calls; otherwise it runs an embedded headless hub and says
//! so on stderr (prompts are then denied: nobody can answer them).

use crate::args::McpArgs;
use crate::error::CliError;
use portcullis_hub::config::{RuntimeInfo, load_or_create_token};
use portcullis_hub::{Hub, HubBackend, HubConfig};
use portcullis_mcp::gateway::GatewayHandler;
use portcullis_policy::discovery::user_config_dir;
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
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::Mutex;

fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "portcullis mcp: {line}");
}

pub fn mcp_cmd(args: &McpArgs) -> Result<ExitCode, CliError> {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(CliError::Runtime)?;
    let config_dir = user_config_dir();
    let running = if args.embedded { None } else { config_dir.as_deref().and_then(RuntimeInfo::read) };
    let result = runtime.block_on(async move {
        match running {
            Some(info) => {
                let dir = config_dir.ok_or_else(|| CliError::BadArgument("no config folder".into()))?;
                let token =
                    load_or_create_token(&dir).map_err(|e| CliError::BadArgument(format!("token: {e}")))?;
                say(&format!("relaying to the running hub at {}", info.mcp_url));
                relay(info.mcp_url, token).await
            }
            None => embedded(args).await,
        }
    });
    // stdin's blocking reader may still hold the runtime; the session is over.
    runtime.shutdown_timeout(Duration::from_millis(200));
    result
}

async fn embedded(args: &McpArgs) -> Result<ExitCode, CliError> {
    let (project, db) = crate::serve_cmd::project_and_ledger(args.project.as_ref(), args.db.as_ref())?;
    let config = HubConfig {
        policy_files: args.policies.clone(),
        shutdown_grace: Duration::from_secs(5),
        unattended: true,
        // Published on a free loopback port, so `portcullis hook` and other `portcullis mcp` processes
        // use this hub (and its ledger) while it runs.
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        ..HubConfig::new(project, db.clone())
    };
    let hub =
        Hub::open(config).await.map_err(|e| CliError::Hub { code: e.code(), message: e.to_string() })?;
    let published = match portcullis_hub::serve(hub.clone()).await {
        Ok(running) => Some(running),
        Err(e) => {
            say(&format!("the embedded hub is not published to other processes: {e}"));
            None
        }
    };
    say(&format!(
        "no hub is running: serving an embedded headless hub (policies: {}; ledger: {}); prompts are denied because no operator can answer them — start `portcullis serve` to approve calls",
        hub.policy_sources().join(", "),
        db.display()
    ));
    let _watcher = portcullis_hub::reload::watch(&hub).ok();
    let handler = GatewayHandler::new(Arc::new(HubBackend::new(hub.clone())), "stdio");
    let served = handler.serve(rmcp::transport::stdio()).await;
    let outcome = match served {
        Ok(service) => service.waiting().await.map(|_| ()).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let closed = match published {
        Some(running) => running.shutdown().await,
        None => hub.close().await,
    };
    closed.map_err(|e| CliError::Hub { code: e.code(), message: e.to_string() })?;
    match outcome {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => Err(CliError::BadArgument(format!("stdio session failed: {e}"))),
    }
}

/// The hub side of the relay: forwards the hub's list_changed to the agent.
#[derive(Clone)]
struct HubClient {
    info: ClientConfig,
    downstream: Arc<OnceLock<Peer<RoleServer>>>,
    /// The hub's progress token of a call in flight → the agent's token for it.
    progress: ProgressTokens,
}

type ProgressTokens = Arc<std::sync::Mutex<HashMap<ProgressToken, ProgressToken>>>;

impl ClientHandler for HubClient {
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
    hub: Arc<Mutex<Option<RunningService<RoleClient, HubClient>>>>,
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
        portcullis_mcp::gateway::server_config()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        portcullis_mcp::gateway::protocol_versions()
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
        let client = HubClient { info, downstream: self.downstream.clone(), progress: self.progress.clone() };
        let config =
            StreamableHttpClientTransportConfig::with_uri(self.url.clone()).auth_header(self.token.clone());
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

async fn relay(url: String, token: String) -> Result<ExitCode, CliError> {
    let relay = Relay {
        url,
        token,
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
    match outcome {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => Err(CliError::BadArgument(format!("stdio session failed: {e}"))),
    }
}
