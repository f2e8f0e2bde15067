//! Portcullis tool harness: the one dispatch pipeline every tool call goes through.
//!
//! The pipeline order is fixed (see `docs/architecture.md`):
//! middleware `tool_call` → guardrails `tool_input` → lookup / grants / JSON-object arguments →
//! permission → validators (JSON Schema + host) → execution policy (→ approval) → started →
//! execute → middleware `tool_result` → guardrails `tool_output` → redaction → finished | error.
//!
//! Blocked calls never execute; they return a [`ToolCallResult`] with a [`BlockedReason`] and write one
//! `blocked` ledger record. This crate knows nothing of SQLite, sockets, sessions or windows: hosts plug
//! those in through the seams ([`Ledger`], [`ExecutionPolicy`], [`Approvals`], [`Guardrail`],
//! [`Middleware`], [`ToolValidator`], [`PermissionCheck`]).

pub mod batch;
pub mod call;
pub mod change_record;
pub mod decider;
pub mod disclosure;
pub mod dispatch;
pub mod egress;
pub mod error;
pub mod error_code;
pub mod events;
pub mod execution;
pub mod fnv;
#[doc(hidden)]
pub mod fuzzing;
pub mod grants;
pub mod guardrail;
pub mod ledger;
pub mod malformed;
pub mod mcp_request;
pub mod middleware;
pub mod name;
pub mod operator_ask;
pub mod outcome;
pub mod paths;
pub mod permission;
pub mod receipt;
pub mod redaction;
pub mod registry;
pub mod sandbox;
pub mod schema;
pub mod shell_words;
pub mod time;
pub mod tool;
pub mod tool_spec;
pub mod untrusted;
pub mod validation;

#[cfg(feature = "testing")]
pub mod testing;

pub use batch::BatchOptions;
pub use call::{
    BlockedReason, CallArguments, CallContext, CallError, DecidedBy, ProtectedKind, RuleRef, RunContext,
    ToolCall,
};
pub use change_record::{ChangeEntry, ChangeKind, ChangeOutcome, ChangeRecord};
pub use decider::DeciderKind;
pub use disclosure::{Disclosure, DisclosureLimits, SearchToolsTool, ToolSearchIndex};
pub use dispatch::{Dispatcher, DispatcherBuilder};
pub use egress::{Connection, ConnectionKind, HostPattern, asks_for_host, host_action};
pub use error::HarnessError;
pub use error_code::CallErrorCode;
pub use events::{
    EventBus, EventDelivery, EventPayload, EventSubscription, StageTimes, ToolEvent, ToolEventKind,
};
pub use execution::{
    AGENT_PROMPT, ActionKind, ApprovalAnswer, ApprovalRequest, Approvals, ExecutionAction, ExecutionPolicy,
    FileAccess, FileVerdict, MCP_CHANGED_DEFINITION, MCP_READ, NO_APPROVER, PolicyDecision, PolicyRequest,
    PolicyRuling, PolicyVerdict, Risk,
};
pub use grants::{GrantScope, Grants, NameSet};
pub use guardrail::{
    Guardrail, GuardrailError, GuardrailRule, GuardrailStage, GuardrailSubject, GuardrailVerdict,
};
pub use ledger::{Ledger, LedgerError, MemoryLedger, Offered, RecordKind, ToolCallRecord};
pub use mcp_request::{McpRequest, TraceParent};
pub use middleware::{Middleware, MiddlewareError};
pub use name::{
    MCP_ELICITATION, MCP_METHOD_TOOLS, MCP_PROMPTS_GET, MCP_RESOURCES_READ, MCP_ROOTS, MCP_SAMPLING,
    NameError, mcp_method_of, validate_tool_name,
};
pub use operator_ask::OperatorAsk;
pub use outcome::{CallOutcome, ToolCallResult};
pub use permission::{AllowAllPermissions, Permission, PermissionCheck, PermissionSet};
pub use receipt::{OperatorOutcome, Receipt, arguments_digest, canonical_json};
pub use redaction::{REDACTED, Redactor, RedactorBuilder};
pub use registry::{DuplicatePolicy, RegisteredTool, RegistryError, ToolRegistry};
pub use sandbox::{
    Containment, EgressScope, Enforcement, MaskedProgram, SandboxLimits, SandboxProfile, SandboxSupport,
};
pub use schema::{InstanceLimits, LimitError, MissingSchema, SchemaError, SchemaLimits, SchemaValidator};
pub use time::Timestamp;
pub use tool::{Catalog, Content, ProgressReporter, Tool, ToolError, ToolInvocation, ToolOutput};
pub use tool_spec::{ToolAnnotations, ToolSpec};
pub use validation::{ToolValidator, ValidationIssue, ValidatorVerdict};
