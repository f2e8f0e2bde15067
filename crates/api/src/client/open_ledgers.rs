//! The ledgers a client holds open for browsing, by id: at most [`MAX_OPEN`] (opening one more closes
//! the one used least recently) and each closed after [`IDLE_CLOSE`] without a query, so a front end
//! that forgets to close never holds files and readers without end.

use crate::error::{ApiError, ErrorCode};
use crate::ledger_browse::BrowsedLedger;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The most ledgers one client holds open.
pub const MAX_OPEN: usize = 16;
/// An open ledger not queried for this long is closed.
pub const IDLE_CLOSE: Duration = Duration::from_secs(30 * 60);

struct Held {
    ledger: Arc<BrowsedLedger>,
    used: Instant,
}

#[derive(Default)]
pub(super) struct OpenLedgers {
    next: Mutex<u32>,
    open: Mutex<HashMap<u32, Held>>,
}

impl OpenLedgers {
    fn lock(&self) -> MutexGuard<'_, HashMap<u32, Held>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds `ledger` open under a new id, closing idle ones and, past [`MAX_OPEN`], the least recent.
    pub(super) fn hold(&self, ledger: BrowsedLedger, now: Instant) -> u32 {
        let id = {
            let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
            *next += 1;
            *next
        };
        let mut open = self.lock();
        open.retain(|_, held| now.saturating_duration_since(held.used) < IDLE_CLOSE);
        while open.len() >= MAX_OPEN {
            let Some(oldest) = open.iter().min_by_key(|(_, held)| held.used).map(|(id, _)| *id) else {
                break;
            };
            open.remove(&oldest);
        }
        open.insert(id, Held { ledger: Arc::new(ledger), used: now });
        id
    }

    /// Ledger `id`, marked used at `now`; `bad_argument` when it is not (or no longer) open.
    pub(super) fn get(&self, id: u32, now: Instant) -> Result<Arc<BrowsedLedger>, ApiError> {
        let mut open = self.lock();
        match open.get_mut(&id) {
            Some(held) if now.saturating_duration_since(held.used) < IDLE_CLOSE => {
                held.used = now;
                Ok(held.ledger.clone())
            }
            _ => {
                open.remove(&id);
                Err(ApiError::new(
                    ErrorCode::BadArgument,
                    format!("ledger {id} is not open (closed, or idle too long): open it again"),
                    json!({ "ledger": id }),
                ))
            }
        }
    }

    pub(super) fn close(&self, id: u32) -> bool {
        self.lock().remove(&id).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::LedgerWriter;

    async fn browsed(dir: &std::path::Path) -> BrowsedLedger {
        let path = dir.join("calls.db");
        if !path.exists() {
            LedgerWriter::open(&path).unwrap().close().await.unwrap();
        }
        BrowsedLedger::open(&path).unwrap()
    }

    #[tokio::test]
    async fn the_least_recently_used_is_closed_past_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let ledgers = OpenLedgers::default();
        let start = Instant::now();
        let first = ledgers.hold(browsed(dir.path()).await, start);
        let mut last = first;
        for i in 1..MAX_OPEN as u64 {
            last = ledgers.hold(browsed(dir.path()).await, start + Duration::from_secs(i));
        }
        // The first is used again: the second becomes the least recent.
        ledgers.get(first, start + Duration::from_secs(100)).unwrap();
        ledgers.hold(browsed(dir.path()).await, start + Duration::from_secs(101));
        assert!(ledgers.get(first, start + Duration::from_secs(102)).is_ok());
        assert!(ledgers.get(first + 1, start + Duration::from_secs(102)).is_err(), "the least recent closed");
        assert!(ledgers.get(last, start + Duration::from_secs(102)).is_ok());
    }

    #[tokio::test]
    async fn an_idle_ledger_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let ledgers = OpenLedgers::default();
        let start = Instant::now();
        let id = ledgers.hold(browsed(dir.path()).await, start);
        assert!(ledgers.get(id, start + IDLE_CLOSE / 2).is_ok());
        let e = ledgers.get(id, start + IDLE_CLOSE / 2 + IDLE_CLOSE).err().unwrap();
        assert_eq!(e.code, ErrorCode::BadArgument);
        assert!(!ledgers.close(id), "already closed");
    }
}
