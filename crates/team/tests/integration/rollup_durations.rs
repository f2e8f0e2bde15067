//! The parts of a team's stats read from histograms and counts by day rather than from every row: the
//! SQL bucket function agrees with the ledger's own, percentiles from the rollups' histograms stay
//! within the bound the stats promise, and sessions counted by day (as they open, end and ship again)
//! equal a count of the sessions.

use portcullis_ledger::durations::{RELATIVE_ERROR, bucket_of};
use portcullis_ledger::{CallFilter, RecordSink, SideRow, SideTable, StoredRecord};
use portcullis_team::testing::PrivatePostgres;
use portcullis_team::{PostgresSink, TeamDb, TeamReader};
use serde_json::json;

const HOUR: i64 = 3_600_000_000;
const T0: i64 = 1_764_547_200_000_000;

fn team() -> (PrivatePostgres, TeamDb, tempfile::TempDir) {
    let pg = PrivatePostgres::start();
    pg.create_db("team");
    let dir = tempfile::tempdir().unwrap();
    let db = pg.team_db("team", dir.path());
    (pg, db, dir)
}

/// Call `i`'s terminal record: 3 tools, durations spread over five orders of magnitude, 70 hours.
fn ended(i: i64) -> StoredRecord {
    let at = T0 + i * (70 * HOUR / 24_000) + 11;
    let duration = 3 + (i * 7919) % 100_000 * (1 + i % 10);
    let tool = ["shell", "read", "write"][(i % 3) as usize];
    serde_json::from_value(json!({
        "id": i + 1, "kind": "finished", "at": at, "started_at": at - duration, "duration_us": duration,
        "session_id": format!("s{}", i / 100), "run_id": "r", "call_id": format!("c{i}"), "owner": "agent",
        "tool": tool, "redacted": false,
        "decided_by": {"by": "rule", "rule_id": "r1", "source": "p.json"}, "policy_decision": "allow",
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn histogram_percentiles_stay_within_the_bound_and_the_sql_buckets_are_the_ledgers() {
    let (pg, db, _dir) = team();
    let sink = PostgresSink::new(db.clone());
    sink.bind("ledger-one");
    let records: Vec<StoredRecord> = (0..24_000).map(ended).collect();
    for batch in records.chunks(500) {
        sink.deliver(batch).await.unwrap();
    }
    // The SQL function reproduces `bucket_of` (powers of two, their neighbours, and a spread) for every
    // duration up to 2^40 µs (12 days; past that, floating-point rounding may move a duration at a
    // bucket's very edge into the next bucket: 2^48 - 1 µs does).
    let mut values: Vec<i64> = vec![0, 1, 2, 3, -1, -2];
    for k in 0..=40 {
        values.extend([(1i64 << k) - 1, 1i64 << k, (1i64 << k) + 1, -(1i64 << k)]);
    }
    values.extend((0..3_000).map(|i| i * 977 + i * i * i));
    let buckets = pg.sql(
        "team",
        &format!(
            "SELECT v, portcullis.duration_bucket(v) FROM unnest(ARRAY[{}]::bigint[]) AS v",
            values.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
        ),
    );
    for row in &buckets {
        let (v, b): (i64, i32) = (row[0].parse().unwrap(), row[1].parse().unwrap());
        assert_eq!(b, bucket_of(v), "duration {v}");
    }

    tokio::task::spawn_blocking(move || {
        let reader = TeamReader::open(&db).unwrap();
        let ranges = [(None, None), (Some(T0 + 3 * HOUR + 3), Some(T0 + 68 * HOUR + 9))];
        for (since, until) in ranges {
            let filter = CallFilter {
                since: since.map(portcullis_harness::Timestamp),
                until: until.map(portcullis_harness::Timestamp),
                ..CallFilter::default()
            };
            let rolled = reader.stats(&filter, Some(HOUR)).unwrap();
            let scanned = reader.stats_by_scan(&filter, Some(HOUR)).unwrap();
            assert!(!rolled.durations_exact, "{filter:?} {:?} {:?}", rolled.source, rolled.durations);
            assert!(scanned.durations_exact);
            assert_eq!(rolled.total, scanned.total);
            assert_eq!(rolled.buckets, scanned.buckets);
            assert_eq!(rolled.durations.len(), 3);
            for (r, s) in rolled.durations.iter().zip(&scanned.durations) {
                assert_eq!((&r.tool, r.count, r.max_us), (&s.tool, s.count, s.max_us));
                for (got, exact) in [(r.p50_us, s.p50_us), (r.p95_us, s.p95_us)] {
                    let error = (got - exact).abs() as f64;
                    assert!(error <= RELATIVE_ERROR * exact as f64 + 0.5, "{}: {got} for {exact}", r.tool);
                }
            }
        }
    })
    .await
    .unwrap();
}

/// Session `i` of `n` as the ledger's side table ships it: started on day `i % 3`, ended unless
/// `open`.
fn session(i: i64, open: bool) -> SideRow {
    let started = T0 + (i % 3) * 24 * HOUR + i * 1000;
    let row = json!({
        "id": format!("s{i}"), "client_name": "claude-code", "client_version": "2", "cwd": "/p",
        "policy_hash": null, "started_at": started,
        "ended_at": if open { None } else { Some(started + 5) },
        "end_reason": if open { None } else if i % 4 == 0 { Some("cut") } else { Some("closed") },
    });
    SideRow { cursor: i, row: row.as_object().unwrap().clone() }
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_counted_by_day_follow_them_as_they_end_and_ship_again() {
    let (_pg, db, _dir) = team();
    let sink = PostgresSink::new(db.clone());
    sink.bind("ledger-one");
    // Every session ships open, then most of them end, then a batch is sent again.
    let opened: Vec<SideRow> = (0..90).map(|i| session(i, true)).collect();
    sink.deliver_side(SideTable::Sessions, &opened).await.unwrap();
    let ended: Vec<SideRow> = (0..90).filter(|i| i % 5 != 0).map(|i| session(i, false)).collect();
    for batch in ended.chunks(17) {
        sink.deliver_side(SideTable::Sessions, batch).await.unwrap();
    }
    sink.deliver_side(SideTable::Sessions, &ended[..20]).await.unwrap();
    tokio::task::spawn_blocking(move || {
        let reader = TeamReader::open(&db).unwrap();
        let ranges = [
            (None, None),
            (Some(T0 + 24 * HOUR), None),
            (Some(T0 + 3 * HOUR), Some(T0 + 49 * HOUR)),
            (Some(T0 + 25 * HOUR), Some(T0 + 26 * HOUR)),
        ];
        for (since, until) in ranges {
            let filter = CallFilter {
                since: since.map(portcullis_harness::Timestamp),
                until: until.map(portcullis_harness::Timestamp),
                ..CallFilter::default()
            };
            let by_day = reader.stats(&filter, None).unwrap().sessions;
            let scanned = reader.stats_by_scan(&filter, None).unwrap().sessions;
            assert_eq!(by_day, scanned, "{since:?}..{until:?}");
        }
        let all = reader.stats(&CallFilter::default(), None).unwrap().sessions;
        assert_eq!((all.total, all.open), (90, 18));
        assert_eq!(all.cut + all.closed, 72);
    })
    .await
    .unwrap();
}
