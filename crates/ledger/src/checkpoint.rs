//! The WAL checkpointer: copies the WAL back into the database on its own thread and connection, so the
//! writer's commits never pay for it. Split from `store.rs`.

use crate::error::{AtPath, LedgerStoreError};
use crate::options::BACKGROUND_NICE;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::time::Duration;

/// Copies the WAL back into the database on its own thread and connection, so the writer never pays
/// for checkpoints (`wal_autocheckpoint` is off on the writer's connection). Passive: it never blocks
/// the writer or readers.
pub(crate) struct Checkpointer {
    wake: std::sync::mpsc::SyncSender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Checkpointer {
    pub(crate) fn start(path: &Path, busy_timeout: Duration) -> Result<Self, LedgerStoreError> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .at(path)?;
        conn.busy_timeout(busy_timeout).at(path)?;
        let (wake, woken) = std::sync::mpsc::sync_channel::<()>(1);
        let shown = path.display().to_string();
        let thread = std::thread::Builder::new()
            .name("portcullis-ledger-checkpoint".into())
            .spawn(move || {
                // Background work, like the indexer's: calls never wait for it.
                if let Err(e) = rustix::process::nice(BACKGROUND_NICE) {
                    tracing::debug!(error = %e, "ledger checkpointer keeps its priority");
                }
                while woken.recv().is_ok() {
                    // Let a burst of commits pass, then copy back what they wrote.
                    std::thread::sleep(Duration::from_millis(25));
                    while woken.try_recv().is_ok() {}
                    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                        tracing::warn!(path = %shown, error = %e, "WAL checkpoint failed");
                    }
                }
            })
            .map_err(|source| LedgerStoreError::Io { path: path.to_owned(), source })?;
        Ok(Checkpointer { wake, thread })
    }

    pub(crate) fn nudge(&self) {
        let _ = self.wake.try_send(());
    }

    pub(crate) fn stop(self) {
        drop(self.wake);
        let _ = self.thread.join();
    }
}
