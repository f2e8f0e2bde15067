//! The MCP server agents connect to. Each connection (a 2025-11-25 session) is a ledger session, and so
//! is each stateless 2026-07-28 client, keyed by its agent identity and `clientInfo`
//! ([`crate::stateless`]); `tools/list` shows the tools the grants allow under wire-safe names;
//! `tools/call` goes through the hub's pipeline, and a blocked or denied call comes back as a tool
//! result with `isError` naming the reason and the deciding rule.

use crate::caller::CallerGone;
use crate::client_side::{AgentRoute, CallOrigin};
use crate::connection::Connection;
use crate::convert::{call_result, tool_of};
use crate::envelope::{CLIENT_METHODS, TOOLS_CALL};
use crate::offered::Naming;
use crate::wire::WireNames;
use portcullis_harness::{McpRequest, ToolCallResult, TraceParent};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CustomRequest,
    CustomResult, ErrorCode, GetPromptRequestParams, GetPromptResponse, Implementation,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::Value;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use tokio::sync::mpsc;

// What the gateway serves, defined in a leaf below it (the stateless registry and the rounds use it
// too); offered here as well, where the hub and other crates find it.
pub use crate::backend::{ClientIdentity, GatewayBackend, WaitNotes};

/// Tools per `tools/list` page.
pub const TOOLS_PAGE: usize = 100;

