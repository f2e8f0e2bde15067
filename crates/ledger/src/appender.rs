//! The appender: the thread that takes callers' records off the channel, encodes them (columns, JSON
//! body, search document: work the callers' threads no longer do) straight into a journal frame,
//! writes each batch with one `write(2)`, answers the flushes that wait for durability, and tells the
//! indexer where the frame is (the indexer reads it back from the journal: the backlog lives in the
//! file and the page cache, not in this process's memory). It keeps the indexer's backlog bounded
//! (callers wait when it is full, never a dropped record) and empties the journal when the indexer has
//! caught up.

use crate::indexer::{Group, IndexerLine, ToIndexer};
use crate::journal::{self, Journal};
use crate::key::LedgerKey;
use crate::options::LedgerOptions;
use crate::prepared::{Barrier, Chaining, Command, RunningCalls, Waiter, encode_record};
use crate::seal::{Seal, SealWhy};
use crate::shared::{WriteFailure, WriterState, retry_pause};
use crate::wire;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// A journal this long or longer is emptied once the indexer has everything in it.
const RESTART_BYTES: u64 = 8 << 20;

pub(crate) struct Appender {
    pub receiver: mpsc::Receiver<Command>,
    pub journal: Journal,
    pub indexer: IndexerLine,
    pub state: Arc<WriterState>,
    pub options: LedgerOptions,
    pub writer_id: i64,
    /// The journal's path, for messages.
    pub path: PathBuf,
    /// The chain's end: every record journaled carries its link.
    pub chain: Chaining,
    /// Signs the seals (none: they are written unsigned).
    pub key: Option<Arc<LedgerKey>>,
    pub ledger_id: String,
    /// Records chained since the last seal.
    pub unsealed: u64,
    /// Side entries (sessions, approvals, ...) journaled since the last seal.
    pub side_unsealed: bool,
}

/// What waits for one journal write: the frame being built and the flushes.
struct Batch {
    frame: Vec<u8>,
    rows: usize,
    durable: Vec<Waiter>,
    visible: Vec<Waiter>,
    shutdown: bool,
    closed: bool,
}

impl Batch {
    fn is_idle(&self) -> bool {
        self.rows == 0 && self.durable.is_empty() && self.visible.is_empty()
    }
}

impl Appender {
    fn take(&mut self, batch: &mut Batch, running: &mut RunningCalls, command: Command) {
        let encoded = match command {
            Command::Record(record) => {
                let encoded = encode_record(&record, running, &mut self.chain, &mut batch.frame);
                if encoded.is_ok() {
                    batch.rows += 1;
                    self.unsealed += 1;
                    // The interval's last record: its seal follows it in the same frame.
                    if self.unsealed >= self.options.checkpoint_every.max(1) {
                        self.seal(batch);
                    }
                    return;
                }
                encoded
            }
            Command::Entry(entry) => {
                self.side_unsealed = true;
                wire::encode_entry(&entry, &mut batch.frame)
            }
            Command::Flush(Barrier::Durable, waiter) => return batch.durable.push(waiter),
            Command::Flush(Barrier::Visible, waiter) => return batch.visible.push(waiter),
            Command::Seal(waiter) => {
                // Also when only side rows came since the last seal: the indexer seals the side chain
                // with it.
                if self.unsealed > 0 || (self.side_unsealed && self.chain.head.count > 0) {
                    self.seal(batch);
                }
                return batch.visible.push(waiter);
            }
            Command::Shutdown => {
                batch.shutdown = true;
                return;
            }
        };
        match encoded {
            Ok(()) => batch.rows += 1,
            Err(e) => {
                let message = format!(
                    "{}: a ledger entry could not be encoded and was dropped: {e}",
                    self.path.display()
                );
                tracing::error!(%message);
                let _ = self.state.failures.send(WriteFailure { message, pending_rows: 0 });
            }
        }
    }

