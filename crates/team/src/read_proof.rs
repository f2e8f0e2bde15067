//! The proof each record of a team ledger's JSON Lines export carries: the same `chain` object a hub's
//! own export gives it (`portcullis_ledger::export_proof`), made from what the hub shipped: the record's
//! link and canonical columns, the link of the hub's chained record before it (of the same ledger), and
//! the hub's checkpoints that end at it. `portcullis ledger verify --export` then proves the records of
//! every hub with the hubs' public keys alone.

use portcullis_harness::receipt::hex;
use portcullis_ledger::chain;
use portcullis_ledger::export_proof::{ExportedLink, ExportedSeal};
use serde_json::Value;

/// What the export selects after a record's own columns (the record as `a`): its link, its canonical
/// columns, the link before it in its ledger's chain, and the checkpoints that end at it (a JSON array).
pub(crate) const PROOF_COLUMNS: &str = "a.chain, a.chain_columns,
    CASE WHEN a.chain IS NOT NULL THEN
        (SELECT p.chain FROM portcullis.records p
         WHERE p.ledger_id = a.ledger_id AND p.id < a.id AND p.chain IS NOT NULL
         ORDER BY p.id DESC LIMIT 1) END,
    CASE WHEN a.chain IS NOT NULL THEN
        (SELECT json_agg(json_build_object('ledger_id', c.ledger_id, 'count', c.count, 'head', c.head,
                    'at', c.at, 'writer_id', c.writer_id, 'why', c.why, 'public_key', c.public_key,
                    'signature', c.signature) ORDER BY c.count, c.id)::text
         FROM portcullis.chain_checkpoints c WHERE c.ledger_id = a.ledger_id AND c.record_id = a.id) END";

/// The `chain` object of a record of ledger `ledger_id` from [`PROOF_COLUMNS`] starting at column
/// `first` of `row`; `None` for a record shipped without a link (before the chain, or by an older hub).
pub(crate) fn proof_of(
    row: &tokio_postgres::Row,
    first: usize,
    ledger_id: &str,
) -> Result<Option<ExportedLink>, String> {
    let get = |i: usize| row.try_get::<_, Option<String>>(first + i).map_err(|e| e.to_string());
    let (Some(link), columns) = (get(0)?, get(1)?) else { return Ok(None) };
    let previous = get(2)?.unwrap_or_else(|| hex(&chain::genesis(ledger_id)));
    // Columns that no longer read as a JSON array still go out: verifying the export names the record.
    let columns = columns.unwrap_or_default();
    let columns =
        serde_json::from_str::<Vec<Value>>(&columns).unwrap_or_else(|_| vec![Value::String(columns)]);
    let checkpoints = match get(3)? {
        Some(text) => serde_json::from_str::<Vec<ExportedSeal>>(&text)
            .map_err(|e| format!("a checkpoint of ledger {ledger_id} does not read back: {e}"))?,
        None => Vec::new(),
    };
    Ok(Some(ExportedLink { link, previous, columns, checkpoints }))
}
