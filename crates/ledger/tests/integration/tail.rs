//! The ledger's tail feeds further sinks from the committed records: each sink gets every record once
//! in id order, from its own cursor; a failing sink is retried without losing or repeating records and
//! without holding the others back; the cursors survive a restart, so a sink resumes where it stopped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{finished, rule};
use async_trait::async_trait;
use portcullis_harness::Ledger as _;
use portcullis_ledger::{LedgerTail, RecordSink, SinkCursors, SqliteLedger, StoredRecord};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Keeps what it was given; refuses the first `fail_first` deliveries.
struct Kept {
    name: String,
    ids: Mutex<Vec<i64>>,
    fail_first: AtomicUsize,
}

impl Kept {
    fn new(name: &str, fail_first: usize) -> Arc<Kept> {
        Arc::new(Kept { name: name.into(), ids: Mutex::default(), fail_first: AtomicUsize::new(fail_first) })
    }

    fn ids(&self) -> Vec<i64> {
        self.ids.lock().unwrap().clone()
    }
}

#[async_trait]
impl RecordSink for Kept {
    fn name(&self) -> &str {
        &self.name
    }

    async fn deliver(&self, records: &[StoredRecord]) -> Result<(), String> {
        if self.fail_first.load(Ordering::SeqCst) > 0 {
            self.fail_first.fetch_sub(1, Ordering::SeqCst);
            return Err("the far end is down".into());
        }
        self.ids.lock().unwrap().extend(records.iter().map(|r| r.id));
        Ok(())
    }
}

async fn write(path: &Path, from: usize, n: usize) {
    let ledger = SqliteLedger::open(path).unwrap();
    for i in from..from + n {
        ledger.record(finished("s1", &format!("c{i}"), "shell", i as i64 + 1, 1, rule("r"))).await.unwrap();
    }
    ledger.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sink_gets_every_record_once_in_order_and_a_failing_one_catches_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    write(&path, 0, 1200).await;
    let healthy = Kept::new("healthy", 0);
    let flaky = Kept::new("flaky", 2);
    let sinks: Vec<Arc<dyn RecordSink>> = vec![healthy.clone(), flaky.clone()];
    let mut tail = LedgerTail::open(&path, sinks).unwrap();
    // The healthy sink is fed in batches while the flaky one rests after each failure.
    while healthy.ids().len() < 1200 {
        tail.pump().await;
    }
    assert!(flaky.ids().is_empty(), "the flaky sink is still resting");
    let expected: Vec<i64> = (1..=1200).collect();
    assert_eq!(healthy.ids(), expected);
    tokio::time::sleep(Duration::from_millis(600)).await;
    tail.pump().await; // its second failure
    tokio::time::sleep(Duration::from_millis(1100)).await;
    while flaky.ids().len() < 1200 {
        tail.pump().await;
    }
    assert_eq!(flaky.ids(), expected, "nothing lost, nothing repeated");
    let cursors = SinkCursors::load(&SinkCursors::file_of(&path)).unwrap();
    assert_eq!(cursors.0.get("healthy"), Some(&1200));
    assert_eq!(cursors.0.get("flaky"), Some(&1200));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_resumes_after_a_restart_from_its_saved_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    write(&path, 0, 10).await;
    let first = Kept::new("team", 0);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(LedgerTail::open(&path, vec![first.clone()]).unwrap().run(async move {
        let _ = stopped.await;
    }));
    stop.send(()).unwrap();
    running.await.unwrap();
    assert_eq!(first.ids().len(), 10, "the last round delivers what was committed before the stop");
    // More calls while no tail runs, then a new tail of the same sink: only the new records.
    write(&path, 10, 5).await;
    let again = Kept::new("team", 0);
    let mut tail = LedgerTail::open(&path, vec![again.clone()]).unwrap();
    tail.pump().await;
    assert_eq!(again.ids(), (11..=15).collect::<Vec<i64>>());
    // A new sink starts from the beginning.
    let newcomer = Kept::new("otel", 0);
    let mut tail = LedgerTail::open(&path, vec![newcomer.clone()]).unwrap();
    tail.pump().await;
    assert_eq!(newcomer.ids().len(), 15);
    assert_eq!(SinkCursors::load(&SinkCursors::file_of(&path)).unwrap().0.get("team"), Some(&15));
}

