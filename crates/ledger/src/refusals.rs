//! Requests the hub's gateway refused (no or a wrong bearer token, the wrong credential for a route, a
//! foreign Origin, an unknown Host), as the ledger keeps them: identical refusals within one minute are
//! one row with a count, so a flood of them adds rows slowly. Never a credential: what a row holds is
//! the request line, the peer's address and the Origin, Host and User-Agent headers.

use crate::count::Count;
use crate::error::{AtPath, LedgerStoreError};
use crate::reader::LedgerReader;
use portcullis_harness::Timestamp;
use rusqlite::types::Value as Sql;
use rusqlite::{Connection, params, params_from_iter};
use serde::{Deserialize, Serialize};

/// Width of the window identical refusals are counted in, microseconds.
pub const REFUSAL_WINDOW_US: i64 = 60_000_000;

/// Refused requests: one or more identical refusals (same status, code, method, path, peer, Origin,
/// Host, User-Agent) within one minute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RefusalRow {
    pub first_at: Timestamp,
    pub last_at: Timestamp,
    pub count: u64,
    /// The HTTP status answered (401, 403).
    pub status: u16,
    /// The refusal's code: `unauthorized`, `agent_credential_required`, `operator_credential_required`,
    /// `origin_not_allowed`, `host_not_allowed`.
    pub code: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The peer's IP address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
}

impl RefusalRow {
    /// What makes two refusals identical (FNV-1a over the status, code and the request's fields).
    pub fn identity(&self) -> i64 {
        let mut hash = portcullis_harness::fnv::Fnv1a::default();
        let status = self.status.to_string();
        let fields = [
            Some(status.as_str()),
            Some(self.code.as_str()),
            self.method.as_deref(),
            self.path.as_deref(),
            self.peer.as_deref(),
            self.origin.as_deref(),
            self.host.as_deref(),
            self.user_agent.as_deref(),
        ];
        for field in fields {
            // Absent and empty differ; each field ends with a separator.
            let bytes = field.map(str::as_bytes).unwrap_or(b"\xff");
            hash.write(bytes);
            hash.write(&[0]);
        }
        (hash.finish() >> 1) as i64
    }
}

/// Adds refusals to their minute's row (made on the first one).
/// Returns the row's id (the side chain's key of it).
pub(crate) fn upsert(conn: &Connection, row: &RefusalRow) -> rusqlite::Result<i64> {
    let minute = row.first_at.0.div_euclid(REFUSAL_WINDOW_US) * REFUSAL_WINDOW_US;
    conn.prepare_cached(
        "INSERT INTO refusals (minute, key, first_at, last_at, count, status, code, method, path, peer, origin,
             host, user_agent)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
         ON CONFLICT (minute, key) DO UPDATE SET count = count + excluded.count,
             first_at = min(first_at, excluded.first_at), last_at = max(last_at, excluded.last_at)
         RETURNING id",
    )?
    .query_row(params![
        minute,
        row.identity(),
        row.first_at.0,
        row.last_at.0,
        i64::try_from(row.count).unwrap_or(i64::MAX),
        row.status,
        row.code,
        row.method,
        row.path,
        row.peer,
        row.origin,
        row.host,
        row.user_agent
    ], |r| r.get(0))
}

/// Which refusals: first seen in `[since, until)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefusalFilter {
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
}

impl RefusalFilter {
    fn clause(&self) -> (String, Vec<Sql>) {
        let mut sql = String::from("1");
        let mut params = Vec::new();
        if let Some(since) = self.since {
            sql.push_str(" AND first_at >= ?");
            params.push(Sql::Integer(since.0));
        }
        if let Some(until) = self.until {
            sql.push_str(" AND first_at < ?");
            params.push(Sql::Integer(until.0));
        }
        (sql, params)
    }
}

/// Refused requests counted: all of them, and by code.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RefusalCounts {
    pub requests: u64,
    pub by_code: Vec<Count>,
}

impl LedgerReader {
    /// Refusal rows, newest first.
    pub fn refusals(
        &self,
        filter: &RefusalFilter,
        limit: usize,
    ) -> Result<Vec<RefusalRow>, LedgerStoreError> {
        let (clause, mut params) = filter.clause();
        params.push(Sql::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
        let sql = format!(
            "SELECT first_at, last_at, count, status, code, method, path, peer, origin, host, user_agent
             FROM refusals WHERE {clause} ORDER BY first_at DESC, id DESC LIMIT ?"
        );
        let mut stmt = self.conn.prepare_cached(&sql).at(self.path())?;
        let rows = stmt
            .query_map(params_from_iter(params.iter()), |r| {
                Ok(RefusalRow {
                    first_at: Timestamp(r.get(0)?),
                    last_at: Timestamp(r.get(1)?),
                    count: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                    status: r.get(3)?,
                    code: r.get(4)?,
                    method: r.get(5)?,
                    path: r.get(6)?,
                    peer: r.get(7)?,
                    origin: r.get(8)?,
                    host: r.get(9)?,
                    user_agent: r.get(10)?,
                })
            })
            .at(self.path())?
            .collect::<Result<Vec<_>, _>>()
            .at(self.path())?;
        Ok(rows)
    }

    /// How many requests were refused, and for what.
    pub fn refusal_counts(&self, filter: &RefusalFilter) -> Result<RefusalCounts, LedgerStoreError> {
        let (clause, params) = filter.clause();
        let sql = format!(
            "SELECT code, sum(count) AS n FROM refusals WHERE {clause} GROUP BY code ORDER BY n DESC, code"
        );
        let mut stmt = self.conn.prepare(&sql).at(self.path())?;
        let by_code = stmt
            .query_map(params_from_iter(params.iter()), |r| {
                Ok(Count { key: r.get(0)?, count: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0) })
            })
            .at(self.path())?
            .collect::<Result<Vec<_>, _>>()
            .at(self.path())?;
        Ok(RefusalCounts { requests: by_code.iter().map(|c| c.count).sum(), by_code })
    }
}
