//! The marks of calls (what their changes came to, whether they ran contained): set by the writer from
//! the record, filtered on, the same in a listing as in `CallRow::of`, given to the rows of an older
//! ledger by its migration, and checked against the body by `verify`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use portcullis_harness::{
    ChangeEntry, ChangeKind, ChangeOutcome, ChangeRecord, DecidedBy, Ledger, ToolOutput,
};
use portcullis_ledger::LedgerRead as _;
use portcullis_ledger::schema::migrate;
use portcullis_ledger::{
    BreakKind, CallFilter, CallRow, LedgerKey, LedgerOptions, LedgerReader, SqliteLedger, Verdict,
};
use serde_json::json;
use std::sync::Arc;

fn change(path: &str, outcome: ChangeOutcome) -> ChangeEntry {
    ChangeEntry { path: path.into(), what: ChangeKind::File, size: Some(4), sha256: None, outcome, why: None }
}

/// A finished confined command whose changes came to `outcomes`, contained or not.
fn confined(
    call: &str,
    at: i64,
    outcomes: &[ChangeOutcome],
    contained: bool,
) -> portcullis_harness::ToolCallRecord {
    let mut record = ChangeRecord::default();
    for (i, outcome) in outcomes.iter().enumerate() {
        record.push(change(&format!("/p/f{i}"), *outcome));
    }
    let mut r = finished("s", call, "shell", at, 5, DecidedBy::DEFAULT);
    let walls = if contained { json!({"unread": ["python3 -c x"], "masked": []}) } else { json!(null) };
    r.output = Some(Arc::new(ToolOutput {
        structured: Some(json!({"sandbox": {"confined": true, "contained": walls}})),
        changes: (!record.is_empty()).then(|| Box::new(record)),
        ..ToolOutput::text("done")
    }));
    r
}

fn ids(reader: &LedgerReader, filter: &CallFilter) -> Vec<String> {
    let mut ids: Vec<String> =
        reader.calls(filter, None, 100).unwrap().calls.into_iter().map(|c| c.head.call_id).collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_marked_filtered_listed_as_projected_and_verified() {
    let (_dir, path) = temp();
    let key = || LedgerKey::from_seed([3; 32]);
    let ledger = SqliteLedger::open_signed(&path, LedgerOptions::default(), Some(Arc::new(key()))).unwrap();
    use ChangeOutcome::*;
    let calls: [(&str, &[ChangeOutcome], bool); 5] = [
        ("kept", &[Kept, Kept], false),
        ("held", &[Kept, Held, Discarded], true),
        ("discarded", &[Discarded, Kept], false),
        ("contained-quiet", &[], true),
        ("plain", &[], false),
    ];
    for (i, (call, outcomes, contained)) in calls.iter().enumerate() {
        let at = i as i64 * 10;
        ledger.record(started("s", call, "shell", at, DecidedBy::DEFAULT)).await.unwrap();
        let done = if *call == "plain" {
            finished("s", call, "shell", at, 5, DecidedBy::DEFAULT)
        } else {
            confined(call, at, outcomes, *contained)
        };
        ledger.record(done).await.unwrap();
    }
    ledger.close().await.unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    let by = |changes: Vec<ChangeOutcome>, contained: Option<bool>| {
        ids(&reader, &CallFilter { changes, contained, ..CallFilter::default() })
    };
    assert_eq!(by(vec![Held, Discarded], None), ["discarded", "held"]);
    assert_eq!(by(vec![Kept], None), ["kept"]);
    assert_eq!(by(vec![], Some(true)), ["contained-quiet", "held"]);
    assert_eq!(by(vec![], Some(false)), ["discarded", "kept", "plain"]);
    assert_eq!(by(vec![Held], Some(false)), Vec::<String>::new());
    assert_eq!(reader.count(&CallFilter { changes: vec![Held], ..CallFilter::default() }).unwrap(), 1);
    // A listing reads the columns; `CallRow::of` reads the body: the same row.
    for row in reader.calls(&CallFilter::default(), None, 100).unwrap().calls {
        let timeline = reader.timeline(&row.head.call_id, Some(&row.head.session_id)).unwrap();
        assert_eq!(CallRow::of_call(&timeline.records, row.record_id).as_ref(), Some(&row));
    }
    let held = reader.calls(&CallFilter { changes: vec![Held], ..CallFilter::default() }, None, 1).unwrap();
    assert_eq!((held.calls[0].changes, held.calls[0].contained), (Some(Held), true));
    // The stats of a marked filter count the records (the rollups keep no marks).
    let stats = reader.stats(&CallFilter { contained: Some(true), ..CallFilter::default() }, None).unwrap();
    assert_eq!(stats.total, 2, "{stats:?}");
    assert_eq!(reader.verify(&key().public()).unwrap().verdict, Verdict::Intact);
    drop(reader);
    // A mark changed by hand (a held change hidden from the filter) is found at its record.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let id: i64 = conn.query_row("SELECT id FROM records WHERE changes = 'held'", [], |r| r.get(0)).unwrap();
    conn.execute("UPDATE records SET changes = 'kept' WHERE id = ?1", [id]).unwrap();
    drop(conn);
    let report = LedgerReader::open(&path).unwrap().verify(&key().public()).unwrap();
    assert_eq!(report.verdict, Verdict::Broken, "{report:?}");
    assert_eq!(
        (report.breaks[0].kind, report.breaks[0].record_id),
        (BreakKind::Derived, Some(id)),
        "{report:?}"
    );
}

#[tokio::test]
async fn an_older_ledgers_calls_are_marked_by_the_migration_from_their_summary() {
    let (_dir, path) = temp();
    {
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        migrate(&mut conn, 0, 13).unwrap();
        conn.execute("INSERT INTO writers(pid, opened_at, first_record, closed_at) VALUES (1, 1, 1, 2)", [])
            .unwrap();
        let held = json!({"decided_by": {"by": "default"}, "output": {"content": [], "structured": {"sandbox": {
            "contained": {"unread": ["x"], "masked": []},
            "changes": {"kept_count": 2, "held_count": 1, "discarded_count": 0}}}}});
        let plain = json!({"decided_by": {"by": "default"}, "output": {"content": []}});
        for (i, (call, body)) in [("old-held", held), ("old-plain", plain)].into_iter().enumerate() {
            conn.execute(
                "INSERT INTO records (writer_id, session_id, run_id, call_id, call_key, owner, tool, kind, status,
                     at, decided_by, redacted, body)
                 VALUES (1, 's', 'r', ?1, ?2, 'agent', 'shell', 'finished', 'finished', ?3, 'default', 0, ?4)",
                rusqlite::params![call, portcullis_ledger::schema::call_key(call), i as i64 + 5, body.to_string()],
            )
            .unwrap();
        }
    }
    SqliteLedger::open(&path).unwrap().close().await.unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    let held = CallFilter { changes: vec![ChangeOutcome::Held], ..CallFilter::default() };
    assert_eq!(ids(&reader, &held), ["old-held"]);
    assert_eq!(ids(&reader, &CallFilter { contained: Some(false), ..CallFilter::default() }), ["old-plain"]);
    let row = &reader.calls(&held, None, 1).unwrap().calls[0];
    assert!(row.contained);
}
