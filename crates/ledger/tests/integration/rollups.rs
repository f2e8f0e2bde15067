//! Stats from the hourly rollups against stats by scan: over a generated ledger (random calls over several
//! days, every dimension varied, calls interrupted at close and by crash recovery), for random filters,
//! time bounds and bucket widths, every count, bucket and total is equal, and duration percentiles are
//! within the histograms' stated error. Also: the schema step that makes the rollups backfills them from
//! the records already there, and the approximate stats drop what the rollups do not keep.

// Test support code outside #[test] functions may unwrap and panic, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use portcullis_harness::{
    BlockedReason, CallContext, DecidedBy, Ledger, OperatorOutcome, PolicyDecision, PolicyRuling, RecordKind,
    Timestamp, ToolCallRecord,
};
use portcullis_ledger::durations::RELATIVE_ERROR;
use portcullis_ledger::rollup::HOUR_US;
use portcullis_ledger::schema::SCHEMA_VERSION;
use portcullis_ledger::stats::Stats;
use portcullis_ledger::{
    CallFilter, CallStatus, LedgerReader, SqliteLedger, StatsSource, StoredPolicyDecision,
};
use std::path::Path;
use std::sync::Arc;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize].clone()
    }
    /// A random subset, empty half the time.
    fn subset<T: Clone>(&mut self, items: &[T]) -> Vec<T> {
        if self.chance(50) {
            return Vec::new();
        }
        let picked: Vec<T> = items.iter().filter(|_| self.chance(40)).cloned().collect();
        if picked.is_empty() { vec![self.pick(items)] } else { picked }
    }
}

const TOOLS: [&str; 5] = ["shell", "read", "write", "mcp:github:list_prs", "edit"];
const OWNERS: [&str; 3] = ["claude", "codex", "cursor"];
const RULES: [&str; 4] = ["r0", "r1", "r2", "deploy"];
/// 2026-11-02 09:17:23 UTC, in µs: not on an hour.
const BEGIN: i64 = 1_793_610_243_000_000;
const DAYS: i64 = 4;

fn decider(rng: &mut Rng) -> DecidedBy {
    match rng.below(8) {
        0 | 1 => DecidedBy::DEFAULT,
        2..=4 => DecidedBy::Rule { rule_id: rng.pick(&RULES).into(), source: "project.json".into() },
        5 => DecidedBy::Operator {
            receipt: None,
            outcome: OperatorOutcome::ApprovedOnce,
            operator: Some("ann".into()),
            rule_written: None,
        },
        6 => DecidedBy::SessionGrant { grant_id: format!("g{}", rng.below(3)), receipt: None },
        _ => DecidedBy::ApprovalTimeout { after_ms: 5 },
    }
}

fn context(rng: &mut Rng, call: &str) -> Arc<CallContext> {
    Arc::new(CallContext {
        session_id: Arc::from(format!("s{}", rng.below(6))),
        run_id: Arc::from("run"),
        call_id: Arc::from(call),
        owner: Arc::from(rng.pick(&OWNERS)),
        cwd: None,
        mcp: None,
    })
}

/// A duration from 0 to ~10 s, spread over every order of magnitude.
fn duration(rng: &mut Rng) -> i64 {
    if rng.chance(3) {
        return 0;
    }
    let magnitude = 10f64.powf(rng.below(7000) as f64 / 1000.0);
    magnitude as i64
}

