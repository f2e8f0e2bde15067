//! Signed checkpoints ("seals") of the hash chain: the chain's head, how many records it covers, when,
//! and which writer, signed with the ledger key. The appender seals every `checkpoint_every` records (in
//! the journal, so the journal is covered too), the writer seals at close after its last records, and a
//! writer opening a ledger seals what the writer before it left unsealed (it stopped before closing).
//! Rewriting chained records means recomputing every link after them, which no one without the key can
//! make a seal for.

use crate::chain::{self, ChainHead, Link};
use crate::key::LedgerKey;
use rusqlite::{Connection, params};

/// Why a seal was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum SealWhy {
    /// Every `checkpoint_every` records, by the appender (in the journal).
    Interval,
    /// At a clean close, after the writer's last record.
    Close,
    /// When a writer opened the ledger, over records the writer before it had not sealed.
    Open,
}

impl SealWhy {
    pub const ALL: [SealWhy; 3] = [SealWhy::Interval, SealWhy::Close, SealWhy::Open];

    pub fn as_str(self) -> &'static str {
        match self {
            SealWhy::Interval => "interval",
            SealWhy::Close => "close",
            SealWhy::Open => "open",
        }
    }

    pub fn parse(s: &str) -> Option<SealWhy> {
        SealWhy::ALL.into_iter().find(|w| w.as_str() == s)
    }

    pub(crate) fn byte(self) -> u8 {
        match self {
            SealWhy::Interval => 0,
            SealWhy::Close => 1,
            SealWhy::Open => 2,
        }
    }

    pub(crate) fn from_byte(b: u8) -> Option<SealWhy> {
        SealWhy::ALL.into_iter().find(|w| w.byte() == b)
    }
}

/// One checkpoint of the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seal {
    /// Chained records it covers: the first `count` of the chain.
    pub count: u64,
    /// The link of its last record.
    pub head: Link,
    pub at: i64,
    pub writer_id: i64,
    pub why: SealWhy,
    /// The key that signed it and the signature (none when the writer had no key).
    pub public_key: Option<[u8; 32]>,
    pub signature: Option<[u8; 64]>,
}

/// The bytes a seal's signature is over: a domain, the ledger's id, and the seal's fields.
pub fn message(ledger_id: &str, count: u64, head: &Link, at: i64, writer_id: i64) -> Vec<u8> {
    message_in(b"portcullis-ledger-seal-v1\0", ledger_id, count, head, at, writer_id)
}

/// [`message`] under another `domain` (the side chain's checkpoints sign the same fields under theirs).
pub(crate) fn message_in(
    domain: &[u8],
    ledger_id: &str,
    count: u64,
    head: &Link,
    at: i64,
    writer_id: i64,
) -> Vec<u8> {
    let mut m = Vec::with_capacity(96 + ledger_id.len());
    m.extend_from_slice(domain);
    m.extend_from_slice(&(ledger_id.len() as u64).to_le_bytes());
    m.extend_from_slice(ledger_id.as_bytes());
    m.extend_from_slice(&count.to_le_bytes());
    m.extend_from_slice(head);
    m.extend_from_slice(&at.to_le_bytes());
    m.extend_from_slice(&writer_id.to_le_bytes());
    m
}

impl Seal {
    /// A seal of `head`, signed with `key` when there is one.
    pub fn make(
        key: Option<&LedgerKey>,
        ledger_id: &str,
        head: &ChainHead,
        at: i64,
        writer_id: i64,
        why: SealWhy,
    ) -> Seal {
        let (public_key, signature) = match key {
            Some(key) => (
                Some(*key.public().as_bytes()),
                Some(key.sign(&message(ledger_id, head.count, &head.link, at, writer_id))),
            ),
            None => (None, None),
        };
        Seal { count: head.count, head: head.link, at, writer_id, why, public_key, signature }
    }

    /// Writes it, as covering records up to `record_id`.
    pub(crate) fn write(&self, conn: &Connection, record_id: i64) -> rusqlite::Result<()> {
        conn.prepare_cached(
            "INSERT INTO chain_checkpoints (count, record_id, head, at, writer_id, why, public_key, signature)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![
            self.count as i64,
            record_id,
            &self.head[..],
            self.at,
            self.writer_id,
            self.why.as_str(),
            self.public_key.as_ref().map(|k| &k[..]),
            self.signature.as_ref().map(|s| &s[..]),
        ])?;
        Ok(())
    }
}

/// Seals the chain as the file has it, when records after the last seal are unsealed. Returns whether
/// it wrote one.
pub(crate) fn seal_unsealed(
    conn: &Connection,
    key: Option<&LedgerKey>,
    writer_id: i64,
    at: i64,
    why: SealWhy,
) -> rusqlite::Result<bool> {
    let head = chain::head(conn)?;
    // A signing writer seals what only unsigned checkpoints cover.
    if head.count == 0 || head.count <= chain::last_checkpoint_count(conn, key.is_some())? {
        return Ok(false);
    }
    let ledger_id = chain::ledger_id(conn)?;
    let record_id = chain::last_record_id(conn)?;
    Seal::make(key, &ledger_id, &head, at, writer_id, why).write(conn, record_id)?;
    Ok(true)
}
