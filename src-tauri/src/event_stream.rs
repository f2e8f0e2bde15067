//! The operator's event feed ([`OperatorApi::events`]) streamed to the window through a Tauri channel,
//! in batches (flushed every [`BATCH_EVERY`] or at [`BATCH_ITEMS`] items), so a thousand calls a second
//! cost the webview twenty messages, not a thousand. Each item keeps the feed's `seq`, and the feed's
//! `missed` items tell the window how many events it lost.

use portcullis_hub::api::OperatorApi;
use portcullis_hub::api::types::FeedItem;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tauri::async_runtime::JoinHandle;
use tauri::ipc::Channel;

/// A batch is sent at most this long after its first item arrived.
pub const BATCH_EVERY: Duration = Duration::from_millis(50);
/// A batch is sent as soon as it holds this many items.
pub const BATCH_ITEMS: usize = 200;

/// The feeds the window follows, by id, so it can stop one.
#[derive(Default)]
pub struct EventStreams {
    next: AtomicU32,
    running: Mutex<HashMap<u32, JoinHandle<()>>>,
}

impl EventStreams {
    /// Starts forwarding a new feed of `api` to `channel`; returns its id.
    pub fn follow(&self, api: &OperatorApi, channel: Channel<Vec<FeedItem>>) -> u32 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let api = api.clone();
        let task = tauri::async_runtime::spawn(async move {
            // Made inside the task: a feed spawns its merger on the current runtime.
            let mut feed = api.events();
            loop {
                let Some(first) = feed.next().await else { return };
                let mut batch = Vec::with_capacity(16);
                batch.push(first);
                let flush_at = tokio::time::Instant::now() + BATCH_EVERY;
                let mut ended = false;
                while batch.len() < BATCH_ITEMS {
                    match tokio::time::timeout_at(flush_at, feed.next()).await {
                        Ok(Some(item)) => batch.push(item),
                        Ok(None) => {
                            ended = true;
                            break;
                        }
                        Err(_) => break,
                    }
                }
                if channel.send(batch).is_err() || ended {
                    return;
                }
            }
        });
        self.lock().insert(id, task);
        id
    }

    /// Stops feed `id`; false when there is none.
    pub fn unfollow(&self, id: u32) -> bool {
        self.lock().remove(&id).map(|task| task.abort()).is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, JoinHandle<()>>> {
        self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
