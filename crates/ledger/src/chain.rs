//! The ledger's hash chain: every record carries `SHA-256(previous link || the record's canonical
//! bytes)`, so an edited, deleted, inserted or reordered record breaks every link after it. The canonical
//! bytes are the journal's own encoding of the record's columns (what the appender already wrote),
//! preceded by the writer's id: the appender hashes the bytes it journals, and a verifier re-encodes the
//! same bytes from the row's columns. The chain starts from a link made of the ledger's id, so no other
//! ledger's records can be spliced in.

use crate::row_bytes::{self, RowRef};
use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

/// One link of the chain.
pub type Link = [u8; 32];

/// The kind byte of `interrupted` records in the canonical bytes (the journal never holds one: they are
/// written in SQLite at recovery and close); the other kinds use the journal's bytes.
const INTERRUPTED_KIND: u8 = 5;

/// The link before the first chained record of the ledger `ledger_id`.
pub fn genesis(ledger_id: &str) -> Link {
    let mut hash = Sha256::new();
    hash.update(b"portcullis-ledger-chain-v1\0");
    hash.update(ledger_id.as_bytes());
    hash.finalize().into()
}

/// The link of a record whose canonical bytes are `canonical`, after `previous`.
pub fn link(previous: &Link, canonical: &[u8]) -> Link {
    let mut hash = Sha256::new();
    hash.update(previous);
    hash.update(canonical);
    hash.finalize().into()
}

/// The `records` columns the canonical bytes are made of, in their order.
pub const CHAINED_COLUMNS: &str = "writer_id, session_id, run_id, call_id, call_key, owner, tool, kind, at, \
started_at, duration_us, reason, error_code, decided_by, decided_rule, decided_source, decided_operator, \
policy_decision, policy_rule, redacted, body";

/// How each of [`CHAINED_COLUMNS`] is encoded (the journal's encoding of its field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    I64,
    OptI64,
    Str,
    OptStr,
    /// The kind's name, as the journal's kind byte (`interrupted`: [`INTERRUPTED_KIND`]).
    Kind,
    Bool,
}

const ENCODINGS: [Encoding; 21] = {
    use Encoding::*;
    [
        I64, Str, Str, Str, I64, Str, Str, Kind, I64, OptI64, OptI64, OptStr, OptStr, Str, OptStr, OptStr,
        OptStr, OptStr, OptStr, Bool, Str,
    ]
};

/// Why a row's canonical bytes could not be made (only in a changed file: a column of the wrong type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotCanonical {
    pub column: &'static str,
}

fn column_name(i: usize) -> &'static str {
    CHAINED_COLUMNS.split(", ").nth(i).map(str::trim).unwrap_or("?")
}

fn kind_byte_named(name: &str) -> Option<u8> {
    if name == "interrupted" { Some(INTERRUPTED_KIND) } else { row_bytes::kind_byte_of(name) }
}

/// One column's value, as SQLite or an export holds it.
enum Cell<'a> {
    Null,
    Int(i64),
    Text(&'a str),
}

fn encode_cell(out: &mut Vec<u8>, i: usize, cell: Cell<'_>) -> Result<(), NotCanonical> {
    let bad = || NotCanonical { column: column_name(i) };
    match (ENCODINGS[i], cell) {
        (Encoding::I64, Cell::Int(v)) => row_bytes::put_i64(out, v),
        (Encoding::OptI64, Cell::Int(v)) => row_bytes::put_opt_i64(out, Some(v)),
        (Encoding::OptI64 | Encoding::OptStr, Cell::Null) => out.push(0),
        (Encoding::Str, Cell::Text(s)) => row_bytes::put_str(out, s),
        (Encoding::OptStr, Cell::Text(s)) => row_bytes::put_opt_str(out, Some(s)),
        (Encoding::Kind, Cell::Text(s)) => out.push(kind_byte_named(s).ok_or_else(bad)?),
        (Encoding::Bool, Cell::Int(v)) if v == 0 || v == 1 => out.push(v as u8),
        _ => return Err(bad()),
    }
    if i == 0 {
        out.push(row_bytes::TAG_RECORD);
    }
    Ok(())
}

