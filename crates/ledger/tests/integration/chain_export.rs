//! The chain leaving the ledger (issue 36): the tail hands a sink that takes links each record's link
//! and the canonical columns it hashes, and the chain's checkpoints as a side table; an export line
//! whose record was edited apart from its columns is found at its record; an export mixing two ledgers
//! (a team ledger's) verifies each ledger on its own, with both keys, and fails with one.

// Test support code outside #[test] functions may unwrap, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use async_trait::async_trait;
use portcullis_harness::{DecidedBy, Ledger};
use portcullis_ledger::chain::{self, canonical_from_json};
use portcullis_ledger::export_proof::{verify_export, verify_export_keys};
use portcullis_ledger::{
    BreakKind, CallFilter, ExportFormat, LedgerKey, LedgerOptions, LedgerReader, LedgerTail, RecordLink,
    RecordSink, SideRow, SideTable, SqliteLedger, StoredRecord, Verdict,
};
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A ledger of `calls` calls signed with the key of `seed`, sealed every 8 records and at close.
async fn write(path: &Path, calls: usize, seed: u8) {
    let options = LedgerOptions { checkpoint_every: 8, ..LedgerOptions::default() };
    let key = LedgerKey::from_seed([seed; 32]);
    let ledger = SqliteLedger::open_signed(path, options, Some(Arc::new(key))).unwrap();
    for i in 0..calls {
        let call = format!("c{i}");
        ledger.record(started("s", &call, "shell", i as i64, DecidedBy::DEFAULT)).await.unwrap();
        ledger.record(finished("s", &call, "shell", i as i64, 5, rule("r"))).await.unwrap();
    }
    ledger.close().await.unwrap();
}

fn export(path: &Path) -> String {
    let mut out = Vec::new();
    let reader = LedgerReader::open(path).unwrap();
    reader.export(&CallFilter::default(), ExportFormat::Jsonl, &mut out, &mut |_, _| {}).unwrap();
    String::from_utf8(out).unwrap()
}

/// Keeps the records, links and checkpoints it is given.
#[derive(Default)]
struct Linked {
    records: Mutex<Vec<(StoredRecord, Option<RecordLink>)>>,
    seals: Mutex<Vec<Value>>,
}

#[async_trait]
impl RecordSink for Linked {
    fn name(&self) -> &str {
        "linked"
    }

    fn takes_links(&self) -> bool {
        true
    }

    fn side_tables(&self) -> &[SideTable] {
        &[SideTable::ChainCheckpoints]
    }

    async fn deliver(&self, _records: &[StoredRecord]) -> Result<(), String> {
        Err("a sink that takes links is given them".into())
    }

    async fn deliver_linked(
        &self,
        records: &[StoredRecord],
        links: &[Option<RecordLink>],
    ) -> Result<(), String> {
        assert_eq!(records.len(), links.len());
        self.records.lock().unwrap().extend(records.iter().cloned().zip(links.iter().cloned()));
        Ok(())
    }

