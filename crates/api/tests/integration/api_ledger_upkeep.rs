//! A ledger file's upkeep and export through the operator API: its health, its migration (never of a
//! missing file, a file that is not a ledger, or a newer schema), exports to a file (owner-only, never
//! over the ledger), cursors and formats as typed, who decided each record, a histogram to draw — on
//! ledgers written by `portcullis_api::testing`, as front ends' tests write them.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use portcullis_api::ErrorCode;
use portcullis_api::ledger::{
    Bucket, CSV_HEADER, CallFilter, ExportFormat, LedgerView, SCHEMA_VERSION, check_ledger, fill_histogram,
    migrate_ledger, parse_cursor, parse_export_format,
};
use portcullis_api::testing::{
    CallContext, DecidedBy, LedgerWriter, OperatorOutcome, RecordKind, SessionInfo, Timestamp,
    ToolCallRecord, ToolOutput,
};
use serde_json::json;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::Arc;

fn record(call: &str, kind: RecordKind, at: i64, decided: DecidedBy) -> ToolCallRecord {
    let ctx = Arc::new(CallContext {
        session_id: "s1".into(),
        run_id: "r1".into(),
        call_id: call.into(),
        owner: "agent".into(),
        cwd: None,
        mcp: None,
    });
    ToolCallRecord {
        at: Timestamp(at),
        arguments: Some(Arc::new(json!({ "command": format!("echo {call}") }))),
        output: (kind == RecordKind::Finished).then(|| Arc::new(ToolOutput::text("done"))),
        started_at: (kind == RecordKind::Finished).then_some(Timestamp(at - 10)),
        ..ToolCallRecord::new(kind, ctx, "shell".into(), decided)
    }
}

/// A ledger with session `s1` left open and two finished calls, its writer closed.
async fn write_ledger(path: &Path) {
    let writer = LedgerWriter::open(path).unwrap();
    writer
        .begin_session(SessionInfo {
            id: "s1".into(),
            client_name: Some("test-agent".into()),
            client_version: None,
            cwd: None,
            policy_hash: None,
            started_at: Timestamp(1_000_000),
            ended_at: None,
        })
        .await
        .unwrap();
    for (i, call) in ["c1", "c2"].into_iter().enumerate() {
        let at = 2_000_000 + i as i64 * 60_000_000;
        writer.record(record(call, RecordKind::Started, at, DecidedBy::DEFAULT)).await.unwrap();
        writer.record(record(call, RecordKind::Finished, at + 10, DecidedBy::DEFAULT)).await.unwrap();
    }
    // One writer at a time.
    let second = LedgerWriter::open(path).err().unwrap();
    assert_eq!(second.code, ErrorCode::LedgerLocked);
    writer.close().await.unwrap();
}

#[tokio::test]
async fn a_ledger_is_checked_and_migrated_and_bad_files_are_left_alone() {
    let (_tmp, dir) = common::folder();
    let path = dir.join("ledger.db");
    write_ledger(&path).await;
    let report = check_ledger(&path).unwrap();
    assert!(report.healthy(), "{report:?}");
    assert_eq!((report.schema_version, report.supported_version), (SCHEMA_VERSION, SCHEMA_VERSION));
    assert_eq!((report.records, report.calls, report.sessions), (4, 2, 1));

    // The session its writer left open is cut by the next writer.
    let migrated = migrate_ledger(&path).await.unwrap();
    assert_eq!(
        (migrated.schema_version, migrated.cut_sessions, migrated.interrupted_calls),
        (SCHEMA_VERSION, 1, 0)
    );
    assert_eq!(migrate_ledger(&path).await.unwrap().cut_sessions, 0);

    let missing = dir.join("missing.db");
    for e in [check_ledger(&missing).unwrap_err(), migrate_ledger(&missing).await.unwrap_err()] {
        assert_eq!(e.code, ErrorCode::LedgerMissing, "{e:?}");
    }
    assert!(!missing.exists(), "migrating created the file");

    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "this is a plain text file, not a database\n".repeat(100)).unwrap();
    for e in [check_ledger(&notes).unwrap_err(), migrate_ledger(&notes).await.unwrap_err()] {
        assert_eq!(e.code, ErrorCode::NotALedger, "{e:?}");
    }
    assert!(std::fs::read_to_string(&notes).unwrap().starts_with("this is a plain text file"));

    // A newer schema than this build's: refused by both, and left at its version.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 1)).unwrap();
    drop(conn);
    for e in [check_ledger(&path).unwrap_err(), migrate_ledger(&path).await.unwrap_err()] {
        assert_eq!(e.code, ErrorCode::LedgerSchemaNewer, "{e:?}");
        assert!(e.message.contains(&(SCHEMA_VERSION + 1).to_string()), "{}", e.message);
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION + 1);
}

