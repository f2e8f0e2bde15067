//! The dispatch pipeline end to end: every blocked reason (also after middleware), event order and
//! ledger records of success / blocked / error / progress, redaction everywhere, guardrails (block,
//! tripwire, fail closed), permission, host validators, policy + approval (the approved action is the
//! executed action), ledger refusal, panics and cancellation.

// Test support code outside #[test] functions may unwrap and panic, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use portcullis_harness::call::error_codes;
use portcullis_harness::events::GuardrailOutcome;
use portcullis_harness::*;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SECRET: &str = "sk-test-SECRET-0123456789abcdefghij";

/// A tool that counts executions, reports progress when asked, and fails/panics on request.
struct Probe {
    spec: ToolSpec,
    runs: Arc<AtomicUsize>,
    seen_actions: Arc<Mutex<Vec<ExecutionAction>>>,
}

#[async_trait]
impl Tool for Probe {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe_action(&self, arguments: &Value, _: &CallContext) -> Result<ExecutionAction, ToolError> {
        match arguments.get("path").and_then(Value::as_str) {
            Some("") => Err(ToolError::new("bad_path", "empty path")),
            Some(p) => Ok(ExecutionAction::new(ActionKind::Write, "write").with_paths(vec![p.into()])),
            None => Ok(ExecutionAction::none()),
        }
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.seen_actions.lock().unwrap().push(invocation.action.clone());
        let text = invocation.arguments.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
        match text.as_str() {
            "fail" => return Err(ToolError::failed(format!("boom with {SECRET}"))),
            "panic" => panic!("tool exploded"),
            "progress" => {
                invocation.progress.report(json!({"step": 1, "note": SECRET})).await;
                invocation.progress.report(json!({"step": 2})).await;
            }
            "hang" => {
                invocation.cancel.cancelled().await;
                return Err(ToolError::new("cancelled", "stopped on cancel"));
            }
            "ignore_cancel" => tokio::time::sleep(Duration::from_secs(30)).await,
            _ => {}
        }
        Ok(ToolOutput::text(format!("echo: {text}")))
    }
}

struct Fixture {
    runs: Arc<AtomicUsize>,
    seen_actions: Arc<Mutex<Vec<ExecutionAction>>>,
    ledger: Arc<MemoryLedger>,
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"text": {"type": "string", "maxLength": 1000}, "path": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": false
    })
}

impl Fixture {
    fn new() -> Self {
        Fixture {
            runs: Arc::new(AtomicUsize::new(0)),
            seen_actions: Arc::new(Mutex::new(Vec::new())),
            ledger: Arc::new(MemoryLedger::new()),
        }
    }

    fn registry(&self) -> ToolRegistry {
        let mut r = ToolRegistry::new();
        for (name, exclusive) in [("echo", false), ("write_file", false), ("secret_tool", true)] {
            let spec = ToolSpec::new(name, format!("The {name} tool"))
                .with_parameters(schema())
                .exclusive(exclusive);
            r.register(Arc::new(Probe {
                spec,
                runs: self.runs.clone(),
                seen_actions: self.seen_actions.clone(),
            }))
            .unwrap();
        }
        r
    }

