//! What a verification reports: the verdict, the breaks found and the counts behind them. Its own leaf
//! because three verifiers fill it in: the ledger file's (`verify.rs`), its side chain's
//! (`side_verify.rs`, which the file's calls) and a JSON Lines export's (`export_verify.rs`).

use serde::{Deserialize, Serialize};

/// What kind of break a verifier found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum BreakKind {
    /// A record's content does not hash to its link (edited, or another record moved into its place).
    Changed,
    /// Records are missing between two chained records (their ids jump).
    Deleted,
    /// A record without a link after chained records (inserted, or its link stripped).
    Unlinked,
    /// A record's columns cannot be read as a record (a value of the wrong type).
    Malformed,
    /// A derived column disagrees with the record (`status` and `kind`).
    Derived,
    /// A checkpoint does not match the chain at its record.
    SealMismatch,
    /// A checkpoint signed by a key other than the one verified against, or not signed by it.
    SealSignature,
    /// A checkpoint sealed more records than the chain has: its tail was removed.
    Truncated,
    /// Chained records no signed checkpoint covers while no writer holds the ledger.
    Unsealed,
    /// The journal beside the ledger cannot be read or does not follow the chain.
    Journal,
    /// Records a writer that stopped left unsealed, which the next writer could not prove against the
    /// journal before it sealed them (its `tail_unproven` mark).
    Unproven,
}

/// One break.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ChainBreak {
    pub kind: BreakKind,
    /// The record where it shows (its id in the file; none for a journaled record not yet indexed).
    pub record_id: Option<i64>,
    /// Its place in the chain (1 = the first chained record).
    pub position: Option<u64>,
    pub message: String,
}

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum Verdict {
    /// Every chained record links and is covered by a checkpoint signed with the key.
    Intact,
    /// Everything links, and the newest records are not sealed yet because a writer holds the ledger.
    IntactUnsealedTail,
    Broken,
}

/// What `ledger verify` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct VerifyReport {
    pub verdict: Verdict,
    pub ledger_id: String,
    /// The public key checkpoints were checked against (hex).
    pub key: String,
    /// Records written before the chain existed (not proven either way).
    pub unchained: u64,
    /// Records in the chain, the journal's not yet indexed included.
    pub chained: u64,
    /// Of them, covered by a checkpoint signed with the key.
    pub sealed: u64,
    /// Checkpoints found, and of them signed with the key and matching the chain.
    pub checkpoints: u64,
    pub checkpoints_valid: u64,
    /// Chained records still only in the journal (its writer has not indexed them).
    pub journaled: u64,
    /// Whether a writer holds the ledger now (its newest records may wait for their checkpoint).
    pub writer_running: bool,
    /// All breaks found, and the first [`MAX_BREAKS`] of them (the first is where the ledger stops being
    /// proven).
    pub break_count: u64,
    pub breaks: Vec<ChainBreak>,
    /// Entries of the side chain (a write of a session, approval, refusal, tool-definition event,
    /// effect mark or chain mark: `side_chain.rs`), and of them covered by a side checkpoint signed
    /// with the key.
    #[serde(default)]
    pub side_chained: u64,
    #[serde(default)]
    pub side_sealed: u64,
    /// Side rows written before rows were chained (an older ledger's): taken into the chain as they
    /// were when the ledger was migrated, not proven before then.
    #[serde(default)]
    pub side_legacy: u64,
    /// Set when no key was found to check the checkpoints with: where it was looked for. The chain's
    /// links are still checked; no signature is, so nothing counts as sealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_missing: Option<String>,
    /// An export holding the records of several ledgers (a team ledger's, one per hub): each ledger's
    /// own result (the counts above are their sums, the breaks name their ledger). Empty for one ledger.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ledgers: Vec<LedgerVerdict>,
}

/// One ledger's result in the verification of an export holding several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct LedgerVerdict {
    pub ledger_id: String,
    pub verdict: Verdict,
    /// The key its valid checkpoints were signed with (hex), when one was.
    pub key: Option<String>,
    pub unchained: u64,
    pub chained: u64,
    pub sealed: u64,
    pub checkpoints: u64,
    pub checkpoints_valid: u64,
    pub break_count: u64,
}

/// Breaks kept in a report.
pub const MAX_BREAKS: usize = 20;
