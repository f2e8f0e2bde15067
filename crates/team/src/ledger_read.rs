//! A team ledger read through the same [`LedgerRead`] as a hub's file: its rows, counts, timelines,
//! stats, sessions, export and replay, its failures by their stable codes. What only a hub's own file
//! holds (its chain's verification, refused requests, its check) it says it does not hold.

use crate::error::TeamError;
use crate::read::TeamReader;
use portcullis_harness::Timestamp;
use portcullis_ledger::export::{CSV_HEADER, push_csv_fields, record_line};
use portcullis_ledger::sessions::{SessionFilter, SessionRow};
use portcullis_ledger::stats::Stats;
use portcullis_ledger::{
    ApprovalSummary, CallFilter, CallOrigin, CallRow, CallTimeline, CommandCount, CommandOutcome, Cursor,
    ExportFormat, LedgerRead, ReadError, ReplayCursor, StoredRecord,
};
use serde_json::Value;
use std::io::Write;

impl From<TeamError> for ReadError {
    fn from(e: TeamError) -> Self {
        ReadError::Other { code: e.code(), message: e.to_string() }
    }
}

impl LedgerRead for TeamReader {
    fn shown(&self) -> String {
        self.db().to_string()
    }

    fn spans_hubs(&self) -> bool {
        true
    }

    fn not_held(&self, what: &'static str) -> ReadError {
        ReadError::NotHeld { what, ledger: format!("the team ledger {}", self.db()) }
    }

    /// Each record as its hub's file exports it, with where it ran: a JSON line's `origin` (and its
    /// `chain` proof when it was shipped with its link), a CSV row's three hub columns.
    fn export(
        &self,
        filter: &CallFilter,
        format: ExportFormat,
        out: &mut dyn Write,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<u64, ReadError> {
        let failed = |e: &dyn std::fmt::Display| TeamError::Export(e.to_string());
        if format == ExportFormat::Csv {
            writeln!(out, "{CSV_HEADER},hub_ledger_id,hub_host,hub_user").map_err(|e| failed(&e))?;
        }
        let mut line = String::new();
        let mut written = 0;
        let proofs = format == ExportFormat::Jsonl;
        let n = self.export_records(filter, proofs, &mut |record, origin, proof| {
            record_line(format, record, &mut line).map_err(|e| failed(&e))?;
            match format {
                ExportFormat::Jsonl => {
                    let mut value: Value = serde_json::from_str(&line).map_err(|e| failed(&e))?;
                    if let Value::Object(map) = &mut value {
                        map.insert("origin".into(), serde_json::to_value(origin).map_err(|e| failed(&e))?);
                        if let Some(proof) = proof {
                            map.insert("chain".into(), serde_json::to_value(proof).map_err(|e| failed(&e))?);
                        }
                    }
                    line = value.to_string();
                }
                ExportFormat::Csv => {
                    push_csv_fields(&mut line, &[&origin.ledger_id, &origin.host, &origin.user])
                }
            }
            line.push('\n');
            out.write_all(line.as_bytes()).map_err(|e| failed(&e))?;
            written += 1;
            if written % 1000 == 0 {
                progress(written, 0);
            }
            Ok(())
        })?;
        out.flush().map_err(|e| failed(&e))?;
        progress(n, n);
        Ok(n)
    }

    /// A team ledger's replay counts the records that decide calls, every hub's.
    fn replay_end(&self) -> Result<i64, ReadError> {
        Ok(self.deciding_count()?)
    }

    fn replay_batch(
        &self,
        after: &ReplayCursor,
        limit: usize,
    ) -> Result<Vec<(String, StoredRecord)>, ReadError> {
        Ok(self.deciding_records(&after.hub, after.id, limit)?)
    }

    fn session_cwd(&self, hub: &str, session: &str) -> Result<Option<String>, ReadError> {
        Ok(TeamReader::session_cwd(self, hub, session)?)
    }

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
