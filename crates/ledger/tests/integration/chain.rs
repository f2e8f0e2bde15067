//! The hash chain through the real writer: a closed ledger verifies with its key and with no other;
//! records from before the chain are unchained, never valid; every change to a chained record, made
//! with SQL, is found at the record; a JSON Lines export proves its records with the public key alone,
//! and a change to the export is found at its line. (The CLI's tests make the same changes with the
//! `sqlite3` program and read `portcullis ledger verify`.)

// Test support code outside #[test] functions may unwrap, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use portcullis_harness::{DecidedBy, Ledger};
use portcullis_ledger::export_proof::verify_export;
use portcullis_ledger::{
    BreakKind, CallFilter, ExportFormat, LedgerKey, LedgerOptions, LedgerReader, SqliteLedger, Verdict,
};
use std::path::Path;
use std::sync::Arc;

fn key() -> LedgerKey {
    LedgerKey::from_seed([7; 32])
}

async fn write(path: &Path, calls: usize, options: LedgerOptions, key: Option<LedgerKey>) {
    let ledger = SqliteLedger::open_signed(path, options, key.map(Arc::new)).unwrap();
    for i in 0..calls {
        let call = format!("c{i}");
        ledger.record(started("s", &call, "shell", i as i64, DecidedBy::DEFAULT)).await.unwrap();
        ledger.record(finished("s", &call, "shell", i as i64, 5, rule("r"))).await.unwrap();
    }
    ledger.close().await.unwrap();
}

fn sql(path: &Path, statements: &str) {
    rusqlite::Connection::open(path).unwrap().execute_batch(statements).unwrap();
}

