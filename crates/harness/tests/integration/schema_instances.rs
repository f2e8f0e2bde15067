//! Bounds of `SchemaValidator` on arguments: instance bounds (depth, string bytes, array length, object
//! properties, values, keys), prototype keys, and how a refusal reads (the JSON path, bounded messages),
//! also through a `Dispatcher`.

// The helpers are test code too: they unwrap like the tests do.
#![allow(clippy::unwrap_used)]

use crate::common::schema::*;
use portcullis_harness::schema::FORBIDDEN_KEYS;
use portcullis_harness::{InstanceLimits, MissingSchema, SchemaLimits, SchemaValidator};
use serde_json::{Map, Value, json};
use std::sync::atomic::Ordering;

// ---------------------------------------------------------------------------------------------------
// instance bounds

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
