//! Shared fixtures of the ledger tests: records of every kind, and a harness dispatcher writing into a
//! ledger.

#![allow(dead_code)] // each test file uses part of this

use portcullis_harness::CallErrorCode;
use portcullis_harness::{
    BlockedReason, CallContext, CallError, DecidedBy, RecordKind, RuleRef, Timestamp, ToolCallRecord,
    ToolOutput,
};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

pub fn ctx(session: &str, call: &str) -> Arc<CallContext> {
    Arc::new(CallContext {
        session_id: Arc::from(session),
        run_id: Arc::from(format!("run-of-{session}")),
        call_id: Arc::from(call),
        owner: Arc::from("agent"),
        cwd: None,
        mcp: None,
    })
}

pub fn rule(id: &str) -> DecidedBy {
    DecidedBy::Rule { rule_id: id.into(), source: "project.json".into() }
}

/// A started record at `at` (microseconds).
pub fn started(session: &str, call: &str, tool: &str, at: i64, decided: DecidedBy) -> ToolCallRecord {
    let mut r = ToolCallRecord::new(RecordKind::Started, ctx(session, call), Arc::from(tool), decided);
    r.at = Timestamp(at);
    r.started_at = Some(Timestamp(at));
    r.arguments = Some(Arc::new(json!({"command": format!("run {call} with {tool}")})));
    r.matched_rules =
        vec![RuleRef { id: "r1".into(), source: "project.json".into(), decision: Some("allow".into()) }];
    r
}

pub fn finished(
    session: &str,
    call: &str,
    tool: &str,
    at: i64,
    took: i64,
    decided: DecidedBy,
) -> ToolCallRecord {
    let mut r = ToolCallRecord::new(RecordKind::Finished, ctx(session, call), Arc::from(tool), decided);
    r.at = Timestamp(at + took);
    r.started_at = Some(Timestamp(at));
    r.output = Some(Arc::new(ToolOutput::text(format!("output of {call}"))));
    r
}

pub fn failed(
    session: &str,
    call: &str,
    tool: &str,
    at: i64,
    took: i64,
    decided: DecidedBy,
) -> ToolCallRecord {
    let mut r = ToolCallRecord::new(RecordKind::Error, ctx(session, call), Arc::from(tool), decided);
    r.at = Timestamp(at + took);
    r.started_at = Some(Timestamp(at));
    r.error = Some(CallError::new(CallErrorCode::ToolError, format!("{call} failed badly")));
    r
}

pub fn blocked(
    session: &str,
    call: &str,
    tool: &str,
    at: i64,
    reason: BlockedReason,
    decided: DecidedBy,
) -> ToolCallRecord {
    let mut r = ToolCallRecord::new(RecordKind::Blocked, ctx(session, call), Arc::from(tool), decided);
    r.at = Timestamp(at);
    r.arguments = Some(Arc::new(json!({"command": format!("blocked {call}")})));
    r.blocked_reason = Some(reason);
    r.error = Some(CallError::new(CallErrorCode::parse(reason.as_str()), format!("{call} was blocked")));
    r
}

/// Every file of a ledger (main, WAL, shared memory, journal), read raw.
pub fn raw_bytes(path: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    for suffix in ["", "-wal", "-shm", "-journal", ".journal"] {
        if let Ok(bytes) = std::fs::read(format!("{}{suffix}", path.display())) {
            all.extend(bytes);
        }
    }
    all
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A temporary folder and a ledger path in it.
#[allow(clippy::unwrap_used)]
pub fn temp() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    (dir, path)
}
