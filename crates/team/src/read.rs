//! Reading a team ledger: the same questions a hub's own ledger answers (calls paged newest first with
//! the ledger's filters, full-text search, one call's records and approvals, sessions), asked of every
//! hub's rows at once, each row saying which hub, host and user it came from. Blocking, like the local
//! reader, over a runtime of its own, so the CLI and the API's blocking threads use both alike.

use crate::connect::connect;
use crate::error::{TeamError, driver_text};
use crate::read_proof::{PROOF_COLUMNS, proof_of};
use crate::schema::SCHEMA_VERSION;
use crate::target::TeamDb;
use portcullis_harness::Timestamp;
use portcullis_ledger::export_proof::ExportedLink;
use portcullis_ledger::query::argument_summary;
use portcullis_ledger::{
    ApprovalOutcome, ApprovalRecord, ApprovalSummary, CallFilter, CallOrigin, CallRow, CallStatus,
    CallTimeline, CommandCount, CommandOutcome, Cursor, SessionEnd, SessionFilter, SessionInfo, SessionRow,
    StoredRecord,
};
use tokio_postgres::Client;
use tokio_postgres::types::ToSql;

/// How long a search may walk the calls in time order before its page is read from the search index
/// instead, milliseconds.
const SEARCH_WALK_MS: u32 = 60;

/// What [`TeamReader::export_records`] gives each record to: the record, where it ran, and its proof.
pub type EachExported<'a> =
    dyn FnMut(&StoredRecord, &CallOrigin, Option<&ExportedLink>) -> Result<(), TeamError> + 'a;

/// A team ledger opened for reading.
pub struct TeamReader {
    db: TeamDb,
    runtime: Option<tokio::runtime::Runtime>,
    client: Client,
}

impl Drop for TeamReader {
    /// Its runtime goes without waiting (a reader may be dropped on an async thread, where waiting
    /// would be refused).
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A WHERE clause over `portcullis.records r` and its parameters ($1…).
pub(crate) struct Where {
    pub sql: String,
    pub params: Vec<Box<dyn ToSql + Sync + Send>>,
}

impl Where {
    fn new() -> Where {
        Where { sql: String::from("TRUE"), params: Vec::new() }
    }

    /// Adds `clause` with `?` standing for the next parameter, `value`.
    fn push(&mut self, clause: &str, value: Box<dyn ToSql + Sync + Send>) {
        self.params.push(value);
        self.sql.push_str(" AND ");
        self.sql.push_str(&clause.replace('?', &format!("${}", self.params.len())));
    }

    fn list(&mut self, column: &str, values: Vec<String>) {
        if !values.is_empty() {
            self.push(&format!("{column} = ANY(?)"), Box::new(values));
        }
    }

    pub fn refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.params.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync)).collect()
    }
}

/// The WHERE clause of `filter` over the team ledger's calls (their terminal records, `r`).
pub(crate) fn call_where(filter: &CallFilter) -> Result<Where, TeamError> {
    call_where_on(filter, "r")
}

