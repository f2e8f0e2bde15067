//! The guard seams at both ends of the pipeline: middleware `tool_call` (stage 1) and the guardrail runner
//! used by guardrails `tool_input` (stage 2) and `tool_output` (stage 8), with their decision events.

use super::{MAX_GUARDRAIL_MESSAGE_BYTES, Refusal, Shared, panic_message};
use crate::call::{BlockedReason, CallContext, DecidedBy, RunContext, ToolCall};
use crate::error_code::CallErrorCode;
use crate::events::{EventPayload, GuardrailOutcome, ToolEvent};
use crate::guardrail::{GuardrailRule, GuardrailSubject, GuardrailVerdict};
use crate::schema::truncate;
use crate::time::Timestamp;
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// Identifiers a guardrail's own name may contribute to a `pack` (garbage is replaced).
pub(super) fn sanitize_ident(s: &str) -> String {
    let cleaned: String =
        s.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')).take(64).collect();
    if cleaned.is_empty() { "unnamed".to_owned() } else { cleaned }
}

impl Shared {
    pub(super) async fn apply_call_middleware(
        &self,
        mut call: ToolCall,
        ctx: &CallContext,
    ) -> Result<ToolCall, (String, Refusal)> {
        for m in &self.middleware {
            let id = call.id.clone();
            let name = call.name.clone();
            let result = AssertUnwindSafe(m.tool_call(call, ctx)).catch_unwind().await;
            let why = match result {
                Ok(Ok(mut next)) => {
                    next.id = id; // the call id is not middleware's to change
                    call = next;
                    continue;
                }
                Ok(Err(e)) => e.to_string(),
                Err(panic) => format!("panicked: {}", panic_message(panic.as_ref())),
            };
            let mw = sanitize_ident(m.name());
            let message =
                truncate(&format!("Blocked by middleware {mw}: {why}"), MAX_GUARDRAIL_MESSAGE_BYTES);
            let refusal = Refusal::new(
                BlockedReason::GuardrailBlocked,
                CallErrorCode::GuardrailBlocked,
                message,
                DecidedBy::Guardrail { pack: "middleware".into(), rule: mw },
            );
            return Err((name, refusal));
        }
        Ok(call)
    }

    /// Runs every guardrail of a stage; the first refusal wins. Failures refuse (fail closed).
    pub(super) async fn run_guardrails(
        &self,
        subject: GuardrailSubject<'_>,
        run: &RunContext,
    ) -> Result<(), Refusal> {
        for g in &self.guardrails {
            let result = AssertUnwindSafe(g.check(subject)).catch_unwind().await;
            let (outcome, rule, detail, trip) = match result {
                Ok(Ok(GuardrailVerdict::Allow)) => {
                    self.emit_guardrail(&subject, g.name(), GuardrailOutcome::Allow, None, None);
                    continue;
                }
                Ok(Ok(GuardrailVerdict::Block { rule, message })) if rule.is_well_formed() => {
                    (GuardrailOutcome::Block, rule, message, false)
                }
                Ok(Ok(GuardrailVerdict::Tripwire { rule, message })) if rule.is_well_formed() => {
                    (GuardrailOutcome::Tripwire, rule, message, true)
                }
                Ok(Ok(GuardrailVerdict::Block { .. } | GuardrailVerdict::Tripwire { .. })) => (
                    GuardrailOutcome::Failed,
                    GuardrailRule::new(sanitize_ident(g.name()), "malformed_verdict"),
                    Some("the guardrail answered a malformed rule id".to_owned()),
                    false,
                ),
                Ok(Err(e)) => (
                    GuardrailOutcome::Failed,
                    GuardrailRule::new(sanitize_ident(g.name()), "guardrail_error"),
                    Some(format!("the guardrail failed: {e}")),
                    false,
                ),
                Err(panic) => (
                    GuardrailOutcome::Failed,
                    GuardrailRule::new(sanitize_ident(g.name()), "guardrail_panic"),
                    Some(format!("the guardrail panicked: {}", panic_message(panic.as_ref()))),
                    false,
                ),
            };
            let mut message = format!("Blocked by guardrail rule pack:{}/{}", rule.pack, rule.rule);
            if let Some(detail) = detail.as_deref().filter(|d| !d.is_empty()) {
                message.push_str(": ");
                message.push_str(detail);
            }
            let message = self.redactor.redact_str(&message).unwrap_or(message);
            let message = truncate(&message, MAX_GUARDRAIL_MESSAGE_BYTES);
            self.emit_guardrail(&subject, g.name(), outcome, Some(rule.clone()), Some(message.clone()));
            if trip {
                tracing::warn!(call_id = %subject.call.call_id, "guardrail tripwire: cancelling the run");
                run.cancel.cancel();
            }
            return Err(Refusal::new(
                BlockedReason::GuardrailBlocked,
                CallErrorCode::GuardrailBlocked,
                message,
                DecidedBy::Guardrail { pack: rule.pack, rule: rule.rule },
            ));
        }
        Ok(())
    }

    fn emit_guardrail(
        &self,
        subject: &GuardrailSubject<'_>,
        guardrail: &str,
        outcome: GuardrailOutcome,
        rule: Option<GuardrailRule>,
        message: Option<String>,
    ) {
        if !self.events.has_subscribers() {
            return;
        }
        self.events.emit(ToolEvent {
            call: Arc::new(subject.call.clone()),
            tool_name: Arc::from(subject.tool_name),
            at: Timestamp::now(),
            payload: EventPayload::GuardrailDecision {
                stage: subject.stage,
                guardrail: sanitize_ident(guardrail),
                outcome,
                rule,
                message,
            },
        });
    }
}
