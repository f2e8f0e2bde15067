//! The reading side, shared by the CLI and the app: on a ledger opened read-only (`reader.rs`, also
//! while another process writes it), filter calls, page through them by key (newest first, stable under
//! appends), search them in full text, and read one call's whole timeline.

use crate::call_head::{CallHead, HEAD_COLUMN_COUNT, StoredPolicyDecision, head_columns};
use crate::error::{AtPath, LedgerStoreError};
use crate::origin::CallOrigin;
use crate::reader::LedgerReader;
use crate::row::{RECORD_COLUMNS, StoredKind, StoredRecord, search_text, stored_record};
use crate::row_decider::RowDecider;
use crate::sessions::{ApprovalOutcome, ApprovalRecord, SessionInfo};
use crate::snippet::fts_query;
use portcullis_harness::{BlockedReason, ChangeOutcome, DeciderKind, Timestamp};
use rusqlite::params_from_iter;
use rusqlite::types::Value as Sql;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

pub use crate::call_summary::{SUMMARY_CHARS, SUMMARY_KEYS, argument_summary};

/// Most calls one page may hold.
pub const MAX_PAGE: usize = 1000;

/// A call's status in listings: its terminal record's kind, or `running`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum CallStatus {
    Finished,
    Error,
    Blocked,
    Interrupted,
    /// Started, no terminal record yet.
    Running,
}

impl CallStatus {
    pub const ALL: [CallStatus; 5] = [
        CallStatus::Finished,
        CallStatus::Error,
        CallStatus::Blocked,
        CallStatus::Interrupted,
        CallStatus::Running,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Finished => "finished",
            CallStatus::Error => "error",
            CallStatus::Blocked => "blocked",
            CallStatus::Interrupted => "interrupted",
            CallStatus::Running => "running",
        }
    }

    /// The status of a call whose latest record is of `kind`.
    pub fn of(kind: StoredKind) -> CallStatus {
        match kind {
            StoredKind::Finished => CallStatus::Finished,
            StoredKind::Error => CallStatus::Error,
            StoredKind::Blocked => CallStatus::Blocked,
            StoredKind::Interrupted => CallStatus::Interrupted,
            StoredKind::Started | StoredKind::Progress => CallStatus::Running,
        }
    }
}

impl FromStr for CallStatus {
    type Err = LedgerStoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CallStatus::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| {
            LedgerStoreError::BadFilter(format!(
                "unknown status {s:?}: expected one of finished, error, blocked, interrupted, running"
            ))
        })
    }
}

/// Which calls a query is about. Empty lists mean "any".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CallFilter {
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub run: Option<String>,
    #[serde(default)]
    pub tools: Vec<String>,
    /// Default: every terminal status (`running` only when asked for).
    #[serde(default)]
    pub statuses: Vec<CallStatus>,
    #[serde(default)]
    pub reasons: Vec<BlockedReason>,
    /// Kinds of decider (the closed set of [`DeciderKind`]).
    #[serde(default)]
    pub decided_by: Vec<DeciderKind>,
    /// A rule id (the deciding rule).
    #[serde(default)]
    pub rule: Option<String>,
    /// What the policy said before any approval: allow, prompt, forbidden.
    #[serde(default)]
    pub policy_decisions: Vec<StoredPolicyDecision>,
    /// The agents (each call's owner: the client that made it).
    #[serde(default)]
    pub owners: Vec<String>,
    #[serde(default)]
    pub since: Option<Timestamp>,
    #[serde(default)]
    pub until: Option<Timestamp>,
    /// Full-text search over tool names, arguments and results (words, all must appear).
    #[serde(default)]
    pub search: Option<String>,
    /// A team ledger's calls from these hosts, OS users or hubs (ledger ids) only; a hub's own ledger
    /// refuses them (it holds one hub's calls).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hubs: Vec<String>,
    /// Calls whose changes came to these (their most serious outcome: held, then discarded, then kept);
    /// see [`crate::call_marks`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<ChangeOutcome>,
    /// Calls that ran contained (`true`) or did not (`false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contained: Option<bool>,
}