/// The WHERE clause of `filter` over table alias `a`: the records, or the hourly rollups (which have
/// every column a filter names but the time, the session, the run and the search document).
pub(crate) fn call_where_on(filter: &CallFilter, a: &str) -> Result<Where, TeamError> {
    let bad = |why: &str| TeamError::BadFilter(why.to_owned());
    if filter.statuses.contains(&CallStatus::Running) {
        return Err(bad("a team ledger holds ended calls: `running` is asked of a hub's own ledger"));
    }
    if let (Some(since), Some(until)) = (filter.since, filter.until)
        && since > until
    {
        return Err(bad("--since is after --until"));
    }
    let mut w = Where::new();
    w.sql = format!("{a}.status IS NOT NULL");
    w.list(&format!("{a}.status"), filter.statuses.iter().map(|s| s.as_str().to_owned()).collect());
    if let Some(session) = &filter.session {
        w.push(&format!("{a}.session_id = ?"), Box::new(session.clone()));
    }
    if let Some(run) = &filter.run {
        w.push(&format!("{a}.run_id = ?"), Box::new(run.clone()));
    }
    w.list(&format!("{a}.tool"), filter.tools.clone());
    w.list(&format!("{a}.reason"), filter.reasons.iter().map(|r| r.as_str().to_owned()).collect());
    w.list(&format!("{a}.decided_by"), filter.decided_by.iter().map(|k| k.as_str().to_owned()).collect());
    w.list(
        &format!("{a}.policy_decision"),
        filter.policy_decisions.iter().map(|d| d.as_str().to_owned()).collect(),
    );
    w.list(&format!("{a}.owner"), filter.owners.clone());
    w.list(&format!("{a}.changes"), filter.changes.iter().map(|c| c.as_str().to_owned()).collect());
    if let Some(contained) = filter.contained {
        w.push(&format!("{a}.contained = ?"), Box::new(contained));
    }
    w.list(&format!("{a}.hub_host"), filter.hosts.clone());
    w.list(&format!("{a}.hub_user"), filter.users.clone());
    w.list(&format!("{a}.ledger_id"), filter.hubs.clone());
    if let Some(rule) = &filter.rule {
        w.push(&format!("{a}.decided_rule = ?"), Box::new(rule.clone()));
    }
    if let Some(since) = filter.since {
        w.push(&format!("{a}.at >= ?"), Box::new(since.0));
    }
    if let Some(until) = filter.until {
        w.push(&format!("{a}.at < ?"), Box::new(until.0));
    }
    if let Some(search) = &filter.search {
        if !search.chars().any(char::is_alphanumeric) {
            return Err(TeamError::BadFilter(format!("search {search:?} has no words to look for")));
        }
        w.push(&format!("{a}.search @@ plainto_tsquery('simple', ?)"), Box::new(search.clone()));
    }
    Ok(w)
}

