//! Stage 8: middleware `tool_result` (reverse order), guardrails `tool_output`, redaction, then the
//! `finished` | `error` record and event. Without middleware or guardrails nothing here awaits but the
//! ledger: the result, record and event are built synchronously (`conclude`).

use super::ending::{EndEvent, Ending};
use super::{Finishing, Shared, panic_message};
use crate::call::{CallContext, CallError, RunContext, ToolCall};
use crate::error_code::CallErrorCode;
use crate::guardrail::{GuardrailStage, GuardrailSubject};
use crate::ledger::{RecordKind, ToolCallRecord};
use crate::outcome::{CallOutcome, ToolCallResult};
use crate::time::Timestamp;
use crate::tool::ToolOutput;
use futures::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

impl Shared {
    /// Stage 8 with result middleware or output guardrails (without them, the pipeline concludes at
    /// once).
    pub(super) async fn finish(
        &self,
        finishing: Finishing<'_>,
        outcome: Result<ToolOutput, CallError>,
        run: &RunContext,
    ) -> ToolCallResult {
        let outcome = self.guard_outcome(&finishing, outcome, run).await;
        self.conclude(finishing, outcome).await
    }

    /// Middleware `tool_result` (reverse order), then guardrails `tool_output`.
    async fn guard_outcome(
        &self,
        finishing: &Finishing<'_>,
        mut outcome: Result<ToolOutput, CallError>,
        run: &RunContext,
    ) -> Result<ToolOutput, CallError> {
        let ctx: &Arc<CallContext> = finishing.ctx;
        if !self.middleware.is_empty() {
            let call = ToolCall::new(ctx.call_id.clone(), finishing.tool_name.to_string(), Value::Null);
            for m in self.middleware.iter().rev() {
                outcome = AssertUnwindSafe(m.tool_result(&call, outcome, ctx))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|panic| {
                        Err(CallError::new(
                            CallErrorCode::ToolError,
                            format!(
                                "result middleware {} panicked: {}",
                                m.name(),
                                panic_message(panic.as_ref())
                            ),
                        ))
                    });
            }
        }
        if let (Ok(output), false) = (&outcome, self.guardrails.is_empty()) {
            let subject = GuardrailSubject {
                stage: GuardrailStage::ToolOutput,
                call: ctx,
                tool_name: &finishing.tool_name,
                arguments: finishing.arguments.as_ref().unwrap_or(&Value::Null),
                output: Some(output),
            };
            if let Err(refusal) = self.run_guardrails(subject, run).await {
                outcome = Err(refusal.error);
            }
        }
        outcome
    }

    /// Redaction, then the result, with the write of its record (when there is a ledger) started.
    pub(super) fn conclude<'a>(
        &'a self,
        finishing: Finishing<'a>,
        outcome: Result<ToolOutput, CallError>,
    ) -> Ending<'a> {
        let Finishing { ctx, tool_name, decided_by, policy, started_at, arguments: _ } = finishing;
        let listening = self.events.has_subscribers();
        let redacting = listening.then(std::time::Instant::now);
        let (outcome, redacted) = match outcome {
            Ok(mut output) => {
                let redacted = self.redactor.redact_output(&mut output);
                (CallOutcome::Finished { output: Arc::new(output) }, redacted)
            }
            Err(mut error) => {
                let redacted = self.redactor.redact_error(&mut error);
                (CallOutcome::Error { error }, redacted)
            }
        };
        let redaction_us = crate::events::micros_since(redacting);
        // Read when the start was (a subscriber who came meanwhile sees a duration of 0).
        let now = started_at.and_then(|_| self.clock());
        let duration_us = now.zip(started_at).map_or(0, |(now, started_at)| now.micros_since(started_at));
        let record = self.ledger.is_some().then(|| {
            let now = now.unwrap_or_else(Timestamp::now);
            let kind = if matches!(outcome, CallOutcome::Finished { .. }) {
                RecordKind::Finished
            } else {
                RecordKind::Error
            };
            let mut record =
                ToolCallRecord::made_at(kind, ctx.clone(), tool_name.clone(), decided_by.clone(), now);
            record.started_at = started_at;
            record.policy = policy.map(|p| *p);
            record.redacted = redacted;
            match &outcome {
                CallOutcome::Finished { output } => record.output = Some(output.clone()),
                CallOutcome::Error { error } | CallOutcome::Blocked { error, .. } => {
                    record.error = Some(error.clone())
                }
            }
            record
        });
        let event = if listening { EndEvent::Ended { duration_us, redaction_us } } else { EndEvent::Silent };
        let result =
            ToolCallResult { call_id: ctx.call_id.clone(), tool_name, outcome, decided_by, redacted };
        self.ending(ctx, result, record, event, "terminal")
    }
}
