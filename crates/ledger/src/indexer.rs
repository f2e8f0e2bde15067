//! The indexer: moves what the appender journaled into SQLite (records with their search documents and
//! rollups, sessions, approvals, refusals) in large transactions, each recording the journal point it
//! reached; answers the flushes that wait for readers to see the rows. Also the replay of a journal on
//! open (the same writes) and the writer's close. Split from `store.rs`, which keeps the public API.

use crate::chain::{self, ChainHead};
use crate::checkpoint::Checkpointer;
use crate::error::{AtPath, LedgerStoreError};
use crate::journal::{self, JournalError};
use crate::options::{BACKGROUND_NICE, LedgerOptions};
use crate::prepared::{Entry, MAX_RUNNING_TRACKED, Waiter};
use crate::recovery::{OpenCalls, interrupt_open_calls};
use crate::rollup::{Dims, KeyCache, Pending};
use crate::row_bytes::RowRef;
use crate::sessions::ApprovalOutcome;
use crate::shared::{WriterState, retry_pause};
use crate::wire::{self, Decoded, WireError};
use portcullis_harness::Timestamp;
use rusqlite::{Connection, params};
use std::borrow::Cow;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SendError, Sender};
use std::thread::Thread;

/// One frame the appender journaled (where it is in the journal; none when only flushes wait), and the
/// flushes waiting for everything up to it to be visible.
pub(crate) struct Group {
    /// The frame's bytes in the journal: `start..end` (`start == end`: no frame).
    pub start: u64,
    pub end: u64,
    pub rows: usize,
    /// The journal epoch of `start` and `end`.
    pub epoch: u64,
    pub waiters: Vec<Waiter>,
}

pub(crate) enum ToIndexer {
    Group(Group),
    /// Index what is left, end this writer's calls still running (session and call ids), and stop.
    Close(Vec<(Arc<str>, Arc<str>)>),
}

/// The appender's line to the indexer. Groups go down the channel without waking the indexer while it
/// gathers (it sleeps through its gathering window and takes them all at its end: one wake-up per
/// window, not two per call); a group someone waits for, and the close, wake it at once.
pub(crate) struct IndexerLine {
    pub sender: Sender<ToIndexer>,
    /// The indexer's thread, woken for what cannot wait.
    pub thread: Thread,
}

impl IndexerLine {
    pub(crate) fn send(&self, message: ToIndexer) -> Result<(), SendError<ToIndexer>> {
        let urgent = match &message {
            ToIndexer::Group(group) => !group.waiters.is_empty(),
            ToIndexer::Close(_) => true,
        };
        self.sender.send(message)?;
        if urgent {
            self.thread.unpark();
        }
        Ok(())
    }
}

