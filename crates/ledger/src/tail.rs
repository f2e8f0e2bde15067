//! The ledger's fan-out: further sinks (a team's PostgreSQL, OpenTelemetry, a file) are fed by tailing
//! the committed records, never from the call's path. The SQLite file stays the one durable record a
//! call waits for; each sink gets the records after its own cursor, in id order, and its cursor moves
//! only once it took them, so a sink that is down or slow delays nobody and misses nothing: it catches
//! up from where it stopped, across restarts (the cursors live beside the ledger, `<ledger>.sinks.json`).
//! A sink may also take the rows of the ledger's other tables (`side.rs`), each after a cursor of its own,
//! and each record's link in the hash chain with its canonical columns (a team ledger keeps the proof).

use crate::chain::{self, Link};
use crate::error::{AtPath, LedgerStoreError};
use crate::reader::LedgerReader;
use crate::row::StoredRecord;
use crate::side::{SideRow, SideTable};
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
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How much the tail's own thread lowers its priority: shipping yields the CPU to calls.
pub const TAIL_NICE: i32 = 10;
/// A sink this many records behind is warned about (again each time the lag doubles).
pub const LAG_WARNING: i64 = 10_000;

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

    /// Whether it takes each record's link in the chain with it ([`RecordSink::deliver_linked`]).
    fn takes_links(&self) -> bool {
        false
    }

    /// Takes `records` with their links (`links[i]` is `records[i]`'s; none for a record written before
    /// the chain), for a sink that [takes links](RecordSink::takes_links); by default, as `deliver`.
    async fn deliver_linked(
        &self,
        records: &[StoredRecord],
        _links: &[Option<RecordLink>],
    ) -> Result<(), String> {
        self.deliver(records).await
    }

    /// The ledger's other tables it takes (none by default).
    fn side_tables(&self) -> &[SideTable] {
        &[]
    }

    /// Takes rows of `table` changed after the last ones it took (in change order), as `deliver` does.
    async fn deliver_side(&self, _table: SideTable, _rows: &[SideRow]) -> Result<(), String> {
        Ok(())
    }

    /// Told once, before any delivery, the id of the ledger it follows.
    fn bind(&self, _ledger_id: &str) {}
}

/// A record's place in the hash chain, for a sink that ships the proof with the record: its link, and
/// its canonical columns (the exact values the link hashes, which [`chain::canonical_from_json`]
/// re-encodes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordLink {
    pub link: Link,
    /// The JSON array of its [`CHAINED_COLUMNS`](crate::chain::CHAINED_COLUMNS) values, in their order, as text (kept byte for byte:
    /// the body is one of them).
    pub columns: String,
}

impl LedgerReader {
    /// [`LedgerReader::records`], each with its link in the chain (none for a record from before it).
    pub fn linked_records(
        &self,
        after_id: i64,
        limit: usize,
    ) -> Result<(Vec<StoredRecord>, Vec<Option<RecordLink>>), LedgerStoreError> {
        let sql = format!(
            "SELECT {} FROM records WHERE id > ?1 ORDER BY id LIMIT ?2",
            chain::linked_record_columns()
        );
        let mut stmt = self.conn.prepare_cached(&sql).at(self.path())?;
        let rows = stmt
            .query_map([after_id, i64::try_from(limit).unwrap_or(i64::MAX)], chain::linked_record)
            .at(self.path())?
            .collect::<Result<Vec<_>, _>>()
            .at(self.path())?;
        let mut records = Vec::with_capacity(rows.len());
        let mut links = Vec::with_capacity(rows.len());
        for (record, columns) in rows {
            let link = match columns {
                Some((link, columns)) => Some(RecordLink {
                    link,
                    columns: serde_json::to_string(&columns)
                        .map_err(|e| LedgerStoreError::Export(format!("record {}: {e}", record.id)))?,
                }),
                None => None,
            };
            records.push(record);
            links.push(link);
        }
        Ok((records, links))
    }
}

/// The cursor key of `sink`'s rows of `table`.
pub fn side_cursor_key(sink: &str, table: SideTable) -> String {
    format!("{sink}#{}", table.name())
}

/// How far a sink is behind its ledger, and its last failure.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SinkLag {
    pub sink: String,
    /// The id of the last record it took, and the ledger's newest.
    pub shipped_through: i64,
    pub ledger_head: i64,
    /// Records and changed rows of the other tables not yet taken.
    pub records_behind: i64,
    pub rows_behind: i64,
    /// Why its last delivery failed, while it has not succeeded since.
    pub failing: Option<String>,
    /// At least [`LAG_WARNING`] records and rows behind.
    pub falling_behind: bool,
}

