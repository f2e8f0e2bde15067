//! What the gateway offers agents besides tools: upstream servers' resources, resource templates and
//! prompts, named as agents see them (`<server>+<uri>` and `<server>__<prompt>`, or the server's own
//! names in single-upstream mode), and the answers to `resources/read` and `prompts/get`, which the
//! backend runs through the pipeline as calls (`mcp:<server>:resources/read`, `mcp:<server>:prompts/get`).

use crate::convert::describe_decider;
use crate::upstream::Offerings;
use portcullis_harness::{CallOutcome, ToolCallResult};
use rmcp::ErrorData as McpError;
use rmcp::model::{ErrorCode, Prompt, Resource, ResourceTemplate};
use serde_json::{Value, json};

/// The JSON-RPC error of a resource read or prompt the pipeline refused (the spec leaves it to servers).
pub const REFUSED: ErrorCode = ErrorCode(-32003);
/// The spec's "resource not found".
pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);

/// How agents see upstream names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Naming {
    /// Every server's offerings, each under its server's name.
    #[default]
    Namespaced,
    /// One server's offerings under their own names (Portcullis as a guard in front of one server).
    Single(String),
}

/// One server's offerings the grants and policy leave visible.
#[derive(Debug, Clone)]
pub struct ServerOfferings {
    pub server: String,
    pub offerings: Offerings,
    /// Every prompt the server lists, visible or not: an agent that names a hidden one is refused by
    /// the pipeline (and the ledger records it), as a hidden tool is; never shown to agents.
    pub prompt_names: Vec<String>,
}

/// Which prompts a name may resolve to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptScope {
    /// Only those agents see (completion).
    Visible,
    /// Every prompt the servers list (getting one: the pipeline refuses what is hidden).
    Listed,
}

impl Naming {
    /// Whether agents see this server's offerings at all.
    pub fn shows(&self, server: &str) -> bool {
        match self {
            Naming::Namespaced => true,
            Naming::Single(only) => only == server,
        }
    }

    /// A resource URI (or URI template) as agents see it.
    pub fn resource_uri(&self, server: &str, uri: &str) -> String {
        match self {
            Naming::Namespaced => format!("{server}+{uri}"),
            Naming::Single(_) => uri.to_owned(),
        }
    }

    /// The server and its own URI of a URI an agent names; `None` when no listed server has it.
    pub fn resolve_uri<'a>(&self, servers: &[ServerOfferings], uri: &'a str) -> Option<(String, &'a str)> {
        match self {
            Naming::Single(only) => servers.iter().any(|s| &s.server == only).then(|| (only.clone(), uri)),
            Naming::Namespaced => {
                let (server, own) = uri.split_once('+')?;
                servers.iter().any(|s| s.server == server).then(|| (server.to_owned(), own))
            }
        }
    }

    /// A prompt name as agents see it.
    pub fn prompt_name(&self, server: &str, name: &str) -> String {
        match self {
            Naming::Namespaced => format!("{server}__{name}"),
            Naming::Single(_) => name.to_owned(),
        }
    }

    /// The server and its own name of a prompt an agent names, among the prompts of `scope`; a name two
    /// servers could claim is refused as unknown.
    pub fn resolve_prompt(
        &self,
        servers: &[ServerOfferings],
        name: &str,
        scope: PromptScope,
    ) -> Option<(String, String)> {
        let mut found = servers.iter().filter_map(|s| {
            let own = match self {
                Naming::Single(only) if *only == s.server => name,
                Naming::Single(_) => return None,
                Naming::Namespaced => name.strip_prefix(s.server.as_str())?.strip_prefix("__")?,
            };
            let known = match scope {
                PromptScope::Visible => s.offerings.prompts.iter().any(|p| p.name == own),
                PromptScope::Listed => s.prompt_names.iter().any(|p| p == own),
            };
            known.then(|| (s.server.clone(), own.to_owned()))
        });
        let first = found.next()?;
        found.next().is_none().then_some(first)
    }
}

/// The resources agents see, in server order.
pub fn resources(naming: &Naming, servers: &[ServerOfferings]) -> Vec<Resource> {
    servers
        .iter()
        .flat_map(|s| {
            s.offerings.resources.iter().map(|r| {
                let mut r = r.clone();
                r.uri = naming.resource_uri(&s.server, &r.uri);
                r
            })
        })
        .collect()
}

