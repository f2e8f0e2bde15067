//! Calls a transport could not even read as calls (a protocol request with no tool name, or arguments
//! that are not an object): they never reach the pipeline, yet every refused call must leave one
//! `blocked` record and event like any other, so the dispatcher records them here.

use crate::call::{BlockedReason, CallArguments, CallError, DecidedBy, RunContext, ToolCall};
use crate::dispatch::{Dispatcher, Refusal, shown_name};
use crate::error_code::CallErrorCode;
use crate::outcome::ToolCallResult;
use serde_json::Value;
use std::sync::Arc;

impl Dispatcher {
    /// Refuses a malformed call as `invalid_arguments` (decided by the `arguments` validator): one
    /// `blocked` record (with the redacted, bounded arguments attempted) and one event, and the blocked
    /// result. `call.name` is what the caller named, or a marker when it named nothing usable.
    pub async fn refuse_malformed(
        &self,
        call: ToolCall,
        run: &RunContext,
        message: impl Into<String>,
    ) -> ToolCallResult {
        let ctx = Arc::new(run.call(call.id.clone()));
        let refusal = Refusal::new(
            BlockedReason::InvalidArguments,
            CallErrorCode::InvalidArguments,
            message,
            DecidedBy::Validator { validator: "arguments".into() },
        );
        let arguments = match call.arguments {
            CallArguments::Json(value) => value,
            CallArguments::Unparsed { raw, .. } => Value::String(raw),
        };
        self.shared.block(&ctx, shown_name(&call.name), refusal, Some(arguments)).await
    }

    /// Refuses a call before the pipeline for a reason of the caller's (an idempotency key's conflict,
    /// a duplicate, an unknown outcome): one `blocked` record with `reason` and `error`, decided by the
    /// validator named `by`, and one event. The call never runs.
    pub async fn refuse_before(
        &self,
        call: ToolCall,
        run: &RunContext,
        reason: BlockedReason,
        error: CallError,
        by: &str,
    ) -> ToolCallResult {
        let ctx = Arc::new(run.call(call.id.clone()));
        let refusal = Refusal::with_error(reason, error, DecidedBy::Validator { validator: by.into() });
        let arguments = match call.arguments {
            CallArguments::Json(value) => value,
            CallArguments::Unparsed { raw, .. } => Value::String(raw),
        };
        self.shared.block(&ctx, shown_name(&call.name), refusal, Some(arguments)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CallOutcome, MemoryLedger, RecordKind, Redactor, ToolRegistry};
    use serde_json::json;

    #[tokio::test]
    async fn a_malformed_call_is_one_blocked_record_with_redacted_arguments() {
        let ledger = Arc::new(MemoryLedger::default());
        let dispatcher = Dispatcher::builder(ToolRegistry::new())
            .ledger(ledger.clone())
            .redactor(Redactor::builder().secret("hunter22-secret").build())
            .build();
        let run = RunContext::new("s1", "r1");
        let call = ToolCall::new("c1", "shell", json!("echo hunter22-secret"));
        let result = dispatcher.refuse_malformed(call, &run, "`arguments` must be an object").await;
        let CallOutcome::Blocked { reason, error } = &result.outcome else { panic!("{result:?}") };
        assert_eq!(*reason, BlockedReason::InvalidArguments);
        assert_eq!(error.code, CallErrorCode::InvalidArguments);
        let records = ledger.records();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].kind, RecordKind::Blocked);
        assert_eq!(&*records[0].tool_name, "shell");
        let shown = records[0].arguments.as_ref().unwrap().to_string();
        assert!(!shown.contains("hunter22-secret") && records[0].redacted, "{shown}");
    }
}
