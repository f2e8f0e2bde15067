//! The shape of the proof a JSON Lines export carries: each chained record's `chain` object and the
//! checkpoints in it. Its own leaf because the exporter (`export_proof.rs`, which also offers the
//! verification as its public face) writes it and the verifier (`export_verify.rs`) reads it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
