//! How a refused call ends: the blocked result, its one `blocked` ledger record (with the redacted
//! arguments and action that were attempted) and its one `tool_execution_blocked` event. Built
//! synchronously; only the ledger write awaits, so a refusal is the cheapest thing the pipeline does.

use super::ending::{EndEvent, Ending};
use super::{Refusal, Shared};
use crate::call::CallContext;
use crate::ledger::{RecordKind, ToolCallRecord};
use crate::outcome::{CallOutcome, ToolCallResult};
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;

impl Shared {
    /// Turns a refusal into the blocked result, its event and its ledger record. The result and record
    /// are built before this returns; the returned `Ending` only waits for the ledger's write (so it
    /// stays small inside the pipeline's future, whatever the refusal held).
    pub(crate) fn block<'a>(
        &'a self,
        ctx: &'a Arc<CallContext>,
        tool_name: Arc<str>,
        refusal: Refusal,
        arguments: Option<Value>,
    ) -> Ending<'a> {
        let Refusal { reason, mut error, decided_by, matched_rules, action, policy } = refusal;
        let mut redacted = self.redactor.redact_error(&mut error);
        tracing::debug!(call_id = %ctx.call_id, tool = %tool_name, %reason, "tool call blocked");
        let record = self.ledger.is_some().then(|| {
            let mut record =
                ToolCallRecord::new(RecordKind::Blocked, ctx.clone(), tool_name.clone(), decided_by.clone());
            if let Some(args) = arguments {
                let (shown, args_redacted) = self.shown_arguments(Cow::Owned(args), action.as_deref());
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
            record.policy = policy.map(|p| *p);
            record.redacted = redacted;
            record
        });
        let result = ToolCallResult {
            call_id: ctx.call_id.clone(),
            tool_name,
            outcome: CallOutcome::Blocked { reason, error },
            decided_by,
            redacted,
        };
        let event = if self.events.has_subscribers() { EndEvent::Blocked } else { EndEvent::Silent };
        self.ending(ctx, result, record, event, "blocked")
    }
}
