//! Bounds of `SchemaValidator`: schema bounds, instance bounds, local-only `$ref`s, prototype keys,
//! limit validation, the compile cache (once per distinct schema, LRU eviction) and how a refusal reads
//! through a `Dispatcher`.

// The helpers below are test code too: they unwrap like the tests do.
#![allow(clippy::unwrap_used)]

use async_trait::async_trait;
use portcullis_harness::schema::{FORBIDDEN_KEYS, SchemaError};
use portcullis_harness::{
    BlockedReason, Dispatcher, InstanceLimits, LimitError, MissingSchema, RunContext, SchemaLimits,
    SchemaValidator, Tool, ToolCall, ToolCallResult, ToolError, ToolInvocation, ToolOutput, ToolRegistry,
    ToolSpec, error_codes,
};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

// ---------------------------------------------------------------------------------------------------
// helpers

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

fn echo(name: &str, parameters: Option<Value>) -> (Arc<dyn Tool>, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut spec = ToolSpec::new(name, "echo");
    spec.parameters = parameters;
    (Arc::new(Echo { spec, runs: runs.clone() }), runs)
}

/// A dispatcher with one tool `t` (with the given schema) and the given validator.
fn one_tool(parameters: Option<Value>, validator: SchemaValidator) -> (Dispatcher, Arc<AtomicUsize>) {
    let (tool, runs) = echo("t", parameters);
    let mut registry = ToolRegistry::new();
    registry.register(tool).unwrap();
    (Dispatcher::builder(registry).schema_validator(validator).build(), runs)
}

async fn call(dispatcher: &Dispatcher, id: &str, name: &str, args: Value) -> ToolCallResult {
    dispatcher.dispatch(ToolCall::new(id, name, args), &RunContext::new("s", "r")).await
}

/// Asserts a `validation_failed` block and returns its message.
fn blocked_message(result: &ToolCallResult) -> String {
    assert_eq!(
        result.blocked_reason(),
        Some(BlockedReason::ValidationFailed),
        "expected validation_failed, got {result:?}"
    );
    let error = result.error().unwrap();
    assert_eq!(error.code, error_codes::VALIDATION_FAILED);
    error.message.clone()
}

fn limits_schema(max_bytes: usize, max_depth: usize, max_keywords: usize, max_refs: usize) -> SchemaLimits {
    SchemaLimits { max_bytes, max_depth, max_keywords, max_refs, cache_entries: 16 }
}

fn schema_validator(limits: SchemaLimits) -> SchemaValidator {
    SchemaValidator::new(limits, InstanceLimits::default(), MissingSchema::Allow).unwrap()
}

fn instance_validator(limits: InstanceLimits) -> SchemaValidator {
    SchemaValidator::new(SchemaLimits::default(), limits, MissingSchema::Allow).unwrap()
}

/// `{"not": {"not": ... {}}}` with `depth` objects in all.
fn nested_not(depth: usize) -> Value {
    let mut schema = json!({});
    for _ in 1..depth {
        schema = json!({ "not": schema });
    }
    schema
}

/// An object schema with `n` (empty) properties: `1 + n` keys in all.
fn with_properties(n: usize) -> Value {
    let properties: Map<String, Value> = (0..n).map(|i| (format!("p{i}"), json!({}))).collect();
    json!({ "properties": properties })
}

/// A schema with exactly `n` local `$ref`s.
fn with_refs(n: usize) -> Value {
    let all_of: Vec<Value> = (0..n).map(|_| json!({ "$ref": "#/$defs/x" })).collect();
    json!({ "$defs": { "x": { "type": "object" } }, "allOf": all_of })
}

/// `{"description": "xxx..."}` serializing to exactly `bytes` bytes.
fn sized_schema(bytes: usize) -> Value {
    let overhead = serde_json::to_vec(&json!({ "description": "" })).unwrap().len();
    let schema = json!({ "description": "x".repeat(bytes - overhead) });
    assert_eq!(serde_json::to_vec(&schema).unwrap().len(), bytes);
    schema
}

/// `{"a": {"a": ... 1}}` with `depth` objects in all (the arguments object is depth 1).
fn nested_args(depth: usize) -> Value {
    let mut value = json!({});
    for _ in 1..depth {
        value = json!({ "a": value });
    }
    value
}

fn object_with(n: usize) -> Value {
    let map: Map<String, Value> = (0..n).map(|i| (format!("k{i:03}"), json!(i))).collect();
    Value::Object(map)
}

// ---------------------------------------------------------------------------------------------------
// schema bounds, custom limits

#[test]
fn schema_depth_accepted_at_limit_rejected_one_past() {
    let v = schema_validator(limits_schema(1 << 20, 5, 10_000, 128));
    assert_eq!(v.check_schema(&nested_not(5)), Ok(()));
    assert_eq!(v.check_schema(&nested_not(6)), Err(SchemaError::TooDeep { limit: 5 }));
}

