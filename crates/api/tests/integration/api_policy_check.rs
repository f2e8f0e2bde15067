//! The policy author's loop through the operator API: a loaded policy evaluates commands and judges
//! calls with their evidence; examples and test cases run; lint finds dead and voided rules in the
//! policy in force and in a draft; policies that do not load are refused with the policy's code and,
//! for a syntax error, the line and column.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use portcullis_api::ErrorCode;
use portcullis_api::policy_check::{
    CallVerdict, Decision, LintKind, LoadedPolicy, Severity, lint_draft, lint_policy, test_policy,
};
use serde_json::json;

const POLICY: &str = r#"{
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "listing", "pattern": [["ls", "echo"]], "decision": "allow", "match": ["ls -la"] },
      { "id": "remove", "pattern": ["rm"], "decision": "forbidden", "match": ["rm -rf x"] }
    ]
  },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] },
  "tests": [
    { "name": "listing is fine", "call": { "name": "shell", "arguments": { "command": "ls" } }, "expect": "allow" },
    { "name": "wrongly hoped", "call": { "name": "shell", "arguments": { "command": "rm x" } }, "expect": "allow" }
  ]
}"#;

const MESSY: &str = r#"{ "commands": { "rules": [
  { "id": "push-main", "pattern": ["git", "push", "origin", "main"], "decision": "allow", "match": ["git push origin main"] },
  { "id": "git-remote", "pattern": ["git", "push"], "decision": "prompt", "match": ["git push"] },
  { "id": "by-path", "pattern": ["/usr/bin/curl"], "decision": "forbidden" }
] } }"#;

#[tokio::test]
async fn a_loaded_policy_evaluates_commands_and_judges_calls() {
    let (_tmp, dir) = common::folder();
    let file = dir.join("policy.json");
    std::fs::write(&file, POLICY).unwrap();
    let policy = LoadedPolicy::load(std::slice::from_ref(&file), &dir).unwrap();
    assert_eq!(policy.sources(), [file.display().to_string()]);

    let e = policy.check_command("ls -la && rm -rf build");
    assert_eq!(e.decision, Decision::Forbidden);
    assert_eq!(e.deciding_rule.as_ref().unwrap().id, "remove");
    assert_eq!(e.commands, [vec!["ls", "-la"], vec!["rm", "-rf", "build"]]);
    // Words given one by one are quoted, so one word with a space stays one word.
    let e = policy.check_argv(&["echo".into(), "a; rm x".into()]);
    assert_eq!(e.decision, Decision::Allow, "{e:?}");
    assert_eq!(e.commands, [vec!["echo", "a; rm x"]]);

    let verdict = policy.check_call("shell", json!({ "command": "rm -rf build" })).await.unwrap();
    let CallVerdict::Evaluated(e) = verdict else { panic!("{verdict:?}") };
    assert_eq!(e.decision, Decision::Forbidden);
    let verdict = policy.check_call("nope", json!({})).await.unwrap();
    assert!(
        matches!(&verdict, CallVerdict::Blocked { reason, .. } if reason == "unknown_tool"),
        "{verdict:?}"
    );
    let verdict = policy.check_call("shell", json!({ "command": 7 })).await.unwrap();
    assert!(
        matches!(&verdict, CallVerdict::Blocked { reason, .. } if reason == "validation_failed"),
        "{verdict:?}"
    );
}

