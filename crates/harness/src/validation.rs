//! The host-validator seam: a host can veto arguments after the JSON Schema passed (for example "this
//! path must be inside the project"). Outcomes are redacted before anyone sees them.

use crate::call::CallContext;
use crate::tool_spec::ToolSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Structured validation failure: a message, the JSON path it concerns, and free-form details.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidationIssue {
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ValidationIssue {
    pub fn new(message: impl Into<String>) -> Self {
        ValidationIssue { message: message.into(), path: None, details: None }
    }

    pub fn at(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }
}

/// A host validator's answer: nothing to say, a message, or structured error info.
#[derive(Debug, Clone, PartialEq)]
pub enum ValidatorVerdict {
    Pass,
    Message(String),
    Structured(ValidationIssue),
}

/// A host validator, run after the JSON Schema.
pub trait ToolValidator: Send + Sync {
    /// A short name recorded as what decided a refusal.
    fn name(&self) -> &str;
    fn validate(&self, tool: &ToolSpec, arguments: &Value, call: &CallContext) -> ValidatorVerdict;
}
