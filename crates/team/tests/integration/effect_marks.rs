//! The operators' decisions on unknown outcomes reach the team ledger: written in a hub's ledger, read
//! from its side table as the tail reads it, shipped, and found in `portcullis.effect_marks` once, even
//! when a batch is shipped again.

use portcullis_harness::Timestamp;
use portcullis_ledger::{
    EffectChange, EffectMark, EffectMarkOutcome, LedgerReader, RecordSink, SideTable, SqliteLedger,
};
use portcullis_team::PostgresSink;
use portcullis_team::testing::PrivatePostgres;

#[tokio::test(flavor = "multi_thread")]
async fn marks_ship_once_with_who_decided() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.ledger");
    let ledger = SqliteLedger::open(&path).unwrap();
    for (i, outcome) in [EffectMarkOutcome::Retryable, EffectMarkOutcome::Done].into_iter().enumerate() {
        let mark = EffectMark {
            at: Timestamp(100 + i as i64),
            agent: "ci-bot".into(),
            key: format!("migrate-{i}"),
            call_id: format!("c{i}"),
            outcome,
            operator: "dev (app)".into(),
            note: (i == 0).then(|| "the migration never began".to_owned()),
        };
        ledger.record_effect(EffectChange::Marked(mark)).await.unwrap();
    }
    ledger.close().await.unwrap();
    let rows = LedgerReader::open(&path).unwrap().side_rows(SideTable::EffectMarks, 0, 100).unwrap();
    assert_eq!(rows.len(), 2);

    let pg = PrivatePostgres::start();
    pg.create_db("team");
    let db = pg.team_db("team", dir.path());
    let sink = PostgresSink::new(db);
    sink.bind("ledger-one");
    sink.deliver_side(SideTable::EffectMarks, &rows).await.unwrap();
    sink.deliver_side(SideTable::EffectMarks, &rows[1..]).await.unwrap();
    let shipped = pg.sql(
        "team",
        "SELECT ledger_id, agent, key, outcome, operator, coalesce(note, '-') FROM portcullis.effect_marks ORDER BY id",
    );
    assert_eq!(
        shipped,
        vec![
            vec!["ledger-one", "ci-bot", "migrate-0", "retryable", "dev (app)", "the migration never began"],
            vec!["ledger-one", "ci-bot", "migrate-1", "done", "dev (app)", "-"],
        ]
    );
}
