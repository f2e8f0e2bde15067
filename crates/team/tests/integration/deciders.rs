//! A filter on any decider kind finds exactly the call that kind decided on a team ledger, as on a
//! file ledger (`portcullis-ledger`'s `queries.rs`): both take the one closed set of kinds.

use portcullis_harness::DeciderKind;
use portcullis_ledger::LedgerRead as _;
use portcullis_ledger::{CallFilter, RecordSink, StoredRecord};
use portcullis_team::TeamReader;
use serde_json::json;

const T0: i64 = 1_764_547_200_000_000;

/// The started and finished records of the call named for `kind`, decided by an example of it.
fn call(i: i64, kind: DeciderKind) -> Vec<StoredRecord> {
    let at = T0 + i * 1_000_000;
    let decided = serde_json::to_value(kind.example()).unwrap();
    let base = json!({"session_id": "s", "run_id": "r", "call_id": kind.as_str(), "owner": "agent",
        "tool": "shell", "redacted": false, "decided_by": decided, "policy_decision": "allow"});
    let record = |extra: serde_json::Value| {
        let mut r = base.clone();
        r.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        serde_json::from_value::<StoredRecord>(r).unwrap()
    };
    vec![
        record(json!({"id": 2 * i + 1, "kind": "started", "at": at - 500})),
        record(
            json!({"id": 2 * i + 2, "kind": "finished", "at": at, "started_at": at - 500, "duration_us": 500}),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_filter_on_each_decider_kind_finds_the_call_it_decided() {
    let (_pg, db, sink, _dir) = crate::team_with_sink();
    let records: Vec<StoredRecord> =
        DeciderKind::ALL.into_iter().enumerate().flat_map(|(i, k)| call(i as i64, k)).collect();
    sink.deliver(&records).await.unwrap();
    tokio::task::spawn_blocking(move || {
        let reader = TeamReader::open(&db).unwrap();
        let ids = |kinds: Vec<DeciderKind>| -> Vec<String> {
            let filter = CallFilter { decided_by: kinds, ..CallFilter::default() };
            reader.calls(&filter, None, 100).unwrap().calls.into_iter().map(|c| c.head.call_id).collect()
        };
        for kind in DeciderKind::ALL {
            assert_eq!(ids(vec![kind]), [kind.as_str()], "{kind}");
        }
        assert_eq!(
            ids(vec![DeciderKind::ProtectedPlace, DeciderKind::Registry]),
            ["registry", "protected_place"]
        );
    })
    .await
    .unwrap();
}
