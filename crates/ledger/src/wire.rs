//! The journal's encoding of entries: length-prefixed fields in a fixed order for records (the hot
//! path: no intermediate JSON value, written by `prepared::encode_record`), JSON for the rare entries
//! (sessions, approvals, refusals). Decoding borrows from the frame: the indexer binds the fields
//! straight from the journal's bytes, after a crash and on every normal commit alike.

use crate::prepared::{Entry, is_terminal};
use crate::seal::{Seal, SealWhy};
use portcullis_harness::{RecordKind, Timestamp};

/// Why bytes could not be decoded (a damaged or foreign journal).
#[derive(Debug, thiserror::Error)]
pub(crate) enum WireError {
    #[error("entry ends early at byte {0}")]
    Short(usize),
    #[error("unknown entry tag {0}")]
    Tag(u8),
    #[error("unknown record kind {0}")]
    Kind(u8),
    #[error("text field is not UTF-8 at byte {0}")]
    Utf8(usize),
    #[error("entry JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("no whole frame at journal byte {0} (damaged)")]
    Frame(u64),
}

/// Tags of the entries, one row per variant.
pub(crate) const TAG_RECORD: u8 = 1;
const TAG_SESSION: u8 = 2;
const TAG_SESSION_END: u8 = 3;
const TAG_APPROVAL: u8 = 4;
const TAG_REFUSAL: u8 = 5;
const TAG_TOOL_PIN: u8 = 6;
const TAG_SEAL: u8 = 7;
const TAG_EFFECT: u8 = 8;

/// Record kinds as stored; the index is the byte.
const KINDS: [RecordKind; 5] =
    [RecordKind::Started, RecordKind::Progress, RecordKind::Finished, RecordKind::Error, RecordKind::Blocked];

pub(crate) fn kind_byte(kind: RecordKind) -> u8 {
    KINDS.iter().position(|k| *k == kind).unwrap_or(0) as u8
}

/// The byte of the kind named `name` (`None` for a name no journaled record has).
pub(crate) fn kind_byte_of(name: &str) -> Option<u8> {
    KINDS.iter().position(|k| k.as_str() == name).map(|i| i as u8)
}

/// Appends a non-record entry to `out` (nothing on error).
pub(crate) fn encode_entry(entry: &Entry, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    match entry {
        Entry::Session(s) => {
            let json = serde_json::to_vec(s)?;
            out.push(TAG_SESSION);
            put_bytes(out, &json);
        }
        Entry::SessionEnd { id, at } => {
            out.push(TAG_SESSION_END);
            put_str(out, id);
            put_i64(out, at.0);
        }
        Entry::Approval(a) => {
            let json = serde_json::to_vec(a)?;
            out.push(TAG_APPROVAL);
            put_bytes(out, &json);
        }
        Entry::Refusal(r) => {
            let json = serde_json::to_vec(r)?;
            out.push(TAG_REFUSAL);
            put_bytes(out, &json);
        }
        Entry::ToolPin(p) => {
            let json = serde_json::to_vec(p)?;
            out.push(TAG_TOOL_PIN);
            put_bytes(out, &json);
        }
        Entry::Seal(seal) => encode_seal(seal, out),
        Entry::Effect(e) => {
            let json = serde_json::to_vec(e)?;
            out.push(TAG_EFFECT);
            put_bytes(out, &json);
        }
    }
    Ok(())
}

