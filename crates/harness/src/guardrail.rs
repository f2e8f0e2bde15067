//! Guardrails on `tool_input` and `tool_output`: allow, block, or tripwire (block and stop the run).
//! A guardrail that errors, panics or answers garbage fails closed.

use crate::call::CallContext;
use crate::tool::ToolOutput;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

/// Where a guardrail runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardrailStage {
    ToolInput,
    ToolOutput,
}

/// The rule that refused: `pack:<pack>/<rule>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GuardrailRule {
    pub pack: String,
    pub rule: String,
}

impl GuardrailRule {
    pub fn new(pack: impl Into<String>, rule: impl Into<String>) -> Self {
        GuardrailRule { pack: pack.into(), rule: rule.into() }
    }

    /// Identifiers are 1..=64 bytes of letters, digits, '.', '_', '-'; anything else is garbage.
    pub fn is_well_formed(&self) -> bool {
        fn ok(s: &str) -> bool {
            !s.is_empty()
                && s.len() <= 64
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        }
        ok(&self.pack) && ok(&self.rule)
    }
}

/// A guardrail's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardrailVerdict {
    Allow,
    /// Refuse this call.
    Block {
        rule: GuardrailRule,
        message: Option<String>,
    },
    /// Refuse this call and stop the run (the run's cancellation token is cancelled).
    Tripwire {
        rule: GuardrailRule,
        message: Option<String>,
    },
}

/// What a guardrail inspects.
#[derive(Debug, Clone, Copy)]
pub struct GuardrailSubject<'a> {
    pub stage: GuardrailStage,
    pub call: &'a CallContext,
    pub tool_name: &'a str,
    pub arguments: &'a Value,
    /// Present at `tool_output`.
    pub output: Option<&'a ToolOutput>,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct GuardrailError(pub String);

#[async_trait]
pub trait Guardrail: Send + Sync {
    /// Identifies the guardrail in events and when it fails.
    fn name(&self) -> &str;
    async fn check(&self, subject: GuardrailSubject<'_>) -> Result<GuardrailVerdict, GuardrailError>;
}
