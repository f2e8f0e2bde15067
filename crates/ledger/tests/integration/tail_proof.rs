//! Issue 51, finding 13: the records no signed checkpoint covers are proven by the journal. A copy of a
//! running ledger (what a crash leaves) whose unsealed tail was rewritten with its links recomputed:
//! verify names the changed record before any writer opens it again; the next writer marks the tail
//! unproven before it seals it, and verify reports the mark. An untouched tail is sealed with no mark.
//! Under a running writer, verify names the changed record, not the next one the writer linked to it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use portcullis_harness::{DecidedBy, Ledger};
use portcullis_ledger::chain::{CHAINED_COLUMNS, canonical_from_sql, link, to_link};
use portcullis_ledger::{
    BreakKind, LedgerKey, LedgerOptions, LedgerReader, SqliteLedger, Verdict, VerifyReport,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn key() -> LedgerKey {
    LedgerKey::from_seed([11; 32])
}

fn verify(path: &Path) -> VerifyReport {
    LedgerReader::open(path).unwrap().verify(&key().public()).unwrap()
}

async fn calls(ledger: &SqliteLedger, from: usize, n: usize) {
    for i in from..from + n {
        let call = format!("c{i}");
        ledger.record(started("s", &call, "shell", i as i64, DecidedBy::DEFAULT)).await.unwrap();
        ledger.record(finished("s", &call, "shell", i as i64, 5, rule("r"))).await.unwrap();
    }
    ledger.flush().await.unwrap();
}

/// Changes record `id` and recomputes every link from it on, and the chain's head: what someone with
/// write access to the file and no key can do.
fn rewrite_from(path: &Path, id: i64) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute("UPDATE records SET body = json_set(body, '$.output', 'forged') WHERE id = ?1", [id])
        .unwrap();
    let mut head = to_link(
        &conn
            .query_row("SELECT chain FROM records WHERE id = ?1", [id - 1], |r| r.get::<_, Vec<u8>>(0))
            .unwrap(),
    );
    let mut links = Vec::new();
    {
        let mut stmt = conn
            .prepare(&format!("SELECT id, {CHAINED_COLUMNS} FROM records WHERE id >= ?1 ORDER BY id"))
            .unwrap();
        let mut rows = stmt.query([id]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            let mut bytes = Vec::new();
            canonical_from_sql(row, 1, &mut bytes).unwrap().unwrap();
            head = link(&head, &bytes);
            links.push((row.get::<_, i64>(0).unwrap(), head));
        }
    }
    for (id, l) in &links {
        conn.execute("UPDATE records SET chain = ?1 WHERE id = ?2", rusqlite::params![&l[..], id]).unwrap();
    }
    conn.execute("UPDATE chain_state SET head = ?1", [&head[..]]).unwrap();
}

/// What a crash of the writer of `path` leaves, copied to `to`: the file as committed (its writer never
/// closed) and the journal.
fn crashed_copy(path: &Path, to: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute("VACUUM INTO ?1", [to.to_str().unwrap()]).unwrap();
    std::fs::copy(format!("{}.journal", path.display()), format!("{}.journal", to.display())).unwrap();
}

async fn open_and_close(path: &Path) {
    let ledger = SqliteLedger::open_signed(path, LedgerOptions::default(), Some(Arc::new(key()))).unwrap();
    ledger.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewritten_unsealed_tail_is_named_before_the_restart_and_marked_unproven_after() {
    let (dir, path) = temp();
    let ledger = SqliteLedger::open_signed(&path, LedgerOptions::default(), Some(Arc::new(key()))).unwrap();
    calls(&ledger, 0, 5).await;
    let untouched: PathBuf = dir.path().join("untouched.db");
    let changed: PathBuf = dir.path().join("changed.db");
    crashed_copy(&path, &untouched);
    crashed_copy(&path, &changed);
    ledger.close().await.unwrap();
    rewrite_from(&changed, 4);

    // Before any writer opens them: an untouched tail is only unsealed; a changed one is named.
    let report = verify(&untouched);
    assert_eq!(report.breaks.iter().map(|b| b.kind).collect::<Vec<_>>(), [BreakKind::Unsealed], "{report:?}");
    let report = verify(&changed);
    assert_eq!(
        (report.breaks[0].kind, report.breaks[0].record_id),
        (BreakKind::Changed, Some(4)),
        "{report:?}"
    );
    assert!(report.breaks[0].message.contains("differs from the journal's copy"), "{report:?}");

    // The next writer proves the untouched tail and seals it; it marks the changed one before sealing.
    open_and_close(&untouched).await;
    let report = verify(&untouched);
    assert_eq!(report.verdict, Verdict::Intact, "{report:?}");
    open_and_close(&changed).await;
    let report = verify(&changed);
    assert_eq!(report.verdict, Verdict::Broken, "{report:?}");
    let mark =
        report.breaks.iter().find(|b| b.kind == BreakKind::Unproven).unwrap_or_else(|| panic!("{report:?}"));
    assert!(mark.message.contains("record 4 differs from the journal's copy"), "{}", mark.message);
    assert!(mark.message.contains("the open checkpoint sealed them as they were"), "{}", mark.message);
    // The mark is chained: removing it is found too.
    rusqlite::Connection::open(&changed).unwrap().execute("DELETE FROM chain_marks", []).unwrap();
    let report = verify(&changed);
    assert!(
        report.breaks.iter().any(|b| b.kind == BreakKind::Deleted && b.message.contains("chain mark")),
        "{report:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_running_writer_verify_names_the_changed_record_not_the_next() {
    let (_dir, path) = temp();
    let ledger = SqliteLedger::open_signed(&path, LedgerOptions::default(), Some(Arc::new(key()))).unwrap();
    calls(&ledger, 0, 3).await;
    rewrite_from(&path, 3);
    calls(&ledger, 3, 2).await;
    let report = verify(&path);
    assert_eq!(report.verdict, Verdict::Broken, "{report:?}");
    assert_eq!(
        (report.breaks[0].kind, report.breaks[0].record_id),
        (BreakKind::Changed, Some(3)),
        "{report:?}"
    );
    // The record the writer linked to the original head after it breaks too, as the second finding.
    assert!(report.breaks.iter().any(|b| b.record_id == Some(7)), "{report:?}");
    ledger.close().await.unwrap();
}
