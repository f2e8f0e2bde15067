//! Verifying a JSON Lines export with public keys alone (the proof each line carries is
//! `export_proof.rs`). Each chained line's link must hash its canonical columns after its previous link,
//! and its record must be what those columns say (so the record a reader sees is the one proven). The
//! records are grouped by ledger (a team ledger's export mixes hubs: a line's `origin.ledger_id`), each
//! group ordered by id and walked on its own: a record counts as proven when consecutive links lead from
//! it to a checkpoint signed with one of the keys. A whole export proves every record; a filtered one
//! only its runs that end at a checkpoint.

use crate::call_head::{CallHead, StoredPolicyDecision};
use crate::chain::{self, Link};
use crate::error::LedgerStoreError;
use crate::export_format::{ExportedLink, ExportedSeal};
use crate::key::LedgerPublicKey;
use crate::row::{StoredKind, StoredRecord};
use crate::seal::message;
use crate::verify_report::{BreakKind, ChainBreak, LedgerVerdict, MAX_BREAKS, Verdict, VerifyReport};
use portcullis_harness::receipt::{hex, unhex};
use portcullis_harness::{CallErrorCode, Timestamp};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::io::BufRead;

/// The record its canonical columns say (in [`CHAINED_COLUMNS`](crate::chain::CHAINED_COLUMNS) order),
/// read as the ledger reads a row back; `None` when they are not a record's.
fn record_of_columns(id: i64, c: &[Value]) -> Option<StoredRecord> {
    let text = |i: usize| c.get(i).and_then(Value::as_str).map(str::to_owned);
    let opt_text = |i: usize| match c.get(i)? {
        Value::Null => Some(None),
        Value::String(s) => Some(Some(s.clone())),
        _ => None,
    };
    let opt_i64 = |i: usize| match c.get(i)? {
        Value::Null => Some(None),
        v => v.as_i64().map(Some),
    };
    let redacted = match c.get(19)? {
        Value::Bool(b) => *b,
        v => v.as_i64()? != 0,
    };
    let head = CallHead {
        session_id: text(1)?,
        run_id: text(2)?,
        call_id: text(3)?,
        owner: text(5)?,
        tool: text(6)?,
        at: Timestamp(c.get(8)?.as_i64()?),
        started_at: opt_i64(9)?.map(Timestamp),
        duration_us: opt_i64(10)?,
        reason: opt_text(11)?.and_then(|r| r.parse().ok()),
        error_code: opt_text(12)?.map(|c| CallErrorCode::parse(&c)),
        redacted,
        policy_decision: opt_text(17)?.and_then(|d| StoredPolicyDecision::parse(&d)),
        policy_rule: opt_text(18)?,
    };
    Some(StoredRecord {
        id,
        head,
        kind: StoredKind::parse(c.get(7)?.as_str()?)?,
        body: serde_json::from_str(c.get(20)?.as_str()?).ok()?,
    })
}

/// One record of the export, checked on its own.
struct Checked {
    id: i64,
    line: u64,
    link: Link,
    previous: Link,
    seals: Vec<ExportedSeal>,
}

/// The records of one ledger, and what was found in them.
#[derive(Default)]
struct Group {
    /// The ledger's id as the lines' origin says (none in a hub's own export: its checkpoints say).
    origin: Option<String>,
    records: Vec<Checked>,
    unchained: u64,
    breaks: Vec<ChainBreak>,
    break_count: u64,
}

impl Group {
    fn broke(&mut self, kind: BreakKind, record_id: Option<i64>, message: String) {
        self.break_count += 1;
        if self.breaks.len() < MAX_BREAKS {
            self.breaks.push(ChainBreak { kind, record_id, position: None, message });
        }
    }

