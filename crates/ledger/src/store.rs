//! The writing side: [`SqliteLedger`] opens (creating, migrating, locking and recovering) a ledger file and
//! hands records to one writer thread over a bounded channel. The thread commits in batches (group
//! commit: up to N rows, or whatever arrived within T ms); `flush()` is a durability barrier; a full
//! channel makes callers wait (never drops); a failed commit keeps its rows, retries, and surfaces as an
//! error on `flush()`, on new `started` records and as a [`WriteFailure`] broadcast.

use crate::checkpoint::Checkpointer;
use crate::error::{AtPath, LedgerStoreError};
use crate::recovery::{OpenCalls, Recovered, interrupt_open_calls, recover_crashed_writers};
use crate::refusals::RefusalRow;
use crate::rollup::{self, Dims, KeyCache, Pending};
use crate::row::{body_of, decided_columns, policy_columns, search_text};
use crate::schema::{self, APPLICATION_ID, SCHEMA_VERSION};
use async_trait::async_trait;
use portcullis_harness::{Ledger, LedgerError, RecordKind, Timestamp, ToolCallRecord};
use rusqlite::{Connection, OpenFlags, params};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, mpsc, oneshot};

pub use crate::recovery::INTERRUPTED_MESSAGE;
pub use crate::sessions::{ApprovalOutcome, ApprovalRecord, SessionInfo};

/// How the writer behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerOptions {
    /// Most rows in one transaction.
    pub batch_max_rows: usize,
    /// How long the writer may wait for more rows after the first one of a batch (0: commit as soon as
    /// the queue is drained; batches still grow by themselves while a commit is under way).
    pub batch_max_delay: Duration,
    /// Records that may wait in the channel before callers are made to wait.
    pub channel_capacity: usize,
    /// `synchronous=FULL` (survives power loss) instead of `NORMAL` (survives process crashes).
    pub synchronous_full: bool,
    pub busy_timeout: Duration,
}

impl Default for LedgerOptions {
    fn default() -> Self {
        LedgerOptions {
            batch_max_rows: 4096,
            batch_max_delay: Duration::ZERO,
            channel_capacity: 16_384,
            synchronous_full: false,
            busy_timeout: Duration::from_secs(5),
        }
    }
}

/// A commit that failed, as broadcast to subscribers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFailure {
    pub message: String,
    /// Rows waiting to be retried.
    pub pending_rows: usize,
}

/// Calls handed in with a `started` record and no terminal one yet, with the text of their arguments
/// (for the search document of their terminal record). Shared by callers and the writer.
type RunningCalls = Arc<Mutex<HashMap<(Arc<str>, Arc<str>), String>>>;

/// A record turned into column values by the caller (serialization happens on the caller's thread,
/// so the single writer thread only binds and inserts).
struct PreparedRow {
    session_id: Arc<str>,
    run_id: Arc<str>,
    call_id: Arc<str>,
    call_key: i64,
    owner: Arc<str>,
    tool: Arc<str>,
    kind: RecordKind,
    status: Option<&'static str>,
    at: i64,
    started_at: Option<i64>,
    duration_us: Option<i64>,
    reason: Option<&'static str>,
    error_code: Option<String>,
    decided: &'static str,
    decided_rule: Option<String>,
    decided_source: Option<String>,
    decided_operator: Option<String>,
    policy_decision: Option<&'static str>,
    policy_rule: Option<String>,
    redacted: bool,
    body: String,
    /// The call's whole search document, on terminal records only.
    search: Option<String>,
}

