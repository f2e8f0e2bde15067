//! The operator API's transport types: what front ends send and receive, serializable, kept apart from
//! the crates' internal types so that a change inside does not change what the desktop app and the HTTP
//! API see.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The crates' types that are part of this API's contract (fields of the transport types, a call's
/// result), re-exported so front ends name them through the API.
pub use portcullis_harness::{
    CallError, CallErrorCode, CallOutcome, Content, DecidedBy, ExecutionAction, FileAccess, FileVerdict,
    OperatorOutcome, PolicyDecision, ProtectedKind, Receipt, RuleRef, Timestamp, ToolCallResult, ToolOutput,
};
pub use portcullis_harness::{ChangeEntry, ChangeKind, ChangeOutcome, ChangeRecord};
pub use portcullis_harness::{Enforcement, SandboxLimits, SandboxProfile, SandboxSupport, asks_for_host};
pub use portcullis_ledger::SinkLag;
pub use portcullis_policy::{Part, PartKind, RuleScope};

/// A call waiting for an operator's answer.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    pub id: u64,
    pub session_id: String,
    pub call_id: String,
    pub tool: String,
    /// The call's arguments, secrets redacted. Agent text: escape it wherever a person reads it.
    pub arguments: Value,
    /// The SHA-256 (hex) of `arguments` in canonical JSON: every answer names it (an [`Answer`]'s
    /// `arguments_sha256`), so it approves these arguments and no others.
    pub arguments_sha256: String,
    /// The version of the policy that asked (a content hash of its layers, as the call records it).
    pub policy_version: Option<String>,
    /// What the call would do (kind, operation, command, canonical paths, working folder).
    pub action: ExecutionAction,
    /// Why the policy asks.
    pub reason: Option<String>,
    /// The rules that matched, each with its source file.
    pub matched_rules: Vec<RuleRef>,
    pub requested_at: Timestamp,
    /// When the call is denied if nobody answers.
    pub deadline: Timestamp,
    /// What "always" would write, or why it is not offered.
    pub always: AlwaysOffer,
    /// The policy's full evaluation of the action as it stands now: every sub-command and path, every
    /// matched rule with its file, the deciding rule and why (absent for actions it does not judge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<portcullis_policy::Evaluation>,
    /// For the `write` and `edit` tools: the file as it is and as the call would leave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_change: Option<super::file_change::FileChange>,
    /// Which hub asks, in an inbox across several hubs (the desktop app attached to more than one);
    /// none from a hub itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub: Option<String>,
}

/// Whether "always" is on offer for an approval.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "offered", rename_all = "snake_case")]
pub enum AlwaysOffer {
    /// The policy file the amendment goes to, what it adds, and the amendment as written.
    Yes {
        file: String,
        /// "Always" creates `file` (the user's policy: the built-in default's rules plus these).
        creates: bool,
        rules: Vec<AlwaysRule>,
        read_roots: Vec<String>,
        amendment: Value,
    },
    No {
        why: String,
    },
}

/// A command rule "always" would add.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlwaysRule {
    pub id: String,
    /// The command it was made from (its first example).
    pub example: String,
    /// The command's words, which a narrower scope keeps a prefix of.
    pub words: Vec<String>,
}

/// An operator's answer.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Choice {
    /// Allow this call only.
    Once,
    /// Allow the same action again in this session without asking.
    Session,
    /// Allow it from now on (a rule is written to the policy file).
    Always,
    Deny,
}

/// An answer to one approval.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub answer: Choice,
    /// The approval's `arguments_sha256` as the operator was shown it: an answer naming other
    /// arguments is refused (`receipt_mismatch`) and the call still waits.
    pub arguments_sha256: String,
    /// Words for the agent (read with a denial) and the ledger (kept with any answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// With "always": how widely each offered rule applies, in the order offered (absent: each rule
    /// as offered, the exact command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Vec<portcullis_policy::RuleScope>>,
}

/// An "allow for this session" in force.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionGrant {
    pub id: String,
    pub session_id: String,
    pub tool: String,
    pub action: ExecutionAction,
    pub granted_at: Timestamp,
    /// The id of the receipt of the answer that gave it.
    pub receipt: Option<String>,
}

