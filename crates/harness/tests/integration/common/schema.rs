//! The schema-bound tests' fixture: an echo tool that counts its runs, a dispatcher with one tool, and
//! builders of schemas and arguments of exact sizes, depths and counts.

use async_trait::async_trait;
use portcullis_harness::CallErrorCode;
use portcullis_harness::{
    BlockedReason, Dispatcher, InstanceLimits, MissingSchema, RunContext, SchemaLimits, SchemaValidator,
    Tool, ToolCall, ToolCallResult, ToolError, ToolInvocation, ToolOutput, ToolRegistry, ToolSpec,
};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A tool that echoes "ok" and counts its executions.
struct Echo {
    spec: ToolSpec,
    runs: Arc<AtomicUsize>,
}

#[async_trait]
impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, _: ToolInvocation) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::text("ok"))
    }
}

pub fn echo(name: &str, parameters: Option<Value>) -> (Arc<dyn Tool>, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut spec = ToolSpec::new(name, "echo");
    spec.parameters = parameters;
    (Arc::new(Echo { spec, runs: runs.clone() }), runs)
}

/// A dispatcher with one tool `t` (with the given schema) and the given validator.
pub fn one_tool(parameters: Option<Value>, validator: SchemaValidator) -> (Dispatcher, Arc<AtomicUsize>) {
    let (tool, runs) = echo("t", parameters);
    let mut registry = ToolRegistry::new();
    registry.register(tool).unwrap();
    (Dispatcher::builder(registry).schema_validator(validator).build(), runs)
}

pub async fn call(dispatcher: &Dispatcher, id: &str, name: &str, args: Value) -> ToolCallResult {
    dispatcher.dispatch(ToolCall::new(id, name, args), &RunContext::new("s", "r")).await
}

/// Asserts a `validation_failed` block and returns its message.
pub fn blocked_message(result: &ToolCallResult) -> String {
    assert_eq!(
        result.blocked_reason(),
        Some(BlockedReason::ValidationFailed),
        "expected validation_failed, got {result:?}"
    );
    let error = result.error().unwrap();
    assert_eq!(error.code, CallErrorCode::ValidationFailed);
    error.message.clone()
}

pub fn limits_schema(
    max_bytes: usize,
    max_depth: usize,
    max_keywords: usize,
    max_refs: usize,
) -> SchemaLimits {
    SchemaLimits { max_bytes, max_depth, max_keywords, max_refs, cache_entries: 16 }
}

pub fn schema_validator(limits: SchemaLimits) -> SchemaValidator {
    SchemaValidator::new(limits, InstanceLimits::default(), MissingSchema::Allow).unwrap()
}

pub fn instance_validator(limits: InstanceLimits) -> SchemaValidator {
    SchemaValidator::new(SchemaLimits::default(), limits, MissingSchema::Allow).unwrap()
}

/// `{"not": {"not": ... {}}}` with `depth` objects in all.
pub fn nested_not(depth: usize) -> Value {
    let mut schema = json!({});
    for _ in 1..depth {
        schema = json!({ "not": schema });
    }
    schema
}

/// An object schema with `n` (empty) properties: `1 + n` keys in all.
pub fn with_properties(n: usize) -> Value {
    let properties: Map<String, Value> = (0..n).map(|i| (format!("p{i}"), json!({}))).collect();
    json!({ "properties": properties })
}

/// A schema with exactly `n` local `$ref`s.
pub fn with_refs(n: usize) -> Value {
    let all_of: Vec<Value> = (0..n).map(|_| json!({ "$ref": "#/$defs/x" })).collect();
    json!({ "$defs": { "x": { "type": "object" } }, "allOf": all_of })
}

/// `{"description": "xxx..."}` serializing to exactly `bytes` bytes.
pub fn sized_schema(bytes: usize) -> Value {
    let overhead = serde_json::to_vec(&json!({ "description": "" })).unwrap().len();
    let schema = json!({ "description": "x".repeat(bytes - overhead) });
    assert_eq!(serde_json::to_vec(&schema).unwrap().len(), bytes);
    schema
}

/// `{"a": {"a": ... 1}}` with `depth` objects in all (the arguments object is depth 1).
pub fn nested_args(depth: usize) -> Value {
    let mut value = json!({});
    for _ in 1..depth {
        value = json!({ "a": value });
    }
    value
}

pub fn object_with(n: usize) -> Value {
    let map: Map<String, Value> = (0..n).map(|i| (format!("k{i:03}"), json!(i))).collect();
    Value::Object(map)
}

pub fn small_instance_limits() -> InstanceLimits {
    InstanceLimits {
        max_depth: 3,
        max_string_bytes: 8,
        max_array_len: 3,
        max_object_properties: 4,
        max_nodes: 100,
    }
}