/// Writes `n` random calls from `BEGIN` over `DAYS` days, plus calls left running at close (interrupted
/// by the writer's close) and by a writer that "crashed" (interrupted by recovery on the next open).
async fn generate(path: &Path, n: usize, seed: u64) {
    let mut rng = Rng(seed);
    let ledger = SqliteLedger::open(path).unwrap();
    let span = DAYS * 24 * HOUR_US;
    for i in 0..n {
        let call = format!("c{i}");
        let ctx = context(&mut rng, &call);
        let tool: Arc<str> = Arc::from(rng.pick(&TOOLS));
        let decided = decider(&mut rng);
        let at = BEGIN + (rng.next() % span as u64) as i64;
        let policy = match rng.below(4) {
            0 => None,
            1 => Some(PolicyDecision::Allow),
            2 => Some(PolicyDecision::Ask),
            _ => Some(PolicyDecision::Deny),
        }
        .map(|decision| PolicyRuling {
            decision,
            decided_by: decided.clone(),
            files: Vec::new(),
            version: None,
        });
        let kind = match rng.below(10) {
            0..=1 => RecordKind::Blocked,
            2 => RecordKind::Error,
            _ => RecordKind::Finished,
        };
        let mut end = ToolCallRecord::new(kind, ctx.clone(), tool.clone(), decided.clone());
        end.policy = policy.clone();
        if kind == RecordKind::Blocked {
            end.at = Timestamp(at);
            end.blocked_reason = Some(rng.pick(&BlockedReason::ALL));
        } else {
            let mut begun = ToolCallRecord::new(RecordKind::Started, ctx, tool, decided);
            begun.at = Timestamp(at);
            begun.started_at = Some(Timestamp(at));
            begun.policy = policy;
            ledger.record(begun).await.unwrap();
            end.started_at = Some(Timestamp(at));
            end.at = Timestamp(at + duration(&mut rng));
        }
        ledger.record(end).await.unwrap();
    }
    // Left running: interrupted when this writer closes.
    for i in 0..20 {
        let at = BEGIN + (rng.next() % span as u64) as i64;
        ledger
            .record(started("s0", &format!("open-{i}"), rng.pick(&TOOLS), at, decider(&mut rng)))
            .await
            .unwrap();
    }
    ledger.close().await.unwrap();
    // A writer that never closed, with calls still open: interrupted by the next writer's recovery.
    {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute(
            "INSERT INTO writers(pid, opened_at, first_record) VALUES (1, 1, (SELECT max(id) + 1 FROM records))",
            [],
        )
        .unwrap();
        let writer: i64 = conn.query_row("SELECT max(id) FROM writers", [], |r| r.get(0)).unwrap();
        for i in 0..15 {
            let call = format!("crashed-{i}");
            conn.execute(
                "INSERT INTO records (writer_id, session_id, run_id, call_id, call_key, owner, tool, kind, at,
                     started_at, decided_by, decided_rule, redacted, body, policy_decision)
                 VALUES (?1, 's1', 'r', ?2, ?3, 'codex', ?4, 'started', ?5, ?5, 'rule', 'r1', 0,
                     '{\"decided_by\": {\"by\": \"rule\", \"rule_id\": \"r1\", \"source\": \"p\"}}', 'prompt')",
                rusqlite::params![
                    writer,
                    call,
                    portcullis_ledger::schema::call_key(&call),
                    rng.pick(&TOOLS),
                    BEGIN + (rng.next() % span as u64) as i64
                ],
            )
            .unwrap();
        }
    }
    let ledger = SqliteLedger::open(path).unwrap();
    assert_eq!(ledger.interrupted_on_open(), 15);
    ledger.close().await.unwrap();
}

/// The two answers agree: counts, buckets and totals equal; durations' counts and maxima equal, their
/// percentiles within the histograms' error of the exact ones.
fn assert_agree(rolled: &Stats, scanned: &Stats, case: &str) {
    assert_eq!(scanned.source, StatsSource::Scan, "{case}");
    assert!(scanned.durations_exact, "{case}");
    assert_eq!(rolled.total, scanned.total, "{case}");
    assert_eq!(rolled.by_tool, scanned.by_tool, "{case}");
    assert_eq!(rolled.by_status, scanned.by_status, "{case}");
    assert_eq!(rolled.by_reason, scanned.by_reason, "{case}");
    assert_eq!(rolled.by_decided_by, scanned.by_decided_by, "{case}");
    assert_eq!(rolled.by_rule, scanned.by_rule, "{case}");
    assert_eq!(rolled.by_owner, scanned.by_owner, "{case}");
    assert_eq!(rolled.by_policy_decision, scanned.by_policy_decision, "{case}");
    assert_eq!(rolled.bucket_us, scanned.bucket_us, "{case}");
    assert_eq!(rolled.buckets, scanned.buckets, "{case}");
    assert_eq!(rolled.sessions, scanned.sessions, "{case}");
    assert_eq!(rolled.refusals, scanned.refusals, "{case}");
    assert_eq!(rolled.durations.len(), scanned.durations.len(), "{case}");
    for (r, s) in rolled.durations.iter().zip(&scanned.durations) {
        assert_eq!((&r.tool, r.count, r.max_us), (&s.tool, s.count, s.max_us), "{case}");
        for (approx, exact) in [(r.p50_us, s.p50_us), (r.p95_us, s.p95_us)] {
            let bound = RELATIVE_ERROR * exact.abs() as f64 + 0.5;
            assert!(
                (approx - exact).abs() as f64 <= bound,
                "{case}: {approx} vs exact {exact} ({r:?} / {s:?})"
            );
        }
    }
    if rolled.source == StatsSource::Scan {
        assert!(rolled.durations_exact, "{case}");
    }
}

fn random_time(rng: &mut Rng) -> i64 {
    let from = BEGIN - 3 * HOUR_US;
    let at = from + (rng.next() % ((DAYS * 24 + 6) * HOUR_US) as u64) as i64;
    match rng.below(4) {
        0 => at - at.rem_euclid(HOUR_US), // on an hour
        1 => at - at.rem_euclid(60_000_000),
        _ => at,
    }
}

