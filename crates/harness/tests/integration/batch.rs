//! `Dispatcher::dispatch_batch`: results in call order whatever the completion order, at most N calls
//! in flight (one when the batch holds an exclusive tool), cancellation and failure stop the claiming
//! (claimed calls settle, unclaimed ones get `tool_call_not_dispatched`), blocked calls and panics do
//! not take the batch down, and every call id gets exactly one result and one terminal ledger record.
//!
//! Where an interleaving matters it is forced with barriers (wait until k calls started / finished,
//! wait for the run's cancellation, wait for a turn) rather than left to sleep durations, so the
//! tests hold on a loaded machine too.

// The helpers below are test code too: they unwrap and panic like the tests do.
#![allow(clippy::unwrap_used, clippy::panic)]

use async_trait::async_trait;
use portcullis_harness::CallErrorCode;
use portcullis_harness::batch::MAX_TOOL_CONCURRENCY;
use portcullis_harness::{
    BatchOptions, BlockedReason, CallOutcome, DecidedBy, Dispatcher, MemoryLedger, RecordKind, RunContext,
    Tool, ToolCall, ToolCallResult, ToolError, ToolInvocation, ToolOutput, ToolRegistry, ToolSpec,
};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

// ---------------------------------------------------------------------------------------------------
// fixture

/// What the tools saw, shared by all of them.
struct Gauge {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    started: AtomicUsize,
    finished: AtomicUsize,
    /// Call indices in the order their tool finished.
    completion: Mutex<Vec<u64>>,
    /// Which `Ordered` call may finish next.
    turn: watch::Sender<u64>,
}

impl Gauge {
    fn new() -> Self {
        Gauge {
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            started: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            completion: Mutex::new(Vec::new()),
            turn: watch::channel(u64::MAX).0,
        }
    }

