//! What an upstream server offers besides tools: its resources, resource templates and prompts (listed
//! within the server's bounds whenever it connects or says they changed), and the two methods agents
//! reach them by — `resources/read` and `prompts/get` — as tools of the registry
//! (`mcp:<server>:resources/read`, `mcp:<server>:prompts/get`), so each read and each prompt passes the
//! same grants, policy, approval and ledger as a tool call. The gateway hides them from `tools/list`.

use super::UpstreamLimits;
use super::request::Reach;
use crate::client_side::{AgentRequestTool, AgentRoutes, CallOrigin, ELICITATION, ROOTS, SAMPLING};
use async_trait::async_trait;
use portcullis_harness::CallErrorCode;
use portcullis_harness::{
    ActionKind, CallContext, ExecutionAction, MCP_PROMPTS_GET, MCP_READ, MCP_RESOURCES_READ, Risk, Tool,
    ToolError, ToolInvocation, ToolOutput, ToolSpec,
};
use rmcp::model::{
    PaginatedRequestParams, Prompt, Resource, ResourceTemplate, ServerCapabilities, ServerResult,
};
use rmcp::{Peer, RoleClient};
use serde_json::{Value, json};
use std::sync::Arc;

/// A server's resources, templates and prompts as last listed, and what it said it can do.
#[derive(Debug, Clone, Default)]
pub struct Offerings {
    pub resources: Vec<Resource>,
    pub templates: Vec<ResourceTemplate>,
    pub prompts: Vec<Prompt>,
    /// The server offers resources (`resources/read` is registered).
    pub has_resources: bool,
    /// It takes `resources/subscribe`.
    pub subscribe: bool,
    pub has_prompts: bool,
    pub completions: bool,
    pub logging: bool,
}

impl Offerings {
    /// A digest of what agents may list (resources, templates, prompts): it differs when a list did.
    pub fn listed_digest(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        for list in [
            serde_json::to_string(&self.resources),
            serde_json::to_string(&self.templates),
            serde_json::to_string(&self.prompts),
        ] {
            list.unwrap_or_default().hash(&mut hasher);
        }
        hasher.finish()
    }
}

impl Offerings {
    /// The capabilities a server announced in `initialize`, nothing listed yet.
    pub fn of_capabilities(capabilities: &ServerCapabilities) -> Self {
        Offerings {
            has_resources: capabilities.resources.is_some(),
            subscribe: capabilities.resources.as_ref().and_then(|r| r.subscribe).unwrap_or(false),
            has_prompts: capabilities.prompts.is_some(),
            completions: capabilities.completions.is_some(),
            logging: capabilities.logging.is_some(),
            ..Offerings::default()
        }
    }
}

/// Reads every page of one listing, at most `limits.list_pages` pages and `limits.max_tools` items.
async fn list_pages<T, F, Fut>(what: &str, limits: &UpstreamLimits, mut page: F) -> Result<Vec<T>, String>
where
    F: FnMut(Option<PaginatedRequestParams>) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<T>, Option<String>), rmcp::ServiceError>>,
{
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for n in 0..limits.list_pages {
        let params = cursor.take().map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let (listed, next) = tokio::time::timeout(limits.connect_timeout, page(params))
            .await
            .map_err(|_| format!("{what} did not answer"))?
            .map_err(|e| format!("{what} failed: {e}"))?;
        items.extend(listed);
        if items.len() >= limits.max_tools {
            items.truncate(limits.max_tools);
            break;
        }
        match next {
            Some(next) if n + 1 < limits.list_pages => cursor = Some(next),
            _ => break,
        }
    }
    Ok(items)
}

/// Lists what the server's capabilities say it offers (a failed listing fails the refresh: the
/// server misbehaves).
pub(super) async fn list(peer: &Peer<RoleClient>, limits: &UpstreamLimits) -> Result<Offerings, String> {
    let capabilities = peer.peer_info().map(|info| info.capabilities.clone()).unwrap_or_default();
    let mut offerings = Offerings::of_capabilities(&capabilities);
    if offerings.has_resources {
        offerings.resources = list_pages("resources/list", limits, |params| async move {
            peer.list_resources(params).await.map(|r| (r.resources, r.next_cursor))
        })
        .await?;
        offerings.templates = list_pages("resources/templates/list", limits, |params| async move {
            peer.list_resource_templates(params).await.map(|r| (r.resource_templates, r.next_cursor))
        })
        .await?;
    }
    if offerings.has_prompts {
        offerings.prompts = list_pages("prompts/list", limits, |params| async move {
            peer.list_prompts(params).await.map(|r| (r.prompts, r.next_cursor))
        })
        .await?;
    }
    Ok(offerings)
}

