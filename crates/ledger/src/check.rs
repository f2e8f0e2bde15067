//! `check`: is this file a healthy ledger? Integrity, identity, schema, counts, and what a crash left.

use crate::error::{AtPath, LedgerStoreError};
use crate::reader::LedgerReader;
use crate::schema::{SCHEMA_VERSION, identity};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CheckReport {
    /// `PRAGMA integrity_check` said "ok".
    pub integrity_ok: bool,
    /// What integrity_check said when not ok (first lines).
    pub integrity_messages: Vec<String>,
    pub schema_version: i64,
    pub supported_version: i64,
    pub records: u64,
    pub calls: u64,
    pub sessions: u64,
    pub approvals: u64,
    /// Started calls with no terminal record (running now, or left by a crash not yet recovered).
    pub open_calls: u64,
    /// Writers that never closed (running now, or crashed; the next writer recovers them).
    pub unclosed_writers: u64,
    /// Terminal records whose body does not parse as JSON (0 in a healthy ledger).
    pub unreadable_bodies: u64,
}

impl CheckReport {
    pub fn healthy(&self) -> bool {
        self.integrity_ok && self.schema_version == self.supported_version && self.unreadable_bodies == 0
    }
}

impl LedgerReader {
    pub fn check(&self) -> Result<CheckReport, LedgerStoreError> {
        let path = self.path().to_owned();
        let count = |sql: &str| -> Result<u64, LedgerStoreError> {
            let n: i64 = self.conn.query_row(sql, [], |r| r.get(0)).at(&path)?;
            Ok(u64::try_from(n).unwrap_or(0))
        };
        let mut stmt = self.conn.prepare("PRAGMA integrity_check(20)").at(&path)?;
        let messages: Vec<String> =
            stmt.query_map([], |r| r.get(0)).at(&path)?.collect::<Result<_, _>>().at(&path)?;
        let integrity_ok = messages.len() == 1 && messages[0] == "ok";
        let (_, schema_version) = identity(&self.conn).at(&path)?;
        Ok(CheckReport {
            integrity_ok,
            integrity_messages: if integrity_ok { Vec::new() } else { messages },
            schema_version,
            supported_version: SCHEMA_VERSION,
            records: count("SELECT count(*) FROM records")?,
            calls: count("SELECT count(*) FROM records WHERE status IS NOT NULL")?,
            sessions: count("SELECT count(*) FROM sessions")?,
            approvals: count("SELECT count(*) FROM approvals")?,
            open_calls: count(
                "SELECT count(*) FROM records s WHERE s.kind = 'started' AND NOT EXISTS (SELECT 1 FROM records t
                 WHERE t.call_key = s.call_key AND t.session_id = s.session_id AND t.call_id = s.call_id AND t.status IS NOT NULL)",
            )?,
            unclosed_writers: count("SELECT count(*) FROM writers WHERE closed_at IS NULL")?,
            unreadable_bodies: count("SELECT count(*) FROM records WHERE json_valid(body) = 0")?,
        })
    }
}