pub fn templates(naming: &Naming, servers: &[ServerOfferings]) -> Vec<ResourceTemplate> {
    servers
        .iter()
        .flat_map(|s| {
            s.offerings.templates.iter().map(|t| {
                let mut t = t.clone();
                t.uri_template = naming.resource_uri(&s.server, &t.uri_template);
                t
            })
        })
        .collect()
}

pub fn prompts(naming: &Naming, servers: &[ServerOfferings]) -> Vec<Prompt> {
    servers
        .iter()
        .flat_map(|s| {
            s.offerings.prompts.iter().map(|p| {
                let mut p = p.clone();
                p.name = naming.prompt_name(&s.server, &p.name);
                p
            })
        })
        .collect()
}

/// The upstream result of a method call that ran, or the JSON-RPC error of one that did not: a refusal
/// names the reason and what decided (like a refused tool call's text), a failure its error code.
pub fn method_result(result: &ToolCallResult) -> Result<Value, McpError> {
    match &result.outcome {
        CallOutcome::Finished { output } => output
            .structured
            .clone()
            .ok_or_else(|| McpError::internal_error("the upstream answer was not kept", None)),
        CallOutcome::Blocked { reason, error } => Err(McpError::new(
            REFUSED,
            format!(
                "portcullis blocked this request ({reason}): {}. Decided by {}.",
                error.message.trim_end_matches('.'),
                describe_decider(&result.decided_by)
            ),
            Some(json!({ "portcullis": {
                "blocked": reason.as_str(), "code": error.code, "decided_by": result.decided_by,
                "call_id": &*result.call_id,
            }})),
        )),
        CallOutcome::Error { error } => {
            let upstream = error.details.as_ref().and_then(|d| d.get("upstream_error"));
            let code = upstream
                .and_then(|u| u.get("code"))
                .and_then(Value::as_i64)
                .and_then(|c| i32::try_from(c).ok())
                .filter(|c| PASSED_THROUGH.contains(c))
                .map_or(ErrorCode::INTERNAL_ERROR, ErrorCode);
            let mut data = json!({ "portcullis": { "error": error.code, "call_id": &*result.call_id } });
            if let (Some(Value::Object(theirs)), Value::Object(ours)) =
                (upstream.and_then(|u| u.get("data")), &mut data)
                && code != ErrorCode::INTERNAL_ERROR
            {
                for (key, value) in theirs.iter().filter(|(k, _)| k.as_str() != "portcullis") {
                    ours.insert(key.clone(), value.clone());
                }
            }
            Err(McpError::new(
                code,
                format!("the upstream request failed ({}): {}", error.code, error.message),
                Some(data),
            ))
        }
    }
}

/// The upstream error codes an agent gets as the server gave them (with the server's `data`): what the
/// agent did wrong, not what went wrong in between — invalid params (a 2026-07-28 server's missing
/// resource, with `data.uri`), a 2025 server's resource not found, and a 2026-07-28 server's missing
/// client capability (the agent's request did not declare what the server needs: `data.requiredCapabilities`).
pub const PASSED_THROUGH: [i32; 3] = [-32602, -32002, MISSING_CAPABILITY];

/// MCP 2026-07-28's `MissingRequiredClientCapabilityError`.
pub const MISSING_CAPABILITY: i32 = -32021;

/// A tool call its server refused for want of a client capability the agent did not declare (the hub
/// declares upstream, per request, only what the agent declared): that is the agent's request's error,
/// so the agent gets -32021 (HTTP 400) with the capabilities named, not a tool failure.
pub fn missing_capability(result: &ToolCallResult) -> Option<McpError> {
    let CallOutcome::Error { error } = &result.outcome else { return None };
    let upstream = error.details.as_ref().and_then(|d| d.get("upstream_error"))?;
    if upstream.get("code").and_then(Value::as_i64) != Some(i64::from(MISSING_CAPABILITY)) {
        return None;
    }
    method_result(result).err()
}

