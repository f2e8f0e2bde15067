//! The query API the CLI and app share: every filter, keyset pagination (also while another writer
//! appends), full-text search, timelines, stats, exports, and read-only opening of a ledger being written.

// Test support code outside #[test] functions may unwrap and panic, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use portcullis_harness::{BlockedReason, DecidedBy, DeciderKind, Ledger, Timestamp};
use portcullis_ledger::LedgerRead as _;
use portcullis_ledger::export::CSV_HEADER;
use portcullis_ledger::{
    CallFilter, CallStatus, Cursor, ExportFormat, LedgerReader, SqliteLedger, StatsSource, StoredRecord,
};
use std::collections::HashSet;
use std::sync::Arc;

/// 40 calls over two sessions: `c{i}` at time 1000*i, tool by i % 4, status by i % 5, durations 10*i.
async fn fixture(path: &std::path::Path) {
    let ledger = SqliteLedger::open(path).unwrap();
    let tools = ["shell", "read", "write", "mcp:github:create_issue"];
    for i in 0..40i64 {
        let session = if i % 2 == 0 { "even" } else { "odd" };
        let call = format!("c{i}");
        let tool = tools[(i % 4) as usize];
        let at = 1000 * i;
        let decided = if i % 3 == 0 { rule(&format!("rule-{}", i % 6)) } else { DecidedBy::DEFAULT };
        match i % 5 {
            0..=2 => {
                ledger.record(started(session, &call, tool, at, decided.clone())).await.unwrap();
                ledger.record(finished(session, &call, tool, at, 10 * i, decided)).await.unwrap();
            }
            3 => {
                ledger.record(started(session, &call, tool, at, decided.clone())).await.unwrap();
                ledger.record(failed(session, &call, tool, at, 10 * i, decided)).await.unwrap();
            }
            _ => {
                let reason =
                    if i % 2 == 0 { BlockedReason::ExecutionDenied } else { BlockedReason::ToolDenied };
                ledger.record(blocked(session, &call, tool, at, reason, decided)).await.unwrap();
            }
        }
    }
    ledger.close().await.unwrap();
}

fn ids(reader: &LedgerReader, filter: &CallFilter) -> Vec<String> {
    reader.calls(filter, None, 1000).unwrap().calls.into_iter().map(|c| c.head.call_id).collect()
}

fn expected(pred: impl Fn(i64) -> bool) -> Vec<String> {
    (0..40).rev().filter(|i| pred(*i)).map(|i| format!("c{i}")).collect()
}

