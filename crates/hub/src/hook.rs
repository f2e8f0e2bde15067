//! Claude Code's `PreToolUse` hook: the tool Claude is about to run, mapped to an execution action and
//! judged by the same pipeline (grants, policy, approval broker, ledger) — without Portcullis running it.
//! The answer is Claude Code's hook output: `allow`, `deny`, or `ask` (Claude asks its own user) when the
//! policy prompts and no operator is attached.

use crate::hub::Hub;
use crate::pipeline::{APPROVAL_BACKSTOP, Pipeline};
use async_trait::async_trait;
use portcullis_harness::CallErrorCode;
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
    /// The one-time ticket of a `Bash` command the hub runs in its sandbox: the hook process answers
    /// Claude Code with `portcullis run --ticket` in place of the command.
    pub ticket: Option<String>,
}

impl HookAnswer {
    pub fn new(decision: HookDecision, reason: impl Into<String>) -> Self {
        HookAnswer { decision, reason: reason.into(), ticket: None }
    }

    pub fn deny(reason: impl Into<String>) -> Self {
        HookAnswer::new(HookDecision::Deny, reason)
    }

    /// Claude Code's hook output JSON (`{}` for no decision). Claude Code shows the reason to its user
    /// in a terminal, and it quotes the agent's command and paths: escaped as everywhere a person reads.
    pub fn to_hook_output(&self) -> Value {
        if self.decision == HookDecision::Pass {
            return json!({});
        }
        let mut output = json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": self.decision,
                "permissionDecisionReason": portcullis_harness::untrusted::visible(&self.reason),
            }
        });
        if let Some(ticket) = &self.ticket {
            output["portcullisTicket"] = json!(ticket);
        }
        output
    }

    /// The answer Claude Code gets from the hook process: a ticketed `Bash` call's command is replaced by
    /// `run` (the command that redeems the ticket), the rest of its input kept.
    pub fn to_claude_code(&self, input: &Value, run: impl FnOnce(&str) -> String) -> Value {
        let mut output = self.to_hook_output();
        if let (Some(ticket), Some(map)) = (&self.ticket, output.as_object_mut()) {
            map.remove("portcullisTicket");
            let mut updated = input.clone();
            updated["command"] = json!(run(ticket));
            output["hookSpecificOutput"]["updatedInput"] = updated;
        }
        output
    }
}

/// A hook input, checked.
#[derive(Debug, Clone)]
pub struct HookInput {
    pub session_id: String,
    pub cwd: PathBuf,
    pub tool_name: String,
    pub tool_input: Value,
    /// Claude Code's id of the tool call (its `PostToolUse` report names it).
    pub tool_use_id: Option<String>,
    /// `PostToolUse`: what the tool gave Claude Code.
    pub tool_response: Option<Value>,
}

impl HookInput {
    /// A `PostToolUse` report (else a `PreToolUse` question).
    pub fn is_report(&self) -> bool {
        self.tool_response.is_some()
    }
}

/// Parses and checks a `PreToolUse` input; the error says what is wrong.
pub fn parse_input(text: &str) -> Result<HookInput, String> {
    if text.len() > MAX_HOOK_INPUT_BYTES {
        return Err(format!("the hook input is over {MAX_HOOK_INPUT_BYTES} bytes"));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| format!("the hook input is not JSON: {e}"))?;
    let field = |name: &str| value.get(name).and_then(Value::as_str).map(str::to_owned);
    let event = field("hook_event_name");
    let report = match event.as_deref() {
        None | Some("PreToolUse") => false,
        Some("PostToolUse") => true,
        Some(other) => {
            return Err(format!(
                "hook_event_name is {other:?}; `portcullis hook claude` answers PreToolUse and PostToolUse"
            ));
        }
    };
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
        tool_use_id: field("tool_use_id"),
        tool_response: report.then(|| value.get("tool_response").cloned().unwrap_or(Value::Null)),
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

/// A Claude Code tool as the pipeline sees it: judged and recorded like any call; once it passes, the
/// hook is told to go ahead and the call is carried out as [`crate::hook_run`] says (Claude Code runs it
/// and reports, or the hub runs the command in its sandbox).
struct HookTool {
    spec: ToolSpec,
    action: ExecutionAction,
    carried: crate::hook_run::Carried,
    go: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<crate::hook_run::Go>>>,
    judged: Arc<std::sync::Mutex<Judged>>,
}

#[async_trait]
impl Tool for HookTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe_action(&self, _arguments: &Value, _call: &CallContext) -> Result<ExecutionAction, ToolError> {
        Ok(self.action.clone())
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let go = self.go.lock().ok().and_then(|mut go| go.take());
        let Some(go) = go else {
            return Err(ToolError::new(CallErrorCode::BadAction, "a hook call is carried out once"));
        };
        let asked_user = self.judged.lock().is_ok_and(|judged| judged.asked_user);
        crate::hook_run::carry_out(&self.carried, invocation, go, asked_user).await
    }
}

