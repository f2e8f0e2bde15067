//! Tests of a call's spans (`spans.rs`): names, convention attributes, times, ids and the agent's trace.

use super::*;
use crate::conventions::{self as c, GUARDRAIL_DECISIONS};
use opentelemetry::Value as OtelValue;
use portcullis_harness::CallErrorCode;
use portcullis_harness::{BlockedReason, CallError, McpRequest, OperatorOutcome, ToolOutput};
use portcullis_ledger::{CallHead, RecordBody, StoredKind, StoredPolicyDecision};
use std::sync::Arc;

const AGENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn record(kind: StoredKind, traceparent: Option<&str>) -> StoredRecord {
    StoredRecord {
        id: 12,
        head: CallHead {
            started_at: (kind != StoredKind::Blocked).then_some(Timestamp(2_000_000)),
            reason: (kind == StoredKind::Blocked).then_some(BlockedReason::ExecutionDenied),
            redacted: true,
            policy_decision: Some(StoredPolicyDecision::Prompt),
            policy_rule: Some("ask-kubectl".into()),
            ..CallHead::new("s1", "mcp", "c3", "claude-code 1.0 (http)", "shell", Timestamp(3_000_000))
        },
        kind,
        body: RecordBody {
            arguments: (kind == StoredKind::Blocked)
                .then(|| Arc::new(serde_json::json!({"command": "rm -rf /"}))),
            action: None,
            progress: None,
            output: (kind == StoredKind::Finished).then(|| Arc::new(ToolOutput::text("ok"))),
            error: (kind == StoredKind::Error).then(|| CallError::new(CallErrorCode::ToolError, "exit 1")),
            matched_rules: Vec::new(),
            decided_by: DecidedBy::Operator {
                outcome: if kind == StoredKind::Blocked {
                    OperatorOutcome::Denied
                } else {
                    OperatorOutcome::ApprovedOnce
                },
                operator: Some("ana".into()),
                rule_written: None,
                receipt: None,
            },
            policy_decided_by: Some(DecidedBy::Rule {
                rule_id: "ask-kubectl".into(),
                source: "/p/policy.json".into(),
            }),
            cwd: None,
            files: Vec::new(),
            policy_version: Some("0123456789abcdef0123456789abcdef".into()),
            mcp: Some(Arc::new(McpRequest {
                method: "tools/call".into(),
                request_id: "42".into(),
                protocol_version: Some("2025-11-25".into()),
                traceparent: traceparent.map(str::to_owned),
                received_at: Timestamp(1_000_000),
                agent: None,
                idempotency_key: None,
            })),
        },
    }
}

fn spans(record: &StoredRecord, include_content: bool) -> [SpanData; 2] {
    let scope = InstrumentationScope::builder("t").build();
    let inputs = SpanInputs { ledger_id: "L", scope: &scope, arguments: None, include_content };
    call_spans(record, &inputs).unwrap()
}

fn attribute(span: &SpanData, key: &str) -> Option<OtelValue> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.clone())
}

fn text(span: &SpanData, key: &str) -> Option<String> {
    attribute(span, key).map(|v| v.as_str().into_owned())
}

#[test]
fn the_call_span_follows_the_mcp_conventions() {
    let [call, _] = spans(&record(StoredKind::Finished, None), false);
    assert_eq!(call.name, "tools/call shell");
    assert_eq!(call.span_kind, SpanKind::Server);
    assert_eq!(text(&call, c::MCP_METHOD_NAME).as_deref(), Some("tools/call"));
    assert_eq!(text(&call, c::GEN_AI_TOOL_NAME).as_deref(), Some("shell"));
    assert_eq!(text(&call, c::GEN_AI_OPERATION_NAME).as_deref(), Some("execute_tool"));
    assert_eq!(text(&call, c::MCP_SESSION_ID).as_deref(), Some("s1"));
    assert_eq!(text(&call, c::MCP_PROTOCOL_VERSION).as_deref(), Some("2025-11-25"));
    assert_eq!(text(&call, c::JSONRPC_REQUEST_ID).as_deref(), Some("42"));
    assert_eq!(text(&call, c::ERROR_TYPE), None);
    assert_eq!(call.status, Status::Unset);
    // From when the request arrived to the call's end.
    assert_eq!(call.start_time, system_time(Timestamp(1_000_000)));
    assert_eq!(call.end_time, system_time(Timestamp(3_000_000)));
}

