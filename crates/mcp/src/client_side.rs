//! Requests an upstream server sends the client while it serves a call — sampling
//! (`sampling/createMessage`), elicitation (`elicitation/create`) — relayed to the agent whose call
//! caused them, and judged first: each is dispatched as a call of `mcp:<server>:sampling/createMessage`
//! or `mcp:<server>:elicitation/create` in the agent's session (grants, the server's policy, an
//! operator's approval, the ledger), and only a call that runs reaches the agent.
//!
//! The pieces: the gateway keeps an [`AgentRoutes`] entry (the agent's connection and request) for
//! every call in flight; an upstream request knows which of its calls it belongs to (the stream it came
//! on, else the only call in flight on that server); the host's [`ClientRelay`] dispatches the relayed
//! call; its tool ([`AgentRequestTool`]) sends the request on the agent's connection, tied to the
//! agent's request so it rides that request's stream.

use async_trait::async_trait;
use portcullis_harness::CallErrorCode;
use portcullis_harness::{
    ActionKind, CallContext, ExecutionAction, Risk, Tool, ToolError, ToolInvocation, ToolOutput, ToolSpec,
};
use rmcp::model::{GetExtensions, RequestId, ServerRequest};
use rmcp::service::OriginatingRequestId;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// `sampling/createMessage`: the agent's model completes messages the server wrote.
pub const SAMPLING: &str = portcullis_harness::MCP_SAMPLING;
/// `elicitation/create`: the agent's user is asked for input the server describes.
pub const ELICITATION: &str = portcullis_harness::MCP_ELICITATION;
/// `roots/list`: the agent's workspace folders.
pub const ROOTS: &str = portcullis_harness::MCP_ROOTS;
/// The client requests relayed, each with the capability the agent must have declared and the word
/// its calls' actions use.
pub const RELAYED: [(&str, &str); 3] =
    [(SAMPLING, "sampling"), (ELICITATION, "elicitation"), (ROOTS, "roots")];

/// Where a relayed question carries the key its server gave it (`params._meta`), so the agent answers
/// under the server's own key; taken out before the question reaches the agent.
pub const KEY_META: &str = "io.portcullis/inputKey";

/// A question a relayed call puts to a 2026-07-28 agent (see [`AgentRoute::questions`]), and where its
/// answer goes. The calls parked on such questions (`input_rounds.rs`) build on these; they are defined
/// here, by the relaying that sends them, so the relaying need not reach up to the rounds.
#[derive(Debug)]
pub struct Question {
    /// The server's key for it, if it gave one.
    pub key: Option<String>,
    pub method: &'static str,
    pub params: Value,
    pub answer: oneshot::Sender<Result<Value, String>>,
}

/// Where the relayed calls of one agent request send their questions.
pub type Questions = mpsc::UnboundedSender<Question>;

/// The call an upstream request belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallOrigin {
    pub session_id: String,
    pub call_id: String,
}

impl CallOrigin {
    /// The call a tool invocation belongs to.
    pub fn of(call: &CallContext) -> Self {
        CallOrigin { session_id: call.session_id.to_string(), call_id: call.call_id.to_string() }
    }
}

/// Where a call's agent is: its connection, the request that made the call, what it can answer.
#[derive(Clone)]
pub struct AgentRoute {
    pub peer: Peer<RoleServer>,
    pub request_id: RequestId,
    /// A 2026-07-28 agent (no server-to-client requests): questions go back as its request's answer
    /// (Multi Round-Trip Requests, `input_rounds.rs`) instead of down its connection.
    pub questions: Option<Questions>,
    /// What a 2026-07-28 agent declared it can answer, from its request's `_meta` (a session's are in
    /// its peer's `initialize`).
    pub capabilities: Option<Value>,
}

impl AgentRoute {
    /// What the agent declared it can answer: its request's capabilities (a 2026-07-28 agent), else
    /// its session's from `initialize`, else nothing.
    pub fn declared(&self) -> Value {
        self.capabilities
            .clone()
            .or_else(|| self.peer.peer_info().and_then(|info| serde_json::to_value(&info.capabilities).ok()))
            .unwrap_or_else(|| json!({}))
    }
}

/// The routes of the calls in flight (and of the relayed calls made for them), by session and call id.
#[derive(Clone, Default)]
pub struct AgentRoutes(Arc<Mutex<HashMap<CallOrigin, AgentRoute>>>);

/// Removes a route when its call ends, however it ends.
pub struct RouteGuard {
    routes: AgentRoutes,
    origin: CallOrigin,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.routes.lock().remove(&self.origin);
    }
}

impl AgentRoutes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CallOrigin, AgentRoute>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps `route` for the call `origin` until the guard drops.
    pub fn enter(&self, origin: CallOrigin, route: AgentRoute) -> RouteGuard {
        self.lock().insert(origin.clone(), route);
        RouteGuard { routes: self.clone(), origin }
    }

    pub fn get(&self, origin: &CallOrigin) -> Option<AgentRoute> {
        self.lock().get(origin).cloned()
    }
}

/// The host's side of relaying: dispatches `mcp:<server>:<method>` with the request's params as its
/// arguments in the session of `origin`, the relayed call routed to the same agent, and returns the
/// agent's result or why there is none.
#[async_trait]
pub trait ClientRelay: Send + Sync + 'static {
    async fn relay(
        &self,
        server: &str,
        origin: CallOrigin,
        method: &'static str,
        params: Value,
    ) -> Result<Value, McpError>;

    /// What the agent of the call `origin` declared it can answer (its client capabilities), if the
    /// call has an agent: an upstream request made for the call declares no more than that.
    fn declared(&self, origin: &CallOrigin) -> Option<Value>;
}