/// The broker as the hook asks it, within the hook's wait (Claude Code stops waiting for hooks then, so
/// the card counts down that wait and its end is a timeout that says so). A prompt no operator of
/// Portcullis can answer (no hub, or a hub without an operator) is handed to Claude Code's own permission
/// prompt: the call goes on as "asked the agent's user", and the hook answers `ask`.
struct HookApprovals {
    broker: Arc<crate::broker::ApprovalBroker>,
    wait: std::time::Duration,
    judged: Arc<std::sync::Mutex<Judged>>,
}

/// What the pipeline decided about a hook call, for the hook's answer: the policy's verdict, who
/// approved it, and whether it was handed to Claude Code's own prompt.
#[derive(Default)]
struct Judged {
    verdict: Option<portcullis_harness::PolicyVerdict>,
    approved_by: Option<DecidedBy>,
    asked_user: bool,
}

#[async_trait]
impl portcullis_harness::Approvals for HookApprovals {
    async fn request(
        &self,
        request: portcullis_harness::ApprovalRequest,
    ) -> portcullis_harness::ApprovalAnswer {
        let answer = match self.broker.request_within(request, Some(self.wait)).await {
            portcullis_harness::ApprovalAnswer::Deny {
                decided_by: DecidedBy::Default { detail: Some(d) },
                ..
            } if d == portcullis_harness::NO_APPROVER => {
                if let Ok(mut judged) = self.judged.lock() {
                    judged.asked_user = true;
                }
                portcullis_harness::ApprovalAnswer::Allow {
                    decided_by: DecidedBy::Default { detail: Some(portcullis_harness::AGENT_PROMPT.into()) },
                }
            }
            answer => answer,
        };
        if let (portcullis_harness::ApprovalAnswer::Allow { decided_by }, Ok(mut judged)) =
            (&answer, self.judged.lock())
        {
            judged.approved_by = Some(decided_by.clone());
        }
        answer
    }
}

/// Why a hook call is not confined: the hook only judges, and Claude Code runs the command itself.
pub use portcullis_harness::sandbox::CLAUDE_CODE_RUNS_IT;

/// A project's policy, judging a hook call as it will run: a `Bash` command the hub runs in its sandbox
/// is judged with the walls it gets; anything Claude Code runs itself as unconfined, so what the card and
/// the ledger say of its walls is true (none), and a policy that requires the sandbox forbids it.
struct HookPolicy {
    live: Arc<portcullis_policy::LivePolicy>,
    confined: bool,
    judged: Arc<std::sync::Mutex<Judged>>,
}

#[async_trait]
impl portcullis_harness::ExecutionPolicy for HookPolicy {
    async fn evaluate(
        &self,
        request: portcullis_harness::PolicyRequest<'_>,
    ) -> portcullis_harness::PolicyVerdict {
        let verdict = if self.confined {
            self.live.verdict(&request).0
        } else {
            // Claude Code's own shell starts with its user's whole environment, not the shell tool's
            // allowlist: an assignment there reaches programs whenever the name was inherited.
            let support = portcullis_harness::SandboxSupport::unavailable(CLAUDE_CODE_RUNS_IT);
            portcullis_policy::shell::with_whole_environment(|| self.live.verdict_on(&request, &support).0)
        };
        if let Ok(mut judged) = self.judged.lock() {
            judged.verdict = Some(verdict.clone());
        }
        verdict
    }
}

/// How long after its wait the hook's run is cancelled if the approval has not ended by itself.
const HOOK_CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The hook answer for a call that ended before it was carried out (refused, or failed).
pub fn answer_of(result: &ToolCallResult) -> HookAnswer {
    let by = portcullis_mcp::convert::describe_decider;
    match &result.outcome {
        CallOutcome::Finished { .. } => {
            HookAnswer::new(HookDecision::Allow, format!("Portcullis allows it: {}", by(&result.decided_by)))
        }
        // A prompt nobody of Portcullis can answer never ends here: `HookApprovals` hands it to Claude
        // Code's prompt and the call goes on (an operator who did not answer within the wait, a withdrawn
        // approval, is a denial).
        CallOutcome::Blocked { error, .. } => {
            // The decider only where the message does not already say it (a deny glob's words).
            match portcullis_mcp::convert::decider_beyond(&result.decided_by, &error.message) {
                Some(decider) => {
                    HookAnswer::deny(format!("Portcullis denies it ({decider}): {}", error.message))
                }
                None => HookAnswer::deny(format!("Portcullis denies it: {}", error.message)),
            }
        }
        CallOutcome::Error { error } => {
            HookAnswer::deny(format!("Portcullis could not judge it: {}", error.message))
        }
    }
}