#[test]
fn the_policy_decision_is_an_apply_guardrail_child_until_the_call_started() {
    let [call, guardrail] = spans(&record(StoredKind::Finished, None), false);
    assert_eq!(guardrail.name, "apply_guardrail");
    assert_eq!(guardrail.parent_span_id, call.span_context.span_id());
    assert_eq!(guardrail.span_context.trace_id(), call.span_context.trace_id());
    assert_eq!(guardrail.start_time, system_time(Timestamp(1_000_000)));
    assert_eq!(guardrail.end_time, system_time(Timestamp(2_000_000)));
    assert_eq!(text(&guardrail, c::GEN_AI_SECURITY_DECISION_TYPE).as_deref(), Some("allow"));
    assert_eq!(
        text(&guardrail, c::GEN_AI_SECURITY_DECISION_REASON).as_deref(),
        Some(GUARDRAIL_DECISIONS[3].reason)
    );
    assert_eq!(text(&guardrail, c::GEN_AI_SECURITY_POLICY_ID).as_deref(), Some("/p/policy.json"));
    assert_eq!(text(&guardrail, c::PORTCULLIS_RULE).as_deref(), Some("ask-kubectl"));
    assert_eq!(text(&guardrail, c::PORTCULLIS_DECIDED_BY).as_deref(), Some("operator"));
    assert_eq!(text(&guardrail, c::PORTCULLIS_OPERATOR).as_deref(), Some("ana"));
    assert_eq!(text(&guardrail, c::PORTCULLIS_OPERATOR_OUTCOME).as_deref(), Some("approved_once"));
    assert_eq!(text(&guardrail, c::PORTCULLIS_POLICY_DECISION).as_deref(), Some("prompt"));
}

#[test]
fn a_blocked_call_has_its_error_type_and_a_deny() {
    let [call, guardrail] = spans(&record(StoredKind::Blocked, None), false);
    assert_eq!(text(&call, c::ERROR_TYPE).as_deref(), Some("execution_denied"));
    assert!(matches!(call.status, Status::Error { .. }));
    assert_eq!(text(&guardrail, c::GEN_AI_SECURITY_DECISION_TYPE).as_deref(), Some("deny"));
    assert_eq!(text(&guardrail, c::GEN_AI_SECURITY_DECISION_REASON).as_deref(), Some("execution_denied"));
    assert_eq!(guardrail.end_time, call.end_time, "judged until it was refused");
}

#[test]
fn content_goes_out_only_when_the_operator_opted_in() {
    let blocked = record(StoredKind::Blocked, None);
    let [call, _] = spans(&blocked, false);
    assert_eq!(attribute(&call, c::GEN_AI_TOOL_CALL_ARGUMENTS), None);
    let [call, _] = spans(&blocked, true);
    assert_eq!(text(&call, c::GEN_AI_TOOL_CALL_ARGUMENTS).as_deref(), Some(r#"{"command":"rm -rf /"}"#));
    let [call, _] = spans(&record(StoredKind::Finished, None), true);
    assert!(text(&call, c::GEN_AI_TOOL_CALL_RESULT).unwrap().contains("\"ok\""));
    let [call, _] = spans(&record(StoredKind::Error, None), true);
    assert!(text(&call, c::GEN_AI_TOOL_CALL_RESULT).unwrap().contains("exit 1"));
}

#[test]
fn the_agents_trace_is_continued() {
    let [call, guardrail] = spans(&record(StoredKind::Finished, Some(AGENT)), false);
    let agent = TraceParent::parse(AGENT).unwrap();
    assert_eq!(call.span_context.trace_id(), TraceId::from_bytes(agent.trace_id));
    assert_eq!(call.parent_span_id, SpanId::from_bytes(agent.parent_id));
    assert!(call.parent_span_is_remote);
    assert_eq!(guardrail.span_context.trace_id(), TraceId::from_bytes(agent.trace_id));
}

#[test]
fn without_a_trace_the_ids_are_the_calls_own_and_stable() {
    let one = CallIds::of("L", &record(StoredKind::Finished, None));
    assert_eq!(one, CallIds::of("L", &record(StoredKind::Finished, None)), "a retry sends the same spans");
    assert_eq!(one.parent, SpanId::INVALID);
    assert_ne!(one.trace_id, TraceId::INVALID);
    assert_ne!(one.call_span, one.guardrail_span);
    assert_ne!(one.trace_id, CallIds::of("other ledger", &record(StoredKind::Finished, None)).trace_id);
    // A malformed traceparent (it is agent text, stored before this check existed) is ignored.
    let odd = CallIds::of("L", &record(StoredKind::Finished, Some("00-zz")));
    assert_eq!(odd, one);
}

#[test]
fn a_call_from_elsewhere_is_named_execute_tool() {
    let mut own = record(StoredKind::Finished, None);
    own.body.mcp = None;
    let [call, guardrail] = spans(&own, false);
    assert_eq!(call.name, "execute_tool shell");
    assert_eq!(attribute(&call, c::MCP_METHOD_NAME), None);
    assert_eq!(call.start_time, system_time(Timestamp(2_000_000)), "from its start");
    assert_eq!(guardrail.start_time, guardrail.end_time);
}

#[test]
fn records_that_end_nothing_make_no_spans() {
    let scope = InstrumentationScope::builder("t").build();
    let inputs = SpanInputs { ledger_id: "L", scope: &scope, arguments: None, include_content: false };
    assert!(call_spans(&record(StoredKind::Started, None), &inputs).is_none());
}
