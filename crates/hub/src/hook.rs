//! Claude Code's `PreToolUse` hook: the tool Claude is about to run, mapped to an execution action and
//! judged by the same pipeline (grants, policy, approval broker, ledger) — without Portcullis running it.
//! The answer is Claude Code's hook output: `allow`, `deny`, or `ask` (Claude asks its own user) when the
//! policy prompts and no operator is attached.

use crate::broker::NO_OPERATOR_SUFFIX;
use crate::hub::Hub;
use crate::pipeline::{APPROVAL_BACKSTOP, Pipeline};
use async_trait::async_trait;
use portcullis_harness::paths::canonicalize_lenient;
use portcullis_harness::{
    ActionKind, CallContext, CallOutcome, DecidedBy, ExecutionAction, Risk, RunContext, Tool, ToolCall,
    ToolCallResult, ToolError, ToolInvocation, ToolOutput, ToolRegistry, ToolSpec,
};
use portcullis_policy::paths::resolve;
use serde::Serialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The largest hook input read (Write and Edit inputs carry file contents).
pub const MAX_HOOK_INPUT_BYTES: usize = 8 * 1024 * 1024;

/// The decision Claude Code receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookDecision {
    Allow,
    Deny,
    Ask,
    /// No decision: a tool the policy does not govern (TodoWrite, Task, an MCP server the policy does
    /// not declare...). Claude Code's own permission flow decides, as without the hook.
    Pass,
}

/// The hook's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookAnswer {
    pub decision: HookDecision,
    pub reason: String,
}

impl HookAnswer {
    pub fn deny(reason: impl Into<String>) -> Self {
        HookAnswer { decision: HookDecision::Deny, reason: reason.into() }
    }

    /// Claude Code's hook output JSON (`{}` for no decision). Claude Code shows the reason to its user
    /// in a terminal, and it quotes the agent's command and paths: escaped as everywhere a person reads.
    pub fn to_hook_output(&self) -> Value {
        if self.decision == HookDecision::Pass {
            return json!({});
        }
        json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": self.decision,
                "permissionDecisionReason": portcullis_harness::untrusted::visible(&self.reason),
            }
        })
    }
}

/// A hook input, checked.
#[derive(Debug, Clone)]
pub struct HookInput {
    pub session_id: String,
    pub cwd: PathBuf,
    pub tool_name: String,
    pub tool_input: Value,
}

/// Parses and checks a `PreToolUse` input; the error says what is wrong.
pub fn parse_input(text: &str) -> Result<HookInput, String> {
    if text.len() > MAX_HOOK_INPUT_BYTES {
        return Err(format!("the hook input is over {MAX_HOOK_INPUT_BYTES} bytes"));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| format!("the hook input is not JSON: {e}"))?;
    let field = |name: &str| value.get(name).and_then(Value::as_str).map(str::to_owned);
    if let Some(event) = field("hook_event_name")
        && event != "PreToolUse"
    {
        return Err(format!("hook_event_name is {event:?}; `portcullis hook claude` answers PreToolUse"));
    }
    let tool_name = field("tool_name").ok_or("the hook input has no \"tool_name\" (string)")?;
    let cwd = field("cwd").ok_or("the hook input has no \"cwd\" (string)")?;
    if !Path::new(&cwd).is_absolute() {
        return Err(format!("cwd {cwd:?} is not an absolute path"));
    }
    let tool_input = value.get("tool_input").cloned().unwrap_or_else(|| json!({}));
    if !tool_input.is_object() {
        return Err("\"tool_input\" must be an object".into());
    }
    Ok(HookInput {
        session_id: field("session_id").unwrap_or_else(|| "claude-code".into()),
        cwd: PathBuf::from(cwd),
        tool_name,
        tool_input,
    })
}

fn path_action(
    kind: ActionKind,
    operation: &'static str,
    raw: Option<&str>,
    cwd: &Path,
) -> Result<ExecutionAction, String> {
    let raw = raw.unwrap_or(".");
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let path = resolve(raw, cwd, home.as_deref()).map_err(|e| format!("{raw:?}: {e}"))?;
    let path = canonicalize_lenient(&path).map_err(|e| format!("{raw:?}: {e}"))?;
    Ok(ExecutionAction::new(kind, operation).with_paths(vec![path]))
}

