//! Portcullis ledger: the durable SQLite implementation of the harness's `Ledger` seam, and the query
//! API the CLI and the desktop app share.
//!
//! One file per ledger (WAL, `synchronous=NORMAL`, foreign keys, mode 0600) and its journal
//! (`<ledger>.journal`, 0600). Writing goes through [`SqliteLedger`] (bounded channel, an appender
//! thread making groups durable in the journal, an indexer thread moving them into SQLite in large
//! transactions, `flush_durable()` / `flush()` barriers, replay and crash recovery on open); reading
//! through [`LedgerReader`] (read-only, works while another process writes).

pub mod activity;
mod appender;
pub mod audit;
pub mod call_head;
pub mod call_marks;
mod call_summary;
pub mod chain;
pub mod check;
mod checkpoint;
mod count;
pub mod durations;
pub mod effects;
pub mod error;
pub mod export;
mod export_format;
pub mod export_proof;
mod export_verify;
mod indexer;
mod journal;
pub mod key;
pub mod ledger_read;
mod options;
mod origin;
mod prepared;
pub mod query;
mod reader;
mod recovery;
pub mod refusals;
pub mod rollup;
pub mod row;
mod row_bytes;
pub mod row_decider;
pub mod schema;
pub mod seal;
pub mod sessions;
mod shared;
pub mod side;
pub mod side_chain;
mod side_verify;
pub mod snippet;
pub mod stats;
mod stats_builder;
mod stats_rollup;
pub mod store;
pub mod tail;
mod tail_proof;
pub mod timefmt;
pub mod tool_pins;
pub mod verify;
pub mod verify_report;
mod wire;
pub mod witness;

pub use activity::{PromptedCommand, RuleHits};
pub use audit::{ApprovalSummary, CommandCount, CommandOutcome};
pub use call_head::{CallHead, StoredPolicyDecision};
pub use call_marks::CallMarks;
pub use check::CheckReport;
pub use effects::{EffectChange, EffectMark, EffectMarkOutcome, EffectRow, EffectState};
pub use error::LedgerStoreError;
pub use export::ExportFormat;
pub use key::{KeyError, LedgerKey, LedgerPublicKey};
pub use ledger_read::{LedgerRead, ReadError, ReplayCursor};
pub use options::LedgerOptions;
pub use origin::CallOrigin;
pub use query::{CallFilter, CallPage, CallRow, CallStatus, CallTimeline, Cursor};
pub use reader::LedgerReader;
pub use refusals::{RefusalCounts, RefusalFilter, RefusalRow};
pub use row::{RecordBody, StoredKind, StoredRecord};
pub use row_decider::RowDecider;
pub use seal::{Seal, SealWhy};
pub use sessions::{
    ApprovalOutcome, ApprovalRecord, SessionCounts, SessionEnd, SessionFilter, SessionInfo, SessionRow,
};
pub use shared::WriteFailure;
pub use side::{SideRow, SideTable};
pub use snippet::{Snippet, SnippetPart};
pub use stats::{CallDims, Stats, StatsSource};
pub use stats_builder::{StatsBuilder, StatsDim};
pub use store::SqliteLedger;
pub use tail::{LedgerTail, RecordLink, RecordSink, SinkCursors, SinkLag};
pub use tool_pins::{PinKind, ToolPin, ToolPinEvent};
pub use verify_report::{BreakKind, ChainBreak, LedgerVerdict, Verdict, VerifyReport};
