//! Claimed effects in the ledger: a claim goes through the journal like every row, its end and an
//! operator's mark update it, a claim still running when the ledger is opened again is `unknown`, and
//! a hub loads only what is live (unknown, or within its window).

use portcullis_harness::Timestamp;
use portcullis_ledger::{
    EffectChange, EffectMark, EffectMarkOutcome, EffectRow, EffectState, LedgerReader, SqliteLedger,
};

fn claim(key: &str, call: &str, expires_at: i64) -> EffectRow {
    EffectRow {
        agent: "default".into(),
        key: key.into(),
        tool: "shell".into(),
        summary: Some("npm run migrate".into()),
        digest: "d".repeat(64),
        call_id: call.into(),
        session_id: "s1".into(),
        state: EffectState::Running,
        claimed_at: Timestamp(10),
        ended_at: None,
        expires_at: Timestamp(expires_at),
        result: None,
        operator: None,
        marked_at: None,
        note: None,
    }
}

#[tokio::test]
async fn claims_end_are_marked_and_a_running_one_is_unknown_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.ledger");
    let ledger = SqliteLedger::open(&path).unwrap();
    for (key, call, expires) in
        [("done", "c1", 1_000), ("open", "c2", 1_000), ("old", "c3", 20), ("freed", "c4", 1_000)]
    {
        ledger.record_effect(EffectChange::Claimed(claim(key, call, expires))).await.unwrap();
    }
    ledger.flush_durable().await.unwrap();
    let ended = |key: &str, call: &str| EffectChange::Ended {
        agent: "default".into(),
        key: key.into(),
        call_id: call.into(),
        at: Timestamp(11),
        result: "{\"answer\":1}".into(),
    };
    ledger.record_effect(ended("done", "c1")).await.unwrap();
    ledger.record_effect(ended("old", "c3")).await.unwrap();
    // The end of another call with the key changes nothing.
    ledger.record_effect(ended("open", "someone-else")).await.unwrap();
    ledger
        .record_effect(EffectChange::Released {
            agent: "default".into(),
            key: "freed".into(),
            call_id: "c4".into(),
        })
        .await
        .unwrap();
    ledger.close().await.unwrap();

    // Opened again: the claim still running has an unknown outcome.
    let ledger = SqliteLedger::open(&path).unwrap();
    assert_eq!(ledger.unknown_effects_on_open(), 1);
    let reader = LedgerReader::open(&path).unwrap();
    let unknown = reader.effects(&[EffectState::Unknown], 10).unwrap();
    assert_eq!(unknown.len(), 1);
    assert_eq!((unknown[0].key.as_str(), unknown[0].call_id.as_str()), ("open", "c2"));
    assert_eq!(unknown[0].summary.as_deref(), Some("npm run migrate"));
    let mut done = reader.effects(&[EffectState::Done], 10).unwrap();
    done.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(done.iter().map(|e| e.key.as_str()).collect::<Vec<_>>(), ["done", "old"]);
    // The list leaves the answers out; what a hub loads at start has them.
    assert!(done.iter().all(|e| e.result.is_none()));
    let live = reader.live_effects(Timestamp(100)).unwrap();
    let answered = live.iter().find(|e| e.key == "done").unwrap();
    assert_eq!(answered.result.as_deref(), Some("{\"answer\":1}"));
    // Live at 100: the unknown one and the one within its window; not the expired, not the released.
    let mut live: Vec<String> =
        reader.live_effects(Timestamp(100)).unwrap().into_iter().map(|e| e.key).collect();
    live.sort();
    assert_eq!(live, ["done", "open"]);

    let mark = EffectMark {
        at: Timestamp(50),
        agent: "default".into(),
        key: "open".into(),
        call_id: "c2".into(),
        outcome: EffectMarkOutcome::Failed,
        operator: "dev".into(),
        note: Some("never began".into()),
    };
    ledger.record_effect(EffectChange::Marked(mark.clone())).await.unwrap();
    ledger.close().await.unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    let marked = reader.effects(&[EffectState::MarkedFailed], 10).unwrap();
    assert_eq!(marked.len(), 1);
    assert_eq!(
        (marked[0].operator.as_deref(), marked[0].note.as_deref()),
        (Some("dev"), Some("never began"))
    );
    assert_eq!(reader.effect_marks(10).unwrap(), vec![mark]);
    // A marked effect is not unknown on the next open.
    let ledger = SqliteLedger::open(&path).unwrap();
    assert_eq!(ledger.unknown_effects_on_open(), 0);
    ledger.close().await.unwrap();
}