impl SinkCursors {
    /// How far each sink of these cursors stands behind the ledger `reader` reads (sinks named by
    /// their records' cursor; the others' keys are `sink#table`).
    pub fn lags(&self, reader: &LedgerReader) -> Result<Vec<SinkLag>, LedgerStoreError> {
        let head = reader.last_record_id()?;
        let mut heads = BTreeMap::new();
        for table in SideTable::ALL {
            heads.insert(table.name(), reader.side_head(table)?);
        }
        let mut lags = Vec::new();
        for (key, after) in &self.0 {
            if key.contains('#') {
                continue;
            }
            let rows_behind = (self.0.iter())
                .filter_map(|(k, at)| {
                    let table = k.strip_prefix(key.as_str())?.strip_prefix('#')?;
                    Some((heads.get(table).copied().unwrap_or(0) - at).max(0))
                })
                .sum();
            lags.push(SinkLag {
                sink: key.clone(),
                shipped_through: *after,
                ledger_head: head,
                records_behind: (head - after).max(0),
                rows_behind,
                failing: None,
                falling_behind: (head - after).max(0) + rows_behind >= LAG_WARNING,
            });
        }
        Ok(lags)
    }
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
    /// The cursor of each of the other tables it takes.
    side_after: BTreeMap<SideTable, i64>,
    failing: Option<String>,
    /// The lag last warned about (0: none).
    warned_at: i64,
    /// When it failed: not tried again before this.
    resting_until: Option<tokio::time::Instant>,
    backoff: Duration,
}

/// The tail of one ledger feeding its sinks.
pub struct LedgerTail {
    reader: Arc<Mutex<LedgerReader>>,
    cursors_file: PathBuf,
    followers: Vec<Follower>,
    /// Where each sink stands, after each round (for whoever shows it).
    lags: Arc<Mutex<Vec<SinkLag>>>,
}