impl CallFilter {
    /// Whether it names hosts, users or hubs (filters only a team ledger answers).
    pub fn names_origins(&self) -> bool {
        !(self.hosts.is_empty() && self.users.is_empty() && self.hubs.is_empty())
    }

    /// Whether it names the marks of calls (changes, contained), which the rollups do not keep.
    pub fn names_marks(&self) -> bool {
        !self.changes.is_empty() || self.contained.is_some()
    }
}

/// A position in the newest-first order: the last call of the previous page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Cursor {
    pub at: i64,
    pub id: i64,
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.at, self.id)
    }
}

impl FromStr for Cursor {
    type Err = LedgerStoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || LedgerStoreError::BadFilter(format!("invalid cursor {s:?}: expected <time>.<id>"));
        let (at, id) = s.split_once('.').ok_or_else(bad)?;
        Ok(Cursor { at: at.parse().map_err(|_| bad())?, id: id.parse().map_err(|_| bad())? })
    }
}

/// One call in a listing: its latest state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CallRow {
    /// The id of the record this row stands for (terminal, or `started` for running calls).
    pub record_id: i64,
    #[serde(flatten)]
    pub head: CallHead,
    pub status: CallStatus,
    #[serde(flatten)]
    pub decider: RowDecider,
    /// What the call does in one line: its command, path, URL… ([`argument_summary`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// With a full-text search: the text around the first word found, the words marked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet: Option<crate::snippet::Snippet>,
    /// On a team ledger's rows: the hub the call ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<CallOrigin>,
    /// The most serious outcome of what the call changed (a confined command): held, discarded or kept;
    /// absent when it changed nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<ChangeOutcome>,
    /// It ran contained (its `policy_decision` is then `allow`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub contained: bool,
}

impl CallRow {
    /// A row of a call with its head, status and decider only: no summary, snippet, origin or marks.
    pub fn new(record_id: i64, head: CallHead, status: CallStatus, decider: RowDecider) -> CallRow {
        CallRow {
            record_id,
            head,
            status,
            decider,
            summary: None,
            snippet: None,
            origin: None,
            changes: None,
            contained: false,
        }
    }

    /// The listing row a record stands for: its terminal record (or `started`, for a running call),
    /// projected. A listing reads the same values from the record's columns without its body; a test
    /// holds the two equal.
    pub fn of(record: &StoredRecord) -> CallRow {
        let status = CallStatus::of(record.kind);
        let marks = if record.kind.is_terminal() {
            crate::call_marks::marks_of(record.body.output.as_deref(), record.body.error.as_ref())
        } else {
            crate::call_marks::CallMarks::default()
        };
        CallRow {
            record_id: record.id,
            head: record.head.clone(),
            status,
            decider: RowDecider::of(&record.body.decided_by),
            summary: record.body.arguments.as_deref().and_then(argument_summary),
            snippet: None,
            origin: None,
            changes: marks.changes,
            contained: marks.contained,
        }
    }
}

impl CallRow {
    /// The listing row of the call whose records (in id order) are `records`, standing for record
    /// `id`: [`CallRow::of`] that record, its summary from the `started` record when the record itself
    /// holds no arguments, redacted when either record was — as a listing reads it.
    pub fn of_call(records: &[StoredRecord], id: i64) -> Option<CallRow> {
        let record = records.iter().find(|r| r.id == id)?;
        let mut row = CallRow::of(record);
        let started = records.iter().find(|r| r.kind == StoredKind::Started);
        if record.body.arguments.is_none() {
            row.summary = started.and_then(|r| r.body.arguments.as_deref()).and_then(argument_summary);
        }
        row.head.redacted |= started.is_some_and(|r| r.head.redacted);
        Some(row)
    }
}

/// A page of calls, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CallPage {
    pub calls: Vec<CallRow>,
    /// Pass as `before` to get the next (older) page; `None` on the last page.
    pub next: Option<Cursor>,
}

/// One call, everything about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallTimeline {
    pub records: Vec<StoredRecord>,
    pub approvals: Vec<ApprovalRecord>,
}