    fn max(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    fn completion(&self) -> Vec<u64> {
        self.completion.lock().unwrap().clone()
    }
}

#[derive(Clone, Copy)]
enum Behaviour {
    /// Returns "done <i>".
    Sleep,
    /// Fails with code `boom`, message "failed <i>".
    Fail,
    /// Panics with "kaboom <i>".
    Panic,
    /// Cancels the run, returns "cancelled at <i>".
    CancelRun,
    /// First waits until the run is cancelled; returns "settled <i>".
    UntilCancelled,
    /// First waits for its turn (`Gauge::turn == i`), passes the turn to `i - 1`; returns "done <i>".
    Ordered,
}

/// Every tool of the fixture. Arguments: `i` (the call's index), `ms` (sleep before returning),
/// `barrier` (wait until that many calls started) and `after` (wait until that many finished).
struct Worker {
    spec: ToolSpec,
    gauge: Arc<Gauge>,
    behaviour: Behaviour,
}

#[async_trait]
impl Tool for Worker {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let arg = |key: &str| invocation.arguments.get(key).and_then(|v| v.as_u64()).unwrap_or(0);
        let (i, ms) = (arg("i"), arg("ms"));
        let (barrier, after) = (arg("barrier") as usize, arg("after") as usize);
        let g = &self.gauge;
        g.started.fetch_add(1, Ordering::SeqCst);
        let now = g.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        g.max_in_flight.fetch_max(now, Ordering::SeqCst);
        while g.started.load(Ordering::SeqCst) < barrier || g.finished.load(Ordering::SeqCst) < after {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        match self.behaviour {
            Behaviour::UntilCancelled => invocation.cancel.cancelled().await,
            Behaviour::Ordered => {
                let mut turn = g.turn.subscribe();
                turn.wait_for(|t| *t == i).await.unwrap();
            }
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(ms)).await;
        g.in_flight.fetch_sub(1, Ordering::SeqCst);
        g.completion.lock().unwrap().push(i);
        g.finished.fetch_add(1, Ordering::SeqCst);
        match self.behaviour {
            Behaviour::Sleep => Ok(ToolOutput::text(format!("done {i}"))),
            Behaviour::Ordered => {
                g.turn.send_replace(i.wrapping_sub(1));
                Ok(ToolOutput::text(format!("done {i}")))
            }
            Behaviour::UntilCancelled => Ok(ToolOutput::text(format!("settled {i}"))),
            Behaviour::Fail => {
                Err(ToolError::new(CallErrorCode::Unknown("boom".into()), format!("failed {i}")))
            }
            Behaviour::Panic => panic!("kaboom {i}"),
            Behaviour::CancelRun => {
                invocation.cancel.cancel();
                Ok(ToolOutput::text(format!("cancelled at {i}")))
            }
        }
    }
}

struct Fixture {
    dispatcher: Dispatcher,
    gauge: Arc<Gauge>,
    ledger: Arc<MemoryLedger>,
    run: RunContext,
}

fn fixture() -> Fixture {
    let gauge = Arc::new(Gauge::new());
    let mut registry = ToolRegistry::new();
    let tools = [
        ("sleep", Behaviour::Sleep, false),
        ("solo", Behaviour::Sleep, true),
        ("fail", Behaviour::Fail, false),
        ("explode", Behaviour::Panic, false),
        ("cancel_run", Behaviour::CancelRun, false),
        ("until_cancelled", Behaviour::UntilCancelled, false),
        ("ordered", Behaviour::Ordered, false),
    ];
    for (name, behaviour, exclusive) in tools {
        let spec = ToolSpec::new(name, format!("the {name} tool")).exclusive(exclusive);
        let tool = Worker { spec, gauge: gauge.clone(), behaviour };
        registry.register(Arc::new(tool)).unwrap();
    }
    let ledger = Arc::new(MemoryLedger::new());
    let dispatcher = Dispatcher::builder(registry).ledger(ledger.clone()).build();
    Fixture { dispatcher, gauge, ledger, run: RunContext::new("s", "r") }
}

fn call(i: u64, tool: &str, ms: u64) -> ToolCall {
    ToolCall::new(format!("call-{i}"), tool, json!({ "i": i, "ms": ms }))
}

/// A call that, once started, waits until `barrier` calls have started and `after` have finished.
fn gated(i: u64, tool: &str, ms: u64, barrier: usize, after: usize) -> ToolCall {
    let args = json!({ "i": i, "ms": ms, "barrier": barrier, "after": after });
    ToolCall::new(format!("call-{i}"), tool, args)
}

fn sleeps(n: u64, ms: u64) -> Vec<ToolCall> {
    (0..n).map(|i| call(i, "sleep", ms)).collect()
}

/// `n` sleeping calls that each wait until `barrier` calls have started: the first `barrier` are in
/// flight together whatever the timing (and a batch that never gets there times out).
fn barrier_sleeps(n: u64, ms: u64, barrier: usize) -> Vec<ToolCall> {
    (0..n).map(|i| gated(i, "sleep", ms, barrier, 0)).collect()
}

fn options(tool_concurrency: usize, stop_on_error: bool) -> BatchOptions {
    BatchOptions { tool_concurrency, stop_on_error }
}

/// Runs a batch, failing (rather than hanging) if it takes more than 5 s.
async fn run_batch(f: &Fixture, calls: &[ToolCall], options: BatchOptions) -> Vec<ToolCallResult> {
    let batch = f.dispatcher.dispatch_batch(calls.to_vec(), &f.run, options);
    tokio::time::timeout(Duration::from_secs(5), batch).await.unwrap()
}

/// Every call got exactly one result, in call order.
fn assert_one_result_per_call(calls: &[ToolCall], results: &[ToolCallResult]) {
    let expected: Vec<&str> = calls.iter().map(|c| &*c.id).collect();
    let got: Vec<&str> = results.iter().map(|r| &*r.call_id).collect();
    assert_eq!(got, expected);
}

fn text(result: &ToolCallResult) -> String {
    match &result.outcome {
        CallOutcome::Finished { output } => output.joined_text(),
        other => panic!("expected a finished call for {}, got {other:?}", result.call_id),
    }
}

/// Asserts the result is an `Error` outcome and returns (code, message).
fn error_of(result: &ToolCallResult) -> (CallErrorCode, String) {
    match &result.outcome {
        CallOutcome::Error { error } => (error.code.clone(), error.message.clone()),
        other => panic!("expected an error outcome for {}, got {other:?}", result.call_id),
    }
}

fn record_kinds(ledger: &MemoryLedger, call_id: &str) -> Vec<RecordKind> {
    ledger.for_call(call_id).iter().map(|r| r.kind).collect()
}

/// A not-dispatched call has one `error` record (code `tool_call_not_dispatched`) and no `started`.
fn assert_not_dispatched_record(ledger: &MemoryLedger, call_id: &str) {
    let records = ledger.for_call(call_id);
    assert_eq!(records.len(), 1, "{call_id}: {records:?}");
    assert_eq!(records[0].kind, RecordKind::Error, "{call_id}");
    let code = &records[0].error.as_ref().unwrap().code;
    assert_eq!(*code, CallErrorCode::NotDispatched, "{call_id}");
    assert!(records[0].started_at.is_none(), "{call_id}");
}

const CANCELLED: &str = "not dispatched: the run was cancelled before this call was claimed";
const FAILED_EARLIER: &str = "not dispatched: an earlier call failed before this call was claimed";

// ---------------------------------------------------------------------------------------------------
// options, empty batch

#[test]
fn batch_options_defaults() {
    assert_eq!(BatchOptions::default(), options(1, true));
    assert_eq!(BatchOptions::concurrency(4), options(4, true));
    assert_eq!(MAX_TOOL_CONCURRENCY, 64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_batch_returns_no_results() {
    let f = fixture();
    let results = run_batch(&f, &[], options(8, true)).await;
    assert!(results.is_empty());
    assert_eq!(f.gauge.started(), 0);
    assert!(f.ledger.is_empty());
}

// ---------------------------------------------------------------------------------------------------
// order and concurrency

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_in_call_order_when_tools_sleep_in_reverse() {
    let f = fixture();
    // All five in flight together; call i then sleeps (5 - i) * 6 ms, so the last is meant to finish
    // first.
    let calls: Vec<ToolCall> = (0..5).map(|i| gated(i, "sleep", (5 - i) * 6, 5, 0)).collect();
    let results = run_batch(&f, &calls, options(5, true)).await;
    assert_one_result_per_call(&calls, &results);
    let texts: Vec<String> = results.iter().map(text).collect();
    assert_eq!(texts, ["done 0", "done 1", "done 2", "done 3", "done 4"]);
    assert_eq!(f.gauge.completion().len(), 5);
    assert_eq!(f.gauge.max(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_in_call_order_when_completion_is_forced_into_reverse() {
    let f = fixture();
    // Each `ordered` call waits for its turn; the turn starts at the last call and walks down, so the
    // tools complete exactly in reverse.
    let calls: Vec<ToolCall> = (0..6).map(|i| call(i, "ordered", 1)).collect();
    f.gauge.turn.send_replace(5);
    let results = run_batch(&f, &calls, options(6, true)).await;
    assert_eq!(f.gauge.completion(), [5, 4, 3, 2, 1, 0]);
    assert_one_result_per_call(&calls, &results);
    let texts: Vec<String> = results.iter().map(text).collect();
    assert_eq!(texts, ["done 0", "done 1", "done 2", "done 3", "done 4", "done 5"]);
    assert_eq!(f.gauge.max(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_n_gives_at_most_n_in_flight() {
    for n in [1usize, 2, 3, 5] {
        let f = fixture();
        // The first n calls wait for each other: more than n in flight would show as max > n, fewer
        // than n would time out.
        let calls = barrier_sleeps(9, 1, n);
        let results = run_batch(&f, &calls, options(n, true)).await;
        assert_one_result_per_call(&calls, &results);
        assert!(results.iter().all(ToolCallResult::is_finished));
        assert_eq!(f.gauge.max(), n, "concurrency {n}");
        assert_eq!(f.gauge.started(), 9);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_is_clamped_to_1_and_64() {
    let f = fixture();
    let calls = sleeps(3, 1);
    let results = run_batch(&f, &calls, options(0, true)).await;
    assert_one_result_per_call(&calls, &results);
    assert!(results.iter().all(ToolCallResult::is_finished));
    assert_eq!(f.gauge.max(), 1, "concurrency 0 runs one call at a time");

    let f = fixture();
    let calls = barrier_sleeps(70, 1, MAX_TOOL_CONCURRENCY);
    let results = run_batch(&f, &calls, options(1_000, true)).await;
    assert_one_result_per_call(&calls, &results);
    assert!(results.iter().all(ToolCallResult::is_finished));
    assert_eq!(f.gauge.max(), MAX_TOOL_CONCURRENCY);
    assert_eq!(f.gauge.started(), 70);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exclusive_tool_makes_the_batch_sequential() {
    // Control: the batch without the exclusive tool has 6 in flight.
    let f = fixture();
    run_batch(&f, &barrier_sleeps(6, 1, 6), options(8, true)).await;
    assert_eq!(f.gauge.max(), 6);

    let f = fixture();
    let mut calls = sleeps(6, 2);
    calls.insert(3, call(99, "solo", 2));
    let results = run_batch(&f, &calls, options(8, true)).await;
    assert_one_result_per_call(&calls, &results);
    assert_eq!(f.gauge.max(), 1);
    assert_eq!(text(&results[3]), "done 99");
    // Sequential: completion order is call order.
    assert_eq!(f.gauge.completion(), [0, 1, 2, 99, 3, 4, 5]);
}

// ---------------------------------------------------------------------------------------------------
// cancellation

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_batch_stops_claiming() {
    let f = fixture();
    let calls = vec![
        call(0, "sleep", 1),
        call(1, "sleep", 1),
        call(2, "cancel_run", 1),
        call(3, "sleep", 1),
        call(4, "sleep", 1),
        call(5, "sleep", 1),
    ];
    let results = run_batch(&f, &calls, options(1, true)).await;
    assert_one_result_per_call(&calls, &results);
    assert!(f.run.cancel.is_cancelled());
    assert_eq!(text(&results[0]), "done 0");
    assert_eq!(text(&results[1]), "done 1");
    assert_eq!(text(&results[2]), "cancelled at 2");
    for result in &results[3..] {
        assert_eq!(error_of(result), (CallErrorCode::NotDispatched.to_owned(), CANCELLED.to_owned()));
        assert_eq!(&*result.tool_name, "sleep");
        assert_eq!(result.decided_by, DecidedBy::DEFAULT);
    }
    assert_eq!(f.gauge.started(), 3);

    // Ledger: executed calls started and finished; the others one error record and no started.
    for id in ["call-0", "call-1", "call-2"] {
        assert_eq!(record_kinds(&f.ledger, id), [RecordKind::Started, RecordKind::Finished], "{id}");
    }
    for id in ["call-3", "call-4", "call-5"] {
        assert_not_dispatched_record(&f.ledger, id);
    }
    assert_eq!(f.ledger.len(), 3 * 2 + 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claimed_calls_settle_when_the_run_is_cancelled() {
    let f = fixture();
    // Worker A claims call 0, which returns only 20 ms after the run is cancelled; worker B claims
    // call 1, which cancels the run.
    let mut calls = vec![call(0, "until_cancelled", 20), call(1, "cancel_run", 1)];
    calls.extend((2..8).map(|i| call(i, "sleep", 1)));
    let started = Instant::now();
    let results = run_batch(&f, &calls, options(2, true)).await;
    assert_one_result_per_call(&calls, &results);
    // Call 0 was already claimed: the batch waited for it to settle rather than dropping it.
    assert_eq!(text(&results[0]), "settled 0");
    assert_eq!(text(&results[1]), "cancelled at 1");
    assert!(started.elapsed() >= Duration::from_millis(20));
    for r in &results[2..] {
        assert_eq!(error_of(r), (CallErrorCode::NotDispatched.to_owned(), CANCELLED.to_owned()));
        assert_not_dispatched_record(&f.ledger, &r.call_id);
    }
    assert_eq!(f.gauge.started(), 2);
    assert_eq!(record_kinds(&f.ledger, "call-0"), [RecordKind::Started, RecordKind::Finished]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_from_another_task_mid_batch() {
    let f = fixture();
    // Calls 0-3 finish on their own; calls 4 and 5 (claimed next, one per worker) wait for the
    // cancellation; calls 6-11 are never claimed.
    let mut calls = sleeps(4, 1);
    calls.extend((4..12).map(|i| call(i, "until_cancelled", 1)));
    let gauge = f.gauge.clone();
    let cancel = f.run.cancel.clone();
    let canceller = tokio::spawn(async move {
        while gauge.finished.load(Ordering::SeqCst) < 4 || gauge.in_flight.load(Ordering::SeqCst) < 2 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        cancel.cancel();
    });
    let results = run_batch(&f, &calls, options(2, true)).await;
    canceller.await.unwrap();
    assert_one_result_per_call(&calls, &results);

    let texts: Vec<String> = results[..6].iter().map(text).collect();
    assert_eq!(texts, ["done 0", "done 1", "done 2", "done 3", "settled 4", "settled 5"]);
    for r in &results[6..] {
        assert_eq!(error_of(r), (CallErrorCode::NotDispatched.to_owned(), CANCELLED.to_owned()));
        assert_not_dispatched_record(&f.ledger, &r.call_id);
    }
    assert_eq!(f.gauge.started(), 6);
    for id in ["call-0", "call-4", "call-5"] {
        assert_eq!(record_kinds(&f.ledger, id), [RecordKind::Started, RecordKind::Finished], "{id}");
    }
    assert_eq!(f.ledger.len(), 6 * 2 + 6);
    // Nothing keeps running once the batch returned.
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(f.gauge.started(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cancelled_before_the_batch_dispatches_nothing() {
    let f = fixture();
    f.run.cancel.cancel();
    let calls = sleeps(4, 1);
    let results = run_batch(&f, &calls, options(4, true)).await;
    assert_one_result_per_call(&calls, &results);
    for r in &results {
        assert_eq!(error_of(r), (CallErrorCode::NotDispatched.to_owned(), CANCELLED.to_owned()));
        assert_not_dispatched_record(&f.ledger, &r.call_id);
    }
    assert_eq!(f.gauge.started(), 0);
    assert_eq!(f.ledger.len(), 4);
}

// ---------------------------------------------------------------------------------------------------
// failures

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_tool_stops_the_batch_when_stop_on_error() {
    let f = fixture();
    let calls = vec![call(0, "sleep", 1), call(1, "fail", 1), call(2, "sleep", 1), call(3, "sleep", 1)];
    let results = run_batch(&f, &calls, options(1, true)).await;
    assert_one_result_per_call(&calls, &results);
    assert_eq!(text(&results[0]), "done 0");
    assert_eq!(error_of(&results[1]), (CallErrorCode::Unknown("boom".into()), "failed 1".to_owned()));
    for r in &results[2..] {
        assert_eq!(error_of(r), (CallErrorCode::NotDispatched.to_owned(), FAILED_EARLIER.to_owned()));
        assert_not_dispatched_record(&f.ledger, &r.call_id);
    }
    assert_eq!(f.gauge.started(), 2);
    assert!(!f.run.cancel.is_cancelled());
    assert_eq!(record_kinds(&f.ledger, "call-1"), [RecordKind::Started, RecordKind::Error]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_tool_does_not_stop_the_batch_without_stop_on_error() {
    let f = fixture();
    let calls = vec![
        call(0, "sleep", 1),
        call(1, "fail", 1),
        call(2, "sleep", 1),
        call(3, "fail", 1),
        call(4, "sleep", 1),
    ];
    let results = run_batch(&f, &calls, options(2, false)).await;
    assert_one_result_per_call(&calls, &results);
    assert_eq!(text(&results[0]), "done 0");
    assert_eq!(error_of(&results[1]), (CallErrorCode::Unknown("boom".into()), "failed 1".to_owned()));
    assert_eq!(text(&results[2]), "done 2");
    assert_eq!(error_of(&results[3]), (CallErrorCode::Unknown("boom".into()), "failed 3".to_owned()));
    assert_eq!(text(&results[4]), "done 4");
    assert_eq!(f.gauge.started(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_lets_the_other_claimed_call_settle() {
    let f = fixture();
    // Worker A claims the failing call 0 (which waits until call 1 runs), worker B claims call 1
    // (which finishes only after call 0 failed); nothing else is claimed.
    let mut calls = vec![gated(0, "fail", 1, 2, 0), gated(1, "sleep", 1, 2, 1)];
    calls.extend((2..6).map(|i| call(i, "sleep", 1)));
    let results = run_batch(&f, &calls, options(2, true)).await;
    assert_one_result_per_call(&calls, &results);
    assert_eq!(error_of(&results[0]).0, CallErrorCode::Unknown("boom".into()));
    assert_eq!(text(&results[1]), "done 1");
    for r in &results[2..] {
        assert_eq!(error_of(r), (CallErrorCode::NotDispatched.to_owned(), FAILED_EARLIER.to_owned()));
    }
    assert_eq!(f.gauge.started(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_call_does_not_stop_the_batch() {
    let f = fixture();
    let calls = vec![
        call(0, "sleep", 1),
        call(1, "no_such_tool", 1),
        ToolCall::new("call-2", "sleep", json!(["not", "an", "object"])),
        call(3, "sleep", 1),
    ];
    let results = run_batch(&f, &calls, options(1, true)).await;
    assert_one_result_per_call(&calls, &results);
    assert_eq!(text(&results[0]), "done 0");
    assert_eq!(results[1].blocked_reason(), Some(BlockedReason::UnknownTool));
    assert_eq!(results[1].error().unwrap().message, "Unknown tool: no_such_tool");
    assert_eq!(results[2].blocked_reason(), Some(BlockedReason::InvalidArguments));
    assert_eq!(text(&results[3]), "done 3");
    assert_eq!(f.gauge.started(), 2);
    assert_eq!(record_kinds(&f.ledger, "call-1"), [RecordKind::Blocked]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_tool_becomes_an_error_result() {
    let f = fixture();
    let calls = vec![call(0, "sleep", 1), call(1, "explode", 1), call(2, "sleep", 1)];
    let results = run_batch(&f, &calls, options(2, false)).await;
    assert_one_result_per_call(&calls, &results);
    assert_eq!(text(&results[0]), "done 0");
    let panicked = (CallErrorCode::ToolPanicked.to_owned(), "the tool panicked: kaboom 1".to_owned());
    assert_eq!(error_of(&results[1]), panicked);
    assert_eq!(text(&results[2]), "done 2");
    assert_eq!(record_kinds(&f.ledger, "call-1"), [RecordKind::Started, RecordKind::Error]);

    // A panic is a failure: with stop_on_error the later calls are not dispatched.
    let f = fixture();
    let results = run_batch(&f, &calls, options(1, true)).await;
    assert_one_result_per_call(&calls, &results);
    assert_eq!(text(&results[0]), "done 0");
    assert_eq!(error_of(&results[1]), panicked);
    assert_eq!(error_of(&results[2]), (CallErrorCode::NotDispatched.to_owned(), FAILED_EARLIER.to_owned()));
    assert_not_dispatched_record(&f.ledger, "call-2");
}

/// Renames calls of `alias` to the exclusive `solo` tool.
struct AliasToSolo;

#[async_trait]
impl portcullis_harness::Middleware for AliasToSolo {
    fn name(&self) -> &str {
        "alias_to_solo"
    }
    async fn tool_call(
        &self,
        mut call: ToolCall,
        _: &portcullis_harness::CallContext,
    ) -> Result<ToolCall, portcullis_harness::MiddlewareError> {
        if call.name == "alias" {
            call.name = "solo".into();
        }
        Ok(call)
    }
}

/// Records, for the exclusive tool, how many calls were in flight when it started and when it ended.
struct Overlap {
    spec: ToolSpec,
    in_flight: Arc<AtomicUsize>,
    seen_by_solo: Arc<Mutex<Vec<usize>>>,
}

#[async_trait]
impl Tool for Overlap {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn execute(&self, _: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        let solo = self.spec.exclusive;
        if solo {
            self.seen_by_solo.lock().unwrap().push(now);
        }
        tokio::time::sleep(Duration::from_millis(if solo { 20 } else { 30 })).await;
        if solo {
            self.seen_by_solo.lock().unwrap().push(self.in_flight.load(Ordering::SeqCst));
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        Ok(ToolOutput::text("ok"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_renamed_to_an_exclusive_tool_still_runs_alone() {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let seen_by_solo = Arc::new(Mutex::new(Vec::new()));
    let mut registry = ToolRegistry::new();
    for (name, exclusive) in [("sleep", false), ("solo", true)] {
        let spec = ToolSpec::new(name, "t").exclusive(exclusive);
        let tool = Overlap { spec, in_flight: in_flight.clone(), seen_by_solo: seen_by_solo.clone() };
        registry.register(Arc::new(tool)).unwrap();
    }
    let dispatcher = Dispatcher::builder(registry).middleware(Arc::new(AliasToSolo)).build();
    let run = RunContext::new("s", "r");
    let mut calls: Vec<ToolCall> =
        (0..2).map(|i| ToolCall::new(format!("c{i}"), "sleep", json!({}))).collect();
    calls.push(ToolCall::new("c2", "alias", json!({})));
    calls.extend((3..6).map(|i| ToolCall::new(format!("c{i}"), "sleep", json!({}))));
    let batch = dispatcher.dispatch_batch(calls, &run, options(4, true));
    let results = tokio::time::timeout(Duration::from_secs(5), batch).await.unwrap();
    assert!(results.iter().all(ToolCallResult::is_finished));
    assert_eq!(&*results[2].tool_name, "solo");
    // Without the gate the 30 ms sleeps claimed beside it would be in flight while `solo` runs.
    assert_eq!(*seen_by_solo.lock().unwrap(), [1, 1], "nothing else ran while the exclusive tool did");
}
