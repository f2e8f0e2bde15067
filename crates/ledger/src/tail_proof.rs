//! The journal as the proof of the records no signed checkpoint covers yet. The journal holds every
//! record of its epoch as the appender wrote it (its canonical bytes and link), and the appender never
//! empties it while records are unsealed; so the records SQLite holds after the last signed checkpoint
//! must be the journal's, byte for byte. A writer opening a ledger another writer left unsealed checks
//! that before it seals anything (and marks what it cannot prove, `chain_marks`); `ledger verify`
//! checks it too, so it names the first record changed, not the next one the hub wrote after it.

use crate::chain::{self, CHAINED_COLUMNS, Link};
use crate::journal;
use crate::wire::{self, Decoded};
use rusqlite::Connection;
use std::path::Path;

/// The records of the journal's current epoch, in order: canonical bytes and link.
pub(crate) struct JournalCopy {
    records: Vec<(Vec<u8>, Link)>,
    /// The chain position of the first, found by [`JournalCopy::anchor`].
    first: Option<u64>,
}

impl JournalCopy {
    /// Reads the journal beside `ledger` (every whole frame of its epoch, indexed or not). A missing,
    /// foreign or unchained journal holds no copy.
    pub(crate) fn read(ledger: &Path) -> JournalCopy {
        let mut records = Vec::new();
        if let Ok(found) = journal::unindexed(&journal::path_of(ledger), 0, 0)
            && found.chained
        {
            for frame in &found.frames {
                let mut reader = wire::Reader::new(&frame.entries);
                while !reader.is_empty() {
                    match reader.entry() {
                        Ok(Decoded::Record(row)) => {
                            let mut bytes = Vec::new();
                            chain::canonical_of_ref(&mut bytes, frame.writer_id, &row);
                            if let Some(link) = row.chain {
                                records.push((bytes, *link));
                            }
                        }
                        Ok(Decoded::Other(_)) => {}
                        Err(_) => break,
                    }
                }
            }
        }
        JournalCopy { records, first: None }
    }

    /// Finds where the journal's first record is in the chain: after the chained record (or the
    /// genesis) whose link it follows. Searches from the newest record back (the journal holds the
    /// newest). Returns the position of the journal's first record.
    pub(crate) fn anchor(&mut self, conn: &Connection) -> rusqlite::Result<Option<u64>> {
        let Some((bytes, link)) = self.records.first() else { return Ok(None) };
        let count: i64 =
            conn.query_row("SELECT count(*) FROM records WHERE chain IS NOT NULL", [], |r| r.get(0))?;
        let mut position = count.max(0) as u64;
        let mut stmt = conn.prepare("SELECT chain FROM records WHERE chain IS NOT NULL ORDER BY id DESC")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let previous = chain::to_link(&row.get::<_, Vec<u8>>(0)?);
            if chain::link(&previous, bytes) == *link {
                self.first = Some(position + 1);
                return Ok(self.first);
            }
            position = position.saturating_sub(1);
        }
        if chain::link(&chain::genesis(&chain::ledger_id(conn)?), bytes) == *link {
            self.first = Some(1);
        }
        Ok(self.first)
    }

    /// The journal's copy of the record at chain `position`, if it holds it (after [`Self::anchor`]).
    pub(crate) fn at(&self, position: u64) -> Option<&(Vec<u8>, Link)> {
        let first = self.first?;
        self.records.get(usize::try_from(position.checked_sub(first)?).ok()?)
    }
}

/// What checking the unsealed tail against the journal found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TailProof {
    /// No record after the last signed checkpoint, or every one matches the journal.
    Proven,
    /// From chain position `first` (record id `first_record`) to `last`, the records are not proven.
    Unproven { first: u64, last: u64, first_record: i64, why: String },
}

/// Checks the records after the last checkpoint (signed, when `signed`) against the journal beside
/// `ledger` (see the module's doc). Called before the journal is replayed and emptied.
pub(crate) fn check_unsealed_tail(
    conn: &Connection,
    ledger: &Path,
    signed: bool,
) -> rusqlite::Result<TailProof> {
    // A ledger never sealed with a key (written by writers without one) is held to its checkpoints.
    let has_signed: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM chain_checkpoints WHERE signature IS NOT NULL)",
        [],
        |r| r.get(0),
    )?;
    let filter = if signed && has_signed { "WHERE signature IS NOT NULL" } else { "" };
    let (sealed, sealed_record): (i64, i64) = conn.query_row(
        &format!(
            "SELECT coalesce(max(count), 0), coalesce((SELECT record_id FROM chain_checkpoints {filter}
                 ORDER BY count DESC, id DESC LIMIT 1), 0) FROM chain_checkpoints {filter}"
        ),
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let mut copy = JournalCopy::read(ledger);
    let anchored = copy.anchor(conn)?.is_some();
    let mut stmt = conn.prepare(&format!(
        "SELECT id, chain, {CHAINED_COLUMNS} FROM records WHERE id > ?1 AND chain IS NOT NULL ORDER BY id"
    ))?;
    let mut rows = stmt.query([sealed_record])?;
    let mut position = sealed.max(0) as u64;
    let mut unproven: Option<(u64, i64, String)> = None;
    let mut bytes = Vec::new();
    while let Some(row) = rows.next()? {
        position += 1;
        if unproven.is_some() {
            continue;
        }
        let id: i64 = row.get(0)?;
        let stored = chain::to_link(&row.get::<_, Vec<u8>>(1)?);
        bytes.clear();
        let canonical = chain::canonical_from_sql(row, 2, &mut bytes)?.is_ok();
        let why = match copy.at(position) {
            _ if !anchored => Some(format!(
                "the journal does not hold the records from record {id} on (it is missing, was emptied, or does not follow the chain)"
            )),
            None => Some(format!("the journal does not hold record {id}")),
            Some((journaled, link)) if !canonical || *journaled != bytes || *link != stored => Some(format!(
                "record {id} differs from the journal's copy of it (what its writer wrote): it was changed after it was written"
            )),
            Some(_) => None,
        };
        if let Some(why) = why {
            unproven = Some((position, id, why));
        }
    }
    Ok(match unproven {
        None => TailProof::Proven,
        Some((first, first_record, why)) => TailProof::Unproven { first, last: position, first_record, why },
    })
}

/// Writes the mark of a tail that could not be proven (and chains it), before the writer seals.
pub(crate) fn mark_unproven(
    conn: &Connection,
    writer_id: i64,
    at: i64,
    first: u64,
    last: u64,
    first_record: i64,
    why: &str,
) -> rusqlite::Result<()> {
    let message = format!(
        "records {first}..{last} of the chain (from record {first_record}), left unsealed by a writer that stopped, could not be proven against the journal when writer {writer_id} opened the ledger: {why}; the open checkpoint sealed them as they were"
    );
    conn.execute(
        "INSERT INTO chain_marks (at, writer_id, kind, first_position, last_position, first_record, message)
         VALUES (?1, ?2, 'tail_unproven', ?3, ?4, ?5, ?6)",
        rusqlite::params![at, writer_id, first as i64, last as i64, first_record, message],
    )?;
    let id = conn.last_insert_rowid().to_string();
    if let Some(marks) = crate::side_chain::table("chain_marks") {
        crate::side_chain::chain_row(conn, marks, &id)?;
    }
    Ok(())
}
