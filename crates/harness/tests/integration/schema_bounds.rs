//! Bounds of `SchemaValidator` on schemas: size, depth, keywords and `$ref`s (custom limits and the
//! defaults), local-only `$ref`s, and the validation of the limits themselves. Instance bounds are in
//! `schema_instances.rs`, the compile cache and missing schemas in `schema_cache.rs`.

// The helpers are test code too: they unwrap like the tests do.
#![allow(clippy::unwrap_used)]

use crate::common::schema::*;
use portcullis_harness::schema::SchemaError;
use portcullis_harness::{InstanceLimits, LimitError, MissingSchema, SchemaLimits, SchemaValidator};
use serde_json::json;
use std::sync::atomic::Ordering;

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
