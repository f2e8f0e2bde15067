//! The idempotency stage: the first stage of a call that carries an idempotency key, wrapped around
//! the pipeline ([`EffectStage::run`] takes the pipeline as its continuation, so a call's path reads top
//! to bottom in `Hub::call_requested`). The key is claimed in the [`EffectBook`] and made durable in
//! the ledger before the pipeline runs the call; a retry is answered with the first call's result
//! (and recorded as a `duplicate_effect` that names the original), a key reused with other arguments is
//! refused (`effect_conflict`), and a key whose first call has an unknown outcome is refused
//! (`outcome_unknown`) until an operator marks it.

use crate::effects::{Claim, ClaimTicket, EffectBook, LOCAL_AGENT, effect_digest};
use crate::state::HubState;
use portcullis_harness::CallErrorCode;
use portcullis_harness::{
    BlockedReason, CallError, CallOutcome, McpRequest, Timestamp, ToolCall, ToolCallResult,
};
use portcullis_ledger::{EffectChange, EffectMark, EffectMarkOutcome};
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;

/// The validator named as the decider of calls refused for their key.
const DECIDER: &str = "idempotency_key";

/// A call as the gateway hands it in.
pub struct KeyedCall<'a> {
    pub session_id: &'a str,
    pub call_id: &'a str,
    pub tool: &'a str,
    pub arguments: Value,
    pub owner: &'a str,
    pub cancel: tokio_util::sync::CancellationToken,
    pub request: Arc<McpRequest>,
    pub key: String,
}

/// The idempotency stage over a hub's state.
pub struct EffectStage<'a> {
    state: &'a HubState,
}

impl<'a> EffectStage<'a> {
    pub fn new(state: &'a HubState) -> Self {
        EffectStage { state }
    }

