//! A running tool's way to ask the operator about something its approved action did not cover: a
//! confined command's connection to a host its rule does not name. The question goes through the same
//! approval seam as a call's prompt (pending approval, session grants, "always", the ledger's approvals
//! table), for the same call, bounded by the same timeout; an unanswered question is refused.

use crate::DecidedBy;
use crate::call::CallContext;
use crate::execution::{ApprovalAnswer, ApprovalRequest, Approvals, ExecutionAction, PolicyVerdict};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The approver of the call a tool runs for (see the module's documentation).
#[derive(Clone)]
pub struct OperatorAsk {
    approvals: Arc<dyn Approvals>,
    call: Arc<CallContext>,
    tool_name: String,
    timeout: Option<Duration>,
}

impl std::fmt::Debug for OperatorAsk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorAsk")
            .field("call", &self.call.call_id)
            .field("tool", &self.tool_name)
            .finish()
    }
}

impl OperatorAsk {
    pub fn new(
        approvals: Arc<dyn Approvals>,
        call: Arc<CallContext>,
        tool_name: String,
        timeout: Option<Duration>,
    ) -> Self {
        OperatorAsk { approvals, call, tool_name, timeout }
    }

    /// Asks about `action` (shown with `arguments`, already free of secrets), as `verdict` says why;
    /// the operator's answer, or a refusal once the timeout passed.
    pub async fn ask(
        &self,
        action: ExecutionAction,
        arguments: Value,
        verdict: PolicyVerdict,
    ) -> ApprovalAnswer {
        let request = ApprovalRequest {
            call: self.call.clone(),
            tool_name: self.tool_name.clone(),
            arguments: Arc::new(arguments),
            action,
            verdict,
        };
        let asking = self.approvals.request(request);
        match self.timeout {
            None => asking.await,
            Some(limit) => match tokio::time::timeout(limit, asking).await {
                Ok(answer) => answer,
                Err(_) => ApprovalAnswer::Deny {
                    reason: format!("no answer within {} s", limit.as_secs()),
                    decided_by: DecidedBy::ApprovalTimeout {
                        after_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                    },
                },
            },
        }
    }
}
