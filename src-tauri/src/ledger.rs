//! The ledger browser's commands: ledgers held open read-only by id (the hub's own, or any file the
//! operator names, picks in a dialog or drops on the window), each query a few lines over the operator
//! API's `BrowsedLedger`, run on the blocking pool so a long aggregate never holds the hub's runtime;
//! exports stream their progress through a channel and stop on request; the recent list and saved
//! views live in the user's config folder.

use crate::hub_host::{HubHost, HubState};
use portcullis_hub::api::ledger::{
    ApprovalSummary, CallFilter, CallPage, CommandCount, CommandOutcome, Cursor, ExportFormat, SessionRow,
    Stats, Timestamp,
};
use portcullis_hub::api::ledger_browse::{
    BrowsedLedger, CallDetail, CallOrder, Facets, LedgerSummary, SessionTimeline,
};
use portcullis_hub::api::ledger_library::{LedgerLibrary, SavedView};
use portcullis_hub::api::rule_activity::CandidateRule;
use portcullis_hub::api::{ApiError, ErrorCode};
use portcullis_hub::config::user_config_dir;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tauri::ipc::Channel;
use tauri::{Manager as _, State};
use tauri_plugin_dialog::DialogExt as _;

/// The ledgers open in the window, by id.
#[derive(Default)]
pub struct OpenLedgers {
    next: AtomicU32,
    open: Mutex<HashMap<u32, Arc<BrowsedLedger>>>,
    exports: Mutex<HashMap<u32, Arc<AtomicBool>>>,
}

impl OpenLedgers {
    fn open(&self) -> MutexGuard<'_, HashMap<u32, Arc<BrowsedLedger>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn exports(&self) -> MutexGuard<'_, HashMap<u32, Arc<AtomicBool>>> {
        self.exports.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, id: u32) -> Result<Arc<BrowsedLedger>, ApiError> {
        self.open().get(&id).cloned().ok_or_else(|| {
            ApiError::new(
                ErrorCode::BadArgument,
                format!("no ledger {id} is open in this window: open it again"),
                json!({ "ledger": id }),
            )
        })
    }
}

/// A ledger opened in the window.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct OpenedLedger {
    pub id: u32,
    /// The hub's own ledger (live: new calls arrive while it is open).
    pub hub: bool,
    pub summary: LedgerSummary,
}

/// How an export goes: progress, then `done` or `failed` (`cancelled` when stopped).
#[derive(Debug, Clone, Serialize, specta::Type)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExportUpdate {
    Progress { done: u64, total: u64 },
    Done { records: u64, file: String },
    Failed { error: ApiError },
}

fn library_file() -> Result<PathBuf, ApiError> {
    user_config_dir().map(|d| d.join("ledger-library.json")).ok_or_else(|| {
        ApiError::new(ErrorCode::BadArgument, "no config folder: set HOME or XDG_CONFIG_HOME", json!({}))
    })
}

fn hub_ledger(host: &HubHost) -> Option<String> {
    match host.state() {
        HubState::Running { ledger, .. } => Some(ledger),
        HubState::NotRunning { .. } => None,
    }
}

/// Runs a ledger query on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tauri::async_runtime::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(ApiError::new(ErrorCode::LedgerSqlite, format!("the query stopped: {e}"), json!({})))
    })
}

