//! Tests of the chain's canonical bytes: the appender hashes the bytes it journals, the indexer and a
//! verifier re-encode them from the journal's row, from SQLite's columns and from an export's JSON, and
//! all four must be the same bytes for every kind of record.

use super::*;
use crate::indexer::{IndexChain, index_frames};
use crate::journal::begin_frame;
use crate::prepared::{Chaining, RunningCalls, encode_record};
use crate::rollup::KeyCache;
use crate::wire::tests::records;
use crate::wire::{Decoded, Reader};

fn ledger() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    crate::schema::migrate(&mut conn, 0, crate::schema::SCHEMA_VERSION).unwrap();
    conn.execute("INSERT INTO writers (id, pid, opened_at, first_record) VALUES (3, 1, 0, 1)", []).unwrap();
    conn
}

#[test]
fn journaled_sql_and_json_canonical_bytes_are_the_same() {
    let mut conn = ledger();
    let start = head(&conn).unwrap();
    assert_eq!(start, ChainHead { count: 0, link: genesis(&ledger_id(&conn).unwrap()) });
    let mut chaining = Chaining::new(start, 3);
    let mut running = RunningCalls::new();
    let mut frame = Vec::new();
    begin_frame(&mut frame, 3);
    let records = records();
    let mut expected = Vec::new();
    let mut previous = start.link;
    for record in &records {
        encode_record(record, &mut running, &mut chaining, &mut frame).unwrap();
    }
    let mut reader = Reader::new(&frame[crate::journal::FRAME_HEAD + 8..]);
    while !reader.is_empty() {
        let Decoded::Record(row) = reader.entry().unwrap() else { panic!("not a record") };
        let mut bytes = Vec::new();
        canonical_of_ref(&mut bytes, 3, &row);
        let link = link(&previous, &bytes);
        assert_eq!(row.chain, Some(&link), "{} {:?}", row.call_id, row.kind);
        previous = link;
        expected.push(bytes);
    }
    assert_eq!(expected.len(), records.len());
    assert_eq!(chaining.head, ChainHead { count: records.len() as u64, link: previous });

    // Indexed (checking every link, as a replay does), the rows give the same bytes back.
    let tx = conn.transaction().unwrap();
    let mut chain = IndexChain::load(&tx, true, true).unwrap();
    index_frames(&tx, [(3, &frame[crate::journal::FRAME_HEAD + 8..])], &mut KeyCache::default(), &mut chain)
        .unwrap();
    tx.commit().unwrap();
    assert_eq!(head(&conn).unwrap(), chaining.head);
    let mut stmt =
        conn.prepare(&format!("SELECT chain, {CHAINED_COLUMNS} FROM records ORDER BY id")).unwrap();
    let mut rows = stmt.query([]).unwrap();
    let mut i = 0;
    while let Some(row) = rows.next().unwrap() {
        let mut from_sql = Vec::new();
        canonical_from_sql(row, 1, &mut from_sql).unwrap().unwrap();
        assert_eq!(from_sql, expected[i], "row {i}");
        let mut from_json = Vec::new();
        canonical_from_json(&columns_as_json(row, 1).unwrap(), &mut from_json).unwrap();
        assert_eq!(from_json, expected[i], "row {i} as JSON");
        i += 1;
    }
    assert_eq!(i, records.len());
}

/// A replayed frame whose record was changed after it was journaled is refused, naming the record.
#[test]
fn a_replay_refuses_a_record_that_does_not_match_its_link() {
    let mut conn = ledger();
    let mut chaining = Chaining::new(head(&conn).unwrap(), 3);
    let mut frame = Vec::new();
    begin_frame(&mut frame, 3);
    for record in records().iter().take(3) {
        encode_record(record, &mut RunningCalls::new(), &mut chaining, &mut frame).unwrap();
    }
    let entries = &mut frame[crate::journal::FRAME_HEAD + 8..];
    // The third record's call id changed ("plain-1" → "plain-0").
    let at = entries.windows(7).rposition(|w| w == b"plain-1").unwrap();
    entries[at + 6] = b'0';
    let tx = conn.transaction().unwrap();
    let mut chain = IndexChain::load(&tx, true, true).unwrap();
    let e = index_frames(&tx, [(3, &*entries)], &mut KeyCache::default(), &mut chain).unwrap_err();
    assert!(e.to_string().contains("record 3 of the chain (call \"plain-0\""), "{e}");
    // Not checking (the appender's own frames in this process), the same frame is taken as it is.
    let mut chain = IndexChain::load(&tx, false, true).unwrap();
    index_frames(&tx, [(3, &*entries)], &mut KeyCache::default(), &mut chain).unwrap();
}

#[test]
fn columns_of_the_wrong_type_are_not_canonical() {
    let conn = ledger();
    let mut values = vec![serde_json::Value::from(1); 21];
    let e = canonical_from_json(&values, &mut Vec::new()).unwrap_err();
    assert_eq!(e.column, "session_id");
    values.pop();
    assert!(canonical_from_json(&values, &mut Vec::new()).is_err());
    // An unknown kind.
    conn.execute_batch(
        "INSERT INTO records (writer_id, session_id, run_id, call_id, call_key, owner, tool, kind, at,
             decided_by, redacted, body) VALUES (3, 's', 'r', 'c', 1, 'o', 't', 'started', 1, 'default', 0, '{}');",
    )
    .unwrap();
    let mut stmt = conn.prepare(&format!("SELECT {CHAINED_COLUMNS} FROM records")).unwrap();
    let mut rows = stmt.query([]).unwrap();
    let row = rows.next().unwrap().unwrap();
    let mut json = columns_as_json(row, 0).unwrap();
    json[7] = "launched".into();
    assert_eq!(canonical_from_json(&json, &mut Vec::new()).unwrap_err().column, "kind");
}
