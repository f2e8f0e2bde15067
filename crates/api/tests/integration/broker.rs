//! The approval broker inside a hub: pending approvals carry what "always" would write (never a secret),
//! the first answer wins, and answers to unknown or settled approvals get their own codes.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_hub::{AlwaysOffer, BrokerError, Hub, HubConfig, PendingApproval, Reply};
use portcullis_policy::ApprovalChoice;
use serde_json::json;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const SECRET: &str = "sk-test-0123456789abcdefSECRETVALUE";

async fn hub(dir: &std::path::Path) -> Hub {
    std::fs::create_dir_all(dir.join("proj/.portcullis")).unwrap();
    std::fs::write(dir.join("proj/.portcullis/policy.json"), r#"{ "commands": { "default": "prompt" } }"#)
        .unwrap();
    Hub::open(HubConfig {
        config_dir: Some(dir.join("config")),
        secrets: vec![SECRET.into()],
        ..HubConfig::new(dir.join("proj"), dir.join("ledger.db"))
    })
    .await
    .unwrap()
}

async fn pending_one(hub: &Hub) -> PendingApproval {
    for _ in 0..200 {
        if let Some(p) = hub.broker().pending().into_iter().next() {
            return p;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no approval became pending");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_is_offered_but_never_for_a_command_holding_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let hub = hub(&dir).await;
    let _watching = hub.broker().subscribe();

    let call = {
        let hub = hub.clone();
        tokio::spawn(async move {
            hub.call("s", "c1", "shell", json!({"command": "make build"}), "t", CancellationToken::new())
                .await
        })
    };
    let pending = pending_one(&hub).await;
    match &pending.always {
        AlwaysOffer::Yes { file, amendment, .. } => {
            assert!(file.ends_with("policy.json"));
            assert_eq!(amendment.rules.len(), 1);
        }
        other => panic!("{other:?}"),
    }
    hub.broker()
        .answer(pending.id, Reply::new(ApprovalChoice::Once, &pending.arguments_sha256, "tester"))
        .unwrap();
    assert_eq!(
        hub.broker().answer(pending.id, Reply::new(ApprovalChoice::Deny, &pending.arguments_sha256, "late")),
        Err(BrokerError::AlreadyAnswered(pending.id))
    );
    assert_eq!(
        hub.broker().answer(999, Reply::new(ApprovalChoice::Once, &pending.arguments_sha256, "x")),
        Err(BrokerError::Unknown(999))
    );
    assert!(call.await.unwrap().is_finished());

    let command = format!("curl -H 'Authorization: Bearer {SECRET}' https://example.invalid");
    let call = {
        let hub = hub.clone();
        tokio::spawn(async move {
            hub.call("s", "c2", "shell", json!({"command": command}), "t", CancellationToken::new()).await
        })
    };
    let pending = pending_one(&hub).await;
    match &pending.always {
        AlwaysOffer::No { why } => assert!(why.contains("secret"), "{why}"),
        other => panic!("a secret would be written into the policy: {other:?}"),
    }
    assert!(
        !serde_json::to_string(&pending.arguments).unwrap().contains(SECRET),
        "approvers see redacted arguments"
    );
    let err = hub
        .broker()
        .answer(pending.id, Reply::new(ApprovalChoice::Always, &pending.arguments_sha256, "tester"))
        .unwrap_err();
    assert!(matches!(err, BrokerError::AlwaysNotOffered { .. }));
    hub.broker()
        .answer(pending.id, Reply::new(ApprovalChoice::Deny, &pending.arguments_sha256, "tester"))
        .unwrap();
    assert!(call.await.unwrap().blocked_reason().is_some());
    let policy = std::fs::read_to_string(dir.join("proj/.portcullis/policy.json")).unwrap();
    assert!(!policy.contains(SECRET));
    hub.close().await.unwrap();
}