fn random_filter(rng: &mut Rng) -> CallFilter {
    let terminal = [CallStatus::Finished, CallStatus::Error, CallStatus::Blocked, CallStatus::Interrupted];
    let mut filter = CallFilter {
        tools: rng.subset(&TOOLS.map(String::from)),
        statuses: rng.subset(&terminal),
        reasons: if rng.chance(20) { rng.subset(&BlockedReason::ALL) } else { Vec::new() },
        decided_by: rng.subset(&portcullis_harness::DeciderKind::ALL),
        rule: if rng.chance(20) {
            Some(rng.pick(&["r0", "r1", "deploy", "g1", "nope"]).into())
        } else {
            None
        },
        policy_decisions: rng.subset(&StoredPolicyDecision::ALL),
        owners: rng.subset(&OWNERS.map(String::from)),
        ..CallFilter::default()
    };
    // Time bounds: none, one, both, a short window, one inside a single hour.
    match rng.below(6) {
        0 => {}
        1 => filter.since = Some(Timestamp(random_time(rng))),
        2 => filter.until = Some(Timestamp(random_time(rng))),
        3 => {
            let since = random_time(rng);
            filter.since = Some(Timestamp(since));
            filter.until = Some(Timestamp(since + (rng.below(5 * HOUR_US as u64) as i64)));
        }
        4 => {
            let since = random_time(rng);
            filter.since = Some(Timestamp(since));
            filter.until = Some(Timestamp(since + (rng.below(20 * 60_000_000) as i64)));
        }
        _ => {
            let (a, b) = (random_time(rng), random_time(rng));
            filter.since = Some(Timestamp(a.min(b)));
            filter.until = Some(Timestamp(a.max(b)));
        }
    }
    filter
}

fn random_bucket(rng: &mut Rng) -> Option<i64> {
    let minute = 60_000_000;
    rng.pick(&[
        None,
        None,
        None,
        Some(HOUR_US),
        Some(2 * HOUR_US),
        Some(86_400_000_000),
        Some(5 * minute),
        Some(7 * minute),
        Some(90 * minute),
    ])
}

#[tokio::test]
async fn stats_from_rollups_equal_stats_by_scan() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ledger");
    generate(&path, 3000, 0x5eed_0001).await;
    let reader = LedgerReader::open(&path).unwrap();

    // Everything, then random filters.
    let all = CallFilter::default();
    let rolled = reader.stats(&all, None).unwrap();
    // Few calls (under EXACT_DURATIONS_UP_TO): the rollups answer, the percentiles read exactly.
    assert_eq!((rolled.source, rolled.durations_exact), (StatsSource::Rollup, true));
    assert_eq!(rolled.total, 3000 + 20 + 15);
    assert_agree(&rolled, &reader.stats_by_scan(&all, None).unwrap(), "everything");

    let mut rng = Rng(0x00c0_ffee);
    let (mut from_rollups, mut empty) = (0, 0);
    for case in 0..400 {
        let filter = random_filter(&mut rng);
        let bucket = random_bucket(&mut rng);
        let what = format!("case {case}: {filter:?}, bucket {bucket:?}");
        let (rolled, scanned) = match (reader.stats(&filter, bucket), reader.stats_by_scan(&filter, bucket)) {
            (Ok(r), Ok(s)) => (r, s),
            (Err(r), Err(s)) => {
                assert_eq!(r.to_string(), s.to_string(), "{what}");
                continue;
            }
            (r, s) => panic!("{what}: {r:?} / {s:?}"),
        };
        assert_agree(&rolled, &scanned, &what);
        from_rollups += usize::from(rolled.source == StatsSource::Rollup);
        empty += usize::from(scanned.total == 0);
    }
    assert!(from_rollups > 200, "most cases were answered from the rollups ({from_rollups})");
    assert!(empty < 250, "most cases select calls ({empty} empty)");

    // What the rollups do not keep is scanned.
    for filter in [
        CallFilter { session: Some("s1".into()), ..CallFilter::default() },
        CallFilter { run: Some("run".into()), ..CallFilter::default() },
        CallFilter { search: Some("c1".into()), ..CallFilter::default() },
        CallFilter { statuses: vec![CallStatus::Running, CallStatus::Finished], ..CallFilter::default() },
    ] {
        assert_eq!(reader.stats(&filter, None).unwrap().source, StatsSource::Scan, "{filter:?}");
    }
}