impl PreparedRow {
    fn of(record: ToolCallRecord, running: &RunningCalls) -> Result<Self, serde_json::Error> {
        let body = body_of(&record);
        let key = (record.call.session_id.clone(), record.call.call_id.clone());
        let search = match record.kind {
            RecordKind::Started => {
                if let Ok(mut running) = running.lock()
                    && running.len() < MAX_RUNNING_TRACKED
                {
                    running.insert(key, search_text(&body));
                }
                None
            }
            RecordKind::Progress => None,
            RecordKind::Finished | RecordKind::Error | RecordKind::Blocked => {
                let arguments = running.lock().ok().and_then(|mut r| r.remove(&key)).unwrap_or_default();
                Some(format!("{} {arguments} {}", record.tool_name, search_text(&body)))
            }
        };
        let terminal = matches!(record.kind, RecordKind::Finished | RecordKind::Error | RecordKind::Blocked);
        let duration_us = match record.kind {
            RecordKind::Finished | RecordKind::Error => {
                record.started_at.map(|s| record.at.0.saturating_sub(s.0))
            }
            _ => None,
        };
        let (decided, rule, source, operator) = decided_columns(&record.decided_by);
        let (policy_decision, policy_rule) = policy_columns(record.policy.as_ref());
        Ok(PreparedRow {
            session_id: record.call.session_id.clone(),
            run_id: record.call.run_id.clone(),
            call_id: record.call.call_id.clone(),
            call_key: schema::call_key(&record.call.call_id),
            owner: record.call.owner.clone(),
            tool: record.tool_name.clone(),
            kind: record.kind,
            status: terminal.then(|| record.kind.as_str()),
            at: record.at.0,
            started_at: record.started_at.map(|t| t.0),
            duration_us,
            reason: record.blocked_reason.map(|r| r.as_str()),
            error_code: record.error.as_ref().map(|e| e.code.clone()),
            decided,
            decided_rule: rule.map(str::to_owned),
            decided_source: source.map(str::to_owned),
            decided_operator: operator,
            policy_decision,
            policy_rule,
            redacted: record.redacted,
            search,
            body: serde_json::to_string(&body)?,
        })
    }
}

enum Command {
    Record(PreparedRow),
    Session(SessionInfo),
    SessionEnd { id: String, at: Timestamp },
    Approval(ApprovalRecord),
    Refusal(RefusalRow),
    Flush(oneshot::Sender<Result<(), String>>),
    Shutdown,
}

/// State the callers and the writer thread share.
struct WriterState {
    failure: Mutex<Option<String>>,
    failures: broadcast::Sender<WriteFailure>,
    committed: AtomicU64,
    /// Transactions committed (with at least one row): rows per commit is how well commits group.
    commits: AtomicU64,
}

impl WriterState {
    fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }
}

