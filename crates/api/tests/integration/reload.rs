//! Hot reload when the project has no `.portcullis` folder yet: the folder, its policy and its tools are
//! picked up when they appear, and later changes inside them too.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_hub::{Hub, HubConfig};
use std::time::{Duration, Instant};

async fn until(what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < Duration::from_secs(15), "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folders_created_after_start_are_watched() {
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(dir.join("proj")).unwrap();
    let hub = Hub::open(HubConfig {
        config_dir: Some(dir.join("config")),
        manifest_dirs: Vec::new(),
        ..HubConfig::new(dir.join("proj"), dir.join("data/ledger.db"))
    })
    .await
    .unwrap();
    let _watching = portcullis_hub::watch_policy(&hub).unwrap();
    assert_eq!(hub.policy_sources(), ["built-in default policy"]);
    // The ledger folder the hub made is the owner's alone.
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(dir.join("data")).unwrap().permissions().mode() & 0o777, 0o700);
    let policy = dir.join("proj/.portcullis/policy.json");
    std::fs::create_dir_all(policy.parent().unwrap()).unwrap();
    std::fs::write(&policy, r#"{ "commands": { "default": "prompt" } }"#).unwrap();
    until("the new project policy was not loaded", || hub.policy_sources() == [policy.display().to_string()])
        .await;
    // A change inside the folder that did not exist at start.
    std::fs::write(&policy, r#"{ "commands": { "default": "forbidden" } }"#).unwrap();
    until("a change in the new folder was not seen", || {
        hub.live_policy().current().default_decision() == portcullis_policy::Decision::Forbidden
    })
    .await;
    // A tools folder created later, and a manifest in it.
    std::fs::create_dir_all(dir.join("proj/.portcullis/tools")).unwrap();
    std::fs::write(
        dir.join("proj/.portcullis/tools/late.json"),
        r#"{"name": "late_tool", "kind": "fixture", "result": {"text": ["late"]}}"#,
    )
    .unwrap();
    until("the manifest in the new tools folder was not loaded", || {
        hub.visible_tools().iter().any(|t| t.name == "late_tool")
    })
    .await;
    hub.close().await.unwrap();
}