#[tokio::test]
async fn exports_go_to_owner_only_files_never_over_the_ledger() {
    let (_tmp, dir) = common::folder();
    let path = dir.join("ledger.db");
    write_ledger(&path).await;
    let view = LedgerView::open(&path).unwrap();
    let out = dir.join("export.csv");
    let written =
        view.export_to_file(&CallFilter::default(), ExportFormat::Csv, &out, &mut |_, _| {}).unwrap();
    assert_eq!(written, 4);
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().next(), Some(CSV_HEADER));
    assert_eq!(text.lines().count(), 5);
    assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o600);

    let before = std::fs::read(&path).unwrap();
    let e =
        view.export_to_file(&CallFilter::default(), ExportFormat::Jsonl, &path, &mut |_, _| {}).unwrap_err();
    assert_eq!((e.code, e.code.http_status()), (ErrorCode::BadArgument, 400));
    assert!(e.message.ends_with("is the ledger itself"), "{}", e.message);
    assert_eq!(std::fs::read(&path).unwrap(), before);

    let nowhere = dir.join("no/such/folder/export.jsonl");
    let e = view
        .export_to_file(&CallFilter::default(), ExportFormat::Jsonl, &nowhere, &mut |_, _| {})
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::OutputFailed, "{e:?}");
    assert!(e.message.starts_with("cannot write output: "), "{}", e.message);
}

#[test]
fn cursors_formats_deciders_and_histograms() {
    assert_eq!(parse_export_format("jsonl").unwrap(), ExportFormat::Jsonl);
    let e = parse_export_format("xml").unwrap_err();
    assert_eq!(e.code, ErrorCode::BadFilter);
    assert!(e.message.contains("jsonl or csv"), "{}", e.message);
    let cursor = parse_cursor("1740823200000000.7").unwrap();
    assert_eq!(parse_cursor(&cursor.to_string()).unwrap(), cursor);
    for bad in ["", "7", "a.b", "1.2.3"] {
        assert_eq!(parse_cursor(bad).unwrap_err().code, ErrorCode::BadFilter, "{bad}");
    }

    let operator = DecidedBy::Operator {
        outcome: OperatorOutcome::ApprovedOnce,
        operator: Some("alice".into()),
        rule_written: None,
        receipt: None,
    };
    let decider = portcullis_api::types::Decider::of(&operator);
    assert_eq!(
        (decider.kind.as_str(), decider.operator.as_deref()),
        ("operator", Some("alice: approved_once"))
    );
    let rule = portcullis_api::types::Decider::of(&DecidedBy::Rule {
        rule_id: "git-push".into(),
        source: "p.json".into(),
    });
    assert_eq!((rule.rule.as_deref(), rule.source.as_deref()), (Some("git-push"), Some("p.json")));

    let b = |start, count| Bucket { start: Timestamp(start), count, ..Bucket::default() };
    let histogram = fill_histogram(&[b(0, 3), b(20, 1)], 10);
    assert_eq!(histogram.buckets, [b(0, 3), b(10, 0), b(20, 1)]);
    assert!(!histogram.empty_left_out);
    assert!(fill_histogram(&[b(0, 3), b(10_000, 1)], 10).empty_left_out);
}
