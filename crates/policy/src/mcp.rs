//! What the policy says about an upstream MCP server's offerings: its tools (per-tool decisions over
//! the server's), the resources agents read (URI patterns) and the prompts they get (per prompt). A
//! server the policy does not declare is `prompt`: never allowed unseen.

use crate::document::Decision;
use crate::evaluation::{Evaluation, MatchedRule};
use crate::paths::glob_component;
use crate::policy::Policy;
use crate::protected::KindRules;
use portcullis_harness::{
    MCP_ELICITATION, MCP_PROMPTS_GET, MCP_RESOURCES_READ, MCP_ROOTS, MCP_SAMPLING, mcp_method_of,
};

impl Policy {
    /// Evaluates a call of an upstream tool `mcp:<server>:<tool>`.
    pub fn evaluate_mcp_tool(&self, name: &str) -> Evaluation {
        self.evaluate_mcp(name, None)
    }

    /// Evaluates a call of an upstream tool, or of one of a server's methods that pass the pipeline
    /// (`mcp:<server>:resources/read` of the URI `target`, `mcp:<server>:prompts/get` of the prompt
    /// `target`). A method without its target is forbidden: there is nothing to judge.
    pub fn evaluate_mcp(&self, name: &str, target: Option<&str>) -> Evaluation {
        self.evaluate_mcp_action(name, target, false)
    }

    /// [`Policy::evaluate_mcp`] of a call whose tool the server changed since an operator accepted it
    /// (`changed`, served only under `"changed_tools": "prompt"`): at least `prompt`.
    pub fn evaluate_mcp_action(&self, name: &str, target: Option<&str>, changed: bool) -> Evaluation {
        let mut eval = self.evaluate_mcp_judged(name, target);
        if changed
            && let Some((server_id, _)) = name.strip_prefix("mcp:").and_then(|rest| rest.split_once(':'))
        {
            let entry = self.servers().iter().find(|s| s.server.id == server_id);
            let rule = MatchedRule {
                id: format!("server:{server_id}/changed_tools"),
                source: entry.map(|e| e.source.clone()).unwrap_or_default(),
                line: entry.map_or(0, |e| e.line),
                decision: Decision::Prompt,
            };
            eval.matched_rules.push(rule.clone());
            eval.raise(
                Decision::Prompt,
                format!("{name}: its server changed its definition since an operator accepted it"),
                Some(&rule),
            );
        }
        eval
    }

