//! One call without a running hub (what `portcullis call` runs), through the operator API: the same
//! pipeline as the hub's, and bad input as typed errors with the lower crates' own codes.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_api::ErrorCode;
use portcullis_api::one_call::{OneCall, call_once};
use portcullis_harness::CallOutcome;
use serde_json::json;

fn one(dir: &std::path::Path, command: &str) -> OneCall {
    OneCall {
        tool: "shell".into(),
        arguments: json!({ "command": command }),
        cwd: dir.join("proj"),
        policy_files: vec![],
        always_file: None,
        db: Some(dir.join("ledger.db")),
        prompter: None,
    }
}

fn project(policy: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::create_dir_all(dir.join("proj/.portcullis")).unwrap();
    std::fs::write(dir.join("proj/.portcullis/policy.json"), policy).unwrap();
    (tmp, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_runs_through_the_pipeline_and_a_prompt_without_a_prompter_is_denied() {
    let (_tmp, dir) = project(
        r#"{ "commands": { "rules": [
        { "id": "echo", "pattern": ["echo"], "decision": "allow" } ], "default": "prompt" } }"#,
    );
    let ran = call_once(one(&dir, "echo one-call")).await.unwrap();
    assert!(ran.is_finished(), "{ran:?}");
    let asked = call_once(one(&dir, "touch nobody-asked")).await.unwrap();
    assert!(matches!(asked.outcome, CallOutcome::Blocked { .. }), "{asked:?}");
    assert!(!dir.join("proj/nobody-asked").exists());
    // Both calls are in the ledger, each in a session of its own.
    let reader = portcullis_ledger::LedgerReader::open(dir.join("ledger.db")).unwrap();
    let sessions = reader.sessions(100).unwrap();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_typed_error_with_its_code() {
    // A policy with a syntax error: its code and where.
    let (_tmp, dir) = project("{ \"commands\": {\n  \"default\": prompt } }");
    let e = call_once(one(&dir, "echo x")).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::PolicySyntax, "{e:?}");
    assert!(e.message.contains("policy.json") && e.message.contains(":2:"), "{}", e.message);

    // A ledger file that is not a ledger.
    let (_tmp, dir) = project(r#"{ "commands": { "default": "allow" } }"#);
    std::fs::write(dir.join("ledger.db"), "these are not the rows you are looking for").unwrap();
    let e = call_once(one(&dir, "echo x")).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NotALedger, "{e:?}");
    assert_eq!(serde_json::to_value(&e).unwrap()["code"], "not_a_ledger");

    // An "always" file that is not one of the loaded policies.
    let mut call = one(&dir, "echo x");
    call.db = None;
    call.always_file = Some(dir.join("elsewhere.json"));
    let e = call_once(call).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::BadArgument, "{e:?}");
    assert!(e.details["policies"].is_array(), "{e:?}");
}

/// `policy check --call` and policy tests judge a call as the pipeline does: the tool describes its
/// action (a write's canonical path, a command's cwd) and the live policy judges that; nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_judged_by_the_pipeline_and_nothing_runs() {
    use portcullis_api::judge::{Judged, judge_call};
    let (_tmp, dir) = project(
        r#"{ "commands": { "rules": [
        { "id": "no-rm", "pattern": ["rm"], "decision": "forbidden" } ], "default": "prompt" } }"#,
    );
    let proj = dir.join("proj");
    let allowed = judge_call(&[], &proj, "write", json!({"path": "notes.md", "content": "x"})).await.unwrap();
    assert_eq!(allowed.judged, Judged::Allow);
    assert!(!proj.join("notes.md").exists(), "judging wrote the file");
    let action = allowed.action.unwrap();
    assert_eq!(action.paths, vec![proj.join("notes.md").display().to_string()]);
    let prompt = judge_call(&[], &proj, "shell", json!({"command": "touch x"})).await.unwrap();
    assert_eq!(prompt.judged, Judged::Prompt);
    assert!(!proj.join("x").exists());
    let forbidden = judge_call(&[], &proj, "shell", json!({"command": "ls && rm -rf build"})).await.unwrap();
    assert_eq!(forbidden.judged, Judged::Forbidden);
    let evaluation = forbidden.evaluation.unwrap();
    assert_eq!(evaluation.deciding_rule.unwrap().id, "no-rm");
    assert_eq!(evaluation.commands.len(), 2);
    // Arguments the tool's schema refuses are refused before the policy, as live.
    let invalid = judge_call(&[], &proj, "shell", json!({"command": 5})).await.unwrap();
    assert!(
        matches!(&invalid.judged, Judged::Blocked { reason, .. } if reason == "validation_failed"),
        "{invalid:?}"
    );
    let search = judge_call(&[], &proj, "search_tools", json!({"query": "file"})).await.unwrap();
    assert!(!matches!(search.judged, Judged::Blocked { .. }), "{search:?}");
}
