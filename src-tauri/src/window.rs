//! The main window's two shared paths: bringing it before the operator (a second launch, the tray, a
//! clicked notification) and quitting, which asks first while calls wait — the same question whether
//! the operator closes the window or picks the tray's "Quit". And its title, which the tray's tooltip
//! repeats.

use crate::CloseAsked;
use crate::hub_host::HubHost;
use tauri::{AppHandle, Manager};
use tauri_specta::Event;

/// The label of the one window (tauri.conf.json, capabilities/main.json).
pub const MAIN: &str = "main";

/// The window's title: `Portcullis — 2 waiting`, plain `Portcullis` when nothing waits.
pub fn title(pending: usize) -> String {
    match pending {
        0 => "Portcullis".to_owned(),
        n => format!("Portcullis — {n} waiting"),
    }
}

/// Shows, unminimizes and focuses the main window.
pub fn bring(app: &AppHandle) {
    let Some(window) = app.get_webview_window(MAIN) else { return };
    for (what, done) in
        [("unminimize", window.unminimize()), ("show", window.show()), ("focus", window.set_focus())]
    {
        if let Err(e) = done {
            tracing::debug!("the window did not {what}: {e}");
        }
    }
}

/// How many calls wait for an answer now (0 when no hub runs).
pub fn pending(app: &AppHandle) -> usize {
    app.try_state::<HubHost>().and_then(|host| host.api().ok().map(|api| api.pending_count())).unwrap_or(0)
}

/// When calls wait, brings the window and asks it to confirm quitting (`CloseAsked`; its answer is the
/// `quit` command) and returns true: the caller must not close. False when nothing waits.
pub fn ask_before_quitting(app: &AppHandle) -> bool {
    let pending = pending(app);
    if pending == 0 {
        return false;
    }
    bring(app);
    if let Some(window) = app.get_webview_window(MAIN)
        && let Err(e) = (CloseAsked { pending: u32::try_from(pending).unwrap_or(u32::MAX) }).emit(&window)
    {
        tracing::warn!("could not ask the window before quitting: {e}");
    }
    true
}

/// Quits unless calls wait, in which case the window asks first (as closing it does).
pub fn quit(app: &AppHandle) {
    if !ask_before_quitting(app) {
        app.exit(0);
    }
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
