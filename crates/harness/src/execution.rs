//! The execution-policy seam: a tool describes the action it would take, a policy answers allow / deny /
//! ask, and "ask" goes to an approver. The approved action is the one executed.

use crate::call::{CallContext, DecidedBy, RuleRef};
use crate::sandbox::SandboxProfile;
use crate::tool_spec::ToolSpec;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

/// The broad kind of side effect.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// No side effect beyond computing an answer.
    None,
    Read,
    Write,
    /// Runs a process (shell commands).
    Execute,
    Network,
    /// A call forwarded to an upstream MCP server.
    Mcp,
    Other,
}

/// How much harm the action could do, as the tool judges it.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    #[default]
    Low,
    Medium,
    High,
}

/// What a call would do, described by its tool before it runs.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionAction {
    pub kind: ActionKind,
    /// A short verb: `read`, `write`, `edit`, `exec`, `call` ...
    pub operation: Cow<'static, str>,
    /// Canonical paths (symlinks resolved, `..` collapsed) the action touches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<PathBuf>,
    /// The command line, for `Execute`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The working directory, for `Execute`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    #[serde(default)]
    pub risk: Risk,
    /// The walls the command runs inside (set by the policy for `Execute`; shown to the approver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Box<SandboxProfile>>,
    /// What an upstream MCP method acts on: the URI of a resource read, the name of a prompt got
    /// (the server's own text: untrusted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl ExecutionAction {
    /// The action of a tool with no side effect.
    pub fn none() -> Self {
        ExecutionAction {
            kind: ActionKind::None,
            operation: Cow::Borrowed("call"),
            paths: Vec::new(),
            command: None,
            cwd: None,
            risk: Risk::Low,
            sandbox: None,
            target: None,
        }
    }

    pub fn new(kind: ActionKind, operation: impl Into<Cow<'static, str>>) -> Self {
        ExecutionAction { kind, operation: operation.into(), ..ExecutionAction::none() }
    }

    pub fn with_paths(mut self, paths: Vec<PathBuf>) -> Self {
        self.paths = paths;
        self
    }

    pub fn with_command(mut self, command: impl Into<String>) -> Self {
        self.command = Some(command.into());
        self
    }

    pub fn with_cwd(mut self, cwd: PathBuf) -> Self {
        self.cwd = Some(cwd);
        self
    }

    pub fn with_target(mut self, target: impl Into<String>) -> Self {
        self.target = Some(target.into());
        self
    }

    pub fn with_risk(mut self, risk: Risk) -> Self {
        self.risk = risk;
        self
    }

    /// Whether running it may change anything: every kind but `None` and `Read`, and an upstream call
    /// unless its server declares the tool read-only (described with the operation [`MCP_READ`]).
    /// The dispatcher makes the `started` record durable before running a call that has one.
    pub fn has_side_effect(&self) -> bool {
        match self.kind {
            ActionKind::None | ActionKind::Read => false,
            ActionKind::Mcp => self.operation != MCP_READ,
            ActionKind::Write | ActionKind::Execute | ActionKind::Network | ActionKind::Other => true,
        }
    }
}

/// The operation of an upstream call whose server declares the tool read-only (`readOnlyHint`). The
/// hint is the server's word; the server is one the operator configured.
pub const MCP_READ: &str = "read";

/// The operation of a call to an upstream tool whose server changed its definition since an operator
/// accepted it, served meanwhile because the policy says every such call asks the operator.
pub const MCP_CHANGED_DEFINITION: &str = "call-changed-definition";

/// A policy's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum PolicyDecision {
    Allow,
    /// Allowed without asking, contained: the command runs inside walls built for what the judge could
    /// not read ([`crate::SandboxProfile::contained`]), and its file changes are reviewed before they are
    /// kept. Without such walls on the action the call is refused.
    Contain,
    /// Ask the operator (the approval seam).
    Ask,
    Deny,
}

/// A policy's answer with the evidence an auditor needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyVerdict {
    pub decision: PolicyDecision,
    pub decided_by: DecidedBy,
    /// Every rule that matched (not only the deciding one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched_rules: Vec<RuleRef>,
    /// Human-readable explanation (justification of the deciding rule, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Every file the call reads or writes, as the policy saw it, each with its own verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileVerdict>,
    /// The walls a command would run inside (for `Execute` actions under a policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Box<SandboxProfile>>,
    /// The version of the policy that judged (a content hash of its layers), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_version: Option<Arc<str>>,
}

/// Whether a file is read or written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum FileAccess {
    Read,
    Write,
}

