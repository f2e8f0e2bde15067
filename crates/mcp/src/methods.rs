//! The gateway's MCP methods besides tools: resources (list, templates, read, subscribe), prompts (list,
//! get), completion and logging. Reads and prompts run through the backend's pipeline as calls, so the
//! grants, the policy, an operator and the ledger see each one; the rest is forwarded to the server
//! that owns the name, for names the agent may see. Upstream answers (of an older revision) are marked
//! `resultType: "complete"`, as 2026-07-28 requires; rmcp takes the mark off for older clients.

use crate::gateway::{GatewayHandler, mcp_request};
use crate::offered::{self, RESOURCE_NOT_FOUND, ServerOfferings};
use crate::upstream::UpstreamNotice;
use portcullis_harness::ToolCallResult;
use rmcp::model::{
    ClientRequest, CompleteRequestParams, CompleteResult, ErrorCode, GetPromptResponse, GetPromptResult,
    JsonObject, Prompt, ReadResourceResult, Reference, Request, Resource, ResourceTemplate, ResultType,
    ServerResult,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde_json::{Value, json};
use std::sync::Weak;

/// Log levels from the least to the most severe (RFC 5424 names, as MCP spells them).
const LOG_LEVELS: [&str; 8] =
    ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

fn level_rank(level: &str) -> Option<u8> {
    LOG_LEVELS.iter().position(|l| *l == level).and_then(|i| u8::try_from(i).ok())
}

fn unknown_resource(uri: &str) -> McpError {
    McpError::new(RESOURCE_NOT_FOUND, format!("Resource not found: {uri}"), Some(json!({ "uri": uri })))
}

fn decode<T: serde::de::DeserializeOwned>(value: Value, what: &str) -> Result<T, McpError> {
    serde_json::from_value(value)
        .map_err(|e| McpError::internal_error(format!("the upstream {what} does not fit MCP: {e}"), None))
}

impl GatewayHandler {
    fn servers(&self) -> Vec<ServerOfferings> {
        self.connection.backend.offerings()
    }

    pub(crate) fn resources(&self) -> Vec<Resource> {
        offered::resources(&self.connection.backend.naming(), &self.servers())
    }

    pub(crate) fn templates(&self) -> Vec<ResourceTemplate> {
        offered::templates(&self.connection.backend.naming(), &self.servers())
    }

    pub(crate) fn prompts(&self) -> Vec<Prompt> {
        offered::prompts(&self.connection.backend.naming(), &self.servers())
    }

    /// `resources/read`: the call `mcp:<server>:resources/read` of the server that owns the URI.
    pub(crate) async fn read(
        &self,
        uri: String,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, McpError> {
        let naming = self.connection.backend.naming();
        let servers = self.servers();
        let (server, own) = naming.resolve_uri(&servers, &uri).ok_or_else(|| unknown_resource(&uri))?;
        let session = self.session_id(&context).await;
        let call_id = self.next_call_id();
        let tool = format!("mcp:{server}:{}", portcullis_harness::MCP_RESOURCES_READ);
        let arguments = json!({ "uri": own });
        let request = mcp_request(portcullis_harness::MCP_RESOURCES_READ, &context);
        let _route = self.route(&session, &call_id, &context);
        let result = self
            .connection
            .backend
            .call(&session, &call_id, &tool, arguments, request, context.ct.clone(), None)
            .await;
        // A missing resource's `data.uri` names it as the agent does.
        let value = offered::method_result(&result).map_err(|mut e| {
            if let Some(Value::Object(data)) = e.data.as_mut()
                && data.contains_key("uri")
            {
                data.insert("uri".into(), Value::String(uri.clone()));
            }
            e
        })?;
        let mut read: ReadResourceResult =
            decode(offered::rename_contents(&naming, &server, value), "resource")?;
        read.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(read)
    }

    /// `prompts/get`: the call `mcp:<server>:prompts/get` of the server that owns the prompt.
    pub(crate) async fn prompt(
        &self,
        name: String,
        arguments: Option<JsonObject>,
        (responses, state): (Option<rmcp::model::InputResponses>, Option<String>),
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let naming = self.connection.backend.naming();
        let (server, own) = naming
            .resolve_prompt(&self.servers(), &name, offered::PromptScope::Listed)
            .ok_or_else(|| McpError::invalid_params(format!("unknown prompt {name:?}"), None))?;
        let tool = format!("mcp:{server}:{}", portcullis_harness::MCP_PROMPTS_GET);
        let mut params = json!({ "name": own });
        if let Some(arguments) = arguments {
            params["arguments"] = Value::Object(arguments);
        }
        let decoded = |result: &ToolCallResult| -> Result<GetPromptResult, McpError> {
            let mut prompt: GetPromptResult = decode(offered::method_result(result)?, "prompt")?;
            prompt.result_type.get_or_insert(ResultType::COMPLETE);
            Ok(prompt)
        };
        // A 2026-07-28 client: the server may ask it for input on the way (SEP-2322), in rounds. (Its
        // ledger session is found first: that is what tells a stateless client on a fresh connection.)
        let session = self.session_id(&context).await;
        if let Some(client) = self.stateless_client() {
            let round = match state.as_deref() {
                Some(token) => {
                    crate::call_rounds::resume_in_rounds(
                        &client,
                        token,
                        &tool,
                        &params,
                        responses.as_ref(),
                        &context,
                    )
                    .await?
                }
                None => {
                    let call_id = self.next_call_id();
                    let mcp = mcp_request(portcullis_harness::MCP_PROMPTS_GET, &context);
                    let call = crate::call_rounds::NewCall {
                        session,
                        call_id,
                        tool: tool.clone(),
                        arguments: params.clone(),
                        mcp,
                        waiting: None,
                        offered: responses,
                    };
                    crate::call_rounds::call_in_rounds(&self.connection.backend, &client, call, &context)
                        .await?
                }
            };
            return match round {
                crate::input_rounds::Round::Done(result) => decoded(&result).map(GetPromptResponse::Complete),
                crate::input_rounds::Round::Asked(asked) => Ok(GetPromptResponse::InputRequired(asked)),
            };
        }
        let call_id = self.next_call_id();
        let _route = self.route(&session, &call_id, &context);
        let request = mcp_request(portcullis_harness::MCP_PROMPTS_GET, &context);
        let result = (self.connection.backend)
            .call(&session, &call_id, &tool, params, request, context.ct.clone(), None)
            .await;
        decoded(&result).map(GetPromptResponse::Complete)
    }

    /// `completion/complete` of a visible prompt's argument or a visible template's variable.
    pub(crate) async fn completion(
        &self,
        mut request: CompleteRequestParams,
    ) -> Result<CompleteResult, McpError> {
        let naming = self.connection.backend.naming();
        let servers = self.servers();
        let server = match &mut request.r#ref {
            Reference::Prompt(prompt) => {
                let (server, own) =
                    naming.resolve_prompt(&servers, &prompt.name, offered::PromptScope::Visible).ok_or_else(
                        || McpError::invalid_params(format!("unknown prompt {:?}", prompt.name), None),
                    )?;
                prompt.name = own;
                server
            }
            Reference::Resource(template) => {
                let (server, own) = naming
                    .resolve_uri(&servers, &template.uri)
                    .filter(|(server, own)| {
                        servers.iter().any(|s| {
                            s.server == *server
                                && s.offerings.templates.iter().any(|t| t.uri_template == *own)
                        })
                    })
                    .map(|(server, own)| (server, own.to_owned()))
                    .ok_or_else(|| unknown_resource(&template.uri))?;
                template.uri = own;
                server
            }
            _ => return Err(McpError::invalid_params("a completion reference of an unknown kind", None)),
        };
        let completes = servers.iter().any(|s| s.server == server && s.offerings.completions);
        if !completes {
            let mut none = CompleteResult::default();
            none.result_type.get_or_insert(ResultType::COMPLETE);
            return Ok(none);
        }
        match self
            .connection
            .backend
            .forward(&server, ClientRequest::CompleteRequest(Request::new(request)))
            .await?
        {
            ServerResult::CompleteResult(mut result) => {
                result.result_type.get_or_insert(ResultType::COMPLETE);
                Ok(result)
            }
            _ => Err(McpError::internal_error(
                format!("{server} answered completion/complete otherwise"),
                None,
            )),
        }
    }

    /// `logging/setLevel`: this agent's level, kept for this connection (its log messages are filtered
    /// by it here), and asked of every visible server that logs. Upstream a level is per server, so the
    /// last agent to ask sets it for all; each agent still gets only what its own level lets through.
    #[allow(deprecated)]
    pub(crate) async fn log_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
    ) -> Result<(), McpError> {
        let name = serde_json::to_value(request.level).ok().and_then(|v| v.as_str().map(str::to_owned));
        let rank = name
            .as_deref()
            .and_then(level_rank)
            .ok_or_else(|| McpError::invalid_params("unknown log level", None))?;
        *self.connection.log_level.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(rank);
        for server in self.servers().into_iter().filter(|s| s.offerings.logging) {
            let forwarded = ClientRequest::SetLevelRequest(Request::new(request.clone()));
            if let Err(e) = self.connection.backend.forward(&server.server, forwarded).await {
                tracing::debug!(server = %server.server, error = %e.message, "logging/setLevel not forwarded");
            }
        }
        Ok(())
    }

    /// `resources/subscribe` (`on`) or `resources/unsubscribe` of a visible resource's URI.
    #[allow(deprecated)]
    pub(crate) async fn subscription(&self, uri: String, on: bool) -> Result<(), McpError> {
        let naming = self.connection.backend.naming();
        let servers = self.servers();
        let (server, own) = naming.resolve_uri(&servers, &uri).ok_or_else(|| unknown_resource(&uri))?;
        let subscribes = servers.iter().any(|s| s.server == server && s.offerings.subscribe);
        {
            let mut subscriptions =
                self.connection.subscriptions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if on {
                subscriptions.insert(uri.clone());
            } else {
                subscriptions.remove(&uri);
            }
        }
        if !subscribes {
            return Ok(());
        }
        let request = if on {
            ClientRequest::SubscribeRequest(Request::new(rmcp::model::SubscribeRequestParams::new(own)))
        } else {
            ClientRequest::UnsubscribeRequest(Request::new(rmcp::model::UnsubscribeRequestParams::new(own)))
        };
        match self.connection.backend.forward(&server, request).await {
            Ok(_) => Ok(()),
            Err(e) if e.code == ErrorCode::METHOD_NOT_FOUND => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Sends this agent the upstream notices it asked for (resource updates of its subscriptions, log
    /// messages at or above its level) until the connection ends.
    pub(crate) fn forward_notices(&self, peer: Peer<RoleServer>) {
        let Some(mut notices) = self.connection.backend.notices() else { return };
        let weak: Weak<crate::connection::Connection> = std::sync::Arc::downgrade(&self.connection);
        tokio::spawn(async move {
            loop {
                let notice = match notices.recv().await {
                    Ok(notice) => notice,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        tracing::debug!(missed = n, "upstream notices dropped for a slow agent");
                        continue;
                    }
                    Err(_) => break,
                };
                let Some(connection) = weak.upgrade() else { break };
                if peer.is_transport_closed() {
                    break;
                }
                let naming = connection.backend.naming();
                let sent = match notice {
                    UpstreamNotice::ResourceUpdated { server, uri } => {
                        let uri = naming.resource_uri(&server, &uri);
                        let subscribed = naming.shows(&server)
                            && connection
                                .subscriptions
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .contains(&uri);
                        if !subscribed {
                            continue;
                        }
                        peer.notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(uri))
                            .await
                    }
                    UpstreamNotice::Log { server, message } => {
                        let wanted =
                            *connection.log_level.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        let rank = message.get("level").and_then(Value::as_str).and_then(level_rank);
                        if !naming.shows(&server) || wanted.is_none() || rank < wanted {
                            continue;
                        }
                        send_log(&peer, &naming, &server, message).await
                    }
                };
                if let Err(e) = sent {
                    tracing::debug!(error = %e, "upstream notice not delivered");
                }
            }
        });
    }
}

/// A server's log message to an agent; its logger is named after the server when names are spaced.
#[allow(deprecated)]
async fn send_log(
    peer: &Peer<RoleServer>,
    naming: &offered::Naming,
    server: &str,
    mut message: Value,
) -> Result<(), rmcp::service::ServiceError> {
    if *naming == offered::Naming::Namespaced {
        let logger = message.get("logger").and_then(Value::as_str).map(|l| format!("{server}/{l}"));
        message["logger"] = Value::String(logger.unwrap_or_else(|| server.to_owned()));
    }
    match serde_json::from_value::<rmcp::model::LoggingMessageNotificationParam>(message) {
        Ok(param) => peer.notify_logging_message(param).await,
        Err(e) => {
            tracing::debug!(error = %e, "an upstream log message that does not fit MCP was dropped");
            Ok(())
        }
    }
}