#[tokio::test]
async fn policies_that_do_not_load_are_refused_with_where_they_are_wrong() {
    let (_tmp, dir) = common::folder();
    let broken = dir.join("broken.json");
    std::fs::write(&broken, "{ \"commands\": {\n  \"default\": maybe } }").unwrap();
    let files = [broken.clone()];
    for e in [
        LoadedPolicy::load(&files, &dir).err().unwrap(),
        lint_policy(&files, &dir).unwrap_err(),
        test_policy(&files, &dir).await.unwrap_err(),
    ] {
        assert_eq!(e.code, ErrorCode::PolicySyntax, "{e:?}");
        assert_eq!(e.code.http_status(), 400);
        assert_eq!(e.details["file"], broken.display().to_string());
        assert_eq!((e.details["line"].as_u64(), e.details["column"].as_u64()), (Some(2), Some(14)), "{e:?}");
    }
    let missing = LoadedPolicy::load(&[dir.join("none.json")], &dir).err().unwrap();
    assert_eq!(missing.code, ErrorCode::PolicyUnreadable, "{missing:?}");

    // A rule whose own example fails: loading refuses it; testing reports it.
    let failing = dir.join("failing.json");
    std::fs::write(&failing, POLICY.replace("\"rm -rf x\"", "\"mv a b\"")).unwrap();
    let e = LoadedPolicy::load(std::slice::from_ref(&failing), &dir).err().unwrap();
    assert_eq!(e.code, ErrorCode::PolicyRule, "{e:?}");
    assert_eq!(e.details["rule"], "remove");
    let report = test_policy(&[failing], &dir).await.unwrap();
    let failed: Vec<_> = report.examples.iter().filter(|e| !e.passed).map(|e| e.rule.as_str()).collect();
    assert_eq!(failed, ["remove"]);
}

#[tokio::test]
async fn examples_and_test_cases_run() {
    let (_tmp, dir) = common::folder();
    let file = dir.join("policy.json");
    std::fs::write(&file, POLICY).unwrap();
    let report = test_policy(std::slice::from_ref(&file), &dir).await.unwrap();
    assert_eq!(report.examples.len(), 2);
    assert!(report.examples.iter().all(|e| e.passed));
    assert_eq!(report.tests.len(), 2);
    let wrong = report.tests.iter().find(|t| !t.passed).unwrap();
    assert_eq!((wrong.name.as_str(), wrong.got.as_str()), ("wrongly hoped", "forbidden"));
    assert_eq!(report.failed, 1);
    assert_eq!(report.policies, [file.display().to_string()]);
    // The report's JSON is the one `portcullis policy test --json` prints.
    assert_eq!(
        serde_json::to_value(&report).unwrap(),
        json!({ "examples": report.examples, "tests": report.tests, "failed": 1, "policies": [file] })
    );
}

#[test]
fn lint_finds_dead_and_voided_rules_in_the_policy_and_in_a_draft() {
    let (_tmp, dir) = common::folder();
    let file = dir.join("messy.json");
    std::fs::write(&file, MESSY).unwrap();
    let lint = lint_policy(std::slice::from_ref(&file), &dir).unwrap();
    assert_eq!((lint.rules, lint.warnings), (3, 2));
    let voided = lint.findings.iter().find(|f| f.kind == LintKind::VoidedAllow).unwrap();
    assert_eq!((voided.rule.as_str(), voided.line, voided.severity), ("push-main", 2, Severity::Warning));
    assert_eq!(voided.related.as_ref().unwrap().rule, "git-remote");
    assert!(lint.findings.iter().any(|f| f.kind == LintKind::NeverMatches && f.rule == "by-path"));

    // The same text as a draft, never saved: the same findings.
    let draft = dir.join("draft.json");
    let linted = lint_draft(&draft, MESSY, &dir).unwrap();
    assert_eq!((linted.rules, linted.warnings), (3, 2));
    assert_eq!(linted.policies, [draft.display().to_string()]);
    assert!(!draft.exists());
    let clean = lint_draft(&draft, POLICY, &dir).unwrap();
    assert_eq!(clean.warnings, 0, "{clean:?}");

    // A draft with a syntax error: where it is.
    let e = lint_draft(&draft, "{ \"commands\": {\n  \"rules\": [ oops ] } }", &dir).unwrap_err();
    assert_eq!(e.code, ErrorCode::PolicySyntax);
    assert_eq!((e.details["line"].as_u64(), e.details["column"].as_u64()), (Some(2), Some(14)), "{e:?}");
}