    /// Checks line `n` (its record `id`, the rest of its object in `record`) against its proof.
    fn check_line(&mut self, n: u64, id: i64, proof: Value, record: Map<String, Value>, bytes: &mut Vec<u8>) {
        let proof: ExportedLink = match serde_json::from_value(proof) {
            Ok(proof) => proof,
            Err(e) => {
                self.broke(
                    BreakKind::Malformed,
                    Some(id),
                    format!("line {n}: its chain object is not a proof: {e}"),
                );
                return;
            }
        };
        let (Some(link), Some(previous)) = (unhex::<32>(&proof.link), unhex::<32>(&proof.previous)) else {
            self.broke(BreakKind::Malformed, Some(id), format!("line {n}: its links are not 64 hex digits"));
            return;
        };
        bytes.clear();
        if let Err(bad) = chain::canonical_from_json(&proof.columns, bytes) {
            self.broke(
                BreakKind::Malformed,
                Some(id),
                format!("line {n}: its column {} is not a record's", bad.column),
            );
            return;
        }
        if chain::link(&previous, bytes) != link {
            self.broke(
                BreakKind::Changed,
                Some(id),
                format!("line {n} (record {id}) does not match its link: it was edited after the export"),
            );
        } else {
            // The columns are proven; the record the line shows must be theirs.
            let said = record_of_columns(id, &proof.columns).and_then(|r| serde_json::to_value(r).ok());
            if said != Some(Value::Object(record)) {
                self.broke(
                    BreakKind::Changed,
                    Some(id),
                    format!(
                        "line {n} (record {id}) is not the record its link proves: the record was edited, in the export or where it was exported from"
                    ),
                );
            }
        }
        self.records.push(Checked { id, line: n, link, previous, seals: proof.checkpoints });
    }

