//! How a harness record becomes a row (identity and filter columns, plus a JSON body), and how rows
//! come back as [`StoredRecord`]s.

use crate::call_head::{CallHead, HEAD_COLUMN_COUNT, StoredPolicyDecision, head_columns};
use portcullis_harness::{
    CallError, DecidedBy, ExecutionAction, FileVerdict, McpRequest, PolicyRuling, RecordKind, RuleRef,
    ToolCallRecord, ToolOutput,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::ops::Range;
use std::sync::Arc;

/// The kinds a stored record can have: the harness's kinds plus `interrupted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum StoredKind {
    Started,
    Progress,
    Finished,
    Error,
    Blocked,
    /// Written on open (or clean close) for a call whose process stopped before it ended.
    Interrupted,
}

impl StoredKind {
    pub const ALL: [StoredKind; 6] = [
        StoredKind::Started,
        StoredKind::Progress,
        StoredKind::Finished,
        StoredKind::Error,
        StoredKind::Blocked,
        StoredKind::Interrupted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StoredKind::Started => "started",
            StoredKind::Progress => "progress",
            StoredKind::Finished => "finished",
            StoredKind::Error => "error",
            StoredKind::Blocked => "blocked",
            StoredKind::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<StoredKind> {
        StoredKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            StoredKind::Finished | StoredKind::Error | StoredKind::Blocked | StoredKind::Interrupted
        )
    }
}

impl From<RecordKind> for StoredKind {
    fn from(kind: RecordKind) -> Self {
        match kind {
            RecordKind::Started => StoredKind::Started,
            RecordKind::Progress => StoredKind::Progress,
            RecordKind::Finished => StoredKind::Finished,
            RecordKind::Error => StoredKind::Error,
            RecordKind::Blocked => StoredKind::Blocked,
        }
    }
}

/// The columns of what the policy said: (decision, the id of the rule that decided it).
pub fn policy_columns(ruling: Option<&PolicyRuling>) -> (Option<&'static str>, Option<String>) {
    let Some(ruling) = ruling else { return (None, None) };
    let rule = match &ruling.decided_by {
        DecidedBy::Rule { rule_id, .. } => Some(rule_id.clone()),
        _ => None,
    };
    (Some(StoredPolicyDecision::from(ruling.decision).as_str()), rule)
}

/// The JSON body: everything of a record that is not a filter column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RecordBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Arc<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Arc<ExecutionAction>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Arc<ToolOutput>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<CallError>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched_rules: Vec<RuleRef>,
    pub decided_by: DecidedBy,
    /// What made the execution policy ask an operator (a rule, a protected place, the default): kept
    /// only for a prompt, whose `decided_by` is then whoever settled it; when the policy allowed or
    /// forbade the call itself, `decided_by` already says who (see [`StoredRecord::policy_decided_by`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_decided_by: Option<DecidedBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Every file the call reads or writes, each with the policy's verdict on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileVerdict>,
    /// The version of the policy that judged the call (a content hash of its layers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_version: Option<Arc<str>>,
    /// The agent's MCP request that carried the call (request id, protocol version, trace context):
    /// absent for calls from elsewhere and in records written before the ledger kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "specta", specta(skip))]
    pub mcp: Option<Arc<McpRequest>>,
}

/// The columns of what decided a call: (kind, rule id, rule source, operator).
pub fn decided_columns(d: &DecidedBy) -> (&'static str, Option<&str>, Option<&str>, Option<String>) {
    let (rule, source, operator) = decided_details(d);
    (d.kind().as_str(), rule, source, operator)
}

