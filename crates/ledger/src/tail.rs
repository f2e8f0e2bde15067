//! The ledger's fan-out: further sinks (a team's PostgreSQL, OpenTelemetry, a file) are fed by tailing
//! the committed records, never from the call's path. The SQLite file stays the one durable record a
//! call waits for; each sink gets the records after its own cursor, in id order, and its cursor moves
//! only once it took them, so a sink that is down or slow delays nobody and misses nothing: it catches
//! up from where it stopped, across restarts (the cursors live beside the ledger, `<ledger>.sinks.json`).

use crate::error::LedgerStoreError;
use crate::query::LedgerReader;
use crate::row::StoredRecord;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The most records one delivery carries.
pub const TAIL_BATCH: usize = 500;
/// How often an idle tail looks for new records.
pub const TAIL_POLL: Duration = Duration::from_millis(250);
/// How long a sink that failed is left alone before the next try (doubling up to [`MAX_BACKOFF`]).
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Somewhere committed records go besides the ledger.
#[async_trait]
pub trait RecordSink: Send + Sync {
    /// A stable name: the sink's cursor is kept under it.
    fn name(&self) -> &str;

    /// A local file the sink writes the records to, if any: protected from agents as the ledger is.
    fn local_file(&self) -> Option<&Path> {
        None
    }

    /// Takes `records` (in id order, after the last ones it took). `Ok` means they need never be sent
    /// again; an error keeps them for the next try.
    async fn deliver(&self, records: &[StoredRecord]) -> Result<(), String>;
}

/// Where each sink stands: the id of the last record it took.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SinkCursors(pub BTreeMap<String, i64>);

impl SinkCursors {
    /// The cursors' file of the ledger at `ledger`.
    pub fn file_of(ledger: &Path) -> PathBuf {
        let mut name = ledger.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        name.push(".sinks.json");
        ledger.with_file_name(name)
    }

    /// The cursors in `file` (none yet: every sink starts at the ledger's beginning).
    pub fn load(file: &Path) -> Result<SinkCursors, LedgerStoreError> {
        match std::fs::read(file) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| LedgerStoreError::NotALedger {
                path: file.to_owned(),
                why: format!("the sinks' cursors are not readable: {e}"),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(SinkCursors::default()),
            Err(source) => Err(LedgerStoreError::Io { path: file.to_owned(), source }),
        }
    }

    /// Writes the cursors whole (beside the file, then renamed over it: a crash leaves the old or the new).
    pub fn save(&self, file: &Path) -> Result<(), LedgerStoreError> {
        let io = |source| LedgerStoreError::Io { path: file.to_owned(), source };
        let temp = file.with_extension("json.next");
        let text = serde_json::to_vec_pretty(self).map_err(|e| io(std::io::Error::other(e)))?;
        std::fs::write(&temp, text).map_err(io)?;
        std::fs::rename(&temp, file).map_err(io)
    }
}

struct Follower {
    sink: Arc<dyn RecordSink>,
    after: i64,
    /// When it failed: not tried again before this.
    resting_until: Option<tokio::time::Instant>,
    backoff: Duration,
}

/// The tail of one ledger feeding its sinks.
pub struct LedgerTail {
    reader: Arc<Mutex<LedgerReader>>,
    cursors_file: PathBuf,
    followers: Vec<Follower>,
}

impl LedgerTail {
    /// A tail of the ledger at `ledger` for `sinks`, each from its saved cursor.
    pub fn open(ledger: &Path, sinks: Vec<Arc<dyn RecordSink>>) -> Result<LedgerTail, LedgerStoreError> {
        let reader = LedgerReader::open(ledger)?;
        let cursors_file = SinkCursors::file_of(ledger);
        let cursors = SinkCursors::load(&cursors_file)?;
        let followers = sinks
            .into_iter()
            .map(|sink| Follower {
                after: cursors.0.get(sink.name()).copied().unwrap_or(0),
                sink,
                resting_until: None,
                backoff: FIRST_BACKOFF,
            })
            .collect();
        Ok(LedgerTail { reader: Arc::new(Mutex::new(reader)), cursors_file, followers })
    }

    /// One round: every sink not resting gets up to [`TAIL_BATCH`] records after its cursor. Returns
    /// how many records were delivered (all sinks together).
    pub async fn pump(&mut self) -> usize {
        let now = tokio::time::Instant::now();
        let mut delivered = 0;
        let mut moved = false;
        for follower in &mut self.followers {
            if follower.resting_until.is_some_and(|until| now < until) {
                continue;
            }
            let reader = self.reader.clone();
            let after = follower.after;
            let read = tokio::task::spawn_blocking(move || {
                reader.lock().unwrap_or_else(PoisonError::into_inner).records(after, TAIL_BATCH)
            })
            .await;
            let records = match read {
                Ok(Ok(records)) => records,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "the ledger's tail could not read the ledger");
                    return delivered;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the ledger's tail stopped reading");
                    return delivered;
                }
            };
            let Some(last) = records.last().map(|r| r.id) else { continue };
            match follower.sink.deliver(&records).await {
                Ok(()) => {
                    follower.after = last;
                    follower.resting_until = None;
                    follower.backoff = FIRST_BACKOFF;
                    delivered += records.len();
                    moved = true;
                }
                Err(why) => {
                    tracing::warn!(sink = follower.sink.name(), %why, "a record sink failed: it is tried again later");
                    follower.resting_until = Some(now + follower.backoff);
                    follower.backoff = (follower.backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
        if moved && let Err(e) = self.cursors().save(&self.cursors_file) {
            tracing::warn!(error = %e, "the sinks' cursors were not saved (records may be sent again)");
        }
        delivered
    }

    /// Where each sink stands now.
    pub fn cursors(&self) -> SinkCursors {
        let mut saved = SinkCursors::load(&self.cursors_file).unwrap_or_default();
        for follower in &self.followers {
            saved.0.insert(follower.sink.name().to_owned(), follower.after);
        }
        saved
    }

    /// Pumps until `stop` resolves: at once again after a full batch, else every [`TAIL_POLL`]; one
    /// last round on the way out, so that what was committed before the stop is delivered.
    pub async fn run(mut self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        loop {
            let delivered = self.pump().await;
            if delivered >= TAIL_BATCH {
                continue;
            }
            tokio::select! {
                _ = &mut stop => break,
                _ = tokio::time::sleep(TAIL_POLL) => {}
            }
        }
        while self.pump().await >= TAIL_BATCH {}
    }
}