/// The canonical bytes of a row whose [`CHAINED_COLUMNS`] start at column `first` (appended to `out`).
pub fn canonical_from_sql(
    row: &rusqlite::Row<'_>,
    first: usize,
    out: &mut Vec<u8>,
) -> rusqlite::Result<Result<(), NotCanonical>> {
    use rusqlite::types::ValueRef;
    for i in 0..ENCODINGS.len() {
        let cell = match row.get_ref(first + i)? {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(v) => Cell::Int(v),
            ValueRef::Text(t) => match std::str::from_utf8(t) {
                Ok(s) => Cell::Text(s),
                Err(_) => return Ok(Err(NotCanonical { column: column_name(i) })),
            },
            ValueRef::Real(_) | ValueRef::Blob(_) => return Ok(Err(NotCanonical { column: column_name(i) })),
        };
        if let Err(e) = encode_cell(out, i, cell) {
            return Ok(Err(e));
        }
    }
    Ok(Ok(()))
}

/// The canonical bytes of a row given as JSON values in [`CHAINED_COLUMNS`] order (an export's).
pub fn canonical_from_json(values: &[serde_json::Value], out: &mut Vec<u8>) -> Result<(), NotCanonical> {
    use serde_json::Value;
    if values.len() != ENCODINGS.len() {
        return Err(NotCanonical { column: "(the number of columns)" });
    }
    for (i, value) in values.iter().enumerate() {
        let cell = match value {
            Value::Null => Cell::Null,
            Value::Number(n) => Cell::Int(n.as_i64().ok_or(NotCanonical { column: column_name(i) })?),
            Value::Bool(b) => Cell::Int(i64::from(*b)),
            Value::String(s) => Cell::Text(s),
            _ => return Err(NotCanonical { column: column_name(i) }),
        };
        encode_cell(out, i, cell)?;
    }
    Ok(())
}

/// The columns a record is read with together with its proof: [`RECORD_COLUMNS`](crate::row::RECORD_COLUMNS),
/// its link, then its [`CHAINED_COLUMNS`]. Exports and the tail read records so.
pub(crate) fn linked_record_columns() -> String {
    format!("{}, chain, {CHAINED_COLUMNS}", crate::row::RECORD_COLUMNS)
}

/// A chained record's link and canonical columns (as JSON values).
pub(crate) type Proof = (Link, Vec<serde_json::Value>);

/// A record and, when it is chained, its proof, from a row selected with [`linked_record_columns`].
pub(crate) fn linked_record(
    row: &rusqlite::Row<'_>,
) -> rusqlite::Result<(crate::row::StoredRecord, Option<Proof>)> {
    /// Where the link is: right after the record's own columns.
    const LINK: usize = 16;
    let record = crate::row::stored_record(row)?;
    let proof = match row.get_ref(LINK)? {
        rusqlite::types::ValueRef::Blob(link) => Some((to_link(link), columns_as_json(row, LINK + 1)?)),
        _ => None,
    };
    Ok((record, proof))
}

/// A row's [`CHAINED_COLUMNS`] as JSON values (what an export carries to be verified).
pub fn columns_as_json(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Vec<serde_json::Value>> {
    use rusqlite::types::ValueRef;
    use serde_json::Value;
    (0..ENCODINGS.len())
        .map(|i| {
            Ok(match row.get_ref(first + i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(v) => Value::from(v),
                ValueRef::Real(v) => Value::from(v),
                ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
            })
        })
        .collect()
}

/// The canonical bytes of a record read back from a journal frame: the same bytes
/// `prepared::write_columns` journaled (a unit test holds them equal), after the writer id.
pub(crate) fn canonical_of_ref(out: &mut Vec<u8>, writer_id: i64, row: &RowRef<'_>) {
    row_bytes::put_i64(out, writer_id);
    out.push(row_bytes::TAG_RECORD);
    row_bytes::put_str(out, row.session_id);
    row_bytes::put_str(out, row.run_id);
    row_bytes::put_str(out, row.call_id);
    row_bytes::put_i64(out, row.call_key);
    row_bytes::put_str(out, row.owner);
    row_bytes::put_str(out, row.tool);
    out.push(row_bytes::kind_byte(row.kind));
    row_bytes::put_i64(out, row.at);
    row_bytes::put_opt_i64(out, row.started_at);
    row_bytes::put_opt_i64(out, row.duration_us);
    row_bytes::put_opt_str(out, row.reason);
    row_bytes::put_opt_str(out, row.error_code);
    row_bytes::put_str(out, row.decided);
    row_bytes::put_opt_str(out, row.decided_rule);
    row_bytes::put_opt_str(out, row.decided_source);
    row_bytes::put_opt_str(out, row.decided_operator);
    row_bytes::put_opt_str(out, row.policy_decision);
    row_bytes::put_opt_str(out, row.policy_rule);
    out.push(u8::from(row.redacted));
    row_bytes::put_str(out, row.body);
}

/// Where the chain stands: how many records it holds and the last link (`chain_state`, written in the
/// same transaction as the rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainHead {
    pub count: u64,
    pub link: Link,
}