    async fn deliver_side(&self, table: SideTable, rows: &[SideRow]) -> Result<(), String> {
        assert_eq!(table, SideTable::ChainCheckpoints);
        self.seals.lock().unwrap().extend(rows.iter().map(|r| Value::Object(r.row.clone())));
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tail_hands_each_record_its_link_the_columns_it_hashes_and_the_checkpoints() {
    let (_dir, path) = temp();
    let key = LedgerKey::from_seed([7; 32]);
    write(&path, 10, 7).await;
    let sink = Arc::new(Linked::default());
    let mut tail = LedgerTail::open(&path, vec![sink.clone()]).unwrap();
    while tail.pump().await > 0 {}
    let ledger_id = LedgerReader::open(&path).unwrap().ledger_id().unwrap();
    let records = sink.records.lock().unwrap().clone();
    assert_eq!(records.len(), 20);
    // Link by link from the ledger's genesis, over the columns as shipped.
    let mut previous = chain::genesis(&ledger_id);
    let mut links = std::collections::HashMap::new();
    for (record, link) in &records {
        let link = link.as_ref().unwrap();
        let columns: Vec<Value> = serde_json::from_str(&link.columns).unwrap();
        let mut bytes = Vec::new();
        canonical_from_json(&columns, &mut bytes).unwrap();
        assert_eq!(chain::link(&previous, &bytes), link.link, "record {}", record.id);
        assert_eq!(columns[6], record.head.tool.as_str());
        previous = link.link;
        links.insert(record.id, link.link);
    }
    // Every 8 records, and at close: each seals the link of its record, in hex.
    let seals = sink.seals.lock().unwrap().clone();
    assert_eq!(seals.len(), 3, "{seals:?}");
    for seal in &seals {
        let at = links[&seal["record_id"].as_i64().unwrap()];
        assert_eq!(seal["head"], portcullis_harness::receipt::hex(&at), "{seal}");
        assert_eq!(seal["public_key"], key.public().to_string(), "{seal}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_edited_in_an_export_apart_from_its_columns_is_found() {
    let (_dir, path) = temp();
    let key = LedgerKey::from_seed([7; 32]);
    write(&path, 4, 7).await;
    let text = export(&path);
    assert_eq!(verify_export(text.as_bytes(), &key.public()).unwrap().verdict, Verdict::Intact);
    // The record's owner on line 3 (record 3), not the columns its link hashes.
    let edited: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let l = if i == 2 {
                l.replacen("\"owner\":\"agent\"", "\"owner\":\"agenT\"", 1)
            } else {
                l.to_owned()
            };
            format!("{l}\n")
        })
        .collect();
    assert_ne!(edited, text);
    let report = verify_export(edited.as_bytes(), &key.public()).unwrap();
    assert_eq!(report.verdict, Verdict::Broken, "{report:?}");
    assert_eq!(
        (report.breaks[0].kind, report.breaks[0].record_id),
        (BreakKind::Changed, Some(3)),
        "{report:?}"
    );
    assert!(report.breaks[0].message.contains("is not the record its link proves"), "{report:?}");
}

/// `lines` with an `origin` naming `ledger_id`, as a team ledger's export writes them.
fn with_origin(lines: &str, ledger_id: &str) -> Vec<String> {
    lines
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v["origin"] = serde_json::json!({ "ledger_id": ledger_id, "host": "h", "user": "u" });
            v.to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_of_two_ledgers_verifies_with_both_keys_and_fails_with_one() {
    let (_one, a) = temp();
    let (_two, b) = temp();
    let (key_a, key_b) = (LedgerKey::from_seed([7; 32]), LedgerKey::from_seed([8; 32]));
    write(&a, 6, 7).await;
    write(&b, 5, 8).await;
    let id_a = LedgerReader::open(&a).unwrap().ledger_id().unwrap();
    let id_b = LedgerReader::open(&b).unwrap().ledger_id().unwrap();
    // Interleaved, as a team export orders calls by time; both ledgers' record ids start at 1.
    let (lines_a, lines_b) = (with_origin(&export(&a), &id_a), with_origin(&export(&b), &id_b));
    let mut mixed = String::new();
    for i in 0..lines_a.len().max(lines_b.len()) {
        for line in [lines_a.get(i), lines_b.get(i)].into_iter().flatten() {
            mixed.push_str(line);
            mixed.push('\n');
        }
    }
    let both = verify_export_keys(mixed.as_bytes(), &[key_a.public(), key_b.public()]).unwrap();
    assert_eq!(both.verdict, Verdict::Intact, "{both:?}");
    assert_eq!((both.chained, both.sealed), (22, 22), "{both:?}");
    assert_eq!(both.ledgers.len(), 2, "{both:?}");
    for ledger in &both.ledgers {
        let key = if ledger.ledger_id == id_a { key_a.public() } else { key_b.public() };
        assert_eq!(ledger.verdict, Verdict::Intact, "{ledger:?}");
        assert_eq!(ledger.key, Some(key.to_string()), "{ledger:?}");
    }

    let one = verify_export_keys(mixed.as_bytes(), &[key_a.public()]).unwrap();
    assert_eq!(one.verdict, Verdict::Broken, "{one:?}");
    let verdict_of = |id: &str| one.ledgers.iter().find(|l| l.ledger_id == id).unwrap().verdict;
    assert_eq!((verdict_of(&id_a), verdict_of(&id_b)), (Verdict::Intact, Verdict::Broken));
    assert_eq!(one.breaks[0].kind, BreakKind::SealSignature, "{one:?}");
    assert!(one.breaks[0].message.starts_with(&format!("ledger {id_b}: ")), "{one:?}");

    // A line moved to the other ledger does not fit its chain there.
    let moved = mixed.replacen(&format!("\"ledger_id\":\"{id_a}\""), &format!("\"ledger_id\":\"{id_b}\""), 1);
    let report = verify_export_keys(moved.as_bytes(), &[key_a.public(), key_b.public()]).unwrap();
    assert_eq!(report.verdict, Verdict::Broken, "{report:?}");
}
