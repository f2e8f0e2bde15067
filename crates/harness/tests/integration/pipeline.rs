//! The dispatch pipeline end to end: every blocked reason, event order and ledger records of success /
//! blocked / error / progress, redaction everywhere, ledger refusal, panics and cancellation, lagging
//! subscribers, registry swaps and bounded records. Guards are in `pipeline_guards.rs`, the execution
//! policy and approval in `pipeline_approval.rs`.

// Test support code outside #[test] functions may unwrap and panic, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::pipeline::*;
use async_trait::async_trait;
use portcullis_harness::CallErrorCode;
use portcullis_harness::*;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn success_path_events_and_records() {
    let f = Fixture::new();
    let d = f.builder().build();
    let mut sub = d.events().subscribe();
    let result = d.dispatch(call("c1", "echo", json!({"text": "hi"})), &run()).await;
    assert_eq!(result.output().unwrap().joined_text(), "echo: hi");
    assert_eq!(result.decided_by, DecidedBy::DEFAULT);
    assert_eq!(
        event_kinds(&mut sub),
        vec![
            ("c1".into(), ToolEventKind::ToolExecutionStarted),
            ("c1".into(), ToolEventKind::ToolExecutionFinished)
        ]
    );
    let records = f.ledger.for_call("c1");
    assert_eq!(
        records.iter().map(|r| r.kind).collect::<Vec<_>>(),
        [RecordKind::Started, RecordKind::Finished]
    );
    let started = &records[0];
    assert_eq!(&*started.call.session_id, "session-1");
    assert_eq!(&*started.call.run_id, "run-1");
    assert_eq!(&*started.call.owner, "agent");
    assert_eq!(&*started.tool_name, "echo");
    assert_eq!(started.arguments.as_deref(), Some(&json!({"text": "hi"})));
    assert_eq!(started.decided_by, DecidedBy::DEFAULT);
    let finished = &records[1];
    assert_eq!(finished.started_at, Some(started.at));
    assert!(finished.at >= started.at);
    assert_eq!(finished.output.as_ref().unwrap().joined_text(), "echo: hi");
    assert_eq!(f.runs(), 1);
}

#[tokio::test]
async fn every_blocked_reason_never_executes() {
    let f = Fixture::new();
    let d = f
        .builder()
        .permissions(Arc::new(PermissionSet::new(["tool:echo:execute", "tool:secret_tool:execute"])))
        .build();
    let mut sub = d.events().subscribe();
    let r = run();
    let cases: Vec<(ToolCall, BlockedReason, CallErrorCode)> = vec![
        (call("u", "nope", json!({})), BlockedReason::UnknownTool, CallErrorCode::UnknownTool),
        (
            call("d", "secret_tool", json!({"text": "x"})),
            BlockedReason::ToolDenied,
            CallErrorCode::ToolDenied,
        ),
        (call("a", "echo", json!(["x"])), BlockedReason::InvalidArguments, CallErrorCode::InvalidArguments),
        (
            ToolCall::new("j", "echo", CallArguments::from_text("{\"text\": ")),
            BlockedReason::InvalidArguments,
            CallErrorCode::InvalidJsonArguments,
        ),
        (
            call("p", "write_file", json!({"text": "x"})),
            BlockedReason::PermissionDenied,
            CallErrorCode::PermissionDenied,
        ),
        (
            call("v", "echo", json!({"text": 5})),
            BlockedReason::ValidationFailed,
            CallErrorCode::ValidationFailed,
        ),
    ];
    for (c, reason, code) in cases {
        let id = c.id.to_string();
        let result = d.dispatch(c, &r).await;
        assert_eq!(result.blocked_reason(), Some(reason), "{id}");
        assert_eq!(result.error().unwrap().code, code, "{id}");
        assert_eq!(event_kinds(&mut sub), vec![(id.clone(), ToolEventKind::ToolExecutionBlocked)], "{id}");
        let records = f.ledger.for_call(&id);
        assert_eq!(records.len(), 1, "{id}");
        assert_eq!(records[0].kind, RecordKind::Blocked);
        assert_eq!(records[0].blocked_reason, Some(reason));
        assert!(records[0].arguments.is_some(), "the attempt is recorded: {id}");
    }
    assert_eq!(f.runs(), 0);
    let unknown = f.ledger.for_call("u");
    assert_eq!(unknown[0].error.as_ref().unwrap().message, "Unknown tool: nope");
    assert_eq!(unknown[0].decided_by, DecidedBy::Registry);
    assert_eq!(f.ledger.for_call("d")[0].decided_by, DecidedBy::Grants { scope: "user".into() });
    assert_eq!(
        f.ledger.for_call("p")[0].decided_by,
        DecidedBy::Permission { permission: "tool:write_file:execute".into() }
    );
    let validation = f.ledger.for_call("v");
    assert!(
        validation[0].error.as_ref().unwrap().message.starts_with("/text: "),
        "{:?}",
        validation[0].error
    );
}

