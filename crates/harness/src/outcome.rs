//! How a call ended: the one result every call id gets. Apart from the call's vocabulary (`call.rs`)
//! because a finished call carries its tool's output, so the words tools themselves use stay below
//! the tool module and this result sits above it.

use crate::call::{BlockedReason, CallError, DecidedBy};
use crate::tool::ToolOutput;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CallOutcome {
    /// The tool ran and returned (its output may itself report `is_error`).
    Finished { output: Arc<ToolOutput> },
    /// The tool ran (or was about to) and failed.
    Error { error: CallError },
    /// The call never executed.
    Blocked { reason: BlockedReason, error: CallError },
}

/// The one result every call id gets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallResult {
    pub call_id: Arc<str>,
    /// The tool name after middleware (the name that was, or would have been, executed).
    pub tool_name: Arc<str>,
    #[serde(flatten)]
    pub outcome: CallOutcome,
    pub decided_by: DecidedBy,
    /// Whether redaction changed anything in this result.
    pub redacted: bool,
}

impl ToolCallResult {
    pub fn blocked_reason(&self) -> Option<BlockedReason> {
        match &self.outcome {
            CallOutcome::Blocked { reason, .. } => Some(*reason),
            _ => None,
        }
    }

    pub fn error(&self) -> Option<&CallError> {
        match &self.outcome {
            CallOutcome::Error { error } | CallOutcome::Blocked { error, .. } => Some(error),
            CallOutcome::Finished { .. } => None,
        }
    }

    pub fn output(&self) -> Option<&ToolOutput> {
        match &self.outcome {
            CallOutcome::Finished { output } => Some(output),
            _ => None,
        }
    }

    pub fn is_finished(&self) -> bool {
        matches!(self.outcome, CallOutcome::Finished { .. })
    }
}
