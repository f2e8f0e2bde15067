//! The vocabulary of one tool call: what was asked, in which run, why it was refused or failed and what
//! decided it. The result that carries a finished call's output is in `outcome.rs`, above the tools.

use crate::error_code::CallErrorCode;
use crate::grants::Grants;
use crate::mcp_request::McpRequest;
use crate::receipt::{OperatorOutcome, Receipt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Arguments as the caller delivered them.
#[derive(Debug, Clone, PartialEq)]
pub enum CallArguments {
    /// Parsed JSON (must be an object to pass the pipeline).
    Json(Value),
    /// The caller's text did not parse as JSON; the call is blocked with `invalid_json_arguments`.
    Unparsed { raw: String, error: String },
}

impl CallArguments {
    /// Parses raw text (as streamed by a model); a parse failure is kept, not raised.
    pub fn from_text(raw: &str) -> Self {
        match serde_json::from_str(raw) {
            Ok(v) => CallArguments::Json(v),
            Err(e) => CallArguments::Unparsed { raw: raw.to_owned(), error: e.to_string() },
        }
    }
}

impl From<Value> for CallArguments {
    fn from(v: Value) -> Self {
        CallArguments::Json(v)
    }
}

/// One tool call as an agent asked for it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: Arc<str>,
    pub name: String,
    pub arguments: CallArguments,
}

impl ToolCall {
    pub fn new(
        id: impl Into<Arc<str>>,
        name: impl Into<String>,
        arguments: impl Into<CallArguments>,
    ) -> Self {
        ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
    }
}

/// Who is calling, within which run, from where, under which grants. One per agent run; cheap to clone.
#[derive(Debug, Clone)]
pub struct RunContext {
    pub session_id: Arc<str>,
    pub run_id: Arc<str>,
    /// Who owns the calls of this run (an agent client, a hook, an operator's "try it" form ...).
    pub owner: Arc<str>,
    /// Working directory the agent runs in, when it has one.
    pub cwd: Option<Arc<Path>>,
    /// Tool grants in force for this run.
    pub grants: Arc<Grants>,
    /// Cancelling this stops the run: running tools see it, unclaimed batch calls are not dispatched.
    pub cancel: CancellationToken,
    /// The agent's MCP request, when the run is one call an agent sent over MCP.
    pub mcp: Option<Arc<McpRequest>>,
}

impl RunContext {
    pub fn new(session_id: impl Into<Arc<str>>, run_id: impl Into<Arc<str>>) -> Self {
        RunContext {
            session_id: session_id.into(),
            run_id: run_id.into(),
            owner: Arc::from("agent"),
            cwd: None,
            grants: Arc::new(Grants::default()),
            cancel: CancellationToken::new(),
            mcp: None,
        }
    }

    pub fn with_owner(mut self, owner: impl Into<Arc<str>>) -> Self {
        self.owner = owner.into();
        self
    }

    pub fn with_grants(mut self, grants: Grants) -> Self {
        self.grants = Arc::new(grants);
        self
    }

    pub fn with_cwd(mut self, cwd: impl Into<Arc<Path>>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    pub fn with_mcp(mut self, request: Option<Arc<McpRequest>>) -> Self {
        self.mcp = request;
        self
    }

    /// The identity of one call of this run.
    pub fn call(&self, call_id: Arc<str>) -> CallContext {
        CallContext {
            session_id: self.session_id.clone(),
            run_id: self.run_id.clone(),
            call_id,
            owner: self.owner.clone(),
            cwd: self.cwd.clone(),
            mcp: self.mcp.clone(),
        }
    }
}

/// The identity of one call, carried by every event, record and seam request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallContext {
    pub session_id: Arc<str>,
    pub run_id: Arc<str>,
    pub call_id: Arc<str>,
    pub owner: Arc<str>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cwd: Option<Arc<Path>>,
    /// The agent's MCP request that carried the call (calls from elsewhere have none).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mcp: Option<Arc<McpRequest>>,
}

/// Why a call was blocked before it executed.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockedReason {
    GuardrailBlocked,
    UnknownTool,
    ToolDenied,
    InvalidArguments,
    PermissionDenied,
    ValidationFailed,
    ExecutionDenied,
    /// A retry of the first call with its idempotency key, not run: answered with that call's result
    /// (`duplicate_effect`), told what an operator said of it (`effect_marked_done`,
    /// `effect_marked_failed`), or cancelled while it waited for it (`cancelled`).
    DuplicateEffect,
    /// The idempotency key could not be claimed: a call with other arguments holds it
    /// (`effect_conflict`), or the ledger refused the claim (`ledger_unavailable`).
    EffectConflict,
    /// The first call with the idempotency key has an unknown outcome.
    OutcomeUnknown,
}