#[tokio::test]
async fn the_schema_step_that_makes_the_rollups_backfills_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.ledger");
    generate(&path, 800, 0x5eed_0002).await;
    let before = LedgerReader::open(&path).unwrap().stats(&CallFilter::default(), Some(HOUR_US)).unwrap();
    // Back to the schema before the rollups, records kept.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DROP INDEX calls_changes; DROP INDEX calls_contained; ALTER TABLE records DROP COLUMN changes;
             ALTER TABLE records DROP COLUMN contained;
             DROP TABLE side_chain; DROP TABLE side_chain_state; DROP TABLE side_checkpoints;
             DROP TABLE chain_marks;
             DROP TABLE chain_state; DROP TABLE chain_checkpoints; ALTER TABLE records DROP COLUMN chain;
             ALTER TABLE approvals DROP COLUMN receipt;
             DROP TABLE call_hours; DROP TABLE call_days; DROP TABLE call_keys; DROP TABLE journal_state;
             DROP TABLE tool_pins; DROP TABLE tool_pin_events; DROP TABLE effects; DROP TABLE effect_marks;
             DROP TRIGGER sessions_inserted; DROP TRIGGER sessions_updated; DROP TRIGGER approvals_inserted;
             DROP TRIGGER approvals_updated; DROP TRIGGER refusals_inserted; DROP TRIGGER refusals_updated;
             DROP INDEX sessions_changed; DROP INDEX approvals_changed; DROP INDEX refusals_changed;
             ALTER TABLE sessions DROP COLUMN changed; ALTER TABLE approvals DROP COLUMN changed;
             ALTER TABLE refusals DROP COLUMN changed; DROP TABLE ledger_identity; DROP TABLE change_clock;
             PRAGMA user_version = 6;",
        )
        .unwrap();
    }
    assert!(LedgerReader::open(&path).is_err(), "readers refuse the older schema");
    let ledger = SqliteLedger::open(&path).unwrap();
    // And the writer keeps them after the migration.
    ledger
        .record(blocked("s9", "late", "read", BEGIN + 5, BlockedReason::ToolDenied, DecidedBy::DEFAULT))
        .await
        .unwrap();
    ledger.close().await.unwrap();
    let reader = LedgerReader::open(&path).unwrap();
    assert_eq!(reader.check().unwrap().schema_version, SCHEMA_VERSION);
    let after = reader.stats(&CallFilter::default(), Some(HOUR_US)).unwrap();
    assert_eq!(after.source, StatsSource::Rollup);
    assert_eq!(after.total, before.total + 1);
    assert_agree(&after, &reader.stats_by_scan(&CallFilter::default(), Some(HOUR_US)).unwrap(), "migrated");
}

#[tokio::test]
async fn approximate_stats_drop_what_the_rollups_do_not_keep() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.ledger");
    generate(&path, 600, 0x5eed_0003).await;
    let reader = LedgerReader::open(&path).unwrap();
    let since = BEGIN + 5 * HOUR_US + 123;
    let until = BEGIN + 30 * HOUR_US + 456;
    let narrow = CallFilter {
        session: Some("s2".into()),
        search: Some("anything".into()),
        tools: vec!["shell".into()],
        statuses: vec![CallStatus::Running, CallStatus::Finished],
        since: Some(Timestamp(since)),
        until: Some(Timestamp(until)),
        ..CallFilter::default()
    };
    let approximate = reader.stats_approximate(&narrow, None).unwrap();
    // The same as the exact stats of the filter without them, over whole hours rounded outward.
    let widened = CallFilter {
        tools: vec!["shell".into()],
        statuses: vec![CallStatus::Finished],
        since: Some(Timestamp(since - since.rem_euclid(HOUR_US))),
        until: Some(Timestamp(until - until.rem_euclid(HOUR_US) + HOUR_US)),
        ..CallFilter::default()
    };
    let exact = reader.stats_by_scan(&widened, Some(approximate.bucket_us)).unwrap();
    assert_eq!(approximate.source, StatsSource::Rollup);
    assert_eq!(approximate.bucket_us % HOUR_US, 0, "whole hours");
    assert!(approximate.total > 0);
    assert_eq!((approximate.total, &approximate.by_tool), (exact.total, &exact.by_tool));
    assert_eq!(approximate.by_owner, exact.by_owner);
    assert_eq!(approximate.buckets.iter().map(|b| b.count).sum::<u64>(), exact.total);
    let only_running = CallFilter { statuses: vec![CallStatus::Running], ..CallFilter::default() };
    assert_eq!(
        reader.stats_approximate(&only_running, None).unwrap().total,
        0,
        "running calls are not rolled up"
    );
    // A five-minute width becomes an hour.
    assert_eq!(
        reader.stats_approximate(&CallFilter::default(), Some(300_000_000)).unwrap().bucket_us,
        HOUR_US
    );
}
