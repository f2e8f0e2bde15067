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
