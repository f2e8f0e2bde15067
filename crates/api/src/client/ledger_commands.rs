//! The ledger browser's commands: ledgers held open read-only by id (the hub's own, or any file the
//! operator names), each query run on the blocking pool so a long aggregate never holds the runtime;
//! exports stream their progress and stop on request; the recent list and saved views live in the
//! client's library file.

use super::jobs::{Sink, Stop};
use super::{Client, blocking};
use crate::error::{ApiError, ErrorCode};
use crate::ledger::LedgerAddress;
use crate::ledger::{
    ApprovalSummary, CallFilter, CallPage, CommandCount, CommandOutcome, Cursor, ExportFormat, SessionRow,
    Stats, Timestamp,
};
use crate::ledger_browse::{BrowsedLedger, CallDetail, CallOrder, Facets, LedgerSummary, SessionTimeline};
use crate::ledger_library::{LedgerLibrary, SavedView};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// A ledger a client opened.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct OpenedLedger {
    pub id: u32,
    /// The hub's own ledger (live: new calls arrive while it is open).
    pub hub: bool,
    pub summary: LedgerSummary,
}

/// How an export goes: progress, then `done` or `failed` (`cancelled` when stopped).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExportUpdate {
    Progress { done: u64, total: u64 },
    Done { records: u64, file: String },
    Failed { error: ApiError },
}

impl Client {
    fn ledger(&self, id: u32) -> Result<Arc<BrowsedLedger>, ApiError> {
        self.inner.ledgers.get(id, Instant::now())
    }

    /// Opens `path` read-only (none: the hub's own ledger) and returns its id and summary. A file that
    /// is not a ledger, of a newer schema, or damaged is refused with the ledger's code and left
    /// untouched. Any other file opened is put first in the recent list.
    pub async fn open_ledger(&self, path: Option<String>) -> Result<OpenedLedger, ApiError> {
        let hub_path = self.hub_ledger();
        let Some(chosen) = path.clone().or(hub_path.clone()).map(PathBuf::from) else {
            return Err(ApiError::new(
                ErrorCode::HubUnavailable,
                "no hub runs here: name a ledger file to open",
                json!({}),
            ));
        };
        let hub = hub_path.as_deref().map(Path::new) == Some(chosen.as_path());
        // A team ledger's password: the hub's own team-ledger setting's file when it names this URL,
        // else $PGPASSWORD.
        let address = match self.api() {
            Ok(api) => api.ledger_address(&chosen),
            Err(_) => LedgerAddress::of(&chosen, self.inner.team_password_file.as_deref()),
        };
        tracing::debug!(ledger = %address, "opening ledger");
        let (browsed, summary) = blocking(move || {
            let browsed = BrowsedLedger::open_at(address)?;
            let summary = browsed.summary()?;
            Ok((browsed, summary))
        })
        .await?;
        // Any other file opened goes first in the recent list (a client without a library keeps none).
        if !hub
            && path.is_some()
            && let Some(file) = self.inner.library.as_deref()
            && let Err(e) = LedgerLibrary::remember(file, &summary.path, Timestamp::now())
        {
            tracing::warn!(error = %e, "the recent ledgers list was not updated");
        }
        let id = self.inner.ledgers.hold(browsed, Instant::now());
        Ok(OpenedLedger { id, hub, summary })
    }

    /// Closes ledger `id` (false when it was not open).
    pub async fn close_ledger(&self, id: u32) -> Result<bool, ApiError> {
        Ok(self.inner.ledgers.close(id))
    }

