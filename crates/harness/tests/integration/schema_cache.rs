//! The compile cache of `SchemaValidator` (once per distinct schema, LRU eviction, invalid schemas not
//! recompiled) and tools without a schema (`MissingSchema`).

// The helpers are test code too: they unwrap like the tests do.
#![allow(clippy::unwrap_used)]

use crate::common::schema::*;
use portcullis_harness::schema::SchemaError;
use portcullis_harness::{
    Dispatcher, InstanceLimits, MissingSchema, SchemaLimits, SchemaValidator, ToolRegistry,
};
use serde_json::json;
use std::sync::atomic::Ordering;

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

#[tokio::test]
async fn each_validator_applies_its_own_limits_to_a_shared_registry() {
    // A tool keeps its compiled schema for the validator that compiled it; a second dispatcher with
    // tighter limits over the same registry entries must not reuse it.
    let deep = json!({ "type": "object", "properties": { "a": { "type": "object", "properties": {
        "b": { "type": "string" } } } } });
    let (tool, _) = echo("t", Some(deep));
    let mut registry = ToolRegistry::new();
    registry.register(tool).unwrap();
    let roomy = Dispatcher::builder(registry.clone()).build();
    let tight = Dispatcher::builder(registry)
        .schema_validator(schema_validator(SchemaLimits { max_depth: 2, ..SchemaLimits::default() }))
        .build();
    let args = json!({ "a": { "b": "x" } });
    for round in 0..3 {
        assert!(call(&roomy, &format!("r{round}"), "t", args.clone()).await.is_finished());
        let message = blocked_message(&call(&tight, &format!("t{round}"), "t", args.clone()).await);
        assert!(message.starts_with("tool schema rejected: "), "{message}");
    }
    assert_eq!(roomy.schema_validator().compile_count(), 1);
}