/// A seal: count, head, time, writer, why, then the key and the signature when signed.
pub(crate) fn encode_seal(seal: &Seal, out: &mut Vec<u8>) {
    out.push(TAG_SEAL);
    put_i64(out, seal.count as i64);
    out.extend_from_slice(&seal.head);
    put_i64(out, seal.at);
    put_i64(out, seal.writer_id);
    out.push(seal.why.byte());
    match (&seal.public_key, &seal.signature) {
        (Some(key), Some(signature)) => {
            out.push(1);
            out.extend_from_slice(key);
            out.extend_from_slice(signature);
        }
        _ => out.push(0),
    }
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

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
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

/// One decoded entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decoded<'a> {
    Record(RowRef<'a>),
    Other(Entry),
}

/// Reads entries back from a frame's bytes.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    /// Whether records end with their link (journals from before the chain do not).
    chained: bool,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0, chained: true }
    }

    /// A reader of a journal written before the chain (its records carry no link).
    pub(crate) fn unchained(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0, chained: false }
    }

    fn array<const N: usize>(&mut self) -> Result<&'a [u8; N], WireError> {
        let at = self.at;
        self.take(N)?.try_into().map_err(|_| WireError::Short(at))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end =
            self.at.checked_add(n).filter(|e| *e <= self.bytes.len()).ok_or(WireError::Short(self.at))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }

    fn i64(&mut self) -> Result<i64, WireError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(i64::from_le_bytes(a))
    }

    fn opt_i64(&mut self) -> Result<Option<i64>, WireError> {
        Ok(if self.u8()? == 0 { None } else { Some(self.i64()?) })
    }

    fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        self.take(u32::from_le_bytes(a) as usize)
    }

    fn str(&mut self) -> Result<&'a str, WireError> {
        let at = self.at;
        std::str::from_utf8(self.bytes()?).map_err(|_| WireError::Utf8(at))
    }

    fn opt_str(&mut self) -> Result<Option<&'a str>, WireError> {
        Ok(if self.u8()? == 0 { None } else { Some(self.str()?) })
    }

    /// The next entry.
    pub(crate) fn entry(&mut self) -> Result<Decoded<'a>, WireError> {
        Ok(match self.u8()? {
            TAG_RECORD => Decoded::Record(self.row()?),
            TAG_SESSION => Decoded::Other(Entry::Session(serde_json::from_slice(self.bytes()?)?)),
            TAG_SESSION_END => {
                Decoded::Other(Entry::SessionEnd { id: self.str()?.to_owned(), at: Timestamp(self.i64()?) })
            }
            TAG_APPROVAL => Decoded::Other(Entry::Approval(serde_json::from_slice(self.bytes()?)?)),
            TAG_REFUSAL => Decoded::Other(Entry::Refusal(serde_json::from_slice(self.bytes()?)?)),
            TAG_TOOL_PIN => Decoded::Other(Entry::ToolPin(serde_json::from_slice(self.bytes()?)?)),
            TAG_SEAL => Decoded::Other(Entry::Seal(self.seal()?)),
            TAG_EFFECT => Decoded::Other(Entry::Effect(serde_json::from_slice(self.bytes()?)?)),
            other => return Err(WireError::Tag(other)),
        })
    }

    fn row(&mut self) -> Result<RowRef<'a>, WireError> {
        Ok(RowRef {
            session_id: self.str()?,
            run_id: self.str()?,
            call_id: self.str()?,
            call_key: self.i64()?,
            owner: self.str()?,
            tool: self.str()?,
            kind: {
                let b = self.u8()?;
                *KINDS.get(usize::from(b)).ok_or(WireError::Kind(b))?
            },
            at: self.i64()?,
            started_at: self.opt_i64()?,
            duration_us: self.opt_i64()?,
            reason: self.opt_str()?,
            error_code: self.opt_str()?,
            decided: self.str()?,
            decided_rule: self.opt_str()?,
            decided_source: self.opt_str()?,
            decided_operator: self.opt_str()?,
            policy_decision: self.opt_str()?,
            policy_rule: self.opt_str()?,
            redacted: self.u8()? != 0,
            body: self.str()?,
            search: self.opt_str()?,
            chain: if self.chained { Some(self.array::<32>()?) } else { None },
        })
    }

    fn seal(&mut self) -> Result<Seal, WireError> {
        let count = self.i64()? as u64;
        let head = *self.array::<32>()?;
        let at = self.i64()?;
        let writer_id = self.i64()?;
        let b = self.u8()?;
        let why = SealWhy::from_byte(b).ok_or(WireError::Kind(b))?;
        let (public_key, signature) = if self.u8()? == 0 {
            (None, None)
        } else {
            (Some(*self.array::<32>()?), Some(*self.array::<64>()?))
        };
        Ok(Seal { count, head, at, writer_id, why, public_key, signature })
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
pub(crate) mod tests;