    fn builder(&self) -> DispatcherBuilder {
        Dispatcher::builder(self.registry())
            .ledger(self.ledger.clone())
            .redactor(Redactor::builder().secret(SECRET).build())
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

fn run() -> RunContext {
    RunContext::new("session-1", "run-1").with_grants(Grants::new(vec![
        GrantScope::new("user").allow(["echo", "write_file", "secret_tool"]).deny(["secret_tool"]),
    ]))
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args)
}

fn event_kinds(sub: &mut EventSubscription) -> Vec<(String, ToolEventKind)> {
    sub.drain()
        .into_iter()
        .map(|d| match d {
            EventDelivery::Event(e) => (e.call.call_id.to_string(), e.kind()),
            EventDelivery::Lagged { missed } => panic!("lagged {missed}"),
        })
        .collect()
}

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
    let cases: Vec<(ToolCall, BlockedReason, &str)> = vec![
        (call("u", "nope", json!({})), BlockedReason::UnknownTool, error_codes::UNKNOWN_TOOL),
        (call("d", "secret_tool", json!({"text": "x"})), BlockedReason::ToolDenied, error_codes::TOOL_DENIED),
        (call("a", "echo", json!(["x"])), BlockedReason::InvalidArguments, error_codes::INVALID_ARGUMENTS),
        (
            ToolCall::new("j", "echo", CallArguments::from_text("{\"text\": ")),
            BlockedReason::InvalidArguments,
            error_codes::INVALID_JSON_ARGUMENTS,
        ),
        (
            call("p", "write_file", json!({"text": "x"})),
            BlockedReason::PermissionDenied,
            error_codes::PERMISSION_DENIED,
        ),
        (
            call("v", "echo", json!({"text": 5})),
            BlockedReason::ValidationFailed,
            error_codes::VALIDATION_FAILED,
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

/// Renames `from` to `to`.
struct Rename {
    from: &'static str,
    to: &'static str,
}

#[async_trait]
impl Middleware for Rename {
    fn name(&self) -> &str {
        "rename"
    }
    async fn tool_call(&self, mut call: ToolCall, _: &CallContext) -> Result<ToolCall, MiddlewareError> {
        if call.name == self.from {
            call.name = self.to.into();
            call.id = Arc::from("middleware-tried-to-change-the-id");
        }
        Ok(call)
    }
}

#[tokio::test]
async fn middleware_renames_never_grant() {
    let f = Fixture::new();
    // A denied name renamed to a granted tool stays denied.
    let d = f.builder().middleware(Arc::new(Rename { from: "secret_tool", to: "echo" })).build();
    let result = d.dispatch(call("m1", "secret_tool", json!({"text": "x"})), &run()).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ToolDenied));
    assert!(result.error().unwrap().message.contains("renamed to echo"));
    assert_eq!(&*result.call_id, "m1", "middleware cannot change the call id");

    // A granted name renamed to a denied one is checked again after middleware.
    let d = f.builder().middleware(Arc::new(Rename { from: "echo", to: "secret_tool" })).build();
    let result = d.dispatch(call("m2", "echo", json!({"text": "x"})), &run()).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ToolDenied));
    assert_eq!(&*result.tool_name, "secret_tool");

    // ... and renamed to something unknown.
    let d = f.builder().middleware(Arc::new(Rename { from: "echo", to: "ghost" })).build();
    let result = d.dispatch(call("m3", "echo", json!({"text": "x"})), &run()).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::UnknownTool));

    // A harmless normalization still works.
    let d = f.builder().middleware(Arc::new(Rename { from: "Echo", to: "echo" })).build();
    let result = d.dispatch(call("m4", "Echo", json!({"text": "x"})), &run()).await;
    assert!(result.is_finished(), "{:?}", result.error());
    assert_eq!(f.runs(), 1);
}

struct BrokenMiddleware;

#[async_trait]
impl Middleware for BrokenMiddleware {
    fn name(&self) -> &str {
        "broken"
    }
    async fn tool_call(&self, _: ToolCall, _: &CallContext) -> Result<ToolCall, MiddlewareError> {
        panic!("middleware bug")
    }
}

#[tokio::test]
async fn failing_middleware_blocks() {
    let f = Fixture::new();
    let d = f.builder().middleware(Arc::new(BrokenMiddleware)).build();
    let result = d.dispatch(call("mw", "echo", json!({"text": "x"})), &run()).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::GuardrailBlocked));
    assert_eq!(f.runs(), 0);
}

