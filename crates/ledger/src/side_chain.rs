//! The side chain: the rows that tell what happened besides the records (sessions, approvals, refusals,
//! tool-definition events, effect marks, and the chain's own marks) under a hash chain of their own, so
//! an invented approval or a rewritten session fails `ledger verify`. Each time the indexer writes such
//! a row (in the same transaction), it appends a step: the table, the row's key and the SHA-256 of the
//! row's columns as they now are, linked to the step before. Rows change (a session ends, a refusal's
//! minute counts on): each change is a step, and a row must match its latest one. The side chain's head
//! is signed in side checkpoints (`side_checkpoints`, beside the records' checkpoints, which exports and
//! team ledgers carry unchanged). Rows from before the side chain existed were taken into it when the
//! ledger was migrated, marked `legacy`: proven from then on, not before.

use crate::chain::{Link, to_link};
use crate::key::LedgerKey;
use crate::row_bytes;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

/// A table whose rows are chained: its name, the column that keys a row, and the columns hashed (every
/// column but the change clock's `changed`, which moves whenever a row is shipped-visible).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainedTable {
    pub name: &'static str,
    pub key: &'static str,
    pub columns: &'static [&'static str],
    /// How a person names one of its rows, in a break's message.
    pub row_word: &'static str,
}

/// Every chained table, in the order a verifier checks them.
pub const CHAINED_TABLES: [ChainedTable; 6] = [
    ChainedTable {
        name: "sessions",
        key: "id",
        columns: &[
            "id",
            "client_name",
            "client_version",
            "cwd",
            "policy_hash",
            "started_at",
            "ended_at",
            "end_reason",
        ],
        row_word: "session",
    },
    ChainedTable {
        name: "approvals",
        key: "id",
        columns: &[
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
            "receipt",
        ],
        row_word: "approval",
    },
    ChainedTable {
        name: "refusals",
        key: "id",
        columns: &[
            "id",
            "minute",
            "key",
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
        row_word: "refusal row",
    },
    ChainedTable {
        name: "tool_pin_events",
        key: "id",
        columns: &["id", "at", "server", "tool", "kind", "digest", "definition", "operator"],
        row_word: "tool-definition event",
    },
    ChainedTable {
        name: "effect_marks",
        key: "id",
        columns: &["id", "at", "agent", "key", "call_id", "outcome", "operator", "note"],
        row_word: "effect mark",
    },
    ChainedTable {
        name: "chain_marks",
        key: "id",
        columns: &[
            "id",
            "at",
            "writer_id",
            "kind",
            "first_position",
            "last_position",
            "first_record",
            "message",
        ],
        row_word: "chain mark",
    },
];

/// The chained table named `name`.
pub fn table(name: &str) -> Option<&'static ChainedTable> {
    CHAINED_TABLES.iter().find(|t| t.name == name)
}

/// Where the side chain stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SideHead {
    pub count: u64,
    pub link: Link,
}

/// The link before the first step of the ledger `ledger_id`'s side chain.
pub fn genesis(ledger_id: &str) -> Link {
    let mut hash = Sha256::new();
    hash.update(b"portcullis-ledger-side-chain-v1\0");
    hash.update(ledger_id.as_bytes());
    hash.finalize().into()
}

/// The link of a step (`table`, `key`, the row's `digest`) after `previous`.
pub fn step_link(previous: &Link, table: &str, key: &str, digest: &Link) -> Link {
    let mut bytes = Vec::with_capacity(48 + table.len() + key.len());
    row_bytes::put_str(&mut bytes, table);
    row_bytes::put_str(&mut bytes, key);
    bytes.extend_from_slice(digest);
    crate::chain::link(previous, &bytes)
}

/// The SHA-256 of a row's `columns` columns from column `first`: each as a type byte and its value
/// (NULL 0; integer 1, 8 bytes LE; real 2, its bits; text 3 and blob 4, length-prefixed).
pub fn row_digest(row: &rusqlite::Row<'_>, first: usize, columns: usize) -> rusqlite::Result<Link> {
    let mut bytes = Vec::with_capacity(256);
    for i in first..first + columns {
        match row.get_ref(i)? {
            ValueRef::Null => bytes.push(0),
            ValueRef::Integer(v) => {
                bytes.push(1);
                row_bytes::put_i64(&mut bytes, v);
            }
            ValueRef::Real(v) => {
                bytes.push(2);
                bytes.extend_from_slice(&v.to_bits().to_le_bytes());
            }
            ValueRef::Text(t) => {
                bytes.push(3);
                bytes.extend_from_slice(&(t.len() as u64).to_le_bytes());
                bytes.extend_from_slice(t);
            }
            ValueRef::Blob(b) => {
                bytes.push(4);
                bytes.extend_from_slice(&(b.len() as u64).to_le_bytes());
                bytes.extend_from_slice(b);
            }
        }
    }
    Ok(Sha256::digest(&bytes).into())
}

/// The select of a chained table's rows: the key (as text) first, then the hashed columns.
pub(crate) fn select_rows(table: &ChainedTable) -> String {
    format!("SELECT CAST({} AS TEXT), {} FROM {}", table.key, table.columns.join(", "), table.name)
}

/// The side chain's head as the file records it.
pub(crate) fn head(conn: &Connection) -> rusqlite::Result<SideHead> {
    let (count, link) = conn.query_row("SELECT count, head FROM side_chain_state WHERE id = 1", [], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, Option<Vec<u8>>>(1)?))
    })?;
    let link = match link {
        Some(bytes) => to_link(&bytes),
        None => genesis(&crate::chain::ledger_id(conn)?),
    };
    Ok(SideHead { count: count.max(0) as u64, link })
}

