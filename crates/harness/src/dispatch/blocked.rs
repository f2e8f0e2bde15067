//! How a refused call ends: the blocked result, its one `blocked` ledger record (with the redacted
//! arguments and action that were attempted) and its one `tool_execution_blocked` event.

use super::{Refusal, Shared};
use crate::call::{CallContext, CallOutcome, ToolCallResult};
use crate::events::EventPayload;
use crate::ledger::{RecordKind, ToolCallRecord};
use serde_json::Value;
use std::sync::Arc;

impl Shared {
    /// Turns a refusal into the blocked result, its event and its ledger record.
    pub(crate) async fn block(
        &self,
        ctx: &Arc<CallContext>,
        tool_name: Arc<str>,
        refusal: Refusal,
        arguments: Option<&Value>,
    ) -> ToolCallResult {
        let Refusal { reason, mut error, decided_by, matched_rules, action, policy } = refusal;
        let mut redacted = self.redactor.redact_error(&mut error);
        tracing::debug!(call_id = %ctx.call_id, tool = %tool_name, %reason, "tool call blocked");
        if let Some(ledger) = &self.ledger {
            let mut record =
                ToolCallRecord::new(RecordKind::Blocked, ctx.clone(), tool_name.clone(), decided_by.clone());
            if let Some(args) = arguments {
                let (shown, args_redacted) = self.shown_arguments(args, action.as_ref());
                redacted |= args_redacted;
                record.arguments = Some(Arc::new(shown));
            }
            if let Some(action) = action {
                let (shown, action_redacted) = self.shown_action(&action);
                redacted |= action_redacted;
                record.action = Some(Arc::new(shown));
            }
            record.error = Some(error.clone());
            record.blocked_reason = Some(reason);
            record.matched_rules = matched_rules;
            record.policy = policy;
            record.redacted = redacted;
            if let Err(e) = ledger.record(record).await {
                tracing::error!(call_id = %ctx.call_id, error = %e, "blocked record not written");
            }
        }
        if self.events.has_subscribers() {
            self.emit(
                ctx,
                &tool_name,
                EventPayload::Blocked { reason, error: error.clone(), decided_by: decided_by.clone() },
            );
        }
        ToolCallResult {
            call_id: ctx.call_id.clone(),
            tool_name,
            outcome: CallOutcome::Blocked { reason, error },
            decided_by,
            redacted,
        }
    }
}