#[tokio::test]
async fn errors_and_panics_become_error_results() {
    let f = Fixture::new();
    let d = f.builder().build();
    let mut sub = d.events().subscribe();
    let result = d.dispatch(call("e1", "echo", json!({"text": "fail"})), &run()).await;
    let error = result.error().unwrap();
    assert_eq!(error.code, error_codes::TOOL_ERROR);
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
    assert_eq!(result.error().unwrap().code, error_codes::TOOL_PANICKED);
    assert!(result.error().unwrap().message.contains("tool exploded"));
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

struct Rulebook {
    verdict: Mutex<Option<GuardrailVerdict>>,
    fail: Option<&'static str>,
}

#[async_trait]
impl Guardrail for Rulebook {
    fn name(&self) -> &str {
        "rulebook"
    }
    async fn check(&self, subject: GuardrailSubject<'_>) -> Result<GuardrailVerdict, GuardrailError> {
        match self.fail {
            Some("panic") => panic!("guardrail bug"),
            Some(other) => return Err(GuardrailError(other.into())),
            None => {}
        }
        if subject.stage == GuardrailStage::ToolInput
            && subject.arguments.get("text").and_then(Value::as_str) == Some("rm -rf /")
        {
            return Ok(self.verdict.lock().unwrap().clone().unwrap_or(GuardrailVerdict::Allow));
        }
        if subject.stage == GuardrailStage::ToolOutput
            && subject.output.is_some_and(|o| o.joined_text().contains("forbidden-output"))
        {
            return Ok(GuardrailVerdict::Block {
                rule: GuardrailRule::new("leaks", "no_forbidden"),
                message: None,
            });
        }
        Ok(GuardrailVerdict::Allow)
    }
}

fn rulebook(verdict: Option<GuardrailVerdict>, fail: Option<&'static str>) -> Arc<Rulebook> {
    Arc::new(Rulebook { verdict: Mutex::new(verdict), fail })
}

#[tokio::test]
async fn guardrail_block_names_the_rule() {
    let f = Fixture::new();
    let block = GuardrailVerdict::Block {
        rule: GuardrailRule::new("shell", "no_rm_root"),
        message: Some(format!("{}{SECRET}", "x".repeat(300))),
    };
    let d = f.builder().guardrail(rulebook(Some(block), None)).build();
    let mut sub = d.events().subscribe();
    let result = d.dispatch(call("g1", "echo", json!({"text": "rm -rf /"})), &run()).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::GuardrailBlocked));
    let message = &result.error().unwrap().message;
    assert!(message.starts_with("Blocked by guardrail rule pack:shell/no_rm_root: xxx"), "{message}");
    assert!(message.len() <= 200, "bounded: {}", message.len());
    assert!(!message.contains("sk-test"));
    assert_eq!(result.decided_by, DecidedBy::Guardrail { pack: "shell".into(), rule: "no_rm_root".into() });
    let deliveries = sub.drain();
    let guardrail_event = deliveries.iter().find_map(|d| match d {
        EventDelivery::Event(e) if e.kind() == ToolEventKind::GuardrailDecision => Some(e.clone()),
        _ => None,
    });
    match &guardrail_event.unwrap().payload {
        EventPayload::GuardrailDecision { outcome, stage, .. } => {
            assert_eq!(*outcome, GuardrailOutcome::Block);
            assert_eq!(*stage, GuardrailStage::ToolInput);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(f.runs(), 0);

    // Allowed input passes the same guardrail; output guardrail turns a finished call into an error.
    let result = d.dispatch(call("g2", "echo", json!({"text": "forbidden-output"})), &run()).await;
    assert_eq!(result.error().unwrap().code, error_codes::GUARDRAIL_BLOCKED);
    assert!(result.error().unwrap().message.starts_with("Blocked by guardrail rule pack:leaks/no_forbidden"));
    assert_eq!(f.runs(), 1, "an output guardrail runs after execution");
    let kinds: Vec<RecordKind> = f.ledger.for_call("g2").iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [RecordKind::Started, RecordKind::Error]);
}

#[tokio::test]
async fn guardrails_fail_closed() {
    let garbage = GuardrailVerdict::Block { rule: GuardrailRule::new("", "has space"), message: None };
    for (guard, expect_rule) in [
        (rulebook(None, Some("panic")), "guardrail_panic"),
        (rulebook(None, Some("classifier offline")), "guardrail_error"),
        (rulebook(Some(garbage), None), "malformed_verdict"),
    ] {
        let f = Fixture::new();
        let d = f.builder().guardrail(guard).build();
        let text = if expect_rule == "malformed_verdict" { "rm -rf /" } else { "harmless" };
        let result = d.dispatch(call("gf", "echo", json!({"text": text})), &run()).await;
        assert_eq!(result.blocked_reason(), Some(BlockedReason::GuardrailBlocked), "{expect_rule}");
        assert_eq!(
            result.decided_by,
            DecidedBy::Guardrail { pack: "rulebook".into(), rule: expect_rule.into() },
            "{expect_rule}"
        );
        assert_eq!(f.runs(), 0, "{expect_rule}");
    }
}

#[tokio::test]
async fn tripwire_blocks_and_stops_the_run() {
    let f = Fixture::new();
    let trip = GuardrailVerdict::Tripwire { rule: GuardrailRule::new("safety", "halt"), message: None };
    let d = f.builder().guardrail(rulebook(Some(trip), None)).build();
    let r = run();
    let calls = vec![
        call("t1", "echo", json!({"text": "ok"})),
        call("t2", "echo", json!({"text": "rm -rf /"})),
        call("t3", "echo", json!({"text": "never"})),
    ];
    let results = d.dispatch_batch(calls, &r, BatchOptions::default()).await;
    assert!(results[0].is_finished());
    assert_eq!(results[1].blocked_reason(), Some(BlockedReason::GuardrailBlocked));
    assert_eq!(results[2].error().unwrap().code, error_codes::NOT_DISPATCHED);
    assert!(r.cancel.is_cancelled());
    assert_eq!(f.runs(), 1);
}

struct ForbidWrites;