#[tokio::test]
async fn every_filter_narrows_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.ledger");
    fixture(&path).await;
    let reader = LedgerReader::open(&path).unwrap();
    let f = CallFilter::default;
    assert_eq!(ids(&reader, &f()), expected(|_| true), "newest first");
    assert_eq!(ids(&reader, &CallFilter { tools: vec!["read".into()], ..f() }), expected(|i| i % 4 == 1));
    assert_eq!(
        ids(&reader, &CallFilter { tools: vec!["read".into(), "write".into()], ..f() }),
        expected(|i| i % 4 == 1 || i % 4 == 2)
    );
    assert_eq!(
        ids(&reader, &CallFilter { statuses: vec![CallStatus::Error], ..f() }),
        expected(|i| i % 5 == 3)
    );
    assert_eq!(
        ids(&reader, &CallFilter { statuses: vec![CallStatus::Blocked], ..f() }),
        expected(|i| i % 5 == 4)
    );
    assert_eq!(
        ids(&reader, &CallFilter { reasons: vec![BlockedReason::ToolDenied], ..f() }),
        expected(|i| i % 5 == 4 && i % 2 == 1)
    );
    assert_eq!(
        ids(&reader, &CallFilter { decided_by: vec![DeciderKind::Rule], ..f() }),
        expected(|i| i % 3 == 0)
    );
    assert_eq!(ids(&reader, &CallFilter { rule: Some("rule-3".into()), ..f() }), expected(|i| i % 6 == 3));
    assert_eq!(ids(&reader, &CallFilter { session: Some("odd".into()), ..f() }), expected(|i| i % 2 == 1));
    assert_eq!(
        ids(&reader, &CallFilter { run: Some("run-of-even".into()), ..f() }),
        expected(|i| i % 2 == 0)
    );
    // Time range: calls are dated by their terminal record.
    let since = Some(Timestamp(10_000));
    let until = Some(Timestamp(20_000));
    let end = |i: i64| 1000 * i + if i % 5 == 4 { 0 } else { 10 * i };
    assert_eq!(
        ids(&reader, &CallFilter { since, until, ..f() }),
        expected(|i| (10_000..20_000).contains(&end(i)))
    );
    // Combined.
    let combined = CallFilter {
        tools: vec!["shell".into()],
        statuses: vec![CallStatus::Finished],
        since: Some(Timestamp(5_000)),
        ..f()
    };
    assert_eq!(ids(&reader, &combined), expected(|i| i % 4 == 0 && i % 5 <= 2 && end(i) >= 5_000));
    assert_eq!(
        reader.count(&combined).unwrap(),
        expected(|i| i % 4 == 0 && i % 5 <= 2 && end(i) >= 5_000).len() as u64
    );
    // Full-text: a word from arguments, a word from an output, from an error; several words all required.
    assert_eq!(ids(&reader, &CallFilter { search: Some("c17".into()), ..f() }), ["c17"]);
    assert_eq!(ids(&reader, &CallFilter { search: Some("output".into()), ..f() }).len(), 24);
    assert_eq!(ids(&reader, &CallFilter { search: Some("badly".into()), ..f() }), expected(|i| i % 5 == 3));
    assert_eq!(ids(&reader, &CallFilter { search: Some("blocked c9".into()), ..f() }), ["c9"]);
    assert!(ids(&reader, &CallFilter { search: Some("c9 zebra".into()), ..f() }).is_empty());
    assert_eq!(
        ids(&reader, &CallFilter { search: Some("\"quoted\" OR c3 NEAR(".into()), ..f() }).len(),
        0,
        "FTS syntax is inert"
    );
    assert_eq!(
        ids(
            &reader,
            &CallFilter {
                search: Some("mcp:github".into()),
                tools: vec!["mcp:github:create_issue".into()],
                ..f()
            }
        ),
        expected(|i| i % 4 == 3)
    );
}

#[tokio::test]
async fn bad_filters_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.ledger");
    fixture(&path).await;
    let reader = LedgerReader::open(&path).unwrap();
    for (filter, says) in [
        (
            CallFilter { since: Some(Timestamp(10)), until: Some(Timestamp(5)), ..CallFilter::default() },
            "after",
        ),
        (CallFilter { search: Some("  !!  ".into()), ..CallFilter::default() }, "no words"),
        (
            CallFilter {
                search: Some("x".into()),
                statuses: vec![CallStatus::Running],
                ..CallFilter::default()
            },
            "ended calls only",
        ),
    ] {
        let err = reader.calls(&filter, None, 10).err().unwrap_or_else(|| panic!("accepted: {says}"));
        assert_eq!(err.code(), "bad_filter");
        assert!(err.to_string().contains(says), "{err}");
    }
    assert!("12x".parse::<Cursor>().is_err());
    assert_eq!("12.7".parse::<Cursor>().unwrap(), Cursor { at: 12, id: 7 });
    assert!("running".parse::<CallStatus>().is_ok() && "done".parse::<CallStatus>().is_err());
}