    pub fn book(&self) -> &'a EffectBook {
        &self.state.effects
    }

    /// `request` with the key its tool declares over its arguments (a manifest's `idempotency_key`)
    /// when the agent sent none: `<tool>(<the values in canonical JSON>)`, or their SHA-256 when that
    /// is longer than a key may be.
    pub fn with_declared_key(
        &self,
        request: Arc<McpRequest>,
        tool: &str,
        arguments: &Value,
    ) -> Arc<McpRequest> {
        if request.idempotency_key.is_some() {
            return request;
        }
        let registry = self.state.dispatcher.registry();
        let Some(names) = registry.get(tool).map(|t| t.tool.effect_key().to_vec()).filter(|n| !n.is_empty())
        else {
            return request;
        };
        let values: Vec<Value> =
            names.iter().map(|n| arguments.get(n).cloned().unwrap_or(Value::Null)).collect();
        let key = crate::effects::declared_key(tool, &values);
        let mut keyed = (*request).clone();
        keyed.idempotency_key = Some(key);
        Arc::new(keyed)
    }

    /// Runs a call that carries an idempotency key (see the module's doc): `pipeline` runs it once its
    /// key is claimed, and never for a retry, a conflict or an unknown outcome.
    pub async fn run<'c, F, Fut>(&self, call: KeyedCall<'c>, pipeline: F) -> ToolCallResult
    where
        F: FnOnce(KeyedCall<'c>) -> Fut,
        Fut: Future<Output = ToolCallResult>,
    {
        let agent = call.request.agent.clone().unwrap_or_else(|| LOCAL_AGENT.to_owned());
        let digest = effect_digest(call.tool, &call.arguments);
        loop {
            let claim = self.book().claim(
                &agent,
                &call.key,
                call.tool,
                &digest,
                call.call_id,
                call.session_id,
                Timestamp::now(),
            );
            match claim {
                Claim::Run(mut ticket) => {
                    // What the call does, for an operator who may have to decide about it: redacted
                    // first (the ledger never holds a secret the agent sent).
                    let mut shown = call.arguments.clone();
                    self.state.dispatcher.redactor().redact_value(&mut shown);
                    ticket.row.summary = portcullis_ledger::query::argument_summary(&shown);
                    return self.run_claimed(ticket, call, pipeline).await;
                }
                Claim::Wait { original, mut answer } => {
                    tracing::info!(call = call.call_id, %original, "a retry waits for the call that claimed its key");
                    tokio::select! {
                        changed = answer.changed() => {
                            // The sender is gone only once the claim ended one way or another: look again.
                            let _ = changed;
                        }
                        () = call.cancel.cancelled() => {
                            let error = CallError::new(CallErrorCode::Cancelled, format!(
                                "cancelled while waiting for call {original}, which holds the idempotency key"
                            ));
                            return self.refuse(&call, BlockedReason::DuplicateEffect, error).await;
                        }
                    }
                }
                Claim::Answered { original, result } => {
                    let error = CallError {
                        code: CallErrorCode::DuplicateEffect,
                        message: format!(
                            "a retry: answered with the result of call {original}, which holds the idempotency key; not run again"
                        ),
                        details: Some(json!({ "original_call_id": original, "idempotency_key": call.key })),
                    };
                    // Recorded as its own call that points at the original; the agent gets the answer.
                    let _ = self.refuse(&call, BlockedReason::DuplicateEffect, error).await;
                    return (*result).clone();
                }
                Claim::Conflict { original } => {
                    let error = CallError {
                        code: CallErrorCode::EffectConflict,
                        message: format!(
                            "the idempotency key was used by call {original} with other arguments (or another tool): use a new key for a new call"
                        ),
                        details: Some(json!({ "original_call_id": original, "idempotency_key": call.key })),
                    };
                    return self.refuse(&call, BlockedReason::EffectConflict, error).await;
                }
                Claim::Unknown { original, claimed_at } => {
                    let error = CallError {
                        code: CallErrorCode::OutcomeUnknown,
                        message: format!(
                            "outcome unknown: call {original} with this idempotency key was running when the hub stopped, so it may or may not have taken effect; it is not run again until an operator marks it done, failed or retryable"
                        ),
                        details: Some(json!({
                            "original_call_id": original,
                            "idempotency_key": call.key,
                            "claimed_at": claimed_at.0,
                        })),
                    };
                    return self.refuse(&call, BlockedReason::OutcomeUnknown, error).await;
                }
                Claim::Marked { original, done, operator, note } => {
                    let (code, said) = if done {
                        (CallErrorCode::EffectMarkedDone, "took effect")
                    } else {
                        (CallErrorCode::EffectMarkedFailed, "failed or did not take effect")
                    };
                    let error = CallError {
                        code,
                        message: format!(
                            "the operator ({operator}) said call {original} with this idempotency key {said}; it is not run again{}",
                            note.as_deref().map(|n| format!(" (note: {n})")).unwrap_or_default()
                        ),
                        details: Some(json!({ "original_call_id": original, "idempotency_key": call.key })),
                    };
                    return self.refuse(&call, BlockedReason::DuplicateEffect, error).await;
                }
            }
        }
    }

    /// The claiming call: the claim made durable, then the pipeline, then the answer kept.
    async fn run_claimed<'c, F, Fut>(
        &self,
        ticket: Box<ClaimTicket>,
        call: KeyedCall<'c>,
        pipeline: F,
    ) -> ToolCallResult
    where
        F: FnOnce(KeyedCall<'c>) -> Fut,
        Fut: Future<Output = ToolCallResult>,
    {
        let ledger = &self.state.ledger;
        if let Err(e) = self.record_durably(EffectChange::Claimed(ticket.row.clone())).await {
            // Never run an effect whose claim is not durable: a crash would forget it ran.
            self.book().release(ticket);
            let error = CallError::new(
                CallErrorCode::LedgerUnavailable,
                format!("the idempotency key could not be claimed in the ledger: {e}"),
            );
            return self.refuse(&call, BlockedReason::EffectConflict, error).await;
        }
        let (agent, key, claimed_by) = (ticket.agent.clone(), ticket.key.clone(), ticket.row.call_id.clone());
        let result = pipeline(call).await;
        if matches!(result.outcome, CallOutcome::Blocked { .. }) {
            // It never ran: the key is free for a call that may.
            let _ = ledger.record_effect(EffectChange::Released { agent, key, call_id: claimed_by }).await;
            self.book().release(ticket);
            return result;
        }
        let answer = serde_json::to_string(&result).unwrap_or_default();
        let ended =
            EffectChange::Ended { agent, key, call_id: claimed_by, at: Timestamp::now(), result: answer };
        // Durable before the agent has the answer: an agent that got it and retries after a crash gets it
        // again, never "outcome unknown".
        if let Err(e) = self.record_durably(ended).await {
            tracing::warn!(error = %e, "a claimed effect's end was not recorded: after a restart its outcome reads unknown");
        }
        self.book().finish(ticket, Arc::new(result.clone()));
        result
    }

    /// Records a call refused for its key, and returns the blocked result.
    async fn refuse(&self, call: &KeyedCall<'_>, reason: BlockedReason, error: CallError) -> ToolCallResult {
        let run = self.state.mcp_run(call.session_id, call.owner).with_mcp(Some(call.request.clone()));
        let tool_call = ToolCall::new(call.call_id.to_owned(), call.tool, call.arguments.clone());
        self.state.dispatcher.refuse_before(tool_call, &run, reason, error, DECIDER).await
    }

    /// An operator's decision on an effect whose outcome is unknown: recorded durably in the ledger
    /// first, then applied (done or failed: retries are answered so; retryable: the key is free). A
    /// decision the ledger did not take is not applied: no retry runs on a decision the audit lacks.
    pub async fn mark_effect(
        &self,
        agent: &str,
        key: &str,
        outcome: EffectMarkOutcome,
        operator: &str,
        note: Option<String>,
    ) -> Result<String, MarkEffectError> {
        let call_id = self.book().unknown_call(agent, key)?;
        let mark = EffectMark {
            at: Timestamp::now(),
            agent: agent.to_owned(),
            key: key.to_owned(),
            call_id: call_id.clone(),
            outcome,
            operator: operator.to_owned(),
            note: note.clone(),
        };
        self.record_durably(EffectChange::Marked(mark)).await.map_err(MarkEffectError::NotRecorded)?;
        self.book().mark(agent, key, &call_id, outcome, operator, note)?;
        Ok(call_id)
    }

    /// A change to the effects, durable (in the journal) when this returns.
    async fn record_durably(&self, change: EffectChange) -> Result<(), portcullis_ledger::LedgerStoreError> {
        self.state.ledger.record_effect(change).await?;
        self.state.ledger.flush_durable().await
    }
}

/// Why an operator's decision on an effect was not taken.
#[derive(Debug, thiserror::Error)]
pub enum MarkEffectError {
    #[error(transparent)]
    Refused(#[from] crate::effects::MarkError),
    #[error("the decision was not recorded in the ledger, so it was not applied: {0}")]
    NotRecorded(portcullis_ledger::LedgerStoreError),
}
