//! The journal's field encoding (little-endian integers, length-prefixed text, a byte before each
//! optional field), the record kinds' bytes, and a record's row as the journal holds it ([`RowRef`]).
//! Its own leaf because the chain's canonical bytes (`chain.rs`) are exactly this encoding of a record's
//! columns, while the journal's entries (`wire.rs`) sit above the chain: they carry the seals it makes.

use portcullis_harness::RecordKind;

/// The tag of a record entry (the other entries' tags are `wire.rs`'s); it is part of a record's
/// canonical bytes too.
pub(crate) const TAG_RECORD: u8 = 1;

/// Whether a record of this kind ends its call (it is then a row of the calls' indexes).
pub(crate) fn is_terminal(kind: RecordKind) -> bool {
    matches!(kind, RecordKind::Finished | RecordKind::Error | RecordKind::Blocked)
}

/// Record kinds as stored; the index is the byte.
pub(crate) const KINDS: [RecordKind; 5] =
    [RecordKind::Started, RecordKind::Progress, RecordKind::Finished, RecordKind::Error, RecordKind::Blocked];

pub(crate) fn kind_byte(kind: RecordKind) -> u8 {
    KINDS.iter().position(|k| *k == kind).unwrap_or(0) as u8
}

/// The byte of the kind named `name` (`None` for a name no journaled record has).
pub(crate) fn kind_byte_of(name: &str) -> Option<u8> {
    KINDS.iter().position(|k| k.as_str() == name).map(|i| i as u8)
}

pub(crate) fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_opt_i64(out: &mut Vec<u8>, v: Option<i64>) {
    match v {
        Some(v) => {
            out.push(1);
            put_i64(out, v);
        }
        None => out.push(0),
    }
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    // Frames are bounded far below 4 GiB (`journal::MAX_FRAME`, checked when one is written).
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_bytes(out, s.as_bytes());
}

pub(crate) fn put_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => {
            out.push(1);
            put_str(out, s);
        }
        None => out.push(0),
    }
}

/// A length-prefixed field written in place by `write` (no intermediate buffer).
pub(crate) fn put_with<E>(
    out: &mut Vec<u8>,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    let at = out.len();
    out.extend_from_slice(&[0u8; 4]);
    write(out)?;
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    Ok(())
}

/// A record as the journal holds it, borrowed from the frame: the `records` columns and the call's
/// search document (terminal records only).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RowRef<'a> {
    pub session_id: &'a str,
    pub run_id: &'a str,
    pub call_id: &'a str,
    pub call_key: i64,
    pub owner: &'a str,
    pub tool: &'a str,
    pub kind: RecordKind,
    pub at: i64,
    pub started_at: Option<i64>,
    pub duration_us: Option<i64>,
    pub reason: Option<&'a str>,
    pub error_code: Option<&'a str>,
    pub decided: &'a str,
    pub decided_rule: Option<&'a str>,
    pub decided_source: Option<&'a str>,
    pub decided_operator: Option<&'a str>,
    pub policy_decision: Option<&'a str>,
    pub policy_rule: Option<&'a str>,
    pub redacted: bool,
    pub body: &'a str,
    pub search: Option<&'a str>,
    /// The record's link in the chain (`chain.rs`), as the appender computed it; none in a journal
    /// written before the chain existed.
    pub chain: Option<&'a [u8; 32]>,
}

impl RowRef<'_> {
    /// The `status` column: the kind of a terminal record, NULL on the others.
    pub(crate) fn status(&self) -> Option<&'static str> {
        is_terminal(self.kind).then(|| self.kind.as_str())
    }
}
