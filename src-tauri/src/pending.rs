//! The calls waiting, told where the operator looks even when the window is hidden: the window title
//! and the tray show how many, and each new one is a desktop notification naming the agent and what
//! it would run. Driven in Rust from the hub's event feed (the table's `follow_events`, in process or
//! from the hub the app attached to), so it works before the UI has loaded and whatever the UI is doing.

use crate::hub_host::HubHost;
use crate::notifications::Notifier;
use crate::tray::Tray;
use crate::window;
use portcullis_api::notice::approval_notice;
use portcullis_api::types::{Approval, FeedEvent, FeedItem};
use portcullis_api::{Sink, TableCalls as _};
use tauri::{AppHandle, Manager};

/// Batches of the feed held for the follower at most; a follower that falls behind further counts its
/// feed as gone (the count is read again whenever it runs).
const BACKLOG: usize = 256;

/// Follows the approvals of the window's hubs (the first and those attached since) for as long as the
/// app runs: keeps the title and the tray on the count across them, and notifies each approval asked.
pub fn follow(app: AppHandle, tray: Option<Tray>, notifier: Option<Notifier>) {
    tauri::async_runtime::spawn(async move {
        let (batches, mut received) = tokio::sync::mpsc::channel::<Vec<FeedItem>>(BACKLOG);
        let sink: Sink<Vec<FeedItem>> = Box::new(move |batch| batches.try_send(batch).is_ok());
        let Some(host) = app.try_state::<HubHost>() else { return };
        let table = host.table();
        if let Err(e) = table.follow_events(sink).await {
            tracing::warn!("the title, tray and notifications do not follow the hub: {}", e.message);
            return;
        }
        let mut shown = None;
        while let Some(batch) = received.recv().await {
            let mut changed = false;
            for item in &batch {
                match &item.event {
                    FeedEvent::ApprovalAsked { approval } => {
                        changed = true;
                        if let Some(notifier) = &notifier {
                            notifier.notify(approval_notice(
                                approval,
                                client_of(host.client(), approval).await.as_deref(),
                            ));
                        }
                    }
                    FeedEvent::ApprovalSettled { .. } | FeedEvent::Missed { .. } => changed = true,
                    _ => {}
                }
            }
            if !changed {
                continue;
            }
            // Asked, settled, or missed (the feed lagged): the count is read again, never tallied.
            let Ok(pending) = table.pending_approvals().await.map(|p| p.len()) else { continue };
            if shown == Some(pending) {
                continue;
            }
            shown = Some(pending);
            if let Some(window) = app.get_webview_window(window::MAIN)
                && let Err(e) = window.set_title(&window::title(pending))
            {
                tracing::debug!("the window title did not change: {e}");
            }
            if let Some(tray) = &tray {
                tray.show_pending(pending);
            }
        }
    });
}

/// The name the asking agent's client gave (`claude-code`), while its session is open (the first hub's
/// sessions: an attached hub's agent is named by the hub only).
async fn client_of(client: &portcullis_api::HubClient, approval: &Approval) -> Option<String> {
    if crate::window_table::from_attached_hub(approval.id) {
        return None;
    }
    let sessions = client.sessions().await.ok()?;
    sessions.into_iter().find(|s| s.id == approval.session_id).map(|s| s.client)
}