fn verify(path: &Path) -> portcullis_ledger::VerifyReport {
    LedgerReader::open(path).unwrap().verify(&key().public()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_ledger_verifies_with_its_key_and_no_other() {
    let (_dir, path) = temp();
    let options = LedgerOptions { checkpoint_every: 64, ..LedgerOptions::default() };
    write(&path, 150, options, Some(key())).await;
    let report = verify(&path);
    assert_eq!(report.verdict, Verdict::Intact, "{report:?}");
    assert_eq!((report.chained, report.sealed, report.unchained), (300, 300, 0));
    // Four interval seals in the journal (every 64 records) and the one at close.
    assert_eq!((report.checkpoints, report.checkpoints_valid), (5, 5), "{report:?}");
    assert!(!report.writer_running);

    let other = LedgerReader::open(&path).unwrap().verify(&LedgerKey::from_seed([8; 32]).public()).unwrap();
    assert_eq!(other.verdict, Verdict::Broken);
    assert_eq!(other.breaks[0].kind, BreakKind::SealSignature, "{other:?}");
    assert!(other.breaks[0].message.contains("re-signed with another key"), "{other:?}");

    // Written without a key, the same ledger is chained but proves nothing until a keyed writer opens it.
    let (_dir2, unsigned) = temp();
    write(&unsigned, 3, LedgerOptions::default(), None).await;
    let report = verify(&unsigned);
    assert_eq!(report.verdict, Verdict::Broken);
    assert_eq!((report.checkpoints, report.checkpoints_valid, report.sealed), (1, 0, 0), "{report:?}");
    assert_eq!(report.breaks[0].kind, BreakKind::Unsealed, "{report:?}");
    let reopened =
        SqliteLedger::open_signed(&unsigned, LedgerOptions::default(), Some(Arc::new(key()))).unwrap();
    reopened.close().await.unwrap();
    // The unsigned checkpoint is still there (proving nothing); the open seal covers every record.
    let report = verify(&unsigned);
    assert_eq!((report.verdict, report.sealed, report.checkpoints), (Verdict::Intact, 6, 2), "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_from_before_the_chain_are_unchained_not_valid() {
    let (_dir, path) = temp();
    write(&path, 4, LedgerOptions::default(), Some(key())).await;
    // As a ledger of the schema before the chain would have them: no links.
    sql(
        &path,
        "UPDATE records SET chain = NULL; DELETE FROM chain_checkpoints;
                UPDATE chain_state SET count = 0, head = NULL, first_record = 9;",
    );
    let report = verify(&path);
    assert_eq!((report.unchained, report.chained, report.verdict), (8, 0, Verdict::Intact), "{report:?}");
    write(&path, 2, LedgerOptions::default(), Some(key())).await;
    let report = verify(&path);
    assert_eq!((report.unchained, report.chained, report.sealed), (8, 4, 4), "{report:?}");
    assert_eq!(report.verdict, Verdict::Intact);
    // A record with its link removed after chained ones is not taken for an old one.
    sql(&path, "UPDATE records SET chain = NULL WHERE id = 11");
    let report = verify(&path);
    assert_eq!(report.breaks[0].kind, BreakKind::Unlinked, "{report:?}");
    assert_eq!(report.breaks[0].record_id, Some(11));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_made_with_sql_are_found_at_their_record() {
    let cases: [(&str, &str, BreakKind, Option<i64>); 5] = [
        ("edit a field", "UPDATE records SET tool = 'read' WHERE id = 5", BreakKind::Changed, Some(5)),
        ("delete a row", "DELETE FROM records WHERE id = 5", BreakKind::Deleted, Some(6)),
        (
            "swap two rows",
            "UPDATE records SET id = -1 WHERE id = 3; UPDATE records SET id = 3 WHERE id = 4;
             UPDATE records SET id = 4 WHERE id = -1;",
            BreakKind::Changed,
            Some(3),
        ),
        (
            "hide a call from the lists",
            "UPDATE records SET status = NULL WHERE id = 6",
            BreakKind::Derived,
            Some(6),
        ),
        ("truncate the tail", "DELETE FROM records WHERE id > 16", BreakKind::Truncated, None),
    ];
    for (what, change, kind, record) in cases {
        let (_dir, path) = temp();
        write(&path, 10, LedgerOptions::default(), Some(key())).await;
        assert_eq!(verify(&path).verdict, Verdict::Intact, "{what}: before");
        sql(&path, change);
        let report = verify(&path);
        assert_eq!(report.verdict, Verdict::Broken, "{what}: {report:?}");
        assert_eq!((report.breaks[0].kind, report.breaks[0].record_id), (kind, record), "{what}: {report:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_proves_its_records_with_the_public_key_alone() {
    let (dir, path) = temp();
    let options = LedgerOptions { checkpoint_every: 16, ..LedgerOptions::default() };
    write(&path, 40, options, Some(key())).await;
    let reader = LedgerReader::open(&path).unwrap();
    let mut out = Vec::new();
    reader.export(&CallFilter::default(), ExportFormat::Jsonl, &mut out, &mut |_, _| {}).unwrap();
    let report = verify_export(&out[..], &key().public()).unwrap();
    assert_eq!(report.verdict, Verdict::Intact, "{report:?}");
    // Every 16 records; the close found nothing left to seal.
    assert_eq!((report.chained, report.sealed, report.checkpoints_valid), (80, 80, 5), "{report:?}");
    // Every line is still a record.
    let text = String::from_utf8(out.clone()).unwrap();
    for line in text.lines() {
        serde_json::from_str::<portcullis_ledger::StoredRecord>(line).unwrap();
    }
    // Another key proves nothing.
    let other = verify_export(&out[..], &LedgerKey::from_seed([9; 32]).public()).unwrap();
    assert_eq!(other.verdict, Verdict::Broken);
    // A record changed in the export (its columns and its record alike) is found at its line.
    let changed = text.replacen("\"shell\"", "\"shelL\"", 2);
    let report = verify_export(changed.as_bytes(), &key().public()).unwrap();
    assert_eq!(report.breaks[0].kind, BreakKind::Changed, "{report:?}");
    assert!(report.breaks[0].message.starts_with("line 1 "), "{report:?}");
    // A line dropped: the records before it can no longer reach a checkpoint through their links.
    let dropped: String =
        text.lines().enumerate().filter(|(i, _)| *i != 3).map(|(_, l)| format!("{l}\n")).collect();
    let report = verify_export(dropped.as_bytes(), &key().public()).unwrap();
    assert_eq!(report.verdict, Verdict::Broken);
    assert_eq!(report.breaks.last().map(|b| b.kind), Some(BreakKind::Unsealed), "{report:?}");
    // A filtered export proves only what runs up to a checkpoint: call c7 ends at one (records 15, 16),
    // call c5 (11, 12) does not.
    let mut one = Vec::new();
    let filter = CallFilter { search: Some("c5".into()), ..CallFilter::default() };
    reader.export(&filter, ExportFormat::Jsonl, &mut one, &mut |_, _| {}).unwrap();
    let report = verify_export(&one[..], &key().public()).unwrap();
    assert_eq!((report.chained, report.sealed), (2, 0), "{report:?}");
    drop(dir);
}

/// Copies `from` (and its WAL) to `to`.
fn copy_ledger(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap();
    let wal = |p: &Path| std::path::PathBuf::from(format!("{}-wal", p.display()));
    if wal(from).exists() {
        std::fs::copy(wal(from), wal(to)).unwrap();
    }
}

fn journal_of(p: &Path) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("{}.journal", p.display()))
}

/// Changes the byte at `at` of a journal and puts the frame's checksum right, as a careful forger would.
fn forge_journal_byte(journal: &mut [u8], at: usize, value: u8) {
    let mut frame = 16;
    while frame + 8 <= journal.len() {
        let len = u32::from_le_bytes(journal[frame..frame + 4].try_into().unwrap()) as usize;
        let payload = frame + 8..frame + 8 + len;
        if payload.contains(&at) {
            journal[at] = value;
            let crc = crc32fast::hash(&journal[payload]);
            journal[frame + 4..frame + 8].copy_from_slice(&crc.to_le_bytes());
            return;
        }
        frame = payload.end;
    }
    panic!("byte {at} is in no frame");
}

/// A crash as a copy: the SQLite file as it was before the last calls, and the journal that holds them.
async fn crashed_with_journal(dir: &Path, name: &str) -> (std::path::PathBuf, Vec<u8>) {
    let live = dir.join(format!("{name}-live.db"));
    let ledger = SqliteLedger::open_signed(&live, LedgerOptions::default(), Some(Arc::new(key()))).unwrap();
    for i in 0..3 {
        ledger.record(finished("s", &format!("{name}-first-{i}"), "shell", i, 5, rule("r"))).await.unwrap();
    }
    ledger.flush().await.unwrap();
    let crashed = dir.join(format!("{name}.db"));
    copy_ledger(&live, &crashed);
    for i in 0..3 {
        ledger
            .record(finished("s", &format!("{name}-journaled-{i}"), "shell", 10 + i, 5, rule("r")))
            .await
            .unwrap();
    }
    ledger.flush_durable().await.unwrap();
    let journal = std::fs::read(journal_of(&live)).unwrap();
    ledger.close().await.unwrap();
    (crashed, journal)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_changed_or_replaced_after_a_crash_is_found_and_never_replayed() {
    let dir = tempfile::tempdir().unwrap();
    // As left: the journal's records follow the file's chain; unsealed until the ledger is opened again.
    let (crashed, journal) = crashed_with_journal(dir.path(), "kept").await;
    std::fs::write(journal_of(&crashed), &journal).unwrap();
    let report = verify(&crashed);
    assert_eq!((report.journaled, report.chained), (3, 6), "{report:?}");
    assert_eq!(report.breaks.iter().map(|b| b.kind).collect::<Vec<_>>(), [BreakKind::Unsealed], "{report:?}");
    let reopened =
        SqliteLedger::open_signed(&crashed, LedgerOptions::default(), Some(Arc::new(key()))).unwrap();
    assert_eq!(reopened.replayed_on_open(), 3);
    reopened.close().await.unwrap();
    assert_eq!(verify(&crashed).verdict, Verdict::Intact);

    // Changed: one record's call id, the frame's checksum made right again.
    let (crashed, mut journal) = crashed_with_journal(dir.path(), "edited").await;
    // Its first place is the record's call id (its body and search text come after).
    let at = journal.windows(18).position(|w| w == b"edited-journaled-1").unwrap();
    forge_journal_byte(&mut journal, at + 17, b'7');
    std::fs::write(journal_of(&crashed), &journal).unwrap();
    let report = verify(&crashed);
    assert_eq!(report.verdict, Verdict::Broken);
    assert_eq!(report.breaks[0].kind, BreakKind::Changed, "{report:?}");
    assert!(
        report.breaks[0].message.contains("the journal's record 5 (call \"edited-journaled-7\""),
        "{report:?}"
    );
    let refused = SqliteLedger::open_signed(&crashed, LedgerOptions::default(), Some(Arc::new(key())));
    let e = refused.err().unwrap();
    assert_eq!(e.code(), "ledger_journal_damaged", "{e}");
    assert!(e.to_string().contains("record 5 of the chain (call \"edited-journaled-7\""), "{e}");

    // Replaced: another ledger's journal, whole and well formed.
    let (crashed, _) = crashed_with_journal(dir.path(), "victim").await;
    let (_, foreign) = crashed_with_journal(dir.path(), "other").await;
    std::fs::write(journal_of(&crashed), &foreign).unwrap();
    let report = verify(&crashed);
    assert_eq!(report.verdict, Verdict::Broken, "{report:?}");
    assert!(matches!(report.breaks[0].kind, BreakKind::Changed | BreakKind::Journal), "{report:?}");
    // Opening never indexes it: its frames do not follow this ledger's (refused), or it is no frame at
    // all here (kept aside as `<journal>.rejected-<epoch>`, and the ledger opens without it).
    match SqliteLedger::open_signed(&crashed, LedgerOptions::default(), Some(Arc::new(key()))) {
        Err(e) => assert_eq!(e.code(), "ledger_journal_damaged", "{e}"),
        Ok(reopened) => {
            assert_eq!(reopened.replayed_on_open(), 0);
            reopened.close().await.unwrap();
            let kept = std::fs::read_dir(dir.path())
                .unwrap()
                .filter_map(Result::ok)
                .any(|e| e.file_name().to_string_lossy().starts_with("victim.db.journal.rejected-"));
            assert!(kept, "the replaced journal is kept aside");
            assert!(
                !LedgerReader::open(&crashed)
                    .unwrap()
                    .timeline("other-journaled-0", None)
                    .map(|t| !t.records.is_empty())
                    .unwrap_or(false)
            );
        }
    }
}

/// A running writer seals on request: a verification right after finds every record sealed, with the
/// writer still holding the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_writer_seals_now_on_request() {
    let (_dir, path) = temp();
    let ledger = SqliteLedger::open_signed(&path, LedgerOptions::default(), Some(Arc::new(key()))).unwrap();
    for i in 0..5 {
        ledger.record(finished("s", &format!("c{i}"), "shell", i, 5, rule("r"))).await.unwrap();
    }
    ledger.flush().await.unwrap();
    let before = verify(&path);
    assert_eq!(
        (before.verdict, before.sealed, before.writer_running),
        (Verdict::IntactUnsealedTail, 0, true)
    );
    ledger.seal_now().await.unwrap();
    let after = verify(&path);
    assert_eq!((after.verdict, after.sealed, after.checkpoints), (Verdict::Intact, 5, 1), "{after:?}");
    // Nothing new: no second seal.
    ledger.seal_now().await.unwrap();
    assert_eq!(verify(&path).checkpoints, 1);
    ledger.close().await.unwrap();
    assert_eq!(verify(&path).checkpoints, 1, "the close found nothing left to seal");
}

/// Removing the newest records together with their checkpoints leaves an older chain that verifies on
/// its own; the witness kept outside the data folder says it was cut. The witness never moves back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_witness_catches_a_tail_removed_with_its_checkpoints() {
    use portcullis_ledger::witness::{Witness, Witnessed};
    let (dir, path) = temp();
    let config = dir.path().join("config");
    write(&path, 2, LedgerOptions::default(), Some(key())).await;
    Witness::record(&path, &config).unwrap();
    write(&path, 2, LedgerOptions::default(), Some(key())).await;
    Witness::record(&path, &config).unwrap();
    let kept =
        Witness::load(&config, &Witness::of(&LedgerReader::open(&path).unwrap()).unwrap().unwrap().ledger_id)
            .unwrap()
            .unwrap();
    assert_eq!((kept.count, kept.record_id), (8, 8));

    // Records 5-8 and the checkpoint at close that covered them, removed: two closes, one left.
    // A careful hand: the chain's head put back too, so a writer carries on from record 4.
    sql(
        &path,
        "DELETE FROM records WHERE id > 4; DELETE FROM chain_checkpoints WHERE count > 4;
         UPDATE chain_state SET count = 4, head = (SELECT chain FROM records WHERE id = 4);",
    );
    assert_eq!(verify(&path).verdict, Verdict::Intact, "on its own, the shorter chain holds");
    let reader = LedgerReader::open(&path).unwrap();
    let report = reader.verify_with(&key().public(), Some(&config)).unwrap();
    assert_eq!(report.verdict, Verdict::Broken);
    assert_eq!(report.breaks[0].kind, BreakKind::Truncated, "{report:?}");
    assert!(report.breaks[0].message.contains("covers 8 records; the chain has 4"), "{report:?}");
    // A hub that opens the cut ledger does not lower the witness.
    let older = Witness::of(&reader).unwrap().unwrap();
    assert_eq!(older.save(&config).unwrap(), Witnessed::Behind { kept: 8 });
    Witness::record(&path, &config).unwrap();
    assert_eq!(Witness::load(&config, &older.ledger_id).unwrap().unwrap().count, 8);
    // Written on from the cut: where the witness was, the chain has another link now.
    write(&path, 3, LedgerOptions::default(), Some(key())).await;
    let report = LedgerReader::open(&path).unwrap().verify_with(&key().public(), Some(&config)).unwrap();
    assert_eq!(report.verdict, Verdict::Broken);
    assert_eq!(
        (report.breaks[0].kind, report.breaks[0].position),
        (BreakKind::SealMismatch, Some(8)),
        "{report:?}"
    );
    assert!(report.breaks[0].message.contains("the hub's witness"), "{report:?}");
}

/// The witness carries its checkpoint's signature (issue 51, finding 13): one written by hand to blame an
/// intact ledger for a cut tail does not verify with the ledger's key, is reported, and is not used; an
/// unsigned one (an older hub's) is not used either while a key is checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_witness_written_by_hand_does_not_verify_and_is_not_used() {
    use portcullis_ledger::witness::Witness;
    let (dir, path) = temp();
    let config = dir.path().join("config");
    write(&path, 2, LedgerOptions::default(), Some(key())).await;
    Witness::record(&path, &config).unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    let genuine = Witness::of(&reader).unwrap().unwrap();
    assert!(genuine.signed_by(&key().public()), "{genuine:?}");
    let file = Witness::file(&config, &genuine.ledger_id);
    assert_eq!(reader.verify_with(&key().public(), Some(&config)).unwrap().verdict, Verdict::Intact);

    // A forger who can write the config folder claims 40 records were witnessed.
    let mut forged = genuine.clone();
    forged.count = 40;
    std::fs::write(&file, serde_json::to_vec(&forged).unwrap()).unwrap();
    let report = reader.verify_with(&key().public(), Some(&config)).unwrap();
    assert_eq!(report.verdict, Verdict::Broken, "{report:?}");
    assert_eq!(report.breaks.len(), 1, "{report:?}");
    assert_eq!(report.breaks[0].kind, BreakKind::SealSignature, "{report:?}");
    assert!(report.breaks[0].message.contains("witness"), "{report:?}");
    assert!(!report.breaks.iter().any(|b| b.kind == BreakKind::Truncated), "{report:?}");

    // Unsigned, it is ignored: the ledger verifies on its own.
    forged.signature = None;
    std::fs::write(&file, serde_json::to_vec(&forged).unwrap()).unwrap();
    assert_eq!(reader.verify_with(&key().public(), Some(&config)).unwrap().verdict, Verdict::Intact);
}