/// The fixed start of a glob pattern: its components before the first with a wildcard (`*`, `?`, `[`,
/// `{`), kept absolute or relative as written (`~/` too). A `..` after a wildcard climbs out of what the
/// wildcard matched, which no prefix bounds: refused.
fn pattern_prefix(pattern: &str) -> Result<String, String> {
    let mut fixed = Vec::new();
    let mut wild = false;
    for part in pattern.split('/') {
        if wild {
            if part == ".." {
                return Err(format!("the pattern {pattern:?} climbs out (`..`) after a wildcard"));
            }
            continue;
        }
        if part.contains(['*', '?', '[', '{']) {
            wild = true;
            continue;
        }
        fixed.push(part);
    }
    let prefix = fixed.join("/");
    Ok(if prefix.is_empty() && pattern.starts_with('/') { "/".to_owned() } else { prefix })
}

/// Claude Code's tool as a registry name and the action it would take.
pub fn map_tool(input: &HookInput) -> Result<(String, ExecutionAction), String> {
    let text = |key: &str| input.tool_input.get(key).and_then(Value::as_str);
    let cwd = &input.cwd;
    let mapped = match input.tool_name.as_str() {
        "Bash" => {
            let command = text("command").ok_or("Bash needs tool_input.command")?;
            (
                "shell".to_owned(),
                ExecutionAction::new(ActionKind::Execute, "exec")
                    .with_command(command)
                    .with_cwd(cwd.clone())
                    .with_risk(Risk::High),
            )
        }
        "Read" => (
            "read".into(),
            path_action(
                ActionKind::Read,
                "read",
                Some(text("file_path").ok_or("Read needs tool_input.file_path")?),
                cwd,
            )?,
        ),
        "LS" => ("read".into(), path_action(ActionKind::Read, "search", text("path"), cwd)?),
        // The folder searched, and the fixed start of the pattern: `Glob {"pattern": "/root/.ssh/*"}` or
        // `"../../.ssh/**"` lists that folder whatever `path` says; `Grep`'s `glob` likewise.
        "Glob" | "Grep" => {
            let searched = path_action(ActionKind::Read, "search", text("path"), cwd)?;
            let base = searched.paths.first().cloned().unwrap_or_else(|| cwd.clone());
            let pattern = text(if input.tool_name == "Glob" { "pattern" } else { "glob" });
            let mut paths = searched.paths.clone();
            if let Some(pattern) = pattern {
                let prefix = pattern_prefix(pattern)?;
                if !prefix.is_empty() {
                    let listed = path_action(ActionKind::Read, "search", Some(&prefix), &base)?;
                    paths.extend(listed.paths);
                }
            }
            ("read".into(), ExecutionAction::new(ActionKind::Read, "search").with_paths(paths))
        }
        "Write" => (
            "write".into(),
            path_action(
                ActionKind::Write,
                "write",
                Some(text("file_path").ok_or("Write needs tool_input.file_path")?),
                cwd,
            )?,
        ),
        "Edit" | "MultiEdit" => (
            "edit".into(),
            path_action(
                ActionKind::Write,
                "edit",
                Some(text("file_path").ok_or("Edit needs tool_input.file_path")?),
                cwd,
            )?,
        ),
        "NotebookEdit" => (
            "edit".into(),
            path_action(
                ActionKind::Write,
                "edit",
                Some(text("notebook_path").ok_or("NotebookEdit needs tool_input.notebook_path")?),
                cwd,
            )?,
        ),
        "WebFetch" => ("web_fetch".into(), ExecutionAction::new(ActionKind::Network, "fetch")),
        "WebSearch" => ("web_search".into(), ExecutionAction::new(ActionKind::Network, "search")),
        other => match other.strip_prefix("mcp__").and_then(|rest| rest.split_once("__")) {
            Some((server, tool)) if !server.is_empty() && !tool.is_empty() => {
                (format!("mcp:{server}:{tool}"), ExecutionAction::new(ActionKind::Mcp, "call"))
            }
            // TodoWrite, Task, ExitPlanMode and tools Claude Code adds later: governed only if a grant
            // names them (see `governs`).
            _ => (other.to_ascii_lowercase(), ExecutionAction::none()),
        },
    };
    Ok(mapped)
}