/// What Portcullis tells agents about itself (the gateway and the stdio relay alike).
pub fn server_config() -> ServerConfig {
    // Logging is deprecated in rmcp (SEP-2577) but agents on protocol versions up to 2025-11-25 use it.
    #[allow(deprecated)]
    let capabilities = ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .enable_resources()
        .enable_resources_subscribe()
        .enable_resources_list_changed()
        .enable_prompts()
        .enable_prompts_list_changed()
        .enable_completions()
        .enable_logging()
        .build();
    ServerConfig::new(capabilities)
        .with_server_info(Implementation::new("portcullis", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Portcullis gateway: every tool call passes the operator's policy; a refused call returns \
             isError with the reason and the deciding rule.",
        )
}

/// Serves one agent on stdin/stdout until it closes stdin (the embedded hub of `portcullis mcp`).
pub async fn serve_stdio(handler: GatewayHandler) -> Result<(), String> {
    use rmcp::ServiceExt as _;
    match handler.serve(rmcp::transport::stdio()).await {
        Ok(service) => service.waiting().await.map(|_| ()).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// What the agent's request of `method` said besides its params: the JSON-RPC id, the protocol version
/// and a well-formed `traceparent` from `params._meta` (a malformed one is agent text, ignored).
pub(crate) fn mcp_request(method: &str, context: &RequestContext<RoleServer>) -> McpRequest {
    McpRequest {
        method: method.to_owned(),
        request_id: context.id.to_string(),
        protocol_version: context.protocol_version().map(|v| v.to_string()),
        traceparent: TraceParent::in_meta(&context.meta).map(|t| t.to_string()),
        received_at: portcullis_harness::Timestamp::now(),
        agent: crate::idempotency::agent_of(context),
        // A malformed key in `_meta` is refused by `call_tool` before this is made.
        idempotency_key: crate::idempotency::key_of(context).ok().flatten(),
    }
}

/// What the agents' door speaks over HTTP: sessions with `initialize` up to 2025-11-25 (list_changed
/// and progress are sent on the session's stream), and stateless 2026-07-28 requests (see
/// [`crate::stateless`]).
pub fn protocol_versions() -> Cow<'static, [ProtocolVersion]> {
    Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
}

/// The versions with an `initialize` handshake only: what the stdio gateway and the stdio relay speak
/// (both hold one connection per agent, opened by `initialize`).
pub fn session_protocol_versions() -> Cow<'static, [ProtocolVersion]> {
    Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
}

/// What a `tools/call` whose params rmcp could not read names as its tool (a marker when nothing usable),
/// the arguments it attempted, and why it is refused.
pub(crate) fn malformed_call(params: Option<&Value>, names: &WireNames) -> (String, Value, String) {
    const NO_NAME: &str = "(no tool name)";
    let Some(Value::Object(params)) = params else {
        let attempted = params.cloned().unwrap_or(Value::Null);
        return (
            NO_NAME.into(),
            attempted,
            "the params of tools/call must be an object {name, arguments}".into(),
        );
    };
    match params.get("name") {
        Some(Value::String(name)) => {
            let tool = names.registry_name(name).unwrap_or(name).to_owned();
            let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
            let why = match &arguments {
                Value::Object(_) | Value::Null => "the params of tools/call do not fit its schema".to_owned(),
                other => format!("`arguments` must be an object, got {}", json_type(other)),
            };
            (tool, arguments, why)
        }
        Some(other) => {
            let why = format!("`name` must be a string, got {}", json_type(other));
            (NO_NAME.into(), Value::Object(params.clone()), why)
        }
        None => (NO_NAME.into(), Value::Object(params.clone()), "`name` is missing".into()),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `search_tools` answers with registry names; agents call wire names.
fn wire_names_in_search(result: &mut ToolCallResult, names: &WireNames) {
    let portcullis_harness::CallOutcome::Finished { output } = &mut result.outcome else { return };
    let output = std::sync::Arc::make_mut(output);
    if let Some(Value::Array(tools)) = output.structured.as_mut().and_then(|s| s.get_mut("tools")) {
        for tool in tools.iter_mut() {
            if let Some(wire) = tool.as_str().and_then(|n| names.wire_name(n)) {
                *tool = Value::String(wire.to_owned());
            }
        }
    }
    for content in &mut output.content {
        if let portcullis_harness::Content::Text { text } = content {
            *text = text
                .lines()
                .map(|line| match line.split_once(": ") {
                    Some((name, rest)) => match names.wire_name(name) {
                        Some(wire) => format!("{wire}: {rest}"),
                        None => line.to_owned(),
                    },
                    None => line.to_owned(),
                })
                .collect::<Vec<_>>()
                .join("\n");
        }
    }
}

/// The MCP server handler of one agent connection.
#[derive(Clone)]
pub struct GatewayHandler {
    pub(crate) connection: Arc<Connection>,
}

impl GatewayHandler {
    pub fn new(backend: Arc<dyn GatewayBackend>, transport: &'static str) -> Self {
        Self::on_lane(backend, transport, None, None)
    }

    /// A handler whose session's requests may take `lane` (the fast lane, `fast_lane.rs`), and whose
    /// stateless requests are recorded in the ledger sessions `stateless` keeps.
    pub fn on_lane(
        backend: Arc<dyn GatewayBackend>,
        transport: &'static str,
        lane: Option<Arc<crate::connection::FastLane>>,
        stateless: Option<Arc<crate::stateless::StatelessSessions>>,
    ) -> Self {
        GatewayHandler {
            connection: Arc::new(Connection {
                backend,
                transport,
                session: OnceLock::new(),
                calls: AtomicU64::new(0),
                log_level: std::sync::Mutex::new(None),
                subscriptions: std::sync::Mutex::new(std::collections::HashSet::new()),
                lane,
                peer: OnceLock::new(),
                negotiated: OnceLock::new(),
                fast_calls: std::sync::Mutex::new(std::collections::HashMap::new()),
                stateless,
                shared: OnceLock::new(),
            }),
        }
    }

    /// Sends `list_changed` to this peer whenever the backend's tools change, until the connection ends.
    fn forward_list_changes(&self, peer: Peer<RoleServer>) {
        let weak: Weak<Connection> = Arc::downgrade(&self.connection);
        let mut changes = self.connection.backend.tools_changed();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                if weak.upgrade().is_none() || peer.is_transport_closed() {
                    break;
                }
                // Upstream resources and prompts change with the same registry changes.
                let sent = async {
                    peer.notify_tool_list_changed().await?;
                    peer.notify_resource_list_changed().await?;
                    peer.notify_prompt_list_changed().await
                };
                if let Err(e) = sent.await {
                    tracing::debug!(error = %e, "list_changed not delivered");
                }
            }
        });
    }

    /// Keeps this call's agent reachable by the upstream requests it causes, while the guard lives.
    pub(crate) fn route(
        &self,
        session: &str,
        call_id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Option<crate::client_side::RouteGuard> {
        let routes = self.connection.backend.agent_routes()?;
        let origin = CallOrigin { session_id: session.to_owned(), call_id: call_id.to_owned() };
        let route = AgentRoute {
            peer: context.peer.clone(),
            request_id: context.id.clone(),
            questions: None,
            capabilities: context.client_capabilities().and_then(|c| serde_json::to_value(c).ok()),
        };
        Some(routes.enter(origin, route))
    }

    /// The stateless (2026-07-28) client this handler serves a request of, if it is one.
    pub(crate) fn stateless_client(&self) -> Option<Arc<crate::stateless::StatelessSession>> {
        self.connection.shared.get().cloned()
    }

    /// A call's result as the agent reads it (a search's tool names as the agent names them).
    /// A call's answer: its server's refusal for want of a client capability is the agent's own
    /// JSON-RPC error (-32021), anything else the result as the agent reads it.
    fn finished(
        &self,
        tool: &str,
        mut result: ToolCallResult,
        names: &WireNames,
    ) -> Result<CallToolResponse, McpError> {
        if let Some(refused) = crate::offered::missing_capability(&result) {
            return Err(refused);
        }
        if tool == portcullis_harness::disclosure::SEARCH_TOOLS_NAME {
            wire_names_in_search(&mut result, names);
        }
        Ok(call_result(&result).into())
    }

    /// The next call id in this connection's ledger session (call [`Self::session_id`] first).
    pub(crate) fn next_call_id(&self) -> String {
        if let Some(shared) = self.connection.shared.get() {
            return shared.next_call_id();
        }
        format!("c{}", self.connection.calls.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// The ledger session this request's calls go to: the session's, or a stateless client's (see
    /// [`crate::stateless`]).
    pub(crate) async fn session_id(&self, context: &RequestContext<RoleServer>) -> String {
        if let Some(id) = self.connection.session.get() {
            return id.clone();
        }
        if let Some(shared) = self.connection.shared.get() {
            return shared.id();
        }
        if let Some(stateless) = &self.connection.stateless
            && self.connection.peer.get().is_none()
            && crate::stateless::is_stateless(context)
        {
            let shared = stateless.enter(context).await;
            return self.connection.shared.get_or_init(|| shared).id();
        }
        // A client that skipped `initialize` (stateless requests) still gets a session.
        let client = context.client_info();
        let id = self
            .connection
            .backend
            .open_session(ClientIdentity {
                name: client.as_ref().map_or_else(|| "unknown".into(), |c| c.name.clone()),
                version: client.as_ref().map_or_else(String::new, |c| c.version.clone()),
                transport: self.connection.transport,
                linked_session: crate::agent_names::linked_session(context),
                project: crate::agent_names::agent_project(context),
            })
            .await;
        self.connection.session.get_or_init(|| id).clone()
    }
}

impl ServerHandler for GatewayHandler {
    fn get_info(&self) -> ServerConfig {
        server_config()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if self.connection.stateless.is_some() { protocol_versions() } else { session_protocol_versions() }
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(Self::listen_filter(requested))
    }

    async fn listen(&self, subscription: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        self.listen_for_changes(subscription).await
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        if self.connection.session.get().is_none() {
            let id = self
                .connection
                .backend
                .open_session(ClientIdentity {
                    name: request.client_info.name.clone(),
                    version: request.client_info.version.clone(),
                    transport: self.connection.transport,
                    linked_session: crate::agent_names::linked_session(&context),
                    project: crate::agent_names::agent_project(&context),
                })
                .await;
            let _ = self.connection.session.set(id);
            self.forward_list_changes(context.peer.clone());
            self.forward_notices(context.peer.clone());
        }
        tracing::info!(
            client = %request.client_info.name,
            version = %request.client_info.version,
            session = self.connection.session.get().map(String::as_str),
            "agent connected"
        );
        let _ = self.connection.peer.set(context.peer.clone());
        let agreed = self.negotiate_initialize(&request);
        if let Ok(result) = &agreed {
            let _ = self.connection.negotiated.set(result.protocol_version.to_string());
        }
        agreed
    }

    /// The client is ready: its session's requests may now take the fast lane. The session's id is
    /// the one this notification came with (rmcp delivered it to this session's handler by that id).
    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        let Some(lane) = &self.connection.lane else { return };
        let id = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|v| v.to_str().ok());
        if let Some(id) = id {
            lane.attach(id, Arc::downgrade(&self.connection));
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let specs = self.connection.backend.visible_tools();
        // One table over every registered name, so a tool's wire name does not depend on the grants.
        let names = self.connection.backend.wire_names();
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|c| *c <= specs.len())
                .ok_or_else(|| McpError::invalid_params(format!("invalid cursor {cursor:?}"), None))?,
        };
        let end = (start + TOOLS_PAGE).min(specs.len());
        let tools = specs[start..end]
            .iter()
            .map(|spec| tool_of(spec, names.wire_name(&spec.name).unwrap_or(&spec.name)))
            .collect();
        let mut page = ListToolsResult::with_all_items(tools);
        if end < specs.len() {
            page.next_cursor = Some(end.to_string());
        }
        Ok(page)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if let Err(why) = crate::idempotency::key_of(&context) {
            return Err(McpError::invalid_params(why, None));
        }
        let mcp = mcp_request(TOOLS_CALL, &context);
        let session = self.session_id(&context).await;
        let names = self.connection.backend.wire_names();
        // Resolved against every registered tool: the pipeline refuses (and records) what the grants
        // hide; an unknown name is dispatched as given.
        let tool = match (names.registry_name(&request.name), self.connection.backend.naming()) {
            (Some(tool), _) => tool.to_owned(),
            // In front of one server, a name it does not have is still its (and unknown): never a
            // built-in tool.
            (None, Naming::Single(server)) => format!("mcp:{server}:{}", request.name),
            (None, Naming::Namespaced) => request.name.to_string(),
        };
        // A server's methods pass the pipeline as calls, but agents reach them by the methods alone.
        if portcullis_harness::mcp_method_of(&tool).is_some() {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool {:?}: read resources and get prompts with their own methods",
                    request.name
                ),
                None,
            ));
        }
        let arguments =
            request.arguments.map(Value::Object).unwrap_or_else(|| Value::Object(Default::default()));
        // A 2026-07-28 client's retry, answering the question its call asked (SEP-2322).
        let stateless = self.connection.shared.get().cloned();
        if let (Some(client), Some(token)) = (&stateless, request.request_state.as_deref()) {
            let responses = request.input_responses.as_ref();
            let round =
                crate::call_rounds::resume_in_rounds(client, token, &tool, &arguments, responses, &context)
                    .await?;
            return crate::call_rounds::response_of(round, |r| self.finished(&tool, r, &names));
        }
        let call_id = self.next_call_id();
        let (forwarder, waiting) = match (context.meta.get_progress_token(), self.connection.backend.events())
        {
            (Some(token), Some(events)) => {
                let (notes, waiting) = mpsc::unbounded_channel();
                let sink = crate::progress::ProgressSink::of(&context);
                (
                    Some(crate::progress::forward_progress(
                        events,
                        waiting,
                        sink,
                        token,
                        session.clone(),
                        call_id.clone(),
                    )),
                    Some(notes),
                )
            }
            _ => (None, None),
        };
        if let Some(client) = &stateless {
            let offered = request.input_responses;
            let call = crate::call_rounds::NewCall {
                session,
                call_id,
                tool: tool.clone(),
                arguments,
                mcp,
                waiting,
                offered,
            };
            let round =
                crate::call_rounds::call_in_rounds(&self.connection.backend, client, call, &context).await?;
            if let Some(mut forwarder) = forwarder
                && tokio::time::timeout(crate::progress::PROGRESS_DRAIN, &mut forwarder).await.is_err()
            {
                forwarder.abort();
            }
            return crate::call_rounds::response_of(round, |r| self.finished(&tool, r, &names));
        }
        let _route = self.route(&session, &call_id, &context);
        // Cancellation goes through the pipeline (the call ends with a record), never by dropping it: a
        // caller whose connection closed cancels the call as a cancel request would.
        let cancel = context.ct.clone();
        let call = (self.connection.backend).call(
            &session,
            &call_id,
            &tool,
            arguments,
            mcp,
            cancel.clone(),
            waiting,
        );
        let result = match CallerGone::of(&context.extensions) {
            Some(gone) => {
                tokio::pin!(call);
                tokio::select! {
                    biased;
                    result = &mut call => result,
                    () = gone.cancelled() => {
                        tracing::info!(%session, %call_id, "the caller's connection closed: the call is withdrawn");
                        cancel.cancel();
                        call.await
                    }
                }
            }
            None => call.await,
        };
        if let Some(mut forwarder) = forwarder
            && tokio::time::timeout(crate::progress::PROGRESS_DRAIN, &mut forwarder).await.is_err()
        {
            forwarder.abort();
        }
        self.finished(&tool, result, &names)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(self.resources()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(self.templates()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.read(request.uri, context).await.map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(self.prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let rounds = (request.input_responses, request.request_state);
        self.prompt(request.name, request.arguments, rounds, context).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        self.completion(request).await
    }

    // Logging and legacy subscriptions are deprecated in rmcp (SEP-2577, 2026-07-28) but are part of
    // the protocol versions agents speak today (up to 2025-11-25).
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.log_level(request).await
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscription(request.uri, true).await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscription(request.uri, false).await
    }

    /// rmcp reads a request to a known method whose params do not fit as a custom request: those are
    /// invalid params (-32602), and a malformed `tools/call` is also recorded as a blocked call.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        if request.method == TOOLS_CALL {
            let session = self.session_id(&context).await;
            let names = self.connection.backend.wire_names();
            let (tool, arguments, why) = malformed_call(request.params.as_ref(), &names);
            let call_id = self.next_call_id();
            let result =
                self.connection.backend.refuse_malformed(&session, &call_id, &tool, arguments, why).await;
            let (reason, message) = match &result.outcome {
                portcullis_harness::CallOutcome::Blocked { reason, error } => {
                    (reason.to_string(), error.message.clone())
                }
                _ => ("invalid_arguments".to_owned(), "malformed tools/call params".to_owned()),
            };
            let data = serde_json::json!({ "portcullis": { "blocked": reason, "call_id": call_id } });
            return Err(McpError::invalid_params(format!("Invalid params: {message}"), Some(data)));
        }
        if CLIENT_METHODS.contains(&request.method.as_str()) {
            return Err(McpError::invalid_params(
                format!("Invalid params: the params of {} do not fit its schema", request.method),
                None,
            ));
        }
        Err(McpError::new(ErrorCode::METHOD_NOT_FOUND, request.method, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use portcullis_harness::{CallOutcome, Content, DecidedBy, ToolOutput};

    #[test]
    fn search_results_name_tools_as_agents_call_them() {
        let names = WireNames::new(["search_tools", "mcp:ev:echo", "shell"]);
        let mut output = ToolOutput::text("mcp:ev:echo: Echoes the input\nshell: Run a command");
        output.structured = Some(serde_json::json!({"tools": ["mcp:ev:echo", "shell"], "full": false}));
        let mut result = ToolCallResult {
            call_id: "c".into(),
            tool_name: "search_tools".into(),
            outcome: CallOutcome::Finished { output: std::sync::Arc::new(output) },
            decided_by: DecidedBy::DEFAULT,
            redacted: false,
        };
        wire_names_in_search(&mut result, &names);
        let CallOutcome::Finished { output } = &result.outcome else { panic!() };
        assert_eq!(
            output.content,
            vec![Content::Text { text: "ev__echo: Echoes the input\nshell: Run a command".into() }]
        );
        assert_eq!(output.structured.as_ref().unwrap()["tools"], serde_json::json!(["ev__echo", "shell"]));
    }
}
