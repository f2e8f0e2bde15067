//! The rows a ledger's tail ships besides its records: sessions, approvals, refusals, tool pin events
//! and the chain's signed checkpoints. Each table is read after a cursor: the change clock's tick for
//! the tables whose rows change (a session ends, a refusal's minute counts on), the id for those only
//! appended to. Rows leave as JSON objects keyed by column name (blobs as lowercase hex), so a sink
//! writes them without knowing SQLite.

use crate::error::{AtPath, LedgerStoreError};
use crate::reader::LedgerReader;
use rusqlite::types::ValueRef;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A table shipped beside the records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SideTable {
    Sessions,
    Approvals,
    Refusals,
    ToolPinEvents,
    /// The hash chain's checkpoints (`seal.rs`): what lets a team ledger's records be proven.
    ChainCheckpoints,
    /// The operators' decisions on effects whose outcome was unknown (`effects.rs`): who said a
    /// retried effect happened, failed, or may run again.
    EffectMarks,
}

impl SideTable {
    pub const ALL: [SideTable; 6] = [
        SideTable::Sessions,
        SideTable::Approvals,
        SideTable::Refusals,
        SideTable::ToolPinEvents,
        SideTable::ChainCheckpoints,
        SideTable::EffectMarks,
    ];

    /// The table's name (in the ledger, and in a sink's cursor key).
    pub fn name(self) -> &'static str {
        match self {
            SideTable::Sessions => "sessions",
            SideTable::Approvals => "approvals",
            SideTable::Refusals => "refusals",
            SideTable::ToolPinEvents => "tool_pin_events",
            SideTable::ChainCheckpoints => "chain_checkpoints",
            SideTable::EffectMarks => "effect_marks",
        }
    }

    /// The columns shipped, in order; the first is the row's key within its ledger.
    pub fn columns(self) -> &'static [&'static str] {
        match self {
            SideTable::Sessions => &[
                "id",
                "client_name",
                "client_version",
                "cwd",
                "policy_hash",
                "started_at",
                "ended_at",
                "end_reason",
            ],
            SideTable::Approvals => &[
                "id",
                "session_id",
                "call_id",
                "tool",
                "requested_at",
                "resolved_at",
                "outcome",
                "operator",
                "note",
                "rule_written",
            ],
            SideTable::Refusals => &[
                "id",
                "minute",
                "first_at",
                "last_at",
                "count",
                "status",
                "code",
                "method",
                "path",
                "peer",
                "origin",
                "host",
                "user_agent",
            ],
            SideTable::ToolPinEvents => {
                &["id", "at", "server", "tool", "kind", "digest", "definition", "operator"]
            }
            SideTable::ChainCheckpoints => {
                &["id", "count", "record_id", "head", "at", "writer_id", "why", "public_key", "signature"]
            }
            SideTable::EffectMarks => &["id", "at", "agent", "key", "call_id", "outcome", "operator", "note"],
        }
    }

    /// What orders the table's changes: the change clock's stamp, or the id of a table only appended to.
    fn cursor_column(self) -> &'static str {
        match self {
            SideTable::Sessions | SideTable::Approvals | SideTable::Refusals => "changed",
            SideTable::ToolPinEvents | SideTable::ChainCheckpoints | SideTable::EffectMarks => "id",
        }
    }
}

/// One changed row: where it stands in its table's order, and its columns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideRow {
    pub cursor: i64,
    pub row: Map<String, Value>,
}

impl LedgerReader {
    /// Up to `limit` rows of `table` changed after `after`, in change order (a row changed twice since
    /// shows once, as it is now).
    pub fn side_rows(
        &self,
        table: SideTable,
        after: i64,
        limit: usize,
    ) -> Result<Vec<SideRow>, LedgerStoreError> {
        let cursor = table.cursor_column();
        let sql = format!(
            "SELECT {cursor}, {} FROM {} WHERE {cursor} > ?1 ORDER BY {cursor} LIMIT ?2",
            table.columns().join(", "),
            table.name()
        );
        let mut stmt = self.conn.prepare_cached(&sql).at(self.path())?;
        let rows = stmt
            .query_map([after, i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                let mut row = Map::new();
                for (i, column) in table.columns().iter().enumerate() {
                    row.insert((*column).to_owned(), json_of(r.get_ref(i + 1)?));
                }
                Ok(SideRow { cursor: r.get(0)?, row })
            })
            .at(self.path())?
            .collect::<Result<Vec<_>, _>>()
            .at(self.path())?;
        Ok(rows)
    }

    /// Where `table`'s changes stand now (0 when it has none): how far [`LedgerReader::side_rows`] goes.
    pub fn side_head(&self, table: SideTable) -> Result<i64, LedgerStoreError> {
        let sql = format!("SELECT coalesce(max({}), 0) FROM {}", table.cursor_column(), table.name());
        self.conn.query_row(&sql, [], |r| r.get(0)).at(self.path())
    }

    /// The ledger's own id, made with the file: a team ledger tells ledgers apart by it.
    pub fn ledger_id(&self) -> Result<String, LedgerStoreError> {
        self.conn
            .query_row("SELECT ledger_id FROM ledger_identity WHERE id = 1", [], |r| r.get(0))
            .at(self.path())
    }
}

fn json_of(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => Value::from(f),
        ValueRef::Text(t) => Value::from(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::from(b.iter().map(|byte| format!("{byte:02x}")).collect::<String>()),
    }
}