/// The answer for a call that passed and is being carried out.
fn answer_of_go(
    go: crate::hook_run::Go,
    judged: &Judged,
    project: &crate::projects::ProjectPolicy,
) -> HookAnswer {
    let sandboxed = matches!(go, crate::hook_run::Go::Ticket(_));
    let mut reason = if judged.asked_user {
        let why = judged.verdict.as_ref().and_then(|v| v.reason.clone());
        let mut reason =
            format!("Portcullis asks for confirmation: {}", why.as_deref().unwrap_or("approval required"));
        if sandboxed {
            reason.push_str("; if allowed, it runs in Portcullis's sandbox");
        }
        reason
    } else {
        let decided_by =
            judged.approved_by.clone().or_else(|| judged.verdict.as_ref().map(|v| v.decided_by.clone()));
        let by = decided_by.as_ref().map(portcullis_mcp::convert::describe_decider).unwrap_or_default();
        let mut reason = format!("Portcullis allows it: {by}");
        if sandboxed {
            reason.push_str("; it runs in Portcullis's sandbox");
        }
        reason
    };
    if project.kind != crate::projects::ProjectKind::Hub {
        reason.push_str(&format!(" (judged in {})", project.described()));
    }
    let decision = if judged.asked_user { HookDecision::Ask } else { HookDecision::Allow };
    let mut answer = HookAnswer::new(decision, reason);
    if let crate::hook_run::Go::Ticket(ticket) = go {
        answer.ticket = Some(ticket);
    }
    answer
}

