//! What leaves the pipeline about a call — records, events, approval requests — as copies that are
//! redacted and bounded in size, and the `started` stage that writes them before a call executes (its
//! record made durable first when the call has a side effect). Split from `dispatch.rs` to keep it small.

use super::{Shared, StartedCall};
use crate::call::CallError;
use crate::error_code::CallErrorCode;
use crate::events::EventPayload;
use crate::execution::{ExecutionAction, PolicyRuling};
use crate::ledger::{Offered, RecordKind, ToolCallRecord};
use crate::schema::truncate;
use crate::time::Timestamp;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;

/// Largest copy of arguments kept in a record, event or approval request (estimated JSON bytes); a larger
/// one is replaced by `{"$truncated": {"approx_bytes", "preview"}}` so a caller cannot bloat the ledger.
pub const MAX_RECORDED_ARGUMENT_BYTES: usize = 256 * 1024;
/// Bytes of serialized JSON kept as the preview of truncated arguments.
pub const TRUNCATED_PREVIEW_BYTES: usize = 4096;
/// Longest tool name kept from a caller for a tool that does not exist.
pub const MAX_SHOWN_NAME_BYTES: usize = 256;
/// How deep argument values are searched for the action's command.
const COMMAND_SEARCH_DEPTH: usize = 8;

/// A caller-supplied name as records show it: bounded in length.
pub(crate) fn shown_name(name: &str) -> Arc<str> {
    Arc::from(truncate(name, MAX_SHOWN_NAME_BYTES))
}

/// Estimated serialized size of a value, counting no further than `cap + 1`.
fn approx_json_bytes(value: &Value, cap: usize) -> usize {
    let mut total = 0usize;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        total += match v {
            Value::String(s) => s.len() + 2,
            Value::Array(items) => {
                stack.extend(items.iter());
                2 + items.len()
            }
            Value::Object(map) => {
                for (k, item) in map {
                    total += k.len() + 4;
                    stack.push(item);
                }
                2
            }
            _ => 8,
        };
        if total > cap {
            return cap + 1;
        }
    }
    total
}

/// Replaces every string equal to `command` (to a bounded depth) by `shown`; true when any was.
fn replace_command(value: &mut Value, command: &str, shown: &str, depth: usize) -> bool {
    match value {
        Value::String(s) if s == command => {
            *s = shown.to_owned();
            true
        }
        Value::Array(items) if depth < COMMAND_SEARCH_DEPTH => {
            items.iter_mut().fold(false, |any, v| replace_command(v, command, shown, depth + 1) | any)
        }
        Value::Object(map) if depth < COMMAND_SEARCH_DEPTH => {
            map.values_mut().fold(false, |any, v| replace_command(v, command, shown, depth + 1) | any)
        }
        _ => false,
    }
}

impl Shared {
    /// The arguments as records, events and approvers see them: redacted and bounded in size. An
    /// argument that is the action's command line is redacted as a command (quote-removed reading too).
    /// Owned arguments are redacted in place; borrowed ones are copied first.
    pub(super) fn shown_arguments(
        &self,
        arguments: Cow<'_, Value>,
        action: Option<&ExecutionAction>,
    ) -> (Value, bool) {
        let approx = approx_json_bytes(&arguments, MAX_RECORDED_ARGUMENT_BYTES);
        let mut shown = arguments.into_owned();
        let mut redacted = false;
        if let Some(command) = action.and_then(|a| a.command.as_deref())
            && let Some(command_shown) = self.redactor.redact_command(command)
        {
            redacted |= replace_command(&mut shown, command, &command_shown, 0);
        }
        redacted |= self.redactor.redact_value(&mut shown);
        if approx <= MAX_RECORDED_ARGUMENT_BYTES {
            return (shown, redacted);
        }
        // Serialize the redacted copy, then scan the text again before cutting it.
        let text = serde_json::to_string(&shown).unwrap_or_default();
        let text = self.redactor.redact_str(&text).unwrap_or(text);
        let preview = truncate(&text, TRUNCATED_PREVIEW_BYTES);
        let summary = serde_json::json!({ "$truncated": { "approx_bytes_over": MAX_RECORDED_ARGUMENT_BYTES, "preview": preview } });
        (summary, true)
    }