/// Why a batch could not be indexed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IndexError {
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("journal frame: {0}")]
    Wire(#[from] WireError),
    #[error("reading the journal back: {0}")]
    Io(#[from] std::io::Error),
    /// A journaled record or seal that does not follow the chain (the journal was altered).
    #[error("{0}")]
    Chain(String),
}

/// The chain as the indexer moves it on: the head in the file (with the rows not yet committed), and
/// the last record id (what a seal covers up to).
pub(crate) struct IndexChain {
    pub head: ChainHead,
    pub last_record_id: i64,
    /// Recompute every journaled link and refuse one that does not follow (replay: the journal was left
    /// by a process that is gone, and anyone could have changed it since).
    pub verify: bool,
    /// Whether the journal's records carry links (a journal from before the chain does not: links are
    /// computed here).
    pub chained: bool,
    /// The live writer's key and id: a checkpoint of the records it indexes is followed by one of the
    /// side chain (`side_chain.rs`). None in a replay.
    pub side_sealer: Option<(Option<Arc<crate::key::LedgerKey>>, i64)>,
    scratch: Vec<u8>,
}

impl IndexChain {
    pub(crate) fn load(conn: &Connection, verify: bool, chained: bool) -> rusqlite::Result<IndexChain> {
        Ok(IndexChain {
            head: chain::head(conn)?,
            last_record_id: chain::last_record_id(conn)?,
            verify,
            chained,
            side_sealer: None,
            scratch: Vec::new(),
        })
    }

    /// The link of `row` (written by `writer_id`), checked or computed as the journal requires.
    fn next(&mut self, writer_id: i64, row: &RowRef<'_>) -> Result<chain::Link, IndexError> {
        let link = match row.chain {
            Some(link) if !self.verify => *link,
            journaled => {
                self.scratch.clear();
                chain::canonical_of_ref(&mut self.scratch, writer_id, row);
                let computed = chain::link(&self.head.link, &self.scratch);
                if journaled.is_some_and(|l| *l != computed) {
                    return Err(IndexError::Chain(format!(
                        "record {} of the chain (call {:?}, {} at {}) does not match its link: the journal was changed",
                        self.head.count + 1,
                        row.call_id,
                        row.kind.as_str(),
                        row.at
                    )));
                }
                computed
            }
        };
        self.head = ChainHead { count: self.head.count + 1, link };
        Ok(link)
    }
}

/// The journal point the ledger has indexed up to: `(epoch, offset)`.
pub(crate) fn journal_point(conn: &Connection) -> rusqlite::Result<(u64, u64)> {
    conn.query_row("SELECT epoch, offset FROM journal_state WHERE id = 1", [], |r| {
        Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
    })
}

fn set_journal_point(conn: &Connection, epoch: u64, offset: u64) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE journal_state SET epoch = ?1, offset = ?2 WHERE id = 1")?
        .execute(params![epoch as i64, offset as i64])?;
    Ok(())
}

/// Indexes what the journal at `path` holds beyond the ledger's journal point (a writer that stopped
/// without closing left it), in transactions of up to `batch` entries. Returns the entries indexed and
/// the epoch the next journal starts.
pub(crate) fn replay(
    conn: &mut Connection,
    ledger: &Path,
    batch: usize,
) -> Result<(u64, u64), LedgerStoreError> {
    let path = journal::path_of(ledger);
    let damaged = |e: JournalError| LedgerStoreError::Journal { path: path.clone(), why: e.to_string() };
    let (epoch, offset) = journal_point(conn).at(ledger)?;
    let unindexed = journal::unindexed(&path, epoch, offset).map_err(damaged)?;
    if !unindexed.torn_by_a_crash() {
        // Not what a crash leaves: kept aside for whoever looks into it, never indexed.
        let mut kept = path.as_os_str().to_owned();
        kept.push(format!(".rejected-{}", unindexed.epoch));
        let kept = std::path::PathBuf::from(kept);
        let copied = std::fs::copy(&path, &kept);
        tracing::error!(path = %path.display(), bytes = unindexed.torn_bytes, kept = %kept.display(), copied = copied.is_ok(), "the journal's bytes after its last whole frame are not a frame a crash cut off (changed or replaced): not indexed, kept aside");
    } else if unindexed.torn_bytes > 0 {
        tracing::warn!(path = %path.display(), bytes = unindexed.torn_bytes, "journal ends in a frame cut while it was written (never acknowledged): dropped");
    }
    let mut keys = KeyCache::default();
    let mut chain = IndexChain::load(conn, true, unindexed.chained).at(ledger)?;
    let mut replayed = 0u64;
    let mut frames = unindexed.frames.iter().peekable();
    while frames.peek().is_some() {
        let tx = conn.transaction().at(ledger)?;
        let mut in_tx = 0;
        while in_tx < batch
            && let Some(frame) = frames.next()
        {
            let n = index_frames(&tx, [(frame.writer_id, frame.entries.as_slice())], &mut keys, &mut chain)
                .map_err(|e| match e {
                IndexError::Sqlite(source) => LedgerStoreError::Sqlite { path: ledger.to_owned(), source },
                IndexError::Io(source) => LedgerStoreError::Io { path: path.clone(), source },
                IndexError::Wire(e) => LedgerStoreError::Journal {
                    path: path.clone(),
                    why: format!("frame ending at byte {}: {e}", frame.end),
                },
                IndexError::Chain(why) => LedgerStoreError::Journal {
                    path: path.clone(),
                    why: format!("frame ending at byte {}: {why}", frame.end),
                },
            })?;
            set_journal_point(&tx, unindexed.epoch, frame.end).at(ledger)?;
            in_tx += n;
            replayed += n as u64;
        }
        tx.commit().at(ledger)?;
    }
    if replayed > 0 {
        tracing::warn!(path = %path.display(), entries = replayed, "journaled entries a stopped writer had not indexed: indexed now");
    }
    let reached = unindexed.epoch.max(epoch);
    let next = if reached == 0 { first_epoch(conn).at(ledger)? } else { reached + 1 };
    Ok((replayed, next))
}

