//! The operator API's approvals, session grants and tool catalog, called as a front end calls them: no
//! window, no socket. Bad input gets a typed error with its stable code.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use portcullis_api::types::{AlwaysOffer, Answer, Approval, Choice};
use portcullis_api::{ErrorCode, Operator, OperatorApi};
use portcullis_harness::{CallOutcome, ToolCallResult};
use portcullis_hub::Hub;
use tokio::task::JoinHandle;

fn call(hub: &Hub, session: &str, id: &str, command: &str) -> JoinHandle<ToolCallResult> {
    common::shell_call(hub, session, id, command)
}

fn answer(asked: &Approval, choice: Choice, note: Option<&str>) -> Answer {
    Answer {
        answer: choice,
        arguments_sha256: asked.arguments_sha256.clone(),
        note: note.map(str::to_owned),
        scope: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_listed_answered_once_and_a_denial_carries_the_operators_note() {
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let policy = r#"{ "commands": { "default": "prompt",
  "rules": [
    { "id": "deploys-ask", "pattern": ["make", "deploy"], "decision": "prompt" } ] } }"#;
    let hub = common::hub(&dir, policy).await;
    let api = OperatorApi::new(hub.clone());
    let _attending = hub.broker().subscribe();
    let alice = Operator::named("alice (app)");

    let first = call(&hub, "s1", "c1", "make build");
    let asked = common::pending_one(&api).await;
    assert_eq!(
        (asked.session_id.as_str(), asked.call_id.as_str(), asked.tool.as_str()),
        ("s1", "c1", "shell")
    );
    assert_eq!(asked.action.command.as_deref(), Some("make build"));
    assert!(asked.reason.as_deref().unwrap_or_default().contains("make build"), "{asked:?}");
    assert!(asked.deadline > asked.requested_at);
    // The full evaluation: every sub-command, the decision and why.
    let evaluation = asked.evaluation.as_ref().unwrap();
    assert_eq!(evaluation.commands, vec![vec!["make".to_owned(), "build".to_owned()]]);
    assert_eq!(evaluation.decision.as_str(), "prompt");
    assert!(evaluation.deciding_reason.as_deref().unwrap_or_default().contains("default"), "{evaluation:?}");
    assert!(
        matches!(&asked.always, AlwaysOffer::Yes { file, .. } if file.ends_with("policy.json")),
        "{asked:?}"
    );
    api.answer_approval(asked.id, &answer(&asked, Choice::Once, None), &alice).unwrap();
    assert!(first.await.unwrap().is_finished());

    // The first answer won: a second is refused with its code and changes nothing.
    let late = api.answer_approval(asked.id, &answer(&asked, Choice::Deny, None), &alice).unwrap_err();
    assert_eq!(late.code, ErrorCode::ApprovalAnswered);
    assert_eq!(late.details["id"], asked.id);
    // An id never asked.
    let unknown = api.answer_approval(4242, &answer(&asked, Choice::Once, None), &alice).unwrap_err();
    assert_eq!(unknown.code, ErrorCode::ApprovalUnknown);
    assert!(unknown.message.contains("4242"), "{unknown}");

    // A denial tells the agent what the operator wrote.
    let second = call(&hub, "s1", "c2", "make deploy");
    let asked = common::pending_one(&api).await;
    // The deciding rule names its file and line.
    let deciding = asked.evaluation.as_ref().and_then(|e| e.deciding_rule.clone()).unwrap();
    assert_eq!((deciding.id.as_str(), deciding.line), ("deploys-ask", 3), "{deciding:?}");
    assert!(deciding.source.ends_with("proj/.portcullis/policy.json"), "{deciding:?}");
    api.answer_approval(asked.id, &answer(&asked, Choice::Deny, Some("not on a Friday; ask Bob")), &alice)
        .unwrap();
    let result = second.await.unwrap();
    match &result.outcome {
        CallOutcome::Blocked { error, .. } => {
            assert!(
                error.message.contains("the operator says: not on a Friday; ask Bob"),
                "{}",
                error.message
            );
            assert!(error.message.contains("alice (app)"), "{}", error.message);
        }
        other => panic!("{other:?}"),
    }
    assert!(api.pending_approvals().is_empty());
    hub.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_after_the_timeout_finds_nothing_to_approve() {
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let hub = common::hub(
        &dir,
        r#"{ "commands": { "default": "prompt" }, "approvals": { "timeout_seconds": 1 } }"#,
    )
    .await;
    let api = OperatorApi::new(hub.clone());
    let _attending = hub.broker().subscribe();
    let waiting = call(&hub, "s1", "c1", "touch too-late");
    let asked = common::pending_one(&api).await;
    let result = waiting.await.unwrap();
    assert!(matches!(result.outcome, CallOutcome::Blocked { .. }), "{result:?}");
    let late = api
        .answer_approval(asked.id, &answer(&asked, Choice::Once, None), &Operator::named("api"))
        .unwrap_err();
    assert_eq!(late.code, ErrorCode::ApprovalAnswered);
    assert!(!dir.join("proj/too-late").exists());
    hub.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_grants_are_listed_and_revoked_and_always_is_refused_where_not_offered() {
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let hub = common::hub(&dir, r#"{ "commands": { "default": "prompt" } }"#).await;
    let api = OperatorApi::new(hub.clone());
    let _attending = hub.broker().subscribe();
    let op = Operator::named("api");

    let first = call(&hub, "s1", "c1", "make test");
    let asked = common::pending_one(&api).await;
    api.answer_approval(asked.id, &answer(&asked, Choice::Session, None), &op).unwrap();
    assert!(first.await.unwrap().is_finished());
    let grants = api.session_grants();
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!((grants[0].session_id.as_str(), grants[0].tool.as_str()), ("s1", "shell"));
    // The grant answers the repeat without asking.
    assert!(call(&hub, "s1", "c2", "make test").await.unwrap().is_finished());
    api.revoke_session_grant(&grants[0].id).unwrap();
    assert!(api.session_grants().is_empty());
    let again = api.revoke_session_grant(&grants[0].id).unwrap_err();
    assert_eq!(again.code, ErrorCode::GrantUnknown);

    // Writing to a policy file is never offered "always".
    let policy_write = call(&hub, "s1", "c3", "echo '{}' > .portcullis/policy.json");
    let asked = common::pending_one(&api).await;
    assert!(matches!(asked.always, AlwaysOffer::No { .. }), "{asked:?}");
    let refused = api.answer_approval(asked.id, &answer(&asked, Choice::Always, None), &op).unwrap_err();
    assert_eq!(refused.code, ErrorCode::AlwaysNotOffered);
    // Still pending after the refused answer; denied now.
    api.answer_approval(asked.id, &answer(&asked, Choice::Deny, None), &op).unwrap();
    assert!(!policy_write.await.unwrap().is_finished());
    hub.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_lists_every_tool_with_its_wire_name_schema_and_grant_state() {
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let policy = r#"{ "grants": [ { "name": "no-writes", "deny": ["write"] } ] }"#;
    let hub = common::hub(&dir, policy).await;
    let tools = OperatorApi::new(hub.clone()).tools();
    let shell = tools.iter().find(|t| t.name == "shell").unwrap();
    assert!(shell.granted);
    assert_eq!(shell.wire_name, "shell");
    assert!(shell.parameters.as_ref().unwrap()["properties"]["command"].is_object(), "{shell:?}");
    let write = tools.iter().find(|t| t.name == "write").unwrap();
    assert!(!write.granted, "{write:?}");
    hub.close().await.unwrap();
}