    /// The files of a policy's verdict as records show them: a path or reason holding a secret (a file
    /// named after a token) is redacted like the command that named it.
    pub(super) fn shown_files(
        &self,
        files: &[crate::execution::FileVerdict],
    ) -> Vec<crate::execution::FileVerdict> {
        files
            .iter()
            .map(|f| {
                let mut shown = f.clone();
                self.redactor.redact_string(&mut shown.path);
                self.redactor.redact_string(&mut shown.via);
                if let Some(reason) = &mut shown.reason {
                    self.redactor.redact_string(reason);
                }
                shown
            })
            .collect()
    }

    /// The action as records show it: the command redacted as a command (what a quote-removed reading
    /// of it holds too) and bounded in size.
    pub(super) fn shown_action(&self, action: &ExecutionAction) -> (ExecutionAction, bool) {
        let mut shown = action.clone();
        let mut redacted = false;
        if let Some(command) = &mut shown.command {
            if let Some(done) = self.redactor.redact_command(command) {
                *command = done;
                redacted = true;
            }
            if command.len() > MAX_RECORDED_ARGUMENT_BYTES {
                *command = format!("{}…", truncate(command, TRUNCATED_PREVIEW_BYTES));
                redacted = true;
            }
        }
        (shown, redacted)
    }

    /// Stage 7 before execution: the `started` record, then the `tool_execution_started` event. A call
    /// whose action has a side effect waits until its record is durable (committed), so it never runs
    /// unrecorded; one without (`ActionKind::None`) or one that only reads (`ActionKind::Read`, an
    /// upstream tool its server declares read-only: what it reads reaches the caller only through the
    /// hub, after this record) only queues it (see `ExecutionAction::has_side_effect`). An error: the
    /// call must not run. Called only when there is a ledger or a subscriber (the pipeline checks, so
    /// no future is built otherwise).
    pub(super) async fn announce_start(&self, start: StartedCall<'_>) -> Result<(), CallError> {
        let StartedCall {
            ctx,
            tool_name,
            arguments,
            action,
            decided_by,
            matched_rules,
            policy,
            started_at,
            mut stages,
        } = start;
        let recording = stages.clock();
        let (shown, redacted) = self.shown_arguments(Cow::Borrowed(arguments), Some(action));
        let shown = Arc::new(shown);
        let (shown_action, action_redacted) = self.shown_action(action);
        let shown_action = Arc::new(shown_action);
        if let Some(ledger) = &self.ledger {
            let started_at = started_at.unwrap_or_else(Timestamp::now);
            let mut record = ToolCallRecord::made_at(
                RecordKind::Started,
                ctx.clone(),
                tool_name.clone(),
                decided_by.clone(),
                started_at,
            );
            record.started_at = Some(started_at);
            record.arguments = Some(shown.clone());
            record.action = Some(shown_action.clone());
            record.matched_rules = matched_rules.to_vec();
            record.policy = policy.cloned();
            record.redacted = redacted || action_redacted;
            let written = if action.has_side_effect() {
                ledger.record_durable(record).await
            } else {
                match ledger.offer(record) {
                    Ok(Offered::Taken) => Ok(()),
                    Ok(Offered::Wait(record)) => ledger.record(*record).await,
                    Err(e) => Err(e),
                }
            };
            if let Err(e) = written {
                tracing::error!(call_id = %ctx.call_id, error = %e, "started record not written; call not executed");
                return Err(CallError::new(
                    CallErrorCode::LedgerUnavailable,
                    format!("the call was not executed because the ledger refused its started record: {e}"),
                ));
            }
        }
        if self.events.has_subscribers() {
            stages.ledger_us = crate::events::micros_since(recording);
            self.emit(
                ctx,
                tool_name,
                EventPayload::Started {
                    arguments: shown,
                    action: shown_action,
                    decided_by: decided_by.clone(),
                    policy_decided_by: policy.and_then(PolicyRuling::asked_by).cloned(),
                    stages,
                },
            );
        }
        Ok(())
    }
}