/// The rule, its source and the operator's answer of what decided (where there are some).
fn decided_details(d: &DecidedBy) -> (Option<&str>, Option<&str>, Option<String>) {
    match d {
        DecidedBy::Default { .. } => (None, None, None),
        DecidedBy::Rule { rule_id, source } => (Some(rule_id), Some(source), None),
        DecidedBy::ProtectedPlace { place, path, .. } => (Some(place), Some(path), None),
        DecidedBy::Operator { outcome, operator, rule_written, .. } => {
            let outcome = serde_json::to_value(outcome).ok().and_then(|v| v.as_str().map(str::to_owned));
            let who = match (operator, outcome) {
                (Some(op), Some(o)) => Some(format!("{op}: {o}")),
                (None, Some(o)) => Some(o),
                (Some(op), None) => Some(op.clone()),
                (None, None) => None,
            };
            let rule = rule_written.as_ref().map(|r| r.id.as_str());
            let source = rule_written.as_ref().map(|r| r.source.as_str());
            (rule, source, who)
        }
        DecidedBy::SessionGrant { grant_id, .. } => (Some(grant_id), None, None),
        DecidedBy::ApprovalTimeout { .. } => (None, None, None),
        DecidedBy::Grants { scope } => (Some(scope), None, None),
        DecidedBy::Guardrail { pack, rule } => (Some(rule), Some(pack), None),
        DecidedBy::Permission { permission } => (Some(permission), None, None),
        DecidedBy::Registry => (None, None, None),
        DecidedBy::Validator { validator } => (Some(validator), None, None),
    }
}

/// What made the policy ask, for a record whose policy asked (see [`RecordBody::policy_decided_by`]).
fn asked_by(record: &ToolCallRecord) -> Option<&DecidedBy> {
    record.policy.as_ref()?.asked_by()
}

/// The body of a harness record.
pub fn body_of(record: &ToolCallRecord) -> RecordBody {
    RecordBody {
        arguments: record.arguments.clone(),
        action: record.action.clone(),
        progress: record.progress.clone(),
        output: record.output.clone(),
        error: record.error.clone(),
        matched_rules: record.matched_rules.clone(),
        decided_by: record.decided_by.clone(),
        policy_decided_by: asked_by(record).cloned(),
        cwd: record.call.cwd.as_ref().map(|p| p.to_string_lossy().into_owned()),
        files: record.policy.as_ref().map(|p| p.files.clone()).unwrap_or_default(),
        policy_version: record.policy.as_ref().and_then(|p| p.version.clone()),
        mcp: record.call.mcp.clone(),
    }
}

/// The text full-text search sees: arguments, output text, error message (not the JSON keys of the body).
pub fn search_text(body: &RecordBody) -> String {
    search_text_of(body.arguments.as_deref(), body.output.as_deref(), body.error.as_ref())
}

/// [`search_text`] from the parts of a record.
pub(crate) fn search_text_of(
    arguments: Option<&Value>,
    output: Option<&ToolOutput>,
    error: Option<&CallError>,
) -> String {
    let mut text = String::new();
    if let Some(args) = arguments {
        text.push_str(&args.to_string());
    }
    if let Some(output) = output {
        text.push(' ');
        text.push_str(&output.joined_text());
        if let Some(s) = &output.structured {
            text.push(' ');
            text.push_str(&s.to_string());
        }
    }
    if let Some(error) = error {
        text.push(' ');
        text.push_str(error.code.as_str());
        text.push(' ');
        text.push_str(&error.message);
    }
    text
}

