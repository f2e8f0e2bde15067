//! The conformance kit run against a sample host: a registry of several tools, grants that refuse some,
//! a permission set, a policy, an in-memory ledger, `search_tools` for disclosure. A second host that
//! breaks the contract proves the kit can fail.

// Test support code outside #[test] functions may unwrap and panic, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use portcullis_harness::testing::{ConformanceCalls, ConformanceTarget};
use portcullis_harness::*;
use serde_json::{Value, json};
use std::sync::Arc;

struct Fixed(ToolSpec);

#[async_trait]
impl Tool for Fixed {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn describe_action(&self, arguments: &Value, _: &CallContext) -> Result<ExecutionAction, ToolError> {
        let command = arguments.get("command").and_then(Value::as_str).unwrap_or_default();
        Ok(ExecutionAction::new(ActionKind::Execute, "exec").with_command(command))
    }
    async fn execute(&self, _: ToolInvocation) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("{} ran", self.0.name)))
    }
}

struct NoSudo;

#[async_trait]
impl ExecutionPolicy for NoSudo {
    async fn evaluate(&self, request: PolicyRequest<'_>) -> PolicyVerdict {
        if request.action.command.as_deref().is_some_and(|c| c.starts_with("sudo")) {
            PolicyVerdict::deny(
                DecidedBy::Rule { rule_id: "no-sudo".into(), source: "test".into() },
                "no sudo",
            )
        } else {
            PolicyVerdict::allow(DecidedBy::DEFAULT)
        }
    }
}

const TOOLS: &[(&str, &str)] = &[
    ("shell", "Run a shell command in the project folder and return its output"),
    ("read", "Read a text file or an image from the project"),
    ("write", "Write a file in the project"),
    ("edit", "Replace exact text in a file"),
    ("list", "List files of a folder"),
    ("delete_everything", "Delete every file on the machine, including home folders"),
    ("mcp:github:create_issue", "Create an issue in a GitHub repository"),
    ("mcp:github:delete_repo", "Delete a GitHub repository for ever"),
];

fn host(break_contract: bool) -> (ConformanceTarget, Arc<MemoryLedger>) {
    let schema = json!({
        "type": "object",
        "properties": {"command": {"type": "string", "maxLength": 200}, "path": {"type": "string"}},
        "additionalProperties": false
    });
    let mut registry = ToolRegistry::new();
    for (name, description) in TOOLS {
        let spec = ToolSpec::new(*name, *description).with_parameters(schema.clone());
        registry.register(Arc::new(Fixed(spec))).unwrap();
    }
    registry.register(Arc::new(SearchToolsTool::default())).unwrap();
    let ledger = Arc::new(MemoryLedger::new());
    let permissions = PermissionSet::new([
        "tool:shell:execute",
        "tool:read:execute",
        "tool:write:execute",
        "tool:list:execute",
        "tool:search_tools:execute",
        "tool:mcp:github:create_issue:execute",
    ]);
    let mut builder = Dispatcher::builder(registry)
        .ledger(ledger.clone())
        .policy(Arc::new(NoSudo))
        .redactor(Redactor::builder().secret("ghp_hostsecretvalue").build());
    if !break_contract {
        builder = builder.permissions(Arc::new(permissions));
    }
    let dispatcher = builder.build();
    let grants = if break_contract {
        Grants::unrestricted()
    } else {
        Grants::new(vec![
            GrantScope::new("user").deny(["delete_everything", "mcp:github:delete_repo"]),
            GrantScope::new("project").allow([
                "shell",
                "read",
                "write",
                "edit",
                "list",
                "search_tools",
                "mcp:github:create_issue",
                "mcp:github:delete_repo",
            ]),
        ])
    };
    let run = RunContext::new("conformance", "run").with_grants(grants);
    let calls = ConformanceCalls {
        success: ToolCall::new("x", "shell", json!({"command": "ls"})),
        unknown_tool: ToolCall::new("x", "format_disk", json!({})),
        tool_denied: ToolCall::new("x", "delete_everything", json!({})),
        permission_denied: Some(ToolCall::new("x", "edit", json!({"path": "a"}))),
        validation_failed: ToolCall::new("x", "shell", json!({"command": 7})),
        execution_denied: Some(ToolCall::new("x", "shell", json!({"command": "sudo rm -rf /"}))),
    };
    (ConformanceTarget { dispatcher, run, ledger: Some(ledger.clone()), calls }, ledger)
}

