//! The ledger seam: the harness hands every lifecycle record (already redacted) to a [`Ledger`].
//! The SQLite ledger lives in `portcullis-ledger`; [`MemoryLedger`] serves tests.

use crate::call::{BlockedReason, CallContext, CallError, DecidedBy, RuleRef};
use crate::execution::{ExecutionAction, PolicyRuling};
use crate::time::Timestamp;
use crate::tool::ToolOutput;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use thiserror::Error;

/// The lifecycle stage a record stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// The call passed every check and is about to execute (carries the arguments).
    Started,
    /// A progress snapshot of a started call.
    Progress,
    Finished,
    Error,
    /// The call never executed.
    Blocked,
}

impl RecordKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Started => "started",
            RecordKind::Progress => "progress",
            RecordKind::Finished => "finished",
            RecordKind::Error => "error",
            RecordKind::Blocked => "blocked",
        }
    }
}

/// One append-only ledger record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    pub kind: RecordKind,
    /// Session, run, call id, owner (and cwd).
    pub call: Arc<CallContext>,
    pub tool_name: Arc<str>,
    /// When this record was made.
    pub at: Timestamp,
    /// When execution started (progress, finished and error records of started calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    /// Redacted arguments (started and blocked records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Arc<Value>>,
    /// The action that was evaluated and executed (started records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Arc<ExecutionAction>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Arc<ToolOutput>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<CallError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<BlockedReason>,
    /// What decided this call (the rule and its file, the operator, a session grant, a default ...).
    pub decided_by: DecidedBy,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched_rules: Vec<RuleRef>,
    /// What the execution policy said before any approval (records of calls that reached the policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyRuling>,
    /// Whether redaction changed anything in this record.
    pub redacted: bool,
}

impl ToolCallRecord {
    /// A record with only the identity filled in, made now.
    pub fn new(kind: RecordKind, call: Arc<CallContext>, tool_name: Arc<str>, decided_by: DecidedBy) -> Self {
        Self::made_at(kind, call, tool_name, decided_by, Timestamp::now())
    }

    /// A record with only the identity filled in, made `at` (a time the caller has already read: the
    /// clock is not read twice).
    pub fn made_at(
        kind: RecordKind,
        call: Arc<CallContext>,
        tool_name: Arc<str>,
        decided_by: DecidedBy,
        at: Timestamp,
    ) -> Self {
        ToolCallRecord {
            kind,
            call,
            tool_name,
            at,
            started_at: None,
            arguments: None,
            action: None,
            progress: None,
            output: None,
            error: None,
            blocked_reason: None,
            decided_by,
            matched_rules: Vec::new(),
            policy: None,
            redacted: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LedgerError {
    #[error("ledger unavailable: {0}")]
    Unavailable(String),
    #[error("ledger write failed: {0}")]
    Write(String),
    #[error("ledger is closed")]
    Closed,
}

/// What [`Ledger::offer`] did with a record.
#[derive(Debug)]
pub enum Offered {
    /// Taken, as [`Ledger::record`] would have taken it.
    Taken,
    /// Taking it now would mean waiting: hand it in with [`Ledger::record`].
    Wait(Box<ToolCallRecord>),
}

/// Where records go. `record` may wait (back-pressure) but must not drop.
#[async_trait]
pub trait Ledger: Send + Sync {
    async fn record(&self, record: ToolCallRecord) -> Result<(), LedgerError>;

    /// Hands in a record if that needs no waiting, synchronously: the dispatcher's fast path (no boxed
    /// future per record). Refusals are the same as `record`'s. The default declines, so every record
    /// goes through `record`.
    fn offer(&self, record: ToolCallRecord) -> Result<Offered, LedgerError> {
        Ok(Offered::Wait(Box::new(record)))
    }

    /// A durability barrier: returns once every record handed in before it is stored.
    async fn flush(&self) -> Result<(), LedgerError> {
        Ok(())
    }

    /// Hands in a record and returns once it is stored (durable), or with why it may not be. The
    /// dispatcher awaits this for the `started` record of a call with a side effect, so no such call
    /// runs without its record on disk. The default is [`record`](Ledger::record) then
    /// [`flush`](Ledger::flush); a ledger that commits in groups answers every waiter of a group at
    /// its commit.
    async fn record_durable(&self, record: ToolCallRecord) -> Result<(), LedgerError> {
        self.record(record).await?;
        self.flush().await
    }
}

/// A ledger in memory, for tests and the conformance kit.
#[derive(Default)]
pub struct MemoryLedger {
    records: Mutex<Vec<ToolCallRecord>>,
}

impl MemoryLedger {
    pub fn new() -> Self {
        MemoryLedger::default()
    }

    pub fn records(&self) -> Vec<ToolCallRecord> {
        self.records.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Records of one call id, in order.
    pub fn for_call(&self, call_id: &str) -> Vec<ToolCallRecord> {
        self.records
            .lock()
            .map(|r| r.iter().filter(|rec| &*rec.call.call_id == call_id).cloned().collect())
            .unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.records.lock().map(|r| r.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn clear(&self) {
        if let Ok(mut r) = self.records.lock() {
            r.clear();
        }
    }
}

#[async_trait]
impl Ledger for MemoryLedger {
    async fn record(&self, record: ToolCallRecord) -> Result<(), LedgerError> {
        self.offer(record).map(|_| ())
    }

    fn offer(&self, record: ToolCallRecord) -> Result<Offered, LedgerError> {
        self.records
            .lock()
            .map_err(|_| LedgerError::Unavailable("memory ledger lock poisoned".into()))?
            .push(record);
        Ok(Offered::Taken)
    }
}