impl LedgerTail {
    /// A tail of the ledger at `ledger` for `sinks`, each from its saved cursor.
    pub fn open(ledger: &Path, sinks: Vec<Arc<dyn RecordSink>>) -> Result<LedgerTail, LedgerStoreError> {
        let reader = LedgerReader::open(ledger)?;
        let ledger_id = reader.ledger_id()?;
        let cursors_file = SinkCursors::file_of(ledger);
        let cursors = SinkCursors::load(&cursors_file)?;
        let followers = sinks
            .into_iter()
            .map(|sink| {
                sink.bind(&ledger_id);
                let side_after = (sink.side_tables().iter())
                    .map(|t| (*t, cursors.0.get(&side_cursor_key(sink.name(), *t)).copied().unwrap_or(0)))
                    .collect();
                Follower {
                    after: cursors.0.get(sink.name()).copied().unwrap_or(0),
                    side_after,
                    sink,
                    resting_until: None,
                    backoff: FIRST_BACKOFF,
                    failing: None,
                    warned_at: 0,
                }
            })
            .collect();
        Ok(LedgerTail {
            reader: Arc::new(Mutex::new(reader)),
            cursors_file,
            followers,
            lags: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// Where each sink stands, kept current by every round.
    pub fn lags(&self) -> Arc<Mutex<Vec<SinkLag>>> {
        self.lags.clone()
    }

    /// One round: every sink not resting gets up to [`TAIL_BATCH`] records after its cursor, then up
    /// to as many rows of each other table it takes. Returns how many records and rows were delivered
    /// (all sinks together).
    pub async fn pump(&mut self) -> usize {
        let now = tokio::time::Instant::now();
        let mut delivered = 0;
        let mut moved = false;
        for follower in &mut self.followers {
            if follower.resting_until.is_some_and(|until| now < until) {
                continue;
            }
            let after = follower.after;
            let linked = follower.sink.takes_links();
            let Some((records, links)) = read(&self.reader, move |r| {
                if linked {
                    r.linked_records(after, TAIL_BATCH)
                } else {
                    r.records(after, TAIL_BATCH).map(|records| (records, Vec::new()))
                }
            })
            .await
            else {
                return delivered;
            };
            let mut outcome = Ok(0);
            if let Some(last) = records.last().map(|r| r.id) {
                let delivery = if linked {
                    follower.sink.deliver_linked(&records, &links).await
                } else {
                    follower.sink.deliver(&records).await
                };
                outcome = delivery.map(|()| {
                    follower.after = last;
                    records.len()
                });
            }
            for table in follower.sink.side_tables().to_vec() {
                let Ok(before) = outcome else { break };
                let after = follower.side_after.get(&table).copied().unwrap_or(0);
                let Some(rows) = read(&self.reader, move |r| r.side_rows(table, after, TAIL_BATCH)).await
                else {
                    return delivered;
                };
                let Some(last) = rows.last().map(|r| r.cursor) else { continue };
                outcome = follower.sink.deliver_side(table, &rows).await.map(|()| {
                    follower.side_after.insert(table, last);
                    before + rows.len()
                });
            }
            match outcome {
                Ok(n) => {
                    follower.resting_until = None;
                    follower.backoff = FIRST_BACKOFF;
                    follower.failing = None;
                    delivered += n;
                    moved |= n > 0;
                }
                Err(why) => {
                    tracing::warn!(sink = follower.sink.name(), %why, "a record sink failed: it is tried again later");
                    follower.failing = Some(why);
                    follower.resting_until = Some(now + follower.backoff);
                    follower.backoff = (follower.backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
        if moved && let Err(e) = self.cursors().save(&self.cursors_file) {
            tracing::warn!(error = %e, "the sinks' cursors were not saved (records may be sent again)");
        }
        self.measure().await;
        delivered
    }

    /// Measures each sink's lag (kept for [`LedgerTail::lags`]) and warns of one that grows.
    async fn measure(&mut self) {
        let cursors = self.followed();
        let Some(mut lags) = read(&self.reader, move |r| cursors.lags(r)).await else { return };
        for lag in &mut lags {
            let Some(follower) = self.followers.iter_mut().find(|f| f.sink.name() == lag.sink) else {
                continue;
            };
            lag.failing.clone_from(&follower.failing);
            let behind = lag.records_behind + lag.rows_behind;
            if behind >= LAG_WARNING && behind >= follower.warned_at * 2 {
                tracing::warn!(
                    sink = lag.sink,
                    records_behind = lag.records_behind,
                    rows_behind = lag.rows_behind,
                    failing = lag.failing.as_deref().unwrap_or(""),
                    "a record sink is falling behind the ledger (the ledger keeps what it has not taken)"
                );
                follower.warned_at = behind;
            } else if behind < LAG_WARNING / 2 {
                follower.warned_at = 0;
            }
        }
        *self.lags.lock().unwrap_or_else(PoisonError::into_inner) = lags;
    }

    /// Where each sink stands now: this tail's, and any other the cursors' file keeps.
    pub fn cursors(&self) -> SinkCursors {
        let mut saved = SinkCursors::load(&self.cursors_file).unwrap_or_default();
        saved.0.extend(self.followed().0);
        saved
    }

    /// Where this tail's own sinks stand (from memory: measured every round, no file read).
    fn followed(&self) -> SinkCursors {
        let mut cursors = SinkCursors::default();
        for follower in &self.followers {
            cursors.0.insert(follower.sink.name().to_owned(), follower.after);
            for (table, after) in &follower.side_after {
                cursors.0.insert(side_cursor_key(follower.sink.name(), *table), *after);
            }
        }
        cursors
    }

    /// Runs the tail on a thread of its own, at a lower priority and on a runtime of its own, until
    /// `stop` fires (or is dropped); its sinks' connections live on that runtime.
    pub fn run_on_own_thread(
        self,
        stop: tokio::sync::oneshot::Receiver<()>,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        std::thread::Builder::new().name("ledger-tail".into()).spawn(move || {
            if let Err(e) = rustix::process::nice(TAIL_NICE) {
                tracing::debug!(error = %e, "the ledger's tail keeps its priority");
            }
            runtime.block_on(self.run(async move {
                let _ = stop.await;
            }));
        })
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

/// Runs `f` on the reader off the async threads; `None` (warned) when it fails.
async fn read<T: Send + 'static>(
    reader: &Arc<Mutex<LedgerReader>>,
    f: impl FnOnce(&LedgerReader) -> Result<T, LedgerStoreError> + Send + 'static,
) -> Option<T> {
    let reader = reader.clone();
    match tokio::task::spawn_blocking(move || f(&reader.lock().unwrap_or_else(PoisonError::into_inner))).await
    {
        Ok(Ok(value)) => Some(value),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "the ledger's tail could not read the ledger");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "the ledger's tail stopped reading");
            None
        }
    }
}
