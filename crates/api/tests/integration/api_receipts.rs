//! Approvals are receipts: an answer through the operator API names the digest of the arguments its
//! operator was shown, and approves those arguments only — an answer naming other arguments is refused
//! with its code and the call keeps waiting, even with the right approval id. An accepted answer's
//! receipt (arguments, policy version, operator and channel, time) is carried to the call's records,
//! the approval's row, the session grant it gives and the rule "always" writes.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use portcullis_api::types::{Answer, Approval, Choice, Receipt};
use portcullis_api::{Channel, ErrorCode, Operator, OperatorApi};
use portcullis_harness::{DecidedBy, OperatorOutcome, ToolCallResult, arguments_digest};
use portcullis_hub::Hub;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::task::JoinHandle;

fn call(hub: &Hub, session: &str, id: &str, command: &str) -> JoinHandle<ToolCallResult> {
    common::shell_call(hub, session, id, command)
}

fn answer(choice: Choice, arguments_sha256: &str) -> Answer {
    Answer { answer: choice, arguments_sha256: arguments_sha256.to_owned(), note: None, scope: None }
}

/// The pending approval of call `call_id` (within 3 s).
async fn pending_for(api: &OperatorApi, call_id: &str) -> Approval {
    for _ in 0..300 {
        if let Some(p) = api.pending_approvals().into_iter().find(|p| p.call_id == call_id) {
            return p;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("call {call_id} never asked");
}

/// The records and approvals of a call once its hub closed its ledger.
fn timeline(dir: &std::path::Path, call_id: &str) -> portcullis_ledger::CallTimeline {
    let reader = portcullis_ledger::LedgerReader::open(dir.join("ledger.db")).unwrap();
    reader.timeline(call_id, None).unwrap()
}

fn receipt_of(decided_by: &DecidedBy) -> Option<&Receipt> {
    match decided_by {
        DecidedBy::Operator { receipt, .. } => receipt.as_deref(),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receipt_for_other_arguments_approves_nothing_even_with_the_right_approval_id() {
    let (_tmp, dir) = common::folder();
    let hub = common::hub(&dir, r#"{ "commands": { "default": "prompt" } }"#).await;
    let api = OperatorApi::new(hub.clone());
    let _attending = hub.broker().subscribe();
    let alice = Operator::through(Channel::App, "alice (app)");

    // Two calls wait: one the operator means to allow, one they never looked at.
    let wanted = call(&hub, "s1", "c1", "touch wanted");
    let asked = pending_for(&api, "c1").await;
    let other = call(&hub, "s1", "c2", "touch unwanted");
    let other_asked = pending_for(&api, "c2").await;
    // Each lists the digest of its own arguments (canonical JSON), and the policy version that asked.
    assert_eq!(asked.arguments_sha256, arguments_digest(&json!({"command": "touch wanted"})));
    assert_eq!(other_asked.arguments_sha256, arguments_digest(&json!({"command": "touch unwanted"})));
    let version = hub.live_policy().current().version().to_string();
    assert_eq!(asked.policy_version.as_deref(), Some(version.as_str()));

    // The right approval id with the digest of other arguments: the other call's, arguments never
    // asked about, none at all. Each is refused with its code; nothing is approved.
    let forged = arguments_digest(&json!({"command": "rm -rf ~"}));
    for given in [other_asked.arguments_sha256.as_str(), forged.as_str(), ""] {
        for choice in [Choice::Once, Choice::Session, Choice::Always, Choice::Deny] {
            let refused = api.answer_approval(asked.id, &answer(choice, given), &alice).unwrap_err();
            assert_eq!(refused.code, ErrorCode::ReceiptMismatch, "{refused:?}");
            assert_eq!(refused.details["id"], asked.id);
            assert_eq!(refused.details["given"], given);
            assert!(refused.message.contains("other arguments"), "{}", refused.message);
        }
    }
    // The first call's digest does not answer the second call either.
    let refused = api
        .answer_approval(other_asked.id, &answer(Choice::Once, &asked.arguments_sha256), &alice)
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::ReceiptMismatch);
    // Both still wait; neither ran.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let waiting: Vec<u64> = api.pending_approvals().iter().map(|p| p.id).collect();
    assert_eq!(waiting, vec![asked.id, other_asked.id]);
    assert!(!wanted.is_finished() && !other.is_finished());
    assert!(!dir.join("proj/wanted").exists() && !dir.join("proj/unwanted").exists());

    // The digest shown: approved, and the answer's receipt says what, under which policy, by whom,
    // through which channel, when.
    let before = portcullis_harness::Timestamp::now();
    let receipt =
        api.answer_approval(asked.id, &answer(Choice::Once, &asked.arguments_sha256), &alice).unwrap();
    assert!(receipt.is_intact());
    assert!(receipt.covers(&json!({"command": "touch wanted"})));
    assert!(!receipt.covers(&json!({"command": "touch unwanted"})));
    assert_eq!(receipt.approval_id, asked.id.to_string());
    assert_eq!((receipt.session_id.as_str(), receipt.call_id.as_str()), ("s1", "c1"));
    assert_eq!(receipt.tool, "shell");
    assert_eq!(receipt.arguments_sha256, asked.arguments_sha256);
    assert_eq!(receipt.policy_version.as_deref(), Some(version.as_str()));
    assert_eq!((receipt.operator.as_str(), receipt.channel.as_str()), ("alice (app)", "app"));
    assert_eq!(receipt.outcome, OperatorOutcome::ApprovedOnce);
    assert!(receipt.at >= before && receipt.at <= portcullis_harness::Timestamp::now());
    let ran = wanted.await.unwrap();
    assert!(ran.is_finished(), "{ran:?}");
    assert_eq!(receipt_of(&ran.decided_by), Some(&receipt));
    assert!(dir.join("proj/wanted").exists());
    // A once-receipt is spent: its digest answers nothing more.
    let again =
        api.answer_approval(asked.id, &answer(Choice::Once, &asked.arguments_sha256), &alice).unwrap_err();
    assert_eq!(again.code, ErrorCode::ApprovalAnswered);

    let denial = api
        .answer_approval(other_asked.id, &answer(Choice::Deny, &other_asked.arguments_sha256), &alice)
        .unwrap();
    assert_eq!(denial.outcome, OperatorOutcome::Denied);
    let denied = other.await.unwrap();
    assert!(!denied.is_finished());
    assert_eq!(receipt_of(&denied.decided_by), Some(&denial));
    assert!(!dir.join("proj/unwanted").exists());
    hub.close().await.unwrap();

    // Every record of the call carries the receipt in its body, and so does its approval's row.
    let allowed = timeline(&dir, "c1");
    assert!(allowed.records.len() >= 2, "{allowed:?}");
    for record in &allowed.records {
        assert_eq!(receipt_of(&record.body.decided_by), Some(&receipt), "{record:?}");
    }
    assert_eq!(allowed.approvals.len(), 1, "{allowed:?}");
    assert_eq!(allowed.approvals[0].receipt.as_ref(), Some(&receipt));
    let refused = timeline(&dir, "c2");
    assert_eq!(receipt_of(&refused.records[0].body.decided_by), Some(&denial));
    assert_eq!(refused.approvals[0].receipt.as_ref(), Some(&denial));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_grant_and_an_always_rule_name_the_receipt_that_created_them() {
    let (_tmp, dir) = common::folder();
    let hub = common::hub(&dir, r#"{ "commands": { "default": "prompt", "rules": [] } }"#).await;
    let api = OperatorApi::new(hub.clone());
    let _attending = hub.broker().subscribe();
    let bob = Operator::through(Channel::Terminal, "bob (terminal)");

    let first = call(&hub, "s1", "c1", "make test");
    let asked = pending_for(&api, "c1").await;
    let granting =
        api.answer_approval(asked.id, &answer(Choice::Session, &asked.arguments_sha256), &bob).unwrap();
    assert_eq!(
        (granting.channel.as_str(), granting.outcome),
        ("terminal", OperatorOutcome::ApprovedForSession)
    );
    assert!(first.await.unwrap().is_finished());
    let grants = api.session_grants();
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0].receipt.as_deref(), Some(granting.id.as_str()));
    // The repeat the grant answers names the grant and the receipt that gave it.
    let repeat = call(&hub, "s1", "c2", "make test").await.unwrap();
    assert_eq!(
        repeat.decided_by,
        DecidedBy::SessionGrant { grant_id: grants[0].id.clone(), receipt: Some(granting.id.clone()) }
    );

    let always = call(&hub, "s1", "c3", "make lint");
    let asked = pending_for(&api, "c3").await;
    let creating =
        api.answer_approval(asked.id, &answer(Choice::Always, &asked.arguments_sha256), &bob).unwrap();
    let result = always.await.unwrap();
    assert!(result.is_finished(), "{result:?}");
    let DecidedBy::Operator { rule_written: Some(rule), receipt: Some(receipt), .. } = &result.decided_by
    else {
        panic!("{:?}", result.decided_by)
    };
    assert_eq!(**receipt, creating);
    // The rule in the policy file says which answer created it.
    let policy = std::fs::read_to_string(dir.join("proj/.portcullis/policy.json")).unwrap();
    let document: Value = serde_json::from_str(&policy).unwrap();
    let written = document["commands"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == rule.id.as_str())
        .unwrap_or_else(|| panic!("{policy}"));
    let justification = written["justification"].as_str().unwrap();
    assert!(justification.ends_with(&format!("receipt {}", creating.id)), "{justification}");
    hub.close().await.unwrap();
    // And so does the approval's row.
    let row = &timeline(&dir, "c3").approvals[0];
    assert_eq!(row.receipt.as_ref(), Some(&creating));
    let rule_written = row.rule_written.as_deref().unwrap_or_default();
    assert!(rule_written.contains(&rule.id) && rule_written.contains(&creating.id), "{rule_written}");
}
