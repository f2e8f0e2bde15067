//! The reader behind a browsed ledger: a hub's own file or a team's ledger in PostgreSQL, asked the
//! same questions with the same filters, so the ledger browser (in the app and in the browser) and the
//! workbench's replay read either alike.

use super::error::ApiError;
use super::ledger::LedgerAddress;
use portcullis_harness::Timestamp;
use portcullis_ledger::{
    ApprovalSummary, CallFilter, CallOrigin, CallPage, CallTimeline, CommandCount, CommandOutcome, Cursor,
    LedgerReader, SessionFilter, SessionRow, Stats,
};
use portcullis_team::{TeamDb, TeamReader};

/// A ledger opened for reading, of either kind.
pub enum AnyReader {
    File(LedgerReader),
    Team(Box<TeamReader>),
}

impl AnyReader {
    /// Opens the ledger `address` names (a team ledger: connects and checks its schema).
    pub fn open(address: &LedgerAddress) -> Result<AnyReader, ApiError> {
        match address {
            LedgerAddress::File(path) => Ok(AnyReader::File(LedgerReader::open(path)?)),
            LedgerAddress::Team { url, password_file } => {
                let db = TeamDb::parse(url, password_file.as_deref())?;
                Ok(AnyReader::Team(Box::new(TeamReader::open(&db)?)))
            }
        }
    }

    pub fn calls(
        &self,
        filter: &CallFilter,
        before: Option<Cursor>,
        limit: usize,
    ) -> Result<CallPage, ApiError> {
        match self {
            AnyReader::File(r) => Ok(r.calls(filter, before, limit)?),
            AnyReader::Team(r) => Ok(r.calls(filter, before, limit)?),
        }
    }

    pub fn calls_oldest_first(
        &self,
        filter: &CallFilter,
        after: Option<Cursor>,
        limit: usize,
    ) -> Result<CallPage, ApiError> {
        match self {
            AnyReader::File(r) => Ok(r.calls_oldest_first(filter, after, limit)?),
            AnyReader::Team(r) => Ok(r.calls_oldest_first(filter, after, limit)?),
        }
    }

    pub fn count(&self, filter: &CallFilter) -> Result<u64, ApiError> {
        match self {
            AnyReader::File(r) => Ok(r.count(filter)?),
            AnyReader::Team(r) => Ok(r.count(filter)?),
        }
    }

    /// One call's records and approvals, and on a team ledger, the hub it ran on.
    pub fn timeline(
        &self,
        call_id: &str,
        session: Option<&str>,
    ) -> Result<(CallTimeline, Option<CallOrigin>), ApiError> {
        match self {
            AnyReader::File(r) => Ok((r.timeline(call_id, session)?, None)),
            AnyReader::Team(r) => Ok(r.timeline(call_id, session)?),
        }
    }

    pub fn stats(&self, filter: &CallFilter, bucket_us: Option<i64>) -> Result<Stats, ApiError> {
        match self {
            AnyReader::File(r) => Ok(r.stats(filter, bucket_us)?),
            AnyReader::Team(r) => Ok(r.stats(filter, bucket_us)?),
        }
    }

    /// Stats fast and perhaps approximate (a hub's file: whole hours of its rollups only); a team
    /// ledger's stats already read its rollups.
    pub fn stats_approximate(&self, filter: &CallFilter, bucket_us: Option<i64>) -> Result<Stats, ApiError> {
        match self {
            AnyReader::File(r) => Ok(r.stats_approximate(filter, bucket_us)?),
            AnyReader::Team(r) => Ok(r.stats(filter, bucket_us)?),
        }
    }

    pub fn approval_summary(&self, filter: &CallFilter) -> Result<ApprovalSummary, ApiError> {
        match self {
            AnyReader::File(r) => Ok(r.approval_summary(filter)?),
            AnyReader::Team(r) => Ok(r.approval_summary(filter)?),
        }
    }

    pub fn top_commands(
        &self,
        filter: &CallFilter,
        outcome: CommandOutcome,
        limit: usize,
    ) -> Result<Vec<CommandCount>, ApiError> {
        match self {
            AnyReader::File(r) => Ok(r.top_commands(filter, outcome, limit)?),
            AnyReader::Team(r) => Ok(r.top_commands(filter, outcome, limit)?),
        }
    }

    /// Sessions, newest first; a team ledger's each with the hub it ran on.
    pub fn session_rows(&self, filter: &SessionFilter, limit: usize) -> Result<Vec<SessionRow>, ApiError> {
        match self {
            AnyReader::File(r) => Ok(r.session_rows(filter, limit)?),
            AnyReader::Team(r) => Ok(r
                .sessions(filter, limit)?
                .into_iter()
                .map(|(row, origin)| SessionRow { origin: Some(origin), ..row })
                .collect()),
        }
    }

    /// How many calls ended, and the times of the first and last.
    pub fn extent(&self) -> Result<(u64, Option<Timestamp>, Option<Timestamp>), ApiError> {
        match self {
            AnyReader::File(r) => Ok(r.extent()?),
            AnyReader::Team(r) => Ok(r.extent()?),
        }
    }
}
