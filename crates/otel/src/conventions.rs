//! The OpenTelemetry names Portcullis speaks (GenAI and MCP semantic conventions, the proposed GenAI
//! security conventions for `apply_guardrail`, and `portcullis.*` for what only Portcullis knows), and
//! the tables that turn a ledger record into them.
//!
//! The guardrail decision (`gen_ai.security.decision.type`) of a call, from what the execution policy
//! said (`policy_decision`) and how the call then passed the gate:
//!
//! | policy said | the call      | decision | reason (a blocked record's own reason wins) |
//! |-------------|---------------|----------|---------------------------------------------|
//! | allow       | ran           | allow    | policy_allowed                              |
//! | allow       | was refused   | deny     | refused_after_policy                        |
//! | allow       | never settled | deny     | interrupted                                 |
//! | prompt      | ran           | allow    | operator_approved                           |
//! | prompt      | was refused   | deny     | operator_refused                            |
//! | prompt      | never settled | deny     | interrupted_awaiting_operator               |
//! | forbidden   | ran           | allow    | ran_despite_policy                          |
//! | forbidden   | was refused   | deny     | policy_forbidden                            |
//! | forbidden   | never settled | deny     | policy_forbidden                            |
//! | (none)      | ran           | allow    | no_policy_stage                             |
//! | (none)      | was refused   | deny     | refused_before_policy                       |
//! | (none)      | never settled | deny     | interrupted                                 |
//!
//! "Ran" is a finished or error record, or an interrupted one of a call that had started; "was
//! refused" a blocked record; "never settled" an interrupted record of a call that had not started
//! (its process stopped while it was being judged or awaiting an operator). "Prompt, ran" covers an
//! operator's approval and a session grant alike (`portcullis.decided_by` tells which). The
//! security conventions' other decisions (`modify`, `warn`, `audit`) have no Portcullis counterpart:
//! redaction changes what is recorded, never what runs.

use portcullis_ledger::{StoredKind, StoredPolicyDecision, StoredRecord};

// MCP and GenAI semantic conventions (the call's span).
pub const MCP_METHOD_NAME: &str = "mcp.method.name";
pub const MCP_SESSION_ID: &str = "mcp.session.id";
pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
pub const GEN_AI_TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
pub const GEN_AI_TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
pub const GEN_AI_TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";
pub const ERROR_TYPE: &str = "error.type";
pub const EXECUTE_TOOL: &str = "execute_tool";

// GenAI security conventions (the `apply_guardrail` span).
pub const APPLY_GUARDRAIL: &str = "apply_guardrail";
pub const GEN_AI_GUARDIAN_NAME: &str = "gen_ai.guardian.name";
pub const GEN_AI_SECURITY_TARGET_TYPE: &str = "gen_ai.security.target.type";
pub const GEN_AI_SECURITY_DECISION_TYPE: &str = "gen_ai.security.decision.type";
pub const GEN_AI_SECURITY_DECISION_REASON: &str = "gen_ai.security.decision.reason";
pub const GEN_AI_SECURITY_POLICY_ID: &str = "gen_ai.security.policy.id";
pub const GEN_AI_SECURITY_POLICY_VERSION: &str = "gen_ai.security.policy.version";

// What only Portcullis knows.
pub const PORTCULLIS_DECIDED_BY: &str = "portcullis.decided_by";
pub const PORTCULLIS_RULE: &str = "portcullis.rule";
pub const PORTCULLIS_RULE_SOURCE: &str = "portcullis.rule.source";
pub const PORTCULLIS_OPERATOR: &str = "portcullis.operator";
pub const PORTCULLIS_OPERATOR_OUTCOME: &str = "portcullis.operator.outcome";
pub const PORTCULLIS_POLICY_DECISION: &str = "portcullis.policy.decision";
pub const PORTCULLIS_OUTCOME: &str = "portcullis.outcome";
pub const PORTCULLIS_OWNER: &str = "portcullis.owner";
pub const PORTCULLIS_RECORD_ID: &str = "portcullis.record.id";
pub const PORTCULLIS_LEDGER_ID: &str = "portcullis.ledger.id";

/// The guardian Portcullis names itself as.
pub const GUARDIAN: &str = "portcullis";
/// What the guardrail judges: a tool call.
pub const TARGET_TOOL_CALL: &str = "tool_call";

/// How a call passed the gate, as far as the guardrail is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passage {
    Ran,
    Refused,
    NeverSettled,
}

