//! The calls waiting, told where the operator looks even when the window is hidden: the window title
//! and the tray show how many, and each new one is a desktop notification naming the agent and what
//! it would run. Driven in Rust from the hub's approval events, so it works before the UI has loaded
//! and whatever the UI is doing.

use crate::notifications::Notifier;
use crate::tray::Tray;
use crate::window;
use portcullis_hub::api::OperatorApi;
use portcullis_hub::api::events::FeedSources;
use portcullis_hub::api::notice::approval_notice;
use portcullis_hub::api::types::{Approval, FeedEvent};
use tauri::{AppHandle, Manager};

/// The window's title: `Portcullis — 2 waiting`, plain `Portcullis` when nothing waits.
pub fn title(pending: usize) -> String {
    match pending {
        0 => "Portcullis".to_owned(),
        n => format!("Portcullis — {n} waiting"),
    }
}

/// Follows the hub's approvals for as long as the app runs: keeps the title and the tray on the count,
/// and notifies each approval asked.
pub fn follow(app: AppHandle, api: OperatorApi, tray: Option<Tray>, notifier: Option<Notifier>) {
    tauri::async_runtime::spawn(async move {
        // Made inside the task: a feed spawns its merger on the current runtime.
        let mut feed = api.events_from(FeedSources { hub: false, approvals: true, calls: false });
        let mut shown = None;
        while let Some(item) = feed.next().await {
            if let (FeedEvent::ApprovalAsked { approval }, Some(notifier)) = (&item.event, &notifier) {
                notifier.notify(approval_notice(approval, client_of(&api, approval).as_deref()));
            }
            // Asked, settled, or missed (the feed lagged): the count is read again, never tallied.
            let pending = api.pending_count();
            if shown == Some(pending) {
                continue;
            }
            shown = Some(pending);
            if let Some(window) = app.get_webview_window(window::MAIN)
                && let Err(e) = window.set_title(&title(pending))
            {
                tracing::debug!("the window title did not change: {e}");
            }
            if let Some(tray) = &tray {
                tray.show_pending(pending);
            }
        }
    });
}

/// The name the asking agent's client gave (`claude-code`), while its session is open.
fn client_of(api: &OperatorApi, approval: &Approval) -> Option<String> {
    api.sessions().into_iter().find(|s| s.id == approval.session_id).map(|s| s.client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_says_how_many_wait() {
        assert_eq!(title(0), "Portcullis");
        assert_eq!(title(1), "Portcullis — 1 waiting");
        assert_eq!(title(2), "Portcullis — 2 waiting");
    }
}
