//! The dispatch pipeline's guards: middleware (renames never grant, failures block), guardrails (block,
//! tripwire, fail closed) and host validators (refusals with redacted messages).

// Test support code outside #[test] functions may unwrap and panic, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::pipeline::*;
use async_trait::async_trait;
use portcullis_harness::CallErrorCode;
use portcullis_harness::events::GuardrailOutcome;
use portcullis_harness::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

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
    assert_eq!(result.error().unwrap().code, CallErrorCode::GuardrailBlocked);
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
    assert_eq!(results[2].error().unwrap().code, CallErrorCode::NotDispatched);
    assert!(r.cancel.is_cancelled());
    assert_eq!(f.runs(), 1);
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