impl TeamReader {
    /// Connects to the team ledger `db`; refused when its schema is missing or of another version.
    pub fn open(db: &TeamDb) -> Result<TeamReader, TeamError> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
            TeamError::Connect { url: db.to_string(), why: format!("no runtime to connect with: {e}") }
        })?;
        let client = runtime.block_on(connect(db))?;
        let reader = TeamReader { db: db.clone(), runtime: Some(runtime), client };
        let version: Option<i32> = reader
            .one("SELECT max(version) FROM portcullis.migrations", &[])
            .map_err(|_| TeamError::NotATeamLedger { url: db.to_string() })?;
        match version {
            Some(v) if v == SCHEMA_VERSION => Ok(reader),
            Some(v) if v > SCHEMA_VERSION => {
                Err(TeamError::NewerSchema { url: db.to_string(), found: v, supported: SCHEMA_VERSION })
            }
            Some(v) if v > 0 => {
                Err(TeamError::OlderSchema { url: db.to_string(), found: v, supported: SCHEMA_VERSION })
            }
            _ => Err(TeamError::NotATeamLedger { url: db.to_string() }),
        }
    }

    pub fn db(&self) -> &TeamDb {
        &self.db
    }

    fn block_on<T>(
        &self,
        query: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, TeamError> {
        let Some(runtime) = &self.runtime else {
            return Err(TeamError::Database { url: self.db.to_string(), why: "the reader is closed".into() });
        };
        runtime.block_on(query).map_err(|e| self.failed(&e))
    }

    fn failed(&self, e: &tokio_postgres::Error) -> TeamError {
        TeamError::Database { url: self.db.to_string(), why: driver_text(e) }
    }

    pub(crate) fn rows(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, TeamError> {
        self.block_on(self.client.query(sql, params))
    }

    pub(crate) fn one<T: for<'a> tokio_postgres::types::FromSql<'a>>(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<T, TeamError> {
        let row = self.block_on(self.client.query_one(sql, params))?;
        row.try_get(0).map_err(|e| self.failed(&e))
    }

    pub(crate) fn page_rows(
        &self,
        filter: &CallFilter,
        cursor: Option<Cursor>,
        rows: usize,
        newest_first: bool,
    ) -> Result<Vec<CallRow>, TeamError> {
        let (past, order) = if newest_first { ("<", "DESC") } else { (">", "ASC") };
        let mut w = call_where(filter)?;
        if let Some(c) = cursor {
            w.params.push(Box::new(c.at));
            w.params.push(Box::new(c.id));
            let (a, b) = (w.params.len() - 1, w.params.len());
            w.sql.push_str(&format!(" AND (r.at, r.id) {past} (${a}, ${b})"));
        }
        w.params.push(Box::new(i64::try_from(rows).unwrap_or(i64::MAX)));
        let sql = format!(
            "SELECT r.record, r.ledger_id, r.hub_host, r.hub_user,
                    CASE WHEN r.record ? 'arguments' THEN NULL ELSE
                        (SELECT s.record->'arguments' FROM portcullis.records s
                         WHERE s.ledger_id = r.ledger_id AND s.session_id = r.session_id
                           AND s.call_id = r.call_id AND s.kind = 'started' LIMIT 1) END
             FROM portcullis.records r WHERE {} ORDER BY r.at {order}, r.id {order} LIMIT ${}",
            w.sql,
            w.params.len()
        );
        // For common words, walking the calls in time order finds a page at once; for rare words it
        // reads most of the table, and the search index (its hits then sorted) is the way. PostgreSQL
        // cannot tell which from its statistics of the documents, so the walk is tried for
        // SEARCH_WALK_MS and, when it runs out, the page is read from the index.
        let rows = if filter.search.is_some() {
            match self.rows_within(SEARCH_WALK_MS, &sql, &w.refs())? {
                Some(rows) => rows,
                None => self.with_index_only(|| self.rows(&sql, &w.refs()))?,
            }
        } else {
            self.rows(&sql, &w.refs())?
        };
        rows.iter().map(|row| self.call_row(row)).collect()
    }

    /// The rows of `sql` if the server finds them within `ms`; `None` when it cancelled the statement
    /// for taking longer.
    fn rows_within(
        &self,
        ms: u32,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Vec<tokio_postgres::Row>>, TeamError> {
        self.block_on(self.client.batch_execute(&format!("SET statement_timeout = {ms}")))?;
        let Some(runtime) = &self.runtime else {
            return Err(TeamError::Database { url: self.db.to_string(), why: "the reader is closed".into() });
        };
        let result = runtime.block_on(self.client.query(sql, params));
        self.block_on(self.client.batch_execute("RESET statement_timeout"))?;
        match result {
            Ok(rows) => Ok(Some(rows)),
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::QUERY_CANCELED) => Ok(None),
            Err(e) => Err(self.failed(&e)),
        }
    }

    /// Runs `query` with the planner kept to bitmap scans (the search index), then restores it.
    fn with_index_only<T>(&self, query: impl FnOnce() -> Result<T, TeamError>) -> Result<T, TeamError> {
        self.block_on(self.client.batch_execute("SET enable_indexscan = off; SET enable_seqscan = off"))?;
        let result = query();
        self.block_on(self.client.batch_execute("RESET enable_indexscan; RESET enable_seqscan"))?;
        result
    }

    /// Up to `limit` records that decide calls (`started`, `blocked`) after record `id` of hub `ledger`
    /// in (hub, id) order (`("", 0)`: from the first), each with its hub's ledger id: what a policy
    /// replay reads.
    pub fn deciding_records(
        &self,
        ledger: &str,
        id: i64,
        limit: usize,
    ) -> Result<Vec<(String, StoredRecord)>, TeamError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let f = |e: tokio_postgres::Error| self.failed(&e);
        self.rows(
            "SELECT ledger_id, record FROM portcullis.records
             WHERE kind IN ('started', 'blocked') AND (ledger_id, id) > ($1, $2)
             ORDER BY ledger_id, id LIMIT $3",
            &[&ledger, &id, &limit],
        )?
        .iter()
        .map(|row| Ok((row.try_get(0).map_err(f)?, self.record_of(row, 1)?)))
        .collect()
    }

    /// How many records decide calls (what a replay reads in all).
    pub fn deciding_count(&self) -> Result<i64, TeamError> {
        self.one("SELECT count(*) FROM portcullis.records WHERE kind IN ('started', 'blocked')", &[])
    }

    /// The folder session `session` of hub `ledger_id` worked in, if it said.
    pub fn session_cwd(&self, ledger_id: &str, session: &str) -> Result<Option<String>, TeamError> {
        let rows = self.rows(
            "SELECT cwd FROM portcullis.sessions WHERE ledger_id = $1 AND id = $2",
            &[&ledger_id, &session],
        )?;
        match rows.first() {
            Some(row) => row.try_get(0).map_err(|e| self.failed(&e)),
            None => Ok(None),
        }
    }

    /// How many calls ended (from the daily rollups), and the times of the first and last.
    pub fn extent(&self) -> Result<(u64, Option<Timestamp>, Option<Timestamp>), TeamError> {
        let rows = self.rows(
            "SELECT (SELECT coalesce(sum(calls), 0)::bigint FROM portcullis.call_dim_days WHERE dim = 'status'),
                    (SELECT min(at) FROM portcullis.records WHERE status IS NOT NULL),
                    (SELECT max(at) FROM portcullis.records WHERE status IS NOT NULL)",
            &[],
        )?;
        let Some(row) = rows.first() else { return Ok((0, None, None)) };
        let f = |e: tokio_postgres::Error| self.failed(&e);
        let n: i64 = row.try_get(0).map_err(f)?;
        let first: Option<i64> = row.try_get(1).map_err(f)?;
        let last: Option<i64> = row.try_get(2).map_err(f)?;
        Ok((u64::try_from(n).unwrap_or(0), first.map(Timestamp), last.map(Timestamp)))
    }

    /// How the approvals asked in the filter's time range (its tools, its session, its hubs) went.
    pub fn approval_summary(&self, filter: &CallFilter) -> Result<ApprovalSummary, TeamError> {
        let rows = self.rows(
            "SELECT outcome, resolved_at - requested_at FROM portcullis.approvals
             WHERE requested_at >= $1 AND requested_at < $2 AND ($3::text IS NULL OR session_id = $3)
               AND (cardinality($4::text[]) = 0 OR tool = ANY($4))
               AND (cardinality($5::text[]) = 0 OR hub_host = ANY($5))
               AND (cardinality($6::text[]) = 0 OR hub_user = ANY($6))
               AND (cardinality($7::text[]) = 0 OR ledger_id = ANY($7))",
            &[
                &filter.since.map_or(i64::MIN, |t| t.0),
                &filter.until.map_or(i64::MAX, |t| t.0),
                &filter.session,
                &filter.tools,
                &filter.hosts,
                &filter.users,
                &filter.hubs,
            ],
        )?;
        let mut summary = ApprovalSummary::default();
        let mut waits = Vec::new();
        for row in &rows {
            let f = |e: tokio_postgres::Error| self.failed(&e);
            let outcome: Option<String> = row.try_get(0).map_err(f)?;
            summary.add(outcome.as_deref(), row.try_get(1).map_err(f)?, &mut waits);
        }
        summary.finish_waits(waits);
        Ok(summary)
    }

    /// The shell commands the selected calls prompted for (or were blocked for) most.
    pub fn top_commands(
        &self,
        filter: &CallFilter,
        outcome: CommandOutcome,
        limit: usize,
    ) -> Result<Vec<CommandCount>, TeamError> {
        let mut w = call_where(filter)?;
        let which = match outcome {
            CommandOutcome::Prompted => "r.policy_decision = 'prompt'",
            CommandOutcome::Blocked => "r.status = 'blocked'",
        };
        w.params.push(Box::new(i64::try_from(limit).unwrap_or(i64::MAX)));
        let sql = format!(
            "SELECT c.command, count(*) FROM portcullis.records r,
                 LATERAL (SELECT coalesce(r.record->'arguments'->>'command',
                     (SELECT s.record->'arguments'->>'command' FROM portcullis.records s
                      WHERE s.ledger_id = r.ledger_id AND s.session_id = r.session_id
                        AND s.call_id = r.call_id AND s.kind = 'started' LIMIT 1)) AS command) c
             WHERE {} AND r.tool = 'shell' AND {which} AND c.command IS NOT NULL
             GROUP BY c.command ORDER BY count(*) DESC, c.command LIMIT ${}",
            w.sql,
            w.params.len()
        );
        let f = |e: tokio_postgres::Error| self.failed(&e);
        self.rows(&sql, &w.refs())?
            .iter()
            .map(|row| {
                Ok(CommandCount {
                    command: row.try_get(0).map_err(f)?,
                    calls: u64::try_from(row.try_get::<_, i64>(1).map_err(f)?).unwrap_or(0),
                })
            })
            .collect()
    }

    fn call_row(&self, row: &tokio_postgres::Row) -> Result<CallRow, TeamError> {
        let record: StoredRecord = self.record_of(row, 0)?;
        let mut call = CallRow::of(&record);
        if call.summary.is_none() {
            let started: Option<serde_json::Value> = row.try_get(4).map_err(|e| self.failed(&e))?;
            call.summary = started.as_ref().and_then(argument_summary);
        }
        call.origin = Some(CallOrigin {
            ledger_id: row.try_get(1).map_err(|e| self.failed(&e))?,
            host: row.try_get(2).map_err(|e| self.failed(&e))?,
            user: row.try_get(3).map_err(|e| self.failed(&e))?,
        });
        Ok(call)
    }

    fn record_of(&self, row: &tokio_postgres::Row, i: usize) -> Result<StoredRecord, TeamError> {
        let value: serde_json::Value = row.try_get(i).map_err(|e| self.failed(&e))?;
        serde_json::from_value(value).map_err(|e| TeamError::Database {
            url: self.db.to_string(),
            why: format!("a shipped record does not read back: {e}"),
        })
    }

    /// How many calls match `filter`.
    pub fn count(&self, filter: &CallFilter) -> Result<u64, TeamError> {
        if *filter == CallFilter::default() {
            return Ok(self.extent()?.0);
        }
        let w = call_where(filter)?;
        let n: i64 =
            self.one(&format!("SELECT count(*) FROM portcullis.records r WHERE {}", w.sql), &w.refs())?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Every record and approval of the call `call_id` (of `session`, when several hubs or sessions
    /// share the id; the newest call otherwise), with where it ran.
    pub fn timeline(
        &self,
        call_id: &str,
        session: Option<&str>,
    ) -> Result<(CallTimeline, Option<CallOrigin>), TeamError> {
        let pick = self.rows(
            "SELECT ledger_id, session_id, hub_host, hub_user FROM portcullis.records
             WHERE call_id = $1 AND ($2::text IS NULL OR session_id = $2) ORDER BY at DESC LIMIT 1",
            &[&call_id, &session],
        )?;
        let Some(found) = pick.first() else {
            return Ok((CallTimeline { records: Vec::new(), approvals: Vec::new() }, None));
        };
        let get = |i| found.try_get::<_, String>(i).map_err(|e| self.failed(&e));
        let (ledger_id, session_id) = (get(0)?, get(1)?);
        let origin = CallOrigin { ledger_id: ledger_id.clone(), host: get(2)?, user: get(3)? };
        let records = self
            .rows(
                "SELECT record FROM portcullis.records WHERE ledger_id = $1 AND session_id = $2 AND call_id = $3
                 ORDER BY id",
                &[&ledger_id, &session_id, &call_id],
            )?
            .iter()
            .map(|row| self.record_of(row, 0))
            .collect::<Result<Vec<_>, _>>()?;
        let approvals = self
            .rows(
                "SELECT session_id, call_id, tool, requested_at, resolved_at, outcome, operator, note, rule_written
                 FROM portcullis.approvals WHERE ledger_id = $1 AND session_id = $2 AND call_id = $3 ORDER BY id",
                &[&ledger_id, &session_id, &call_id],
            )?
            .iter()
            .map(|row| self.approval_of(row))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((CallTimeline { records, approvals }, Some(origin)))
    }

    fn approval_of(&self, row: &tokio_postgres::Row) -> Result<ApprovalRecord, TeamError> {
        let f = |e: tokio_postgres::Error| self.failed(&e);
        let outcome: Option<String> = row.try_get(5).map_err(f)?;
        Ok(ApprovalRecord {
            session_id: row.try_get(0).map_err(f)?,
            call_id: row.try_get(1).map_err(f)?,
            tool: row.try_get(2).map_err(f)?,
            requested_at: Timestamp(row.try_get(3).map_err(f)?),
            resolved_at: row.try_get::<_, Option<i64>>(4).map_err(f)?.map(Timestamp),
            outcome: outcome.as_deref().and_then(ApprovalOutcome::parse),
            operator: row.try_get(6).map_err(f)?,
            note: row.try_get(7).map_err(f)?,
            rule_written: row.try_get(8).map_err(f)?,
            // The team ledger has no receipts column (yet): the call's record body carries the receipt.
            receipt: None,
        })
    }

    /// Sessions of every hub, newest first, with how each ended and where it ran.
    pub fn sessions(
        &self,
        filter: &SessionFilter,
        limit: usize,
    ) -> Result<Vec<(SessionRow, CallOrigin)>, TeamError> {
        let limit = i64::try_from(limit.max(1)).unwrap_or(i64::MAX);
        let rows = self.rows(
            "SELECT id, client_name, client_version, cwd, policy_hash, started_at, ended_at, end_reason,
                    ledger_id, hub_host, hub_user
             FROM portcullis.sessions
             WHERE ($1::text IS NULL OR id = $1) AND ($2::bigint IS NULL OR started_at >= $2)
               AND ($3::bigint IS NULL OR started_at < $3)
             ORDER BY started_at DESC LIMIT $4",
            &[&filter.id, &filter.since.map(|t| t.0), &filter.until.map(|t| t.0), &limit],
        )?;
        let f = |e: tokio_postgres::Error| self.failed(&e);
        rows.iter()
            .map(|row| {
                let end_reason: Option<String> = row.try_get(7).map_err(f)?;
                let session = SessionInfo {
                    id: row.try_get(0).map_err(f)?,
                    client_name: row.try_get(1).map_err(f)?,
                    client_version: row.try_get(2).map_err(f)?,
                    cwd: row.try_get(3).map_err(f)?,
                    policy_hash: row.try_get(4).map_err(f)?,
                    started_at: Timestamp(row.try_get(5).map_err(f)?),
                    ended_at: row.try_get::<_, Option<i64>>(6).map_err(f)?.map(Timestamp),
                };
                let origin = CallOrigin {
                    ledger_id: row.try_get(8).map_err(f)?,
                    host: row.try_get(9).map_err(f)?,
                    user: row.try_get(10).map_err(f)?,
                };
                Ok((
                    SessionRow {
                        session,
                        end_reason: end_reason.as_deref().and_then(SessionEnd::parse),
                        origin: None,
                    },
                    origin,
                ))
            })
            .collect()
    }

    /// Every record of the matching calls, oldest call first, in id order within a call: each as the
    /// hub's ledger reads it back, with where it ran and, when `proofs` is asked and the record was
    /// shipped with its link, its proof (`read_proof.rs`).
    pub fn export_records(
        &self,
        filter: &CallFilter,
        proofs: bool,
        each: &mut EachExported<'_>,
    ) -> Result<u64, TeamError> {
        let w = call_where(filter)?;
        let sql = format!(
            "SELECT a.record, a.ledger_id, a.hub_host, a.hub_user{} FROM portcullis.records r
             JOIN portcullis.records a ON a.ledger_id = r.ledger_id AND a.session_id = r.session_id
                                       AND a.call_id = r.call_id
             WHERE {} ORDER BY r.at, r.ledger_id, r.id, a.id",
            if proofs { format!(", {PROOF_COLUMNS}") } else { String::new() },
            w.sql
        );
        let mut n = 0;
        for row in self.rows(&sql, &w.refs())? {
            let record = self.record_of(&row, 0)?;
            let f = |e: tokio_postgres::Error| self.failed(&e);
            let origin = CallOrigin {
                ledger_id: row.try_get(1).map_err(f)?,
                host: row.try_get(2).map_err(f)?,
                user: row.try_get(3).map_err(f)?,
            };
            let proof = if proofs {
                proof_of(&row, 4, &origin.ledger_id)
                    .map_err(|why| TeamError::Database { url: self.db.to_string(), why })?
            } else {
                None
            };
            each(&record, &origin, proof.as_ref())?;
            n += 1;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::testing::PrivatePostgres;

    #[test]
    fn a_statement_past_its_time_is_none_and_the_timeout_does_not_outlive_it() {
        let pg = PrivatePostgres::start();
        pg.create_db("team");
        let dir = tempfile::tempdir().unwrap();
        let db = pg.team_db("team", dir.path());
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let mut client = crate::connect(&db).await.unwrap();
            crate::schema::migrate(&mut client, &db.to_string()).await.unwrap();
        });
        let reader = TeamReader::open(&db).unwrap();
        assert!(reader.rows_within(50, "SELECT pg_sleep(2)", &[]).unwrap().is_none());
        assert_eq!(reader.rows_within(5_000, "SELECT 1", &[]).unwrap().unwrap().len(), 1);
        let left: String = reader.one("SHOW statement_timeout", &[]).unwrap();
        assert_eq!(left, "0");
        // A statement that fails for another reason is an error, not "too slow".
        assert!(reader.rows_within(5_000, "SELECT * FROM nowhere", &[]).is_err());
        pg.sql("team", "DELETE FROM portcullis.migrations WHERE version > 1");
        match TeamReader::open(&db) {
            Err(TeamError::OlderSchema { found: 1, .. }) => {}
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
}