#[test]
fn schema_depth_counts_arrays_too() {
    let v = schema_validator(limits_schema(1 << 20, 3, 10_000, 128));
    // object (1) -> allOf array (2) -> object (3)
    assert_eq!(v.check_schema(&json!({ "allOf": [{}] })), Ok(()));
    // object (1) -> allOf array (2) -> object (3) -> allOf array (4)
    assert_eq!(
        v.check_schema(&json!({ "allOf": [{ "allOf": [] }] })),
        Err(SchemaError::TooDeep { limit: 3 })
    );
}

#[test]
fn schema_keywords_accepted_at_limit_rejected_one_past() {
    let v = schema_validator(limits_schema(1 << 20, 64, 10, 128));
    assert_eq!(v.check_schema(&with_properties(9)), Ok(()));
    assert_eq!(v.check_schema(&with_properties(10)), Err(SchemaError::TooManyKeywords { limit: 10 }));
}

#[test]
fn schema_refs_accepted_at_limit_rejected_one_past() {
    let v = schema_validator(limits_schema(1 << 20, 64, 10_000, 3));
    assert_eq!(v.check_schema(&with_refs(3)), Ok(()));
    assert_eq!(v.check_schema(&with_refs(4)), Err(SchemaError::TooManyRefs { limit: 3 }));
}

#[test]
fn schema_bytes_accepted_at_limit_rejected_one_past() {
    let v = schema_validator(limits_schema(64, 64, 10_000, 128));
    assert_eq!(v.check_schema(&sized_schema(64)), Ok(()));
    assert_eq!(v.check_schema(&sized_schema(65)), Err(SchemaError::TooLarge { bytes: 65, limit: 64 }));
}

#[test]
fn schema_that_is_not_an_object_or_boolean_is_refused() {
    let v = SchemaValidator::default();
    assert_eq!(v.check_schema(&json!(5)), Err(SchemaError::NotASchema));
    assert_eq!(v.check_schema(&json!("object")), Err(SchemaError::NotASchema));
    assert_eq!(v.check_schema(&json!(true)), Ok(()));
}

// ---------------------------------------------------------------------------------------------------
// schema bounds, defaults

#[test]
fn default_schema_limits_are_the_documented_ones() {
    let d = SchemaLimits::default();
    assert_eq!(
        (d.max_bytes, d.max_depth, d.max_keywords, d.max_refs, d.cache_entries),
        (256 * 1024, 64, 10_000, 128, 256)
    );
    let v = SchemaValidator::default();
    assert_eq!(v.schema_limits(), d);
    assert_eq!(v.instance_limits(), InstanceLimits::default());
}

#[test]
fn default_schema_depth_is_64() {
    let v = SchemaValidator::default();
    assert_eq!(v.check_schema(&nested_not(64)), Ok(()));
    assert_eq!(v.check_schema(&nested_not(65)), Err(SchemaError::TooDeep { limit: 64 }));
}

#[test]
fn default_schema_refs_is_128() {
    let v = SchemaValidator::default();
    assert_eq!(v.check_schema(&with_refs(128)), Ok(()));
    assert_eq!(v.check_schema(&with_refs(129)), Err(SchemaError::TooManyRefs { limit: 128 }));
}

#[test]
fn default_schema_keywords_is_10_000() {
    let v = SchemaValidator::default();
    assert_eq!(v.check_schema(&with_properties(9_999)), Ok(()));
    assert_eq!(v.check_schema(&with_properties(10_000)), Err(SchemaError::TooManyKeywords { limit: 10_000 }));
}

#[test]
fn default_schema_bytes_is_256_kib() {
    let v = SchemaValidator::default();
    assert_eq!(v.check_schema(&sized_schema(256 * 1024)), Ok(()));
    assert_eq!(
        v.check_schema(&sized_schema(256 * 1024 + 1)),
        Err(SchemaError::TooLarge { bytes: 256 * 1024 + 1, limit: 256 * 1024 })
    );
}

// ---------------------------------------------------------------------------------------------------
// references

#[test]
fn remote_refs_are_rejected_and_local_refs_accepted() {
    let v = SchemaValidator::default();
    for target in [
        "https://example.com/s.json",
        "other.json#/x",
        "other.json",
        "//example.com/s.json",
        "file:///etc/passwd",
    ] {
        let schema = json!({ "properties": { "a": { "$ref": target } } });
        assert_eq!(
            v.check_schema(&schema),
            Err(SchemaError::RemoteRef { keyword: "$ref", target: target.to_owned() }),
            "{target}"
        );
    }
    let local = json!({
        "$defs": { "x": { "type": "string" } },
        "type": "object",
        "properties": { "a": { "$ref": "#/$defs/x" } }
    });
    assert_eq!(v.check_schema(&local), Ok(()));
    assert!(v.validate(&local, &json!({ "a": "str" })).is_ok());
    let issue = v.validate(&local, &json!({ "a": 5 })).unwrap_err();
    assert_eq!(issue.path.as_deref(), Some("/a"));
    assert!(issue.message.starts_with("/a: "), "{}", issue.message);
}

