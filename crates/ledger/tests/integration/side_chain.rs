//! The side chain through the real writer: sessions, approvals, refusals, tool-definition events and
//! effect marks a keyed writer wrote verify with the ledger's key; a row edited, inserted or deleted with
//! SQL (no key) is found and named; a ledger from before the side chain is taken into it when migrated,
//! its older rows reported as not chained before then.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use portcullis_harness::{DecidedBy, Ledger, Timestamp};
use portcullis_ledger::{
    ApprovalOutcome, ApprovalRecord, BreakKind, LedgerKey, LedgerOptions, LedgerReader, SessionInfo,
    SqliteLedger, Verdict, VerifyReport,
};
use std::path::Path;
use std::sync::Arc;

fn key() -> LedgerKey {
    LedgerKey::from_seed([9; 32])
}

fn verify(path: &Path) -> VerifyReport {
    LedgerReader::open(path).unwrap().verify(&key().public()).unwrap()
}

fn sql(path: &Path, statements: &str) {
    rusqlite::Connection::open(path).unwrap().execute_batch(statements).unwrap();
}

/// A closed ledger with two sessions (one ended), an approval, and a call.
async fn ledger_with_side_rows(path: &Path) {
    let ledger = SqliteLedger::open_signed(path, LedgerOptions::default(), Some(Arc::new(key()))).unwrap();
    for id in ["s1", "s2"] {
        ledger
            .begin_session(SessionInfo {
                id: id.into(),
                client_name: Some("claude-code".into()),
                client_version: None,
                cwd: Some("/work/project".into()),
                policy_hash: None,
                started_at: Timestamp(10),
                ended_at: None,
            })
            .await
            .unwrap();
    }
    ledger
        .record_approval(ApprovalRecord {
            receipt: None,
            session_id: "s1".into(),
            call_id: "c1".into(),
            tool: "shell".into(),
            requested_at: Timestamp(11),
            resolved_at: Some(Timestamp(12)),
            outcome: Some(ApprovalOutcome::Denied),
            operator: Some("ana".into()),
            note: None,
            rule_written: None,
        })
        .await
        .unwrap();
    ledger.record(started("s1", "c1", "shell", 11, DecidedBy::DEFAULT)).await.unwrap();
    ledger.record(finished("s1", "c1", "shell", 12, 5, rule("r"))).await.unwrap();
    ledger.end_session("s2", Timestamp(30)).await.unwrap();
    ledger.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn side_rows_a_keyed_writer_wrote_verify_and_each_change_is_named() {
    let (_dir, path) = temp();
    ledger_with_side_rows(&path).await;
    let report = verify(&path);
    assert_eq!(report.verdict, Verdict::Intact, "{report:?}");
    // Two sessions begun, one approval, one session ended.
    assert_eq!((report.side_chained, report.side_sealed, report.side_legacy), (4, 4, 0), "{report:?}");

    let cases: [(&str, &str, BreakKind, &str); 5] = [
        (
            "an approval invented",
            "INSERT INTO approvals (session_id, call_id, tool, requested_at, resolved_at, outcome, operator)
             VALUES ('s1', 'c9', 'shell', 13, 14, 'approved_once', 'alice (console)');",
            BreakKind::Unlinked,
            "the approval \"2\" (approvals row) is in no entry of the side chain: it was inserted",
        ),
        (
            "an approval's outcome rewritten",
            "UPDATE approvals SET outcome = 'approved_once', operator = 'alice' WHERE id = 1;",
            BreakKind::Changed,
            "the approval \"1\" (approvals row) does not match what side entry 3 recorded for it: it was edited",
        ),
        (
            "a session's client and folder rewritten",
            "UPDATE sessions SET client_name = 'cursor', cwd = '/elsewhere' WHERE id = 's1';",
            BreakKind::Changed,
            "the session \"s1\" (sessions row) does not match what side entry 1 recorded for it",
        ),
        (
            "a session deleted",
            "DELETE FROM sessions WHERE id = 's2';",
            BreakKind::Deleted,
            "the session \"s2\" (sessions row) that side entry 4 recorded is gone: it was deleted",
        ),
        (
            "a step's digest rewritten to match an edit",
            "UPDATE sessions SET cwd = '/elsewhere' WHERE id = 's1';
             UPDATE side_chain SET digest = zeroblob(32) WHERE id = 1;",
            BreakKind::Changed,
            "side entry 1 (the sessions row \"s1\") does not match its link in the side chain",
        ),
    ];
    for (name, statements, kind, expected) in cases {
        let copy = path.with_extension(format!("{}.db", name.replace(' ', "-")));
        std::fs::copy(&path, &copy).unwrap();
        sql(&copy, statements);
        let report = verify(&copy);
        assert_eq!(report.verdict, Verdict::Broken, "{name}: {report:?}");
        let found =
            report.breaks.iter().find(|b| b.kind == kind).unwrap_or_else(|| panic!("{name}: {report:?}"));
        assert!(found.message.contains(expected), "{name}: {}", found.message);
    }
}

/// A ledger from before the side chain (schema 12): migrating takes its rows into the chain as they
/// are; verify says how many were not chained before, and the ledger verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_ledgers_side_rows_are_taken_in_at_the_migration_and_reported() {
    let (_dir, path) = temp();
    ledger_with_side_rows(&path).await;
    sql(
        &path,
        "DROP TABLE side_chain; DROP TABLE side_chain_state; DROP TABLE side_checkpoints;
         DROP TABLE chain_marks; DROP INDEX calls_changes; DROP INDEX calls_contained;
         ALTER TABLE records DROP COLUMN changes; ALTER TABLE records DROP COLUMN contained;
         PRAGMA user_version = 12;",
    );
    assert!(LedgerReader::open(&path).is_err(), "readers refuse the older schema");
    let ledger = SqliteLedger::open_signed(&path, LedgerOptions::default(), Some(Arc::new(key()))).unwrap();
    ledger.close().await.unwrap();
    let report = verify(&path);
    assert_eq!(report.verdict, Verdict::Intact, "{report:?}");
    assert_eq!((report.side_chained, report.side_sealed, report.side_legacy), (4, 4, 2), "{report:?}");
    // s2 and the approval were taken in as they were; s1, still open, was cut by the writer that
    // migrated (a step of its own). From the migration on, a change is found as in a new ledger.
    sql(&path, "UPDATE approvals SET operator = 'alice' WHERE id = 1;");
    let report = verify(&path);
    assert_eq!(report.breaks[0].kind, BreakKind::Changed, "{report:?}");
}