    /// Verifies ledger `id`'s chain and signed checkpoints against the hub's ledger key (the public half
    /// of the key in the config folder), naming the first record that breaks.
    pub async fn verify_ledger(&self, id: u32) -> Result<portcullis_ledger::VerifyReport, ApiError> {
        let ledger = self.ledger(id)?;
        // The hub's own ledger, with the hub here: its newest records are sealed first, so the answer is
        // about every record so far (a hub elsewhere seals on its own schedule).
        let own = self.hub_ledger().is_some_and(|hub| ledger.path() == Some(Path::new(&hub)));
        if own && let Ok(api) = self.api() {
            api.seal_ledger().await?;
        }
        // The library file lives in the user's config folder, beside the key.
        let dir =
            self.inner.library.as_deref().and_then(Path::parent).map(Path::to_owned).ok_or_else(|| {
                ApiError::new(
                    ErrorCode::BadArgument,
                    "no config folder: set HOME or XDG_CONFIG_HOME",
                    json!({}),
                )
            })?;
        blocking(move || {
            let key = portcullis_hub::ledger_public_key(&dir).map_err(|e| {
                ApiError::new(ErrorCode::LedgerKeyUnusable, e.to_string(), json!({ "folder": dir }))
            })?;
            ledger.verify(&key, Some(&dir))
        })
        .await
    }

    /// Ledger `id` at a glance, now (calls keep arriving in the hub's own).
    pub async fn ledger_summary(&self, id: u32) -> Result<LedgerSummary, ApiError> {
        let ledger = self.ledger(id)?;
        blocking(move || ledger.summary()).await
    }

    /// The requests the hub refused, first seen in `[since, until)`, newest first (a file's).
    pub async fn ledger_refusals(
        &self,
        id: u32,
        since: Option<Timestamp>,
        until: Option<Timestamp>,
        limit: u32,
    ) -> Result<Vec<portcullis_ledger::RefusalRow>, ApiError> {
        let ledger = self.ledger(id)?;
        blocking(move || ledger.refusals(since, until, limit as usize)).await
    }

    /// Ledger `id`'s integrity and shape (a file's).
    pub async fn ledger_check(&self, id: u32) -> Result<portcullis_ledger::CheckReport, ApiError> {
        let ledger = self.ledger(id)?;
        blocking(move || ledger.check()).await
    }

    /// How far behind ledger `id`'s record sinks are (a file's; none for a team ledger).
    pub async fn ledger_shipping(&self, id: u32) -> Result<Vec<portcullis_ledger::SinkLag>, ApiError> {
        let ledger = self.ledger(id)?;
        blocking(move || ledger.shipping()).await
    }

    /// One page of the calls `filter` selects, by key, in `order` after `cursor`.
    pub async fn ledger_calls(
        &self,
        id: u32,
        filter: CallFilter,
        order: CallOrder,
        cursor: Option<Cursor>,
        limit: u32,
    ) -> Result<CallPage, ApiError> {
        let ledger = self.ledger(id)?;
        blocking(move || ledger.page(&filter, order, cursor, limit as usize)).await
    }

    /// How many calls `filter` selects.
    pub async fn ledger_count(&self, id: u32, filter: CallFilter) -> Result<u64, ApiError> {
        let ledger = self.ledger(id)?;
        blocking(move || ledger.count(&filter)).await
    }

    /// One call, everything the detail drawer shows.
    pub async fn ledger_call(
        &self,
        id: u32,
        call_id: String,
        session: String,
    ) -> Result<CallDetail, ApiError> {
        let ledger = self.ledger(id)?;
        blocking(move || ledger.call(&call_id, &session)).await
    }

    /// Every session's detail of call `call_id` (a call id may recur across sessions), or only
    /// `session`'s when it is named.
    pub async fn ledger_call_details(
        &self,
        id: u32,
        call_id: String,
        session: Option<String>,
    ) -> Result<Vec<CallDetail>, ApiError> {
        let ledger = self.ledger(id)?;
        blocking(move || ledger.details(&call_id, session.as_deref())).await
    }

    /// The counts beside the filter chips; `exact: false` answers from hourly aggregates first.
    pub async fn ledger_facets(&self, id: u32, filter: CallFilter, exact: bool) -> Result<Facets, ApiError> {
        let ledger = self.ledger(id)?;
        blocking(move || ledger.facets(&filter, exact)).await
    }