/// The registry tools of a server's methods: those of what it offers, and the requests it may send the
/// agent during a call (sampling, elicitation, roots).
pub(super) fn method_tools(offerings: &Offerings, reach: &Reach, routes: &AgentRoutes) -> Vec<Arc<dyn Tool>> {
    let server = reach.server.as_str();
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for method in [SAMPLING, ELICITATION, ROOTS] {
        tools.push(Arc::new(AgentRequestTool::new(
            server,
            method,
            routes.clone(),
            reach.limits.call_timeout,
        )));
    }
    let mut add = |method: &'static str, description: String, schema: Value| {
        let spec = ToolSpec::new(format!("mcp:{server}:{method}"), description)
            .with_parameters(schema)
            .with_annotations(portcullis_harness::ToolAnnotations { read_only: true, ..Default::default() });
        let spec = ToolSpec { meta: Some(json!({ "server": server, "method": method })), ..spec };
        tools.push(Arc::new(MethodTool { spec, method, reach: reach.clone() }));
    };
    if offerings.has_resources {
        add(
            MCP_RESOURCES_READ,
            format!("Read a resource of the MCP server {server}."),
            json!({"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]}),
        );
    }
    if offerings.has_prompts {
        add(
            MCP_PROMPTS_GET,
            format!("Get a prompt of the MCP server {server}."),
            json!({"type": "object", "properties": {
                "name": {"type": "string"},
                "arguments": {"type": "object", "additionalProperties": {"type": "string"}}
            }, "required": ["name"]}),
        );
    }
    tools
}

/// `resources/read` or `prompts/get` of one server, as a tool: its action names what it reads (the
/// policy judges the URI or the prompt), its output's structured value is the server's result as is.
struct MethodTool {
    spec: ToolSpec,
    method: &'static str,
    reach: Reach,
}

impl MethodTool {
    /// The URI read or the prompt got.
    fn target<'a>(&self, arguments: &'a Value) -> Option<&'a str> {
        let key = if self.method == MCP_RESOURCES_READ { "uri" } else { "name" };
        arguments.get(key).and_then(Value::as_str)
    }
}

#[async_trait]
impl Tool for MethodTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe_action(&self, arguments: &Value, _call: &CallContext) -> Result<ExecutionAction, ToolError> {
        let target = self.target(arguments).ok_or_else(|| {
            ToolError::new(CallErrorCode::InvalidArguments, format!("{} names nothing", self.method))
        })?;
        Ok(ExecutionAction::new(ActionKind::Mcp, MCP_READ).with_risk(Risk::Low).with_target(target))
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let mut params = match &invocation.arguments {
            Value::Object(map) => map.clone(),
            _ => serde_json::Map::new(),
        };
        if self.method == MCP_PROMPTS_GET && params.get("arguments").is_some_and(Value::is_null) {
            params.remove("arguments");
        }
        let origin = CallOrigin::of(&invocation.call);
        // A 2026-07-28 server may ask for input here too (SEP-2322): the same rounds as a tool call's.
        let result = super::rounds::exchange(&self.reach, &invocation, &origin, |responses, state| {
            let mut params = params.clone();
            if let Some(responses) = responses {
                params.insert("inputResponses".into(), json!(responses));
            }
            if let Some(state) = state {
                params.insert("requestState".into(), Value::String(state));
            }
            serde_json::from_value(json!({ "method": self.method, "params": params })).map_err(|e| {
                ToolError::new(
                    CallErrorCode::InvalidArguments,
                    format!("{} params do not fit: {e}", self.method),
                )
            })
        })
        .await?;
        let value = match result {
            ServerResult::ReadResourceResult(r) if self.method == MCP_RESOURCES_READ => {
                serde_json::to_value(r)
            }
            ServerResult::GetPromptResult(r) if self.method == MCP_PROMPTS_GET => serde_json::to_value(r),
            _ => {
                return Err(ToolError::new(
                    CallErrorCode::UpstreamError,
                    format!(
                        "{} answered {} with something else than its result",
                        self.reach.server, self.method
                    ),
                ));
            }
        }
        .map_err(|e| ToolError::new(CallErrorCode::UpstreamError, format!("{}: {e}", self.reach.server)))?;
        Ok(ToolOutput::structured(value))
    }
}