/// One file a call reads or writes and the policy's word on that access alone: what an audit of the
/// call's records lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct FileVerdict {
    /// Canonical where it resolves; as written otherwise.
    pub path: String,
    pub access: FileAccess,
    /// The whole tree below `path`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recursive: bool,
    /// How the call reaches it (`<`, `cat operand`, `sort -o`, `read tool`...).
    pub via: String,
    pub decision: PolicyDecision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl PolicyVerdict {
    pub fn allow(decided_by: DecidedBy) -> Self {
        PolicyVerdict {
            decision: PolicyDecision::Allow,
            decided_by,
            matched_rules: Vec::new(),
            reason: None,
            files: Vec::new(),
            sandbox: None,
            policy_version: None,
        }
    }

    /// Allowed, contained (see [`PolicyDecision::Contain`]); `reason` says what could not be read.
    pub fn contain(decided_by: DecidedBy, reason: impl Into<String>) -> Self {
        PolicyVerdict {
            decision: PolicyDecision::Contain,
            reason: Some(reason.into()),
            ..Self::allow(decided_by)
        }
    }

    pub fn ask(decided_by: DecidedBy, reason: impl Into<String>) -> Self {
        PolicyVerdict {
            decision: PolicyDecision::Ask,
            decided_by,
            matched_rules: Vec::new(),
            reason: Some(reason.into()),
            files: Vec::new(),
            sandbox: None,
            policy_version: None,
        }
    }

    pub fn deny(decided_by: DecidedBy, reason: impl Into<String>) -> Self {
        PolicyVerdict {
            decision: PolicyDecision::Deny,
            decided_by,
            matched_rules: Vec::new(),
            reason: Some(reason.into()),
            files: Vec::new(),
            sandbox: None,
            policy_version: None,
        }
    }

    pub fn with_matched_rules(mut self, rules: Vec<RuleRef>) -> Self {
        self.matched_rules = rules;
        self
    }

    pub fn with_files(mut self, files: Vec<FileVerdict>) -> Self {
        self.files = files;
        self
    }

    pub fn with_sandbox(mut self, sandbox: Option<SandboxProfile>) -> Self {
        self.sandbox = sandbox.map(Box::new);
        self
    }
}

/// What the execution policy said about a call before any approval, and what decided it. Kept on the
/// call's records apart from the outcome, so an audit (and a replay) sees the policy's word even when
/// an operator, a timeout or a withdrawn prompt settled the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyRuling {
    pub decision: PolicyDecision,
    pub decided_by: DecidedBy,
    /// Every file the call reads or writes, each with the policy's verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileVerdict>,
    /// The version of the policy that judged (a content hash of its layers), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<Arc<str>>,
}

impl PolicyRuling {
    /// What made the policy ask an operator, when it asked (events and the ledger keep it apart from
    /// whoever settled the call; when the policy decided itself, the call's decider already says who).
    pub fn asked_by(&self) -> Option<&DecidedBy> {
        (self.decision == PolicyDecision::Ask).then_some(&self.decided_by)
    }
}

/// What the policy is asked about.
#[derive(Debug)]
pub struct PolicyRequest<'a> {
    pub call: &'a CallContext,
    pub tool: &'a ToolSpec,
    pub arguments: &'a Value,
    pub action: &'a ExecutionAction,
}

/// The execution policy: allow, deny or ask, for an action a tool described.
#[async_trait]
pub trait ExecutionPolicy: Send + Sync {
    async fn evaluate(&self, request: PolicyRequest<'_>) -> PolicyVerdict;
}

/// The `DecidedBy::Default` detail of a call the policy wanted an operator to approve when nobody could
/// be asked (no approver configured, or an approver with no operator attached).
pub const NO_APPROVER: &str = "no approver";

/// The `DecidedBy::Default` detail of a call the policy wanted approved that was handed to the agent's
/// own permission prompt instead (Claude Code's hook answering `ask` when no operator is attached): the
/// agent's user decides, outside Portcullis.
pub const AGENT_PROMPT: &str = "handed to the agent's own prompt";

/// The `DecidedBy::Default` detail of a call whose run was cancelled while it awaited approval (its
/// caller went away or gave up): the approval was withdrawn.
pub const APPROVAL_WITHDRAWN: &str = "run cancelled";

/// Whether a `DecidedBy::Default` detail says the policy asked and no operator of Portcullis answered
/// ([`NO_APPROVER`], [`AGENT_PROMPT`], [`APPROVAL_WITHDRAWN`]): the policy's decision was `prompt`,
/// whatever became of the call.
pub fn prompt_left_unanswered(detail: &str) -> bool {
    detail == NO_APPROVER || detail == AGENT_PROMPT || detail == APPROVAL_WITHDRAWN
}

/// What the approver is shown. Arguments are already redacted.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalRequest {
    pub call: Arc<CallContext>,
    pub tool_name: String,
    pub arguments: Arc<Value>,
    pub action: ExecutionAction,
    pub verdict: PolicyVerdict,
}

/// The approver's answer. A timeout is the approver's to report, as `Deny` with
/// [`DecidedBy::ApprovalTimeout`] — never as an operator's denial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum ApprovalAnswer {
    Allow { decided_by: DecidedBy },
    Deny { reason: String, decided_by: DecidedBy },
}

/// The approval seam (the hub's approval broker implements it).
#[async_trait]
pub trait Approvals: Send + Sync {
    async fn request(&self, request: ApprovalRequest) -> ApprovalAnswer;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which actions wait for a durable `started` record before they run, one row per case.
    #[test]
    fn side_effects_by_kind_and_operation() {
        let table = [
            (ActionKind::None, "call", false),
            (ActionKind::Read, "read", false),
            (ActionKind::Write, "write", true),
            (ActionKind::Execute, "exec", true),
            (ActionKind::Network, "fetch", true),
            (ActionKind::Other, "call", true),
            (ActionKind::Mcp, "call", true),
            (ActionKind::Mcp, MCP_READ, false),
            // Only the exact operation counts.
            (ActionKind::Mcp, "Read", true),
        ];
        for (kind, operation, side_effect) in table {
            assert_eq!(
                ExecutionAction::new(kind, operation).has_side_effect(),
                side_effect,
                "{kind:?} {operation}"
            );
        }
    }
}
