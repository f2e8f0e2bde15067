//! `ledger verify` over the side chain (`side_chain.rs`): every step's link, every side checkpoint's
//! signature, and every row of the chained tables against the latest step that recorded it. A row no
//! step recorded was inserted, one that differs from its step was edited, a step whose row is gone had
//! its row deleted; each break names the table and the row.

use crate::chain::{Link, to_link};
use crate::key::LedgerPublicKey;
use crate::side_chain::{self, CHAINED_TABLES};
use crate::verify_report::BreakKind;
use rusqlite::Connection;
use std::collections::HashMap;

/// One side break: its kind, its place in the side chain (when it has one) and what it says.
pub(crate) type SideBreak = (BreakKind, Option<u64>, String);

/// What the side chain's verification found.
#[derive(Debug, Default)]
pub(crate) struct SideReport {
    /// Steps in the side chain.
    pub chained: u64,
    /// Of them, covered by a side checkpoint signed with the key (0 without a key).
    pub sealed: u64,
    /// Rows whose latest step was taken in when the ledger was migrated (written before rows were
    /// chained: not proven before then).
    pub legacy: u64,
    pub checkpoints_valid: u64,
    pub breaks: Vec<SideBreak>,
}

impl SideReport {
    pub(crate) fn unsealed(&self) -> u64 {
        self.chained.saturating_sub(self.sealed)
    }
}

struct SideSeal {
    id: i64,
    count: u64,
    head: Link,
    at: i64,
    /// Signed with the key over what it says (`None`: unsigned, or no key to check with).
    valid: Option<bool>,
    other_key: bool,
}

fn read_seals(
    conn: &Connection,
    key: Option<&LedgerPublicKey>,
    ledger_id: &str,
) -> rusqlite::Result<Vec<SideSeal>> {
    let mut stmt = conn.prepare(
        "SELECT id, count, head, at, writer_id, public_key, signature FROM side_checkpoints ORDER BY count, id",
    )?;
    let rows = stmt.query_map([], |r| {
        let count = r.get::<_, i64>(1)?.max(0) as u64;
        let head = to_link(&r.get::<_, Vec<u8>>(2)?);
        let at: i64 = r.get(3)?;
        let writer_id: i64 = r.get(4)?;
        let public: Option<Vec<u8>> = r.get(5)?;
        let signature: Option<Vec<u8>> = r.get(6)?;
        let (valid, other_key) = match (key, public, signature) {
            (Some(key), Some(public), Some(signature)) => {
                if public != key.as_bytes() {
                    (Some(false), true)
                } else {
                    let message = side_chain::side_seal_message(ledger_id, count, &head, at, writer_id);
                    (Some(key.verifies(&message, &signature)), false)
                }
            }
            _ => (None, false),
        };
        Ok(SideSeal { id: r.get(0)?, count, head, at, valid, other_key })
    })?;
    rows.collect()
}

fn when(at: i64) -> String {
    crate::timefmt::format_rfc3339(portcullis_harness::Timestamp(at))
}

