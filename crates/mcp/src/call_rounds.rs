//! `tools/call` of a 2026-07-28 (stateless) client, in rounds: the hub's call runs in a task of its
//! own, so that a question put to the agent during it (see [`crate::input_rounds`]) can be the answer
//! to this request, and the agent's retry — the same tool and arguments, the answer, our
//! `requestState` — resumes the same call rather than starting another.

use crate::backend::{GatewayBackend, WaitNotes};
use crate::client_side::{AgentRoute, CallOrigin};
use crate::input_rounds::{Resumed, Round, RunningCall};
use crate::stateless::StatelessSession;
use portcullis_harness::{McpRequest, ToolCallResult};
use rmcp::model::{CallToolResponse, InputResponses};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A new call, as the gateway handler's `call_tool` would make it, but in rounds.
pub(crate) struct NewCall {
    pub session: String,
    pub call_id: String,
    pub tool: String,
    pub arguments: Value,
    pub mcp: McpRequest,
    pub waiting: Option<WaitNotes>,
    /// The agent's `inputResponses` sent with the call itself (see [`RunningCall::offered`]).
    pub offered: Option<InputResponses>,
}

/// Starts `call` on `backend` in a task of its own and runs it until it ends or asks the agent a
/// question.
pub(crate) async fn call_in_rounds(
    backend: &Arc<dyn GatewayBackend>,
    client: &Arc<StatelessSession>,
    call: NewCall,
    context: &RequestContext<RoleServer>,
) -> Result<Round, McpError> {
    let (questions, asked) = tokio::sync::mpsc::unbounded_channel();
    let route = backend.agent_routes().map(|routes| {
        let origin = CallOrigin { session_id: call.session.clone(), call_id: call.call_id.clone() };
        let capabilities = context.meta.client_capabilities().and_then(|c| serde_json::to_value(c).ok());
        let route = AgentRoute {
            peer: context.peer.clone(),
            request_id: context.id.clone(),
            questions: Some(questions),
            capabilities: Some(capabilities.unwrap_or_else(|| json!({}))),
        };
        routes.enter(origin, route)
    });
    // Its own cancellation: the request that started it ends when the first question is asked.
    let cancel = CancellationToken::new();
    let backend = backend.clone();
    let NewCall { session, call_id, tool, arguments, mcp, waiting, offered } = call;
    let (task_cancel, task_call, task_tool, task_arguments) =
        (cancel.clone(), call_id.clone(), tool.clone(), arguments.clone());
    let task = tokio::spawn(async move {
        backend.call(&session, &task_call, &task_tool, task_arguments, mcp, task_cancel, waiting).await
    });
    let offered = Box::new(offered.unwrap_or_default());
    let running = RunningCall { call_id, call: task, questions: asked, cancel, route, offered };
    Ok(client.parked.drive(running, &tool, &arguments, gone(context)).await)
}

/// Resumes the call parked under `token` (the agent's `requestState`) with its answer.
pub(crate) async fn resume_in_rounds(
    client: &Arc<StatelessSession>,
    token: &str,
    tool: &str,
    arguments: &Value,
    responses: Option<&InputResponses>,
    context: &RequestContext<RoleServer>,
) -> Result<Round, McpError> {
    match client.parked.resume(token, tool, arguments, responses) {
        Resumed::Call(running) => Ok(client.parked.drive(running, tool, arguments, gone(context)).await),
        Resumed::Unknown => Err(McpError::invalid_params(
            "requestState is not one this gateway gave this client for a call waiting on a question \
             (altered, used already, or its call ended)",
            Some(json!({ "requestState": "unknown" })),
        )),
        Resumed::OtherCall => Err(McpError::invalid_params(
            "requestState belongs to another call (another tool or other arguments): a retry must \
             repeat the call that was asked about",
            Some(json!({ "requestState": "other_call" })),
        )),
    }
}

/// The agent's request went away (its connection closed): the call is withdrawn, as any call is.
fn gone(context: &RequestContext<RoleServer>) -> Option<CancellationToken> {
    crate::caller::CallerGone::of(&context.extensions)
}

/// What a round gives the agent: the call's result, or the question.
pub(crate) fn response_of(
    round: Round,
    finish: impl FnOnce(ToolCallResult) -> Result<CallToolResponse, McpError>,
) -> Result<CallToolResponse, McpError> {
    match round {
        Round::Done(result) => finish(result),
        Round::Asked(asked) => Ok(CallToolResponse::InputRequired(asked)),
    }
}