#[async_trait]
impl ExecutionPolicy for ForbidWrites {
    async fn evaluate(&self, request: PolicyRequest<'_>) -> PolicyVerdict {
        let rule = |id: &str| RuleRef { id: id.into(), source: "policy.json".into(), decision: None };
        match request.action.paths.first().and_then(|p| p.to_str()) {
            Some(p) if p.starts_with("/etc") => PolicyVerdict::deny(
                DecidedBy::Rule { rule_id: "no-etc".into(), source: "policy.json".into() },
                "no /etc",
            )
            .with_matched_rules(vec![rule("no-etc")]),
            Some(_) => PolicyVerdict::ask(DecidedBy::DEFAULT, "writes need approval")
                .with_matched_rules(vec![rule("ask-writes")]),
            None => {
                PolicyVerdict::allow(DecidedBy::Rule { rule_id: "pure".into(), source: "policy.json".into() })
            }
        }
    }
}

/// Answers from a script, and tries to tamper with the action it is shown.
struct Operator {
    answer: ApprovalAnswer,
    asked: Mutex<Vec<ApprovalRequest>>,
}

#[async_trait]
impl Approvals for Operator {
    async fn request(&self, mut request: ApprovalRequest) -> ApprovalAnswer {
        request.action.paths = vec!["/tampered".into()];
        self.asked.lock().unwrap().push(request);
        self.answer.clone()
    }
}

#[tokio::test]
async fn policy_deny_ask_allow_and_what_decided() {
    let f = Fixture::new();
    let operator = Arc::new(Operator {
        answer: ApprovalAnswer::Allow {
            decided_by: DecidedBy::Operator {
                outcome: OperatorOutcome::ApprovedOnce,
                operator: Some("ana".into()),
                rule_written: None,
            },
        },
        asked: Mutex::new(Vec::new()),
    });
    let d = f.builder().policy(Arc::new(ForbidWrites)).approvals(operator.clone()).build();
    let r = run();

    let denied = d.dispatch(call("x1", "write_file", json!({"text": "t", "path": "/etc/passwd"})), &r).await;
    assert_eq!(denied.blocked_reason(), Some(BlockedReason::ExecutionDenied));
    assert_eq!(denied.decided_by, DecidedBy::Rule { rule_id: "no-etc".into(), source: "policy.json".into() });
    assert_eq!(f.ledger.for_call("x1")[0].matched_rules[0].id, "no-etc");

    let approved =
        d.dispatch(call("x2", "write_file", json!({"text": SECRET, "path": "/work/a.txt"})), &r).await;
    assert!(approved.is_finished(), "{:?}", approved.error());
    assert!(matches!(
        approved.decided_by,
        DecidedBy::Operator { outcome: OperatorOutcome::ApprovedOnce, .. }
    ));
    let asked = operator.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(!asked[0].arguments.to_string().contains(SECRET), "the approver sees redacted arguments");
    assert_eq!(asked[0].verdict.reason.as_deref(), Some("writes need approval"));
    // The executed action is the evaluated one, not the approver's tampered copy.
    let seen = f.seen_actions.lock().unwrap().clone();
    assert_eq!(seen.last().unwrap().paths, vec![std::path::PathBuf::from("/work/a.txt")]);
    let started = &f.ledger.for_call("x2")[0];
    assert_eq!(started.action.as_ref().unwrap().paths, vec![std::path::PathBuf::from("/work/a.txt")]);
    assert!(matches!(started.decided_by, DecidedBy::Operator { .. }));
    assert_eq!(started.matched_rules[0].id, "ask-writes");

    let pure = d.dispatch(call("x3", "echo", json!({"text": "t"})), &r).await;
    assert_eq!(pure.decided_by, DecidedBy::Rule { rule_id: "pure".into(), source: "policy.json".into() });

    let unresolvable = d.dispatch(call("x4", "write_file", json!({"text": "t", "path": ""})), &r).await;
    assert_eq!(unresolvable.blocked_reason(), Some(BlockedReason::ValidationFailed));
    assert_eq!(f.runs(), 2);
}