#[tokio::test]
async fn pages_walk_every_call_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.ledger");
    fixture(&path).await;
    let reader = LedgerReader::open(&path).unwrap();
    for filter in [CallFilter::default(), CallFilter { search: Some("run".into()), ..CallFilter::default() }]
    {
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let page = reader.calls(&filter, cursor, 7).unwrap();
            assert!(page.calls.len() <= 7);
            seen.extend(page.calls.iter().map(|c| c.head.call_id.clone()));
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let want = if filter.search.is_some() { 32 } else { 40 };
        assert_eq!(seen.len(), want);
        assert_eq!(seen.iter().collect::<HashSet<_>>().len(), want, "no call twice");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_is_stable_while_another_writer_appends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.ledger");
    let ledger = Arc::new(SqliteLedger::open(&path).unwrap());
    for i in 0..200i64 {
        ledger
            .record(blocked(
                "s",
                &format!("old{i}"),
                "shell",
                1_000 + i,
                BlockedReason::ToolDenied,
                DecidedBy::Registry,
            ))
            .await
            .unwrap();
    }
    ledger.flush().await.unwrap();
    // Read-only open while the writer is live.
    let reader = LedgerReader::open(&path).unwrap();
    let writer = ledger.clone();
    let appending = tokio::spawn(async move {
        for i in 0..400i64 {
            // Newer and, adversarially, older timestamps than the page the reader is on.
            let at = if i % 2 == 0 { 1_000_000 + i } else { 1_050 + i % 100 };
            writer
                .record(blocked(
                    "s",
                    &format!("new{i}"),
                    "shell",
                    at,
                    BlockedReason::ToolDenied,
                    DecidedBy::Registry,
                ))
                .await
                .unwrap();
            if i % 20 == 0 {
                writer.flush().await.unwrap();
                tokio::task::yield_now().await;
            }
        }
    });
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = reader.calls(&CallFilter::default(), cursor, 9).unwrap();
        seen.extend(page.calls.iter().map(|c| c.head.call_id.clone()));
        tokio::task::yield_now().await;
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    appending.await.unwrap();
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no call was shown twice");
    for i in 0..200 {
        assert!(unique.contains(&format!("old{i}")), "old{i} was skipped");
    }
    ledger.close().await.unwrap();
}

#[tokio::test]
async fn a_timeline_holds_every_record_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.ledger");
    let ledger = SqliteLedger::open(&path).unwrap();
    ledger.record(started("a", "same", "shell", 1, DecidedBy::DEFAULT)).await.unwrap();
    let mut progress = started("a", "same", "shell", 2, DecidedBy::DEFAULT);
    progress.kind = portcullis_harness::RecordKind::Progress;
    progress.progress = Some(serde_json::json!({"percent": 50}));
    ledger.record(progress).await.unwrap();
    ledger.record(finished("a", "same", "shell", 1, 5, DecidedBy::DEFAULT)).await.unwrap();
    ledger
        .record(blocked("b", "same", "read", 9, BlockedReason::ToolDenied, DecidedBy::Registry))
        .await
        .unwrap();
    ledger.close().await.unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    let kinds = |t: Vec<StoredRecord>| {
        t.into_iter().map(|r| (r.head.session_id, r.kind.as_str().to_owned())).collect::<Vec<_>>()
    };
    assert_eq!(
        kinds(reader.timeline("same", Some("a")).unwrap().records),
        [("a".into(), "started".into()), ("a".into(), "progress".into()), ("a".into(), "finished".into())]
    );
    assert_eq!(reader.timeline("same", None).unwrap().records.len(), 4, "both sessions without --session");
    assert!(reader.timeline("missing", None).unwrap().records.is_empty());
}