/// A resource read's contents name the URIs agents know.
pub fn rename_contents(naming: &Naming, server: &str, mut result: Value) -> Value {
    if let Some(Value::Array(contents)) = result.get_mut("contents") {
        for content in contents {
            if let Some(Value::String(uri)) = content.get_mut("uri") {
                *uri = naming.resource_uri(server, uri);
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers() -> Vec<ServerOfferings> {
        let mut a = Offerings::default();
        a.prompts.push(Prompt::new("greet", None::<String>, None));
        a.prompts.push(Prompt::new("b__greet", None::<String>, None));
        a.resources.push(Resource::new("test://x", "x"));
        let mut b = Offerings::default();
        b.prompts.push(Prompt::new("greet", None::<String>, None));
        vec![
            ServerOfferings {
                server: "a".into(),
                offerings: a,
                prompt_names: vec!["greet".into(), "b__greet".into(), "hidden".into()],
            },
            ServerOfferings { server: "a__b".into(), offerings: b, prompt_names: vec!["greet".into()] },
        ]
    }

    #[test]
    fn namespaced_names_round_trip_and_ambiguity_is_refused() {
        let n = Naming::Namespaced;
        let s = servers();
        assert_eq!(n.resource_uri("a", "test://x"), "a+test://x");
        assert_eq!(n.resolve_uri(&s, "a+test://x"), Some(("a".into(), "test://x")));
        assert_eq!(n.resolve_uri(&s, "zz+test://x"), None);
        assert_eq!(n.resolve_uri(&s, "test://x"), None);
        assert_eq!(
            n.resolve_prompt(&s, "a__greet", PromptScope::Visible),
            Some(("a".into(), "greet".into()))
        );
        // A prompt the grants or the policy hide resolves only to be refused by the pipeline.
        assert_eq!(n.resolve_prompt(&s, "a__hidden", PromptScope::Visible), None);
        assert_eq!(
            n.resolve_prompt(&s, "a__hidden", PromptScope::Listed),
            Some(("a".into(), "hidden".into()))
        );
        // `a__b__greet` is the prompt `b__greet` of `a` and the prompt `greet` of `a__b`: refused.
        assert_eq!(n.resolve_prompt(&s, "a__b__greet", PromptScope::Listed), None);
        assert_eq!(n.resolve_prompt(&s, "a__nothing", PromptScope::Listed), None);
        assert_eq!(resources(&n, &s)[0].uri, "a+test://x");
    }

    #[test]
    fn single_upstream_names_are_the_servers_own() {
        let n = Naming::Single("a".into());
        let s = servers();
        assert!(n.shows("a") && !n.shows("a__b"));
        assert_eq!(n.resolve_uri(&s, "test://x"), Some(("a".into(), "test://x")));
        assert_eq!(n.resolve_prompt(&s, "greet", PromptScope::Visible), Some(("a".into(), "greet".into())));
        assert_eq!(n.prompt_name("a", "greet"), "greet");
    }

    #[test]
    fn an_upstream_error_the_agent_caused_keeps_its_code_and_data_and_others_are_internal() {
        let failed = |code: i64| ToolCallResult {
            call_id: "c1".into(),
            tool_name: "mcp:a:resources/read".into(),
            outcome: CallOutcome::Error {
                error: portcullis_harness::CallError::new(
                    portcullis_harness::CallErrorCode::UpstreamError,
                    "a answered with an error: no such",
                )
                .with_details(
                    json!({ "upstream_error": { "code": code, "data": { "uri": "test://gone" } } }),
                ),
            },
            decided_by: portcullis_harness::DecidedBy::Default { detail: None },
            redacted: false,
        };
        let missing = method_result(&failed(-32602)).unwrap_err();
        assert_eq!(missing.code, ErrorCode(-32602));
        let data = missing.data.unwrap();
        assert_eq!(data["uri"], "test://gone");
        assert_eq!(data["portcullis"]["call_id"], "c1");
        let broken = method_result(&failed(-32603)).unwrap_err();
        assert_eq!(broken.code, ErrorCode::INTERNAL_ERROR);
        assert!(
            broken.data.unwrap().get("uri").is_none(),
            "nothing of an internal error's data is passed on"
        );
    }
}
