//! A call with a side effect never runs unrecorded: its `started` row is committed before the tool
//! begins. A child process dispatches calls of a tool whose first act is to create a marker file named
//! after its call, and is killed with SIGKILL — by the parent at a random moment, or by the tool itself
//! right after it made its marker. After each kill, every marker file must have its `started` row.
//!
//! The child is this test binary itself, re-run with `--exact durable_start_child` and its settings in
//! environment variables; without them `durable_start_child` does nothing.

// Test support code outside #[test] functions may unwrap, panic and print, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

use async_trait::async_trait;
use portcullis_harness::{
    ActionKind, CallContext, Dispatcher, ExecutionAction, RunContext, Tool, ToolCall, ToolError,
    ToolInvocation, ToolOutput, ToolRegistry, ToolSpec,
};
use portcullis_ledger::{LedgerReader, SqliteLedger, StoredKind};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const CHILD_LEDGER: &str = "PORTCULLIS_DURABLE_CHILD_LEDGER";
const CHILD_MARKERS: &str = "PORTCULLIS_DURABLE_CHILD_MARKERS";
const CHILD_ROUND: &str = "PORTCULLIS_DURABLE_CHILD_ROUND";
/// The tool kills its own process right after making the marker of this many-th call (absent: the
/// parent kills the child).
const CHILD_KILL_AT: &str = "PORTCULLIS_DURABLE_CHILD_KILL_AT";
const SESSION: &str = "durable";
/// Concurrent callers in the child.
const TASKS: usize = 4;

/// Creates `<markers>/<call id>` first thing, then answers.
struct MarkerTool {
    spec: ToolSpec,
    markers: PathBuf,
    executed: AtomicU64,
    kill_at: Option<u64>,
}

#[async_trait]
impl Tool for MarkerTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe_action(&self, _: &Value, call: &CallContext) -> Result<ExecutionAction, ToolError> {
        let path = self.markers.join(&*call.call_id);
        Ok(ExecutionAction::new(ActionKind::Write, "write").with_paths(vec![path]))
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let path = self.markers.join(&*invocation.call.call_id);
        std::fs::File::create(&path).map_err(|e| ToolError::failed(e.to_string()))?;
        let n = self.executed.fetch_add(1, Ordering::SeqCst) + 1;
        if self.kill_at == Some(n) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGKILL);
        }
        Ok(ToolOutput::text("marked"))
    }
}

async fn dispatch_until_killed(ledger: &str, markers: PathBuf, round: String, kill_at: Option<u64>) {
    let ledger = Arc::new(SqliteLedger::open(ledger).unwrap());
    let mut registry = ToolRegistry::new();
    let spec = ToolSpec::new("marker", "Creates a marker file named after the call");
    registry.register(Arc::new(MarkerTool { spec, markers, executed: AtomicU64::new(0), kill_at })).unwrap();
    let dispatcher = Dispatcher::builder(registry).ledger(ledger).build();
    println!("ready");
    std::io::stdout().flush().unwrap();
    // A child left behind by a broken parent stops by itself.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let dispatcher = dispatcher.clone();
        let round = round.clone();
        tasks.push(tokio::spawn(async move {
            let run = RunContext::new(SESSION, format!("r{round}-t{t}"));
            for i in 0u64.. {
                if Instant::now() > deadline {
                    return;
                }
                let call = ToolCall::new(format!("r{round}-t{t}-c{i}"), "marker", json!({}));
                dispatcher.dispatch(call, &run).await;
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
}

#[test]
fn durable_start_child() {
    let (Ok(ledger), Ok(markers), Ok(round)) =
        (std::env::var(CHILD_LEDGER), std::env::var(CHILD_MARKERS), std::env::var(CHILD_ROUND))
    else {
        return;
    };
    let kill_at = std::env::var(CHILD_KILL_AT).ok().and_then(|n| n.parse().ok());
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(dispatch_until_killed(&ledger, PathBuf::from(markers), round, kill_at));
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

/// Runs one child until it is killed (by itself at call `kill_at`, else by us after `kill_after`).
fn run_child(ledger: &PathBuf, markers: &PathBuf, round: usize, kill_at: Option<u64>, kill_after: Duration) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "durable_start::durable_start_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_LEDGER, ledger)
        .env(CHILD_MARKERS, markers)
        .env(CHILD_ROUND, round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(n) = kill_at {
        command.env(CHILD_KILL_AT, n.to_string());
    }
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // libtest may print "test durable_start_child ... " on the same line.
            if line.ends_with("ready") {
                let _ = ready_tx.send(());
            }
        }
    });
    if ready_rx.recv_timeout(Duration::from_secs(30)).is_err() {
        let _ = child.kill();
        panic!("round {round}: the child never became ready");
    }
    if kill_at.is_some() {
        // The tool kills the child; give up after a while.
        let began = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if began.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                panic!("round {round}: the child did not kill itself");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    } else {
        std::thread::sleep(kill_after);
        child.kill().unwrap(); // SIGKILL
    }
    child.wait().unwrap();
    reader.join().unwrap();
}

#[test]
fn every_call_that_began_executing_has_a_durable_started_row() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("durable.ledger");
    let seed = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    let mut rng = Rng(seed);
    let rounds = 12;
    let mut markers_seen = 0usize;
    let mut missing: Vec<String> = Vec::new();
    for round in 0..rounds {
        let markers = dir.path().join(format!("markers-{round}"));
        std::fs::create_dir(&markers).unwrap();
        // Even rounds: the tool kills its process right after making a marker; odd rounds: we kill it
        // at a random moment.
        let kill_at = (round % 2 == 0).then(|| 1 + rng.next() % 400);
        run_child(&ledger, &markers, round, kill_at, Duration::from_millis(20 + rng.next() % 300));

        // Recovery, then the check: a started row for every marker.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async { SqliteLedger::open(&ledger).unwrap().close().await.unwrap() });
        let reader = LedgerReader::open(&ledger).unwrap();
        let mut round_missing = 0;
        for entry in std::fs::read_dir(&markers).unwrap() {
            let call = entry.unwrap().file_name().to_string_lossy().into_owned();
            markers_seen += 1;
            let kinds: Vec<StoredKind> =
                reader.timeline(&call, Some(SESSION)).unwrap().records.iter().map(|r| r.kind).collect();
            if kinds.first() != Some(&StoredKind::Started) {
                round_missing += 1;
                missing.push(format!("round {round}: {call} executed, ledger has {kinds:?}"));
            }
        }
        println!("round {round} (kill_at {kill_at:?}): {round_missing} executed calls without a started row");
    }
    assert!(markers_seen > 0, "no call ever executed (seed {seed})");
    assert!(missing.is_empty(), "seed {seed}: {} calls ran unrecorded: {missing:#?}", missing.len());
}
