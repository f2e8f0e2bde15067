//! How the writer behaves: the options a caller opens a ledger with, and the priority of the threads it
//! starts. Its own leaf because the store, the appender and the indexer all read them, and the store
//! starts the other two.

use std::time::Duration;

/// How the writer behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerOptions {
    /// Most rows in one journal frame and in one SQLite transaction.
    pub batch_max_rows: usize,
    /// How long the writer may wait for more rows after the first one of a batch (0: commit as soon as
    /// the queue is drained; batches still grow by themselves while a commit is under way).
    pub batch_max_delay: Duration,
    /// Records that may wait in the channel before callers are made to wait.
    pub channel_capacity: usize,
    /// Rows that may be in the journal and not yet in SQLite before the appender (and so callers) waits
    /// for the indexer: how far readers may lag, and how much a crashed writer leaves to replay.
    pub index_backlog_rows: usize,
    /// How long the indexer gathers rows after the first of a transaction, unless a reader waits for
    /// them: fewer, larger SQLite transactions (the CPU a call's indexing takes from the calls on a
    /// small machine), for readers that see new rows that much later.
    pub index_gather: Duration,
    /// `synchronous=FULL` and an `fdatasync` of each journal frame (survives power loss) instead of
    /// `NORMAL` (survives process crashes).
    pub synchronous_full: bool,
    pub busy_timeout: Duration,
    /// Records between two signed checkpoints of the chain (`seal.rs`), besides the one at close.
    pub checkpoint_every: u64,
}

impl Default for LedgerOptions {
    fn default() -> Self {
        LedgerOptions {
            batch_max_rows: 4096,
            batch_max_delay: Duration::ZERO,
            channel_capacity: 16_384,
            index_backlog_rows: 262_144,
            index_gather: Duration::from_millis(10),
            synchronous_full: false,
            busy_timeout: Duration::from_secs(5),
            checkpoint_every: 1024,
        }
    }
}

/// How much the writer's background threads (the indexer and the WAL checkpointer) lower their
/// priority.
pub(crate) const BACKGROUND_NICE: i32 = 10;
