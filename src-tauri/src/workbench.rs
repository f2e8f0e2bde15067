//! The policy workbench's commands: each a few lines over the operator API's workbench (layers, a
//! draft checked as typed, linted, tried, diffed, saved) and its draft replay, which runs on a blocking
//! thread and streams its updates to the window through a channel until it ends or the window stops it.

use crate::hub_host::HubHost;
use portcullis_hub::api::ApiError;
use portcullis_hub::api::draft_access::{PathProbe, ToolGrant};
use portcullis_hub::api::draft_replay::{CallTraces, DraftReplayUpdate};
use portcullis_hub::api::policy_check::PolicyLint;
use portcullis_hub::api::rule_activity::RuleActivity;
use portcullis_hub::api::workbench::{DraftCheck, DraftDiff, DraftTrial, PolicyLayers, TrialInput};
use portcullis_policy::{ExampleCommands, TestOutcome};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use tauri::ipc::Channel;
use tauri::{Manager as _, State};

/// The examples' parsed commands, kept between checks of a draft being typed.
#[derive(Default)]
pub struct ParsedExamples(Mutex<ExampleCommands>);

/// The replays running, by id, each with its stop flag.
#[derive(Default)]
pub struct PolicyReplays {
    next: AtomicU32,
    running: Mutex<HashMap<u32, Arc<AtomicBool>>>,
}

impl PolicyReplays {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Arc<AtomicBool>>> {
        self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The hub's policy layer by layer, each file with its text and version.
#[tauri::command]
#[specta::specta]
pub async fn policy_layers(host: State<'_, HubHost>) -> Result<PolicyLayers, ApiError> {
    host.api()?.policy_layers()
}

/// A draft of policy file `file` checked as it is typed: where it does not load, every rule example.
#[tauri::command]
#[specta::specta]
pub async fn check_policy_draft(
    host: State<'_, HubHost>,
    parsed: State<'_, ParsedExamples>,
    file: String,
    text: String,
) -> Result<DraftCheck, ApiError> {
    let mut parsed = parsed.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    host.api()?.check_policy_draft(&file, &text, &mut parsed)
}

/// Lint findings of the hub's policy with the draft of `file` in its place.
#[tauri::command]
#[specta::specta]
pub async fn lint_policy_draft(
    host: State<'_, HubHost>,
    file: String,
    text: String,
) -> Result<PolicyLint, ApiError> {
    host.api()?.lint_policy_draft(&file, &text)
}

/// The trace of a command or call under the hub's policy with the draft of `file` in its place.
#[tauri::command]
#[specta::specta]
pub async fn try_policy_draft(
    host: State<'_, HubHost>,
    file: String,
    text: String,
    input: TrialInput,
) -> Result<DraftTrial, ApiError> {
    host.api()?.try_policy_draft(&file, &text, input).await
}

/// Every test case of the hub's policy with the draft of `file` in its place, and how each went.
#[tauri::command]
#[specta::specta]
pub async fn test_policy_draft(
    host: State<'_, HubHost>,
    file: String,
    text: String,
) -> Result<Vec<TestOutcome>, ApiError> {
    host.api()?.test_policy_draft(&file, &text).await
}

/// The draft of `file` against the file on disk.
#[tauri::command]
#[specta::specta]
pub async fn diff_policy_draft(
    host: State<'_, HubHost>,
    file: String,
    text: String,
) -> Result<DraftDiff, ApiError> {
    host.api()?.diff_policy_draft(&file, &text)
}

/// Saves the draft as `file` if the file on disk is still `expected_version`; the new version.
#[tauri::command]
#[specta::specta]
pub async fn save_policy_file(
    host: State<'_, HubHost>,
    file: String,
    text: String,
    expected_version: Option<String>,
) -> Result<String, ApiError> {
    host.api()?.save_policy_file(&file, &text, expected_version.as_deref())
}

/// Replays the draft of `file` over `ledger` (else the hub's) against the policy in force, streaming
/// its updates to `on_update` (the last one `done` or `failed`); returns the replay's id.
#[tauri::command]
#[specta::specta]
pub async fn replay_policy_draft(
    app: tauri::AppHandle,
    host: State<'_, HubHost>,
    replays: State<'_, PolicyReplays>,
    file: String,
    text: String,
    ledger: Option<String>,
    on_update: Channel<DraftReplayUpdate>,
) -> Result<u32, ApiError> {
    let api = host.api()?.clone();
    let id = replays.next.fetch_add(1, Ordering::Relaxed) + 1;
    let stop = Arc::new(AtomicBool::new(false));
    replays.lock().insert(id, stop.clone());
    tauri::async_runtime::spawn_blocking(move || {
        let ledger = ledger.map(PathBuf::from);
        let mut report = |update| on_update.send(update).is_ok();
        let last = match api.replay_policy_draft(&file, &text, ledger.as_deref(), &stop, &mut report) {
            Ok(outcome) => DraftReplayUpdate::Done { outcome },
            Err(error) => DraftReplayUpdate::Failed { error },
        };
        let _ = on_update.send(last);
        app.state::<PolicyReplays>().lock().remove(&id);
    });
    Ok(id)
}

/// What each rule decided in the hub's ledger over the last day and week, and this week's most
/// prompted shell commands (candidate rules). Read on a blocking worker (a large week takes a while).
#[tauri::command]
#[specta::specta]
pub async fn rule_activity(host: State<'_, HubHost>) -> Result<RuleActivity, ApiError> {
    let api = host.api()?.clone();
    tokio::task::block_in_place(|| api.rule_activity())
}

/// Every registered tool, visible to agents now and with the draft of `file` in place.
#[tauri::command]
#[specta::specta]
pub async fn grants_with_draft(
    host: State<'_, HubHost>,
    file: String,
    text: String,
) -> Result<Vec<ToolGrant>, ApiError> {
    host.api()?.grants_with_draft(&file, &text)
}

/// Whether `path` would be readable and writable by the `read` and `write` tools under the draft.
#[tauri::command]
#[specta::specta]
pub async fn probe_path_draft(
    host: State<'_, HubHost>,
    file: String,
    text: String,
    path: String,
) -> Result<PathProbe, ApiError> {
    host.api()?.probe_path_draft(&file, &text, &path).await
}

/// Stops replay `id` (false when it had already ended or was never started).
#[tauri::command]
#[specta::specta]
pub fn stop_policy_replay(replays: State<'_, PolicyReplays>, id: u32) -> bool {
    replays.lock().remove(&id).map(|stop| stop.store(true, Ordering::Relaxed)).is_some()
}

/// How the policy in force and the draft of `file` judge one recorded call, both traces.
#[tauri::command]
#[specta::specta]
pub async fn draft_call_traces(
    host: State<'_, HubHost>,
    file: String,
    text: String,
    ledger: Option<String>,
    session: String,
    call_id: String,
) -> Result<CallTraces, ApiError> {
    let api = host.api()?.clone();
    let ledger = ledger.map(PathBuf::from);
    tokio::task::block_in_place(|| api.draft_call_traces(&file, &text, ledger.as_deref(), &session, &call_id))
}
