//! Ledger files for front ends' tests (feature `testing`): the CLI's ledger commands and the desktop
//! app's ledger browser are tested against ledgers with known sessions, records and approvals, written
//! here by the real SQLite writer, so front ends reach no crate below the hub even in their tests.
//!
//! Not part of the operator API: an operator never writes records; only a hub's own calls do. Enable
//! it in `[dev-dependencies]` only: `portcullis-hub = { workspace = true, features = ["testing"] }`.

use crate::{ApiError, ErrorCode};

/// The ledger's chain and signing, for tests that play a forger: rewrite links and re-sign checkpoints
/// with a key of their own, as someone without the hub's key would.
pub mod ledger_chain {
    pub use portcullis_ledger::{LedgerKey, chain, seal};
}
use portcullis_harness::Ledger;
use portcullis_ledger::SqliteLedger;
use serde_json::Value;
use std::path::Path;

/// What a record is made of: its call, who decided it, its arguments, output or error.
pub use portcullis_harness::{
    BlockedReason, CallContext, CallError, CallErrorCode, DecidedBy, OperatorOutcome, RecordKind, Timestamp,
    ToolCallRecord, ToolOutput,
};
/// A session, and an operator's answer to an approval, as the ledger stores them.
pub use portcullis_ledger::{ApprovalOutcome, ApprovalRecord, SessionInfo};

/// A ledger file open for writing, as a hub writes it (one writer: a second one is refused).
pub struct LedgerWriter {
    ledger: SqliteLedger,
}

impl LedgerWriter {
    /// Opens `path` for writing: creates the ledger, or migrates an older one and settles what a
    /// stopped writer left open (as a hub does when it starts).
    pub fn open(path: &Path) -> Result<LedgerWriter, ApiError> {
        Ok(LedgerWriter { ledger: SqliteLedger::open(path)? })
    }

    pub async fn begin_session(&self, session: SessionInfo) -> Result<(), ApiError> {
        Ok(self.ledger.begin_session(session).await?)
    }

    pub async fn end_session(&self, id: &str, at: Timestamp) -> Result<(), ApiError> {
        Ok(self.ledger.end_session(id, at).await?)
    }

    /// Queues one record (committed by the next group commit, [`LedgerWriter::flush`] or close).
    pub async fn record(&self, record: ToolCallRecord) -> Result<(), ApiError> {
        self.ledger
            .record(record)
            .await
            .map_err(|e| ApiError::new(ErrorCode::LedgerWriterFailed, e.to_string(), Value::Null))
    }

    pub async fn record_approval(&self, approval: ApprovalRecord) -> Result<(), ApiError> {
        Ok(self.ledger.record_approval(approval).await?)
    }

    /// Waits until everything queued is committed (readers see it).
    pub async fn flush(&self) -> Result<(), ApiError> {
        Ok(self.ledger.flush().await?)
    }

    /// Commits what is queued and closes the file; calls still running are marked interrupted.
    pub async fn close(&self) -> Result<(), ApiError> {
        Ok(self.ledger.close().await?)
    }
}