/// The listing's own columns: the record's id and kind, its head, then what decided it and its marks.
const CALL_COLUMNS: &str = concat!(
    "id, kind, ",
    head_columns!(),
    ", decided_by, decided_rule, decided_source, decided_operator, changes, contained"
);

/// The listing's columns over `records r`: the call's columns and its arguments (for the summary).
fn call_columns() -> String {
    const STARTED: &str = "FROM records s WHERE s.call_key = r.call_key AND s.session_id = r.session_id \
                           AND s.call_id = r.call_id AND s.kind = 'started'";
    let mut columns = CALL_COLUMNS
        .split(", ")
        .map(|c| match c {
            // A call is redacted when any of its records was: its arguments are on `started`.
            "redacted" => format!("(r.redacted OR coalesce((SELECT s.redacted {STARTED}), 0))"),
            c => format!("r.{c}"),
        })
        .collect::<Vec<_>>()
        .join(", ");
    // A terminal record may not repeat the arguments: then they are its call's `started` record's.
    columns.push_str(&format!(
        ", coalesce(json_extract(r.body, '$.arguments'), (SELECT json_extract(s.body, '$.arguments') {STARTED}))"
    ));
    columns
}

fn call_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<CallRow> {
    /// Where the columns after the head are.
    const REST: usize = 2 + HEAD_COLUMN_COUNT;
    let kind: String = row.get(1)?;
    let status = StoredKind::parse(&kind).map_or(CallStatus::Running, CallStatus::of);
    Ok(CallRow {
        record_id: row.get(0)?,
        head: CallHead::from_sqlite(row, 2)?,
        status,
        decider: RowDecider::from_sqlite(row, REST)?,
        changes: row.get::<_, Option<String>>(REST + 4)?.and_then(|c| ChangeOutcome::parse(&c)),
        contained: row.get(REST + 5)?,
        summary: row
            .get::<_, Option<String>>(REST + 6)?
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .and_then(|args| argument_summary(&args)),
        snippet: None,
        origin: None,
    })
}

/// A WHERE clause over `records` (aliased `r`) and its parameters.
pub(crate) struct Where {
    pub sql: String,
    pub params: Vec<Sql>,
}

impl Where {
    fn push(&mut self, clause: &str) {
        self.sql.push_str(" AND ");
        self.sql.push_str(clause);
    }

    fn list(&mut self, column: &str, values: impl IntoIterator<Item = String>) {
        let values: Vec<String> = values.into_iter().collect();
        if values.is_empty() {
            return;
        }
        let marks = vec!["?"; values.len()].join(",");
        self.push(&format!("{column} IN ({marks})"));
        self.params.extend(values.into_iter().map(Sql::Text));
    }
}

/// Host, user and hub filters are a team ledger's: a hub's own ledger holds one hub's calls.
pub(crate) fn refuse_origins(filter: &CallFilter) -> Result<(), LedgerStoreError> {
    if filter.names_origins() {
        return Err(LedgerStoreError::BadFilter(
            "host, user and hub filters apply to a team ledger (--db postgres://…); this ledger holds one hub's calls"
                .into(),
        ));
    }
    Ok(())
}

fn search_query(search: &str) -> Result<String, LedgerStoreError> {
    fts_query(search)
        .ok_or_else(|| LedgerStoreError::BadFilter(format!("search {search:?} has no words to look for")))
}