/// Opens `path` read-only (none: the hub's own ledger) and returns its id and summary. A file that is
/// not a ledger, of a newer schema, or damaged is refused with the ledger's code and left untouched.
/// Any other file opened is put first in the recent list.
#[tauri::command]
#[specta::specta]
pub async fn open_ledger(
    host: State<'_, HubHost>,
    ledgers: State<'_, OpenLedgers>,
    path: Option<String>,
) -> Result<OpenedLedger, ApiError> {
    let hub_path = hub_ledger(&host);
    let chosen = match path.clone().or(hub_path.clone()) {
        Some(p) => PathBuf::from(p),
        None => {
            return Err(ApiError::new(
                ErrorCode::HubUnavailable,
                "no hub runs in this app: name a ledger file to open",
                json!({}),
            ));
        }
    };
    let hub = hub_path.as_deref().map(Path::new) == Some(chosen.as_path());
    let (browsed, summary) = blocking(move || {
        let browsed = BrowsedLedger::open(&chosen)?;
        let summary = browsed.summary()?;
        Ok((browsed, summary))
    })
    .await?;
    if !hub && path.is_some() {
        let file = library_file()?;
        let at = Timestamp::now();
        if let Err(e) = LedgerLibrary::remember(&file, &summary.path, at) {
            tracing::warn!(error = %e, "the recent ledgers list was not updated");
        }
    }
    let id = ledgers.next.fetch_add(1, Ordering::Relaxed) + 1;
    ledgers.open().insert(id, Arc::new(browsed));
    Ok(OpenedLedger { id, hub, summary })
}

/// Closes ledger `id` (false when it was not open).
#[tauri::command]
#[specta::specta]
pub fn close_ledger(ledgers: State<'_, OpenLedgers>, id: u32) -> bool {
    ledgers.open().remove(&id).is_some()
}

/// Ledger `id` at a glance, now (calls keep arriving in the hub's own).
#[tauri::command]
#[specta::specta]
pub async fn ledger_summary(ledgers: State<'_, OpenLedgers>, id: u32) -> Result<LedgerSummary, ApiError> {
    let ledger = ledgers.get(id)?;
    blocking(move || ledger.summary()).await
}

/// One page of the calls `filter` selects, by key, in `order` after `cursor`.
#[tauri::command]
#[specta::specta]
pub async fn ledger_calls(
    ledgers: State<'_, OpenLedgers>,
    id: u32,
    filter: CallFilter,
    order: CallOrder,
    cursor: Option<Cursor>,
    limit: u32,
) -> Result<CallPage, ApiError> {
    let ledger = ledgers.get(id)?;
    blocking(move || ledger.page(&filter, order, cursor, limit as usize)).await
}

/// How many calls `filter` selects.
#[tauri::command]
#[specta::specta]
pub async fn ledger_count(
    ledgers: State<'_, OpenLedgers>,
    id: u32,
    filter: CallFilter,
) -> Result<u64, ApiError> {
    let ledger = ledgers.get(id)?;
    blocking(move || ledger.count(&filter)).await
}

/// One call, everything the detail drawer shows.
#[tauri::command]
#[specta::specta]
pub async fn ledger_call(
    ledgers: State<'_, OpenLedgers>,
    id: u32,
    call_id: String,
    session: String,
) -> Result<CallDetail, ApiError> {
    let ledger = ledgers.get(id)?;
    blocking(move || ledger.call(&call_id, &session)).await
}

/// The counts beside the filter chips; `exact: false` answers from hourly aggregates first.
#[tauri::command]
#[specta::specta]
pub async fn ledger_facets(
    ledgers: State<'_, OpenLedgers>,
    id: u32,
    filter: CallFilter,
    exact: bool,
) -> Result<Facets, ApiError> {
    let ledger = ledgers.get(id)?;
    blocking(move || ledger.facets(&filter, exact)).await
}

/// Aggregates over the calls `filter` selects (`bucket_us`: the time histogram's width).
#[tauri::command]
#[specta::specta]
pub async fn ledger_stats(
    ledgers: State<'_, OpenLedgers>,
    id: u32,
    filter: CallFilter,
    bucket_us: Option<i64>,
) -> Result<Stats, ApiError> {
    let ledger = ledgers.get(id)?;
    blocking(move || ledger.stats(&filter, bucket_us)).await
}

/// How the approvals asked in the filter's time range went.
#[tauri::command]
#[specta::specta]
pub async fn ledger_approvals(
    ledgers: State<'_, OpenLedgers>,
    id: u32,
    filter: CallFilter,
) -> Result<ApprovalSummary, ApiError> {
    let ledger = ledgers.get(id)?;
    blocking(move || ledger.approvals(&filter)).await
}

