//! Stage 6: the tool describes its action, the execution policy answers allow / deny / ask, and an ask
//! goes to the approver (bounded by the approval timeout, ended by cancelling the run).

use super::{Authorized, Refusal, Shared, panic_message};
use crate::call::{BlockedReason, CallContext, DecidedBy, RuleRef};
use crate::error_code::CallErrorCode;
use crate::events::{StageTimes, micros_since};
use crate::execution::{
    ApprovalAnswer, ApprovalRequest, ExecutionAction, ExecutionPolicy, PolicyDecision, PolicyRequest,
    PolicyRuling, PolicyVerdict,
};
use crate::registry::RegisteredTool;
use futures::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Sleeps for `limit`, or never returns when there is none.
async fn sleep_or_forever(limit: Option<Duration>) {
    match limit {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending::<()>().await,
    }
}

impl Shared {
    /// Stages 4-6 without a policy or approver to ask: permission, validation and the action's
    /// description, all synchronous (no future is built when no policy is configured).
    #[allow(clippy::result_large_err)] // the `Refusal` every stage returns, unboxed as in `permit_and_validate`
    pub(super) fn check_and_describe(
        &self,
        entry: &RegisteredTool,
        arguments: &Value,
        ctx: &Arc<CallContext>,
        stages: &mut StageTimes,
    ) -> Result<ExecutionAction, Refusal> {
        let checking = stages.clock();
        self.permit_and_validate(entry, arguments, ctx)?;

        let action =
            std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.describe_action(arguments, ctx)))
                .unwrap_or_else(|panic| {
                    Err(crate::tool::ToolError::failed(format!(
                        "describing the action panicked: {}",
                        panic_message(panic.as_ref())
                    )))
                });
        stages.arguments_us = micros_since(checking);
        action.map_err(|e| {
            let mut refusal = Refusal::new(
                BlockedReason::ValidationFailed,
                CallErrorCode::ValidationFailed,
                format!("cannot describe the action: {}", e.message),
                DecidedBy::Validator { validator: "action".into() },
            );
            refusal.error.details = e.details;
            refusal
        })
    }

    /// Stage 6 with a policy: its verdict, and an approver's answer when it asks.
    #[allow(clippy::too_many_arguments)] // the call's parts the stage reads, each borrowed
    pub(super) async fn judge(
        &self,
        policy: &Arc<dyn ExecutionPolicy>,
        entry: &RegisteredTool,
        arguments: &Value,
        ctx: &Arc<CallContext>,
        mut action: ExecutionAction,
        cancel: &CancellationToken,
        stages: &mut StageTimes,
    ) -> Result<Authorized, Refusal> {
        let request = PolicyRequest { call: ctx, tool: entry.spec(), arguments, action: &action };
        let judging = stages.clock();
        let verdict =
            AssertUnwindSafe(policy.evaluate(request)).catch_unwind().await.unwrap_or_else(|panic| {
                PolicyVerdict::deny(
                    DecidedBy::Default { detail: Some("policy failure".into()) },
                    format!("the execution policy panicked: {}", panic_message(panic.as_ref())),
                )
            });
        stages.policy_us = micros_since(judging);
        // The walls the policy chose travel with the action: the approver sees them, the tool applies
        // them, the ledger keeps them.
        action.sandbox = verdict.sandbox.clone();
        let ruling = PolicyRuling {
            decision: verdict.decision,
            decided_by: verdict.decided_by.clone(),
            files: self.shown_files(&verdict.files),
            version: verdict.policy_version.clone(),
        };
        match verdict.decision {
            PolicyDecision::Allow => {
                Ok((action, verdict.decided_by, verdict.matched_rules, Some(Box::new(ruling))))
            }
            // Contained runs only inside the walls built for it: without them, nothing runs.
            PolicyDecision::Contain
                if action.sandbox.as_ref().is_some_and(|s| s.is_confined() && s.contained.is_some()) =>
            {
                Ok((action, verdict.decided_by, verdict.matched_rules, Some(Box::new(ruling))))
            }
            PolicyDecision::Contain => {
                let mut refusal = Refusal::new(
                    BlockedReason::ExecutionDenied,
                    CallErrorCode::ExecutionDenied,
                    "the policy contains this command, and it has no contained walls to run in".to_owned(),
                    verdict.decided_by,
                );
                refusal.matched_rules = verdict.matched_rules;
                refusal.action = Some(Box::new(action));
                refusal.policy = Some(Box::new(ruling));
                Err(refusal)
            }
            PolicyDecision::Deny => {
                let reason = verdict.reason.unwrap_or_else(|| "denied by the execution policy".into());
                let mut refusal = Refusal::new(
                    BlockedReason::ExecutionDenied,
                    CallErrorCode::ExecutionDenied,
                    reason,
                    verdict.decided_by,
                );
                refusal.matched_rules = verdict.matched_rules;
                refusal.action = Some(Box::new(action));
                refusal.policy = Some(Box::new(ruling));
                Err(refusal)
            }
            PolicyDecision::Ask => {
                let asking = stages.clock();
                // Boxed: a call waiting for a person is rare, and its future would otherwise make
                // every call's future larger (and every move of it longer).
                let answered = Box::pin(self.ask(entry, arguments, ctx, action, verdict, cancel)).await;
                stages.approval_us = Some(micros_since(asking));
                match answered {
                    Ok((action, decided_by, rules)) => {
                        Ok((action, decided_by, rules, Some(Box::new(ruling))))
                    }
                    Err(mut refusal) => {
                        refusal.policy = Some(Box::new(ruling));
                        Err(refusal)
                    }
                }
            }
        }
    }

    async fn ask(
        &self,
        entry: &RegisteredTool,
        arguments: &Value,
        ctx: &Arc<CallContext>,
        action: ExecutionAction,
        verdict: PolicyVerdict,
        cancel: &CancellationToken,
    ) -> Result<(ExecutionAction, DecidedBy, Vec<RuleRef>), Refusal> {
        let matched_rules = verdict.matched_rules.clone();
        let Some(approvals) = &self.approvals else {
            let mut refusal = Refusal::new(
                BlockedReason::ExecutionDenied,
                CallErrorCode::ExecutionDenied,
                "approval required, but no approver is configured",
                DecidedBy::Default { detail: Some(crate::execution::NO_APPROVER.into()) },
            );
            refusal.matched_rules = matched_rules;
            refusal.action = Some(Box::new(action));
            return Err(refusal);
        };
        let (shown, _) = self.shown_arguments(std::borrow::Cow::Borrowed(arguments), Some(&action));
        let shown = Arc::new(shown);
        let request = ApprovalRequest {
            call: ctx.clone(),
            tool_name: entry.name.to_string(),
            arguments: shown.clone(),
            // The approver sees a copy; the action executed is the one kept here.
            action: action.clone(),
            verdict,
        };
        let asking = AssertUnwindSafe(approvals.request(request)).catch_unwind();
        let limit = self.approval_timeout;
        let answer = tokio::select! {
            answered = asking => answered.unwrap_or_else(|panic| ApprovalAnswer::Deny {
                reason: format!("the approver panicked: {}", panic_message(panic.as_ref())),
                decided_by: DecidedBy::Default { detail: Some("approver failure".into()) },
            }),
            () = cancel.cancelled() => ApprovalAnswer::Deny {
                reason: "the run was cancelled while the call awaited approval".into(),
                decided_by: DecidedBy::Default { detail: Some(crate::execution::APPROVAL_WITHDRAWN.into()) },
            },
            () = sleep_or_forever(limit) => ApprovalAnswer::Deny {
                reason: format!(
                    "no answer to the approval request within {} s; the call is denied",
                    limit.map_or(0, |d| d.as_secs())
                ),
                decided_by: DecidedBy::ApprovalTimeout {
                    after_ms: limit.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                },
            },
        };
        match answer {
            ApprovalAnswer::Allow { decided_by } => match uncovered(&decided_by, &shown, ctx) {
                None => Ok((action, decided_by, matched_rules)),
                Some(mut refusal) => {
                    refusal.matched_rules = matched_rules;
                    refusal.action = Some(Box::new(action));
                    Err(refusal)
                }
            },
            ApprovalAnswer::Deny { reason, decided_by } => {
                let mut refusal = Refusal::new(
                    BlockedReason::ExecutionDenied,
                    CallErrorCode::ExecutionDenied,
                    reason,
                    decided_by,
                );
                refusal.matched_rules = matched_rules;
                refusal.action = Some(Box::new(action));
                Err(refusal)
            }
        }
    }
}

/// The refusal of an operator's "allow" whose receipt does not approve this call: its arguments as the
/// operator was shown them have another digest, the receipt was altered, or it answered another call.
/// An answer without a receipt (an approver that gives none) is not checked here.
fn uncovered(decided_by: &DecidedBy, shown: &Value, ctx: &CallContext) -> Option<Refusal> {
    let DecidedBy::Operator { receipt: Some(receipt), .. } = decided_by else { return None };
    let why = if !receipt.is_intact() {
        "the receipt was altered after it was given"
    } else if *receipt.call_id != *ctx.call_id || *receipt.session_id != *ctx.session_id {
        "the receipt answers another call"
    } else if !receipt.covers(shown) {
        "the receipt approves other arguments"
    } else {
        return None;
    };
    let mut refusal = Refusal::new(
        BlockedReason::ExecutionDenied,
        CallErrorCode::ExecutionDenied,
        format!("the operator's answer does not approve this call: {why}; the call is denied"),
        DecidedBy::Validator { validator: crate::receipt::RECEIPT_VALIDATOR.into() },
    );
    refusal.error.details = Some(serde_json::json!({
        "receipt": receipt,
        "arguments_sha256": crate::receipt::arguments_digest(shown),
    }));
    Some(refusal)
}
