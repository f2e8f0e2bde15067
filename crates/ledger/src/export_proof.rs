//! The proof a JSON Lines export carries, and its verification with the public key alone. Each chained
//! record's line gets a `chain` object: its link, the link before it, its canonical columns (the exact
//! values its link hashes, in [`CHAINED_COLUMNS`](crate::chain::CHAINED_COLUMNS) order), and the signed
//! checkpoints that end at it. Lines stay records (consumers that read records are unaffected). A
//! verifier orders the records by id, checks every link, and counts a record proven when consecutive
//! links lead from it to a checkpoint signed with the key: a whole export proves every record; a
//! filtered one only its runs that end at a checkpoint.

use crate::chain::{self, Link};
use crate::error::{AtPath, LedgerStoreError};
use crate::key::LedgerPublicKey;
use crate::seal::message;
use crate::verify::{BreakKind, ChainBreak, MAX_BREAKS, Verdict, VerifyReport};
use portcullis_harness::receipt::hex;
use rusqlite::{Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

/// A checkpoint as an export carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportedSeal {
    pub ledger_id: String,
    pub count: u64,
    pub head: String,
    pub at: i64,
    pub writer_id: i64,
    pub why: String,
    pub public_key: Option<String>,
    pub signature: Option<String>,
}

/// A record's `chain` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedLink {
    pub link: String,
    pub previous: String,
    pub columns: Vec<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<ExportedSeal>,
}

/// What the exporter needs besides each row: the ledger's id and its checkpoints by the record they end
/// at.
pub(crate) struct ProofSource {
    genesis: Link,
    seals: HashMap<i64, Vec<ExportedSeal>>,
}

impl ProofSource {
    pub(crate) fn load(conn: &Connection, path: &Path) -> Result<ProofSource, LedgerStoreError> {
        let ledger_id = chain::ledger_id(conn).at(path)?;
        let mut seals: HashMap<i64, Vec<ExportedSeal>> = HashMap::new();
        let mut stmt = conn
            .prepare(
                "SELECT record_id, count, head, at, writer_id, why, public_key, signature
                 FROM chain_checkpoints ORDER BY count, id",
            )
            .at(path)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    ExportedSeal {
                        ledger_id: ledger_id.clone(),
                        count: r.get::<_, i64>(1)?.max(0) as u64,
                        head: hex(&r.get::<_, Vec<u8>>(2)?),
                        at: r.get(3)?,
                        writer_id: r.get(4)?,
                        why: r.get(5)?,
                        public_key: r.get::<_, Option<Vec<u8>>>(6)?.map(|k| hex(&k)),
                        signature: r.get::<_, Option<Vec<u8>>>(7)?.map(|s| hex(&s)),
                    },
                ))
            })
            .at(path)?;
        for row in rows {
            let (record_id, seal) = row.at(path)?;
            seals.entry(record_id).or_default().push(seal);
        }
        Ok(ProofSource { genesis: chain::genesis(&ledger_id), seals })
    }

    /// The `chain` object of record `id` whose link is `link` (`columns`: its canonical columns).
    pub(crate) fn link_of(
        &self,
        conn: &Connection,
        id: i64,
        link: &[u8],
        columns: Vec<Value>,
    ) -> rusqlite::Result<ExportedLink> {
        let previous: Option<Vec<u8>> = conn
            .prepare_cached(
                "SELECT chain FROM records WHERE id < ?1 AND chain IS NOT NULL ORDER BY id DESC LIMIT 1",
            )?
            .query_row([id], |r| r.get(0))
            .optional()?;
        Ok(ExportedLink {
            link: hex(link),
            previous: hex(previous.as_deref().unwrap_or(&self.genesis)),
            columns,
            checkpoints: self.seals.get(&id).cloned().unwrap_or_default(),
        })
    }
}

fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != N * 2 {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in text.as_bytes().chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

/// One record of the export, checked on its own.
struct Checked {
    id: i64,
    line: u64,
    link: Link,
    previous: Link,
    seals: Vec<ExportedSeal>,
}

/// The line's record id and `chain` object (none when it has none: unchained).
#[derive(Deserialize)]
struct ExportLine {
    id: i64,
    #[serde(default)]
    chain: Option<ExportedLink>,
}

/// Verifies a JSON Lines export read from `input` against `key` (see the module's doc).
pub fn verify_export(input: impl BufRead, key: &LedgerPublicKey) -> Result<VerifyReport, LedgerStoreError> {
    let mut breaks: Vec<ChainBreak> = Vec::new();
    let mut break_count = 0u64;
    let mut broke = |kind, record_id: Option<i64>, message: String| {
        break_count += 1;
        if breaks.len() < MAX_BREAKS {
            breaks.push(ChainBreak { kind, record_id, position: None, message });
        }
    };
    let mut records = Vec::new();
    let mut unchained = 0u64;
    let mut bytes = Vec::new();
    for (n, line) in input.lines().enumerate() {
        let n = n as u64 + 1;
        let line = line.map_err(|e| LedgerStoreError::Export(format!("line {n}: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: ExportLine = serde_json::from_str(&line).map_err(|e| {
            LedgerStoreError::Export(format!("line {n}: not a record of a JSONL export: {e}"))
        })?;
        let Some(proof) = parsed.chain else {
            unchained += 1;
            continue;
        };
        let (Some(link), Some(previous)) = (unhex::<32>(&proof.link), unhex::<32>(&proof.previous)) else {
            broke(
                BreakKind::Malformed,
                Some(parsed.id),
                format!("line {n}: its links are not 64 hex digits"),
            );
            continue;
        };
        bytes.clear();
        if let Err(bad) = chain::canonical_from_json(&proof.columns, &mut bytes) {
            broke(
                BreakKind::Malformed,
                Some(parsed.id),
                format!("line {n}: its column {} is not a record's", bad.column),
            );
            continue;
        }
        if chain::link(&previous, &bytes) != link {
            broke(
                BreakKind::Changed,
                Some(parsed.id),
                format!(
                    "line {n} (record {}) does not match its link: it was edited after the export",
                    parsed.id
                ),
            );
        }
        records.push(Checked { id: parsed.id, line: n, link, previous, seals: proof.checkpoints });
    }
    records.sort_by_key(|r| r.id);
    let mut sealed = 0u64;
    let mut pending = 0u64;
    let mut checkpoints = 0u64;
    let mut checkpoints_valid = 0u64;
    let mut ledger_id = String::new();
    let mut last: Option<&Checked> = None;
    for record in &records {
        if last.is_some_and(|l| l.id == record.id) {
            broke(
                BreakKind::Changed,
                Some(record.id),
                format!("line {}: record {} appears twice", record.line, record.id),
            );
            continue;
        }
        // A record that does not follow the one before it starts a new run: what was pending before the
        // gap cannot be proven by a checkpoint after it.
        if last.is_none_or(|l| l.link != record.previous) {
            pending = 0;
        }
        pending += 1;
        for seal in &record.seals {
            checkpoints += 1;
            ledger_id.clone_from(&seal.ledger_id);
            let signed = unhex::<32>(&seal.head)
                .filter(|h| *h == record.link)
                .map(|head| message(&seal.ledger_id, seal.count, &head, seal.at, seal.writer_id));
            let signature = seal.signature.as_deref().and_then(unhex::<64>);
            let public = seal.public_key.as_deref().and_then(unhex::<32>);
            match (signed, public, signature) {
                (None, _, _) => broke(
                    BreakKind::SealMismatch,
                    Some(record.id),
                    format!(
                        "line {}: a checkpoint carried by record {} does not seal its link",
                        record.line, record.id
                    ),
                ),
                (Some(_), Some(public), Some(_)) if public != *key.as_bytes() => broke(
                    BreakKind::SealSignature,
                    Some(record.id),
                    format!(
                        "line {}: the checkpoint at record {} is signed with key {}, not {key}",
                        record.line,
                        record.id,
                        hex(&public)
                    ),
                ),
                (Some(signed), Some(_), Some(signature)) if key.verifies(&signed, &signature) => {
                    checkpoints_valid += 1;
                    sealed += pending;
                    pending = 0;
                }
                (Some(_), _, _) => broke(
                    BreakKind::SealSignature,
                    Some(record.id),
                    format!(
                        "line {}: the checkpoint at record {} is unsigned or its signature does not verify",
                        record.line, record.id
                    ),
                ),
            }
        }
        last = Some(record);
    }
    let chained = records.len() as u64;
    let unproven = chained.saturating_sub(sealed);
    if unproven > 0 {
        broke(
            BreakKind::Unsealed,
            None,
            format!(
                "{unproven} of the export's {chained} chained records are not followed, link by link, by a checkpoint signed with the key (a filtered export proves only its runs that end at a checkpoint; export the whole ledger to prove every record)"
            ),
        );
    }
    Ok(VerifyReport {
        verdict: if break_count == 0 { Verdict::Intact } else { Verdict::Broken },
        ledger_id,
        key: key.to_string(),
        unchained,
        chained,
        sealed,
        checkpoints,
        checkpoints_valid,
        journaled: 0,
        writer_running: false,
        break_count,
        breaks,
    })
}