/// The epoch a ledger's first journal starts at: 40 bits of its random ledger id, so that two
/// ledgers' journals never share an epoch and a journal put in place of another's is refused as older
/// or read from its start (where its records do not follow this ledger's chain), never half read
/// from an offset that is this ledger's (a misaligned foreign frame can pass for one a crash cut).
fn first_epoch(conn: &Connection) -> rusqlite::Result<u64> {
    let id: String =
        conn.query_row("SELECT ledger_id FROM ledger_identity WHERE id = 1", [], |r| r.get(0))?;
    let bits = id.get(..10).and_then(|hex| u64::from_str_radix(hex, 16).ok()).unwrap_or(0);
    Ok(bits.max(1))
}

/// Writes the entries of journal frames (records with their search documents and rollups, sessions,
/// approvals, refusals) in the caller's transaction; each frame is `(writer id, entries)`. Returns the
/// entries written.
pub(crate) fn index_frames<'a>(
    tx: &Connection,
    frames: impl IntoIterator<Item = (i64, &'a [u8])>,
    keys: &mut KeyCache,
    chain: &mut IndexChain,
) -> Result<usize, IndexError> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO records (writer_id, session_id, run_id, call_id, call_key, owner, tool, kind, status,
             at, started_at, duration_us, reason, error_code, decided_by, decided_rule, decided_source,
             decided_operator, redacted, body, policy_decision, policy_rule, chain, changes, contained)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
             ?21, ?22, ?23, ?24, ?25)",
    )?;
    let chained_before = chain.head.count;
    let mut index = tx.prepare_cached("INSERT INTO records_fts(rowid, content) VALUES (?1, ?2)")?;
    let mut ended = Pending::default();
    let mut n = 0;
    for (writer_id, bytes) in frames {
        let mut reader =
            if chain.chained { wire::Reader::new(bytes) } else { wire::Reader::unchained(bytes) };
        while !reader.is_empty() {
            n += 1;
            match reader.entry()? {
                Decoded::Record(row) => {
                    let status = row.status();
                    let link = chain.next(writer_id, &row)?;
                    // Derived from the body (see `call_marks.rs`), on calls only.
                    let marks = match status {
                        Some(_) => crate::call_marks::marks_of_body(row.body),
                        None => crate::call_marks::CallMarks::default(),
                    };
                    insert.execute(params![
                        writer_id,
                        row.session_id,
                        row.run_id,
                        row.call_id,
                        row.call_key,
                        row.owner,
                        row.tool,
                        row.kind.as_str(),
                        status,
                        row.at,
                        row.started_at,
                        row.duration_us,
                        row.reason,
                        row.error_code,
                        row.decided,
                        row.decided_rule,
                        row.decided_source,
                        row.decided_operator,
                        row.redacted,
                        row.body,
                        row.policy_decision,
                        row.policy_rule,
                        &link[..],
                        marks.changes_column(),
                        marks.contained,
                    ])?;
                    chain.last_record_id = tx.last_insert_rowid();
                    // One search document per call, at its terminal record.
                    if let Some(text) = row.search {
                        index.execute(params![tx.last_insert_rowid(), text])?;
                    }
                    // The hourly rollups of the calls this batch ends, in the same transaction.
                    if let Some(status) = status {
                        let dims = Dims {
                            tool: Cow::Borrowed(row.tool),
                            status: Cow::Borrowed(status),
                            reason: row.reason.map(Cow::Borrowed),
                            decided_by: Cow::Borrowed(row.decided),
                            rule: row.decided_rule.map(Cow::Borrowed),
                            policy_decision: row.policy_decision.map(Cow::Borrowed),
                            owner: Cow::Borrowed(row.owner),
                        };
                        ended.add(row.at, dims, row.duration_us);
                    }
                }
                Decoded::Other(Entry::Seal(seal)) => {
                    if (seal.count, seal.head) != (chain.head.count, chain.head.link) {
                        return Err(IndexError::Chain(format!(
                            "a checkpoint of {} records does not seal the chain's {} records before it: the journal was changed",
                            seal.count, chain.head.count
                        )));
                    }
                    seal.write(tx, chain.last_record_id)?;
                    if let Some((key, writer_id)) = &chain.side_sealer {
                        crate::side_chain::seal_side(tx, key.as_deref(), *writer_id, seal.at)?;
                    }
                }
                Decoded::Other(entry) => write_entry(tx, &entry)?,
            }
        }
    }
    if chain.head.count != chained_before {
        chain::set_head(tx, &chain.head)?;
    }
    if !ended.is_empty() {
        ended.write(tx, keys)?;
    }
    Ok(n)
}