    fn evaluate_mcp_judged(&self, name: &str, target: Option<&str>) -> Evaluation {
        let mut eval = Evaluation::new();
        let Some((server_id, tool)) = name.strip_prefix("mcp:").and_then(|rest| rest.split_once(':')) else {
            eval.raise(Decision::Forbidden, format!("{name} is not an upstream tool name"), None);
            return eval;
        };
        let Some(entry) = self.servers().iter().find(|s| s.server.id == server_id) else {
            eval.raise(Decision::Prompt, format!("no policy declares the server {server_id:?}"), None);
            return eval;
        };
        let server = &entry.server;
        let (decision, id, what) = match mcp_method_of(name).map(|(_, method)| method) {
            Some(method @ (MCP_SAMPLING | MCP_ELICITATION | MCP_ROOTS)) => {
                let (decision, field) = match method {
                    MCP_SAMPLING => (server.sampling, "sampling"),
                    MCP_ELICITATION => (server.elicitation, "elicitation"),
                    _ => (server.roots, "roots"),
                };
                (decision, format!("server:{server_id}/{field}"), format!("{method} asked by {server_id}"))
            }
            Some(method) => {
                let Some(target) = target else {
                    eval.raise(Decision::Forbidden, format!("{name} names nothing to judge"), None);
                    return eval;
                };
                match method {
                    MCP_RESOURCES_READ => {
                        let (decision, id) = resource_decision(server_id, &server.resources, target)
                            .unwrap_or((server.decision, format!("server:{server_id}")));
                        (decision, id, format!("reading {target:?} of {server_id}"))
                    }
                    MCP_PROMPTS_GET => {
                        let (decision, id) = match server.prompts.get(target) {
                            Some(d) => (*d, format!("server:{server_id}/prompt:{target}")),
                            None => (server.decision, format!("server:{server_id}")),
                        };
                        (decision, id, format!("the prompt {target:?} of {server_id}"))
                    }
                    _ => {
                        eval.raise(Decision::Forbidden, format!("{name}: no rule judges {method}"), None);
                        return eval;
                    }
                }
            }
            None => match server.tools.get(tool) {
                Some(d) => (*d, format!("server:{server_id}/{tool}"), name.to_owned()),
                None => (server.decision, format!("server:{server_id}"), name.to_owned()),
            },
        };
        let rule = MatchedRule { id: id.clone(), source: entry.source.clone(), line: entry.line, decision };
        eval.matched_rules.push(rule.clone());
        eval.raise(decision, format!("{what}: {id} says {}", decision.as_str()), Some(&rule));
        if mcp_method_of(name).is_some_and(|(_, m)| m == MCP_RESOURCES_READ)
            && let Some(path) = target.and_then(file_uri_path)
            && let Some(hit) = self.protected().find(&path)
            && let Some(decision) = hit.kind.decision(crate::document::Access::Read)
        {
            // A `file://` resource is a file like any other: the hub's secrets are never read.
            eval.paths.push(path.display().to_string());
            let reason = format!("{}: {} ({})", path.display(), hit.kind.why(), hit.what);
            eval.raise_at(decision, reason, hit.at(path.display().to_string()));
        }
        eval
    }
}

/// The local path of a `file://` URI (`file:///p` or `file://localhost/p`, percent-escapes decoded,
/// `.` and `..` collapsed, symlinks resolved when it exists); none for other URIs.
fn file_uri_path(uri: &str) -> Option<std::path::PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                decoded.push(u8::try_from(h * 16 + l).unwrap_or(b'%'));
                i += 3;
            }
            (b, ..) => {
                decoded.push(b);
                i += 1;
            }
        }
    }
    let text = String::from_utf8_lossy(&decoded);
    let text = text.split(['?', '#']).next().unwrap_or_default();
    let mut path = std::path::PathBuf::from("/");
    for part in text.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                path.pop();
            }
            part => path.push(part),
        }
    }
    Some(std::fs::canonicalize(&path).unwrap_or(path))
}

