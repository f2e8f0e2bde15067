//! Issue 36: a hub's ledger reaches the team ledger with its hash chain (each record's link and the
//! canonical columns it hashes, byte for byte) and its signed checkpoints; an export of the team ledger
//! carries each record's proof and verifies with the hub's public key alone; an UPDATE made in
//! PostgreSQL is found at its record; records shipped before the chain (or after a migration from a
//! schema without it) stay, unchained.

use portcullis_harness::{CallContext, DecidedBy, Ledger, RecordKind, Timestamp, ToolCallRecord};
use portcullis_ledger::export_proof::verify_export_keys;
use portcullis_ledger::{
    BreakKind, CallFilter, LedgerKey, LedgerOptions, LedgerReader, LedgerTail, RecordSink, SideTable,
    SqliteLedger, Verdict, VerifyReport,
};
use portcullis_team::testing::PrivatePostgres;
use portcullis_team::{PostgresSink, TeamDb, TeamReader};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

fn record(kind: RecordKind, call: &str, at: i64) -> ToolCallRecord {
    let context = Arc::new(CallContext {
        session_id: Arc::from("s"),
        run_id: Arc::from("run"),
        call_id: Arc::from(call),
        owner: Arc::from("agent"),
        cwd: None,
        mcp: None,
    });
    let mut r = ToolCallRecord::new(kind, context, Arc::from("shell"), DecidedBy::DEFAULT);
    r.at = Timestamp(at);
    r.started_at = Some(Timestamp(at));
    // Text a `jsonb` column would not keep as written (spaces, escapes, key order): the columns are text.
    r.arguments = Some(Arc::new(json!({"command": format!("echo {call}"), "z": 1, "a": "tab\there \u{e9}"})));
    r
}

/// A ledger of `calls` calls signed with `key`, sealed every 8 records and at close.
async fn write(path: &Path, calls: usize, key: LedgerKey) {
    let options = LedgerOptions { checkpoint_every: 8, ..LedgerOptions::default() };
    let ledger = SqliteLedger::open_signed(path, options, Some(Arc::new(key))).unwrap();
    for i in 0..calls {
        let call = format!("c{i}");
        ledger.record(record(RecordKind::Started, &call, 1_000 + i as i64)).await.unwrap();
        ledger.record(record(RecordKind::Finished, &call, 1_500 + i as i64)).await.unwrap();
    }
    ledger.close().await.unwrap();
}

/// The team ledger's export as `ledger export --format jsonl` writes it (the hub's `export_team`): each
/// record with its origin and, when shipped with its link, its proof; then verified against `keys`.
fn export_and_verify(db: &TeamDb, keys: &[LedgerKey]) -> VerifyReport {
    let reader = TeamReader::open(db).unwrap();
    let mut text = String::new();
    reader
        .export_records(&CallFilter::default(), true, &mut |record, origin, proof| {
            let mut line = serde_json::to_value(record).unwrap();
            line["origin"] = serde_json::to_value(origin).unwrap();
            if let Some(proof) = proof {
                line["chain"] = serde_json::to_value(proof).unwrap();
            }
            text.push_str(&format!("{line}\n"));
            Ok(())
        })
        .unwrap();
    let keys: Vec<_> = keys.iter().map(LedgerKey::public).collect();
    verify_export_keys(text.as_bytes(), &keys).unwrap()
}

