//! The policy corpus as both corpus tests read it: its folders, and each case as a call.
// Test helpers may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// `tests/policy-corpus`, canonical.
pub fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/policy-corpus").canonicalize().unwrap()
}

/// The corpus folders (`NNN_name`), in order.
pub fn folders() -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> =
        std::fs::read_dir(corpus()).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    folders.sort();
    assert!(folders.len() >= 5);
    folders
}

/// A case as a call: `{"shell": cmd}`, `{"read"|"write"|"edit": path}`, or `{"tool": name}`.
pub fn call_of(case: &Value) -> (String, Value) {
    if let Some(command) = case["shell"].as_str() {
        ("shell".to_owned(), json!({ "command": command }))
    } else if let Some(tool) = case["tool"].as_str() {
        (tool.to_owned(), json!({}))
    } else {
        let kind = ["read", "write", "edit"].into_iter().find(|k| case[*k].is_string()).unwrap();
        let arguments = match kind {
            "write" => json!({ "path": case[kind], "content": "" }),
            "edit" => json!({ "path": case[kind], "old_string": "a", "new_string": "b" }),
            _ => json!({ "path": case[kind] }),
        };
        (kind.to_owned(), arguments)
    }
}
