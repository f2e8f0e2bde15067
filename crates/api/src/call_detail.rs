//! One call, everything about it, in the one shape every front end reads: the ledger browser's
//! drawer, `portcullis ledger show` (text and `--json`) and the command table's `ledger_call`. Its
//! listing row is the ledger's `CallRow` (the same the tables list); each record is kept whole with who
//! decided it and its one-line summary.

use super::record_summary::record_summary;
use super::types::Decider;
use portcullis_harness::{CallError, Content, FileVerdict, RuleRef, Timestamp, ToolOutput};
use portcullis_ledger::{ApprovalRecord, CallOrigin, CallRow, StoredKind, StoredRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Image types a front end may draw from a call's output; any other is described, never drawn.
pub const DRAWN_IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// One block of a call's output, as a front end shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputPart {
    Text {
        text: String,
    },
    /// A raster image of one of [`DRAWN_IMAGE_TYPES`], base64.
    Image {
        mime_type: String,
        data: String,
    },
    /// Anything else (a resource, an image of another type), as recorded, to show as JSON.
    Other {
        value: Value,
    },
}

fn output_parts(output: &ToolOutput) -> Vec<OutputPart> {
    let mut parts: Vec<OutputPart> = output
        .content
        .iter()
        .map(|c| match c {
            Content::Text { text } => OutputPart::Text { text: text.clone() },
            Content::Image { data, mime_type } if DRAWN_IMAGE_TYPES.contains(&mime_type.as_str()) => {
                OutputPart::Image { mime_type: mime_type.clone(), data: data.clone() }
            }
            other => OutputPart::Other { value: serde_json::to_value(other).unwrap_or(Value::Null) },
        })
        .collect();
    if let Some(structured) = &output.structured {
        parts.push(OutputPart::Other { value: structured.clone() });
    }
    parts
}

/// One record of a call's lifecycle, whole as the ledger keeps it, with who decided it and the record
/// on one line: the ledger browser's timeline and `portcullis ledger show` (text and JSON) alike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RecordStep {
    #[serde(flatten)]
    pub record: StoredRecord,
    pub decider: Decider,
    /// Its reason, error, arguments, action, progress, output and duration on one line (agent text:
    /// escape it where a person reads it).
    pub summary: String,
}

/// When each stage of a call happened and how long it took (microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CallTimings {
    /// The first record of the call (asked, or refused at once).
    pub first_at: Timestamp,
    /// Execution began.
    pub started_at: Option<Timestamp>,
    /// The terminal record.
    pub ended_at: Option<Timestamp>,
    /// The operator's answer took this long (asked to answered, or to the timeout).
    pub approval_wait_us: Option<i64>,
    /// Execution took this long.
    pub run_us: Option<i64>,
    /// From the first record to the last.
    pub total_us: i64,
}

/// One call, everything the detail view shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CallDetail {
    /// Its latest state, as the table lists it.
    pub call: CallRow,
    /// The arguments as recorded (secrets already replaced by `[REDACTED]`).
    pub arguments: Option<Value>,
    pub output: Vec<OutputPart>,
    /// The tool reported a failure to the agent.
    pub output_is_error: bool,
    /// The connections the command made or tried through its egress proxy (hosts are agent text).
    pub connections: Vec<portcullis_harness::Connection>,
    /// What a confined command changed and what became of each change (kept, held, discarded), with
    /// sizes and digests (paths and reasons are agent text); `None` when it changed nothing, or was
    /// recorded before the ledger kept its changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<portcullis_harness::ChangeRecord>,
    /// The error the call ended with: code and message.
    pub error: Option<CallError>,
    /// What decided the call (the terminal record's decider).
    pub decider: Decider,
    /// What gave the execution policy's decision, in words (a rule, a protected place, the default);
    /// `None` when the call never reached the policy or was recorded before the ledger kept it.
    pub policy_decider: Option<Decider>,
    /// The rules that matched, in order (each with its file), as the first record that has them says.
    pub matched_rules: Vec<RuleRef>,
    /// The files the call reads or writes, with the policy's verdict on each (the first record that
    /// lists them).
    pub files: Vec<FileVerdict>,
    pub cwd: Option<String>,
    pub timings: CallTimings,
    pub records: Vec<RecordStep>,
    pub approvals: Vec<ApprovalRecord>,
}