#[tokio::test]
async fn errors_and_panics_become_error_results() {
    let f = Fixture::new();
    let d = f.builder().build();
    let mut sub = d.events().subscribe();
    let result = d.dispatch(call("e1", "echo", json!({"text": "fail"})), &run()).await;
    let error = result.error().unwrap();
    assert_eq!(error.code, CallErrorCode::ToolError);
    assert_eq!(error.message, "boom with [REDACTED]");
    assert!(result.redacted);
    assert_eq!(
        event_kinds(&mut sub),
        vec![
            ("e1".into(), ToolEventKind::ToolExecutionStarted),
            ("e1".into(), ToolEventKind::ToolExecutionError)
        ]
    );
    let records = f.ledger.for_call("e1");
    assert_eq!(records.iter().map(|r| r.kind).collect::<Vec<_>>(), [RecordKind::Started, RecordKind::Error]);
    assert!(records[1].redacted);

    let result = d.dispatch(call("e2", "echo", json!({"text": "panic"})), &run()).await;
    assert_eq!(result.error().unwrap().code, CallErrorCode::ToolPanicked);
    assert!(result.error().unwrap().message.contains("tool exploded"));
}

/// A tool that settles at its first poll and one that waits first take different paths through the
/// pipeline (the second is awaited beside the run's cancellation); both end the same way.
#[tokio::test]
async fn tools_that_wait_before_settling_end_like_those_that_do_not() {
    let f = Fixture::new();
    let d = f.builder().build();
    for (id, text, expected) in [("w1", "now", "echo: now"), ("w2", "later", "echo: later")] {
        let result = d.dispatch(call(id, "echo", json!({ "text": text })), &run()).await;
        assert!(result.is_finished(), "{id}: {result:?}");
        let kinds: Vec<RecordKind> = f.ledger.for_call(id).iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [RecordKind::Started, RecordKind::Finished], "{id}");
        let CallOutcome::Finished { output } = &result.outcome else { unreachable!() };
        assert_eq!(output.content, ToolOutput::text(expected).content, "{id}");
    }
    for (id, text, message) in
        [("w3", "panic", "tool exploded"), ("w4", "panic_later", "tool exploded later")]
    {
        let result = d.dispatch(call(id, "echo", json!({ "text": text })), &run()).await;
        let error = result.error().unwrap();
        assert_eq!(error.code, CallErrorCode::ToolPanicked, "{id}");
        assert_eq!(error.message, format!("the tool panicked: {message}"), "{id}");
        let kinds: Vec<RecordKind> = f.ledger.for_call(id).iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [RecordKind::Started, RecordKind::Error], "{id}");
    }
    assert_eq!(f.runs(), 4);
}

