//! The ledger browser's operator API over a ledger a real hub wrote: pages both ways (and the tail of
//! calls written after), one call in full with its secret redacted, facet counts that leave a
//! dimension's own choice out, a session's timeline, exports that write exactly the filtered calls or,
//! stopped, nothing; and files that are not ledgers refused untouched.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use portcullis_api::ErrorCode;
use portcullis_api::ledger::{CallFilter, CallStatus, ExportFormat};
use portcullis_api::ledger_browse::{BrowsedLedger, CallOrder};
use serde_json::json;
use std::sync::atomic::AtomicBool;
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "ghp_Zq7Zq7Zq7Zq7Zq7Zq7Zq7Zq7Zq7Zq7Zq7Zq7";

fn count(counts: &[portcullis_api::ledger::Count], key: &str) -> u64 {
    counts.iter().find(|c| c.key == key).map_or(0, |c| c.count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_a_hub_wrote_is_browsed_detailed_faceted_and_exported() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let hub = common::hub(
        &dir,
        r#"{ "commands": { "rules": [ { "id": "no-rm", "pattern": ["rm"], "decision": "forbidden" } ],
             "default": "allow" } }"#,
    )
    .await;
    let call = |session: &'static str, id: &'static str, command: String| {
        let hub = hub.clone();
        async move {
            hub.call(session, id, "shell", json!({ "command": command }), "t", CancellationToken::new()).await
        }
    };
    for i in 0..3 {
        assert!(call("s1", ["c0", "c1", "c2"][i], format!("echo step{i}")).await.is_finished());
    }
    assert!(call("s1", "c3", format!("token={TOKEN}; echo set")).await.is_finished());
    assert!(!call("s2", "c4", "rm -rf build".into()).await.is_finished());

    let path = dir.join("ledger.db");
    let ledger = BrowsedLedger::open(&path).unwrap();
    let all = CallFilter::default();
    for _ in 0..200 {
        if ledger.count(&all).unwrap() == 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(ledger.summary().unwrap().calls, 5);

    // Pages both ways, by key; the newest-first page's first call is where the tail starts.
    let newest = ledger.page(&all, CallOrder::NewestFirst, None, 2).unwrap();
    assert_eq!(newest.calls.iter().map(|c| c.head.call_id.as_str()).collect::<Vec<_>>(), ["c4", "c3"]);
    let older = ledger.page(&all, CallOrder::NewestFirst, newest.next, 10).unwrap();
    assert_eq!(older.calls.len(), 3);
    let oldest = ledger.page(&all, CallOrder::OldestFirst, None, 10).unwrap();
    assert_eq!(oldest.calls.first().unwrap().head.call_id, "c0");
    let top =
        newest.calls.first().map(|c| portcullis_api::ledger::Cursor { at: c.head.at.0, id: c.record_id });
    assert!(ledger.page(&all, CallOrder::OldestFirst, top, 10).unwrap().calls.is_empty());
    assert!(call("s1", "c5", "echo later".into()).await.is_finished());
    let mut tail = Vec::new();
    for _ in 0..200 {
        tail = ledger.page(&all, CallOrder::OldestFirst, top, 10).unwrap().calls;
        if !tail.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(tail.iter().map(|c| c.head.call_id.as_str()).collect::<Vec<_>>(), ["c5"], "the tail");
    assert_eq!(tail[0].summary.as_deref(), Some("echo later"), "the summary comes from the started record");

    // One call in full: its secret is redacted everywhere, its decider and timings are there.
    let detail = ledger.call("c3", "s1").unwrap();
    let text = serde_json::to_string(&detail).unwrap();
    assert!(!text.contains(TOKEN) && !text.contains(&TOKEN[4..20]), "{text}");
    assert!(detail.arguments.as_ref().unwrap()["command"].as_str().unwrap().contains("[REDACTED]"));
    assert!(detail.call.head.redacted);
    assert_eq!(detail.timings.run_us, detail.call.head.duration_us);
    assert!(detail.records.len() >= 2, "started and finished");
    let blocked = ledger.call("c4", "s2").unwrap();
    assert_eq!(blocked.decider.kind.as_str(), "rule");
    assert_eq!(blocked.decider.rule.as_deref(), Some("no-rm"));
    assert_eq!(ledger.call("nope", "s1").unwrap_err().code, ErrorCode::CallNotFound);

    // Facets: the status menu counts every status with the rest of the filter kept.
    let narrowed = CallFilter { statuses: vec![CallStatus::Blocked], ..CallFilter::default() };
    let facets = ledger.facets(&narrowed, true).unwrap();
    assert_eq!(facets.total, 1);
    assert_eq!(count(&facets.statuses, "finished"), 5);
    assert_eq!(count(&facets.statuses, "blocked"), 1);
    assert_eq!(count(&facets.tools, "shell"), 1, "other dimensions count within the filter");
    let fast = ledger.facets(&narrowed, false).unwrap();
    assert_eq!((fast.total, fast.approximate), (1, false), "no search or session: the fast counts are exact");
    let searched = CallFilter { search: Some("later".into()), ..CallFilter::default() };
    assert!(ledger.facets(&searched, false).unwrap().approximate);
    assert_eq!(ledger.facets(&searched, true).unwrap().total, 1);

    // A session's timeline: its calls only, on lanes.
    let timeline = ledger.session_timeline("s1").unwrap();
    assert_eq!(timeline.calls.len(), 5);
    assert!(timeline.calls.iter().all(|c| c.call.head.session_id == "s1"));
    assert!(timeline.lanes >= 1);
    assert_eq!(ledger.session_timeline("no-such").unwrap_err().code, ErrorCode::BadArgument);

    // Exports: exactly the filtered calls; a stopped one leaves nothing behind.
    let out = dir.join("blocked.jsonl");
    let written =
        ledger.export(&narrowed, ExportFormat::Jsonl, &out, &AtomicBool::new(false), &mut |_, _| {}).unwrap();
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len() as u64, written);
    assert!(lines.iter().all(|r| r["call_id"] == "c4"));
    let stopped = dir.join("stopped.jsonl");
    let err =
        ledger.export(&all, ExportFormat::Csv, &stopped, &AtomicBool::new(true), &mut |_, _| {}).unwrap_err();
    assert_eq!(err.code, ErrorCode::Cancelled);
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("stopped"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // What is not a ledger is refused and left as it was.
    let notes = dir.join("notes.db");
    std::fs::write(&notes, b"not a database at all\n".repeat(100)).unwrap();
    let before = std::fs::read(&notes).unwrap();
    assert_eq!(BrowsedLedger::open(&notes).err().unwrap().code.as_str(), "not_a_ledger");
    assert_eq!(std::fs::read(&notes).unwrap(), before);
    assert!(!dir.join("notes.db-wal").exists() && !dir.join("notes.db-shm").exists());
    assert_eq!(BrowsedLedger::open(&dir).err().unwrap().code, ErrorCode::BadArgument);
    assert_eq!(BrowsedLedger::open(&dir.join("missing.db")).err().unwrap().code.as_str(), "ledger_missing");
}