/// Builds the WHERE clause of a filter over calls (terminal records, plus running ones if asked).
pub(crate) fn call_where(filter: &CallFilter) -> Result<Where, LedgerStoreError> {
    refuse_origins(filter)?;
    if let (Some(since), Some(until)) = (filter.since, filter.until)
        && since > until
    {
        return Err(LedgerStoreError::BadFilter("--since is after --until".into()));
    }
    let terminal: Vec<&str> =
        filter.statuses.iter().filter(|s| **s != CallStatus::Running).map(|s| s.as_str()).collect();
    let running = filter.statuses.contains(&CallStatus::Running);
    let mut w = Where { sql: String::new(), params: Vec::new() };
    let running_sql =
        "(r.kind = 'started' AND NOT EXISTS (SELECT 1 FROM records t WHERE t.call_key = r.call_key AND t.session_id = r.session_id \
         AND t.call_id = r.call_id AND t.status IS NOT NULL))"
            .to_owned();
    let mut alternatives = Vec::new();
    if filter.statuses.is_empty() {
        alternatives.push("r.status IS NOT NULL".to_owned());
    }
    if !terminal.is_empty() {
        alternatives.push(format!("r.status IN ({})", vec!["?"; terminal.len()].join(",")));
        w.params.extend(terminal.iter().map(|s| Sql::Text((*s).to_owned())));
    }
    if running {
        alternatives.push(running_sql);
    }
    w.sql = if alternatives.len() == 1 {
        alternatives.remove(0)
    } else {
        format!("({})", alternatives.join(" OR "))
    };
    if let Some(s) = &filter.session {
        w.push("r.session_id = ?");
        w.params.push(Sql::Text(s.clone()));
    }
    if let Some(run) = &filter.run {
        w.push("r.run_id = ?");
        w.params.push(Sql::Text(run.clone()));
    }
    w.list("r.tool", filter.tools.iter().cloned());
    w.list("r.reason", filter.reasons.iter().map(|r| r.as_str().to_owned()));
    w.list("r.decided_by", filter.decided_by.iter().map(|k| k.as_str().to_owned()));
    w.list("r.policy_decision", filter.policy_decisions.iter().map(|d| d.as_str().to_owned()));
    w.list("r.owner", filter.owners.iter().cloned());
    w.list("r.changes", filter.changes.iter().map(|c| c.as_str().to_owned()));
    if let Some(contained) = filter.contained {
        w.push("r.contained = ?");
        w.params.push(Sql::Integer(i64::from(contained)));
    }
    if let Some(rule) = &filter.rule {
        w.push("r.decided_rule = ?");
        w.params.push(Sql::Text(rule.clone()));
    }
    if let Some(since) = filter.since {
        w.push("r.at >= ?");
        w.params.push(Sql::Integer(since.0));
    }
    if let Some(until) = filter.until {
        w.push("r.at < ?");
        w.params.push(Sql::Integer(until.0));
    }
    if let Some(search) = &filter.search {
        if running {
            return Err(LedgerStoreError::BadFilter(
                "full-text search covers ended calls only; drop `running` or the search".into(),
            ));
        }
        let query = search_query(search)?;
        w.push("r.id IN (SELECT rowid FROM records_fts WHERE records_fts MATCH ?)");
        w.params.push(Sql::Text(query));
    }
    Ok(w)
}

impl LedgerReader {
    /// Up to `rows` calls past `cursor` in the order asked. With a search, driven by the search index
    /// (records are appended in time order, so document order is call order) and the cursor compares
    /// ids; else by `(at, id)`.
    pub(crate) fn page_rows(
        &self,
        filter: &CallFilter,
        cursor: Option<Cursor>,
        rows: usize,
        newest_first: bool,
    ) -> Result<Vec<CallRow>, LedgerStoreError> {
        let columns = call_columns();
        let (past, order) = if newest_first { ("<", "DESC") } else { (">", "") };
        let (sql, params) = if let Some(search) = &filter.search {
            // Checks the whole filter (search with `running` is refused there).
            call_where(filter)?;
            let query = search_query(search)?;
            let mut w = call_where(&CallFilter { search: None, ..filter.clone() })?;
            let mut params = vec![Sql::Text(query)];
            params.append(&mut w.params);
            w.params = params;
            if let Some(c) = cursor {
                w.push(&format!("f.rowid {past} ?"));
                w.params.push(Sql::Integer(c.id));
            }
            let sql = format!(
                "SELECT {columns} FROM records_fts f JOIN records r ON r.id = f.rowid
                 WHERE records_fts MATCH ? AND {} ORDER BY f.rowid {order} LIMIT {rows}",
                w.sql
            );
            (sql, w.params)
        } else {
            let mut w = call_where(filter)?;
            if let Some(c) = cursor {
                w.push(&format!("(r.at, r.id) {past} (?, ?)"));
                w.params.push(Sql::Integer(c.at));
                w.params.push(Sql::Integer(c.id));
            }
            let sql = format!(
                "SELECT {columns} FROM records r WHERE {} ORDER BY r.at {order}, r.id {order} LIMIT {rows}",
                w.sql
            );
            (sql, w.params)
        };
        let mut stmt = self.conn.prepare_cached(&sql).at(&self.path)?;
        let calls = stmt
            .query_map(params_from_iter(params.iter()), call_row)
            .at(&self.path)?
            .collect::<Result<_, _>>()
            .at(&self.path)?;
        Ok(calls)
    }

