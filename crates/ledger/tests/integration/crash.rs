//! Crash safety: a writer process is killed with SIGKILL at random moments, again and again, on the same
//! ledger. Each time the ledger opens, passes `PRAGMA integrity_check`, holds every record the child
//! had seen flushed, shows the calls the kill cut off as `interrupted`, and its hourly rollups agree with
//! its records, and its hash chain verifies, every record sealed with the key. Even rounds wait for durability only (`flush_durable`: the journal), so the kill finds
//! rows the indexer had not moved into SQLite yet and the next open replays them; odd rounds wait until
//! SQLite has them (`flush`).
//!
//! The child is this test binary itself, re-run with `--exact crash_child` and the ledger path in an
//! environment variable; without that variable `crash_child` does nothing.

// Test support code outside #[test] functions may unwrap, panic and print, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

use crate::common::*;
use portcullis_harness::{DecidedBy, Ledger};
use portcullis_ledger::{
    CallFilter, CallStatus, LedgerKey, LedgerOptions, LedgerReader, SqliteLedger, StoredKind, Verdict,
};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const CHILD_LEDGER: &str = "PORTCULLIS_CRASH_CHILD_LEDGER";
const CHILD_ROUND: &str = "PORTCULLIS_CRASH_CHILD_ROUND";

/// Calls `r{round}-c{i}`: a started record each, a finished record unless `i % 3 == 0` (those stay
/// open and must come back as interrupted). Every 25 calls: flush (durable only in even rounds), then
/// print `flushed {i}`.
async fn write_until_killed(path: &str, round: &str) {
    let durable_only = round.parse::<u64>().unwrap() % 2 == 0;
    let ledger = SqliteLedger::open_signed(path, LedgerOptions::default(), Some(Arc::new(key()))).unwrap();
    println!("ready");
    std::io::stdout().flush().unwrap();
    // A child left behind by a broken parent stops by itself.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    for i in 0u64.. {
        if i % 1000 == 0 && std::time::Instant::now() > deadline {
            return;
        }
        let call = format!("r{round}-c{i}");
        let at = i as i64;
        ledger.record(started("crash", &call, "shell", at, DecidedBy::DEFAULT)).await.unwrap();
        if i % 3 != 0 {
            ledger.record(finished("crash", &call, "shell", at, 1, DecidedBy::DEFAULT)).await.unwrap();
        }
        if i % 25 == 24 {
            if durable_only {
                ledger.flush_durable().await.unwrap();
            } else {
                ledger.flush().await.unwrap();
            }
            println!("flushed {i}");
            std::io::stdout().flush().unwrap();
        }
        if i % 50 == 0 {
            tokio::task::yield_now().await;
        }
    }
}

#[test]
fn crash_child() {
    let (Ok(path), Ok(round)) = (std::env::var(CHILD_LEDGER), std::env::var(CHILD_ROUND)) else { return };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(write_until_killed(&path, &round));
}

/// The key the child and the recoveries sign with.
fn key() -> LedgerKey {
    LedgerKey::from_seed([42; 32])
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn sigkill_at_random_moments_loses_nothing_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.ledger");
    let seed = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    let mut rng = Rng(seed);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let rounds = 12;
    let mut interrupted_total = 0;
    let mut replayed_total = 0;
    for round in 0..rounds {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "crash::crash_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_LEDGER, &path)
            .env(CHILD_ROUND, round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if lines_tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Wait until the child is writing, then kill it at a random moment (0-400 ms later).
        let started = Instant::now();
        loop {
            let left = Duration::from_secs(30).saturating_sub(started.elapsed());
            match lines_rx.recv_timeout(left) {
                // libtest may print "test crash_child ... " on the same line.
                Ok(line) if line.ends_with("ready") => break,
                Ok(_) => {}
                Err(e) => {
                    let _ = child.kill();
                    panic!("round {round}: child never became ready ({e})");
                }
            }
        }
        std::thread::sleep(Duration::from_millis(rng.next() % 400));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();
        let flushed: Option<u64> =
            lines_rx.try_iter().filter_map(|l| l.strip_prefix("flushed ").and_then(|n| n.parse().ok())).max();
        let alive = started.elapsed();

        // Recovery: the next writer opens the file, marks the cut-off calls interrupted.
        let recovered = runtime.block_on(async {
            let ledger =
                SqliteLedger::open_signed(&path, LedgerOptions::default(), Some(Arc::new(key()))).unwrap();
            let n = (ledger.interrupted_on_open(), ledger.replayed_on_open());
            ledger.close().await.unwrap();
            n
        });
        let (recovered, replayed) = recovered;
        interrupted_total += recovered;
        replayed_total += replayed;
        println!(
            "round {round}: alive {alive:?}, flushed up to {flushed:?}, replayed from the journal {replayed}, interrupted on open {recovered}"
        );
        let reader = LedgerReader::open(&path).unwrap();
        let report = reader.check().unwrap();
        assert!(report.integrity_ok, "round {round}: {report:?}");
        assert!(report.healthy(), "round {round}: {report:?}");
        assert_eq!(report.open_calls, 0, "round {round}: every started call has an end");
        assert_eq!(report.unclosed_writers, 0);
        // The chain holds through the kill and the recovery, and every record is sealed with the key.
        let verified = reader.verify(&key().public()).unwrap();
        assert_eq!(verified.verdict, Verdict::Intact, "round {round}: {verified:?}");
        assert_eq!(verified.chained, report.records, "round {round}");
        assert_eq!(verified.sealed, verified.chained, "round {round}");

        // Every record the child saw flushed is there.
        if let Some(last) = flushed {
            let prefix = format!("r{round}-c");
            for i in 0..=last {
                let call = format!("{prefix}{i}");
                let kinds: Vec<StoredKind> =
                    reader.timeline(&call, Some("crash")).unwrap().records.iter().map(|r| r.kind).collect();
                let want = if i % 3 == 0 {
                    [StoredKind::Started, StoredKind::Interrupted]
                } else {
                    [StoredKind::Started, StoredKind::Finished]
                };
                assert_eq!(kinds, want, "round {round}: call {call} (flushed up to {last}, alive {alive:?})");
            }
        }
        // Every interrupted record is one a recovery reported: none lost, none doubled.
        let interrupted = reader
            .count(&CallFilter { statuses: vec![CallStatus::Interrupted], ..CallFilter::default() })
            .unwrap();
        assert_eq!(interrupted, interrupted_total, "round {round}");
        // The hourly rollups were kept in the same transactions as the records: they still agree.
        let rolled = reader.stats(&CallFilter::default(), None).unwrap();
        let scanned = reader.stats_by_scan(&CallFilter::default(), None).unwrap();
        assert_eq!(rolled.source, portcullis_ledger::StatsSource::Rollup);
        assert_eq!(
            (rolled.total, &rolled.by_status, &rolled.buckets),
            (scanned.total, &scanned.by_status, &scanned.buckets),
            "round {round}"
        );
    }
    assert!(interrupted_total > 0, "some calls were cut off (seed {seed})");
    assert!(replayed_total > 0, "some kills found rows only in the journal (seed {seed})");
}