impl BlockedReason {
    pub const ALL: [BlockedReason; 10] = [
        BlockedReason::GuardrailBlocked,
        BlockedReason::UnknownTool,
        BlockedReason::ToolDenied,
        BlockedReason::InvalidArguments,
        BlockedReason::PermissionDenied,
        BlockedReason::ValidationFailed,
        BlockedReason::ExecutionDenied,
        BlockedReason::DuplicateEffect,
        BlockedReason::EffectConflict,
        BlockedReason::OutcomeUnknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BlockedReason::GuardrailBlocked => "guardrail_blocked",
            BlockedReason::UnknownTool => "unknown_tool",
            BlockedReason::ToolDenied => "tool_denied",
            BlockedReason::InvalidArguments => "invalid_arguments",
            BlockedReason::PermissionDenied => "permission_denied",
            BlockedReason::ValidationFailed => "validation_failed",
            BlockedReason::ExecutionDenied => "execution_denied",
            BlockedReason::DuplicateEffect => "duplicate_effect",
            BlockedReason::EffectConflict => "effect_conflict",
            BlockedReason::OutcomeUnknown => "outcome_unknown",
        }
    }
}

impl std::str::FromStr for BlockedReason {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BlockedReason::ALL.into_iter().find(|r| r.as_str() == s).ok_or_else(|| {
            let known: Vec<&str> = BlockedReason::ALL.iter().map(|r| r.as_str()).collect();
            format!("unknown blocked reason {s:?}: expected one of {}", known.join(", "))
        })
    }
}

impl fmt::Display for BlockedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tagged error: a stable `code` for programs, a `message` for people (always redacted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CallError {
    pub code: CallErrorCode,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub details: Option<Value>,
}

impl CallError {
    pub fn new(code: CallErrorCode, message: impl Into<String>) -> Self {
        CallError { code, message: message.into(), details: None }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// A policy rule that matched, by id and the file it came from.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RuleRef {
    pub id: String,
    pub source: String,
    /// The decision this rule gives on its own (`allow`, `prompt`, `forbidden`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub decision: Option<String>,
}

/// What a protected place is, which decides what a tool may do with it (the policy crate's table says
/// which places are which).
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtectedKind {
    /// A policy layer, a `.portcullis` folder or a tool-manifests folder: writes need an operator.
    Policy,
    /// Content that allowed programs execute (git hooks and config, editor/agent settings): writes need
    /// an operator.
    Executed,
    /// The hub's credentials and state, other processes' environment and memory: never read or written.
    HubSecret,
}

impl ProtectedKind {
    /// Every kind, for tables of their words.
    pub const ALL: [ProtectedKind; 3] =
        [ProtectedKind::Policy, ProtectedKind::Executed, ProtectedKind::HubSecret];

    /// The kind in a few words, as people read it after "decided by".
    pub fn words(self) -> &'static str {
        match self {
            ProtectedKind::Policy => "protected place (policy)",
            ProtectedKind::Executed => "protected place (executed content)",
            ProtectedKind::HubSecret => "protected place (the hub's secrets)",
        }
    }

    /// A place of this kind as the decider, in words: `protected place (executed content): Claude Code
    /// settings (…) at /p/.claude/settings.json`.
    pub fn describe(self, place: &str, path: &str) -> String {
        format!("{}: {place} at {path}", self.words())
    }
}

/// What decided a call's fate. Every record carries one, so an auditor can always answer "why".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum DecidedBy {
    /// No rule spoke; the configured (or built-in) default applied.
    Default {
        #[serde(skip_serializing_if = "Option::is_none", default)]
        detail: Option<String>,
    },
    /// A policy rule, by id and source file.
    Rule { rule_id: String, source: String },
    /// A protected place the call touches (a policy file, content programs execute, the hub's secrets):
    /// what it is, its kind, and the path. Stricter than any rule could loosen.
    ProtectedPlace { kind: ProtectedKind, place: String, path: String },
    /// An operator answered an approval prompt.
    Operator {
        outcome: OperatorOutcome,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        operator: Option<String>,
        /// Boxed: rare, and unboxed it would double the size of every `DecidedBy` (and so of every
        /// result, record and future that carries one).
        #[serde(skip_serializing_if = "Option::is_none", default)]
        rule_written: Option<Box<RuleRef>>,
        /// The answer bound to what it approved (the arguments' digest, the policy version, who, through
        /// which channel, when); none from approvers that give no receipt and in records written before
        /// receipts. Boxed for the same reason as `rule_written`.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        receipt: Option<Box<Receipt>>,
    },
    /// An earlier "allow for session" answer covered this call: the grant, and the id of the receipt of
    /// the answer that gave it (none for grants given without one).
    SessionGrant {
        grant_id: String,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        receipt: Option<String>,
    },
    /// Nobody answered the approval prompt in time; the call was denied. Never an operator's denial.
    ApprovalTimeout { after_ms: u64 },
    /// A tool-grant scope (exact allow/deny names).
    Grants { scope: String },
    /// A guardrail rule (or a failing guardrail, attributed to it).
    Guardrail { pack: String, rule: String },
    /// The permission check (`tool:<name>:execute`).
    Permission { permission: String },
    /// The registry: no such tool.
    Registry,
    /// Argument checks: JSON shape, JSON Schema, or a host validator.
    Validator { validator: String },
}

impl DecidedBy {
    pub const DEFAULT: DecidedBy = DecidedBy::Default { detail: None };
}