    /// With a search: each call's snippet, the words found marked.
    pub(crate) fn add_snippets(
        &self,
        filter: &CallFilter,
        calls: &mut [CallRow],
    ) -> Result<(), LedgerStoreError> {
        if let Some(search) = &filter.search {
            for call in calls {
                call.snippet = crate::snippet::snippet(&self.search_document(call)?, search);
            }
        }
        Ok(())
    }

    /// The text the search index was fed for a call (see the writer): its tool, what its `started`
    /// record says (the arguments) and what its terminal record says.
    fn search_document(&self, call: &CallRow) -> Result<String, LedgerStoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT kind, body FROM records WHERE call_key = ? AND call_id = ? AND session_id = ?
                 AND (kind = 'started' OR id = ?) ORDER BY id",
            )
            .at(&self.path)?;
        let key = crate::schema::call_key(&call.head.call_id);
        let bodies = stmt
            .query_map(rusqlite::params![key, call.head.call_id, call.head.session_id, call.record_id], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .at(&self.path)?
            .collect::<Result<Vec<_>, _>>()
            .at(&self.path)?;
        let text = |body: &str| {
            serde_json::from_str::<crate::row::RecordBody>(body).map(|b| search_text(&b)).unwrap_or_default()
        };
        let started = bodies.iter().find(|(k, _)| k == "started").map(|(_, b)| text(b)).unwrap_or_default();
        let terminal = bodies.iter().find(|(k, _)| k != "started").map(|(_, b)| text(b)).unwrap_or_default();
        Ok(format!("{} {started} {terminal}", call.head.tool))
    }

    /// Number of calls matching the filter.
    pub fn count(&self, filter: &CallFilter) -> Result<u64, LedgerStoreError> {
        let w = call_where(filter)?;
        let sql = format!("SELECT count(*) FROM records r WHERE {}", w.sql);
        let n: i64 =
            self.conn.query_row(&sql, params_from_iter(w.params.iter()), |r| r.get(0)).at(&self.path)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Every record of a call (in order) and its approvals. `session` narrows when call ids repeat
    /// across sessions.
    pub fn timeline(&self, call_id: &str, session: Option<&str>) -> Result<CallTimeline, LedgerStoreError> {
        let key = Sql::Integer(crate::schema::call_key(call_id));
        let (clause, params): (&str, Vec<Sql>) = match session {
            Some(s) => (
                "call_key = ? AND call_id = ? AND session_id = ?",
                vec![key, Sql::Text(call_id.into()), Sql::Text(s.into())],
            ),
            None => ("call_key = ? AND call_id = ?", vec![key, Sql::Text(call_id.into())]),
        };
        let sql = format!("SELECT {RECORD_COLUMNS} FROM records WHERE {clause} ORDER BY session_id, id");
        let mut stmt = self.conn.prepare(&sql).at(&self.path)?;
        let records = stmt
            .query_map(params_from_iter(params.iter()), stored_record)
            .at(&self.path)?
            .collect::<Result<Vec<_>, _>>()
            .at(&self.path)?;
        let (clause, params): (&str, Vec<Sql>) = match session {
            Some(s) => {
                ("call_id = ? AND session_id = ?", vec![Sql::Text(call_id.into()), Sql::Text(s.into())])
            }
            None => ("call_id = ?", vec![Sql::Text(call_id.into())]),
        };
        let sql = format!(
            "SELECT session_id, call_id, tool, requested_at, resolved_at, outcome, operator, note, rule_written,
                 receipt
             FROM approvals WHERE {clause} ORDER BY id"
        );
        let mut stmt = self.conn.prepare(&sql).at(&self.path)?;
        let approvals = stmt
            .query_map(params_from_iter(params.iter()), |r| {
                let outcome: Option<String> = r.get(5)?;
                Ok(ApprovalRecord {
                    session_id: r.get(0)?,
                    call_id: r.get(1)?,
                    tool: r.get(2)?,
                    requested_at: Timestamp(r.get(3)?),
                    resolved_at: r.get::<_, Option<i64>>(4)?.map(Timestamp),
                    outcome: outcome.and_then(|o| {
                        serde_json::from_value::<ApprovalOutcome>(serde_json::Value::String(o)).ok()
                    }),
                    operator: r.get(6)?,
                    note: r.get(7)?,
                    rule_written: r.get(8)?,
                    receipt: r.get::<_, Option<String>>(9)?.and_then(|json| serde_json::from_str(&json).ok()),
                })
            })
            .at(&self.path)?
            .collect::<Result<Vec<_>, _>>()
            .at(&self.path)?;
        Ok(CallTimeline { records, approvals })
    }

    /// Sessions, newest first.
    pub fn sessions(&self, limit: usize) -> Result<Vec<SessionInfo>, LedgerStoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, client_name, client_version, cwd, policy_hash, started_at, ended_at
                 FROM sessions ORDER BY started_at DESC LIMIT ?1",
            )
            .at(&self.path)?;
        let rows = stmt
            .query_map([limit as i64], |r| {
                Ok(SessionInfo {
                    id: r.get(0)?,
                    client_name: r.get(1)?,
                    client_version: r.get(2)?,
                    cwd: r.get(3)?,
                    policy_hash: r.get(4)?,
                    started_at: Timestamp(r.get(5)?),
                    ended_at: r.get::<_, Option<i64>>(6)?.map(Timestamp),
                })
            })
            .at(&self.path)?
            .collect::<Result<Vec<_>, _>>()
            .at(&self.path)?;
        Ok(rows)
    }

    /// How many calls have ended (summed from the writer's daily rollups: no scan), and the times of
    /// the first and last of them.
    pub fn extent(&self) -> Result<(u64, Option<Timestamp>, Option<Timestamp>), LedgerStoreError> {
        let (n, first, last): (i64, Option<i64>, Option<i64>) = self
            .conn
            .query_row(
                "SELECT (SELECT coalesce(sum(calls), 0) FROM call_days),
                        (SELECT min(at) FROM records WHERE status IS NOT NULL),
                        (SELECT max(at) FROM records WHERE status IS NOT NULL)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .at(&self.path)?;
        Ok((u64::try_from(n).unwrap_or(0), first.map(Timestamp), last.map(Timestamp)))
    }

    /// The id of the newest record (0 for an empty ledger): how far [`LedgerReader::records`] will go.
    pub fn last_record_id(&self) -> Result<i64, LedgerStoreError> {
        let id: Option<i64> =
            self.conn.query_row("SELECT max(id) FROM records", [], |r| r.get(0)).at(&self.path)?;
        Ok(id.unwrap_or(0))
    }

    /// Records of one kind, in id order (for tests and tools that read the raw lifecycle).
    pub fn records(&self, after_id: i64, limit: usize) -> Result<Vec<StoredRecord>, LedgerStoreError> {
        let sql = format!("SELECT {RECORD_COLUMNS} FROM records WHERE id > ?1 ORDER BY id LIMIT ?2");
        let mut stmt = self.conn.prepare_cached(&sql).at(&self.path)?;
        let rows = stmt
            .query_map([after_id, limit as i64], stored_record)
            .at(&self.path)?
            .collect::<Result<Vec<_>, _>>()
            .at(&self.path)?;
        Ok(rows)
    }
}

/// Parses a record kind name (for filters on raw records).
pub fn parse_kind(s: &str) -> Result<StoredKind, LedgerStoreError> {
    StoredKind::parse(s).ok_or_else(|| LedgerStoreError::BadFilter(format!("unknown record kind {s:?}")))
}