/// A tool as agents see it, and whether the grants let them see it.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogTool {
    /// The registry's name (`shell`, `mcp:<server>:<tool>`).
    pub name: String,
    /// The name agents call it by over MCP.
    pub wire_name: String,
    pub description: String,
    /// JSON Schema of its arguments.
    pub parameters: Option<Value>,
    pub annotations: Value,
    /// Whether the grants in force let agents see and call it.
    pub granted: bool,
}

/// One item of the operator's event feed, numbered in the order the feed delivered it.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeedItem {
    /// 1, 2, 3… for this feed: a front end that saw a [`FeedEvent::Missed`] knows how many it lost.
    pub seq: u64,
    pub at: Timestamp,
    pub event: FeedEvent,
}

/// What happened, by source: the hub, the approval broker, the tools' calls.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FeedEvent {
    PolicyReloaded {
        sources: Vec<String>,
    },
    /// A changed policy did not load; the previous one stays in force.
    PolicyRejected {
        code: String,
        message: String,
    },
    /// A changed tool manifest did not load; the previous manifests stay in force.
    ManifestRejected {
        message: String,
    },
    SessionOpened {
        session_id: String,
        client: String,
        version: String,
    },
    SessionClosed {
        session_id: String,
    },
    /// An upstream server's tools or status changed: every server's state now.
    ServersChanged {
        servers: Vec<UpstreamServer>,
    },
    ApprovalAsked {
        approval: Box<Approval>,
    },
    /// Answered (`once`, `session`, `always`, `deny`, with who), `timeout` or `withdrawn`.
    ApprovalSettled {
        id: u64,
        outcome: String,
        operator: Option<String>,
    },
    /// A call's lifecycle event (`tool_execution_blocked|started|progress|finished|error`, a guardrail's
    /// decision) with the pipeline steps it closes. The event's arguments and output stay in the ledger:
    /// a feed that carries a thousand calls a second carries their decisions, not their bodies.
    Call {
        /// The call's listing after this event: the ledger's row type, as the ledger browser lists a
        /// recorded call (`record_id` 0: not recorded yet as far as the feed knows). Its owner and
        /// summary are agent text: escape them wherever a person reads them.
        row: Box<portcullis_ledger::CallRow>,
        /// When the pipeline emitted the event (µs since the epoch).
        at: Timestamp,
        /// The lifecycle event's kind (`tool_execution_started`...).
        stage: String,
        /// What the event says about the pipeline's stages, in pipeline order.
        steps: Vec<CallStep>,
        /// What the call does, in one line (its command, or its operation and paths), when the event says.
        /// Agent text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        action: Option<String>,
        /// The walls the command runs inside, in one line, when the event says (its start carries them).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandbox: Option<String>,
        /// The connections the command made or tried through its egress proxy (its finish carries
        /// them). Hosts are agent text.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        connections: Vec<portcullis_harness::Connection>,
    },
    /// The feed fell behind one of its sources, which dropped `count` events for it.
    Missed {
        source: String,
        count: u64,
    },
}

/// One stage of the pipeline a call passed or stopped at, as a lifecycle event tells it.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallStep {
    pub stage: PipelineStage,
    pub outcome: StepOutcome,
    /// What the stage decided, when it decides (policy, approval, a stage that blocked the call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<CallDecision>,
    /// Who decided, when the stage decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<Decider>,
    /// How long execution took (finished or failed calls), in µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_us: Option<u64>,
    /// Why the call was blocked or failed: `code: message`. Agent text may be quoted in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The pipeline's stages, in the order a call passes them.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PipelineStage {
    /// Input and output guardrails.
    Guardrail,
    /// Tool lookup and the grants (exact allow/deny names).
    Grant,
    /// The arguments' shape and JSON Schema, and host validators.
    Arguments,
    /// The `tool:<name>:execute` permission.
    Permission,
    /// The execution policy (command rules, path roots).
    Policy,
    /// An operator's answer, or a session grant standing for one.
    Approval,
    /// The ledger's `started` row, written before the tool runs (durably for a call with side effects).
    Ledger,
    /// The tool running (then its result's guardrails and redaction, and the ledger row).
    Execution,
    /// Secrets redacted from the result (before anyone sees it).
    Redaction,
}

/// What happened at a stage.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOutcome {
    Passed,
    Blocked,
    Started,
    Progress,
    Finished,
    Error,
}