/// The change record of a terminal record's body: its output's, or (a command that timed out or was
/// cancelled) its error's details'.
fn change_record_of(body: &portcullis_ledger::RecordBody) -> Option<portcullis_harness::ChangeRecord> {
    if let Some(record) = body.output.as_deref().and_then(|o| o.changes.as_deref()) {
        return Some(record.clone());
    }
    let details = body.error.as_ref()?.details.as_ref()?.get("changes")?;
    serde_json::from_value(details.clone()).ok()
}

impl CallDetail {
    /// The detail with where its call ran (a team ledger's hub; `None` in a hub's own file).
    pub(crate) fn ran_on(mut self, origin: Option<CallOrigin>) -> CallDetail {
        self.call.origin = origin;
        self
    }

    /// The detail of a call from its records (in id order) and approvals; `None` without records.
    pub(crate) fn of(records: Vec<StoredRecord>, approvals: Vec<ApprovalRecord>) -> Option<CallDetail> {
        let terminal = records.iter().rev().find(|r| r.kind.is_terminal());
        let last = terminal.or(records.last())?;
        let started = records.iter().find(|r| r.kind == StoredKind::Started);
        let first_at = records.first().map_or(last.head.at, |r| r.head.at);
        let ended_at = terminal.map(|r| r.head.at);
        let approval_wait_us = approvals
            .iter()
            .filter_map(|a| a.resolved_at.map(|done| done.0.saturating_sub(a.requested_at.0)))
            .reduce(|a, b| a + b);
        let started_at = terminal.and_then(|t| t.head.started_at).or(started.map(|s| s.head.at));
        let run_us = terminal.and_then(|t| t.head.duration_us);
        let body = &last.body;
        Some(CallDetail {
            call: CallRow::of_call(&records, last.id).unwrap_or_else(|| CallRow::of(last)),
            arguments: records.iter().find_map(|r| r.body.arguments.as_deref().cloned()),
            output: body.output.as_deref().map(output_parts).unwrap_or_default(),
            output_is_error: body.output.as_deref().is_some_and(|o| o.is_error),
            connections: body.output.as_deref().map(|o| o.connections.clone()).unwrap_or_default(),
            changes: change_record_of(body),
            error: body.error.clone(),
            decider: Decider::of(&body.decided_by),
            policy_decider: records
                .iter()
                .find_map(portcullis_ledger::StoredRecord::policy_decided_by)
                .map(Decider::of),
            // The first record that has them (the `started` one, for a call that ran).
            matched_rules: (records.iter().map(|r| &r.body.matched_rules).find(|m| !m.is_empty()))
                .cloned()
                .unwrap_or_default(),
            files: (records.iter().map(|r| &r.body.files).find(|f| !f.is_empty()))
                .cloned()
                .unwrap_or_default(),
            cwd: records.iter().find_map(|r| r.body.cwd.clone()),
            timings: CallTimings {
                first_at,
                started_at,
                ended_at,
                approval_wait_us,
                run_us,
                total_us: last.head.at.0.max(first_at.0) - first_at.0,
            },
            records: records
                .iter()
                .map(|r| RecordStep {
                    decider: Decider::of(&r.body.decided_by),
                    summary: record_summary(r),
                    record: r.clone(),
                })
                .collect(),
            approvals,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_raster_images_are_drawn() {
        let output = ToolOutput {
            content: vec![
                Content::Text { text: "hi".into() },
                Content::Image { data: "AAAA".into(), mime_type: "image/png".into() },
                Content::Image { data: "PHN2Zz4=".into(), mime_type: "image/svg+xml".into() },
            ],
            structured: None,
            is_error: false,
            connections: Vec::new(),
            changes: None,
        };
        let parts = output_parts(&output);
        assert!(matches!(&parts[0], OutputPart::Text { text } if text == "hi"));
        assert!(matches!(&parts[1], OutputPart::Image { mime_type, .. } if mime_type == "image/png"));
        assert!(matches!(&parts[2], OutputPart::Other { .. }), "svg is shown as data, never drawn");
    }
}
