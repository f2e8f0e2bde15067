//! The marks of calls (what a confined command's changes came to, whether it ran contained) in the team
//! ledger: shipped with each record as its hub's ledger reads them, filtered on as a hub's own ledger
//! filters, and given by the migration that added them to the records shipped before it.

use portcullis_harness::ChangeOutcome;
use portcullis_ledger::LedgerRead as _;
use portcullis_ledger::{CallFilter, RecordSink, StoredRecord};
use portcullis_team::{PostgresSink, TeamReader};
use serde_json::{Value, json};

const T0: i64 = 1_764_547_200_000_000;

/// A finished shell call whose result is `output`.
fn call(i: i64, output: Value) -> Vec<StoredRecord> {
    let base = json!({"session_id": "s", "run_id": "r", "call_id": format!("c{i}"), "owner": "agent",
        "tool": "shell", "redacted": false, "decided_by": {"by": "default"}, "policy_decision": "allow"});
    let mut started = base.clone();
    started.as_object_mut().unwrap().extend(
        json!({"id": 2 * i + 1, "kind": "started", "at": T0 + i * 10, "arguments": {"command": "python3 -c x"}})
            .as_object()
            .unwrap()
            .clone(),
    );
    let mut end = base;
    end.as_object_mut().unwrap().extend(
        json!({"id": 2 * i + 2, "kind": "finished", "at": T0 + i * 10 + 5, "started_at": T0 + i * 10,
               "duration_us": 5, "output": output})
        .as_object()
        .unwrap()
        .clone(),
    );
    vec![serde_json::from_value(started).unwrap(), serde_json::from_value(end).unwrap()]
}

fn records() -> Vec<StoredRecord> {
    let walls = json!({"unread": ["python3 -c x"], "masked": []});
    let record = |kept: u64, held: u64, discarded: u64| json!({"kept": kept, "held": held, "discarded": discarded, "entries": []});
    [
        // The change record (new), contained.
        json!({"content": [], "structured": {"sandbox": {"contained": walls}}, "changes": record(2, 1, 0)}),
        json!({"content": [], "structured": {"sandbox": {"contained": null}}, "changes": record(1, 0, 3)}),
        // Only the summary (recorded before the change record).
        json!({"content": [], "structured": {"sandbox": {"contained": walls,
               "changes": {"kept_count": 4, "held_count": 0, "discarded_count": 0}}}}),
        json!({"content": [{"type": "text", "text": "plain"}]}),
    ]
    .into_iter()
    .enumerate()
    .flat_map(|(i, output)| call(i as i64, output))
    .collect()
}

fn ids(reader: &TeamReader, changes: &[ChangeOutcome], contained: Option<bool>) -> Vec<String> {
    let filter = CallFilter { changes: changes.to_vec(), contained, ..CallFilter::default() };
    let mut ids: Vec<String> =
        reader.calls(&filter, None, 100).unwrap().calls.into_iter().map(|c| c.head.call_id).collect();
    ids.sort();
    assert_eq!(reader.count(&filter).unwrap(), ids.len() as u64, "{filter:?}");
    ids
}

fn check(reader: &TeamReader) {
    use ChangeOutcome::*;
    assert_eq!(ids(reader, &[Held, Discarded], None), ["c0", "c1"]);
    assert_eq!(ids(reader, &[Kept], None), ["c2"]);
    assert_eq!(ids(reader, &[], Some(true)), ["c0", "c2"]);
    assert_eq!(ids(reader, &[], Some(false)), ["c1", "c3"]);
    assert_eq!(ids(reader, &[Held], Some(false)), Vec::<String>::new());
    let held = reader.calls(&CallFilter { changes: vec![Held], ..CallFilter::default() }, None, 1).unwrap();
    assert_eq!((held.calls[0].changes, held.calls[0].contained), (Some(Held), true));
    let stats = reader.stats(&CallFilter { contained: Some(true), ..CallFilter::default() }, None).unwrap();
    assert_eq!(stats.total, 2, "the rollups keep no marks: counted from the records");
}

#[tokio::test(flavor = "multi_thread")]
async fn marks_ship_with_the_records_filter_the_calls_and_are_given_to_older_rows_by_the_migration() {
    let (pg, db, sink, _dir) = crate::team_with_sink();
    sink.deliver(&records()).await.unwrap();
    let opened = db.clone();
    tokio::task::spawn_blocking(move || check(&TeamReader::open(&opened).unwrap())).await.unwrap();
    // Back to the schema before the marks, the records kept: the migration marks them from the records.
    pg.sql(
        "team",
        "DROP INDEX portcullis.records_changes; DROP INDEX portcullis.records_contained;
         ALTER TABLE portcullis.records DROP COLUMN changes, DROP COLUMN contained;
         DELETE FROM portcullis.migrations WHERE version = 6;",
    );
    // A sink migrates when it connects; the batch sent again adds nothing.
    let again = PostgresSink::new(db.clone());
    again.bind("ledger-one");
    again.deliver(&records()).await.unwrap();
    tokio::task::spawn_blocking(move || check(&TeamReader::open(&db).unwrap())).await.unwrap();
}
