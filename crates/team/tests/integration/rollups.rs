//! The team ledger's rollups (hourly per hub, and per dimension by hour and by day across hubs): kept
//! by the sinks as records arrive (a batch sent again adds nothing, two hubs shipping at once lose
//! nothing), and stats from them equal stats from the records, over any time range and bucket width.

use portcullis_ledger::{CallFilter, RecordSink, StoredRecord};
use portcullis_team::{PostgresSink, TeamReader};
use serde_json::json;

const HOUR: i64 = 3_600_000_000;
const T0: i64 = 1_764_547_200_000_000;

/// Call `i`: a started and a terminal record, spread over 80 hours (three days and a part), of 3 tools
/// and 3 outcomes.
fn call(i: i64) -> Vec<StoredRecord> {
    let at = T0 + i * (80 * HOUR / 600) + 17;
    let tool = ["shell", "read", "write"][(i % 3) as usize];
    let (kind, decided, reason) = match i % 5 {
        0 => ("blocked", json!({"by": "default"}), Some("execution_denied")),
        1 => ("error", json!({"by": "rule", "rule_id": "r1", "source": "p.json"}), None),
        _ => ("finished", json!({"by": "rule", "rule_id": "r2", "source": "p.json"}), None),
    };
    let base = json!({"session_id": format!("s{}", i / 50), "run_id": "r", "call_id": format!("c{i}"),
        "owner": "agent", "tool": tool, "redacted": false});
    let mut started = base.clone();
    started.as_object_mut().unwrap().extend(
        json!({"id": 2 * i + 1, "kind": "started", "at": at - 500, "decided_by": decided,
               "arguments": {"command": format!("echo word{}", i % 7)},
               "policy_decision": if i % 4 == 0 { "prompt" } else { "allow" }})
        .as_object()
        .unwrap()
        .clone(),
    );
    let mut end = base;
    end.as_object_mut().unwrap().extend(
        json!({"id": 2 * i + 2, "kind": kind, "at": at, "started_at": at - 500,
               "duration_us": if kind == "blocked" { None } else { Some(100 + i * 13 % 900) },
               "reason": reason, "decided_by": decided,
               "policy_decision": if i % 4 == 0 { "prompt" } else { "allow" }})
        .as_object()
        .unwrap()
        .clone(),
    );
    vec![serde_json::from_value(started).unwrap(), serde_json::from_value(end).unwrap()]
}

#[tokio::test(flavor = "multi_thread")]
async fn stats_from_rollups_equal_stats_from_records_and_a_batch_sent_again_adds_nothing() {
    let (pg, db, sink, _dir) = crate::team_with_sink();
    let other = PostgresSink::new(db.clone());
    other.bind("ledger-two");
    let records: Vec<StoredRecord> = (0..400).flat_map(call).collect();
    let others: Vec<StoredRecord> = (400..600).flat_map(call).collect();
    // Two hubs at once, into the same per-dimension rows.
    let one = async {
        for batch in records.chunks(97) {
            sink.deliver(batch).await.unwrap();
        }
    };
    let two = async {
        for batch in others.chunks(31) {
            other.deliver(batch).await.unwrap();
        }
    };
    tokio::join!(one, two);
    // At least once: the last batches again (a crash before the cursor moved).
    for batch in records[500..].chunks(97) {
        sink.deliver(batch).await.unwrap();
    }
    assert_eq!(pg.count("team", "SELECT sum(calls)::bigint FROM portcullis.call_hours"), 600);
    for table in ["call_dim_hours", "call_dim_days"] {
        assert_eq!(
            pg.count("team", &format!("SELECT sum(calls)::bigint FROM portcullis.{table} WHERE dim = 'hub'")),
            600,
            "{table}"
        );
    }
    let found = pg.count(
        "team",
        "SELECT count(*) FROM portcullis.records WHERE search @@ plainto_tsquery('simple', 'word3')",
    );
    assert_eq!(
        found,
        (0..600).filter(|i| i % 7 == 3).count() as i64,
        "every ended call has its search document"
    );

    let reader = tokio::task::spawn_blocking(move || {
        let reader = TeamReader::open(&db).unwrap();
        let ranges = [
            (None, None),
            (Some(T0 + 3 * HOUR + 5), Some(T0 + 20 * HOUR + 7)),
            (Some(T0 + 4 * HOUR), Some(T0 + 6 * HOUR)),
            (Some(T0 + 4 * HOUR + 10), Some(T0 + 4 * HOUR + 20_000_000)),
            (Some(T0 + 20 * HOUR + 5), Some(T0 + 70 * HOUR + 7)),
            (Some(T0 + 24 * HOUR), None),
            (None, Some(T0 + 48 * HOUR + 1)),
            (Some(T0 + 23 * HOUR), Some(T0 + 49 * HOUR)),
        ];
        let hub_two = CallFilter { hubs: vec!["ledger-two".into()], ..CallFilter::default() };
        let filters = ranges
            .iter()
            .map(|&(since, until)| CallFilter {
                since: since.map(portcullis_harness::Timestamp),
                until: until.map(portcullis_harness::Timestamp),
                ..CallFilter::default()
            })
            .chain([hub_two]);
        for filter in filters {
            for bucket in [None, Some(HOUR), Some(3 * HOUR), Some(24 * HOUR)] {
                let rolled = reader.stats(&filter, bucket).unwrap();
                let scanned = reader.stats_by_scan(&filter, bucket).unwrap();
                let strip = |mut s: portcullis_ledger::Stats| {
                    s.source = Default::default();
                    s
                };
                // Read from the rollups when the buckets are whole hours (from the ledger's first hour)
                // and the range holds one.
                let hours = filter.since.zip(filter.until).is_none_or(|(s, u)| u.0 - s.0 >= 2 * HOUR);
                if hours && matches!(bucket, Some(HOUR)) {
                    assert_eq!(
                        rolled.source,
                        portcullis_ledger::StatsSource::Rollup,
                        "{filter:?} by {bucket:?}"
                    );
                }
                assert_eq!(strip(rolled), strip(scanned), "{filter:?} by {bucket:?}");
            }
        }
        let tools = CallFilter {
            tools: vec!["shell".into()],
            hubs: vec!["ledger-one".into()],
            ..CallFilter::default()
        };
        let rolled = reader.stats(&tools, None).unwrap();
        assert_eq!(rolled.source, portcullis_ledger::StatsSource::Rollup);
        assert_eq!(rolled.total, 134);
        assert_eq!(rolled.by_host.len(), 1);
        let everything = reader.stats(&CallFilter::default(), None).unwrap();
        assert_eq!(everything.total, 600);
        assert_eq!(everything.by_hub.len(), 2);
        reader
    })
    .await
    .unwrap();
    drop(reader);
}
