//! How every call ends: its result, the ledger write of its last record, then its event. The result
//! and the record are built synchronously (`Shared::block`, `Shared::conclude`); what awaits is only
//! the ledger's own boxed write, inside `Ending`, a hand-written future of a few hundred bytes whatever
//! the pipeline holds (and moving it costs little).

use super::Shared;
use crate::call::{CallContext, DecidedBy};
use crate::events::EventPayload;
use crate::ledger::{LedgerError, Offered, ToolCallRecord};
use crate::outcome::{CallOutcome, ToolCallResult};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

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

/// A call's end, built: what the caller gets, the write of its record, and its event. It is itself the
/// future that finishes the call: awaiting it waits for the write (if the ledger did not take the
/// record at once), then announces the end and yields the result. Hand-written rather than an `async
/// fn`, so the pipeline's future holds only this (not a generator around it) and moves it once.
pub(crate) struct Ending<'a> {
    shared: &'a Shared,
    ctx: &'a Arc<CallContext>,
    /// Taken when the ending is complete.
    result: Option<ToolCallResult>,
    write: Option<LedgerWrite<'a>>,
    event: EndEvent,
    /// The policy's decider, for a blocked call's event.
    policy_decided_by: Option<DecidedBy>,
    /// Which record, for the log line when the ledger refuses it.
    what: &'static str,
}

impl Shared {
    /// Starts the ledger write of `record` (when there is a ledger and a record). Inlined, so the
    /// result is built where the `Ending` holds it rather than copied into it.
    #[inline(always)]
    pub(super) fn ending<'a>(
        &'a self,
        ctx: &'a Arc<CallContext>,
        result: ToolCallResult,
        record: Option<ToolCallRecord>,
        event: EndEvent,
        what: &'static str,
    ) -> Ending<'a> {
        let policy_decided_by = match event {
            EndEvent::Blocked => record.as_ref().and_then(|r| r.policy.as_ref()?.asked_by()).cloned(),
            _ => None,
        };
        let write = match (&self.ledger, record) {
            // The ledger takes it now (no boxed future), or later through `record`.
            (Some(ledger), Some(record)) => match ledger.offer(record) {
                Ok(Offered::Taken) => None,
                Ok(Offered::Wait(record)) => Some(ledger.record(*record)),
                Err(e) => Some(Box::pin(std::future::ready(Err(e))) as LedgerWrite<'a>),
            },
            _ => None,
        };
        Ending { shared: self, ctx, result: Some(result), write, event, policy_decided_by, what }
    }

    /// Announces the end of a call whose record is written (or was refused and logged).
    fn announce_end(
        &self,
        ctx: &Arc<CallContext>,
        result: &ToolCallResult,
        event: EndEvent,
        policy_decided_by: Option<DecidedBy>,
    ) {
        let payload = match (event, &result.outcome) {
            (EndEvent::Silent, _) => None,
            (EndEvent::Blocked, CallOutcome::Blocked { reason, error }) => Some(EventPayload::Blocked {
                reason: *reason,
                error: error.clone(),
                decided_by: result.decided_by.clone(),
                policy_decided_by,
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
    }
}

impl Future for Ending<'_> {
    type Output = ToolCallResult;

    /// Waits for the record's write, then announces the end.
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ToolCallResult> {
        let this = &mut *self;
        if let Some(write) = &mut this.write {
            let written = std::task::ready!(write.as_mut().poll(cx));
            this.write = None;
            if let Err(e) = written {
                tracing::error!(call_id = %this.ctx.call_id, error = %e, record = this.what, "ledger record not written");
            }
        }
        match this.result.take() {
            Some(result) => {
                this.shared.announce_end(this.ctx, &result, this.event, this.policy_decided_by.take());
                Poll::Ready(result)
            }
            // Polled again after it completed: a caller's bug, and nothing to give; stay pending.
            None => Poll::Pending,
        }
    }
}
