//! The policy corpus (`tests/policy-corpus/NNN_name/{policy.json, cases.json}`) judged the one way calls
//! are judged: through the pipeline the hub assembles for live calls (grants, arguments, JSON Schema, the
//! coding tools describing their actions, the live policy), with execution replaced by nothing. What
//! `portcullis policy test` and `policy check --call` report is this judgement. Commands are judged from
//! the corpus folder, with HOME=/home/agent.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::corpus::{call_of, folders};
use portcullis_api::judge::Judge;
use portcullis_policy::Policy;
use serde_json::Value;
use std::path::{Path, PathBuf};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_case_gets_its_decision_through_the_pipeline() {
    let mut total = 0;
    let mut failures = Vec::new();
    for folder in folders() {
        let policy = Policy::load(&[folder.join("policy.json")], &folder).unwrap();
        let mut judge = Judge::with_home(policy, &folder, Some(PathBuf::from("/home/agent"))).unwrap();
        let cases: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(folder.join("cases.json")).unwrap()).unwrap();
        for case in cases {
            total += 1;
            let expect = case["expect"].as_str().unwrap();
            let (tool, arguments) = call_of(&case);
            let judgement = judge.judge(&tool, arguments.clone(), &folder).await;
            if judgement.judged.as_str() != expect {
                let why = judgement
                    .evaluation
                    .map(|e| e.reasons.join(" | "))
                    .unwrap_or_else(|| format!("{:?}", judgement.judged));
                failures.push(format!(
                    "{}: {tool} {arguments}: expected {expect}, got {} ({why})",
                    folder.file_name().unwrap().to_string_lossy(),
                    judgement.judged.as_str()
                ));
            }
        }
    }
    assert!(total >= 400, "the corpus holds {total} cases");
    assert!(failures.is_empty(), "{} of {total} cases failed:\n{}", failures.len(), failures.join("\n"));
}

/// The shipped policies' own test cases pass, judged through the pipeline (what `portcullis policy
/// test` runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shipped_policies_pass_their_tests_through_the_pipeline() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tool-manifests/policies");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        seen += 1;
        let policy = Policy::load(std::slice::from_ref(&path), &dir).unwrap();
        let outcomes = portcullis_api::judge::run_policy_tests(&policy, Some(PathBuf::from("/home/agent")))
            .await
            .unwrap();
        assert!(!outcomes.is_empty(), "{}", path.display());
        for o in outcomes {
            assert!(
                o.passed,
                "{}: {}: expected {}, got {} ({})",
                o.source, o.name, o.expected, o.got, o.decided_by
            );
        }
    }
    assert!(seen >= 1);
}