    /// Walks the group's records in id order and checks the checkpoints they carry against `keys`.
    fn walk(mut self, keys: &[LedgerPublicKey]) -> (LedgerVerdict, Vec<ChainBreak>) {
        let mut records = std::mem::take(&mut self.records);
        records.sort_by_key(|r| r.id);
        let mut ledger_id = self.origin.clone().unwrap_or_default();
        let (mut sealed, mut pending, mut checkpoints, mut checkpoints_valid) = (0u64, 0u64, 0u64, 0u64);
        let mut signer: Option<String> = None;
        let mut last: Option<&Checked> = None;
        for record in &records {
            if last.is_some_and(|l| l.id == record.id) {
                self.broke(
                    BreakKind::Changed,
                    Some(record.id),
                    format!("line {}: record {} appears twice", record.line, record.id),
                );
                continue;
            }
            // A record that does not follow the one before it starts a new run: what was pending before
            // the gap cannot be proven by a checkpoint after it.
            if last.is_none_or(|l| l.link != record.previous) {
                pending = 0;
            }
            pending += 1;
            for seal in &record.seals {
                checkpoints += 1;
                if let Some(origin) = &self.origin
                    && *origin != seal.ledger_id
                {
                    self.broke(
                        BreakKind::SealMismatch,
                        Some(record.id),
                        format!(
                            "line {}: record {} of ledger {origin} carries a checkpoint of ledger {}",
                            record.line, record.id, seal.ledger_id
                        ),
                    );
                    continue;
                }
                ledger_id.clone_from(&seal.ledger_id);
                let signed = unhex::<32>(&seal.head)
                    .filter(|h| *h == record.link)
                    .map(|head| message(&seal.ledger_id, seal.count, &head, seal.at, seal.writer_id));
                let signature = seal.signature.as_deref().and_then(unhex::<64>);
                let public = seal.public_key.as_deref().and_then(unhex::<32>);
                let key = public.and_then(|p| keys.iter().find(|k| *k.as_bytes() == p));
                match (signed, public, key, signature) {
                    (None, ..) => self.broke(
                        BreakKind::SealMismatch,
                        Some(record.id),
                        format!(
                            "line {}: a checkpoint carried by record {} does not seal its link",
                            record.line, record.id
                        ),
                    ),
                    (Some(_), Some(public), None, Some(_)) => self.broke(
                        BreakKind::SealSignature,
                        Some(record.id),
                        format!(
                            "line {}: the checkpoint at record {} is signed with key {}, not {}",
                            record.line,
                            record.id,
                            hex(&public),
                            key_list(keys)
                        ),
                    ),
                    (Some(signed), _, Some(key), Some(signature)) if key.verifies(&signed, &signature) => {
                        checkpoints_valid += 1;
                        signer = Some(key.to_string());
                        sealed += pending;
                        pending = 0;
                    }
                    (Some(_), ..) => self.broke(
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
            self.broke(
                BreakKind::Unsealed,
                None,
                format!(
                    "{unproven} of the export's {chained} chained records are not followed, link by link, by a checkpoint signed with the key (a filtered export proves only its runs that end at a checkpoint; export the whole ledger to prove every record)"
                ),
            );
        }
        let verdict = LedgerVerdict {
            ledger_id,
            verdict: if self.break_count == 0 { Verdict::Intact } else { Verdict::Broken },
            key: signer,
            unchained: self.unchained,
            chained,
            sealed,
            checkpoints,
            checkpoints_valid,
            break_count: self.break_count,
        };
        (verdict, self.breaks)
    }
}

fn key_list(keys: &[LedgerPublicKey]) -> String {
    keys.iter().map(ToString::to_string).collect::<Vec<_>>().join(" or ")
}

/// Verifies a JSON Lines export read from `input` against `key` (see the module's doc).
pub fn verify_export(input: impl BufRead, key: &LedgerPublicKey) -> Result<VerifyReport, LedgerStoreError> {
    verify_export_keys(input, std::slice::from_ref(key))
}

/// Verifies a JSON Lines export read from `input`, each ledger's checkpoints against any of `keys` (a
/// team ledger's export: one key per hub).
pub fn verify_export_keys(
    input: impl BufRead,
    keys: &[LedgerPublicKey],
) -> Result<VerifyReport, LedgerStoreError> {
    if keys.is_empty() {
        return Err(LedgerStoreError::Export("no public key to verify the export against".into()));
    }
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    let mut bytes = Vec::new();
    for (n, line) in input.lines().enumerate() {
        let n = n as u64 + 1;
        let line = line.map_err(|e| LedgerStoreError::Export(format!("line {n}: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let not_a_record =
            |why: &str| LedgerStoreError::Export(format!("line {n}: not a record of a JSONL export: {why}"));
        let mut record: Map<String, Value> =
            serde_json::from_str(&line).map_err(|e| not_a_record(&e.to_string()))?;
        let id =
            record.get("id").and_then(Value::as_i64).ok_or_else(|| not_a_record("it has no record id"))?;
        // A team ledger's line says which hub's ledger the record is of.
        let origin = record.remove("origin");
        let origin = origin.as_ref().and_then(|o| o.get("ledger_id")).and_then(Value::as_str);
        let group = groups.entry(origin.unwrap_or_default().to_owned()).or_default();
        group.origin = origin.map(str::to_owned);
        match record.remove("chain") {
            Some(proof) => group.check_line(n, id, proof, record, &mut bytes),
            None => group.unchained += 1,
        }
    }
    let several = groups.len() > 1;
    let mut report = VerifyReport {
        verdict: Verdict::Intact,
        ledger_id: String::new(),
        key: keys.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
        unchained: 0,
        chained: 0,
        sealed: 0,
        checkpoints: 0,
        checkpoints_valid: 0,
        journaled: 0,
        writer_running: false,
        break_count: 0,
        breaks: Vec::new(),
        side_chained: 0,
        side_sealed: 0,
        side_legacy: 0,
        key_missing: None,
        ledgers: Vec::new(),
    };
    for group in groups.into_values() {
        let (ledger, breaks) = group.walk(keys);
        report.unchained += ledger.unchained;
        report.chained += ledger.chained;
        report.sealed += ledger.sealed;
        report.checkpoints += ledger.checkpoints;
        report.checkpoints_valid += ledger.checkpoints_valid;
        report.break_count += ledger.break_count;
        for mut b in breaks {
            if report.breaks.len() == MAX_BREAKS {
                break;
            }
            if several {
                b.message = format!("ledger {}: {}", ledger.ledger_id, b.message);
            }
            report.breaks.push(b);
        }
        if !several {
            report.ledger_id.clone_from(&ledger.ledger_id);
        }
        report.ledgers.push(ledger);
    }
    if !several {
        report.ledgers.clear();
    }
    if report.break_count > 0 {
        report.verdict = Verdict::Broken;
    }
    Ok(report)
}