/// Appends a step for the row of `table` keyed `key` as it now is (nothing when there is no such row).
/// Called in the transaction that wrote the row.
pub(crate) fn chain_row(conn: &Connection, table: &ChainedTable, key: &str) -> rusqlite::Result<()> {
    chain_row_as(conn, table, key, false)
}

fn chain_row_as(conn: &Connection, table: &ChainedTable, key: &str, legacy: bool) -> rusqlite::Result<()> {
    let sql = format!("SELECT {} FROM {} WHERE {} = ?1", table.columns.join(", "), table.name, table.key);
    let digest =
        conn.prepare_cached(&sql)?.query_row([key], |r| row_digest(r, 0, table.columns.len())).optional()?;
    let Some(digest) = digest else { return Ok(()) };
    let mut head = head(conn)?;
    head.link = step_link(&head.link, table.name, key, &digest);
    head.count += 1;
    conn.prepare_cached(
        "INSERT INTO side_chain (tbl, row_key, digest, link, legacy) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![table.name, key, &digest[..], &head.link[..], legacy])?;
    conn.prepare_cached("UPDATE side_chain_state SET count = ?1, head = ?2 WHERE id = 1")?
        .execute(params![head.count as i64, &head.link[..]])?;
    Ok(())
}

/// The migration's step: every row the side tables already hold is taken into the chain as it is
/// (marked `legacy`: written before rows were chained).
pub(crate) fn backfill(tx: &Connection) -> rusqlite::Result<()> {
    for table in &CHAINED_TABLES {
        let keys: Vec<String> = {
            let sql = format!("SELECT CAST({} AS TEXT) FROM {} ORDER BY rowid", table.key, table.name);
            let mut stmt = tx.prepare(&sql)?;
            stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?
        };
        for key in keys {
            chain_row_as(tx, table, &key, true)?;
        }
    }
    Ok(())
}

/// The bytes a side checkpoint's signature is over.
pub fn side_seal_message(ledger_id: &str, count: u64, head: &Link, at: i64, writer_id: i64) -> Vec<u8> {
    crate::seal::message_in(b"portcullis-ledger-side-seal-v1\0", ledger_id, count, head, at, writer_id)
}

/// Seals the side chain as the file has it, when steps came since its last side checkpoint (signed, if
/// this writer signs). Returns whether it wrote one.
pub(crate) fn seal_side(
    conn: &Connection,
    key: Option<&LedgerKey>,
    writer_id: i64,
    at: i64,
) -> rusqlite::Result<bool> {
    let head = head(conn)?;
    let sql = if key.is_some() {
        "SELECT max(count) FROM side_checkpoints WHERE signature IS NOT NULL"
    } else {
        "SELECT max(count) FROM side_checkpoints"
    };
    let sealed: Option<i64> = conn.query_row(sql, [], |r| r.get(0))?;
    if head.count == 0 || head.count <= sealed.unwrap_or(0).max(0) as u64 {
        return Ok(false);
    }
    let ledger_id = crate::chain::ledger_id(conn)?;
    let (public, signature) = match key {
        Some(key) => (
            Some(*key.public().as_bytes()),
            Some(key.sign(&side_seal_message(&ledger_id, head.count, &head.link, at, writer_id))),
        ),
        None => (None, None),
    };
    conn.prepare_cached(
        "INSERT INTO side_checkpoints (count, head, at, writer_id, public_key, signature)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        head.count as i64,
        &head.link[..],
        at,
        writer_id,
        public.as_ref().map(|k| &k[..]),
        signature.as_ref().map(|s| &s[..]),
    ])?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per chained table: its hashed columns are every column the table has but `changed`
    /// (a column added to a side table and left out here would be unproven).
    #[test]
    fn each_chained_table_hashes_every_column_but_the_change_clock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.db");
        let mut conn = Connection::open(&path).unwrap();
        crate::schema::migrate(&mut conn, 0, crate::schema::SCHEMA_VERSION).unwrap();
        for table in &CHAINED_TABLES {
            let mut stmt = conn.prepare(&format!("PRAGMA table_info({})", table.name)).unwrap();
            let columns: Vec<String> = stmt
                .query_map([], |r| r.get::<_, String>(1))
                .unwrap()
                .map(Result::unwrap)
                .filter(|c| c != "changed")
                .collect();
            assert_eq!(columns, table.columns, "{}", table.name);
            assert!(table.columns.contains(&table.key), "{}", table.name);
        }
    }

    #[test]
    fn a_changed_column_changes_the_digest_and_the_link() {
        let conn = Connection::open_in_memory().unwrap();
        let digest = |sql: &str| conn.query_row(sql, [], |r| row_digest(r, 0, 3)).unwrap();
        let a = digest("SELECT 1, 'alice', NULL");
        assert_eq!(a, digest("SELECT 1, 'alice', NULL"));
        for other in [
            "SELECT 1, 'mallory', NULL",
            "SELECT 2, 'alice', NULL",
            "SELECT 1, 'alice', ''",
            "SELECT '1', 'alice', NULL",
        ] {
            assert_ne!(a, digest(other), "{other}");
        }
        let g = genesis("ledger");
        assert_ne!(step_link(&g, "approvals", "1", &a), step_link(&g, "approvals", "2", &a));
        assert_ne!(step_link(&g, "approvals", "1", &a), step_link(&g, "sessions", "1", &a));
        assert_ne!(genesis("ledger"), genesis("other"));
    }
}