/// Writes a session, session end, approval, refusal, tool-pin event or effect change, and chains the
/// row it wrote in the side chain (`side_chain.rs`).
fn write_entry(tx: &Connection, entry: &Entry) -> rusqlite::Result<()> {
    let (table, key) = write_side_row(tx, entry)?;
    if let (Some(table), Some(key)) = (crate::side_chain::table(table), key) {
        crate::side_chain::chain_row(tx, table, &key)?;
    }
    Ok(())
}

/// Writes the entry's row; returns its table and key (none: no chained row was written).
fn write_side_row(tx: &Connection, entry: &Entry) -> rusqlite::Result<(&'static str, Option<String>)> {
    Ok(match entry {
        Entry::Session(s) => {
            tx.prepare_cached(
                    "INSERT INTO sessions (id, client_name, client_version, cwd, policy_hash, started_at, ended_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT(id) DO UPDATE SET client_name = excluded.client_name,
                         client_version = excluded.client_version, cwd = excluded.cwd,
                         policy_hash = excluded.policy_hash",
                )?
                .execute(params![
                    s.id,
                    s.client_name,
                    s.client_version,
                    s.cwd,
                    s.policy_hash,
                    s.started_at.0,
                    s.ended_at.map(|t| t.0)
                ])?;
            ("sessions", Some(s.id.clone()))
        }
        Entry::SessionEnd { id, at } => {
            tx.prepare_cached("UPDATE sessions SET ended_at = ?1, end_reason = 'closed' WHERE id = ?2")?
                .execute(params![at.0, id])?;
            ("sessions", Some(id.clone()))
        }
        Entry::Approval(a) => {
            tx.prepare_cached(
                "INSERT INTO approvals (session_id, call_id, tool, requested_at, resolved_at, outcome,
                         operator, note, rule_written, receipt)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?
            .execute(params![
                a.session_id,
                a.call_id,
                a.tool,
                a.requested_at.0,
                a.resolved_at.map(|t| t.0),
                a.outcome.map(ApprovalOutcome::as_str),
                a.operator,
                a.note,
                a.rule_written,
                a.receipt.as_ref().and_then(|r| serde_json::to_string(r).ok()),
            ])?;
            ("approvals", Some(tx.last_insert_rowid().to_string()))
        }
        Entry::Refusal(r) => ("refusals", Some(crate::refusals::upsert(tx, r)?.to_string())),
        Entry::ToolPin(p) => ("tool_pin_events", Some(crate::tool_pins::write(tx, p)?.to_string())),
        Entry::Effect(e) => ("effect_marks", crate::effects::write(tx, e)?.map(|id| id.to_string())),
        // Written by `index_frames`, which knows the chain.
        Entry::Seal(_) => ("", None),
    })
}

