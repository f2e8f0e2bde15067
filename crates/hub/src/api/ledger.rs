//! Ledgers through the operator API: any ledger file opened read-only (also while a hub writes it),
//! calls paged newest first by a cursor with filters and full-text search, one call with every record
//! and approval, sessions with how they ended, refusals, stats and export.
//!
//! The shapes are the ledger reader's own (`CallRow` for a call's latest state in a listing,
//! `StoredRecord` for each record of its timeline): they are the transport types of this part of the
//! API, re-exported here so front ends name them through the API.

use super::error::{ApiError, ErrorCode};
use portcullis_ledger::LedgerReader;
use serde_json::json;
use std::io::Write;
use std::path::Path;

pub use portcullis_ledger::{
    ApprovalRecord, CallFilter, CallPage, CallRow, CallStatus, CallTimeline, CheckReport, Cursor,
    ExportFormat, RefusalFilter, RefusalRow, SessionFilter, SessionRow, Stats, StoredRecord,
};

/// The most calls one page holds.
pub const MAX_PAGE: usize = 1000;

/// A ledger opened for reading.
pub struct LedgerView {
    reader: LedgerReader,
}

impl LedgerView {
    /// Opens `path` read-only: refused (with the ledger's code) when it is missing, not a ledger, or of
    /// another schema version.
    pub fn open(path: &Path) -> Result<Self, ApiError> {
        Ok(LedgerView { reader: LedgerReader::open(path)? })
    }

    /// One page of the calls matching `filter`, newest first, after `before` (the previous page's
    /// `next`); at most [`MAX_PAGE`].
    pub fn calls(
        &self,
        filter: &CallFilter,
        before: Option<Cursor>,
        limit: usize,
    ) -> Result<CallPage, ApiError> {
        Ok(self.reader.calls(filter, before, limit.clamp(1, MAX_PAGE))?)
    }

    /// How many calls match `filter`.
    pub fn count(&self, filter: &CallFilter) -> Result<u64, ApiError> {
        Ok(self.reader.count(filter)?)
    }

    /// One call: every record in order, and its approvals. `session` narrows when call ids repeat.
    pub fn call(&self, call_id: &str, session: Option<&str>) -> Result<CallTimeline, ApiError> {
        let timeline = self.reader.timeline(call_id, session)?;
        if timeline.records.is_empty() {
            return Err(ApiError::new(
                ErrorCode::CallNotFound,
                format!("no call {call_id} in {}", self.reader.path().display()),
                json!({ "call_id": call_id, "session": session }),
            ));
        }
        Ok(timeline)
    }

    /// Sessions with how each ended (open, closed, cut), newest first.
    pub fn sessions(&self, filter: &SessionFilter, limit: usize) -> Result<Vec<SessionRow>, ApiError> {
        Ok(self.reader.session_rows(filter, limit.clamp(1, MAX_PAGE))?)
    }

    /// Refused requests (counted per kind and minute), newest first.
    pub fn refusals(&self, filter: &RefusalFilter, limit: usize) -> Result<Vec<RefusalRow>, ApiError> {
        Ok(self.reader.refusals(filter, limit.clamp(1, MAX_PAGE))?)
    }

    /// The file's integrity and shape: schema version, counts, calls left open, unreadable bodies.
    pub fn check(&self) -> Result<CheckReport, ApiError> {
        Ok(self.reader.check()?)
    }

    /// Aggregates over the calls matching `filter`; `bucket_us` sets the histogram's width.
    pub fn stats(&self, filter: &CallFilter, bucket_us: Option<i64>) -> Result<Stats, ApiError> {
        Ok(self.reader.stats(filter, bucket_us)?)
    }

    /// Writes every record of the matching calls to `out`; `progress(done, total)` every 1,000 records.
    pub fn export(
        &self,
        filter: &CallFilter,
        format: ExportFormat,
        out: &mut dyn Write,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<u64, ApiError> {
        Ok(self.reader.export(filter, format, out, progress)?)
    }
}