#[tokio::test]
async fn sample_host_passes_the_blocked_matrix() {
    let (target, ledger) = host(false);
    let report = target.run_blocked_matrix().await;
    assert!(report.passed(), "{report}");
    assert!(report.checks.len() >= 30, "{} checks", report.checks.len());
    assert!(!ledger.is_empty());
}

#[tokio::test]
async fn sample_host_passes_the_disclosure_contract() {
    let (target, _) = host(false);
    let report =
        target.run_disclosure_contract(&["file", "delete", "github issue", "shell command", "zzz"]).await;
    assert!(report.passed(), "{report}");
}

#[tokio::test]
async fn a_host_that_breaks_the_contract_fails_the_kit() {
    let (target, _) = host(true);
    let report = target.run_blocked_matrix().await;
    assert!(!report.passed());
    let failed: Vec<&str> = report.failures().iter().map(|c| c.name.as_str()).collect();
    assert!(failed.iter().any(|n| n.starts_with("tool_denied")), "{failed:?}");
    assert!(failed.iter().any(|n| n.starts_with("permission_denied")), "{failed:?}");
}

#[tokio::test]
async fn disclosure_ranks_and_never_describes_denied_tools() {
    let (target, _) = host(false);
    let d = &target.dispatcher;
    let result = d
        .dispatch(
            ToolCall::new("q", "search_tools", json!({"query": "delete repository", "k": 5})),
            &target.run,
        )
        .await;
    let text = result.output().unwrap().joined_text();
    assert!(!text.contains("delete_repo"), "{text}");
    assert!(!text.contains("delete_everything"), "{text}");
    let result =
        d.dispatch(ToolCall::new("q2", "search_tools", json!({"query": "github issue"})), &target.run).await;
    let text = result.output().unwrap().joined_text();
    assert_eq!(
        text.lines().next().unwrap(),
        "mcp:github:create_issue: Create an issue in a GitHub repository"
    );
    let result =
        d.dispatch(ToolCall::new("q3", "search_tools", json!({"query": "file", "k": 2})), &target.run).await;
    let text = result.output().unwrap().joined_text();
    let names: Vec<&str> = text.lines().map(|l| l.split(": ").next().unwrap()).collect();
    assert_eq!(names.len(), 2);
    for name in &names {
        assert!(["read", "write", "edit", "list"].contains(name), "{names:?}");
    }
}

#[test]
fn disclosure_falls_back_to_full_over_the_index_cap() {
    let mut registry = ToolRegistry::new();
    for i in 0..1100 {
        registry.register(Arc::new(Fixed(ToolSpec::new(format!("tool_{i}"), "numbered tool")))).unwrap();
    }
    let grants = Grants::new(vec![GrantScope::new("g").deny(["tool_7"])]);
    let selection = Disclosure::default().select(&registry, &grants, "numbered", Some(3)).unwrap();
    assert!(selection.full);
    assert_eq!(selection.tools.len(), 1099, "every granted tool, none denied");
    assert!(selection.tools.iter().all(|h| h.name != "tool_7"));

    let mut small = ToolRegistry::new();
    for i in 0..1024 {
        small.register(Arc::new(Fixed(ToolSpec::new(format!("tool_{i}"), "numbered tool")))).unwrap();
    }
    let selection = Disclosure::default().select(&small, &Grants::unrestricted(), "numbered", None).unwrap();
    assert!(!selection.full);
    assert_eq!(selection.tools.len(), 16, "default k");
    let names: Vec<&str> = selection.tools.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names[..3], ["tool_0", "tool_1", "tool_2"], "equal scores keep registry order");
    let big = Disclosure::default().select(&small, &Grants::unrestricted(), "numbered", Some(500)).unwrap();
    assert_eq!(big.tools.len(), 64, "hard cap");
    let long = "x".repeat(4097);
    assert!(Disclosure::default().select(&small, &Grants::unrestricted(), &long, None).is_err());
}