#[tokio::test]
async fn approval_denial_timeout_and_no_approver() {
    let timeout = DecidedBy::ApprovalTimeout { after_ms: 120_000 };
    let denial = DecidedBy::Operator { outcome: OperatorOutcome::Denied, operator: None, rule_written: None };
    for decided_by in [timeout, denial] {
        let f = Fixture::new();
        let operator = Arc::new(Operator {
            answer: ApprovalAnswer::Deny { reason: "nope".into(), decided_by: decided_by.clone() },
            asked: Mutex::new(Vec::new()),
        });
        let d = f.builder().policy(Arc::new(ForbidWrites)).approvals(operator).build();
        let result = d.dispatch(call("y", "write_file", json!({"text": "t", "path": "/w/x"})), &run()).await;
        assert_eq!(result.blocked_reason(), Some(BlockedReason::ExecutionDenied));
        assert_eq!(result.decided_by, decided_by);
        assert_eq!(f.ledger.for_call("y")[0].decided_by, decided_by, "timeouts are recorded as timeouts");
        assert_eq!(f.runs(), 0);
    }
    let f = Fixture::new();
    let d = f.builder().policy(Arc::new(ForbidWrites)).build();
    let result = d.dispatch(call("z", "write_file", json!({"text": "t", "path": "/w/x"})), &run()).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ExecutionDenied));
    assert!(result.error().unwrap().message.contains("no approver"));
    assert_eq!(f.runs(), 0);
}

struct NoDotDot;

impl ToolValidator for NoDotDot {
    fn name(&self) -> &str {
        "no_dotdot"
    }
    fn validate(&self, _: &ToolSpec, arguments: &Value, _: &CallContext) -> ValidatorVerdict {
        match arguments.get("path").and_then(Value::as_str) {
            Some(p) if p.contains("..") => ValidatorVerdict::Structured(
                ValidationIssue::new(format!("'..' is not allowed in {p}")).at("/path"),
            ),
            Some("msg") => ValidatorVerdict::Message(format!("plain message with {SECRET}")),
            _ => ValidatorVerdict::Pass,
        }
    }
}

#[tokio::test]
async fn host_validators_refuse_with_redacted_messages() {
    let f = Fixture::new();
    let d = f.builder().validator(Arc::new(NoDotDot)).build();
    let r = run();
    let result = d.dispatch(call("h1", "write_file", json!({"text": "t", "path": "../x"})), &r).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ValidationFailed));
    assert_eq!(result.error().unwrap().message, "/path: '..' is not allowed in ../x");
    assert_eq!(result.decided_by, DecidedBy::Validator { validator: "no_dotdot".into() });
    let result = d.dispatch(call("h2", "write_file", json!({"text": "t", "path": "msg"})), &r).await;
    assert_eq!(result.error().unwrap().message, "plain message with [REDACTED]");
    assert!(d.dispatch(call("h3", "write_file", json!({"text": "t", "path": "ok"})), &r).await.is_finished());
    assert_eq!(f.runs(), 1);
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
    assert_eq!(result.error().unwrap().code, error_codes::LEDGER_UNAVAILABLE);
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
    assert_eq!(result.error().unwrap().code, error_codes::NOT_DISPATCHED, "cancelled runs start nothing");
    let r = run();
    let cancel = r.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let result = d.dispatch(call("k3", "echo", json!({"text": "ignore_cancel"})), &r).await;
    assert_eq!(result.error().unwrap().code, error_codes::CANCELLED);
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
    assert_eq!(result.error().unwrap().code, error_codes::INVALID_JSON_ARGUMENTS);
    assert!(result.error().unwrap().message.len() < 300);
    let shown = serde_json::to_string(f.ledger.for_call("b3")[0].arguments.as_deref().unwrap()).unwrap();
    assert!(shown.len() < 5000);
}

/// Never answers.
struct AbsentOperator;

#[async_trait]
impl Approvals for AbsentOperator {
    async fn request(&self, _: ApprovalRequest) -> ApprovalAnswer {
        std::future::pending().await
    }
}

#[tokio::test]
async fn an_unanswered_approval_times_out_as_a_timeout() {
    let f = Fixture::new();
    let d = f
        .builder()
        .policy(Arc::new(ForbidWrites))
        .approvals(Arc::new(AbsentOperator))
        .approval_timeout(Some(Duration::from_millis(30)))
        .build();
    let result = d.dispatch(call("w1", "write_file", json!({"text": "t", "path": "/w/x"})), &run()).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ExecutionDenied));
    assert_eq!(result.decided_by, DecidedBy::ApprovalTimeout { after_ms: 30 });
    assert_eq!(f.ledger.for_call("w1")[0].decided_by, DecidedBy::ApprovalTimeout { after_ms: 30 });

    // Cancelling the run stops the wait too, and is not recorded as a timeout or an operator's denial.
    let d = f.builder().policy(Arc::new(ForbidWrites)).approvals(Arc::new(AbsentOperator)).build();
    let r = run();
    let cancel = r.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancel.cancel();
    });
    let result = d.dispatch(call("w2", "write_file", json!({"text": "t", "path": "/w/x"})), &r).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ExecutionDenied));
    assert_eq!(result.decided_by, DecidedBy::Default { detail: Some("run cancelled".into()) });
    assert_eq!(f.runs(), 0);
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
