//! The commands over the running hub: its state, approvals and grants, sessions, servers and tools,
//! hook-up snippets, and the operator's event feed streamed in batches (flushed every [`BATCH_EVERY`] or
//! at [`BATCH_ITEMS`] items, so a thousand calls a second cost a front end twenty messages; a call that
//! asks the operator is flushed at once, [`ends_batch`]).

use super::jobs::{Sink, Stop};
use super::{Client, HubState, blocking};
use crate::always::AlwaysPreview;
use crate::call_changes::{CallChanges, HeldAnswer, HeldAnswered, UndoDone};
use crate::error::{ApiError, ErrorCode};
use crate::types::{
    AgentSession, Answer, Approval, CatalogTool, FeedItem, HookupSnippet, HubStatus, Receipt, RuleScope,
    SessionGrant, ToolChange, UpstreamServer,
};
use serde_json::json;
use std::time::Duration;

/// A batch of the event feed is sent at most this long after its first item arrived.
pub const BATCH_EVERY: Duration = Duration::from_millis(50);
/// A batch of the event feed is sent as soon as it holds this many items.
pub const BATCH_ITEMS: usize = 200;

/// Whether `item` is sent at once with what came before it: a call that waits for the operator is not
/// held back for the batch window (its card is the one thing on the feed a person acts on).
pub fn ends_batch(item: &FeedItem) -> bool {
    matches!(item.event, crate::types::FeedEvent::ApprovalAsked { .. })
}

impl Client {
    /// Whether a hub runs here (and where agents connect), or why not.
    pub async fn hub_state(&self) -> Result<HubState, ApiError> {
        Ok(self.state_now())
    }

    pub async fn hub_status(&self) -> Result<HubStatus, ApiError> {
        Ok(self.api()?.status())
    }

    pub async fn pending_approvals(&self) -> Result<Vec<Approval>, ApiError> {
        Ok(self.api()?.pending_approvals())
    }

    /// Answers approval `id` as this client's operator (never one a request names); the answer's
    /// receipt.
    pub async fn answer_approval(&self, id: u64, answer: Answer) -> Result<Receipt, ApiError> {
        self.api()?.answer_approval(id, &answer, self.operator())
    }

    /// What "always" for approval `id` with `scope` would write and change over the ledger (replayed on
    /// the blocking pool: a large ledger takes a while).
    pub async fn always_preview(
        &self,
        id: u64,
        scope: Option<Vec<RuleScope>>,
    ) -> Result<AlwaysPreview, ApiError> {
        let api = self.api()?.clone();
        blocking(move || api.always_preview(id, scope.as_deref())).await
    }

    pub async fn session_grants(&self) -> Result<Vec<SessionGrant>, ApiError> {
        Ok(self.api()?.session_grants())
    }

    pub async fn revoke_session_grant(&self, id: String) -> Result<(), ApiError> {
        self.api()?.revoke_session_grant(&id)
    }

    pub async fn sessions(&self) -> Result<Vec<AgentSession>, ApiError> {
        Ok(self.api()?.sessions())
    }

    pub async fn servers(&self) -> Result<Vec<UpstreamServer>, ApiError> {
        Ok(self.api()?.servers())
    }

    pub async fn restart_server(&self, id: String) -> Result<(), ApiError> {
        self.api()?.restart_server(&id)
    }

    pub async fn tool_changes(&self) -> Result<Vec<ToolChange>, ApiError> {
        Ok(self.api()?.tool_changes())
    }

    /// Where the hub ships its ledger and how far behind each sink is.
    pub async fn shipping(&self) -> Result<Vec<portcullis_ledger::SinkLag>, ApiError> {
        Ok(self.api()?.shipping())
    }

    /// Accepts the offered definition of a held tool (`digest`: the one the operator was shown).
    pub async fn accept_tool_change(
        &self,
        server: String,
        tool: String,
        digest: String,
    ) -> Result<(), ApiError> {
        self.api()?.accept_tool_change(&server, &tool, &digest, self.operator()).await
    }

    /// The claimed effects, unknown outcomes first, newest first.
    pub async fn effects(&self, limit: u32) -> Result<Vec<portcullis_ledger::EffectRow>, ApiError> {
        let api = self.api()?.clone();
        blocking(move || api.effects(limit)).await
    }