    /// Runs until shutdown (or every sender is gone), then tells the indexer to close. Returns the
    /// journal, which the caller empties once the indexer has finished.
    pub(crate) fn run(mut self) -> Journal {
        let mut running = RunningCalls::new();
        let mut frame = Vec::with_capacity(1 << 16);
        journal::begin_frame(&mut frame, self.writer_id);
        let mut batch = Batch {
            frame,
            rows: 0,
            durable: Vec::new(),
            visible: Vec::new(),
            shutdown: false,
            closed: false,
        };
        let mut failures = 0u32;
        loop {
            if batch.is_idle() && !batch.shutdown && !batch.closed {
                match self.receiver.blocking_recv() {
                    Some(command) => self.take(&mut batch, &mut running, command),
                    None => batch.closed = true,
                }
            }
            self.fill(&mut batch, &mut running);
            let rows = batch.rows;
            let start = self.journal.end();
            if rows > 0 {
                if let Err(e) = self.journal.append(&mut batch.frame) {
                    failures += 1;
                    let message =
                        format!("{}: journal write of {rows} rows failed: {e}", self.path.display());
                    tracing::error!(%message, attempt = failures, "ledger journal write failed; rows kept for retry");
                    self.state.journal_failed(Some(message.clone()));
                    let waiters = batch.durable.drain(..).chain(batch.visible.drain(..));
                    self.state.report_failure(message, rows, waiters);
                    if (batch.shutdown || batch.closed || self.state.closing()) && failures >= 20 {
                        tracing::error!(rows, "ledger writer giving up at shutdown: rows NOT written");
                        break;
                    }
                    retry_pause(failures);
                    continue;
                }
                failures = 0;
                self.state.journal_failed(None);
            }
            // Counted before the waiters hear of it: a caller that waited sees its rows counted.
            self.state.queued(rows as u64);
            for waiter in batch.durable.drain(..) {
                let _ = waiter.send(Ok(()));
            }
            if rows > 0 {
                journal::begin_frame(&mut batch.frame, self.writer_id);
                batch.rows = 0;
            }
            let group = Group {
                start,
                rows,
                epoch: self.journal.epoch(),
                end: self.journal.end(),
                waiters: std::mem::take(&mut batch.visible),
            };
            if self.indexer.send(ToIndexer::Group(group)).is_err() {
                tracing::error!("ledger indexer stopped: the journal keeps the rows for the next open");
            }
            if batch.shutdown || batch.closed {
                break;
            }
            self.state.wait_for_backlog_below(self.options.index_backlog_rows as u64);
            if self.state.backlog() == 0 && self.journal.end() >= RESTART_BYTES {
                if self.unsealed > 0 {
                    // The journal proves the records no seal covers yet (`tail_proof.rs`): seal them
                    // first (with the next frame), empty it once that seal is indexed.
                    self.seal(&mut batch);
                } else if let Err(e) = self.journal.restart() {
                    tracing::warn!(path = %self.path.display(), error = %e, "journal could not be emptied");
                }
            }
        }
        let _ = self.indexer.send(ToIndexer::Close(running.into_keys().collect()));
        self.journal
    }

    /// Puts a seal of the chain as it stands into the frame, after the record that completed an interval
    /// (in the journal, then in SQLite).
    fn seal(&mut self, batch: &mut Batch) {
        let at = portcullis_harness::Timestamp::now().0;
        let seal = Seal::make(
            self.key.as_deref(),
            &self.ledger_id,
            &self.chain.head,
            at,
            self.writer_id,
            SealWhy::Interval,
        );
        wire::encode_seal(&seal, &mut batch.frame);
        batch.rows += 1;
        self.unsealed = 0;
        self.side_unsealed = false;
    }

    /// Adds whatever is queued (up to the batch size), waiting up to `batch_max_delay` for more.
    fn fill(&mut self, batch: &mut Batch, running: &mut RunningCalls) {
        let deadline = Instant::now() + self.options.batch_max_delay;
        loop {
            while batch.rows < self.options.batch_max_rows && !batch.shutdown {
                match self.receiver.try_recv() {
                    Ok(command) => self.take(batch, running, command),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        batch.closed = true;
                        break;
                    }
                }
            }
            let now = Instant::now();
            if batch.rows >= self.options.batch_max_rows
                || !batch.durable.is_empty()
                || !batch.visible.is_empty()
                || batch.shutdown
                || batch.closed
                || now >= deadline
            {
                return;
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(1)));
        }
    }
}