#[tokio::test]
async fn progress_is_evented_and_recorded_redacted() {
    let f = Fixture::new();
    let d = f.builder().build();
    let mut sub = d.events().subscribe();
    let result = d.dispatch(call("p1", "echo", json!({"text": "progress"})), &run()).await;
    assert!(result.is_finished());
    let deliveries = sub.drain();
    let kinds: Vec<ToolEventKind> = deliveries
        .iter()
        .map(|d| match d {
            EventDelivery::Event(e) => e.kind(),
            EventDelivery::Lagged { .. } => panic!(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ToolEventKind::ToolExecutionStarted,
            ToolEventKind::ToolExecutionProgress,
            ToolEventKind::ToolExecutionProgress,
            ToolEventKind::ToolExecutionFinished
        ]
    );
    let records = f.ledger.for_call("p1");
    let kinds: Vec<RecordKind> = records.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [RecordKind::Started, RecordKind::Progress, RecordKind::Progress, RecordKind::Finished]
    );
    assert_eq!(records[1].progress, Some(json!({"step": 1, "note": "[REDACTED]"})));
    assert!(records[1].redacted);
    assert!(records[1].started_at.is_some());
}

#[tokio::test]
async fn secrets_never_reach_events_records_or_results() {
    let f = Fixture::new();
    let d = f.builder().build();
    let mut sub = d.events().subscribe();
    let r = run();
    d.dispatch(call("s1", "echo", json!({"text": format!("key={SECRET}")})), &r).await;
    d.dispatch(call("s2", "echo", json!({"text": 1, "api_key": SECRET})), &r).await;
    d.dispatch(call("s3", "nope", json!({"token": SECRET})), &r).await;
    d.dispatch(call("s4", "echo", json!({"text": "fail"})), &r).await;
    let results = d.dispatch(call("s5", "echo", json!({"text": format!("Bearer {SECRET}")})), &r).await;
    assert_eq!(results.output().unwrap().joined_text(), "echo: Bearer [REDACTED]");
    let events: Vec<String> = sub
        .drain()
        .into_iter()
        .map(|d| match d {
            EventDelivery::Event(e) => serde_json::to_string(&*e).unwrap(),
            EventDelivery::Lagged { .. } => panic!(),
        })
        .collect();
    assert!(events.len() >= 8);
    let records = serde_json::to_string(&f.ledger.records()).unwrap();
    for text in events.iter().chain([&records]) {
        assert!(!text.contains(SECRET), "secret leaked: {text}");
        assert!(!text.contains("0123456789abcdefghij"), "secret fragment leaked: {text}");
    }
    assert!(records.contains("[REDACTED]"));
    // The tool itself got the real arguments.
    assert_eq!(f.runs(), 3);
}

struct RefusingLedger;

#[async_trait]
impl Ledger for RefusingLedger {
    async fn record(&self, _: ToolCallRecord) -> Result<(), LedgerError> {
        Err(LedgerError::Unavailable("disk full".into()))
    }
}

#[tokio::test]
async fn no_execution_without_a_started_record() {
    let f = Fixture::new();
    let d = Dispatcher::builder(f.registry()).ledger(Arc::new(RefusingLedger)).build();
    let result = d.dispatch(call("l1", "echo", json!({"text": "x"})), &run()).await;
    assert_eq!(result.error().unwrap().code, CallErrorCode::LedgerUnavailable);
    assert_eq!(f.runs(), 0);
}

#[tokio::test]
async fn cancellation_reaches_running_tools() {
    let f = Fixture::new();
    let d = f.builder().cancel_grace(Duration::from_millis(50)).build();
    let r = run();
    let cancel = r.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancel.cancel();
    });
    let result = d.dispatch(call("k1", "echo", json!({"text": "hang"})), &r).await;
    assert_eq!(result.error().unwrap().message, "stopped on cancel", "the tool settled by itself");

    // A tool that ignores cancellation is dropped after the grace period.
    let r = run();
    r.cancel.cancel();
    let result = d.dispatch(call("k2", "echo", json!({"text": "ignore_cancel"})), &r).await;
    assert_eq!(result.error().unwrap().code, CallErrorCode::NotDispatched, "cancelled runs start nothing");
    let r = run();
    let cancel = r.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let result = d.dispatch(call("k3", "echo", json!({"text": "ignore_cancel"})), &r).await;
    assert_eq!(result.error().unwrap().code, CallErrorCode::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));
    let kinds: Vec<RecordKind> = f.ledger.for_call("k3").iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [RecordKind::Started, RecordKind::Error]);
}

