//! Replaying a draft over a ledger through the operator API: each change and the progress are
//! streamed, and the replay stops when asked (by its flag or by the reporter).
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use portcullis_api::ledger::LedgerAddress;
use portcullis_api::replay::{ReplayEvent, replay_ledger};
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
    let outcome = replay_ledger(
        &LedgerAddress::File(db.clone()),
        std::slice::from_ref(&draft),
        &proj,
        &confined(),
        &never,
        &mut |event| {
            match event {
                ReplayEvent::Change(c) => {
                    changes.push((c.call_id.clone(), c.before.clone(), c.after.clone()))
                }
                ReplayEvent::Progress { records, .. } => progress = records,
            }
            true
        },
    )
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
    let outcome = replay_ledger(
        &LedgerAddress::File(db.clone()),
        std::slice::from_ref(&draft),
        &proj,
        &confined(),
        &never,
        &mut |event| {
            if matches!(event, ReplayEvent::Change(_)) {
                seen += 1;
                return false;
            }
            true
        },
    )
    .unwrap();
    assert!(outcome.stopped);
    assert_eq!(seen, 1);

    // Stopped before it starts.
    let stop = AtomicBool::new(true);
    let outcome = replay_ledger(
        &LedgerAddress::File(db.clone()),
        std::slice::from_ref(&draft),
        &proj,
        &confined(),
        &stop,
        &mut |_| true,
    )
    .unwrap();
    assert!(outcome.stopped);
    assert_eq!(outcome.summary.calls, 0);

    // A file that is not a ledger: the ledger's code.
    std::fs::write(dir.join("not.db"), "x").unwrap();
    let e = replay_ledger(
        &LedgerAddress::File(dir.join("not.db")),
        &[draft],
        &proj,
        &confined(),
        &never,
        &mut |_| true,
    )
    .unwrap_err();
    assert_eq!(e.code.as_str(), "not_a_ledger");
}

/// A call a grant refused was never described by its tool (the grant comes first), so the ledger holds
/// no action for it. Replayed under a draft that grants the tool, it is described now by the same
/// tools, rooted at its project, and judged from that description: a command the draft forbids is
/// `forbidden`, one it allows `allow`; a tool nobody knows is skipped, not guessed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_refused_by_a_grant_is_described_by_its_tool_when_replayed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let hub = common::hub(
        &dir,
        r#"{ "grants": [ { "name": "no-shell", "deny": ["shell"] } ], "commands": { "default": "allow" } }"#,
    )
    .await;
    for (id, command) in [("rm", "rm -rf build"), ("ls", "ls -la")] {
        let r = hub.call("s1", id, "shell", json!({"command": command}), "t", CancellationToken::new()).await;
        assert!(!r.is_finished(), "{r:?}");
    }
    let unknown = hub.call("s1", "nope", "no_such_tool", json!({}), "t", CancellationToken::new()).await;
    assert!(!unknown.is_finished());
    hub.close().await.unwrap();
    let draft = dir.join("draft.json");
    std::fs::write(
        &draft,
        r#"{ "commands": { "rules": [ { "id": "no-rm", "pattern": ["rm"], "decision": "forbidden" } ], "default": "allow" } }"#,
    )
    .unwrap();
    let mut changes = Vec::new();
    let never = AtomicBool::new(false);
    let outcome = replay_ledger(
        &LedgerAddress::File(dir.join("ledger.db")),
        std::slice::from_ref(&draft),
        &dir.join("proj"),
        &confined(),
        &never,
        &mut |e| {
            if let ReplayEvent::Change(c) = e {
                changes.push((c.call_id.clone(), c.before.clone(), c.after.clone(), c.subject.clone()));
            }
            true
        },
    )
    .unwrap();
    changes.sort();
    assert_eq!(
        changes,
        [
            ("ls".to_owned(), "tool_denied".to_owned(), "allow".to_owned(), "ls -la".to_owned()),
            ("rm".to_owned(), "tool_denied".to_owned(), "forbidden".to_owned(), "rm -rf build".to_owned()),
        ]
    );
    assert_eq!(outcome.summary.replayed, 2, "{:?}", outcome.summary);
}

/// A machine whose kernel confines commands (what the hub's probe finds on this kind of machine).
fn confined() -> portcullis_harness::SandboxSupport {
    portcullis_harness::SandboxSupport { landlock_abi: Some(7), namespaces: true, unavailable: None }
}
