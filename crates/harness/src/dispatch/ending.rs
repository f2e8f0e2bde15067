//! How every call ends: its result, the ledger write of its last record, then its event. The result
//! and the record are built synchronously (`Shared::refused`, `Shared::conclude`); what awaits is only
//! the ledger's own boxed write, so the future that finishes a call stays a few hundred bytes whatever
//! the pipeline holds (and moving it costs little).

use super::Shared;
use crate::call::{CallContext, CallOutcome, ToolCallResult};
use crate::events::EventPayload;
use crate::ledger::{LedgerError, Offered, ToolCallRecord};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A ledger write under way (the boxed future `Ledger::record` returns), when `Ledger::offer` could
/// not take the record at once.
type LedgerWrite<'a> = Pin<Box<dyn Future<Output = Result<(), LedgerError>> + Send + 'a>>;

/// The event a call's end announces, once its record is handed to the ledger.
#[derive(Clone, Copy)]
pub(super) enum EndEvent {
    /// Nobody listens.
    Silent,
    Blocked,
    Ended {
        duration_us: u64,
        redaction_us: u64,
    },
}

/// A call's end, built: what the caller gets, the write of its record, and its event.
pub(super) struct Ending<'a> {
    pub(super) result: ToolCallResult,
    write: Option<LedgerWrite<'a>>,
    event: EndEvent,
    /// Which record, for the log line when the ledger refuses it.
    what: &'static str,
}

impl Shared {
    /// Starts the ledger write of `record` (when there is a ledger and a record).
    pub(super) fn ending<'a>(
        &'a self,
        result: ToolCallResult,
        record: Option<ToolCallRecord>,
        event: EndEvent,
        what: &'static str,
    ) -> Ending<'a> {
        let write = match (&self.ledger, record) {
            // The ledger takes it now (no boxed future), or later through `record`.
            (Some(ledger), Some(record)) => match ledger.offer(record) {
                Ok(Offered::Taken) => None,
                Ok(Offered::Wait(record)) => Some(ledger.record(*record)),
                Err(e) => Some(Box::pin(std::future::ready(Err(e))) as LedgerWrite<'a>),
            },
            _ => None,
        };
        Ending { result, write, event, what }
    }

    /// Waits for the record's write, then announces the end.
    pub(super) async fn end(&self, ctx: &Arc<CallContext>, ending: Ending<'_>) -> ToolCallResult {
        let Ending { result, write, event, what } = ending;
        if let Some(write) = write
            && let Err(e) = write.await
        {
            tracing::error!(call_id = %ctx.call_id, error = %e, record = what, "ledger record not written");
        }
        let payload = match (event, &result.outcome) {
            (EndEvent::Silent, _) => None,
            (EndEvent::Blocked, CallOutcome::Blocked { reason, error }) => Some(EventPayload::Blocked {
                reason: *reason,
                error: error.clone(),
                decided_by: result.decided_by.clone(),
            }),
            (EndEvent::Ended { duration_us, redaction_us }, CallOutcome::Finished { output }) => {
                Some(EventPayload::Finished { output: output.clone(), duration_us, redaction_us })
            }
            (EndEvent::Ended { duration_us, .. }, CallOutcome::Error { error }) => {
                Some(EventPayload::Error { error: error.clone(), duration_us })
            }
            (EndEvent::Blocked | EndEvent::Ended { .. }, _) => None,
        };
        if let Some(payload) = payload {
            self.emit(ctx, &result.tool_name, payload);
        }
        result
    }
}