impl Passage {
    /// How the call of the terminal `record` passed (`None` for a record that ends nothing).
    pub fn of(record: &StoredRecord) -> Option<Passage> {
        match record.kind {
            StoredKind::Finished | StoredKind::Error => Some(Passage::Ran),
            StoredKind::Blocked => Some(Passage::Refused),
            StoredKind::Interrupted if record.head.started_at.is_some() => Some(Passage::Ran),
            StoredKind::Interrupted => Some(Passage::NeverSettled),
            StoredKind::Started | StoredKind::Progress => None,
        }
    }
}

/// `gen_ai.security.decision.type` values Portcullis gives.
pub const ALLOW: &str = "allow";
pub const DENY: &str = "deny";

/// One row of the guardrail table (see the module's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardrailRow {
    pub policy: Option<StoredPolicyDecision>,
    pub passage: Passage,
    pub decision: &'static str,
    pub reason: &'static str,
}

const fn row(
    policy: Option<StoredPolicyDecision>,
    passage: Passage,
    decision: &'static str,
    reason: &'static str,
) -> GuardrailRow {
    GuardrailRow { policy, passage, decision, reason }
}

use Passage::{NeverSettled, Ran, Refused};
use StoredPolicyDecision::{Allow, Forbidden, Prompt};

/// The module's table, row by row.
pub const GUARDRAIL_DECISIONS: [GuardrailRow; 12] = [
    row(Some(Allow), Ran, ALLOW, "policy_allowed"),
    row(Some(Allow), Refused, DENY, "refused_after_policy"),
    row(Some(Allow), NeverSettled, DENY, "interrupted"),
    row(Some(Prompt), Ran, ALLOW, "operator_approved"),
    row(Some(Prompt), Refused, DENY, "operator_refused"),
    row(Some(Prompt), NeverSettled, DENY, "interrupted_awaiting_operator"),
    row(Some(Forbidden), Ran, ALLOW, "ran_despite_policy"),
    row(Some(Forbidden), Refused, DENY, "policy_forbidden"),
    row(Some(Forbidden), NeverSettled, DENY, "policy_forbidden"),
    row(None, Ran, ALLOW, "no_policy_stage"),
    row(None, Refused, DENY, "refused_before_policy"),
    row(None, NeverSettled, DENY, "interrupted"),
];

/// The guardrail's decision and reason for a call the policy judged `policy` and that then `passage`.
pub fn guardrail_decision(
    policy: Option<StoredPolicyDecision>,
    passage: Passage,
) -> (&'static str, &'static str) {
    GUARDRAIL_DECISIONS
        .iter()
        .find(|r| r.policy == policy && r.passage == passage)
        .map_or((DENY, "unknown"), |r| (r.decision, r.reason))
}

/// Where a terminal record's `error.type` comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorTypeSource {
    /// None, unless the tool's own result said `isError` (then `tool_error`).
    ToolResult,
    /// The record's error code (`tool_error`, `cancelled`, `tool_panicked` ...).
    ErrorCode,
    /// Why the call was blocked (`execution_denied`, `tool_denied` ...).
    BlockedReason,
    /// The call never ended: its process stopped.
    Interrupted,
}

/// Each terminal kind and where its `error.type` comes from.
pub const ERROR_TYPES: [(StoredKind, ErrorTypeSource); 4] = [
    (StoredKind::Finished, ErrorTypeSource::ToolResult),
    (StoredKind::Error, ErrorTypeSource::ErrorCode),
    (StoredKind::Blocked, ErrorTypeSource::BlockedReason),
    (StoredKind::Interrupted, ErrorTypeSource::Interrupted),
];

/// The `error.type` of the call ended by `record` (`None`: it succeeded).
pub fn error_type(record: &StoredRecord) -> Option<String> {
    let source = ERROR_TYPES.iter().find(|(kind, _)| *kind == record.kind).map(|(_, s)| *s)?;
    match source {
        ErrorTypeSource::ToolResult => record
            .body
            .output
            .as_ref()
            .filter(|o| o.is_error)
            .map(|_| portcullis_harness::CallErrorCode::ToolError.as_str().to_owned()),
        ErrorTypeSource::ErrorCode => {
            Some(record.head.error_code.as_ref().map_or("error", |c| c.as_str()).to_owned())
        }
        ErrorTypeSource::BlockedReason => Some(
            (record.head.reason.map(|r| r.as_str().to_owned()))
                .or_else(|| record.head.error_code.as_ref().map(|c| c.as_str().to_owned()))
                .unwrap_or_else(|| "blocked".to_owned()),
        ),
        ErrorTypeSource::Interrupted => Some("interrupted".to_owned()),
    }
}

#[cfg(test)]
#[path = "conventions_tests.rs"]
mod tests;
