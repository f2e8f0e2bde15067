//! What a call's terminal record is marked with for the filters of the ledger browser, read from its
//! body: `changes`, the most serious outcome of what a confined command changed (held, then discarded,
//! then kept; NULL when it changed nothing), and `contained`, whether it ran contained (its result says
//! `sandbox.contained`; the `policy_decision` column says `allow` for such a call, its CHECK predating
//! containment).
//!
//! Both are derived columns, like `status` from `kind`: they are not part of the hash chain's canonical
//! bytes (`chain.rs`), the body they are read from is, and `ledger verify` reads them again from the body
//! and names a row where they disagree. Rows written before the columns existed get them from the
//! migration that added them (`backfill`), from the same body.

use portcullis_harness::{CallError, ChangeOutcome, ToolOutput};
use rusqlite::{Connection, params};
use serde::Deserialize;
use serde_json::Value;

/// The marks of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallMarks {
    pub changes: Option<ChangeOutcome>,
    pub contained: bool,
}

impl CallMarks {
    /// The `changes` column.
    pub fn changes_column(&self) -> Option<&'static str> {
        self.changes.map(ChangeOutcome::as_str)
    }
}

/// The counts of a `sandbox.changes` summary (`kept_count`, ...) or of a change record (`kept`, ...).
fn outcome_of_counts(value: &Value, suffix: &str) -> Option<ChangeOutcome> {
    let count = |name: &str| value.get(format!("{name}{suffix}")).and_then(Value::as_u64).unwrap_or(0);
    ChangeOutcome::most_serious(count("kept"), count("held"), count("discarded"))
}

/// The marks of a call that ended with `output` or `error` (its terminal record's).
pub fn marks_of(output: Option<&ToolOutput>, error: Option<&CallError>) -> CallMarks {
    let details = error.and_then(|e| e.details.as_ref());
    // A command that timed out or was cancelled: its result is in the error's details.
    let sandbox = output
        .and_then(|o| o.structured.as_ref())
        .and_then(|s| s.get("sandbox"))
        .or_else(|| details.and_then(|d| d.get("result")).and_then(|r| r.get("sandbox")))
        .filter(|s| s.is_object());
    let contained = sandbox.and_then(|s| s.get("contained")).is_some_and(|c| !c.is_null());
    let changes = match (output.and_then(|o| o.changes.as_deref()), details.and_then(|d| d.get("changes"))) {
        (Some(record), _) => record.most_serious(),
        (None, Some(record)) if record.is_object() => outcome_of_counts(record, ""),
        // Calls recorded before the change record: the bounded summary's whole counts.
        _ => sandbox.and_then(|s| s.get("changes")).and_then(|c| outcome_of_counts(c, "_count")),
    };
    CallMarks { changes, contained }
}

/// The parts of a body the marks are read from.
#[derive(Deserialize)]
struct Marked {
    #[serde(default)]
    output: Option<ToolOutput>,
    #[serde(default)]
    error: Option<CallError>,
}

/// The marks of a terminal record whose body (JSON) is `body`. Only a body that names a sandbox or
/// changes is parsed; one that does not parse has none.
pub fn marks_of_body(body: &str) -> CallMarks {
    if !body.contains("\"sandbox\"") && !body.contains("\"changes\"") {
        return CallMarks::default();
    }
    match serde_json::from_str::<Marked>(body) {
        Ok(marked) => marks_of(marked.output.as_ref(), marked.error.as_ref()),
        Err(_) => CallMarks::default(),
    }
}

/// Marks the terminal records already in the file (the migration that added the columns).
pub(crate) fn backfill(conn: &Connection) -> rusqlite::Result<()> {
    let mut select = conn.prepare(
        "SELECT id, body FROM records WHERE status IS NOT NULL
             AND (instr(body, '\"sandbox\"') > 0 OR instr(body, '\"changes\"') > 0)",
    )?;
    let marked: Vec<(i64, CallMarks)> = select
        .query_map([], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)))?
        .map(|row| row.map(|(id, body)| (id, marks_of_body(&body))))
        .filter(|row| row.as_ref().map_or(true, |(_, marks)| *marks != CallMarks::default()))
        .collect::<Result<_, _>>()?;
    let mut update = conn.prepare("UPDATE records SET changes = ?2, contained = ?3 WHERE id = ?1")?;
    for (id, marks) in marked {
        update.execute(params![id, marks.changes_column(), marks.contained])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use portcullis_harness::{ChangeEntry, ChangeKind, ChangeRecord};
    use serde_json::json;

    #[test]
    fn marks_come_from_the_change_record_else_from_the_summary_and_never_from_other_text() {
        let none = marks_of_body(r#"{"decided_by":{"kind":"default"},"output":{"content":[]}}"#);
        assert_eq!(none, CallMarks::default());
        // An older record: the summary's counts, and the walls of a contained run.
        let summary = json!({"output": {"content": [], "structured": {"sandbox": {
            "contained": {"unread": ["x"]},
            "changes": {"kept_count": 3, "held_count": 0, "discarded_count": 1}}}}});
        let marks = marks_of_body(&summary.to_string());
        assert_eq!(marks, CallMarks { changes: Some(ChangeOutcome::Discarded), contained: true });
        // The record wins over the summary.
        let mut record = ChangeRecord::default();
        record.push(ChangeEntry {
            path: "/p/.npmrc".into(),
            what: ChangeKind::File,
            size: Some(3),
            sha256: None,
            outcome: ChangeOutcome::Held,
            why: Some("protected".into()),
        });
        let output = ToolOutput {
            structured: Some(json!({"sandbox": {"contained": null, "changes": {"kept_count": 1}}})),
            changes: Some(Box::new(record)),
            ..ToolOutput::default()
        };
        let body = json!({ "output": output }).to_string();
        assert_eq!(marks_of_body(&body), CallMarks { changes: Some(ChangeOutcome::Held), contained: false });
        // A timed-out command: its result and record in the error's details.
        let error = json!({"error": {"code": "timeout", "message": "m", "details": {
            "result": {"sandbox": {"contained": {"unread": []}}},
            "changes": {"kept": 0, "held": 0, "discarded": 2, "entries": []}}}});
        let marks = marks_of_body(&error.to_string());
        assert_eq!(marks, CallMarks { changes: Some(ChangeOutcome::Discarded), contained: true });
        // The words in an agent's own text are not marks.
        let text = json!({"output": {"content": [{"type": "text", "text": "\"sandbox\" \"changes\""}]}});
        assert_eq!(marks_of_body(&text.to_string()), CallMarks::default());
    }
}
