//! What callers hand the writer (the commands of its channel) and how the appender turns a harness
//! record into the journal's row encoding: the filter columns, the JSON body and the call's search
//! document, written straight into the frame (on the appender's thread, not the caller's).

use crate::refusals::RefusalRow;
use crate::row::{decided_columns, policy_columns, write_body, write_search_text};
use crate::row_bytes;
use crate::schema;
use crate::sessions::{ApprovalRecord, SessionInfo};
use portcullis_harness::{RecordKind, Timestamp, ToolCallRecord};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use tokio::sync::oneshot;

/// Calls with a `started` record and no terminal one yet, with the text of their arguments (for the
/// search document of their terminal record). The appender's own.
pub(crate) type RunningCalls = HashMap<(Arc<str>, Arc<str>), String>;

/// Running calls whose arguments are kept for their search document (beyond: not searchable by
/// arguments, still recorded).
pub(crate) const MAX_RUNNING_TRACKED: usize = 100_000;

/// What the journal keeps besides records.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    Session(SessionInfo),
    SessionEnd {
        id: String,
        at: Timestamp,
    },
    /// Boxed: with its receipt, the largest entry by far.
    Approval(Box<ApprovalRecord>),
    Refusal(RefusalRow),
    ToolPin(crate::tool_pins::ToolPinEvent),
    /// A signed checkpoint of the chain (made by the appender).
    Seal(crate::seal::Seal),
    /// A claimed effect's change (`effects.rs`).
    Effect(crate::effects::EffectChange),
}

/// How far a flush waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Barrier {
    /// Until everything before it is in the journal (survives a crash of the process).
    Durable,
    /// Until everything before it is in SQLite too (other connections see it).
    Visible,
}

pub(crate) type Waiter = oneshot::Sender<Result<(), String>>;

/// One message on the writer's channel.
// Records are nearly every message: boxing them would add an allocation per record for nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Command {
    Record(ToolCallRecord),
    Entry(Entry),
    Flush(Barrier, Waiter),
    /// Seal the chain now (when records since the last seal exist); answered once the seal is in
    /// SQLite.
    Seal(Waiter),
    Shutdown,
}

/// Appends `record` to `out` in the journal's row encoding (see `row_bytes::RowRef` for the fields): its
/// columns, its JSON body, on a terminal record its call's search document (tool, the started record's
/// arguments kept in `running`, its own text), and its link in the chain, which moves `chain` on.
/// Nothing is appended (and the chain stays) on error.
pub(crate) fn encode_record(
    record: &ToolCallRecord,
    running: &mut RunningCalls,
    chain: &mut Chaining,
    out: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    let mark = out.len();
    let written = write_columns(record, out).and_then(|arguments| {
        // The canonical bytes are the columns and the body, as journaled (`chain.rs`).
        let columns = mark..out.len();
        write_search(record, arguments, running, out)?;
        let link = chain.next(&out[columns]);
        out.extend_from_slice(&link);
        Ok(())
    });
    if written.is_err() {
        out.truncate(mark);
    }
    written
}

/// The appender's end of the chain: the last link, the records chained, and the writer id every record's
/// canonical bytes start with.
pub(crate) struct Chaining {
    pub head: crate::chain::ChainHead,
    writer_id: [u8; 8],
}

impl Chaining {
    pub(crate) fn new(head: crate::chain::ChainHead, writer_id: i64) -> Self {
        Chaining { head, writer_id: writer_id.to_le_bytes() }
    }

    /// The link of a record journaled as `columns`, which becomes the head.
    fn next(&mut self, columns: &[u8]) -> crate::chain::Link {
        use sha2::Digest;
        let mut hash = sha2::Sha256::new();
        hash.update(self.head.link);
        hash.update(self.writer_id);
        hash.update(columns);
        self.head.link = hash.finalize().into();
        self.head.count += 1;
        self.head.link
    }
}

/// The columns and the body; returns where the body's arguments are in `out`.
fn write_columns(
    record: &ToolCallRecord,
    out: &mut Vec<u8>,
) -> Result<Option<Range<usize>>, serde_json::Error> {
    out.push(row_bytes::TAG_RECORD);
    row_bytes::put_str(out, &record.call.session_id);
    row_bytes::put_str(out, &record.call.run_id);
    row_bytes::put_str(out, &record.call.call_id);
    row_bytes::put_i64(out, schema::call_key(&record.call.call_id));
    row_bytes::put_str(out, &record.call.owner);
    row_bytes::put_str(out, &record.tool_name);
    out.push(row_bytes::kind_byte(record.kind));
    row_bytes::put_i64(out, record.at.0);
    row_bytes::put_opt_i64(out, record.started_at.map(|t| t.0));
    let duration = match record.kind {
        RecordKind::Finished | RecordKind::Error => {
            record.started_at.map(|s| record.at.0.saturating_sub(s.0))
        }
        _ => None,
    };
    row_bytes::put_opt_i64(out, duration);
    row_bytes::put_opt_str(out, record.blocked_reason.map(|r| r.as_str()));
    row_bytes::put_opt_str(out, record.error.as_ref().map(|e| e.code.as_str()));
    let (decided, rule, source, operator) = decided_columns(&record.decided_by);
    row_bytes::put_str(out, decided);
    row_bytes::put_opt_str(out, rule);
    row_bytes::put_opt_str(out, source);
    row_bytes::put_opt_str(out, operator.as_deref());
    let (policy_decision, policy_rule) = policy_columns(record.policy.as_ref());
    row_bytes::put_opt_str(out, policy_decision);
    row_bytes::put_opt_str(out, policy_rule.as_deref());
    out.push(u8::from(record.redacted));
    let mut arguments = None;
    row_bytes::put_with(out, |out| write_body(record, out).map(|range| arguments = range))?;
    Ok(arguments)
}

/// The search document: none on started and progress records (a started record's text is kept for
/// its call's end), the whole call's on a terminal record.
fn write_search(
    record: &ToolCallRecord,
    arguments: Option<Range<usize>>,
    running: &mut RunningCalls,
    out: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    let key = (record.call.session_id.clone(), record.call.call_id.clone());
    match record.kind {
        RecordKind::Started => {
            if running.len() < MAX_RUNNING_TRACKED {
                let mut text = Vec::new();
                let own = arguments.map(|r| &out[r]);
                text.extend_from_slice(own.unwrap_or_default());
                if record.output.is_some() || record.error.is_some() {
                    write_search_text(&mut text, None, record.output.as_deref(), record.error.as_ref())?;
                }
                running.insert(key, String::from_utf8(text).unwrap_or_default());
            }
            out.push(0);
        }
        RecordKind::Progress => out.push(0),
        RecordKind::Finished | RecordKind::Error | RecordKind::Blocked => {
            let started = running.remove(&key).unwrap_or_default();
            out.push(1);
            row_bytes::put_with(out, |out| {
                out.extend_from_slice(record.tool_name.as_bytes());
                out.push(b' ');
                out.extend_from_slice(started.as_bytes());
                out.push(b' ');
                write_search_text(out, arguments, record.output.as_deref(), record.error.as_ref())
            })?;
        }
    }
    Ok(())
}