#[test]
fn remote_dynamic_ref_is_rejected() {
    let v = SchemaValidator::default();
    let schema = json!({ "items": { "$dynamicRef": "https://example.com/s.json#meta" } });
    assert_eq!(
        v.check_schema(&schema),
        Err(SchemaError::RemoteRef {
            keyword: "$dynamicRef",
            target: "https://example.com/s.json#meta".to_owned()
        })
    );
    let recursive = json!({ "items": { "$recursiveRef": "other.json" } });
    assert_eq!(
        v.check_schema(&recursive),
        Err(SchemaError::RemoteRef { keyword: "$recursiveRef", target: "other.json".to_owned() })
    );
}

#[tokio::test]
async fn remote_ref_blocks_the_call_as_a_rejected_schema() {
    let schema = json!({ "type": "object", "properties": { "a": { "$ref": "https://example.com/s.json" } } });
    let (dispatcher, runs) = one_tool(Some(schema), SchemaValidator::default());
    let result = call(&dispatcher, "c1", "t", json!({ "a": 1 })).await;
    let message = blocked_message(&result);
    assert!(message.starts_with("tool schema rejected: "), "{message}");
    assert!(message.contains("https://example.com/s.json"), "{message}");
    assert!(message.contains("is not local"), "{message}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // Refused by the bounds: nothing was handed to the compiler.
    assert_eq!(dispatcher.schema_validator().compile_count(), 0);
}

// ---------------------------------------------------------------------------------------------------
// instance bounds

fn small_instance_limits() -> InstanceLimits {
    InstanceLimits {
        max_depth: 3,
        max_string_bytes: 8,
        max_array_len: 3,
        max_object_properties: 4,
        max_nodes: 100,
    }
}

#[test]
fn instance_depth_accepted_at_limit_rejected_one_past() {
    let v = instance_validator(small_instance_limits());
    let schema = json!({ "type": "object" });
    assert_eq!(v.validate(&schema, &nested_args(3)), Ok(()));
    let issue = v.validate(&schema, &nested_args(4)).unwrap_err();
    assert_eq!(issue.path.as_deref(), Some("/a/a/a"));
    assert_eq!(issue.message, "/a/a/a: nesting is deeper than 3");
    // Arrays are containers too: object (1) -> array (2) -> array (3) -> array (4).
    let issue = v.validate(&schema, &json!({ "l": [[[]]] })).unwrap_err();
    assert_eq!(issue.message, "/l/0/0: nesting is deeper than 3");
    assert_eq!(v.validate(&schema, &json!({ "l": [[1]] })), Ok(()));
}

#[test]
fn instance_string_bytes_accepted_at_limit_rejected_one_past() {
    let v = instance_validator(small_instance_limits());
    let schema = json!({ "type": "object" });
    assert_eq!(v.validate(&schema, &json!({ "text": "12345678" })), Ok(()));
    let issue = v.validate(&schema, &json!({ "text": "123456789" })).unwrap_err();
    assert_eq!(issue.path.as_deref(), Some("/text"));
    assert_eq!(issue.message, "/text: string of 9 bytes is over the limit of 8");
    // Bytes, not characters: 4 x "é" is 8 bytes, 5 x "é" is 10.
    assert_eq!(v.validate(&schema, &json!({ "text": "éééé" })), Ok(()));
    let issue = v.validate(&schema, &json!({ "text": "ééééé" })).unwrap_err();
    assert_eq!(issue.message, "/text: string of 10 bytes is over the limit of 8");
}

#[test]
fn instance_array_len_accepted_at_limit_rejected_one_past() {
    let v = instance_validator(small_instance_limits());
    let schema = json!({ "type": "object" });
    assert_eq!(v.validate(&schema, &json!({ "items": [1, 2, 3] })), Ok(()));
    let issue = v.validate(&schema, &json!({ "items": [1, 2, 3, 4] })).unwrap_err();
    assert_eq!(issue.path.as_deref(), Some("/items"));
    assert_eq!(issue.message, "/items: array of 4 items is over the limit of 3");
}

#[test]
fn instance_object_properties_accepted_at_limit_rejected_one_past() {
    let v = instance_validator(small_instance_limits());
    let schema = json!({ "type": "object" });
    assert_eq!(v.validate(&schema, &object_with(4)), Ok(()));
    let issue = v.validate(&schema, &object_with(5)).unwrap_err();
    assert_eq!(issue.path.as_deref(), Some("(root)"));
    assert_eq!(issue.message, "(root): object of 5 properties is over the limit of 4");
    let issue = v.validate(&schema, &json!({ "o": object_with(5) })).unwrap_err();
    assert_eq!(issue.message, "/o: object of 5 properties is over the limit of 4");
}

#[test]
fn instance_nodes_accepted_at_limit_rejected_one_past() {
    let v = instance_validator(InstanceLimits { max_nodes: 5, ..InstanceLimits::default() });
    let schema = json!({ "type": "object" });
    // The object itself plus four scalars: 5 values.
    assert_eq!(v.validate(&schema, &json!({ "a": 1, "b": 2, "c": 3, "d": 4 })), Ok(()));
    let issue = v.validate(&schema, &json!({ "a": 1, "b": 2, "c": 3, "d": 4, "e": 5 })).unwrap_err();
    assert_eq!(issue.path.as_deref(), Some("/e"));
    assert_eq!(issue.message, "/e: arguments have more than 5 values");
    // Containers count: object + array + 3 items = 5 ok, 4 items = 6.
    assert_eq!(v.validate(&schema, &json!({ "l": [1, 2, 3] })), Ok(()));
    let issue = v.validate(&schema, &json!({ "l": [1, 2, 3, 4] })).unwrap_err();
    assert_eq!(issue.message, "/l/3: arguments have more than 5 values");
}

#[test]
fn instance_bound_path_escapes_json_pointer_characters() {
    let v = instance_validator(small_instance_limits());
    let issue = v.validate(&json!({ "type": "object" }), &json!({ "a/b~c": "123456789" })).unwrap_err();
    assert_eq!(issue.path.as_deref(), Some("/a~1b~0c"));
}

#[test]
fn instance_bounds_apply_before_the_schema_and_even_for_a_true_schema() {
    let v = instance_validator(small_instance_limits());
    let issue = v.validate(&json!(true), &json!({ "text": "123456789" })).unwrap_err();
    assert_eq!(issue.message, "/text: string of 9 bytes is over the limit of 8");
    // Not even compiled: the instance check comes first.
    assert_eq!(v.compile_count(), 0);
}

/// Each instance bound through a dispatcher: at the limit the tool runs, one past it the call is
/// blocked with `validation_failed` and a message naming the path.
#[tokio::test]
async fn instance_bounds_through_the_dispatcher() {
    let limits = InstanceLimits {
        max_depth: 3,
        max_string_bytes: 8,
        max_array_len: 3,
        max_object_properties: 4,
        max_nodes: 12,
    };
    let schema = json!({ "type": "object" });
    let cases: Vec<(&str, Value, Value, &str)> = vec![
        (
            "depth",
            json!({ "x": { "y": {} } }),
            json!({ "x": { "y": { "z": {} } } }),
            "/x/y/z: nesting is deeper than 3",
        ),
        (
            "string",
            json!({ "text": "abcdefgh" }),
            json!({ "text": "abcdefghi" }),
            "/text: string of 9 bytes is over the limit of 8",
        ),
        (
            "array",
            json!({ "list": ["a", "b", "c"] }),
            json!({ "list": ["a", "b", "c", "d"] }),
            "/list: array of 4 items is over the limit of 3",
        ),
        (
            "properties",
            json!({ "o": { "a": 1, "b": 2, "c": 3, "d": 4 } }),
            json!({ "o": { "a": 1, "b": 2, "c": 3, "d": 4, "e": 5 } }),
            "/o: object of 5 properties is over the limit of 4",
        ),
        (
            // 1 + 3 arrays + 8 scalars = 12 values; one more scalar is 13.
            "nodes",
            json!({ "a": [1, 2], "b": [3, 4, 5], "c": [6, 7, 8] }),
            json!({ "a": [1, 2, 0], "b": [3, 4, 5], "c": [6, 7, 8] }),
            "/c/2: arguments have more than 12 values",
        ),
    ];
    for (name, at_limit, past_limit, expected) in cases {
        let validator = SchemaValidator::new(SchemaLimits::default(), limits, MissingSchema::Allow).unwrap();
        let (dispatcher, runs) = one_tool(Some(schema.clone()), validator);
        let ok = call(&dispatcher, "ok", "t", at_limit).await;
        assert!(ok.is_finished(), "{name}: {ok:?}");
        let result = call(&dispatcher, "past", "t", past_limit).await;
        assert_eq!(blocked_message(&result), expected, "{name}");
        assert_eq!(runs.load(Ordering::SeqCst), 1, "{name}: the blocked call must not run");
    }
}

// ---------------------------------------------------------------------------------------------------
// prototype keys

#[test]
fn prototype_keys_are_rejected_at_top_level_and_nested() {
    let v = SchemaValidator::default();
    let schema = json!({ "type": "object" });
    assert_eq!(FORBIDDEN_KEYS, ["__proto__", "constructor", "prototype"]);
    for key in FORBIDDEN_KEYS {
        let mut top = Map::new();
        top.insert(key.to_owned(), json!({}));
        let issue = v.validate(&schema, &Value::Object(top)).unwrap_err();
        assert_eq!(issue.path.as_deref(), Some(format!("/{key}").as_str()), "{key}");
        assert_eq!(issue.message, format!("/{key}: key {key:?} is not allowed"));

        let mut inner = Map::new();
        inner.insert(key.to_owned(), json!(1));
        let nested = json!({ "outer": { "list": [0, Value::Object(inner)] } });
        let issue = v.validate(&schema, &nested).unwrap_err();
        assert_eq!(issue.path.as_deref(), Some(format!("/outer/list/1/{key}").as_str()), "{key}");
        assert_eq!(issue.message, format!("/outer/list/1/{key}: key {key:?} is not allowed"));
    }
    // Only exact keys: look-alikes and values are fine.
    let fine = json!({ "proto": 1, "Constructor": 2, "prototypes": 3, "v": "__proto__" });
    assert_eq!(v.validate(&schema, &fine), Ok(()));
}

#[tokio::test]
async fn prototype_key_blocks_the_call_even_when_the_schema_allows_it() {
    let schema = json!({ "type": "object", "additionalProperties": true });
    let (dispatcher, runs) = one_tool(Some(schema), SchemaValidator::default());
    let result = call(&dispatcher, "c1", "t", json!({ "cfg": { "constructor": { "x": 1 } } })).await;
    assert_eq!(blocked_message(&result), "/cfg/constructor: key \"constructor\" is not allowed");
    let result = call(&dispatcher, "c2", "t", json!({ "__proto__": { "admin": true } })).await;
    assert_eq!(blocked_message(&result), "/__proto__: key \"__proto__\" is not allowed");
    // A tool without a schema gets the same instance check (MissingSchema::Allow).
    let (dispatcher, runs_free) = one_tool(None, SchemaValidator::default());
    let result = call(&dispatcher, "c3", "t", json!({ "prototype": 1 })).await;
    assert_eq!(blocked_message(&result), "/prototype: key \"prototype\" is not allowed");
    assert_eq!(runs.load(Ordering::SeqCst) + runs_free.load(Ordering::SeqCst), 0);
}

// ---------------------------------------------------------------------------------------------------
// limit validation

#[test]
fn schema_limits_over_the_hard_caps_or_zero_are_refused() {
    assert_eq!(SchemaLimits::HARD.validated(), Ok(SchemaLimits::HARD));
    assert_eq!(SchemaLimits::default().validated(), Ok(SchemaLimits::default()));
    let h = SchemaLimits::HARD;
    let d = SchemaLimits::default();
    let cases = [
        ("schema max_bytes", SchemaLimits { max_bytes: h.max_bytes + 1, ..d }, h.max_bytes + 1, h.max_bytes),
        ("schema max_depth", SchemaLimits { max_depth: h.max_depth + 1, ..d }, h.max_depth + 1, h.max_depth),
        (
            "schema max_keywords",
            SchemaLimits { max_keywords: h.max_keywords + 1, ..d },
            h.max_keywords + 1,
            h.max_keywords,
        ),
        ("schema max_refs", SchemaLimits { max_refs: h.max_refs + 1, ..d }, h.max_refs + 1, h.max_refs),
        (
            "schema cache_entries",
            SchemaLimits { cache_entries: h.cache_entries + 1, ..d },
            h.cache_entries + 1,
            h.cache_entries,
        ),
        ("schema max_bytes", SchemaLimits { max_bytes: 0, ..d }, 0, h.max_bytes),
        ("schema max_depth", SchemaLimits { max_depth: 0, ..d }, 0, h.max_depth),
        ("schema max_keywords", SchemaLimits { max_keywords: 0, ..d }, 0, h.max_keywords),
        ("schema max_refs", SchemaLimits { max_refs: 0, ..d }, 0, h.max_refs),
        ("schema cache_entries", SchemaLimits { cache_entries: 0, ..d }, 0, h.cache_entries),
    ];
    for (name, limits, value, hard_cap) in cases {
        let expected = LimitError { name, value, hard_cap };
        assert_eq!(limits.validated(), Err(expected.clone()), "{name}={value}");
        let built = SchemaValidator::new(limits, InstanceLimits::default(), MissingSchema::Allow);
        assert_eq!(built.err(), Some(expected), "{name}={value}");
    }
    assert_eq!(h.max_bytes, 1024 * 1024);
    assert_eq!((h.max_depth, h.max_keywords, h.max_refs, h.cache_entries), (128, 100_000, 1024, 1024));
}

#[test]
fn instance_limits_over_the_hard_caps_or_zero_are_refused() {
    assert_eq!(InstanceLimits::HARD.validated(), Ok(InstanceLimits::HARD));
    let h = InstanceLimits::HARD;
    let d = InstanceLimits::default();
    let cases = [
        (
            "instance max_depth",
            InstanceLimits { max_depth: h.max_depth + 1, ..d },
            h.max_depth + 1,
            h.max_depth,
        ),
        (
            "instance max_string_bytes",
            InstanceLimits { max_string_bytes: h.max_string_bytes + 1, ..d },
            h.max_string_bytes + 1,
            h.max_string_bytes,
        ),
        (
            "instance max_array_len",
            InstanceLimits { max_array_len: h.max_array_len + 1, ..d },
            h.max_array_len + 1,
            h.max_array_len,
        ),
        (
            "instance max_object_properties",
            InstanceLimits { max_object_properties: h.max_object_properties + 1, ..d },
            h.max_object_properties + 1,
            h.max_object_properties,
        ),
        (
            "instance max_nodes",
            InstanceLimits { max_nodes: h.max_nodes + 1, ..d },
            h.max_nodes + 1,
            h.max_nodes,
        ),
        ("instance max_depth", InstanceLimits { max_depth: 0, ..d }, 0, h.max_depth),
        ("instance max_string_bytes", InstanceLimits { max_string_bytes: 0, ..d }, 0, h.max_string_bytes),
        ("instance max_array_len", InstanceLimits { max_array_len: 0, ..d }, 0, h.max_array_len),
        (
            "instance max_object_properties",
            InstanceLimits { max_object_properties: 0, ..d },
            0,
            h.max_object_properties,
        ),
        ("instance max_nodes", InstanceLimits { max_nodes: 0, ..d }, 0, h.max_nodes),
    ];
    for (name, limits, value, hard_cap) in cases {
        let expected = LimitError { name, value, hard_cap };
        assert_eq!(limits.validated(), Err(expected.clone()), "{name}={value}");
        let built = SchemaValidator::new(SchemaLimits::default(), limits, MissingSchema::Reject);
        assert_eq!(built.err(), Some(expected), "{name}={value}");
    }
    assert_eq!(
        LimitError { name: "instance max_depth", value: 0, hard_cap: 128 }.to_string(),
        "instance max_depth = 0 is out of range: must be 1..=128"
    );
}

#[test]
fn limits_at_the_hard_caps_build_a_validator() {
    let v = SchemaValidator::new(SchemaLimits::HARD, InstanceLimits::HARD, MissingSchema::Allow).unwrap();
    assert_eq!(v.schema_limits(), SchemaLimits::HARD);
    assert_eq!(v.instance_limits(), InstanceLimits::HARD);
    assert_eq!(v.check_schema(&nested_not(128)), Ok(()));
    assert_eq!(v.check_schema(&nested_not(129)), Err(SchemaError::TooDeep { limit: 128 }));
}

// ---------------------------------------------------------------------------------------------------
// compile cache

#[tokio::test]
async fn a_schema_is_compiled_once_over_100_dispatches() {
    let schema = json!({
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "required": ["text"]
    });
    let (dispatcher, runs) = one_tool(Some(schema), SchemaValidator::default());
    for i in 0..100 {
        let result = call(&dispatcher, &format!("c{i}"), "t", json!({ "text": format!("hello {i}") })).await;
        assert!(result.is_finished(), "{result:?}");
    }
    // Failing calls use the same compiled schema.
    let result = call(&dispatcher, "bad", "t", json!({ "text": 1 })).await;
    assert!(blocked_message(&result).starts_with("/text: "));
    assert_eq!(runs.load(Ordering::SeqCst), 100);
    assert_eq!(dispatcher.schema_validator().compile_count(), 1);
    assert_eq!(dispatcher.schema_validator().cached_schemas(), 1);
}

#[tokio::test]
async fn two_tools_with_identical_schemas_share_one_compile() {
    let schema = json!({ "type": "object", "properties": { "n": { "type": "integer" } } });
    let (a, _) = echo("a", Some(schema.clone()));
    let (b, _) = echo("b", Some(schema));
    let (c, _) = echo("c", Some(json!({ "type": "object", "properties": { "n": { "type": "number" } } })));
    let mut registry = ToolRegistry::new();
    for tool in [a, b, c] {
        registry.register(tool).unwrap();
    }
    let dispatcher = Dispatcher::builder(registry).build();
    for i in 0..10 {
        assert!(call(&dispatcher, &format!("a{i}"), "a", json!({ "n": i })).await.is_finished());
        assert!(call(&dispatcher, &format!("b{i}"), "b", json!({ "n": i })).await.is_finished());
    }
    assert_eq!(dispatcher.schema_validator().compile_count(), 1);
    assert_eq!(dispatcher.schema_validator().cached_schemas(), 1);
    // A different schema is a second compile.
    assert!(call(&dispatcher, "c0", "c", json!({ "n": 1.5 })).await.is_finished());
    assert_eq!(dispatcher.schema_validator().compile_count(), 2);
    assert_eq!(dispatcher.schema_validator().cached_schemas(), 2);
}

#[test]
fn validate_caches_but_check_schema_does_not() {
    let v = SchemaValidator::default();
    let schema = json!({ "type": "object" });
    for _ in 0..5 {
        assert_eq!(v.validate(&schema, &json!({})), Ok(()));
    }
    assert_eq!((v.compile_count(), v.cached_schemas()), (1, 1));
    v.check_schema(&schema).unwrap();
    v.check_schema(&schema).unwrap();
    assert_eq!((v.compile_count(), v.cached_schemas()), (3, 1));
}

#[test]
fn lru_evicts_the_least_recently_used_schema() {
    let limits = SchemaLimits { cache_entries: 2, ..SchemaLimits::default() };
    let v = schema_validator(limits);
    let a = json!({ "type": "object", "title": "a" });
    let b = json!({ "type": "object", "title": "b" });
    let c = json!({ "type": "object", "title": "c" });
    let args = json!({});

    v.validate(&a, &args).unwrap();
    v.validate(&b, &args).unwrap();
    assert_eq!((v.compile_count(), v.cached_schemas()), (2, 2));
    v.validate(&a, &args).unwrap(); // hit; a is now the most recent
    assert_eq!(v.compile_count(), 2);
    v.validate(&c, &args).unwrap(); // evicts b
    assert_eq!((v.compile_count(), v.cached_schemas()), (3, 2));
    v.validate(&a, &args).unwrap(); // still cached
    v.validate(&c, &args).unwrap(); // still cached
    assert_eq!(v.compile_count(), 3);
    v.validate(&b, &args).unwrap(); // evicted: compiled again (and evicts a)
    assert_eq!((v.compile_count(), v.cached_schemas()), (4, 2));
    v.validate(&a, &args).unwrap();
    assert_eq!((v.compile_count(), v.cached_schemas()), (5, 2));
    assert!(v.cached_schemas() <= 2);
}

#[tokio::test]
async fn lru_eviction_through_the_dispatcher() {
    let validator = schema_validator(SchemaLimits { cache_entries: 2, ..SchemaLimits::default() });
    let mut registry = ToolRegistry::new();
    for name in ["a", "b", "c"] {
        let (tool, _) = echo(name, Some(json!({ "type": "object", "title": name })));
        registry.register(tool).unwrap();
    }
    let dispatcher = Dispatcher::builder(registry).schema_validator(validator).build();
    for name in ["a", "b", "c"] {
        assert!(call(&dispatcher, name, name, json!({})).await.is_finished());
    }
    let v = dispatcher.schema_validator();
    assert_eq!((v.compile_count(), v.cached_schemas()), (3, 2));
    assert!(call(&dispatcher, "c again", "c", json!({})).await.is_finished());
    assert_eq!(v.compile_count(), 3);
    assert!(call(&dispatcher, "a again", "a", json!({})).await.is_finished());
    assert_eq!((v.compile_count(), v.cached_schemas()), (4, 2));
}

#[tokio::test]
async fn an_invalid_schema_is_rejected_and_not_recompiled() {
    let (dispatcher, runs) = one_tool(Some(json!({ "type": 12 })), SchemaValidator::default());
    for i in 0..10 {
        let result = call(&dispatcher, &format!("c{i}"), "t", json!({ "x": 1 })).await;
        let message = blocked_message(&result);
        assert!(message.starts_with("tool schema rejected: schema does not compile: "), "{message}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(dispatcher.schema_validator().compile_count(), 1);
    assert_eq!(dispatcher.schema_validator().cached_schemas(), 1);
    assert!(matches!(
        dispatcher.schema_validator().check_schema(&json!({ "type": 12 })),
        Err(SchemaError::Invalid(_))
    ));
}

// ---------------------------------------------------------------------------------------------------
// missing schema

#[tokio::test]
async fn missing_schema_allow_runs_the_tool() {
    let validator =
        SchemaValidator::new(SchemaLimits::default(), InstanceLimits::default(), MissingSchema::Allow)
            .unwrap();
    let (dispatcher, runs) = one_tool(None, validator);
    let result = call(&dispatcher, "c1", "t", json!({ "anything": [1, 2, 3] })).await;
    assert_eq!(result.output().unwrap().joined_text(), "ok");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(dispatcher.schema_validator().compile_count(), 0);
    assert_eq!(MissingSchema::default(), MissingSchema::Allow);
}

#[tokio::test]
async fn missing_schema_reject_blocks_the_tool() {
    let validator =
        SchemaValidator::new(SchemaLimits::default(), InstanceLimits::default(), MissingSchema::Reject)
            .unwrap();
    let mut registry = ToolRegistry::new();
    let (bare, bare_runs) = echo("bare", None);
    let (typed, typed_runs) = echo("typed", Some(json!({ "type": "object" })));
    registry.register(bare).unwrap();
    registry.register(typed).unwrap();
    let dispatcher = Dispatcher::builder(registry).schema_validator(validator).build();
    let result = call(&dispatcher, "c1", "bare", json!({})).await;
    assert_eq!(blocked_message(&result), "tool declares no parameters schema");
    assert_eq!(bare_runs.load(Ordering::SeqCst), 0);
    // A tool with a schema is unaffected.
    assert!(call(&dispatcher, "c2", "typed", json!({})).await.is_finished());
    assert_eq!(typed_runs.load(Ordering::SeqCst), 1);
}

// ---------------------------------------------------------------------------------------------------
// error messages

#[tokio::test]
async fn schema_violation_names_the_path() {
    let schema = json!({
        "type": "object",
        "properties": { "text": { "type": "string", "maxLength": 5 } },
        "required": ["text"]
    });
    let (dispatcher, runs) = one_tool(Some(schema), SchemaValidator::default());
    let result = call(&dispatcher, "c1", "t", json!({ "text": 42 })).await;
    let message = blocked_message(&result);
    assert!(message.starts_with("/text: "), "{message}");
    assert!(message.contains("string"), "{message}");
    let details = result.error().unwrap().details.clone().unwrap();
    assert_eq!(details[0]["path"], "/text");

    let result = call(&dispatcher, "c2", "t", json!({ "text": "too long" })).await;
    assert!(blocked_message(&result).starts_with("/text: "));

    // A missing required property is reported at the root.
    let result = call(&dispatcher, "c3", "t", json!({})).await;
    let message = blocked_message(&result);
    assert!(message.starts_with("(root): "), "{message}");
    assert!(message.contains("text"), "{message}");

    assert!(call(&dispatcher, "c4", "t", json!({ "text": "hi" })).await.is_finished());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn schema_violation_message_is_truncated_and_bounded() {
    // The instance string (50 KB) is echoed by the error; each error is cut to 512 bytes.
    let schema = json!({ "type": "object", "properties": { "text": { "type": "integer" } } });
    let (dispatcher, _) = one_tool(Some(schema), SchemaValidator::default());
    let long = "x".repeat(50_000);
    let result = call(&dispatcher, "c1", "t", json!({ "text": long })).await;
    let message = blocked_message(&result);
    assert!(message.starts_with("/text: "), "{}", &message[..40]);
    assert!(message.ends_with("..."), "{}", &message[message.len() - 40..]);
    assert_eq!(message.len(), "/text: ".len() + 512);

    // At most 8 errors are reported, each bounded.
    let properties: Map<String, Value> =
        (0..20).map(|i| (format!("f{i:02}"), json!({ "type": "integer" }))).collect();
    let schema = json!({ "type": "object", "properties": properties });
    let args: Map<String, Value> = (0..20).map(|i| (format!("f{i:02}"), json!("x".repeat(2_000)))).collect();
    let v = SchemaValidator::default();
    let issue = v.validate(&schema, &Value::Object(args)).unwrap_err();
    let details = issue.details.unwrap();
    assert_eq!(details.as_array().unwrap().len(), 8);
    assert_eq!(issue.message.split("; /").count(), 8);
    assert!(issue.message.len() <= 8 * (512 + "/f00: ".len() + "; ".len()), "{}", issue.message.len());
    for d in details.as_array().unwrap() {
        assert!(d["message"].as_str().unwrap().len() <= 512);
        assert!(d["path"].as_str().unwrap().starts_with("/f"));
    }
}

#[test]
fn object_keys_are_bounded_like_strings() {
    let v = instance_validator(small_instance_limits());
    let limit = small_instance_limits().max_string_bytes;
    let schema = json!({ "type": "object" });
    let mut at = Map::new();
    at.insert("k".repeat(limit), json!(1));
    assert_eq!(v.validate(&schema, &Value::Object(at)), Ok(()));
    let mut past = Map::new();
    past.insert("k".repeat(limit + 1), json!(1));
    let nested = json!({ "outer": Value::Object(past) });
    let issue = v.validate(&schema, &nested).unwrap_err();
    assert_eq!(issue.path.as_deref(), Some("/outer"));
    assert!(
        issue.message.contains(&format!("key of {} bytes is over the limit", limit + 1)),
        "{}",
        issue.message
    );
}

#[test]
fn ref_like_keys_inside_data_keywords_are_data_and_empty_refs_are_local() {
    let v = SchemaValidator::default();
    for schema in [
        json!({ "const": { "$ref": "https://example.com/not-a-ref" } }),
        json!({ "enum": [{ "$ref": "other.json" }, 1] }),
        json!({ "properties": { "a": { "default": { "$ref": "x.json" }, "examples": [{ "$ref": "y" }] } } }),
        json!({ "properties": { "self": { "$ref": "" } } }),
    ] {
        assert_eq!(v.check_schema(&schema), Ok(()), "{schema}");
    }
    // A real subschema next to a data keyword is still checked.
    let schema = json!({ "const": 1, "items": { "$ref": "https://example.com/s.json" } });
    assert!(matches!(v.check_schema(&schema), Err(SchemaError::RemoteRef { .. })));
    let accepted = json!({ "const": { "$ref": "https://example.com/x" } });
    assert_eq!(v.validate(&accepted, &json!({ "$ref": "https://example.com/x" })), Ok(()));
}
