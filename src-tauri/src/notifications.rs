//! Desktop notifications of calls waiting, sent on a thread of their own so that a slow, absent or
//! broken notification daemon (no D-Bus session under Xvfb) costs a warning in the log and never holds
//! up the hub or an approval. What a notice says is decided in the hub
//! (`portcullis_api::notice`): agent text made visible and shortened.
//!
//! Linux notifications carry no buttons that could answer a call: a notice only calls the operator to
//! the window. Clicking its body sends the `default` action, which brings the window, where the
//! notification daemon reports it (GNOME, KDE, dunst, mako do); answering happens in the window.

use crate::window;
use portcullis_api::notice::ApprovalNotice;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use tauri::AppHandle;

/// Notices queued beyond this while the daemon is slow are dropped (the window and tray still count
/// every waiting call).
const QUEUE: usize = 8;
/// At most this many shown notices are followed for a click, each by a thread that waits for it.
const CLICK_WAITERS: usize = 4;

/// Sends notices to the desktop's notification daemon, in order, on its own thread.
pub struct Notifier {
    queue: SyncSender<ApprovalNotice>,
}

impl Notifier {
    /// Starts the notification thread; `None` (and a warning) when it cannot start.
    pub fn start(app: AppHandle) -> Option<Notifier> {
        let (queue, notices) = sync_channel(QUEUE);
        match std::thread::Builder::new().name("notifications".into()).spawn(move || send_all(&app, &notices))
        {
            Ok(_) => Some(Notifier { queue }),
            Err(e) => {
                tracing::warn!("no desktop notifications: their thread did not start: {e}");
                None
            }
        }
    }

    /// Queues `notice`; never waits (dropped, with a debug line, when the queue is full).
    pub fn notify(&self, notice: ApprovalNotice) {
        match self.queue.try_send(notice) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => tracing::debug!("notification dropped: the daemon is behind"),
            Err(TrySendError::Disconnected(_)) => {
                tracing::debug!("notification dropped: no notification thread")
            }
        }
    }
}

fn send_all(app: &AppHandle, notices: &Receiver<ApprovalNotice>) {
    let waiters = Arc::new(AtomicUsize::new(0));
    let mut markup = None;
    let mut warned = false;
    for notice in notices {
        // Asked once: whether the daemon reads the body as markup (then `<`, `>`, `&` are escaped).
        let markup = *markup.get_or_insert_with(body_markup);
        let body = if markup { markup_escaped(&notice.body) } else { notice.body.clone() };
        let shown = notify_rust::Notification::new()
            .appname("Portcullis")
            .summary(&notice.title)
            .body(&body)
            .action("default", "Show Portcullis")
            .show();
        match shown {
            Ok(handle) => {
                warned = false;
                follow_click(app, handle, &waiters);
            }
            // Once per outage: a desktop without a daemon would otherwise log every call.
            Err(e) if !warned => {
                warned = true;
                tracing::warn!("desktop notification not shown (no notification daemon?): {e}");
            }
            Err(e) => tracing::debug!("desktop notification not shown: {e}"),
        }
    }
}

#[cfg(all(unix, not(target_os = "macos")))]
fn body_markup() -> bool {
    notify_rust::get_capabilities().is_ok_and(|caps| caps.iter().any(|c| c == "body-markup"))
}

#[cfg(not(all(unix, not(target_os = "macos"))))]
fn body_markup() -> bool {
    false
}

/// Brings the window when the operator clicks the notice (the daemon's `default` action).
#[cfg(all(unix, not(target_os = "macos")))]
fn follow_click(app: &AppHandle, handle: notify_rust::NotificationHandle, waiters: &Arc<AtomicUsize>) {
    if waiters.fetch_add(1, Ordering::SeqCst) >= CLICK_WAITERS {
        waiters.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let (app, waiters) = (app.clone(), Arc::clone(waiters));
    let waiting = std::thread::Builder::new().name("notification-click".into()).spawn(move || {
        handle.wait_for_action(|action| {
            if action == "default" {
                window::bring(&app);
            }
        });
        waiters.fetch_sub(1, Ordering::SeqCst);
    });
    if let Err(e) = waiting {
        tracing::debug!("a notification's click is not followed: {e}");
    }
}

#[cfg(not(all(unix, not(target_os = "macos"))))]
fn follow_click<H>(_app: &AppHandle, _handle: H, _waiters: &Arc<AtomicUsize>) {}

/// `text` for a daemon that reads markup: `&`, `<` and `>` as entities, so agent text cannot format,
/// link or hide itself.
fn markup_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_agent_text_is_escaped() {
        assert_eq!(
            markup_escaped(r#"echo <a href="x">hi</a> && <b>ok"#),
            r#"echo &lt;a href="x"&gt;hi&lt;/a&gt; &amp;&amp; &lt;b&gt;ok"#
        );
        assert_eq!(markup_escaped("ls -la"), "ls -la");
    }
}