/// The registry names whose Claude Code tools the policy always governs (commands and paths).
const ALWAYS_GOVERNED: [&str; 4] = ["shell", "read", "write", "edit"];

/// Whether the policy governs the tool `name` (as [`map_tool`] names it): the coding tools always; any
/// other when a grant names it (allow or deny); an MCP tool also when the policy declares its server.
/// What it does not govern is left to Claude Code's own permission flow.
pub fn governs(policy: &portcullis_policy::Policy, name: &str) -> bool {
    if ALWAYS_GOVERNED.contains(&name) {
        return true;
    }
    let named = policy
        .layers()
        .iter()
        .flat_map(|l| &l.document.grants)
        .any(|g| g.allow.iter().chain(&g.deny).any(|t| t == name));
    let declared = name
        .strip_prefix("mcp:")
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(server, _)| policy.servers().iter().any(|s| s.server.id == server));
    named || declared
}

/// A verdict-only tool: the pipeline judges and records it; Claude Code runs the real tool.
struct HookTool {
    spec: ToolSpec,
    action: ExecutionAction,
}

#[async_trait]
impl Tool for HookTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe_action(&self, _arguments: &Value, _call: &CallContext) -> Result<ExecutionAction, ToolError> {
        Ok(self.action.clone())
    }

    async fn execute(&self, _invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("allowed; Claude Code runs the tool itself"))
    }
}

/// The broker as the hook asks it: a prompt no operator of Portcullis can answer (no hub, or a hub
/// without an operator) is handed to Claude Code's own permission prompt, and recorded as such.
/// The broker, asked within the hook's wait: Claude Code stops waiting for the hook then, so the card
/// counts down that wait (not the policy's longer timeout) and its end is a timeout that says so.
struct HookApprovals(Arc<crate::broker::ApprovalBroker>, std::time::Duration);

#[async_trait]
impl portcullis_harness::Approvals for HookApprovals {
    async fn request(
        &self,
        request: portcullis_harness::ApprovalRequest,
    ) -> portcullis_harness::ApprovalAnswer {
        match self.0.request_within(request, Some(self.1)).await {
            portcullis_harness::ApprovalAnswer::Deny {
                reason,
                decided_by: DecidedBy::Default { detail: Some(d) },
            } if d == portcullis_harness::NO_APPROVER => portcullis_harness::ApprovalAnswer::Deny {
                reason,
                decided_by: DecidedBy::Default { detail: Some(portcullis_harness::AGENT_PROMPT.into()) },
            },
            answer => answer,
        }
    }
}

/// Why a hook call is not confined: the hook only judges, and Claude Code runs the command itself.
pub const CLAUDE_CODE_RUNS_IT: &str = "runs outside Portcullis's sandbox (Claude Code runs it)";

/// The live policy, judging as for a command that runs unconfined: what the approval card and the ledger
/// say of a hook call's walls is true (none), and a policy that requires the sandbox forbids it.
struct HookPolicy(Arc<portcullis_policy::LivePolicy>);

#[async_trait]
impl portcullis_harness::ExecutionPolicy for HookPolicy {
    async fn evaluate(
        &self,
        request: portcullis_harness::PolicyRequest<'_>,
    ) -> portcullis_harness::PolicyVerdict {
        let support = portcullis_harness::SandboxSupport::unavailable(CLAUDE_CODE_RUNS_IT);
        self.0.verdict_on(&request, &support).0
    }
}

