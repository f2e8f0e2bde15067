//! Stage 7 through the dispatcher: a call with a side effect executes only once its `started` record is
//! durable (a call without one only queues it), a ledger that cannot make it durable stops the call,
//! and a command split by shell quoting is redacted in the records, events and approval requests.

// Test support code outside #[test] functions may unwrap and panic, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use portcullis_harness::CallErrorCode;
use portcullis_harness::*;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A ledger whose records become durable a while after they are handed in (like a group commit that
/// has not run yet), unless the caller waits for it with `record_durable`.
#[derive(Default)]
struct SlowCommitLedger {
    queued: Mutex<Vec<ToolCallRecord>>,
    durable: Mutex<HashSet<String>>,
    refuse_durable: bool,
}

#[async_trait]
impl Ledger for SlowCommitLedger {
    async fn record(&self, record: ToolCallRecord) -> Result<(), LedgerError> {
        self.queued.lock().unwrap().push(record);
        Ok(())
    }

    async fn record_durable(&self, record: ToolCallRecord) -> Result<(), LedgerError> {
        if self.refuse_durable {
            return Err(LedgerError::Write("commit failed: disk I/O error".into()));
        }
        let key = format!("{}:{}", record.call.call_id, record.kind.as_str());
        self.queued.lock().unwrap().push(record);
        tokio::time::sleep(Duration::from_millis(20)).await; // the commit
        self.durable.lock().unwrap().insert(key);
        Ok(())
    }
}

/// Call id and whether its `started` record was durable when the tool began, per execution.
type Seen = Arc<Mutex<Vec<(String, bool)>>>;

/// Checks, when it executes, that its own `started` record is durable already.
struct Checker {
    spec: ToolSpec,
    ledger: Arc<SlowCommitLedger>,
    seen: Seen,
}

#[async_trait]
impl Tool for Checker {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe_action(&self, arguments: &Value, _: &CallContext) -> Result<ExecutionAction, ToolError> {
        Ok(match arguments.get("command").and_then(Value::as_str) {
            Some(command) => ExecutionAction::new(ActionKind::Execute, "exec").with_command(command),
            None if arguments.get("pure").is_some() => ExecutionAction::none(),
            None => ExecutionAction::new(ActionKind::Write, "write").with_paths(vec!["/tmp/x".into()]),
        })
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let id = invocation.call.call_id.to_string();
        let durable = self.ledger.durable.lock().unwrap().contains(&format!("{id}:started"));
        self.seen.lock().unwrap().push((id, durable));
        Ok(ToolOutput::text("ran"))
    }
}

fn dispatcher(ledger: Arc<SlowCommitLedger>) -> (Dispatcher, Seen) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut registry = ToolRegistry::new();
    let tool = Checker { spec: ToolSpec::new("probe", "checks"), ledger: ledger.clone(), seen: seen.clone() };
    registry.register(Arc::new(tool)).unwrap();
    (Dispatcher::builder(registry).ledger(ledger).build(), seen)
}

#[tokio::test]
async fn a_call_with_a_side_effect_runs_only_after_its_started_record_is_durable() {
    let ledger = Arc::new(SlowCommitLedger::default());
    let (d, seen) = dispatcher(ledger.clone());
    let run = RunContext::new("s", "r");
    let calls = (0..8).map(|i| ToolCall::new(format!("w{i}"), "probe", json!({})));
    let results = futures::future::join_all(calls.map(|c| d.dispatch(c, &run))).await;
    assert!(results.iter().all(ToolCallResult::is_finished), "{results:?}");
    let shell = d.dispatch(ToolCall::new("x1", "probe", json!({"command": "touch f"})), &run).await;
    assert!(shell.is_finished());
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 9);
    for (id, durable) in &seen {
        assert!(durable, "{id} executed before its started record was durable");
    }
}

#[tokio::test]
async fn a_call_without_a_side_effect_does_not_wait() {
    let ledger = Arc::new(SlowCommitLedger::default());
    let (d, seen) = dispatcher(ledger.clone());
    let result =
        d.dispatch(ToolCall::new("p1", "probe", json!({"pure": true})), &RunContext::new("s", "r")).await;
    assert!(result.is_finished());
    assert_eq!(seen.lock().unwrap().as_slice(), [("p1".to_owned(), false)]);
    let kinds: Vec<RecordKind> = ledger.queued.lock().unwrap().iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [RecordKind::Started, RecordKind::Finished]);
}