/// The chain's head as the file records it.
pub(crate) fn head(conn: &Connection) -> rusqlite::Result<ChainHead> {
    let (count, link) = conn.query_row("SELECT count, head FROM chain_state WHERE id = 1", [], |r| {
        Ok((r.get::<_, i64>(0)? as u64, r.get::<_, Option<Vec<u8>>>(1)?))
    })?;
    let link = match link {
        Some(bytes) => to_link(&bytes),
        // No record chained yet: the chain starts from the ledger's id.
        None => genesis(&ledger_id(conn)?),
    };
    Ok(ChainHead { count, link })
}

pub(crate) fn set_head(conn: &Connection, head: &ChainHead) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE chain_state SET count = ?1, head = ?2 WHERE id = 1")?
        .execute(params![head.count as i64, &head.link[..]])?;
    Ok(())
}

/// 32 bytes as a link (shorter or longer values, only in a damaged file, become a link no record has).
pub fn to_link(bytes: &[u8]) -> Link {
    let mut link = [0u8; 32];
    if bytes.len() == 32 {
        link.copy_from_slice(bytes);
    } else {
        link = [0xff; 32];
    }
    link
}

/// The ledger's id (what the chain starts from and checkpoints name).
pub(crate) fn ledger_id(conn: &Connection) -> rusqlite::Result<String> {
    conn.query_row("SELECT ledger_id FROM ledger_identity WHERE id = 1", [], |r| r.get(0))
}

/// Chains the records SQLite itself wrote after record `after` (the `interrupted` records of recovery
/// and close), in id order, moving `head` on and saving it. Returns how many were chained.
pub(crate) fn chain_rows_after(conn: &Connection, after: i64, head: &mut ChainHead) -> rusqlite::Result<u64> {
    let mut links: Vec<(i64, Link)> = Vec::new();
    {
        let mut stmt = conn.prepare(&format!(
            "SELECT id, {CHAINED_COLUMNS} FROM records WHERE id > ?1 AND chain IS NULL ORDER BY id"
        ))?;
        let mut rows = stmt.query([after])?;
        let mut bytes = Vec::new();
        while let Some(row) = rows.next()? {
            bytes.clear();
            // Rows SQLite just wrote from chained ones: always canonical.
            if canonical_from_sql(row, 1, &mut bytes)?.is_err() {
                continue;
            }
            head.link = link(&head.link, &bytes);
            head.count += 1;
            links.push((row.get(0)?, head.link));
        }
    }
    let mut update = conn.prepare_cached("UPDATE records SET chain = ?1 WHERE id = ?2")?;
    for (id, link) in &links {
        update.execute(params![&link[..], id])?;
    }
    if !links.is_empty() {
        set_head(conn, head)?;
    }
    Ok(links.len() as u64)
}

/// The highest record id, 0 when there is none.
pub(crate) fn last_record_id(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT coalesce(max(id), 0) FROM records", [], |r| r.get(0))
}

/// The count of the last checkpoint (0 when none); `signed`: of the last signed one.
pub(crate) fn last_checkpoint_count(conn: &Connection, signed: bool) -> rusqlite::Result<u64> {
    let sql = if signed {
        "SELECT max(count) FROM chain_checkpoints WHERE signature IS NOT NULL"
    } else {
        "SELECT max(count) FROM chain_checkpoints"
    };
    let count: Option<i64> = conn.query_row(sql, [], |r| r.get(0)).optional()?.flatten();
    Ok(count.unwrap_or(0) as u64)
}

#[cfg(test)]
#[path = "chain_tests.rs"]
mod tests;