#[test]
fn a_signed_ledger_ships_its_chain_and_an_export_of_the_team_ledger_is_proven_with_its_key() {
    let pg = PrivatePostgres::start();
    pg.create_db("team");
    let dir = tempfile::tempdir().unwrap();
    let db = pg.team_db("team", dir.path());
    let path = dir.path().join("ledger.db");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(write(&path, 12, LedgerKey::from_seed([5; 32])));
    let local = LedgerReader::open(&path).unwrap();
    let ledger_id = local.ledger_id().unwrap();

    // A hub of an older build shipped records without links; then the schema is taken back to the
    // version before the chain (as a database made by that build is), its rows kept.
    let old = PostgresSink::new(db.clone());
    old.bind("older-hub");
    let old_records = local.records(0, 4).unwrap();
    runtime.block_on(old.deliver(&old_records)).unwrap();
    drop(old);
    pg.sql(
        "team",
        "ALTER TABLE portcullis.records DROP COLUMN chain, DROP COLUMN chain_columns;
         DROP TABLE portcullis.chain_checkpoints; DROP TABLE portcullis.effect_marks;
         DROP INDEX portcullis.records_changes; DROP INDEX portcullis.records_contained;
         ALTER TABLE portcullis.records DROP COLUMN changes, DROP COLUMN contained;
         DELETE FROM portcullis.migrations WHERE version >= 4",
    );

    // The hub's tail ships the signed ledger (its sink migrates the schema first).
    let sink: Arc<dyn RecordSink> = Arc::new(PostgresSink::new(db.clone()));
    let mut tail = LedgerTail::open(&path, vec![sink]).unwrap();
    runtime.block_on(async { while tail.pump().await > 0 {} });
    // Every step since: the chain's (4), the effect marks' (5) and the call marks' (6).
    assert_eq!(pg.count("team", "SELECT max(version) FROM portcullis.migrations"), 6);

    // Each record's link and columns as the hub's ledger holds them, byte for byte; every checkpoint.
    let (records, links) = local.linked_records(0, 1000).unwrap();
    assert_eq!(records.len(), 24);
    let shipped = pg.sql(
        "team",
        &format!("SELECT id, chain, chain_columns FROM portcullis.records WHERE ledger_id = '{ledger_id}' ORDER BY id"),
    );
    assert_eq!(shipped.len(), 24);
    for ((record, link), row) in records.iter().zip(&links).zip(&shipped) {
        let link = link.as_ref().unwrap();
        assert_eq!(row[0], record.id.to_string());
        assert_eq!(row[1], portcullis_harness::receipt::hex(&link.link), "record {}", record.id);
        assert_eq!(row[2], link.columns, "record {}", record.id);
    }
    assert!(shipped[0][2].contains(r#"tab\\there é"#), "{}", shipped[0][2]);
    let local_seals = local.side_rows(SideTable::ChainCheckpoints, 0, 100).unwrap();
    assert_eq!(local_seals.len(), 3, "every 8 records: {local_seals:?}");
    let seals = pg.sql(
        "team",
        "SELECT ledger_id, record_id, head, public_key, signature FROM portcullis.chain_checkpoints ORDER BY id",
    );
    assert_eq!(seals.len(), local_seals.len());
    for (seal, local) in seals.iter().zip(&local_seals) {
        assert_eq!(seal[0], ledger_id);
        for (i, column) in ["record_id", "head", "public_key", "signature"].iter().enumerate() {
            let want = match &local.row[*column] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            assert_eq!(seal[i + 1], want, "{column}");
        }
    }
    assert_eq!(
        pg.count(
            "team",
            "SELECT count(*) FROM portcullis.records WHERE ledger_id = 'older-hub' AND chain IS NULL"
        ),
        4
    );

    // The export proves the signed ledger's records with its public key alone; the older hub's are
    // unchained, neither proven nor broken.
    let report = export_and_verify(&db, &[LedgerKey::from_seed([5; 32])]);
    assert_eq!(report.verdict, Verdict::Intact, "{report:?}");
    assert_eq!((report.chained, report.sealed, report.unchained), (24, 24, 4), "{report:?}");
    assert_eq!(report.ledgers.len(), 2, "{report:?}");
    let signed = report.ledgers.iter().find(|l| l.ledger_id == ledger_id).unwrap();
    assert_eq!((signed.verdict, signed.checkpoints_valid), (Verdict::Intact, 3), "{signed:?}");
    // Another key proves nothing.
    let other = export_and_verify(&db, &[LedgerKey::from_seed([6; 32])]);
    assert_eq!(other.verdict, Verdict::Broken, "{other:?}");
    assert_eq!(other.breaks[0].kind, BreakKind::SealSignature, "{other:?}");

    // A record changed in PostgreSQL, its record and its columns alike: found at that record.
    pg.sql(
        "team",
        &format!(
            "UPDATE portcullis.records SET chain_columns = replace(chain_columns, 'echo c3', 'echo c9'),
                 record = jsonb_set(record, '{{arguments,command}}', '\"echo c9\"')
             WHERE ledger_id = '{ledger_id}' AND id = 7"
        ),
    );
    let report = export_and_verify(&db, &[LedgerKey::from_seed([5; 32])]);
    assert_eq!(report.verdict, Verdict::Broken, "{report:?}");
    assert_eq!(
        (report.breaks[0].kind, report.breaks[0].record_id),
        (BreakKind::Changed, Some(7)),
        "{report:?}"
    );
    assert!(report.breaks[0].message.starts_with(&format!("ledger {ledger_id}: line ")), "{report:?}");
    // Its record alone (what a reader of the team ledger sees): found at that record too.
    pg.sql(
        "team",
        &format!(
            "UPDATE portcullis.records SET chain_columns = replace(chain_columns, 'echo c9', 'echo c3')
             WHERE ledger_id = '{ledger_id}' AND id = 7"
        ),
    );
    let report = export_and_verify(&db, &[LedgerKey::from_seed([5; 32])]);
    assert_eq!(
        (report.breaks[0].kind, report.breaks[0].record_id),
        (BreakKind::Changed, Some(7)),
        "{report:?}"
    );
    assert!(report.breaks[0].message.contains("is not the record its link proves"), "{report:?}");
    assert_eq!(report.break_count, 1, "{report:?}");
}
