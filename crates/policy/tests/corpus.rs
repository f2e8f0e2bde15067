//! The policy corpus: `tests/policy-corpus/NNN_name/{policy.json, cases.json}`. Each case is a shell
//! command (`{"shell": ...}`), a read/write/edit of a path, or any tool (`{"tool": name}`), with the
//! decision the policy must give (`allow`, `prompt`, `forbidden`, or a blocked reason). Commands run from
//! the corpus folder, with HOME=/home/agent.

// Test support code outside #[test] functions may unwrap and panic, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_policy::{CallVerdict, EvalContext, Policy};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/policy-corpus").canonicalize().unwrap()
}

#[test]
fn every_corpus_case_gets_its_decision() {
    let mut total = 0;
    let mut failures = Vec::new();
    let mut folders: Vec<PathBuf> =
        std::fs::read_dir(corpus()).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    folders.sort();
    assert!(folders.len() >= 3);
    for folder in folders {
        let policy = Policy::load(&[folder.join("policy.json")]).unwrap_or_else(|e| panic!("{e}"));
        let cases: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(folder.join("cases.json")).unwrap()).unwrap();
        let ctx = EvalContext { cwd: folder.clone(), home: Some(PathBuf::from("/home/agent")) };
        for case in cases {
            total += 1;
            let expect = case["expect"].as_str().unwrap();
            let (name, arguments) = if let Some(command) = case["shell"].as_str() {
                ("shell".to_owned(), json!({ "command": command }))
            } else if let Some(tool) = case["tool"].as_str() {
                (tool.to_owned(), json!({}))
            } else {
                let kind = ["read", "write", "edit"].into_iter().find(|k| case[*k].is_string()).unwrap();
                (kind.to_owned(), json!({ "path": case[kind] }))
            };
            let (got, why) = match policy.evaluate_call(&name, &arguments, &ctx) {
                CallVerdict::Blocked { reason, detail } => (reason, detail),
                CallVerdict::Evaluated(e) => (e.decision.as_str().to_owned(), e.reasons.join(" | ")),
            };
            if got != expect {
                failures.push(format!(
                    "{}: {name} {arguments}: expected {expect}, got {got} ({why})",
                    folder.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    assert!(total >= 150, "the corpus holds {total} cases");
    assert!(failures.is_empty(), "{} of {total} cases failed:\n{}", failures.len(), failures.join("\n"));
}