/// Writes the JSON of [`RecordBody`] for `record` into `out` without copying the record's values (the
/// writer's hot path), field by field in `RecordBody`'s order and with its omissions (a test checks the
/// two agree byte for byte). Returns where the arguments' JSON is in `out`, for the search document.
pub(crate) fn write_body(
    record: &ToolCallRecord,
    out: &mut Vec<u8>,
) -> serde_json::Result<Option<Range<usize>>> {
    /// Writes `"name":value` (after a comma unless it is the first field) when there is a value;
    /// returns where the value is.
    fn field<T: Serialize + ?Sized>(
        out: &mut Vec<u8>,
        first: &mut bool,
        name: &str,
        value: Option<&T>,
    ) -> serde_json::Result<Option<Range<usize>>> {
        let Some(value) = value else { return Ok(None) };
        if !std::mem::take(first) {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\":");
        let start = out.len();
        serde_json::to_writer(&mut *out, value)?;
        Ok(Some(start..out.len()))
    }
    let first = &mut true;
    out.push(b'{');
    let arguments = field(out, first, "arguments", record.arguments.as_deref())?;
    field(out, first, "action", record.action.as_deref())?;
    field(out, first, "progress", record.progress.as_ref())?;
    field(out, first, "output", record.output.as_deref())?;
    field(out, first, "error", record.error.as_ref())?;
    let rules = &record.matched_rules;
    field(out, first, "matched_rules", (!rules.is_empty()).then_some(rules))?;
    field(out, first, "decided_by", Some(&record.decided_by))?;
    field(out, first, "policy_decided_by", asked_by(record))?;
    field(out, first, "cwd", record.call.cwd.as_ref().map(|c| c.to_string_lossy()).as_ref())?;
    let files = record.policy.as_ref().map(|p| &p.files).filter(|f| !f.is_empty());
    field(out, first, "files", files)?;
    field(out, first, "policy_version", record.policy.as_ref().and_then(|p| p.version.as_deref()))?;
    field(out, first, "mcp", record.call.mcp.as_deref())?;
    out.push(b'}');
    Ok(arguments)
}

/// Appends [`search_text_of`] to `out` directly, the arguments' JSON taken from `arguments` (a range of
/// `out` itself, written by [`write_body`]).
pub(crate) fn write_search_text(
    out: &mut Vec<u8>,
    arguments: Option<Range<usize>>,
    output: Option<&ToolOutput>,
    error: Option<&CallError>,
) -> serde_json::Result<()> {
    if let Some(range) = arguments {
        out.extend_from_within(range);
    }
    if let Some(output) = output {
        out.push(b' ');
        let mut first = true;
        for block in &output.content {
            if let portcullis_harness::Content::Text { text } = block {
                if !std::mem::take(&mut first) {
                    out.push(b'\n');
                }
                out.extend_from_slice(text.as_bytes());
            }
        }
        if let Some(structured) = &output.structured {
            out.push(b' ');
            serde_json::to_writer(&mut *out, structured)?;
        }
    }
    if let Some(error) = error {
        out.push(b' ');
        out.extend_from_slice(error.code.as_str().as_bytes());
        out.push(b' ');
        out.extend_from_slice(error.message.as_bytes());
    }
    Ok(())
}

/// One stored record: its id and kind, its call's head, and its body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct StoredRecord {
    pub id: i64,
    #[serde(flatten)]
    pub head: CallHead,
    pub kind: StoredKind,
    #[serde(flatten)]
    pub body: RecordBody,
}

impl StoredRecord {
    /// What gave the execution policy's decision: for a prompt, what made it ask (kept apart, since
    /// an operator or a timeout settled the call); for an allow or a forbid, the record's own decider.
    /// `None` when the call never reached the policy, or a prompt was recorded before the ledger kept it.
    pub fn policy_decided_by(&self) -> Option<&DecidedBy> {
        match self.head.policy_decision? {
            StoredPolicyDecision::Prompt => self.body.policy_decided_by.as_ref(),
            StoredPolicyDecision::Allow | StoredPolicyDecision::Forbidden => Some(&self.body.decided_by),
        }
    }
}

/// The columns `StoredRecord` is read from, in order: its id and kind, its head, its body.
pub const RECORD_COLUMNS: &str = concat!("id, kind, ", head_columns!(), ", body");

/// Reads a `StoredRecord` from a row selected with [`RECORD_COLUMNS`].
pub fn stored_record(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredRecord> {
    /// Where the body is: after the id, the kind and the head.
    const BODY: usize = 2 + HEAD_COLUMN_COUNT;
    let kind: String = row.get(1)?;
    let body: String = row.get(BODY)?;
    let body: RecordBody = serde_json::from_str(&body).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(BODY, rusqlite::types::Type::Text, Box::new(e))
    })?;
    Ok(StoredRecord {
        id: row.get(0)?,
        head: CallHead::from_sqlite(row, 2)?,
        kind: StoredKind::parse(&kind).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                1,
                rusqlite::types::Type::Text,
                format!("unknown record kind {kind:?}").into(),
            )
        })?,
        body,
    })
}
