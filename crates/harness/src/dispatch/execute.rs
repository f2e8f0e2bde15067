//! Stage 7's execution: the tool runs with its cancellation token (a grace period, then it is dropped),
//! panics contained, progress reports recorded and announced (the dispatcher is the tools'
//! `ProgressSink`); and the error of a call that passed every check but did not start.

use super::{Shared, panic_message};
use crate::call::{CallContext, CallError, DecidedBy};
use crate::error_code::CallErrorCode;
use crate::events::EventPayload;
use crate::execution::PolicyRuling;
use crate::ledger::{RecordKind, ToolCallRecord};
use crate::outcome::{CallOutcome, ToolCallResult};
use crate::registry::RegisteredTool;
use crate::tool::{ProgressReporter, ProgressSink, ToolError, ToolInvocation, ToolOutput};
use async_trait::async_trait;
use futures::FutureExt;
use futures::future::CatchUnwind;
use serde_json::Value;
use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use tokio_util::sync::CancellationToken;

/// A tool's future, its panics contained. `Unpin` (the tool's future is boxed), so the pipeline can
/// poll it once in place before deciding whether it needs the wait on cancellation.
pub(super) type Running<'a> = CatchUnwind<AssertUnwindSafe<ToolFuture<'a>>>;
type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'a>>;
/// What a tool's future settled with: its result, or the payload of its panic.
type Settled = Result<Result<ToolOutput, ToolError>, Box<dyn Any + Send>>;

/// Polls `future` once with the caller's context (and so its waker): `Ready(Pending)` when it waits.
pub(super) fn poll_once<F: Future + Unpin>(future: &mut F) -> impl Future<Output = Poll<F::Output>> + '_ {
    std::future::poll_fn(move |cx| Poll::Ready(Pin::new(&mut *future).poll(cx)))
}

/// A tool's settled future as the call's outcome.
pub(super) fn outcome_of(settled: Settled) -> Result<ToolOutput, CallError> {
    match settled {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(e)) => Err(CallError { code: e.code, message: e.message, details: e.details }),
        Err(panic) => Err(CallError::new(
            CallErrorCode::ToolPanicked,
            format!("the tool panicked: {}", panic_message(panic.as_ref())),
        )),
    }
}

impl Shared {
    /// The tool's future for `invocation` (nothing runs until it is polled).
    pub(super) fn start(entry: &RegisteredTool, invocation: ToolInvocation) -> Running<'_> {
        AssertUnwindSafe(entry.tool.execute(invocation)).catch_unwind()
    }

    /// The rest of a tool's execution that did not finish at its first poll: it runs until it
    /// settles, or, once the run is cancelled, for the grace period; then it is dropped.
    pub(super) async fn keep_executing(
        &self,
        mut run: Running<'_>,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, CallError> {
        let settled = tokio::select! {
            biased;
            settled = &mut run => settled,
            () = cancel.cancelled() => match tokio::time::timeout(self.cancel_grace, &mut run).await {
                Ok(settled) => settled,
                Err(_) => {
                    return Err(CallError::new(
                        CallErrorCode::Cancelled,
                        "the run was cancelled and the tool did not stop within the grace period",
                    ));
                }
            },
        };
        outcome_of(settled)
    }

    /// A call that passed every check but did not start (run cancelled, ledger refused `started`).
    pub(crate) async fn fail_unstarted(
        &self,
        ctx: &Arc<CallContext>,
        tool_name: Arc<str>,
        mut error: CallError,
        decided_by: DecidedBy,
        policy: Option<Box<PolicyRuling>>,
    ) -> ToolCallResult {
        let redacted = self.redactor.redact_error(&mut error);
        if let Some(ledger) = &self.ledger {
            let mut record =
                ToolCallRecord::new(RecordKind::Error, ctx.clone(), tool_name.clone(), decided_by.clone());
            record.error = Some(error.clone());
            record.policy = policy.map(|p| *p);
            record.redacted = redacted;
            if let Err(e) = ledger.record(record).await {
                tracing::error!(call_id = %ctx.call_id, error = %e, "error record not written");
            }
        }
        if self.events.has_subscribers() {
            self.emit(ctx, &tool_name, EventPayload::Error { error: error.clone(), duration_us: 0 });
        }
        ToolCallResult {
            call_id: ctx.call_id.clone(),
            tool_name,
            outcome: CallOutcome::Error { error },
            decided_by,
            redacted,
        }
    }

    async fn emit_progress(&self, reporter: &ProgressReporter, mut progress: Value) {
        let ctx = &reporter.call;
        let tool_name = &reporter.tool_name;
        let redacted = self.redactor.redact_value(&mut progress);
        if let Some(ledger) = &self.ledger {
            let mut record = ToolCallRecord::new(
                RecordKind::Progress,
                ctx.clone(),
                tool_name.clone(),
                reporter.decided_by.clone(),
            );
            record.started_at = Some(reporter.started_at);
            record.progress = Some(progress.clone());
            record.redacted = redacted;
            if let Err(e) = ledger.record(record).await {
                tracing::error!(call_id = %ctx.call_id, error = %e, "progress record not written");
            }
        }
        if self.events.has_subscribers() {
            self.emit(ctx, tool_name, EventPayload::Progress { progress });
        }
    }
}

/// The dispatcher is where its tools' progress reports go.
#[async_trait]
impl ProgressSink for Shared {
    async fn report(&self, reporter: &ProgressReporter, progress: Value) {
        self.emit_progress(reporter, progress).await;
    }
}
