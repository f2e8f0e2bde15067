//! The witness: the hub's copy of its ledger's latest signed checkpoint, kept outside the data folder (in
//! the config folder, beside the key: `ledger-witness/<ledger id>.json`). Removing a ledger's newest
//! records together with their checkpoints leaves an older chain that verifies; against the witness it
//! reads as truncated. The witness only moves forward: a ledger found behind it never lowers it.

use crate::chain;
use crate::error::{AtPath, LedgerStoreError};
use crate::reader::LedgerReader;
use portcullis_harness::receipt::hex;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A ledger's latest signed checkpoint, as witnessed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Witness {
    pub ledger_id: String,
    /// Chained records it covers.
    pub count: u64,
    /// The link of its last record (hex).
    pub head: String,
    /// Its last record's id.
    pub record_id: i64,
    /// When it was signed (µs since the epoch).
    pub at: i64,
    /// The writer that signed it (part of what the signature is over).
    #[serde(default)]
    pub writer_id: i64,
    /// The checkpoint's own signature (hex), with the ledger's key, over its fields
    /// (`seal::message`): a witness written by hand does not verify. Older witnesses have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// What saving a witness did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Witnessed {
    /// Written (or already the same).
    Saved,
    /// The ledger is behind the witness already kept (its count): the witness was left as it was.
    Behind { kept: u64 },
}

impl Witness {
    /// Where the witness of ledger `ledger_id` is kept in the config folder `dir`.
    pub fn file(dir: &Path, ledger_id: &str) -> PathBuf {
        // Ledger ids are hex made by the ledger itself; anything else is kept out of the path.
        let safe: String = ledger_id.chars().filter(char::is_ascii_alphanumeric).collect();
        dir.join("ledger-witness").join(format!("{safe}.json"))
    }

    /// The latest checkpoint of the ledger `reader` reads that carries a signature (none yet: `None`).
    pub fn of(reader: &LedgerReader) -> Result<Option<Witness>, LedgerStoreError> {
        let path = reader.path().to_owned();
        let ledger_id = chain::ledger_id(&reader.conn).at(&path)?;
        let found = reader.conn.query_row(
            "SELECT count, head, record_id, at, writer_id, signature FROM chain_checkpoints
             WHERE signature IS NOT NULL ORDER BY count DESC, id DESC LIMIT 1",
            [],
            |r| {
                Ok((
                    (r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?, r.get::<_, i64>(2)?),
                    (r.get::<_, i64>(3)?, r.get::<_, i64>(4)?, r.get::<_, Vec<u8>>(5)?),
                ))
            },
        );
        match found {
            Ok(((count, head, record_id), (at, writer_id, signature))) => Ok(Some(Witness {
                ledger_id,
                count: count.max(0) as u64,
                head: hex(&head),
                record_id,
                at,
                writer_id,
                signature: Some(hex(&signature)),
            })),
            Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
            Err(e) => Err(LedgerStoreError::Sqlite { path, source: e }),
        }
    }

    /// The witness kept in `dir` for ledger `ledger_id`, if any.
    pub fn load(dir: &Path, ledger_id: &str) -> std::io::Result<Option<Witness>> {
        match std::fs::read(Witness::file(dir, ledger_id)) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(std::io::Error::other),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Keeps this witness in `dir` (owner-only, written whole then renamed into place), unless the one
    /// kept there is further along.
    pub fn save(&self, dir: &Path) -> std::io::Result<Witnessed> {
        if let Some(kept) = Witness::load(dir, &self.ledger_id)?
            && kept.count > self.count
        {
            return Ok(Witnessed::Behind { kept: kept.count });
        }
        let file = Witness::file(dir, &self.ledger_id);
        if let Some(parent) = file.parent() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
        }
        let temp = file.with_extension(format!("json.{}", std::process::id()));
        let mut out =
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&temp)?;
        out.write_all(&serde_json::to_vec(self).map_err(std::io::Error::other)?)?;
        out.sync_all()?;
        std::fs::rename(&temp, &file)?;
        Ok(Witnessed::Saved)
    }

    /// Keeps the latest signed checkpoint of the ledger at `ledger` as its witness in `dir`; logs when
    /// the ledger is behind the witness (its newest records and checkpoints are gone).
    pub fn record(ledger: &Path, dir: &Path) -> Result<(), LedgerStoreError> {
        let reader = LedgerReader::open(ledger)?;
        let Some(witness) = Witness::of(&reader)? else { return Ok(()) };
        let io = |source| LedgerStoreError::Io { path: dir.to_owned(), source };
        if let Witnessed::Behind { kept } = witness.save(dir).map_err(io)? {
            tracing::error!(ledger = %ledger.display(), kept, found = witness.count, "the ledger's latest checkpoint is behind the one witnessed: its newest records were removed, or it is an older copy; the witness is kept");
        }
        Ok(())
    }

    /// Whether the witness carries its checkpoint's signature by `key` (a witness of an older hub has
    /// none; one written by hand cannot have a valid one).
    pub fn signed_by(&self, key: &crate::key::LedgerPublicKey) -> bool {
        let (Some(link), Some(signature)) =
            (self.link(), self.signature.as_deref().and_then(portcullis_harness::receipt::unhex::<64>))
        else {
            return false;
        };
        let signed = crate::seal::message(&self.ledger_id, self.count, &link, self.at, self.writer_id);
        key.verifies(&signed, &signature)
    }

    /// The witnessed head as a link (none when the file holds something else).
    pub(crate) fn link(&self) -> Option<chain::Link> {
        portcullis_harness::receipt::unhex(&self.head)
    }
}