impl AgentRequestTool {
    /// Puts the question to a 2026-07-28 agent as its request's answer, and waits for its retry.
    async fn ask_in_rounds(
        &self,
        questions: &Questions,
        key: Option<String>,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, ToolError> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let question = Question { key, method: self.method, params: invocation.arguments, answer };
        if questions.send(question).is_err() {
            return Err(ToolError::new(
                CallErrorCode::AgentGone,
                "the agent's call this request belongs to has ended",
            ));
        }
        let answered = tokio::select! {
            answered = tokio::time::timeout(self.timeout, answered) => answered,
            () = invocation.cancel.cancelled() => return Err(ToolError::new(CallErrorCode::Cancelled, "the call was cancelled")),
        };
        match answered {
            Err(_) => Err(ToolError::new(
                CallErrorCode::AgentTimeout,
                format!("the agent did not answer {} within {} s", self.method, self.timeout.as_secs()),
            )),
            Ok(Err(_)) => Err(ToolError::new(
                CallErrorCode::AgentGone,
                "the agent's call this request belongs to has ended",
            )),
            Ok(Ok(Err(why))) => {
                Err(ToolError::new(CallErrorCode::AgentError, format!("{}: {why}", self.method)))
            }
            Ok(Ok(Ok(value))) => Ok(ToolOutput::structured(value)),
        }
    }
}

/// Takes the server's input key out of a relayed request's `params._meta` (and `_meta` itself when
/// nothing else is in it).
fn take_input_key(params: &mut Value) -> Option<String> {
    let meta = params.get_mut("_meta").and_then(Value::as_object_mut)?;
    let key = meta.remove(KEY_META).and_then(|k| k.as_str().map(str::to_owned));
    if meta.is_empty()
        && let Some(params) = params.as_object_mut()
    {
        params.remove("_meta");
    }
    key
}

/// The registry tool of one relayed method of one server.
pub struct AgentRequestTool {
    spec: ToolSpec,
    method: &'static str,
    routes: AgentRoutes,
    timeout: Duration,
}

impl AgentRequestTool {
    pub fn new(server: &str, method: &'static str, routes: AgentRoutes, timeout: Duration) -> Self {
        let what = match method {
            SAMPLING => "has the agent's model complete messages",
            ELICITATION => "asks the agent's user for input",
            _ => "asks for the agent's workspace folders (roots)",
        };
        let spec =
            ToolSpec::new(format!("mcp:{server}:{method}"), format!("The MCP server {server} {what}."))
                .with_parameters(json!({ "type": "object" }));
        let spec = ToolSpec { meta: Some(json!({ "server": server, "method": method })), ..spec };
        AgentRequestTool { spec, method, routes, timeout }
    }
}

#[async_trait]
impl Tool for AgentRequestTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe_action(&self, _arguments: &Value, _call: &CallContext) -> Result<ExecutionAction, ToolError> {
        let operation = RELAYED.iter().find(|(m, _)| *m == self.method).map_or("call", |(_, word)| *word);
        Ok(ExecutionAction::new(ActionKind::Mcp, operation).with_risk(Risk::Medium))
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let origin = CallOrigin::of(&invocation.call);
        let route = self.routes.get(&origin).ok_or_else(|| {
            ToolError::new(CallErrorCode::AgentGone, "the agent's call this request belongs to has ended")
        })?;
        let capability = RELAYED.iter().find(|(m, _)| *m == self.method).map_or("", |(_, c)| *c);
        if route.declared().get(capability).is_none() {
            return Err(ToolError::new(
                CallErrorCode::AgentCannotAnswer,
                format!("the agent did not declare the {capability} capability"),
            ));
        }
        // The server's key for this question (a 2026-07-28 server's input request) is ours, not the
        // agent's: taken out of the params it is sent with.
        let mut invocation = invocation;
        let key = take_input_key(&mut invocation.arguments);
        // `roots/list` takes no params.
        let request = if self.method == ROOTS {
            json!({ "method": self.method })
        } else {
            json!({ "method": self.method, "params": invocation.arguments })
        };
        let mut request: ServerRequest = serde_json::from_value(request).map_err(|e| {
            ToolError::new(CallErrorCode::InvalidArguments, format!("{} params do not fit: {e}", self.method))
        })?;
        if let Some(questions) = &route.questions {
            return self.ask_in_rounds(questions, key, invocation).await;
        }
        // Tied to the agent's request, so it rides that request's stream (Streamable HTTP).
        request.extensions_mut().insert(OriginatingRequestId(route.request_id.clone()));
        let sent = route.peer.send_request(request);
        let answer = tokio::select! {
            answer = tokio::time::timeout(self.timeout, sent) => answer,
            () = invocation.cancel.cancelled() => return Err(ToolError::new(CallErrorCode::Cancelled, "the call was cancelled")),
        };
        let result = match answer {
            Err(_) => {
                return Err(ToolError::new(
                    CallErrorCode::AgentTimeout,
                    format!("the agent did not answer {} within {} s", self.method, self.timeout.as_secs()),
                ));
            }
            Ok(Err(e)) => {
                return Err(ToolError::new(
                    CallErrorCode::AgentError,
                    format!("the agent answered {}: {e}", self.method),
                ));
            }
            Ok(Ok(result)) => result,
        };
        let value = serde_json::to_value(result)
            .map_err(|e| ToolError::new(CallErrorCode::AgentError, format!("the agent's answer: {e}")))?;
        Ok(ToolOutput::structured(value))
    }
}