/// The durable ledger.
pub struct SqliteLedger {
    path: PathBuf,
    sender: mpsc::Sender<Command>,
    state: Arc<WriterState>,
    finished: Mutex<Option<oneshot::Receiver<()>>>,
    writer_id: i64,
    recovered: Recovered,
    running: RunningCalls,
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

/// Checks the identity of an opened database and migrates it; refuses foreign and newer files.
pub(crate) fn check_identity(
    conn: &Connection,
    path: &Path,
    allow_empty: bool,
) -> Result<i64, LedgerStoreError> {
    let (app, version) = schema::identity(conn).map_err(|e| match e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
            LedgerStoreError::NotALedger { path: path.to_owned(), why: "not an SQLite database".into() }
        }
        other => LedgerStoreError::Sqlite { path: path.to_owned(), source: other },
    })?;
    if app == 0 && version == 0 {
        if allow_empty && schema::is_empty(conn).at(path)? {
            return Ok(0);
        }
        return Err(LedgerStoreError::NotALedger {
            path: path.to_owned(),
            why: "an SQLite database of another application".into(),
        });
    }
    if app != APPLICATION_ID {
        return Err(LedgerStoreError::NotALedger {
            path: path.to_owned(),
            why: format!("application id {app:#x} is not Portcullis's"),
        });
    }
    if version > SCHEMA_VERSION {
        return Err(LedgerStoreError::NewerSchema {
            path: path.to_owned(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(version)
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
        let now = Timestamp::now().0;
        let writer_id = schema::register_writer(&conn, now).at(&path)?;
        let recovered = recover_crashed_writers(&mut conn, writer_id, now).at(&path)?;
        if recovered != Recovered::default() {
            tracing::warn!(path = %path.display(), calls = recovered.interrupted_calls, sessions = recovered.cut_sessions, "calls a stopped writer left open marked interrupted, its open sessions cut");
        }

        let (sender, receiver) = mpsc::channel(options.channel_capacity.max(1));
        let (failures, _) = broadcast::channel(64);
        let state = Arc::new(WriterState {
            failure: Mutex::new(None),
            failures,
            committed: AtomicU64::new(0),
            commits: AtomicU64::new(0),
        });
        let (done_tx, done_rx) = oneshot::channel();
        let running: RunningCalls = Arc::new(Mutex::new(HashMap::new()));
        let checkpoints = Checkpointer::start(&path, options.busy_timeout)?;
        let writer = Writer {
            conn,
            keys: KeyCache::default(),
            checkpoints: Some(checkpoints),
            running: running.clone(),
            receiver,
            state: state.clone(),
            options,
            writer_id,
            path: path.clone(),
        };
        std::thread::Builder::new()
            .name("portcullis-ledger-writer".into())
            .spawn(move || {
                writer.run(); // closes the connection
                drop(lock); // the writer lock is held until here: released before `close()` returns
                let _ = done_tx.send(());
            })
            .map_err(|source| LedgerStoreError::Io { path: path.clone(), source })?;
        Ok(SqliteLedger {
            path,
            sender,
            state,
            finished: Mutex::new(Some(done_rx)),
            writer_id,
            recovered,
            running,
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

    /// Sessions a stopped writer had left open, ended as `cut` when this ledger opened.
    pub fn cut_sessions_on_open(&self) -> u64 {
        self.recovered.cut_sessions
    }

    /// Rows committed by this writer so far.
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
        self.send(Command::Session(session)).await
    }

    pub async fn end_session(&self, id: &str, at: Timestamp) -> Result<(), LedgerStoreError> {
        self.send(Command::SessionEnd { id: id.to_owned(), at }).await
    }

    pub async fn record_approval(&self, approval: ApprovalRecord) -> Result<(), LedgerStoreError> {
        self.send(Command::Approval(approval)).await
    }

    /// Adds refused requests to their minute's row (see [`RefusalRow`]).
    pub async fn record_refusals(&self, refusals: RefusalRow) -> Result<(), LedgerStoreError> {
        self.send(Command::Refusal(refusals)).await
    }

    /// Returns once everything handed in before it is committed, or with the commit's error.
    pub async fn flush(&self) -> Result<(), LedgerStoreError> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::Flush(tx)).await?;
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(message)) => Err(LedgerStoreError::Writer(message)),
            Err(_) => Err(LedgerStoreError::Closed),
        }
    }

    /// Drains, marks this writer's unfinished calls `interrupted`, and stops the writer.
    pub async fn close(&self) -> Result<(), LedgerStoreError> {
        let flushed = self.flush().await;
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
        // Fail closed: while commits fail, no new call may start unaudited. Records of calls already
        // running are still queued (and retried), never dropped.
        if record.kind == RecordKind::Started
            && let Some(failure) = self.state.failure()
        {
            return Err(LedgerError::Write(failure));
        }
        let row = PreparedRow::of(record, &self.running)
            .map_err(|e| LedgerError::Write(format!("record not serializable: {e}")))?;
        self.sender.send(Command::Record(row)).await.map_err(|_| LedgerError::Closed)
    }

    async fn flush(&self) -> Result<(), LedgerError> {
        SqliteLedger::flush(self).await.map_err(|e| match e {
            LedgerStoreError::Closed => LedgerError::Closed,
            other => LedgerError::Write(other.to_string()),
        })
    }
}

/// Running calls whose arguments the writer keeps for their search document (beyond: not searchable by
/// arguments, still recorded).
const MAX_RUNNING_TRACKED: usize = 100_000;