/// Verifies the side chain of the ledger `conn` reads (see the module's doc). `running`: a writer
/// holds the ledger (its newest steps may wait for their checkpoint).
pub(crate) fn verify_side(
    conn: &Connection,
    key: Option<&LedgerPublicKey>,
    ledger_id: &str,
    running: bool,
) -> rusqlite::Result<SideReport> {
    let seals = read_seals(conn, key, ledger_id)?;
    let mut report = SideReport::default();
    let mut next_seal = 0;
    let mut head = side_chain::genesis(ledger_id);
    // The latest step of each row: (table, key) -> (digest, legacy, position).
    let mut latest: HashMap<(String, String), (Link, bool, u64)> = HashMap::new();
    {
        let mut stmt =
            conn.prepare("SELECT tbl, row_key, digest, link, legacy FROM side_chain ORDER BY id")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let table: String = row.get(0)?;
            let key: String = row.get(1)?;
            let digest = to_link(&row.get::<_, Vec<u8>>(2)?);
            let stored = to_link(&row.get::<_, Vec<u8>>(3)?);
            let legacy: bool = row.get(4)?;
            report.chained += 1;
            let position = report.chained;
            if side_chain::step_link(&head, &table, &key, &digest) != stored {
                report.breaks.push((
                    BreakKind::Changed,
                    Some(position),
                    format!(
                        "side entry {position} (the {table} row {key:?}) does not match its link in the side chain: it was edited, inserted or moved"
                    ),
                ));
            }
            head = stored;
            while let Some(seal) = seals.get(next_seal).filter(|s| s.count == position) {
                next_seal += 1;
                if seal.head != head {
                    report.breaks.push((
                        BreakKind::SealMismatch,
                        Some(position),
                        format!(
                            "side checkpoint {} (at {}) sealed the side chain up to entry {position}, and the entries up to it no longer hash to what it signed",
                            seal.id,
                            when(seal.at)
                        ),
                    ));
                } else if seal.valid == Some(true) {
                    report.checkpoints_valid += 1;
                    if report.breaks.is_empty() {
                        report.sealed = position;
                    }
                } else if seal.valid == Some(false) {
                    let why = if seal.other_key {
                        "it is signed with another key: re-signed"
                    } else {
                        "its signature does not verify: the checkpoint was altered"
                    };
                    report.breaks.push((
                        BreakKind::SealSignature,
                        Some(position),
                        format!("side checkpoint {} (sealing up to side entry {position}): {why}", seal.id),
                    ));
                }
            }
            latest.insert((table, key), (digest, legacy, position));
        }
    }
    for seal in &seals[next_seal..] {
        if seal.valid == Some(true) {
            report.breaks.push((
                BreakKind::Truncated,
                Some(report.chained + 1),
                format!(
                    "side checkpoint {} signed at {} covers {} side entries; the side chain has {}: the newest were removed",
                    seal.id,
                    when(seal.at),
                    seal.count,
                    report.chained
                ),
            ));
        }
    }
    for table in &CHAINED_TABLES {
        let mut stmt = conn.prepare(&side_chain::select_rows(table))?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let key: String = row.get(0)?;
            // The hashed columns follow the key.
            let digest = side_chain::row_digest(row, 1, table.columns.len())?;
            let word = table.row_word;
            match latest.remove(&(table.name.to_owned(), key.clone())) {
                None => report.breaks.push((
                    BreakKind::Unlinked,
                    None,
                    format!(
                        "the {word} {key:?} ({} row) is in no entry of the side chain: it was inserted into the file",
                        table.name
                    ),
                )),
                Some((recorded, legacy, position)) => {
                    if recorded != digest {
                        report.breaks.push((
                            BreakKind::Changed,
                            Some(position),
                            format!(
                                "the {word} {key:?} ({} row) does not match what side entry {position} recorded for it: it was edited",
                                table.name
                            ),
                        ));
                    } else if legacy {
                        report.legacy += 1;
                    }
                }
            }
        }
    }
    // The marks of tails a writer could not prove when it opened the ledger: reported as they are.
    {
        let mut stmt = conn.prepare("SELECT first_position, message FROM chain_marks ORDER BY id")?;
        let marks = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
        for mark in marks {
            let (first, message) = mark?;
            report.breaks.push((BreakKind::Unproven, Some(first.max(0) as u64), message));
        }
    }
    let mut gone: Vec<_> = latest.into_iter().collect();
    gone.sort_by_key(|(_, (_, _, position))| *position);
    for ((table, key), (_, _, position)) in gone {
        let word = side_chain::table(&table).map(|t| t.row_word).unwrap_or("row");
        report.breaks.push((
            BreakKind::Deleted,
            Some(position),
            format!(
                "the {word} {key:?} ({table} row) that side entry {position} recorded is gone: it was deleted"
            ),
        ));
    }
    let unsealed = report.unsealed();
    if key.is_some() && unsealed > 0 && report.breaks.is_empty() && !running {
        report.breaks.push((
            BreakKind::Unsealed,
            Some(report.sealed + 1),
            format!(
                "the last {unsealed} side entries (sessions, approvals, refusals, tool-definition events, effect marks) are covered by no side checkpoint signed with the key, and no writer holds the ledger"
            ),
        ));
    }
    Ok(report)
}