/// The strictest decision of the URI patterns that match `uri`, with the deciding pattern's rule id.
fn resource_decision(
    server_id: &str,
    patterns: &std::collections::BTreeMap<String, Decision>,
    uri: &str,
) -> Option<(Decision, String)> {
    patterns
        .iter()
        .filter(|(pattern, _)| glob_component(pattern, uri))
        .max_by_key(|(_, decision)| **decision)
        .map(|(pattern, decision)| (*decision, format!("server:{server_id}/resource:{pattern}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::PolicyLayer;

    fn policy(json: &str) -> Policy {
        let layer = PolicyLayer::parse("test.json", json, std::path::PathBuf::from("/tmp")).unwrap();
        Policy::from_layers(vec![layer]).unwrap()
    }

    #[test]
    fn resources_prompts_and_tools_each_row() {
        let p = policy(
            r#"{"servers":[{"id":"fs","command":"x","decision":"allow",
                "tools":{"write_file":"prompt"},
                "resources":{"file:///secret/*":"forbidden","file:///*":"allow","file:///home/*":"prompt"},
                "prompts":{"leak":"forbidden"}, "sampling":"forbidden"}]}"#,
        );
        let rows: &[(&str, Option<&str>, Decision, &str)] = &[
            ("mcp:fs:read_file", None, Decision::Allow, "server:fs"),
            ("mcp:fs:write_file", None, Decision::Prompt, "server:fs/write_file"),
            (
                "mcp:fs:resources/read",
                Some("file:///secret/key"),
                Decision::Forbidden,
                "server:fs/resource:file:///secret/*",
            ),
            (
                "mcp:fs:resources/read",
                Some("file:///home/a/b"),
                Decision::Prompt,
                "server:fs/resource:file:///home/*",
            ),
            (
                "mcp:fs:resources/read",
                Some("file:///etc/hosts"),
                Decision::Allow,
                "server:fs/resource:file:///*",
            ),
            ("mcp:fs:resources/read", Some("test://x"), Decision::Allow, "server:fs"),
            ("mcp:fs:prompts/get", Some("leak"), Decision::Forbidden, "server:fs/prompt:leak"),
            ("mcp:fs:prompts/get", Some("other"), Decision::Allow, "server:fs"),
            ("mcp:fs:sampling/createMessage", None, Decision::Forbidden, "server:fs/sampling"),
            ("mcp:fs:elicitation/create", None, Decision::Allow, "server:fs/elicitation"),
        ];
        for (name, target, decision, rule) in rows {
            let eval = p.evaluate_mcp(name, *target);
            assert_eq!(eval.decision, *decision, "{name} {target:?}");
            assert_eq!(eval.deciding_rule.as_ref().map(|r| r.id.as_str()), Some(*rule), "{name} {target:?}");
        }
    }

    #[test]
    fn a_changed_tool_asks_the_operator_whatever_its_server_allows() {
        let p = policy(r#"{"servers":[{"id":"fs","command":"x","changed_tools":"prompt"}]}"#);
        let eval = p.evaluate_mcp_action("mcp:fs:read_file", None, true);
        assert_eq!(eval.decision, Decision::Prompt);
        assert_eq!(eval.deciding_rule.map(|r| r.id), Some("server:fs/changed_tools".to_owned()));
        assert_eq!(p.evaluate_mcp_action("mcp:fs:read_file", None, false).decision, Decision::Allow);
        let forbidden = policy(r#"{"servers":[{"id":"fs","command":"x","decision":"forbidden"}]}"#);
        assert_eq!(
            forbidden.evaluate_mcp_action("mcp:fs:read_file", None, true).decision,
            Decision::Forbidden
        );
    }

    #[test]
    fn a_file_resource_in_the_hubs_secrets_is_forbidden_whatever_the_server_allows() {
        let p = policy(r#"{"servers":[{"id":"fs","command":"x","resources":{"*":"allow"}}]}"#)
            .with_protected(|places| {
                places.add("/var/hub-secrets", crate::ProtectedKind::HubSecret, "the hub's files")
            });
        for uri in [
            "file:///var/hub-secrets/operator-token",
            "file://localhost/var/hub-secrets/token",
            "file:///var/%68ub-secrets/token",
            "file:///tmp/../var/hub-secrets/token",
        ] {
            assert_eq!(
                p.evaluate_mcp("mcp:fs:resources/read", Some(uri)).decision,
                Decision::Forbidden,
                "{uri}"
            );
        }
        assert_eq!(
            p.evaluate_mcp("mcp:fs:resources/read", Some("file:///var/other")).decision,
            Decision::Allow
        );
        assert_eq!(file_uri_path("test://x"), None);
    }

    #[test]
    fn a_method_without_target_or_an_unknown_server_is_not_allowed() {
        let p = policy(r#"{"servers":[{"id":"fs","command":"x"}]}"#);
        assert_eq!(p.evaluate_mcp("mcp:fs:resources/read", None).decision, Decision::Forbidden);
        assert_eq!(p.evaluate_mcp("mcp:other:resources/read", Some("a://b")).decision, Decision::Prompt);
        assert_eq!(p.evaluate_mcp("shell", None).decision, Decision::Forbidden);
    }
}