/// The shell commands the selected calls prompted for (or were blocked for) most.
#[tauri::command]
#[specta::specta]
pub async fn ledger_top_commands(
    ledgers: State<'_, OpenLedgers>,
    id: u32,
    filter: CallFilter,
    outcome: CommandOutcome,
    limit: u32,
) -> Result<Vec<CommandCount>, ApiError> {
    let ledger = ledgers.get(id)?;
    blocking(move || ledger.top_commands(&filter, outcome, limit as usize)).await
}

/// Sessions started in `[since, until)`, newest first.
#[tauri::command]
#[specta::specta]
pub async fn ledger_sessions(
    ledgers: State<'_, OpenLedgers>,
    id: u32,
    since: Option<Timestamp>,
    until: Option<Timestamp>,
    limit: u32,
) -> Result<Vec<SessionRow>, ApiError> {
    let ledger = ledgers.get(id)?;
    blocking(move || ledger.sessions(since, until, limit as usize)).await
}

/// One session's calls over time, each on a lane (calls that ran at once on different lanes).
#[tauri::command]
#[specta::specta]
pub async fn ledger_session_timeline(
    ledgers: State<'_, OpenLedgers>,
    id: u32,
    session: String,
) -> Result<SessionTimeline, ApiError> {
    let ledger = ledgers.get(id)?;
    blocking(move || ledger.session_timeline(&session)).await
}

/// Exports every record of the calls `filter` selects to `file` as JSONL or CSV, streaming progress to
/// `on_update` (the last update `done` or `failed`); returns the export's id for `stop_ledger_export`.
#[tauri::command]
#[specta::specta]
pub async fn export_ledger(
    app: tauri::AppHandle,
    ledgers: State<'_, OpenLedgers>,
    id: u32,
    filter: CallFilter,
    format: ExportFormat,
    file: String,
    on_update: Channel<ExportUpdate>,
) -> Result<u32, ApiError> {
    let ledger = ledgers.get(id)?;
    let export_id = ledgers.next.fetch_add(1, Ordering::Relaxed) + 1;
    let stop = Arc::new(AtomicBool::new(false));
    ledgers.exports().insert(export_id, stop.clone());
    tauri::async_runtime::spawn_blocking(move || {
        let out = PathBuf::from(&file);
        let mut report = |done: u64, total: u64| {
            let _ = on_update.send(ExportUpdate::Progress { done, total });
        };
        let last = match ledger.export(&filter, format, &out, &stop, &mut report) {
            Ok(records) => ExportUpdate::Done { records, file },
            Err(error) => ExportUpdate::Failed { error },
        };
        app.state::<OpenLedgers>().exports().remove(&export_id);
        let _ = on_update.send(last);
    });
    Ok(export_id)
}

/// Stops export `id` (false when it had already ended or was never started).
#[tauri::command]
#[specta::specta]
pub fn stop_ledger_export(ledgers: State<'_, OpenLedgers>, id: u32) -> bool {
    ledgers.exports().remove(&id).map(|stop| stop.store(true, Ordering::Relaxed)).is_some()
}

/// The recent ledgers and the saved views.
#[tauri::command]
#[specta::specta]
pub async fn ledger_library() -> Result<LedgerLibrary, ApiError> {
    LedgerLibrary::load(&library_file()?)
}

/// Saves a view by name (replacing one of that name); the library after.
#[tauri::command]
#[specta::specta]
pub async fn save_ledger_view(view: SavedView) -> Result<LedgerLibrary, ApiError> {
    LedgerLibrary::save_view(&library_file()?, view)
}

/// Deletes the view named `name`; the library after.
#[tauri::command]
#[specta::specta]
pub async fn delete_ledger_view(name: String) -> Result<LedgerLibrary, ApiError> {
    LedgerLibrary::delete_view(&library_file()?, &name)
}

/// A rule offered for a recorded shell command: its words when it is one simple command.
#[tauri::command]
#[specta::specta]
pub fn candidate_rule(command: String) -> CandidateRule {
    portcullis_hub::api::rule_activity::candidate_rule(&command)
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
