//! What the operator API's tests share: a hub over a fresh project with a given policy.
// Test helpers may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use portcullis_api::OperatorApi;
use portcullis_api::types::Approval;
use portcullis_hub::{Hub, HubConfig};
use std::path::{Path, PathBuf};

/// A `shell` call of `command` in session `session`, running on its own task (it may wait for an answer).
pub fn shell_call(
    hub: &Hub,
    session: &str,
    id: &str,
    command: &str,
) -> tokio::task::JoinHandle<portcullis_harness::ToolCallResult> {
    let hub = hub.clone();
    let (session, id, command) = (session.to_owned(), id.to_owned(), command.to_owned());
    tokio::spawn(async move {
        let arguments = serde_json::json!({"command": command});
        hub.call(&session, &id, "shell", arguments, "tester", tokio_util::sync::CancellationToken::new())
            .await
    })
}

/// A temporary folder and its canonical path (the hub resolves the project's symlinks).
pub fn folder() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    (tmp, dir)
}

/// A hub for `dir/proj` whose project policy is `policy`, its ledger `dir/ledger.db`, its config `dir/config`.
pub async fn hub(dir: &Path, policy: &str) -> Hub {
    std::fs::create_dir_all(dir.join("proj/.portcullis")).unwrap();
    std::fs::write(dir.join("proj/.portcullis/policy.json"), policy).unwrap();
    Hub::open(HubConfig {
        config_dir: Some(dir.join("config")),
        ..HubConfig::new(dir.join("proj"), dir.join("ledger.db"))
    })
    .await
    .unwrap()
}

/// The oldest pending approval, once one is asked (within 3 s).
pub async fn pending_one(api: &OperatorApi) -> Approval {
    for _ in 0..300 {
        if let Some(p) = api.pending_approvals().into_iter().next() {
            return p;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("no approval became pending");
}
