//! One interface for reading a ledger, whatever holds it — a hub's SQLite file or a team's PostgreSQL
//! database — so the ledger browser, export, replay and stats ask every ledger the same questions
//! through one `Box<dyn LedgerRead>`. Paging (a row more than asked, the next cursor) is written here
//! once; each reader gives its rows. What only a hub's own file answers (verifying its chain, refused
//! requests, its check, its sinks' lag) is asked here too, and any other ledger says it does not hold it.

use crate::audit::{ApprovalSummary, CommandCount, CommandOutcome};
use crate::check::CheckReport;
use crate::error::LedgerStoreError;
use crate::export::ExportFormat;
use crate::key::LedgerPublicKey;
use crate::origin::CallOrigin;
use crate::query::{CallFilter, CallPage, CallRow, CallTimeline, Cursor, MAX_PAGE};
use crate::reader::LedgerReader;
use crate::refusals::{RefusalFilter, RefusalRow};
use crate::row::StoredRecord;
use crate::sessions::{SessionFilter, SessionRow};
use crate::stats::Stats;
use crate::tail::{SinkCursors, SinkLag};
use crate::verify_report::VerifyReport;
use portcullis_harness::Timestamp;
use std::io::Write;
use std::path::Path;

/// Why a read failed: a file ledger's own error, or another reader's stable code and words.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    File(#[from] LedgerStoreError),
    /// Another reader's failure (a team ledger's), by its stable code (`team_ledger_unreachable`,
    /// `bad_filter`, …).
    #[error("{message}")]
    Other { code: &'static str, message: String },
    /// Asked of a ledger that does not hold it: verifying a chain, refused requests, the check and the
    /// sinks' lag are a hub's own file's (`not_on_team_ledger`).
    #[error("{what} is asked of a hub's own ledger file, not of {ledger}")]
    NotHeld { what: &'static str, ledger: String },
}

impl ReadError {
    /// The stable code front ends branch on.
    pub fn code(&self) -> &'static str {
        match self {
            ReadError::File(e) => e.code(),
            ReadError::Other { code, .. } => code,
            ReadError::NotHeld { .. } => "not_on_team_ledger",
        }
    }
}

/// Where a replay has read to: past record `id` of the hub whose ledger id is `hub` ("" in a hub's
/// own file), `read` records in; the default reads from the first record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayCursor {
    pub hub: String,
    pub id: i64,
    pub read: u64,
}

/// What a reader of calls answers.
pub trait LedgerRead: Send {
    /// What the ledger is called where a person reads it: a file's path, a team ledger's URL (masked).
    fn shown(&self) -> String;

    /// The file the ledger is, if it is one (an export must never be written over it).
    fn file(&self) -> Option<&Path> {
        None
    }

    /// Whether the ledger holds the calls of many hubs (a team's): a call whose session named no
    /// folder then ran in a project of its own, elsewhere.
    fn spans_hubs(&self) -> bool {
        false
    }

    /// Writes every record of the calls `filter` selects to `out`; `progress(done, total)` every
    /// 1,000 records. Returns the records written.
    fn export(
        &self,
        filter: &CallFilter,
        format: ExportFormat,
        out: &mut dyn Write,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<u64, ReadError>;

    /// How far a replay reads, in the unit of [`LedgerRead::replay_reached`].
    fn replay_end(&self) -> Result<i64, ReadError>;

    /// The next records a replay reads past `after`, each with its hub's ledger id ("" in a file);
    /// a reader may leave out records that decide no call.
    fn replay_batch(
        &self,
        after: &ReplayCursor,
        limit: usize,
    ) -> Result<Vec<(String, StoredRecord)>, ReadError>;

    /// How far `at` stands toward [`LedgerRead::replay_end`]: records read, unless the reader counts
    /// otherwise.
    fn replay_reached(&self, at: &ReplayCursor) -> i64 {
        i64::try_from(at.read).unwrap_or(i64::MAX)
    }

    /// The folder session `session` of hub `hub` worked in, if it said.
    fn session_cwd(&self, hub: &str, session: &str) -> Result<Option<String>, ReadError>;

    /// The chain and checkpoints checked against `key` and the witness kept in `witnesses`.
    fn verify_with(
        &self,
        _key: &LedgerPublicKey,
        _witnesses: Option<&Path>,
    ) -> Result<VerifyReport, ReadError> {
        Err(self.not_held("verifying"))
    }

    /// The requests the hub refused (counted per kind and minute), newest first.
    fn refusals(&self, _filter: &RefusalFilter, _limit: usize) -> Result<Vec<RefusalRow>, ReadError> {
        Err(self.not_held("refused requests"))
    }

    /// The ledger's integrity and shape.
    fn check(&self) -> Result<CheckReport, ReadError> {
        Err(self.not_held("a check"))
    }

    /// How far behind the ledger's record sinks are (none where the ledger is a sink itself).
    fn sink_lags(&self) -> Result<Vec<SinkLag>, ReadError> {
        Ok(Vec::new())
    }

    /// The error of asking `what` of a ledger that does not hold it.
    fn not_held(&self, what: &'static str) -> ReadError {
        ReadError::NotHeld { what, ledger: self.shown() }
    }

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
    fn shown(&self) -> String {
        self.path().display().to_string()
    }

    fn file(&self) -> Option<&Path> {
        Some(self.path())
    }

    fn export(
        &self,
        filter: &CallFilter,
        format: ExportFormat,
        out: &mut dyn Write,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<u64, ReadError> {
        Ok(LedgerReader::export(self, filter, format, out, progress)?)
    }

    /// A file's replay counts by record id: its newest is the end.
    fn replay_end(&self) -> Result<i64, ReadError> {
        Ok(self.last_record_id()?)
    }

    fn replay_batch(
        &self,
        after: &ReplayCursor,
        limit: usize,
    ) -> Result<Vec<(String, StoredRecord)>, ReadError> {
        Ok(self.records(after.id, limit)?.into_iter().map(|r| (String::new(), r)).collect())
    }

    fn replay_reached(&self, at: &ReplayCursor) -> i64 {
        at.id
    }

    fn session_cwd(&self, _hub: &str, session: &str) -> Result<Option<String>, ReadError> {
        Ok(self.session(session)?.and_then(|s| s.cwd))
    }

    fn verify_with(
        &self,
        key: &LedgerPublicKey,
        witnesses: Option<&Path>,
    ) -> Result<VerifyReport, ReadError> {
        Ok(LedgerReader::verify_with(self, key, witnesses)?)
    }

    fn refusals(&self, filter: &RefusalFilter, limit: usize) -> Result<Vec<RefusalRow>, ReadError> {
        Ok(LedgerReader::refusals(self, filter, limit)?)
    }

    fn check(&self) -> Result<CheckReport, ReadError> {
        Ok(LedgerReader::check(self)?)
    }

    fn sink_lags(&self) -> Result<Vec<SinkLag>, ReadError> {
        let cursors = SinkCursors::load(&SinkCursors::file_of(self.path()))?;
        Ok(cursors.lags(self)?)
    }

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