/// A decision on a call, in the color language every view shares.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallDecision {
    /// Allowed without asking (a rule, the default, a grant).
    Allow,
    /// Allowed without asking, contained: part of the command cannot be read statically, so it ran
    /// under the strictest reading of the policy (programs its rules ask for masked, no host asked for,
    /// the files the deny globs name hidden) and what it changed was reviewed before it was kept.
    Contained,
    /// The policy asked an operator (its step; the approval's step says how it ended).
    Prompt,
    /// Allowed by an operator, or by a session grant an operator gave.
    Approved,
    /// Refused by the policy (`forbidden`).
    Forbidden,
    /// Refused by an operator, the grants, a guardrail, the permission check or the argument checks.
    Denied,
    /// Nobody answered the approval in time (denied, never recorded as an operator's denial).
    Timeout,
}

pub use super::decider::{Decider, DeciderKind};
pub use portcullis_hub::{ServerFailure, UpstreamServer, UpstreamState};

/// How to hook one client up to this hub: a command to run or what to put in a file.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookupSnippet {
    /// The client (`Claude Code`, `Codex`).
    pub client: String,
    /// What the snippet does (`MCP server over HTTP`, `PreToolUse hook`...).
    pub purpose: String,
    /// Where it goes: a file to merge it into, or `None` for a command to run in a terminal.
    pub file: Option<String>,
    /// `sh`, `json` or `toml`.
    pub language: String,
    pub text: String,
}

impl From<portcullis_policy::ApprovalChoice> for Choice {
    fn from(choice: portcullis_policy::ApprovalChoice) -> Self {
        match choice {
            portcullis_policy::ApprovalChoice::Once => Choice::Once,
            portcullis_policy::ApprovalChoice::Session => Choice::Session,
            portcullis_policy::ApprovalChoice::Always => Choice::Always,
            portcullis_policy::ApprovalChoice::Deny => Choice::Deny,
        }
    }
}

/// An agent session the hub has open.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSession {
    pub id: String,
    /// The client's name and version as it said in `initialize` (agent text: escape it).
    pub client: String,
    pub version: String,
    /// `http` or `stdio` (the relay), or `in-process` for a session a front end opened itself.
    pub transport: String,
    pub opened_at: Timestamp,
    /// Calls the session made so far (blocked ones included).
    pub calls: u64,
}

/// An upstream tool held back because its server changed its definition since an operator accepted
/// it (or since it was first seen): both definitions and the diff between them. Server text:
/// untrusted, escape it wherever a person reads it.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolChange {
    pub server: String,
    /// The tool's name on its server (agents knew it as `<server>__<tool>`).
    pub tool: String,
    /// When the change was seen.
    pub since: Timestamp,
    /// SHA-256 of the accepted and the offered definition; accepting names the offered one.
    pub accepted_digest: String,
    pub offered_digest: String,
    /// `{name, description, input_schema, annotations}` as accepted and as offered.
    pub accepted: Value,
    pub offered: Value,
    /// The line diff of the two definitions (pretty JSON).
    pub diff: Vec<crate::line_diff::DiffLine>,
    /// Served meanwhile, every call asking the operator (its server's `"changed_tools": "prompt"`);
    /// false: held back, agents neither see nor call it.
    pub prompted: bool,
}

/// The hub at a glance.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HubStatus {
    pub version: String,
    /// The project folder whose tools' root the hub guards.
    pub project: String,
    /// The policy files in force, in layer order (or the built-in default).
    pub policies: Vec<String>,
    /// The tools agents see now.
    pub tools: Vec<String>,
    pub pending_approvals: usize,
    pub sessions: usize,
    pub servers: Vec<UpstreamServer>,
}

/// A policy file as read, with the version a save must match.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyFile {
    /// The file's path, or `built-in default policy` when no file applies.
    pub source: String,
    /// Its place in the layering, first (the user's, the only one that can widen) to last.
    pub layer: usize,
    pub text: String,
    /// The version of `text` (a hash of the bytes): a save names it, and is refused if the file changed.
    pub version: String,
    /// False for the built-in default (no file to save to).
    pub editable: bool,
}

/// What a valid policy text holds.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicySummary {
    pub rules: usize,
    pub examples: usize,
    pub tests: usize,
    pub servers: usize,
}
