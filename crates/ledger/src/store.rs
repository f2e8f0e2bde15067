//! The writing side: [`SqliteLedger`] opens (creating, migrating, locking, replaying the journal and
//! recovering) a ledger file and hands records to the appender thread over a bounded channel. The
//! appender writes each batch to the journal with one `write(2)` (durable: `flush_durable()` and the
//! harness's durable `started` records are answered then); the indexer thread moves batches into SQLite
//! in large transactions (`flush()` waits until other connections see them). A full channel or a full
//! indexer backlog makes callers wait (never drops); a failed write keeps its rows, retries, and surfaces
//! as an error on the flushes, on new `started` records and as a [`WriteFailure`] broadcast.

use crate::appender::Appender;
use crate::chain;
use crate::checkpoint::Checkpointer;
use crate::error::{AtPath, LedgerStoreError};
use crate::indexer::{self, IndexChain, Indexer, IndexerLine};
use crate::journal::{self, Journal};
use crate::key::LedgerKey;
use crate::options::LedgerOptions;
use crate::prepared::Chaining;
use crate::prepared::{Barrier, Command, Entry};
use crate::recovery::{Recovered, recover_crashed_writers};
use crate::refusals::RefusalRow;
use crate::rollup::{self, KeyCache};
use crate::schema::{self, SCHEMA_VERSION, check_identity};
use crate::seal::{self, SealWhy};
use crate::shared::{WriteFailure, WriterState};
use async_trait::async_trait;
use portcullis_harness::{Ledger, LedgerError, Offered, RecordKind, Timestamp, ToolCallRecord};
use rusqlite::{Connection, OpenFlags};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::sync::{broadcast, mpsc, oneshot};

pub use crate::recovery::INTERRUPTED_MESSAGE;
pub use crate::sessions::{ApprovalOutcome, ApprovalRecord, SessionInfo};

/// The durable ledger.
pub struct SqliteLedger {
    path: PathBuf,
    sender: mpsc::Sender<Command>,
    state: Arc<WriterState>,
    finished: Mutex<Option<oneshot::Receiver<()>>>,
    writer_id: i64,
    recovered: Recovered,
    replayed: u64,
}

/// Opens the file, creating it owner-only (0600) if it does not exist.
fn open_or_create(path: &Path) -> Result<File, LedgerStoreError> {
    let io = |source| LedgerStoreError::Io { path: path.to_owned(), source };
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).map_err(io)
}

/// Tightens a ledger to owner-only (0600). Called once the file is known to be a ledger, so a foreign
/// file that is refused keeps its permissions.
fn tighten_permissions(file: &File, path: &Path) -> Result<(), LedgerStoreError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let io = |source| LedgerStoreError::Io { path: path.to_owned(), source };
        let mode = file.metadata().map_err(io)?.permissions().mode();
        if mode & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(io)?;
        }
    }
    #[cfg(not(unix))]
    let _ = (file, path);
    Ok(())
}