#[tokio::test]
async fn a_started_record_that_cannot_be_made_durable_stops_the_call() {
    let ledger = Arc::new(SlowCommitLedger { refuse_durable: true, ..SlowCommitLedger::default() });
    let (d, seen) = dispatcher(ledger.clone());
    let result = d.dispatch(ToolCall::new("f1", "probe", json!({})), &RunContext::new("s", "r")).await;
    assert_eq!(result.error().unwrap().code, CallErrorCode::LedgerUnavailable);
    assert!(seen.lock().unwrap().is_empty(), "the tool never ran");
}

/// A secret split by quotes in a shell command is redacted in the started record's action and
/// arguments, in the event, and in what an approver is shown.
#[tokio::test]
async fn commands_are_redacted_as_the_shell_reads_them() {
    let ledger = Arc::new(SlowCommitLedger::default());
    let (d, _) = dispatcher(ledger.clone());
    let bus = d.events().clone();
    let mut events = bus.subscribe();
    let command = "curl -H \"Authorization: token ghp_0123456789\"'abcdefghijABCDEFGHIJ012345' https://api";
    let shown = "curl -H \"Authorization: token [REDACTED]' https://api";
    let result = d
        .dispatch(ToolCall::new("c1", "probe", json!({"command": command})), &RunContext::new("s", "r"))
        .await;
    assert!(result.is_finished());
    let started =
        ledger.queued.lock().unwrap().iter().find(|r| r.kind == RecordKind::Started).cloned().unwrap();
    assert_eq!(started.action.as_ref().unwrap().command.as_deref(), Some(shown));
    assert_eq!(started.arguments.as_ref().unwrap()["command"], shown);
    assert!(started.redacted);
    let Some(EventDelivery::Event(event)) = events.recv().await else { panic!("no event") };
    let EventPayload::Started { arguments, action, .. } = &event.payload else { panic!("{event:?}") };
    assert_eq!((arguments["command"].as_str(), action.command.as_deref()), (Some(shown), Some(shown)));
}

struct AlwaysAsk;

#[async_trait]
impl ExecutionPolicy for AlwaysAsk {
    async fn evaluate(&self, _: PolicyRequest<'_>) -> PolicyVerdict {
        PolicyVerdict::ask(DecidedBy::DEFAULT, "ask")
    }
}

/// Denies, keeping what it was shown.
#[derive(Default)]
struct Recorder(Mutex<Vec<Arc<Value>>>);

#[async_trait]
impl Approvals for Recorder {
    async fn request(&self, request: ApprovalRequest) -> ApprovalAnswer {
        self.0.lock().unwrap().push(request.arguments);
        ApprovalAnswer::Deny { reason: "no".into(), decided_by: DecidedBy::DEFAULT }
    }
}

#[tokio::test]
async fn a_refused_command_is_redacted_in_the_approval_request_and_the_blocked_record() {
    let ledger = Arc::new(SlowCommitLedger::default());
    let approver = Arc::new(Recorder::default());
    let mut registry = ToolRegistry::new();
    let tool =
        Checker { spec: ToolSpec::new("probe", "checks"), ledger: ledger.clone(), seen: Arc::default() };
    registry.register(Arc::new(tool)).unwrap();
    let d = Dispatcher::builder(registry)
        .ledger(ledger.clone())
        .policy(Arc::new(AlwaysAsk))
        .approvals(approver.clone())
        .build();
    let command = r#"echo "sk-"'proj0123456789abcdefghijkl' > key"#;
    let result = d
        .dispatch(ToolCall::new("a1", "probe", json!({"command": command})), &RunContext::new("s", "r"))
        .await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ExecutionDenied));
    let shown = r#"echo "[REDACTED]' > key"#;
    assert_eq!(approver.0.lock().unwrap()[0]["command"], shown);
    let blocked = ledger.queued.lock().unwrap()[0].clone();
    assert_eq!(blocked.kind, RecordKind::Blocked);
    assert_eq!(blocked.arguments.as_ref().unwrap()["command"], shown);
    assert_eq!(blocked.action.as_ref().unwrap().command.as_deref(), Some(shown));
}
