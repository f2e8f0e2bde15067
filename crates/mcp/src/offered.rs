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
        CallOutcome::Error { error } => Err(McpError::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the upstream request failed ({}): {}", error.code, error.message),
            Some(json!({ "portcullis": { "error": error.code, "call_id": &*result.call_id } })),
        )),
    }
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
}