struct Writer {
    conn: Connection,
    /// `call_keys` ids of the rollups (forgotten when a commit fails: its new keys rolled back).
    keys: KeyCache,
    checkpoints: Option<Checkpointer>,
    running: RunningCalls,
    receiver: mpsc::Receiver<Command>,
    state: Arc<WriterState>,
    options: LedgerOptions,
    writer_id: i64,
    path: PathBuf,
}

/// Commands waiting for one commit.
#[derive(Default)]
struct Batch {
    rows: Vec<Command>,
    waiters: Vec<oneshot::Sender<Result<(), String>>>,
    shutdown: bool,
    closed: bool,
}

impl Batch {
    fn take(&mut self, command: Command) {
        match command {
            Command::Flush(waiter) => self.waiters.push(waiter),
            Command::Shutdown => self.shutdown = true,
            other => self.rows.push(other),
        }
    }
}

impl Writer {
    fn run(mut self) {
        let mut batch = Batch::default();
        let mut failures = 0u32;
        loop {
            if batch.rows.is_empty() && batch.waiters.is_empty() && !batch.shutdown {
                match self.receiver.blocking_recv() {
                    Some(command) => batch.take(command),
                    None => batch.closed = true,
                }
            }
            self.fill(&mut batch);
            match self.commit(&batch.rows) {
                Ok(()) => {
                    failures = 0;
                    if !batch.rows.is_empty()
                        && let Some(c) = &self.checkpoints
                    {
                        c.nudge();
                    }
                    self.state.committed.fetch_add(batch.rows.len() as u64, Ordering::Relaxed);
                    if !batch.rows.is_empty() {
                        self.state.commits.fetch_add(1, Ordering::Relaxed);
                    }
                    batch.rows.clear();
                    if let Ok(mut f) = self.state.failure.lock() {
                        *f = None;
                    }
                    for waiter in batch.waiters.drain(..) {
                        let _ = waiter.send(Ok(()));
                    }
                }
                Err(e) => {
                    failures += 1;
                    self.keys.forget();
                    let message =
                        format!("{}: commit of {} rows failed: {e}", self.path.display(), batch.rows.len());
                    tracing::error!(%message, attempt = failures, "ledger commit failed; rows kept for retry");
                    if let Ok(mut f) = self.state.failure.lock() {
                        *f = Some(message.clone());
                    }
                    let _ = self
                        .state
                        .failures
                        .send(WriteFailure { message: message.clone(), pending_rows: batch.rows.len() });
                    for waiter in batch.waiters.drain(..) {
                        let _ = waiter.send(Err(message.clone()));
                    }
                    if (batch.shutdown || batch.closed) && failures >= 20 {
                        tracing::error!(
                            rows = batch.rows.len(),
                            "ledger writer giving up at shutdown: rows NOT written"
                        );
                        return;
                    }
                    std::thread::sleep(Duration::from_millis((10u64 << failures.min(6)).min(1000)));
                    continue;
                }
            }
            if batch.shutdown || batch.closed {
                break;
            }
        }
        self.close_writer();
    }

