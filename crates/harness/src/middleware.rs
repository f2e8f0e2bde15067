//! Middleware: may normalize a call before the checks (aliases, argument shapes) and reshape a result
//! after execution. It never grants: every check runs on the call as middleware left it, and a name
//! denied by a grant stays denied whatever middleware renames it to.

use crate::call::{CallContext, CallError, ToolCall};
use crate::tool::ToolOutput;
use async_trait::async_trait;
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct MiddlewareError(pub String);

#[async_trait]
pub trait Middleware: Send + Sync {
    fn name(&self) -> &str;

    /// Before the checks. The call id cannot be changed (it is restored if it is).
    async fn tool_call(&self, call: ToolCall, ctx: &CallContext) -> Result<ToolCall, MiddlewareError> {
        let _ = ctx;
        Ok(call)
    }

    /// After execution, before output guardrails and redaction.
    async fn tool_result(
        &self,
        call: &ToolCall,
        outcome: Result<ToolOutput, CallError>,
        ctx: &CallContext,
    ) -> Result<ToolOutput, CallError> {
        let _ = (call, ctx);
        outcome
    }
}
