//! The hub's further record sinks (a team ledger, OpenTelemetry, a file): fed by the ledger's tail
//! (`portcullis_ledger::tail`), started with the hub and drained when it closes, so that every record
//! committed before the close reaches them. A sink never sits on a call's path: a call waits for the
//! SQLite ledger only.

use crate::error::HubError;
use portcullis_ledger::LedgerTail;
pub use portcullis_ledger::RecordSink;
use std::path::Path;
use std::sync::Arc;
use tokio::sync::oneshot;

/// The sinks a hub feeds besides its ledger (none by default).
#[derive(Clone, Default)]
pub struct RecordSinks(pub Vec<Arc<dyn RecordSink>>);

impl std::fmt::Debug for RecordSinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|s| s.name())).finish()
    }
}

/// The tail feeding a hub's sinks.
pub struct RunningTail {
    stop: oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
    lags: Arc<std::sync::Mutex<Vec<portcullis_ledger::SinkLag>>>,
}

impl RunningTail {
    /// Starts the tail of the ledger at `db` for `sinks` (none without sinks).
    pub fn start(db: &Path, sinks: &RecordSinks) -> Result<Option<RunningTail>, HubError> {
        if sinks.0.is_empty() {
            return Ok(None);
        }
        let tail = LedgerTail::open(db, sinks.0.clone())?;
        let lags = tail.lags();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = tail.run_on_own_thread(stopped).map_err(HubError::Io)?;
        Ok(Some(RunningTail { stop, thread, lags }))
    }

    /// Where each sink stands now (as of the tail's last round).
    pub fn lags(&self) -> Vec<portcullis_ledger::SinkLag> {
        self.lags.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Delivers what is committed, then stops.
    pub async fn finish(self) {
        let _ = self.stop.send(());
        let thread = self.thread;
        match tokio::task::spawn_blocking(move || thread.join()).await {
            Ok(Ok(())) => {}
            _ => tracing::warn!("the ledger's tail stopped abnormally"),
        }
    }
}

/// A sink that appends each record as one JSON line to a file (created owner-only), synced per
/// delivery: the simplest further copy of the ledger, and the shape a shipper can tail. Delivery is at
/// least once (a crash between the write and the cursor's save sends the last batch again); each line
/// carries the record's `id` to tell.
pub struct JsonlFileSink {
    name: String,
    file: std::path::PathBuf,
}

impl JsonlFileSink {
    pub fn new(file: impl Into<std::path::PathBuf>) -> JsonlFileSink {
        let file = file.into();
        JsonlFileSink { name: format!("jsonl:{}", file.display()), file }
    }
}

#[async_trait::async_trait]
impl RecordSink for JsonlFileSink {
    fn name(&self) -> &str {
        &self.name
    }

    fn local_file(&self) -> Option<&Path> {
        Some(&self.file)
    }

    async fn deliver(&self, records: &[portcullis_ledger::StoredRecord]) -> Result<(), String> {
        let mut lines = Vec::new();
        for record in records {
            serde_json::to_writer(&mut lines, record).map_err(|e| e.to_string())?;
            lines.push(b'\n');
        }
        let file = self.file.clone();
        tokio::task::spawn_blocking(move || {
            use std::io::Write as _;
            use std::os::unix::fs::OpenOptionsExt as _;
            let mut out = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(&file)
                .map_err(|e| format!("{}: {e}", file.display()))?;
            out.write_all(&lines)
                .and_then(|()| out.sync_data())
                .map_err(|e| format!("{}: {e}", file.display()))
        })
        .await
        .map_err(|e| e.to_string())?
    }
}