    /// Aggregates over the calls `filter` selects (`bucket_us`: the time histogram's width).
    pub async fn ledger_stats(
        &self,
        id: u32,
        filter: CallFilter,
        bucket_us: Option<i64>,
    ) -> Result<Stats, ApiError> {
        let ledger = self.ledger(id)?;
        blocking(move || ledger.stats(&filter, bucket_us)).await
    }

    /// How the approvals asked in the filter's time range went.
    pub async fn ledger_approvals(&self, id: u32, filter: CallFilter) -> Result<ApprovalSummary, ApiError> {
        let ledger = self.ledger(id)?;
        blocking(move || ledger.approvals(&filter)).await
    }

    /// The shell commands the selected calls prompted for (or were blocked for) most.
    pub async fn ledger_top_commands(
        &self,
        id: u32,
        filter: CallFilter,
        outcome: CommandOutcome,
        limit: u32,
    ) -> Result<Vec<CommandCount>, ApiError> {
        let ledger = self.ledger(id)?;
        blocking(move || ledger.top_commands(&filter, outcome, limit as usize)).await
    }

    /// Sessions started in `[since, until)`, newest first.
    pub async fn ledger_sessions(
        &self,
        id: u32,
        since: Option<Timestamp>,
        until: Option<Timestamp>,
        limit: u32,
    ) -> Result<Vec<SessionRow>, ApiError> {
        let ledger = self.ledger(id)?;
        blocking(move || ledger.sessions(since, until, limit as usize)).await
    }

    /// One session's calls over time, each on a lane (calls that ran at once on different lanes).
    pub async fn ledger_session_timeline(
        &self,
        id: u32,
        session: String,
    ) -> Result<SessionTimeline, ApiError> {
        let ledger = self.ledger(id)?;
        blocking(move || ledger.session_timeline(&session)).await
    }

    /// The recent ledgers and the saved views.
    pub async fn ledger_library(&self) -> Result<LedgerLibrary, ApiError> {
        LedgerLibrary::load(&self.library_file()?)
    }

    /// Saves a view by name (replacing one of that name); the library after.
    pub async fn save_ledger_view(&self, view: SavedView) -> Result<LedgerLibrary, ApiError> {
        LedgerLibrary::save_view(&self.library_file()?, view)
    }

    /// Deletes the view named `name`; the library after.
    pub async fn delete_ledger_view(&self, name: String) -> Result<LedgerLibrary, ApiError> {
        LedgerLibrary::delete_view(&self.library_file()?, &name)
    }

    /// Exports every record of the calls `filter` selects in ledger `id` to `file` as JSONL or CSV on
    /// the blocking pool, streaming progress to `sink` (the last update `done` or `failed`); returns
    /// the stream's id for [`Client::stop_stream`].
    pub async fn export_ledger(
        &self,
        id: u32,
        filter: CallFilter,
        format: ExportFormat,
        file: String,
        mut sink: Sink<ExportUpdate>,
    ) -> Result<u32, ApiError> {
        let ledger = self.ledger(id)?;
        let stream = self.reserve_stream()?;
        let stop = Arc::new(AtomicBool::new(false));
        self.inner.jobs.insert(stream, Stop::Flag(stop.clone()));
        let jobs = self.clone();
        tokio::task::spawn_blocking(move || {
            let out = PathBuf::from(&file);
            let mut report = |done: u64, total: u64| {
                let _ = sink(ExportUpdate::Progress { done, total });
            };
            let last = match ledger.export(&filter, format, &out, &stop, &mut report) {
                Ok(records) => ExportUpdate::Done { records, file },
                Err(error) => ExportUpdate::Failed { error },
            };
            jobs.inner.jobs.ended(stream);
            let _ = sink(last);
        });
        Ok(stream)
    }
}
