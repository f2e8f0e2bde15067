//! What a tool is: its spec (in `tool_spec.rs`), its action description and its `execute`, plus the
//! values that flow in (invocation) and out (output) of it.
//!
//! And the tool registry (insertion-ordered, O(1) lookup, explicit duplicate handling, fail-closed
//! resolve): a tool's invocation carries the catalog of registered tools, which hold tools, so the
//! trait and its registry are one knot of types and live in one file.

use crate::call::{CallContext, DecidedBy};
use crate::error_code::CallErrorCode;
use crate::execution::ExecutionAction;
use crate::grants::Grants;
use crate::name::{NameError, validate_tool_name};
use crate::schema::{SchemaKey, SchemaValidator, ToolSchemaSlot};
use crate::time::Timestamp;
use crate::tool_spec::ToolSpec;
use crate::validation::ValidationIssue;
use async_trait::async_trait;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::{Arc, RwLock};
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

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RegistryError {
    #[error("Duplicate tool: {0}")]
    Duplicate(String),
    #[error("Unknown tool: {0}")]
    Unknown(String),
    #[error(transparent)]
    InvalidName(#[from] NameError),
}

/// What `register` does when the name is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DuplicatePolicy {
    /// The new tool replaces the old one, keeping its position.
    #[default]
    Replace,
    /// Registration fails with `Duplicate tool: <name>`.
    Fail,
}

/// A tool as registered: the tool and the cache key of its schema, computed once here.
#[derive(Clone)]
pub struct RegisteredTool {
    pub tool: Arc<dyn Tool>,
    /// The name, shared by every event and record of this tool's calls.
    pub name: Arc<str>,
    pub(crate) schema_key: Option<SchemaKey>,
    /// The compiled schema, once a validator has compiled it: later calls reach it without the
    /// validator's cache (no mutex, no hashing; an uncontended read lock). Shared by clones.
    pub(crate) compiled: Arc<RwLock<Option<ToolSchemaSlot>>>,
}

impl RegisteredTool {
    pub fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }
}

/// Kept beside [`RegisteredTool`], whose schema handle it uses: the schema module knows nothing of the
/// registry.
impl SchemaValidator {
    /// Validates a registered tool's arguments.
    /// The tool keeps a handle on the compiled schema, so after its first call the validator's cache
    /// (mutex, hash) is not touched: an uncontended read lock and a weak upgrade instead.
    #[inline]
    pub fn validate_tool(&self, tool: &RegisteredTool, arguments: &Value) -> Result<(), ValidationIssue> {
        self.validate_kept(tool.spec().parameters.as_ref(), tool.schema_key, &tool.compiled, arguments)
    }
}

/// The registry. Build it, then hand it to a dispatcher (which can swap in a new one at run time).
#[derive(Clone, Default)]
pub struct ToolRegistry {
    /// foldhash: a lookup per call (see `grants::NameSet`).
    tools: IndexMap<String, RegisteredTool, foldhash::fast::RandomState>,
    duplicates: DuplicatePolicy,
}

impl ToolRegistry {
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    pub fn with_duplicate_policy(duplicates: DuplicatePolicy) -> Self {
        ToolRegistry { tools: IndexMap::default(), duplicates }
    }

    /// Registers a tool. Returns the tool it replaced, if any.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<Option<Arc<dyn Tool>>, RegistryError> {
        let name = tool.spec().name.clone();
        validate_tool_name(&name)?;
        if self.duplicates == DuplicatePolicy::Fail && self.tools.contains_key(&name) {
            return Err(RegistryError::Duplicate(name));
        }
        let schema_key = tool.spec().parameters.as_ref().map(SchemaKey::of);
        let entry =
            RegisteredTool { tool, name: Arc::from(name.as_str()), schema_key, compiled: Arc::default() };
        Ok(self.tools.insert(name, entry).map(|old| old.tool))
    }

    /// Removes a tool (for example when an upstream server goes away).
    pub fn unregister(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.shift_remove(name).map(|e| e.tool)
    }

    /// Looks a tool up; fails closed with `Unknown tool: <name>`.
    pub fn resolve(&self, name: &str) -> Result<&RegisteredTool, RegistryError> {
        self.tools.get(name).ok_or_else(|| RegistryError::Unknown(name.to_owned()))
    }

    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Names in insertion order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Specs in insertion order.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|e| e.tool.spec())
    }

    /// Position of a tool in insertion order.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.tools.get_index_of(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;

    struct Named(ToolSpec);

    #[async_trait]
    impl Tool for Named {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        async fn execute(&self, _: ToolInvocation) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(self.0.description.clone()))
        }
    }

    fn tool(name: &str, desc: &str) -> Arc<dyn Tool> {
        Arc::new(Named(ToolSpec::new(name, desc)))
    }

    #[test]
    fn keeps_insertion_order_and_replace_keeps_position() {
        let mut r = ToolRegistry::new();
        for n in ["zeta", "alpha", "mid"] {
            r.register(tool(n, "v1")).unwrap();
        }
        let old = r.register(tool("alpha", "v2")).unwrap();
        assert_eq!(old.unwrap().spec().description, "v1");
        assert_eq!(r.names().collect::<Vec<_>>(), ["zeta", "alpha", "mid"]);
        assert_eq!(r.resolve("alpha").unwrap().spec().description, "v2");
    }

    #[test]
    fn duplicate_fail_mode() {
        let mut r = ToolRegistry::with_duplicate_policy(DuplicatePolicy::Fail);
        r.register(tool("a", "1")).unwrap();
        let err = r.register(tool("a", "2")).err().unwrap();
        assert_eq!(err.to_string(), "Duplicate tool: a");
        assert_eq!(r.resolve("a").unwrap().spec().description, "1");
    }

    #[test]
    fn resolve_fails_closed_and_names_are_checked() {
        let mut r = ToolRegistry::new();
        assert_eq!(r.resolve("nope").err().unwrap().to_string(), "Unknown tool: nope");
        assert!(matches!(r.register(tool("Bad-Name", "")), Err(RegistryError::InvalidName(_))));
        r.register(tool("mcp:fs:read_file", "")).unwrap();
        assert!(r.contains("mcp:fs:read_file"));
        assert!(r.unregister("mcp:fs:read_file").is_some());
        assert!(r.is_empty());
    }
}
