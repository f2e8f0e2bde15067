//! The window's commands, made mechanically from the hub's command table
//! ([`portcullis_api::operator_commands!`]): each table call becomes a Tauri command calling the
//! window's [`Client`](portcullis_api::Client) method of the same name with the same arguments,
//! each table stream one that takes a channel (`on_update`) for its updates. The only commands written
//! here by hand are the window's own: quitting and the system's file dialogs.

use crate::hub_host::HubHost;
use portcullis_api::{ApiError, TableCalls as _};
use tauri::State;
use tauri::ipc::Channel;
use tauri_plugin_dialog::DialogExt as _;

macro_rules! tauri_adapter {
    (
        calls { $( $(#[$doc:meta])* $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $out:ty ; )* }
        streams { $( $(#[$sdoc:meta])* $sname:ident ( $($sarg:ident : $sty:ty),* $(,)? ) -> $sout:ty ; )* }
    ) => {
        $(
            $(#[$doc])*
            #[tauri::command]
            #[specta::specta]
            pub async fn $name(host: State<'_, HubHost>, $($arg: $ty),*) -> Result<$out, ApiError> {
                host.table().$name($($arg),*).await
            }
        )*
        $(
            $(#[$sdoc])*
            /// Updates go to `on_update`; returns the stream's id (for `stop_stream`).
            #[tauri::command]
            #[specta::specta]
            pub async fn $sname(
                host: State<'_, HubHost>,
                $($sarg: $sty,)*
                on_update: Channel<$sout>,
            ) -> Result<u32, ApiError> {
                host.table().$sname($($sarg,)* Box::new(move |update| on_update.send(update).is_ok())).await
            }
        )*

        /// The table's names, calls then streams (the bindings test checks each is in the builder).
        pub const TABLE: &[&str] = &[$(stringify!($name),)* $(stringify!($sname),)*];

        /// Every command the window may invoke: the table's, then the window's own.
        pub fn window_commands() -> tauri_specta::Commands<tauri::Wry> {
            tauri_specta::collect_commands![
                $($name,)*
                $($sname,)*
                quit,
                pick_ledger_file,
                pick_export_file,
                attach_hub,
                attached_hubs,
            ]
        }
    };
}

portcullis_api::operator_commands!(tauri_adapter);

/// The commands only a window has: they are not the hub's (closing the app, the system's dialogs).
pub const WINDOW_ONLY: &[&str] =
    &["quit", "pick_ledger_file", "pick_export_file", "attach_hub", "attached_hubs"];

/// Attaches another hub (its address and its operator token) beside the first: its waiting calls join
/// the window's inbox, each card saying which hub; the hubs attached now.
#[tauri::command]
#[specta::specta]
pub async fn attach_hub(
    host: State<'_, HubHost>,
    url: String,
    token: String,
) -> Result<Vec<crate::window_table::AttachedHub>, ApiError> {
    host.table().attach(&url, &token).await
}

/// The hubs attached beside the first.
#[tauri::command]
#[specta::specta]
pub fn attached_hubs(host: State<'_, HubHost>) -> Vec<crate::window_table::AttachedHub> {
    host.table().attached()
}

/// Closes the window and stops the app even though calls wait for an answer (asked first by the window).
#[tauri::command]
#[specta::specta]
pub fn quit(app: tauri::AppHandle) {
    app.exit(0);
}

/// Asks the operator for a ledger file in the system's open dialog (none: they cancelled).
#[tauri::command]
#[specta::specta]
pub async fn pick_ledger_file(app: tauri::AppHandle) -> Option<String> {
    let picked = tauri::async_runtime::spawn_blocking(move || {
        app.dialog()
            .file()
            .set_title("Open a Portcullis ledger")
            .add_filter("Ledger", &["db", "sqlite", "sqlite3"])
            .blocking_pick_file()
    })
    .await
    .ok()
    .flatten()?;
    picked.into_path().ok().map(|p| p.display().to_string())
}

/// Asks the operator where to export to, in the system's save dialog (none: they cancelled).
#[tauri::command]
#[specta::specta]
pub async fn pick_export_file(app: tauri::AppHandle, suggested: String) -> Option<String> {
    let picked = tauri::async_runtime::spawn_blocking(move || {
        app.dialog()
            .file()
            .set_title("Export the filtered calls")
            .set_file_name(suggested)
            .blocking_save_file()
    })
    .await
    .ok()
    .flatten()?;
    picked.into_path().ok().map(|p| p.display().to_string())
}