impl Hub {
    /// Judges a hook input through the pipeline, in the project of its folder, and records it (owner
    /// `claude-code hook`). An approval not answered within `wait` (Claude Code stops waiting for hooks)
    /// is withdrawn and the call denied. A call that passes is answered at once and carried out after:
    /// its row ends with what really happened.
    pub async fn decide_hook(&self, input: &HookInput, wait: std::time::Duration) -> HookAnswer {
        if input.is_report() {
            return self.take_hook_report(input);
        }
        let (name, action) = match map_tool(input) {
            Ok(mapped) => mapped,
            Err(why) => {
                return HookAnswer::new(HookDecision::Ask, format!("Portcullis cannot judge it: {why}"));
            }
        };
        let state = &self.state;
        let cwd = canonicalize_lenient(&input.cwd).unwrap_or_else(|_| input.cwd.clone());
        let hub = crate::projects::HubProject {
            project: &state.project,
            config: &state.config,
            live: &state.live,
            sources: &state.sources,
        };
        let project = match state.projects.for_folder(hub, &cwd) {
            Ok(project) => project,
            Err(why) => return HookAnswer::deny(format!("Portcullis cannot judge it: {why}")),
        };
        if !governs(&project.live.current(), &name) {
            return HookAnswer::new(
                HookDecision::Pass,
                format!(
                    "the policy does not govern Claude Code's {}; Claude Code's own permissions decide",
                    input.tool_name
                ),
            );
        }
        let session = format!("claude-{}", input.session_id);
        let relayed = state
            .open_sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(&session);
        // A session the relay opened has its row already (with Claude Code's version).
        if !relayed && state.hook_runs.first_call_of(&session, &project.root) {
            // The session's row names the project it works in (the sessions list, Live and the ledger
            // show it); the relay's MCP connection of the same session shares the row.
            let info = portcullis_ledger::SessionInfo {
                id: session.clone(),
                client_name: Some("claude-code".into()),
                client_version: None,
                cwd: Some(project.root.display().to_string()),
                policy_hash: Some(project.live.current().version().to_string()),
                started_at: portcullis_harness::Timestamp::now(),
                ended_at: None,
            };
            if let Err(e) = state.ledger.begin_session(info).await {
                tracing::error!(error = %e, session = %session, "the hook's session was not recorded");
            }
        }
        let launcher =
            state.workspace.sandbox.clone().filter(|_| project.live.sandbox_support().can_confine());
        // Without a running hub (the hook process judges alone), nobody would be there to run it or to
        // take its report.
        let served = state.served_at.get().is_some();
        let carried = match (name.as_str(), launcher, &input.tool_use_id) {
            _ if !served => crate::hook_run::Carried::Unwatched,
            ("shell", Some(launcher), _) => crate::hook_run::Carried::Sandboxed {
                runs: state.hook_runs.clone(),
                session: session.clone(),
                workspace: state.workspace.clone(),
                launcher,
            },
            (_, _, Some(id)) => crate::hook_run::Carried::Reported {
                runs: state.hook_runs.clone(),
                session: session.clone(),
                tool_use_id: id.clone(),
            },
            _ => crate::hook_run::Carried::Unwatched,
        };
        let confined = matches!(carried, crate::hook_run::Carried::Sandboxed { .. });
        let (go_tx, go_rx) = tokio::sync::oneshot::channel();
        let mut registry = ToolRegistry::new();
        let spec = ToolSpec::new(name.clone(), format!("Claude Code's {}", input.tool_name));
        let judged = Arc::new(std::sync::Mutex::new(Judged::default()));
        let go = std::sync::Mutex::new(Some(go_tx));
        let tool = HookTool { spec, action, carried, go, judged: judged.clone() };
        if let Err(e) = registry.register(Arc::new(tool)) {
            return HookAnswer::deny(format!("Portcullis cannot judge {name}: {e}"));
        }
        let dispatcher = Pipeline {
            policy: Arc::new(HookPolicy { live: project.live.clone(), confined, judged: judged.clone() }),
            approvals: Arc::new(HookApprovals { broker: state.broker.clone(), wait, judged: judged.clone() }),
            approval_bound: state.broker.timeout() + APPROVAL_BACKSTOP,
            redactor: state.dispatcher.redactor().clone(),
            ledger: Some(state.ledger.clone()),
        }
        .assemble(registry);
        let mut run = RunContext::new(session, "hook").with_owner("claude-code hook").with_cwd(cwd);
        run.grants = project.live.current().grants().clone();
        let cancel = run.cancel.clone();
        // The hook went away before an answer (Claude Code gave up, the process was killed): the run is
        // cancelled, which withdraws its card. Once the call passes it is carried out regardless.
        let abandoned = run.cancel.clone().drop_guard();
        // A backstop after the approval's own deadline (the wait), so an unanswered card ends as the
        // timeout it is, not as a cancelled run. Stopped once the call passes: it is carried out then.
        let timer = tokio::spawn(async move {
            tokio::time::sleep(wait + HOOK_CANCEL_GRACE).await;
            cancel.cancel();
        });
        let call_id = format!("h{:x}", portcullis_harness::Timestamp::now().0);
        let call = ToolCall::new(call_id, name, input.tool_input.clone());
        let mut go_rx = go_rx;
        let mut dispatched = tokio::spawn(async move { dispatcher.dispatch(call, &run).await });
        // The call passed (go), or ended before it was carried out; a go sent just before the end wins.
        let (go, ended) = tokio::select! {
            biased;
            go = &mut go_rx => (go.ok(), None),
            result = &mut dispatched => (go_rx.try_recv().ok(), Some(result)),
        };
        timer.abort();
        abandoned.disarm();
        if let Some(go) = go {
            return match judged.lock() {
                Ok(judged) => answer_of_go(go, &judged, &project),
                Err(_) => HookAnswer::deny("Portcullis lost its judgement of the call (a poisoned lock)"),
            };
        }
        let result = match ended {
            Some(result) => result,
            None => dispatched.await,
        };
        let mut answer = match result {
            Ok(result) => answer_of(&result),
            Err(e) => HookAnswer::deny(format!("Portcullis could not judge it: {e}")),
        };
        if project.kind != crate::projects::ProjectKind::Hub {
            answer.reason.push_str(&format!(" (judged in {})", project.described()));
        }
        answer
    }

    /// Redeems a sandboxed run's ticket (`portcullis run`): the run's stream.
    pub fn redeem_ticket(
        &self,
        ticket: &str,
    ) -> Result<tokio::sync::mpsc::Receiver<crate::hook_run::RunUpdate>, String> {
        self.state.hook_runs.redeem(ticket)
    }

    /// A `PostToolUse` report: handed to the call waiting for it. Claude Code gets no decision.
    fn take_hook_report(&self, input: &HookInput) -> HookAnswer {
        let session = format!("claude-{}", input.session_id);
        let taken = match (&input.tool_use_id, &input.tool_response) {
            (Some(id), Some(response)) => self.state.hook_runs.report(&session, id, response.clone()),
            _ => false,
        };
        HookAnswer::new(HookDecision::Pass, if taken { "reported" } else { "no call waits for this report" })
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