impl SqliteLedger {
    /// Opens (or creates) a ledger for writing with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, LedgerStoreError> {
        SqliteLedger::open_with(path, LedgerOptions::default())
    }

    /// Opens (or creates) a ledger for writing: creates the file 0600, takes the writer lock, checks
    /// identity and schema, migrates, marks calls a crashed writer left open as `interrupted`, and starts
    /// the writer thread. Needs a tokio runtime only for its async methods.
    pub fn open_with(path: impl AsRef<Path>, options: LedgerOptions) -> Result<Self, LedgerStoreError> {
        SqliteLedger::open_signed(path, options, None)
    }

    /// Opens (or creates) a ledger for writing, its checkpoints signed with `key` (see
    /// [`SqliteLedger::open_with`]; without a key they are written unsigned, and `ledger verify` says
    /// the ledger is not sealed). Records a writer before it left unsealed are sealed on open.
    pub fn open_signed(
        path: impl AsRef<Path>,
        options: LedgerOptions,
        key: Option<Arc<LedgerKey>>,
    ) -> Result<Self, LedgerStoreError> {
        let path = path.as_ref().to_owned();
        let lock = open_or_create(&path)?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(LedgerStoreError::Locked { path }),
            Err(std::fs::TryLockError::Error(source)) => return Err(LedgerStoreError::Io { path, source }),
        }
        let mut conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .at(&path)?;
        conn.busy_timeout(options.busy_timeout).at(&path)?;
        rollup::register_functions(&conn).at(&path)?;
        let version = check_identity(&conn, &path, true)?;
        tighten_permissions(&lock, &path)?;
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {}; PRAGMA foreign_keys = ON; \
             PRAGMA cache_size = -32768; PRAGMA wal_autocheckpoint = 0;",
            if options.synchronous_full { "FULL" } else { "NORMAL" }
        ))
        .at(&path)?;
        if version < SCHEMA_VERSION {
            schema::migrate(&mut conn, version, SCHEMA_VERSION).at(&path)?;
        }
        // Before the journal is replayed and emptied: the records no signed checkpoint covers must be
        // the journal's (`tail_proof.rs`), else they are marked unproven before anything seals them.
        let tail = crate::tail_proof::check_unsealed_tail(&conn, &path, key.is_some()).at(&path)?;
        // Before this writer registers: the replayed rows belong to the writer that journaled them
        // (its id range), and its calls they end must not be interrupted below.
        let (replayed, epoch) = indexer::replay(&mut conn, &path, options.batch_max_rows.max(1))?;
        let journal_path = journal::path_of(&path);
        let journal = Journal::start(&journal_path, epoch, options.synchronous_full)
            .map_err(|source| LedgerStoreError::Io { path: journal_path.clone(), source })?;
        let now = Timestamp::now().0;
        let writer_id = schema::register_writer(&conn, now).at(&path)?;
        let mut recovered = recover_crashed_writers(&mut conn, writer_id, now).at(&path)?;
        recovered.unknown_effects = crate::effects::mark_unknown_on_open(&conn).at(&path)?;
        if recovered.unknown_effects > 0 {
            tracing::warn!(path = %path.display(), effects = recovered.unknown_effects, "claimed effects a stopped writer left running: outcome unknown until an operator marks them");
        }
        if recovered != Recovered::default() {
            tracing::warn!(path = %path.display(), calls = recovered.interrupted_calls, sessions = recovered.cut_sessions, "calls a stopped writer left open marked interrupted, its open sessions cut");
        }
        if let crate::tail_proof::TailProof::Unproven { first, last, first_record, why } = &tail {
            tracing::error!(path = %path.display(), first, last, first_record, %why, "records a stopped writer left unsealed could not be proven against the journal: marked tail_unproven before sealing");
            crate::tail_proof::mark_unproven(&conn, writer_id, now, *first, *last, *first_record, why)
                .at(&path)?;
        }
        // What the writer before this one left unsealed (it stopped before closing, or had no key).
        if seal::seal_unsealed(&conn, key.as_deref(), writer_id, now, SealWhy::Open).at(&path)? {
            tracing::info!(path = %path.display(), "sealed the records the writer before left unsealed");
        }
        crate::side_chain::seal_side(&conn, key.as_deref(), writer_id, now).at(&path)?;
        let chain_head = chain::head(&conn).at(&path)?;
        let ledger_id = chain::ledger_id(&conn).at(&path)?;
        let mut index_chain = IndexChain::load(&conn, false, true).at(&path)?;
        index_chain.side_sealer = Some((key.clone(), writer_id));

        let (sender, receiver) = mpsc::channel(options.channel_capacity.max(1));
        let state = Arc::new(WriterState::new());
        let (done_tx, done_rx) = oneshot::channel();
        let checkpoints = Checkpointer::start(&path, options.busy_timeout)?;
        let (to_indexer, from_appender) = std::sync::mpsc::channel();
        let indexer = Indexer {
            conn,
            keys: KeyCache::default(),
            checkpoints: Some(checkpoints),
            receiver: from_appender,
            journal: journal
                .reader()
                .map_err(|source| LedgerStoreError::Io { path: journal_path.clone(), source })?,
            buffer: Vec::new(),
            chain: index_chain,
            key: key.clone(),
            state: state.clone(),
            options,
            writer_id,
            path: path.clone(),
        };
        let spawn_failed = |source| LedgerStoreError::Io { path: path.clone(), source };
        let indexing = std::thread::Builder::new()
            .name("portcullis-ledger-indexer".into())
            .spawn(move || indexer.run()) // closes the connection
            .map_err(spawn_failed)?;
        let appender = Appender {
            receiver,
            journal,
            indexer: IndexerLine { sender: to_indexer, thread: indexing.thread().clone() },
            state: state.clone(),
            options,
            writer_id,
            path: journal_path,
            chain: Chaining::new(chain_head, writer_id),
            key,
            ledger_id,
            unsealed: 0,
            side_unsealed: false,
        };
        std::thread::Builder::new()
            .name("portcullis-ledger-writer".into())
            .spawn(move || {
                let mut journal = appender.run();
                // Everything indexed: the journal is emptied (else the next open replays it).
                if matches!(indexing.join(), Ok(true))
                    && let Err(e) = journal.restart()
                {
                    tracing::warn!(error = %e, "journal could not be emptied at close");
                }
                drop(lock); // the writer lock is held until here: released before `close()` returns
                let _ = done_tx.send(());
            })
            .map_err(spawn_failed)?;
        Ok(SqliteLedger {
            path,
            sender,
            state,
            finished: Mutex::new(Some(done_rx)),
            writer_id,
            recovered,
            replayed,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// This process's writer id in the file.
    pub fn writer_id(&self) -> i64 {
        self.writer_id
    }

    /// Calls a crashed writer had left open, marked `interrupted` when this ledger opened.
    pub fn interrupted_on_open(&self) -> u64 {
        self.recovered.interrupted_calls
    }

    /// Claimed effects a stopped writer had left running, now of unknown outcome.
    pub fn unknown_effects_on_open(&self) -> u64 {
        self.recovered.unknown_effects
    }

    /// Sessions a stopped writer had left open, ended as `cut` when this ledger opened.
    pub fn cut_sessions_on_open(&self) -> u64 {
        self.recovered.cut_sessions
    }

    /// Journaled entries a writer that stopped without closing had not indexed, indexed on open.
    pub fn replayed_on_open(&self) -> u64 {
        self.replayed
    }

    /// Rows this writer has made durable (in the journal) so far.
    pub fn journaled_rows(&self) -> u64 {
        self.state.journaled.load(Ordering::Relaxed)
    }

    /// Rows journaled and not yet in SQLite (what readers do not see yet).
    pub fn index_backlog(&self) -> u64 {
        self.state.backlog()
    }

    /// Rows committed to SQLite by this writer so far.
    pub fn committed_rows(&self) -> u64 {
        self.state.committed.load(Ordering::Relaxed)
    }

    /// Transactions this writer committed so far (each with at least one row).
    pub fn commits(&self) -> u64 {
        self.state.commits.load(Ordering::Relaxed)
    }

    /// Commit failures, as they happen.
    pub fn subscribe_failures(&self) -> broadcast::Receiver<WriteFailure> {
        self.state.failures.subscribe()
    }

    async fn send(&self, command: Command) -> Result<(), LedgerStoreError> {
        self.sender.send(command).await.map_err(|_| LedgerStoreError::Closed)
    }

    pub async fn begin_session(&self, session: SessionInfo) -> Result<(), LedgerStoreError> {
        self.send(Command::Entry(Entry::Session(session))).await
    }

    pub async fn end_session(&self, id: &str, at: Timestamp) -> Result<(), LedgerStoreError> {
        self.send(Command::Entry(Entry::SessionEnd { id: id.to_owned(), at })).await
    }

    pub async fn record_approval(&self, approval: ApprovalRecord) -> Result<(), LedgerStoreError> {
        self.send(Command::Entry(Entry::Approval(Box::new(approval)))).await
    }

    /// Adds refused requests to their minute's row (see [`RefusalRow`]).
    pub async fn record_refusals(&self, refusals: RefusalRow) -> Result<(), LedgerStoreError> {
        self.send(Command::Entry(Entry::Refusal(refusals))).await
    }

    /// Records an event on an upstream tool's definition (and the pin it sets).
    pub async fn record_tool_pin(
        &self,
        event: crate::tool_pins::ToolPinEvent,
    ) -> Result<(), LedgerStoreError> {
        self.send(Command::Entry(Entry::ToolPin(event))).await
    }

    /// Records a change to a claimed effect (see [`crate::effects`]). A claim must be durable before its
    /// effect runs: follow it with [`SqliteLedger::flush_durable`].
    pub async fn record_effect(&self, change: crate::effects::EffectChange) -> Result<(), LedgerStoreError> {
        self.send(Command::Entry(Entry::Effect(change))).await
    }

    async fn barrier(&self, barrier: Barrier) -> Result<(), LedgerStoreError> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::Flush(barrier, tx)).await?;
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(message)) => Err(LedgerStoreError::Writer(message)),
            Err(_) => Err(LedgerStoreError::Closed),
        }
    }

    /// Returns once everything handed in before it is committed to SQLite (other connections and
    /// [`LedgerReader`](crate::LedgerReader)s see it), or with the commit's error.
    pub async fn flush(&self) -> Result<(), LedgerStoreError> {
        self.barrier(Barrier::Visible).await
    }

    /// Seals the chain as it stands (a signed checkpoint now, when records came since the last one) and
    /// returns once the seal is in SQLite: a verification right after finds every record sealed.
    pub async fn seal_now(&self) -> Result<(), LedgerStoreError> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::Seal(tx)).await?;
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(message)) => Err(LedgerStoreError::Writer(message)),
            Err(_) => Err(LedgerStoreError::Closed),
        }
    }

    /// Returns once everything handed in before it is durable (in the journal: a crash of the process
    /// loses none of it, the next open indexes it), or with the write's error. Readers may not see it
    /// yet. The harness's [`Ledger::flush`] and durable `started` records wait for this.
    pub async fn flush_durable(&self) -> Result<(), LedgerStoreError> {
        self.barrier(Barrier::Durable).await
    }

    /// Fail closed: while writes fail, no new call may start unaudited. Records of calls already running
    /// are still queued (and retried), never dropped.
    fn admit(&self, record: &ToolCallRecord) -> Result<(), LedgerError> {
        if record.kind == RecordKind::Started
            && let Some(failure) = self.state.failure()
        {
            return Err(LedgerError::Write(failure));
        }
        Ok(())
    }

    /// Drains, marks this writer's unfinished calls `interrupted`, and stops the writer.
    pub async fn close(&self) -> Result<(), LedgerStoreError> {
        let flushed = self.flush().await;
        self.state.closing.store(true, Ordering::Relaxed);
        self.send(Command::Shutdown).await?;
        let done = self.finished.lock().ok().and_then(|mut f| f.take());
        if let Some(done) = done {
            let _ = done.await;
        }
        flushed
    }
}

#[async_trait]
impl Ledger for SqliteLedger {
    async fn record(&self, record: ToolCallRecord) -> Result<(), LedgerError> {
        self.admit(&record)?;
        self.sender.send(Command::Record(record)).await.map_err(|_| LedgerError::Closed)
    }

    /// Into the channel without waiting when it has room (the dispatcher's path for nearly every record).
    fn offer(&self, record: ToolCallRecord) -> Result<Offered, LedgerError> {
        self.admit(&record)?;
        match self.sender.try_send(Command::Record(record)) {
            Ok(()) => Ok(Offered::Taken),
            Err(mpsc::error::TrySendError::Full(Command::Record(record))) => {
                Ok(Offered::Wait(Box::new(record)))
            }
            Err(_) => Err(LedgerError::Closed),
        }
    }

    /// Durable, not necessarily visible to readers yet (see [`SqliteLedger::flush_durable`]).
    async fn flush(&self) -> Result<(), LedgerError> {
        self.flush_durable().await.map_err(|e| match e {
            LedgerStoreError::Closed => LedgerError::Closed,
            other => LedgerError::Write(other.to_string()),
        })
    }
}
