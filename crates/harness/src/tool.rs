//! What a tool is: its spec (in `tool_spec.rs`), its action description and its `execute`, plus the
//! values that flow in (invocation) and out (output) of it.

use crate::call::{CallContext, DecidedBy};
use crate::error_code::CallErrorCode;
use crate::execution::ExecutionAction;
use crate::grants::Grants;
use crate::registry::ToolRegistry;
use crate::time::Timestamp;
use crate::tool_spec::ToolSpec;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use thiserror::Error;
use tokio_util::sync::CancellationToken;

/// One block of tool output (the shapes MCP results carry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    Text {
        text: String,
    },
    /// Base64 data, already bounded by the tool that produced it.
    Image {
        data: String,
        mime_type: String,
    },
    /// Base64 audio, bounded like an image by the tool that produced it (an upstream result's bound).
    Audio {
        data: String,
        mime_type: String,
    },
    Resource {
        uri: String,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        mime_type: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        text: Option<String>,
    },
}

/// What a tool returns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ToolOutput {
    pub content: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub structured: Option<Value>,
    /// The tool ran but reports a failure to the agent (MCP `isError`, for example).
    #[serde(default)]
    pub is_error: bool,
    /// The connections a confined command made or tried through its egress proxy (egress by name), for
    /// the call's record: what reached where, what was refused and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connections: Vec<crate::Connection>,
    /// What a confined command changed in its write roots and what became of each change (kept, held,
    /// discarded), for the call's record; like `connections`, never shown to the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Box<crate::ChangeRecord>>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput { content: vec![Content::Text { text: text.into() }], ..ToolOutput::default() }
    }

    pub fn structured(value: Value) -> Self {
        ToolOutput { structured: Some(value), ..ToolOutput::default() }
    }

    /// All text blocks joined by newlines (handy for tests and previews).
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let Content::Text { text } = block {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }
}

/// A tool's failure. `code` is stable; `message` is redacted before anyone sees it.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{message}")]
pub struct ToolError {
    pub code: CallErrorCode,
    pub message: String,
    pub details: Option<Value>,
}

impl ToolError {
    pub fn new(code: CallErrorCode, message: impl Into<String>) -> Self {
        ToolError { code, message: message.into(), details: None }
    }

    /// A plain failure with code `tool_error`.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::new(CallErrorCode::ToolError, message)
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// The tools a call may see: the registry at dispatch time and the run's grants.
#[derive(Clone)]
pub struct Catalog {
    pub registry: Arc<ToolRegistry>,
    pub grants: Arc<Grants>,
}

impl Catalog {
    /// Specs of the granted tools, in registry order.
    pub fn allowed_specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.registry.specs().filter(|spec| self.grants.permits(&spec.name))
    }
}

/// Where a [`ProgressReporter`]'s reports go. The dispatcher is the sink (it redacts, records and
/// announces them); the trait keeps this module from depending on the dispatcher.
#[async_trait]
pub(crate) trait ProgressSink: Send + Sync {
    /// Takes one progress report of `reporter`'s call.
    async fn report(&self, reporter: &ProgressReporter, progress: Value);
}

/// Reports progress of a running call: each report becomes a `tool_execution_progress` event and a
/// progress snapshot in the ledger (redacted first).
#[derive(Clone)]
pub struct ProgressReporter {
    pub(crate) sink: Option<Arc<dyn ProgressSink>>,
    pub(crate) call: Arc<CallContext>,
    pub(crate) tool_name: Arc<str>,
    pub(crate) started_at: Timestamp,
    pub(crate) decided_by: DecidedBy,
}

impl ProgressReporter {
    /// A reporter that goes nowhere (for running a tool outside a dispatcher).
    pub fn detached(call: CallContext, tool_name: &str) -> Self {
        ProgressReporter {
            sink: None,
            call: Arc::new(call),
            tool_name: Arc::from(tool_name),
            started_at: Timestamp::now(),
            decided_by: DecidedBy::DEFAULT,
        }
    }

    pub async fn report(&self, progress: Value) {
        if let Some(sink) = &self.sink {
            sink.report(self, progress).await;
        }
    }
}

/// Everything `execute` receives.
pub struct ToolInvocation {
    /// The validated arguments (a JSON object).
    pub arguments: Value,
    /// The action the policy evaluated and, if asked, the operator approved. Execute exactly this:
    /// open these canonical paths, run this command; never re-resolve from `arguments`.
    pub action: ExecutionAction,
    pub call: Arc<CallContext>,
    pub progress: ProgressReporter,
    /// Cancelled when the run is cancelled. Tools stop promptly (kill child processes, ...).
    pub cancel: CancellationToken,
    pub catalog: Catalog,
    /// The operator of this call, for what the tool finds it must ask while it runs (a host a confined
    /// command's rule does not name); `None` where no approver is configured.
    pub asks: Option<crate::OperatorAsk>,
}

/// A tool. `describe_action` says what `execute` would do, so the policy can judge it first.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    fn spec(&self) -> &ToolSpec;

    /// Describes the side effect these arguments ask for (kind, operation, canonical paths, command).
    /// Called after schema validation, before the execution policy. An error blocks the call
    /// (`validation_failed`): a tool that cannot say what it will do does not run.
    fn describe_action(&self, arguments: &Value, call: &CallContext) -> Result<ExecutionAction, ToolError> {
        let _ = (arguments, call);
        Ok(ExecutionAction::none())
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError>;

    /// The arguments whose values name one effect of this tool (a manifest's declared idempotency key):
    /// a call that carries no idempotency key of its own is keyed by these values, so a retry with the
    /// same values is answered from the first call. Empty (the default): only a key the caller sends.
    fn effect_key(&self) -> &[String] {
        &[]
    }
}