#[tokio::test]
async fn lagging_subscribers_are_told_and_never_block() {
    let f = Fixture::new();
    let bus = EventBus::new(4);
    let d = f.builder().events(bus.clone()).build();
    let mut slow = bus.subscribe();
    let r = run();
    for i in 0..10 {
        d.dispatch(call(&format!("lag{i}"), "echo", json!({"text": "x"})), &r).await;
    }
    let first = slow.recv().await.unwrap();
    match first {
        EventDelivery::Lagged { missed } => assert_eq!(missed, 16),
        other => panic!("expected a lag notice, got {other:?}"),
    }
    assert_eq!(bus.missed_total(), 16);
    let rest = slow.drain();
    assert_eq!(rest.len(), 4, "the newest events are still delivered");
}

#[tokio::test]
async fn registry_can_be_swapped_at_run_time() {
    let f = Fixture::new();
    let d = f.builder().build();
    let r = run();
    assert!(d.dispatch(call("r1", "echo", json!({"text": "x"})), &r).await.is_finished());
    let mut smaller = f.registry();
    smaller.unregister("echo");
    d.replace_registry(smaller);
    let result = d.dispatch(call("r2", "echo", json!({"text": "x"})), &r).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::UnknownTool));
}

#[tokio::test]
async fn caller_input_cannot_bloat_records() {
    let f = Fixture::new();
    let d = f.builder().build();
    let r = run();
    let huge_name = "n".repeat(100_000);
    let result = d.dispatch(call("b1", &huge_name, json!({})), &r).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::UnknownTool));
    let record = &f.ledger.for_call("b1")[0];
    assert!(record.tool_name.len() <= 256, "{}", record.tool_name.len());

    // Over the schema bound: blocked, and the record keeps a bounded, redacted preview.
    let big = format!("{SECRET} {}", "y".repeat(600_000));
    let result = d.dispatch(call("b2", "echo", json!({"text": big})), &r).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ValidationFailed));
    let record = &f.ledger.for_call("b2")[0];
    let shown = serde_json::to_string(record.arguments.as_deref().unwrap()).unwrap();
    assert!(shown.len() < 5000, "{}", shown.len());
    assert!(
        shown.contains("$truncated") && shown.contains("[REDACTED]") && !shown.contains(SECRET),
        "{shown}"
    );
    assert!(record.redacted);

    let raw = format!("{{\"text\": \"{}", "z".repeat(400_000));
    let result = d.dispatch(ToolCall::new("b3", "echo", CallArguments::from_text(&raw)), &r).await;
    assert_eq!(result.error().unwrap().code, CallErrorCode::InvalidJsonArguments);
    assert!(result.error().unwrap().message.len() < 300);
    let shown = serde_json::to_string(f.ledger.for_call("b3")[0].arguments.as_deref().unwrap()).unwrap();
    assert!(shown.len() < 5000);
}

#[test]
fn dispatch_futures_can_be_spawned() {
    fn assert_send<T: Send>(_: &T) {}
    fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}
    assert_send_sync::<Dispatcher>();
    let f = Fixture::new();
    let d = f.builder().build();
    let r = run();
    let single = d.dispatch(call("s", "echo", json!({"text": "x"})), &r);
    assert_send(&single);
    let batch = d.dispatch_batch(vec![], &r, BatchOptions::default());
    assert_send(&batch);
}
