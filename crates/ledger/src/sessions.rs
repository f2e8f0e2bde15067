//! What the ledger keeps besides call records: agent sessions (and how each ended) and approval
//! prompts, as the writer takes them and readers return them.

use crate::error::{AtPath, LedgerStoreError};
use crate::origin::CallOrigin;
use crate::reader::LedgerReader;
use portcullis_harness::Timestamp;
use rusqlite::params_from_iter;
use rusqlite::types::Value as Sql;
use serde::{Deserialize, Serialize};

/// An agent session as the ledger keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SessionInfo {
    pub id: String,
    #[serde(default)]
    pub client_name: Option<String>,
    #[serde(default)]
    pub client_version: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub policy_hash: Option<String>,
    pub started_at: Timestamp,
    #[serde(default)]
    pub ended_at: Option<Timestamp>,
}

/// How an approval ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum ApprovalOutcome {
    ApprovedOnce,
    ApprovedForSession,
    ApprovedAlways,
    Denied,
    TimedOut,
    /// The call stopped waiting (its caller went away, its run was cancelled) before an answer.
    Withdrawn,
}

impl ApprovalOutcome {
    pub const ALL: [ApprovalOutcome; 6] = [
        ApprovalOutcome::ApprovedOnce,
        ApprovalOutcome::ApprovedForSession,
        ApprovalOutcome::ApprovedAlways,
        ApprovalOutcome::Denied,
        ApprovalOutcome::TimedOut,
        ApprovalOutcome::Withdrawn,
    ];

    /// The outcome named `s` (as [`ApprovalOutcome::as_str`] writes it).
    pub fn parse(s: &str) -> Option<ApprovalOutcome> {
        ApprovalOutcome::ALL.into_iter().find(|o| o.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalOutcome::ApprovedOnce => "approved_once",
            ApprovalOutcome::ApprovedForSession => "approved_for_session",
            ApprovalOutcome::ApprovedAlways => "approved_always",
            ApprovalOutcome::Denied => "denied",
            ApprovalOutcome::TimedOut => "timed_out",
            ApprovalOutcome::Withdrawn => "withdrawn",
        }
    }
}

/// One approval prompt: when it was asked, how and when it was answered, by whom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ApprovalRecord {
    pub session_id: String,
    pub call_id: String,
    pub tool: String,
    pub requested_at: Timestamp,
    #[serde(default)]
    pub resolved_at: Option<Timestamp>,
    #[serde(default)]
    pub outcome: Option<ApprovalOutcome>,
    #[serde(default)]
    pub operator: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
    /// The rule written by an "always allow" answer.
    #[serde(default)]
    pub rule_written: Option<String>,
    /// What the answer is bound to (arguments, policy version, operator and channel, time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<portcullis_harness::Receipt>,
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum SessionEnd {
    /// Its client ended it, or its hub did at a clean shutdown.
    Closed,
    /// Still open when the ledger was next opened for writing: the hub holding it stopped without
    /// closing it (killed, crashed). It ends at its last recorded activity.
    Cut,
}

impl SessionEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionEnd::Closed => "closed",
            SessionEnd::Cut => "cut",
        }
    }

    pub fn parse(s: &str) -> Option<SessionEnd> {
        [SessionEnd::Closed, SessionEnd::Cut].into_iter().find(|e| e.as_str() == s)
    }
}

/// A session as listed: what the ledger keeps of it and how it ended (`None`: open, or ended before the
/// ledger kept why).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SessionRow {
    #[serde(flatten)]
    pub session: SessionInfo,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<SessionEnd>,
    /// On a team ledger's rows: the hub the session ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<CallOrigin>,
}

/// Sessions by how they stand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SessionCounts {
    pub total: u64,
    pub open: u64,
    pub closed: u64,
    pub cut: u64,
}

/// Which sessions: started in `[since, until)`, or one of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SessionFilter {
    pub id: Option<String>,
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
}

impl SessionFilter {
    fn clause(&self) -> (String, Vec<Sql>) {
        let mut sql = String::from("1");
        let mut params = Vec::new();
        if let Some(id) = &self.id {
            sql.push_str(" AND id = ?");
            params.push(Sql::Text(id.clone()));
        }
        if let Some(since) = self.since {
            sql.push_str(" AND started_at >= ?");
            params.push(Sql::Integer(since.0));
        }
        if let Some(until) = self.until {
            sql.push_str(" AND started_at < ?");
            params.push(Sql::Integer(until.0));
        }
        (sql, params)
    }
}

const SESSION_COLUMNS: &str =
    "id, client_name, client_version, cwd, policy_hash, started_at, ended_at, end_reason";

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        session: SessionInfo {
            id: r.get(0)?,
            client_name: r.get(1)?,
            client_version: r.get(2)?,
            cwd: r.get(3)?,
            policy_hash: r.get(4)?,
            started_at: Timestamp(r.get(5)?),
            ended_at: r.get::<_, Option<i64>>(6)?.map(Timestamp),
        },
        end_reason: r.get::<_, Option<String>>(7)?.and_then(|e| SessionEnd::parse(&e)),
        origin: None,
    })
}

impl LedgerReader {
    /// One session, if the ledger holds it.
    pub fn session(&self, id: &str) -> Result<Option<SessionInfo>, LedgerStoreError> {
        let filter = SessionFilter { id: Some(id.to_owned()), ..SessionFilter::default() };
        Ok(self.session_rows(&filter, 1)?.into_iter().next().map(|row| row.session))
    }

    /// Sessions with how each ended, newest first.
    pub fn session_rows(
        &self,
        filter: &SessionFilter,
        limit: usize,
    ) -> Result<Vec<SessionRow>, LedgerStoreError> {
        let (clause, mut params) = filter.clause();
        params.push(Sql::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE {clause} ORDER BY started_at DESC, id LIMIT ?"
        );
        let mut stmt = self.conn.prepare_cached(&sql).at(self.path())?;
        let rows = stmt
            .query_map(params_from_iter(params.iter()), session_row)
            .at(self.path())?
            .collect::<Result<Vec<_>, _>>()
            .at(self.path())?;
        Ok(rows)
    }

    /// How many sessions are open, closed, and cut.
    pub fn session_counts(&self, filter: &SessionFilter) -> Result<SessionCounts, LedgerStoreError> {
        let (clause, params) = filter.clause();
        let sql = format!(
            "SELECT count(*), coalesce(sum(ended_at IS NULL), 0), coalesce(sum(end_reason = 'cut'), 0)
             FROM sessions WHERE {clause}"
        );
        let (total, open, cut): (i64, i64, i64) = self
            .conn
            .query_row(&sql, params_from_iter(params.iter()), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .at(self.path())?;
        let n = |v: i64| u64::try_from(v).unwrap_or(0);
        Ok(SessionCounts { total: n(total), open: n(open), closed: n(total - open - cut), cut: n(cut) })
    }
}
