//! A team ledger read through the same [`LedgerRead`] as a hub's file: its rows, counts, timelines,
//! stats and sessions, its failures by their stable codes.

use crate::error::TeamError;
use crate::read::TeamReader;
use portcullis_harness::Timestamp;
use portcullis_ledger::sessions::{SessionFilter, SessionRow};
use portcullis_ledger::stats::Stats;
use portcullis_ledger::{
    ApprovalSummary, CallFilter, CallOrigin, CallRow, CallTimeline, CommandCount, CommandOutcome, Cursor,
    LedgerRead, ReadError,
};

impl From<TeamError> for ReadError {
    fn from(e: TeamError) -> Self {
        ReadError::Other { code: e.code(), message: e.to_string() }
    }
}

impl LedgerRead for TeamReader {
    fn page_rows(
        &self,
        filter: &CallFilter,
        cursor: Option<Cursor>,
        rows: usize,
        newest_first: bool,
    ) -> Result<Vec<CallRow>, ReadError> {
        Ok(TeamReader::page_rows(self, filter, cursor, rows, newest_first)?)
    }

    fn count(&self, filter: &CallFilter) -> Result<u64, ReadError> {
        Ok(TeamReader::count(self, filter)?)
    }

    fn timeline(
        &self,
        call_id: &str,
        session: Option<&str>,
    ) -> Result<(CallTimeline, Option<CallOrigin>), ReadError> {
        Ok(TeamReader::timeline(self, call_id, session)?)
    }

    /// A team ledger's stats already read its rollups: exact and fast alike.
    fn stats(&self, filter: &CallFilter, bucket_us: Option<i64>) -> Result<Stats, ReadError> {
        Ok(TeamReader::stats(self, filter, bucket_us)?)
    }

    fn approval_summary(&self, filter: &CallFilter) -> Result<ApprovalSummary, ReadError> {
        Ok(TeamReader::approval_summary(self, filter)?)
    }

    fn top_commands(
        &self,
        filter: &CallFilter,
        outcome: CommandOutcome,
        limit: usize,
    ) -> Result<Vec<CommandCount>, ReadError> {
        Ok(TeamReader::top_commands(self, filter, outcome, limit)?)
    }

    fn session_rows(&self, filter: &SessionFilter, limit: usize) -> Result<Vec<SessionRow>, ReadError> {
        let rows = TeamReader::sessions(self, filter, limit)?;
        Ok(rows.into_iter().map(|(row, origin)| SessionRow { origin: Some(origin), ..row }).collect())
    }

    fn extent(&self) -> Result<(u64, Option<Timestamp>, Option<Timestamp>), ReadError> {
        Ok(TeamReader::extent(self)?)
    }
}