    /// An operator's decision on an unknown outcome (the operator recorded is the client's).
    pub async fn mark_effect(
        &self,
        agent: String,
        key: String,
        outcome: portcullis_ledger::EffectMarkOutcome,
        note: Option<String>,
    ) -> Result<String, ApiError> {
        self.api()?.mark_effect(&agent, &key, outcome, note, self.operator()).await
    }

    /// What the operator can still do about a call's changes (file system work: on the blocking pool).
    pub async fn call_changes(&self, call_id: String, session: String) -> Result<CallChanges, ApiError> {
        let api = self.api()?.clone();
        blocking(move || api.call_changes(&call_id, &session)).await
    }

    /// Undoes a call's committed changes, as this client's operator.
    pub async fn undo_call(&self, call_id: String, session: String) -> Result<UndoDone, ApiError> {
        let (api, operator) = (self.api()?.clone(), self.operator().clone());
        blocking(move || api.undo_call(&call_id, &session, &operator)).await
    }

    /// Keeps or discards a call's held changes, as this client's operator.
    pub async fn answer_held(
        &self,
        call_id: String,
        session: String,
        answer: HeldAnswer,
    ) -> Result<HeldAnswered, ApiError> {
        let (api, operator) = (self.api()?.clone(), self.operator().clone());
        blocking(move || api.answer_held(&call_id, &session, answer, &operator)).await
    }

    pub async fn tools(&self) -> Result<Vec<CatalogTool>, ApiError> {
        Ok(self.api()?.tools())
    }

    pub async fn hookup_snippets(&self) -> Result<Vec<HookupSnippet>, ApiError> {
        self.api()?.hookup_snippets()
    }

    /// A one-time login link to the browser console for `operator` (default: the local user).
    pub async fn console_link(
        &self,
        operator: Option<String>,
    ) -> Result<crate::console_link::ConsoleLink, ApiError> {
        self.api()?.console_link(operator.as_deref())
    }

    /// Streams the operator's event feed, from now on, to `sink` in batches; returns the stream's id.
    pub async fn follow_events(&self, mut sink: Sink<Vec<FeedItem>>) -> Result<u32, ApiError> {
        let api = self.api()?.clone();
        let id = self.reserve_stream()?;
        let jobs = self.clone();
        let task = tokio::spawn(async move {
            // Made inside the task: a feed spawns its merger on the current runtime.
            let mut feed = api.events();
            loop {
                let Some(first) = feed.next().await else { break };
                let mut batch = Vec::with_capacity(16);
                let mut urgent = ends_batch(&first);
                batch.push(first);
                let flush_at = tokio::time::Instant::now() + BATCH_EVERY;
                let mut ended = false;
                while batch.len() < BATCH_ITEMS && !urgent {
                    match tokio::time::timeout_at(flush_at, feed.next()).await {
                        Ok(Some(item)) => {
                            urgent = ends_batch(&item);
                            batch.push(item);
                        }
                        Ok(None) => {
                            ended = true;
                            break;
                        }
                        Err(_) => break,
                    }
                }
                if !sink(batch) || ended {
                    break;
                }
            }
            jobs.inner.jobs.ended(id);
        });
        self.inner.jobs.insert(id, Stop::Task(task.abort_handle()));
        if task.is_finished() {
            // Ended before it was registered: nothing is left to stop.
            self.inner.jobs.ended(id);
        }
        Ok(id)
    }

    /// Stops stream `id` (a feed, replay or export); false when it had already ended.
    pub async fn stop_stream(&self, id: u32) -> Result<bool, ApiError> {
        Ok(self.inner.jobs.stop(id))
    }

    pub(super) fn reserve_stream(&self) -> Result<u32, ApiError> {
        self.inner.jobs.reserve().ok_or_else(|| {
            ApiError::new(
                ErrorCode::BadArgument,
                format!("{} streams run already: stop one first", super::jobs::MAX_STREAMS),
                json!({}),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::FeedEvent;

    #[test]
    fn only_a_call_waiting_for_the_operator_ends_a_batch_early() {
        let item = |event| FeedItem { seq: 1, at: portcullis_harness::Timestamp(0), event };
        assert!(!ends_batch(&item(FeedEvent::SessionClosed { session_id: "s".into() })));
        let settled = FeedEvent::ApprovalSettled { id: 1, outcome: "deny".into(), operator: None };
        assert!(!ends_batch(&item(settled)));
    }
}