#[test]
fn unreadable_cursors_are_refused_not_reset() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ledger.db.sinks.json");
    std::fs::write(&file, "{ not json").unwrap();
    assert!(SinkCursors::load(&file).is_err());
    assert_eq!(SinkCursors::file_of(&dir.path().join("ledger.db")), file);
}

/// Keeps the side rows it was given, by table (and takes every record).
struct SideKept {
    rows: Mutex<Vec<(portcullis_ledger::SideTable, serde_json::Value)>>,
    bound: Mutex<Option<String>>,
}

#[async_trait]
impl RecordSink for SideKept {
    fn name(&self) -> &str {
        "side"
    }

    fn side_tables(&self) -> &[portcullis_ledger::SideTable] {
        &portcullis_ledger::SideTable::ALL
    }

    fn bind(&self, ledger_id: &str) {
        *self.bound.lock().unwrap() = Some(ledger_id.to_owned());
    }

    async fn deliver(&self, _records: &[StoredRecord]) -> Result<(), String> {
        Ok(())
    }

    async fn deliver_side(
        &self,
        table: portcullis_ledger::SideTable,
        rows: &[portcullis_ledger::SideRow],
    ) -> Result<(), String> {
        let mut kept = self.rows.lock().unwrap();
        kept.extend(rows.iter().map(|r| (table, serde_json::Value::Object(r.row.clone()))));
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_and_approvals_ship_and_ship_again_when_they_change() {
    use portcullis_harness::Timestamp;
    use portcullis_ledger::{ApprovalOutcome, ApprovalRecord, SessionInfo, SideTable};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let ledger = SqliteLedger::open(&path).unwrap();
    let session = |id: &str| SessionInfo {
        id: id.into(),
        client_name: Some("agent".into()),
        client_version: None,
        cwd: Some("/p".into()),
        policy_hash: None,
        started_at: Timestamp(10),
        ended_at: None,
    };
    ledger.begin_session(session("s1")).await.unwrap();
    ledger.begin_session(session("s2")).await.unwrap();
    ledger
        .record_approval(ApprovalRecord {
            receipt: None,
            session_id: "s1".into(),
            call_id: "c1".into(),
            tool: "shell".into(),
            requested_at: Timestamp(11),
            resolved_at: Some(Timestamp(12)),
            outcome: Some(ApprovalOutcome::ApprovedOnce),
            operator: Some("ana".into()),
            note: None,
            rule_written: None,
        })
        .await
        .unwrap();
    ledger.flush().await.unwrap();
    let sink = Arc::new(SideKept { rows: Mutex::default(), bound: Mutex::default() });
    let mut tail = LedgerTail::open(&path, vec![sink.clone()]).unwrap();
    let lags = tail.lags();
    tail.pump().await;
    assert_eq!(sink.bound.lock().unwrap().as_deref().map(str::len), Some(32), "bound to the ledger's id");
    let kept = sink.rows.lock().unwrap().clone();
    let sessions: Vec<_> = kept.iter().filter(|(t, _)| *t == SideTable::Sessions).collect();
    assert_eq!(sessions.len(), 2, "{kept:?}");
    assert!(sessions.iter().all(|(_, r)| r["ended_at"].is_null()));
    let approvals: Vec<_> = kept.iter().filter(|(t, _)| *t == SideTable::Approvals).collect();
    assert_eq!(approvals[0].1["operator"], "ana");
    assert_eq!(lags.lock().unwrap()[0].rows_behind, 0);

    // s1 ends: its row changed, and only it ships again; nothing else is sent twice.
    ledger.end_session("s1", Timestamp(20)).await.unwrap();
    ledger.flush().await.unwrap();
    sink.rows.lock().unwrap().clear();
    tail.pump().await;
    let again = sink.rows.lock().unwrap().clone();
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].1["id"], "s1");
    assert_eq!(again[0].1["ended_at"], 20);
    assert_eq!(again[0].1["end_reason"], "closed");
    ledger.close().await.unwrap();
}
