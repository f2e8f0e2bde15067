//! The tray icon: how many calls wait, seen while the window is hidden or behind others, with "Show"
//! (as a left click, where the platform reports clicks) and "Quit" (which asks first while calls wait,
//! as closing the window does). A desktop without a system tray (Xvfb, some window managers) gets no
//! icon and a warning in the log; nothing else changes.

use crate::window;
use tauri::menu::{Menu, MenuEvent, MenuItem, PredefinedMenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIcon, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Wry};

const SHOW: &str = "show";
const QUIT: &str = "quit";

/// The tray icon and its menu's first line ("2 calls waiting").
pub struct Tray {
    icon: TrayIcon<Wry>,
    status: MenuItem<Wry>,
}

impl Tray {
    /// Puts the icon in the system tray; `None` (and a warning) when the desktop has no tray.
    pub fn create(app: &AppHandle) -> Option<Tray> {
        match build(app) {
            Ok(tray) => Some(tray),
            Err(e) => {
                tracing::warn!("no tray icon (the desktop may have no system tray): {e}");
                None
            }
        }
    }

    /// Shows `pending` in the tooltip, the title beside the icon (Linux shows no tooltip) and the menu.
    pub fn show_pending(&self, pending: usize) {
        let title = (pending > 0).then(|| format!("{pending} waiting"));
        let results = [
            ("tooltip", self.icon.set_tooltip(Some(tooltip(pending)))),
            ("title", self.icon.set_title(title)),
            ("menu", self.status.set_text(status_line(pending))),
        ];
        for (what, result) in results {
            if let Err(e) = result {
                tracing::debug!("the tray's {what} did not change: {e}");
            }
        }
    }
}

fn build(app: &AppHandle) -> tauri::Result<Tray> {
    let status = MenuItem::with_id(app, "status", status_line(0), false, None::<&str>)?;
    let show = MenuItem::with_id(app, SHOW, "Show Portcullis", true, None::<&str>)?;
    let quit = MenuItem::with_id(app, QUIT, "Quit", true, None::<&str>)?;
    let menu = Menu::with_items(app, &[&status, &PredefinedMenuItem::separator(app)?, &show, &quit])?;
    let mut builder = TrayIconBuilder::with_id("main")
        .tooltip(tooltip(0))
        .menu(&menu)
        .show_menu_on_left_click(false)
        .on_menu_event(on_menu)
        .on_tray_icon_event(|tray, event| {
            // Linux's tray (AppIndicator) reports no clicks: there "Show" is the way.
            if let TrayIconEvent::Click {
                button: MouseButton::Left,
                button_state: MouseButtonState::Up,
                ..
            } = event
            {
                window::bring(tray.app_handle());
            }
        });
    if let Some(icon) = app.default_window_icon() {
        builder = builder.icon(icon.clone());
    }
    Ok(Tray { icon: builder.build(app)?, status })
}

fn on_menu(app: &AppHandle, event: MenuEvent) {
    match event.id().as_ref() {
        SHOW => window::bring(app),
        QUIT => window::quit(app),
        _ => {}
    }
}

fn tooltip(pending: usize) -> String {
    match pending {
        0 => "Portcullis — nothing waiting".to_owned(),
        n => window::title(n),
    }
}

fn status_line(pending: usize) -> String {
    match pending {
        0 => "No calls waiting".to_owned(),
        1 => "1 call waiting".to_owned(),
        n => format!("{n} calls waiting"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_reads_well() {
        assert_eq!(tooltip(0), "Portcullis — nothing waiting");
        assert_eq!(tooltip(1), "Portcullis — 1 waiting");
        assert_eq!(status_line(0), "No calls waiting");
        assert_eq!(status_line(1), "1 call waiting");
        assert_eq!(status_line(12), "12 calls waiting");
    }
}