/// The thread that owns the writing SQLite connection.
pub(crate) struct Indexer {
    pub conn: Connection,
    /// `call_keys` ids of the rollups (forgotten when a commit fails: its new keys rolled back).
    pub keys: KeyCache,
    pub checkpoints: Option<Checkpointer>,
    pub receiver: Receiver<ToIndexer>,
    /// The journal, read back.
    pub journal: std::fs::File,
    /// The frames of one commit, as read back.
    pub buffer: Vec<u8>,
    pub chain: IndexChain,
    /// Signs the seal at close (none: the seal is unsigned).
    pub key: Option<Arc<crate::key::LedgerKey>>,
    pub state: Arc<WriterState>,
    pub options: LedgerOptions,
    pub writer_id: i64,
    pub path: PathBuf,
}

impl Indexer {
    /// Runs until `Close` (or the appender is gone). Returns whether everything journaled is in SQLite
    /// (false when it gave up on a failing database at close: the journal keeps it for the next open).
    pub(crate) fn run(mut self) -> bool {
        // Indexing is deferred work: calls wait for the journal, not for SQLite, so the indexer yields
        // the CPU to the callers and the appender (Linux: a thread's own nice value). The backlog bound
        // keeps it from falling behind without limit.
        if let Err(e) = rustix::process::nice(BACKGROUND_NICE) {
            tracing::debug!(error = %e, "ledger indexer keeps its priority");
        }
        let mut groups: Vec<Group> = Vec::new();
        let mut closing = false;
        let mut running = Vec::new();
        let mut failures = 0u32;
        loop {
            if groups.is_empty() && !closing {
                match self.receiver.recv() {
                    Ok(ToIndexer::Group(g)) => groups.push(g),
                    Ok(ToIndexer::Close(calls)) => {
                        running = calls;
                        closing = true;
                    }
                    Err(_) => closing = true,
                }
            }
            let mut rows: usize = groups.iter().map(|g| g.rows).sum();
            // Gather what follows for a moment (one transaction for many calls costs far less CPU than
            // one each), unless someone waits to read what is indexed.
            let gather_until = std::time::Instant::now() + self.options.index_gather;
            while rows < self.options.batch_max_rows && !closing {
                match self.receiver.try_recv() {
                    Ok(ToIndexer::Group(g)) => {
                        rows += g.rows;
                        groups.push(g);
                    }
                    Ok(ToIndexer::Close(calls)) => {
                        running = calls;
                        closing = true;
                    }
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => closing = true,
                    Err(std::sync::mpsc::TryRecvError::Empty) => {
                        let waited_for = groups.iter().any(|g| !g.waiters.is_empty());
                        let left = gather_until.saturating_duration_since(std::time::Instant::now());
                        if waited_for || left.is_zero() {
                            break;
                        }
                        // Not `recv_timeout`: a sender wakes a receiver waiting in it, once per group.
                        // The appender unparks this thread for what cannot wait (see `IndexerLine`).
                        std::thread::park_timeout(left);
                    }
                }
            }
            match self.commit(&groups) {
                Ok(()) => {
                    failures = 0;
                    if rows > 0
                        && let Some(c) = &self.checkpoints
                    {
                        c.nudge();
                    }
                    self.state.index_failed(None);
                    self.state.indexed(rows as u64);
                    for group in groups.drain(..) {
                        for waiter in group.waiters {
                            let _ = waiter.send(Ok(()));
                        }
                    }
                }
                Err(e) => {
                    failures += 1;
                    self.keys.forget();
                    // The rolled-back rows' links are not the file's: start again from its head.
                    match IndexChain::load(&self.conn, false, true) {
                        Ok(mut chain) => {
                            chain.side_sealer = Some((self.key.clone(), self.writer_id));
                            self.chain = chain;
                        }
                        Err(e) => tracing::error!(error = %e, "ledger chain head could not be read back"),
                    }
                    let message = format!("{}: commit of {rows} rows failed: {e}", self.path.display());
                    tracing::error!(%message, attempt = failures, "ledger commit failed; rows kept in the journal and retried");
                    self.state.index_failed(Some(message.clone()));
                    let waiters = groups.iter_mut().flat_map(|g| g.waiters.drain(..));
                    self.state.report_failure(message, rows, waiters);
                    if (closing || self.state.closing()) && failures >= 20 {
                        tracing::error!(
                            rows,
                            "ledger indexer giving up at close: the rows stay in the journal for the next open"
                        );
                        return false;
                    }
                    retry_pause(failures);
                    continue;
                }
            }
            if closing {
                break;
            }
        }
        self.close_writer(&running);
        true
    }

