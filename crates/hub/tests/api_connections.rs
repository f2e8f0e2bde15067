//! The operator API's view of connections: the agent sessions open now, the upstream servers, and the
//! hub at a glance. No window, no socket.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use portcullis_hub::api::OperatorApi;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_come_and_go_and_the_status_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let hub = common::hub(&dir, r#"{ "commands": { "default": "prompt" } }"#).await;
    let api = OperatorApi::new(hub.clone());
    assert!(api.sessions().is_empty());
    let first = hub.open_session("claude-code", "2.1").await;
    let second = hub.open_session("cursor\u{1b}[31m", "1").await;
    let sessions = api.sessions();
    assert_eq!(sessions.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), [first.as_str(), second.as_str()]);
    assert_eq!((sessions[0].client.as_str(), sessions[0].version.as_str()), ("claude-code", "2.1"));
    // Agent text stays as sent: front ends escape it where a person reads it.
    assert_eq!(sessions[1].client, "cursor\u{1b}[31m");
    let status = api.status();
    assert_eq!(status.sessions, 2);
    assert_eq!(status.project, dir.join("proj").display().to_string());
    assert!(status.policies.iter().any(|p| p.ends_with("proj/.portcullis/policy.json")), "{status:?}");
    assert!(status.tools.iter().any(|t| t == "shell"), "{status:?}");
    assert_eq!(status.pending_approvals, 0);
    assert!(status.servers.is_empty() && api.servers().is_empty());
    hub.close_session(first).await;
    assert_eq!(api.sessions().len(), 1);
    hub.close().await.unwrap();
    assert!(api.sessions().is_empty(), "sessions left open by their clients end with the hub");
}
