//! The proof a JSON Lines export carries (its verification with the public keys alone is
//! `export_verify.rs`). Each chained record's line gets a `chain` object: its link, the link before it,
//! its canonical columns (the exact values its link hashes, in
//! [`CHAINED_COLUMNS`](crate::chain::CHAINED_COLUMNS) order), and the signed checkpoints that end at it.
//! Lines stay records (consumers that read records are unaffected). A team ledger's export carries the
//! same object, built from what each hub shipped.

use crate::chain::{self, Link};
use crate::error::{AtPath, LedgerStoreError};
use portcullis_harness::receipt::hex;
use rusqlite::{Connection, OptionalExtension};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

pub use crate::export_format::{ExportedLink, ExportedSeal};
pub use crate::export_verify::{verify_export, verify_export_keys};

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
