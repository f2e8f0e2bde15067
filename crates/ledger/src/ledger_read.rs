//! One interface for reading a ledger, whatever holds it — a hub's SQLite file or a team's PostgreSQL
//! database — so the ledger browser, replay and stats ask every ledger the same questions through one
//! `Box<dyn LedgerRead>`. Paging (a row more than asked, the next cursor) is written here once; each
//! reader gives its rows.

use crate::audit::{ApprovalSummary, CommandCount, CommandOutcome};
use crate::error::LedgerStoreError;
use crate::origin::CallOrigin;
use crate::query::{CallFilter, CallPage, CallRow, CallTimeline, Cursor, MAX_PAGE};
use crate::reader::LedgerReader;
use crate::sessions::{SessionFilter, SessionRow};
use crate::stats::Stats;
use portcullis_harness::Timestamp;

/// Why a read failed: a file ledger's own error, or another reader's stable code and words.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    File(#[from] LedgerStoreError),
    /// Another reader's failure (a team ledger's), by its stable code (`team_ledger_unreachable`,
    /// `bad_filter`, …).
    #[error("{message}")]
    Other { code: &'static str, message: String },
}

impl ReadError {
    /// The stable code front ends branch on.
    pub fn code(&self) -> &'static str {
        match self {
            ReadError::File(e) => e.code(),
            ReadError::Other { code, .. } => code,
        }
    }
}

/// What a reader of calls answers.
pub trait LedgerRead: Send {
    /// Up to `rows` calls matching `filter` past `cursor`: newest first (before it) or oldest first
    /// (after it).
    fn page_rows(
        &self,
        filter: &CallFilter,
        cursor: Option<Cursor>,
        rows: usize,
        newest_first: bool,
    ) -> Result<Vec<CallRow>, ReadError>;

    /// Finishes a page before it is returned (a search's snippets); nothing by default.
    fn finish_page(&self, _filter: &CallFilter, _calls: &mut [CallRow]) -> Result<(), ReadError> {
        Ok(())
    }

    fn count(&self, filter: &CallFilter) -> Result<u64, ReadError>;

    /// One call's records and approvals, and on a team ledger, the hub it ran on.
    fn timeline(
        &self,
        call_id: &str,
        session: Option<&str>,
    ) -> Result<(CallTimeline, Option<CallOrigin>), ReadError>;

    fn stats(&self, filter: &CallFilter, bucket_us: Option<i64>) -> Result<Stats, ReadError>;

    /// Stats fast and perhaps approximate; exact where the reader has nothing faster.
    fn stats_approximate(&self, filter: &CallFilter, bucket_us: Option<i64>) -> Result<Stats, ReadError> {
        self.stats(filter, bucket_us)
    }

    fn approval_summary(&self, filter: &CallFilter) -> Result<ApprovalSummary, ReadError>;

    fn top_commands(
        &self,
        filter: &CallFilter,
        outcome: CommandOutcome,
        limit: usize,
    ) -> Result<Vec<CommandCount>, ReadError>;

    /// Sessions, newest first; a team ledger's each with the hub it ran on.
    fn session_rows(&self, filter: &SessionFilter, limit: usize) -> Result<Vec<SessionRow>, ReadError>;

    /// How many calls ended, and the times of the first and last.
    fn extent(&self) -> Result<(u64, Option<Timestamp>, Option<Timestamp>), ReadError>;

    /// One page of calls, newest first, before `before`; `next` is where the next page starts.
    fn calls(
        &self,
        filter: &CallFilter,
        before: Option<Cursor>,
        limit: usize,
    ) -> Result<CallPage, ReadError> {
        let limit = limit.clamp(1, MAX_PAGE);
        // One row more than asked: whether there is a next page.
        let mut calls = self.page_rows(filter, before, limit + 1, true)?;
        let next = if calls.len() > limit {
            calls.truncate(limit);
            calls.last().map(|c| Cursor { at: c.head.at.0, id: c.record_id })
        } else {
            None
        };
        self.finish_page(filter, &mut calls)?;
        Ok(CallPage { calls, next })
    }

    /// One page of calls, oldest first, after `after`; `next` is the page's last call even on the last
    /// page (or `after` when none came), so a live tail asks again from there.
    fn calls_oldest_first(
        &self,
        filter: &CallFilter,
        after: Option<Cursor>,
        limit: usize,
    ) -> Result<CallPage, ReadError> {
        let mut calls = self.page_rows(filter, after, limit.clamp(1, MAX_PAGE), false)?;
        let next = calls.last().map(|c| Cursor { at: c.head.at.0, id: c.record_id }).or(after);
        self.finish_page(filter, &mut calls)?;
        Ok(CallPage { calls, next })
    }
}

impl LedgerRead for LedgerReader {
    fn page_rows(
        &self,
        filter: &CallFilter,
        cursor: Option<Cursor>,
        rows: usize,
        newest_first: bool,
    ) -> Result<Vec<CallRow>, ReadError> {
        Ok(LedgerReader::page_rows(self, filter, cursor, rows, newest_first)?)
    }

    fn finish_page(&self, filter: &CallFilter, calls: &mut [CallRow]) -> Result<(), ReadError> {
        Ok(self.add_snippets(filter, calls)?)
    }

    fn count(&self, filter: &CallFilter) -> Result<u64, ReadError> {
        Ok(LedgerReader::count(self, filter)?)
    }

    fn timeline(
        &self,
        call_id: &str,
        session: Option<&str>,
    ) -> Result<(CallTimeline, Option<CallOrigin>), ReadError> {
        Ok((LedgerReader::timeline(self, call_id, session)?, None))
    }

    fn stats(&self, filter: &CallFilter, bucket_us: Option<i64>) -> Result<Stats, ReadError> {
        Ok(LedgerReader::stats(self, filter, bucket_us)?)
    }

    fn stats_approximate(&self, filter: &CallFilter, bucket_us: Option<i64>) -> Result<Stats, ReadError> {
        Ok(LedgerReader::stats_approximate(self, filter, bucket_us)?)
    }

    fn approval_summary(&self, filter: &CallFilter) -> Result<ApprovalSummary, ReadError> {
        Ok(LedgerReader::approval_summary(self, filter)?)
    }

    fn top_commands(
        &self,
        filter: &CallFilter,
        outcome: CommandOutcome,
        limit: usize,
    ) -> Result<Vec<CommandCount>, ReadError> {
        Ok(LedgerReader::top_commands(self, filter, outcome, limit)?)
    }

    fn session_rows(&self, filter: &SessionFilter, limit: usize) -> Result<Vec<SessionRow>, ReadError> {
        Ok(LedgerReader::session_rows(self, filter, limit)?)
    }

    fn extent(&self) -> Result<(u64, Option<Timestamp>, Option<Timestamp>), ReadError> {
        Ok(LedgerReader::extent(self)?)
    }
}