#[tokio::test]
async fn stats_count_and_rank() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ledger");
    fixture(&path).await;
    let reader = LedgerReader::open(&path).unwrap();
    let stats = reader.stats(&CallFilter::default(), Some(10_000)).unwrap();
    assert_eq!(stats.total, 40);
    let count = |list: &[portcullis_ledger::stats::Count], key: &str| {
        list.iter().find(|c| c.key == key).map(|c| c.count)
    };
    assert_eq!(count(&stats.by_tool, "shell"), Some(10));
    assert_eq!(count(&stats.by_status, "finished"), Some(24));
    assert_eq!(count(&stats.by_status, "error"), Some(8));
    assert_eq!(count(&stats.by_status, "blocked"), Some(8));
    assert_eq!(count(&stats.by_reason, "tool_denied"), Some(4));
    assert_eq!(count(&stats.by_decided_by, "rule"), Some(14));
    assert_eq!(stats.buckets.iter().map(|b| b.count).sum::<u64>(), 40);
    assert_eq!(stats.buckets[0].start, Timestamp(0));
    assert_eq!(stats.buckets.len(), 4);
    // shell: i = 0, 4, 8, ..., 36 → ran (not blocked) when i % 5 != 4: durations 10*i.
    let shell = stats.durations.iter().find(|d| d.tool == "shell").unwrap();
    let mut ran: Vec<i64> = (0..40).filter(|i| i % 4 == 0 && i % 5 != 4).map(|i| 10 * i).collect();
    ran.sort();
    assert_eq!(shell.count, ran.len() as u64);
    assert_eq!(shell.max_us, *ran.last().unwrap());
    let p50 = ran[(ran.len() as f64 * 0.5).ceil() as usize - 1];
    // From the rollups; with at most EXACT_DURATIONS_UP_TO calls selected, every duration is read:
    // exact (a histogram's percentile would be within 4.43 % + 0.5 µs).
    assert_eq!((stats.source, stats.durations_exact), (StatsSource::Rollup, true));
    assert_eq!(shell.p50_us, p50);
    assert!((shell.p50_us - p50).abs() as f64 <= 0.0443 * p50 as f64 + 0.5, "{} vs {p50}", shell.p50_us);
    let scanned = reader.stats_by_scan(&CallFilter::default(), Some(10_000)).unwrap();
    assert_eq!((scanned.source, scanned.durations_exact), (StatsSource::Scan, true));
    let shell = scanned.durations.iter().find(|d| d.tool == "shell").unwrap();
    assert_eq!(shell.p50_us, p50);
    let filtered =
        reader.stats(&CallFilter { session: Some("odd".into()), ..CallFilter::default() }, None).unwrap();
    assert_eq!(filtered.total, 20);
    assert_eq!(filtered.source, StatsSource::Scan, "sessions are not rolled up");
    assert!(reader.stats(&CallFilter::default(), Some(0)).is_err());
    assert!(reader.stats_by_scan(&CallFilter::default(), Some(0)).is_err());
}

#[tokio::test]
async fn exports_stream_every_record_of_the_filtered_calls() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.ledger");
    fixture(&path).await;
    // A record whose text needs CSV quoting.
    {
        let ledger = SqliteLedger::open(&path).unwrap();
        let mut odd =
            blocked("odd", "quoted", "shell", 99_000, BlockedReason::ToolDenied, DecidedBy::Registry);
        odd.arguments = Some(Arc::new(serde_json::json!({"command": "echo \"a, b\"\nline two"})));
        ledger.record(odd).await.unwrap();
        ledger.close().await.unwrap();
    }
    let reader = LedgerReader::open(&path).unwrap();
    let mut out = Vec::new();
    let mut calls = Vec::new();
    let n = reader
        .export(&CallFilter::default(), ExportFormat::Jsonl, &mut out, &mut |done, total| {
            calls.push((done, total))
        })
        .unwrap();
    // 24 finished (2 records) + 8 error (2) + 8 blocked (1) + the quoted one.
    assert_eq!(n, 24 * 2 + 8 * 2 + 8 + 1);
    assert_eq!(calls.last(), Some(&(n, n)));
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<StoredRecord> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len() as u64, n);
    assert_eq!(lines.iter().filter(|r| r.kind == portcullis_ledger::StoredKind::Started).count(), 32);

    let mut out = Vec::new();
    let filter = CallFilter { tools: vec!["shell".into()], ..CallFilter::default() };
    let n = reader.export(&filter, ExportFormat::Csv, &mut out, &mut |_, _| {}).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with(&format!("{CSV_HEADER}\n")));
    assert!(
        text.contains("\"{\"\"arguments\"\":{\"\"command\"\":\"\"echo \\\"\"a, b\\\"\"\\nline two\"\"}"),
        "{text}"
    );
    // Count CSV records by parsing quotes properly.
    let mut rows = 0;
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            '\n' if !quoted => rows += 1,
            _ => {}
        }
    }
    assert_eq!(rows as u64, n + 1, "header + one row per record");
    let shell_records =
        (0..40).filter(|i| i % 4 == 0).map(|i| if i % 5 == 4 { 1 } else { 2 }).sum::<u64>() + 1;
    assert_eq!(n, shell_records);
}

