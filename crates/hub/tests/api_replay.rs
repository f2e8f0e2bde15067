//! Replaying a draft over a ledger through the operator API: each change and the progress are
//! streamed, and the replay stops when asked (by its flag or by the reporter).
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use portcullis_hub::api::replay::{ReplayEvent, replay_ledger};
use serde_json::json;
use std::sync::atomic::AtomicBool;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_replays_with_its_changes_streamed_and_stops_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let hub = common::hub(&dir, r#"{ "commands": { "default": "allow" } }"#).await;
    for i in 0..3 {
        let r = hub
            .call(
                "s1",
                &format!("c{i}"),
                "shell",
                json!({"command": format!("echo {i}")}),
                "t",
                CancellationToken::new(),
            )
            .await;
        assert!(r.is_finished());
    }
    hub.close().await.unwrap();
    let draft = dir.join("draft.json");
    std::fs::write(&draft, r#"{ "commands": { "rules": [ { "id": "no-echo", "pattern": ["echo"], "decision": "forbidden" } ], "default": "allow" } }"#).unwrap();
    let db = dir.join("ledger.db");
    let proj = dir.join("proj");

    let (mut changes, mut progress) = (Vec::new(), 0);
    let never = AtomicBool::new(false);
    let outcome = replay_ledger(&db, std::slice::from_ref(&draft), &proj, &never, &mut |event| {
        match event {
            ReplayEvent::Change(c) => changes.push((c.call_id.clone(), c.before.clone(), c.after.clone())),
            ReplayEvent::Progress { records } => progress = records,
        }
        true
    })
    .unwrap();
    assert!(!outcome.stopped);
    assert_eq!(outcome.summary.changed, 3, "{:?}", outcome.summary);
    assert_eq!(changes.len(), 3);
    assert!(
        changes.iter().all(|(_, before, after)| before == "allow" && after == "forbidden"),
        "{changes:?}"
    );
    assert!(progress >= 6, "records read: {progress}");
    assert_eq!(outcome.policies, vec![draft.display().to_string()]);

    // The reporter stops it after the first change.
    let mut seen = 0;
    let outcome = replay_ledger(&db, std::slice::from_ref(&draft), &proj, &never, &mut |event| {
        if matches!(event, ReplayEvent::Change(_)) {
            seen += 1;
            return false;
        }
        true
    })
    .unwrap();
    assert!(outcome.stopped);
    assert_eq!(seen, 1);

    // Stopped before it starts.
    let stop = AtomicBool::new(true);
    let outcome = replay_ledger(&db, std::slice::from_ref(&draft), &proj, &stop, &mut |_| true).unwrap();
    assert!(outcome.stopped);
    assert_eq!(outcome.summary.calls, 0);

    // A file that is not a ledger: the ledger's code.
    std::fs::write(dir.join("not.db"), "x").unwrap();
    let e = replay_ledger(&dir.join("not.db"), &[draft], &proj, &never, &mut |_| true).unwrap_err();
    assert_eq!(e.code.as_str(), "not_a_ledger");
}