    /// Reads the groups' frames back from the journal (one `pread`: they follow each other) and
    /// writes them, with the journal point after the last, in one transaction.
    fn commit(&mut self, groups: &[Group]) -> Result<(), IndexError> {
        let Some(first) = groups.iter().find(|g| g.rows > 0) else { return Ok(()) };
        let Some(last) = groups.iter().rev().find(|g| g.rows > 0) else { return Ok(()) };
        let (start, end) = (first.start, last.end);
        self.buffer.resize((end - start) as usize, 0);
        self.journal.read_exact_at(&mut self.buffer, start)?;
        let mut frames = Vec::with_capacity(groups.len());
        let mut at = 0;
        while at < self.buffer.len() {
            let (writer_id, entries, next) =
                journal::frame_at(&self.buffer, at).ok_or(WireError::Frame(start + at as u64))?;
            frames.push((writer_id, entries));
            at = next;
        }
        let tx = self.conn.transaction()?;
        index_frames(&tx, frames, &mut self.keys, &mut self.chain)?;
        set_journal_point(&tx, last.epoch, end)?;
        tx.commit()?;
        Ok(())
    }

    /// On clean close: this writer's unfinished calls become `interrupted`; the writer is marked closed.
    fn close_writer(&mut self, running: &[(Arc<str>, Arc<str>)]) {
        if let Some(checkpoints) = self.checkpoints.take() {
            checkpoints.stop();
        }
        let now = Timestamp::now().0;
        let writer_id = self.writer_id;
        let result = (|| -> rusqlite::Result<u64> {
            let tx = self.conn.transaction()?;
            // The calls this writer knows are running; all of its range if it lost track (over the cap).
            let n = if running.len() < MAX_RUNNING_TRACKED {
                let mut n = 0;
                for (session_id, call_id) in running {
                    let scope = OpenCalls::Call { session_id, call_id };
                    n += interrupt_open_calls(&tx, scope, writer_id, now)?;
                }
                n
            } else {
                interrupt_open_calls(&tx, OpenCalls::OfWriter(writer_id), writer_id, now)?
            };
            tx.execute("UPDATE writers SET closed_at = ?1 WHERE id = ?2", params![now, writer_id])?;
            // The last seal: everything this writer wrote, its interrupted records included.
            crate::seal::seal_unsealed(
                &tx,
                self.key.as_deref(),
                writer_id,
                now,
                crate::seal::SealWhy::Close,
            )?;
            crate::side_chain::seal_side(&tx, self.key.as_deref(), writer_id, now)?;
            tx.commit()?;
            Ok(n)
        })();
        match result {
            Ok(0) => {}
            Ok(n) => tracing::info!(calls = n, "calls still running at close marked interrupted"),
            Err(e) => tracing::error!(error = %e, "could not mark the ledger writer closed"),
        }
        if let Err(e) = self.conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);") {
            tracing::warn!(error = %e, "WAL checkpoint at close failed");
        }
    }
}