/// One call, two shapes: the listing's row of a call is exactly the projection of the record it
/// stands for (`CallRow::of`), for every call of the fixture and a running one.
#[tokio::test]
async fn a_listing_row_is_the_projection_of_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.ledger");
    fixture(&path).await;
    let ledger = SqliteLedger::open(&path).unwrap();
    ledger.record(started("odd", "running-1", "shell", 99_000, DecidedBy::DEFAULT)).await.unwrap();
    ledger.close().await.unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    let all = CallFilter { statuses: CallStatus::ALL.to_vec(), ..CallFilter::default() };
    let page = reader.calls(&all, None, 1000).unwrap();
    assert_eq!(page.calls.len(), 41);
    for row in &page.calls {
        let timeline = reader.timeline(&row.head.call_id, Some(&row.head.session_id)).unwrap();
        let record: &StoredRecord = timeline.records.iter().find(|r| r.id == row.record_id).unwrap();
        assert_eq!(
            &portcullis_ledger::CallRow::of_call(&timeline.records, record.id).unwrap(),
            row,
            "{}",
            row.head.call_id
        );
    }
}

/// A filter on any decider kind finds exactly the call that kind decided, on a file ledger: the kinds
/// are one closed set, `protected_place` included (before, the file ledger refused that filter).
#[tokio::test]
async fn a_filter_on_each_decider_kind_finds_the_call_it_decided() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kinds.ledger");
    let ledger = SqliteLedger::open(&path).unwrap();
    for (i, kind) in DeciderKind::ALL.into_iter().enumerate() {
        let at = 1000 * i as i64;
        let call = kind.as_str();
        ledger.record(started("s", call, "shell", at, kind.example())).await.unwrap();
        ledger.record(finished("s", call, "shell", at, 10, kind.example())).await.unwrap();
    }
    ledger.close().await.unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    for kind in DeciderKind::ALL {
        let filter = CallFilter { decided_by: vec![kind], ..CallFilter::default() };
        assert_eq!(ids(&reader, &filter), [kind.as_str()], "{kind}");
    }
    let two = CallFilter {
        decided_by: vec![DeciderKind::ProtectedPlace, DeciderKind::Registry],
        ..CallFilter::default()
    };
    assert_eq!(ids(&reader, &two), ["registry", "protected_place"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_decided_by_a_kind_this_build_does_not_know_is_an_error_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newer.ledger");
    let ledger = SqliteLedger::open(&path).unwrap();
    ledger.record(started("s", "c1", "shell", 1000, DecidedBy::DEFAULT)).await.unwrap();
    ledger.record(finished("s", "c1", "shell", 1000, 10, DecidedBy::DEFAULT)).await.unwrap();
    ledger.close().await.unwrap();
    // A newer build wrote a kind this one does not know: the row is never shown as decided by another.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("UPDATE records SET decided_by = 'quorum'")
        .unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    let err = reader.calls(&CallFilter::default(), None, 10).unwrap_err();
    assert!(err.to_string().contains("quorum"), "{err}");
}