    /// Adds whatever is queued (up to the batch size), waiting up to `batch_max_delay` for more.
    fn fill(&mut self, batch: &mut Batch) {
        let deadline = Instant::now() + self.options.batch_max_delay;
        loop {
            while batch.rows.len() < self.options.batch_max_rows && !batch.shutdown {
                match self.receiver.try_recv() {
                    Ok(command) => batch.take(command),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        batch.closed = true;
                        break;
                    }
                }
            }
            let now = Instant::now();
            if batch.rows.len() >= self.options.batch_max_rows
                || !batch.waiters.is_empty()
                || batch.shutdown
                || batch.closed
                || now >= deadline
            {
                return;
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(1)));
        }
    }

    fn commit(&mut self, rows: &[Command]) -> rusqlite::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let writer_id = self.writer_id;
        let tx = self.conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO records (writer_id, session_id, run_id, call_id, call_key, owner, tool, kind, status,
                     at, started_at, duration_us, reason, error_code, decided_by, decided_rule, decided_source,
                     decided_operator, redacted, body, policy_decision, policy_rule)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
                     ?21, ?22)",
            )?;
            let mut index = tx.prepare_cached("INSERT INTO records_fts(rowid, content) VALUES (?1, ?2)")?;
            for command in rows {
                match command {
                    Command::Record(row) => {
                        insert.execute(params![
                            writer_id,
                            &*row.session_id,
                            &*row.run_id,
                            &*row.call_id,
                            row.call_key,
                            &*row.owner,
                            &*row.tool,
                            row.kind.as_str(),
                            row.status,
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
                        ])?;
                        // One search document per call, at its terminal record.
                        if let Some(text) = &row.search {
                            index.execute(params![tx.last_insert_rowid(), text])?;
                        }
                    }
                    Command::Session(s) => {
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
                    }
                    Command::SessionEnd { id, at } => {
                        tx.prepare_cached(
                            "UPDATE sessions SET ended_at = ?1, end_reason = 'closed' WHERE id = ?2",
                        )?
                        .execute(params![at.0, id])?;
                    }
                    Command::Approval(a) => {
                        tx.prepare_cached(
                            "INSERT INTO approvals (session_id, call_id, tool, requested_at, resolved_at, outcome,
                                 operator, note, rule_written)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
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
                            a.rule_written
                        ])?;
                    }
                    Command::Refusal(r) => crate::refusals::upsert(&tx, r)?,
                    Command::Flush(_) | Command::Shutdown => {}
                }
            }
            // The hourly rollups of the calls this batch ends, in the same transaction as their records.
            let mut ended = Pending::default();
            for command in rows {
                if let Command::Record(row) = command
                    && let Some(status) = row.status
                {
                    let dims = Dims {
                        tool: Cow::Borrowed(&*row.tool),
                        status: Cow::Borrowed(status),
                        reason: row.reason.map(Cow::Borrowed),
                        decided_by: Cow::Borrowed(row.decided),
                        rule: row.decided_rule.as_deref().map(Cow::Borrowed),
                        policy_decision: row.policy_decision.map(Cow::Borrowed),
                        owner: Cow::Borrowed(&*row.owner),
                    };
                    ended.add(row.at, dims, row.duration_us);
                }
            }
            if !ended.is_empty() {
                ended.write(&tx, &mut self.keys)?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// On clean close: this writer's unfinished calls become `interrupted`; the writer is marked closed.
    fn close_writer(&mut self) {
        if let Some(checkpoints) = self.checkpoints.take() {
            checkpoints.stop();
        }
        let now = Timestamp::now().0;
        let writer_id = self.writer_id;
        let result = (|| -> rusqlite::Result<u64> {
            let tx = self.conn.transaction()?;
            // The calls this writer knows are running; all of its range if it lost track (over the cap).
            let running: Vec<(Arc<str>, Arc<str>)> =
                self.running.lock().map(|r| r.keys().cloned().collect()).unwrap_or_default();
            let n = if running.len() < MAX_RUNNING_TRACKED {
                let mut n = 0;
                for (session_id, call_id) in &running {
                    let scope = OpenCalls::Call { session_id, call_id };
                    n += interrupt_open_calls(&tx, scope, writer_id, now)?;
                }
                n
            } else {
                interrupt_open_calls(&tx, OpenCalls::OfWriter(writer_id), writer_id, now)?
            };
            tx.execute("UPDATE writers SET closed_at = ?1 WHERE id = ?2", params![now, writer_id])?;
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

/// Opens a read-only connection (works while another process writes).
pub(crate) fn open_read_only(path: &Path) -> Result<Connection, LedgerStoreError> {
    if !path.exists() {
        return Err(LedgerStoreError::Missing { path: path.to_owned() });
    }
    let conn =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .at(path)?;
    conn.busy_timeout(Duration::from_secs(5)).at(path)?;
    check_identity(&conn, path, false)?;
    Ok(conn)
}
