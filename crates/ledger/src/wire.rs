//! The journal's encoding of entries: length-prefixed fields in a fixed order for records (the hot
//! path: no intermediate JSON value, written by `prepared::encode_record`), JSON for the rare entries
//! (sessions, approvals, refusals). Decoding borrows from the frame: the indexer binds the fields
//! straight from the journal's bytes, after a crash and on every normal commit alike.

use crate::prepared::Entry;
use crate::row_bytes::{KINDS, RowRef, TAG_RECORD, put_bytes, put_i64, put_str};
use crate::seal::{Seal, SealWhy};
use portcullis_harness::Timestamp;

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

/// Tags of the entries, one row per variant (records' tag, [`TAG_RECORD`], is in `row_bytes.rs`: the
/// chain's canonical bytes include it).
const TAG_SESSION: u8 = 2;
const TAG_SESSION_END: u8 = 3;
const TAG_APPROVAL: u8 = 4;
const TAG_REFUSAL: u8 = 5;
const TAG_TOOL_PIN: u8 = 6;
const TAG_SEAL: u8 = 7;
const TAG_EFFECT: u8 = 8;

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