/// How long after its wait the hook's run is cancelled if the approval has not ended by itself.
const HOOK_CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The hook answer for a dispatched verdict.
pub fn answer_of(result: &ToolCallResult) -> HookAnswer {
    let by = portcullis_mcp::convert::describe_decider;
    match &result.outcome {
        CallOutcome::Finished { .. } => HookAnswer {
            decision: HookDecision::Allow,
            reason: format!("Portcullis allows it: {}", by(&result.decided_by)),
        },
        CallOutcome::Blocked { error, .. } => {
            // Nobody of Portcullis could be asked: Claude Code asks its user. (An operator who did not
            // answer within the wait, a withdrawn approval, is a denial.)
            if matches!(&result.decided_by, DecidedBy::Default { detail: Some(d) } if d == portcullis_harness::NO_APPROVER || d == portcullis_harness::AGENT_PROMPT)
            {
                let why = error.message.strip_suffix(NO_OPERATOR_SUFFIX).unwrap_or(&error.message);
                HookAnswer {
                    decision: HookDecision::Ask,
                    reason: format!("Portcullis asks for confirmation: {why}"),
                }
            } else {
                // The decider only where the message does not already say it (a deny glob's words).
                match portcullis_mcp::convert::decider_beyond(&result.decided_by, &error.message) {
                    Some(decider) => {
                        HookAnswer::deny(format!("Portcullis denies it ({decider}): {}", error.message))
                    }
                    None => HookAnswer::deny(format!("Portcullis denies it: {}", error.message)),
                }
            }
        }
        CallOutcome::Error { error } => {
            HookAnswer::deny(format!("Portcullis could not judge it: {}", error.message))
        }
    }
}

impl Hub {
    /// Judges a hook input through the pipeline and records it (owner `claude-code hook`). An approval
    /// not answered within `wait` (Claude Code stops waiting for hooks) is withdrawn and the call denied.
    pub async fn decide_hook(&self, input: &HookInput, wait: std::time::Duration) -> HookAnswer {
        let (name, action) = match map_tool(input) {
            Ok(mapped) => mapped,
            Err(why) => {
                return HookAnswer {
                    decision: HookDecision::Ask,
                    reason: format!("Portcullis cannot judge it: {why}"),
                };
            }
        };
        if !governs(&self.state.live.current(), &name) {
            return HookAnswer {
                decision: HookDecision::Pass,
                reason: format!(
                    "the policy does not govern Claude Code's {}; Claude Code's own permissions decide",
                    input.tool_name
                ),
            };
        }
        let mut registry = ToolRegistry::new();
        let spec = ToolSpec::new(name.clone(), format!("Claude Code's {}", input.tool_name));
        if let Err(e) = registry.register(Arc::new(HookTool { spec, action })) {
            return HookAnswer::deny(format!("Portcullis cannot judge {name}: {e}"));
        }
        let state = &self.state;
        let dispatcher = Pipeline {
            policy: Arc::new(HookPolicy(state.live.clone())),
            approvals: Arc::new(HookApprovals(state.broker.clone(), wait)),
            approval_bound: state.broker.timeout() + APPROVAL_BACKSTOP,
            redactor: state.dispatcher.redactor().clone(),
            ledger: Some(state.ledger.clone()),
        }
        .assemble(registry);
        let mut run = RunContext::new(format!("claude-{}", input.session_id), "hook")
            .with_owner("claude-code hook")
            .with_cwd(input.cwd.clone());
        run.grants = self.grants();
        let cancel = run.cancel.clone();
        // A backstop after the approval's own deadline (the wait), so an unanswered card ends as the
        // timeout it is, not as a cancelled run.
        let timer = tokio::spawn(async move {
            tokio::time::sleep(wait + HOOK_CANCEL_GRACE).await;
            cancel.cancel();
        });
        let call_id = format!("h{:x}", portcullis_harness::Timestamp::now().0);
        let result = dispatcher.dispatch(ToolCall::new(call_id, name, input.tool_input.clone()), &run).await;
        timer.abort();
        answer_of(&result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_claude_code_shows_its_user_is_escaped() {
        let answer = HookAnswer::deny("Portcullis denies it: /tmp/x\u{1b}[2J\r is outside every write root");
        let output = answer.to_hook_output();
        let reason = output["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap();
        assert_eq!(reason, "Portcullis denies it: /tmp/x\\x1b[2J\\r is outside every write root");
    }
}
