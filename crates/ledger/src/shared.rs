//! State the callers, the appender thread (journal) and the indexer thread (SQLite) share: failures
//! (and the [`WriteFailure`] broadcast to subscribers), counters, and the indexer's backlog, which the
//! appender keeps bounded.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;

/// A commit that failed, as broadcast to subscribers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFailure {
    pub message: String,
    /// Rows waiting to be retried.
    pub pending_rows: usize,
}

pub(crate) struct WriterState {
    /// Why the last journal write failed, until one succeeds.
    pub journal_failure: Mutex<Option<String>>,
    /// Why the last SQLite commit failed, until one succeeds.
    pub index_failure: Mutex<Option<String>>,
    pub failures: broadcast::Sender<WriteFailure>,
    /// Rows in the journal.
    pub journaled: AtomicU64,
    /// Rows in SQLite.
    pub committed: AtomicU64,
    /// SQLite transactions committed (with at least one row): rows per commit is how well they group.
    pub commits: AtomicU64,
    /// Set by `close()`: the threads stop waiting on each other and on a failing SQLite.
    pub closing: AtomicBool,
    /// Rows in the journal and not yet in SQLite.
    backlog: Mutex<u64>,
    drained: Condvar,
}

fn set(slot: &Mutex<Option<String>>, value: Option<String>) {
    if let Ok(mut f) = slot.lock() {
        *f = value;
    }
}

fn get(slot: &Mutex<Option<String>>) -> Option<String> {
    slot.lock().ok().and_then(|f| f.clone())
}

impl WriterState {
    pub(crate) fn new() -> Self {
        let (failures, _) = broadcast::channel(64);
        WriterState {
            journal_failure: Mutex::new(None),
            index_failure: Mutex::new(None),
            failures,
            journaled: AtomicU64::new(0),
            committed: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            backlog: Mutex::new(0),
            drained: Condvar::new(),
        }
    }

    /// The current failure, journal first: while there is one, no new call may start.
    pub(crate) fn failure(&self) -> Option<String> {
        get(&self.journal_failure).or_else(|| get(&self.index_failure))
    }

    pub(crate) fn journal_failed(&self, message: Option<String>) {
        set(&self.journal_failure, message);
    }

    pub(crate) fn index_failed(&self, message: Option<String>) {
        set(&self.index_failure, message);
    }

    /// `rows` were journaled and handed to the indexer.
    pub(crate) fn queued(&self, rows: u64) {
        self.journaled.fetch_add(rows, Ordering::Relaxed);
        if let Ok(mut b) = self.backlog.lock() {
            *b += rows;
        }
    }

    /// `rows` were committed to SQLite.
    pub(crate) fn indexed(&self, rows: u64) {
        self.committed.fetch_add(rows, Ordering::Relaxed);
        if rows > 0 {
            self.commits.fetch_add(1, Ordering::Relaxed);
        }
        if let Ok(mut b) = self.backlog.lock() {
            *b = b.saturating_sub(rows);
        }
        self.drained.notify_all();
    }

    pub(crate) fn backlog(&self) -> u64 {
        self.backlog.lock().map(|b| *b).unwrap_or(0)
    }

    /// Tells subscribers and the waiters of a write that failed (its rows are kept for a retry).
    pub(crate) fn report_failure(
        &self,
        message: String,
        pending_rows: usize,
        waiters: impl Iterator<Item = crate::prepared::Waiter>,
    ) {
        for waiter in waiters {
            let _ = waiter.send(Err(message.clone()));
        }
        let _ = self.failures.send(WriteFailure { message, pending_rows });
    }

    pub(crate) fn closing(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }

    /// Waits while more than `max` rows wait for the indexer (not once the ledger is closing).
    pub(crate) fn wait_for_backlog_below(&self, max: u64) {
        let Ok(mut b) = self.backlog.lock() else { return };
        while *b > max && !self.closing() {
            match self.drained.wait_timeout(b, Duration::from_millis(50)) {
                Ok((next, _)) => b = next,
                Err(_) => return,
            }
        }
    }
}

/// The pause before the `failures`-th retry of a failed write: 20 ms doubling, at most 1 s.
pub(crate) fn retry_pause(failures: u32) {
    std::thread::sleep(Duration::from_millis((10u64 << failures.min(6)).min(1000)));
}
