//! The window's commands: each a few lines over the hub's operator API (the same functions the CLI and
//! the HTTP operator API call). Failures reach the UI as the API's `{code, message, details}`.

use crate::event_stream::EventStreams;
use crate::hub_host::{HubHost, HubState};
use portcullis_hub::api::ApiError;
use portcullis_hub::api::always::AlwaysPreview;

use portcullis_hub::api::types::{
    AgentSession, Answer, Approval, CatalogTool, FeedItem, HookupSnippet, HubStatus, RuleScope, SessionGrant,
    ToolChange, UpstreamServer,
};
use tauri::State;
use tauri::ipc::Channel;

/// Whether the app's hub runs (and where agents connect), or why not.
#[tauri::command]
#[specta::specta]
pub fn hub_state(host: State<'_, HubHost>) -> HubState {
    host.state()
}

/// The hub at a glance.
#[tauri::command]
#[specta::specta]
pub async fn hub_status(host: State<'_, HubHost>) -> Result<HubStatus, ApiError> {
    Ok(host.api()?.status())
}

/// The calls waiting for an answer, oldest first, each with the policy's evaluation.
#[tauri::command]
#[specta::specta]
pub async fn pending_approvals(host: State<'_, HubHost>) -> Result<Vec<Approval>, ApiError> {
    Ok(host.api()?.pending_approvals())
}

/// Answers approval `id`; the operator recorded is this window's (`<user> (app)`).
#[tauri::command]
#[specta::specta]
pub async fn answer_approval(host: State<'_, HubHost>, id: u64, answer: Answer) -> Result<(), ApiError> {
    host.api()?.answer_approval(id, &answer, host.operator())
}

/// What answering "always" for approval `id` with `scope` would write, and what it would have changed
/// over the ledger (replayed on this worker with the runtime told it blocks: a large ledger takes a while).
#[tauri::command]
#[specta::specta]
pub async fn always_preview(
    host: State<'_, HubHost>,
    id: u64,
    scope: Option<Vec<RuleScope>>,
) -> Result<AlwaysPreview, ApiError> {
    let api = host.api()?;
    tokio::task::block_in_place(|| api.always_preview(id, scope.as_deref()))
}

#[tauri::command]
#[specta::specta]
pub async fn session_grants(host: State<'_, HubHost>) -> Result<Vec<SessionGrant>, ApiError> {
    Ok(host.api()?.session_grants())
}

#[tauri::command]
#[specta::specta]
pub async fn revoke_session_grant(host: State<'_, HubHost>, id: String) -> Result<(), ApiError> {
    host.api()?.revoke_session_grant(&id)
}

#[tauri::command]
#[specta::specta]
pub async fn sessions(host: State<'_, HubHost>) -> Result<Vec<AgentSession>, ApiError> {
    Ok(host.api()?.sessions())
}

#[tauri::command]
#[specta::specta]
pub async fn servers(host: State<'_, HubHost>) -> Result<Vec<UpstreamServer>, ApiError> {
    Ok(host.api()?.servers())
}

#[tauri::command]
#[specta::specta]
pub async fn restart_server(host: State<'_, HubHost>, id: String) -> Result<(), ApiError> {
    host.api()?.restart_server(&id)
}

/// Upstream tools held back because their server changed their definition, with the diffs.
#[tauri::command]
#[specta::specta]
pub async fn tool_changes(host: State<'_, HubHost>) -> Result<Vec<ToolChange>, ApiError> {
    Ok(host.api()?.tool_changes())
}

/// Accepts the offered definition of a held tool (`digest`: the one the operator was shown).
#[tauri::command]
#[specta::specta]
pub async fn accept_tool_change(
    host: State<'_, HubHost>,
    server: String,
    tool: String,
    digest: String,
) -> Result<(), ApiError> {
    host.api()?.accept_tool_change(&server, &tool, &digest, host.operator()).await
}

/// The tool catalog as agents see it.
#[tauri::command]
#[specta::specta]
pub async fn tools(host: State<'_, HubHost>) -> Result<Vec<CatalogTool>, ApiError> {
    Ok(host.api()?.tools())
}

/// What to paste to hook Claude Code and Codex up to this hub (its real address, token file, binary).
#[tauri::command]
#[specta::specta]
pub async fn hookup_snippets(host: State<'_, HubHost>) -> Result<Vec<HookupSnippet>, ApiError> {
    host.api()?.hookup_snippets()
}

/// Streams the operator's event feed, from now on, to `on_batch` in batches; returns the stream's id.
#[tauri::command]
#[specta::specta]
pub async fn follow_events(
    host: State<'_, HubHost>,
    streams: State<'_, EventStreams>,
    on_batch: Channel<Vec<FeedItem>>,
) -> Result<u32, ApiError> {
    Ok(streams.follow(host.api()?, on_batch))
}

/// Stops the event stream `id` (false if it had already stopped).
#[tauri::command]
#[specta::specta]
pub fn unfollow_events(streams: State<'_, EventStreams>, id: u32) -> bool {
    streams.unfollow(id)
}

/// Closes the window and stops the app even though calls wait for an answer (asked first by the window).
#[tauri::command]
#[specta::specta]
pub fn quit(app: tauri::AppHandle) {
    app.exit(0);
}
